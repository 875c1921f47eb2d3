"""docs/ARCHITECTURE.md's rule as a checked fact: every import of the package (module-level or inside
a function, read with ``ast``) points down the documented order, units of one tier do not import
each other, and every module of the package is listed in ARCHITECTURE.md."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bertviz_lab"

# The order of docs/ARCHITECTURE.md, bottom first. A unit is a subpackage or a top-level module; a unit
# imports only itself and units of lower tiers.
TIERS = [
    {"naming", "resources", "inline", "conclusions"},
    {"bert"},
    {"lab"},
    {"engines"},  # where a corpus command's units run (local or Ray)
    {"attention", "export", "sentences", "treebank", "lens"},
    {"interventions", "syntax", "mlm", "neighbours"},
    {"sentiment"},  # reuses mlm/train.py's resumable legs
    {"figures"},
    {"reports"},
    {"tasks"},  # one UI-free module per user action, under the four doors
    {"notebook", "app", "cli"},
    {"launcher", "neuron_view", "__main__", "__init__"},
]
TIER = {unit: rank for rank, units in enumerate(TIERS) for unit in units}


def unit_of(module: str) -> str:
    """bertviz_lab.syntax.job -> syntax; bertviz_lab.lab -> lab; bertviz_lab -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def submodule(package: str, name: str, root: Path = ROOT) -> str:
    """``from <package> import name``: the module ``package.name`` if it is one, else ``package`` itself."""
    folder = root.joinpath(*package.split("."))
    return f"{package}.{name}" if (folder / f"{name}.py").is_file() or (folder / name).is_dir() else package


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    """(imported bertviz_lab module, line) for every import in the file, nested ones included."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [submodule(target, a.name, root) for a in node.names]  # a module imported by name counts as itself
            found += [(t, node.lineno) for t in targets if t.split(".")[0] == "bertviz_lab"]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "bertviz_lab"]
    return found


def modules(root: Path = ROOT) -> list[Path]:
    return sorted((root / "bertviz_lab").rglob("*.py"))


def test_every_unit_has_a_tier():
    units = {unit_of(module_name(p)) for p in modules()}
    assert units <= set(TIER), f"add {sorted(units - set(TIER))} to TIERS and to docs/ARCHITECTURE.md"


def violations(root: Path = ROOT) -> list[str]:
    found = []
    for path in modules(root):
        source = unit_of(module_name(path, root))
        for target, line in imports_of(path, root):
            into = unit_of(target)
            if into != source and TIER.get(into, -1) >= TIER.get(source, -1):
                found.append(f"{path.relative_to(root)}:{line}: {source} (tier {TIER.get(source)}) imports {target} "
                             f"(tier {TIER.get(into)})")
    return found


def test_no_import_points_up_or_sideways():
    assert violations() == []


# bert/ by concern, bottom first (docs/ARCHITECTURE.md): the request runtime, the encoder (positions/ is part of it),
# then the sources and the loading of checkpoints, which do not import each other.
BERT_TIERS = [{"runtime"}, {"encoder"}, {"sources", "loading"}]
BERT_TIER = {unit: rank for rank, units in enumerate(BERT_TIERS) for unit in units}
CONCERN = {"positions": "encoder"}  # bert/positions/: the encoder's position schemes, one file each


def test_bert_is_split_by_concern_and_its_imports_point_down():
    found = []
    for path in sorted((PACKAGE / "bert").rglob("*.py")):
        parts = module_name(path).split(".")
        if len(parts) < 3:
            continue  # bert/__init__.py: the package's door, above its parts
        concern = CONCERN.get(parts[2], parts[2])
        assert concern in BERT_TIER, f"{path.relative_to(ROOT)} is in no concern of bert/"
        for target, line in imports_of(path):
            into = target.split(".")
            if into[:2] != ["bertviz_lab", "bert"] or len(into) < 3:
                continue
            other = CONCERN.get(into[2], into[2])
            if other != concern and BERT_TIER.get(other, 99) >= BERT_TIER[concern]:
                found.append(f"{path.relative_to(ROOT)}:{line}: {concern} imports {target}")
    assert found == []


def test_the_checker_catches_a_nested_upward_import(tmp_path):
    """A lazy import inside a method (how the old Analysis.figure reached the notebook layer) is flagged,
    relative or absolute, and ``from .. import views`` names the module it imports (notebook.views), not
    the package it comes from."""
    package = tmp_path / "bertviz_lab"
    for folder in ("syntax", "notebook", "figures"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "notebook" / "views.py").write_text("")
    (package / "figures" / "base.py").write_text("")
    (package / "syntax" / "summary.py").write_text(
        "class S:\n    def figure(self):\n        from ..notebook.views import syntax_figure\n"
        "        import bertviz_lab.figures.base\n        from ..notebook import views\n")
    assert imports_of(package / "syntax" / "summary.py", tmp_path) == [
        ("bertviz_lab.notebook.views", 3), ("bertviz_lab.figures.base", 4), ("bertviz_lab.notebook.views", 5)]
    flagged = violations(tmp_path)
    assert [line.split(":")[1] for line in flagged] == ["3", "4", "5"], flagged
    assert all(line.startswith("bertviz_lab/syntax/summary.py:") for line in flagged)


def test_the_package_facade_is_the_top_tier():
    assert unit_of("bertviz_lab") == "__init__" and TIER["__init__"] == len(TIERS) - 1


def test_nothing_below_figures_imports_plotly_or_gradio():
    drawing = []
    for path in modules():
        if TIER[unit_of(module_name(path))] < TIER["figures"]:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                drawing += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                            if n.split(".")[0] in ("plotly", "gradio")]
    assert drawing == []


@pytest.mark.parametrize("path", modules() + sorted(PACKAGE.rglob("*.js")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_is_listed_in_the_architecture_doc(path):
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    if path.name == "__init__.py":
        return
    assert path.name in doc, f"docs/ARCHITECTURE.md does not list {path.relative_to(ROOT)}"


def test_one_word_one_meaning_on_the_command_line():
    """Scoring heads against a treebank is `score-heads`; what changes a forward pass is an
    intervention; a --source is a kind of attention weight. The old names are gone (issue 57)."""
    from bertviz_lab.cli import build_parser
    from bertviz_lab.cli.scoring_commands import run_score_heads

    parser = build_parser()
    assert parser.parse_args(["score-heads", "--out", "x"]).func is run_score_heads
    assert parser.parse_args(["compare", "the cat", "--intervention", "left-only"]).intervention == "left-only"
    help_text = parser.format_help()
    commands = parser._subparsers._group_actions[0].choices
    assert "score-heads" in help_text and "score-heads" in commands and "probe" not in commands
    # a --source flag names an attention source; a donor input and a faithfulness ranking say so
    assert parser.parse_args(["patch", "a [MASK]", "--donor", "b [MASK]"]).donor == "b [MASK]"
    assert parser.parse_args(["faithfulness", "--rankings", "alti"]).rankings == ["alti"]
    for old in (["probe", "--out", "x"], ["compare", "the cat", "--probe", "left-only"],
                ["patch", "a [MASK]", "--source", "b [MASK]"], ["faithfulness", "--sources", "alti"]):
        with pytest.raises(SystemExit):
            parser.parse_args(old)
    for command in ("analyze", "score-heads"):
        source = next(a for a in parser._subparsers._group_actions[0].choices[command]._actions if a.dest == "source")
        assert {"attention", "rollout", "flow"} <= set(source.choices)
    cli = ROOT / "bertviz_lab" / "cli"  # "probe" names only the structural probe's own things (its probes)
    names = {n.name for p in cli.glob("*.py") for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.FunctionDef)}
    assert {"run_score_heads", "add_score_heads", "run_score_heads_job"} <= names
    assert [n for n in names if "probe" in n] == []  # the probes are chosen in tasks/structural_probes.py


def test_no_function_over_80_lines():
    """Small functions with one job each (a template string counts: move it out if it grows)."""
    long = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for p in modules() for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80]
    assert long == []



def test_no_two_modules_share_a_name():
    """One name, one module: `views.py` in two folders read as one thing and were two (issue 42)."""
    seen: dict[str, list[str]] = {}
    for path in modules():
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_the_command_line_is_small_modules_and_few_functions_take_many_parameters():
    """Each cli/ module stays under 300 lines, and at most 15 functions take more than 6 parameters
    (four of them keep signatures others define: BertViz's head_view, model_view and neuron_view.show,
    and BertLab.forward's Hugging Face arguments). The page's event handlers are not counted: their parameters
    are the public API's, one per control in the event's order (pinned by test_app_api), and each only builds
    the typed forms the work behind it takes."""
    from bertviz_lab.app.events import EVENTS

    handlers = {event.handler.split(".")[1] for event in EVENTS}
    cli = sorted((PACKAGE / "cli").glob("*.py"))
    assert cli and [p.name for p in cli if len(p.read_text(encoding="utf-8").splitlines()) > 300] == []
    many = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name}" for p in modules()
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not (p.name.endswith("_controller.py") and n.name in handlers)
            and len([a for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs if a.arg not in ("self", "cls")])
            + bool(n.args.vararg) + bool(n.args.kwarg) > 6]
    assert len(many) <= 15, many


def test_hook_names_come_from_the_hook_table():
    """No module types a hook point's name: they read bert/encoder/hook_table.py (the model names the points). The
    rows themselves are the encoder's (hook_table.py, hook_spot.py) and each position scheme's own, declared in its
    ``hooks`` (bert/positions/): a scheme file types a name only there."""
    import re

    typed = re.compile(r"""["'](?:\*|bert\.)[\w.*{}]*hook_\w+["']""")
    rows = re.compile(r"HookSpot\(\s*f?" + typed.pattern)
    found = [f"{p.relative_to(ROOT)}: {m}" for p in modules() if p.name not in ("hook_table.py", "model.py")
             for m in typed.findall(rows.sub("", p.read_text(encoding="utf-8")))]
    assert found == []
    from bertviz_lab.bert.encoder.hook_table import FAMILY_HOOKS
    from bertviz_lab.bert.positions import SCHEMES

    owned = {spot for scheme in SCHEMES.values() for spot in scheme.hooks}
    assert owned == set(FAMILY_HOOKS) - {"final_norm"}  # every scheme's point is named by its scheme, and only there
