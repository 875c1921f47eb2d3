"""Score every head of a model against a dependency treebank (Clark et al. 2019; tree decoding
after Htut et al. 2019; see ``predictors.py`` for the exact definitions and citations).

Words are tokenized as the treebank gives them (pre-split). Subword attention becomes word
level as in the paper: attention *to* a word is the sum over its pieces, *from* a word the mean
over its pieces ([CLS]/[SEP] kept during the conversion, then dropped). The released pipeline's
default takes the first piece for "from" (``bpe_utils.make_attn_word_level`` with
``mode="first"``) although its comment says the paper used the mean; we follow the paper.

The result keeps one row per *word* (every word is an arc to its gold head, root words to 0)
with whether each head got it right, per sentence, so that every summary — per-relation
accuracy, bootstrap intervals over sentences, held-out selection, comparisons of two
checkpoints — is computed from the same additive counts (``statistics.py``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..attention import batch_head_statistics, to_word_level, word_groups
from ..bert.runtime.budget import check_time
from ..bert.sources.captured import Captured
from ..bert.sources.source_registry import get_source
from ..lab import CheckpointInfo, Encoded, InputError, Lab
from ..treebank import Sentence
from .directions import CLARK_DIRECTIONS
from .predictors import OFFSETS, offset_predictions, predicted_heads, spanning_tree_edges

DIRECTIONS = CLARK_DIRECTIONS  # the per-head predictors (``directions.py`` names them all)
TREE = "tree"  # undirected maximum spanning tree of the symmetrised map (UUAS)
ALL = "all"
ROOT = "root"


def word_attention(attention: np.ndarray, enc: Encoded) -> tuple[np.ndarray, list[str]]:
    """(layers, heads, n_tokens, n_tokens) -> (layers, heads, words, words), [CLS]/[SEP] dropped
    after the conversion."""
    groups, labels = word_groups(enc.tokens, enc.word_ids)
    words = to_word_level(attention, groups)
    keep = [i for i, g in enumerate(groups) if enc.word_ids[g[0]] is not None]
    return words[..., keep, :][..., :, keep], [labels[i] for i in keep]


@dataclass
class ArcTable:
    """One row per scored word: its sentence, relation, gold head, and which heads got it right."""

    layers: int
    heads: int
    sentence: np.ndarray  # (arcs,) index of the sentence in the scored list
    relation: np.ndarray  # (arcs,) index into ``relations``
    relations: list[str]
    is_root: np.ndarray  # (arcs,) bool: gold head 0 (never predictable by attention)
    hits: dict[str, np.ndarray]  # direction or TREE -> (arcs, layers, heads) bool
    offset_hits: np.ndarray  # (arcs, offsets) bool: Clark's offset baseline
    chain_hits: np.ndarray  # (arcs,) bool: the right-branching tree contains this (non-root) arc

    def mask(self, relation: str) -> np.ndarray:
        """Arcs of one relation; ``all`` is every word (root words included, as misses)."""
        if relation == ALL:
            return np.ones(len(self.relation), dtype=bool)
        return self.relation == self.relations.index(relation)

    def subset(self, keep: np.ndarray) -> ArcTable:
        """The rows where ``keep`` is true (e.g. the arcs of some sentences)."""
        return ArcTable(self.layers, self.heads, self.sentence[keep], self.relation[keep], self.relations,
                        self.is_root[keep], {k: v[keep] for k, v in self.hits.items()}, self.offset_hits[keep],
                        self.chain_hits[keep])

    def of_sentences(self, ids: np.ndarray) -> ArcTable:
        return self.subset(np.isin(self.sentence, ids))

    def counts(self) -> dict[str, int]:
        return {name: int((self.relation == i).sum()) for i, name in enumerate(self.relations)}


def sentence_rows(index: int, sentence: Sentence, word_attn: np.ndarray, trees: bool = True) -> dict:
    """One sentence's arc rows: for each word, its relation, and which heads found its gold head.

    ``word_attn`` is (layers, heads, words, words); what comes out is small (booleans per word and
    head), so engines that score on other machines send this, never attention.
    """
    layers, heads, n = word_attn.shape[0], word_attn.shape[1], len(sentence.words)
    gold = np.array(sentence.heads)  # (words,) 1-based, 0 = root
    root = gold == 0
    rows = {"sentence": np.full(n, index, dtype=np.int32), "relations": list(sentence.relations), "root": root,
            "offset": (offset_predictions(n) == gold[None, :]).T,
            "chain": ~root & (np.abs(np.arange(n) - (gold - 1)) == 1)}
    for direction, predicted in predicted_heads(word_attn).items():  # (layers, heads, words)
        rows[direction] = np.moveaxis(predicted == gold, -1, 0)
    if trees:
        tree = spanning_tree_edges(word_attn)  # (layers, heads, words, words)
        partner = np.where(root, 0, gold - 1)
        rows[TREE] = np.moveaxis(tree[..., np.arange(n), partner], -1, 0) & ~root[:, None, None]
    else:  # scoring without tree decoding (the benchmark's reference); UUAS then reads 0
        rows[TREE] = np.zeros((n, layers, heads), dtype=bool)
    return rows


class ArcCollector:
    """Accumulates per-sentence arc rows and builds the ArcTable once at the end."""

    def __init__(self, layers: int, heads: int, trees: bool = True) -> None:
        self.layers, self.heads, self.trees = layers, heads, trees
        self.rows: dict[str, list[np.ndarray]] = {k: [] for k in ("sentence", "relation", "root", "offset", "chain",
                                                                   *DIRECTIONS, TREE)}
        self.relation_names: list[str] = []

    def add(self, index: int, sentence: Sentence, word_attn: np.ndarray) -> None:
        """``word_attn`` is (layers, heads, words, words) of the sentence's words."""
        self.add_rows(sentence_rows(index, sentence, word_attn, self.trees))

    def add_rows(self, rows: dict) -> None:
        """Rows of ``sentence_rows`` (relation names become indices in first-seen order)."""
        names = self.relation_names
        for rel in rows["relations"]:
            if rel not in names:
                names.append(rel)
        self.rows["relation"].append(np.array([names.index(r) for r in rows["relations"]], dtype=np.int32))
        for key in ("sentence", "root", "offset", "chain", *DIRECTIONS, TREE):
            self.rows[key].append(rows[key])

    def table(self) -> ArcTable:
        def cat(key: str, shape: tuple[int, ...], dtype) -> np.ndarray:
            parts = self.rows[key]
            return np.concatenate(parts) if parts else np.zeros((0, *shape), dtype=dtype)

        lh = (self.layers, self.heads)
        return ArcTable(self.layers, self.heads, cat("sentence", (), np.int32), cat("relation", (), np.int32),
                        list(self.relation_names), cat("root", (), bool),
                        {k: cat(k, lh, bool) for k in (*DIRECTIONS, TREE)},
                        cat("offset", (len(OFFSETS),), bool), cat("chain", (), bool))


@dataclass
class TreebankScores:
    """What scoring a treebank with one checkpoint leaves: the arc table and head statistics."""

    arcs: ArcTable
    checkpoint: CheckpointInfo
    sentences_used: int
    sentences_skipped: int  # longer than the token limit
    stats_sum: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "attention"  # the weights heads were scored on (attention or a norm-based source)
    sentences_skipped_empty_words: int = 0  # had a word the tokenizer turns into no piece (see words_without_pieces)
    words_without_pieces: int = 0  # such words, over the skipped sentences

    @property
    def model(self) -> str:
        return self.checkpoint.name

    def general_stats(self) -> dict[str, np.ndarray]:
        """Per-head statistics (entropy, attention to [CLS]/[SEP]/punctuation ...), mean over sentences."""
        return {k: (v / max(self.sentences_used, 1)).astype(np.float32) for k, v in self.stats_sum.items()}


def encode_sentence(lab: Lab, sentence: Sentence) -> Encoded:
    return lab.encode_words(sentence.words)


@dataclass
class Plan:
    """Which sentences are scored, in which batches (similar lengths together), and how many were
    skipped: as too long, or for a word with no piece. Every engine runs the same batches, so
    results do not depend on the engine."""

    batches: list[list[tuple[int, Sentence, Encoded]]]  # (index in the treebank, sentence, its tokens)
    used: int
    skipped: int  # longer than the token limit
    skipped_empty_words: int = 0  # sentences with a word the tokenizer deletes
    words_without_pieces: int = 0  # those words


def words_without_pieces(enc: Encoded, n_words: int) -> int:
    """How many of a sentence's words became no word piece at all. BERT's normaliser deletes
    U+200B, soft hyphens, lone combining marks and control characters, so a FORM made only of
    them has no attention row and the sentence's gold tree cannot be scored (it would not line up
    with the attention map)."""
    return n_words - len({w for w in enc.word_ids if w is not None})


def token_limit(lab: Lab, max_length: int | None) -> int:
    """Longest sentence, in tokens, that is scored: ``max_length`` within the model's own maximum."""
    return min(max_length or lab.max_tokens, lab.max_tokens)


def unscorable(scores: TreebankScores, limit: int | None = None) -> str:
    """Why nothing in ``scores`` can be scored (no sentence kept, or no arc between two words,
    which every head's accuracy needs), or "" when something can."""
    if not scores.sentences_used:
        reasons = []
        long, empty = scores.sentences_skipped, scores.sentences_skipped_empty_words
        if long:
            reasons.append(f"{long} {'is' if long == 1 else 'are'} "
                           f"{f'longer than {limit} tokens' if limit else 'too long for the model'}")
        if empty:
            reasons.append(f"{empty} {'has' if empty == 1 else 'have'} a word the tokenizer deletes entirely "
                           f"({scores.words_without_pieces} such words: only zero-width, soft-hyphen, combining or "
                           "control characters)")
        return "no sentence could be scored" + (f": {' and '.join(reasons)}" if reasons else "")
    if not (~scores.arcs.is_root).any():
        return (f"nothing to score: the {scores.sentences_used} sentences scored have one word each, and a head "
                "is scored on arcs between two words")
    return ""


def check_scored(scores: TreebankScores, lab: Lab | None = None, max_length: int | None = None, where: str = "",
                 hint: str = "") -> None:
    """A treebank with nothing to score is an input error, not an empty table or a numpy error."""
    problem = unscorable(scores, token_limit(lab, max_length) if lab is not None else None)
    if problem:
        raise InputError(f"{where}{problem}{hint}")


def plan_batches(lab: Lab, sentences: Sequence[Sentence], batch_size: int = 32, max_length: int | None = None,
                 max_sentences: int | None = None) -> Plan:
    limit = token_limit(lab, max_length)
    chosen = list(sentences[:max_sentences] if max_sentences else sentences)
    kept, skipped, skipped_empty, empty_words = [], 0, 0, 0
    for index, s in enumerate(chosen):
        enc = encode_sentence(lab, s)  # tokenized once: the batches carry it
        missing = words_without_pieces(enc, len(s.words))
        if missing:
            skipped_empty, empty_words = skipped_empty + 1, empty_words + missing
        elif len(enc.ids) > limit:
            skipped += 1
        else:
            kept.append((index, s, enc))
    kept.sort(key=lambda item: len(item[2].ids))  # stable: equal lengths keep treebank order
    size = max(1, batch_size)
    batches = [kept[start:start + size] for start in range(0, len(kept), size)]
    return Plan(batches, len(kept), skipped, skipped_empty, empty_words)


def score_batch(lab: Lab, batch: Sequence[tuple[int, Sentence, Encoded]], source: str = "attention",
                trees: bool = True) -> tuple[list[dict], dict[str, np.ndarray]]:
    """One batch: each sentence's arc rows and the batch's summed head statistics."""
    encoded = [enc for _, _, enc in batch]
    chosen = get_source(source)
    _, cache = lab.run(lab.batch_tensors(encoded), capture=chosen.captures, compute_mlm=False)
    attention_t = lab.attention_of(cache).float()  # (batch, layers, heads, query, key)
    stats = {k: v.astype(np.float64).sum(0) for k, v in batch_head_statistics(attention_t, [e.tokens for e in encoded]).items()}
    attention = attention_t.cpu().numpy()
    rows = []
    for row, (index, sentence, enc) in enumerate(batch):
        check_time()  # a request past its time stops between sentences (bert/runtime/budget.py)
        n = len(enc.ids)
        weights = attention[row, :, :, :n, :n] if source == "attention" else \
            chosen.weights(Captured(lab.model, cache, row, n))  # (layers, heads, query, key)
        words, _ = word_attention(weights, enc)
        rows.append(sentence_rows(index, sentence, words, trees))
    return rows, stats


def collect(lab: Lab, plan: Plan, results: Iterable[tuple[list[dict], dict[str, np.ndarray]]], trees: bool,
            source: str, progress: Callable[[int, int], None] | None = None) -> TreebankScores:
    """The scores of a plan from its batches' results, taken in the plan's order."""
    collector = ArcCollector(lab.n_layers, lab.n_heads, trees=trees)
    stats_sum: dict[str, np.ndarray] = {}
    done = 0
    if progress is not None:
        progress(0, plan.used)  # the work is known: a caller's clock starts on the first batch
    for rows, stats in results:
        for r in rows:
            collector.add_rows(r)
        for k, v in stats.items():
            stats_sum[k] = stats_sum.get(k, 0) + v
        done += len(rows)
        if progress is not None:
            progress(done, plan.used)
    return TreebankScores(collector.table(), lab.checkpoint_info(), plan.used, plan.skipped, stats_sum, source,
                          plan.skipped_empty_words, plan.words_without_pieces)


def score_treebank(lab: Lab, sentences: Sequence[Sentence], batch_size: int = 32, max_length: int | None = None,
                   max_sentences: int | None = None, progress: Callable[[int, int], None] | None = None,
                   trees: bool = True, source: str = "attention") -> TreebankScores:
    """Score every head on a treebank; sentences longer than max_length tokens, and sentences with a
    word the tokenizer deletes, are skipped and counted (each separately).

    Batched with padding (similar lengths together); results equal one sentence at a time.
    ``source`` scores heads on softmax weights or on norm-based weights (Kobayashi et al. 2020).
    """
    get_source(source)  # an unknown source is refused before any work
    plan = plan_batches(lab, sentences, batch_size, max_length, max_sentences)
    results = (score_batch(lab, batch, source, trees) for batch in plan.batches)
    return collect(lab, plan, results, trees, source, progress)


def live_arcs(word_attn: np.ndarray, layer: int, head: int) -> list[tuple[int, int]]:
    """For one head: (word, most-attended other word), 0-based."""
    a = word_attn[layer, head].astype(np.float64, copy=True)
    np.fill_diagonal(a, -np.inf)
    return [(i, int(j)) for i, j in enumerate(a.argmax(-1))]


def sentence_word_attention(lab: Lab, sentence: Sentence) -> tuple[np.ndarray, list[str]]:
    """One sentence's (layers, heads, words, words) map; an InputError when a word has no piece,
    because the map would then have fewer words than the sentence's tree."""
    enc = encode_sentence(lab, sentence)
    if words_without_pieces(enc, len(sentence.words)):
        kept = {w for w in enc.word_ids if w is not None}
        dropped = [f"{i + 1} ({w!r})" for i, w in enumerate(sentence.words) if i not in kept]
        many = len(dropped) > 1
        raise InputError(f"word{'s' if many else ''} {', '.join(dropped)} of this sentence become{'' if many else 's'} "
                         "no word piece (the tokenizer deletes only zero-width, soft-hyphen, combining and control "
                         "characters), so its attention cannot be drawn against its tree; choose another sentence")
    _, cache = lab.run(lab.batch_tensors([enc]), compute_mlm=False)
    return word_attention(lab.attention_of(cache)[0].float().cpu().numpy(), enc)
