"""What "Why this word?" costs (issue 45.3): the page's explain handler on the embedded default at 32 tokens
(erasure, gradient x input and integrated gradients from Captum, every attention source's ranking and its
faithfulness readout on the input), and DecompX alone, each beside one forward pass with full capture on the
same input, in the same run: medians of --repeat calls after one warm-up, on the CPU.

    python benchmarks/bench_explain.py [--repeat 10] [--tokens 32] [--write]
"""
from __future__ import annotations

import argparse
import statistics
import time

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.app import build_demo
from bertviz_lab.app.forms import RunInput
from bertviz_lab.app.state import Session


def sentence(lab, tokens: int) -> str:
    """A sentence of exactly ``tokens`` tokens with one [MASK]."""
    words = ("the cat sat on the [MASK] because it was tired and the dog ran to the park with a red ball "
             "while the children watched the boats go by on the river all day long").split()
    for n in range(3, len(words) + 1):
        text = " ".join(words[:n])
        if len(lab.encode(text).ids) >= tokens:
            return text
    return " ".join(words)


def median_ms(call, repeat: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    lab = load("default", device="cpu")
    demo = build_demo(lab)
    handlers, ui = demo.bvl_handlers, demo.bvl_handlers.ui
    text = sentence(lab, args.tokens)
    session = handlers.analyze(RunInput(text), Session(model=lab.checkpoint_id, device="cpu"))[ui.session]
    n = len(session.analysis.tokens)
    forward = median_ms(lambda: lab.analyze(text), args.repeat)
    decompx = median_ms(lambda: lab.analyze(text, source="decompx"), args.repeat)
    why = median_ms(lambda: handlers.explain(session), args.repeat)
    print(f"model: {lab.checkpoint_info().describe()}; {n} tokens; medians of {args.repeat}\n")
    print("| action | ms | x forward pass |\n|---|---:|---:|")
    for name, ms in (("forward pass with full capture (lab.analyze)", forward),
                     ("DecompX source (lab.analyze, source='decompx')", decompx),
                     ('"Why this word?" (the page\'s explain handler)', why)):
        print(f"| {name} | {ms:.0f} | {ms / forward:.1f} |")


if __name__ == "__main__":
    run_recorded("explain-cost", 'What "Why this word?" costs at 32 tokens', __doc__, main)
