"""The one table of hook points: short name -> where it sits in the module tree and what it holds.

The model names its hook points from their module paths (``hooks.name_hook_points``); code that
captures, computes a source or intervenes reads the names from here instead of typing
``"bert.encoder.layer.3.attention.self.hook_pattern"`` by hand, so a renamed module is one edit
and a typo is a ``KeyError`` at the call site. ``tests/test_hooks.py`` checks the table against
the model's own list of hook points, name by name.
"""
from __future__ import annotations

from ..positions import SCHEMES
from .hook_spot import SELF, HookSpot

_SELF = SELF
HOOK_TABLE: dict[str, HookSpot] = {
    "token": HookSpot("bert.embeddings.hook_token", "BertEmbeddings.word_embeddings", "(batch, pos, d_emb)",
                      "token embeddings"),
    "position": HookSpot("bert.embeddings.hook_position", "BertEmbeddings.position_embeddings",
                         "(batch | 1, pos, d_emb)", "position embeddings (absent where there is no table: DeBERTa-v3)"),
    "segment": HookSpot("bert.embeddings.hook_segment", "BertEmbeddings.token_type_embeddings", "(batch, pos, d_emb)",
                        "segment embeddings"),
    "embeddings": HookSpot("bert.embeddings.hook_out", "BertEmbeddings", "(batch, pos, d_emb)",
                           "the embeddings' sum after LayerNorm (before ELECTRA's projection)"),
    "q": HookSpot(f"{_SELF}.hook_q", "BertSelfAttention.query", "(batch, heads, query, d_head)",
                   "queries (ModernBERT: before the rotary turn, rot_q after it)"),
    "k": HookSpot(f"{_SELF}.hook_k", "BertSelfAttention.key", "(batch, heads, key, d_head)",
                   "keys (ModernBERT: before the rotary turn, rot_k after it)"),
    "v": HookSpot(f"{_SELF}.hook_v", "BertSelfAttention.value", "(batch, heads, key, d_head)", "value vectors"),
    "scores": HookSpot(f"{_SELF}.hook_scores", "BertSelfAttention", "(batch, heads, query, key)",
                       "pre-softmax scores, mask added"),
    "pattern": HookSpot(f"{_SELF}.hook_pattern", "BertSelfAttention", "(batch, heads, query, key)",
                        "attention probabilities"),
    "context": HookSpot(f"{_SELF}.hook_context", "BertSelfAttention", "(batch, heads, query, d_head)",
                        "each head's context vectors"),
    "attn_out": HookSpot("bert.encoder.layer.{layer}.attention.output.hook_out", "BertSelfOutput",
                         "(batch, pos, d_model)", "the attention block's output after LayerNorm (ModernBERT, "
                         "pre-norm: the residual stream plus the attention block, no LayerNorm)"),
    "out": HookSpot("bert.encoder.layer.{layer}.hook_out", "BertLayer", "(batch, pos, d_model)",
                    "the layer's output (hidden state; ModernBERT's last one before final_norm)"),
    "logits": HookSpot("cls.predictions.hook_logits", "BertLMPredictionHead", "(..., vocab)", "MLM logits"),
    "nsp_logits": HookSpot("cls.hook_nsp_logits", "BertHeads.seq_relationship", "(batch, 2)",
                           "NSP logits: [is next, is random]"),
}


def scheme_hooks() -> dict[str, HookSpot]:
    """The rows every position scheme declares for the hook points it adds (two schemes may share a point, e.g. the
    score bias of relative buckets and ALiBi, only with the same row)."""
    rows: dict[str, HookSpot] = {}
    for scheme in SCHEMES.values():
        for spot, row in scheme.hooks.items():
            if rows.setdefault(spot, row) != row:
                raise ValueError(f"two position schemes describe the hook point {spot!r} differently")
    return rows


# Hook points only some families' models have (so not in HOOK_TABLE, which every model has in full, but for
# "position" on a model without absolute positions): each position scheme's own, and ModernBERT's final norm.
FAMILY_HOOKS: dict[str, HookSpot] = {
    **scheme_hooks(),
    "final_norm": HookSpot("bert.hook_final", "BertModel.final_norm (ModernBERT)", "(batch, pos, d_model)",
                           "ModernBERT: final_norm of the last layer's output, what the MLM head reads"),
}

# DeBERTa's score parts, in the order they are added (what a view showing them separately reads).
SCORE_TERMS = ("c2c", "c2p", "p2c")


def _spot(spot: str) -> HookSpot:
    return HOOK_TABLE[spot] if spot in HOOK_TABLE else FAMILY_HOOKS[spot]


def hook_name(spot: str, layer: int | None = None) -> str:
    """``hook_name("pattern", 3)`` -> ``bert.encoder.layer.3.attention.self.hook_pattern``."""
    return _spot(spot).name(layer)


def every_layer(spot: str) -> str:
    """``every_layer("pattern")`` -> ``bert.encoder.layer.*.attention.self.hook_pattern``."""
    return _spot(spot).every_layer()


def hidden_state_names(layers: int) -> list[str]:
    """The embeddings' output, then every layer's output: the states a structural probe or a corpus search reads."""
    return [hook_name("embeddings")] + [hook_name("out", layer) for layer in range(layers)]


def score_query_key(hook_names: list[str] | set[str]) -> tuple[str, str]:
    """The spots whose dot product (times the scale) is a layer's content score: ``("rot_q", "rot_k")`` for a model
    with rotary positions (ModernBERT: q and k before the turn do not make the scores), else ``("q", "k")``."""
    return ("rot_q", "rot_k") if hook_name("rot_q", 0) in hook_names else ("q", "k")
