"""App speed and size, measured on the real UI handlers (the functions Gradio calls).

1. Server time for the Run action (forward pass + the page's payload + the open tab's figure,
   serialised) and for a server-drawn tab following the sliders (Aggregates, via sync_view),
   32-token sentence, embedded model, CPU. Layer/head switches of the single-head heatmap and the
   head view need no server at all: benchmarks/bench_browser.py times them in Chromium.
2. Bytes sent for the model overview of 128 tokens at 12 layers x 12 heads (random attention
   from a random-initialised bert-base-sized model), next to BertViz's model_view HTML for the
   same attention.

    python benchmarks/bench_app.py
"""
from __future__ import annotations

import statistics
import time

import torch
from sections import run_recorded

from bertviz_lab import BertConfig, BertLab, load
from bertviz_lab.app import build_demo
from bertviz_lab.app.state import Session
from bertviz_lab.figures.attention import overview_figure
from bertviz_lab.figures.base import to_json


def handler(demo, api_name):
    for fn in demo.fns.values():
        if fn.api_name == api_name:
            return fn.fn
    raise KeyError(api_name)


def serialise(outputs) -> int:
    """Force every figure and the payload to their wire form (what Gradio sends) and count the bytes."""
    import json

    total = 0
    for out in outputs.values():  # handlers return {component: value}
        plot = getattr(out, "plot", None)
        if isinstance(plot, str):
            total += len(plot)
        if isinstance(out, dict) and "codes_url" in out:
            total += len(json.dumps(out)) + out["codes_bytes"]
    return total


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def server_times() -> None:
    lab = load("default", device="cpu")
    demo = build_demo(lab)
    run, sync = handler(demo, "analyze"), handler(demo, "sync_view")
    words = ("The committee that reviewed the proposal said it would publish its findings after the "
             "holidays, despite strong objections from several members of the board and the staff who "
             "worked on it for months").split()
    text = next(" ".join(words[:k]) for k in range(1, len(words) + 1)
                if len(lab.encode(" ".join(words[:k])).ids) >= 32)
    n = len(lab.encode(text).ids)
    session = Session(model=lab.checkpoint_id, device=str(lab.device))
    for _ in range(3):
        serialise(run(text, "", 5, session))
    run_ms = timed(lambda: serialise(run(text, "", 5, session)), 30)
    layers = iter(range(10_000))

    def switch():
        i = next(layers)
        serialise(sync(i % lab.n_layers + 1, i % lab.n_heads + 1, False, False, "all", session, "attention",
                       "aggregates"))

    switch_ms = timed(switch, 60)
    print(f"Run action, {n} tokens: median {run_ms:.1f} ms (target <= 150)")
    print(f"Aggregates tab following a layer/head change: median {switch_ms:.1f} ms (server only)")


def overview_bytes() -> None:
    cfg = BertConfig(has_mlm_head=False, has_nsp_head=False)  # bert-base sized, random weights
    torch.manual_seed(0)
    model = BertLab(cfg).eval()
    ids = torch.randint(1000, 30000, (1, 128))
    ids[0, 0], ids[0, -1] = 101, 102
    with torch.inference_mode(), model.hooks(capture=["*hook_pattern"]) as run:
        model(input_ids=ids)
    attn = [run.cache[f"bert.encoder.layer.{i}.attention.self.hook_pattern"] for i in range(12)]
    attention = torch.stack(attn, 1)[0].numpy()  # (layers, heads, query, key)
    tokens = ["[CLS]"] + [f"tok{i}" for i in range(126)] + ["[SEP]"]
    start = time.perf_counter()
    ours = len(to_json(overview_figure(attention)))
    ours_ms = (time.perf_counter() - start) * 1e3
    from bertviz import model_view

    start = time.perf_counter()
    html = model_view(tuple(a for a in attn), tokens, html_action="return")
    theirs = len(html.data.encode("utf-8"))
    theirs_ms = (time.perf_counter() - start) * 1e3
    print(f"Overview 12x12 heads, 128 tokens: bertviz-lab {ours / 1e6:.2f} MB ({ours_ms:.0f} ms), "
          f"BertViz model_view {theirs / 1e6:.1f} MB ({theirs_ms:.0f} ms), ratio {theirs / ours:.0f}x smaller "
          f"(target <= 2 MB)")


def _entry() -> None:
    server_times()
    overview_bytes()


if __name__ == "__main__":
    run_recorded("app", "App: server time and overview size, next to BertViz", __doc__, _entry)
