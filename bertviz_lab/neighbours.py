"""Corpus search, as exBERT does it: click a token, find the corpus tokens whose representation at
a layer is nearest, each shown in its sentence with its part of speech and dependency label.

exBERT (Hoover, Strobelt & Gehrmann 2020, "exBERT: A Visual Analysis Tool to Explore Learned
Representations in Transformer Models", ACL demos; released code github.com/bhoov/exbert,
Apache-2.0) indexes, per layer, two kinds of vectors and searches them by inner product
(``faiss.IndexFlatIP``, ``server/data_processing/create_faiss.py``):

- *embeddings*: each token's hidden state after the layer (layer 0 = the embedding layer's output),
  divided by its L2 norm (``transformer_formatter.normed_embeddings``), so the inner product is the
  cosine similarity;
- *contexts*: the heads' outputs before the output projection, each head's slice divided by its own
  norm (``normed_contexts``); a search by context keeps only the chosen heads' slices of the query
  (``index_wrapper.ContextIndexes.search`` multiplies the query by a head mask), so the score is the
  sum over those heads of per-head cosines.

exBERT zeroes the vectors of [CLS]/[SEP] (``zero_special_embeddings``); a zero vector scores 0 and
would still rank above a token of negative similarity, so here special tokens are left out of the
index instead. Every piece of a word carries its word's treebank labels (exBERT aligns spaCy's
tokens to word pieces the same way). FAISS is used when it is installed, numpy otherwise: both
score every vector exactly (a flat index), so they return the same neighbours.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from pathlib import Path

import numpy as np
import pandas as pd

from .bert.encoder.hook_table import hidden_state_names
from .bert.encoder.model import layer_hook
from .engines import LOCAL, Engine, run_units
from .export import parquet_bytes
from .lab import Encoded, InputError, Lab
from .naming import SPECIAL_TOKENS
from .treebank import Sentence

KINDS = ("embeddings", "contexts")
RECORD_COLUMNS = ["sentence", "position", "token", "word", "upos", "deprel"]
CONTEXT = 8  # tokens shown either side of a neighbour
FORMAT = 2  # 2: the checkpoint under "checkpoint" (it was "source", which names a kind of token-to-token weight)


@dataclass
class TokenIndex:
    """Unit vectors of every non-special token of a corpus, per layer (0 = embeddings), with where each came from."""

    model: str  # the weights, as CheckpointInfo.describe() names them (with their sha256)
    checkpoint_id: str  # what load() takes to get them back, for the query
    kind: str
    vectors: np.ndarray  # (layers + 1, tokens, hidden) float32, unit rows (contexts: unit per head)
    records: list[dict]  # per token: sentence, position, token, word, upos, deprel
    sentences: list[list[str]]  # each indexed sentence's tokens, to show a neighbour in context
    heads: int
    _faiss: dict = field(default_factory=dict, repr=False)

    @property
    def layers(self) -> int:
        return self.vectors.shape[0] - 1

    def save(self, folder: str | Path) -> Path:
        """The index as ``vectors.npy`` (float16) and ``index.json``, in ``folder``; with pyarrow, the token
        records also as ``tokens.parquet`` (one row per indexed token: a corpus has millions; pandas reads
        it back as it is)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "vectors.npy", self.vectors.astype(np.float16))
        meta = {"format": FORMAT, "model": self.model, "checkpoint": self.checkpoint_id, "kind": self.kind, "heads": self.heads,
                "records": self.records, "sentences": self.sentences}
        (folder / "index.json").write_text(json.dumps(meta), encoding="utf-8")
        records = parquet_bytes(pd.DataFrame(self.records, columns=RECORD_COLUMNS))
        if records is not None:
            (folder / "tokens.parquet").write_bytes(records)
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> TokenIndex:
        folder = Path(folder)
        try:
            meta = json.loads((folder / "index.json").read_text(encoding="utf-8"))
            vectors = np.load(folder / "vectors.npy").astype(np.float32)
        except (OSError, ValueError):
            raise InputError(f"{folder} is not a token index written by `bertviz-lab index` (its index.json and "
                             "vectors.npy cannot be read)") from None
        if meta.get("format") != FORMAT or vectors.shape[1] != len(meta["records"]):
            raise InputError(f"{folder}: the index does not match its records (rebuild it with `bertviz-lab index`)")
        return cls(meta["model"], meta["checkpoint"], meta["kind"], vectors, meta["records"], meta["sentences"], meta["heads"])


@dataclass(frozen=True)
class Neighbour:
    rank: int
    score: float
    token: str
    sentence: int
    position: int
    upos: str
    deprel: str
    context: str  # the sentence with the token in [brackets]


def unit_rows(x: np.ndarray, heads: int = 1) -> np.ndarray:
    """Rows divided by their L2 norm; with ``heads`` > 1, each head's slice by its own norm (exBERT's contexts)."""
    shaped = x.reshape(*x.shape[:-1], heads, x.shape[-1] // heads)
    norms = np.linalg.norm(shaped, axis=-1, keepdims=True)
    return (shaped / np.maximum(norms, 1e-12)).reshape(x.shape).astype(np.float32)


def hook_names(lab: Lab, kind: str) -> list[str]:
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    if kind == "embeddings":
        return hidden_state_names(lab.n_layers)
    return [layer_hook(i, "context") for i in range(lab.n_layers)]


def layer_vectors(lab: Lab, cache: dict, kind: str) -> np.ndarray:
    """(layers + 1, batch, tokens, hidden) unit vectors from one forward pass's cache. Contexts have no
    layer 0 (exBERT stores zeros there): the embedding layer has no heads, so its slot is zero."""
    names = hook_names(lab, kind)
    if kind == "embeddings":
        states = [cache[n].float().cpu().numpy() for n in names]  # each (batch, tokens, hidden)
        return np.stack([unit_rows(s) for s in states])
    contexts = [cache[n].float().cpu() for n in names]  # each (batch, heads, tokens, d_head)
    merged = [c.permute(0, 2, 1, 3).reshape(c.shape[0], c.shape[2], -1).numpy() for c in contexts]
    layers = [unit_rows(m, lab.n_heads) for m in merged]
    return np.stack([np.zeros_like(layers[0])] + layers)


def index_batch(lab: Lab, encs: Sequence[Encoded], kind: str) -> list[np.ndarray]:
    """One batch of encoded sentences run once: each sentence's unit vectors of its non-special tokens,
    (layers + 1, tokens kept, hidden); a unit of work for ``engines.run_units``."""
    _, cache = lab.run(lab.batch_tensors(list(encs)), capture=hook_names(lab, kind), compute_mlm=False)
    vectors = layer_vectors(lab, cache, kind)  # (layers + 1, batch, tokens, hidden)
    return [vectors[:, row, [i for i, t in enumerate(enc.tokens) if t not in SPECIAL_TOKENS]]
            for row, enc in enumerate(encs)]


def build_index(lab: Lab, sentences: Sequence[Sentence], kind: str = "embeddings", batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None, engine: Engine = LOCAL) -> TokenIndex:
    """Index every non-special token of ``sentences`` (treebank sentences: their words, UPOS and
    relations label each piece); sentences longer than the model takes are skipped.
    ``progress(done, total)`` is told the sentences indexed of those kept (0 before the first batch).
    Each batch is a unit on ``engine`` (local or Ray): the same batches, so the same vectors, either way."""
    hook_names(lab, kind)  # an unknown kind is refused before any work
    usable = []
    for s in sentences:
        enc = lab.encode_words(s.words)
        if len(enc.ids) <= lab.max_tokens:
            usable.append((s, enc))
    if not usable:
        raise InputError("no sentence to index (each is empty or longer than the model takes)")
    batches = [usable[start:start + batch_size] for start in range(0, len(usable), batch_size)]
    done = [0, *accumulate(len(batch) for batch in batches)]  # sentences indexed after each batch
    per_batch = run_units(lab, partial(index_batch, kind=kind), [[enc for _, enc in batch] for batch in batches],
                          engine, progress and (lambda k, _: progress(done[k], len(usable))))
    chunks, records, shown = [], [], []
    for (s, enc), vectors in zip(usable, (v for batch in per_batch for v in batch)):
        index = len(shown)
        shown.append(list(enc.tokens))
        chunks.append(vectors)
        for i in (i for i, t in enumerate(enc.tokens) if t not in SPECIAL_TOKENS):
            w = enc.word_ids[i]
            records.append({"sentence": index, "position": i, "token": enc.tokens[i], "word": w,
                            "upos": s.upos[w] if w is not None and s.upos else "_",
                            "deprel": s.relations[w] if w is not None else "_"})
    return TokenIndex(lab.checkpoint_info().describe(), lab.checkpoint_id, kind, np.concatenate(chunks, axis=1), records,
                      shown, lab.n_heads)


def check_same_weights(lab: Lab, index: TokenIndex) -> None:
    """A query must come from the weights the index was built with: other weights' vectors live in another space."""
    if lab.checkpoint_info().describe() != index.model:
        raise InputError(f"the index was built with {index.model}; the query model is "
                         f"{lab.checkpoint_info().describe()} (search with --model {index.checkpoint_id})")


def query_vector(lab: Lab, text: str, position: int, layer: int, kind: str = "embeddings",
                 pair: str | None = None, encoded: Encoded | None = None) -> np.ndarray:
    """The unit vector of token ``position`` of ``text`` (or of an input already ``encoded``, e.g. an
    analysis's with its masks) at ``layer`` (0 = embeddings, as exBERT counts)."""
    enc = encoded or lab.encode(text, pair=pair, truncate=True)
    if not 0 <= position < len(enc.ids):
        raise InputError(f"position {position} is outside the input (0..{len(enc.ids) - 1})")
    if not 0 <= layer <= lab.n_layers:
        raise InputError(f"layer must be 0 (embeddings) to {lab.n_layers}")
    _, cache = lab.run(lab.batch_tensors([enc]), capture=hook_names(lab, kind), compute_mlm=False)
    return layer_vectors(lab, cache, kind)[layer, 0, position]


def head_mask(index: TokenIndex, heads: Sequence[int] | None) -> np.ndarray:
    """1 on the chosen heads' slices (0-based heads), 0 elsewhere: exBERT's ``create_mask``."""
    hidden = index.vectors.shape[-1]
    if heads is None or index.kind == "embeddings":
        return np.ones(hidden, dtype=np.float32)
    if not heads or not all(0 <= h < index.heads for h in heads):
        raise InputError(f"choose heads from 1 to {index.heads}")
    mask = np.zeros(index.heads, dtype=np.float32)
    mask[list(heads)] = 1
    return np.repeat(mask, hidden // index.heads)


def nearest(index: TokenIndex, query: np.ndarray, layer: int, k: int = 10, heads: Sequence[int] | None = None,
            use_faiss: bool | None = None) -> list[Neighbour]:
    """The ``k`` indexed tokens with the largest inner product with ``query`` at ``layer`` (FAISS's
    flat inner-product index when installed and ``use_faiss`` is not False; numpy gives the same)."""
    if not 0 <= layer <= index.layers:
        raise InputError(f"layer must be 0 (embeddings) to {index.layers}")
    if index.kind == "contexts" and layer == 0:
        raise InputError("contexts start at layer 1: the embedding layer has no heads")
    q = (np.asarray(query, dtype=np.float32) * head_mask(index, heads))[None]  # (1, hidden)
    k = max(1, min(int(k), index.vectors.shape[1]))
    flat = faiss_index(index, layer) if use_faiss is not False else None
    if flat is not None:
        scores, found = flat.search(q, k)
        ranked = list(zip(found[0].tolist(), scores[0].tolist()))
    else:
        scores = index.vectors[layer] @ q[0]  # (tokens,)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        ranked = [(int(i), float(scores[i])) for i in top]
    return [neighbour(index, rank, i, score) for rank, (i, score) in enumerate(ranked, 1)]


def faiss_index(index: TokenIndex, layer: int):
    """A FAISS ``IndexFlatIP`` of one layer, made once per index; None without FAISS."""
    try:
        import faiss
    except ImportError:
        return None
    if layer not in index._faiss:
        flat = faiss.IndexFlatIP(index.vectors.shape[-1])
        flat.add(np.ascontiguousarray(index.vectors[layer]))
        index._faiss[layer] = flat
    return index._faiss[layer]


def neighbour(index: TokenIndex, rank: int, i: int, score: float) -> Neighbour:
    r = index.records[i]
    tokens = index.sentences[r["sentence"]]
    at, lo, hi = r["position"], max(0, r["position"] - CONTEXT), r["position"] + CONTEXT + 1
    shown = [f"[{t}]" if j == at else t for j, t in enumerate(tokens[lo:hi], lo) if t not in SPECIAL_TOKENS]
    text = " ".join(shown).replace(" ##", "")
    text = ("… " if lo > 1 else "") + text + (" …" if hi < len(tokens) - 1 else "")
    return Neighbour(rank, round(score, 4), r["token"], r["sentence"], r["position"], r["upos"], r["deprel"], text)


def index_record(index: TokenIndex, folder: Path) -> dict:
    """What a written index holds: its weights, kind, size and folder."""
    return {"model": index.model, "kind": index.kind, "tokens": int(index.vectors.shape[1]),
            "sentences": len(index.sentences), "layers": index.layers, "out": str(folder)}
