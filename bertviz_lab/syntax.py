"""Which heads track syntax (Clark, Khandelwal, Levy & Manning 2019, "What Does BERT Look At?").

Treebanks are read with the ``conllu`` library; words are tokenized as the treebank gives them
(pre-split), subword attention is converted to word level (to a word: sum over its pieces; from
a word: mean over its pieces; [CLS]/[SEP] kept during the conversion and dropped when scoring),
and every head is scored per relation and direction: the share of relation instances whose
most-attended word (never the word itself) is the gold partner. Each relation is compared with
the best fixed-offset baseline. Heads are reported 1-based as layer-head, as in the paper.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .analysis import Encoded, Lab
from .metrics import batch_head_statistics, to_word_level, word_groups

DIRECTIONS = ("dep->head", "head->dep")
SAMPLE_TREEBANK = Path(__file__).resolve().parent.parent / "assets" / "sample_treebank.conllu"
ALL = "all"


class TreebankError(ValueError):
    """Malformed CoNLL-U; the message names the file and line."""


@dataclass
class Sentence:
    words: list[str]
    heads: list[int]  # 1-based head word of each word, 0 = root
    relations: list[str]
    upos: list[str] = field(default_factory=list)
    text: str = ""
    sent_id: str = ""
    line: int = 0


def _blocks(text: str) -> Iterable[tuple[int, list[str]]]:
    """Sentence blocks with the 1-based line number where each starts."""
    block: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not block:
                start = number
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def read_conllu(path: str | Path, full_relations: bool = False) -> list[Sentence]:
    """Read a CoNLL-U file strictly: multiword ranges and empty nodes are skipped; anything
    malformed is an error naming the file and line, and nothing is returned."""
    import conllu

    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TreebankError(f"{path}: cannot read: {error}") from None
    sentences: list[Sentence] = []
    for start, block in _blocks(raw):
        if all(line.startswith("#") for line in block):
            continue  # file-level comments
        for offset, line in enumerate(block):
            if not line.startswith("#") and len(line.split("\t")) != 10:
                raise TreebankError(f"{path}:{start + offset}: expected 10 tab-separated fields, "
                                    f"found {len(line.split(chr(9)))}")
        try:
            parsed = conllu.parse("\n".join(block) + "\n\n")
        except Exception as error:  # conllu's ParseException and friends
            raise TreebankError(f"{path}:{start}: {error}") from None
        for tokens in parsed:
            words, heads, rels, upos = [], [], [], []
            for tok in tokens:
                if not isinstance(tok["id"], int):
                    continue  # multiword range (2-3) or empty node (4.1)
                words.append(tok["form"])
                heads.append(tok["head"])
                rel = tok["deprel"] or "_"
                rels.append(rel if full_relations else rel.split(":")[0])
                upos.append(tok["upos"] or "_")
            if not words:
                raise TreebankError(f"{path}:{start}: sentence without words")
            for i, h in enumerate(heads, start=1):
                if h is None or not 0 <= h <= len(words) or h == i:
                    raise TreebankError(f"{path}:{start}: word {i} ({words[i - 1]!r}) has invalid head {h!r}")
            if heads.count(0) != 1:
                raise TreebankError(f"{path}:{start}: sentence must have exactly one root (has {heads.count(0)})")
            sentences.append(Sentence(words, heads, rels, upos, tokens.metadata.get("text", " ".join(words)),
                                      tokens.metadata.get("sent_id", ""), start))
    if not sentences:
        raise TreebankError(f"{path}: no sentences found")
    return sentences


def best_words(word_attn: np.ndarray) -> np.ndarray:
    """Each word's most-attended other word (a word never predicts itself): (layers, heads, words)."""
    a = word_attn.astype(np.float64, copy=True)
    idx = np.arange(a.shape[-1])
    a[..., idx, idx] = -np.inf
    return a.argmax(-1)


def word_attention(attention: np.ndarray, enc: Encoded) -> tuple[np.ndarray, list[str]]:
    """(layers, heads, n_tokens, n_tokens) -> (layers, heads, words, words), [CLS]/[SEP] dropped
    after the conversion."""
    groups, labels = word_groups(enc.tokens, enc.word_ids)
    words = to_word_level(attention, groups)
    keep = [i for i, g in enumerate(groups) if enc.word_ids[g[0]] is not None]
    return words[..., keep, :][..., :, keep], [labels[i] for i in keep]


@dataclass
class Counts:
    """Correct/total per (relation, direction) for every head, plus offset baselines."""

    layers: int
    heads: int
    correct: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    total: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    offsets: dict[tuple[str, str], dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    stats_sum: dict[str, np.ndarray] = field(default_factory=dict)
    sentences: int = 0
    skipped: int = 0

    def add(self, word_attn: np.ndarray, sentence: Sentence) -> None:
        """Score one sentence: word_attn is (layers, heads, words, words)."""
        self.add_best([best_words(word_attn)], [sentence])

    def add_best(self, bests: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> None:
        """Score a batch of sentences from each word's most-attended word, (layers, heads, words)."""
        rels, dep_hits, head_hits, offsets = [], [], [], []
        for best, sentence in zip(bests, sentences):
            deps = np.array([d for d, h in enumerate(sentence.heads) if h > 0], dtype=np.int64)
            if not len(deps):
                continue
            heads = np.array([sentence.heads[d] - 1 for d in deps], dtype=np.int64)
            dep_hits.append(best[..., deps] == heads)  # (layers, heads, arcs)
            head_hits.append(best[..., heads] == deps)
            rels.extend(sentence.relations[d] for d in deps)
            offsets.append(heads - deps)
        if not rels:
            return
        names, rel_index = np.unique(np.array(rels), return_inverse=True)
        onehot = np.zeros((len(rels), len(names)), dtype=np.int64)  # (arcs, relations)
        onehot[np.arange(len(rels)), rel_index] = 1
        off = np.concatenate(offsets)
        for direction, hits, signed in (("dep->head", dep_hits, off), ("head->dep", head_hits, -off)):
            stacked = np.concatenate(hits, axis=-1).astype(np.int64)  # (layers, heads, arcs)
            per_relation = np.einsum("lha,ar->rlh", stacked, onehot)  # (relations, layers, heads)
            for r, name in enumerate([*names.tolist(), ALL]):
                key = (name, direction)
                if key not in self.correct:
                    self.correct[key] = np.zeros((self.layers, self.heads), dtype=np.int64)
                if name == ALL:
                    self.correct[key] += stacked.sum(-1)
                    self.total[key] += len(rels)
                    chosen = signed
                else:
                    self.correct[key] += per_relation[r]
                    self.total[key] += int(onehot[:, r].sum())
                    chosen = signed[rel_index == r]
                values, counts = np.unique(chosen, return_counts=True)
                for value, count in zip(values.tolist(), counts.tolist()):
                    self.offsets[key][value] += count

    def add_stats(self, stats: dict[str, np.ndarray]) -> None:
        self.add_stats_batch({k: v[None] for k, v in stats.items()})

    def add_stats_batch(self, stats: dict[str, np.ndarray]) -> None:
        """Per-sentence statistics, each (sentences, layers, heads); summed for the treebank mean."""
        for k, v in stats.items():
            self.stats_sum[k] = self.stats_sum.get(k, 0) + v.astype(np.float64).sum(0)
        self.sentences += len(next(iter(stats.values())))

    def head_scores(self) -> pd.DataFrame:
        rows = []
        for (rel, direction), correct in sorted(self.correct.items(), key=lambda kv: (kv[0][0] != ALL, kv[0])):
            total = self.total[(rel, direction)]
            for l in range(self.layers):
                for h in range(self.heads):
                    c = int(correct[l, h])
                    rows.append((l + 1, h + 1, rel, direction, c, total, c / total if total else 0.0))
        return pd.DataFrame(rows, columns=["layer", "head", "relation", "direction", "correct", "total", "accuracy"])

    def baseline(self, rel: str, direction: str) -> tuple[int, float]:
        hist = self.offsets[(rel, direction)]
        total = self.total[(rel, direction)]
        if not hist or not total:
            return 0, 0.0
        offset, count = max(hist.items(), key=lambda kv: (kv[1], -abs(kv[0])))
        return offset, count / total

    def best_heads(self) -> pd.DataFrame:
        rows = []
        relations = sorted({rel for rel, _ in self.correct}, key=lambda r: (r != ALL, -self.total[(r, DIRECTIONS[0])], r))
        for rel in relations:
            best = None
            for direction in DIRECTIONS:
                correct = self.correct[(rel, direction)]
                total = self.total[(rel, direction)]
                l, h = np.unravel_index(int(np.argmax(correct)), correct.shape)
                acc = correct[l, h] / total
                if best is None or acc > best[3]:
                    offset, base = self.baseline(rel, direction)
                    best = (rel, f"{l + 1}-{h + 1}", direction, acc, offset, base, total)
            rows.append(best)
        return pd.DataFrame(rows, columns=["relation", "best_head", "direction", "accuracy", "baseline_offset",
                                           "baseline_accuracy", "count"])

    def general_stats(self) -> dict[str, np.ndarray]:
        return {k: (v / max(self.sentences, 1)).astype(np.float32) for k, v in self.stats_sum.items()}


@dataclass
class ProbeResult:
    counts: Counts
    sentences_used: int
    sentences_skipped: int
    model: str

    @cached_property
    def head_scores(self) -> pd.DataFrame:
        return self.counts.head_scores()

    @cached_property
    def best_heads(self) -> pd.DataFrame:
        return self.counts.best_heads()


def encode_sentence(lab: Lab, sentence: Sentence) -> Encoded:
    return lab.encode_words(sentence.words)


def probe_treebank(lab: Lab, sentences: Sequence[Sentence], batch_size: int = 32, max_length: int | None = None,
                   max_sentences: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> ProbeResult:
    """Score every head on a treebank; sentences longer than max_length tokens are skipped and counted."""
    limit = min(max_length or lab.max_tokens, lab.max_tokens)
    chosen = list(sentences[:max_sentences] if max_sentences else sentences)
    encoded, skipped = [], 0
    for s in chosen:
        enc = encode_sentence(lab, s)
        if len(enc.ids) > limit:
            skipped += 1
            continue
        encoded.append((s, enc))
    counts = Counts(lab.n_layers, lab.n_heads)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][1].ids))  # similar lengths per batch
    done = 0
    for start in range(0, len(order), max(1, batch_size)):
        batch = [encoded[i] for i in order[start:start + batch_size]]
        tensors = lab.batch_tensors([e for _, e in batch])
        _, cache = lab.run(tensors, compute_mlm=False)
        attention_t = lab.attention_of(cache).float()  # (batch, layers, heads, query, key)
        counts.add_stats_batch(batch_head_statistics(attention_t, [e.tokens for _, e in batch]))
        attention = attention_t.cpu().numpy()
        bests = []
        for row, (sentence, enc) in enumerate(batch):
            n = len(enc.ids)
            words, _ = word_attention(attention[row, :, :, :n, :n], enc)
            bests.append(best_words(words))
        counts.add_best(bests, [s for s, _ in batch])
        done += len(batch)
        if progress is not None:
            progress(done, len(encoded))
    counts.skipped = skipped
    return ProbeResult(counts, len(encoded), skipped, lab.name)


def write_outputs(result: ProbeResult, out: Path, title: str = "bertviz-lab syntax probe") -> dict[str, Path]:
    """head_scores.csv, best_heads.csv and an offline report.html, written atomically."""
    from .syntax_report import report_html

    out.mkdir(parents=True, exist_ok=True)
    files = {"head_scores": out / "head_scores.csv", "best_heads": out / "best_heads.csv", "report": out / "report.html"}
    contents = {
        "head_scores": result.head_scores.to_csv(index=False, float_format="%.6f"),
        "best_heads": result.best_heads.to_csv(index=False, float_format="%.6f"),
        "report": report_html(result, title),
    }
    temps = {}
    for key, path in files.items():
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(contents[key], encoding="utf-8")
        temps[key] = tmp
    for key, tmp in temps.items():
        tmp.replace(files[key])
    return files


def live_arcs(word_attn: np.ndarray, layer: int, head: int) -> list[tuple[int, int]]:
    """For one head: (word, most-attended other word), 0-based."""
    a = word_attn[layer, head].astype(np.float64, copy=True)
    np.fill_diagonal(a, -np.inf)
    return [(i, int(j)) for i, j in enumerate(a.argmax(-1))]


def sentence_word_attention(lab: Lab, sentence: Sentence) -> tuple[np.ndarray, list[str]]:
    enc = encode_sentence(lab, sentence)
    tensors = lab.batch_tensors([enc])
    _, cache = lab.run(tensors, compute_mlm=False)
    a = lab.attention_of(cache)[0].float().cpu().numpy()
    return word_attention(a, enc)


__all__ = ["ALL", "Counts", "DIRECTIONS", "ProbeResult", "Sentence", "TreebankError", "live_arcs", "probe_treebank",
           "read_conllu", "sentence_word_attention", "torch", "write_outputs"]
