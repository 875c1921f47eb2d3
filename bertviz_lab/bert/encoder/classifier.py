"""Sequence-classification heads of the BERT family, as Hugging Face's ``*ForSequenceClassification``
models compute them (eval mode, so their dropouts are the identity), under one module name:

- BERT: the pooler (dense + tanh on [CLS], ``bert.pooler``), then ``classifier`` (a Linear);
- RoBERTa: ``classifier.dense`` + tanh + ``classifier.out_proj`` on <s> (no pooler);
- DistilBERT: ``pre_classifier`` + ReLU + ``classifier`` on [CLS];
- ELECTRA: ``classifier.dense`` + GELU (exact) + ``classifier.out_proj`` on [CLS];
- ALBERT: as BERT (its pooler, then ``classifier``);
- MPNet: as RoBERTa.

Here every family's head is ``classifier.dense`` (absent for BERT, which reads the pooler) and
``classifier.out_proj``; ``classifier_names`` translates the checkpoint's names. A BERT
``classifier.weight`` alone cannot tell a sequence classifier from a token classifier, so the
config's ``architectures`` decides (transformers writes it on every save).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# family -> the activation between the head's dense layer and its output; None: BERT's pooler is the dense layer
CLASSIFIER_ACT: dict[str, str | None] = {"bert": None, "roberta": "tanh", "distilbert": "relu", "electra": "gelu",
                                         "albert": None, "mpnet": "tanh"}
_ACTS = {"tanh": torch.tanh, "relu": F.relu, "gelu": F.gelu}  # gelu: exact (erf), transformers' "gelu"
# family -> (their name -> ours); a name ending in "." is a prefix
_RENAMES = {
    "bert": {"classifier.weight": "classifier.out_proj.weight", "classifier.bias": "classifier.out_proj.bias"},
    "albert": {"classifier.weight": "classifier.out_proj.weight", "classifier.bias": "classifier.out_proj.bias"},
    "roberta": {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."},
    "electra": {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."},
    "mpnet": {"classifier.dense.": "classifier.dense.", "classifier.out_proj.": "classifier.out_proj."},
    "distilbert": {"pre_classifier.": "classifier.dense.", "classifier.weight": "classifier.out_proj.weight",
                   "classifier.bias": "classifier.out_proj.bias"},
}
_SHAPE_KEY = {"bert": None, "albert": None, "mpnet": "classifier.out_proj.weight", "roberta": "classifier.out_proj.weight",
              "electra": "classifier.out_proj.weight",
              "distilbert": "pre_classifier.weight"}  # a key only this family's sequence classifier has


def is_sequence_classifier(state: dict[str, torch.Tensor], family: str, architectures: Sequence[str] = ()) -> bool:
    """Whether the checkpoint is a ``*ForSequenceClassification``: its config says so, or (without
    ``architectures``) its head's weights can only be one (never for BERT, whose token classifier
    has the same weights)."""
    if architectures:
        return any(str(a).endswith("ForSequenceClassification") for a in architectures)
    key = _SHAPE_KEY[family]
    return key is not None and key in state


def classifier_names(state: dict[str, torch.Tensor], family: str) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(the head's weights under our names, the rest of the weights untouched)."""
    head: dict[str, torch.Tensor] = {}
    rest: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        new = _renamed(key, _RENAMES[family])
        if new is None:
            rest[key] = value
        else:
            head[new] = value
    return head, rest


def _renamed(key: str, mapping: dict[str, str]) -> str | None:
    for theirs, ours in mapping.items():
        if key == theirs or (theirs.endswith(".") and key.startswith(theirs)):
            return ours + key[len(theirs):]
    return None


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
