"""Interventions: typed descriptions of what to change in a forward pass (one registry), the
baseline-vs-intervened comparison, and sweeps over many interventions."""
from .compare import Comparison, PredictionChange, compare
from .kinds import (
    KINDS,
    REGISTRY,
    Intervention,
    InterventionError,
    InterventionInputs,
    make_intervention,
    option_names,
    parse_heads,
)
from .sweeps import (
    DirectionalRow,
    RelativeBiasTable,
    ablation_sweep,
    directional_sweep,
    position_similarity,
    relative_bias_table,
    relative_embedding_similarity,
    rotary_bands,
)

__all__ = ["KINDS", "REGISTRY", "Comparison", "DirectionalRow", "Intervention", "InterventionError",
           "InterventionInputs", "PredictionChange", "ablation_sweep", "compare", "directional_sweep",
           "make_intervention", "option_names", "parse_heads", "position_similarity", "RelativeBiasTable",
           "relative_bias_table", "relative_embedding_similarity", "rotary_bands"]
