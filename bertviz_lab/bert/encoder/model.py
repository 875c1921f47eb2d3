"""BERT in plain PyTorch, with hook points where users look and intervene: the whole model (its parts in config.py,
layers.py and heads.py, re-exported here).

The module tree *is* the Hugging Face checkpoint format (``bert.encoder.layer.0.attention.
self.query.weight``, ``cls.predictions.transform.dense.weight``, ``cls.predictions.bias``,
``cls.seq_relationship.weight``), so real checkpoints load with ``strict=True``. The MLM
decoder is tied to the word embeddings and is therefore not a module of its own. A sequence
classifier's head is ``classifier`` (bert/encoder/classifier.py), whatever the family calls it.

The architecture is a set of typed axes in the config, never a family: the position schemes (``positions``:
one file each under bert/positions/, which add their own modules and hook points and act where a forward pass asks
them), the norm placement (post: BERT; pre: ModernBERT's ``PreNormLayer`` with ``attn_norm``/``mlp_norm``), the MLP
kind (dense, or the gated ``mlp.Wi``/``mlp.Wo``), a final norm (``bert.final_norm``) and shared layers (ALBERT). Every
layer takes the pass's ``PassPositions`` (``BertLab.pass_positions``) as its third argument.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..positions import PassPositions, PositionScheme
from ..positions import build as build_schemes
from ..runtime.budget import charge, check_time
from .classifier import SequenceClassifier, class_labels
from .config import MLP_KINDS, NORM_PLACEMENTS, BertConfig
from .heads import BertHeads, BertLMPredictionHead, BertPooler, BertPredictionHeadTransform
from .hook_table import HOOK_TABLE, hook_name
from .hooks import Edit, HookPoint, hook_run, name_hook_points
from .layers import (
    BertAttention,
    BertEmbeddings,
    BertEncoder,
    BertIntermediate,
    BertLayer,
    BertOutput,
    BertSelfAttention,
    BertSelfOutput,
    GatedMLP,
    PreNormAttentionOutput,
    PreNormLayer,
    activation,
    layer_norm,
    share_parameters,
)

__all__ = ["MLP_KINDS", "NORM_PLACEMENTS", "BertAttention", "BertConfig", "BertEmbeddings", "BertEncoder",
           "BertForwardOutput", "BertHeads", "BertIntermediate", "BertLMPredictionHead", "BertLab", "BertLayer",
           "BertModel", "BertOutput", "BertPooler", "BertPredictionHeadTransform", "BertSelfAttention",
           "BertSelfOutput", "GatedMLP", "PreNormAttentionOutput", "PreNormLayer", "activation", "init_weights",
           "layer_hook", "layer_norm", "share_parameters"]


class BertModel(nn.Module):
    def __init__(self, cfg: BertConfig, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        schemes = build_schemes(cfg) if schemes is None else schemes
        self.embeddings = BertEmbeddings(cfg, schemes)
        # ELECTRA: embeddings smaller than the hidden size are projected up before the encoder.
        self.embeddings_project = nn.Linear(cfg.embedding_size, cfg.hidden_size) if cfg.embedding_size else None
        self.encoder = BertEncoder(cfg, schemes)
        self.pooler = BertPooler(cfg) if cfg.has_pooler else None
        # ModernBERT normalises the last layer's output (pre-norm layers leave it unnormalised)
        self.final_norm = layer_norm(cfg, cfg.hidden_size) if cfg.final_norm else None
        if self.final_norm is not None:
            self.hook_final = HookPoint()  # (batch, pos, d_model) final_norm(last layer's output)


@dataclass
class BertForwardOutput:
    last_hidden_state: torch.Tensor  # (batch, pos, d_model)
    pooled: torch.Tensor | None  # (batch, d_model)
    mlm_logits: torch.Tensor | None  # (batch, pos, vocab), or (n_selected, vocab) with mlm_positions
    nsp_logits: torch.Tensor | None  # (batch, 2)
    class_logits: torch.Tensor | None = None  # (batch, classes) of a sequence classifier


class BertLab(nn.Module):
    """Encoder plus whichever pretraining heads the checkpoint has."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        if cfg.has_nsp_head and not cfg.has_pooler:
            raise ValueError("an NSP head needs the pooler")
        if cfg.n_classes and cfg.classifier_act is None and not cfg.has_pooler:
            raise ValueError("a BERT sequence classifier needs the pooler")
        self.config = cfg
        self.schemes = build_schemes(cfg)  # the position schemes, made once for every module (bert/positions/)
        self.bert = BertModel(cfg, self.schemes)
        self.cls = BertHeads(cfg) if (cfg.has_mlm_head or cfg.has_nsp_head) else None
        self.classifier = (SequenceClassifier(cfg.hidden_size, cfg.n_classes, cfg.classifier_act,
                                              float(cfg.extra.get("classifier_dropout") or cfg.hidden_dropout_prob))
                           if cfg.n_classes else None)
        self.class_labels: list[str] = class_labels(cfg.n_classes, cfg.extra) if cfg.n_classes else []
        self.hook_names: list[str] = name_hook_points(self)

    @property
    def has_mlm_head(self) -> bool:
        return self.config.has_mlm_head

    @property
    def has_nsp_head(self) -> bool:
        return self.config.has_nsp_head

    def hooks(
        self,
        capture: list[str] | tuple[str, ...] = (),
        edits: dict[str, Edit | list[Edit]] | None = None,
        detach: bool = True,
    ):
        """Context manager: capture/edit at the named hook points (glob patterns allowed)."""
        return hook_run(self.hook_names, capture=capture, edits=edits, detach=detach)

    def attention_bias(
        self, attention_mask: torch.Tensor | None, extra_bias: torch.Tensor | None, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """Additive bias broadcastable to (batch, heads, query, key); None if nothing is masked."""
        bias = None
        if attention_mask is not None and not bool(attention_mask.all()):
            keep = attention_mask[:, None, None, :].to(dtype)  # (batch, 1, 1, key)
            bias = (1.0 - keep) * torch.finfo(dtype).min
        if extra_bias is not None:
            extra_bias = extra_bias.to(dtype)
            bias = extra_bias if bias is None else torch.clamp(bias + extra_bias, min=torch.finfo(dtype).min)
        return bias

    def scheme(self, name: str) -> PositionScheme | None:
        """The loaded model's position scheme called ``name``, or None: what views and interventions ask."""
        return next((scheme for scheme in self.schemes if scheme.name == name), None)

    def pass_positions(self, position_ids: torch.Tensor, bias: torch.Tensor | None, n: int,
                       dtype: torch.dtype) -> PassPositions:
        """What every layer of one pass reads: ``bias`` (the mask) plus each scheme's score bias (relative buckets,
        ALiBi: through ``encoder.hook_position_bias``, so both the fused and the explicit attention see it), and
        each scheme's per-pass state (rotary angles and window, the disentangled table and its rows)."""
        for scheme in self.schemes:
            added = scheme.score_bias(self, position_ids, n, dtype)  # (batch | 1, heads, query, key) or None
            if added is not None:
                bias = added if bias is None else torch.clamp(bias + added, min=torch.finfo(dtype).min)
        state = {}
        for scheme in self.schemes:
            value = scheme.pass_state(self, position_ids, bias, n, dtype)
            if value is not None:
                state[scheme.name] = value
        return PassPositions(bias, state)

    def forward(
        self,
        input_ids: torch.Tensor,  # (batch, pos)
        token_type_ids: torch.Tensor | None = None,  # (batch, pos)
        attention_mask: torch.Tensor | None = None,  # (batch, pos) 1 = real token, 0 = padding
        position_ids: torch.Tensor | None = None,  # (batch | 1, pos)
        attention_bias: torch.Tensor | None = None,  # additive, broadcastable to (batch, heads, q, k)
        mlm_positions: torch.Tensor | None = None,  # (batch, pos) bool: where to compute MLM logits
        compute_mlm: bool = True,
    ) -> BertForwardOutput:
        b, t = input_ids.shape
        if t > self.config.max_tokens:
            raise ValueError(f"{t} tokens exceed the model maximum of {self.config.max_tokens}")
        charge(input_ids, attention_mask, mlm_positions, compute_mlm and self.config.has_mlm_head)  # request caps
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(t, device=input_ids.device)[None]  # (1, pos)
        elif not any(scheme.reads_position_ids for scheme in self.schemes):
            raise ValueError(f"this model has no absolute positions, so position ids would change nothing; its positions "
                             f"are {' and '.join(s.label for s in self.schemes)}")
        dtype = self.bert.embeddings.word_embeddings.weight.dtype
        hidden = self.bert.embeddings(input_ids, token_type_ids, position_ids)  # (batch, pos, d_emb)
        if self.bert.embeddings_project is not None:
            hidden = self.bert.embeddings_project(hidden)  # (batch, pos, d_model)
        positions = self.pass_positions(position_ids, self.attention_bias(attention_mask, attention_bias, dtype), t, dtype)
        for layer in self.bert.encoder.layer:
            check_time()  # a request past its time stops here, not after the whole pass (bert/runtime/budget.py)
            hidden = layer(hidden, positions.bias, positions)
        if self.bert.final_norm is not None:
            hidden = self.bert.hook_final(self.bert.final_norm(hidden))  # (batch, pos, d_model)
        pooled = self.bert.pooler(hidden) if self.bert.pooler is not None else None
        mlm_logits = nsp_logits = None
        if self.cls is not None and self.config.has_mlm_head and compute_mlm:
            selected = hidden if mlm_positions is None else hidden[mlm_positions]  # (n, d_model)
            mlm_logits = self.cls.predictions(selected, self.bert.embeddings.word_embeddings.weight)
        if self.cls is not None and self.config.has_nsp_head:
            nsp_logits = self.cls.hook_nsp_logits(self.cls.seq_relationship(pooled))  # (batch, 2)
        class_logits = self.classifier(hidden, pooled) if self.classifier is not None else None  # (batch, classes)
        return BertForwardOutput(hidden, pooled, mlm_logits, nsp_logits, class_logits)


def layer_hook(layer: int, name: str) -> str:
    """Hook name inside layer ``layer`` (the hook table's): ``layer_hook(3, 'pattern')`` ->
    ``bert.encoder.layer.3.attention.self.hook_pattern``."""
    if not HOOK_TABLE[name].per_layer:
        raise KeyError(name)
    return hook_name(name, layer)



def init_weights(model: BertLab, seed: int = 0) -> BertLab:
    """BERT's initialisation (Hugging Face ``_init_weights``): Linear and Embedding weights
    N(0, initializer_range), biases 0, the padding row 0, LayerNorm 1 and 0. Seeded, and without
    touching the global random state."""
    std = float(model.config.extra.get("initializer_range", 0.02))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.copy_(torch.empty_like(module.weight).normal_(0.0, std, generator=generator))
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.zero_()
                if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                if module.bias is not None:  # ModernBERT's norms may have none
                    module.bias.zero_()
            elif isinstance(module, BertLMPredictionHead):
                module.bias.zero_()
    return model
