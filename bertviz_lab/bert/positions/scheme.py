"""What a position scheme is to the encoder: the parts it adds and the points of a forward pass it acts at.

A model's positions are a tuple of scheme names in its config (``BertConfig.positions``): BERT's
``("learned",)``, MPNet's ``("learned", "relative")``, DeBERTa-v3's ``("disentangled",)``, ModernBERT's
``("rotary",)``, the position twins' one scheme each. The encoder builds each scheme once and asks it, at
five points, instead of testing flags: the embeddings (a table added to the tokens), the encoder (a table or
buffer every layer reads), each attention (projections, hook points), a forward pass (a score bias, per-pass
state such as angles) and each layer's scores (a turn of q and k, or an attention of the scheme's own). A new
scheme is one file under ``bert/positions/`` that subclasses ``PositionScheme`` and registers itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from ..encoder.hook_spot import HookSpot

SCHEMES: dict[str, type[PositionScheme]] = {}


def register(cls: type[PositionScheme]) -> type[PositionScheme]:
    """Class decorator: the scheme under its ``name`` (the one list every view, intervention and family reads)."""
    if cls.name in SCHEMES:
        raise ValueError(f"two position schemes are called {cls.name!r}")
    SCHEMES[cls.name] = cls
    return cls


# The bias a scheme adds to every layer's scores (one hook point, whichever scheme fills it; see its ``hooks``).
POSITION_BIAS = HookSpot("bert.encoder.hook_position_bias", "BertEncoder (a scheme that adds a score bias)",
                         "(batch | 1, heads, query, key)",
                         "the position bias added to every layer's scores, as the scheme that adds it computes it")


@dataclass(frozen=True)
class Geometry:
    """What a scheme's positions look like, as one matrix a heatmap draws: ``values[row, column]`` with the labels of
    each axis, a title and one sentence on how to read it (the position inspector and the Positions lesson)."""

    title: str
    values: Any  # numpy (rows, columns), float
    rows: list[str]
    columns: list[str]
    row_title: str
    column_title: str
    note: str


def cosine_matrix(table: torch.Tensor) -> Any:
    """(n, n) numpy cosine similarity of the rows of ``table`` (n, d)."""
    unit = torch.nn.functional.normalize(table.detach().double(), dim=-1)
    return (unit @ unit.T).float().cpu().numpy()


@dataclass(frozen=True)
class PassPositions:
    """What one forward pass's layers read from its schemes: the additive bias (mask and position biases, (batch
    | 1, heads | 1, query, key) or None) and each scheme's per-pass state by name (angles, relative tables)."""

    bias: torch.Tensor | None
    state: dict[str, Any]

    def for_layer(self, schemes: tuple[PositionScheme, ...], layer: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        """The bias and state layer ``layer`` (0-based) uses: a scheme may give a layer its own (a local window)."""
        bias, state = self.bias, dict(self.state)
        for scheme in schemes:
            if scheme.name in state:
                bias, state[scheme.name] = scheme.layer_state(state[scheme.name], layer, bias)
        return bias, state


class PositionScheme:
    """One way of telling an encoder where its tokens are. Every method has a do-nothing default, so a scheme
    says only what it changes. ``cfg`` is the model's ``BertConfig``."""

    name: ClassVar[str]
    label: ClassVar[str]  # what the page and the model card call it
    citation: ClassVar[str] = ""
    # a token's output depends on the others only through attention, so leaving a token out of the input (the
    # rest keeping their position ids) equals hiding it from every query on every layer (interventions/hiding.py)
    input_only: ClassVar[bool] = True
    reads_position_ids: ClassVar[bool] = False  # position ids change what it does (interventions move them)
    adds_position_vectors: ClassVar[bool] = False  # a (position, d_model) table is added to the token embeddings
    # the rows of the hook points this scheme adds (short name -> HookSpot): bert/encoder/hook_table.py's
    # FAMILY_HOOKS is built from every scheme's, so a new scheme's points are named in its own file
    hooks: ClassVar[dict[str, HookSpot]] = {}

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    # --- parts, made when the model is built (module names are the checkpoints' weight names) ---
    def embedding_parts(self, embeddings: nn.Module) -> None:
        """Add the embedding-side modules and hook points."""

    def encoder_parts(self, encoder: nn.Module) -> None:
        """Add the modules and hook points every layer shares."""

    def attention_parts(self, attention: nn.Module) -> None:
        """Add one self-attention's modules and hook points."""

    # --- a forward pass ---
    def embed(self, embeddings: nn.Module, position_ids: torch.Tensor) -> torch.Tensor | None:
        """(batch | 1, pos, d_emb) vectors added to the token embeddings, or None."""
        return None

    def score_bias(self, model: nn.Module, position_ids: torch.Tensor, n: int,
                   dtype: torch.dtype) -> torch.Tensor | None:
        """(batch | 1, heads, query, key) added to every layer's scores, or None."""
        return None

    def pass_state(self, model: nn.Module, position_ids: torch.Tensor, bias: torch.Tensor | None, n: int,
                   dtype: torch.dtype) -> Any:
        """What every layer reads of this scheme in one pass (None: nothing)."""
        return None

    def layer_state(self, state: Any, layer: int, bias: torch.Tensor | None) -> tuple[torch.Tensor | None, Any]:
        """The bias and state of layer ``layer``: the pass's own by default."""
        return bias, state

    # --- one attention ---
    def turn(self, attention: nn.Module, q: torch.Tensor, k: torch.Tensor, state: Any
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """q and k (batch, heads, pos, d_head) as the scores see them."""
        return q, k

    def attend(self, attention: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               bias: torch.Tensor | None, state: Any) -> torch.Tensor | None:
        """An attention of the scheme's own, (batch, heads, query, d_head); None: the standard one."""
        return None

    # --- what it looks like ---
    def geometry(self, model: nn.Module, n: int) -> Geometry | None:
        """The scheme's positions for inputs of ``n`` tokens, as one matrix to draw; None: nothing to draw."""
        return None
