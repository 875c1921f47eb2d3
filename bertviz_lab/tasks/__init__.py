"""The task layer: one UI-free module per thing a person asks the lab to do, under the four doors.

Each module takes a typed request (a frozen dataclass whose ``__post_init__`` checks every setting once, with one
sentence per refusal) and returns a record with ``to_json()``. Defaults, validation and the rule for whose weights
an action runs on (``weights.py``) live here once; the command line, each page tab, the MCP tools and the notebook
only turn their inputs into a request and the record into their output.

analyze.py      one input: attention, masked words, classes, and what --lens / --qk / --explain add
explain.py      why a masked word or a classifier's class (erasure, gradients, DecompX), with faithfulness on this input
positions_lesson.py  two to four position-scheme twins side by side on one sentence (the Positions tab)
score_heads.py  every head against a treebank (Clark et al. 2019), one checkpoint or a job of several
structural_probes.py  structural probes beside attention trees and head ensembles (Hewitt & Manning; Limisiewicz et al.)
treebanks.py    a treebank read once per request, within the door's word limit
validation.py   whole numbers from any door, checked once
weights.py      the one rule for the checkpoint an action uses when none is named
"""
