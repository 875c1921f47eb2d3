"""No request sees another's tensors (issue 56): explanations ("Why this word?") and Runs from 16 threads at
once on one shared model, every reply compared with the same request made alone.

Before issue 56 the gradient explanations put Captum's module hooks on the shared model's embedding layer,
so concurrent Runs failed on its 32 rows and concurrent explanations came back computed between two
visitors' sentences; ``test_a_module_hook_on_the_shared_model_would_fail_this_check`` shows that this check
catches exactly that.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from bertviz_lab.bert import Budget, spending
from bertviz_lab.interventions.attribution import explain

WORDS = ["cat", "dog", "bird", "man", "woman", "child", "king", "horse"]
# different lengths, so some Runs share a batch (same length) and some do not
SENTENCES = [f"the {w} sat on the [MASK] {'near the big red door ' * (i % 3)}today" for i, w in enumerate(WORDS)]
THREADS, ROUNDS = 16, 15  # 16 sentences' worth of requests x 15 rounds = 240 replies
BUDGET = Budget(tokens=256, masks=20, token_passes=400_000, seconds=600)  # the public gate's caps, time aside


def explanation(lab, text: str) -> dict:
    with spending(BUDGET):
        [first] = explain(lab, lab.analyze(text), steps=16)
    return first.to_json()


def run(lab, text: str):
    with spending(BUDGET):
        return lab.analyze(text)


def same_explanation(a: dict, b: dict) -> bool:
    """Byte for byte: every score, rho and faithfulness figure as the same float."""
    return repr(a) == repr(b)


def same_run(a, b) -> bool:
    """Tokens and predictions exactly; attention byte for byte unless the Run shared a batch, whose rows may
    differ from a pass of their own in float rounding only (``bert/runtime/batching.py``: ~1e-6)."""
    same_words = a.tokens == b.tokens and [[p.token for p in m.predictions] for m in a.mlm] == \
        [[p.token for p in m.predictions] for m in b.mlm]
    return same_words and a.attention.shape == b.attention.shape and \
        np.allclose(a.attention, b.attention, rtol=0, atol=1e-5)


def concurrent_replies(lab) -> tuple[list, list]:
    """(explanations, runs) made by 16 threads at once, each as (text, reply), in random interleaving."""
    jobs = [("explain", t) for t in SENTENCES] + [("run", t) for t in SENTENCES]
    jobs = jobs * ROUNDS
    order = np.random.default_rng(0).permutation(len(jobs))

    def do(job):
        kind, text = job
        try:
            return kind, text, explanation(lab, text) if kind == "explain" else run(lab, text)
        except Exception as error:  # a leak shows as another request's shapes: count it, do not stop the others
            return kind, text, error

    with ThreadPoolExecutor(THREADS) as pool:
        replies = list(pool.map(do, [jobs[i] for i in order]))
    return ([(t, r) for k, t, r in replies if k == "explain"], [(t, r) for k, t, r in replies if k == "run"])


def mismatches(lab) -> tuple[int, int, int]:
    alone_explained = {t: explanation(lab, t) for t in SENTENCES}
    alone_run = {t: run(lab, t) for t in SENTENCES}
    explained, runs = concurrent_replies(lab)
    bad_explained = sum(isinstance(r, Exception) or not same_explanation(r, alone_explained[t]) for t, r in explained)
    bad_runs = sum(isinstance(r, Exception) or not same_run(r, alone_run[t]) for t, r in runs)
    return bad_explained, bad_runs, len(explained) + len(runs)


def test_explanations_and_runs_from_16_threads_equal_the_same_requests_alone(sharp_lab):
    bad_explained, bad_runs, n = mismatches(sharp_lab)
    assert n >= 200
    assert (bad_explained, bad_runs) == (0, 0)
    assert max(sharp_lab._shared.batch_sizes) > 1  # some Runs did share a pass


def test_the_explanation_registers_nothing_on_the_shared_model(sharp_lab):
    """Not one forward or backward hook on any module of the model while an explanation runs."""
    seen = []
    original = torch.nn.Module.register_forward_hook

    def spy(module, *args, **kwargs):
        seen.append(type(module).__name__)
        return original(module, *args, **kwargs)

    torch.nn.Module.register_forward_hook = spy
    try:
        explanation(sharp_lab, SENTENCES[0])
    finally:
        torch.nn.Module.register_forward_hook = original
    assert seen == []
    assert all(not m._forward_hooks and not m._forward_pre_hooks and not m._backward_hooks
               for m in sharp_lab.model.modules())


def test_a_module_hook_on_the_shared_model_would_fail_this_check(sharp_lab, monkeypatch):
    """The check is not one that cannot fail: the old way (Captum's layer methods, hooks on the shared
    embedding layer) breaks concurrent replies."""
    import sys
    from pathlib import Path

    from bertviz_lab.interventions import attribution

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_isolation import layer_hooks  # Captum's layer methods on bert.embeddings, as before issue 56

    alone = explanation(sharp_lab, SENTENCES[0])
    monkeypatch.setattr(attribution, "captum_scores", layer_hooks)
    assert repr(explanation(sharp_lab, SENTENCES[0])) == repr(alone)  # alone, the two ways agree exactly
    bad_explained, bad_runs, _ = mismatches(sharp_lab)
    assert bad_explained + bad_runs > 0


@pytest.mark.parametrize("steps", [8])
def test_hook_free_gradients_equal_captums_layer_methods(sharp_lab, steps):
    """The same numbers as Captum's LayerGradientXActivation / LayerIntegratedGradients on bert.embeddings,
    bit for bit, on one request alone."""
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    from bertviz_lab.interventions.attribution import _log_prob_of, context_positions, gradient_methods

    lab = sharp_lab
    a = lab.analyze(SENTENCES[1])
    position = a.mlm[0].position
    target = lab.tokenizer.token_to_id(a.mlm[0].predictions[0].token)
    context = context_positions(a, position)
    ours = gradient_methods(lab, a, position, target, context, steps=steps)
    tensors = lab.batch_tensors([a.encoded()])
    ids, segments, mask = tensors["input_ids"], tensors["token_type_ids"], tensors["attention_mask"]
    baseline = ids.clone()
    baseline[0, [i for i in context]] = lab.pad_id  # the [MASK] and the specials kept
    forward = _log_prob_of(lab, position, target)
    with torch.enable_grad():
        gxi = LayerGradientXActivation(forward, lab.model.bert.embeddings).attribute(
            ids, additional_forward_args=(segments, mask))
        ig = LayerIntegratedGradients(forward, lab.model.bert.embeddings).attribute(
            ids, baselines=baseline, additional_forward_args=(segments, mask), n_steps=steps,
            internal_batch_size=steps)
    assert np.array_equal(ours["gradient x input"], gxi[0].sum(-1).detach().numpy()[context])
    assert np.array_equal(ours["integrated gradients"], ig[0].sum(-1).detach().numpy()[context])


# ---- handlers bound to the input they were asked about ------------------------------------------------------
@pytest.fixture(scope="module")
def sharp_handlers(sharp_lab):
    from bertviz_lab.app import build_demo

    demo = build_demo(sharp_lab)
    yield demo.bvl_controllers
    demo.close()


def test_a_run_landing_during_why_this_word_leaves_the_answer_titled_with_its_own_input(sharp_handlers, monkeypatch):
    from bertviz_lab.app import inspect_controller as controller_module
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    h, session = sharp_handlers, Session()
    h.run.analyze(RunInput(SENTENCES[0]), session)
    asked = session.analysis
    real_explain = controller_module.explain_analysis

    def explain_while_a_run_lands(lab, analysis, *args, **kwargs):
        result = real_explain(lab, analysis, *args, **kwargs)
        h.run.analyze(RunInput("a completely different [MASK] sentence with more words in it"), session)
        return result

    monkeypatch.setattr(controller_module, "explain_analysis", explain_while_a_run_lands)
    out = h.inspect.explain(session)
    figure = out[h.page.ui.explain_plot].plot
    assert session.analysis is not asked  # the Run did land
    assert "before your last Run" in out[h.page.ui.explain_message]
    assert f"{len(asked.tokens)} tokens" in out[h.page.ui.explain_message]
    drawn = __import__("json").loads(figure)
    shown = [str(t) for t in drawn["data"][0]["y"]] + [str(t) for t in drawn["data"][0].get("x", [])]
    assert "sentence" not in " ".join(shown)  # no token of the new input in the drawn answer
    assert any("cat" in t for t in shown)


def test_a_model_switch_landing_mid_request_is_one_sentence_not_another_models_answer(sharp_handlers, tiny_lab,
                                                                                       monkeypatch):
    """The window a switch can land in: the session names the new model while its analysis is the old one's."""
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    h, session = sharp_handlers, Session()
    h.run.analyze(RunInput(SENTENCES[0]), session)
    monkeypatch.setattr(h.page.cache, "allowed", [*h.page.cache.allowed, "tiny"])
    monkeypatch.setitem(h.page.cache._labs, ("tiny", session.device), tiny_lab)  # the switch's model, loaded
    session.model = "tiny"
    said = "⚠️ the model was switched while this ran; press Run with the new model, then ask again"
    assert h.inspect.explain(session) == {h.page.ui.explain_message: said}
    assert h.interventions.run_directional("", "", [], session) == {h.page.ui.direction_message: said}
    assert h.qk.score_parts(session, 1, 1) == {h.page.ui.parts_message: said}


def test_a_slow_model_load_holds_up_only_the_requests_for_that_model(sharp_lab, monkeypatch):
    """One visitor's load of a large checkpoint must not freeze every other visitor's Run (issue 56: 123 s)."""
    import threading

    from bertviz_lab.app import state
    from bertviz_lab.app.state import LabCache

    cache = LabCache([sharp_lab.checkpoint_id, "slow"], allow_any=False)
    cache.pin(sharp_lab, "cpu")
    started, release = threading.Event(), threading.Event()
    loads = []

    def slow_load(checkpoint, device):
        loads.append(checkpoint)
        started.set()
        assert release.wait(60)
        return sharp_lab

    monkeypatch.setattr(state, "load", slow_load)
    with ThreadPoolExecutor(3) as pool:
        first, second = pool.submit(cache.get, "slow", "cpu"), pool.submit(cache.get, "slow", "cpu")
        try:
            assert started.wait(60)
            assert cache.get(sharp_lab.checkpoint_id, "cpu") is sharp_lab  # answered while the load is under way
            assert not first.done()
        finally:
            release.set()
        assert first.result(60) is sharp_lab and second.result(60) is sharp_lab
    assert loads == ["slow"]  # two requests, one load


def test_a_failed_load_is_each_waiters_error_and_is_not_kept(sharp_lab, monkeypatch):
    from bertviz_lab.app import state
    from bertviz_lab.app.state import LabCache
    from bertviz_lab.bert import CheckpointError

    cache = LabCache(["broken"], allow_any=False)
    calls = []

    def failing(checkpoint, device):
        calls.append(checkpoint)
        raise CheckpointError("no such checkpoint")

    monkeypatch.setattr(state, "load", failing)
    for _ in range(2):
        with pytest.raises(CheckpointError, match="no such checkpoint"):
            cache.get("broken", "cpu")
    assert calls == ["broken", "broken"] and not cache._loading


def test_the_twins_a_lesson_sets_side_by_side_do_not_evict_each_other_or_the_models(monkeypatch):
    """Up to four twins per Positions lesson: they are small and do not count against the cache's capacity, so
    alternating lessons load each twin once (a capacity of 4 had reloaded every twin on every click)."""
    from types import SimpleNamespace

    from bertviz_lab.app import state
    from bertviz_lab.app.state import LabCache

    twins = [f"twin-{s}" for s in ("learned", "rotary", "none", "alibi", "sinusoidal", "relative", "disentangled")]
    cache = LabCache(["default", "a", "b", *twins], allow_any=False, capacity=2)
    loads = []
    monkeypatch.setattr(state, "load", lambda name, device: loads.append(name) or SimpleNamespace(name=name))
    for _ in range(3):
        for name in ("a", "b", *twins):
            assert cache.get(name, "cpu").name == name
    assert loads == ["a", "b", *twins]  # each once
    cache.get("default", "cpu")  # a third counted model: the least recently used counted one goes, no twin
    assert sorted(k[0] for k in cache._labs) == sorted(["b", "default", *twins])
