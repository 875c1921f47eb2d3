"""Interventions as typed data: each kind is one class that says what it changes in one forward
pass (token ids, an additive attention bias, position ids, hook edits) and how to describe
itself. Adding a kind is adding one registered class here; the CLI choices, the app's labels and
``describe()`` all come from the registry.

Where to intervene (hook names, positions) is kept apart from what to do (the edit), as in
pyvene; every intervention runs on the same model through the hook mechanism of the core, so
no second copy of the model exists.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
import torch

from ..bert import BertLab, Edit, layer_hook
from ..bert.encoder.hook_table import hook_name
from ..lab import ForwardChanges
from ..naming import SPECIAL_TOKENS, head_name
from .edits import (
    ablate_heads_edit,
    bias_from_allowed,
    directional_allowed,
    hidden_keys_bias,
    matched_random_allowed,
    random_positions,
    remove_permuted_bias_edit,
    replace_positions_edit,
    scaled_sinusoidal,
    zero_edit,
)
from .resample import ResamplePool


class InterventionError(ValueError):
    """The intervention cannot be applied to this input; the message says why."""


@dataclass
class InterventionInputs:
    """What an intervention changes for one forward pass, plus how to map the result back."""

    mask_positions: list[int] = field(default_factory=list)
    attention_bias: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    edits: dict[str, Edit | list[Edit]] = field(default_factory=dict)
    token_order: list[int] | None = None  # shuffle-words: input position i holds original token order[i]

    def changes(self) -> ForwardChanges:
        """What the forward pass itself receives (masks and token order change the input instead)."""
        return ForwardChanges(self.edits or None, self.attention_bias, self.position_ids)


REGISTRY: dict[str, type[Intervention]] = {}


def register(cls: type[Intervention]) -> type[Intervention]:
    REGISTRY[cls.kind] = cls
    return cls


def movable_positions(tokens: Sequence[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t not in SPECIAL_TOKENS]


@dataclass
class Intervention:
    """Base class. ``kind`` is the CLI name, ``label`` what the app shows."""

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""
    explanation: ClassVar[str] = ""  # one line the app shows under the chosen intervention
    family: ClassVar[str] = ""  # tokens, direction, heads or positions: which sweeps and controls go with it
    targets_picked_tokens: ClassVar[bool] = False  # the app's picked tokens are its targets, not masked in both runs
    # the position scheme it acts on: "vectors" (a table added to the embeddings), "relative", "disentangled" or
    # "rotary"; None: any model
    acts_on: ClassVar[str | None] = None

    @classmethod
    def applies_to(cls, model: BertLab) -> bool:
        """Whether the model has what this intervention changes (the page lists only those that apply)."""
        if cls.acts_on is None:
            return True
        if cls.acts_on == "vectors":
            return has_absolute_positions(model)
        if cls.acts_on == "disentangled":
            return bool(position_term_hooks(model))
        return model.scheme(cls.acts_on) is not None

    def describe(self) -> str:
        return self.kind

    @classmethod
    def build(cls, options: dict[str, Any], shape: tuple[int, int] | None) -> Intervention:
        """From generic options: those this kind does not use are ignored. ``shape`` is the model's
        (layers, heads), for kinds that read head names."""
        used = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in options.items() if k in used})

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        raise NotImplementedError

    def inputs_for(self, model: BertLab, tokens: Sequence[str],
                   word_ids: Sequence[int | None] | None = None) -> InterventionInputs:
        """``inputs`` with the tokenizer's word of each token (None for specials), for kinds that
        work on words; the others ignore it."""
        return self.inputs(model, tokens)

    @property
    def targets(self) -> list[int]:
        """Positions whose predictions the comparison reports even when unmasked."""
        return []


def option_names(kind: str) -> set[str]:
    """The generic options a kind reads (its dataclass fields): the app shows only their controls."""
    cls = REGISTRY[kind]
    return {f.name for f in fields(cls)} - {"reference"}


def make_intervention(kind: str, shape: tuple[int, int] | None = None, **options: Any) -> Intervention:
    """Build a registered intervention from generic options (positions, heads, shift, seed, ...);
    options a kind does not use are ignored, so the CLI and the app pass all they have and never
    name a kind. ``heads`` may be text ("3-5, 6-1", read against ``shape``) and ``reference`` a
    function, called only by a kind that needs it (mean or resample ablation)."""
    try:
        cls = REGISTRY[kind]
    except KeyError:
        raise InterventionError(f"unknown intervention {kind!r}; choose one of {', '.join(REGISTRY)}") from None
    return cls.build(options, shape)


def check_positions(positions: Sequence[int], n: int, what: str) -> None:
    if not positions:
        raise InterventionError(f"choose the tokens to {what}")
    for p in positions:
        if not 0 <= p < n:
            raise InterventionError(f"position {p} is outside the input (0..{n - 1})")


@dataclass
class PickedTokens(Intervention):
    """An intervention on the tokens the user picked (not registered itself)."""
    family: ClassVar[str] = "tokens"

    targets_picked_tokens: ClassVar[bool] = True
    positions: list[int] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.kind} positions {self.positions}"


@register
@dataclass
class MaskTokens(PickedTokens):
    kind: ClassVar[str] = "mask-tokens"
    label: ClassVar[str] = "Mask the picked tokens ([MASK])"
    explanation: ClassVar[str] = "Replaces the picked tokens by [MASK] in the intervened run: what does the model predict without them?"

    @property
    def targets(self) -> list[int]:
        return list(self.positions)

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        check_positions(self.positions, len(tokens), "mask")
        return InterventionInputs(mask_positions=list(self.positions))


@register
@dataclass
class HideKeys(PickedTokens):
    kind: ClassVar[str] = "hide-keys"
    label: ClassVar[str] = "Hide the picked tokens from attention (keys)"
    explanation: ClassVar[str] = "No query may attend to the picked tokens (in every layer); the tokens themselves stay in the input."

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        n = len(tokens)
        check_positions(self.positions, n, "hide from attention")
        if len(set(self.positions)) >= n:
            raise InterventionError("at least one token must stay visible")
        return InterventionInputs(attention_bias=hidden_keys_bias(n, self.positions))


def sink_positions(tokens: Sequence[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t in ("[CLS]", "[SEP]")]


@register
@dataclass
class LeftOnly(Intervention):
    """Every layer sees only the left context. ``sinks="symmetric"`` (default) lets every query see
    [CLS] and [SEP] (which see only themselves), so left-only and right-only differ in context, not
    in which attention sink they keep; ``sinks="strict"`` is the plain triangular mask."""
    family: ClassVar[str] = "direction"

    kind: ClassVar[str] = "left-only"
    label: ClassVar[str] = "Left context only (every layer)"
    explanation: ClassVar[str] = "Every query attends only to itself and the words on its left, as a left-to-right model would."
    direction: ClassVar[str] = "left-only"
    sinks: str = "symmetric"

    def describe(self) -> str:
        return self.kind + ("" if self.sinks == "symmetric" else f" ({self.sinks} sinks)")

    def allowed(self, tokens: Sequence[str]) -> torch.Tensor:
        if self.sinks not in ("symmetric", "strict"):
            raise InterventionError(f"sinks must be symmetric or strict (got {self.sinks!r})")
        return directional_allowed(len(tokens), self.direction,
                                   sink_positions(tokens) if self.sinks == "symmetric" else ())

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        return InterventionInputs(attention_bias=bias_from_allowed(self.allowed(tokens)))


@register
@dataclass
class RightOnly(LeftOnly):
    kind: ClassVar[str] = "right-only"
    label: ClassVar[str] = "Right context only (every layer)"
    explanation: ClassVar[str] = "Every query attends only to itself and the words on its right."
    direction: ClassVar[str] = "right-only"


@register
@dataclass
class LeftOnlyControl(LeftOnly):
    """The matched control of left-only: each query loses as many keys, chosen at random."""

    kind: ClassVar[str] = "left-only-control"
    label: ClassVar[str] = "Control: hide as many random keys as left-only"
    explanation: ClassVar[str] = "Hides as many keys per query as left-only, chosen at random: tells direction from mere loss of context."
    seed: int = 0

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        allowed = matched_random_allowed(super().allowed(tokens), sink_positions(tokens), self.seed)
        return InterventionInputs(attention_bias=bias_from_allowed(allowed))


@register
@dataclass
class RightOnlyControl(LeftOnlyControl):
    kind: ClassVar[str] = "right-only-control"
    label: ClassVar[str] = "Control: hide as many random keys as right-only"
    explanation: ClassVar[str] = "Hides as many keys per query as right-only, chosen at random: the control of right-only."
    direction: ClassVar[str] = "right-only"


def parse_heads(text: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``"3-5, 6-1"`` (1-based layer-head, as papers write them) -> [(2, 4), (5, 0)]."""
    heads = []
    for part in str(text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            layer, head = (int(v) for v in part.replace(":", "-").split("-"))
        except ValueError:
            raise InterventionError(f"cannot read head {part!r}: write layer-head, e.g. 3-5") from None
        if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
            raise InterventionError(f"head {part} does not exist: layers 1-{n_layers}, heads 1-{n_heads}")
        heads.append((layer - 1, head - 1))
    if not heads:
        raise InterventionError("name at least one head to ablate, e.g. 3-5")
    return heads


ABLATIONS = ("zero", "mean", "resample")


@register
@dataclass
class AblateHeads(Intervention):
    """Replace chosen heads' outputs: by zeros, by their mean output over a reference set
    (``reference`` (layers, heads, d_head)), or by their output on another input: ``reference``
    (layers, heads, positions, d_head) aligned to this input, or a ``ResamplePool`` that draws one
    (resample ablation; positions never wrap)."""
    family: ClassVar[str] = "heads"

    kind: ClassVar[str] = "ablate-heads"
    label: ClassVar[str] = "Ablate heads (zero, mean or resampled output)"
    explanation: ClassVar[str] = "Replaces the named heads' outputs by zeros, their mean output, or their output on another sentence."
    heads: list[tuple[int, int]] = field(default_factory=list)  # 0-based (layer, head)
    mode: str = "zero"
    reference: torch.Tensor | ResamplePool | None = None

    def describe(self) -> str:
        return f"{self.kind} heads " + ", ".join(head_name(layer, head) for layer, head in self.heads) + \
            ("" if self.mode == "zero" else f" ({self.mode})")

    @classmethod
    def build(cls, options: dict[str, Any], shape: tuple[int, int] | None) -> AblateHeads:
        options = dict(options)
        if isinstance(options.get("heads"), str):
            if shape is None:
                raise InterventionError("heads named as text need the model's layers and heads")
            options["heads"] = parse_heads(options["heads"], *shape)
        if callable(options.get("reference")):
            options["reference"] = options["reference"]() if options.get("mode", "zero") != "zero" else None
        return super().build(options, shape)

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        if not self.heads:
            raise InterventionError("name at least one head to ablate")
        if self.mode not in ABLATIONS:
            raise InterventionError(f"ablation must be one of {', '.join(ABLATIONS)} (got {self.mode!r})")
        if self.mode != "zero" and self.reference is None:
            raise InterventionError(f"{self.mode} ablation needs reference head outputs")
        by_layer: dict[int, list[int]] = {}
        for layer, head in self.heads:
            by_layer.setdefault(layer, []).append(head)
        outputs = self.reference
        if isinstance(outputs, ResamplePool):
            outputs = outputs.draw([outputs.lab.tokenizer.token_to_id(t) for t in tokens])  # (layers, heads, n, d_head)
        reference = (lambda layer: None) if self.mode == "zero" else (lambda layer: outputs[layer])
        return InterventionInputs(edits={layer_hook(layer, "context"): ablate_heads_edit(heads, reference(layer))
                                         for layer, heads in by_layer.items()})


def has_absolute_positions(model: BertLab) -> bool:
    """Whether a position scheme adds vectors to the embeddings at ``hook_position`` (a learned table, or the fixed
    sinusoids; not DeBERTa-v3's, ModernBERT's or ALiBi's positions, which act inside attention)."""
    return any(scheme.adds_position_vectors for scheme in model.schemes)


def need_absolute_positions(model: BertLab) -> None:
    if not has_absolute_positions(model):
        if has_rotary_positions(model):
            raise InterventionError("this model has no absolute position embeddings to change (ModernBERT's positions "
                                    "are rotary, inside its attention): rotate or disable them instead")
        raise InterventionError("this model has no absolute position embeddings to change (DeBERTa-v3's positions are "
                                "relative, inside its attention): zero its position terms instead")


@register
@dataclass
class ZeroPositions(Intervention):
    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "zero-positions"
    acts_on: ClassVar[str | None] = "vectors"
    label: ClassVar[str] = "Zero the position embeddings"
    explanation: ClassVar[str] = "Sets every position embedding to zero: the model sees a bag of tokens."

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_absolute_positions(model)
        return InterventionInputs(edits={hook_name("position"): zero_edit})


def check_shuffle_seed(seed: object) -> None:
    if not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InterventionError(f"the shuffle seed must be a whole number from 0 to {2**32 - 1} (got {seed!r})")


@register
@dataclass
class ShufflePositions(Intervention):
    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "shuffle-positions"
    acts_on: ClassVar[str | None] = "vectors"
    label: ClassVar[str] = "Shuffle position ids (tokens kept)"
    explanation: ClassVar[str] = "Gives the tokens a random permutation of position ids (the seed picks it); tokens stay in place."
    seed: int = 0

    def __post_init__(self) -> None:
        check_shuffle_seed(self.seed)

    def describe(self) -> str:
        return f"{self.kind} (seed {self.seed})"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_absolute_positions(model)
        real = movable_positions(tokens)
        perm = torch.arange(len(tokens))
        generator = torch.Generator().manual_seed(self.seed)
        perm[real] = torch.tensor(real)[torch.randperm(len(real), generator=generator)]
        return InterventionInputs(position_ids=perm[None])


@register
@dataclass
class ShuffleWords(ShufflePositions):
    """Shuffle the input with positions kept: whole words (a word's pieces stay together and in
    order; ``unit="words"``, the default) or single WordPieces (``unit="tokens"``). For attention
    alone, shuffling tokens with positions kept is the same experiment as shuffling position ids
    with tokens kept: self-attention is permutation-equivariant, so only the pairing of tokens with
    positions matters."""

    kind: ClassVar[str] = "shuffle-words"
    acts_on: ClassVar[str | None] = None
    label: ClassVar[str] = "Shuffle the words (positions kept)"
    explanation: ClassVar[str] = "Shuffles the words (or single WordPieces) into a random order; position ids stay 0, 1, 2, ..."
    unit: str = "words"

    def describe(self) -> str:
        return f"{self.kind} (seed {self.seed}, unit {self.unit})"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        """Words read from WordPiece's ``##`` marks (when no word ids are at hand)."""
        word_ids: list[int | None] = []
        for i, token in enumerate(tokens):
            if token in SPECIAL_TOKENS:
                word_ids.append(None)
            elif token.startswith("##") and word_ids and word_ids[-1] is not None:
                word_ids.append(word_ids[-1])
            else:
                word_ids.append(i)
        return self.inputs_for(model, tokens, word_ids)

    def inputs_for(self, model: BertLab, tokens: Sequence[str],
                   word_ids: Sequence[int | None] | None = None) -> InterventionInputs:
        """Words are the tokenizer's (``word_ids``), so RoBERTa's and SentencePiece's pieces, which
        carry no ``##``, stay together as well."""
        if word_ids is None:
            return self.inputs(model, tokens)
        if self.unit not in ("words", "tokens"):
            raise InterventionError(f"shuffle unit must be words or tokens (got {self.unit!r})")
        groups: list[list[int]] = []
        for i in movable_positions(tokens):
            same_word = groups and word_ids[i] is not None and word_ids[groups[-1][-1]] == word_ids[i]
            if self.unit == "words" and same_word and groups[-1][-1] == i - 1:
                groups[-1].append(i)
            else:
                groups.append([i])
        real = [i for group in groups for i in group]
        moved = [groups[g] for g in np.random.default_rng(self.seed).permutation(len(groups))]
        order = list(range(len(tokens)))
        for slot, source in zip(real, [i for group in moved for i in group]):
            order[slot] = int(source)
        return InterventionInputs(token_order=order)


@register
@dataclass
class ShiftPositions(Intervention):
    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "shift-positions"
    acts_on: ClassVar[str | None] = "vectors"
    label: ClassVar[str] = "Shift all position ids by k"
    explanation: ClassVar[str] = "Adds k to every position id, as if the sentence started k tokens later."
    shift: int = 0

    def describe(self) -> str:
        return f"{self.kind} by {self.shift}"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_absolute_positions(model)
        n, limit = len(tokens), model.config.max_tokens
        if self.shift < 0 or n + self.shift > limit:
            raise InterventionError(f"shift must be between 0 and {limit - n} for this {n}-token input")
        return InterventionInputs(position_ids=torch.arange(self.shift, self.shift + n)[None])


@register
@dataclass
class SinusoidalPositions(Intervention):
    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "sinusoidal-positions"
    acts_on: ClassVar[str | None] = "vectors"
    label: ClassVar[str] = "Sinusoidal instead of learned positions"
    explanation: ClassVar[str] = ("Replaces the learned position embeddings by Vaswani et al.'s sinusoids, "
                                  "each row rescaled to the learned row's norm.")

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_absolute_positions(model)
        table = scaled_sinusoidal(model, len(tokens))
        return InterventionInputs(edits={hook_name("position"): replace_positions_edit(table)})


@register
@dataclass
class RandomPositions(Intervention):
    """The control of the sinusoidal intervention: random vectors with each learned row's norm."""
    family: ClassVar[str] = "positions"

    kind: ClassVar[str] = "random-positions"
    acts_on: ClassVar[str | None] = "vectors"
    label: ClassVar[str] = "Control: random position vectors of the same norms"
    explanation: ClassVar[str] = "Random position vectors with the learned ones' norms: the control of the sinusoidal intervention."
    seed: int = 0

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_absolute_positions(model)
        table = random_positions(model, len(tokens), self.seed)
        return InterventionInputs(edits={hook_name("position"): replace_positions_edit(table)})


def has_relative_bias(model: BertLab) -> bool:
    """Whether the model's attention adds a learned relative-position bias (MPNet) at ``position_bias``."""
    return model.scheme("relative") is not None


NO_RELATIVE_BIAS = "this model has no relative-position bias to zero (of the loaded families only MPNet's attention has one)"


@register
@dataclass
class ZeroRelativeBias(Intervention):
    """MPNet's relative-position bias (one table for every layer) set to 0 at its hook point: every
    layer's scores lose what the key's offset from the query adds, the absolute positions stay."""

    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "zero-relative-bias"
    acts_on: ClassVar[str | None] = "relative"
    label: ClassVar[str] = "Zero the relative-position bias (MPNet)"
    explanation: ClassVar[str] = ("Sets the bias each head adds for the key's offset from the query to 0 in every layer; "
                                  "the absolute position embeddings stay.")

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        if not has_relative_bias(model):
            raise InterventionError(NO_RELATIVE_BIAS)
        return InterventionInputs(edits={hook_name("position_bias"): zero_edit})


@register
@dataclass
class ZeroRelativeBiasControl(ZeroRelativeBias):
    """The matched control of zero-relative-bias. Zeroing subtracts the bias b(q, k) from every score; the
    control subtracts b(q, pi(k)) instead, where pi is a seeded random order of the keys drawn for every
    head and query. What it removes therefore has, row by row, exactly the values the intervention removes
    (the same size and distribution, and softmax sees a row at a time) but none of their alignment with the
    key's offset, and the real bias stays in place. A larger change under zero-relative-bias than under
    its control is then due to the position structure of the bias, not to perturbing the scores by that
    much. (Replacing the bias by its permuted copy instead would remove the offsets in both conditions.)"""

    kind: ClassVar[str] = "zero-relative-bias-control"
    label: ClassVar[str] = "Control: remove a key-shuffled copy of the relative bias"
    explanation: ClassVar[str] = ("Subtracts each head's relative-bias values on randomly chosen keys (the seed picks them): "
                                  "as much bias as zeroing removes, with no offset structure.")
    seed: int = 0

    def describe(self) -> str:
        return f"{self.kind} (seed {self.seed})"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        if not has_relative_bias(model):
            raise InterventionError(NO_RELATIVE_BIAS)
        return InterventionInputs(edits={hook_name("position_bias"): remove_permuted_bias_edit(self.seed)})


def position_term_hooks(model: BertLab) -> list[str]:
    """DeBERTa's content-to-position and position-to-content hook points of every layer (none elsewhere)."""
    names = [hook_name(term, layer) for layer in range(model.config.num_hidden_layers) for term in ("c2p", "p2c")]
    return [name for name in names if name in model.hook_names]


NO_POSITION_TERMS = ("this model has no disentangled position terms to zero (of the loaded families only DeBERTa's "
                     "attention has them)")


@register
@dataclass
class ZeroPositionTerms(Intervention):
    """DeBERTa's content-to-position and position-to-content terms (He et al. 2021) set to 0 in every layer:
    the scores keep content-to-content only, which is DeBERTa with ``relative_attention=False``
    (tests/test_deberta.py checks it against transformers)."""

    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "zero-position-terms"
    acts_on: ClassVar[str | None] = "disentangled"
    label: ClassVar[str] = "Zero the position terms c2p and p2c (DeBERTa)"
    explanation: ClassVar[str] = ("Sets the content-to-position and position-to-content score terms to 0 in every layer: "
                                  "attention then sees content only, as DeBERTa without relative attention.")

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        hooks = position_term_hooks(model)
        if not hooks:
            raise InterventionError(NO_POSITION_TERMS)
        return InterventionInputs(edits={name: zero_edit for name in hooks})


@register
@dataclass
class ZeroPositionTermsControl(ZeroPositionTerms):
    """The matched control of zero-position-terms, as zero-relative-bias-control is of MPNet's zeroing: each
    position term minus its own key-permuted copy (one seeded order of the keys per head and query, the same
    for both terms and every layer), so as much is removed, row by row, with none of its relation to the
    key's offset, and the real terms stay in place."""

    kind: ClassVar[str] = "zero-position-terms-control"
    label: ClassVar[str] = "Control: remove key-shuffled copies of the position terms"
    explanation: ClassVar[str] = ("Subtracts each head's position-term values on randomly chosen keys (the seed picks "
                                  "them): as much as zeroing removes, with no offset structure.")
    seed: int = 0

    def describe(self) -> str:
        return f"{self.kind} (seed {self.seed})"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        hooks = position_term_hooks(model)
        if not hooks:
            raise InterventionError(NO_POSITION_TERMS)
        return InterventionInputs(edits={name: remove_permuted_bias_edit(self.seed) for name in hooks})


def has_rotary_positions(model: BertLab) -> bool:
    """Whether the model turns its queries and keys by rotary positions (ModernBERT) at ``rotary_positions``."""
    return model.scheme("rotary") is not None


NO_ROTARY = "this model has no rotary positions (of the loaded families only ModernBERT's attention has them)"


def need_rotary_positions(model: BertLab) -> None:
    if not has_rotary_positions(model):
        raise InterventionError(NO_ROTARY)


@register
@dataclass
class RotatePositions(Intervention):
    """Every rotary position plus k (Su et al. 2021): a query at m and a key at n are turned by m + k and n + k, and
    their dot product depends on (m + k) - (n + k) = m - n only, so attention must not change beyond float error.
    A test of the rotary mechanism (and of the view's precision), not of the model's use of positions."""

    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "rotate-positions"
    acts_on: ClassVar[str | None] = "rotary"
    label: ClassVar[str] = "Rotate every rotary position by k (ModernBERT)"
    explanation: ClassVar[str] = ("Adds k to every position the queries and keys are rotated by: rotary scores depend "
                                  "only on offsets, so attention should stay the same up to float error.")
    shift: int = 0

    def describe(self) -> str:
        return f"{self.kind} by {self.shift}"

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_rotary_positions(model)
        if not isinstance(self.shift, int) or not 0 <= self.shift <= model.config.max_tokens:
            raise InterventionError(f"the offset must be a whole number from 0 to {model.config.max_tokens}")
        shift = float(self.shift)
        return InterventionInputs(edits={hook_name("rotary_positions"): lambda x, _: x + shift})


@register
@dataclass
class DisableRotary(Intervention):
    """Every rotary position set to 0, so cos = 1 and sin = 0: queries and keys are not turned at all and no layer's
    scores see any order (the local layers' window still limits which keys a query sees)."""

    family: ClassVar[str] = "positions"
    kind: ClassVar[str] = "disable-rotary"
    acts_on: ClassVar[str | None] = "rotary"
    label: ClassVar[str] = "Disable the rotary positions (ModernBERT)"
    explanation: ClassVar[str] = ("Queries and keys are not rotated in any layer: attention sees no token order "
                                  "(the local layers' window stays).")

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_rotary_positions(model)
        return InterventionInputs(edits={hook_name("rotary_positions"): zero_edit})


@register
@dataclass
class DisableRotaryControl(DisableRotary):
    """The matched control of disable-rotary: tokens rotated by a seeded random permutation of the positions
    0..n-1. Each query and key is turned by as much as some real position turns it (the same angles in the
    input as a whole), but the offsets no longer follow the token order; the window stays. A larger change
    under disable-rotary than under its control is then due to removing rotation, not to scrambling order."""

    kind: ClassVar[str] = "disable-rotary-control"
    label: ClassVar[str] = "Control: rotate by shuffled positions"
    explanation: ClassVar[str] = ("Rotates queries and keys by a random permutation of the positions (the seed picks "
                                  "it): as much rotation per vector, no order.")
    seed: int = 0

    __post_init__ = ShufflePositions.__post_init__
    describe = ShufflePositions.describe

    def inputs(self, model: BertLab, tokens: Sequence[str]) -> InterventionInputs:
        need_rotary_positions(model)
        perm = torch.randperm(len(tokens), generator=torch.Generator().manual_seed(self.seed))

        def shuffled(positions: torch.Tensor, _name: str) -> torch.Tensor:  # (batch | 1, pos)
            return positions[..., perm.to(positions.device)]

        return InterventionInputs(edits={hook_name("rotary_positions"): shuffled})


KINDS = tuple(REGISTRY)


def applicable_kinds(model: BertLab) -> list[str]:
    """The registered interventions that apply to ``model``'s position schemes, in the registry's order."""
    return [kind for kind, cls in REGISTRY.items() if cls.applies_to(model)]
