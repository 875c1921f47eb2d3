"""A drop-in for BertViz's ``neuron_view``: ``from bertviz_lab import neuron_view`` then
``neuron_view.show(model, model_type, tokenizer, sentence_a, sentence_b=None, layer=None, head=None,
html_action="view")`` with an ordinary transformers BERT, RoBERTa, DistilBERT or ELECTRA model and
its tokenizer. BertViz needs its own forked copy of transformers for this view; here the model's
weights are copied into bertviz-lab's encoder and the query and key vectors come from its hook
points (``notebook/neuron.py``). ``layer`` and ``head`` are 0-based, as in BertViz."""
from __future__ import annotations

from typing import Any

import torch

from .bert.loading.checkpoints import model_from_transformers
from .figures.neuron import NeuronStart, neuron_html, neuron_page, neuron_payload
from .lens import queries_and_keys_of
from .notebook.dropin import prettify
from .notebook.widget import ViewerHTML, display_or_return

MODEL_TYPES = ("bert", "roberta", "distilbert", "electra", "albert", "mpnet")


def show(model: Any, model_type: str, tokenizer: Any, sentence_a: str, sentence_b: str | None = None,
         display_mode: str = "light", layer: int | None = None, head: int | None = None, html_action: str = "view"):
    """BertViz's signature; ``display_mode`` "light" or "dark"; "return" gives an object whose ``.data``
    is a whole HTML page (``<meta charset="utf-8">``, nothing fetched)."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type must be one of {', '.join(MODEL_TYPES)} (got {model_type!r})")
    actual = getattr(getattr(model, "config", None), "model_type", model_type)
    if actual != model_type:
        raise ValueError(f"model_type is {model_type!r} but the model is a {actual!r} model")
    if display_mode not in ("light", "dark"):
        raise ValueError("display_mode must be 'light' or 'dark'")
    encoder = model_from_transformers(model)
    inputs = tokenizer(sentence_a, sentence_b) if sentence_b is not None else tokenizer(sentence_a)
    ids = torch.tensor([inputs["input_ids"]])
    segments = inputs.get("token_type_ids")
    types = torch.tensor([segments]) if segments is not None and encoder.config.type_vocab_size else None
    if segments is None:  # RoBERTa/DistilBERT tokenizers give none: sentence B starts after the first separator
        sep = tokenizer.sep_token_id
        first = inputs["input_ids"].index(sep) if sentence_b is not None and sep in inputs["input_ids"] else len(ids[0])
        segments = [0 if i <= first else 1 for i in range(len(ids[0]))]
    queries, keys = queries_and_keys_of(encoder, ids, types)
    tokens = prettify(tokenizer.convert_ids_to_tokens(inputs["input_ids"]))
    payload = neuron_payload(tokens, list(segments), queries, keys, model_type, NeuronStart(layer or 0, head or 0))
    payload["theme"] = display_mode
    if html_action == "return":
        return ViewerHTML(neuron_page(payload))
    return display_or_return(neuron_html(payload), html_action)
