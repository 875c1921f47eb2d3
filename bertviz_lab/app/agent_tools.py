"""The agent door: five typed tools (analyze, predict_masked, explain, score_heads, run_recipe) that an agent
calls over MCP (``python app.py --mcp``) or any client calls over the API (``/agent_analyze`` ...,
answering JSON text; the methods themselves return dicts).

Gradio turns each method's type hints and docstring into the tool's schema, so the docstrings
are written for the agent reading them (``Args:`` lines become the parameters' descriptions).
``build_demo`` registers every tool with ``gr.api`` through the same ``Gate`` as the page's
events, so a public server's token, mask, work and time budget applies to agents too.
Layers and heads are 1-based in every reply, as on the page.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
from collections.abc import Callable
from typing import Any

import gradio as gr
import numpy as np

from ..attention.metrics import head_statistics
from ..bert import BudgetExceeded, CheckpointError, DeviceError
from ..lab import Analysis, InputError, Lab, load
from ..syntax.live_parser import ParserUnavailable
from ..syntax.run import best_heads_long
from ..tasks.analyze import AnalyzeRequest, analyze
from ..tasks.explain import ExplainRequest
from ..tasks.score_heads import ScoreHeadsRequest, score_heads
from ..treebank import TreebankError
from .events import ONE_TREEBANK_AT_A_TIME
from .state import LabCache, Limits

TOOLS = ("analyze", "predict_masked", "explain", "score_heads", "run_recipe")  # MCP tool names, in the order listed
API_PREFIX = "agent_"  # their API names: /agent_analyze, ... (the page's events own /analyze, /explain, /score_heads)
FULL_ATTENTION_NUMBERS = 20_000  # analyze returns the whole attention array only up to this many numbers
DIGITS = 4  # significant digits of every number in a reply (attributions of a random model are ~1e-4)
SAID_ONCE = ("model", "model_sha256", "source")  # best-heads columns the reply states once, not per row


def number(value: Any) -> float | None:
    """A JSON number to DIGITS significant digits; NaN or infinity (an undefined statistic) as null."""
    value = float(value)
    return float(f"{value:.{DIGITS}g}") if math.isfinite(value) else None


def records(frame) -> list[dict[str, Any]]:
    """A table as JSON rows, NaN as null and numpy scalars as plain numbers."""
    rows = []
    for row in frame.to_dict(orient="records"):
        rows.append({k: (number(v) if isinstance(v, (float, np.floating)) else
                         int(v) if isinstance(v, np.integer) else v) for k, v in row.items() if k not in SAID_ONCE})
    return rows


def masked_words(analysis: Analysis) -> list[dict[str, Any]]:
    """Each masked position's top predictions (position 0 is [CLS])."""
    return [{"position": p.position, "token": p.token,
             "predictions": [{"token": q.token, "probability": number(q.probability)} for q in p.predictions]}
            for p in analysis.mlm]


def head_summary(analysis: Analysis) -> list[dict[str, Any]]:
    """Per head (1-based layer and head): entropy in nats and the mean attention mass on [CLS], [SEP],
    punctuation, the previous, next and same token, each averaged over the query tokens."""
    stats = head_statistics(analysis.attention, analysis.tokens)  # name -> (layers, heads)
    return [{"layer": layer + 1, "head": head + 1, **{name: number(v[layer, head]) for name, v in stats.items()}}
            for layer in range(analysis.n_layers) for head in range(analysis.n_heads)]


def scored_tokens(a: Analysis, why) -> dict[str, Any]:
    """An attribution's scores per context token, its top token per method, and its agreement and faithfulness."""
    tops = {method: a.tokens[why.context[int(np.nanargmax(values))]] for method, values in why.scores.items()}
    return {"top_token": tops["erasure"], "top_token_by_method": tops,
            "scores": {method: [{"position": p, "token": a.tokens[p], "score": number(s)}
                                for p, s in zip(why.context, values)] for method, values in why.scores.items()},
            "spearman_with_erasure": {k: number(v) for k, v in why.agreement.items()},
            "faithfulness_on_this_input": {k: {m: number(v) for m, v in d.items()} for k, d in why.perturbation.items()}}


@contextlib.contextmanager
def answered_in_a_sentence(*kinds: type[Exception]):
    """``kinds`` of error as the tool's one-sentence error; an over-budget request goes on to the gate,
    which answers it as it answers every event (BudgetExceeded is a ValueError too)."""
    try:
        yield
    except BudgetExceeded:
        raise
    except kinds as error:
        raise gr.Error(error.args[0] if error.args else str(error)) from None


def compact(a: Analysis) -> dict[str, Any]:
    """The analyze tool's compact reply: tokens, one summary per head, the masked words, NSP and classes."""
    return {"model": a.model, "tokens": a.tokens, "segment_ids": a.segment_ids, "layers": a.n_layers,
            "heads": a.n_heads, "head_summary": head_summary(a), "masked": masked_words(a),
            "masked_note": a.mlm_note, "next_sentence_probability": None if a.nsp is None else number(a.nsp),
            "classes": [{"label": c.label, "probability": number(c.probability)} for c in a.classes]}


class AgentTools:
    """The tools on one server's startup model; ``cache`` loads the published weights score_heads uses."""

    def __init__(self, lab: Lab, cache: LabCache | None = None, limits: Limits | None = None) -> None:
        self.lab, self.cache, self.limits = lab, cache, limits or Limits()

    def _analysis(self, text: str, pair: str = "", top_k: int = 5, explain: ExplainRequest | None = None,
                  parse: bool = False, model: str = ""):
        lab = self._lab_named(model.strip()) if model and model.strip() else self.lab
        return analyze(AnalyzeRequest(text, pair or None, top_k=top_k, explain=explain, parse=parse), lab)

    def analyze(self, text: str, pair: str = "", parse: bool = False, attention: bool = False,
                model: str = "") -> dict[str, Any]:
        """Run BERT on a text and summarise its attention: the tokens, one summary per attention head,
        and the predictions for every [MASK]. Compact by default; the full attention array on request.

        Args:
            text: the sentence to analyse; write [MASK] where the model should predict a word
            pair: an optional second sentence (BERT's sentence-pair input); empty for none
            parse: also parse the text offline (spaCy, converted to UD heads; not with a pair) and score every head on
                its arcs
            attention: also return the full attention array (layers x heads x query x key), when it has at most 20000
                numbers (about 9 tokens on a 12 x 12 model, 16 on a 6 x 12 one)
            model: a checkpoint among those this server enables (e.g. "default", "minilm-original", "sst2"); empty
                for the server's model

        Returns:
            a JSON object with model, tokens, segment_ids, layers and heads (how many)
            head_summary: per 1-based layer and head, attention entropy (nats) and mean attention on [CLS], [SEP],
            punctuation and the previous, next and same token
            masked: the top-5 predictions at each [MASK] (position 0 is [CLS]); masked_note says why there are none
            next_sentence_probability: with a pair, P(pair follows text), when the checkpoint has that head
            classes: a sequence classifier's classes with their probabilities, most probable first (else empty)
            attention (with attention): the full array (layers x heads x query x key), only when it has at most 20000
                numbers; attention_note says why it is left out
            parse (with parse): words, heads (1-based word indices, 0 = root), relations, parser (a parser's arcs, not
                gold, with its measured agreement with gold UD); head_agreement: per 1-based layer and head, the share
                of the parse's arcs each of Clark's directions (dep->head, head->dep) recovers, and the best head
        """
        with answered_in_a_sentence(InputError, ParserUnavailable, CheckpointError, DeviceError):
            record = self._analysis(text, pair, parse=bool(parse), model=model)
        a = record.analysis
        out = compact(a)
        if attention and a.attention.size <= FULL_ATTENTION_NUMBERS:
            out["attention"] = np.round(a.attention.astype(np.float64), 4).tolist()  # (layers, heads, query, key)
        elif attention:
            out["attention_note"] = (f"the attention array has {a.attention.size} numbers, over the "
                                     f"{FULL_ATTENTION_NUMBERS} this tool returns: use the API's /attention endpoint "
                                     "or the command line (bertviz-lab analyze --json)")
        if record.syntax is not None:
            out.update(record.syntax.to_json())
        return out

    def predict_masked(self, text: str, top_k: int = 5, model: str = "") -> dict[str, Any]:
        """Predict the words hidden by [MASK] in a text: the model's most probable tokens at each
        masked position.

        Args:
            text: a sentence with one or more [MASK] tokens, e.g. "The capital of France is [MASK]."
            top_k: how many predictions to return per [MASK], from 1 to 50
            model: a checkpoint among those this server enables (one with a masked-word head, e.g. "default"); empty
                for the server's model

        Returns:
            a JSON object with model and tokens
            masked: per [MASK], its token position (0 is [CLS]) and its predictions (token, probability), most probable first
        """
        with answered_in_a_sentence(InputError, CheckpointError, DeviceError):
            a = self._analysis(text, top_k=top_k, model=model).analysis
            if not a.mlm:
                raise InputError(a.mlm_note or "write [MASK] where the model should predict a word")
        return {"model": a.model, "tokens": a.tokens, "masked": masked_words(a)}

    def explain(self, text: str, label: str = "", model: str = "") -> dict[str, Any]:
        """Explain why the model predicted the word at the first [MASK], or why a sentence classifier chose
        its class: how much each other token raised that prediction (erasure, gradients, DecompX) and how
        faithful attention is on this input.

        Args:
            text: a sentence with a [MASK]; the top prediction at the first [MASK] is explained. For a classifier
                (e.g. model "sst2"), any sentence: its predicted class is explained
            label: a classifier's class to explain instead of the predicted one (e.g. "negative"); empty for the
                predicted class
            model: a checkpoint among those this server enables (e.g. "default" for masked words, "sst2" for a
                sentiment classifier); empty for the server's model

        Returns:
            a JSON object with model and tokens; for a masked word, target (the word explained) and position; for a
            classifier, class (the class explained) and probability
            top_token: the context token whose erasure lowers log P(target) most (top_token_by_method: per method)
            scores: per method (erasure, gradient x input, integrated gradients, decompx), a signed score per context token
            spearman_with_erasure: how well each attention-based ranking agrees with erasure
            faithfulness_on_this_input: AOPC, comprehensiveness and sufficiency of each ranking
        """
        with answered_in_a_sentence(ValueError, CheckpointError, DeviceError):  # InputError is a ValueError
            record = self._analysis(text, explain=ExplainRequest("first", label.strip() or None), model=model)
        a, first = record.analysis, record.explanation.first
        if record.explanation.of_class is not None:  # a classifier with nothing masked: why its predicted class
            return {"model": a.model, "tokens": a.tokens, **scored_tokens(a, first),
                    "class": first.label, "probability": number(first.probability)}
        return {"model": a.model, "target": first.target, "position": first.position, "tokens": a.tokens,
                **scored_tokens(a, first)}

    def score_heads(self, treebank: str = "sample", source: str = "attention") -> dict[str, Any]:
        """Score every attention head against a dependency treebank (Clark et al. 2019): per relation,
        the head that best points between dependent and head word, with a 95% interval, a held-out
        check and a random-weights null. Slower than the other tools: the treebank runs through the
        model and five random-weight copies.

        Args:
            treebank: "sample", the English sample treebank that ships with the app (the only one over this door)
            source: what to score: "attention" (softmax weights) or a norm-based source such as "norm", "globenc", "alti"

        Returns:
            a JSON object with weights (the published checkpoint scored), source, sentences_used, sentences_skipped
            best_heads: one row per relation and measure (best_head, heldout_head, baseline, ...) with predictor
            (a head as 1-based "layer-head", e.g. "3-5", or a baseline such as "offset +1"), direction, value,
            ci_low and ci_high of the 95% interval, p_value, verdict
        """
        if treebank != "sample":
            raise gr.Error("only the sample treebank is scored here; score your own CoNLL-U file with "
                           "`bertviz-lab score-heads --conllu FILE`")
        with answered_in_a_sentence(TreebankError, CheckpointError, DeviceError, ValueError):  # InputError: ValueError
            request = ScoreHeadsRequest(loaded=self.lab.checkpoint_id, source=source,
                                        max_length=self.limits.max_tokens, max_words=self.limits.syntax_words)
            scored = score_heads(request, self._lab_named)
        summary = scored.summary
        return {"weights": summary.checkpoint.describe(), "source": summary.source,
                "sentences_used": summary.sentences_used, "sentences_skipped": summary.sentences_skipped,
                "best_heads": records(best_heads_long(summary.best_heads))}

    def run_recipe(self, recipe: str) -> dict[str, Any]:
        """Run an experiment recipe: the JSON object every bertviz-lab record carries under "recipe" (the command
        line's --json, the page's "Copy as recipe"), the same one `bertviz-lab run RECIPE.json` runs. This server
        runs, within its limits: analyze; sweep of one text (directional, ablation, positions) or of the sample
        sentences ("sample": true); compare over the sample sentences; faithfulness on the shipped held-out lines.
        It reads no files; the recipe's checkpoint must be one the server enables, with the weights' SHA-256 it names.

        Args:
            recipe: the recipe as JSON text, e.g. {"bertviz_lab_recipe": 1, "action": "sweep", "checkpoint": {"name":
                "default"}, "inputs": {"text": "The cat [MASK] on the mat."}, "settings": {"kind": "directional"}}

        Returns:
            a JSON object: the action's record (as the command line's --json prints it; analyze: the analyze tool's
            compact reply) and "recipe", the recipe as run (with its weights' SHA-256)
        """
        from ..tasks.recipes import made_with, recipe_from
        from .agent_recipes import run_agent_recipe

        with answered_in_a_sentence(InputError, CheckpointError, DeviceError, ValueError):
            try:
                data = json.loads(recipe)
            except (TypeError, json.JSONDecodeError) as error:
                raise InputError(f"the recipe is not JSON: {error}") from None
            parsed = recipe_from(data)
            lab = self._lab_named(parsed.checkpoint["name"])
            out = run_agent_recipe(parsed, lab, self.limits, compact)
        ran = made_with(parsed.action, lab.checkpoint_info(), {}, {}).to_json()
        return {**out, "recipe": {**parsed.to_json(), "checkpoint": ran["checkpoint"]}}

    def _lab_named(self, checkpoint: str) -> Lab:
        """The startup model, or another checkpoint (its published weights) from the server's cache."""
        if checkpoint == self.lab.checkpoint_id:
            return self.lab
        return self.cache.get(checkpoint, str(self.lab.device)) if self.cache else load(checkpoint,
                                                                                        device=str(self.lab.device))


def as_json_text(tool: Callable[..., dict]) -> Callable[..., str]:
    """``tool`` answering JSON text: Gradio's MCP server sends a dict as its Python repr (None, True,
    single quotes), which an agent would have to guess at; the tool's name, docstring and
    parameters stay as they are, so the schema does not change."""

    @functools.wraps(tool)
    def reply(*args: Any, **kwargs: Any) -> str:
        return json.dumps(tool(*args, **kwargs), ensure_ascii=False)

    reply.__signature__ = inspect.signature(tool).replace(return_annotation=str)
    return reply


CORPUS_TOOLS = ("score_heads", "run_recipe")  # a treebank through the model: the page's one corpus slot (gate.py)


def register(tools: AgentTools, wrap: Callable[[Callable, bool], Callable]) -> None:
    """Each tool as an API endpoint (``/agent_<name>``, answering JSON text) through ``wrap(tool, corpus)`` (the
    gate); inside a Blocks context. Corpus-sized tools share the page's one-at-a-time slot."""
    for name in TOOLS:
        corpus = name in CORPUS_TOOLS
        gr.api(wrap(as_json_text(getattr(tools, name)), corpus), api_name=API_PREFIX + name,
               **(ONE_TREEBANK_AT_A_TIME if corpus else {}))


def only_agent_tools(demo: gr.Blocks) -> Callable:
    """A server lifespan that leaves the MCP server listing just the five tools, named ``analyze`` ...:
    Gradio lists every API endpoint as a tool, and the page's ~40 events (some named analyze,
    explain) would crowd and rename them. The server also names itself: bertviz-lab and its version
    (Gradio's server would report the page's title and the MCP library's version as its own)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("bertviz-lab")  # the installed package's, as pyproject.toml sets it
    except PackageNotFoundError:  # run from a source tree that was never installed
        ours = "unknown"

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        server = getattr(demo, "mcp_server_obj", None)
        if server is not None:
            prefix = getattr(server, "tool_prefix", "")
            server.tool_to_endpoint = {prefix + name: f"/{API_PREFIX}{name}" for name in TOOLS}
            protocol = getattr(server, "mcp_server", None)
            if protocol is not None:
                protocol.name, protocol.version = "bertviz-lab", ours
        yield

    return lifespan
