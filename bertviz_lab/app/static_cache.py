"""The page's static scripts and styles answered from memory, each read and compressed once (issue 60: the first
heatmap within 1.5 s of a first visit).

A first visit fetches about a hundred of Gradio's own files (its page is split into one small script per component)
before it can build the page. Through Gradio's routes each cost 2-5 ms of the server's one event loop (FastAPI's
stack, a file read in a worker thread, a Brotli compression per request): the browser's six connections wait on it,
and on 2 cores the server's time is taken from the browser's. Served from memory, compressed once, the same files
cost a fraction of that (benchmarks/bench_first_visit.py measures the visit). plotly.js (4.8 MB, 1.4 MB compressed)
is served the same way, compressed once instead of on every visit.

Only what these folders hold, by plain file name (no path below them), for GET and HEAD without a Range; anything
else goes on to Gradio unchanged. A client that does not accept Brotli gets the file as it is. The files are the
installed packages' own and do not change while the server runs; the cache is bounded by ``MAX_BYTES``."""
from __future__ import annotations

import hashlib
import mimetypes
import re
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import anyio

COMPRESSIBLE = {".js", ".mjs", ".css", ".json", ".svg", ".html", ".map", ".txt"}
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_BYTES = 96 * 1024 * 1024  # every file of Gradio's frontend (21 MB) and plotly.js, raw and compressed, fit
BROTLI_QUALITY = 5  # compressed once: a little better than Gradio's per-request 4, at no cost per visit


@dataclass(frozen=True)
class CachedFile:
    raw: bytes
    compressed: bytes | None  # Brotli, for the types worth compressing
    media_type: str
    etag: str
    last_modified: str

    @property
    def size(self) -> int:
        return len(self.raw) + len(self.compressed or b"")


def read_file(path: Path) -> CachedFile:
    """One file as it is served: its bytes, their Brotli form (if worth it), type, ETag and modification time."""
    import brotli  # Gradio's own dependency (its Brotli middleware)

    raw = path.read_bytes()
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if media_type.startswith("text/") or media_type == "application/javascript":
        media_type += "; charset=utf-8"
    compressed = brotli.compress(raw, quality=BROTLI_QUALITY) if path.suffix in COMPRESSIBLE else None
    return CachedFile(raw, compressed if compressed is not None and len(compressed) < len(raw) else None, media_type,
                      f'"{hashlib.md5(raw, usedforsecurity=False).hexdigest()}"',
                      formatdate(path.stat().st_mtime, usegmt=True))


class StaticFromMemory:
    """ASGI middleware: GET or HEAD ``<prefix><name>`` for each ``prefix -> folder`` of ``folders`` (and the exact
    paths of ``files``) answered from memory; every other request goes on to ``app``."""

    def __init__(self, app, folders: dict[str, Path] | None = None, files: dict[str, Path] | None = None,
                 max_bytes: int = MAX_BYTES) -> None:
        self.app = app
        self.folders = {prefix: Path(folder) for prefix, folder in (folders or {}).items() if Path(folder).is_dir()}
        self.files = {path: Path(file) for path, file in (files or {}).items() if Path(file).is_file()}
        self.max_bytes, self.held = max_bytes, 0
        self.cache: dict[str, CachedFile] = {}  # by the path asked for

    def file_of(self, path: str) -> Path | None:
        if path in self.files:
            return self.files[path]
        for prefix, folder in self.folders.items():
            name = path[len(prefix):] if path.startswith(prefix) else ""
            if FILE_NAME.fullmatch(name) and (folder / name).is_file():
                return folder / name
        return None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        headers = {key.lower(): value for key, value in scope.get("headers", [])}
        if b"range" in headers:
            return await self.app(scope, receive, send)
        cached = self.cache.get(path)  # a file served before: no look at the disk
        if cached is None:
            file = self.file_of(path)
            if file is None:
                return await self.app(scope, receive, send)
            cached = await anyio.to_thread.run_sync(read_file, file)
            if self.held + cached.size > self.max_bytes:  # never with these folders: but a bound, not a hope
                return await self.app(scope, receive, send)
            if path not in self.cache:  # two first requests for one file: it is held once
                self.cache[path], self.held = cached, self.held + cached.size
        await self.answer(cached, headers, scope["method"] == "HEAD", send)

    @staticmethod
    async def answer(cached: CachedFile, headers: dict[bytes, bytes], head_only: bool, send) -> None:
        out = [(b"etag", cached.etag.encode()), (b"last-modified", cached.last_modified.encode()),
               (b"vary", b"Accept-Encoding")]
        if headers.get(b"if-none-match", b"").decode("latin-1") == cached.etag:
            await send({"type": "http.response.start", "status": 304, "headers": out})
            await send({"type": "http.response.body", "body": b""})
            return
        brotli_ok = cached.compressed is not None and b"br" in headers.get(b"accept-encoding", b"")
        body = cached.compressed if brotli_ok else cached.raw
        out += [(b"content-type", cached.media_type.encode()), (b"content-length", str(len(body)).encode())]
        if brotli_ok:
            out.append((b"content-encoding", b"br"))  # Gradio's Brotli middleware leaves an encoded reply as it is
        await send({"type": "http.response.start", "status": 200, "headers": out})
        await send({"type": "http.response.body", "body": b"" if head_only else body})
