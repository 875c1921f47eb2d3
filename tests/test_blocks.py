"""LabBlocks: a reply's skipped outputs reach the page as skips without Gradio rebuilding their components, and
what it sends for the outputs given is Gradio's own postprocessing, value for value."""
import asyncio

import gradio as gr
import gradio.blocks as gradio_blocks
import pytest
from gradio.state_holder import SessionState

from bertviz_lab.app.blocks import LabBlocks, given_outputs, is_skip


def normalised(reply: list) -> list:
    """Gradio's skip of an HTML output carries its ``__type__`` again as an HTML property; both mean no change."""
    return [gr.skip() if isinstance(v, dict) and v.get("__type__") == "update" and set(v) <= {"__type__", "props"}
            and v.get("props", gr.skip()) == gr.skip() else v for v in reply]


@pytest.fixture
def config_calls(monkeypatch):
    """The ids of the blocks whose config Gradio renders (a rebuilt component renders its config)."""
    calls = []
    real = gradio_blocks.BlocksConfig.config_for_block

    def counted(_id, *args, **kwargs):
        calls.append(_id)
        return real(_id, *args, **kwargs)

    monkeypatch.setattr(gradio_blocks.BlocksConfig, "config_for_block", staticmethod(counted))
    return calls


def test_given_outputs_takes_only_replies_keyed_by_the_events_outputs():
    with gr.Blocks():
        a, b, c = gr.Textbox(), gr.Number(), gr.HTML()
        other = gr.Textbox()
    outputs = [a, b, c]
    assert given_outputs(outputs, {a: "x", c: "<b>"}) == [0, 2]
    assert given_outputs(outputs, {a: "x", b: gr.skip(), c: "<b>"}) == [0, 2]  # an explicit skip is a skip
    assert given_outputs(outputs, {a: "x", b: 1, c: "y"}) is None  # nothing skipped: Gradio's path
    assert given_outputs(outputs, {a: "x"}) is None  # one output given: Gradio's path (it unwraps single outputs)
    assert given_outputs(outputs, {a: "x", other: "y"}) is None  # not an output of the event
    assert given_outputs(outputs, ["x", 1, "y"]) is None and given_outputs(outputs, {"a": 1, "b": 2}) is None
    assert given_outputs([a], {a: "x"}) is None
    assert is_skip(gr.skip()) and not is_skip(gr.update(value=None)) and not is_skip({})


def test_a_runs_reply_equals_gradios_and_rebuilds_no_skipped_output(tiny_lab, config_calls):
    """Two Runs (the first sends property updates, the second plain values and ~30 skips) through LabBlocks and
    through gr.Blocks' own postprocess_data, each with its own session: the same wire values, and LabBlocks
    renders the config of no skipped output."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.events import RUN_INPUTS

    demo = build_demo(tiny_lab)
    assert isinstance(demo, LabBlocks)
    block_fn = next(fn for fn in demo.fns.values() if fn.api_name == "analyze")
    ui = demo.bvl_controllers.page.ui
    ours, gradios = SessionState(demo), SessionState(demo)

    def handled(text):
        inputs = [text if name == "text" else getattr(ui, name).value for name in RUN_INPUTS]
        handler_inputs = asyncio.run(demo.preprocess_data(block_fn, inputs, ours))
        return asyncio.run(demo.call_function(block_fn, handler_inputs, state=ours))["prediction"]

    def postprocessed(postprocess, predictions, state):
        config_calls.clear()
        copied = {key: dict(value) if isinstance(value, dict) else value for key, value in predictions.items()}
        return asyncio.run(postprocess(block_fn, copied, state)), list(config_calls)

    counts = []
    for text in ("the cat sat", "the cat sat", "a dog ran on"):  # property updates; plain values and skips; new choices
        predictions = handled(text)
        reply, rendered = postprocessed(demo.postprocess_data, predictions, ours)
        reference, _ = postprocessed(lambda *a: gr.Blocks.postprocess_data(demo, *a), predictions, gradios)
        assert len(reply) == len(block_fn.outputs) == len(reference)
        assert normalised(reply) == normalised(reference)
        given = {key._id for key, value in predictions.items() if not is_skip(value)}
        skipped = [block._id for block in block_fn.outputs if block._id not in given]
        counts.append(len(skipped))
        assert skipped and not set(rendered) & set(skipped)
        assert all(reply[i] == gr.skip() for i, block in enumerate(block_fn.outputs) if block._id in skipped)
    assert counts[0] < 10 < 20 < counts[1]  # a new session clears the views drawn on request; the next Run skips them
    # the session's copy of a component updated with properties is Gradio's: its new choices
    assert ours[ui.picker._id].choices == gradios[ui.picker._id].choices
    assert [label for label, _ in ours[ui.picker._id].choices] == ["1 a", "2 dog", "3 ran", "4 on"]


def test_the_queue_summarises_its_events_every_thousand_not_after_each(monkeypatch):
    """Gradio's queue rebuilds a DataFrame of up to 10,000 past events after each one for its monitoring page;
    the app's refreshes it every ANALYTICS_EVERY events (or as GRADIO_ANALYTICS_CACHE_FREQUENCY says)."""
    from bertviz_lab.app.blocks import ANALYTICS_EVERY

    records = [{"function": "analyze", "status": "success", "process_time": 0.1 * i} for i in range(1, 4)]
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", raising=False)
    with LabBlocks() as demo:
        gr.Textbox()
    queue = demo.queue()._queue
    assert queue.ANAYLTICS_CACHE_FREQUENCY == ANALYTICS_EVERY == 1000
    queue.events_recorded = 1  # one event since the last summary: the cached one (empty) stands
    assert queue.compute_analytics_summary(records) == {"functions": {}}
    queue.events_recorded = ANALYTICS_EVERY
    summary = queue.compute_analytics_summary(records)
    assert summary["functions"]["analyze"]["process_time_percentiles"]["50th"] == pytest.approx(0.2)
    monkeypatch.setenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1")  # a person who wants Gradio's monitoring page
    with LabBlocks() as monitored:
        gr.Textbox()
    assert monitored.queue()._queue.ANAYLTICS_CACHE_FREQUENCY == 1


# A component that keeps a loading status is copied leaf by leaf by Gradio's page on every status change:
# none of these may be a progress target (bertviz_lab/app/events.py, NO_PROGRESS).
NEVER_PROGRESS_TYPES = {"json", "state", "column", "row", "tabs", "tabitem", "group", "accordion"}


def test_no_event_puts_its_progress_on_the_payload_the_session_or_a_container(tiny_lab):
    """Every dependency of the page (events, the page-load event, client follow-ups) keeps its loading status on
    messages and drawn outputs only; Run-like events (45 outputs) on the status line alone."""
    from bertviz_lab.app import build_demo

    config = build_demo(tiny_lab).get_config_file()
    kinds = {c["id"]: (c["type"], c["props"].get("elem_id")) for c in config["components"]}
    checked = 0
    for dep in config["dependencies"]:
        targets = dep.get("show_progress_on") or dep["outputs"]  # the page's own rule (progress_targets getter)
        bad = [kinds[t] for t in targets if kinds[t][0] in NEVER_PROGRESS_TYPES]
        assert not bad, f"{dep.get('api_name')}: progress on {bad}"
        checked += 1
        if dep.get("api_name") in ("analyze", "analyze_submit", "analyze_example", "mask_tokens", "from_url"):
            assert [kinds[t] for t in targets] == [("markdown", "message")], dep.get("api_name")
            # no Gradio timer redrawn every frame while the model runs: the page's CSS says "Running…"
            assert dep["show_progress"] == "hidden", dep.get("api_name")
        if dep.get("api_name") == "load_model":
            assert sorted(kinds[t][1] for t in targets) == ["message", "status"]
    assert checked > 30
