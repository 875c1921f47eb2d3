"""Hook points: names, capture, removal, edits, and isolation between threads."""
import threading

import pytest
import torch

from bertviz_lab.bert import layer_hook
from bertviz_lab.bert.encoder.hooks import active_run

PER_LAYER = ["attention.self.hook_q", "attention.self.hook_k", "attention.self.hook_v",
             "attention.self.hook_scores", "attention.self.hook_pattern", "attention.self.hook_context",
             "attention.output.hook_out", "hook_out"]


def golden_names(layers: int) -> list[str]:
    names = ["bert.embeddings.hook_token", "bert.embeddings.hook_position",
             "bert.embeddings.hook_segment", "bert.embeddings.hook_out"]
    for i in range(layers):
        names += [f"bert.encoder.layer.{i}.{n}" for n in PER_LAYER]
    return names + ["cls.predictions.hook_logits", "cls.hook_nsp_logits"]


def test_hook_names_are_a_golden_list(tiny_lab, minilm_lab):
    assert tiny_lab.model.hook_names == golden_names(2)
    assert minilm_lab.model.hook_names == golden_names(6)[:-2]  # no heads in the packaged model


def inputs():
    return {"input_ids": torch.tensor([[2, 7, 8, 9, 10, 3]])}


def test_capture_returns_shapes_and_hooks_are_gone_afterwards(tiny_lab):
    model = tiny_lab.model
    with torch.no_grad(), model.hooks(capture=["*"]) as run:
        model(**inputs())
    assert run.calls == len(model.hook_names)
    assert run.cache["bert.encoder.layer.1.attention.self.hook_pattern"].shape == (1, 4, 6, 6)
    assert run.cache["bert.encoder.layer.1.attention.self.hook_context"].shape == (1, 4, 6, 8)
    assert run.cache["bert.embeddings.hook_token"].shape == (1, 6, 32)
    assert run.cache["cls.predictions.hook_logits"].shape == (1, 6, len(tiny_lab.tokenizer.get_vocab()))
    assert active_run() is None
    with torch.no_grad():
        model(**inputs())
    assert run.calls == len(model.hook_names)  # nothing more was seen


def test_hooks_are_removed_after_an_exception(tiny_lab):
    model = tiny_lab.model

    def explode(x, name):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        with torch.no_grad(), model.hooks(capture=["*hook_pattern"], edits={layer_hook(0, "v"): explode}) as run:
            model(**inputs())
    assert active_run() is None
    calls = run.calls
    with torch.no_grad():
        model(**inputs())
    assert run.calls == calls


def test_unknown_hook_name_is_an_error(tiny_lab):
    with pytest.raises(KeyError, match="unknown hook point"):
        with tiny_lab.model.hooks(capture=["bert.encoder.layer.0.attention.self.hook_patern"]):
            pass


def test_zeroing_one_head_changes_exactly_that_head(tiny_lab):
    model = tiny_lab.model
    name = layer_hook(1, "context")

    def zero_head_2(ctx, _):
        ctx = ctx.clone()
        ctx[:, 2] = 0
        return ctx

    capture = [layer_hook(i, n) for i in range(2) for n in ("pattern", "context")] + ["bert.encoder.layer.1.hook_out"]
    with torch.no_grad(), model.hooks(capture=capture) as base:
        model(**inputs())
    with torch.no_grad(), model.hooks(capture=capture, edits={name: zero_head_2}) as edited:
        model(**inputs())
    ctx = edited.cache[name]
    assert ctx[:, 2].abs().max().item() == 0.0
    keep = [0, 1, 3]
    assert torch.equal(ctx[:, keep], base.cache[name][:, keep])
    for key in capture[:-1]:  # everything up to that layer's context is untouched
        if key != name:
            assert torch.equal(edited.cache[key], base.cache[key])
    assert not torch.allclose(edited.cache["bert.encoder.layer.1.hook_out"], base.cache["bert.encoder.layer.1.hook_out"])


def test_two_threads_get_their_own_attention(minilm_lab):
    texts = ["The cat sat on the mat.", "Colourless green ideas sleep furiously tonight, said Noam."]
    expected = {t: minilm_lab.analyze(t).attention for t in texts}
    errors, barrier = [], threading.Barrier(2)

    def work(text):
        try:
            barrier.wait()
            for _ in range(15):
                got = minilm_lab.analyze(text).attention
                assert got.shape == expected[text].shape
                assert float(abs(got - expected[text]).max()) < 1e-5
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_the_hook_table_names_every_hook_point_of_the_model(tiny_lab):
    """One table (name -> module, shape) that capture, sources and interventions read: each entry
    resolves to the model's own hook names, and together they cover all of them."""
    from bertviz_lab.bert.encoder.hook_table import HOOK_TABLE, every_layer, hook_name

    names = set(tiny_lab.model.hook_names)
    covered = set()
    for spot, entry in HOOK_TABLE.items():
        found = [entry.name(layer) for layer in range(2)] if entry.per_layer else [entry.name()]
        assert set(found) <= names, spot
        assert entry.shape.startswith("(") and entry.module
        covered |= set(found)
    assert covered == names
    assert hook_name("pattern", 1) == "bert.encoder.layer.1.attention.self.hook_pattern"
    assert every_layer("out") == "bert.encoder.layer.*.hook_out"
    with pytest.raises(KeyError):
        hook_name("pattern")  # a per-layer spot needs its layer
