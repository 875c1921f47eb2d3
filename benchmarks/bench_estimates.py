"""Are the long commands' up-front time estimates right? (issue 60; target: within a factor of 1.5 of the actual
time on a quiet machine, warm-up excluded). Each command runs as a person runs it (``python -m bertviz_lab``, a
fresh process); its estimate line ("about N s on this machine (measured after the first ..., a warm-up)") is set
beside the time its progress bar took from its first unit to its last (tqdm's elapsed time on the bar's last
line; model loading and file writing come before and after it and are in neither figure).

The naopc-sst2 estimate weighs each sentence by tokens x (2^words + EXPLAINING): its exact bounds mask every
subset of its words, and its explanations cost about as much as EXPLAINING masked inputs. That constant is
measured here too, on the protocol's own sentences (--calibrate): the median over sentences of (explanations'
seconds / tokens) / (masked inputs' seconds / (tokens x 2^words)).

    python benchmarks/bench_estimates.py [--calibrate] [--write]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sections import run_recorded

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "data" / "ud" / "en_ewt-ud-dev.conllu"  # a dev split: never a test split
COMMANDS = {
    "faithfulness --protocol naopc-sst2": ["faithfulness", "--protocol", "naopc-sst2"],
    "faithfulness (ours, shipped lines)": ["faithfulness"],
    "score-heads (EWT dev, 500 sentences)": ["score-heads", "--conllu", str(DEV), "--max-sentences", "500",
                                             "--out", "{tmp}/score"],
    "structural-probe (train on 300 EWT dev sentences)": ["structural-probe", "--train", str(DEV), "--treebank", str(DEV),
                                                          "--max-train-sentences", "300", "--max-sentences", "200",
                                                          "--kinds", "distance", "--no-null-model", "--no-control",
                                                          "--out", "{tmp}/probe"],
}
SAID = re.compile(r"; (?:about (\d+) (s|min)|about (\d+) h (\d+) min|under a second) on this machine")


def seconds_said(stderr: str) -> float | None:
    found = SAID.search(stderr)
    if found is None:
        return None
    if found.group(1):
        return float(found.group(1)) * (60 if found.group(2) == "min" else 1)
    if found.group(3):
        return 3600 * float(found.group(3)) + 60 * float(found.group(4))
    return 0.5


def bar_seconds(stderr: str) -> float:
    """The elapsed time on the last bar's final redraw (n/n [MM:SS<... or H:MM:SS<...)."""
    times = re.findall(r"\| (\d+)/\1 \[(?:(\d+):)?(\d+):(\d+)<", stderr)
    if not times:
        raise SystemExit(f"no finished progress bar in:\n{stderr[-2000:]}")
    _, hours, minutes, secs = times[-1]
    return 3600 * float(hours or 0) + 60 * float(minutes) + float(secs)


def calibrate() -> None:
    from bertviz_lab import load
    from bertviz_lab.cli.explanation_commands import EXPLAINING
    from bertviz_lab.interventions import naopc as protocol
    from bertviz_lab.resources import NAOPC_SHORT_SET

    lab = load("sst2")
    names = protocol.check_names(None)
    ratios = []
    for i, line in enumerate(protocol.read_labelled(NAOPC_SHORT_SET, "label")[:25]):
        enc = lab.encode(line, truncate=True)
        groups = protocol.word_groups(lab, enc)
        if protocol.out_of_bounds(enc, groups, protocol.MAX_WORDS, protocol.MAX_TOKENS) or len(groups) < 6:
            continue
        start = time.perf_counter()
        enc, _ = protocol.token_scores(lab, line, names, i)
        explained = time.perf_counter()
        protocol.subset_probabilities(lab, enc, groups)
        masked = time.perf_counter()
        if i == 0:
            continue  # the warm-up
        per_input = (masked - explained) / (len(enc.ids) * 2 ** len(groups))
        ratios.append((explained - start) / len(enc.ids) / per_input)
    print(f"calibration on {len(ratios)} sentences of 6+ words: explanations = {statistics.median(ratios):.0f} masked "
          f"inputs' worth (median; quartiles {statistics.quantiles(ratios, n=4)[0]:.0f}-"
          f"{statistics.quantiles(ratios, n=4)[2]:.0f}); the CLI uses EXPLAINING = {EXPLAINING}\n")


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
    print("| command | estimate said | bar's actual time | actual / estimate | within 1.5x |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in COMMANDS.items():
            run = subprocess.run([sys.executable, "-m", "bertviz_lab", *[a.format(tmp=tmp) for a in argv]],
                                 capture_output=True, text=True, cwd=ROOT)
            if run.returncode != 0:
                raise SystemExit(f"{name} failed:\n{run.stderr[-2000:]}")
            said, actual = seconds_said(run.stderr), bar_seconds(run.stderr)
            ratio = actual / said if said else float("nan")
            print(f"| {name} | {said:.0f} s | {actual:.0f} s | {ratio:.2f} | "
                  f"{'yes' if 1 / 1.5 <= ratio <= 1.5 else 'no'} |")


if __name__ == "__main__":
    run_recorded("estimates", "The long commands' time estimates against their actual times (issue 60)", __doc__, main)
