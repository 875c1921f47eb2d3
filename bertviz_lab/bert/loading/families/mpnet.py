"""MPNet (Song et al. 2020): RoBERTa's absolute positions (from row 2: the padding row is 1) and no segment embeddings,
plus a relative-position bias per head added to every layer's scores from one shared table
(``encoder.relative_attention_bias``; bert/positions/relative.py); the attention is attention.attn.{q,k,v,o} and
attention.LayerNorm; an MLM head ``lm_head`` as RoBERTa's."""
from __future__ import annotations

from typing import Any

from ..config_checks import COMMON, MAX_BUCKETS, whole
from .family import BPE_SPECIALS, Family, register, renamed_layer
from .roberta import ROBERTA_HEAD

MPNET_LAYER = [("attention.attn.q", "attention.self.query"), ("attention.attn.k", "attention.self.key"),
               ("attention.attn.v", "attention.self.value"), ("attention.attn.o", "attention.output.dense"),
               ("attention.LayerNorm", "attention.output.LayerNorm")]


@register
class MPNet(Family):
    name = "mpnet"
    order = 5
    fields = {**{k: v for k, v in COMMON.items() if k != "type_vocab_size"},
              "relative_attention_num_buckets": whole(1, MAX_BUCKETS)}
    own_fields = ("relative_attention_num_buckets",)
    classifier_act = "tanh"
    classifier_renames = {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."}
    classifier_marker = "classifier.out_proj.weight"
    specials = BPE_SPECIALS
    heads = ROBERTA_HEAD  # lm_head, as RoBERTa's

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        out.update({"position_offset": 2, "type_vocab_size": 0, "head_act": "gelu",  # transformers: padding_idx 1
                    "relative_attention_num_buckets": int(out.get("relative_attention_num_buckets", 32)),
                    "positions": ["learned", "relative"]})
        return out

    def encoder_name(self, body: str) -> str:
        return renamed_layer(body, MPNET_LAYER)
