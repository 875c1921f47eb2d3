"""What the app keeps between events: the bounded cache of loaded (read-only) models shared by
all sessions, and the per-browser-session state (the current Analysis and choices) in
``gr.State``. Captures never live here: each event runs its own hook context."""
from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradio.components.plot import PlotData

from ..bert import DEFAULT_SOURCE, CheckpointError
from ..figures.analysis import ViewOptions
from ..figures.base import Figure, to_json
from ..lab import Analysis, Lab, load


class LabCache:
    """Loaded models keyed by (source, device), loaded once, shared read-only, at most
    ``capacity`` at a time (least recently used first out; the startup model is pinned)."""

    def __init__(self, allowed: list[str] | None, allow_any: bool, capacity: int = 4) -> None:
        self.allowed = allowed or [DEFAULT_SOURCE]
        self.allow_any = allow_any
        self.capacity = max(1, capacity)
        self._labs: OrderedDict[tuple[str, str], Lab] = OrderedDict()
        self._pinned: tuple[str, str] | None = None
        self._lock = threading.Lock()

    def pin(self, lab: Lab, device: str) -> None:
        self._pinned = (lab.source, device)
        self._labs[self._pinned] = lab

    def get(self, source: str, device: str) -> Lab:
        source = (source or DEFAULT_SOURCE).strip()
        if not self.allow_any and source not in self.allowed:
            raise CheckpointError(f"model {source!r} is not enabled on this server; "
                                  f"choose one of: {', '.join(self.allowed)}")
        key = (source, device)
        with self._lock:
            if key not in self._labs:
                self._labs[key] = load(source, device=device)
                evictable = [k for k in self._labs if k not in (key, self._pinned)]
                while len(self._labs) > self.capacity and evictable:
                    del self._labs[evictable.pop(0)]
            self._labs.move_to_end(key)
            return self._labs[key]


@dataclass(frozen=True)
class Limits:
    """What one server holds and accepts, so no visitor can exhaust memory, disk or workers."""

    sessions: int = 32  # sessions whose state is kept (least recently used dropped first): <= 32 x 75 MB at 512 tokens
    session_ttl: float = 3600  # seconds a session's state lives after its last use
    upload_bytes: int = 2_000_000  # largest upload Gradio accepts (it rejects larger ones before they land)
    queue: int = 64  # events waiting; more get "busy, try again"
    syntax_words: int = 10_000  # words one treebank request may score in the app (the CLI has no limit)
    export_age: float = 120  # seconds an export file stays in our temp folder (Gradio keeps its own copy)
    payload_age: float = 600  # seconds the codes of an analysis stay fetchable by the page (views.js fetches at once)
    payloads: int = 256  # at most this many on disk (<= 256 x 19 MB at 512 tokens; public mode: 256 tokens, 2.4 MB)
    max_tokens: int | None = None  # tokens per request (None: the model maximum)
    api_bytes: int | None = None  # largest /attention reply; above it attention travels as float16 base64 or is refused

    @classmethod
    def public(cls) -> Limits:
        """For a hosted Space or any public server: small requests, compact replies, fewer states."""
        return cls(sessions=32, queue=32, syntax_words=5_000, max_tokens=256, api_bytes=8_000_000, payloads=64)


class TempFolder:
    """A temp folder per server whose entries (files or subfolders) are deleted after ``max_age``
    seconds, and beyond the newest ``max_entries``, so no visitor can fill the disk."""

    def __init__(self, prefix: str, max_age: float, max_entries: int = 1000) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.max_age, self.max_entries = max_age, max_entries
        self._lock = threading.Lock()
        atexit.register(self.remove)

    def prune(self) -> None:
        now = time.time()
        entries = sorted(self.root.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for rank, old in enumerate(entries):
            if rank >= self.max_entries - 1 or now - old.stat().st_mtime > self.max_age:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)

    def new(self) -> Path:
        """A fresh subfolder (an export's)."""
        with self._lock:
            self.prune()
            return Path(tempfile.mkdtemp(dir=self.root))

    def write(self, data: bytes, suffix: str) -> Path:
        """A fresh file holding ``data``, written whole before its name appears."""
        with self._lock:
            self.prune()
            path = self.root / f"{uuid.uuid4().hex}{suffix}"
            partial = path.with_suffix(".part")
            partial.write_bytes(data)
            partial.rename(path)
            return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Session:
    model: str = DEFAULT_SOURCE
    device: str = "cpu"
    analysis: Analysis | None = None
    options: ViewOptions = field(default_factory=ViewOptions)
    source: str = "attention"  # what the views show: softmax attention or a norm-based source
    by_source: dict = field(default_factory=dict)  # source -> (Analysis of that source, per-layer matrices)
    comparison: Any = None  # interventions.Comparison of the last intervention
    syntax: Any = None  # syntax.run.SyntaxRun of the last treebank run
    treebank: list = field(default_factory=list)  # its sentences
    syntax_model: str = ""  # the weights it scored
    tab: str = "single"  # the open view tab: only its figure is drawn
    work_tab: str = "probes"  # the open tab of the lower group (probes, syntax, export)
    generation: int = 0  # bumped by every new analysis or source, so drawn figures know they are out of date
    drawn: dict = field(default_factory=dict)  # tab -> what its figure was drawn from


def plot(fig: Figure) -> PlotData:
    return PlotData(type="plotly", plot=to_json(fig))


def status_line(lab: Lab) -> str:
    """One line under the title: which weights every view shows, and where."""
    head = "MLM head: yes" if lab.model.has_mlm_head else "no MLM head (no masked-word predictions)"
    if lab.model.has_nsp_head:
        head += " · NSP head: yes"
    return f"**Weights:** {lab.name} · {lab.n_layers} layers × {lab.n_heads} heads · {head} · **device:** {lab.device}"


def weights_note(lab: Lab) -> str:
    if not lab.checkpoint.mlm_head_source:
        return f"The views show the attention of {lab.name}."
    trained = "masked-word and next-sentence" if lab.model.has_nsp_head else "masked-word"
    return (f"The default is bertviz-lab's {trained} version of MiniLM (see assets/minilm-mlm/MODEL_CARD.md): its "
            "fine-tuned layers differ from the published all-MiniLM-L6-v2. Choose `minilm-original` for the "
            "published weights exactly (attention only, no predictions).")
