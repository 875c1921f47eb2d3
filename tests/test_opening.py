"""The opening example sent ahead (app/opening.py): the same payload a new visitor's load event sends, computed
once, without the visitor's own files; nothing when it cannot be (the load event then draws the page alone)."""
import base64
import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient


@pytest.fixture(scope="module")
def built(tiny_lab):
    from bertviz_lab.app import build_demo

    return build_demo(tiny_lab)


def client_of(opening) -> TestClient:
    from bertviz_lab.app.opening import opening_route

    return TestClient(Starlette(routes=[opening_route(opening)]))


def test_the_opening_sent_ahead_is_the_load_events_payload_computed_once(built, tiny_lab, monkeypatch):
    from bertviz_lab.app.opening import OPENING_ID, OpeningPayload
    from bertviz_lab.app.state import Session
    from bertviz_lab.app.tabs import EXAMPLES
    from bertviz_lab.attention.opening_head import opening_head

    run, ui = built.bvl_controllers.run, built.bvl_controllers.page.ui
    calls = []
    real = run.from_url
    monkeypatch.setattr(run, "from_url", lambda session, request: calls.append(request) or real(session, request))
    opening = OpeningPayload(run, ui.payload, Session(model=tiny_lab.checkpoint_id, device="cpu"))
    reply = client_of(opening).get("/bvl-opening")
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    again = client_of(opening).get("/bvl-opening")
    assert again.content == reply.content and calls == [None]  # computed once, for every visitor
    ahead = json.loads(reply.content)
    visitor = real(Session(model=tiny_lab.checkpoint_id, device="cpu"), None)[ui.payload]
    # the visitor's own files stay with the visitor's analysis; the picture is the same
    assert "codes_url" not in ahead and "head_url" not in ahead and "scroll" not in ahead
    assert ahead["id"] == OPENING_ID != visitor["id"]
    same = {key: value for key, value in visitor.items() if key not in ("id", "codes_url", "head_url", "scroll")}
    assert {key: value for key, value in ahead.items() if key != "id"} == same
    assert base64.b64decode(ahead["head_codes"]) == base64.b64decode(visitor["head_codes"])
    # on the opening example's clearest head, as the page opens
    analysed = tiny_lab.analyze(EXAMPLES[0][0])
    chosen = opening_head(analysed.attention, analysed.tokens)
    assert (ahead["layer"], ahead["head"]) == (chosen.layer, chosen.head)
    assert len(ahead["labels"]) == len(analysed.tokens)


def test_nothing_is_sent_ahead_when_the_open_head_is_too_large_or_the_analysis_fails(built, tiny_lab, monkeypatch):
    from bertviz_lab.app import view_controller
    from bertviz_lab.app.opening import OpeningPayload
    from bertviz_lab.app.state import Session

    run, ui = built.bvl_controllers.run, built.bvl_controllers.page.ui
    monkeypatch.setattr(view_controller, "INLINE_HEAD_MAX", 0)  # the open head would come as a file of its own
    fresh = Session(model=tiny_lab.checkpoint_id, device="cpu")
    assert client_of(OpeningPayload(run, ui.payload, fresh)).get("/bvl-opening").status_code == 204
    monkeypatch.undo()

    def broken(session, request):
        raise RuntimeError("no GPU here")

    monkeypatch.setattr(run, "from_url", broken)
    failing = OpeningPayload(run, ui.payload, fresh)
    assert client_of(failing).get("/bvl-opening").status_code == 204
    assert failing.json_bytes() is None
