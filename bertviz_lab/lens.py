"""How a masked-word prediction forms across layers, and the vectors attention is made of.

MLM lens: the model's own full MLM head (transform, LayerNorm, tied decoder and bias) applied to each
layer's hidden state at a masked position, the encoder analogue of the logit lens (nostalgebraist
2020, "interpreting GPT: the logit lens"); the last layer's row is exactly the model's prediction.
Read it as what the head would answer if the encoder stopped at that layer, not as what the layer
"knows": the head was trained on the last layer only.

Queries and keys: each head's projected vectors (after weights and bias), so
softmax(q·kᵀ/√d + mask) reproduces the attention shown; the neuron view and the query–key views
build on them (Vig 2019, "A multiscale visualization of attention in the Transformer model").
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from .bert import layer_hook
from .bert.encoder.hook_table import SCORE_TERMS, every_layer, hook_name, score_query_key
from .engines import LOCAL, Engine, Reading, map_by_length
from .lab import Analysis, Encoded, InputError, Lab


@dataclass
class LensLayer:
    layer: int  # 1-based
    tokens: list[str]  # top-k, most probable first
    probabilities: list[float]
    final_rank: int  # 1-based rank of the last layer's top-1 word at this layer
    final_probability: float


@dataclass
class PositionLens:
    position: int
    final: str  # the model's prediction (the last layer's top-1)
    layers: list[LensLayer]

    def to_json(self) -> dict:
        return {"position": self.position, "final": self.final,
                "layers": [{"layer": r.layer, "tokens": r.tokens, "probabilities": r.probabilities,
                            "final_rank": r.final_rank, "final_probability": r.final_probability}
                           for r in self.layers]}


def mlm_lens(lab: Lab, analysis: Analysis, top_k: int = 5) -> list[PositionLens]:
    """Per predicted position of ``analysis``, per layer, the MLM head's top-k on that layer's state."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no masked-language-model head, so there is no MLM lens")
    positions = [p.position for p in analysis.mlm]
    if not positions:
        raise InputError("mask a token first: the lens follows a masked-word prediction through the layers")
    names = [hook_name("out", i) for i in range(lab.n_layers)]  # each layer's output state
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=names, compute_mlm=False)
    hidden = torch.stack([cache[name][0, positions] for name in names])  # (layers, positions, d_model)
    weights = lab.model.bert.embeddings.word_embeddings.weight
    final_norm = getattr(lab.model.bert, "final_norm", None)  # ModernBERT normalises the last state before its head
    with torch.inference_mode():
        if final_norm is not None:
            hidden = final_norm(hidden)
        probs = torch.softmax(lab.model.cls.predictions(hidden, weights).float(), dim=-1)  # (layers, positions, vocab)
    top = torch.topk(probs, k=min(int(top_k), probs.shape[-1]), dim=-1)
    final_ids = probs[-1].argmax(-1)  # (positions,)
    out = []
    for j, position in enumerate(positions):
        final = int(final_ids[j])
        ranks = (probs[:, j] > probs[:, j, final][:, None]).sum(-1) + 1  # (layers,) 1-based rank of the final word
        rows = [LensLayer(layer + 1, [lab.tokenizer.id_to_token(int(i)) for i in top.indices[layer, j]],
                          [float(v) for v in top.values[layer, j]], int(ranks[layer]), float(probs[layer, j, final]))
                for layer in range(lab.n_layers)]
        out.append(PositionLens(position, lab.tokenizer.id_to_token(final), rows))
    return out


def _stacked(model, cache: dict[str, torch.Tensor], layers: int) -> tuple[np.ndarray, np.ndarray]:
    q, k = score_query_key(model.hook_names)
    queries = torch.stack([cache[hook_name(q, i)][0] for i in range(layers)])  # (layers, heads, t, d)
    keys = torch.stack([cache[hook_name(k, i)][0] for i in range(layers)])  # (layers, heads, t, d)
    return queries.float().cpu().numpy(), keys.float().cpu().numpy()


def qk_hooks(model, layers: int) -> list[str]:
    """The queries and keys whose product makes the scores: q and k, or ModernBERT's after the rotary turn."""
    return [hook_name(n, i) for i in range(layers) for n in score_query_key(model.hook_names)]


def queries_and_keys(lab: Lab, analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
    """(queries, keys), each (layers, heads, tokens, head_dim): the projected vectors with bias."""
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=qk_hooks(lab.model, lab.n_layers),
                       compute_mlm=False)
    return _stacked(lab.model, cache, lab.n_layers)


def queries_and_keys_of(model, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The same for a bare encoder and token ids (the drop-ins: a model object passed in, no Lab)."""
    layers = len(model.bert.encoder.layer)
    with torch.inference_mode(), model.hooks(capture=qk_hooks(model, layers)) as run:
        model(input_ids=input_ids, token_type_ids=token_type_ids, compute_mlm=False)
    return _stacked(model, run.cache, layers)


def head_vectors(lab: Lab, texts: Sequence[str], layer: int, head: int, batch_size: int = 32, engine: Engine = LOCAL
                 ) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """One head's queries and keys over sentences (layer and head 0-based): (points, head_dim) each,
    and one record per point (sentence, position, token, segment, value_norm), the same for queries and keys.
    Batches of like lengths are the units on ``engine`` (local or Ray)."""
    return head_vectors_encoded(lab, [lab.encode(t, truncate=True) for t in texts], layer, head, batch_size, engine)


def head_vectors_of_sentences(lab: Lab, sentences: Sequence[Any], layer: int, head: int, batch_size: int = 32
                              ) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """The same over treebank sentences (``treebank.Sentence``, a unit of the same tier, so not imported
    here): each point also carries its word's UPOS and relation
    (every piece of a word its word's); sentences longer than the model takes are left out."""
    encoded, kept = [], []
    for s in sentences:
        enc = lab.encode_words(s.words)
        if len(enc.ids) <= lab.max_tokens:
            encoded.append(enc)
            kept.append(s)
    queries, keys, points = head_vectors_encoded(lab, encoded, layer, head, batch_size)
    for p in points:
        s, word = kept[p["sentence"]], encoded[p["sentence"]].word_ids[p["position"]]
        p["upos"] = s.upos[word] if word is not None and s.upos else "special"
        p["deprel"] = s.relations[word] if word is not None else "special"
    return queries, keys, points


def _head_rows(lab: Lab, cache: dict, encs: Sequence[Encoded], names: tuple[str, ...], head: int) -> list:
    q, k, v = (cache[n][:, head].float().cpu() for n in names)  # each (batch, t, d)
    norms = v.norm(dim=-1)  # (batch, t): the value vector's size, what the head can pass on (Kobayashi 2020)
    return [(q[row, :len(enc.ids)].numpy(), k[row, :len(enc.ids)].numpy(), norms[row, :len(enc.ids)].numpy())
            for row, enc in enumerate(encs)]


def head_vectors_encoded(lab: Lab, encoded: Sequence[Encoded], layer: int, head: int, batch_size: int = 32,
                         engine: Engine = LOCAL) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    if not (0 <= layer < lab.n_layers and 0 <= head < lab.n_heads):
        raise InputError(f"layer {layer + 1}, head {head + 1}: the model has {lab.n_layers} layers and "
                         f"{lab.n_heads} heads (1-based)")
    if not encoded:
        raise InputError("no sentence to embed")
    names = tuple(hook_name(n, layer) for n in (*score_query_key(lab.model.hook_names), "v"))
    found = map_by_length(lab, encoded, Reading(names, partial(_head_rows, names=names, head=head)), batch_size, engine)
    queries, keys, points = [], [], []
    for i, enc in enumerate(encoded):  # in the sentences' order
        queries.append(found[i][0])
        keys.append(found[i][1])
        points += [{"sentence": i, "position": p, "token": tok, "segment": int(enc.segment_ids[p]),
                    "value_norm": float(found[i][2][p])} for p, tok in enumerate(enc.tokens)]
    return np.concatenate(queries), np.concatenate(keys), points


def _attention_rows(lab: Lab, cache: dict, encs: Sequence[Encoded]) -> list[np.ndarray]:
    attention = lab.attention_of(cache).float().cpu().numpy()  # (batch, layers, heads, query, key)
    return [attention[row, :, :, :len(enc.ids), :len(enc.ids)] for row, enc in enumerate(encs)]


def sentence_attentions(lab: Lab, texts: Sequence[str], batch_size: int = 32, engine: Engine = LOCAL
                        ) -> list[np.ndarray]:
    """Each text's (layers, heads, tokens, tokens) attention, from batched forward passes (patterns only):
    what ``lab.analyze(text).attention`` holds, without the MLM head and one pass per text; batches of like
    lengths are the units on ``engine``."""
    encoded = [lab.encode(t, truncate=True) for t in texts]
    return map_by_length(lab, encoded, Reading((every_layer("pattern"),), _attention_rows), batch_size, engine)


@dataclass
class ScoreParts:
    """The terms one layer's pre-softmax scores are the sum of, per head, as the model adds them: for
    MPNet the content score q·k/√d and the relative-position bias (Song et al. 2020); for DeBERTa
    content-to-content, content-to-position and position-to-content, each already divided by
    √(d·(1 + terms)) (He et al. 2021); for the rest the one content score. ``attention`` is the
    softmax of their sum, the head's attention as every other view shows it."""

    layer: int  # 1-based
    names: list[str]
    parts: np.ndarray  # (parts, heads, query, key)
    attention: np.ndarray  # (heads, query, key)

    @property
    def has_parts(self) -> bool:
        return len(self.names) > 1


def content_scale(lab: Lab, layer: int) -> float:
    """What q·k is multiplied by in ``layer`` (0-based): 1/√d, or DeBERTa's 1/√(d·(1 + terms))."""
    attention = lab.model.bert.encoder.layer[layer].attention.self
    root = getattr(attention, "root", None)
    return 1.0 / float(root) if root is not None else float(attention.scale)


def score_parts(lab: Lab, analysis: Analysis, layer: int) -> ScoreParts:
    """The parts of layer ``layer``'s (1-based) scores for the analysed input, read at the hook points."""
    if not 1 <= layer <= lab.n_layers:
        raise InputError(f"layer {layer} is outside 1..{lab.n_layers}")
    i = layer - 1
    terms = [t for t in SCORE_TERMS if hook_name(t, i) in lab.model.hook_names]
    bias_hook = hook_name("position_bias") if hook_name("position_bias") in lab.model.hook_names else None
    q_name, k_name = score_query_key(lab.model.hook_names)
    names = [hook_name(n, i) for n in (q_name, k_name, "scores", "pattern", *terms)] + ([bias_hook] if bias_hook else [])
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=names, compute_mlm=False)
    first = {name: cache[name][0].float() for name in names if name != bias_hook}  # (heads, query, key | d_head)
    attention = first[layer_hook(i, "pattern")].numpy()
    if terms:  # DeBERTa: the model's own terms
        parts = [first[hook_name(t, i)] for t in terms]
        labels = [TERM_LABELS[t] for t in terms]
    else:
        content = torch.matmul(first[hook_name(q_name, i)], first[hook_name(k_name, i)].transpose(-1, -2)) \
            * content_scale(lab, i)  # (heads, query, key)
        parts, labels = [content], ["content: rot(q)·rot(k)/√d" if q_name == "rot_q" else "content: q·k/√d"]
        if bias_hook:
            parts.append(cache[bias_hook][0].float())  # (heads, query, key): MPNet's bias, the same in every layer
            labels.append("relative-position bias")
    return ScoreParts(layer, labels, torch.stack(parts).numpy(), attention)


TERM_LABELS = {"c2c": "content → content (c2c)", "c2p": "content → position (c2p)", "p2c": "position → content (p2c)"}


def score_bias(lab: Lab, analysis: Analysis) -> tuple[list[float], np.ndarray | None]:
    """What the neuron view needs besides q and k to reproduce the attention: each layer's content scale,
    and whatever the model adds to q·k·scale before the softmax (MPNet's relative bias, DeBERTa's position
    terms) as (layers, heads, query, key), or None when nothing is added (BERT and the absolute-position
    families), read as the scores hook minus the content score."""
    q_name, k_name = score_query_key(lab.model.hook_names)
    names = [hook_name(n, i) for i in range(lab.n_layers) for n in (q_name, k_name, "scores")]
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=names, compute_mlm=False)
    scales = [content_scale(lab, i) for i in range(lab.n_layers)]
    bias = torch.stack([cache[hook_name("scores", i)][0].float() - scales[i] * torch.matmul(
        cache[hook_name(q_name, i)][0].float(), cache[hook_name(k_name, i)][0].float().transpose(-1, -2))
        for i in range(lab.n_layers)])  # (layers, heads, query, key)
    return scales, (bias.numpy() if float(bias.abs().max()) > 1e-5 else None)
