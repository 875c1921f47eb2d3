"""The BERT family on one hooked encoder: every family's config and weight names translated to ``BertLab``'s (which
mirrors Hugging Face's BERT), so its checkpoints load strictly, with every hook point, intervention and view working
unchanged. One file per family (``family.py`` is BERT itself; ``roberta.py``, ``distilbert.py``, ``electra.py``,
``albert.py``, ``mpnet.py``, ``deberta.py``, ``modernbert.py``), each saying what differs in its docstring and its
code; the one list of families (``FAMILIES``) is built from them.

Sequence classifiers (``*ForSequenceClassification``) keep their heads, translated to ``classifier.dense`` /
``classifier.out_proj`` (bert/encoder/classifier.py); other task heads are set aside. Special tokens keep BERT's names
in what users see ([CLS], [SEP], [MASK], [PAD]); ids are the model's."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

import torch

from ..config_checks import LOADER_FIELDS, check_field
from .family import BERT_SPECIALS, FAMILY_CLASSES, Family, head_name

for _module in pkgutil.iter_modules(__path__):  # every file here is a family that registers itself
    importlib.import_module(f"{__name__}.{_module.name}")

FAMILIES = tuple(sorted(FAMILY_CLASSES, key=lambda name: FAMILY_CLASSES[name].order))

__all__ = ["BERT_SPECIALS", "FAMILIES", "Family", "bert_config_dict", "bert_names", "checked_fields", "family_of"]


def family_of(raw: dict[str, Any]) -> Family:
    """The family of a config (its full dict: DeBERTa's ``position_biased_input`` decides what is unused)."""
    kind = raw.get("model_type", "bert")
    if kind not in FAMILY_CLASSES:
        raise ValueError(f"model_type {kind!r} is not in the BERT family this model loads ({', '.join(FAMILIES)})")
    return FAMILY_CLASSES[kind](raw)


def checked_fields(raw: dict[str, Any], family: Family) -> dict[str, Any]:
    """``raw`` without the fields only the loader sets or only other families have, once every field this family
    reads has passed ``check_field``."""
    for name, spec in family.fields.items():
        if name in raw:
            check_field(name, raw[name], spec)
    foreign = {name for other in FAMILY_CLASSES.values() for name in other.own_fields} - set(family.own_fields)
    return {k: v for k, v in raw.items() if k not in LOADER_FIELDS and k not in foreign}


def bert_config_dict(raw: dict[str, Any], family: Family) -> dict[str, Any]:
    """The config in BERT's field names, plus what the family adds."""
    out = family.config({**raw, "classifier_act": family.classifier_act})  # DeBERTa's is its config's
    out["model_type"] = family.name
    return out


def bert_names(state: dict[str, torch.Tensor], family: Family,
               architectures: Sequence[str] = ()) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Weights under BertLab's names, and the heads set aside (not part of an encoder + MLM model
    or a sequence classifier). ``architectures``: the config's, which tells a BERT sequence
    classifier from a token classifier."""
    head, state = family.prepare(state, architectures)
    if family.name == "bert":
        return {**state, **head}, []
    out: dict[str, torch.Tensor] = dict(head)
    base = (family.prefix or family.name) + "."
    unused = tuple(base + u for u in family.unused) + family.unused  # never read: dropped silently, as transformers does
    aside = sorted({k.split(".")[0] for k in state if family.set_aside(k)})
    for key, value in state.items():
        if family.set_aside(key) or key.endswith("position_ids") or key.startswith(unused):
            continue
        new = head_name(key, family.heads)
        if new is None:
            body = key[len(base):] if key.startswith(base) else key  # a bare encoder checkpoint has no prefix
            new = "bert." + family.encoder_name(body)
        out[new] = value
    return out, aside
