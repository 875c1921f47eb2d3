"""The page's ``gr.Blocks``, less two of Gradio's costs per event.

1. An output a reply leaves out is not rebuilt.

A handler that returns ``{component: value}`` leaves every other output of its event as ``gr.skip()``.
Gradio (5 and 6, ``Blocks.postprocess_data``) handles a skip as a property update with no properties: it
constructs a new component from the old one's arguments and renders its config, JSON schema included,
twice. The Run event has 44 outputs, and a Run after the first leaves about 30 of them out (the views
drawn on request are already empty): ~25 ms of the server's Python per Run at 128 tokens, under the GIL,
for a reply the page treats as "no change" either way. Here the outputs given go through Gradio's own
postprocessing and the skipped ones are answered with the skip itself, which is what the page receives
today for them.

2. The queue's event summary is not recomputed after every event. Gradio's queue (6.x) keeps a record of
up to 10,000 events and, after each one, builds a pandas DataFrame of all of them for its monitoring
page's percentiles (``Queue.compute_analytics_summary``, every ``GRADIO_ANALYTICS_CACHE_FREQUENCY`` = 1
events): 4 ms per event at 300 records, 11 ms at 10,000, on a server that runs for days. The app has no
monitoring page, so the summary is refreshed every ``ANALYTICS_EVERY`` events unless that variable is set.
"""
from __future__ import annotations

import copy
import os
import re
from typing import Any

import gradio as gr
from gradio.blocks import Block

ANALYTICS_EVERY = 1000  # events between two refreshes of Gradio's monitoring summary (see the module)


def is_skip(value: Any) -> bool:
    """``gr.skip()``: an update that changes nothing."""
    return isinstance(value, dict) and value == gr.skip()


def given_outputs(outputs: list, predictions: Any) -> list[int] | None:
    """The indices of ``outputs`` that a reply keyed by component gives a value other than a skip, or None when
    Gradio's own path should take the reply as it is (not keyed by component, a key that is not an output
    of the event, a single output, or nothing skipped)."""
    if not isinstance(predictions, dict) or not predictions or len(outputs) < 2:
        return None
    if not all(isinstance(key, Block) for key in predictions):
        return None
    by_id = {key._id: value for key, value in predictions.items()}
    ids = [block._id for block in outputs]
    if not set(by_id) <= set(ids):
        return None
    given = [i for i, block_id in enumerate(ids) if block_id in by_id and not is_skip(by_id[block_id])]
    return given if 1 < len(given) < len(outputs) else None


BAD_VALUE = "a value sent with this request is not one its control takes; check the values and try again"
WANTS = {"slider": "a number in the slider's range", "number": "a number", "checkbox": "true or false",
         "checkboxgroup": "a list of the listed choices", "radio": "one of the listed choices",
         "dropdown": "one of the listed choices", "textbox": "text", "file": "a file"}
PROCESSING = re.compile(r"at index (\d+) \(a `(\w+)` component\)")
NOT_LISTED = re.compile(r"Value: (.*) \(type: <class '\w+'>\) is not in the list of choices: (.*)", re.S)


def refused_value(error: Exception) -> str:
    """Gradio's refusal of a value, in the app's words: its range and choice refusals kept as they read, the
    Python type and the original exception's text left out, and the value only as its repr (a lone surrogate
    escaped, so the reply can be sent)."""
    text = (getattr(error, "message", None) or str(error)).encode("utf-8", "backslashreplace").decode("utf-8")
    listed = NOT_LISTED.fullmatch(text.strip())
    if listed:
        return f"{listed.group(1)} is not in the list of choices ({listed.group(2)[:300]})"
    if isinstance(error, gr.Error):  # "Value 21 is greater than maximum value 20" and the like
        return text[:400]
    found = PROCESSING.search(text)
    if found is None:
        return BAD_VALUE
    index, kind = int(found.group(1)), found.group(2)
    return f"Expected {WANTS.get(kind, 'a value of its kind')} for the {kind} (input {index + 1}); check the values and try again"


class LabBlocks(gr.Blocks):
    """``gr.Blocks`` whose replies skip the outputs they leave out without rebuilding them, and whose queue
    summarises its events for Gradio's monitoring page every ``ANALYTICS_EVERY`` events (see the module)."""

    def queue(self, *args: Any, **kwargs: Any) -> LabBlocks:
        blocks = super().queue(*args, **kwargs)
        queue = getattr(self, "_queue", None)
        if hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY") and "GRADIO_ANALYTICS_CACHE_FREQUENCY" not in os.environ:
            queue.ANAYLTICS_CACHE_FREQUENCY = ANALYTICS_EVERY  # (Gradio's spelling)
        return blocks

    async def preprocess_data(self, block_fn: Any, *args: Any, **kwargs: Any) -> list[Any]:
        """Gradio's own check of the values an event was sent, answered in the app's words: its message holds
        Python's (``Original error: TypeError: '<' not supported ...``) and echoes the value, and a value with a
        lone surrogate made a reply that could not be sent at all (issue 56)."""
        try:
            return await super().preprocess_data(block_fn, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - every failure here is a value the control does not take
            raise gr.Error(refused_value(error)) from None

    async def postprocess_data(self, block_fn: Any, predictions: list | dict, state: Any) -> list[Any]:
        outputs = list(block_fn.outputs)
        given = given_outputs(outputs, predictions)
        if given is None:
            return await super().postprocess_data(block_fn, predictions, state)
        by_id = {key._id: value for key, value in predictions.items()}
        part = copy.copy(block_fn)  # the same event with only the outputs given
        part.outputs = [outputs[i] for i in given]
        values = await super().postprocess_data(part, [by_id[block._id] for block in part.outputs], state)
        reply: list[Any] = [gr.skip() for _ in outputs]
        for i, value in zip(given, values, strict=True):
            reply[i] = value
        return reply
