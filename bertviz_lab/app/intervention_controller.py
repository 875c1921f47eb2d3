"""The Interventions tab on the analysed input: one intervention against its baseline, the directional and
ablation sweeps, the positional interventions with their controls, activation patching, and the position
embedding inspector. Sentence sets are the set controller's."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pandas as pd

from ..bert import CheckpointError
from ..figures import interventions as intervention_views
from ..interventions import (
    REGISTRY,
    InterventionError,
    ablation_sweep,
    directional_sweep,
)
from ..interventions.resample import ResamplePool
from ..interventions.sweeps import AblationRun, patching_sweep, position_controls, sample_mean_outputs
from ..lab import InputError, Lab
from ..naming import layer_head, layer_name
from ..tasks.intervene import InterveneRequest, InterventionSpec, intervene
from ..tasks.validation import positions, whole
from ..treebank import sentence_texts
from .forms import RunInput
from .intervention_controls import explanation, visible_controls
from .page import Page, Updates
from .position_inspector import inspect_positions
from .result_titles import quoted, title, warning
from .state import Session, Snapshot, plot


def spec_options(spec: InterventionSpec) -> dict:
    """An intervention's settings as the command line's compare names them."""
    return {"intervention": spec.kind, "heads": spec.heads or None, "shift": int(float(spec.shift or 0)),
            "seed": int(float(spec.seed or 0)), "sinks": spec.sinks, "unit": spec.unit, "ablation": spec.ablation}


class InterventionController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui
        self.references: dict = {}  # (model, device, kind) -> mean head outputs or a resample pool, made once

    def analysed(self, session: Session, text: str, pair: str | None) -> tuple[Lab, str, str | None, Snapshot]:
        """The model, the input and the snapshot an intervention works on, read once (issue 56). Interventions run
        on the last analysed input (what the views show), not on whatever the textbox holds now; an API caller
        that never ran an analysis gets the text it sent. A model switch that lands between reading the model and
        the input is one sentence, never the new model's answer about the old input."""
        snap = session.snapshot()
        lab = self.page.lab_of(session)
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

    def run_intervention(self, text: str, pair: str, top_k: float, kind: str, picked: list[int], heads: str,
                         shift: float, seed: float, session: Session, sinks: str = "symmetric", unit: str = "words",
                         ablation: str = "zero") -> Updates:
        """The Run the intervention button: the API's parameters, one per control."""
        return self.intervene(RunInput(text, pair, top_k), InterventionSpec(kind, heads, shift, seed, sinks, unit,
                                                                        ablation), picked, session)

    def intervene(self, run: RunInput, spec: InterventionSpec, picked: list[int], session: Session) -> Updates:
        """Baseline and intervened runs of the last analysed input, in the views' source."""
        ui = self.ui
        try:
            lab, text, pair, snap = self.analysed(session, run.text, run.pair)
            record = intervene(InterveneRequest(text, spec, pair, tuple(picked or ()), top_k=run.top_k,
                                                source=snap.source), lab, lambda: self.reference(lab, spec.ablation))
            c, intervention = record.comparison, record.intervention
        except (InputError, InterventionError, CheckpointError) as error:
            return {ui.intervention_message: warning(error)}
        if session.generation == snap.generation:  # else a Run landed meanwhile: this result is titled, not kept
            session.comparison = c
        picked_as = "positions" if spec.targets_picked_tokens else "mask"
        self.page.remember_recipe(session, "the intervention on this input", "compare", {"text": text, "pair": pair},
                                  {**spec_options(spec), picked_as: list(picked or ()) or None, "top_k": int(run.top_k)})
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
        self.page.remember_recipe(session, "the directional sweep of this input", "sweep", {"text": text, "pair": pair},
                                  {"kind": "directional", "mask": positions(picked) or None,
                                   "sinks": "strict" if sinks == "strict" else "symmetric"})
        kind = "symmetric sinks: every query sees [CLS]/[SEP]" if sinks != "strict" else "strict masks"
        found = (f"Directional sweep over {len(rows)} masked position(s) ({kind}); the controls hide as many random "
                 "keys as the directional masks.")
        return {ui.direction_message: title("Directional sweep", found, (text, pair), kind, lab.checkpoint_id),
                ui.direction_table: intervention_views.directional_table(rows),
                ui.direction_plot: plot(intervention_views.directional_figure(rows))}

    def run_ablation(self, text: str, pair: str, picked: list[int], session: Session, ablation: str = "zero",
                     progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab, text, pair, _ = self.analysed(session, text, pair)
            importance = ablation_sweep(lab, text, pair=pair, mask_positions=positions(picked),
                                        reference=self.reference(lab, ablation),
                                        run=AblationRun(chunk=24, progress=lambda f, d: progress(f, desc=d)))
        except (InputError, InterventionError) as error:
            return {ui.ablation_message: warning(error)}
        self.page.remember_recipe(session, "the head ablation sweep of this input", "sweep", {"text": text, "pair": pair},
                                  {"kind": "ablation", "mask": positions(picked) or None, "ablation": ablation})
        drops = importance.drops
        layer, head = np.unravel_index(int(np.argmax(drops)), drops.shape)
        scored = "the gold word" if importance.scored == "gold" else \
            "the full-context top-1 (pick tokens instead of typing [MASK] to score gold)"
        found = (f"Most important head for this prediction: {layer_head(layer, head, capital=False)} "
                 f"(log-probability of {scored} drops by {drops[layer, head]:.3f} without it; {ablation} ablation).")
        return {ui.ablation_message: title("Head ablation sweep", found, (text, pair), f"{ablation} ablation",
                                                 lab.checkpoint_id),
                ui.ablation_plot: plot(intervention_views.ablation_figure(drops))}

    def run_position_controls(self, text: str, pair: str, picked: list[int], shift: float, session: Session
                              ) -> Updates:
        ui = self.ui
        try:
            lab, text, pair, _ = self.analysed(session, text, pair)
            rows = position_controls(lab, text, pair=pair, mask_positions=positions(picked),
                                     shift=whole(shift or 0, "shift k", 0, lab.max_tokens))
        except (InputError, InterventionError) as error:
            return {ui.controls_message: warning(error)}
        self.page.remember_recipe(session, "the positional interventions on this input", "sweep",
                                  {"text": text, "pair": pair},
                                  {"kind": "positions", "mask": positions(picked) or None, "shift": int(shift or 0)})
        found = ("Each row changes this one input's positions. Masked-word JS: how far the prediction at the masked "
                 "positions moved; gold word's rank: where the word that stood there (a typed [MASK]: the baseline's "
                 "top word) ranks after, 1 = still first. One input gives no interval: to tell an intervention from "
                 "its control, run the pair over a sentence set (**Over a sentence set** below).")
        return {ui.controls_message: title("Positional interventions and their controls", found, (text, pair),
                                                 f"shift k = {int(shift or 0)}", lab.checkpoint_id),
                ui.controls_table: pd.DataFrame(rows).round(4)}

    def run_patching(self, text: str, donor: str, correct: str, wrong: str, session: Session) -> Updates:
        """Activation patching: each head's output (and the residual stream at the [MASK]) taken from the donor."""
        ui = self.ui
        try:
            lab, text, _, _ = self.analysed(session, text, None)
            result = patching_sweep(lab, text, donor, str(correct).strip(), str(wrong).strip())
        except (InputError, InterventionError) as error:
            return {ui.patch_message: warning(error)}
        self.page.remember_recipe(session, "the activation patching", "patch", {"text": text, "donor": donor},
                                  {"correct": str(correct).strip(), "wrong": str(wrong).strip()})
        residual = ", ".join(f"{layer_name(i)} {v:+.2f}" for i, v in enumerate(result.residual))
        figure = intervention_views.patching_figure(result.heads, correct, wrong)
        found = (f"Logit difference {correct} - {wrong}: target {result.baseline:+.2f}, donor {result.donor:+.2f}. "
                 f"Patching the residual stream at the [MASK]: {residual}.")
        return {ui.patch_message: title("Activation patching", found, (text, None), "donor " + quoted(donor),
                                        lab.checkpoint_id),
                ui.patch_plot: plot(figure)}

    def run_positions(self, n: float, session: Session) -> Updates:
        """The position inspector: what the loaded model's schemes look like for n tokens."""
        ui = self.ui
        lab = self.page.lab_of(session)
        try:
            found, settings, figure = inspect_positions(lab, whole(n, "the number of positions", 2, lab.max_tokens))
        except (InterventionError, InputError) as error:
            return {ui.positions_message: warning(error)}
        self.page.remember_recipe(session, "the position inspector", "positions", {}, {"n": int(n)})
        return {ui.positions_message: title("Position inspector", found, None, settings, lab.checkpoint_id),
                ui.positions_plot: plot(figure) if figure is not None else None}
