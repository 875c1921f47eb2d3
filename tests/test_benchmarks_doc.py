"""BENCHMARKS.md and README.md name only scripts that exist, and every generated section of
BENCHMARKS.md is closed and names the script that writes it (benchmarks/sections.py)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("BENCHMARKS.md", "README.md")


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


def test_the_section_writer_replaces_only_its_own_section(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from sections import write_section
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nhand-written text\n")
    write_section("one", "benchmarks/conclusions.py", "First", "body 1", doc)
    write_section("two", "benchmarks/conclusions.py", "Second", "body 2", doc)
    write_section("one", "benchmarks/conclusions.py", "First", "body 1, again", doc)
    text = doc.read_text()
    assert text.startswith("# B\n\nhand-written text\n") and text.count("<!-- begin one:") == 1
    assert "body 1, again" in text and "body 1\n" not in text and "body 2" in text
    assert text.index("<!-- begin one:") < text.index("<!-- begin two:")
