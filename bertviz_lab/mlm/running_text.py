"""Running English text for the MLM and next-sentence heads, read as documents of consecutive
sentences: the *train* splits of Universal Dependencies treebanks, and the Brown Corpus (Francis &
Kucera 1964/1979; 500 samples of edited American English in 15 genres) in NLTK's tagged form.

Why documents: next-sentence prediction needs a sentence's true successor (IsNext) and a sentence
from another document (NotNext), and a held-out slice must be whole documents, so that no
sentence, name or topic of it is trained on. Long UD documents (a LinES novel, some GUM texts) are
cut into training passages of at most ``PASSAGE`` sentences; a passage remembers its document, so
NotNext never draws from the same document and a held-out document leaves training whole (the
shipped head's corpus was cut with ``unit="passage"``, one passage of a document held out and the
rest trained on). Brown samples are kept whole. Only UD train splits are accepted: dev/test files
are refused by name, as UD's test splits are reserved for evaluation.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..lab import InputError

PASSAGE = 40  # sentences per passage at most


@dataclass
class Passage:
    origin: str  # where the text comes from: "ewt", "gum", "brown", ...
    document: str  # the treebank's newdoc id (NotNext pairs never share it)
    sentences: list[str]


def n_sentences(passages: list[Passage]) -> int:
    return sum(len(p.sentences) for p in passages)


def write_passages_jsonl(path: Path, passages: list[Passage]) -> None:
    """Training passages with their document ids (which NotNext pairs must not share)."""
    with open(path, "w", encoding="utf-8") as handle:
        for p in passages:
            handle.write(json.dumps({"origin": p.origin, "document": p.document, "sentences": p.sentences}) + "\n")


def read_passages_jsonl(path: Path) -> list[Passage]:
    """The passages of a file ``write_passages_jsonl`` wrote; one of another shape is one sentence saying so."""
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    missing = next((key for row in rows for key in ("origin", "document", "sentences") if key not in row), None)
    if missing is not None:
        raise InputError(f"{path}: a passage has no {missing!r} (a file of another format or release): rebuild it "
                         "with build-corpus")
    return [Passage(row["origin"], row["document"], row["sentences"]) for row in rows if row["sentences"]]


FORMATS = ("conllu", "brown")


def origin_name(path: Path) -> str:
    """``en_ewt-ud-train.conllu`` -> ``ewt``."""
    match = re.match(r"[a-z]+_([a-z0-9]+)-ud-train\.conllu$", path.name)
    if not match:
        raise ValueError(f"{path.name}: only UD *train* files (xx_name-ud-train.conllu) may be trained on; "
                         "dev and test splits are reserved for evaluation")
    return match.group(1)


def read_passages(path: Path, passage: int = PASSAGE) -> list[Passage]:
    """The file's documents (``# newdoc``), each cut into passages of consecutive sentences."""
    import conllu

    origin = origin_name(path)
    documents: list[tuple[str, list[str]]] = []
    with open(path, encoding="utf-8") as handle:
        for sentence in conllu.parse_incr(handle):
            meta = sentence.metadata
            if "newdoc id" in meta or "newdoc" in meta or not documents:
                documents.append((meta.get("newdoc id") or f"{origin}-doc{len(documents) + 1}", []))
            text = re.sub(r"\s+", " ", meta.get("text", "")).strip()
            if text:
                documents[-1][1].append(text)
    return [Passage(origin, doc, sents[i:i + passage])
            for doc, sents in documents for i in range(0, len(sents), passage)]


HELDOUT_UNITS = ("document", "passage")


def split_passages(passages: list[Passage], heldout_sentences: int, validation_sentences: int,
                   seed: int = 0, unit: str = "document") -> tuple[list[Passage], list[Passage], list[Passage]]:
    """(train, validation, held-out), drawn in a seeded order until each slice has at least the asked
    number of sentences; the held-out slice is drawn first.

    ``unit="document"``: a held-out or validation document leaves training whole, so no sentence,
    name or topic of it is ever trained on. ``unit="passage"`` (how the shipped head's corpus was
    cut): a slice takes one passage of a document and the document's other passages stay in
    training. Either way each slice comes back as one passage per document (its passages joined in
    order), so ``eval-nsp`` never draws a NotNext sentence from the same document."""
    if unit not in HELDOUT_UNITS:
        raise ValueError(f"unknown held-out unit {unit!r}: use one of {', '.join(HELDOUT_UNITS)}")
    members: dict[str, list[int]] = {}
    for i in range(len(passages)):
        members.setdefault(passages[i].document, []).append(i)
    # Whole documents are drawn one ticket each (not one per passage, which would favour long ones);
    # where every document is one passage (Brown) both units draw the same slices.
    order = [m[0] for m in members.values()] if unit == "document" else list(range(len(passages)))
    random.Random(seed).shuffle(order)
    chosen: list[list[int]] = [[], []]
    used: set[int] = set()
    for slot, wanted in enumerate((heldout_sentences, validation_sentences)):
        documents: set[str] = set()
        have = 0
        for i in order:
            if have >= wanted:
                break
            if i in used or passages[i].document in documents:
                continue
            taken = members[passages[i].document] if unit == "document" else [i]  # never partly used before
            chosen[slot] += taken
            used.update(taken)
            have += n_sentences([passages[j] for j in taken])
            documents.add(passages[i].document)
    train = [p for i, p in enumerate(passages) if i not in used]
    held, validation = (join_documents([passages[i] for i in sorted(c)]) for c in chosen)
    return train, validation, held


def join_documents(passages: list[Passage]) -> list[Passage]:
    """One passage per document: the document's passages (given in order) joined."""
    joined: dict[tuple[str, str], Passage] = {}
    for p in passages:
        key = (p.origin, p.document)
        if key in joined:
            joined[key].sentences.extend(p.sentences)
        else:
            joined[key] = Passage(p.origin, p.document, list(p.sentences))
    return list(joined.values())


def write_documents(path: Path, passages: list[Passage]) -> None:
    """One sentence per line, a blank line between passages (what ``eval-nsp`` reads)."""
    path.write_text("\n\n".join("\n".join(p.sentences) for p in passages) + "\n", encoding="utf-8")


def read_documents(path: Path) -> list[list[str]]:
    """Blank-line-separated documents of one sentence per line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start} cannot be decoded)") from None
    docs = [[ln.strip() for ln in block.splitlines() if ln.strip()] for block in re.split(r"\n\s*\n", text)]
    return [d for d in docs if d]


def brown_sentence(tagged: list[tuple[str, str]], detokenize) -> str | None:
    """One Brown sentence (``(word, TAG)`` pairs) as running text, or None for what is not a sentence.

    Why each rule, from the corpus itself: headlines and captions are tagged ``-HL`` on every word
    (dropped: they are not running text and would make false IsNext pairs); sentence-final ``;``,
    ``?`` and ``!`` are often given twice (``?/. ?/.``), and a full stop after an abbreviation
    (``Jr./np ./.``) is given as a token of its own (both collapsed); a dash opens dialogue lines
    (``-- Come on``, stripped); lone brackets, quotes and list numbers have no word (dropped)."""
    words = [w for w, _ in tagged]
    wordy = [t for w, t in tagged if any(c.isalpha() for c in w)]
    if not wordy or all(t.lower().endswith("-hl") for t in wordy):
        return None
    kept: list[str] = []
    for word in words:
        if kept and word == kept[-1] and word in {";", "?", "!", "."}:
            continue
        if word == "." and kept and len(kept[-1]) > 1 and kept[-1].endswith("."):
            continue
        kept.append(word)
    while kept and kept[0] == "--":
        kept.pop(0)
    text = re.sub(r"\s+", " ", detokenize(kept)).strip()
    return text if any(c.isalpha() for c in text) else None


def read_brown_passages(folder: Path, passage: int | None = None) -> list[Passage]:
    """The Brown Corpus as NLTK distributes it (``brown.zip`` of nltk_data: files ``ca01`` ...
    ``cr09`` of ``word/tag`` tokens, ``cats.txt``): each of the 500 samples is a document, its
    sentences cleaned (``brown_sentence``) and detokenized back to running text (the quotes `` and
    '' become ") by NLTK's Treebank detokenizer. NLTK's own reader parses the files; the folder is
    added to ``nltk.data.path`` because NLTK >= 3.9 refuses corpus roots outside it.

    Why whole samples by default: a sample is ~2,000 words (~100 sentences), so a held-out passage
    is a whole document, and no name or topic of a held-out sample is seen in training."""
    try:
        import nltk
        from nltk.corpus.reader import CategorizedTaggedCorpusReader
        from nltk.tokenize.treebank import TreebankWordDetokenizer
    except ImportError:
        raise ImportError("reading the Brown Corpus needs NLTK: pip install nltk (or bertviz-lab[corpus])") from None

    folder = Path(folder).resolve()
    if not (folder / "cats.txt").is_file():
        raise FileNotFoundError(f"{folder}: not the Brown Corpus in NLTK's form (no cats.txt); "
                                "unzip packages/corpora/brown.zip of nltk_data")
    if str(folder) not in nltk.data.path:
        nltk.data.path.append(str(folder))
    reader = CategorizedTaggedCorpusReader(str(folder), r"c[a-r]\d\d", cat_file="cats.txt", encoding="ascii")
    detokenize = TreebankWordDetokenizer().detokenize
    passages = []
    for fileid in reader.fileids():
        sentences = [text for text in (brown_sentence(tagged, detokenize) for tagged in reader.tagged_sents(fileid))
                     if text]
        size = passage or max(1, len(sentences))
        passages += [Passage("brown", f"brown-{fileid}", sentences[i:i + size]) for i in range(0, len(sentences), size)]
    return passages


def check_format(form: str) -> None:
    if form not in FORMATS:
        raise ValueError(f"unknown running-text format {form!r}: one of {', '.join(FORMATS)}")


def origin_label(path: Path, form: str = "conllu") -> str:
    """The origin name a running text's passages carry ("ewt", "brown"); refuses UD dev and test files."""
    check_format(form)
    return "brown" if form == "brown" else origin_name(Path(path))


def read_origin(path: Path, form: str = "conllu") -> list[Passage]:
    """Passages of one running-text origin: a UD train file (``conllu``) or a Brown folder."""
    check_format(form)
    return read_brown_passages(Path(path)) if form == "brown" else read_passages(Path(path))  # Brown: whole samples
