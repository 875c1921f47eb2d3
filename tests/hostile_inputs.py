"""Bad inputs the app must answer with a message a person can act on (never a bare error, never
a crash): one row per class. The suite runs them all through gradio_client (fast); the load
benchmark mixes them with good requests."""
from __future__ import annotations

LONG = " ".join(["word"] * 600)

# (api name, arguments, a word the error or message must contain)
BAD_INPUTS = [
    ("attention", ("", "", 5), "empty"),
    ("attention", ("   \t\n", "", 5), "empty"),
    ("attention", ("the cat", "", 0), "top-k"),
    ("attention", ("the cat", "", 1e30), "top-k"),
    ("attention", ("the cat", "", -4), "top-k"),
    ("attention", ("[MASK] [MASK] [MASK] cat", "", 5), "too many masked"),
    ("attention", ("x" * 100_001, "", 5), "characters long"),
    ("analyze", ("the cat", "", "abc"), "Expected"),
    ("analyze", ("", "", 5), "empty"),
    ("analyze", ("[MASK] [MASK] [MASK]", "", 5), "too many masked"),
    ("mask_tokens", ("the cat sat", "", 5, []), "choose one or more tokens"),
    ("mask_tokens", ("the cat sat", "", 5, [0]), "not in the list of choices"),
    ("mask_tokens", ("the cat sat", "", 5, [99]), "not in the list of choices"),
    ("intervention", ("the cat sat", "", 5, "no-such-intervention", [], "1-1", 0, 0), "not in the list of choices"),
    ("intervention", ("the cat sat", "", 5, "ablate-heads", [], "9-99", 0, 0), "does not exist"),
    ("intervention", ("the cat sat", "", 5, "ablate-heads", [], "x", 0, 0), "cannot read head"),
    ("intervention", ("the cat sat", "", 5, "shift-positions", [], "1-1", 10_000, 0), "shift"),
    ("intervention", ("the cat sat", "", 5, "shuffle-words", [], "1-1", 0, -1), "seed"),
    ("intervention", ("the cat sat", "", 5, "mask-tokens", [], "1-1", 0, 0), "choose the tokens"),
    ("directional_sweep", ("the cat sat", "", []), "mask at least one token"),
    ("ablation_sweep", ("the cat sat", "", []), "mask at least one token"),
    ("load_model", ("../../etc", "cpu"), "not enabled"),
    ("load_model", ("/etc/passwd", "cpu"), "not enabled"),
    ("position_embeddings", (1,), "Value 1 is less than minimum"),
    ("patching", ("a [MASK] b", "a b [MASK] c", "the", "cat"), "same number of tokens"),
    ("score_heads", ("upload", None, False, False), "upload a CoNLL-U file first"),
    ("structural_probe", ("upload", None, False), "upload a CoNLL-U file first"),
    ("export_csv", (), "Run an analysis first"),
    ("recipe", (None,), "No result yet"),
    ("recipe", ("../../etc/passwd",), "not in the list of choices"),
    ("sync_view", (1e30, 1, False, False, "all", "attention", "aggregates"), "maximum"),
    ("sync_view", (1, 1, False, False, "C->D", "attention", "aggregates"), "not in the list of choices"),
    ("search_tokens", (None, 1, 1, "embeddings", "all heads"), "Press Run first"),
    ("search_tokens", (None, 1, 1, "nope", "all heads"), "not in the list of choices"),
    ("qk_space", (1, 1, "input", "position", "pca"), "press Run first"),
    ("qk_space", (99, 1, "sample", "position", "pca"), "maximum"),
    ("qk_space", (1, 1, "sample", "position", "umap"), "umap-learn"),
    ("head_similarity", ("input",), "press Run first"),
    ("intervention_controls", ("no-such-intervention",), "not in the list of choices"),
    ("parse_sentence", ("   ", 1, 1), "no words"),
    ("parse_sentence", ("x" * 100_001, 1, 1), "characters long"),
]
