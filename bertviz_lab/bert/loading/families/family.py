"""What a family of the BERT family is to the loader: its special tokens, how its config reads in BERT's field names,
what its checkpoint's weights are called in ``BertLab``'s (which mirrors Hugging Face's BERT), which heads it sets
aside and which names it never reads. ``Family`` is BERT itself; each other family is one file of this folder that
subclasses it and registers itself, saying only what differs (``families/__init__.py`` builds the one list)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from ..config_checks import COMMON, Field

BERT_SPECIALS = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]"}
BPE_SPECIALS = {"cls": "<s>", "sep": "</s>", "mask": "<mask>", "pad": "<pad>"}
# heads no family's encoder + MLM model or sequence classifier runs: replaced-token, QA, sentence-order, task heads
SET_ASIDE = re.compile(r"^(discriminator_predictions\.|classifier\.|qa_outputs\.|pre_classifier\.|sop_classifier\.|"
                       r"mask_predictions\.)")
FAMILY_CLASSES: dict[str, type[Family]] = {}


def register(cls: type[Family]) -> type[Family]:
    """Class decorator: the family under its ``name`` (config.json's ``model_type``)."""
    if cls.name in FAMILY_CLASSES:
        raise ValueError(f"two families are called {cls.name!r}")
    FAMILY_CLASSES[cls.name] = cls
    return cls


def head_name(key: str, mapping: dict[str, str]) -> str | None:
    """``key`` under our name by the first prefix of ``mapping`` it has (a prefix ends with "."), else None."""
    for theirs, ours in mapping.items():
        if key == theirs or (theirs.endswith(".") and key.startswith(theirs)):
            return ours + key[len(theirs):]
    return None


def renamed_layer(body: str, names: Sequence[tuple[str, str]], pattern: str = r"^encoder\.layer\.(\d+)\.(.+)$") -> str:
    """``encoder.layer.N.<theirs>...`` (or ``pattern``'s layer and rest) -> ``encoder.layer.N.<ours>...``; other
    names unchanged."""
    match = re.match(pattern, body)
    if match:
        layer, rest = match.groups()
        for theirs, ours in names:
            if rest.startswith(theirs + "."):
                return f"encoder.layer.{layer}.{ours}{rest[len(theirs):]}"
    return body


class Family:
    """BERT (Devlin et al. 2019): the names ``BertLab`` has. A subclass overrides what its family does otherwise."""

    name: ClassVar[str] = "bert"
    order: ClassVar[int] = 0  # where it stands in the one list (FAMILIES), as users read it
    specials: ClassVar[dict[str, str]] = BERT_SPECIALS  # role -> the tokenizer's token for it
    prefix: ClassVar[str | None] = None  # the base model's attribute in a checkpoint (None: the family's name)
    heads: ClassVar[dict[str, str]] = {}  # their MLM-head prefix -> ours; a tied decoder weight is checked, then dropped
    # a *ForSequenceClassification head (bert/encoder/classifier.py): the activation between its dense layer and its
    # output (None: BERT's pooler is the dense layer), its names -> ours, and a weight only this family's sequence
    # classifier has (None: none, so only the config's ``architectures`` tells it from a token classifier)
    classifier_act: ClassVar[str | None] = None
    classifier_renames: ClassVar[dict[str, str]] = {"classifier.weight": "classifier.out_proj.weight",
                                                    "classifier.bias": "classifier.out_proj.bias"}
    classifier_marker: ClassVar[str | None] = None
    # config.json's fields it reads, each with what it may hold (checked before anything is built), and those of
    # them no other family has (ignored in a family that has not got them, as transformers does)
    fields: ClassVar[dict[str, Field]] = COMMON
    own_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, raw: dict[str, Any]) -> None:
        self.unused = self.unused_names(raw)  # checkpoint names (after the prefix) the model never reads: dropped

    def unused_names(self, raw: dict[str, Any]) -> tuple[str, ...]:
        return ()

    def config(self, out: dict[str, Any]) -> dict[str, Any]:
        """The family's config fields in BERT's names and what it adds (``out`` is a copy of config.json's)."""
        return out

    def prepare(self, state: dict[str, torch.Tensor], architectures: Sequence[str]
                ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """(a sequence classifier's head under our names, the rest of the weights)."""
        if not self.is_sequence_classifier(state, architectures):
            return {}, state
        head: dict[str, torch.Tensor] = {}
        rest: dict[str, torch.Tensor] = {}
        for key, value in state.items():
            new = head_name(key, self.classifier_renames)
            (rest if new is None else head)[key if new is None else new] = value
        return head, rest

    def is_sequence_classifier(self, state: dict[str, torch.Tensor], architectures: Sequence[str]) -> bool:
        """The config says so, or (without ``architectures``) the head's weights can only be one."""
        if architectures:
            return any(str(a).endswith("ForSequenceClassification") for a in architectures)
        return self.classifier_marker is not None and self.classifier_marker in state

    def set_aside(self, key: str) -> bool:
        """A head this model does not run."""
        return bool(SET_ASIDE.match(key))

    def encoder_name(self, body: str) -> str:
        """An encoder weight's name (after the base model's prefix) in BERT's."""
        return body


register(Family)
