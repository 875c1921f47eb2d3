"""The English corpus the MLM and NSP heads are trained on.

- WordNet 3.0 glosses and usage examples, as Debian's ``wordnet-base`` package installs them
  (``apt-get install wordnet-base``): each synset's gloss gives one definition line and one line
  per quoted usage example; deduplicated, shuffled with a fixed seed, split into train, validation
  and held-out lines.
- Running text (optional): the *train* splits of English UD treebanks and the Brown Corpus (see
  ``running_text``), split into train, validation and held-out passages.

Files written: ``train.txt`` (WordNet lines), ``train_docs.jsonl`` (running-text passages with
their document ids), ``validation.txt`` / ``validation_docs.txt`` (set aside from the training
splits, watched during training), ``heldout.txt`` (WordNet) and ``heldout-<source>.txt`` (one
sentence per line, a blank line between passages), the sources' licences and ``corpus.json``.
Held-out files are never trained on.
"""
from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..lab import InputError
from .running_text import (
    FORMATS,
    Passage,
    n_sentences,
    origin_label,
    read_origin,
    split_passages,
    write_documents,
    write_passages_jsonl,
)

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


@dataclass
class RunningText:
    """A running-text source (a UD train file, or a Brown folder) and what to say about it."""

    path: Path
    licence: str  # e.g. "CC BY-SA 4.0"
    licence_file: Path | None = None
    origin: str = ""  # where it came from (repository and commit)
    format: str = "conllu"  # "conllu" (a UD train file) or "brown" (NLTK's Brown Corpus folder)

    def describe(self) -> str:
        what = "Brown Corpus (NLTK's tagged form)" if self.format == "brown" else f"UD {Path(self.path).name}"
        return f"{what} ({self.origin})" if self.origin else what


def read_manifest(manifest: Path) -> list[RunningText]:
    """The running-text sources a manifest names (written by ``scripts/ud_running_text.py`` or
    ``scripts/nltk_brown.py``: a JSON list of ``{"path", "licence", "licence_file", "origin",
    "format"}``, paths relative to the manifest), every one checked before anything is written."""
    if not manifest.is_file():
        raise FileNotFoundError(f"no such manifest: {manifest}")
    try:
        items = json.loads(manifest.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{manifest} is not JSON: {error}") from None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise InputError(f"{manifest}: expected a list of sources ({{\"path\", \"licence\", ...}})")
    return [manifest_entry(manifest, number, item) for number, item in enumerate(items, 1)]


def manifest_entry(manifest: Path, number: int, item: dict) -> RunningText:
    """Source ``number`` of a manifest, checked: a licence, a known format, a train split that exists."""
    base, where = manifest.parent, f"{manifest}, source {number}"
    missing = [key for key in ("path", "licence") if not item.get(key)]
    if missing:
        raise InputError(f"{where}: no {' or '.join(missing)}")
    form, path = item.get("format", "conllu"), base / item["path"]
    if form not in FORMATS:
        raise InputError(f"{where}: unknown format {form!r} (one of {', '.join(FORMATS)})")
    try:
        origin_label(path, form)
    except ValueError as error:  # a UD dev or test split
        raise InputError(f"{where}: {error}") from None
    if not path.exists():
        raise FileNotFoundError(f"{where}: {path} does not exist")
    licence_file = base / item["licence_file"] if item.get("licence_file") else None
    if licence_file is not None and not licence_file.is_file():
        raise FileNotFoundError(f"{where}: licence file {licence_file} does not exist")
    return RunningText(path, item["licence"], licence_file, item.get("origin", ""), form)


def split_origin(passages: list[Passage], heldout_sentences: int, validation_sentences: int, seed: int,
                 unit: str) -> tuple[list[Passage], list[Passage], list[Passage], str]:
    """``split_passages`` with ``unit``, or with passages where whole documents do not fit: when they
    would leave less than half of the source to train on (one long book), or take over twice the
    sentences asked for (a few very long documents). The last item is the unit used."""
    fit, check, kept = split_passages(passages, heldout_sentences, validation_sentences, seed=seed, unit=unit)
    asked = heldout_sentences + validation_sentences
    if unit == "document" and (n_sentences(fit) < n_sentences(passages) / 2
                               or n_sentences(check + kept) > 2 * asked):
        unit = "passage"
        fit, check, kept = split_passages(passages, heldout_sentences, validation_sentences, seed=seed, unit=unit)
    return fit, check, kept, unit


def build_corpus(out: Path, heldout: int = 2000, seed: int = 0, folder: Path = WORDNET_DIR,
                 running: list[RunningText] = (), heldout_sentences: int = 1000,
                 validation_sentences: int = 300, validation_lines: int = 500, heldout_unit: str = "document") -> dict:
    """Write the training, validation and held-out files, licences and corpus.json into ``out``.

    ``heldout_unit`` is how running text is held out (see ``split_passages``; ``split_origin`` says
    when a source falls back to passages); corpus.json records the unit each source used."""
    loaded = []  # every running-text source is read before anything is written
    for item in running:
        name = origin_label(Path(item.path), item.format)
        if name == "wordnet" or name in [n for n, _, _ in loaded]:
            raise ValueError(f"two running-text sources are named {name!r} ({item.path}); each needs its own name")
        loaded.append((name, item, read_origin(Path(item.path), item.format)))
    lines = read_wordnet(folder)
    random.Random(seed).shuffle(lines)
    out.mkdir(parents=True, exist_ok=True)
    held = lines[:heldout]
    validation = lines[heldout:heldout + validation_lines] if running else []
    train = lines[heldout + len(validation):]
    (out / "heldout.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    (out / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    wordnet_licence = None
    if WORDNET_LICENCE.is_file():
        shutil.copy(WORDNET_LICENCE, out / "LICENSE-WordNet")
        wordnet_licence = "LICENSE-WordNet"
    sources = [{"name": "wordnet", "source": "WordNet 3.0 glosses and usage examples (Debian package wordnet-base)",
                "licence": "WordNet 3.0 licence (permissive)", "licence_file": wordnet_licence, "train_lines": len(train),
                "validation_lines": len(validation), "heldout_lines": len(held), "heldout_file": "heldout.txt"}]
    train_passages, validation_passages = [], []
    for name, item, passages in loaded:
        total = n_sentences(passages)
        fit, check, kept, unit = split_origin(passages, min(heldout_sentences, total // 10),
                                              min(validation_sentences, total // 20), seed, heldout_unit)
        write_documents(out / f"heldout-{name}.txt", kept)
        licence_file = None
        if item.licence_file is not None and Path(item.licence_file).is_file():
            licence_file = f"LICENSE-{name}.txt"
            shutil.copy(item.licence_file, out / licence_file)
        train_passages += fit
        validation_passages += check
        sources.append({"name": name, "source": item.describe(), "licence": item.licence, "licence_file": licence_file,
                        "train_lines": n_sentences(fit), "validation_lines": n_sentences(check),
                        "heldout_lines": n_sentences(kept), "heldout_file": f"heldout-{name}.txt",
                        "heldout_passages": len(kept), "train_passages": len(fit), "heldout_unit": unit,
                        "heldout_shares_documents": bool({p.document for p in kept} & {p.document for p in fit})})
    if running:
        write_passages_jsonl(out / "train_docs.jsonl", train_passages)
        write_documents(out / "validation_docs.txt", validation_passages)
        mixed = validation + [s for p in validation_passages for s in p.sentences]
        (out / "validation.txt").write_text("\n".join(mixed) + "\n", encoding="utf-8")
    record = {"source": "; ".join(s["source"] for s in sources),
              "licence": "; ".join(f"{s['name']}: {s['licence']}" for s in sources), "seed": seed,
              "train_lines": sum(s["train_lines"] for s in sources), "heldout_lines": len(held),
              "sources": sources}
    (out / "corpus.json").write_text(json.dumps(record, indent=2))
    return record
