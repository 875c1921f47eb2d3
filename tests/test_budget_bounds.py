"""One budget bounds all the work of a request (issue 56), not only the start of its forward passes:
the encoder checks the time before every layer, long loops without the encoder check it on every round,
the gate answers for what cannot check at the limit plus half a second, and corpus-sized work takes one
slot whichever door it came through.

Time is faked where a test needs a request to be "past its time" (``Spend.elapsed``), so nothing here waits
for the clock but the gate's own deadline, which is what it tests."""
import threading

import numpy as np
import pytest
import torch

from bertviz_lab.bert import Budget, BudgetExceeded, spending
from bertviz_lab.bert.runtime import budget as budget_module


def Clock(after: int):
    """A ``Spend.elapsed`` that reads 0 s for the first ``after`` calls, then 1,000 s."""
    calls = []

    def elapsed(spend) -> float:
        calls.append(1)
        return 0.0 if len(calls) <= after else 1000.0
    return elapsed


def test_the_encoder_stops_between_layers_once_the_request_is_past_its_time(tiny_lab, monkeypatch):
    """The pass starts in time (its charge reads the clock once) and stops before its second layer."""
    from bertviz_lab.bert.encoder.hook_table import every_layer

    tensors = tiny_lab.batch_tensors([tiny_lab.encode("the cat sat on the mat")])
    monkeypatch.setattr(budget_module.Spend, "elapsed", Clock(after=2))  # the charge, then layer 1's check
    with spending(Budget(seconds=15)), torch.inference_mode(), tiny_lab.model.hooks(capture=[every_layer("out")]) as run:
        with pytest.raises(BudgetExceeded, match="stopped after 15 s"):
            tiny_lab.model(**tensors)
    assert "bert.encoder.layer.0.hook_out" in run.cache  # layer 1 ran
    assert not [name for name in run.cache if name.startswith("bert.encoder.layer.1.")]  # layer 2 did not


def test_attention_flow_stops_between_rows(monkeypatch):
    from bertviz_lab.bert.sources.flow import attention_flow

    rng = np.random.default_rng(0)
    layers = rng.random((2, 12, 12))
    monkeypatch.setattr(budget_module.Spend, "elapsed", Clock(after=3))
    with spending(Budget(seconds=15)), pytest.raises(BudgetExceeded):
        attention_flow(layers)
    with spending(Budget(seconds=15)):  # within its time, flow runs to the end as before
        monkeypatch.setattr(budget_module.Spend, "elapsed", Clock(after=10**9))
        assert attention_flow(layers).shape == (12, 12)
    assert attention_flow(layers).shape == (12, 12)  # outside a request nothing is checked


def test_probe_training_and_ensemble_decoding_stop_between_rounds(tiny_lab, monkeypatch):
    from bertviz_lab.syntax import structural_probe
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    sentences = read_conllu(SAMPLE_TREEBANK)[:8]
    data = structural_probe.word_features(tiny_lab, sentences)
    monkeypatch.setattr(budget_module.Spend, "elapsed", Clock(after=1))
    with spending(Budget(seconds=15)), pytest.raises(BudgetExceeded):
        structural_probe.train_probes(data, data, [0])
    monkeypatch.setattr(budget_module.Spend, "elapsed", Clock(after=3))
    with spending(Budget(seconds=15)), pytest.raises(BudgetExceeded):
        score_treebank(tiny_lab, sentences, batch_size=32)


# ---- the gate: a hard stop for what cannot check, and one corpus slot ----------------------------------------
@pytest.fixture
def gate():
    from bertviz_lab.app.gate import Gate
    from bertviz_lab.app.state import Limits

    return Gate(None, Limits(seconds=0.3))


def test_the_gate_answers_for_work_that_cannot_check_at_its_limit(gate):
    """One call that never checks the budget (a SciPy max-flow, a UMAP): the worker is answered at the limit plus
    the grace, with the budget's sentence, and the work is left to end on its own."""
    release = threading.Event()
    wrapped = gate.wrap(lambda: release.wait(60), ())
    try:
        with pytest.raises(Exception, match="stopped after 0 s"):  # no message box: Gradio shows the sentence
            wrapped()
    finally:
        release.set()


def test_the_gate_runs_each_request_in_its_own_context(gate):
    """The budget is the request's own, also on the gate's threads; results and errors come back as they were."""
    seen = []

    def work(x):
        seen.append(budget_module.current())
        return x * 2

    assert gate.wrap(work, ())(21) == 42
    assert seen[0] is not None and seen[0].budget.seconds == 0.3
    assert budget_module.current() is None  # nothing left bound on the caller's thread
    with pytest.raises(Exception, match="could not answer this request"):  # the app's sentence, never Python's
        gate.wrap(lambda: 1 / 0, ())()


def test_corpus_work_takes_one_slot_whichever_door_it_came_through(gate):
    """A treebank request from the MCP door holds the slot: the page's treebank request waits for it, and past its
    time is told the server is busy."""
    holding, release = threading.Event(), threading.Event()

    def mcp_score_heads():
        holding.set()
        release.wait(60)
        return "scored"

    mcp = gate.wrap(mcp_score_heads, (), corpus=True)
    page = gate.wrap(lambda: "page scored", (), corpus=True)
    other = gate.wrap(lambda: "a Run", ())
    result = []
    thread = threading.Thread(target=lambda: result.append(mcp()))
    thread.start()
    try:
        assert holding.wait(60)
        assert other() == "a Run"  # work that is not corpus-sized does not wait for the slot
        with pytest.raises(Exception, match="busy with another treebank"):
            page()
    finally:
        release.set()
        thread.join(60)
    assert result == ["scored"]
    assert page() == "page scored"  # the slot is free again


def test_without_a_time_limit_the_gate_runs_on_the_callers_thread(tiny_lab):
    from bertviz_lab.app.gate import Gate
    from bertviz_lab.app.state import Limits

    gate = Gate(None, Limits())
    assert gate.wrap(lambda: threading.current_thread().name, ())() == threading.current_thread().name
    assert torch.is_grad_enabled()


# ---- ports ----------------------------------------------------------------------------------------------------
def test_a_busy_port_is_one_sentence_before_the_model_loads(monkeypatch, capsys):
    import socket

    from bertviz_lab import launcher
    from bertviz_lab.app.ports import free_port

    monkeypatch.setattr(launcher, "serving_lab", lambda *a, **k: pytest.fail("the model loaded for a busy port"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as stopped:
            launcher.main(["--host", "127.0.0.1", "--port", str(port)])
    said = str(stopped.value.code)
    assert said.startswith(f"error: port {port} on 127.0.0.1 is already in use") and "\n" not in said
    assert "--port" in said


def test_every_server_the_tests_benchmarks_and_scripts_start_is_given_a_port_chosen_at_run_time():
    """Gradio, given no port, takes 7860 and up: where a user's own app runs while the tests do."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    unported = []
    for path in [*root.glob("tests/*.py"), *root.glob("benchmarks/*.py"), *root.glob("scripts/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "launch" and \
                    any(k.arg == "server_name" for k in node.keywords):
                port = next((k.value for k in node.keywords if k.arg == "server_port"), None)
                if port is None or (isinstance(port, ast.Constant) and port.value in (None, *range(7860, 7866))):
                    unported.append(f"{path.name}:{node.lineno}")
    assert unported == []


def test_no_python_text_reaches_a_visitor(gate, caplog):
    """A failure no handler foresaw is the app's sentence on the page (the traceback goes to the server's log);
    the app's own refusals pass through as they are."""
    from bertviz_lab.bert.runtime.errors import InputError

    def modulo():
        return 1 % 0

    def allocate():
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:116] . DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 64000000000 bytes. Error code 12 (Cannot allocate memory)")

    for fn, said in ((modulo, "could not answer this request"), (allocate, "more memory than the server")):
        with pytest.raises(Exception) as shown:  # no message box: Gradio shows gr.Error's sentence
            gate.wrap(fn, ())()
        assert type(shown.value).__name__ == "Error" and said in shown.value.message
        assert "modulo" not in shown.value.message and "64000000000" not in shown.value.message
    assert "integer modulo by zero" in caplog.text  # the operator sees it
    with pytest.raises(Exception) as shown:
        gate.wrap(lambda: (_ for _ in ()).throw(InputError("the text is empty")), ())()
    assert shown.value.message == "the text is empty"


def test_the_agents_score_heads_shares_the_pages_treebank_slot(tiny_lab):
    """The MCP tool ran four at a time while the page's treebank events ran one at a time (issue 56)."""
    from bertviz_lab.app import build_demo

    demo = build_demo(tiny_lab)
    try:
        slot = {f.api_name: f.concurrency_id for f in demo.fns.values()}
        assert slot["agent_score_heads"] == slot["score_heads"] == slot["structural_probe"] == "syntax"
        assert slot["agent_analyze"] != "syntax"
    finally:
        demo.close()


def test_hostile_probe_files_are_one_sentence(tiny_lab, tmp_path):
    """--probes (and the app's probes) given another format, a folder, or a header forged with these weights'
    hash over tensors that are not probes: one sentence each, never a traceback (issue 56)."""
    from safetensors.torch import save_file

    from bertviz_lab.lab import InputError
    from bertviz_lab.syntax.structure import load_probes

    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a safetensors file")
    sha = {"model_sha256": tiny_lab.checkpoint_info().sha256}
    forged = {"name": {"x": torch.zeros(3)}, "shape": {"train/distance/layer1": torch.zeros(5, 4)},
              "nan": {"train/depth/layer0": torch.full((32, 4), float("nan"))}}
    cases = {garbage: "not a readable safetensors file", tmp_path: "is not a file"}
    for what, tensors in forged.items():
        save_file(tensors, str(tmp_path / f"{what}.safetensors"), metadata=sha)
        cases[tmp_path / f"{what}.safetensors"] = "is not a probe of this model"
    save_file({"train/depth/layer0": torch.zeros(32, 4)}, str(tmp_path / "json.safetensors"),
              metadata={**sha, "probes": "[1, 2"})
    cases[tmp_path / "json.safetensors"] = "not the JSON object"
    for path, said in cases.items():
        with pytest.raises(InputError, match=said):
            load_probes(path, tiny_lab)
    save_file({"train/depth/layer0": torch.ones(32, 4)}, str(tmp_path / "good.safetensors"), metadata=sha)
    assert list(load_probes(tmp_path / "good.safetensors", tiny_lab)) == ["train/depth"]  # the control


def test_values_gradio_refuses_are_answered_in_the_apps_words(tiny_app):
    """A string where a slider's number goes, a choice not in the list: Gradio's own check failed with Python's text
    ("Original error: TypeError: '<' not supported ...", "(type: <class 'str'>)") before issue 56."""
    import gradio_client

    client = gradio_client.Client(tiny_app, verbose=False)
    cases = ((("analyze", ("the cat sat", "", "abc")), "Expected a number in the slider's range for the slider"),
             (("mask_tokens", ("the cat sat", "", 5, ["x"])), "'x' is not in the list of choices ("),
             (("analyze", ("the cat sat", "", 0)), "Value 0 is less than minimum value 1"))
    for (api, args), said in cases:
        with pytest.raises(Exception) as shown:
            client.predict(*args, api_name=f"/{api}")
        text = str(shown.value)
        assert said in text and "Original error" not in text and "<class" not in text, text


def test_a_lone_surrogate_in_a_refused_value_still_makes_a_reply():
    """Gradio's refusal echoed the value; with a lone surrogate in it the reply could not be sent at all."""
    import gradio as gr

    from bertviz_lab.app.blocks import refused_value

    said = refused_value(gr.Error("Value: '\ud800' (type: <class 'str'>) is not in the list of choices: ['a']"))
    assert said == "'\\ud800' is not in the list of choices (['a'])"
    said.encode("utf-8")  # sendable
    assert refused_value(gr.Error("Value \ud800 is bad")).encode("utf-8") == b"Value \\ud800 is bad"


@pytest.mark.parametrize("case", ["negative-seed", "binary-conllu", "folder-conllu", "binary-pairs", "binary-documents",
                                  "surrogate-word"])
def test_the_hostile_runs_cli_cases_are_one_line_with_exit_2(case, tmp_path, tiny_folder):
    """What issue 56's hostile run still found after the gate's fixes: each a traceback with exit 1, or Python's text."""
    import builders

    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(128, 256)) * 8)
    model = ("--model", str(tiny_folder), "--device", "cpu")
    run = {
        "negative-seed": lambda: builders.run_cli("score-heads", "--out", str(tmp_path / "o"), "--seed", "-1", *model),
        "binary-conllu": lambda: builders.run_cli("score-heads", "--conllu", str(binary), "--out", str(tmp_path / "o"),
                                                  *model),
        "folder-conllu": lambda: builders.run_cli("structural-probe", "--treebank", str(tmp_path), "--out",
                                                  str(tmp_path / "o"), *model),
        "binary-pairs": lambda: builders.run_cli("patch", "--pairs-file", str(binary), *model),
        "binary-documents": lambda: builders.run_cli("eval-nsp", "--text-file", str(binary), *model),
        "surrogate-word": lambda: builders.run_cli("patch", "the [MASK] sat", "--donor", "a [MASK] sat", "--correct",
                                                   "\udcff", "--wrong", "dog", *model),
    }[case]()
    said = {"negative-seed": "a seed is a whole number from 0", "binary-conllu": ": not UTF-8 text",
            "folder-conllu": ": a folder, not a CoNLL-U file", "binary-pairs": "is not UTF-8 text",
            "binary-documents": "is not UTF-8 text", "surrogate-word": "not valid Unicode"}[case]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and len(lines) == 1 and said in lines[0], run.stderr
    assert "Traceback" not in run.stderr and "codec" not in run.stderr and "Errno" not in run.stderr
