"""Handlers of the Interventions tab (mixed into ``Handlers``): one intervention, sweeps, positional
controls, sentence sets with intervals, activation patching and the faithfulness check."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from ..bert import CheckpointError
from ..figures import interventions as intervention_views
from ..figures.base import fit_title
from ..interventions import (
    REGISTRY,
    InterventionError,
    ablation_sweep,
    compare,
    directional_sweep,
    make_intervention,
    position_similarity,
    relative_bias_table,
    relative_embedding_similarity,
    rotary_bands,
)
from ..interventions.faithfulness import faithfulness
from ..interventions.kinds import has_absolute_positions, has_relative_bias, has_rotary_positions
from ..interventions.resample import ResamplePool
from ..interventions.sets import ablation_set, compare_set, directional_set, effects_table
from ..interventions.sweeps import patching_sweep, position_controls, sample_mean_outputs
from ..lab import InputError, Lab
from ..naming import head_name, layer_head, layer_name
from ..sentences import heldout_lines, read_lines, truncation_note
from ..tasks.validation import positions, whole
from ..treebank import sentence_texts
from .forms import InterventionChoice, RunInput
from .intervention_controls import explanation, visible_controls
from .state import Session, Snapshot, plot
from .tabs import AOPC_UNIT, ERASER_UNIT, EXPLAIN_COLUMNS

Updates = dict[Any, Any]



def cut_note(truncated: int) -> str:
    """" (3 lines were longer than 128 tokens and cut ...)." after a set's message, or nothing."""
    note = truncation_note(truncated)
    return f" {note[0].upper()}{note[1:]}." if note else ""

POINTER = " Pick them under **Mask tokens** in the left column."  # views.js scrolls there (bvl.point)
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def quoted(text: str, limit: int = 60) -> str:
    """The user's text inside a Markdown title: cut to ``limit`` characters, Markdown and HTML characters
    escaped, so what they typed is shown and never rendered."""
    cut = text if len(text) <= limit else text[:limit - 1] + "…"
    return "“" + MARKDOWN_SPECIAL.sub(r"\\\1", cut) + "”"


def title(what: str, found: str, run_on: tuple[str, str | None] | None = None, settings: str = "",
          weights: str = "") -> str:
    """A result's title: what produced it (the intervention, the input, its settings and weights), then what
    it found."""
    parts = [f"**{what}**"]
    if run_on is not None:
        parts.append("on " + quoted(run_on[0]) + (" + " + quoted(run_on[1]) if run_on[1] else ""))
    parts += [part for part in (settings, f"weights: {weights}" if weights else "") if part]
    return " · ".join(parts) + "\n\n" + found


def warning(error: Exception) -> str:
    """An error as the tab shows it; one that needs picked tokens says where the picker is."""
    text = str(error)
    needs_tokens = text.startswith("choose the tokens") or "pick tokens" in text
    return f"⚠️ {text}." + (POINTER if needs_tokens else "") if needs_tokens else f"⚠️ {text}"


SET_NAMES = {"heldout": "held-out lines", "sample": "sample treebank", "upload": "uploaded file"}


def with_interval(mean: float, low: float, high: float) -> str:
    """One cell: the mean and its 95% interval, so a table of several scores stays narrow."""
    if not np.isfinite(mean):
        return "—"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def faith_table(table: pd.DataFrame) -> pd.DataFrame:
    """The faithfulness rows as the page shows them: one column per score, its unit in the header and its
    interval in the cell."""
    out = pd.DataFrame({"ranking": table["ranking"]})
    for key, low, high in (("aopc", "ci_low", "ci_high"),
                           ("comprehensiveness", "comprehensiveness_ci_low", "comprehensiveness_ci_high"),
                           ("sufficiency", "sufficiency_ci_low", "sufficiency_ci_high")):
        if key in table:
            out[f"{EXPLAIN_COLUMNS[key]} [95% CI]"] = [with_interval(*row) for row in
                                                       table[[key, low, high]].itertuples(index=False)]
    out["n"] = table["n"].astype(int)
    return out


def set_settings(sentence_set: str, upload: str | None, n: Any, *more: str) -> str:
    """A set result's settings: which sentences (an upload by its file name), how many, and the rest."""
    which = SET_NAMES.get(sentence_set, "held-out lines")
    if sentence_set == "upload" and upload:
        which += " " + quoted(Path(upload).name, 40)
    count = int(n) if isinstance(n, (int, float)) else n
    return ", ".join((f"{which}, up to {count} sentences", *more))


class InterventionHandlers:
    ui: Any
    limits: Any
    references: dict  # (model, device) -> mean head outputs for mean ablation (Handlers.__init__ makes it)

    def lab_of(self, session: Session) -> Lab:
        raise NotImplementedError

    def analysed(self, session: Session, text: str, pair: str | None) -> tuple[Lab, str, str | None, Snapshot]:
        """The model, the input and the snapshot an intervention works on, read once (issue 56). Interventions run
        on the last analysed input (what the views show), not on whatever the textbox holds now; an API caller
        that never ran an analysis gets the text it sent. A model switch that lands between reading the model and
        the input is one sentence, never the new model's answer about the old input."""
        snap = session.snapshot()
        lab = self.lab_of(session)
        if snap.analysis is None:
            return lab, text, pair or None, snap
        a = snap.bound_to(lab)
        return lab, a.text, a.pair, snap

    def reference(self, lab: Lab, ablation: str):
        """Mean head outputs over the sample treebank for mean ablation, a pool of its sentences for
        resample ablation (each made once per model), else None."""
        if ablation not in ("mean", "resample"):
            return None
        key = (lab.checkpoint_id, str(lab.device), ablation)
        if key not in self.references:
            self.references[key] = sample_mean_outputs(lab) if ablation == "mean" else ResamplePool(lab, sentence_texts())
        return self.references[key]

    def intervention_controls(self, kind: str) -> Updates:
        """Show the chosen intervention's own controls and sweeps (``intervention_controls``), hide the rest."""
        ui = self.ui
        if kind not in REGISTRY:
            return {ui.intervention_explain: f"⚠️ unknown intervention {kind!r}"}
        shown = visible_controls(kind)
        return {ui.intervention_explain: explanation(kind),
                **{getattr(ui, name): gr.update(visible=visible) for name, visible in shown.items()}}

    def intervention_of(self, lab: Lab, choice: InterventionChoice, picked: list[int] | None = None):
        """The chosen intervention, its numbers checked; ``picked`` tokens are the targets of mask and hide."""
        return make_intervention(
            choice.kind, (lab.n_layers, lab.n_heads), positions=picked or [],
            shift=whole(choice.shift or 0, "shift k", 0, lab.max_tokens),
            seed=whole(choice.seed or 0, "the shuffle seed", 0, 2**32 - 1), sinks=choice.sinks, unit=choice.unit,
            mode=choice.ablation, reference=lambda: self.reference(lab, choice.ablation), heads=choice.heads)

    def run_intervention(self, run: RunInput, choice: InterventionChoice, picked: list[int], session: Session
                         ) -> Updates:
        """Baseline and intervened runs of the last analysed input, in the views' source."""
        ui = self.ui
        try:
            lab, text, pair, snap = self.analysed(session, run.text, run.pair)
            picked = positions(picked)
            targets = REGISTRY[choice.kind].targets_picked_tokens if choice.kind in REGISTRY else False
            intervention = self.intervention_of(lab, choice, picked if targets else [])
            c = compare(lab, text, intervention, pair=pair, mask_positions=[] if targets else picked,
                        top_k=whole(run.top_k, "top-k", 1, 50), source=snap.source)
        except (InputError, InterventionError, CheckpointError) as error:
            return {ui.intervention_message: warning(error)}
        if session.generation == snap.generation:  # else a Run landed meanwhile: this result is titled, not kept
            session.comparison = c
        o = session.options.clamp(c.baseline)
        source = "" if snap.source == "attention" else f" Comparing {snap.source} (rows renormalised for JS)."
        found = f"Mean JS divergence over heads {float(c.js.mean()):.4f} nats.{source}"
        if c.note:
            found += f" ({c.note})"
        message = title(f"Intervention: {intervention.describe()}", found, (text, pair),
                        f"source: {snap.source}", lab.checkpoint_id)
        return {ui.session: session, ui.intervention_message: message,
                ui.intervention_plot: plot(intervention_views.comparison_figure(c, o, scale=session.scale)),
                ui.js_plot: plot(intervention_views.js_figure(c)),
                ui.intervention_changes: intervention_views.changes_table(c),
                ui.offsets_plot: plot(intervention_views.offsets_figure(c, o.layer, scale=session.scale))}

    def run_directional(self, text: str, pair: str, picked: list[int], session: Session,
                        sinks: str = "symmetric") -> Updates:
        ui = self.ui
        try:
            lab, text, pair, _ = self.analysed(session, text, pair)
            rows = directional_sweep(lab, text, pair=pair, mask_positions=positions(picked),
                                     sinks=sinks if sinks in ("symmetric", "strict") else "symmetric")
        except (InputError, InterventionError) as error:
            return {ui.direction_message: warning(error)}
        kind = "symmetric sinks: every query sees [CLS]/[SEP]" if sinks != "strict" else "strict masks"
        found = (f"Directional sweep over {len(rows)} masked position(s) ({kind}); the controls hide as many random "
                 "keys as the directional masks.")
        return {ui.direction_message: title("Directional sweep", found, (text, pair), kind, lab.checkpoint_id),
                ui.direction_table: intervention_views.directional_table(rows)}

    def run_ablation(self, text: str, pair: str, picked: list[int], session: Session, ablation: str = "zero",
                     progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab, text, pair, _ = self.analysed(session, text, pair)
            importance = ablation_sweep(lab, text, pair=pair, mask_positions=positions(picked), chunk=24,
                                        reference=self.reference(lab, ablation),
                                        progress=lambda f, d: progress(f, desc=d))
        except (InputError, InterventionError) as error:
            return {ui.ablation_message: warning(error)}
        drops = importance.drops
        layer, head = np.unravel_index(int(np.argmax(drops)), drops.shape)
        scored = "the gold word" if importance.scored == "gold" else \
            "the full-context top-1 (pick tokens instead of typing [MASK] to score gold)"
        found = (f"Most important head for this prediction: {layer_head(layer, head, capital=False)} "
                 f"(log-probability of {scored} drops by {drops[layer, head]:.3f} without it; {ablation} ablation).")
        return {ui.ablation_message: title("Head ablation sweep", found, (text, pair), f"{ablation} ablation",
                                                 lab.checkpoint_id),
                ui.ablation_plot: plot(intervention_views.ablation_figure(drops))}

    def run_faithfulness(self, n: float, session: Session, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab = self.lab_of(session)
            lines = heldout_lines()
            result = faithfulness(lab, lines, max_sentences=self.set_size(n, self.limits.faith_sentences),
                                  progress=lambda done, total: progress(done / total, desc="faithfulness"))
        except (InputError, CheckpointError) as error:
            return {ui.faith_message: warning(error)}
        table = pd.DataFrame(result.table()).drop(columns=["drop_by_k"]).sort_values("aopc", ascending=False)
        against_random = " ".join(f"{d.verdict()}." for d in result.differences() if d.b == "random")
        found = (f"Faithfulness of each explanation on {int(table.n.max())} held-out sentences ({result.model}). "
                 f"{result.conclusion()}. {against_random}{cut_note(result.truncated)} AOPC is {AOPC_UNIT}; "
                 f"comprehensiveness and sufficiency are {ERASER_UNIT}.")
        return {ui.faith_message: title("Faithfulness check", found, None, f"{int(table.n.max())} held-out "
                                              "sentences", lab.checkpoint_id),
                ui.faith_table: faith_table(table)}

    def run_positions(self, n: float, session: Session) -> Updates:
        ui = self.ui
        lab = self.lab_of(session)
        try:
            n = whole(n, "the number of positions", 2, lab.max_tokens)
            if has_rotary_positions(lab.model):  # ModernBERT: positions turn q and k, band by band
                bands = rotary_bands(lab)
                found = (f"Rotary positions (no position table): each frequency band's wavelength in tokens, global layers "
                         f"{', '.join(map(str, bands.global_layers))} and local layers (window ±{bands.half_window}); "
                         f"bands under {n} tokens tell positions in a {n}-token input apart.")
                return {ui.positions_message: title("Position embedding inspector", found, None, f"{n} tokens",
                                                    lab.checkpoint_id),
                        ui.positions_plot: plot(intervention_views.rotary_bands_figure(bands, n))}
            if not has_absolute_positions(lab.model):  # DeBERTa-v3: its positions are the relative table's rows
                figure = intervention_views.relative_embedding_figure(relative_embedding_similarity(lab, n), n)
                found = (f"Cosine similarity of the relative-position embeddings {n} tokens read (DeBERTa has no "
                         "absolute positions): one row per bucketed offset, shared by every layer.")
                return {ui.positions_message: title("Position embedding inspector", found, None, f"{n} tokens",
                                                    lab.checkpoint_id), ui.positions_plot: plot(figure)}
            learned, sinusoid = position_similarity(lab, n)
        except (InterventionError, InputError) as error:
            return {ui.positions_message: warning(error)}
        if has_relative_bias(lab.model):  # MPNet: its second position scheme, the relative-bias buckets
            found = (f"Cosine similarity of the first {n} learned positions, beside the relative-position bias every "
                     "layer adds (heads x offset buckets).")
            figure = intervention_views.position_geometry_figure(learned, relative_bias_table(lab))
        else:
            found = f"Cosine similarity of the first {n} positions: the model's learned ones beside sinusoidal ones."
            figure = intervention_views.position_figure(learned, sinusoid)
        return {ui.positions_message: title("Position embedding inspector", found, None, f"first {n} positions",
                                            lab.checkpoint_id),
                ui.positions_plot: plot(figure)}

    def run_position_controls(self, text: str, pair: str, picked: list[int], shift: float, session: Session
                              ) -> Updates:
        ui = self.ui
        try:
            lab, text, pair, _ = self.analysed(session, text, pair)
            rows = position_controls(lab, text, pair=pair, mask_positions=positions(picked),
                                     shift=whole(shift or 0, "shift k", 0, lab.max_tokens))
        except (InputError, InterventionError) as error:
            return {ui.controls_message: warning(error)}
        found = ("Each row changes this one input's positions. Masked-word JS: how far the prediction at the masked "
                 "positions moved; gold word's rank: where the word that stood there (a typed [MASK]: the baseline's "
                 "top word) ranks after, 1 = still first. One input gives no interval: to tell an intervention from "
                 "its control, run the pair over a sentence set (**Over a sentence set** below).")
        return {ui.controls_message: title("Positional interventions and their controls", found, (text, pair),
                                                 f"shift k = {int(shift or 0)}", lab.checkpoint_id),
                ui.controls_table: pd.DataFrame(rows).round(4)}

    def set_size(self, n: Any, cap: int | None = None) -> int:
        """How many sentences a set request may use: the server's cap says so in the message."""
        cap = cap or self.limits.set_sentences
        number = whole(n, "the number of sentences", 1, 10_000)
        if number > cap:
            raise InputError(f"this server uses up to {cap} sentences per request (got {number}); "
                             "the command line takes any number")
        return number

    def set_lines(self, sentence_set: str, upload: str | None) -> list[str]:
        """The sentences of the set the page chose: shipped held-out lines, the sample treebank, or an upload."""
        if sentence_set == "sample":
            return sentence_texts()
        if sentence_set != "upload":
            return heldout_lines()
        if not upload:
            raise InputError("upload a text file first (one sentence per line)")
        if Path(upload).stat().st_size > self.limits.upload_bytes:
            raise InputError(f"the file is over {self.limits.upload_bytes / 1e6:.0f} MB")
        try:
            return read_lines(upload)
        except InputError as error:
            raise InputError(str(error).replace(str(upload), Path(upload).name)) from None

    def run_directional_set(self, n: float, sinks: str, session: Session, sentence_set: str = "heldout",
                            upload: str | None = None, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            result = directional_set(self.lab_of(session), self.set_lines(sentence_set, upload),
                                     sinks=sinks if sinks == "strict" else "symmetric",
                                     max_sentences=self.set_size(n),
                                     progress=lambda done, total: progress(done / total, desc="directional set"))
        except (InputError, CheckpointError) as error:
            return {ui.direction_set_message: warning(error)}
        table = pd.DataFrame(effects_table(result.effects, "condition", "mean P(gold)")).round(4)
        verdicts = " ".join(f"{d.verdict()}." for d in result.differences)
        found = (f"P(gold word) over {result.effects['both'].n} sentences, one masked word each ({sinks} sinks); each "
                 f"control hides as many random keys as its directional mask. {verdicts}{cut_note(result.truncated)}")
        return {ui.direction_set_message: title("Directional sweep over a sentence set", found, None,
                                                      set_settings(sentence_set, upload, n, f"{sinks} sinks"),
                                                      self.lab_of(session).checkpoint_id),
                ui.direction_set_table: table}

    def run_ablation_set(self, n: float, ablation: str, session: Session, sentence_set: str = "heldout",
                         upload: str | None = None, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab = self.lab_of(session)
            result = ablation_set(lab, self.set_lines(sentence_set, upload), self.reference(lab, ablation),
                                  max_sentences=self.set_size(n),
                                  progress=lambda done, total: progress(done / total, desc="ablation set"))
        except (InputError, CheckpointError) as error:
            return {ui.ablation_set_message: warning(error)}
        effect, best = result.effect, result.most_important
        figure = intervention_views.ablation_figure(effect.mean)
        fit_title(figure["layout"], f"Mean drop in log P(gold) over {effect.n} sentences when each head alone is "
                                    f"ablated ({ablation})")
        if best is None:
            found = "too few sentences to choose a head on one half and measure it on the other."
        else:
            e = best.effect
            found = (f"chosen on {best.selected_on} sentences: {head_name(best.layer, best.head)}; on the other "
                     f"{e.n} its mean drop is {float(e.mean):.3f} [{float(e.ci_low):.3f}, {float(e.ci_high):.3f}].")
        found = f"Most important head ({ablation} ablation, gold word scored), {found}{cut_note(result.truncated)}"
        return {ui.ablation_set_message: title("Head ablation sweep over a sentence set", found, None,
                                                     set_settings(sentence_set, upload, n, f"{ablation} ablation"),
                                                     lab.checkpoint_id),
                ui.ablation_set_plot: plot(figure)}

    def run_intervention_set(self, choice: InterventionChoice, n: float, session: Session,
                             sentence_set: str = "heldout", upload: str | None = None,
                             progress=gr.Progress()) -> Updates:
        """The chosen intervention over a sentence set, one seeded masked word each, with intervals."""
        ui = self.ui
        try:
            lab = self.lab_of(session)
            if REGISTRY.get(choice.kind) is not None and REGISTRY[choice.kind].targets_picked_tokens:
                raise InputError("mask and hide interventions need picked tokens; over a set, choose another intervention")
            intervention = self.intervention_of(lab, choice)
            effects = compare_set(lab, self.set_lines(sentence_set, upload), intervention,
                                  max_sentences=self.set_size(n),
                                  progress=lambda done, total: progress(done / total, desc="intervention over the set"))
        except (InputError, InterventionError, CheckpointError) as error:
            return {ui.intervention_set_message: warning(error)}
        table = pd.DataFrame(effects_table(effects.effects)).round(4)
        found = f"{intervention.describe()} over {table.n.iloc[0]} sentences (gold word scored).{cut_note(effects.truncated)}"
        return {ui.intervention_set_message: title(f"{intervention.describe()} over a sentence set", found, None,
                                                         set_settings(sentence_set, upload, n), lab.checkpoint_id),
                ui.intervention_set_table: table}

    def run_patching(self, text: str, donor: str, correct: str, wrong: str, session: Session) -> Updates:
        """Activation patching: each head's output (and the residual stream at the [MASK]) taken from the donor."""
        ui = self.ui
        try:
            lab, text, _, _ = self.analysed(session, text, None)
            result = patching_sweep(lab, text, donor, str(correct).strip(), str(wrong).strip())
        except (InputError, InterventionError) as error:
            return {ui.patch_message: warning(error)}
        residual = ", ".join(f"{layer_name(i)} {v:+.2f}" for i, v in enumerate(result.residual))
        figure = intervention_views.patching_figure(result.heads, correct, wrong)
        found = (f"Logit difference {correct} - {wrong}: target {result.baseline:+.2f}, donor {result.donor:+.2f}. "
                 f"Patching the residual stream at the [MASK]: {residual}.")
        return {ui.patch_message: title("Activation patching", found, (text, None), "donor " + quoted(donor),
                                        lab.checkpoint_id),
                ui.patch_plot: plot(figure)}
