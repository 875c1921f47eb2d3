"""The position inspector of the Interventions tab: what the loaded model's position schemes look like for
inputs of n tokens, chosen by the schemes the model has (its config's ``positions``), never by testing flags.

Four combinations have a view of their own that says more than one matrix (ModernBERT's rotary bands with its local
windows, DeBERTa's relative table, MPNet's two schemes side by side, a learned table beside the sinusoids it could
have been); every other model (the position twins: sinusoidal, relative buckets, ALiBi, none) shows what each of its
schemes draws of itself (``PositionScheme.geometry``), so a new scheme is inspected without an edit here."""
from __future__ import annotations

from collections.abc import Callable

from ..figures import interventions as intervention_views
from ..figures.base import Figure
from ..interventions import position_similarity, relative_bias_table, relative_embedding_similarity, rotary_bands
from ..lab import Lab

Inspection = tuple[str, str, Figure | None]  # what it found, its settings, the figure (None: nothing to draw)


def rotary(lab: Lab, n: int) -> Inspection:
    bands = rotary_bands(lab)
    found = (f"Rotary positions (no position table): each frequency band's wavelength in tokens, global layers "
             f"{', '.join(map(str, bands.global_layers))} and local layers (window ±{bands.half_window}); "
             f"bands under {n} tokens tell positions in a {n}-token input apart.")
    return found, f"{n} tokens", intervention_views.rotary_bands_figure(bands, n)


def disentangled(lab: Lab, n: int) -> Inspection:
    found = (f"Cosine similarity of the relative-position embeddings {n} tokens read (DeBERTa has no "
             "absolute positions): one row per bucketed offset, shared by every layer.")
    return found, f"{n} tokens", intervention_views.relative_embedding_figure(relative_embedding_similarity(lab, n), n)


def learned_and_relative(lab: Lab, n: int) -> Inspection:
    learned, _ = position_similarity(lab, n)
    found = (f"Cosine similarity of the first {n} learned positions, beside the relative-position bias every "
             "layer adds (heads x offset buckets).")
    return found, f"first {n} positions", intervention_views.position_geometry_figure(learned, relative_bias_table(lab))


def learned(lab: Lab, n: int) -> Inspection:
    table, sinusoid = position_similarity(lab, n)
    found = f"Cosine similarity of the first {n} positions: the model's learned ones beside sinusoidal ones."
    return found, f"first {n} positions", intervention_views.position_figure(table, sinusoid)


def each_scheme(lab: Lab, n: int) -> Inspection:
    """What every scheme of the model draws of itself; a model without positions says so."""
    drawn = [(scheme, g) for scheme in lab.model.schemes if (g := scheme.geometry(lab.model, n)) is not None]
    if not drawn:
        return ("This model has no positions: nothing tells one position from another, so it reads its input as a "
                "bag of words (its predictions cannot change when the other words are shuffled).", f"{n} tokens", None)
    scheme, geometry = drawn[0]
    others = [s.label for s, _ in drawn[1:]]
    found = f"{scheme.label}: {geometry.note}." + (f" (Also in this model: {', '.join(others)}.)" if others else "")
    return found, f"{n} tokens", intervention_views.scheme_geometry_figure(geometry, n)


OWN_VIEWS: dict[tuple[str, ...], Callable[[Lab, int], Inspection]] = {
    ("rotary",): rotary, ("disentangled",): disentangled, ("learned", "relative"): learned_and_relative,
    ("learned",): learned,
}


def inspect_positions(lab: Lab, n: int) -> Inspection:
    """The inspector's sentence, settings and figure for ``lab`` at ``n`` tokens."""
    names = tuple(scheme.name for scheme in lab.model.schemes)
    return OWN_VIEWS.get(names, each_scheme)(lab, n)
