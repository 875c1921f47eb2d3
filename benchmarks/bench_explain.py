"""What "Why this word?" costs (issue 45.3): the page's explain handler on the embedded default at 32 tokens
(erasure, gradient x input and integrated gradients from Captum, every attention source's ranking and its
faithfulness readout on the input), and DecompX alone, each beside one forward pass with full capture on the
same input: medians of --repeat calls after one warm-up, on the CPU.

A change is measured against the code before it in the same run: with --against OLD_CHECKOUT (a git
worktree of the earlier commit) the script runs --rounds rounds, each a fresh process on the old code and
then one on this code, and prints both columns and their ratio. Alternating cancels this VM's slow drifts in
speed (the same code's "Why this word?" measured 1.7 s and 2.1 s twenty minutes apart).

    git worktree add /tmp/before OLD_COMMIT
    python benchmarks/bench_explain.py [--repeat 5] [--rounds 3] [--tokens 32] [--against /tmp/before] [--write]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sections import commit, run_recorded

ACTIONS = ("forward pass with full capture (lab.analyze)", "DecompX source (lab.analyze, source='decompx')",
           '"Why this word?" (the page\'s explain handler)')


def sentence(lab, tokens: int) -> str:
    """A sentence of exactly ``tokens`` tokens with one [MASK]."""
    words = ("the cat sat on the [MASK] because it was tired and the dog ran to the park with a red ball "
             "while the children watched the boats go by on the river all day long").split()
    for n in range(3, len(words) + 1):
        text = " ".join(words[:n])
        if len(lab.encode(text).ids) >= tokens:
            return text
    return " ".join(words)


def times_ms(call, repeat: int) -> list[float]:
    call()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def measure(repeat: int, tokens: int) -> dict:
    """Every action's times in this process, on the bertviz_lab that imports here."""
    from bertviz_lab import load
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    lab = load("default", device="cpu")
    handlers = build_demo(lab).bvl_controllers
    text = sentence(lab, tokens)
    session = handlers.run.analyze(RunInput(text), Session(model=lab.checkpoint_id, device="cpu"))[handlers.page.ui.session]
    calls = (lambda: lab.analyze(text), lambda: lab.analyze(text, source="decompx"), lambda: handlers.inspect.explain(session))
    return {"model": lab.checkpoint_info().describe(), "tokens": len(session.analysis.tokens),
            "ms": {name: times_ms(call, repeat) for name, call in zip(ACTIONS, calls)}}


def in_process(code: Path, repeat: int, tokens: int) -> dict:
    """``measure`` in a fresh Python whose bertviz_lab comes from ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, __file__, "--worker", "--repeat", str(repeat), "--tokens", str(tokens)],
                         env=env, cwd=code, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5, help="calls per action and process, after a warm-up")
    parser.add_argument("--rounds", type=int, default=3, help="processes per code (alternating with --against)")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--against", type=Path, default=None, help="a checkout of the code before a change")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.repeat, args.tokens)))
        return
    here = Path(__file__).resolve().parent.parent
    codes = {"before": args.against, "after": here} if args.against else {"this code": here}
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    for _ in range(args.rounds):
        for name, code in codes.items():
            runs[name].append(in_process(code, args.repeat, args.tokens))
    medians = {name: {a: statistics.median(t for r in rs for t in r["ms"][a]) for a in ACTIONS} for name, rs in runs.items()}
    first = runs[next(iter(runs))][0]
    print(f"model: {first['model']}; {first['tokens']} tokens; medians of {args.rounds} processes x {args.repeat} calls "
          f"per code{', the codes alternating' if args.against else ''}")
    if args.against:
        old = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.against, capture_output=True,
                             text=True).stdout.strip()
        print(f"before: the code at {old}; after: {commit()}\n")
        print("| action | ms before | ms after | after / before | x forward pass before | after |")
        print("|---|---:|---:|---:|---:|---:|")
        before, after = medians["before"], medians["after"]
        for a in ACTIONS:
            print(f"| {a} | {before[a]:.0f} | {after[a]:.0f} | {after[a] / before[a]:.2f} | "
                  f"{before[a] / before[ACTIONS[0]]:.1f} | {after[a] / after[ACTIONS[0]]:.1f} |")
        return
    print("\n| action | ms | x forward pass |\n|---|---:|---:|")
    only = medians["this code"]
    for a in ACTIONS:
        print(f"| {a} | {only[a]:.0f} | {only[a] / only[ACTIONS[0]]:.1f} |")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        main()
    else:
        run_recorded("explain-cost", 'What "Why this word?" costs at 32 tokens', __doc__, main)
