"""What reads the last layer: BERT's pooler and the pretraining heads (the MLM head, tied to the word embeddings,
and the NSP head)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import BertConfig
from .hooks import HookPoint
from .layers import activation, layer_norm


class BertPooler(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (batch, d_model) from [CLS]


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        bias = cfg.has_bias("classifier")  # ModernBERT's head.dense may have none
        self.dense = nn.Linear(cfg.hidden_size, cfg.embedding_dim, bias=bias)  # back to the (tied) embedding size
        self.act = activation(cfg.head_act or cfg.hidden_act)
        self.LayerNorm = layer_norm(cfg, cfg.embedding_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """MLM head; the decoder matrix is the word embedding matrix (tied), plus its own bias."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.hook_logits = HookPoint()  # (..., vocab)

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return self.hook_logits(F.linear(self.transform(hidden), word_embeddings, self.bias))


class BertHeads(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        if cfg.has_mlm_head:
            self.predictions = BertLMPredictionHead(cfg)
        if cfg.has_nsp_head:
            self.seq_relationship = nn.Linear(cfg.hidden_size, 2)
            self.hook_nsp_logits = HookPoint()  # (batch, 2): [is next, is random]
