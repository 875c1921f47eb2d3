"""A hook point's row: its name template, the module it wraps, its shape and what it holds. The encoder's own rows
are ``hook_table.HOOK_TABLE``; a position scheme declares the rows of the hook points it adds (``PositionScheme.hooks``),
so knowledge of a scheme's points lives in the scheme's file."""
from __future__ import annotations

from dataclasses import dataclass

SELF = "bert.encoder.layer.{layer}.attention.self"  # every layer's self-attention module


@dataclass(frozen=True)
class HookSpot:
    """One hook point: its name template (``{layer}`` 0-based), the module it wraps and its shape."""

    template: str
    module: str
    shape: str
    what: str

    @property
    def per_layer(self) -> bool:
        return "{layer}" in self.template

    def name(self, layer: int | None = None) -> str:
        """The hook point's name; per-layer spots need ``layer`` (0-based)."""
        if self.per_layer != (layer is not None):
            raise KeyError(f"{self.template}: {'a layer is' if self.per_layer else 'no layer is'} needed")
        return self.template.format(layer=layer) if self.per_layer else self.template

    def every_layer(self) -> str:
        """A glob matching this spot in every layer (or its one name)."""
        return self.template.replace("{layer}", "*")
