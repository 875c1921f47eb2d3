"""Score a treebank on a Ray cluster (Ray Data), with the same batches as the local engine.

The driver plans and tokenizes the batches (``scoring.plan_batches``); Ray Data carries one batch
per row to a pool of stateful actors, each of which loads the checkpoint once (on a GPU when the worker has
one), runs the batch, converts attention to word level and predicts heads *on the worker*, and
returns only each sentence's arc rows (booleans per word and head) and summed head statistics.
The random-weights null model is scored the same way: each worker builds it from the seed, so the
driver scores no sentence. The driver adds the results up in the plan's order, so the tables equal
``--engine local``'s.

``ray`` is an optional dependency (``pip install "bertviz-lab[ray]"`` or ``requirements-ray.txt``),
imported only when this engine is chosen; starting the cluster, the workers' checkpoint and Ray Data's
quiet settings are ``engines.py``'s, shared with every other corpus command.
"""
from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..engines import QUIET as QUIET  # re-exported: the settings head scoring's tests check
from ..engines import WorkerCheckpoint, quiet_data_context, require_ray, start_ray, worker_checkpoint
from ..engines import gpu_workers as gpu_workers
from ..engines import weights_dtype as weights_dtype
from ..lab import Lab, null_model
from ..treebank import Sentence
from .scoring import TreebankScores, collect, plan_batches

BATCHES_PER_BLOCK = 2  # a Ray Data task per 2 batches: fewer per-task costs than 1, a shorter tail than 8


@dataclass(frozen=True)
class RayScoring:
    """What is scored and how it is batched: the same settings as ``score_treebank`` on the local engine
    (and the null models' seeds), one object so the driver plans with them and every worker scores with them."""

    batch_size: int = 32
    max_length: int | None = None
    max_sentences: int | None = None
    trees: bool = True
    source: str = "attention"  # the attention source heads are scored on
    null_seeds: Sequence[int] = (0,)  # one random-weights null model per seed, scored on the workers too


@dataclass(frozen=True)
class RayCluster:
    """Where the batches run: the cluster (None: a local one of ``workers`` CPUs), the actor pool and
    how each worker loads the checkpoint; kept apart from ``RayScoring``, which changes no table."""

    address: str | None = None
    workers: int = 2
    device: str = "cpu"
    threads: int | None = None  # torch threads per worker (None: 1)
    allow_pickle: bool = False  # the workers load the checkpoint as the driver did


class BatchScorer:
    """A Ray actor: one loaded checkpoint (and, with ``null_seeds``, its random-weights null models), many batches."""

    def __init__(self, checkpoint: WorkerCheckpoint, scoring: RayScoring, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        lab = checkpoint.load()
        self.labs = {-1: lab, **{seed: null_model(lab, seed) for seed in scoring.null_seeds}}  # -1: the checkpoint
        self.score_source, self.trees = scoring.source, scoring.trees

    def __call__(self, rows: dict) -> dict:
        from .scoring import score_batch

        out = []
        for blob, null in zip(rows["batch"], rows["null"]):
            batch = pickle.loads(blob)
            out.append(pickle.dumps(score_batch(self.labs[int(null)], batch, self.score_source, self.trees)))
        return {"treebank": rows["treebank"], "order": rows["order"], "null": rows["null"],
                "result": np.array(out, dtype=object)}


def score_treebanks_ray(lab: Lab, treebanks: Sequence[Sequence[Sentence]], scoring: RayScoring = RayScoring(),
                        cluster: RayCluster = RayCluster(), progress: Callable[[int, int, int], None] | None = None
                        ) -> Iterator[tuple[int, TreebankScores, list[TreebankScores]]]:
    """(index, scores, null scores per seed) of each treebank as soon as its last batch is back: one Ray Data
    job for all of them, so each worker starts (and loads the checkpoint) once per checkpoint, not
    once per treebank. Treebanks go in order, each longest batch first; ``progress(index, done, total)``.
    The workers load the checkpoint in the driver's dtype; on GPUs there is one worker per GPU at most."""
    ray = require_ray()
    plans = [plan_batches(lab, sentences, scoring.batch_size, scoring.max_length, scoring.max_sentences)
             for sentences in treebanks]
    models = [-1, *scoring.null_seeds]  # -1: the checkpoint; then each null model's seed
    labs = {-1: lab, **{seed: null_model(lab, seed) for seed in scoring.null_seeds}}  # names and hashes them; runs nothing

    def finished(t: int) -> tuple[int, TreebankScores, list[TreebankScores]]:
        plan, mine = plans[t], results.pop(t)
        scored = [collect(labs[m], plan, (mine[m, k] for k in range(len(plan.batches))), scoring.trees, scoring.source)
                  for m in models]
        return t, scored[0], scored[1:]

    results: dict[int, dict[tuple[int, int], tuple]] = {t: {} for t in range(len(plans))}
    for t, plan in enumerate(plans):
        if not plan.batches:  # nothing to score (every sentence too long): done before Ray starts
            yield finished(t)
    # Longest batches first (each plan sorts by length) in small blocks: no worker ends the job alone
    # on a run of long batches while the others idle (measured: BENCHMARKS.md, issue 17).
    items = [{"treebank": t, "order": k, "null": null, "batch": pickle.dumps(batch)}
             for t, plan in enumerate(plans) for k, batch in reversed(list(enumerate(plan.batches))) for null in models]
    if not items:
        return
    start_ray(ray, cluster.address, cluster.workers)
    gpus = 1 if cluster.device.startswith("cuda") else 0
    workers = gpu_workers(ray, cluster.workers) if gpus else cluster.workers
    checkpoint = worker_checkpoint(lab, "cuda" if gpus else cluster.device, cluster.allow_pickle)  # a worker's GPU is cuda
    blocks = max(1, -(-len(items) // BATCHES_PER_BLOCK))
    done = dict.fromkeys(range(len(plans)), 0)
    with quiet_data_context(ray):
        dataset = ray.data.from_items(items, override_num_blocks=blocks)
        scored = dataset.map_batches(
            BatchScorer, batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=0 if gpus else 1, num_gpus=gpus,
            fn_constructor_kwargs={"checkpoint": checkpoint, "scoring": scoring, "threads": cluster.threads or 1})
        for row in scored.iter_rows():
            t, key = int(row["treebank"]), (int(row["null"]), int(row["order"]))
            if t not in results or key in results[t]:
                continue  # a batch Ray ran again after a worker failed: its first result counts
            result = results[t][key] = pickle.loads(row["result"])
            done[t] += len(result[0])
            if progress is not None:
                progress(t, done[t], plans[t].used * len(models))
            if len(results[t]) == len(plans[t].batches) * len(models):
                yield finished(t)
