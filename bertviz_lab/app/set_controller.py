"""The Interventions tab over sentence sets, each result with its 95 % interval: the directional sweep, the head
ablation sweep, any intervention, and the faithfulness of the explanation methods."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from ..bert import CheckpointError
from ..figures import interventions as intervention_views
from ..figures.base import fit_title
from ..interventions import InterventionError
from ..interventions.faithfulness import FaithfulnessSettings
from ..interventions.sets import SetSettings, ablation_set, directional_set, effects_table
from ..lab import InputError
from ..naming import head_name
from ..sentences import heldout_lines, read_lines
from ..tasks.faithfulness_check import SHIPPED_LINES, FaithfulnessRequest, faithfulness_check
from ..tasks.intervene import InterveneSetRequest, InterventionSpec, intervene_set
from ..tasks.validation import whole
from ..treebank import sentence_texts
from .intervention_controller import InterventionController, spec_options
from .page import Page, Updates
from .result_titles import cut_note, faith_table, set_settings, title, warning
from .state import Session, plot
from .tabs import AOPC_UNIT, ERASER_UNIT


class SetController:
    def __init__(self, page: Page, interventions: InterventionController) -> None:
        self.page, self.ui, self.interventions = page, page.ui, interventions

    def set_size(self, n: Any, cap: int | None = None) -> int:
        """How many sentences a set request may use: the server's cap says so in the message."""
        cap = cap or self.page.limits.set_sentences
        number = whole(n, "the number of sentences", 1, 10_000)
        if number > cap:
            raise InputError(f"this server uses up to {cap} sentences per request (got {number}); "
                             "the command line takes any number")
        return number

    def remember(self, session: Session, result: str, action: str, sentence_set: str, upload: str | None,
                 options: dict) -> None:
        """A set result's recipe: the set as the command line names it (the shipped held-out lines or an upload
        as --text-file, the sample treebank as --sample)."""
        inputs = {"text_file": Path(upload) if sentence_set == "upload" else SHIPPED_LINES} \
            if sentence_set != "sample" else {}
        self.page.remember_recipe(session, result, action, inputs,
                                  {**options, "sample": True} if sentence_set == "sample" else options)

    def set_lines(self, sentence_set: str, upload: str | None) -> list[str]:
        """The sentences of the set the page chose: shipped held-out lines, the sample treebank, or an upload."""
        if sentence_set == "sample":
            return sentence_texts()
        if sentence_set != "upload":
            return heldout_lines()
        if not upload:
            raise InputError("upload a text file first (one sentence per line)")
        if Path(upload).stat().st_size > self.page.limits.upload_bytes:
            raise InputError(f"the file is over {self.page.limits.upload_bytes / 1e6:.0f} MB")
        try:
            return read_lines(upload)
        except InputError as error:
            raise InputError(str(error).replace(str(upload), Path(upload).name)) from None

    def run_directional_set(self, n: float, sinks: str, session: Session, sentence_set: str = "heldout",
                            upload: str | None = None, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            result = directional_set(self.page.lab_of(session), self.set_lines(sentence_set, upload),
                                     sinks=sinks if sinks == "strict" else "symmetric",
                                     settings=SetSettings(max_sentences=self.set_size(n)),
                                     progress=lambda done, total: progress(done / total, desc="directional set"))
        except (InputError, CheckpointError) as error:
            return {ui.direction_set_message: warning(error)}
        self.remember(session, "the directional sweep over a sentence set", "sweep", sentence_set, upload,
                      {"kind": "directional", "sinks": "strict" if sinks == "strict" else "symmetric",
                       "max_sentences": self.set_size(n)})
        table = pd.DataFrame(effects_table(result.effects, "condition", "mean P(gold)")).round(4)
        verdicts = " ".join(f"{d.verdict()}." for d in result.differences)
        found = (f"P(gold word) over {result.effects['both'].n} sentences, one masked word each ({sinks} sinks); each "
                 f"control hides as many random keys as its directional mask. {verdicts}{cut_note(result.truncated)}")
        return {ui.direction_set_message: title("Directional sweep over a sentence set", found, None,
                                                      set_settings(sentence_set, upload, n, f"{sinks} sinks"),
                                                      self.page.lab_of(session).checkpoint_id),
                ui.direction_set_table: table}

    def run_ablation_set(self, n: float, ablation: str, session: Session, sentence_set: str = "heldout",
                         upload: str | None = None, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab = self.page.lab_of(session)
            result = ablation_set(lab, self.set_lines(sentence_set, upload), self.interventions.reference(lab, ablation),
                                  settings=SetSettings(max_sentences=self.set_size(n)),
                                  progress=lambda done, total: progress(done / total, desc="ablation set"))
        except (InputError, CheckpointError) as error:
            return {ui.ablation_set_message: warning(error)}
        self.remember(session, "the head ablation sweep over a sentence set", "sweep", sentence_set, upload,
                      {"kind": "ablation", "ablation": ablation, "max_sentences": self.set_size(n)})
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

    def run_intervention_set(self, kind: str, heads: str, shift: float, seed: float, sinks: str, unit: str,
                             ablation: str, n: float, session: Session, sentence_set: str = "heldout",
                             upload: str | None = None, progress=gr.Progress()) -> Updates:
        """The chosen intervention over a sentence set, one seeded masked word each, with intervals."""
        ui, spec = self.ui, InterventionSpec(kind, heads, shift, seed, sinks, unit, ablation)
        try:
            lab = self.page.lab_of(session)
            # one seed for the masked words and the intervention's draws, as the command line's compare uses it
            request = InterveneSetRequest(tuple(self.set_lines(sentence_set, upload)), spec,
                                          seed=whole(seed or 0, "the seed", 0, 2**32 - 1), max_sentences=self.set_size(n))
            record = intervene_set(request, lab, lambda: self.interventions.reference(lab, ablation),
                                   progress=lambda done, total: progress(done / total, desc="intervention over the set"))
            effects, intervention = record.effects, record.intervention
        except (InputError, InterventionError, CheckpointError) as error:
            return {ui.intervention_set_message: warning(error)}
        self.remember(session, "the intervention over a sentence set", "compare", sentence_set, upload,
                      {**spec_options(spec), "max_sentences": self.set_size(n)})
        table = pd.DataFrame(effects_table(effects.effects)).round(4)
        found = f"{intervention.describe()} over {table.n.iloc[0]} sentences (gold word scored).{cut_note(effects.truncated)}"
        return {ui.intervention_set_message: title(f"{intervention.describe()} over a sentence set", found, None,
                                                         set_settings(sentence_set, upload, n), lab.checkpoint_id),
                ui.intervention_set_table: table}

    def run_faithfulness(self, n: float, session: Session, progress=gr.Progress()) -> Updates:
        ui = self.ui
        try:
            lab = self.page.lab_of(session)
            settings = FaithfulnessSettings(max_sentences=self.set_size(n, self.page.limits.faith_sentences))
            result = faithfulness_check(FaithfulnessRequest(settings=settings), lab,
                                        progress=lambda done, total: progress(done / total, desc="faithfulness")).result
        except (InputError, CheckpointError) as error:
            return {ui.faith_message: warning(error)}
        self.page.remember_recipe(session, "the faithfulness check", "faithfulness", {"text_file": SHIPPED_LINES},
                                  {"max_sentences": settings.max_sentences, "k": settings.k_max})
        table = pd.DataFrame(result.table()).drop(columns=["drop_by_k"]).sort_values("aopc", ascending=False)
        against_random = " ".join(f"{d.verdict()}." for d in result.differences() if d.b == "random")
        found = (f"Faithfulness of each explanation on {int(table.n.max())} held-out sentences ({result.model}). "
                 f"{result.conclusion()}. {against_random}{cut_note(result.truncated)} AOPC is {AOPC_UNIT}; "
                 f"comprehensiveness and sufficiency are {ERASER_UNIT}.")
        return {ui.faith_message: title("Faithfulness check", found, None, f"{int(table.n.max())} held-out "
                                              "sentences", lab.checkpoint_id),
                ui.faith_table: faith_table(table)}
