"""BENCHMARKS.md sections written by the scripts that measure them, never edited by hand.

A generated section sits between two markers that name its script::

    <!-- begin conclusions-directional: benchmarks/conclusions.py -->
    ...
    <!-- end conclusions-directional -->

``write_section`` replaces what is between them (or appends the section), with the command that
made it, the commit it ran on and the date. tests/test_benchmarks_doc.py checks that every script a
section or a command names exists.
"""
from __future__ import annotations

import datetime
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "BENCHMARKS.md"


def commit() -> str:
    """The short commit the numbers come from, with "+changes" when the tree had uncommitted edits other
    than to BENCHMARKS.md (read once, when the script starts: edits made while it runs do not change
    what it measured)."""
    return STARTED_AT


def _commit_now() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    # BENCHMARKS.md itself is not code: sections written earlier in a run do not make the tree dirty
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!BENCHMARKS.md")
    return head + ("+changes" if dirty else "")


STARTED_AT = _commit_now()


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    name = script.relative_to(ROOT).as_posix() if script.is_relative_to(ROOT) else sys.argv[0]
    return " ".join(["python", name, *sys.argv[1:]])


def machine() -> str:
    """The CPU the numbers come from (timings differ between machines of one class; ratios travel)."""
    import os
    import platform

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU") \
        if Path("/proc/cpuinfo").is_file() else platform.processor() or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores"


def section_text(name: str, script: str, title: str, body: str, command: str | None = None) -> str:
    stamp = (f"Written by `{command or command_line()}` on {datetime.date.today().isoformat()}, commit {commit()}, "
             f"on {machine()}.")
    return (f"<!-- begin {name}: {script} -->\n### {title}\n\n{stamp}\n\n{body.strip()}\n"
            f"<!-- end {name} -->")


def write_section(name: str, script: str, title: str, body: str, path: Path = BENCHMARKS,
                  command: str | None = None) -> None:
    """Put the section ``name`` (made by ``script``) into BENCHMARKS.md, replacing its old text."""
    text = path.read_text(encoding="utf-8")
    new = section_text(name, script, title, body, command)
    pattern = re.compile(rf"<!-- begin {re.escape(name)}: [^>]*-->.*?<!-- end {re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: new, text)
    else:
        text = text.rstrip() + "\n\n" + new + "\n"
    path.write_text(text, encoding="utf-8")


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


class _Tee:
    """Write to the terminal and keep a copy, so a section holds exactly what the script printed."""

    def __init__(self, stream) -> None:
        self.stream, self.parts = stream, []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str):  # isatty, fileno, encoding ...: the terminal's
        return getattr(self.stream, name)


def run_recorded(name: str, title: str, about: str, main, script: str | None = None, path: Path = BENCHMARKS) -> None:
    """Run a benchmark's ``main``; with ``--write`` on the command line its printed output becomes the
    section ``name`` of BENCHMARKS.md, under ``about`` (what is measured and how; no figures).

    ``--write`` is taken off ``sys.argv`` before ``main`` parses its own arguments, and the section's
    command line keeps it, so the stamp says how to regenerate the section."""
    write = "--write" in sys.argv[1:]
    command = command_line()
    if write:
        sys.argv.remove("--write")
    script = script or Path(sys.argv[0]).resolve().relative_to(ROOT).as_posix()
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        main()
    finally:
        sys.stdout = tee.stream
    if write:
        printed = "".join(tee.parts).strip("\n")
        body = f"{about.strip()}\n\n```text\n{printed}\n```" if printed else about.strip()
        write_section(name, script, title, body, path, command=command)
        print(f"wrote the section {name!r} of {path.name}")
