"""Every attention *source* — a kind of token-to-token weight — as one typed registry.

A source says how much token i draws on token j. Each :class:`Source` carries its name, a plain
label, what it is, its citation (paper and released code), its shape facts and its cost, and the
functions computing it from one forward pass's captures (:class:`~.captured.Captured`). Views,
comparisons, syntax scoring, rollout and flow, the faithfulness rankings, the command line's and
the page's choices all read :data:`SOURCES`; nothing else lists source names.

Shape facts, which decide how the rest of the lab treats a source:

- ``per_layer``: one matrix per layer (the same for every head); else one per head.
- ``aggregated``: already aggregated from the input up (DecompX, rollout, flow); rolling it out
  again would count the lower layers twice, so its "rollout" is each layer as it is.
- ``residual_included``: the residual is inside each layer's matrix; rollout adds no identity.

It lives with the encoder (not in ``attention/``) because an intervened forward pass computes its
source inside ``Lab.analyze_encoded``, below the analysis tier.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..encoder.hook_table import every_layer
from . import decompx
from .captured import MIXING_CAPTURES, Captured
from .contributions import alti_layer, globenc_layer, globenc_rollout
from .flow import attention_flow, rollout, row_normalised
from .mixing import value_zeroing_layer
from .norms import head_norms, layer_norms, refuse_pre_norm

PATTERN_CAPTURES = (every_layer("pattern"),)
Layers = Callable[[Captured], torch.Tensor]  # -> (layers, query, key)
Heads = Callable[[Captured], torch.Tensor]  # -> (layers, heads, query, key)


@dataclass(frozen=True)
class Source:
    """One kind of token-to-token weight and how to compute it."""

    name: str
    label: str  # plain words for the page
    note: str  # what it is, one sentence
    citation: str  # paper; released code
    per_layer: bool
    aggregated: bool
    residual_included: bool
    cost: str  # what computing it costs beyond the forward pass
    layers: Layers  # one (query, key) matrix per layer: what rollout and flow run on
    heads: Heads | None = None  # per-head sources: one matrix per head
    captures: tuple[str, ...] = MIXING_CAPTURES
    plain: str = ""  # what a newcomer reads first: one sentence, no formula, no citation

    def weights(self, captured: Captured) -> np.ndarray:
        """(layers, heads, query, key) float32; per-layer sources repeat their matrix over the heads."""
        with torch.no_grad():
            if self.heads is not None:
                return self.heads(captured).float().numpy()
            per_layer = self.layers(captured).float()  # (layers, query, key)
            return per_layer[:, None].expand(-1, captured.heads, -1, -1).numpy()

    def layer_matrices(self, captured: Captured) -> np.ndarray:
        """(layers, query, key): the per-layer matrix rollout and flow run on."""
        with torch.no_grad():
            return self.layers(captured).float().numpy()

    def rollout(self, layers: np.ndarray) -> np.ndarray:
        """The source's layers aggregated from the input up, as its method defines it (layers, q, k):
        GlobEnc's plain product of its raw layers; an aggregated source's layers as they are, rows
        normalised; for the others Abnar & Zuidema's rollout, with the identity added only where the
        residual is not inside the layer's matrix already."""
        if self.name == "globenc":
            return globenc_rollout(layers).astype(np.float32)
        if self.aggregated:
            return row_normalised(np.asarray(layers, dtype=np.float64)).astype(np.float32)
        return rollout(layers, residual=not self.residual_included)


def _per_layer(layer_fn: Callable[[Captured, int], torch.Tensor]) -> Layers:
    return lambda c: torch.stack([layer_fn(c, layer).float() for layer in range(c.layers)])


def _attention_heads(c: Captured) -> torch.Tensor:
    return torch.stack([c.pattern(layer) for layer in range(c.layers)])  # (layers, heads, query, key)


def _attention_means(c: Captured) -> torch.Tensor:
    return _attention_heads(c).mean(1)  # (layers, query, key)


def _norm_heads(c: Captured) -> torch.Tensor:
    return torch.stack([head_norms(c.pattern(layer), c.values(layer)) for layer in range(c.layers)])


def _norm_layer(c: Captured, layer: int) -> torch.Tensor:
    return layer_norms(c.pattern(layer), c.values(layer))


def _norm_residual_layer(c: Captured, layer: int) -> torch.Tensor:
    refuse_pre_norm(c.model, "norm with residual and LayerNorm")
    out = c.block(layer).attention.output
    return layer_norms(c.pattern(layer), c.values(layer), residual=c.layer_input(layer).float().cpu(),
                       gamma=out.LayerNorm.weight.detach().float().cpu(), eps=out.LayerNorm.eps,
                       pre_ln_bias=out.dense.bias.detach().float().cpu())


def _rollout_layers(c: Captured) -> torch.Tensor:
    return torch.from_numpy(rollout(_attention_means(c).numpy()))


def _flow_layers(c: Captured) -> torch.Tensor:
    means = _attention_means(c).numpy()
    return torch.from_numpy(np.stack([attention_flow(means, up_to=layer) for layer in range(c.layers)]))


_ABNAR = ("Abnar & Zuidema 2020, \"Quantifying Attention Flow in Transformers\", ACL; "
          "github.com/samiraabnar/attention_flow")
_KOBAYASHI = "github.com/gorokoba560/norm-analysis-of-transformer"
_ALL = (
    Source("attention", "attention weights", "softmax attention weights: each row sums to 1",
           "Vaswani et al. 2017; as read by Clark et al. 2019, github.com/clarkkev/attention-analysis",
           per_layer=False, aggregated=False, residual_included=False, cost="none (captured in the forward pass)",
           layers=_attention_means, heads=_attention_heads, captures=PATTERN_CAPTURES,
           plain=("How much each token (a row) looks at every other token (the columns) in one head: each row sums "
                  "to 1. Start here.")),
    Source("norm", "how much each head moves (norm)",
           "norm-based: ||alpha f(x)|| per head, raw vector norms, not normalised",
           f"Kobayashi et al. 2020, \"Attention is Not Only a Weight\", EMNLP; {_KOBAYASHI}",
           per_layer=False, aggregated=False, residual_included=False, cost="one extra forward pass",
           layers=_per_layer(_norm_layer), heads=_norm_heads,
           plain=("Attention weighted by the size of what each attended token passes on: a large weight on a tiny "
                  "vector counts for little.")),
    Source("norm-residual", "norm with residual and LayerNorm",
           "norm-based with residual and LayerNorm: ||LN-part of (sum_h alpha f(x) + residual)||, per layer "
           "(the same for every head), raw norms, not normalised",
           f"Kobayashi et al. 2021, \"Incorporating Residual and Normalization Layers\", EMNLP; {_KOBAYASHI}",
           per_layer=True, aggregated=False, residual_included=True, cost="one extra forward pass",
           layers=_per_layer(_norm_residual_layer),
           plain=("Like the norm view, for the whole attention block of a layer, counting the copy of itself each "
                  "token keeps through the residual connection.")),
    Source("globenc", "GlobEnc (whole encoder layer)",
           "GlobEnc: norms through the residual and both LayerNorms of the layer, per layer (the same for every "
           "head), raw norms; its rollout is the plain product of the layers",
           "Modarressi et al. 2022, \"GlobEnc\", NAACL; github.com/mohsenfayyaz/GlobEnc",
           per_layer=True, aggregated=False, residual_included=True, cost="one extra forward pass",
           layers=_per_layer(globenc_layer),
           plain="How much each token contributes to every token's output of the whole layer (attention, residual and both LayerNorms)."),
    Source("alti", "ALTI (token contributions)",
           "ALTI: Manhattan-distance contributions to the attention block's output with residual and LayerNorm, "
           "per layer (the same for every head), rows normalised to 1",
           "Ferrando et al. 2022, \"Measuring the Mixing of Contextual Information in the Transformer\", EMNLP; "
           "github.com/mt-upc/transformer-contributions",
           per_layer=True, aggregated=False, residual_included=True, cost="one extra forward pass",
           layers=_per_layer(alti_layer),
           plain="Each token's share of every token's output of the attention block, residual included; each row sums to 1."),
    Source("value-zeroing", "value zeroing (what changes without a token)",
           "value zeroing: cosine distance of each token's layer output when a key's values are zeroed, rows "
           "normalised to 1; per layer (the same for every head)",
           "Mohebbi et al. 2023, \"Quantifying Context Mixing in Transformers\", EACL; github.com/hmohebbi/ValueZeroing",
           per_layer=True, aggregated=False, residual_included=True,
           cost="one extra forward pass, then n rows through each layer", layers=_per_layer(value_zeroing_layer),
           plain="How much a token's output changes when one other token is left out of the attention; each row sums to 1."),
    Source("decompx", "DecompX (through every layer)",
           "DecompX: norm of the part of each token's representation after the layer that comes from each input "
           "token, propagated through every layer (FFN and biases included); already aggregated, raw norms",
           "Modarressi et al. 2023, \"DecompX\", ACL; github.com/mohsenfayyaz/DecompX",
           per_layer=True, aggregated=True, residual_included=True,
           cost="one extra forward pass, then n parts through every layer", layers=decompx.layer_matrices,
           plain="How much of each token's representation comes from each input token, followed through every layer so far."),
    Source("rollout", "attention rollout (from the input up)",
           "attention rollout: the head mean of each layer with the identity added (0.5 A + 0.5 I), rows "
           "renormalised, multiplied from the bottom layer up to each layer; already aggregated",
           _ABNAR, per_layer=True, aggregated=True, residual_included=True, cost="none beyond the attention",
           layers=_rollout_layers, captures=PATTERN_CAPTURES,
           plain=("Attention followed down through the layers to the input tokens, counting each token's own "
                  "residual copy: at layer 1 it is close to the identity (tokens mostly keep themselves), and it "
                  "spreads layer by layer.")),
    Source("flow", "attention flow (max-flow from the input up)",
           "attention flow: the maximum flow from each token at a layer's output to each input token through the "
           "graph of residual-augmented head means, rows normalised to 1; already aggregated",
           _ABNAR, per_layer=True, aggregated=True, residual_included=True,
           cost="n^2 max-flows per layer (at most 48 tokens)", layers=_flow_layers, captures=PATTERN_CAPTURES,
           plain=("Like rollout, but the most attention that can flow from each input token up to the layer (a "
                  "max-flow); at most 48 tokens.")),
)
SOURCES: dict[str, Source] = {source.name: source for source in _ALL}


def source_names() -> tuple[str, ...]:
    return tuple(SOURCES)


def get_source(name: str) -> Source:
    """The registered source called ``name``; an unknown name is one sentence listing the others."""
    try:
        return SOURCES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown attention source {name!r}; choose one of {', '.join(SOURCES)}") from None
