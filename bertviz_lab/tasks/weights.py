"""Whose weights an action runs on when the person named none: the one rule every door follows.

An action that reads the masked-word or next-sentence heads runs on ``default`` (the embedded MiniLM with the heads
bertviz-lab trained). Attention studied for its own sake (scoring heads, structural probes) runs on published weights:
the door's loaded ``default`` becomes ``minilm-original``, since bertviz-lab fine-tuned default's layers for masked
words. A checkpoint named for the action itself is used as named (``--model default`` scores ``default``).
"""
from __future__ import annotations

from ..bert import DEFAULT_CHECKPOINT, ORIGINAL_CHECKPOINT


def published_checkpoint(checkpoint: str | None) -> str:
    """``default`` (or nothing) -> ``minilm-original``; anything else as given."""
    return ORIGINAL_CHECKPOINT if checkpoint in (None, "", DEFAULT_CHECKPOINT) else checkpoint


def weights_for(reads_heads: bool, named: str | None = None, loaded: str | None = None) -> str:
    """The checkpoint an action uses: ``named`` for this action as typed; else, for an action that reads the
    pretraining heads, the door's ``loaded`` model or ``default``; else the published weights of ``loaded``."""
    if named:
        return named
    if reads_heads:
        return loaded or DEFAULT_CHECKPOINT
    return published_checkpoint(loaded)


def other_weights(chosen: str, loaded: str | None) -> str:
    """What a comparison sets beside ``chosen``: the loaded model when the published weights were chosen, else the
    published weights (the Syntax tab's "compare with")."""
    published = published_checkpoint(loaded)
    return (loaded or published) if chosen == published else published
