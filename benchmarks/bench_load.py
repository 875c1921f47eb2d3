"""The app under load and faults (issue 13), the server in its own process in public mode:

1. 16 gradio_client clients running the Run action (/analyze) at 128 tokens for --seconds
   (default 120): errors, throughput, p50/p95 (target: 0 errors, p95 <= 2 s on this 2-core CPU),
   and the server's memory after the first minute vs at the end (target: within 10 %);
2. a soak of 2,000 requests mixing good /attention calls (each reply checked against its own
   request: cross-talk) with every bad-input class of tests/hostile_inputs.py: unhandled errors,
   memory after the soak vs after warm-up (target: 0 unhandled, growth <= 10%), largest reply;
3. kill -9 in the middle of a request, restart, and a request that works.

    python benchmarks/bench_load.py [--seconds 120] [--requests 2000]

With --against OLD_CHECKOUT (a git worktree of an earlier commit) part 1 runs first on a server of that code,
then on this one, in the same run, and --load-only skips parts 2 and 3. The clients run on the same 2 cores as
the server (a visitor's browser would not): the line gives both processes' CPU seconds per Run.

    python benchmarks/bench_load.py --against /tmp/before --load-only [--seconds 120]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from gradio_client import Client
from sections import commit, run_recorded

from bertviz_lab import load
from bertviz_lab.app.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the cat dog sat ran on under a red big small mat park house tree near quickly slowly".split()


def bad_inputs() -> list:
    spec = importlib.util.spec_from_file_location("hostile_inputs", ROOT / "tests" / "hostile_inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BAD_INPUTS


def start(port: int, code: Path = ROOT) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    if code != ROOT:
        env["PYTHONPATH"] = str(code)
    server = subprocess.Popen([sys.executable, str(code / "app.py"), "--public", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=code)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            return server if Client(f"http://127.0.0.1:{port}/", verbose=False) else server
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("the server did not start")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of a process (default: this one, the clients)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class LightClient:
    """A visitor as the page is one: Gradio's queue protocol over plain HTTP (POST queue/join, then read the
    SSE stream queue/data until this event completes), one session per visitor. gradio_client does the same
    with a job thread, a heartbeat and output processing per call, ~120 ms of CPU per Run here, on the server's
    own two cores; a browser spends none of them."""

    def __init__(self, url: str, api_name: str = "analyze") -> None:
        import httpx

        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=httpx.Timeout(120.0))
        config = self.http.get(f"{self.url}/config").json()
        components = {c["id"]: c for c in config["components"]}
        event = next(d for d in config["dependencies"] if d.get("api_name") == api_name)
        self.fn_index, self.inputs = event["id"], event["inputs"]
        self.state_inputs = {i for i, c in enumerate(self.inputs) if components[c].get("type") == "state"}
        self.defaults = [components[c].get("props", {}).get("value") for c in self.inputs]  # as the page shows them
        self.session = uuid.uuid4().hex

    def predict(self, *values) -> list:
        """The event's outputs, in order (a State output is None); the values fill its first non-State inputs in
        order, the rest keep the values the page opens with."""
        given = iter(values)
        data = [None if i in self.state_inputs else next(given, default) for i, default in enumerate(self.defaults)]
        joined = self.http.post(f"{self.url}/gradio_api/queue/join", json={
            "data": data, "fn_index": self.fn_index, "session_hash": self.session, "event_data": None,
            "trigger_id": None})
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        with self.http.stream("GET", f"{self.url}/gradio_api/queue/data", params={"session_hash": self.session}) as reply:
            for line in reply.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") != event_id or message.get("msg") != "process_completed":
                    continue
                if not message.get("success", True):
                    raise RuntimeError(str(message.get("output", {}).get("error", "failed"))[:100])
                return message["output"]["data"]
        raise RuntimeError("the stream ended before the event completed")


def load_test(url: str, clients: int, seconds: float, pid: int, light: bool = False) -> None:
    text = " ".join(["word"] * 126)
    times, errors, start_time = [], [], time.time()
    cpu_before = cpu_seconds(pid), cpu_seconds()
    stop = start_time + seconds
    memory: list[tuple[float, float]] = []  # (seconds since start, server RSS in MB)

    def sample():
        while time.time() < stop:
            memory.append((time.time() - start_time, rss_mb(pid)))
            time.sleep(2)

    def worker():
        client = LightClient(url) if light else Client(url, verbose=False)
        while time.time() < stop:
            start = time.perf_counter()
            try:
                out = client.predict(text, "", 5) if light else client.predict(text, "", 5, api_name="/analyze")
                if "128 tokens." not in out:
                    errors.append(str(out)[:100])
            except Exception as error:
                errors.append(str(error)[:100])
            times.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker) for _ in range(clients)] + [threading.Thread(target=sample)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    server_cpu, client_cpu = cpu_seconds(pid) - cpu_before[0], cpu_seconds() - cpu_before[1]
    kind = "light HTTP clients" if light else "gradio_client clients"
    print(f"{clients} {kind} x {seconds:.0f} s at 128 tokens: {len(times)} Runs, {len(times) / seconds:.1f}/s, "
          f"errors {len(errors)}, p50 {statistics.median(times):.2f} s, p95 {percentile(times, 0.95):.2f} s; CPU per "
          f"Run: server {1e3 * server_cpu / len(times):.0f} ms, clients {1e3 * client_cpu / len(times):.0f} ms")
    minute = next((mb for t, mb in memory if t >= 60), memory[-1][1])
    end = memory[-1][1]
    print(f"server RSS: {memory[0][1]:.0f} MB at the start, {minute:.0f} MB after the first minute, {end:.0f} MB at "
          f"{memory[-1][0]:.0f} s ({100 * (end / minute - 1):+.1f}% after the first minute), peak "
          f"{max(mb for _, mb in memory):.0f} MB")


def soak(url: str, total: int, tokenizer) -> tuple[int, int, int]:
    bad = bad_inputs()
    rng = random.Random(0)
    jobs = []
    for i in range(total):
        if i % 3 == 0:
            jobs.append(("bad", bad[i // 3 % len(bad)]))
        else:
            jobs.append(("good", " ".join(rng.choices(WORDS, k=rng.randint(3, 40))) + f" {i}"))
    unhandled, crosstalk, largest = [], [], [0]
    lock = threading.Lock()

    def worker(part):
        client = Client(url, verbose=False)
        for kind, job in part:
            if kind == "good":
                out = client.predict(job, "", 5, api_name="/attention")
                largest[0] = max(largest[0], len(json.dumps(out)))
                if out["tokens"] != tokenizer.encode(job).tokens:
                    with lock:
                        crosstalk.append(job)
                continue
            api, args, word = job
            try:
                out = client.predict(*args, api_name=f"/{api}")
                text = " ".join(str(v) for v in (out if isinstance(out, (list, tuple)) else [out]))
            except Exception as error:
                text = str(error)
            if word.lower() not in text.lower():
                with lock:
                    unhandled.append((api, text[:100]))

    threads = [threading.Thread(target=worker, args=(jobs[k::8],)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(unhandled), len(crosstalk), largest[0]


def kill_and_restart(port: int) -> None:
    server = start(port)
    url = f"http://127.0.0.1:{port}/"
    client = Client(url, verbose=False)
    worker = threading.Thread(target=lambda: _ignore(lambda: client.predict("sample", None, False, False,
                                                                             api_name="/score_heads")))
    worker.start()
    time.sleep(1.0)
    server.kill()  # SIGKILL mid-request
    server.wait()
    worker.join(timeout=30)
    server = start(port)
    try:
        out = Client(url, verbose=False).predict("The cat sat on the mat.", "", 5, api_name="/attention")
        print(f"kill -9 mid-request, restart: the next request works ({len(out['tokens'])} tokens)")
    finally:
        server.kill()
        server.wait()


def _ignore(fn):
    try:
        fn()
    except Exception:
        pass


def both_clients(code: Path, seconds: float) -> None:
    """Part 1 on a server of ``code``: gradio_client visitors, then light HTTP ones (``LightClient``)."""
    server = start(port := free_port(), code)
    try:
        for light in (False, True):
            load_test(f"http://127.0.0.1:{port}/", 16, seconds, server.pid, light=light)
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--against", type=Path, default=None, help="a checkout of the code before a change")
    parser.add_argument("--load-only", action="store_true", help="part 1 only")
    args = parser.parse_args()
    if args.against is not None:
        old = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.against, capture_output=True,
                             text=True).stdout.strip()
        print(f"before: the code at {old}")
        both_clients(args.against, args.seconds)
        print(f"after: {commit()}")
    if args.load_only:
        both_clients(ROOT, args.seconds)
        return
    tokenizer = load("default", device="cpu")
    port = free_port()
    server = start(port)
    url = f"http://127.0.0.1:{port}/"
    try:
        load_test(url, 16, args.seconds, server.pid)
        warm = rss_mb(server.pid)
        unhandled, crosstalk, largest = soak(url, args.requests, tokenizer)
        after = rss_mb(server.pid)
        print(f"soak of {args.requests} requests (1 in 3 bad, {len(bad_inputs())} bad-input classes): unhandled "
              f"{unhandled}, cross-talk {crosstalk}, largest reply {largest / 1e6:.2f} MB, server RSS after "
              f"warm-up {warm:.0f} MB, after the soak {after:.0f} MB ({100 * (after / warm - 1):+.1f}%)")
    finally:
        server.kill()
        server.wait()
    kill_and_restart(free_port())


def _entry() -> None:
    main()


if __name__ == "__main__":
    if "--load-only" in sys.argv:
        run_recorded("load-before-after", "16 visitors, the code before a change beside this one", __doc__, _entry)
    else:
        run_recorded("load", "The API under load, soak and restart", __doc__, _entry)
