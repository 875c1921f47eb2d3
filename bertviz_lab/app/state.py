"""What the app keeps between events: the bounded cache of loaded (read-only) models shared by
all sessions, and the per-browser-session state (the current Analysis and choices) in
``gr.State``. Captures never live here: each event runs its own hook context."""
from __future__ import annotations

import threading
import uuid
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from gradio.components.plot import PlotData

from ..bert import DEFAULT_CHECKPOINT, Budget, CheckpointError
from ..bert.loading.twin_checkpoints import is_twin
from ..bert.runtime.model_thread import on_passing_thread
from ..figures.analysis import ViewOptions
from ..figures.base import Figure, to_json
from ..lab import Analysis, InputError, Lab, load


class LabCache:
    """Loaded models keyed by (checkpoint, device), loaded once, shared read-only, at most
    ``capacity`` at a time (least recently used first out; the startup model is pinned)."""

    def __init__(self, allowed: list[str] | None, allow_any: bool, capacity: int = 4) -> None:
        self.allowed = allowed or [DEFAULT_CHECKPOINT]
        self.allow_any = allow_any
        self.capacity = max(1, capacity)
        self._labs: OrderedDict[tuple[str, str], Lab] = OrderedDict()
        self._pinned: tuple[str, str] | None = None
        self._lock = threading.Lock()  # the table's, never held during a load
        self._loading: dict[tuple[str, str], Future] = {}  # loads under way, each shared by its waiters

    def pin(self, lab: Lab, device: str) -> None:
        self._pinned = (lab.checkpoint_id, device)
        self._labs[self._pinned] = lab

    def get(self, checkpoint: str, device: str) -> Lab:
        """The loaded checkpoint (``default``, ``minilm-original``, a folder or a hub id this server allows).

        The lock guards the table only, never a load: a slow load (a large hub checkpoint) makes only the
        requests for that same checkpoint wait, and every other session's Runs go on (issue 56: one
        visitor's load had held every other visitor's Run for 123 s). Concurrent requests for one
        checkpoint share one load; a load that fails is not kept, and each waiting request gets its error."""
        checkpoint = (checkpoint or DEFAULT_CHECKPOINT).strip()
        if not self.allow_any and checkpoint not in self.allowed:
            raise CheckpointError(f"model {checkpoint!r} is not enabled on this server; "
                                  f"choose one of: {', '.join(self.allowed)}")
        key = (checkpoint, device)
        with self._lock:
            if key in self._labs:
                self._labs.move_to_end(key)
                return self._labs[key]
            loading = self._loading.get(key)
            leads = loading is None
            if leads:
                loading = self._loading[key] = Future()
        if leads:
            self._load(key, loading)
        return loading.result()

    def _load(self, key: tuple[str, str], loading: Future) -> None:
        """Load ``key`` outside the lock and hand the result (or the error) to every request waiting on it."""
        try:
            # on a thread of its own: its tensor copies leave no thread pool behind (bert/runtime/model_thread.py)
            lab = on_passing_thread(load, key[0], device=key[1])
        except BaseException as error:  # every waiter gets it; nothing is kept
            with self._lock:
                del self._loading[key]
            loading.set_exception(error)
            return
        with self._lock:
            del self._loading[key]
            self._labs[key] = lab
            # the position twins are small (4 x 256: ~14 MB of their own in float32, beside MiniLM's words) and the
            # Positions lesson sets up to four of them side by side: they do not count against the capacity, so a
            # lesson never evicts the twins the next one needs (at most the twins folder's seven are kept)
            counted = [k for k in self._labs if not is_twin(k[0])]
            evictable = [k for k in counted if k not in (key, self._pinned)]
            while len(counted) > self.capacity and evictable:
                gone = evictable.pop(0)
                counted.remove(gone)
                del self._labs[gone]
        loading.set_result(lab)


@dataclass(frozen=True)
class Limits:
    """What one server holds and accepts, so no visitor can exhaust memory, disk or workers."""

    sessions: int = 32  # sessions whose analyses are kept (least recently used dropped first): <= 32 x 75 MB at 512 tokens
    light_sessions: int = 256  # sessions Gradio keeps at all (~0.3 MB each without an analysis; LRU)
    session_ttl: float = 3600  # seconds a session's state lives after its last use
    upload_bytes: int = 2_000_000  # largest upload Gradio accepts (it rejects larger ones before they land)
    queue: int = 64  # events waiting; more get "busy, try again"
    syntax_words: int = 10_000  # words one treebank request may score in the app (the CLI has no limit)
    set_sentences: int = 500  # sentences one sentence-set request may use
    faith_sentences: int = 100  # sentences of one faithfulness check
    export_age: float = 120  # seconds an export file stays in our temp folder (served from there, never copied)
    export_bytes: int = 1_000_000_000  # all export files of the server together
    payload_age: float = 600  # seconds the codes of an analysis stay fetchable by the page (views.js fetches at once)
    payloads: int = 256  # at most this many on disk (19 MB each at 512 tokens, 9.4 MB at 256; bytes capped below)
    payload_bytes: int = 2_000_000_000  # all payload files of the server together
    files_per_session: int = 2  # a session's newest exports (and payloads) kept; older ones are deleted
    gradio_cache: tuple[int, int] = (600, 3600)  # Gradio deletes its copies of uploads every [0] s older than [1] s
    max_tokens: int | None = None  # tokens per input of every request that runs the model (None: the model maximum)
    max_masks: int | None = None  # masked words predicted per input
    token_passes: int | None = None  # model work per request: sum over forward passes of rows x tokens
    seconds: float | None = None  # wall time one request may hold a worker before its next forward pass is refused
    api_bytes: int | None = None  # largest /attention reply; above it attention travels as float16 base64 or is refused

    @classmethod
    def public(cls) -> Limits:
        """For a hosted Space or any public server: small requests, each done in well under 20 s on 2 CPU
        cores (benchmarks/bench_hostile.py), compact replies, bounded disk (<= 200 MB)."""
        return cls(sessions=32, queue=32, syntax_words=2_000, set_sentences=40, faith_sentences=20,
                   export_bytes=100_000_000, payload_bytes=60_000_000, payloads=64, gradio_cache=(60, 300),
                   max_tokens=256, max_masks=20, token_passes=400_000, seconds=15, api_bytes=8_000_000)

    def budget(self) -> Budget:
        """The caps every forward pass of one request is checked against (bert.budget)."""
        return Budget(self.max_tokens, self.max_masks, self.token_passes, self.seconds)


class SessionSlots:
    """The sessions whose analyses the server keeps: at most ``capacity``, least recently used first out.
    Gradio keeps many more (light) session states; only these hold attention, comparisons and
    treebanks, so cheap events from many new visitors evict nobody's work."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._held: OrderedDict[str, weakref.ref] = OrderedDict()
        self._lock = threading.Lock()

    def hold(self, session: Session) -> None:
        with self._lock:
            key = session.key()
            self._held[key] = weakref.ref(session)
            self._held.move_to_end(key)
            while len(self._held) > self.capacity:
                _, ref = self._held.popitem(last=False)
                evicted = ref()
                if evicted is not None:
                    evicted.drop_work()

    def __len__(self) -> int:
        return sum(ref() is not None and ref().holds_work() for ref in self._held.values())


@dataclass(frozen=True)
class Snapshot:
    """One analysis with the weights and source it came from, and the session's generation when it was read."""

    analysis: Analysis | None
    model: str
    device: str
    source: str
    generation: int

    def bound_to(self, lab: Lab) -> Analysis:
        """The analysis, checked to come from ``lab``'s weights: a model switch that landed between reading the
        session's model and its analysis is one sentence, never another model's answer about this input."""
        a = self.analysis
        if a is None:
            raise InputError("press Run first: there is no analysed input to work on")
        if a.model != lab.name or a.device != str(lab.device):
            raise InputError("the model was switched while this ran; press Run with the new model, then ask again")
        return a


@dataclass
class Session:
    model: str = DEFAULT_CHECKPOINT  # the checkpoint the session's views come from
    device: str = "cpu"
    analysis: Analysis | None = None
    options: ViewOptions = field(default_factory=ViewOptions)
    source: str = "attention"  # the attention source the views show (``attention.sources``)
    by_source: dict = field(default_factory=dict)  # source -> (Analysis of that source, per-layer matrices)
    comparison: Any = None  # interventions.Comparison of the last intervention
    syntax: Any = None  # syntax.run.SyntaxRun of the last treebank run
    treebank: list = field(default_factory=list)  # its sentences
    syntax_model: str = ""  # the weights it scored
    tab: str = "single"  # the open view tab: only its figure is drawn
    recipes: dict = field(default_factory=dict)  # each result's recipe ("Copy as recipe"), by the result's name
    scale: str = "fixed"  # attention maps' colour scale: "fixed" (0-1) or "per-head"
    work_tab: str = "interventions"  # the open tab of the lower group (interventions, syntax, export)
    # whether a view drawn on request (events.ON_REQUEST) may hold a result: a Run clears them only then, so a
    # plain Run sends ~20 fewer component updates (events.handler_of sets it when a handler fills one)
    # (True for a new session: it may replace one that expired while its page still shows results; from_url, the
    # page opening, sets False)
    shown_on_request: bool = True
    # the Run-owned controls' properties as this session's page was last sent them (token choices, slider maxima,
    # views greyed by a refused Run): a Run sends a property update only when one changes (RunController.run_controls)
    sent: dict = field(default_factory=dict)
    generation: int = 0  # bumped by every new analysis or source, so drawn figures know they are out of date
    drawn: dict = field(default_factory=dict)  # tab -> what its figure was drawn from
    owner: str = ""  # a random key, given on first use (gr.State deep-copies the default, so not at creation)

    def result_names(self) -> list[str]:
        """This visit's results that have a recipe ("Copy as recipe"), latest first."""
        return list(reversed(self.recipes))

    def snapshot(self) -> Snapshot:
        """What a handler works on, read once: a Run or a model switch that lands while it works changes the
        session, not the snapshot, so its result is computed and titled from one input (issue 56)."""
        return Snapshot(self.analysis, self.model, self.device, self.source, self.generation)

    def key(self) -> str:
        if not self.owner:
            self.owner = uuid.uuid4().hex
        return self.owner

    def stale_note(self) -> str:
        """After a refused Run the views still show the last analysis: say so (without echoing user text,
        which a Markdown message would render)."""
        if self.analysis is None:
            return ""
        return (f" The greyed views still show the previous input ({len(self.analysis.tokens)} tokens), not the text "
                "above; they come back with the next Run that succeeds.")

    def holds_work(self) -> bool:
        return self.analysis is not None or self.syntax is not None or self.comparison is not None

    def drop_work(self) -> None:
        """The server needs the room: forget the analyses (the page then asks for a new Run)."""
        self.analysis, self.comparison, self.syntax = None, None, None
        self.by_source, self.treebank, self.drawn = {}, [], {}
        self.generation += 1


def plot(fig: Figure) -> PlotData:
    return PlotData(type="plotly", plot=to_json(fig))


def status_line(lab: Lab) -> str:
    """One line under the title: which weights every view shows, and where."""
    head = "MLM head: yes" if lab.model.has_mlm_head else "no MLM head (no masked-word predictions)"
    if lab.model.has_nsp_head:
        head += " · NSP head: yes"
    if lab.model.classifier is not None:
        head += " · classifier: " + ", ".join(lab.model.class_labels)
    return f"**Weights:** {lab.name} · {lab.n_layers} layers × {lab.n_heads} heads · {head} · **device:** {lab.device}"


def weights_note(lab: Lab) -> str:
    if not lab.checkpoint.head_origin:
        return f"The views show the attention of {lab.name}."
    trained = "masked-word and next-sentence" if lab.model.has_nsp_head else "masked-word"
    return (f"The default is bertviz-lab's {trained} version of MiniLM (see assets/minilm-mlm/MODEL_CARD.md): its "
            "fine-tuned layers differ from the published all-MiniLM-L6-v2. Choose `minilm-original` for the "
            "published weights exactly (attention only, no predictions).")
