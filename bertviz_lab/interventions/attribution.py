"""Why did the model predict that word? Signed token attributions of a masked-word prediction and
how well each attention-based source agrees with them, on this input.

For the model's top prediction w at a masked position, per context token j:

- **erasure** (the reference): log P(w) minus log P(w) when j is hidden from attention on every
  layer (the hide-keys intervention; one batched forward, a row per token);
- **DecompX** (Modarressi et al. 2023; ``bert/sources/decompx.py``): the token's share of w's logit, its
  decomposition carried through every layer and the MLM head;
- **gradient x input** and **integrated gradients** (Sundararajan et al. 2017; Captum's
  ``InputXGradient`` / ``IntegratedGradients`` on the embedding layer's output, which is what its
  ``LayerGradientXActivation`` / ``LayerIntegratedGradients`` compute, without hooks on the shared
  model; summed over its dimensions; IG from a baseline that replaces every word token by [PAD], 32 steps);
- the agreement of each attention-based ranking (those of the faithfulness check) with erasure as
  Spearman's rho over the context tokens.

Signed: positive means the token raised P(w). Special tokens and the masked position itself get no
score (they cannot be hidden without changing what is asked).

A sequence classifier's class (``explain_class``; default: the predicted one) is explained the same
way, for the class's *logit* rather than a log-probability: erasure is the logit's drop when the token
is hidden from attention on every layer, gradient x input and integrated gradients are of the logit
(same [PAD] baseline), every attention-based ranking is read at the [CLS] row (the position all
four families' heads read), and DecompX carries the [CLS] row's last-layer decomposition through the
classifier head as its released code does (``modeling_bert.py`` ``BertModel.ffn_decomposer`` and
``BertForSequenceClassification.ffn_decomposer``, demo configuration: each Linear's bias shared out by
"absdot", the activation by its zero-origin slope, ``tanh_approx_type="ZO"``; the same rules for
ELECTRA's GELU and DistilBERT's ReLU), so each token's share of the class logit; the shares sum to it.
Each ranking is compared with erasure by Spearman's rho.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.stats import spearmanr

from ..bert.encoder.hook_table import HOOK_TABLE
from ..bert.sources import decompx
from ..bert.sources.captured import MIXING_CAPTURES, Captured
from ..lab import Analysis, ClassProbability, Encoded, InputError, Lab
from ..naming import SPECIAL_TOKENS
from .faithfulness import ERASER_BINS, RANKINGS, MaskedSentence, bin_size, logp_with_hidden, rankings, sentence_scores
from .hiding import outputs_with_hidden

IG_STEPS = 32
CLASS_RANKINGS = RANKINGS  # read at the [CLS] row; DecompX through the classifier head


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
    """Gradient x input and integrated gradients of log P(target) at ``position`` per context token, from Captum."""
    return captum_scores(lab, analysis, _log_prob_of(lab, position, target), context, steps)


def embedding_output(lab: Lab, ids: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
    """The embedding layer's output for ``ids`` (what Captum's layer methods attribute to): (1, pos, d_emb).
    A plain call of the module's forward: nothing is registered on the shared model."""
    positions = torch.arange(ids.shape[1], device=ids.device)[None]  # (1, pos), as the model's forward makes them
    with torch.no_grad():
        return lab.model.bert.embeddings(ids, segments, positions).detach()  # (1, pos, d_emb)


def _from_embeddings(model, forward):
    """forward(input_ids, token_type_ids, attention_mask) -> its value with the embedding layer's output
    replaced by ``embedded``: an edit at the embeddings hook point, bound to this call's own hook run (a
    ContextVar, ``bert/encoder/hooks.py``), so another request running the same model never sees it."""
    def forward_from(embedded, input_ids, token_type_ids, attention_mask):
        def replace(x: torch.Tensor, name: str) -> torch.Tensor:
            if x.shape != embedded.shape:
                raise RuntimeError(f"embeddings of shape {tuple(embedded.shape)} for a pass of {tuple(x.shape)}")
            return embedded  # (rows, pos, d_emb), the tensor gradients are taken with respect to
        with model.hooks(edits={HOOK_TABLE["embeddings"].name(): replace}):
            return forward(input_ids, token_type_ids, attention_mask)
    return forward_from


def captum_scores(lab: Lab, analysis: Analysis, forward, context: Sequence[int], steps: int = IG_STEPS) -> dict[str, np.ndarray]:
    """Gradient x input and integrated gradients of ``forward(input_ids, token_type_ids,
    attention_mask) -> (rows,)`` per context token, on the embedding layer's output summed over its
    dimensions; IG from every word token replaced by [PAD] ([CLS], [SEP] and [MASK] kept).

    Captum's ``InputXGradient`` and ``IntegratedGradients`` (Sundararajan et al. 2017; Captum 0.7+) on the
    embedding layer's output as their input: the same quantities as its ``LayerGradientXActivation`` and
    ``LayerIntegratedGradients`` on ``bert.embeddings``, which take the layer's output for the input and the
    baseline and run IG between them (``layer_integrated_gradients.py``), but without their module hooks:
    those are registered on the one model every request shares, so while one explanation ran, other
    visitors' passes through the layer received its rows (issue 56). Here the layer's output enters each
    pass through this request's own hook run, and nothing is registered on a shared module."""
    from captum.attr import InputXGradient, IntegratedGradients

    tensors = lab.batch_tensors([analysis.encoded()])
    ids, segments, mask = tensors["input_ids"], tensors["token_type_ids"], tensors["attention_mask"]
    baseline = ids.clone()
    words = torch.tensor([t not in SPECIAL_TOKENS and i != lab.mask_id for t, i in zip(analysis.tokens, analysis.token_ids)],
                         device=ids.device)
    baseline[0, words] = lab.pad_id  # every word token -> [PAD]; [CLS], [SEP] and [MASK] kept
    embedded, embedded_baseline = embedding_output(lab, ids, segments), embedding_output(lab, baseline, segments)
    from_embeddings = _from_embeddings(lab.model, forward)
    with torch.enable_grad():
        gxi = InputXGradient(from_embeddings).attribute(embedded.clone().requires_grad_(),
                                                        additional_forward_args=(ids, segments, mask))
        ig = IntegratedGradients(from_embeddings).attribute(
            embedded, baselines=embedded_baseline, additional_forward_args=(ids, segments, mask), n_steps=steps,
            internal_batch_size=steps)
    pick = list(context)
    return {"gradient x input": gxi[0].sum(-1).detach().float().cpu().numpy()[pick],
            "integrated gradients": ig[0].sum(-1).detach().float().cpu().numpy()[pick]}


def rank_agreement(values: Sequence[float], reference: Sequence[float]) -> float:
    """Spearman's rho of two scorings of the same tokens (NaN below three tokens or for a constant one)."""
    if len(reference) < 3 or np.ptp(values) == 0 or np.ptp(reference) == 0:
        return float("nan")  # Spearman's rho is undefined for a constant scoring
    rho = spearmanr(values, reference).statistic
    return float(rho) if np.isfinite(rho) else float("nan")


def ranking_agreement(scores: dict[str, np.ndarray], reference: np.ndarray, context: Sequence[int],
                      names: Sequence[str] = RANKINGS) -> dict[str, float]:
    """Spearman rho of each faithfulness-check ranking (attention, rollout, flow, norms, value
    zeroing, GlobEnc, ALTI, DecompX) with the erasure scores, over the context tokens."""
    return {name: rank_agreement(np.asarray(scores[name])[list(context)], reference) for name in names}


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


@dataclass
class ClassAttribution:
    """Why a sequence classifier's class: signed scores of its logit per context token."""

    label: str
    index: int
    probability: float
    context: list[int]  # the scored token positions (every token but [CLS], [SEP] and padding)
    scores: dict[str, list[float]]  # method -> one signed score per context position
    agreement: dict[str, float] = field(default_factory=dict)  # ranking or method -> Spearman rho with erasure
    # ranking or method -> AOPC (log P of the class, top 1..K hidden), ERASER comprehensiveness and
    # sufficiency (probability of the class, mean over bins) on this input alone
    perturbation: dict[str, dict[str, float]] = field(default_factory=dict)
    # DecompX's shares of the tokens outside ``context`` ([CLS], [SEP]: "0 [CLS]" -> share): with the context's,
    # they sum to the class's logit; the scores above show the context's alone
    decompx_outside: dict[str, float] = field(default_factory=dict)

    def decompx_note(self) -> str:
        return decompx_note(self.scores.get("decompx", []), self.decompx_outside)

    def to_json(self) -> dict:
        return {"label": self.label, "index": self.index, "probability": self.probability, "context": self.context,
                "scores": self.scores, "spearman_with_erasure": self.agreement,
                "faithfulness_on_this_input": self.perturbation, "decompx_specials": self.decompx_outside}


def decompx_note(shown: Sequence[float], outside: dict[str, float]) -> str:
    """What DecompX's shown shares (the words') sum to, and what the tokens left out hold: together the class's
    logit. One sentence for the page and the command line (which has them from a class attribution's JSON)."""
    held = ", ".join(f"{name} {share:+.3f}" for name, share in outside.items())
    return (f"DecompX's shares of the words shown sum to {sum(shown):+.3f}; the special tokens hold the rest "
            f"({held}); together {sum(shown) + sum(outside.values()):+.3f}, the class's logit")


def class_logits_with_hidden(lab: Lab, enc: Encoded, hidden: Sequence[Sequence[int]]) -> np.ndarray:
    """Class logits with nothing hidden (row 0), then with each set of keys in ``hidden`` hidden from
    every query on every layer: batched forwards (``hiding.py``), (1 + len(hidden), classes)."""
    return outputs_with_hidden(lab, enc, hidden, lambda out: out.class_logits).numpy()


def class_erasure(lab: Lab, analysis: Analysis, index: int, context: Sequence[int]) -> np.ndarray:
    """The class's logit minus its logit with token j hidden, for each j in ``context``: (len(context),)."""
    logits = class_logits_with_hidden(lab, analysis.encoded(), [[j] for j in context])[:, index]  # (1 + context,)
    return logits[0] - logits[1:]


def _class_logit_of(lab: Lab, index: int):
    """forward(input_ids, token_type_ids, attention_mask) -> the class's logit per row."""
    def forward(input_ids, token_type_ids, attention_mask):
        out = lab.model(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                        compute_mlm=False)
        return out.class_logits.float()[:, index]  # (rows,)
    return forward


def chosen_class(analysis: Analysis, label: str | int | None) -> ClassProbability:
    """The class to explain: the predicted one, or the one named by its label or index."""
    if not analysis.classes:
        raise InputError("this checkpoint has no sequence classifier, so there is no class to explain")
    if label is None:
        return analysis.classes[0]
    for c in analysis.classes:
        if (isinstance(label, int) and c.index == label) or c.label == label:
            return c
    known = ", ".join(c.label for c in sorted(analysis.classes, key=lambda c: c.index))
    raise InputError(f"no class {label!r}: the classifier's classes are {known}")


def explain_class(lab: Lab, analysis: Analysis, label: str | int | None = None, steps: int = IG_STEPS) -> ClassAttribution:
    """Attributions of a class's logit (default: the predicted class) to every word token of ``analysis``:
    erasure, gradient x input, integrated gradients, and each attention ranking's agreement with erasure."""
    chosen = chosen_class(analysis, label)
    context = context_positions(analysis, -1)
    if not context:
        raise InputError("there is no word token to attribute the class to")
    erased = class_erasure(lab, analysis, chosen.index, context)
    scores = {"erasure": erased, **captum_scores(lab, analysis, _class_logit_of(lab, chosen.index), context, steps)}
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=MIXING_CAPTURES, compute_mlm=False)
    captured = Captured(lab.model, cache, 0, len(analysis.tokens))
    ranked = rankings(captured, 0, seed=0, names=[name for name in CLASS_RANKINGS if name != "decompx"])
    ranked["decompx"] = class_logit_shares(lab.model, decompx.last_layer_rows(captured, [0]))[:, chosen.index].numpy()
    scores["decompx"] = ranked["decompx"][context]
    agreement = ranking_agreement(ranked, erased, context, CLASS_RANKINGS)
    for name in ("gradient x input", "integrated gradients"):
        agreement[name] = rank_agreement(scores[name], erased)
    orders = {name: sorted(context, key=lambda i, r=ranked[name]: -float(r[i])) for name in CLASS_RANKINGS}
    orders.update({name: [context[i] for i in np.argsort(-np.asarray(values), kind="stable")]
                   for name, values in scores.items()})
    outside = {f"{i} {analysis.tokens[i]}": float(ranked["decompx"][i])
               for i in range(len(analysis.tokens)) if i not in context}
    return ClassAttribution(chosen.label, chosen.index, chosen.probability, context,
                            {k: [float(v) for v in values] for k, values in scores.items()}, agreement,
                            class_perturbation(lab, analysis.encoded(), chosen.index, orders), outside)


def class_perturbation(lab: Lab, enc: Encoded, index: int, orders: dict[str, list[int]],
                       k_max: int = 5) -> dict[str, dict[str, float]]:
    """Per ordering of the context tokens (most important first), on this one input and for the class
    ``index``: AOPC of log P(class) with the top 1..K hidden (K = min(k_max, context); k = 0 counts,
    as in the faithfulness check), and ERASER's comprehensiveness (top ceil(b x context) hidden) and
    sufficiency (only they kept) in P(class), each the mean over the bins. One batched forward;
    identical hidden sets share a row."""
    rows: dict[tuple[int, ...], int] = {}

    def row_of(keys) -> int:
        return rows.setdefault(tuple(sorted(keys)), len(rows) + 1)

    plan = {}
    for name, order in orders.items():
        sizes = [bin_size(b, len(order)) for b in ERASER_BINS]
        plan[name] = ([row_of(order[:k]) for k in range(1, min(k_max, len(order)) + 1)],
                      [row_of(order[:c]) for c in sizes], [row_of(order[c:]) for c in sizes])
    logits = torch.from_numpy(class_logits_with_hidden(lab, enc, list(rows)))  # (1 + unique sets, classes)
    logp = torch.log_softmax(logits, -1)[:, index].numpy()  # (1 + unique sets,)
    p = np.exp(logp)
    return {name: {"aopc": float(np.mean([0.0] + [logp[0] - logp[r] for r in aopc])),
                   "comprehensiveness": float(np.mean([p[0] - p[r] for r in comp])),
                   "sufficiency": float(np.mean([p[0] - p[r] for r in suff]))}
            for name, (aopc, comp, suff) in plan.items()}


def class_logit_shares(model, last_parts: torch.Tensor) -> torch.Tensor:
    """Each input token's signed share of every class logit: (k, classes), from the last layer's
    parts (i, k, d) at the first token, through the head (BERT: pooler dense + tanh, then the
    classifier; the others: classifier dense + their activation, then out_proj). Each Linear's bias is
    shared out by |<part, bias>| and the activation applied by its zero-origin slope, so the shares
    sum to the logits."""
    head = model.classifier
    dense, act = (model.bert.pooler.dense, torch.tanh) if head.dense is None else (head.dense, head.act)
    with torch.no_grad():
        parts = last_parts[0][None].to(dense.weight.device)  # (1, k, d): the [CLS] row
        pre = dense(parts.sum(1))  # (1, d)
        dense_parts = decompx.share_bias(parts @ dense.weight.T, dense.bias)  # (1, k, d)
        act_parts = decompx.activation_parts(dense_parts, pre, act(pre))
        shares = decompx.share_bias(act_parts @ head.out_proj.weight.T, head.out_proj.bias)  # (1, k, classes)
    return shares[0].float().cpu()
