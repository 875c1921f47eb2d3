"""The English corpus the MLM head is trained on: WordNet 3.0 glosses and usage examples, as
Debian's ``wordnet-base`` package installs them (``apt-get install wordnet-base``).

Each synset's gloss gives one definition line and one line per quoted usage example. Lines are
deduplicated, shuffled with a fixed seed and split into train and held-out files; the held-out
file is never used for training.
"""
from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_LICENCE = Path("/usr/share/doc/wordnet-base/copyright")
PARTS = ("noun", "verb", "adj", "adv")
INSTALL_HINT = "install WordNet with `apt-get install wordnet-base` (Debian/Ubuntu)"


def gloss_lines(gloss: str) -> list[str]:
    """``living things collectively; "the oceans are teeming with life"`` -> definition + examples."""
    lines = []
    for part in re.findall(r'"[^"]*"|[^;"]+', gloss):
        text = part.strip().strip(";").strip()
        if text.startswith('"'):
            text = text.strip('"').strip()
        text = re.sub(r"\s+", " ", text)
        if len(text.split()) >= 4:
            lines.append(text)
    return lines


def read_wordnet(folder: Path = WORDNET_DIR) -> list[str]:
    files = [folder / f"data.{p}" for p in PARTS]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"WordNet data not found ({', '.join(missing)}): {INSTALL_HINT}")
    lines: list[str] = []
    for path in files:
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if raw.startswith("  ") or "|" not in raw:
                continue  # licence header
            lines.extend(gloss_lines(raw.split("|", 1)[1]))
    return list(dict.fromkeys(lines))


def build_corpus(out: Path, heldout: int = 2000, seed: int = 0, folder: Path = WORDNET_DIR) -> dict:
    """Write train.txt, heldout.txt, LICENSE-WordNet and corpus.json into ``out``."""
    lines = read_wordnet(folder)
    random.Random(seed).shuffle(lines)
    out.mkdir(parents=True, exist_ok=True)
    held, train = lines[:heldout], lines[heldout:]
    (out / "heldout.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    (out / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    if WORDNET_LICENCE.is_file():
        shutil.copy(WORDNET_LICENCE, out / "LICENSE-WordNet")
    record = {"source": "WordNet 3.0 glosses and usage examples (Debian package wordnet-base)",
              "licence": "WordNet 3.0 licence (permissive; see LICENSE-WordNet)", "seed": seed,
              "train_lines": len(train), "heldout_lines": len(held)}
    (out / "corpus.json").write_text(json.dumps(record, indent=2))
    return record
