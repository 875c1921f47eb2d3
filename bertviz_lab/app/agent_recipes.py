"""The agent door's ``run_recipe``: an experiment recipe (``tasks/recipes.py``) run within the server's limits.

An agent sends the same JSON the command line runs (``bertviz-lab run``) and every record carries. This door
runs the actions a public server may: one input (analyze, or a sweep of it), or a sentence set it holds itself
(the sample treebank's sentences, ``"sample": true``, or the shipped held-out lines for faithfulness), never
a file of the server's disk; within the gate's sizes (sentences per set, per faithfulness check); on a
checkpoint the server enables, whose weights' SHA-256 must match the recipe's. Anything else is refused in one
sentence that says where it runs instead (the command line)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..interventions.faithfulness import FaithfulnessSettings
from ..interventions.records import Ablation, Sweep, sweep_record, sweep_set_record
from ..lab import Analysis, InputError, Lab
from ..tasks.analyze import AnalyzeRequest, analyze
from ..tasks.faithfulness_check import FaithfulnessRequest, faithfulness_check
from ..tasks.intervene import InterveneSetRequest, InterventionSpec, intervene_set
from ..tasks.recipes import Recipe, check_weights
from ..tasks.validation import whole
from ..treebank import sentence_texts
from .state import Limits

# per action: the sentences it takes as inputs, and the settings (and seeds) this door runs it with
ACTIONS = {
    "analyze": ({"text", "pair"}, {"top_k", "mask", "truncate"}),
    "compare": (set(), {"intervention", "heads", "shift", "sinks", "unit", "ablation", "max_sentences", "sample",
                        "seed"}),
    "sweep": ({"text", "pair"}, {"kind", "sinks", "ablation", "max_sentences", "sample", "seed", "mask", "shift"}),
    "faithfulness": (set(), {"k", "max_sentences", "seed", "resamples", "protocol"}),
}
ELSEWHERE = "the command line runs it: bertviz-lab run RECIPE.json"


def checked(recipe: Recipe) -> dict[str, Any]:
    """The recipe's options, each one this door runs for its action, or one sentence on the first that is not."""
    if recipe.action not in ACTIONS:
        raise InputError(f"the agent door runs recipes of {', '.join(ACTIONS)}, not {recipe.action!r} ({ELSEWHERE})")
    sentences, settings = ACTIONS[recipe.action]
    for name, value in recipe.inputs.items():
        if name not in sentences or not isinstance(value, str):
            raise InputError(f"the agent door reads no files: {recipe.action}'s input {name!r} is not a sentence it "
                             f"takes here (sentence sets: \"sample\": true; {ELSEWHERE})")
    for name in {**recipe.settings, **recipe.seeds}:
        if name not in settings:
            raise InputError(f"the agent door does not take {name!r} for {recipe.action} (it takes "
                             f"{', '.join(sorted(settings))}; {ELSEWHERE})")
    if recipe.engine.get("kind", "local") != "local":
        raise InputError(f"the agent door runs recipes on this server only, not on Ray ({ELSEWHERE})")
    return {**recipe.settings, **recipe.seeds, **recipe.inputs}


def set_size(options: dict, cap: int, default: int) -> int:
    number = whole(options.get("max_sentences", default), "max_sentences", 1, 1_000_000)
    if number > cap:
        raise InputError(f"this server uses up to {cap} sentences per request (the recipe asks {number}; {ELSEWHERE})")
    return number


def run_agent_recipe(recipe: Recipe, lab: Lab, limits: Limits, summarise: Callable[[Analysis], dict]) -> dict[str, Any]:
    """The record the recipe makes on ``lab`` (the checkpoint it names, enabled here), checked first; an analysis
    is told as ``summarise`` tells it (the analyze tool's compact reply)."""
    options = checked(recipe)
    check_weights(recipe, lab.checkpoint_info().sha256)
    seed = whole(options.get("seed", 0), "seed", 0, 2**32 - 1)
    action = recipe.action
    if action == "faithfulness":
        if options.get("protocol", "ours") != "ours":
            raise InputError(f"the agent door runs the faithfulness protocol 'ours' only ({ELSEWHERE})")
        settings = FaithfulnessSettings(k_max=whole(options.get("k", 5), "k", 1, 50), seed=seed,
                                        max_sentences=set_size(options, limits.faith_sentences, limits.faith_sentences))
        return faithfulness_check(FaithfulnessRequest(settings=settings,
                                                      resamples=whole(options.get("resamples", 1000), "resamples", 0,
                                                                      10_000)), lab).to_json()
    if action == "compare":
        if not options.get("sample"):
            raise InputError(f"compare over this door runs on the sample sentences (\"sample\": true; {ELSEWHERE})")
        spec = InterventionSpec(str(options.get("intervention", "")), str(options.get("heads", "")),
                                options.get("shift", 0), seed, str(options.get("sinks", "symmetric")),
                                str(options.get("unit", "words")), str(options.get("ablation", "zero")))
        request = InterveneSetRequest(tuple(sentence_texts()), spec, seed=seed,
                                      max_sentences=set_size(options, limits.set_sentences, limits.set_sentences))
        return intervene_set(request, lab).to_json()
    if action == "sweep":
        sweep = Sweep(str(options.get("kind", "directional")), options.get("pair"),
                      tuple(int(p) for p in options.get("mask") or ()), str(options.get("sinks", "symmetric")), seed,
                      int(options.get("shift", 10)), Ablation(str(options.get("ablation", "zero")), seed=seed))
        if options.get("sample"):
            return sweep_set_record(lab, sentence_texts(), sweep,
                                    max_sentences=set_size(options, limits.set_sentences, limits.set_sentences))
        if not options.get("text"):
            raise InputError("a sweep needs a text (or \"sample\": true for the sample sentences)")
        return sweep_record(lab, str(options["text"]), sweep)
    if not options.get("text"):
        raise InputError("analyze needs a text")
    request = AnalyzeRequest(str(options["text"]), options.get("pair") or None,
                             tuple(int(p) for p in options.get("mask") or ()),
                             top_k=whole(options.get("top_k", 5), "top_k", 1, 50), truncate=bool(options.get("truncate")))
    return summarise(analyze(request, lab).analysis)
