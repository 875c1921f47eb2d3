"""Where one Run's time goes (issue 45, item 1): the app on the embedded model, CPU, one Run at
32, 128 and 512 tokens broken into the server's, the network's and the browser's parts. Medians over
--repeat Runs that alternate between two sentences of that length (the Runs of bench_browser.py: the same Chromium, arguments, sentences and
"heatmap drawn" test). A change is measured against the code before it: run the script once with that
code first on PYTHONPATH and --save FILE, then on the changed code with --before FILE, which prints every
stage before and after side by side: its "before" columns are the breakdown before any change.

1. In-process, no server and no browser: Gradio's own ``Blocks.process_api`` called directly on
   the Run event (its preprocess, the handler, its postprocess), then the completed message
   encoded as the queue's SSE route encodes it (``model_dump`` + orjson). Inside the handler, the
   library calls it makes are timed by wrapping them on the live objects: the forward pass
   (``Lab.analyze``), the payload of the page's views (``ViewController.payload``: ``view_payload`` and
   writing the codes file), the server-drawn figures (``ViewController.tab_figures``) and the rest
   (token choices, predictions table, notes, cleared views).
2. End to end, a real server (``build_demo``, ``queue_kwargs``, ``launch_kwargs``, in a process with the
   allocator setting ``python app.py`` gives it: ``keep_freed_memory``) and Chromium:
   the same wrappers in the server process, plus Gradio's queue (``Queue.push`` = the join
   request arriving, ``Queue.send_message`` of the completed message, and the SSE route's orjson
   call); in the page (an init script): the click on Run, each chunk of the SSE
   stream ``/gradio_api/queue/data`` (a clone of the fetch response, read as it arrives), the
   ``JSON.parse`` of the completed message, ``window.bvl.load`` (the payload reaching views.js),
   the codes fetch (Resource Timing of ``bvl-codes/...``), every ``Plotly.newPlot``/``Plotly.react``
   (duration and the element id it draws in) and long tasks (PerformanceObserver 'longtask'); the
   heatmap's pixels are two animation frames after its ``Plotly.react`` returns (bench_browser.DRAWN; the
   last row gives each size's total as this clock gave it before 2026-12-04, one frame later). Server and page
   stamp times on one clock (the epoch: ``time.time()`` and ``performance.timeOrigin + now()``), so
   the stages below follow each other: they add up to click -> pixels for each Run (their medians
   only roughly to the median total).

Stages: click -> join request at the server (the Gradio client) | queue wait (join -> the queue calls
process_api) | preprocess | forward pass | payload | figures | rest of the handler | postprocess |
process_api's tail, run history, message queued | wait for the page's SSE request (the client opens
/queue/data only after the join reply; 0 when it was open before the message) | the SSE task wakes,
model_dump | orjson | response transfer (encoded -> the stream's responseEnd in Resource Timing) |
until the page's fetch reader has it | JSON.parse | Gradio's update of the other components (parse ->
bvl.load) | codes fetch (0 when the open head's codes came inside the reply) | decode codes and build z |
Plotly.react of the heatmap | paint (two frames).
Beside them: the page's long tasks inside each stage, bytes of the response and of the codes, every
Plotly call by component, and other large JSON/localStorage work (Gradio's run history).

    PYTHONPATH=OLD_CHECKOUT python benchmarks/run_breakdown.py --save before.json     # the code before
    python benchmarks/run_breakdown.py [--repeat 20] [--sizes 32 128 512] [--before before.json ...] [--write]
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import json
import os
import shutil
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_browser import ARGS, CLICK_RUN, EVERY_HEAD, machine_check, machine_line, server_lab, texts_of
from sections import run_recorded

from bertviz_lab.app.ports import free_port

RUN_API = "analyze"  # the Run button's event
Span = tuple[str, float, float, dict]  # (name, start, end, info): epoch seconds, server side

# In the page, before any of its scripts: clocks on the SSE stream, JSON.parse, bvl.load, Plotly and long tasks.
INSTRUMENT = r"""(() => {
  const B = window.__bvlBench = {plotly: [], json: [], sse: [], loads: [], store: [], long: [], click: null};
  const now = () => performance.timeOrigin + performance.now();  // epoch ms: the server's clock too
  const targetOf = el => {  // the nearest id a person gave (elem_id), not Gradio's own component-N / html-xyz
    for (let n = el; n; n = n.parentElement) { if (n.id && !/^(component-\d+|html-\w+)$/.test(n.id)) return n.id; }
    return '?';
  };
  let depth = 0;
  function wrapPlotly() {
    const P = window.Plotly;
    if (!P || P.__benchWrapped || !P.__bvlPatched) return;  // outside figure_tools.js's own patch
    P.__benchWrapped = true;
    ['newPlot', 'react'].forEach(name => {
      const real = P[name];
      P[name] = function (gd) {
        const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
        const rec = {name, target: targetOf(el), start: now(), nested: depth > 0};
        depth++;
        let out;
        try { out = real.apply(this, arguments); } finally { depth--; rec.end = now(); B.plotly.push(rec); }
        Promise.resolve(out).then(() => { rec.settled = now(); }, () => { rec.settled = now(); });
        return out;
      };
    });
  }
  function wrapBvl() {
    const b = window.bvl;
    if (!b || b.__benchWrapped) return;
    b.__benchWrapped = true;
    const load = b.load;
    b.load = function (p) { B.loads.push({t: now(), id: p && p.id}); return load.apply(this, arguments); };
  }
  B.wrap = () => { wrapPlotly(); wrapBvl(); return !!(window.Plotly && window.Plotly.__benchWrapped && window.bvl
                                                     && window.bvl.__benchWrapped); };
  const timer = setInterval(() => { if (B.wrap()) clearInterval(timer); }, 20);
  const parse = JSON.parse, stringify = JSON.stringify;
  JSON.parse = function (text) {
    const run = typeof text === 'string' && text.slice(0, 200).includes('"process_completed"');
    if (!run && !(typeof text === 'string' && text.length >= 10000)) return parse.apply(this, arguments);
    const start = now(), out = parse.apply(this, arguments);
    B.json.push({kind: run ? 'run' : 'parse', chars: text.length, start, end: now()});
    return out;
  };
  JSON.stringify = function () {
    const start = now(), out = stringify.apply(this, arguments);
    if (typeof out === 'string' && out.length >= 10000) B.json.push({kind: 'stringify', chars: out.length, start, end: now()});
    return out;
  };
  ['getItem', 'setItem'].forEach(name => {
    const real = Storage.prototype[name];
    Storage.prototype[name] = function () {
      const start = now(), out = real.apply(this, arguments);
      B.store.push({name, start, end: now()});
      return out;
    };
  });
  async function watch(resp) {  // a clone of the SSE stream: when each completed message's last byte arrives
    const reader = resp.body.getReader(), dec = new TextDecoder();
    let text = '', first = null;
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      const t = now();
      if (first === null) first = t;
      text += dec.decode(value, {stream: true});
      let cut;
      while ((cut = text.indexOf('\n\n')) >= 0) {
        const msg = text.slice(0, cut);
        text = text.slice(cut + 2);
        if (msg.slice(0, 200).includes('"process_completed"')) B.sse.push({first, end: t, chars: msg.length});
        first = text.length ? t : null;
      }
    }
  }
  const realFetch = window.fetch;
  window.fetch = function (input) {
    const url = typeof input === 'string' ? input : (input && input.url) || String(input);
    const p = realFetch.apply(this, arguments);
    if (!url.includes('/queue/data')) return p;
    return p.then(resp => { if (resp.body) watch(resp.clone()).catch(() => {}); return resp; });
  };
  document.addEventListener('click', e => { if (e.target.closest && e.target.closest('#run')) B.click = now(); }, true);
  B.observer = new PerformanceObserver(list => list.getEntries().forEach(
    e => B.long.push({start: performance.timeOrigin + e.startTime, duration: e.duration})));
  B.observer.observe({type: 'longtask', buffered: true});
  B.reset = () => {
    ['plotly', 'json', 'sse', 'loads', 'store', 'long'].forEach(k => { B[k] = []; });
    B.click = null;
    performance.clearResourceTimings();
    return B.wrap();
  };
  B.collect = () => {
    B.observer.takeRecords().forEach(e => B.long.push({start: performance.timeOrigin + e.startTime, duration: e.duration}));
    const kinds = {'bvl-codes': 'codes', 'queue/join': 'join', 'queue/data': 'stream'};
    const resources = performance.getEntriesByType('resource').map(e => {
      const kind = Object.keys(kinds).find(k => e.name.includes(k));
      return kind && {name: kinds[kind], start: performance.timeOrigin + (e.requestStart || e.startTime),
                      end: performance.timeOrigin + e.responseEnd, bytes: e.encodedBodySize};
    }).filter(Boolean);
    return {plotly: B.plotly, json: B.json, sse: B.sse, loads: B.loads, store: B.store, long: B.long, click: B.click,
            resources};
  };
})();"""


class Probes:
    """Timed wrappers put on live objects of the server process; each call leaves a Span."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.undo: list[Callable[[], None]] = []

    def take(self) -> list[Span]:
        spans, self.spans = self.spans, []
        return spans

    def wrap(self, owner: Any, attr: str, name: str, info: Callable[..., dict] | None = None) -> None:
        """Replace ``owner.attr`` by a timed call of it (a coroutine stays a coroutine); ``info(*args,
        **kwargs)`` says what to keep about the call (None: not recorded)."""
        real = getattr(owner, attr)
        had_own = attr in vars(owner) if hasattr(owner, "__dict__") else False

        def record(start: float, args: tuple, kwargs: dict) -> None:
            about = info(*args, **kwargs) if info else {}
            if about is not None:
                self.spans.append((name, start, time.time(), about))

        if inspect.iscoroutinefunction(real):
            @functools.wraps(real)
            async def timed(*args, **kwargs):
                start = time.time()
                try:
                    return await real(*args, **kwargs)
                finally:
                    record(start, args, kwargs)
        else:
            @functools.wraps(real)
            def timed(*args, **kwargs):
                start = time.time()
                try:
                    return real(*args, **kwargs)
                finally:
                    record(start, args, kwargs)
        setattr(owner, attr, timed)
        self.undo.append(lambda: setattr(owner, attr, real) if had_own else delattr(owner, attr))

    def restore(self) -> None:
        while self.undo:
            self.undo.pop()()


def api_of(block_fn: Any = None, *_, **kwargs) -> dict | None:
    """Keep a Gradio call only for the Run event (its first argument or ``block_fn``/``fn``: a BlockFunction)."""
    fn = kwargs.get("block_fn", kwargs.get("fn", block_fn))
    return {} if getattr(fn, "api_name", None) == RUN_API else None


class TimedOrjson:
    """gradio.routes' orjson, with the SSE route's dumps of a completed message timed (what it sends)."""

    def __init__(self, real: Any, probes: Probes) -> None:
        self._real, self._probes = real, probes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def dumps(self, obj: Any, *args: Any, **kwargs: Any) -> bytes:
        start = time.time()
        out = self._real.dumps(obj, *args, **kwargs)
        if isinstance(obj, dict) and obj.get("msg") == "process_completed":
            self._probes.spans.append(("encode", start, time.time(), {"bytes": len(out)}))
        return out


def instrument(demo: Any, lab: Any, probes: Probes, server: bool) -> None:
    """The handler's library calls and Gradio's phases; with ``server``, also the queue and the SSE route."""
    handlers = demo.bvl_controllers
    probes.wrap(lab, "analyze", "forward")
    probes.wrap(handlers, "payload", "payload")
    probes.wrap(handlers, "tab_figures", "figures")
    for attr, name in (("process_api", "process_api"), ("preprocess_data", "preprocess"),
                       ("call_function", "handler"), ("postprocess_data", "postprocess")):
        probes.wrap(demo, attr, name, api_of)
    if not server:
        return
    import gradio.routes
    from gradio.server_messages import ProcessCompletedMessage

    probes.wrap(demo._queue, "push", "join", lambda *a, body=None, **k: {})
    probes.wrap(demo._queue, "send_message", "queued",
                lambda event, message: {} if isinstance(message, ProcessCompletedMessage) else None)
    real = gradio.routes.orjson
    gradio.routes.orjson = TimedOrjson(real, probes)
    probes.undo.append(lambda: setattr(gradio.routes, "orjson", real))


def one(spans: Sequence[Span], name: str) -> Span | None:
    """The last span called ``name`` (a Run makes one of each Gradio phase)."""
    found = [s for s in spans if s[0] == name]
    return found[-1] if found else None


def total_ms(spans: Sequence[Span], name: str) -> float:
    return sum(end - start for n, start, end, _ in spans if n == name) * 1e3


STAGES = (  # (stage, where): in order, each from the previous boundary to its own
    ("click -> join request at server", "page+net"), ("queue wait", "server"), ("preprocess", "server"),
    ("forward pass (lab.analyze)", "server"), ("payload (view_payload + codes file)", "server"),
    ("figures (tab_figures)", "server"), ("rest of the handler", "server"), ("postprocess (Gradio)", "server"),
    ("process_api tail, run history, queued", "server"), ("wait for the page's SSE request", "page"),
    ("SSE task wakes, model_dump", "server"), ("encode (orjson)", "server"), ("response transfer (SSE)", "network"),
    ("until the page's fetch reader has it", "browser"), ("JSON.parse of the response", "browser"),
    ("Gradio updates components", "browser"), ("codes fetch", "network"),
    ("decode codes, build z", "browser"), ("Plotly.react heatmap", "browser"), ("paint (two frames)", "browser"),
)


LATER = "click -> pixels, clocked one frame later as before 2026-12-04"  # bench_browser.DRAWN
TOTALS = (("total click -> pixels", ""), (LATER, ""))


def heatmap_draw(calls: Sequence[dict]) -> dict | None:
    """The top-level Plotly call that drew the single-head heatmap (the last one in #single-plot)."""
    found = [c for c in calls if c["target"] == "single-plot" and not c.get("nested")]
    return found[-1] if found else None


def need(value: Any, what: str) -> Any:
    if value is None:
        raise KeyError(what)
    return value


def resource(page: dict, name: str) -> dict:
    return need(next((r for r in reversed(page["resources"]) if r["name"] == name), None), name)


def drawn_codes(page: dict, draw: dict) -> dict | None:
    """The codes file the heatmap was drawn from: the last one fetched before the draw began (the open head's
    own file where the page fetches it first, else every head's), or None: the open head's codes came inside
    the reply (up to INLINE_HEAD_MAX), and every head's are fetched after the draw."""
    before = [r for r in page["resources"] if r["name"] == "codes" and r["end"] <= draw["start"]]
    return before[-1] if before else None


def timeline(page: dict, spans: Sequence[Span], pixels_ms: float) -> list[tuple[str, float, float]]:
    """One Run's stages as (stage, start, end) in epoch ms, from the page's records (epoch ms) and the
    server's spans (epoch s), end to end from the click to the heatmap's pixels. A stage the page and the
    server overlap in (the SSE request may open before the handler ends) lasts 0. Raises KeyError naming
    what was not recorded."""
    ms = {name: (s[1] * 1e3, s[2] * 1e3) for name in ("join", "process_api", "handler", "postprocess", "queued",
                                                      "encode") if (s := one(spans, name))}
    run_json = [j for j in page["json"] if j["kind"] == "run"]
    parse = need(run_json[-1] if run_json else None, "JSON.parse of the response")
    draw = need(heatmap_draw(page["plotly"]), "heatmap draw")
    click = need(page["click"], "click")
    handler_start, handler_end = need(ms.get("handler"), "handler")
    inside = [total_ms(spans, name) for name in ("forward", "payload", "figures")]
    queued = need(ms.get("queued"), "queued")[1]
    stream = resource(page, "stream")
    loaded = need(page["loads"][-1]["t"] if page["loads"] else None, "bvl.load")
    fetched = drawn_codes(page, draw)  # None: drawn from the codes inside the reply, no fetch before the pixels
    bounds = [need(ms.get("join"), "join")[0], need(ms.get("process_api"), "process_api")[0], handler_start,
              handler_start + inside[0], handler_start + sum(inside[:2]), handler_start + sum(inside), handler_end,
              need(ms.get("postprocess"), "postprocess")[1], queued, max(queued, stream["start"]),
              *need(ms.get("encode"), "encode"), stream["end"],
              min(page["sse"][-1]["end"], parse["start"]) if page["sse"] else parse["start"], parse["end"],
              loaded, fetched["end"] if fetched else loaded,
              draw["start"], draw["end"], click + pixels_ms]
    out, previous = [], click
    for (stage, _), bound in zip(STAGES, bounds, strict=True):
        bound = max(bound, previous)  # one clock, but stamps a fraction of a millisecond apart may cross
        out.append((stage, previous, bound))
        previous = bound
    return out


def stage_ms(stages: Sequence[tuple[str, float, float]]) -> dict[str, float]:
    """Each stage's length, and the total (their sum: click -> pixels)."""
    out = {stage: end - start for stage, start, end in stages}
    out["total click -> pixels"] = stages[-1][2] - stages[0][1]
    return out


def busy_ms(stages: Sequence[tuple[str, float, float]], long_tasks: Sequence[dict]) -> dict[str, float]:
    """How much of each stage the page's main thread spent in long tasks (> 50 ms each)."""
    return {stage: sum(max(0.0, min(end, t["start"] + t["duration"]) - max(start, t["start"])) for t in long_tasks)
            for stage, start, end in stages}


def plotly_by_component(calls: Sequence[dict]) -> dict[str, tuple[int, float]]:
    """Top-level Plotly calls (a call made inside another is in its time) by the element id they draw in:
    id -> (calls, ms of synchronous work)."""
    out: dict[str, tuple[int, float]] = {}
    for call in calls:
        if call.get("nested"):
            continue
        key = f"{call['name']} #{call['target']}"
        n, ms = out.get(key, (0, 0.0))
        out[key] = (n + 1, ms + call["end"] - call["start"])
    return out


def extras(page: dict, spans: Sequence[Span], pixels_ms: float) -> dict[str, float]:
    """What stands beside the stages: bytes, long tasks between click and pixels, other JSON and storage work."""
    click = page["click"]
    inside = [t for t in page["long"] if click <= t["start"] <= click + pixels_ms]
    every = [r for r in page["resources"] if r["name"] == "codes"]
    draw = heatmap_draw(page["plotly"])
    codes = (drawn_codes(page, draw) if every and draw else None) or {"bytes": 0}
    encode = one(spans, "encode")
    other_json = defaultdict(float)
    for j in page["json"]:
        if j["kind"] != "run":
            other_json[f"JSON.{j['kind']} (other, >= 10k chars) ms"] += j["end"] - j["start"]
    return {"response KB": (encode[3]["bytes"] if encode else 0) / 1e3, "codes fetched before the draw KB": codes["bytes"] / 1e3,
            "all codes KB": page.get("all codes bytes", sum(r["bytes"] for r in every)) / 1e3,
            "long tasks": len(inside), "long tasks ms": sum(t["duration"] for t in inside),
            "localStorage ms": sum(s["end"] - s["start"] for s in page["store"]), **other_json}


def medians(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = dict.fromkeys(k for row in rows for k in row)
    return {k: statistics.median(row.get(k, 0.0) for row in rows) for k in keys}


def in_process(demo: Any, probes: Probes, texts: tuple[str, str], repeat: int) -> dict[str, float]:
    """Medians (ms, KB) of the Run event through Gradio's process_api in this process, and its encoding."""
    import orjson
    from gradio.server_messages import ProcessCompletedMessage
    from gradio.state_holder import SessionState

    from bertviz_lab.app.events import RUN_INPUTS

    block_fn = next(fn for fn in demo.fns.values() if fn.api_name == RUN_API)
    ui = demo.bvl_controllers.page.ui
    rows = []
    for i in range(repeat + 1):  # the first: warm-up
        inputs = [texts[i % 2] if name == "text" else getattr(ui, name).value for name in RUN_INPUTS]
        probes.take()
        output = asyncio.run(demo.process_api(block_fn, list(inputs), state=SessionState(demo)))
        output.pop("iterator", None)
        encode_start = time.perf_counter()
        message = ProcessCompletedMessage(output=output, success=True, event_id="x")
        sent = orjson.dumps(message.model_dump(), default=str)
        end = time.perf_counter()
        spans = probes.take()
        row = {name: total_ms(spans, name) for name in ("forward", "payload", "figures", "preprocess", "handler",
                                                        "postprocess", "process_api")}
        row["rest of the handler"] = row["handler"] - row["forward"] - row["payload"] - row["figures"]
        encode = (end - encode_start) * 1e3
        row.update({"encode (model_dump + orjson)": encode, "total": row["process_api"] + encode,
                    "response KB": len(sent) / 1e3})
        if i:
            rows.append(row)
    return medians(rows)


def through_browser(page: Any, url: str, texts: tuple[str, str], repeat: int, probes: Probes) -> tuple[list, list, list, list]:
    """Runs in the page; per Run: its stages' lengths, the long tasks in each, its extras and its Plotly calls."""
    page.goto(url)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=60000)  # the opening example
    page.wait_for_function("window.__bvlBench.wrap()", timeout=20000)
    stages, busy, extra, calls = [], [], [], []
    for i in range(repeat + 1):  # the first: warm-up
        page.fill("#text-a textarea", texts[i % 2])  # a new sentence each Run, as bench_browser's Runs
        page.evaluate("window.__bvlBench.reset()")
        probes.take()
        pixels_ms, later_ms = page.evaluate(CLICK_RUN)
        page.wait_for_function("(() => { const el = document.querySelector('#single-plot .bvl-heatmap');"
                               " return el.dataset.bvlPending === '0'; })()", timeout=20000)
        page.wait_for_function(EVERY_HEAD, timeout=60000)  # as bench_browser.run: the Run is over
        recorded = page.evaluate("window.__bvlBench.collect()")
        recorded["all codes bytes"] = page.evaluate("window.bvl.state.p.codes_bytes")  # read by a worker (views.js)
        spans = probes.take()
        if not i:
            continue
        try:
            run = timeline(recorded, spans, pixels_ms)
        except KeyError as missing:
            print(f"  Run {i}: no {missing.args[0]} recorded; left out", flush=True)
            continue
        stages.append({**stage_ms(run), LATER: later_ms})
        busy.append(busy_ms(run, recorded["long"]))
        extra.append(extras(recorded, spans, pixels_ms))
        calls.append(plotly_by_component(recorded["plotly"]))
    return stages, busy, extra, calls


def plotly_medians(calls: Sequence[dict[str, tuple[int, float]]]) -> dict[str, tuple[float, float]]:
    """Per component: median calls per Run and median ms per Run (0 in a Run that did not draw it)."""
    keys = dict.fromkeys(k for run in calls for k in run)
    return {k: (statistics.median(run.get(k, (0, 0.0))[0] for run in calls),
                statistics.median(run.get(k, (0, 0.0))[1] for run in calls)) for k in keys}


def report(tokens: int, here: dict[str, float], stage_rows: list, busy_rows: list, extra_rows: list,
           calls: list) -> dict[str, float]:
    """Print one size's tables; return its stage medians (for the table across sizes)."""
    print(f"\n#### {tokens} tokens: medians of {len(stage_rows)} Runs\n")
    print("In-process (process_api called directly, encoded as the SSE route does): " + ", ".join(
        f"{k} {v:.1f}" + ("" if k.endswith("KB") else " ms") for k, v in here.items()))
    staged, busy = medians(stage_rows), medians(busy_rows)
    total = staged["total click -> pixels"]
    print("\n| stage | where | ms | share of total | page in long tasks, ms |\n|---|---|---:|---:|---:|")
    for stage, where in STAGES:
        print(f"| {stage} | {where} | {staged[stage]:.1f} | {staged[stage] / total:.0%} | {busy[stage]:.0f} |")
    print(f"| sum of the medians | | {sum(staged[s] for s, _ in STAGES):.1f} | | |")
    print(f"| **click -> heatmap pixels** | | **{total:.1f}** | 100% | {sum(busy.values()):.0f} |")
    print(f"| {LATER} | | {staged[LATER]:.1f} | | |")
    print("\n| Plotly call | calls per Run | ms per Run |\n|---|---:|---:|")
    for key, (n, ms) in plotly_medians(calls).items():
        print(f"| {key} | {n:.0f} | {ms:.1f} |")
    print("\n" + ", ".join(f"{k} {v:.1f}" for k, v in medians(extra_rows).items()))
    return staged


def main() -> None:
    from playwright.sync_api import sync_playwright

    from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--save", type=Path, default=None, help="also write the stage medians per size as JSON")
    parser.add_argument("--before", type=Path, nargs="+", default=[],
                        help="--save files of the same script run on the code before changes: each printed beside these")
    args = parser.parse_args()
    lab = server_lab()  # as python app.py loads it (bertviz_lab/launcher.py)
    machine_before = machine_check(lab)  # the VM's speed at the time (bench_browser.machine_check)
    demo = build_demo(lab)
    probes = Probes()
    instrument(demo, lab, probes, server=False)
    texts = {n: texts_of(lab, n) for n in args.sizes}
    here = {n: in_process(demo, probes, texts[n], args.repeat) for n in args.sizes}
    probes.restore()
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    instrument(demo, lab, probes, server=True)
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    summary = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.add_init_script(INSTRUMENT)
            for n in args.sizes:
                tokens = len(lab.encode(texts[n][0]).ids)
                summary[tokens] = report(tokens, here[n], *through_browser(page, url, texts[n], args.repeat, probes))
            browser.close()
        machine_after = machine_check(lab)
    finally:
        probes.restore()
        demo.close()
    machine = machine_line(machine_before, machine_after)
    print(f"\n{machine}")
    print("\n#### Across sizes (median ms per stage)\n")
    print("| stage | where | " + " | ".join(f"{t} tokens" for t in summary) + " |")
    print("|---|---|" + "---:|" * len(summary))
    for stage, where in (*STAGES, *TOTALS):
        print(f"| {stage} | {where} | " + " | ".join(f"{m[stage]:.0f}" for m in summary.values()) + " |")
    if args.save is not None:
        args.save.write_text(json.dumps({"code": code_measured(), "machine": machine, **{str(t): m for t, m in summary.items()}}, indent=1))
    for before in args.before:
        print_before_and_after(json.loads(before.read_text()), summary)


def code_measured() -> str:
    """Which checkout of bertviz_lab this run measured (a change is measured against an earlier one put first
    on PYTHONPATH): its folder and commit."""
    import subprocess

    import bertviz_lab

    folder = Path(bertviz_lab.__file__).resolve().parent.parent
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True, text=True).stdout.strip()
    return f"{folder} at {rev or 'unknown'}"


def print_before_and_after(before: dict, after: dict[int, dict[str, float]]) -> None:
    """The stages before the change (a --save file) beside these, per size: ms before, after and their ratio."""
    sizes = [t for t in after if str(t) in before]
    print(f"\n#### Before and after the change (median ms per stage; before: {before.get('code', '?')}, "
          f"after: {code_measured()})\n")
    print("| stage | " + " | ".join(f"{t} tokens: before / after" for t in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for stage, _ in (*STAGES, *TOTALS):
        cells = [f"{before[str(t)].get(stage, float('nan')):.0f} / {after[t][stage]:.0f}" for t in sizes]
        print(f"| {stage} | " + " | ".join(cells) + " |")
    print("| **ratio of totals (after / before)** | " + " | ".join(
        f"{after[t]['total click -> pixels'] / before[str(t)]['total click -> pixels']:.2f}" for t in sizes) + " |")
    # the two runs follow each other, on a VM whose speed drifts: each run's machine check tells their phases
    print(f"\nbefore's {before.get('machine', 'machine check: not recorded')}")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("run-breakdown", "Where one Run's time goes: server, network, browser", __doc__, _entry)
