"""Hostile input and faults: each case once broke something (issue 18) and must stay fixed."""
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import call

from bertviz_lab import InputError

gradio_client = pytest.importorskip("gradio_client")
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "</script><script>alert(1)</script>"


def cli(*args, timeout=120):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "bertviz_lab", *args], capture_output=True, cwd=ROOT, env=env,
                          timeout=timeout)


def assert_user_error(run, *words):
    """Exit 2 with one ``error:`` line (after any progress bar), no traceback, no warnings."""
    err = run.stderr.decode("utf-8", "replace")
    assert run.returncode == 2 and "Traceback" not in err and "Warning" not in err, err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "%|" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], err


def test_invalid_unicode_and_huge_text_are_input_errors(tiny_lab):
    with pytest.raises(InputError, match="not valid Unicode"):
        tiny_lab.analyze("the cat \ud800 sat")
    with pytest.raises(InputError, match="sentence B"):
        tiny_lab.analyze("the cat", pair="\udcff")
    with pytest.raises(InputError, match="characters long"):
        tiny_lab.analyze("a" * 100_001)


class Exploit:
    def __reduce__(self):
        return (os.system, ("touch /tmp/bertviz-lab-pwned",))


@pytest.mark.parametrize("case", ["long-model", "max-length-1", "pickle", "non-utf8-argv", "binary-text",
                                  "empty-text", "unwritable-out"])
def test_cli_answers_one_line_never_a_traceback(case, tmp_path, tiny_folder):
    if case == "long-model":
        assert_user_error(cli("analyze", "the cat", "--model", "m" * 300, "--device", "cpu"), "not a valid hub id")
    elif case == "max-length-1":
        run = cli("score-heads", "--out", str(tmp_path / "o"), "--max-length", "1", "--no-null-model", "--device", "cpu")
        assert_user_error(run, "no sentence could be scored")
    elif case == "pickle":
        folder = tmp_path / "evil"
        shutil.copytree(tiny_folder, folder)
        (folder / "model.safetensors").unlink()
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"x": Exploit()}))
        run = cli("analyze", "the cat", "--model", str(folder), "--allow-pickle", "--device", "cpu")
        assert_user_error(run, "refused to load")
        assert not Path("/tmp/bertviz-lab-pwned").exists()
    elif case == "non-utf8-argv":
        run = subprocess.run([sys.executable.encode(), b"-m", b"bertviz_lab", b"analyze", b"caf\xe9 au lait",
                              b"--model", str(tiny_folder).encode(), b"--device", b"cpu"], capture_output=True,
                             cwd=ROOT, timeout=120)
        assert_user_error(run, "not valid Unicode")
    elif case == "binary-text":
        path = tmp_path / "binary.txt"
        path.write_bytes(bytes(range(256)) * 4)
        assert_user_error(cli("eval-mlm", "--text-file", str(path), "--model", str(tiny_folder)), "not UTF-8")
    elif case == "empty-text":
        path = tmp_path / "empty.txt"
        path.write_text("\n\n")
        assert_user_error(cli("eval-mlm", "--text-file", str(path), "--model", str(tiny_folder)), "nothing was scored")
    elif case == "unwritable-out":
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder")
        run = cli("score-heads", "--out", str(blocker / "out"), "--device", "cpu")
        assert_user_error(run, "cannot read or write")
        assert not list(tmp_path.rglob("*.tmp"))


def test_export_folders_and_payload_files_are_deleted_when_old_or_too_many():
    from bertviz_lab.app.temp_folders import TempFolder

    exports = TempFolder("test-exports-", max_age=0)
    first = exports.new()
    (first / "attention.npz").write_bytes(b"x" * 1000)
    second = exports.new()  # the first, older than max_age, goes
    assert not first.exists() and second.exists()
    exports.remove()
    assert not exports.root.exists()
    payloads = TempFolder("test-payloads-", max_age=3600, max_entries=3)
    files = [payloads.write(bytes([i]) * 10, ".bin") for i in range(5)]
    assert [f.exists() for f in files] == [False, False, True, True, True]  # the newest 3 stay
    assert files[-1].read_bytes() == bytes([4]) * 10 and not list(payloads.root.glob("*.part"))
    payloads.remove()


def test_atomic_export_leaves_nothing_when_interrupted(tiny_lab, tmp_path, monkeypatch):
    from bertviz_lab import export

    a = tiny_lab.analyze("the cat sat")

    def broken(_analysis):
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "attention_frame", broken)
    with pytest.raises(KeyboardInterrupt):
        export.export_csv(a, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_csv_too_large_points_to_npz_which_holds_everything(tiny_lab, tmp_path):
    from bertviz_lab import export

    a = tiny_lab.analyze("the cat sat")
    with pytest.raises(ValueError, match="export .npz"):
        export.export_csv(a, tmp_path, max_rows=10)
    assert np.load(export.export_npz(a, tmp_path))["attention"].shape == a.attention.shape


def test_api_errors_say_what_to_change(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    for args, words in [(("", "", 5), "the text is empty"), (("the cat", "", 1e30), "top-k must be a whole number"),
                        (("[MASK] [MASK] [MASK] cat", "", 5), "too many masked")]:
        with pytest.raises(Exception) as info:
            client.predict(*args, api_name="/attention")
        assert words in str(info.value)
    with pytest.raises(Exception) as info:
        client.predict("the cat", "", "abc", api_name="/analyze")
    assert "Expected a number in the slider's range for the slider (input 3)" in str(info.value)  # no Python text
    assert "Original error" not in str(info.value)
    out = call(client, "intervention", "the cat sat", "", 5, "shuffle-words", [], "1-1", 0, -1)
    assert "seed must be a whole number" in out["intervention_message"]
    with pytest.raises(Exception, match="less than minimum value 1"):
        client.predict("the cat", "", 0, api_name="/analyze")


def test_treebank_text_is_inert_in_the_arcs_summary():
    from bertviz_lab.figures.syntax import arcs_figure
    from bertviz_lab.treebank import Sentence

    words = ["<b>bold</b>", "![x](http://127.0.0.1:9/track.png)", "ok"]
    sentence = Sentence(words, [2, 0, 2], [HOSTILE, "root", "dep"])
    fig, summary = arcs_figure(sentence, np.random.default_rng(0).random((1, 1, 3, 3)), 0, 0)
    assert "<b>" not in summary and "<script>" not in summary and "![x]" not in summary
    assert "&lt;b&gt;bold" in summary and "!\\[x\\]" in summary
    assert "<b>" not in "".join(fig["data"][0]["text"])  # Plotly labels show the tags as text


def test_treebank_scoring_runs_one_at_a_time_behind_a_bounded_queue(tiny_lab):
    from bertviz_lab.app import build_demo, queue_kwargs
    from bertviz_lab.app.state import Limits

    demo = build_demo(tiny_lab)
    syntax = next(fn for fn in demo.fns.values() if fn.api_name == "score_heads")
    assert syntax.concurrency_limit == 1 and syntax.concurrency_id == "syntax"  # one treebank at a time
    demo.queue(**queue_kwargs(Limits()))  # as the app launches it
    assert demo._queue.max_size == 64  # a bounded queue: more waiting events get "busy"


def test_syntax_uploads_are_capped_and_named(tiny_lab, tmp_path):
    from conftest import launch

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Limits

    demo = build_demo(tiny_lab, limits=Limits(syntax_words=50))
    url = launch(demo)
    try:
        client = gradio_client.Client(url, verbose=False)
        big = tmp_path / "big.conllu"
        big.write_text((ROOT / "assets" / "sample_treebank.conllu").read_text())
        message = call(client, "score_heads", "upload", gradio_client.handle_file(str(big)), False, False)
        assert "big.conllu has" in message["syntax_message"] and "up to 50" in message["syntax_message"]
        assert "/tmp/gradio" not in message["syntax_message"]
        huge = tmp_path / "huge.conllu"
        huge.write_bytes(b"#" * 2_500_000)  # over the upload limit: Gradio refuses it before it lands
        with pytest.raises(Exception, match="(?i)size|large|limit"):
            call(client, "score_heads", "upload", gradio_client.handle_file(str(huge)), False, False)
    finally:
        demo.close()


def test_new_sessions_leave_memory_bounded(default_lab):
    """Each session's state holds its float32 attention; the server keeps at most Limits.sessions of them,
    so a stream of visitors who each analyse leaves memory bounded (that cheap events evict no analysis
    is test_public_gate's). 40 visitors at 256 tokens with 4 sessions kept: unbounded, the last 30 would
    hold 30 x 18.9 MB = 566 MB more."""
    import uuid

    from conftest import launch

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Limits

    limits = Limits(sessions=4)
    demo = build_demo(default_lab, limits=limits)
    url = launch(demo, limits)

    def rss_mb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    try:
        client = gradio_client.Client(url, verbose=False)
        text = " ".join(["word"] * 254)  # 256 tokens: 6 x 12 x 256 x 256 float32 = 18.9 MB per session
        memory = []
        for i in range(40):
            client.session_hash = str(uuid.uuid4())  # a new visitor
            assert call(client, "analyze", text, "", 5)["message"] == "256 tokens."
            if i in (9, 39):
                memory.append(rss_mb())
        kept = [v for state in demo.state_holder.session_data.values() for v in state.state_data.values()
                if getattr(v, "analysis", None) is not None]
        assert len(kept) == limits.sessions == len(demo.bvl_gate.slots)  # the newest 4 keep their analyses
        # bounded, memory stays within what the allocator keeps of freed per-request buffers
        assert memory[1] - memory[0] < 300, memory
    finally:
        demo.close()


def test_public_mode_limits_tokens_and_reply_size(tiny_lab):
    import base64

    from conftest import launch

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Limits

    limits = Limits.public()
    limits = Limits(**{**limits.__dict__, "max_tokens": 40, "api_bytes": 20_000})
    demo = build_demo(tiny_lab, limits=limits)
    url = launch(demo, limits)
    try:
        client = gradio_client.Client(url, verbose=False)
        long = " ".join(["cat"] * 60)
        assert "up to 40 tokens per input" in call(client, "analyze", long, "", 5)["message"]
        with pytest.raises(Exception, match="up to 40 tokens per input"):
            client.predict(long, "", 5, api_name="/attention")
        small = client.predict("the cat sat", "", 5, api_name="/attention")
        assert "attention" in small and "attention_f16" not in small  # small replies stay plain JSON
        text = " ".join(["cat"] * 20)  # 2 x 4 x 22 x 22 weights: over 20 kB as JSON, under it as float16
        packed = client.predict(text, "", 5, api_name="/attention")
        assert "attention" not in packed
        f16 = packed["attention_f16"]
        weights = np.frombuffer(base64.b64decode(f16["base64"]), dtype=np.float16).reshape(f16["shape"])
        np.testing.assert_allclose(weights, tiny_lab.analyze(text).attention, atol=1e-3)
    finally:
        demo.close()


def test_every_bad_input_class_gets_a_message(tiny_app):
    """The table in tests/hostile_inputs.py, through gradio_client: a message, never a bare error."""
    from hostile_inputs import BAD_INPUTS

    client = gradio_client.Client(tiny_app, verbose=False)
    for api, args, word in BAD_INPUTS:
        try:
            out = client.predict(*args, api_name=f"/{api}")
        except Exception as error:  # raised errors must carry the message (gr.Error or Gradio's own)
            text = str(error)
        else:
            text = " ".join(str(v) for v in (out if isinstance(out, (list, tuple)) else [out]))
        assert word.lower() in text.lower(), (api, args, text[:300])
        assert "upstream Gradio app has raised an exception" not in text
