import os
from pathlib import Path

import builders  # tests/ is on sys.path: pytest puts a conftest's folder there
import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test touches the network
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def tiny_hf():
    return builders.random_pretraining_model(seed=0)


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory, tiny_hf):
    return builders.save_checkpoint(tiny_hf, tmp_path_factory.mktemp("tiny") / "ckpt")


@pytest.fixture(scope="session")
def tiny_lab(tiny_folder):
    import bertviz_lab

    return bertviz_lab.load(str(tiny_folder), device="cpu")


@pytest.fixture(scope="session")
def default_lab():
    """The embedded default as users get it (with bertviz-lab's MLM head when it is shipped)."""
    import bertviz_lab

    return bertviz_lab.load("default", device="cpu")


@pytest.fixture(scope="session")
def minilm_lab():
    import bertviz_lab

    return bertviz_lab.load("default", device="cpu", mlm_head=None)


def launch(demo, limits=None):
    """Start a Blocks app in this process on a free loopback port, with the app's limits; returns its URL."""
    from bertviz_lab.app import LIMITS, launch_kwargs, queue_kwargs

    demo.queue(**queue_kwargs(limits or LIMITS))
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(limits or LIMITS, demo))
    return url


def serve(lab):
    """Yield the URL of an app built on ``lab``; close it afterwards."""
    from bertviz_lab.app import build_demo

    demo = build_demo(lab)
    yield launch(demo)
    demo.close()


@pytest.fixture(scope="session")
def tiny_app(tiny_lab):
    yield from serve(tiny_lab)


@pytest.fixture(scope="session")
def default_app(default_lab):
    yield from serve(default_lab)


@pytest.fixture(scope="session")
def sharp_hf():
    """A random BERT whose attention is far from uniform (query/key weights scaled up)."""
    import torch

    model = builders.random_pretraining_model(seed=5)
    with torch.no_grad():
        for layer in model.bert.encoder.layer:
            layer.attention.self.query.weight.mul_(12)
            layer.attention.self.key.weight.mul_(12)
    return model


@pytest.fixture(scope="session")
def sharp_lab(tmp_path_factory, sharp_hf):
    import bertviz_lab

    folder = builders.save_checkpoint(sharp_hf, tmp_path_factory.mktemp("sharp") / "ckpt")
    return bertviz_lab.load(str(folder), device="cpu")


def call(client, api_name: str, *args) -> dict:
    """Call an app event through gradio_client; its results by output name (never by position)."""
    from bertviz_lab.app.events import api_outputs

    names = api_outputs(api_name)
    result = client.predict(*args, api_name=f"/{api_name}")
    return dict(zip(names, result if len(names) > 1 else (result,)))


# ---- tiers: `pytest -m "not slow"` is the inner loop (no browser, no server, no subprocess, no Ray, no
# wheel or notebook build); CI runs everything. A test is slow by what it uses, so a new one is placed
# without anyone remembering to mark it.
SLOW_FIXTURES = {"browser", "tiny_app", "default_app", "public_app", "default_lab", "minilm_lab"}
SLOW_CODE = ("subprocess", "cli(", "probe(", "gradio_client.Client", "launch(", "build_demo(", "ray.", "import ray",
             "nbclient", "build_space", "Popen", "run_cli")


def pytest_collection_modifyitems(config, items):
    import inspect

    for item in items:
        function = getattr(item, "function", None)
        try:
            source = inspect.getsource(function) if function is not None else ""
        except (OSError, TypeError):
            source = ""
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or any(code in source for code in SLOW_CODE):
            item.add_marker(pytest.mark.slow)
