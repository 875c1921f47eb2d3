"""One builder process for test_mpnet_extra's two-process test (holds no tests; run as a script).

``python tests/test_mpnet_cache_worker.py SITE CACHE SPEC_JSON`` installs nothing: it puts SITE (the fake
parts) on sys.path, waits for ``start`` on stdin, then calls ``mpnet_folder(CACHE, spec)``. On stdout it
says ``locking`` just before it takes the build lock and ``extracting`` when it starts extracting, and
then waits for ``go`` on stdin, so the test can hold one builder inside the lock until the other one has
come to it; at the end it says ``done <number of extractions> <folder>``."""
from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_mpnet_parts() -> types.ModuleType:
    """mpnet_parts alone, without bertviz_lab's ``__init__`` (which imports torch: seconds per process)."""
    for name in ("bertviz_lab", "bertviz_lab.bert"):
        package = types.ModuleType(name)
        package.__path__ = [str(ROOT / name.replace(".", "/"))]
        sys.modules[name] = package
    from bertviz_lab.bert.loading import mpnet_parts

    return mpnet_parts


def say(word: str) -> None:
    print(word, flush=True)


def wait_for(word: str) -> None:
    line = sys.stdin.readline().strip()
    if line != word:
        raise SystemExit(f"expected {word!r} on stdin, got {line!r}")


def main() -> None:
    site, cache, fields = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    sys.path.insert(0, site)
    parts = import_mpnet_parts()
    spec = parts.PartsSpec(**{key: tuple(tuple(v) if isinstance(v, list) else v for v in value)
                              if isinstance(value, list) else value for key, value in fields.items()})
    real_lock, real_extract, extracted = parts.build_lock, parts.extract, []

    @contextmanager
    def announced_lock(root: Path, spec: object) -> Iterator[bool]:
        say("locking")
        with real_lock(root, spec) as exclusive:
            yield exclusive

    def held_extract(archive, into, spec):
        extracted.append(into)
        say("extracting")
        wait_for("go")
        return real_extract(archive, into, spec)

    parts.build_lock, parts.extract = announced_lock, held_extract
    wait_for("start")
    folder = parts.mpnet_folder(cache, spec)
    say(f"done {len(extracted)} {folder}")


if __name__ == "__main__":
    main()
