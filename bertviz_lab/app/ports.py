"""Ports: a free one chosen at run time (tests, benchmarks), a busy one said in one sentence (the launcher), and a
patient check that the server answers (``patient_url_ok``).

Gradio, given no port, tries 7860 and up; a test suite that did so took the ports a user's ``python app.py``
wants, which then failed with Gradio's 15-line traceback (issue 56)."""
from __future__ import annotations

import errno
import socket
import time


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, chosen by the system (never one of Gradio's defaults by design)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_problem(host: str, port: int) -> str | None:
    """Why the app cannot listen on ``host:port``, in one sentence, or None when it can."""
    if not 0 < port < 65536:
        return f"port {port} is not a port number (1-65535)"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closing socket is no reason
        try:
            s.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return (f"port {port} on {host} is already in use (another bertviz-lab or Gradio app?); stop it, or "
                        f"start this one with --port {free_port(host) if family == socket.AF_INET else port + 1}")
            if error.errno == errno.EACCES:
                return f"port {port} needs administrator rights; choose one above 1023 with --port"
            return f"cannot listen on {host}:{port} ({error.strerror}); choose another --host or --port"
    return None


def patient_url_ok(url: str, seconds: float = 180.0) -> bool:
    """Gradio's check that its server answers, waiting for the condition: Gradio's own ``networking.url_ok`` gives up
    at the first HEAD that takes over 3 s, which a loaded machine (a training run, a test suite) can take, and then
    refuses to start with "localhost is not accessible". The launcher and the tests start Gradio with this one."""
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.head(url, timeout=30, verify=False).status_code in (200, 401, 301, 302, 303, 307, 308):
                return True
        except (httpx.ConnectError, httpx.TimeoutException):
            pass
        time.sleep(0.2)
    return False
