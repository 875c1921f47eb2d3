"""benchmarks/run_breakdown.py's arithmetic: one Run's records (page and server, on one clock) into
stages that follow each other and add up to click -> pixels; Plotly calls by component; long tasks
by stage. No server, no browser."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
rb = pytest.importorskip("run_breakdown")

CLICK = 1_000_000.0  # epoch ms


def server(offset_ms: float, length_ms: float) -> tuple[float, float]:
    """A span starting ``offset_ms`` after the click, in the server's epoch seconds."""
    return (CLICK + offset_ms) / 1e3, (CLICK + offset_ms + length_ms) / 1e3


def recorded_run() -> tuple[dict, list]:
    spans = [(name, *server(start, length), info) for name, start, length, info in (
        ("join", 10, 1, {}), ("process_api", 15, 100, {}), ("preprocess", 15, 3, {}), ("handler", 20, 80, {}),
        ("forward", 22, 40, {}), ("payload", 62, 20, {}), ("figures", 82, 0, {}), ("postprocess", 100, 12, {}),
        ("queued", 118, 0, {}), ("encode", 125, 2, {"bytes": 7000}))]
    at = lambda ms: CLICK + ms  # noqa: E731
    page = {
        "click": CLICK,
        "resources": [{"name": "join", "start": at(9), "end": at(12), "bytes": 47},
                      {"name": "stream", "start": at(60), "end": at(130), "bytes": 7300},
                      {"name": "codes", "start": at(200), "end": at(230), "bytes": 147456}],
        "sse": [{"first": at(131), "end": at(131), "chars": 7000}],
        "json": [{"kind": "parse", "chars": 20000, "start": at(100), "end": at(101)},
                 {"kind": "run", "chars": 7000, "start": at(140), "end": at(141)}],
        "loads": [{"t": at(190), "id": "x"}],
        "plotly": [{"name": "react", "target": "overview-plot", "start": at(150), "end": at(160), "nested": False},
                   {"name": "react", "target": "single-plot", "start": at(240), "end": at(300), "nested": False},
                   {"name": "newPlot", "target": "single-plot", "start": at(241), "end": at(290), "nested": True}],
        "long": [{"start": at(0), "duration": 8}, {"start": at(180), "duration": 60}],
        "store": [{"name": "setItem", "start": at(142), "end": at(145)}],
    }
    return page, spans


def test_the_stages_follow_each_other_and_add_up_to_click_to_pixels():
    page, spans = recorded_run()
    stages = rb.timeline(page, spans, pixels_ms=330)
    assert [s[0] for s in stages] == [s for s, _ in rb.STAGES]
    assert all(a[2] == pytest.approx(b[1]) for a, b in zip(stages, stages[1:]))
    got = {k: round(v, 6) for k, v in rb.stage_ms(stages).items()}
    assert got == {
        "click -> join request at server": 10, "queue wait": 5, "preprocess": 5, "forward pass (lab.analyze)": 40,
        "payload (view_payload + codes file)": 20, "figures (tab_figures)": 0, "rest of the handler": 20,
        "postprocess (Gradio)": 12, "process_api tail, run history, queued": 6,
        "wait for the page's SSE request": 0,  # the stream opened (at 60 ms) before the message was queued
        "SSE task wakes, model_dump": 7, "encode (orjson)": 2, "response transfer (SSE)": 3,
        "until the page's fetch reader has it": 1, "JSON.parse of the response": 10,  # reader at 131, parse ends 141
        "Gradio updates components": 49, "codes fetch": 40, "decode codes, build z": 10, "Plotly.react heatmap": 60,
        "paint (two frames)": 30, "total click -> pixels": 330}
    assert sum(v for k, v in got.items() if k != "total click -> pixels") == pytest.approx(330)


def test_a_stage_that_the_page_and_server_overlap_in_lasts_zero_and_a_missing_record_is_named():
    page, spans = recorded_run()
    page["resources"][1]["start"] = CLICK + 150  # the SSE request opened 32 ms after the message was queued
    stages = {s: e - b for s, b, e in rb.timeline(page, spans, pixels_ms=330)}
    assert stages["wait for the page's SSE request"] == pytest.approx(32)
    assert stages["SSE task wakes, model_dump"] == 0  # the encoding (at 125 ms) was over before: clamped
    page["loads"] = []
    with pytest.raises(KeyError, match="bvl.load"):
        rb.timeline(page, spans, pixels_ms=330)


def test_plotly_calls_by_component_count_only_top_level_calls():
    page, _ = recorded_run()
    assert rb.plotly_by_component(page["plotly"]) == {"react #overview-plot": (1, 10.0), "react #single-plot": (1, 60.0)}
    runs = [{"react #single-plot": (1, 60.0)}, {"react #single-plot": (1, 80.0), "react #overview-plot": (2, 30.0)},
            {"react #single-plot": (1, 70.0)}]
    assert rb.plotly_medians(runs) == {"react #single-plot": (1, 70.0), "react #overview-plot": (0, 0.0)}


def test_long_tasks_are_shared_out_to_the_stages_they_overlap():
    page, spans = recorded_run()
    busy = rb.busy_ms(rb.timeline(page, spans, pixels_ms=330), page["long"])
    assert busy["click -> join request at server"] == pytest.approx(8)
    assert busy["Gradio updates components"] == pytest.approx(10)  # 180-190 of the task 180-240
    assert busy["codes fetch"] == pytest.approx(40)  # 190-230
    assert busy["decode codes, build z"] == pytest.approx(10)  # 230-240
    assert sum(busy.values()) == pytest.approx(68)
