"""Sequence-classification heads of the BERT family, as Hugging Face's ``*ForSequenceClassification``
models compute them (eval mode, so their dropouts are the identity), under one module name:

- BERT: the pooler (dense + tanh on [CLS], ``bert.pooler``), then ``classifier`` (a Linear);
- RoBERTa: ``classifier.dense`` + tanh + ``classifier.out_proj`` on <s> (no pooler);
- DistilBERT: ``pre_classifier`` + ReLU + ``classifier`` on [CLS];
- ELECTRA: ``classifier.dense`` + GELU (exact) + ``classifier.out_proj`` on [CLS];
- ALBERT: as BERT (its pooler, then ``classifier``);
- MPNet: as RoBERTa.

Here every family's head is ``classifier.dense`` (absent for BERT, which reads the pooler) and
``classifier.out_proj``; each family's file (bert/loading/families/) says its activation and translates its
checkpoint's names.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

_ACTS = {"tanh": torch.tanh, "relu": F.relu, "gelu": F.gelu}  # gelu: exact (erf), transformers' "gelu"


def class_labels(n_classes: int, extra: dict[str, Any]) -> list[str]:
    """The label of each class from the config's ``id2label`` (JSON keys are strings), or
    transformers' default ``LABEL_i`` when the config has none; a table that does not name every
    class exactly is an error."""
    table = extra.get("id2label")
    if not table:
        return [f"LABEL_{i}" for i in range(n_classes)]
    labels = {int(k): str(v) for k, v in table.items()}
    if sorted(labels) != list(range(n_classes)):
        raise ValueError(f"config id2label names classes {sorted(labels)} but the classifier has {n_classes} outputs")
    return [labels[i] for i in range(n_classes)]


class SequenceClassifier(nn.Module):
    """Class logits from the first token's hidden state (or BERT's pooled output)."""

    def __init__(self, hidden_size: int, n_classes: int, act: str | None, dropout: float) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size) if act is not None else None
        self.act = _ACTS[act] if act is not None else None
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(hidden_size, n_classes)

    def forward(self, hidden: torch.Tensor, pooled: torch.Tensor | None) -> torch.Tensor:
        if self.dense is None:
            if pooled is None:
                raise ValueError("a BERT sequence classifier reads the pooler, and this model has none")
            x = pooled  # (batch, d_model): tanh(dense(h[CLS]))
        else:
            x = self.act(self.dense(self.dropout(hidden[:, 0])))  # (batch, d_model) from [CLS] / <s>
        return self.out_proj(self.dropout(x))  # (batch, classes)
