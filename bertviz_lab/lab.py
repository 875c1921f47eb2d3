"""The library entry point: ``load()`` a checkpoint once, ``analyze()`` inputs many times.

The UI, the command line and the tests all go through :class:`Lab`, so what a person sees in
the browser is exactly what the API returns.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer

from .bert import DEFAULT_CHECKPOINT, BertConfig, BertLab, Edit, LoadedCheckpoint, layer_hook, load_model
from .bert.encoder.hook_table import every_layer
from .bert.encoder.model import BertForwardOutput, init_weights
from .bert.loading.families import BERT_SPECIALS
from .bert.runtime.batching import SharedPasses
from .bert.runtime.budget import charge, exempt
from .bert.runtime.errors import InputError
from .bert.runtime.model_thread import on_model_thread
from .bert.sources.captured import Captured
from .bert.sources.source_registry import PATTERN_CAPTURES, get_source


class InputTooLong(InputError):
    def __init__(self, n_tokens: int, maximum: int) -> None:
        self.n_tokens, self.maximum = n_tokens, maximum
        super().__init__(f"the input is {n_tokens} tokens long, more than the model maximum of {maximum}; "
                         "shorten it or allow truncation")


MAX_TEXT_CHARACTERS = 100_000


TYPED_MASK = re.compile(r"\[mask\]", re.IGNORECASE)


def typed_masks(text: str) -> str:
    """``[mask]`` in any case is BERT's mask token: an uncased tokenizer would split a lower-case one
    into '[', 'mask', ']' (same length, so character offsets stay valid)."""
    return TYPED_MASK.sub("[MASK]", text)


def checked_text(value: object, what: str) -> str:
    """Text the tokenizer can take, or an InputError saying what is wrong with it."""
    if not isinstance(value, str):
        raise InputError(f"{what} must be text, not {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARACTERS:
        raise InputError(f"{what} is {len(value):,} characters long; the limit is {MAX_TEXT_CHARACTERS:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(f"{what} contains a character that is not valid Unicode at position {error.start} "
                         f"(a lone surrogate such as {value[error.start]!r}); remove it") from None
    return value


@dataclass(frozen=True)
class CheckpointInfo:
    """Which weights a result came from, for every table, CSV and report that publishes one."""

    checkpoint: str  # what the user asked for: default, minilm-original, a folder or a hub id
    name: str
    sha256: str  # of the loaded weights (names and float32 values), so two results can be matched
    fine_tuned_by_bertviz_lab: bool

    def describe(self) -> str:
        tuned = "; fine-tuned by bertviz-lab" if self.fine_tuned_by_bertviz_lab else ""
        return f"{self.name} [checkpoint {self.checkpoint}; weights sha256 {self.sha256[:12]}{tuned}]"


def weights_sha256(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class Encoded:
    """One tokenized input, before padding."""

    tokens: list[str]
    ids: list[int]
    segment_ids: list[int]
    word_ids: list[int | None]
    offsets: list[tuple[int, int]]
    n_tokens_before_truncation: int

    @property
    def truncated(self) -> bool:
        return self.n_tokens_before_truncation > len(self.ids)


@dataclass
class Prediction:
    token: str
    probability: float


@dataclass
class PositionPredictions:
    position: int
    token: str  # the token at this position in the input ([MASK] for masked ones)
    original: str | None  # the token before masking, when the caller masked it by position
    predictions: list[Prediction]


@dataclass
class ClassProbability:
    """One class of a sequence classifier: its label (the config's ``id2label``), its index among
    the head's outputs, and its probability (softmax over the class logits)."""

    label: str
    index: int
    probability: float


@dataclass
class Analysis:
    """Everything one forward pass tells about one input; plain data, no tensors."""

    model: str
    device: str
    text: str
    pair: str | None
    tokens: list[str]
    token_ids: list[int]
    segment_ids: list[int]
    word_ids: list[int | None]
    offsets: list[tuple[int, int]]
    attention: np.ndarray  # (layers, heads, query, key) float32
    mlm: list[PositionPredictions] = field(default_factory=list)
    mlm_note: str | None = None
    nsp: float | None = None  # probability that the second segment follows the first
    nsp_note: str | None = None
    n_tokens_before_truncation: int = 0
    masked_positions: list[int] = field(default_factory=list)
    # Full predicted distributions (n_predicted, vocab) in the order of ``mlm``, when asked for.
    mlm_probabilities: np.ndarray | None = None
    source: str = "attention"  # what ``attention`` holds: softmax weights, or a norm-based source
    # A sequence classifier's classes, most probable first; empty for checkpoints without one.
    classes: list[ClassProbability] = field(default_factory=list)

    def encoded(self) -> Encoded:
        """The input exactly as analysed (masks applied), to run it again with other captures."""
        return Encoded(list(self.tokens), list(self.token_ids), list(self.segment_ids), list(self.word_ids),
                       list(self.offsets), self.n_tokens_before_truncation)

    @property
    def truncated(self) -> bool:
        return self.n_tokens_before_truncation > len(self.tokens)

    @property
    def n_layers(self) -> int:
        return int(self.attention.shape[0])

    @property
    def predicted_class(self) -> ClassProbability | None:
        """The classifier's choice (None without a classifier)."""
        return self.classes[0] if self.classes else None

    @property
    def n_heads(self) -> int:
        return int(self.attention.shape[1])

    def to_json(self, attention: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "device": self.device, "text": self.text, "pair": self.pair,
            "tokens": self.tokens, "token_ids": self.token_ids, "segment_ids": self.segment_ids,
            "word_ids": self.word_ids, "truncated": self.truncated,
            "n_tokens_before_truncation": self.n_tokens_before_truncation,
            "masked_positions": self.masked_positions,
            "mlm": [{"position": p.position, "token": p.token, "original": p.original,
                     "predictions": [{"token": q.token, "probability": q.probability} for q in p.predictions]}
                    for p in self.mlm],
            "mlm_note": self.mlm_note, "nsp": self.nsp, "nsp_note": self.nsp_note,
            "source": self.source,
            "classes": [{"label": c.label, "index": c.index, "probability": c.probability} for c in self.classes],
        }
        # a per-layer source (GlobEnc, ALTI, value zeroing, norm-residual) has one matrix per layer:
        # (layers, 1, query, key), not the same matrix repeated for every head
        matrix = self.attention[:, :1] if get_source(self.source).per_layer else self.attention
        out["attention_shape"] = list(matrix.shape)
        if attention:
            out["attention"] = matrix.tolist()
        return out



def words_across_segments(word_ids: Sequence[int | None], sequence_ids: Sequence[int | None]) -> list[int | None]:
    """The tokenizer numbers sentence B's words from 0 again; shift them past sentence A's so that
    every word of a pair has its own index (None stays None for specials)."""
    a_words = [w for w, s in zip(word_ids, sequence_ids) if s == 0 and w is not None]
    shift = max(a_words) + 1 if a_words else 0
    return [None if w is None else w + shift if s == 1 else w for w, s in zip(word_ids, sequence_ids)]

@dataclass(frozen=True)
class Readout:
    """What to read off one forward pass besides attention: which token positions become [MASK]
    (``masks``), the top-k of each predicted position, which attention source ``attention`` holds,
    extra unmasked positions to predict at (``predict_at``), and whether to keep the full
    masked-word distributions (for comparisons)."""

    masks: Sequence[int] = ()
    top_k: int = 5
    source: str = "attention"
    predict_at: Sequence[int] = ()
    keep_probabilities: bool = False


@dataclass(frozen=True)
class ForwardChanges:
    """What an intervention compiles to for one forward pass (``interventions.kinds``): hook edits,
    an additive attention bias broadcastable to (batch, heads, query, key), and position ids."""

    edits: dict[str, Edit | list[Edit]] | None = None
    attention_bias: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None


class Lab:
    """A loaded model and tokenizer; safe to share between threads (no per-call state here; concurrent Runs
    of one length wait for each other and share one batch, each getting its own rows back)."""

    def __init__(self, model: BertLab, checkpoint: LoadedCheckpoint, device: torch.device, checkpoint_id: str) -> None:
        self.model = model
        self.checkpoint = checkpoint
        self.tokenizer = checkpoint.tokenizer
        self.device = device
        self.checkpoint_id = checkpoint_id  # what the user asked for: default, minilm-original, a folder or a hub id
        self.null_base: Lab | None = None  # a random-weights null model's checkpoint (a Ray worker rebuilds it)
        # concurrent Runs of one length share a batch, run on the app's model thread (bert/runtime/model_thread.py)
        self._shared = SharedPasses(lambda items: on_model_thread(self._shared_pass, items))
        self.name = checkpoint.name
        cfg = model.config
        self.n_layers, self.n_heads = cfg.num_hidden_layers, cfg.num_attention_heads
        self.max_tokens = cfg.max_tokens
        specials = checkpoint.specials  # role -> this tokenizer's token (RoBERTa: <s> </s> <mask> <pad>)
        self.mask_token = specials["mask"]
        self.mask_id = self.tokenizer.token_to_id(specials["mask"])
        self.pad_id = self.tokenizer.token_to_id(specials["pad"])
        self.special_ids = {self.tokenizer.token_to_id(specials[r]) for r in ("cls", "sep", "pad")}
        # What users see keeps BERT's names whatever the family: [CLS] [SEP] [MASK] [PAD].
        self._shown = {self.tokenizer.token_to_id(specials[role]): name for role, name in BERT_SPECIALS.items()
                       if specials[role] != name}  # by id: a lstrip <mask> can come out as " <mask>"
        # A separate copy that truncates, so the shared tokenizer is never reconfigured per call.
        self._truncating_tokenizer = Tokenizer.from_str(self.tokenizer.to_str())
        self._truncating_tokenizer.enable_truncation(self.max_tokens)
        self._info: CheckpointInfo | None = None

    def checkpoint_info(self) -> CheckpointInfo:
        """Name, checkpoint and content hash of the weights (hashed once per Lab)."""
        if self._info is None:
            self._info = CheckpointInfo(self.checkpoint_id, self.name, weights_sha256(self.model),
                                        self.checkpoint.head_origin is not None)
        return self._info

    # ---- tokenization -------------------------------------------------------------------
    def encode(self, text: str, pair: str | None = None, truncate: bool = False) -> Encoded:
        if text is None or not str(text).strip():
            raise InputError("the text is empty: type a sentence to analyse")
        text = self.typed(checked_text(text, "the text"))
        pair = self.typed(checked_text(pair, "sentence B")) if pair is not None and str(pair).strip() else None
        enc = self.tokenizer.encode(text, pair) if pair is not None else self.tokenizer.encode(text)
        n = len(enc.ids)
        if n > self.max_tokens:
            if not truncate:
                raise InputTooLong(n, self.max_tokens)
            cut = self._truncating_tokenizer
            enc = cut.encode(text, pair) if pair is not None else cut.encode(text)
        return self._encoded_from(enc, n)

    def typed(self, text: str) -> str:
        """Typed masks in any case, as this model's mask token (RoBERTa's is <mask>)."""
        text = typed_masks(text)
        return text if self.mask_token == "[MASK]" else text.replace("[MASK]", self.mask_token)

    def encode_words(self, words: Sequence[str]) -> Encoded:
        """Tokenize pre-split words (a treebank's), so every piece maps back to its word."""
        enc = self.tokenizer.encode([checked_text(w, "a word") for w in words], is_pretokenized=True)
        return self._encoded_from(enc, len(enc.ids))

    def _encoded_from(self, enc, n_before: int) -> Encoded:
        word_ids = words_across_segments(enc.word_ids, enc.sequence_ids)
        tokens = [self._shown.get(i, t) for t, i in zip(enc.tokens, enc.ids)] if self._shown else list(enc.tokens)
        return Encoded(tokens, list(enc.ids), list(enc.type_ids), word_ids,
                       [tuple(o) for o in enc.offsets], n_before)

    # ---- running --------------------------------------------------------------------------
    def batch_tensors(self, batch: Sequence[Encoded]) -> dict[str, torch.Tensor]:
        """Right-pad a batch: ids, segments and the padding mask, on the model's device."""
        width = max(len(e.ids) for e in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        seg = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, e in enumerate(batch):
            n = len(e.ids)
            ids[row, :n] = torch.tensor(e.ids)
            seg[row, :n] = torch.tensor(e.segment_ids)
            mask[row, :n] = 1
        return {"input_ids": ids.to(self.device), "token_type_ids": seg.to(self.device),
                "attention_mask": mask.to(self.device)}

    def run(self, tensors: dict[str, torch.Tensor], capture: Sequence[str] = (every_layer("pattern"),),
            edits: dict[str, Edit | list[Edit]] | None = None, **forward_kwargs):
        """One forward pass with the given captures/edits; returns (output, cache)."""
        with torch.inference_mode(), self.model.hooks(capture=capture, edits=edits) as hooks:
            out = self.model(**tensors, **forward_kwargs)
        return out, hooks.cache

    def runs_by_length(self, encoded: Sequence[Encoded], capture: Sequence[str], batch_size: int = 32):
        """Forward passes over many inputs in batches of like lengths (little padding), MLM head off:
        yields (the inputs' indices in this batch, the captured cache), rows in that order."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            _, cache = self.run(self.batch_tensors([encoded[i] for i in rows]), capture=capture, compute_mlm=False)
            yield rows, cache

    def attention_of(self, cache: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stack captured patterns: (batch, layers, heads, query, key)."""
        return torch.stack([cache[layer_hook(i, "pattern")] for i in range(self.n_layers)], dim=1)

    def analyze(self, text: str, pair: str | None = None, masks: Sequence[int] = (), top_k: int = 5,
                source: str = "attention", truncate: bool = False) -> Analysis:
        """Run one input and collect attention, masked-word top-k and NSP.

        ``masks`` are token positions replaced by [MASK] (the app's token picker; a typed [MASK]
        needs none); ``source`` chooses what ``attention`` holds: softmax weights, or norm-based
        weights computed in the same pass; ``truncate`` cuts an input longer than the model takes.
        Interventions and sweeps use ``analyze_encoded``."""
        return self.analyze_encoded(self.encode(text, pair, truncate=truncate), text, pair,
                                    Readout(masks=masks, top_k=top_k, source=source))

    def analyze_encoded(self, enc: Encoded, text: str = "", pair: str | None = None, readout: Readout | None = None,
                        changes: ForwardChanges | None = None) -> Analysis:
        """``analyze`` of an encoded input, with what an intervention compiled to (``changes``) and
        what to read off the pass (``readout``)."""
        readout = readout or Readout()
        masks, top_k, source, predict_at = readout.masks, readout.top_k, readout.source, readout.predict_at
        keep_probabilities = readout.keep_probabilities
        try:
            chosen = get_source(source)
        except ValueError as error:
            raise InputError(str(error)) from None
        if int(top_k) < 1:
            raise InputError(f"top-k must be at least 1 (got {top_k})")
        enc, originals = self._masked(enc, masks)
        n = len(enc.ids)
        for p in predict_at:
            if not 0 <= int(p) < n:
                raise InputError(f"no position {p}: the input has positions 0..{n - 1}")
        predict = sorted({i for i, t in enumerate(enc.ids) if t == self.mask_id} | {int(p) for p in predict_at})
        out, cache = self._forward(enc, predict, chosen.captures, changes or ForwardChanges())

        def read() -> tuple:  # tensor work too: on the model thread, where the pass ran (bert/runtime/model_thread.py)
            if source == "attention":
                weights = self.attention_of(cache)[0].float().cpu().numpy()  # (layers, heads, query, key)
            else:
                weights = chosen.weights(Captured(self.model, cache, 0, n))  # (layers, heads, query, key)
            return (weights, self._predictions(out, enc, predict, originals, int(top_k), keep_probabilities),
                    self._nsp(out, enc, pair), self._classes(out))

        attention, (mlm, mlm_note, kept), (nsp, nsp_note), classes = on_model_thread(read)
        return Analysis(
            model=self.name, device=str(self.device), text=text, pair=pair if pair and str(pair).strip() else None,
            tokens=list(enc.tokens), token_ids=list(enc.ids), segment_ids=list(enc.segment_ids), word_ids=list(enc.word_ids),
            offsets=list(enc.offsets), attention=attention, mlm=mlm, mlm_note=mlm_note, nsp=nsp,
            nsp_note=nsp_note, n_tokens_before_truncation=enc.n_tokens_before_truncation,
            masked_positions=sorted(originals), mlm_probabilities=kept, source=source, classes=classes)

    def _forward(self, enc: Encoded, predict: list[int], captures: Sequence[str], changes: ForwardChanges):
        """One forward pass of one input with ``changes``, logits only at ``predict``. A plain pass that
        captures attention alone (a Run) shares a batch with the plain passes of its length that other
        requests start meanwhile (``bert/runtime/batching.py``), after being charged to its own budget."""
        select = torch.zeros((1, len(enc.ids)), dtype=torch.bool, device=self.device)  # (batch, pos)
        select[0, predict] = True
        plain = not changes.edits and changes.attention_bias is None and changes.position_ids is None
        if plain and tuple(captures) == PATTERN_CAPTURES:
            # this row alone, as the model would charge it (one unpadded row: its length is its real tokens)
            charge(torch.empty((1, len(enc.ids)), dtype=torch.long), None, select, bool(predict) and self.model.has_mlm_head)
            return self._shared.run(len(enc.ids), (enc, predict))
        kwargs: dict[str, Any] = {"mlm_positions": select, "compute_mlm": bool(predict)}
        if changes.attention_bias is not None:
            kwargs["attention_bias"] = changes.attention_bias.to(self.device)
        if changes.position_ids is not None:
            kwargs["position_ids"] = changes.position_ids.to(self.device)
        return on_model_thread(self.run, self.batch_tensors([enc]), capture=captures, edits=changes.edits or None,
                               **kwargs)

    def _shared_pass(self, items: Sequence[tuple[Encoded, list[int]]]) -> list[tuple[BertForwardOutput, dict]]:
        """One pass of inputs of one length (no padding), attention captured: each row's output and cache,
        sliced out so that no request holds another's tensors."""
        tensors = self.batch_tensors([enc for enc, _ in items])
        select = torch.zeros(tensors["input_ids"].shape, dtype=torch.bool, device=self.device)  # (batch, pos)
        for row, (_, predict) in enumerate(items):
            select[row, predict] = True
        compute_mlm = any(predict for _, predict in items)
        with exempt():  # each request was charged for its own row before it joined
            out, cache = self.run(tensors, capture=PATTERN_CAPTURES, mlm_positions=select, compute_mlm=compute_mlm)
        logits = out.mlm_logits.split([len(p) for _, p in items]) if out.mlm_logits is not None else [None] * len(items)

        def row_of(value: torch.Tensor | None, row: int) -> torch.Tensor | None:
            """A copy of the row when the batch is shared: a view would keep every row's memory alive in a session."""
            if value is None:
                return None
            return value[row:row + 1] if len(items) == 1 else value[row:row + 1].clone()

        def own_logits(chunk: torch.Tensor | None) -> torch.Tensor | None:  # (this row's masks, vocab)
            return chunk if chunk is None or len(items) == 1 else chunk.clone()

        rows = []
        for row in range(len(items)):
            own = BertForwardOutput(row_of(out.last_hidden_state, row), row_of(out.pooled, row), own_logits(logits[row]),
                                    row_of(out.nsp_logits, row), row_of(out.class_logits, row))
            rows.append((own, {name: row_of(value, row) for name, value in cache.items()}))  # (1, heads, query, key)
        return rows

    def _nsp(self, out, enc: Encoded, pair: str | None) -> tuple[float | None, str | None]:
        """P(B follows A) for a pair (typed, or segment B in an encoded input), or why there is none."""
        if not ((pair is not None and str(pair).strip()) or 1 in enc.segment_ids):
            return None, None
        if not self.model.has_nsp_head:
            return None, "this checkpoint has no next-sentence-prediction head"
        return float(torch.softmax(out.nsp_logits.float(), dim=-1)[0, 0]), None

    def _classes(self, out) -> list[ClassProbability]:
        """Every class of a sequence classifier with its probability, most probable first (ties by index)."""
        if out.class_logits is None:
            return []
        probs = torch.softmax(out.class_logits[0].float(), dim=-1).tolist()  # (classes,)
        labels = self.model.class_labels
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
        return [ClassProbability(labels[i], i, float(probs[i])) for i in order]

    def _masked(self, enc: Encoded, mask_positions: Sequence[int]) -> tuple[Encoded, dict[int, str]]:
        """Replace the chosen positions by [MASK]; refuse specials and inputs with too little context left."""
        tokens, ids, n = list(enc.tokens), list(enc.ids), len(enc.ids)
        originals: dict[int, str] = {}
        for p in sorted(set(int(p) for p in mask_positions)):
            if not 0 <= p < n:
                raise InputError(f"cannot mask position {p}: the input has positions 0..{n - 1}")
            if ids[p] in self.special_ids:
                raise InputError(f"cannot mask position {p}: it is the special token {tokens[p]}")
            originals[p] = tokens[p]
            ids[p], tokens[p] = self.mask_id, "[MASK]"
        masked = sum(1 for t in ids if t == self.mask_id)
        real = sum(1 for t in ids if t not in self.special_ids)
        allowed = max(1, real // 2)
        if masked > allowed:
            raise InputError(f"too many masked positions: {masked} of {real} tokens; "
                             f"mask at most {allowed} so the model keeps some context")
        return replace(enc, tokens=tokens, ids=ids), originals

    def _predictions(self, out, enc: Encoded, predict_at: list[int], originals: dict[int, str], top_k: int,
                     keep_probabilities: bool) -> tuple[list[PositionPredictions], str | None, np.ndarray | None]:
        """Top-k per predicted position (and the full distributions when asked), or the note that explains why none."""
        if not self.model.has_mlm_head:
            return [], ("this checkpoint has no masked-language-model head, so it cannot predict "
                        "masked words; its attention is still shown"), None
        if not predict_at:
            return [], "no [MASK] in the input: mask a token to see predictions", None
        probs = torch.softmax(out.mlm_logits.float(), dim=-1)  # (n_selected, vocab)
        top = torch.topk(probs, k=min(top_k, probs.shape[-1]), dim=-1)
        mlm = []
        for row, p in enumerate(predict_at):
            preds = [Prediction(self.tokenizer.id_to_token(int(i)), float(v))
                     for v, i in zip(top.values[row].tolist(), top.indices[row].tolist())]
            mlm.append(PositionPredictions(p, enc.tokens[p], originals.get(p), preds))
        return mlm, None, probs.cpu().numpy() if keep_probabilities else None


def load(checkpoint: str = DEFAULT_CHECKPOINT, device: str = "auto", dtype: str | None = None, **reading: Any) -> Lab:
    """Load a checkpoint (``default``, ``minilm-original``, ``twin-<scheme>``, a folder, or a hub id) onto a device.
    ``reading`` goes to ``bert.checkpoints.read_checkpoint``: ``cache_dir``, ``allow_pickle``, ``allow_download``,
    ``mlm_head``; any other keyword is a TypeError there."""
    model, ckpt, target = load_model(checkpoint, device=device, dtype=dtype, **reading)
    return Lab(model, ckpt, target, checkpoint)


def null_model(lab: Lab, seed: int = 0) -> Lab:
    """The same architecture and tokenizer with random weights (BERT's initialisation, seeded):
    the floor that choosing the best of many heads reaches by chance."""
    cfg = BertConfig.from_dict(lab.model.config.to_dict())
    cfg.has_mlm_head = cfg.has_nsp_head = False
    cfg.n_classes = 0
    model = init_weights(BertLab(cfg), seed=seed).eval().to(lab.device)
    checkpoint = replace(lab.checkpoint, name=f"random weights (BERT init, seed {seed}), {cfg.num_hidden_layers} "
                         f"layers x {cfg.num_attention_heads} heads", head_origin=None)
    null = Lab(model, checkpoint, lab.device, f"null-model:seed={seed}")
    null.null_base = lab
    return null
