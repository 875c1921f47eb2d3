"""DeBERTa-v2/v3 (He et al. 2021, ICLR; He et al. 2023, ICLR; transformers'
``models/deberta_v2/modeling_deberta_v2.py``), model_type "deberta-v2": disentangled attention (the "disentangled"
position scheme, bert/positions/disentangled.py): content-to-content plus content-to-position and position-to-
content terms from one relative table for every layer (``encoder.rel_embeddings``, normalised by
``encoder.LayerNorm`` when ``norm_rel_ebd`` has "layer_norm"), scores divided by sqrt(d_head * (1 + terms)); the
projections are attention.self.{query,key,value}_proj (plus pos_key_proj / pos_query_proj without
``share_att_key``); DeBERTa-v3 has no absolute positions (``position_biased_input`` false: a position table left in
the checkpoint is unused and dropped, as transformers drops it) and no segments (``type_vocab_size`` 0). The MLM
head is ``cls.predictions`` (BERT's names: transformers' ``legacy`` head) or ``lm_predictions.lm_head`` (the
original DeBERTa code's); either is dense + hidden_act + LayerNorm, tied to the word embeddings, plus a bias. The
replaced-token detector (``mask_predictions``) is set aside. Refused by name: the convolution after the first layer
(``conv_kernel_size`` > 0, DeBERTa-v2 xlarge/xxlarge), embeddings of another size than the hidden size
(``embedding_size``), a head size other than hidden / heads. A sequence classifier's ContextPooler (dense +
``pooler_hidden_act`` on [CLS]) and ``classifier`` are its ``classifier.dense`` / ``classifier.out_proj``.
SentencePiece specials are [CLS] [SEP] [MASK] [PAD]."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...positions.disentangled import position_terms
from ..config_checks import COMMON, FLAG, MAX_BUCKETS, MAX_POSITIONS, MAX_WIDTH, TEXT, Field, whole
from .family import Family, head_name, register, renamed_layer

DEBERTA_LAYER = [("attention.self.query_proj", "attention.self.query"), ("attention.self.key_proj", "attention.self.key"),
                 ("attention.self.value_proj", "attention.self.value")]
DEBERTA_CLASSIFIER = {"pooler.dense.": "classifier.dense.", "classifier.weight": "classifier.out_proj.weight",
                      "classifier.bias": "classifier.out_proj.bias"}


@register
class DeBERTa(Family):
    name = "deberta-v2"
    order = 6
    fields = {**COMMON, "embedding_size": whole(1, MAX_WIDTH, null=True),
              "attention_head_size": whole(1, MAX_WIDTH, null=True),
              "pooler_hidden_size": whole(1, MAX_WIDTH, null=True), "conv_kernel_size": whole(0, 1024, null=True),
              "pooler_hidden_act": TEXT, "position_biased_input": FLAG, "relative_attention": FLAG,
              "share_att_key": FLAG, "position_buckets": whole(-1, MAX_BUCKETS),
              "max_relative_positions": whole(-1, MAX_POSITIONS), "pos_att_type": Field("text-or-words", null=True),
              "norm_rel_ebd": TEXT}
    own_fields = ("embedding_size", "position_biased_input")
    prefix = "deberta"
    heads = {"cls.predictions.decoder.bias": "cls.predictions.bias",  # what the legacy head adds
             "cls.predictions.": "cls.predictions.",
             "lm_predictions.lm_head.dense.": "cls.predictions.transform.dense.",
             "lm_predictions.lm_head.LayerNorm.": "cls.predictions.transform.LayerNorm.",
             "lm_predictions.lm_head.bias": "cls.predictions.bias"}

    def unused_names(self, raw: dict[str, Any]) -> tuple[str, ...]:
        if not raw.get("position_biased_input", True):  # transformers ignores it too (_keys_to_ignore_on_load_unexpected)
            return ("embeddings.position_embeddings.",)
        return ()

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        out.update(deberta_config(out))
        return out

    def prepare(self, state: dict[str, torch.Tensor], architectures: Sequence[str]
                ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        return deberta_heads(state, architectures)

    def set_aside(self, key: str) -> bool:
        """Its ContextPooler belongs to its task heads, not the encoder."""
        return super().set_aside(key) or key.startswith("pooler.")

    def encoder_name(self, body: str) -> str:
        return renamed_layer(body, DEBERTA_LAYER)


def deberta_config(raw: dict[str, Any]) -> dict[str, Any]:
    """DeBERTa-v2's fields for BertConfig (its own attention fields stay in ``extra``, read by
    ``DisentangledSpec``); what BertLab does not compute is refused by name."""
    hidden, heads = int(raw.get("hidden_size", 768)), int(raw.get("num_attention_heads", 12))
    if int(raw.get("conv_kernel_size", 0) or 0) > 0:
        raise ValueError(f"DeBERTa with conv_kernel_size {raw['conv_kernel_size']} (a convolution after the first "
                         "layer, as DeBERTa-v2 xlarge/xxlarge have) is not supported")
    if int(raw.get("embedding_size") or hidden) != hidden:
        raise ValueError(f"DeBERTa with embedding_size {raw['embedding_size']} other than hidden_size {hidden} "
                         "is not supported")
    if hidden % heads:
        raise ValueError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if int(raw.get("attention_head_size") or hidden // heads) * heads != hidden:
        raise ValueError(f"DeBERTa with attention_head_size {raw['attention_head_size']} is not supported "
                         f"(only hidden_size / num_attention_heads = {hidden // heads})")
    act = str(raw.get("pooler_hidden_act", "gelu"))
    if act not in ("gelu", "tanh", "relu"):
        raise ValueError(f"DeBERTa with pooler_hidden_act {act!r} is not supported (gelu, tanh, relu)")
    if int(raw.get("pooler_hidden_size") or hidden) != hidden:
        raise ValueError(f"DeBERTa with pooler_hidden_size {raw['pooler_hidden_size']} other than hidden_size "
                         f"{hidden} is not supported")
    out: dict[str, Any] = {"embedding_size": None}  # checked above: the hidden size, so no projection
    learned = bool(raw.get("position_biased_input", True))  # DeBERTa-v3: false, its positions are all relative
    out.update({"positions": ["learned", "disentangled"] if learned else ["disentangled"],
                "pos_att_type": list(position_terms(raw.get("pos_att_type"))), "classifier_act": act,
                "type_vocab_size": int(raw.get("type_vocab_size", 0))})
    return out


def deberta_heads(state: dict[str, torch.Tensor],
                   architectures: Sequence[str]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A DeBERTa sequence classifier's ContextPooler + classifier under our head's names, and the rest; the
    legacy MLM head's own ``cls.predictions.bias`` dropped where its decoder's bias (the one it adds) is present."""
    rest = dict(state)
    if "cls.predictions.decoder.bias" in rest:
        rest.pop("cls.predictions.bias", None)
    classifier = (any(str(a).endswith("ForSequenceClassification") for a in architectures) if architectures
                  else "pooler.dense.weight" in rest and "classifier.weight" in rest)
    if not classifier:
        return {}, rest
    head = {}
    for key in [k for k in rest if head_name(k, DEBERTA_CLASSIFIER) is not None]:
        head[head_name(key, DEBERTA_CLASSIFIER)] = rest.pop(key)
    return head, rest
