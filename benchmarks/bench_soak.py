"""Server memory under a long mixed load (issue 56): does it reach a plateau?

`python app.py --public` runs in a process of its own; ``--clients`` visitors (gradio_client, on this machine)
each loop over what a class does with the page: a Run at 32, 128 or 256 tokens with a [MASK], "Why this word?",
an intervention on the same input, a switch of the colour source to norm-based attention, and every few
actions a new session (a visitor leaves, another arrives), for ``--seconds``. The server's resident memory is
sampled every 10 s from the first request after a warm-up that fills the server's 32 analysis slots with the
largest session state (``fill_slots``), so the run measures the server at its caps, not while they fill. The
hostile round of issue 56 saw 1,058 -> 3,855 MB over three 60-s rounds of 16 visitors, never coming down.

A plateau: the median memory of the last third of the run is within ``PLATEAU`` (5 %) of the largest seen
before it, and its fitted trend is under ``SLOPE`` (1 %) of its level per minute (one request's momentary peak is
not growth). The server holds at most 32 analyses (``Limits.sessions``) and 256 light sessions, so memory may grow until
those fill, and must not grow after.

    python benchmarks/bench_soak.py [--seconds 600] [--clients 16] [--env NAME=VALUE] [--write]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from gradio_client import Client
from sections import run_recorded

from bertviz_lab.app.events import api_outputs
from bertviz_lab.app.ports import free_port
from bertviz_lab.app.state import Limits

ROOT = Path(__file__).resolve().parent.parent
PLATEAU = 0.05  # the last third's median at most this far above the largest sample before it
SLOPE = 0.01  # and its fitted trend at most this fraction of its level per minute (a single request's peak is no trend)
WORDS = "the teacher said that a student who reads every evening will pass the exam in spring".split()


def text_of(tokens: int, rng: random.Random) -> str:
    """About ``tokens`` word pieces, with one [MASK]; the words shuffled, so no two Runs share an input."""
    words = [rng.choice(WORDS) for _ in range(tokens - 3)]
    words[rng.randrange(len(words))] = "[MASK]"
    return " ".join(words)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(port: int, env: dict[str, str], extra: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "app.py", "--public", "--device", "cpu", "--port", str(port), *extra], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server stopped: {proc.stderr.read()[-400:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start in 600 s")


def call(client: Client, api: str, *args) -> dict:
    names = api_outputs(api)
    out = client.predict(*args, api_name=f"/{api}")
    return dict(zip(names, out if len(names) > 1 else (out,)))


def visitor(url: str, seed: int, stop: float, counts: dict, errors: list, lock: threading.Lock,
            refusals: dict) -> None:
    """One visitor's loop; a new session every 4-8 actions."""
    rng = random.Random(seed)
    client = Client(url, verbose=False)
    left = 0
    while time.monotonic() < stop:
        if left <= 0:
            client.session_hash, left = str(uuid.uuid4()), rng.randint(4, 8)
        text = text_of(rng.choice((32, 128, 256)), rng)
        actions = [("analyze", (text, "", 5)), ("explain", ()),
                   ("intervention", (text, "", 5, "left-only", [], "1-1", 0, 0)),
                   ("attention_source", (1, 1, False, False, "all", "norm"))]
        for api, args in actions[:rng.randint(1, len(actions))]:
            if time.monotonic() >= stop:
                break
            try:
                out = call(client, api, *args)
                said = next((str(v) for k, v in out.items() if k.endswith("message")), "")
                kind = "refused" if said.startswith("⚠️") else "answered"
                if kind == "refused":
                    with lock:
                        refusals[said[:70]] = refusals.get(said[:70], 0) + 1
            except Exception as error:  # a full queue answers "try again": counted
                kind = "error"
                with lock:
                    errors.append(f"{api}: {str(error)[:80]}")
            with lock:
                counts[kind] = counts.get(kind, 0) + 1
            left -= 1


def fill_slots(url: str, sessions: int, clients: int) -> None:
    """The warm-up: ``sessions`` sessions (the server's analysis slots) each hold the most one session keeps, a
    256-token analysis, its norm-based source and an intervention's comparison, so the soak measures the server at
    its caps rather than while they fill."""
    rng = random.Random(-1)
    texts = [text_of(256, rng) for _ in range(sessions)]

    def one(text: str) -> None:
        client = Client(url, verbose=False)
        client.session_hash = str(uuid.uuid4())
        for api, args in (("analyze", (text, "", 5)), ("intervention", (text, "", 5, "left-only", [], "1-1", 0, 0)),
                          ("attention_source", (1, 1, False, False, "all", "norm"))):
            try:
                call(client, api, *args)
            except Exception:  # noqa: BLE001 - a refused warm-up call leaves a slot lighter, nothing more
                pass

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, texts))


def soak(seconds: float, clients: int, env: dict[str, str], extra: list[str]) -> None:
    port = free_port()
    server = start_server(port, env, extra)
    url = f"http://127.0.0.1:{port}/"
    counts: dict = {}
    errors: list = []
    refusals: dict = {}
    lock = threading.Lock()
    try:
        started = rss_mb(server.pid)
        fill_slots(url, Limits.public().sessions, clients)
        print(f"server RSS: {started:.0f} MB started, {rss_mb(server.pid):.0f} MB once its "
              f"{Limits.public().sessions} analysis slots hold a 256-token analysis, its source and a comparison each")
        start = time.monotonic()
        stop = start + seconds
        threads = [threading.Thread(target=visitor, args=(url, i, stop, counts, errors, lock, refusals),
                                daemon=True)
                   for i in range(clients)]
        samples = [rss_mb(server.pid)]
        for t in threads:
            t.start()
        while time.monotonic() < stop:
            time.sleep(10)
            samples.append(rss_mb(server.pid))
        for t in threads:
            t.join(120)
        samples.append(rss_mb(server.pid))
    finally:
        server.terminate()
        server.wait(60)
    report(samples, seconds, clients, counts, errors)
    for said, n in sorted(refusals.items(), key=lambda kv: -kv[1])[:4]:
        print(f"  refused {n}x: {said}")


def report(samples: list[float], seconds: float, clients: int, counts: dict, errors: list) -> None:
    third = len(samples) * 2 // 3
    before, last = max(samples[:third]), np.array(samples[third:])
    minutes = np.arange(len(last)) / 6  # a sample every 10 s
    slope = float(np.polyfit(minutes, last, 1)[0]) if len(last) > 1 else float("nan")  # MB per minute
    level = float(np.median(last))
    plateau = level <= before * (1 + PLATEAU) and abs(slope) <= SLOPE * level
    print(f"{clients} visitors x {seconds:.0f} s of `python app.py --public` (Run at 32/128/256 tokens, Why this word?, "
          f"an intervention, a source switch; a new session every 4-8 actions)")
    print(f"actions: {counts.get('answered', 0)} answered, {counts.get('refused', 0)} refused with a sentence, "
          f"{counts.get('error', 0)} errors" + (f" (e.g. {errors[0]!r})" if errors else ""))
    print("server RSS MB every 10 s: " + ", ".join(f"{m:.0f}" for m in samples))
    print(f"largest in the first two thirds {before:.0f} MB; last third {last.min():.0f} .. {last.max():.0f} MB, median "
          f"{level:.0f} ({100 * (level / before - 1):+.1f}%), trend {slope:+.1f} MB/min: "
          + ("a plateau" if plateau else "still growing")
          + f" (plateau: median within {PLATEAU:.0%} of the earlier peak and trend within {SLOPE:.0%} of it per minute)")


def _entry() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server's environment")
    parser.add_argument("--server-arg", action="append", default=[], help="an option for app.py, e.g. "
                        "--server-arg=--no-keep-freed-memory")
    args, _ = parser.parse_known_args()
    env = dict(item.split("=", 1) for item in args.env)
    if env:
        print("server environment: " + " ".join(f"{k}={v}" for k, v in env.items()))
    if args.server_arg:
        print("server options: " + " ".join(args.server_arg))
    soak(args.seconds, args.clients, env, args.server_arg)


if __name__ == "__main__":
    run_recorded("soak", "Server memory under a 16-visitor mixed soak (issue 56)", __doc__.split("\n\n    python")[0],
                 _entry)
