"""Gradio's page files and plotly.js from memory (app/static_cache.py): the same bytes as the files, Brotli only to
a client that accepts it, 304 on a matching ETag, and every other request (a path below the folder, a Range, a
POST, an unknown name) left to the app behind."""
import brotli
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient


@pytest.fixture()
def served(tmp_path):
    from bertviz_lab.app.static_cache import StaticFromMemory

    folder = tmp_path / "assets"
    folder.mkdir()
    (folder / "Index-abc.js").write_text("export const x = 1;\n" * 200)
    (folder / "font.woff2").write_bytes(bytes(range(256)) * 4)
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.js").write_text("deep")
    plotly = tmp_path / "plotly.min.js"
    plotly.write_text("/* plotly */ var Plotly = {};" * 100)

    def behind(request):
        return PlainTextResponse(f"behind {request.method} {request.url.path}")

    app = Starlette(routes=[Route("/{rest:path}", behind, methods=["GET", "HEAD", "POST"])],
                    middleware=[Middleware(StaticFromMemory, folders={"/assets/": folder},
                                           files={"/bvl-static/plotly.min.js": plotly})])
    return TestClient(app), folder, plotly


def test_a_file_is_its_bytes_compressed_only_for_a_client_that_accepts_brotli(served):
    client, folder, plotly = served
    raw = (folder / "Index-abc.js").read_bytes()
    with_br = client.get("/assets/Index-abc.js", headers={"Accept-Encoding": "gzip, deflate, br"})
    assert with_br.status_code == 200 and with_br.headers["content-encoding"] == "br"
    assert with_br.content == raw  # the client decoded Brotli: the same bytes as the file
    assert int(with_br.headers["content-length"]) == len(brotli.compress(raw, quality=5)) < len(raw)
    assert with_br.headers["content-type"].startswith("application/javascript") or \
        with_br.headers["content-type"].startswith("text/javascript")
    plain = client.get("/assets/Index-abc.js", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers and plain.content == raw
    # a binary font is sent as it is, whatever the client accepts
    font = client.get("/assets/font.woff2", headers={"Accept-Encoding": "br"})
    assert "content-encoding" not in font.headers and font.content == (folder / "font.woff2").read_bytes()
    assert client.get("/bvl-static/plotly.min.js").content == plotly.read_bytes()


def test_an_unchanged_file_is_not_sent_again_and_a_head_request_gets_no_body(served):
    client, _, _ = served
    first = client.get("/assets/Index-abc.js")
    again = client.get("/assets/Index-abc.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = client.head("/assets/Index-abc.js")
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == first.headers["etag"]


@pytest.mark.parametrize("method,path,headers", [
    ("GET", "/assets/sub/deep.js", {}),  # below the folder: not by plain name
    ("GET", "/assets/../plotly.min.js", {}),
    ("GET", "/assets/missing.js", {}),
    ("GET", "/assets/Index-abc.js", {"Range": "bytes=0-10"}),
    ("POST", "/assets/Index-abc.js", {}),
    ("GET", "/bvl-static/other.js", {}),
    ("GET", "/", {}),
])
def test_anything_else_goes_on_to_the_app_behind(served, method, path, headers):
    client, _, _ = served
    reply = client.request(method, path, headers=headers)
    assert reply.text.startswith("behind "), (path, reply.text[:60])


def test_the_page_reads_gradios_own_files_and_plotly_from_memory():
    """The running app's middleware is set on Gradio's real frontend folder and on the plotly.js the page loads."""
    from bertviz_lab.app import GRADIO_ASSETS, PLOTLY_JS, PLOTLY_URL, launch_kwargs
    from bertviz_lab.app.static_cache import StaticFromMemory

    assert any(p.suffix == ".js" for p in GRADIO_ASSETS.iterdir()) and PLOTLY_JS.is_file()
    (middleware,) = launch_kwargs()["app_kwargs"]["middleware"]
    assert middleware.cls is StaticFromMemory
    assert middleware.kwargs == {"folders": {"/assets/": GRADIO_ASSETS}, "files": {f"/{PLOTLY_URL}": PLOTLY_JS}}
    assert f"window.BVL_PLOTLY_URL = \"{PLOTLY_URL}\"" in launch_kwargs()["head"]
