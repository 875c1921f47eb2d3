"""BENCHMARKS.md and README.md name only scripts that exist, and every generated section of
BENCHMARKS.md is closed and names the script that writes it (benchmarks/sections.py)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("BENCHMARKS.md", "README.md", "docs/HISTORY.md")


@pytest.mark.parametrize("doc", DOCS)
def test_every_script_a_document_names_exists(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = set(re.findall(r"\b((?:benchmarks|scripts)/[\w./-]+\.py)\b", text))
    assert named, f"{doc} names no script"
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []


def test_generated_sections_are_closed_and_name_their_script():
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    begins = re.findall(r"<!-- begin ([\w-]+): ([\w./-]+) -->", text)
    ends = re.findall(r"<!-- end ([\w-]+) -->", text)
    assert [name for name, _ in begins] == ends
    for name, script in begins:
        assert (ROOT / script).is_file(), f"section {name} names {script}, which does not exist"
        body = text.split(f"<!-- begin {name}: {script} -->", 1)[1].split(f"<!-- end {name} -->", 1)[0]
        assert re.search(r"Written by `python \S+\.py[^`]*` on \d{4}-\d{2}-\d{2}, commit [0-9a-f]{7,}", body), name


def sections_module():
    """benchmarks/sections.py, imported as the scripts import it (their folder on the path)."""
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("sections")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_section_writer_replaces_only_its_own_section(tmp_path):
    write_section = sections_module().write_section
    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nhand-written text\n")
    write_section("one", "benchmarks/conclusions.py", "First", "body 1", doc)
    write_section("two", "benchmarks/conclusions.py", "Second", "body 2", doc)
    write_section("one", "benchmarks/conclusions.py", "First", "body 1, again", doc)
    text = doc.read_text()
    assert text.startswith("# B\n\nhand-written text\n") and text.count("<!-- begin one:") == 1
    assert "body 1, again" in text and "body 1\n" not in text and "body 2" in text
    assert text.index("<!-- begin one:") < text.index("<!-- begin two:")


def test_benchmarks_holds_only_generated_sections_after_its_header():
    """Nothing in BENCHMARKS.md is hand-written but the header: every line after it sits inside a
    section a script wrote (hand-kept records live in docs/HISTORY.md)."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    first = text.index("<!-- begin ")
    outside = re.sub(r"<!-- begin ([\w-]+): [^>]*-->.*?<!-- end \1 -->", "", text[first:], flags=re.S)
    assert outside.strip() == ""
    names = re.findall(r"<!-- begin ([\w-]+):", text)
    assert len(names) == len(set(names)) >= 10


def test_every_benchmark_script_writes_a_section():
    """Each measuring script in benchmarks/ can write its own section (``--write``)."""
    helpers = {"common.py", "sections.py"}
    scripts = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name not in helpers)
    missing = [p.name for p in scripts if "run_recorded(" not in p.read_text() and "write_section(" not in p.read_text()]
    assert missing == []


@pytest.mark.parametrize("write", [True, False])
def test_a_recorded_run_writes_what_it_printed_only_when_asked(tmp_path, monkeypatch, capsys, write):
    import sys

    run_recorded = sections_module().run_recorded
    doc = tmp_path / "B.md"
    doc.write_text("# B\n")
    seen = []
    argv = [str(ROOT / "benchmarks" / "bench_forward.py"), "--sizes", "3"] + (["--write"] if write else [])
    monkeypatch.setattr(sys, "argv", argv)
    run_recorded("demo", "Demo", "What it measures.", lambda: (seen.append(list(sys.argv[1:])), print("ratio 1.5x")),
                 path=doc)
    assert seen == [["--sizes", "3"]]  # the script never sees --write
    assert "ratio 1.5x" in capsys.readouterr().out
    text = doc.read_text()
    if write:
        assert "<!-- begin demo: benchmarks/bench_forward.py -->" in text and "```text\nratio 1.5x\n```" in text
        assert "Written by `python benchmarks/bench_forward.py --sizes 3 --write` on" in text
    else:
        assert text == "# B\n"
