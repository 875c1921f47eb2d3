"""Which explanation to trust: a perturbation test of attention-based token rankings.

For a masked word, each *source* ranks the context tokens by how much they matter to the masked
position: softmax attention of the last layer (head mean) and of all layers, rollout and flow
(Abnar & Zuidema 2020), norm-based weights of the last layer (Kobayashi et al. 2020) and with
residual and LayerNorm (2021), value zeroing of the last layer and its rollout (Mohebbi et al.
2023), and a seeded random ranking as the control. The top-k tokens are
hidden from attention on every layer (the hide-keys intervention) for k = 1..K, and we measure
the drop in log P(gold word). The score is the area over the perturbation curve (AOPC, Samek et
al. 2017): ``1 / (K + 1) * sum_{k=0..K} (log p_0 - log p_k)``; higher means hiding what the
source points at hurts the prediction more, i.e. the source is more faithful to the model.
Intervals: 95% percentile bootstrap over sentences. One forward pass per sentence runs all
sources and all k together (one row each). Comparisons are paired over the same sentences: every
source against the random control, and the source with the highest AOPC against each other one;
the sentence printed ("most faithful", "indistinguishable from random") is generated from those
intervals (``conclusions.verdict``), never written by hand.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..attention.flow import attention_flow, rollout
from ..bert.norms import NORM_CAPTURES, layer_source_from_cache
from ..lab import Encoded, InputError, Lab
from ..naming import SPECIAL_TOKENS
from ..sentences import masked_items, truncated_count
from .sets import Difference, mean_interval

RANKINGS = ("attention (last layer)", "attention (all layers)", "rollout", "flow", "norm (last layer)",
            "norm-residual (last layer)", "value zeroing (last layer)", "value zeroing rollout", "random")
CONTROL = "random"


@dataclass
class FaithfulnessResult:
    sources: tuple[str, ...]
    drops: np.ndarray  # (sentences, sources, K + 1): log p_0 - log p_k, k = 0..K (NaN where a source was skipped)
    model: str
    truncated: int = 0  # lines cut to SET_MAX_TOKENS

    @property
    def aopc(self) -> np.ndarray:  # (sentences, sources)
        return self.drops.mean(-1)

    def table(self, resamples: int = 1000, seed: int = 0) -> list[dict]:
        rows = []
        for s, name in enumerate(self.sources):
            values = self.aopc[:, s]
            values = values[~np.isnan(values)]
            if not len(values):
                rows.append({"source": name, "aopc": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                             "n": 0, "drop_by_k": []})
                continue
            row = mean_interval(values, resamples, seed).to_json()
            rows.append({"source": name, "aopc": row.pop("mean"), **row,
                         "drop_by_k": np.nanmean(self.drops[:, s], 0).round(4).tolist()})
        return rows

    def paired(self, a: str, b: str, resamples: int = 1000, seed: int = 0) -> Difference:
        """AOPC of ``a`` minus ``b`` on the sentences both were scored on, with its interval."""
        i, j = self.sources.index(a), self.sources.index(b)
        values = self.aopc[:, i] - self.aopc[:, j]  # (sentences,)
        return Difference(a, b, mean_interval(values[~np.isnan(values)], resamples, seed))

    def scored(self) -> list[str]:
        """Sources scored on at least one sentence, the control excluded."""
        return [s for i, s in enumerate(self.sources) if s != CONTROL and (~np.isnan(self.aopc[:, i])).any()]

    def differences(self, resamples: int = 1000, seed: int = 0) -> list[Difference]:
        """Every source minus the random control, then the top source minus each other source."""
        top = self.top_source()
        out = [self.paired(s, CONTROL, resamples, seed) for s in self.scored()]
        return out + [self.paired(top, s, resamples, seed) for s in self.scored() if s != top]

    def top_source(self) -> str:
        return max(self.scored(), key=lambda s: np.nanmean(self.aopc[:, self.sources.index(s)]))

    def conclusion(self, resamples: int = 1000, seed: int = 0) -> str:
        """Which source is most faithful, as far as the paired intervals tell: the top source is
        called most faithful only when its difference with every other source excludes 0."""
        top = self.top_source()
        against = [self.paired(top, s, resamples, seed) for s in self.scored() if s != top]
        ties = [d.b for d in against if not float(d.effect.ci_low) > 0]
        if not ties:
            return f"{top} is the most faithful: above every other source, each 95% interval of the difference excluding 0"
        return (f"no single most faithful source: {top} has the highest AOPC, but it is not above "
                f"{', '.join(ties)} (the 95% interval of each difference includes 0 or lies below it)")

    def to_json(self, resamples: int = 1000, seed: int = 0) -> dict:
        return {"model": self.model, "sources": self.table(resamples, seed),
                "differences": [d.to_json() for d in self.differences(resamples, seed)],
                "conclusion": self.conclusion(resamples, seed), "truncated_lines": self.truncated}


def rankings(lab: Lab, cache: dict, position: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """Each source's score of every token as context for ``position``: {name: (tokens,)}."""
    layers = {s: layer_source_from_cache(lab.model, cache, s, 0, n)
              for s in ("attention", "norm", "norm-residual", "value-zeroing")}
    attention = layers["attention"]  # (layers, q, k) head means
    scores = {"attention (last layer)": attention[-1, position], "attention (all layers)": attention.mean(0)[position],
              "rollout": rollout(attention)[-1, position], "norm (last layer)": layers["norm"][-1, position],
              "norm-residual (last layer)": layers["norm-residual"][-1, position],
              "value zeroing (last layer)": layers["value-zeroing"][-1, position],
              # the released demo's rollout of value zeroing: plain products, no added residual
              "value zeroing rollout": rollout(layers["value-zeroing"], residual=False)[-1, position],
              "random": np.random.default_rng(seed).random(n)}
    scores["flow"] = attention_flow(attention, rows=[position])[position]
    return scores


def logp_with_hidden(lab: Lab, enc: Encoded, position: int, gold: int, hidden: Sequence[Sequence[int]]) -> np.ndarray:
    """log P(gold) at ``position`` with nothing hidden, then with each set of keys in ``hidden``
    hidden from every query on every layer: one batched forward, (1 + len(hidden),)."""
    n = len(enc.ids)
    bias = torch.zeros((len(hidden) + 1, 1, 1, n))  # (rows, 1, 1, key): row 0 hides nothing
    for row, keys in enumerate(hidden, start=1):
        bias[row, ..., list(keys)] = torch.finfo(torch.float32).min
    batch = lab.batch_tensors([enc] * (len(hidden) + 1))
    select = torch.zeros_like(batch["input_ids"], dtype=torch.bool)
    select[:, position] = True
    out, _ = lab.run(batch, capture=(), attention_bias=bias.to(lab.device), mlm_positions=select)
    return torch.log_softmax(out.mlm_logits.float(), -1)[:, gold].cpu().numpy()


def sentence_drops(lab: Lab, enc: Encoded, position: int, gold: int, k_max: int, seed: int) -> np.ndarray:
    """(sources, K + 1) drops in log P(gold) for one masked sentence."""
    n = len(enc.ids)
    tensors = lab.batch_tensors([enc])
    _, cache = lab.run(tensors, capture=NORM_CAPTURES, compute_mlm=False)
    scores = rankings(lab, cache, position, n, seed)
    context = [i for i, t in enumerate(enc.tokens) if t not in SPECIAL_TOKENS and i != position]
    hidden = []
    for name in RANKINGS:
        order = sorted(context, key=lambda i: -float(scores[name][i]))
        hidden += [order[:k] for k in range(1, k_max + 1)]
    logp = logp_with_hidden(lab, enc, position, gold, hidden)  # (rows,)
    drops = logp[0] - logp[1:].reshape(len(RANKINGS), k_max)
    return np.concatenate([np.zeros((len(RANKINGS), 1)), drops], axis=1)


def faithfulness(lab: Lab, lines: Sequence[str], k_max: int = 5, seed: int = 0, max_sentences: int | None = 200,
                 progress: Callable[[int, int], None] | None = None) -> FaithfulnessResult:
    """AOPC of every ranking over sentences with one seeded masked whole word each."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so the faithfulness check cannot score predictions")
    items = [it for it in masked_items(lab, lines, seed, max_sentences)
             if sum(t not in SPECIAL_TOKENS for t in it[0].tokens) - 1 >= k_max]  # enough context to hide
    if not items:
        raise InputError(f"no line has a maskable word and at least {k_max} other words")
    drops = []
    for done, (enc, position, gold) in enumerate(items, start=1):
        drops.append(sentence_drops(lab, enc, position, gold, k_max, seed + done))
        if progress is not None:
            progress(done, len(items))
    return FaithfulnessResult(RANKINGS, np.stack(drops), lab.checkpoint_info().describe(), truncated_count(items))
