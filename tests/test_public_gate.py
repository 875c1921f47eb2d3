"""Issue 26: a public server one visitor cannot knock over. One gate for every event (the budget
each forward pass is charged to), bounded disk, stale folders reclaimed, hostile tokens inert."""
import errno
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, call, launch

from bertviz_lab.bert import Budget, BudgetExceeded, spending

gradio_client = pytest.importorskip("gradio_client")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bertviz_lab.app.ports import free_port  # noqa: E402

CAP_TOKENS, CAP_MASKS, CAP_SENTENCES = 24, 4, 20  # the tiny model takes up to 64 tokens


def public_limits(**changes):
    from bertviz_lab.app.state import Limits

    return replace(Limits.public(), max_tokens=CAP_TOKENS, max_masks=CAP_MASKS, set_sentences=CAP_SENTENCES,
                   faith_sentences=CAP_SENTENCES, **changes)


# ---- the budget itself ------------------------------------------------------------------------------
LONG = " ".join(["cat"] * 30)  # 32 tokens


def test_budget_refuses_an_input_over_the_token_cap(tiny_lab):
    with spending(Budget(tokens=20)), pytest.raises(BudgetExceeded, match="up to 20 tokens per input; this input has 32"):
        tiny_lab.analyze(LONG)
    with spending(Budget(tokens=32)):
        assert len(tiny_lab.analyze(LONG).tokens) == 32  # at the cap: accepted


def test_budget_refuses_an_input_over_the_mask_cap(tiny_lab):
    with spending(Budget(masks=2)), pytest.raises(BudgetExceeded, match="up to 2 masked words per input; .* 3"):
        tiny_lab.analyze("[MASK] the cat [MASK] on the [MASK] mat by the door today")
    with spending(Budget(masks=2)):
        assert len(tiny_lab.analyze("[MASK] the cat [MASK] on the mat").mlm) == 2


def test_budget_refuses_exactly_the_pass_that_goes_over_the_total(tiny_lab):
    with spending(Budget(token_passes=100)) as spend:
        tiny_lab.analyze(" ".join(["cat"] * 8))  # 10 tokens: 10 token passes
        assert spend.token_passes == 10 and spend.passes == 1
        tiny_lab.analyze(LONG)  # 10 + 32 = 42
        tiny_lab.analyze(LONG)  # 74
        assert spend.token_passes == 74 and spend.passes == 3
        with pytest.raises(BudgetExceeded, match="more model work"):
            tiny_lab.analyze(LONG)  # 106 > 100: refused


def test_budget_refuses_work_past_its_time(tiny_lab):
    with spending(Budget(seconds=0)), pytest.raises(BudgetExceeded, match="stopped after 0 s"):
        tiny_lab.analyze("the cat")


def test_outside_a_budget_nothing_is_checked(tiny_lab):
    assert tiny_lab.analyze(LONG).attention.shape[-1] == 32


def test_concurrent_requests_spend_their_own_budgets(tiny_lab):
    """The budget is per request (a ContextVar): a strict one in one thread never refuses another's work."""
    results, strict_started = {}, threading.Event()

    def strict():
        with spending(Budget(tokens=5)):
            strict_started.set()
            try:
                tiny_lab.analyze("the cat sat on the mat")
            except BudgetExceeded:
                results["strict"] = "refused"

    def free():
        strict_started.wait(30)
        with spending(Budget(tokens=500)):
            results["free"] = len(tiny_lab.analyze("the cat sat on the mat").tokens)

    threads = [threading.Thread(target=strict), threading.Thread(target=free)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {"strict": "refused", "free": 8}


# ---- every endpoint through the server --------------------------------------------------------------
@pytest.fixture(scope="module")
def public_app(tiny_lab):
    from bertviz_lab.app import build_demo

    limits = public_limits()
    demo = build_demo(tiny_lab, limits=limits)
    url = launch(demo, limits)
    yield url, demo
    demo.close()


def over_tokens(n: int) -> str:
    """CAP_TOKENS + n + 1 tokens (at most the tiny model's 64) with one [MASK] (sweeps need one)."""
    return " ".join(["[MASK]"] + ["cat"] * (CAP_TOKENS + min(n, 63 - CAP_TOKENS) - 2))


def over_masks(n: int) -> str:
    """CAP_MASKS + n masks (n <= 4) in under CAP_TOKENS tokens, few enough for the model's own check."""
    return " ".join(["[MASK] cat"] * (CAP_MASKS + min(n, 4)))


# endpoint -> arguments for an over-cap text (the text is the first argument unless noted)
ENDPOINTS = {
    "analyze": lambda t: (t, "", 5),
    "analyze_submit": lambda t: (t, "", 5),
    "intervention": lambda t: (t, "", 5, "left-only", [], "1-1", 0, 0),
    "directional_sweep": lambda t: (t, "", []),
    "ablation_sweep": lambda t: (t, "", []),
    "position_controls": lambda t: (t, "", [], 3),
    "patching": lambda t: (t, t, "the", "cat"),
}


def said(out: dict) -> str:
    """What an answer says: the page's message, else the result title of the button that answered."""
    return str(out.get("message") or next((v for k, v in out.items() if k.endswith("_message") and v), ""))


def refusal(client, api, args) -> str:
    """The sentence the server answered an over-cap request with ("" if it ran)."""
    client.session_hash = str(uuid.uuid4())  # a new visitor: interventions use the text sent, not an earlier analysis
    if api == "attention":
        with pytest.raises(Exception) as info:
            client.predict(*args, api_name="/attention")
        return str(info.value)
    out = call(client, api, *args)
    return said(out)


@pytest.mark.parametrize("api", [*ENDPOINTS, "attention"])
def test_every_model_endpoint_refuses_over_cap_text(public_app, api):
    url, _ = public_app
    client = gradio_client.Client(url, verbose=False)
    build = ENDPOINTS.get(api, lambda t: (t, "", 5))
    assert f"up to {CAP_TOKENS} tokens per input" in refusal(client, api, build(over_tokens(200)))
    if api != "patching":  # patching scores one [MASK]
        assert f"up to {CAP_MASKS} masked words" in refusal(client, api, build(over_masks(1)))


@pytest.mark.parametrize("api", ["directional_set", "ablation_set", "intervention_set", "faithfulness"])
def test_sentence_sets_are_capped_in_size_and_in_line_length(public_app, api, tmp_path):
    url, _ = public_app
    client = gradio_client.Client(url, verbose=False)
    head = {"intervention_set": ("left-only", "1-1", 0, 0, "symmetric", "words", "zero")}.get(api, ())
    with pytest.raises(Exception, match=f"greater than maximum value {CAP_SENTENCES}"):  # the slider's own check
        call(client, api, *head, CAP_SENTENCES + 1)  # (in the page the slider stops at the cap)
    if api == "faithfulness":
        return
    lines = tmp_path / "lines.txt"
    lines.write_text(over_tokens(30) + "\n")
    middle = {"directional_set": ("symmetric",), "ablation_set": ("zero",)}.get(api, ())
    out = call(client, api, *head, CAP_SENTENCES, *middle, "upload", gradio_client.handle_file(str(lines)))
    assert f"up to {CAP_TOKENS} tokens per input" in said(out)


def test_set_handlers_check_their_size_also_when_called_directly(tiny_lab):
    from bertviz_lab.app import build_demo

    demo = build_demo(tiny_lab, limits=public_limits())
    with pytest.raises(Exception, match=f"up to {CAP_SENTENCES} sentences per request \\(got 21\\)"):
        demo.bvl_controllers.sets.set_size(21)


def test_a_request_past_its_time_is_stopped_with_a_sentence(tiny_lab):
    """seconds=0: every forward pass is past the budget, so the set stops at its first and says why."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab, limits=public_limits(seconds=0))
    handlers = demo.bvl_controllers
    gated = next(f.fn for f in demo.fns.values() if f.api_name == "directional_set")
    out = gated(5, "symmetric", Session(), "heldout", None, progress=lambda *a, **k: None)
    assert "stopped after 0 s" in out[handlers.page.ui.direction_set_message]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(api=st.sampled_from([*ENDPOINTS, "attention"]), over=st.integers(1, 400), masks=st.booleans())
def test_property_random_endpoint_random_over_cap_input_is_refused(public_app, api, over, masks):
    url, _ = public_app
    client = gradio_client.Client(url, verbose=False)
    build = ENDPOINTS.get(api, lambda t: (t, "", 5))
    if masks and api != "patching":
        text, words = over_masks(over), f"up to {CAP_MASKS} masked words"
    else:
        text, words = over_tokens(over), f"up to {CAP_TOKENS} tokens per input"
    assert words in refusal(client, api, build(text))
    client.session_hash = str(uuid.uuid4())
    assert call(client, "analyze", "the cat sat", "", 5)["message"] == "5 tokens."  # the server still answers


# ---- sessions: cheap events from many visitors evict no analysis ------------------------------------
def test_cheap_events_from_new_visitors_evict_no_analysis(tiny_lab):
    from bertviz_lab.app import build_demo

    limits = public_limits(sessions=2)
    demo = build_demo(tiny_lab, limits=limits)
    url = launch(demo, limits)
    try:
        owner = gradio_client.Client(url, verbose=False)
        assert call(owner, "analyze", "the cat sat", "", 5)["message"] == "5 tokens."
        visitor = gradio_client.Client(url, verbose=False)
        for _ in range(40):
            visitor.session_hash = str(uuid.uuid4())
            call(visitor, "pick_head", "0,0,1")
        assert call(owner, "export_csv")["message"].startswith("Exported")  # its analysis is still there
        for _ in range(2):  # two visitors who analyse take the two slots
            visitor.session_hash = str(uuid.uuid4())
            call(visitor, "analyze", "a dog ran", "", 5)
        assert "Run an analysis first" in call(owner, "export_csv")["message"]
    finally:
        demo.close()


def test_pick_head_and_select_tab_check_what_the_api_sends(tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = Session(model=tiny_lab.checkpoint_id)
    assert set(handlers.views.pick("100000,-4,1", session)) == {ui.layer}  # skipped: no such head
    assert set(handlers.views.pick("x", session)) == {ui.layer}
    out = handlers.views.pick("1,2,1", session)
    assert out[ui.layer] == 2 and out[ui.head] == 3
    url = launch(demo)
    try:
        client = gradio_client.Client(url, verbose=False)
        out = call(client, "select_work_tab", 1, 1, False, False, "all", "attention")  # no event data
        assert "notes" in out
    finally:
        demo.close()


# ---- disk --------------------------------------------------------------------------------------------
def test_temp_folder_keeps_each_owner_and_the_server_within_budget(tmp_path):
    from bertviz_lab.app.temp_folders import MARKER, TempFolder

    folder = TempFolder("test-budget-", max_age=3600, max_bytes=250, per_owner=2)
    a = [folder.write(b"a" * 100, ".bin", "alice") for _ in range(3)]
    assert [p.exists() for p in a] == [False, True, True]  # alice keeps her newest two
    b = folder.write(b"b" * 100, ".bin", "bob")
    assert b.exists() and not a[1].exists() and a[2].exists()  # 300 bytes > 250: the oldest goes
    assert folder.used_bytes() == 200 and (folder.root / MARKER).is_file()
    huge = folder.write(b"h" * 1000, ".bin", "carol")  # alone over the budget: kept, all others go
    assert huge.exists() and not b.exists() and not list(folder.root.glob(".*.part"))
    folder.remove()


def test_exports_stay_bounded_and_are_never_copied(tiny_lab):
    from bertviz_lab.app import build_demo

    limits = public_limits()
    demo = build_demo(tiny_lab, limits=limits)
    url = launch(demo, limits)
    handlers = demo.bvl_controllers
    gradio_cache = Path(os.environ["GRADIO_TEMP_DIR"])
    try:
        client = gradio_client.Client(url, verbose=False)
        call(client, "analyze", over_tokens(-10), "", 5)
        for i in range(12):
            out = call(client, "export_npz" if i % 3 else "export_csv")
            assert out["message"].startswith("Exported")
            assert Path(out["export_file"]).stat().st_size > 0  # downloaded by the client as the page does
        assert len(handlers.page.exports.entries()) == limits.files_per_session
        assert not [p for p in gradio_cache.rglob("*") if p.suffix in (".npz", ".csv")]  # Gradio copied none
    finally:
        demo.close()


def test_a_full_disk_answers_one_sentence_and_run_recovers(tiny_lab, monkeypatch):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.gate import DISK_FULL
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    run = next(f.fn for f in demo.fns.values() if f.api_name == "analyze")
    export = next(f.fn for f in demo.fns.values() if f.api_name == "export_npz")
    session = Session(model=tiny_lab.checkpoint_id)

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(handlers.page.payloads.root / "x.bin"))

    with monkeypatch.context() as patch:
        patch.setattr(handlers.page.payloads, "write", full)
        out = run("the cat sat", "", 5, session)
        assert out[ui.message] == f"⚠️ {DISK_FULL}" and "/tmp" not in out[ui.message]
        assert out[ui.views_box] == {"__type__": "update", "elem_classes": ["bvl-stale"]}  # the views are greyed
        assert set(out) == {ui.message, ui.views_box}
    assert run("the cat sat", "", 5, session)[ui.message] == "5 tokens."  # space is back: Run works
    with monkeypatch.context() as patch:
        patch.setattr(np, "savez_compressed", full)
        assert export(session) == {ui.message: f"⚠️ {DISK_FULL}"}
    assert not [p for p in handlers.page.exports.root.rglob("*") if p.is_file() and p.suffix != ""]


def test_payloads_are_fetched_by_name_without_server_paths(public_app):
    url, demo = public_app
    client = gradio_client.Client(url, verbose=False)
    payload = call(client, "analyze", "the cat sat", "", 5)["payload"]
    assert payload["codes_url"].startswith("bvl-codes/") and "/tmp" not in payload["codes_url"]
    with urllib.request.urlopen(url.rstrip("/") + "/" + payload["codes_url"]) as reply:
        assert len(reply.read()) == payload["layers"] * payload["heads"] * 5 * 5 * 2
    for bad in ("bvl-codes/..%2F..%2Fetc%2Fpasswd", "bvl-codes/" + "0" * 32 + ".bin"):
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url.rstrip("/") + "/" + bad)


def test_stale_folders_of_dead_servers_are_removed_and_only_those(tmp_path):
    from bertviz_lab.app.temp_folders import MARKER, process_started, remove_stale_folders

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live, foreign = (tmp_path / f"bertviz-lab-{n}" for n in ("exports-dead", "payloads-live", "other"))
    for folder in (stale, live, foreign):
        folder.mkdir()
        (folder / "data.bin").write_bytes(b"x")
    (stale / MARKER).write_text(f"{dead.pid} 12345\n")
    (live / MARKER).write_text(f"{os.getpid()} {process_started(os.getpid())}\n")
    assert remove_stale_folders(tmp_path) == [stale]
    assert live.is_dir() and foreign.is_dir() and not stale.exists()


def start_server(folder: Path, tmp: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    env.pop("GRADIO_TEMP_DIR", None)
    proc = subprocess.Popen([sys.executable, "app.py", "--model", str(folder), "--device", "cpu", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # wait for the condition: the server answers
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the server did not start")


def ours(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("bertviz-lab-*")}


@pytest.mark.slow
def test_a_restart_reclaims_what_kill_9_left_and_sigterm_cleans_up(tiny_folder, tmp_path):
    killed, _ = start_server(tiny_folder, tmp_path)
    left = ours(tmp_path)
    assert {"exports", "payloads", "gradio"} <= {name.split("-")[2] for name in left}
    killed.kill()
    killed.wait(60)
    assert ours(tmp_path) == left  # kill -9 leaves them ...
    second, _ = start_server(tiny_folder, tmp_path)
    try:
        now = ours(tmp_path)
        assert not (now & left) and len(now) == len(left)  # ... and the next server removes them
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) is not None
    assert ours(tmp_path) == set()  # SIGTERM: every folder of ours is gone


# ---- hostile tokens in HTML -----------------------------------------------------------------------------
HOSTILE = "</script><script>window.__pwned = 1</script>"


def test_json_inside_script_escapes_markup():
    from bertviz_lab.inline import escape_json_text, script_json

    text = script_json({"t": HOSTILE + " & <!-- \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert "\\u003c/script\\u003e" in text and escape_json_text('"a<b"') == '"a\\u003cb"'
    import json

    assert json.loads(text) == {"t": HOSTILE + " & <!-- \u2028"}  # the same value


def test_hostile_tokens_run_no_script_in_chromium_and_still_show(browser):
    import bertviz_lab

    tokens = ["[CLS]", HOSTILE, "<img src=x onerror=window.__pwned=2>", "[SEP]"]
    attention = [np.full((1, 2, 4, 4), 0.25)]
    pages = [bertviz_lab.head_view(attention, tokens, html_action="return").data,
             bertviz_lab.model_view(attention, tokens, html_action="return").data]
    for html in pages:
        page = browser.new_page()
        try:
            page.set_content(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{html}</body></html>")
            page.wait_for_selector(".bvl-hv-token", timeout=30000)  # the head view is drawn
            assert page.evaluate("window.__pwned") is None  # neither the script nor the onerror ran
            titles = page.eval_on_selector_all(".bvl-hv-token", "els => els.map(e => e.title)")
            assert any(HOSTILE in t for t in titles) and any("onerror" in t for t in titles)  # shown as text
        finally:
            page.close()
