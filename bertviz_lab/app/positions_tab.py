"""The Positions tab (issue 58): two to four position-scheme twins side by side on one sentence.

One tab, one file: its controls (``build``), its controller (``PositionsLesson``, built from the server's checkpoint
cache, no mixin), and its one event (``wire``, api_name ``positions_lesson``, through the server's gate). The work is
``tasks/positions_lesson.py``'s; this file only turns the controls into a request and the lesson into figures.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from ..bert.loading.twin_checkpoints import twin_names, twins_folder, twins_record
from ..figures.lesson_figures import lesson_distance, lesson_lengths, lesson_maps, lesson_shuffle
from ..figures.syntax import markdown_text
from ..tasks.positions_lesson import LessonRequest, positions_lesson
from .state import LabCache, plot
from .tabs import ON_USE
from .zerogpu import budget_seconds, on_gpu

DEFAULT_TWINS = ("twin-learned", "twin-rotary", "twin-none")
EXAMPLE = "The student who reads every evening will [MASK] the exam in spring."
INTRO = ("**Positional encoding, on equal terms.** The twins are encoders of one size, trained here on the same text "
         "with the same masked words, steps and seed; they differ only in how they tell positions apart (see "
         "`assets/twins/MODEL_CARD.md`). Choose two to four, type a sentence (with a `[MASK]`, or the middle word is "
         "masked for you) and compare: the same layer and head, attention by distance, each scheme's positions, what "
         "shuffling the other words does to the prediction, and held-out accuracy beyond the training length.")
HINT = "Choose the twins and press **Compare the twins**."
OUTPUTS = ("lesson_message", "lesson_maps", "lesson_distance", "lesson_shuffle", "lesson_lengths")


def build(ui: SimpleNamespace) -> None:
    """The tab's controls and result places, on ``ui`` (inside the page's lower tab set)."""
    names = twin_names()
    recipe = twins_record().get("recipe", {})  # the twins' size: the sliders' range
    with gr.Tab("Positions", id="positions", elem_id="tab-positions"):
        gr.Markdown(INTRO)
        with gr.Row():
            ui.lesson_twins = gr.CheckboxGroup(names, value=[t for t in DEFAULT_TWINS if t in names] or names[:2],
                                               label="Twins (two to four)", elem_id="lesson-twins", scale=3)
            with gr.Column(scale=1):
                ui.lesson_layer = gr.Slider(1, recipe.get("layers", 4), value=1, step=1, label="Layer",
                                            elem_id="lesson-layer")
                ui.lesson_head = gr.Slider(1, recipe.get("heads", 4), value=1, step=1, label="Head",
                                           elem_id="lesson-head")
        ui.lesson_text = gr.Textbox(EXAMPLE, label="Sentence", elem_id="lesson-text")
        ui.lesson_btn = gr.Button("Compare the twins", variant="primary", elem_id="lesson-btn")
        ui.lesson_message = gr.Markdown(HINT if names else f"No twins in {twins_folder()}.", elem_id="lesson-message")
        ui.lesson_maps = gr.Plot(label="Attention and positions", elem_id="lesson-maps", elem_classes=ON_USE)
        ui.lesson_shuffle = gr.Plot(label="Shuffle demonstration", elem_id="lesson-shuffle", elem_classes=ON_USE)
        ui.lesson_distance = gr.Plot(label="Attention by distance", elem_id="lesson-distance", elem_classes=ON_USE)
        ui.lesson_lengths = gr.Plot(label="Length demonstration", elem_id="lesson-lengths", elem_classes=ON_USE)


class PositionsLesson:
    """The tab's controller: the server's checkpoint cache and device, nothing per visitor (no session state)."""

    def __init__(self, ui: SimpleNamespace, cache: LabCache, device: str) -> None:
        self.ui, self.cache, self.device = ui, cache, device

    def compare(self, twins: list[str], text: str, layer: float, head: float) -> dict[Any, Any]:
        request = LessonRequest(tuple(twins or ()), text, layer, head)
        lesson = positions_lesson(request, lambda name: self.cache.get(name, self.device))
        ui, views = self.ui, lesson.views
        said = "\n".join(f"- {markdown_text(line)}" for line in lesson.conclusions())
        tokens = " ".join(f"{i}:{t}" for i, t in enumerate(views[0].analysis.tokens))
        return {ui.lesson_message: f"**{len(views[0].analysis.tokens)} tokens; layer {request.layer}, head "
                                   f"{request.head}.** What shuffling the other words does:\n{said}\n\n"
                                   f"Token positions: {markdown_text(tokens)}",
                ui.lesson_maps: plot(lesson_maps(views, request.layer, request.head)),
                ui.lesson_distance: plot(lesson_distance(views)), ui.lesson_shuffle: plot(lesson_shuffle(views)),
                ui.lesson_lengths: plot(lesson_lengths(views, lesson.measures))}


def wire(ui: SimpleNamespace, controller: PositionsLesson, gate: Any) -> None:
    """The tab's one event: Compare (api_name ``positions_lesson``), under the server's gate and on a GPU on ZeroGPU."""
    fn = on_gpu(gate.wrap(controller.compare, OUTPUTS), budget_seconds(gate))
    ui.lesson_btn.click(fn, [ui.lesson_twins, ui.lesson_text, ui.lesson_layer, ui.lesson_head],
                        [getattr(ui, name) for name in OUTPUTS], api_name="positions_lesson",
                        show_progress_on=[ui.lesson_message])
