"""The intervene task (tasks/intervene.py): the one place the picked-token rule, the number checks and the set's
refusal live, so the command line and the page answer alike."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bertviz_lab.interventions import compare, make_intervention
from bertviz_lab.lab import InputError, Readout
from bertviz_lab.tasks.intervene import (
    InterveneRequest,
    InterveneSetRequest,
    InterventionSpec,
    intervene,
    intervene_set,
)

TEXT = "the big cat sat on the red mat"


def test_picked_tokens_are_the_targets_of_hide_and_masked_in_both_runs_otherwise(sharp_lab):
    hidden = intervene(InterveneRequest(TEXT, InterventionSpec("hide-keys"), picked=(2, 5)), sharp_lab)
    expected = compare(sharp_lab, TEXT, make_intervention("hide-keys", positions=[2, 5]))
    np.testing.assert_array_equal(hidden.comparison.intervened.attention, expected.intervened.attention)
    assert hidden.comparison.baseline.masked_positions == []  # targets, not masked
    left = intervene(InterveneRequest(TEXT, InterventionSpec("left-only", sinks="strict"), picked=(3,)), sharp_lab)
    expected = compare(sharp_lab, TEXT, make_intervention("left-only", sinks="strict"),
                       readout=Readout(masks=[3]))
    assert left.comparison.baseline.masked_positions == [3] == expected.baseline.masked_positions
    np.testing.assert_array_equal(left.comparison.intervened.attention, expected.intervened.attention)
    assert left.to_json()["mean_js_divergence"] == pytest.approx(float(expected.js.mean()))


def test_numbers_are_checked_once_for_every_door(sharp_lab):
    with pytest.raises(InputError, match=r"shift k must be a whole number from 0 to \d+ \(got -1\)"):
        intervene(InterveneRequest(TEXT, InterventionSpec("shift-positions", shift=-1)), sharp_lab)
    with pytest.raises(InputError, match="top-k must be a whole number from 1 to 50"):
        intervene(InterveneRequest(TEXT, InterventionSpec("left-only"), top_k=0), sharp_lab)


def test_a_set_refuses_an_intervention_that_needs_picked_tokens(sharp_lab):
    with pytest.raises(InputError, match="mask and hide interventions need picked tokens; over a set"):
        intervene_set(InterveneSetRequest(("the cat sat on the mat",), InterventionSpec("mask-tokens")), sharp_lab)


def test_the_command_line_prints_the_tasks_record(sharp_lab, tmp_path, capsys):
    """``compare --json`` is the task's record: the same JS divergence and changes as calling the task."""
    from bertviz_lab.cli.dispatch import main

    folder = sharp_lab.checkpoint_id
    assert main(["compare", TEXT.replace("sat", "[MASK]"), "--intervention", "shift-positions", "--shift", "2",
                 "--model", folder, "--device", "cpu", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    record = intervene(InterveneRequest(TEXT.replace("sat", "[MASK]"), InterventionSpec("shift-positions", shift=2)),
                       sharp_lab).to_json()
    assert printed["mean_js_divergence"] == pytest.approx(record["mean_js_divergence"])
    assert printed["intervention"] == record["intervention"] == "shift-positions by 2"
