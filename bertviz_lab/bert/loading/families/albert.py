"""ALBERT (Lan et al. 2020): one layer's parameters run ``num_hidden_layers`` times (``BertConfig.share_layers``: every
layer keeps its own hook points), factorised embeddings projected up by ``embedding_hidden_mapping_in`` (ELECTRA's
``embeddings_project``); the layer's names are attention.{query,key,value,dense,LayerNorm}, ffn, ffn_output,
full_layer_layer_norm; the MLM head ``predictions`` uses hidden_act; the sentence-order head (``sop_classifier``) is
not BERT's next-sentence head and is set aside; pad is <pad>. Only one layer group of one layer (every released
ALBERT) is supported."""
from __future__ import annotations

from typing import Any

from ..config_checks import COMMON, MAX_LAYERS, MAX_WIDTH, whole
from .family import Family, register

ALBERT_SPECIALS = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "<pad>"}  # SentencePiece's pad
ALBERT_LAYER = [("attention.query", "attention.self.query"), ("attention.key", "attention.self.key"),
                ("attention.value", "attention.self.value"), ("attention.dense", "attention.output.dense"),
                ("attention.LayerNorm", "attention.output.LayerNorm"), ("ffn", "intermediate.dense"),
                ("ffn_output", "output.dense"), ("full_layer_layer_norm", "output.LayerNorm")]
ALBERT_SHARED = "encoder.albert_layer_groups.0.albert_layers.0."  # the one layer (loaded as layer 0's)


@register
class ALBERT(Family):
    name = "albert"
    order = 4
    fields = {**COMMON, "embedding_size": whole(1, MAX_WIDTH), "num_hidden_groups": whole(1, MAX_LAYERS),
              "inner_group_num": whole(1, MAX_LAYERS)}
    own_fields = ("embedding_size",)
    specials = ALBERT_SPECIALS
    heads = {"predictions.dense.": "cls.predictions.transform.dense.",
             "predictions.LayerNorm.": "cls.predictions.transform.LayerNorm.",
             "predictions.bias": "cls.predictions.bias",
             "predictions.decoder.weight": "cls.predictions.decoder.weight",
             "predictions.decoder.bias": "cls.predictions.decoder.bias"}

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        groups, inner = int(out.get("num_hidden_groups", 1)), int(out.get("inner_group_num", 1))
        if (groups, inner) != (1, 1):
            raise ValueError(f"ALBERT with num_hidden_groups {groups} and inner_group_num {inner} is not supported "
                             "(only one shared layer, as every released ALBERT has)")
        out["share_layers"] = True
        out["embedding_size"] = int(out.get("embedding_size", 128))  # always projected, even to the same size
        return out

    def encoder_name(self, body: str) -> str:
        """ALBERT's encoder names in BERT's: the shared layer is layer 0's (the model shares it with the rest)."""
        if body.startswith("encoder.embedding_hidden_mapping_in."):
            return "embeddings_project." + body[len("encoder.embedding_hidden_mapping_in."):]
        if body.startswith("pooler."):
            return "pooler.dense." + body[len("pooler."):]
        if body.startswith(ALBERT_SHARED):
            rest = body[len(ALBERT_SHARED):]
            for theirs, ours in ALBERT_LAYER:
                if rest.startswith(theirs + "."):
                    return f"encoder.layer.0.{ours}{rest[len(theirs):]}"
        return body
