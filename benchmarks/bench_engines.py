"""Every corpus command on both engines, side by side in one run (issue 61): each command as a person types it,
``--engine local`` and then ``--engine ray --workers 2`` on a local Ray instance started once (a small job
first warms Ray Data up, as any second job on an instance finds it), the same input; whether the records are
identical (the JSON, its recipe's engine aside); the wall-time ratio (local / Ray; above 1 Ray is faster);
and a projection of the time on N workers from the units' times measured on the workers (each unit to the
worker that frees first, plus the Ray job's own start-up as measured here: a projection, not a measurement).

    python benchmarks/bench_engines.py --conllu data/ud/en_ewt-ud-dev.conllu [--scale 1.0] [--write]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from sections import markdown_table, run_recorded

from bertviz_lab.cli import main as cli
from bertviz_lab.engines import UnitTimes, recording_unit_times
from bertviz_lab.resources import DEFAULT_MLM_HEAD
from bertviz_lab.treebank import SAMPLE_TREEBANK

HELDOUT = DEFAULT_MLM_HEAD / "heldout.txt"
WORKERS = (2, 8, 32)  # the projection's pool sizes
NOUNS = ("key", "cat", "dog", "bird", "car", "book", "girl", "boy", "tree", "house")
PLACES = ("near the door", "by the window", "on the table", "in the garden")


def pairs_file(folder: Path) -> Path:
    """Number agreement minimal pairs: "the key(s) near the door [MASK] here" | is / are (40 pairs)."""
    lines = [f"the {n} {p} [MASK] here . | the {n}s {p} [MASK] here . | is | are" for n in NOUNS for p in PLACES]
    path = folder / "pairs.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def commands(conllu: Path, folder: Path, scale: float) -> list[tuple[str, list[str]]]:
    n = lambda count: str(max(4, int(count * scale)))  # noqa: E731
    return [
        ("faithfulness", ["faithfulness", "--max-sentences", n(60), "--resamples", "200"]),
        ("faithfulness naopc-sst2", ["faithfulness", "--protocol", "naopc-sst2", "--max-sentences", n(30)]),
        ("sweep directional (set)", ["sweep", "--kind", "directional", "--text-file", str(HELDOUT),
                                     "--max-sentences", n(300)]),
        ("sweep ablation (set)", ["sweep", "--kind", "ablation", "--text-file", str(HELDOUT), "--max-sentences", n(60)]),
        ("compare shuffle-words (set)", ["compare", "--intervention", "shuffle-words", "--text-file", str(HELDOUT),
                                         "--max-sentences", n(300)]),
        ("patch --pairs-file", ["patch", "--pairs-file", str(pairs_file(folder))]),
        ("index", ["index", "--conllu", str(conllu), "--max-sentences", n(1000), "--out", str(folder / "index-{e}")]),
        ("structural-probe (features)", ["structural-probe", "--train", str(conllu), "--max-train-sentences", n(400),
                                         "--treebank", str(SAMPLE_TREEBANK), "--epochs", "2", "--resamples", "200",
                                         "--no-control", "--out", str(folder / "probe-{e}")]),
        ("perturbed-masking", ["perturbed-masking", "--treebank", str(conllu), "--max-sentences", n(40)]),
        ("eval-mlm", ["eval-mlm", "--text-file", str(HELDOUT), "--max-sentences", n(2000)]),
        ("qk-space (set)", ["qk-space", "--text-file", str(HELDOUT), "--max-sentences", n(400), "--similarity"]),
    ]


def run(argv: list[str], engine: str) -> tuple[dict, float, list[float]]:
    """The command's JSON (its recipe and out folder aside), its wall time, and its units' seconds."""
    argv = [a.replace("{e}", engine) for a in argv] + ["--json", "--engine", engine, "--workers", "2",
                                                       "--device", "cpu"]
    out = io.StringIO()
    with recording_unit_times() as times, contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        started = time.perf_counter()
        code = cli(argv)
        seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    # the record is the one JSON line (Ray may print a notice of its own while the job starts)
    record = json.loads(next(line for line in reversed(out.getvalue().splitlines()) if line.startswith("{")))
    record.pop("recipe", None)
    record.pop("out", None)
    return record, seconds, times.seconds


def comparable(record: dict) -> dict:
    """A record without what differs between two runs by design: wall times (structural-probe's seconds)."""
    return {k: v for k, v in record.items() if k not in ("seconds", "files", "train_seconds")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", type=Path, required=True, help="a train or dev split (never a test split)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every command's sentence count")
    args = parser.parse_args()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _system_config={"worker_niceness": 0})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm = folder / "warm.txt"
        warm.write_text("the cat sat on the mat .\nthe dog ran in the park .\n")
        run(["eval-mlm", "--text-file", str(warm)], "ray")  # Ray Data's services start with the first job
        for name, argv in commands(args.conllu, folder, args.scale):
            local, local_s, _ = run(argv, "local")
            remote, ray_s, units = run(argv, "ray")
            work = sum(units)
            measured = UnitTimes(units)
            startup = max(0.0, ray_s - measured.projected(2))
            projected = [startup + measured.projected(w) for w in WORKERS]
            same = comparable(local) == comparable(remote)
            rows.append([name, len(units), "yes" if same else "NO", f"{local_s:.1f}", f"{ray_s:.1f}",
                         f"{local_s / ray_s:.2f}", f"{work:.1f}", *(f"{p:.1f}" for p in projected)])
            print(f"{name}: {len(units)} units, identical {same}, local {local_s:.1f} s, ray {ray_s:.1f} s", flush=True)
    ray.shutdown()
    print()
    print(markdown_table(["command", "units", "records identical", "local s", "Ray (2 workers) s",
                          "ratio local / Ray", "unit seconds on workers",
                          *(f"projected s, {w} workers" for w in WORKERS)], rows))
    print("\nThe projection: the units' measured seconds handed, longest first, to whichever of N workers frees "
          "first, plus this run's Ray start-up for the job (Ray time minus the 2-worker share of the units); a "
          "cluster's start-up and network differ. Structural-probe trains its probes on the driver after the "
          "word vectors: only the vectors are units.")


if __name__ == "__main__":
    run_recorded("engines", "Every corpus command on the local engine and on Ray (issue 61)", __doc__.split("\n\n")[0], main)
