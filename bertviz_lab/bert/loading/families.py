"""The BERT family on one hooked encoder: RoBERTa, DistilBERT, ELECTRA and ALBERT checkpoints are BERT's
post-LayerNorm encoder under other names, so their configs and weight names are translated to
``BertLab``'s (which mirrors Hugging Face's BERT) and they load strictly, with every hook point,
intervention and view working unchanged.

What differs, and where it is handled:
- RoBERTa (Liu et al. 2019): positions start at ``pad_token_id + 1`` (fairseq's ``make_positions``;
  ``BertConfig.position_offset``), a byte-level BPE tokenizer with <s> </s> <mask> <pad>, one
  segment type, an MLM head ``lm_head`` whose activation is always GELU.
- DistilBERT (Sanh et al. 2019): no segment embeddings (``type_vocab_size = 0``), q_lin/k_lin/
  v_lin/out_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm; config fields dim, n_layers,
  n_heads, hidden_dim, activation; an MLM head vocab_transform/vocab_layer_norm/vocab_projector.
- ELECTRA (Clark et al. 2020): embeddings of ``embedding_size`` projected to the hidden size
  (``embeddings_project``); the generator's MLM head maps hidden -> embedding_size with GELU and
  ties its output to the word embeddings; a discriminator's replaced-token head is not an MLM head
  and is set aside (the encoder loads, with no masked-word predictions).
- ALBERT (Lan et al. 2020): one layer's parameters run ``num_hidden_layers`` times
  (``BertConfig.share_layers``: every layer keeps its own hook points), factorised embeddings
  projected up by ``embedding_hidden_mapping_in`` (ELECTRA's ``embeddings_project``); the layer's
  names are attention.{query,key,value,dense,LayerNorm}, ffn, ffn_output, full_layer_layer_norm; the
  MLM head ``predictions`` uses hidden_act; the sentence-order head (``sop_classifier``) is not
  BERT's next-sentence head and is set aside; pad is <pad>. Only one layer group of one layer
  (every released ALBERT) is supported.
- MPNet (Song et al. 2020): RoBERTa's absolute positions (from row 2: the padding row is 1) and no
  segment embeddings, plus a relative-position bias per head added to every layer's scores from
  one shared table (``encoder.relative_attention_bias``; bert/positions/relative.py); the attention
  is attention.attn.{q,k,v,o} and attention.LayerNorm; an MLM head ``lm_head`` as RoBERTa's.
- DeBERTa-v2/v3 (He et al. 2021, ICLR; He et al. 2023, ICLR; transformers'
  ``models/deberta_v2/modeling_deberta_v2.py``), model_type "deberta-v2": disentangled attention
  (the "disentangled" position scheme, bert/positions/disentangled.py): content-to-content plus
  content-to-position and position-to-content terms from one relative table for every layer
  (``encoder.rel_embeddings``, normalised by ``encoder.LayerNorm`` when ``norm_rel_ebd`` has "layer_norm"),
  scores divided by sqrt(d_head * (1 + terms)); the projections are attention.self.{query,key,value}_proj
  (plus pos_key_proj / pos_query_proj without ``share_att_key``); DeBERTa-v3 has no absolute positions
  (``position_biased_input`` false: a position table left in the checkpoint is unused and dropped, as
  transformers drops it) and
  no segments (``type_vocab_size`` 0). The MLM head is ``cls.predictions`` (BERT's names: transformers'
  ``legacy`` head) or ``lm_predictions.lm_head`` (the original DeBERTa code's); either is
  dense + hidden_act + LayerNorm, tied to the word embeddings, plus a bias. The replaced-token
  detector (``mask_predictions``) is set aside. Refused by name: the convolution after the first layer
  (``conv_kernel_size`` > 0, DeBERTa-v2 xlarge/xxlarge), embeddings of another size than the hidden
  size (``embedding_size``), a head size other than hidden / heads. A sequence classifier's
  ContextPooler (dense + ``pooler_hidden_act`` on [CLS]) and ``classifier`` are its
  ``classifier.dense`` / ``classifier.out_proj``. SentencePiece specials are [CLS] [SEP] [MASK] [PAD].
- ModernBERT (Warner et al. 2024, arXiv:2412.13663; transformers' ``models/modernbert/modeling_modernbert.py``),
  model_type "modernbert": a pre-LayerNorm encoder (``norm_placement`` "pre", ``mlp`` "gated", a final norm) with
  rotary positions (bert/positions/rotary.py) with no
  position table and no segments: token embeddings + LayerNorm (``embeddings.tok_embeddings`` / ``norm``), layers of
  ``attn_norm`` (absent in layer 0), a fused ``attn.Wqkv`` (split here into attention.self.{query,key,value}: its
  rows are q, k, v in that order), queries and keys turned by rotary positions (Su et al. 2021), ``attn.Wo``
  (attention.output.dense), ``mlp_norm`` and a GeGLU ``mlp.Wi``/``mlp.Wo``; ``final_norm`` after the last layer.
  Every ``global_attn_every_n_layers``-th layer (or ``layer_types``) is global with ``global_rope_theta``, the others
  see +-``local_attention // 2`` tokens with ``local_rope_theta``. ``norm_bias``, ``attention_bias``, ``mlp_bias``
  and ``classifier_bias`` say which biases exist. The MLM head ``head.dense`` + ``classifier_activation`` +
  ``head.norm``, then ``decoder`` tied to the token embeddings with its bias (cls.predictions.*). Refused by name:
  scaled rotary (``rope_type`` other than default), a decoder without a bias. Task heads (``head`` + ``classifier``
  of a sequence or token classifier) are set aside. Real checkpoints ship a BPE tokenizer.json whose specials are
  [CLS] [SEP] [MASK] [PAD].
Sequence classifiers (``*ForSequenceClassification``) of all five keep their heads, translated to
``classifier.dense`` / ``classifier.out_proj`` (bert/encoder/classifier.py); other task heads are set aside.
Special tokens keep BERT's names in what users see ([CLS], [SEP], [MASK], [PAD]); ids are the model's.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..encoder.classifier import CLASSIFIER_ACT, classifier_names, is_sequence_classifier
from ..positions.disentangled import position_terms
from ..positions.rotary import GLOBAL, LOCAL, layer_types, rope_thetas

FAMILIES = ("bert", "roberta", "distilbert", "electra", "albert", "mpnet", "deberta-v2", "modernbert")
BERT_SPECIALS = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]"}
BPE_SPECIALS = {"cls": "<s>", "sep": "</s>", "mask": "<mask>", "pad": "<pad>"}
ALBERT_SPECIALS = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "<pad>"}  # SentencePiece's pad


@dataclass(frozen=True)
class Family:
    name: str
    specials: dict[str, str]  # role -> the tokenizer's token for it
    unused: tuple[str, ...] = ()  # checkpoint names (after the family prefix) the model never reads: dropped


def family_of(raw: dict[str, Any]) -> Family:
    """The family of a config (its full dict: DeBERTa's ``position_biased_input`` decides what is unused)."""
    kind = raw.get("model_type", "bert")
    if kind not in FAMILIES:
        raise ValueError(f"model_type {kind!r} is not in the BERT family this model loads ({', '.join(FAMILIES)})")
    specials = {"roberta": BPE_SPECIALS, "mpnet": BPE_SPECIALS, "albert": ALBERT_SPECIALS}
    unused = ()
    if kind == "deberta-v2" and not raw.get("position_biased_input", True):
        unused = ("embeddings.position_embeddings.",)  # transformers ignores it too (_keys_to_ignore_on_load_unexpected)
    return Family(kind, specials.get(kind, BERT_SPECIALS), unused)


DISTILBERT_CONFIG = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                     "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
                     "attention_dropout": "attention_probs_dropout_prob"}


def bert_config_dict(raw: dict[str, Any], family: Family) -> dict[str, Any]:
    """The config in BERT's field names, plus what the family adds."""
    out = dict(raw)
    if family.name == "distilbert":
        for theirs, ours in DISTILBERT_CONFIG.items():
            if theirs in out:
                out[ours] = out.pop(theirs)
        out.update({"type_vocab_size": 0, "layer_norm_eps": 1e-12})
    if family.name == "roberta":
        out["position_offset"] = int(out.get("pad_token_id", 1)) + 1
        out["head_act"] = "gelu"
    if family.name == "electra":
        out["head_act"] = "gelu"
        if int(out.get("embedding_size", out.get("hidden_size", 0))) == int(out.get("hidden_size", 0)):
            out.pop("embedding_size", None)  # no projection needed
    if family.name == "albert":
        groups, inner = int(out.get("num_hidden_groups", 1)), int(out.get("inner_group_num", 1))
        if (groups, inner) != (1, 1):
            raise ValueError(f"ALBERT with num_hidden_groups {groups} and inner_group_num {inner} is not supported "
                             "(only one shared layer, as every released ALBERT has)")
        out["share_layers"] = True
        out["embedding_size"] = int(out.get("embedding_size", 128))  # always projected, even to the same size
    if family.name == "mpnet":
        out.update({"position_offset": 2, "type_vocab_size": 0, "head_act": "gelu",  # transformers: padding_idx 1
                    "relative_attention_num_buckets": int(out.get("relative_attention_num_buckets", 32)),
                    "positions": ["learned", "relative"]})
    out["classifier_act"] = CLASSIFIER_ACT.get(family.name)
    if family.name == "deberta-v2":
        out.update(deberta_config(out))
    if family.name == "modernbert":
        out.update(modernbert_config(out))
    out["model_type"] = family.name
    return out


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


def modernbert_config(raw: dict[str, Any]) -> dict[str, Any]:
    """ModernBERT's fields for BertConfig; its own (biases, window) stay in ``extra``, read by ``RotarySpec``, with the
    layer types and thetas written out in one form whatever the config's transformers version."""
    if not raw.get("decoder_bias", True):
        raise ValueError("ModernBERT with decoder_bias false (an MLM decoder without a bias) is not supported")
    layers = int(raw.get("num_hidden_layers", 22))
    given = raw.get("layer_types")
    if isinstance(given, list) and given and len(given) != layers:
        said = f"is {layers}" if "num_hidden_layers" in raw else f"is missing (so {layers}, ModernBERT's default)"
        raise ValueError(f"layer_types lists {len(given)} layers but num_hidden_layers {said}")
    thetas = rope_thetas(raw)
    hidden, heads = int(raw.get("hidden_size", 768)), int(raw.get("num_attention_heads", 12))
    if hidden % heads:
        raise ValueError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    if (hidden // heads) % 2:
        raise ValueError(f"ModernBERT needs an even head size to rotate pairs (hidden_size {hidden} / "
                         f"num_attention_heads {heads} = {hidden // heads})")
    return {"positions": ["rotary"], "norm_placement": "pre", "mlp": "gated", "final_norm": True,
            **{f"{part}_bias": bool(raw.get(f"{part}_bias", False)) for part in ("norm", "attention", "mlp", "classifier")},
            "num_hidden_layers": layers, "type_vocab_size": 0, "embedding_size": None,
            "hidden_act": str(raw.get("hidden_activation", "gelu")),
            "head_act": str(raw.get("classifier_activation", "gelu")),
            "layer_norm_eps": float(raw.get("norm_eps", 1e-5)),
            "hidden_dropout_prob": float(raw.get("mlp_dropout", 0.0) or 0.0),
            "attention_probs_dropout_prob": float(raw.get("attention_dropout", 0.0) or 0.0),
            "max_position_embeddings": int(raw.get("max_position_embeddings", 8192)),
            "pad_token_id": int(raw.get("pad_token_id") if raw.get("pad_token_id") is not None else 50283),
            "layer_types": layer_types(raw, layers), "rope_parameters": None, "rope_scaling": None,
            "global_rope_theta": thetas[GLOBAL], "local_rope_theta": thetas[LOCAL],
            "classifier_act": None}


DISTILBERT_LAYER = [("attention.q_lin", "attention.self.query"), ("attention.k_lin", "attention.self.key"),
                    ("attention.v_lin", "attention.self.value"), ("attention.out_lin", "attention.output.dense"),
                    ("sa_layer_norm", "attention.output.LayerNorm"), ("ffn.lin1", "intermediate.dense"),
                    ("ffn.lin2", "output.dense"), ("output_layer_norm", "output.LayerNorm")]
ALBERT_LAYER = [("attention.query", "attention.self.query"), ("attention.key", "attention.self.key"),
                ("attention.value", "attention.self.value"), ("attention.dense", "attention.output.dense"),
                ("attention.LayerNorm", "attention.output.LayerNorm"), ("ffn", "intermediate.dense"),
                ("ffn_output", "output.dense"), ("full_layer_layer_norm", "output.LayerNorm")]
MPNET_LAYER = [("attention.attn.q", "attention.self.query"), ("attention.attn.k", "attention.self.key"),
               ("attention.attn.v", "attention.self.value"), ("attention.attn.o", "attention.output.dense"),
               ("attention.LayerNorm", "attention.output.LayerNorm")]
DEBERTA_LAYER = [("attention.self.query_proj", "attention.self.query"), ("attention.self.key_proj", "attention.self.key"),
                 ("attention.self.value_proj", "attention.self.value")]
ALBERT_SHARED = "encoder.albert_layer_groups.0.albert_layers.0."  # the one layer (loaded as layer 0's)
PREFIX = {"deberta-v2": "deberta", "modernbert": "model"}  # the base model's attribute where it is not the model_type
HEADS = {  # family -> (their MLM-head prefix -> ours); their tied decoder weight is checked, then dropped
    "roberta": {"lm_head.dense.": "cls.predictions.transform.dense.",
                "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.", "lm_head.bias": "cls.predictions.bias",
                "lm_head.decoder.weight": "cls.predictions.decoder.weight",
                "lm_head.decoder.bias": "cls.predictions.decoder.bias"},
    "distilbert": {"vocab_transform.": "cls.predictions.transform.dense.",
                   "vocab_layer_norm.": "cls.predictions.transform.LayerNorm.",
                   "vocab_projector.weight": "cls.predictions.decoder.weight",
                   "vocab_projector.bias": "cls.predictions.bias"},
    "electra": {"generator_predictions.dense.": "cls.predictions.transform.dense.",
                "generator_predictions.LayerNorm.": "cls.predictions.transform.LayerNorm.",
                "generator_lm_head.weight": "cls.predictions.decoder.weight",
                "generator_lm_head.bias": "cls.predictions.bias"},
    "mpnet": {"lm_head.dense.": "cls.predictions.transform.dense.",
              "lm_head.layer_norm.": "cls.predictions.transform.LayerNorm.", "lm_head.bias": "cls.predictions.bias",
              "lm_head.decoder.weight": "cls.predictions.decoder.weight",
              "lm_head.decoder.bias": "cls.predictions.decoder.bias"},
    "deberta-v2": {"cls.predictions.decoder.bias": "cls.predictions.bias",  # what the legacy head adds
                   "cls.predictions.": "cls.predictions.",
                   "lm_predictions.lm_head.dense.": "cls.predictions.transform.dense.",
                   "lm_predictions.lm_head.LayerNorm.": "cls.predictions.transform.LayerNorm.",
                   "lm_predictions.lm_head.bias": "cls.predictions.bias"},
    "modernbert": {"head.dense.": "cls.predictions.transform.dense.", "head.norm.": "cls.predictions.transform.LayerNorm.",
                   "decoder.weight": "cls.predictions.decoder.weight", "decoder.bias": "cls.predictions.bias"},
    "albert": {"predictions.dense.": "cls.predictions.transform.dense.",
               "predictions.LayerNorm.": "cls.predictions.transform.LayerNorm.",
               "predictions.bias": "cls.predictions.bias",
               "predictions.decoder.weight": "cls.predictions.decoder.weight",
               "predictions.decoder.bias": "cls.predictions.decoder.bias"},
}
SET_ASIDE = re.compile(r"^(discriminator_predictions\.|classifier\.|qa_outputs\.|pre_classifier\.|sop_classifier\.|"
                       r"mask_predictions\.)")
DEBERTA_CLASSIFIER = {"pooler.dense.": "classifier.dense.", "classifier.weight": "classifier.out_proj.weight",
                      "classifier.bias": "classifier.out_proj.bias"}


def bert_names(state: dict[str, torch.Tensor], family: Family,
               architectures: Sequence[str] = ()) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Weights under BertLab's names, and the heads set aside (not part of an encoder + MLM model
    or a sequence classifier). ``architectures``: the config's, which tells a BERT sequence
    classifier from a token classifier."""
    head: dict[str, torch.Tensor] = {}
    if family.name == "modernbert":
        state = _split_wqkv(state)
    if family.name == "deberta-v2":
        head, state = _deberta_heads(state, architectures)
    elif family.name != "modernbert" and is_sequence_classifier(state, family.name, architectures):
        # (ModernBERT's task heads are set aside: its pooling and head are not bert/encoder/classifier.py's)
        head, state = classifier_names(state, family.name)
    if family.name == "bert":
        return {**state, **head}, []
    out: dict[str, torch.Tensor] = dict(head)
    base = PREFIX.get(family.name, family.name) + "."
    unused = tuple(base + u for u in family.unused) + family.unused  # never read: dropped silently, as transformers does
    aside = sorted({k.split(".")[0] for k in state if _set_aside(k, family.name)})
    for key, value in state.items():
        if _set_aside(key, family.name) or key.endswith("position_ids") or key.startswith(unused):
            continue
        new = _head_name(key, HEADS[family.name])
        if new is None:
            body = key[len(base):] if key.startswith(base) else key  # a bare encoder checkpoint has no prefix
            new = "bert." + _encoder_name(body, family.name)
        out[new] = value
    return out, aside


def _set_aside(key: str, family: str) -> bool:
    """A head this model does not run (DeBERTa's ContextPooler belongs to its task heads, not the encoder; ModernBERT's
    ``drop`` has no weights, its task heads' ``head`` is marked by the split, see ``_split_wqkv``)."""
    return (bool(SET_ASIDE.match(key)) or (family == "deberta-v2" and key.startswith("pooler."))
            or (family == "modernbert" and key.startswith("task_head.")))


MODERNBERT_NAMES = [(r"^embeddings\.tok_embeddings\.", "embeddings.word_embeddings."),
                    (r"^embeddings\.norm\.", "embeddings.LayerNorm."),
                    (r"^layers\.(\d+)\.attn\.(query|key|value)\.", r"encoder.layer.\1.attention.self.\2."),
                    (r"^layers\.(\d+)\.attn\.Wo\.", r"encoder.layer.\1.attention.output.dense."),
                    (r"^layers\.(\d+)\.", r"encoder.layer.\1.")]


def _split_wqkv(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """ModernBERT's fused ``attn.Wqkv`` as three projections (transformers views its output as (3, heads, d_head):
    rows [0, d) are the queries', [d, 2d) the keys', [2d, 3d) the values'); a task model's ``head`` (no ``decoder``
    beside it: it feeds ``classifier``, not the MLM decoder) renamed ``task_head`` so that it is set aside."""
    out: dict[str, torch.Tensor] = {}
    task = not any(k == "decoder.weight" or k == "decoder.bias" for k in state)
    for key, value in state.items():
        match = re.match(r"^(.*layers\.\d+\.attn\.)Wqkv\.(weight|bias)$", key)
        if match:
            for part, name in zip(value.chunk(3, dim=0), ("query", "key", "value")):
                out[f"{match.group(1)}{name}.{match.group(2)}"] = part.contiguous()
        elif task and key.startswith("head."):
            out["task_" + key] = value
        else:
            out[key] = value
    return out


def _deberta_heads(state: dict[str, torch.Tensor],
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
    for key in [k for k in rest if _head_name(k, DEBERTA_CLASSIFIER) is not None]:
        head[_head_name(key, DEBERTA_CLASSIFIER)] = rest.pop(key)
    return head, rest


def _head_name(key: str, mapping: dict[str, str]) -> str | None:
    for theirs, ours in mapping.items():
        if key == theirs or (theirs.endswith(".") and key.startswith(theirs)):
            return ours + key[len(theirs):]
    return None


def _encoder_name(body: str, family: str) -> str:
    if family == "albert":
        return _albert_name(body)
    if family == "mpnet":
        return _renamed_layer(body, MPNET_LAYER)
    if family == "deberta-v2":
        return _renamed_layer(body, DEBERTA_LAYER)
    if family == "modernbert":
        for pattern, ours in MODERNBERT_NAMES:
            if re.match(pattern, body):
                return re.sub(pattern, ours, body)
        return body
    if family != "distilbert":
        return body  # RoBERTa and ELECTRA encoders already use BERT's names (plus embeddings_project)
    match = re.match(r"^transformer\.layer\.(\d+)\.(.+)$", body)
    if match:
        layer, rest = match.groups()
        for theirs, ours in DISTILBERT_LAYER:
            if rest.startswith(theirs + "."):
                return f"encoder.layer.{layer}.{ours}{rest[len(theirs):]}"
    return body


def _albert_name(body: str) -> str:
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


def _renamed_layer(body: str, names: list[tuple[str, str]]) -> str:
    """``encoder.layer.N.<theirs>...`` -> ``encoder.layer.N.<ours>...``; other names unchanged."""
    match = re.match(r"^encoder\.layer\.(\d+)\.(.+)$", body)
    if match:
        layer, rest = match.groups()
        for theirs, ours in names:
            if rest.startswith(theirs + "."):
                return f"encoder.layer.{layer}.{ours}{rest[len(theirs):]}"
    return body
