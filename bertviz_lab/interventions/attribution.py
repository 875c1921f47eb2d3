"""Why did the model predict that word? Signed token attributions of a masked-word prediction and
how well each attention-based source agrees with them, on this input.

For the model's top prediction w at a masked position, per context token j:

- **erasure** (the reference): log P(w) minus log P(w) when j is hidden from attention on every
  layer (the hide-keys intervention; one batched forward, a row per token);
- **DecompX** (Modarressi et al. 2023; ``bert/decompx.py``): the token's share of w's logit, its
  decomposition carried through every layer and the MLM head;
- **gradient x input** and **integrated gradients** (Sundararajan et al. 2017; Captum's
  ``LayerGradientXActivation`` / ``LayerIntegratedGradients`` on the embedding layer's output,
  summed over its dimensions; IG from a baseline that replaces every word token by [PAD], 32 steps);
- the agreement of each attention-based ranking (those of the faithfulness check) with erasure as
  Spearman's rho over the context tokens.

Signed: positive means the token raised P(w). Special tokens and the masked position itself get no
score (they cannot be hidden without changing what is asked).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.stats import spearmanr

from ..bert.captured import MIXING_CAPTURES, Captured
from ..lab import Analysis, InputError, Lab
from ..naming import SPECIAL_TOKENS
from .faithfulness import RANKINGS, MaskedSentence, logp_with_hidden, rankings, sentence_scores

IG_STEPS = 32


@dataclass
class Attribution:
    position: int
    target: str  # the predicted word explained
    context: list[int]  # the scored token positions
    scores: dict[str, list[float]]  # method -> one signed score per context position
    agreement: dict[str, float] = field(default_factory=dict)  # ranking -> Spearman rho with erasure
    # ranking -> AOPC (log P of the target, top 1..K hidden), ERASER comprehensiveness and sufficiency
    # (probability of the target, mean over bins) on this input alone
    perturbation: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"position": self.position, "target": self.target, "context": self.context,
                "scores": self.scores, "spearman_with_erasure": self.agreement,
                "faithfulness_on_this_input": self.perturbation}


def context_positions(analysis: Analysis, position: int) -> list[int]:
    return [i for i, t in enumerate(analysis.tokens) if t not in SPECIAL_TOKENS and i != position]


def erasure(lab: Lab, analysis: Analysis, position: int, target: int, context: Sequence[int]) -> np.ndarray:
    """log P(target) with everything minus log P(target) with token j hidden from every query on
    every layer, for each j in ``context``: (len(context),)."""
    logp = logp_with_hidden(lab, analysis.encoded(), position, target, [[j] for j in context])  # (1 + context,)
    return logp[0] - logp[1:]


def _log_prob_of(lab: Lab, position: int, target: int):
    """forward(input_ids, token_type_ids, attention_mask) -> log P(target) at ``position`` per row."""
    def forward(input_ids, token_type_ids, attention_mask):
        select = torch.zeros_like(input_ids, dtype=torch.bool)
        select[:, position] = True
        out = lab.model(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                        mlm_positions=select)
        return torch.log_softmax(out.mlm_logits.float(), -1)[:, target]  # (rows,)
    return forward


def gradient_methods(lab: Lab, analysis: Analysis, position: int, target: int,
                     context: Sequence[int], steps: int = IG_STEPS) -> dict[str, np.ndarray]:
    """Gradient x input and integrated gradients per context token, from Captum."""
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    tensors = lab.batch_tensors([analysis.encoded()])
    ids, segments, mask = tensors["input_ids"], tensors["token_type_ids"], tensors["attention_mask"]
    forward = _log_prob_of(lab, position, target)
    layer = lab.model.bert.embeddings
    baseline = ids.clone()
    words = torch.tensor([t not in SPECIAL_TOKENS and i != lab.mask_id for t, i in zip(analysis.tokens, analysis.token_ids)],
                         device=ids.device)
    baseline[0, words] = lab.pad_id  # every word token -> [PAD]; [CLS], [SEP] and [MASK] kept
    with torch.enable_grad():
        gxi = LayerGradientXActivation(forward, layer).attribute(ids, additional_forward_args=(segments, mask))
        ig = LayerIntegratedGradients(forward, layer).attribute(
            ids, baselines=baseline, additional_forward_args=(segments, mask), n_steps=steps,
            internal_batch_size=steps)
    pick = list(context)
    return {"gradient x input": gxi[0].sum(-1).detach().float().cpu().numpy()[pick],
            "integrated gradients": ig[0].sum(-1).detach().float().cpu().numpy()[pick]}


def rank_agreement(values: Sequence[float], reference: Sequence[float]) -> float:
    """Spearman's rho of two scorings of the same tokens (NaN below three tokens or for a constant one)."""
    if len(reference) < 3:
        return float("nan")
    rho = spearmanr(values, reference).statistic
    return float(rho) if np.isfinite(rho) else float("nan")


def ranking_agreement(scores: dict[str, np.ndarray], reference: np.ndarray, context: Sequence[int]) -> dict[str, float]:
    """Spearman rho of each faithfulness-check ranking (attention, rollout, flow, norms, value
    zeroing, GlobEnc, ALTI, DecompX) with the erasure scores, over the context tokens."""
    return {name: rank_agreement(np.asarray(scores[name])[list(context)], reference) for name in RANKINGS}


def perturbation_scores(lab: Lab, analysis: Analysis, position: int, target: int, scores: dict[str, np.ndarray],
                        context: Sequence[int]) -> dict[str, dict[str, float]]:
    """The faithfulness check's AOPC and ERASER scores of every ranking on this one input, for the
    predicted word (no interval: one sentence)."""
    k_max = min(5, len(context))
    scored = sentence_scores(lab, MaskedSentence(analysis.encoded(), position, target), k_max, seed=0, scores=scores)
    return {name: {"aopc": float(scored.drops[s].mean()),
                   "comprehensiveness": float(scored.comprehensiveness[s].mean()),
                   "sufficiency": float(scored.sufficiency[s].mean())} for s, name in enumerate(RANKINGS)}


def explain(lab: Lab, analysis: Analysis, steps: int = IG_STEPS) -> list[Attribution]:
    """Attributions of the top prediction at every masked position of ``analysis``."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no masked-language-model head, so there is no prediction to explain")
    if not analysis.mlm:
        raise InputError("mask a token first: the attribution explains a masked-word prediction")
    if analysis.source != "attention":
        raise InputError("explain the softmax-attention analysis, not one converted to another source")
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=MIXING_CAPTURES, compute_mlm=False)
    captured = Captured(lab.model, cache, 0, len(analysis.tokens))
    memo: dict = {}  # the sources' per-layer matrices and DecompX's parts, computed once for every masked position
    out = []
    for p in analysis.mlm:
        target_word = p.predictions[0].token
        target = lab.tokenizer.token_to_id(target_word)
        context = context_positions(analysis, p.position)
        if not context:
            raise InputError("there is no context token to attribute the prediction to")
        erased = erasure(lab, analysis, p.position, target, context)
        ranked = rankings(captured, p.position, seed=0, memo=memo)
        scores = {"erasure": erased, **gradient_methods(lab, analysis, p.position, target, context, steps),
                  "decompx": ranked["decompx"][context]}  # its ranking is the top word's logit shares
        agreement = ranking_agreement(ranked, erased, context)
        for name in ("gradient x input", "integrated gradients", "decompx"):
            agreement[name] = rank_agreement(scores[name], erased)
        out.append(Attribution(p.position, target_word, context,
                               {k: [float(v) for v in values] for k, values in scores.items()}, agreement,
                               perturbation_scores(lab, analysis, p.position, target, ranked, context)))
    return out
