"""Issue 42's figures of the code's shape, on this tree and on an earlier commit in one run.

Counted from the source with ``ast`` (no import, no model): functions over 80 lines, functions with
more than 6 parameters (``self``/``cls`` not counted; ``*args`` and ``**kwargs`` count one each),
module file names used twice in the package, the command line's largest module, hook names typed
by hand outside the hook table, and ``noqa`` comments in the tests. With ``--time-fast-tier`` it
also times ``pytest -m "not slow" -n 2 --dist loadfile`` on this tree (the inner loop; the earlier
commit's tests are not run). The "before" side is read with ``git archive``, so nothing in the
working tree changes.

    python benchmarks/code_shape.py --before 6e2f171 [--time-fast-tier] [--write]
    python benchmarks/code_shape.py --issue 57 --before ee4e6c6 [--write]   (issue 57's figures)
"""
from __future__ import annotations

import argparse
import ast
import collections
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sections import ROOT, markdown_table, write_section  # noqa: E402

HAND_TYPED_HOOK = re.compile(r"""["'](?:\*|bert\.)[\w.*{}]*hook_\w+["']""")


def functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def parameter_count(node: ast.FunctionDef) -> int:
    a = node.args
    named = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
    return len(named) + bool(a.vararg) + bool(a.kwarg)


def shape(root: Path) -> dict[str, object]:
    """The figures of one checkout (``root`` holds ``bertviz_lab/`` and ``tests/``)."""
    package = root / "bertviz_lab"
    long_functions = many_parameters = hand_typed = 0
    names = collections.Counter()
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        names[path.name] += path.name != "__init__.py"
        for node in functions(ast.parse(text)):
            long_functions += node.end_lineno - node.lineno + 1 > 80
            many_parameters += parameter_count(node) > 6
        if path.name not in ("hook_table.py", "model.py"):
            hand_typed += len(HAND_TYPED_HOOK.findall(text))
    cli = [package / "cli.py"] if (package / "cli.py").is_file() else sorted((package / "cli").glob("*.py"))
    noqa = sum(p.read_text(encoding="utf-8").count("noqa") for p in (root / "tests").glob("*.py"))
    return {"functions over 80 lines": long_functions, "functions over 6 parameters": many_parameters,
            "module names used twice or more": sum(1 for n in names.values() if n > 1),
            "command-line modules": len(cli),
            "largest command-line module (lines)": max(len(p.read_text().splitlines()) for p in cli),
            "hook names typed by hand (outside the hook table)": hand_typed,
            "noqa comments in tests": noqa}


ARCHITECTURE_FLAG = re.compile(r"\.(rotary|disentangled|rotary_spec|disentangled_spec|position_biased_input|"
                               r"relative_attention_num_buckets)\b|[\"']rot\(q\)[\"']|position_embeddings is (not )?None|"
                               r"\.relative_attention_bias\b|\.rel_embeddings\b")
LOADER = ("families.py", "config_checks.py", "checkpoints.py", "twin_checkpoints.py")  # reading a config is their job
LOADER_FOLDERS = ("families",)  # bert/loading/families/: one file per family, the same job


def scheme_files(package: Path, scheme: str) -> list[str]:
    """Package files that name a position scheme (by its name in quotes or its module), the loader's aside."""
    word = re.compile(rf"positions[./]{scheme}\b|\b{scheme}\.py\b|^from \. import .*\b{scheme}\b|"
                      rf"positions=\[[\"']{scheme}[\"']|\bname = [\"']{scheme}[\"']", re.M)
    return sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                  if p.name not in LOADER and word.search(p.read_text(encoding="utf-8")))


DOORS = ("app", "cli", "notebook")
RULE_CALL = re.compile(r"\b(?:published_checkpoint|default_checkpoint)\(")  # the default-checkpoint rule applied
SOURCE_CHECK = re.compile(r"^\s*get_source\(", re.M)  # called only to refuse a name (its result unused)


def door_counts(package: Path) -> dict[str, int]:
    """What the four doors do themselves that the task layer should do once: apply the default-checkpoint rule,
    run a syntax computation (score heads, structure), check a source's name."""
    rule = wiring = checks = 0
    for path in sorted(package.rglob("*.py")):
        part = path.relative_to(package).parts[0]
        text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith(("def ", "from ", "import ", "#")))
        if part in DOORS:
            rule += len(RULE_CALL.findall(text))
            wiring += len(re.findall(r"\brun_syntax\(|\brun_structure\(|= run\(lab, treebanks", text))
            checks += len(SOURCE_CHECK.findall(text))
    return {"places in the doors applying the default-checkpoint rule": rule,
            "places in the doors running score-heads or structure themselves": wiring,
            "places in the doors checking a source's name": checks}


def shape_57(root: Path) -> dict[str, object]:
    """Issue 57's figures of one checkout."""
    package = root / "bertviz_lab"
    flag_reads, flag_files, kwargs = 0, set(), 0
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        parts = path.relative_to(package).parts
        if "positions" not in parts and path.name not in LOADER and not set(parts) & set(LOADER_FOLDERS):
            found = sum(len(ARCHITECTURE_FLAG.findall(line)) for line in text.splitlines()
                        if not line.lstrip().startswith(("from ", "import ")))
            flag_reads += found
            if found:
                flag_files.add(str(path.relative_to(package)))
        kwargs += sum(1 for node in functions(ast.parse(text)) if node.args.kwarg is not None)
    model = next(p for p in (package / "bert" / "encoder" / "model.py", package / "bert" / "model.py") if p.is_file())
    app = sorted((package / "app").glob("*.py"), key=lambda p: len(p.read_text().splitlines()))[-1]
    app_trees = [ast.parse(p.read_text(encoding="utf-8")) for p in sorted((package / "app").glob("*.py"))]
    mixed = sum(1 for tree in app_trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and len(node.bases) > 1)
    stubs = sum(1 for tree in app_trees for node in ast.walk(tree) if isinstance(node, ast.Raise)
                and "NotImplementedError" in ast.unparse(node))
    reflective = sum(1 for p in sorted((package / "app").glob("*.py"))
                     for line in p.read_text(encoding="utf-8").splitlines()
                     if re.search(r"inspect\.Parameter\(|get_type_hints\(", line) and not line.lstrip().startswith("#"))
    return {"lines of model.py (bert/, now bert/encoder/)": len(model.read_text().splitlines()),
            "places reading architecture flags (outside positions/ and the loader)": flag_reads,
            "files reading them": len(flag_files),
            "functions taking **kwargs": kwargs,
            "largest app module (lines)": f"{len(app.read_text().splitlines())} ({app.name})",
            "app classes mixing in others (more than one base)": mixed,
            "app stubs raising NotImplementedError": stubs,
            "app lines rebuilding a handler's signature (inspect.Parameter, get_type_hints)": reflective,
            "package files naming the ALiBi scheme": len(scheme_files(package, "alibi")) or "-",
            "package files naming the no-positions scheme": len(scheme_files(package, "none")) or "-",
            **door_counts(package)}


def checkout(commit: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", commit, "bertviz_lab", "tests"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def fast_tier_seconds() -> tuple[float, str]:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-n", "2", "--dist", "loadfile"],
                         cwd=ROOT, capture_output=True, text=True)
    summary = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
    return time.perf_counter() - started, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="6e2f171", help="the commit to set beside this tree")
    parser.add_argument("--time-fast-tier", action="store_true")
    parser.add_argument("--write", action="store_true", help="write the section code-shape of BENCHMARKS.md")
    parser.add_argument("--issue", choices=("42", "57"), default="42", help="which issue's figures")
    args = parser.parse_args()
    if args.issue == "57":
        return main_57(args)
    with tempfile.TemporaryDirectory() as tmp:
        before = shape(checkout(args.before, Path(tmp)))
    after = shape(ROOT)
    targets = {"functions over 80 lines": "0", "functions over 6 parameters": "<= 15",
               "module names used twice or more": "0", "largest command-line module (lines)": "<= 300"}
    rows = [[name, before[name], after[name], targets.get(name, "")] for name in after]
    body = markdown_table(["figure", f"before ({args.before})", "this tree", "issue 42's target"], rows)
    if args.time_fast_tier:
        seconds, summary = fast_tier_seconds()
        body += (f"\n\nFast tier on this tree (`python -m pytest -q -m \"not slow\" -n 2 --dist loadfile`): "
                 f"{seconds:.0f} s wall ({summary}); target <= 60 s.")
    print(body)
    if args.write:
        write_section("code-shape", "benchmarks/code_shape.py", "The code's shape (issue 42): before and after", body)


def source_switch_passes() -> str:
    """Forward passes when the page switches source, counted on a small random model: the page's path now
    (``in_source``) against the two calls it made before (``with_source`` then ``layer_matrices``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import builders

    from bertviz_lab import load
    from bertviz_lab.attention.sources import in_source, layer_matrices, with_source

    with tempfile.TemporaryDirectory() as tmp:
        folder = builders.save_checkpoint(builders.random_pretraining_model(seed=0), Path(tmp) / "ckpt")
        lab = load(str(folder), device="cpu")
        analysis = lab.analyze("the cat sat on the mat")
        passes = []
        run = lab.run
        lab.run = lambda *a, **k: passes.append(1) or run(*a, **k)
        in_source(lab, analysis, "alti")
        now = len(passes)
        with_source(lab, analysis, "alti"), layer_matrices(lab, analysis, "alti")
        before = len(passes) - now
    return f"Forward passes when the page switches source (ALTI): {now} now (in_source), {before} before."


PARSES = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import bertviz_lab.treebank as treebank
real, calls = treebank.read_conllu, []
treebank.read_conllu = lambda *a, **k: calls.append(str(a[0])) or real(*a, **k)
from bertviz_lab.cli import main
folder, models = Path(sys.argv[2]), sys.argv[3:]
argv = ["score-heads", "--conllu", str(folder / "ud"), "--out", str(folder / "out"), "--device", "cpu", "--resamples",
        "20", "--no-null-model", "--no-ensembles", "--json"]
for model in models:
    argv += ["--model", model]
code = main(argv)
print(len(calls), code)
"""


def treebank_parses(root: Path) -> str:
    """How often a score-heads job of 2 checkpoints x 2 treebanks parses a treebank, on the checkout at ``root``
    (its own code, in a subprocess; small random checkpoints, the sample treebank split in two)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import builders

    if not (root / "assets").exists():
        (root / "assets").symlink_to(ROOT / "assets")  # an archived checkout: the shipped files, read only
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = [str(builders.save_checkpoint(builders.random_pretraining_model(seed=s), tmp / f"m{s}"))
                  for s in (0, 1)]
        blocks = [b for b in (ROOT / "assets" / "sample_treebank.conllu").read_text().split("\n\n") if b.strip()]
        (tmp / "ud").mkdir()
        (tmp / "ud" / "en_a-ud-dev.conllu").write_text("\n\n".join(blocks[:33]) + "\n\n")
        (tmp / "ud" / "en_b-ud-dev.conllu").write_text("\n\n".join(blocks[33:]) + "\n\n")
        run = subprocess.run([sys.executable, "-c", PARSES, str(root), str(tmp), *models], capture_output=True,
                             text=True, cwd=root)
        lines = run.stdout.strip().splitlines()
        assert lines and lines[-1].endswith(" 0"), run.stderr[-3000:]
        parses = lines[-1].split()[0]
        return parses


def main_57(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        before = shape_57(checkout(args.before, Path(tmp)))
        before["treebank parses, score-heads job of 2 checkpoints x 2 treebanks"] = treebank_parses(Path(tmp))
    after = shape_57(ROOT)
    after["treebank parses, score-heads job of 2 checkpoints x 2 treebanks"] = treebank_parses(ROOT)
    targets = {"lines of model.py (bert/, now bert/encoder/)": "~350", "largest app module (lines)": "<= 300",
               "package files naming the no-positions scheme": "1 (+ its test)",
               "treebank parses, score-heads job of 2 checkpoints x 2 treebanks": "2",
               "places in the doors applying the default-checkpoint rule": "0",
               "places in the doors running score-heads or structure themselves": "0",
               "places in the doors checking a source's name": "0",
               "app classes mixing in others (more than one base)": "0", "app stubs raising NotImplementedError": "0",
               "app lines rebuilding a handler's signature (inspect.Parameter, get_type_hints)": "0"}
    rows = [[name, before[name], after[name], targets.get(name, "")] for name in after]
    body = markdown_table(["figure", f"before ({args.before})", "this tree", "issue 57's target"], rows)
    body += ("\n\nWhere the no-positions scheme is named now: " + ", ".join(scheme_files(ROOT / "bertviz_lab", "none"))
             + "; the ALiBi scheme: " + ", ".join(scheme_files(ROOT / "bertviz_lab", "alibi")) + ".")
    body += "\n\n" + source_switch_passes()
    print(body)
    if args.write:
        write_section("code-shape-57", "benchmarks/code_shape.py",
                      "The encoder made of parts (issue 57): before and after", body)


if __name__ == "__main__":
    main()
