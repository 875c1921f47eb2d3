"""Replay the hostile lists against the app (in this process, embedded model) through
gradio_client, and print the figures BENCHMARKS.md records.

Issue 18 (the app's default limits): memory after 200 new sessions, the largest file one request
writes, the longest time one request holds a worker, and whether any user text came back unescaped.

Issue 26 (public mode, ``Limits.public()``): how many model-running endpoints accept over-cap
input, the disk our folders and Gradio's cache hold after 30 ``.npz`` + 10 CSV exports from one
client, the longest single public request at the caps, pairs lost or duplicated by a probe job over
two treebanks with one file name, scripts run by hostile tokens in Chromium, and memory over a
16-client soak at 128 tokens.

    python benchmarks/bench_hostile.py [--part 18|26|all] [--soak-seconds 120]
"""
from __future__ import annotations

import os
import re
import tempfile
import time
import uuid
from pathlib import Path

from gradio_client import Client, handle_file
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.app import LIMITS, build_demo, launch_kwargs, queue_kwargs
from bertviz_lab.app.events import api_outputs
from bertviz_lab.app.ports import free_port
from bertviz_lab.app.state import Limits
from bertviz_lab.resources import SAMPLE_TREEBANK

PAYLOADS = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "![t](http://127.0.0.1:9/t.png)",
            "<b>bold</b>", "[link](javascript:alert(1))"]


# markup that would render: a tag, or a link/image target whose "](" is not escaped
LIVE_MARKUP = re.compile(r"<(script|img|b)\b|(?<!\\)\]\((http|javascript)")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def call(client: Client, api: str, *args) -> tuple[dict, float]:
    start = time.perf_counter()
    out = client.predict(*args, api_name=f"/{api}")
    names = api_outputs(api)
    return dict(zip(names, out if len(names) > 1 else (out,))), time.perf_counter() - start


def treebank_with(payload: str, folder: Path, copies: int = 1) -> Path:
    text = SAMPLE_TREEBANK.read_text().replace("\tdet\t", f"\t{payload}\t").replace("\tcat\t", f"\t{payload}\t")
    path = folder / "hostile.conllu"
    path.write_text(text * copies)
    return path


def issue18() -> None:
    demo = build_demo(load("default", device="cpu"))
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    client = Client(url, verbose=False)
    folder = Path(tempfile.mkdtemp())
    unescaped, longest = 0, ("", 0.0)
    try:
        for payload in PAYLOADS:
            for api, args, field in (("analyze", (payload, payload, 5), "message"),
                                     ("score_heads", ("upload", handle_file(str(treebank_with(payload, folder))),
                                                       False, False), "syntax_message"),
                                     ("syntax_arcs", (0, 3, 9, payload), "syntax_arcs_text")):
                out, seconds = call(client, api, *args)
                unescaped += bool(LIVE_MARKUP.search(str(out[field])))
                longest = max(longest, (api, seconds), key=lambda x: x[1])
        print(f"user text echoed unescaped in Markdown outputs: {unescaped} of {len(PAYLOADS) * 3} replies")

        big = treebank_with("det", folder, copies=80)  # ~1.8 MB, 45,000 words: refused by the word cap
        out, seconds = call(client, "score_heads", "upload", handle_file(str(big)), False, False)
        print(f"near-cap upload ({big.stat().st_size / 1e6:.2f} MB): {seconds:.2f} s -> {out['syntax_message'][:90]}")
        capped = treebank_with("det", folder, copies=14)  # ~9,000 words: the most the app scores
        out, seconds = call(client, "score_heads", "upload", handle_file(str(capped)), False, True)
        longest = max(longest, ("score_heads at the word cap, with comparison", seconds), key=lambda x: x[1])
        print(f"largest accepted treebank request ({capped.stat().st_size / 1e6:.2f} MB): {seconds:.1f} s")

        text = " ".join(["word"] * 510)
        call(client, "analyze", text, "", 5)
        out, seconds = call(client, "export_csv")
        print(f"512-token CSV export: {seconds:.2f} s -> {out['message'][:80]}")
        out, seconds = call(client, "export_npz")
        size = Path(out["export_file"]).stat().st_size / 1e6
        print(f"512-token .npz export: {seconds:.2f} s, {size:.1f} MB (largest file one request writes)")

        text = " ".join(["word"] * 254)
        memory = [rss_mb()]
        for i in range(200):
            client.session_hash = str(uuid.uuid4())
            call(client, "analyze", text, "", 5)
            if i % 50 == 49:
                memory.append(rss_mb())
        print(f"200 new sessions at 256 tokens (state capacity {LIMITS.sessions}): RSS MB before, after 50, 100, "
              f"150, 200: {', '.join(f'{m:.0f}' for m in memory)}; sessions held {len(demo.state_holder.session_data)}")
        print(f"longest single request: {longest[0]} {longest[1]:.1f} s")
    finally:
        demo.close()


def folder_mb(*roots: Path) -> float:
    return sum(p.stat().st_size for root in roots for p in Path(root).rglob("*") if p.is_file()) / 1e6


def message_of(out: dict) -> str:
    return str(out.get("message") or next((v for k, v in out.items() if k.endswith("_message") and v), ""))


def over_cap_requests(limits: Limits, folder: Path) -> list[tuple[str, tuple, str]]:
    """(api, arguments, what is over the cap) for every endpoint that runs the model."""
    long = " ".join(["[MASK]"] + ["word"] * 500)  # 504 tokens
    masks = " ".join(["[MASK] word"] * 100)  # 100 masks in 202 tokens (the model's own check allows 100)
    long_lines = folder / "long_lines.txt"
    long_lines.write_text((" ".join(["word"] * 120) + "\n") * 3)
    over = limits.set_sentences + 20
    requests = []
    for what, text in (("tokens", long), ("masks", masks)):
        requests += [("analyze", (text, "", 5), what), ("analyze_submit", (text, "", 5), what),
                     ("attention", (text, "", 5), what),
                     ("intervention", (text, "", 5, "left-only", [], "1-1", 0, 0), what),
                     ("directional_sweep", (text, "", []), what), ("ablation_sweep", (text, "", []), what),
                     ("position_controls", (text, "", [], 3), what)]
    requests.append(("patching", (long, long, "the", "a"), "tokens"))
    sets = {"directional_set": ((), ("symmetric",)), "ablation_set": ((), ("zero",)),
            "intervention_set": (("left-only", "1-1", 0, 0, "symmetric", "words", "zero"), ())}
    for api, (head, middle) in sets.items():
        requests.append((api, (*head, over, *middle, "heldout", None), "sentences"))
    requests.append(("faithfulness", (limits.faith_sentences + 10,), "sentences"))
    return requests


def at_cap_requests(limits: Limits, folder: Path) -> list[tuple[str, tuple]]:
    """The heaviest request each endpoint accepts in public mode."""
    text = " ".join(["[MASK] word"] * limits.max_masks + ["word"] * (limits.max_tokens - 2 - 2 * limits.max_masks))
    treebank = treebank_with("det", folder, copies=max(1, limits.syntax_words // 600))
    sets = {"directional_set": ((), ("symmetric",)), "ablation_set": ((), ("mean",)),
            "intervention_set": (("shuffle-words", "1-1", 0, 0, "symmetric", "words", "zero"), ())}
    requests = [("analyze", (text, "", 20)), ("intervention", (text, "", 20, "left-only", [], "1-1", 0, 0)),
                ("directional_sweep", (text, "", [])), ("ablation_sweep", (text, "", [], "mean")),
                ("position_controls", (text, "", [], 3)),
                ("patching", (text.replace("[MASK]", "word", limits.max_masks - 1),) * 2 + ("the", "a"))]
    requests += [(api, (*head, limits.set_sentences, *middle, "heldout", None)) for api, (head, middle) in sets.items()]
    requests += [("faithfulness", (limits.faith_sentences,)),
                 ("score_heads", ("upload", handle_file(str(treebank)), True, True, "attention")),
                 ("syntax_arcs", (0, 3, 9, ""))]
    return requests


def pairs_job(folder: Path) -> tuple[int, int, int]:
    """(pairs the job says, pair folders written, treebanks whose rows appear exactly once)."""
    import json
    import subprocess
    import sys

    import pandas as pd

    for language in ("de", "fr"):
        (folder / "tb" / language).mkdir(parents=True, exist_ok=True)
        (folder / "tb" / language / "dev.conllu").write_text(SAMPLE_TREEBANK.read_text())
    out = folder / "job"
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "score-heads", "--conllu", str(folder / "tb"), "--out", str(out),
                          "--model", "minilm-original", "--no-null-model", "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    said = json.loads(run.stdout.strip().splitlines()[-1])["pairs"]
    written = len([p for p in (out / "pairs").iterdir() if (p / "DONE").is_file()])
    rows = pd.read_csv(out / "scores.csv").groupby("treebank").size()
    return said, written, int((rows == rows.max()).sum()) if len(rows) == 2 else len(rows)


def scripts_run() -> tuple[int, int]:
    """Hostile tokens in the notebook drop-ins, opened in Chromium: (scripts run, pages)."""
    import numpy as np
    from playwright.sync_api import sync_playwright

    import bertviz_lab

    tokens = ["[CLS]", "</script><script>window.__pwned = 1</script>", "<img src=x onerror=window.__pwned=2>",
              "<!--", "&lt;b&gt;", "[SEP]"]
    attention = [np.full((1, 2, 6, 6), 1 / 6)]
    pages = [bertviz_lab.head_view(attention, tokens, html_action="return").data,
             bertviz_lab.model_view(attention, tokens, html_action="return").data]
    ran = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for html in pages:
            page = browser.new_page()
            page.set_content(f"<!doctype html><meta charset='utf-8'><body>{html}</body>")
            page.wait_for_selector(".bvl-hv-token", timeout=60000)
            ran += page.evaluate("window.__pwned") is not None
            page.close()
        browser.close()
    return ran, len(pages)


def process_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def public_server() -> tuple:
    """``python app.py --public`` on the embedded model in a process of its own: (process, url)."""
    import socket
    import subprocess
    import sys
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "app.py", "--public", "--device", "cpu", "--port", str(port)], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(1200):
        try:
            with urllib.request.urlopen(url, timeout=5):
                return proc, url
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise SystemExit("the public server did not start")


def soak(url: str, seconds: float, pid: int, clients: int = 16, warmup: float = 60) -> list[float]:
    """``clients`` visitors analysing 128-token inputs for ``warmup`` + ``seconds`` (the session caps
    fill and the allocator settles during the warm-up); the server's RSS every 10 s after it."""
    import threading

    text = " ".join(["word"] * 126)
    measure_from = time.monotonic() + warmup
    stop = measure_from + seconds
    errors: list[str] = []

    def visitor(i: int) -> None:
        client = Client(url, verbose=False)
        while time.monotonic() < stop:
            client.session_hash = str(uuid.uuid4())
            try:
                call(client, "analyze", text, "", 5)
            except Exception as error:  # a busy queue answers "try again": counted, not fatal
                errors.append(str(error)[:60])

    threads = [threading.Thread(target=visitor, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    samples = []
    while any(t.is_alive() for t in threads):
        time.sleep(10)
        if time.monotonic() >= measure_from:
            samples.append(process_rss_mb(pid))
    if errors:
        print(f"  soak: {len(errors)} requests refused (e.g. {errors[0]!r})")
    return samples


def issue26_soak(soak_seconds: float) -> None:
    server, url = public_server()
    try:
        samples = soak(url, soak_seconds, server.pid)
        print(f"16-client soak of `python app.py --public`, {soak_seconds:.0f} s at 128 tokens after a 60-s warm-up "
              f"at the same load: server RSS MB every 10 s {', '.join(f'{m:.0f}' for m in samples)}; "
              f"{100 * (min(samples) / samples[0] - 1):+.1f}% .. {100 * (max(samples) / samples[0] - 1):+.1f}% of "
              f"the first")
    finally:
        server.terminate()
        server.wait(60)


def issue26(soak_seconds: float) -> None:
    limits = Limits.public()
    demo = build_demo(load("default", device="cpu"), limits=limits)
    demo.queue(**queue_kwargs(limits))
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(limits, demo))
    folder = Path(tempfile.mkdtemp())
    handlers = demo.bvl_controllers
    try:
        client = Client(url, verbose=False)
        accepted = []
        requests = over_cap_requests(limits, folder)
        for api, args, what in requests:
            client.session_hash = str(uuid.uuid4())
            try:
                out, seconds = call(client, api, *args)
                refused = message_of(out).startswith("⚠️")
            except Exception as error:  # the /attention API and Gradio's own checks raise
                refused, seconds = "up to" in str(error) or "maximum" in str(error), 0.0
            if not refused:
                accepted.append(f"{api} ({what})")
        print(f"model-running endpoints accepting over-cap input: {len(accepted)} of {len(requests)} requests "
              f"{accepted or ''}")

        longest = ("", 0.0)
        for api, args in at_cap_requests(limits, folder):
            client.session_hash = str(uuid.uuid4())
            if api == "syntax_arcs":
                call(client, "score_heads", "sample", None, True, True, "attention")
            out, seconds = call(client, api, *args)
            print(f"  at the cap: {api:18s} {seconds:5.1f} s  {message_of(out)[:90]}")
            longest = max(longest, (api, seconds), key=lambda x: x[1])
        print(f"longest single public request at the caps: {longest[0]} {longest[1]:.1f} s")

        client.session_hash = str(uuid.uuid4())
        call(client, "analyze", " ".join(["word"] * 254), "", 5)
        for i in range(40):
            call(client, "export_npz" if i < 30 else "export_csv")
        gradio_cache = Path(os.environ["GRADIO_TEMP_DIR"])
        print(f"disk after 30 .npz + 10 CSV exports at 256 tokens from one client: exports "
              f"{folder_mb(handlers.page.exports.root):.1f} MB, payloads {folder_mb(handlers.page.payloads.root):.1f} MB, "
              f"Gradio cache {folder_mb(gradio_cache):.1f} MB; in all "
              f"{folder_mb(handlers.page.exports.root, handlers.page.payloads.root, gradio_cache):.1f} MB")

        said, written, once = pairs_job(folder)
        print(f"probe job over de/dev.conllu + fr/dev.conllu: says {said} pairs, {written} pair folders written, "
              f"{once} of 2 treebanks' rows present once each -> {2 - min(written, once)} lost or duplicated")
        ran, pages = scripts_run()
        print(f"scripts run from hostile tokens: {ran} of {pages} pages")

    finally:
        demo.close()
    issue26_soak(soak_seconds)


def heaviest_requests(limits: Limits, folder: Path) -> list[tuple[str, tuple, bool]]:
    """Issue 56's hostile requests, each at the public caps: (api, arguments, analyse the input first)."""
    text = " ".join(["[MASK] word"] * limits.max_masks + ["word"] * (limits.max_tokens - 2 - 2 * limits.max_masks))
    one_mask = " ".join(["[MASK]"] + ["word"] * (limits.max_tokens - 3))
    big = treebank_with("det", folder, copies=max(1, limits.syntax_words // 600))  # the words cap's treebank
    sets = {"directional_set": ((), ("symmetric",)), "ablation_set": ((), ("mean",)),
            "intervention_set": (("shuffle-words", "1-1", 0, 0, "symmetric", "words", "zero"), ())}
    return [("ablation_sweep", (text, "", [], "mean"), False),
            *[(api, (*head, limits.set_sentences, *middle, "heldout", None), False) for api, (head, middle) in sets.items()],
            ("faithfulness", (limits.faith_sentences,), False),
            # the published weights, whose probes ship: the structural probe on the words cap's treebank (121 s before)
            ("structural_probe", ("upload", handle_file(str(big)), False), False),
            ("score_heads", ("upload", handle_file(str(big)), True, True, "norm"), False),
            ("agent_score_heads", ("sample", "flow"), False),
            ("explain", (), True), ("qk_space", (1, 1, "heldout", "position", "pca"), False),
            ("head_similarity", ("heldout",), False), ("agent_explain", (one_mask,), False)], one_mask


def issue56() -> None:
    """The longest each endpoint holds a worker under issue 56's hostile requests, against the time limit."""
    limits = Limits.public()
    demo = build_demo(load("default", device="cpu"), limits=limits)
    demo.queue(**queue_kwargs(limits))
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(limits, demo))
    folder = Path(tempfile.mkdtemp())
    try:
        client = Client(url, verbose=False)
        requests, one_mask = heaviest_requests(limits, folder)
        longest = ("", 0.0)
        for api, args, analysed in requests:
            client.session_hash = str(uuid.uuid4())
            if analysed:
                call(client, "analyze", one_mask, "", 5)
            start = time.perf_counter()
            try:
                out = client.predict(*args, api_name=f"/{api}")
                said = out if api.startswith("agent_") else message_of(dict(zip(api_outputs(api), out)))
            except Exception as error:  # an endpoint with no message box answers with Gradio's error
                said = f"(error) {error}"
            seconds = time.perf_counter() - start
            print(f"  {api:18s} {seconds:5.1f} s  {str(said)[:90]}")
            longest = max(longest, (api, seconds), key=lambda x: x[1])
        bound = limits.seconds + 1
        print(f"longest: {longest[0]} {longest[1]:.1f} s against the limit of {limits.seconds:.0f} s + 1 s: "
              + ("within it" if longest[1] <= bound else "OVER it"))
    finally:
        demo.close()


def _entry() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["18", "26", "26-soak", "56", "all"], default="all")
    parser.add_argument("--soak-seconds", type=float, default=120)
    options = parser.parse_args()
    if options.part in ("18", "all"):
        issue18()
    if options.part in ("26", "all"):
        issue26(options.soak_seconds)
    if options.part == "26-soak":
        issue26_soak(options.soak_seconds)
    if options.part == "56":
        issue56()


if __name__ == "__main__":
    import sys

    if "56" in sys.argv:  # issue 56's part writes a section of its own
        run_recorded("hostile-56", "The longest request per endpoint under hostile input, against the time limit "
                     "(issue 56)", issue56.__doc__ + "\n\n    python benchmarks/bench_hostile.py --part 56", _entry)
    else:
        run_recorded("hostile", "Hostile input, faults and a public Space one visitor cannot knock over", __doc__,
                     _entry)
