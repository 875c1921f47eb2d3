"""DistilBERT (Sanh et al. 2019): no segment embeddings (``type_vocab_size = 0``), q_lin/k_lin/ v_lin/out_lin,
sa_layer_norm, ffn.lin1/lin2, output_layer_norm; config fields dim, n_layers, n_heads, hidden_dim, activation; an
MLM head vocab_transform/vocab_layer_norm/vocab_projector."""
from __future__ import annotations

from typing import Any

from ..config_checks import COMMON
from .family import Family, register, renamed_layer

DISTILBERT_CONFIG = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                     "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
                     "attention_dropout": "attention_probs_dropout_prob"}
DISTILBERT_LAYER = [("attention.q_lin", "attention.self.query"), ("attention.k_lin", "attention.self.key"),
                    ("attention.v_lin", "attention.self.value"), ("attention.out_lin", "attention.output.dense"),
                    ("sa_layer_norm", "attention.output.LayerNorm"), ("ffn.lin1", "intermediate.dense"),
                    ("ffn.lin2", "output.dense"), ("output_layer_norm", "output.LayerNorm")]


@register
class DistilBERT(Family):
    name = "distilbert"
    order = 2
    fields = {**{k: v for k, v in COMMON.items() if k not in ("type_vocab_size", "layer_norm_eps")},
              **{theirs: COMMON[ours] for theirs, ours in DISTILBERT_CONFIG.items()}}
    classifier_act = "relu"
    classifier_renames = {"pre_classifier.": "classifier.dense.", "classifier.weight": "classifier.out_proj.weight",
                          "classifier.bias": "classifier.out_proj.bias"}
    classifier_marker = "pre_classifier.weight"
    heads = {"vocab_transform.": "cls.predictions.transform.dense.",
             "vocab_layer_norm.": "cls.predictions.transform.LayerNorm.",
             "vocab_projector.weight": "cls.predictions.decoder.weight",
             "vocab_projector.bias": "cls.predictions.bias"}

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        for theirs, ours in DISTILBERT_CONFIG.items():
            if theirs in out:
                out[ours] = out.pop(theirs)
        out.update({"type_vocab_size": 0, "layer_norm_eps": 1e-12})
        return out

    def encoder_name(self, body: str) -> str:
        return renamed_layer(body, DISTILBERT_LAYER, r"^transformer\.layer\.(\d+)\.(.+)$")
