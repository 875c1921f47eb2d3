"""One word, one meaning (issue 42), checked over the package and the tests:

- *probe* is only the structural probe (Hewitt & Manning 2019). What changes a forward pass is an
  *intervention*; checking heads against a treebank is *scoring*. Every identifier (functions,
  classes, variables, attributes, arguments, imports, read with ``ast``), every string given as an
  ``elem_id`` or ``api_name`` (and the app's event table's api names), every ``#id`` selector in a
  string or in the static JS and CSS, and every file name may say ``probe`` only in a structural-probe
  context: a name of the structural probe's own API (``STRUCTURAL_NAMES``), or a module, class or
  function that is about it (its name says *structur*, or it uses that API).
- In the app, *source* is only an attention source: a checkpoint, a donor, a sentence set or a
  treebank is never called one in a component's name, element id or label.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE, TESTS, APP = ROOT / "bertviz_lab", ROOT / "tests", ROOT / "bertviz_lab" / "app"

# The structural probe's own API: allowed anywhere. Everything else saying "probe" must sit in a
# structural scope (see ``structural``).
STRUCTURAL_NAMES = re.compile(
    r"structural_probe|StructuralProbe|(distance|depth)_probe|(Distance|Depth|Trained)Probe|ProbeData"
    r"|(load|save|shipped|train)_probes|shipped_probes_file|SHIPPED_PROBES|probe_(loss|table|uuas_rows|scores)")
STRUCTURAL_SCOPE = re.compile(r"structur", re.IGNORECASE)
PROBE = re.compile(r"probe", re.IGNORECASE)
ID_SELECTOR = re.compile(r"#[A-Za-z][\w-]*")


def mentions_probe(name: str) -> bool:
    return bool(PROBE.search(name)) and not STRUCTURAL_NAMES.search(name)


def names_in(node: ast.AST) -> Iterator[tuple[str, int, str]]:
    """(identifier, line, what it names) of one node, if it names anything."""
    line = getattr(node, "lineno", 0)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, line, "definition"
    elif isinstance(node, ast.arg):
        yield node.arg, line, "argument"
    elif isinstance(node, ast.Name):
        yield node.id, line, "name"
    elif isinstance(node, ast.Attribute):
        yield node.attr, line, "attribute"
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg, line, "keyword"
    elif isinstance(node, ast.alias):
        yield node.asname or node.name.split(".")[-1], line, "import"
    elif isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg in ("elem_id", "api_name") and isinstance(keyword.value, ast.Constant) \
                    and isinstance(keyword.value.value, str):
                yield keyword.value.value, line, keyword.arg
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        for selector in ID_SELECTOR.findall(node.value):
            yield selector, line, "#id selector"


def structural(scope: ast.AST) -> bool:
    """A function or class about the structural probe: its name says so, or it uses the probe's API."""
    if STRUCTURAL_SCOPE.search(getattr(scope, "name", "")):
        return True
    return any(STRUCTURAL_NAMES.search(name) for node in ast.walk(scope) for name, _, _ in names_in(node))


def probe_offenders(source: str, where: str) -> list[str]:
    """"where:line identifier (what)" for each ``probe`` outside a structural-probe context."""
    if STRUCTURAL_SCOPE.search(Path(where).stem):
        return []
    found = []

    def visit(node: ast.AST, allowed: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            allowed = allowed or structural(node)
            if mentions_probe(node.name) and not allowed:
                found.append(f"{where}:{node.lineno} {node.name} (definition)")
        else:
            found.extend(f"{where}:{line} {name} ({what})" for name, line, what in names_in(node)
                         if mentions_probe(name) and not allowed)
        for child in ast.iter_child_nodes(node):
            visit(child, allowed)

    visit(ast.parse(source), False)
    return found


def python_files() -> list[Path]:
    """Every Python file of the package and the tests but this one (which quotes the word it checks)."""
    return sorted(p for p in [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")] if p != Path(__file__).resolve())


def test_probe_means_only_the_structural_probe_in_every_identifier_and_id():
    offenders = [line for path in python_files()
                 for line in probe_offenders(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert offenders == [], ("'probe' names something other than the structural probe (an intervention is an "
                             "intervention, checking heads is scoring):\n" + "\n".join(offenders))


def test_no_file_or_module_says_probe_unless_it_is_the_structural_probe():
    files = [p for p in [*PACKAGE.rglob("*"), *TESTS.rglob("*")] if "__pycache__" not in p.parts]
    offenders = [str(p.relative_to(ROOT)) for p in files if mentions_probe(p.name) and not STRUCTURAL_SCOPE.search(p.name)]
    assert offenders == []


def test_the_pages_scripts_and_styles_select_no_probe_ids():
    offenders = [f"{p.relative_to(ROOT)}: {selector}" for p in sorted([*APP.rglob("*.js"), *APP.rglob("*.css")])
                 for selector in ID_SELECTOR.findall(p.read_text(encoding="utf-8")) if mentions_probe(selector)]
    assert offenders == []


def test_every_api_name_of_the_app_says_what_it_does():
    from bertviz_lab.app.events import EVENTS

    assert [e.api_name for e in EVENTS if mentions_probe(e.api_name)] == []
    assert "structural_probe" in {e.api_name for e in EVENTS}  # the structural probe keeps its name


def test_the_checker_flags_intervention_probes_and_keeps_the_structural_probe():
    """It can fail: an intervention called a probe is reported with its line, in every kind of name."""
    source = '''
from .x import run_probe
ui.probe_btn = gr.Button("Run", elem_id="probe-btn")
def run_probe_set(kind, probe_heads):
    return page.click("#probe-plot"), api(api_name="probe")
class Probes:
    pass
def add_structural_probe(args):
    probes = load_probes(args.probes)
def probes_of(args):
    return shipped_probes(args.lab) or args.probes
trained = TrainedProbe(DistanceProbe(), probe_loss)
'''
    found = probe_offenders(source, "bertviz_lab/app/x.py")
    assert found == ["bertviz_lab/app/x.py:2 run_probe (import)", "bertviz_lab/app/x.py:3 probe_btn (attribute)",
                     "bertviz_lab/app/x.py:3 probe-btn (elem_id)", "bertviz_lab/app/x.py:4 run_probe_set (definition)",
                     "bertviz_lab/app/x.py:4 probe_heads (argument)", "bertviz_lab/app/x.py:5 #probe-plot (#id selector)",
                     "bertviz_lab/app/x.py:5 probe (api_name)", "bertviz_lab/app/x.py:6 Probes (definition)"]
    assert probe_offenders(source, "bertviz_lab/syntax/structure.py") == []  # the module is about the probe


# ---- "source" in the app: only an attention source -------------------------------------------------------
# ui components choosing an attention source, or saying what the chosen one is
ATTENTION_SOURCE_NAMES = {"source", "syntax_score_source", "source_about"}
ATTENTION_SOURCE_IDS = {"source", "syntax-score-source", "source-about"}


def app_texts() -> Iterator[tuple[str, str, str]]:
    """(where, kind, text) of every ui component name, element id, label, info line, placeholder and
    button text the app's Python files set."""
    for path in sorted(APP.glob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "ui":
                        yield f"{where}:{node.lineno}", "component", target.attr
            if not isinstance(node, ast.Call):
                continue
            texts = [(k.arg, k.value) for k in node.keywords if k.arg in ("elem_id", "label", "info", "placeholder")]
            if isinstance(node.func, ast.Attribute) and node.func.attr == "Button" and node.args:
                texts.append(("button", node.args[0]))
            for kind, value in texts:
                parts = value.values if isinstance(value, ast.JoinedStr) else [value]
                text = "".join(p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str))
                if text:
                    yield f"{where}:{node.lineno}", kind, text


def source_offenders(texts) -> list[str]:
    found = []
    for where, kind, text in texts:
        if "source" not in text.lower():
            continue
        if kind == "component" and text in ATTENTION_SOURCE_NAMES or kind == "elem_id" and text in ATTENTION_SOURCE_IDS:
            continue
        if kind in ("label", "info", "placeholder", "button") and "attention source" in text.lower():
            continue
        found.append(f"{where} {kind} {text!r}")
    return found


def test_source_in_the_app_is_only_an_attention_source():
    offenders = source_offenders(app_texts())
    assert offenders == [], ("the app calls something other than an attention source a source (a checkpoint, "
                             "donor, sentence set or treebank has its own word):\n" + "\n".join(offenders))


def test_the_pickers_of_checkpoint_donor_sentence_set_and_treebank_are_named_for_what_they_pick():
    texts = {(kind, text) for _, kind, text in app_texts()}
    for component in ("model_box", "patch_donor", "sentence_set", "syntax_treebank"):
        assert ("component", component) in texts
    for label in ("Donor sentence (same number of tokens, [MASK] in place)", "Sentence set", "Treebank"):
        assert ("label", label) in texts


def test_the_source_check_can_fail():
    texts = [("app/tabs.py:1", "component", "patch_source"), ("app/tabs.py:2", "label", "Source sentence"),
             ("app/tabs.py:3", "elem_id", "set-source"), ("app/tabs.py:4", "component", "source"),
             ("app/tabs.py:5", "label", "Score heads on (attention source)")]
    assert source_offenders(texts) == ["app/tabs.py:1 component 'patch_source'", "app/tabs.py:2 label 'Source sentence'",
                                       "app/tabs.py:3 elem_id 'set-source'"]
