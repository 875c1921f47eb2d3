"""Numbers computed from an Analysis's attention: display transforms (word level, filters) and
metrics (rollout, head statistics, divergences)."""
from .display import PAIR_FILTERS, AttentionView, Display, attention_view, drop_and_renormalise, to_word_level, word_groups
from .metrics import (
                      HEAD_STATS,
                      batch_head_statistics,
                      cosine_matrix,
                      head_statistics,
                      js_divergence,
                      relative_offset_profile,
                      rollout,
)

__all__ = ["HEAD_STATS", "PAIR_FILTERS", "AttentionView", "Display", "attention_view", "batch_head_statistics", "cosine_matrix",
           "drop_and_renormalise", "head_statistics", "js_divergence", "relative_offset_profile", "rollout",
           "to_word_level", "word_groups"]
