"""ZeroGPU: the model's handlers ask for the GPU time their request may use (the server's time budget), not
spaces.GPU's default 60 s; elsewhere nothing changes."""
from __future__ import annotations

import sys
import types

import pytest

from bertviz_lab.app.gate import GRACE
from bertviz_lab.app.state import Limits
from bertviz_lab.app.zerogpu import DEFAULT_SECONDS, MAX_SECONDS, TO_GPU_SECONDS, gpu_seconds, on_gpu


@pytest.fixture
def fake_spaces(monkeypatch):
    """A stand-in ``spaces`` package that records each spaces.GPU(duration=...) it is asked for."""
    asked = []

    def gpu(duration=None):
        asked.append(duration)
        return lambda fn: fn

    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=gpu))
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    return asked


def test_a_public_space_asks_for_its_budget_not_the_default_minute(fake_spaces):
    public = Limits.public().seconds
    assert public == 15
    assert gpu_seconds(public) == 15 + 1 + TO_GPU_SECONDS == 19  # 15 s + GRACE (0.5) rounded up + the move to the GPU
    assert gpu_seconds(None) == DEFAULT_SECONDS and gpu_seconds(10_000) == MAX_SECONDS and GRACE == 0.5
    handler = on_gpu(lambda: "ran", public)
    assert handler() == "ran" and fake_spaces == [19]


def test_every_model_handler_of_a_public_app_asks_for_that_duration(fake_spaces, tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.events import MODEL_HANDLERS

    demo = build_demo(tiny_lab, limits=Limits.public())
    demo.close()
    assert len(fake_spaces) >= len(MODEL_HANDLERS) and set(fake_spaces) == {19}


def test_off_zerogpu_handlers_are_unchanged(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    handler = lambda: None  # noqa: E731
    assert on_gpu(handler, 15) is handler
