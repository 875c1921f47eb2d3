"""Replay the hostile list of issue 18 against the app (in this process, embedded model, the
app's default limits) through gradio_client, and print the figures BENCHMARKS.md records:
memory after 200 new sessions, the largest file one request writes, the longest time one
request holds a worker, and whether any user text came back unescaped.

    python benchmarks/bench_hostile.py
"""
from __future__ import annotations

import re
import tempfile
import time
import uuid
from pathlib import Path

from gradio_client import Client, handle_file

from bertviz_lab import load
from bertviz_lab.app import LIMITS, build_demo, launch_kwargs, queue_kwargs
from bertviz_lab.app.events import api_outputs
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


def main() -> None:
    demo = build_demo(load("default", device="cpu"))
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **launch_kwargs(demo=demo))
    client = Client(url, verbose=False)
    folder = Path(tempfile.mkdtemp())
    unescaped, longest = 0, ("", 0.0)
    try:
        for payload in PAYLOADS:
            for api, args, field in (("analyze", (payload, payload, 5), "message"),
                                     ("syntax_probe", ("upload", handle_file(str(treebank_with(payload, folder))),
                                                       False, False), "syntax_message"),
                                     ("syntax_arcs", (0, 3, 9, payload), "syntax_arcs_text")):
                out, seconds = call(client, api, *args)
                unescaped += bool(LIVE_MARKUP.search(str(out[field])))
                longest = max(longest, (api, seconds), key=lambda x: x[1])
        print(f"user text echoed unescaped in Markdown outputs: {unescaped} of {len(PAYLOADS) * 3} replies")

        big = treebank_with("det", folder, copies=80)  # ~1.8 MB, 45,000 words: refused by the word cap
        out, seconds = call(client, "syntax_probe", "upload", handle_file(str(big)), False, False)
        print(f"near-cap upload ({big.stat().st_size / 1e6:.2f} MB): {seconds:.2f} s -> {out['syntax_message'][:90]}")
        capped = treebank_with("det", folder, copies=14)  # ~9,000 words: the most the app scores
        out, seconds = call(client, "syntax_probe", "upload", handle_file(str(capped)), False, True)
        longest = max(longest, ("syntax_probe at the word cap, with comparison", seconds), key=lambda x: x[1])
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


if __name__ == "__main__":
    main()
