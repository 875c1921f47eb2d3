"""ModernBERT (Warner et al. 2024, arXiv:2412.13663; transformers' ``models/modernbert/modeling_modernbert.py``),
model_type "modernbert": a pre-LayerNorm encoder (``norm_placement`` "pre", ``mlp`` "gated", a final norm) with
rotary positions (bert/positions/rotary.py) with no position table and no segments: token embeddings + LayerNorm
(``embeddings.tok_embeddings`` / ``norm``), layers of ``attn_norm`` (absent in layer 0), a fused ``attn.Wqkv``
(split here into attention.self.{query,key,value}: its rows are q, k, v in that order), queries and keys turned by
rotary positions (Su et al. 2021), ``attn.Wo`` (attention.output.dense), ``mlp_norm`` and a GeGLU
``mlp.Wi``/``mlp.Wo``; ``final_norm`` after the last layer. Every ``global_attn_every_n_layers``-th layer (or
``layer_types``) is global with ``global_rope_theta``, the others see +-``local_attention // 2`` tokens with
``local_rope_theta``. ``norm_bias``, ``attention_bias``, ``mlp_bias`` and ``classifier_bias`` say which biases
exist. The MLM head ``head.dense`` + ``classifier_activation`` + ``head.norm``, then ``decoder`` tied to the token
embeddings with its bias (cls.predictions.*). Refused by name: scaled rotary (``rope_type`` other than default), a
decoder without a bias. Task heads (``head`` + ``classifier`` of a sequence or token classifier) are set aside. Real
checkpoints ship a BPE tokenizer.json whose specials are [CLS] [SEP] [MASK] [PAD]."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch

from ...positions.rotary import GLOBAL, LOCAL, layer_types, rope_thetas
from ..config_checks import (
    ACTIVATION,
    COMMON,
    EPSILON,
    FLAG,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_THETA,
    OPTIONAL_PROBABILITY,
    Field,
    real,
    whole,
)
from .family import Family, register

# the fields of BERT's it reads (its others are its own names)
MODERNBERT_READS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                    "max_position_embeddings", "pad_token_id", "classifier_dropout", "initializer_range",
                    "architectures", "id2label", "position_embedding_type")
MODERNBERT_NAMES = [(r"^embeddings\.tok_embeddings\.", "embeddings.word_embeddings."),
                    (r"^embeddings\.norm\.", "embeddings.LayerNorm."),
                    (r"^layers\.(\d+)\.attn\.(query|key|value)\.", r"encoder.layer.\1.attention.self.\2."),
                    (r"^layers\.(\d+)\.attn\.Wo\.", r"encoder.layer.\1.attention.output.dense."),
                    (r"^layers\.(\d+)\.", r"encoder.layer.\1.")]


@register
class ModernBERT(Family):
    name = "modernbert"
    order = 7
    fields = {**{k: COMMON[k] for k in MODERNBERT_READS}, "hidden_activation": ACTIVATION,
              "classifier_activation": ACTIVATION, "norm_eps": EPSILON, "mlp_dropout": OPTIONAL_PROBABILITY,
              "attention_dropout": OPTIONAL_PROBABILITY, "global_attn_every_n_layers": whole(1, MAX_LAYERS),
              "local_attention": whole(0, MAX_POSITIONS), "layer_types": Field("words", null=True),
              "rope_parameters": Field("rope", null=True),
              "global_rope_theta": real(0, MAX_THETA, null=True, open_low=True),
              "local_rope_theta": real(0, MAX_THETA, null=True, open_low=True),
              **{name: FLAG for name in ("decoder_bias", "norm_bias", "attention_bias", "mlp_bias", "classifier_bias")}}
    prefix = "model"
    heads = {"head.dense.": "cls.predictions.transform.dense.", "head.norm.": "cls.predictions.transform.LayerNorm.",
             "decoder.weight": "cls.predictions.decoder.weight", "decoder.bias": "cls.predictions.bias"}

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        out.update(modernbert_config(out))
        return out

    def prepare(self, state: dict[str, torch.Tensor], architectures: Sequence[str]
                ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """Its task heads are set aside (their pooling and head are not bert/encoder/classifier.py's)."""
        return {}, split_wqkv(state)

    def set_aside(self, key: str) -> bool:
        """``drop`` has no weights; a task model's ``head`` is marked by the split (``split_wqkv``)."""
        return super().set_aside(key) or key.startswith("task_head.")

    def encoder_name(self, body: str) -> str:
        for pattern, ours in MODERNBERT_NAMES:
            if re.match(pattern, body):
                return re.sub(pattern, ours, body)
        return body


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


def split_wqkv(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
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
