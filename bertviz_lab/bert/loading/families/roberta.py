"""RoBERTa (Liu et al. 2019): positions start at ``pad_token_id + 1`` (fairseq's ``make_positions``;
``BertConfig.position_offset``), a byte-level BPE tokenizer with <s> </s> <mask> <pad>, one segment type, an MLM
head ``lm_head`` whose activation is always GELU."""
from __future__ import annotations

from typing import Any

from ..config_checks import COMMON, MAX_VOCAB, whole
from .family import BPE_SPECIALS, Family, register

ROBERTA_HEAD = {"lm_head.dense.": "cls.predictions.transform.dense.",
                "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.", "lm_head.bias": "cls.predictions.bias",
                "lm_head.decoder.weight": "cls.predictions.decoder.weight",
                "lm_head.decoder.bias": "cls.predictions.decoder.bias"}


@register
class RoBERTa(Family):
    name = "roberta"
    order = 1
    fields = {**COMMON, "pad_token_id": whole(0, MAX_VOCAB - 1)}  # its positions start at pad_token_id + 1
    classifier_act = "tanh"
    classifier_renames = {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."}
    classifier_marker = "classifier.out_proj.weight"
    specials = BPE_SPECIALS
    heads = ROBERTA_HEAD

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        out["position_offset"] = int(out.get("pad_token_id", 1)) + 1
        out["head_act"] = "gelu"
        return out
