"""The one table of hook points: short name -> where it sits in the module tree and what it holds.

The model names its hook points from their module paths (``hooks.name_hook_points``); code that
captures, computes a source or intervenes reads the names from here instead of typing
``"bert.encoder.layer.3.attention.self.hook_pattern"`` by hand, so a renamed module is one edit
and a typo is a ``KeyError`` at the call site. ``tests/test_hooks.py`` checks the table against
the model's own list of hook points, name by name.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HookSpot:
    """One hook point: its name template (``{layer}`` 0-based), the module it wraps and its shape."""

    template: str
    module: str
    shape: str
    what: str

    @property
    def per_layer(self) -> bool:
        return "{layer}" in self.template

    def name(self, layer: int | None = None) -> str:
        """The hook point's name; per-layer spots need ``layer`` (0-based)."""
        if self.per_layer != (layer is not None):
            raise KeyError(f"{self.template}: {'a layer is' if self.per_layer else 'no layer is'} needed")
        return self.template.format(layer=layer) if self.per_layer else self.template

    def every_layer(self) -> str:
        """A glob matching this spot in every layer (or its one name)."""
        return self.template.replace("{layer}", "*")


_SELF = "bert.encoder.layer.{layer}.attention.self"
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


# Hook points only some families' models have (so not in HOOK_TABLE, which every model has in full, but for
# "position" on a model without absolute positions).
FAMILY_HOOKS: dict[str, HookSpot] = {
    "position_bias": HookSpot("bert.encoder.hook_position_bias", "BertEncoder (relative / alibi scheme)",
                              "(batch | 1, heads, query, key)",
                              "the position bias added to every layer's scores: relative buckets (MPNet, "
                              "bert/positions/relative.py) or ALiBi's -slope * distance (bert/positions/alibi.py)"),
    # DeBERTa (bert/positions/disentangled.py): the parts of every layer's scores, each divided by sqrt(d_head * (1 + terms));
    # c2c + c2p + p2c + the mask is the "scores" spot. c2p / p2c exist where the config's pos_att_type names them.
    "c2c": HookSpot(f"{_SELF}.hook_c2c", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                    "DeBERTa: content-to-content term, query content . key content, scaled"),
    "c2p": HookSpot(f"{_SELF}.hook_c2p", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                    "DeBERTa: content-to-position term, query content . the key's relative position, scaled"),
    "p2c": HookSpot(f"{_SELF}.hook_p2c", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                    "DeBERTa: position-to-content term, the query's relative position . key content, scaled"),
    # Rotary positions (bert/positions/rotary.py): "q" / "k" hold the projections before the rotary turn; these hold them after it,
    # so that rot_q . rot_k / sqrt(d_head) + the mask (padding, and the window in local layers) is the "scores" spot.
    "rot_q": HookSpot(f"{_SELF}.hook_rot_q", "BertSelfAttention (ModernBERT)", "(batch, heads, query, d_head)",
                      "ModernBERT: queries after the rotary turn by their positions"),
    "rot_k": HookSpot(f"{_SELF}.hook_rot_k", "BertSelfAttention (ModernBERT)", "(batch, heads, key, d_head)",
                      "ModernBERT: keys after the rotary turn by their positions"),
    "rotary_positions": HookSpot("bert.encoder.hook_rotary_positions", "BertEncoder (ModernBERT)", "(batch | 1, pos)",
                                 "ModernBERT: the (float) positions every layer rotates queries and keys by"),
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
