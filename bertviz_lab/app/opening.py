"""The opening example's heatmap, ready before the page is built (issue 60: the first heatmap within 1.5 s of a
first visit).

A first visit used to wait for Gradio to fetch its ~90 scripts and mount the page (about 1.3 s on 2 cores) before its
load event asked the server for the opening example, and only then drew it. The opening example is the same for
every visitor of a server (the first example, on the server's own weights, on its clearest head), so its open head's
payload is computed once and served at ``bvl-opening``: the page's own script (static/views.js) asks for it as soon as
the HTML is read, while Gradio's scripts load, and draws it the moment the heatmap's box is on the page. The load
event's reply, with this visit's own analysis, then replaces it as before.

The payload is the one ``RunController.from_url`` sends a new session, made by the same call on a session of its own,
so the picture cannot differ from the one that replaces it; only the open head's codes travel (every head's stay with
the visitor's own analysis). It holds no visitor's input, and is computed once under a lock (``python app.py`` computes
it at the first visit's request, in parallel with the page's scripts)."""
from __future__ import annotations

import copy
import json
import logging
import threading

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .state import Session

LOG = logging.getLogger(__name__)
OPENING_ROUTE = "bvl-opening"
OPENING_ID = "opening"  # the payload's id: views.js draws it only while no analysis of the visit's own has arrived


class OpeningPayload:
    """The opening example's payload as JSON bytes, computed once on a copy of ``new_session`` (the page's initial
    session state); None when it cannot be sent ahead (its open head is too large to travel inline, or the analysis
    failed: the load event then draws the page as before)."""

    def __init__(self, run_controller, payload_component, new_session: Session) -> None:
        self._run, self._component, self._new_session = run_controller, payload_component, new_session
        self._lock = threading.Lock()
        self._done = False
        self._bytes: bytes | None = None

    def json_bytes(self) -> bytes | None:
        with self._lock:
            if not self._done:
                self._bytes = self._compute()
                self._done = True
            return self._bytes

    def _compute(self) -> bytes | None:
        try:
            # exactly what a new visitor's load event sends
            out = self._run.from_url(copy.deepcopy(self._new_session), None)  # a copy, as Gradio gives a visitor
        except Exception as error:  # never a failed page: its load event draws the opening itself
            LOG.warning("the opening example is not sent ahead (%s: %s)", type(error).__name__, error)
            return None
        meta = out.get(self._component)
        if not isinstance(meta, dict) or "head_codes" not in meta:
            return None
        ahead = {key: value for key, value in meta.items() if key not in ("codes_url", "head_url", "scroll")}
        ahead["id"] = OPENING_ID
        return json.dumps(ahead, separators=(",", ":")).encode("utf-8")


def opening_route(opening: OpeningPayload) -> Route:
    """GET bvl-opening: the opening example's open head as JSON, or 204 when it is not sent ahead."""

    def serve(request: Request) -> Response:
        body = opening.json_bytes()
        if body is None:
            return Response(status_code=204)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    return Route(f"/{OPENING_ROUTE}", serve, methods=["GET"])
