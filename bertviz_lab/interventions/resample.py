"""Resample ablation: a head's output replaced by its output on another input drawn from a pool.

Why a pool, aligned by position: a resample ablation asks what the model does when the head carries
information about *some other* typical input instead of this one (Chan et al. 2022, "Causal
scrubbing", Alignment Forum; Zhang & Nanda 2024, "Towards best practices of activation patching in
language models", ICLR). One fixed other sentence makes the answer a
property of that sentence, and wrapping its positions when it is shorter gives position i an output
computed at another position, which the position embeddings make a different input. So each
ablation draws a sentence (seeded) from the pool among those with at least as many tokens as the
input, and position i takes that sentence's position i, except the input's final [SEP], which takes
the drawn sentence's final [SEP]. Nothing wraps; a pool with no long enough sentence is an error.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..bert import layer_hook
from ..bert.encoder.hook_table import every_layer
from ..lab import Encoded, InputError, Lab


@dataclass
class ResamplePool:
    """Sentences to draw replacement head outputs from; outputs are computed once per drawn sentence."""

    lab: Lab
    texts: list[str]
    seed: int = 0
    _encoded: list[Encoded] = field(default_factory=list, repr=False)
    _outputs: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._encoded = [self.lab.encode(t, truncate=True) for t in self.texts if t.strip()]
        if not self._encoded:
            raise InputError("the resample pool has no sentence")

    def eligible(self, n_tokens: int, exclude: Sequence[int] = ()) -> list[int]:
        """Pool sentences long enough to give every one of ``n_tokens`` positions its own output."""
        ids = list(exclude)
        return [i for i, enc in enumerate(self._encoded) if len(enc.ids) >= n_tokens and enc.ids != ids]

    def draw(self, ids: Sequence[int], draw: int = 0) -> torch.Tensor:
        """Replacement outputs for an input of token ids ``ids``: (layers, heads, n, d_head), from a
        pool sentence chosen by (seed, draw), never the input itself."""
        n = len(ids)
        index = self.chosen(ids, draw)
        if index not in self._outputs:
            self._outputs[index] = head_outputs(self.lab, self._encoded[index])
        outputs = self._outputs[index]  # (layers, heads, m, d_head)
        m = outputs.shape[2]
        positions = list(range(n - 1)) + [m - 1]  # aligned; the input's last token ([SEP]) takes the last
        return outputs[:, :, positions]

    def chosen(self, ids: Sequence[int], draw: int = 0) -> int:
        """Which pool sentence (seed, draw) picks for an input of token ids ``ids``."""
        choices = self.eligible(len(ids), ids)
        if not choices:
            longest = max(len(e.ids) for e in self._encoded)
            raise InputError(f"resample ablation needs a pool sentence of at least {len(ids)} tokens, as long as the "
                             f"input; the longest in the pool has {longest} (add longer sentences or use mean ablation)")
        return random.Random(f"{self.seed}:{draw}").choice(choices)

    def text_of(self, ids: Sequence[int], draw: int = 0) -> str:
        """The pool sentence ``draw`` uses for an input of token ids ``ids`` (for reports and tests)."""
        return [t for t in self.texts if t.strip()][self.chosen(ids, draw)]


def head_outputs(lab: Lab, enc: Encoded) -> torch.Tensor:
    """Every head's output (context) on one input: (layers, heads, positions, d_head)."""
    _, cache = lab.run(lab.batch_tensors([enc]), capture=(every_layer("context"),), compute_mlm=False)
    return torch.stack([cache[layer_hook(layer, "context")][0] for layer in range(lab.n_layers)]).float().cpu()


def reference_for(reference: torch.Tensor | ResamplePool | None, enc: Encoded, draw: int = 0) -> torch.Tensor | None:
    """What replaces an ablated head on ``enc``: nothing (zero), a mean output, or a pool's draw."""
    return reference.draw(enc.ids, draw) if isinstance(reference, ResamplePool) else reference
