"""Where a corpus command's units of work run: on this machine (``local``) or on Ray Data actors (``ray``).

Every command whose work grows with a corpus (faithfulness, sentence-set sweeps and comparisons, patching
over pair files, index building, structural-probe features, eval-mlm, qk-space over sets) is written as
*units* (one sentence, one pair, one batch) and a module-level *work* function ``work(lab, unit) -> record``.
``run_units`` runs them here, in order, or sends them to a pool of Ray actors that each load the checkpoint
once (as the driver loaded it: same checkpoint, MLM head, dtype; a random-weights null model is rebuilt
from its seed) and returns the records **in the units' order**, so whatever the command computes from them
(means, bootstrap intervals over sentences) is computed once, on the driver, from the same list of records
as the local engine's. Seeds travel inside the units, never in a worker's state.

Ray is optional (``pip install "bertviz-lab[ray]"``), imported only when this engine is chosen. Head scoring
(``syntax/ray_engine.py``) uses the same cluster start, worker checkpoint and Data settings, with its own
batches and null models.
"""
from __future__ import annotations

import contextlib
import pickle
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import accumulate
from typing import Any, TypeVar

import numpy as np

from .lab import Encoded, InputError, Lab, load, null_model

Unit = TypeVar("Unit")
Work = Callable[[Lab, Any], Any]  # a module-level function (Ray ships it to the workers by reference)
ENGINES = ("local", "ray")
NULL_PREFIX = "null-model:seed="


@dataclass(frozen=True)
class Engine:
    """Where units run. ``address``: an existing Ray cluster (None: start one of ``workers`` CPUs on this
    machine); ``workers``: the actor pool (each holds one copy of the checkpoint); ``threads``: torch threads
    per worker (None: the driver's, so every float is the local engine's); ``device``: the workers' device (a
    worker's GPU is always ``cuda``)."""

    kind: str = "local"
    address: str | None = None
    workers: int = 2
    threads: int | None = None
    device: str = "cpu"
    allow_pickle: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise InputError(f"unknown engine {self.kind!r}: choose local or ray")
        if self.workers < 1:
            raise InputError(f"an engine needs at least one worker (got {self.workers})")

    def to_json(self) -> dict:
        return {"kind": self.kind, "address": self.address, "workers": self.workers}


LOCAL = Engine()


@dataclass
class UnitTimes:
    """Seconds each unit took where it ran (a worker's own clock, load excluded): a projection's input."""

    seconds: list[float] = field(default_factory=list)

    def projected(self, workers: int) -> float:
        """The time ``workers`` workers would take, each unit to the worker that frees first (longest first):
        a projection from measured unit times, not a measurement."""
        loads = np.zeros(max(1, workers))
        for seconds in sorted(self.seconds, reverse=True):
            loads[loads.argmin()] += seconds
        return float(loads.max())


_RECORDED: ContextVar[UnitTimes | None] = ContextVar("bertviz_lab_unit_times", default=None)


@contextmanager
def recording_unit_times() -> Iterator[UnitTimes]:
    """Every unit's seconds of the jobs run inside the block (this context only): a benchmark's projection."""
    times = UnitTimes()
    token = _RECORDED.set(times)
    try:
        yield times
    finally:
        _RECORDED.reset(token)


def run_units(lab: Lab, work: Work, units: Sequence[Any], engine: Engine = LOCAL,
              progress: Callable[[int, int], None] | None = None, times: UnitTimes | None = None) -> list:
    """``[work(lab, unit) for unit in units]``, on ``engine``. ``progress(done, total)`` is told 0 before the
    first unit and each unit as it ends; ``times`` (default: the block's ``recording_unit_times``, if any)
    collects each unit's seconds where it ran."""
    units = list(units)
    times = times if times is not None else _RECORDED.get()
    if progress is not None:
        progress(0, len(units))
    if engine.kind == "local" or not units:
        out = []
        for done, unit in enumerate(units, start=1):
            started = time.perf_counter()
            out.append(work(lab, unit))
            if times is not None:
                times.seconds.append(time.perf_counter() - started)
            if progress is not None:
                progress(done, len(units))
        return out
    return _run_on_ray(lab, work, units, engine, progress, times)


@dataclass(frozen=True)
class Reading:
    """What each batch of ``map_by_length`` reads: the hook points it captures, and ``extract(lab, cache,
    encs)``, which turns the batch's cache into one result per input (on the worker: only results travel)."""

    capture: tuple[str, ...]
    extract: Callable


def _length_batch(lab: Lab, encs: Sequence[Encoded], reading: Reading) -> list:
    _, cache = lab.run(lab.batch_tensors(list(encs)), capture=reading.capture, compute_mlm=False)
    return reading.extract(lab, cache, encs)


def map_by_length(lab: Lab, encoded: Sequence[Encoded], reading: Reading, batch_size: int = 32,
                  engine: Engine = LOCAL, progress: Callable[[int, int], None] | None = None) -> list:
    """``Lab.runs_by_length`` as units: the inputs in batches of like lengths (the same batches on every
    engine), each run once, MLM head off, and read by ``reading``. One result per input, in the inputs'
    order; ``progress(done, total)`` counts inputs."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    done = [0, *accumulate(len(rows) for rows in batches)]
    results = run_units(lab, partial(_length_batch, reading=reading), [[encoded[i] for i in rows] for rows in batches],
                        engine, progress and (lambda k, _: progress(done[k], len(encoded))))
    out: list = [None] * len(encoded)
    for rows, batch in zip(batches, results):
        for i, result in zip(rows, batch):
            out[i] = result
    return out


# ---- Ray: shared with syntax/ray_engine.py -----------------------------------------------------------
def require_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError('--engine ray needs Ray: pip install "ray[data]" (or pip install "bertviz-lab[ray]")') from None
    return ray


# Ray Data's own progress bars, log lines and statistics: our caller reports progress itself, and
# on 2 cores they cost the driver and the workers about a second of CPU per job.
QUIET = {"enable_progress_bars": False, "enable_operator_progress_bars": False, "enable_auto_log_stats": False,
         "enable_stats_summary_collection": False}


@contextmanager
def quiet_data_context(ray) -> Iterator[None]:
    """``QUIET`` on the process's DataContext for the job, then the caller's settings back."""
    context = ray.data.DataContext.get_current()
    saved = {name: getattr(context, name) for name in QUIET if hasattr(context, name)}
    for name in saved:
        setattr(context, name, QUIET[name])
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(context, name, value)


def start_ray(ray, address: str | None, workers: int) -> None:
    """Join ``address``, or start a cluster of ``workers`` CPUs here (unless this process already has one).
    A cluster of our own runs its workers at the driver's priority, not Ray's default niceness 15, which
    starves them on a busy machine (the driver only waits)."""
    if ray.is_initialized():
        return
    options = ({"address": address} if address else
               {"num_cpus": workers, "_system_config": {"worker_niceness": 0}})
    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False, configure_logging=False,
             **options)


def weights_dtype(lab: Lab) -> str | None:
    """The driver's weight dtype by name ("float16", ...); None for float32, every device's default."""
    name = str(next(lab.model.parameters()).dtype).removeprefix("torch.")
    return None if name == "float32" else name


def gpu_workers(ray, workers: int) -> int:
    """Each GPU worker holds a whole GPU, and Ray Data waits for the whole pool before it starts:
    more workers than GPUs would wait forever."""
    available = int(ray.cluster_resources().get("GPU", 0))
    if available < 1:
        raise InputError("--device cuda on the Ray engine needs GPUs in the Ray cluster, and it has none "
                         "(use --device cpu, or start the cluster on GPU machines)")
    if workers > available:
        warnings.warn(f"--workers {workers} on {available} GPU(s): using {available} worker(s), one per GPU",
                      stacklevel=3)
    return min(workers, available)


@dataclass(frozen=True)
class WorkerCheckpoint:
    """The checkpoint as each worker loads it: the driver's checkpoint, MLM head and dtype on the
    worker's own device (a worker's GPU is always ``cuda``); ``null_seed``: the random-weights null model
    of that checkpoint with this seed instead of its weights."""

    checkpoint: str
    mlm_head: str | None
    device: str = "cpu"
    dtype: str | None = None
    allow_pickle: bool = False
    null_seed: int | None = None

    def load(self) -> Lab:
        lab = load(self.checkpoint, device=self.device, mlm_head=self.mlm_head, dtype=self.dtype,
                   allow_pickle=self.allow_pickle)
        return lab if self.null_seed is None else null_model(lab, self.null_seed)


def worker_checkpoint(lab: Lab, device: str = "cpu", allow_pickle: bool = False, base: Lab | None = None
                      ) -> WorkerCheckpoint:
    """How a worker loads ``lab``: by the name the driver loaded it by. A null model (``null_model(base, s)``)
    is rebuilt from its checkpoint (``base``, else the one it remembers) and its seed."""
    if lab.checkpoint_id.startswith(NULL_PREFIX):
        base = base or lab.null_base
        if base is None:
            raise InputError("a random-weights null model runs on Ray only with the checkpoint it was made from")
        seed = int(lab.checkpoint_id.removeprefix(NULL_PREFIX))
        return replace(worker_checkpoint(base, device, allow_pickle), null_seed=seed)
    return WorkerCheckpoint(lab.checkpoint_id, lab.checkpoint.head_origin, device, weights_dtype(lab), allow_pickle)


class UnitWorker:
    """A Ray actor: one loaded checkpoint, many units of one work function."""

    def __init__(self, checkpoint: WorkerCheckpoint, work: Work, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.lab, self.work = checkpoint.load(), work

    def __call__(self, rows: dict) -> dict:
        out, seconds = [], []
        for blob in rows["unit"]:
            started = time.perf_counter()
            out.append(pickle.dumps(self.work(self.lab, pickle.loads(blob))))
            seconds.append(time.perf_counter() - started)
        return {"order": rows["order"], "result": np.array(out, dtype=object), "seconds": np.array(seconds)}


def worker_threads(engine: Engine) -> int:
    """Torch threads per worker: ``engine.threads``, else the driver's own. A float computed on 1 thread can
    differ in its last bits from the same one on 2 (reductions split differently: measured 1.5e-7 on a mean
    P(gold)), so with the driver's count every record equals the local engine's."""
    import torch

    return engine.threads or torch.get_num_threads()


UNITS_PER_BLOCK = 2  # a Ray Data task per 2 units: fewer per-task costs than 1, a shorter tail than 8


def _run_on_ray(lab: Lab, work: Work, units: list, engine: Engine, progress, times: UnitTimes | None) -> list:
    ray = require_ray()
    start_ray(ray, engine.address, engine.workers)
    gpus = 1 if engine.device.startswith("cuda") else 0
    workers = gpu_workers(ray, engine.workers) if gpus else engine.workers
    checkpoint = worker_checkpoint(lab, "cuda" if gpus else engine.device, engine.allow_pickle)
    items = [{"order": k, "unit": pickle.dumps(unit)} for k, unit in enumerate(units)]
    results: dict[int, Any] = {}
    seconds: dict[int, float] = {}
    # Ray's own notices (an actor it stopped, a worker it restarted) go to stderr, not into a --json record's stdout
    with quiet_data_context(ray), contextlib.redirect_stdout(sys.stderr):
        dataset = ray.data.from_items(items, override_num_blocks=max(1, -(-len(items) // UNITS_PER_BLOCK)))
        done = dataset.map_batches(
            UnitWorker, batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=0 if gpus else 1, num_gpus=gpus,
            fn_constructor_kwargs={"checkpoint": checkpoint, "work": work, "threads": worker_threads(engine)})
        for row in done.iter_rows():
            order = int(row["order"])
            if order in results:
                continue  # a unit Ray ran again after a worker failed: its first result counts
            results[order], seconds[order] = pickle.loads(row["result"]), float(row["seconds"])
            if progress is not None:
                progress(len(results), len(units))
    if times is not None:
        times.seconds.extend(seconds[k] for k in range(len(units)))
    return [results[k] for k in range(len(units))]
