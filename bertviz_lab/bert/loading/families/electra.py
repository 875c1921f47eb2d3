"""ELECTRA (Clark et al. 2020): embeddings of ``embedding_size`` projected to the hidden size (``embeddings_project``);
the generator's MLM head maps hidden -> embedding_size with GELU and ties its output to the word embeddings; a
discriminator's replaced-token head is not an MLM head and is set aside (the encoder loads, with no masked-word
predictions)."""
from __future__ import annotations

from typing import Any

from ..config_checks import COMMON, MAX_WIDTH, whole
from .family import Family, register


@register
class ELECTRA(Family):
    name = "electra"
    order = 3
    fields = {**COMMON, "embedding_size": whole(1, MAX_WIDTH)}
    own_fields = ("embedding_size",)
    classifier_act = "gelu"
    classifier_renames = {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."}
    classifier_marker = "classifier.out_proj.weight"
    heads = {"generator_predictions.dense.": "cls.predictions.transform.dense.",
             "generator_predictions.LayerNorm.": "cls.predictions.transform.LayerNorm.",
             "generator_lm_head.weight": "cls.predictions.decoder.weight",
             "generator_lm_head.bias": "cls.predictions.bias"}

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        out["head_act"] = "gelu"
        if int(out.get("embedding_size", out.get("hidden_size", 0))) == int(out.get("hidden_size", 0)):
            out.pop("embedding_size", None)  # no projection needed
        return out
