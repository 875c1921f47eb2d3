"""The corpus-scale engine next to the local one (issue 17), in one run on this machine:
the same 2,000-sentence scoring job (UD English EWT dev, published MiniLM weights, tree decoding
on) through ``score_treebank`` and through the Ray engine (a local Ray instance, 2 workers of
1 thread each): sentences per second, their ratio (target >= 0.7), and whether the counts are
identical. The Ray job runs twice on one instance: the first also starts Ray Data's cluster-wide
services; the second is what every later job pays (the ratio held against the target). Then
``probe``'s default job, the checkpoint and its random-weights null model, on both engines. Last, a
projection, from the measured per-sentence cost, of all UD test/dev treebanks (~2 M words) x 4
checkpoints on 1, 8 and 64 CPU workers and 1 and 8 GPUs (stated assumptions).

    python benchmarks/bench_ray.py --conllu en_ewt-ud-dev.conllu [--sentences 2000]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.lab import null_model
from bertviz_lab.syntax.ray_engine import RayCluster, RayScoring, require_ray, score_treebanks_ray
from bertviz_lab.syntax.scoring import score_treebank
from bertviz_lab.treebank import read_conllu

UD_WORDS = 2_000_000  # words in all UD test and dev splits, roughly (the figure)
CHECKPOINTS = 4
BERT_BASE_COST = 8.0  # assumed: bert-base costs ~8x MiniLM-L6-H384 per token (2x layers, 4x width^2)
GPU_SPEEDUP = 30.0  # assumed: one T4-class GPU scores ~30x as many sentences/s as one CPU core here


def identical(a, b) -> bool:
    return a.arcs.relations == b.arcs.relations and all(np.array_equal(a.arcs.hits[k], v) for k, v in b.arcs.hits.items())


def duration(hours: float) -> str:
    return f"{hours:.1f} h" if hours >= 1 else f"{hours * 60:.0f} min" if hours * 60 >= 1 else "< 1 min"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--copies", type=int, default=1, help="score the sentences this many times over (a larger "
                        "job, to see Ray's fixed start-up cost amortised)")
    args = parser.parse_args()
    ray = require_ray()
    lab = load("minilm-original", device="cpu")
    sentences = read_conllu(args.conllu)[: args.sentences] * args.copies
    words = sum(len(s.words) for s in sentences)
    score_treebank(lab, sentences[:64])  # warm-up

    start = time.perf_counter()
    local = score_treebank(lab, sentences)
    local_s = time.perf_counter() - start

    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    started = time.perf_counter() - start
    # Two jobs on the same instance. The first also starts Ray Data's cluster-wide services (detached
    # actors that live as long as the cluster); every later job, like any job on a running cluster,
    # starts only its own workers.
    times = []
    for _ in range(2):
        start = time.perf_counter()
        [(_, remote, _)] = list(score_treebanks_ray(lab, [sentences], RayScoring(null_seeds=()),
                                                    RayCluster(workers=args.workers)))
        times.append(time.perf_counter() - start)
    first_s, ray_s = times
    # The job as `probe` runs it by default: the checkpoint and its random-weights null model.
    start = time.perf_counter()
    [(_, remote_scores, [remote_null])] = list(score_treebanks_ray(lab, [sentences], RayScoring(null_seeds=(0,)),
                                                                  RayCluster(workers=args.workers)))
    remote_pair = (remote_scores, remote_null)
    ray_null_s = time.perf_counter() - start
    ray.shutdown()
    start = time.perf_counter()
    local_pair = score_treebank(lab, sentences), score_treebank(null_model(lab, 0), sentences)
    local_null_s = time.perf_counter() - start

    same = identical(remote, local)
    same_null = all(identical(r, lo) for r, lo in zip(remote_pair, local_pair))
    n = local.sentences_used
    print(f"{n} sentences ({words} words), {lab.name}")
    print(f"local engine: {local_s:.1f} s, {n / local_s:.0f} sentences/s")
    print(f"ray engine ({args.workers} workers), first job on a fresh instance (started in {started:.1f} s): "
          f"{first_s:.1f} s, {n / first_s:.0f} sentences/s; ratio ray / local = {local_s / first_s:.2f}")
    print(f"ray engine ({args.workers} workers), a job on the running instance: {ray_s:.1f} s, "
          f"{n / ray_s:.0f} sentences/s; ratio ray / local = {local_s / ray_s:.2f} (target >= 0.7)")
    print(f"identical counts: {same}")
    print(f"with the null model (probe's default job): local {local_null_s:.1f} s, ray {ray_null_s:.1f} s on the running "
          f"instance; ratio ray / local = {local_null_s / ray_null_s:.2f}; identical counts: {same_null}")

    per_word_cpu = local_s / words  # seconds per word on this machine's 2 cores, MiniLM
    per_word_worker = ray_s * args.workers / words  # seconds per word on one 1-thread worker
    total_words = UD_WORDS * CHECKPOINTS
    print(f"\nProjection (assumptions: bert-base costs {BERT_BASE_COST:g}x MiniLM per token; a GPU does "
          f"{GPU_SPEEDUP:g}x one CPU worker; perfect scaling across workers):")
    print("| where | MiniLM-L6 checkpoints | bert-base-sized checkpoints |")
    print("|---|---:|---:|")
    for label, seconds in [(f"{w} CPU worker{'s' if w > 1 else ''}", per_word_worker / w) for w in (1, 8, 64)] + \
            [(f"{g} GPU{'s' if g > 1 else ''}", per_word_worker / GPU_SPEEDUP / g) for g in (1, 8)]:
        hours = total_words * seconds / 3600
        print(f"| {label} | {duration(hours)} | {duration(hours * BERT_BASE_COST)} |")
    print(f"\n(measured: {per_word_cpu * 1e3:.3f} ms/word locally on 2 cores, {per_word_worker * 1e3:.3f} ms/word "
          "on one 1-thread Ray worker)")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("ray", "Corpus scale: the Ray engine next to the local one", __doc__, _entry)
