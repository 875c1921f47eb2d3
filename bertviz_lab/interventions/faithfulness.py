"""Which explanation to trust: a perturbation test of attention-based token rankings.

For a masked word, each *ranking* (a registered attention source read at a scope) ranks the context
tokens by how much they matter to the masked position: softmax attention of the last layer (head
mean) and of all layers, rollout and flow (Abnar & Zuidema 2020), norm-based weights of the last
layer (Kobayashi et al. 2020) and with residual and LayerNorm (2021), value zeroing of the last
layer and its rollout (Mohebbi et al. 2023), GlobEnc (Modarressi et al. 2022) and ALTI (Ferrando et
al. 2022), each aggregated over the layers as its released code does, DecompX (Modarressi et al.
2023: each token's share of the top word's logit, through every layer and the MLM head), and a
seeded random ranking as the control. The top-k tokens are hidden from attention on every layer (the
hide-keys intervention) for k = 1..K, and we measure the drop in log P(gold word). The score is the
area over the perturbation curve (AOPC, Samek et al. 2017): ``1 / (K + 1) * sum_{k=0..K} (log p_0 -
log p_k)``; higher means hiding what the ranking points at hurts the prediction more, i.e. the
ranking is more faithful to the model. Intervals: 95% percentile bootstrap over sentences. One
forward pass per sentence runs all rankings and all k together (one row each). Comparisons are
paired over the same sentences: every ranking against the random control, and the ranking with the
highest AOPC against each other one; the sentence printed ("most faithful", "indistinguishable from
random") is generated from those intervals (``conclusions.verdict``), never written by hand.

ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020, "ERASER: A Benchmark to Evaluate
Rationalized NLP Models", ACL; released code github.com/jayded/eraserbenchmark,
``rationale_benchmark/metrics.py`` ``_instances_aopc``) are reported next to it, for the model's own
top prediction ŷ at the masked position rather than the gold word, in probability (not log) units:
for each bin b in {1, 5, 10, 20, 50}% the top ceil(b x context) tokens are hidden (comprehensiveness
= p(ŷ | x) - p(ŷ | x without them)) or are the only context tokens left (sufficiency = p(ŷ | x) -
p(ŷ | them alone)); each is averaged over the bins, then over sentences. As for AOPC, a token is
removed by hiding it from attention on every layer (positions stay as they were); [CLS], [SEP] and
the masked position itself are never hidden.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from ..bert.sources import decompx
from ..bert.sources.captured import MIXING_CAPTURES, Captured
from ..bert.sources.flow import attention_flow
from ..bert.sources.source_registry import get_source
from ..engines import LOCAL, Engine, run_units
from ..lab import Encoded, InputError, Lab
from ..naming import SPECIAL_TOKENS
from ..sentences import masked_items, truncated_count
from .hiding import outputs_with_hidden
from .sets import Difference, mean_interval


@dataclass(frozen=True)
class Ranking:
    """One way of ranking the context tokens of a masked position: a registered attention source
    (``bert/sources/source_registry.py``) read at a ``scope``, or the random control. Its name is spelled from
    the registry's: ``source`` alone when the source's own aggregation is used, else ``source (scope)``."""

    source: str | None  # None: the random control
    scope: str = ""  # "last layer", "all layers", "rollout"; "" = the last layer of the source as it aggregates

    @property
    def name(self) -> str:
        if self.source is None:
            return CONTROL
        return f"{self.source} ({self.scope})" if self.scope else self.source

    @property
    def needs(self) -> str | None:
        """The source whose per-layer matrices it reads (flow and rollout rank from attention's)."""
        return "attention" if self.source in ("rollout", "flow") else None if self.source == "decompx" else self.source


CONTROL = "random"
RANKING_LIST = (Ranking("attention", "last layer"), Ranking("attention", "all layers"), Ranking("rollout"), Ranking("flow"),
                Ranking("norm", "last layer"), Ranking("norm-residual", "last layer"),
                Ranking("value-zeroing", "last layer"), Ranking("value-zeroing", "rollout"), Ranking("globenc"),
                Ranking("alti"), Ranking("decompx"), Ranking(None))
RANKINGS = tuple(r.name for r in RANKING_LIST)
_BY_NAME = {r.name: r for r in RANKING_LIST}
ERASER_BINS = (0.01, 0.05, 0.10, 0.20, 0.50)  # DeYoung et al. 2020, section 4.2


@dataclass
class FaithfulnessResult:
    rankings: tuple[str, ...]
    drops: np.ndarray  # (sentences, rankings, K + 1): log p_0 - log p_k, k = 0..K (NaN where a ranking was skipped)
    model: str
    truncated: int = 0  # lines cut to SET_MAX_TOKENS
    comprehensiveness: np.ndarray | None = None  # (sentences, rankings, bins) ERASER, probability of the top word
    sufficiency: np.ndarray | None = None  # (sentences, rankings, bins)

    @property
    def aopc(self) -> np.ndarray:  # (sentences, rankings)
        return self.drops.mean(-1)

    def _eraser(self, s: int, resamples: int, seed: int) -> dict:
        """ERASER's AOPC-style comprehensiveness and sufficiency of ranking ``s``: the mean over bins,
        with its interval over sentences (higher comprehensiveness and lower sufficiency = more faithful)."""
        out = {}
        for key, values in (("comprehensiveness", self.comprehensiveness), ("sufficiency", self.sufficiency)):
            if values is None:
                continue
            per_sentence = values[:, s].mean(-1)
            effect = mean_interval(per_sentence[~np.isnan(per_sentence)], resamples, seed).to_json()
            out.update({key: effect["mean"], f"{key}_ci_low": effect["ci_low"], f"{key}_ci_high": effect["ci_high"]})
        return out

    def table(self, resamples: int = 1000, seed: int = 0) -> list[dict]:
        rows = []
        for s, name in enumerate(self.rankings):
            values = self.aopc[:, s]
            values = values[~np.isnan(values)]
            if not len(values):
                rows.append({"ranking": name, "aopc": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                             "n": 0, "drop_by_k": []})
                continue
            row = mean_interval(values, resamples, seed).to_json()
            rows.append({"ranking": name, "aopc": row.pop("mean"), **row,
                         "drop_by_k": np.nanmean(self.drops[:, s], 0).round(4).tolist(),
                         **self._eraser(s, resamples, seed)})
        return rows

    def paired(self, a: str, b: str, resamples: int = 1000, seed: int = 0) -> Difference:
        """AOPC of ``a`` minus ``b`` on the sentences both were scored on, with its interval."""
        i, j = self.rankings.index(a), self.rankings.index(b)
        values = self.aopc[:, i] - self.aopc[:, j]  # (sentences,)
        return Difference(a, b, mean_interval(values[~np.isnan(values)], resamples, seed))

    def scored(self) -> list[str]:
        """Rankings scored on at least one sentence, the control excluded."""
        return [s for i, s in enumerate(self.rankings) if s != CONTROL and (~np.isnan(self.aopc[:, i])).any()]

    def differences(self, resamples: int = 1000, seed: int = 0) -> list[Difference]:
        """Every ranking minus the random control, then the top ranking minus each other one."""
        top = self.top_ranking()
        out = [self.paired(s, CONTROL, resamples, seed) for s in self.scored()]
        return out + [self.paired(top, s, resamples, seed) for s in self.scored() if s != top]

    def top_ranking(self) -> str:
        return max(self.scored(), key=lambda s: np.nanmean(self.aopc[:, self.rankings.index(s)]))

    def conclusion(self, resamples: int = 1000, seed: int = 0) -> str:
        """Which ranking is most faithful, as far as the paired intervals tell: the top one is
        called most faithful only when its difference with every other one excludes 0."""
        top = self.top_ranking()
        against = [self.paired(top, s, resamples, seed) for s in self.scored() if s != top]
        ties = [d.b for d in against if not float(d.effect.ci_low) > 0]
        if not ties:
            return f"{top} is the most faithful: above every other ranking, each 95% interval of the difference excluding 0"
        return (f"no single most faithful ranking: {top} has the highest AOPC, but it is not above "
                f"{', '.join(ties)} (the 95% interval of each difference includes 0 or lies below it)")

    def to_json(self, resamples: int = 1000, seed: int = 0) -> dict:
        return {"model": self.model, "rankings": self.table(resamples, seed),
                "differences": [d.to_json() for d in self.differences(resamples, seed)],
                "conclusion": self.conclusion(resamples, seed), "truncated_lines": self.truncated}


def _score(ranking: Ranking, layers: dict, position: int) -> np.ndarray:
    """A registry-backed ranking's score of every token as context for ``position``: (tokens,)."""
    if ranking.source == "flow":  # only the masked row's n max-flows, not the whole matrix
        return attention_flow(layers["attention"], rows=[position])[position]
    if ranking.source == "rollout":
        return get_source("attention").rollout(layers["attention"])[-1, position]
    matrices = layers[ranking.source]  # (layers, query, key)
    if ranking.scope == "last layer":
        return matrices[-1, position]
    if ranking.scope == "all layers":
        return matrices.mean(0)[position]
    # "rollout" scope and GlobEnc/ALTI: aggregated as their released code does (value zeroing's demo:
    # plain products with no added residual; GlobEnc's plain product; ALTI's rollout without identity)
    return get_source(ranking.source).rollout(matrices)[-1, position]


def rankings(captured: Captured, position: int, seed: int, names: Sequence[str] = RANKINGS,
             memo: dict | None = None) -> dict[str, np.ndarray]:
    """Each named ranking's score of every token as context for ``position``: {name: (tokens,)};
    only the per-layer sources the names need are computed. ``memo`` keeps what depends on the input
    alone (the per-layer matrices, DecompX's parts below the last layer) for the next masked position of it."""
    layers = {} if memo is None else memo
    chosen = [_BY_NAME[name] for name in names]
    for source in {r.needs for r in chosen} - {None} - set(layers):
        layers[source] = get_source(source).layer_matrices(captured)
    out = {}
    for ranking in chosen:
        if ranking.source is None:
            out[ranking.name] = np.random.default_rng(seed).random(captured.n)
        elif ranking.source == "decompx":  # DecompX explains the model's own top word: each token's share of its logit
            if "decompx below" not in layers:  # every layer but the last: the last one runs the read row alone
                layers["decompx below"] = decompx.decompose(captured, captured.layers - 1)[-1:]  # the layer it reads
            row = decompx.last_layer_rows(captured, [position], layers["decompx below"])  # (1, k, d_model)
            out[ranking.name] = decompx.top_word_shares(captured.model, row, 0)[1].numpy()
        else:
            out[ranking.name] = _score(ranking, layers, position)
    return out


def check_rankings(names: Sequence[str]) -> tuple[str, ...]:
    """The rankings asked for, in RANKINGS order, with the random control always included."""
    names = set(names)
    unknown = sorted(names - set(RANKINGS))
    if unknown:
        raise InputError(f"unknown ranking {', '.join(map(repr, unknown))}; choose from {', '.join(RANKINGS)}")
    return tuple(name for name in RANKINGS if name in names | {CONTROL})


def bin_size(fraction: float, context: int) -> int:
    """ERASER's top-k% of the context tokens: ceil(fraction x context), so every bin of a short
    sentence hides at least one token (the paper gives no rounding; truncating would leave the small
    bins of a 7-token context empty)."""
    return max(1, math.ceil(fraction * context))


def log_probs_with_hidden(lab: Lab, enc: Encoded, position: int, hidden: Sequence[Sequence[int]]) -> torch.Tensor:
    """log P(every word) at ``position`` with nothing hidden (row 0), then with each set of keys in
    ``hidden`` hidden from every query on every layer: batched forwards (``hiding.py``), (1 + len(hidden), vocab)."""
    return outputs_with_hidden(lab, enc, hidden, lambda out: torch.log_softmax(out.mlm_logits.float(), -1), position)


def logp_with_hidden(lab: Lab, enc: Encoded, position: int, gold: int, hidden: Sequence[Sequence[int]]) -> np.ndarray:
    """log P(gold) at ``position`` with nothing hidden, then with each set of keys in ``hidden``
    hidden: (1 + len(hidden),)."""
    return log_probs_with_hidden(lab, enc, position, hidden)[:, gold].numpy()


@dataclass
class SentenceScores:
    drops: np.ndarray  # (rankings, K + 1): log P(gold) with nothing hidden minus with the top k hidden
    comprehensiveness: np.ndarray  # (rankings, bins): P(top word) minus P(top word) with the top bin hidden
    sufficiency: np.ndarray  # (rankings, bins): P(top word) minus P(top word) with only the top bin kept


@dataclass(frozen=True)
class MaskedSentence:
    """One input with one masked position and the word that belongs there."""

    enc: Encoded
    position: int
    gold: int


@dataclass(frozen=True)
class FaithfulnessSettings:
    """How the check runs: hide the top 1..``k_max`` tokens of each ranking (``rankings``; the random
    control always runs, seeded by ``seed``) on at most ``max_sentences`` lines."""

    k_max: int = 5
    seed: int = 0
    max_sentences: int | None = 200
    rankings: tuple[str, ...] = RANKINGS


def sentence_scores(lab: Lab, item: MaskedSentence, k_max: int, seed: int, names: Sequence[str] = RANKINGS,
                    scores: dict[str, np.ndarray] | None = None) -> SentenceScores:
    """Every perturbation of one masked sentence in one batched forward (identical hidden sets share
    a row): the top 1..K tokens of each ranking hidden (log P(gold), the AOPC curve), and ERASER's
    bins of the top prediction: the top ceil(b x context) tokens hidden (comprehensiveness) or all
    other context tokens hidden (sufficiency)."""
    enc, position, gold, bins = item.enc, item.position, item.gold, ERASER_BINS
    n = len(enc.ids)
    if scores is None:  # the rankings, unless the caller computed them from its own capture
        _, cache = lab.run(lab.batch_tensors([enc]), capture=MIXING_CAPTURES, compute_mlm=False)
        scores = rankings(Captured(lab.model, cache, 0, n), position, seed, names)
    context = [i for i, t in enumerate(enc.tokens) if t not in SPECIAL_TOKENS and i != position]
    rows: dict[tuple[int, ...], int] = {}

    def row_of(keys) -> int:
        return rows.setdefault(tuple(sorted(keys)), len(rows) + 1)

    plan = []  # per ranking: (AOPC rows, comprehensiveness rows, sufficiency rows)
    for name in names:
        order = sorted(context, key=lambda i: -float(scores[name][i]))
        sizes = [bin_size(b, len(context)) for b in bins]
        plan.append(([row_of(order[:k]) for k in range(1, k_max + 1)], [row_of(order[:c]) for c in sizes],
                     [row_of(order[c:]) for c in sizes]))
    logp = log_probs_with_hidden(lab, enc, position, list(rows))  # (1 + unique sets, vocab)
    gold_logp = logp[:, gold].numpy()
    top = int(logp[0].argmax())
    top_p = logp[:, top].exp().numpy()
    drops = np.array([[0.0] + [gold_logp[0] - gold_logp[r] for r in aopc] for aopc, _, _ in plan])
    comprehensiveness = np.array([[top_p[0] - top_p[r] for r in comp] for _, comp, _ in plan])
    sufficiency = np.array([[top_p[0] - top_p[r] for r in suff] for _, _, suff in plan])
    return SentenceScores(drops, comprehensiveness, sufficiency)


def sentence_unit(lab: Lab, unit: tuple[MaskedSentence, int], k_max: int, names: Sequence[str]) -> SentenceScores:
    """``sentence_scores`` of one (masked sentence, its random control's seed): a unit of work for
    ``engines.run_units``."""
    item, seed = unit
    return sentence_scores(lab, item, k_max, seed, names)


def scored_items(lab: Lab, lines: Sequence[str], settings: FaithfulnessSettings) -> list:
    """The (enc, masked position, gold id) the check scores: one seeded masked whole word per line, on the lines
    with at least ``k_max`` other words to hide."""
    return [it for it in masked_items(lab, lines, settings.seed, settings.max_sentences)
            if sum(t not in SPECIAL_TOKENS for t in it[0].tokens) - 1 >= settings.k_max]  # enough context to hide


def faithfulness(lab: Lab, lines: Sequence[str], settings: FaithfulnessSettings | None = None,
                 progress: Callable[[int, int], None] | None = None, engine: Engine = LOCAL) -> FaithfulnessResult:
    """AOPC, comprehensiveness and sufficiency of every ranking over sentences with one seeded
    masked whole word each. ``progress(done, total)`` is told the sentences scored of those kept
    (0 before the first). Each sentence is a unit on ``engine`` (local or Ray) with its seed inside it,
    so both engines return the same per-sentence records and the intervals are computed once from them."""
    settings = settings or FaithfulnessSettings()
    names, k_max, seed = check_rankings(settings.rankings), settings.k_max, settings.seed
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so the faithfulness check cannot score predictions")
    items = scored_items(lab, lines, settings)
    if not items:
        raise InputError(f"no line has a maskable word and at least {k_max} other words")
    units = [(MaskedSentence(enc, position, gold), seed + done)
             for done, (enc, position, gold) in enumerate(items, start=1)]
    scored = run_units(lab, partial(sentence_unit, k_max=k_max, names=names), units, engine, progress)
    return FaithfulnessResult(names, np.stack([s.drops for s in scored]), lab.checkpoint_info().describe(),
                              truncated_count(items), np.stack([s.comprehensiveness for s in scored]),
                              np.stack([s.sufficiency for s in scored]))
