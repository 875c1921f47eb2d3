"""Gather the *train* splits of English UD treebanks for `build-corpus --running-text`.

Usage: python scripts/ud_running_text.py OUT REPO [REPO ...]

Each REPO is a clone of a UD repository (a work tree, or a bare git directory). The train file is
taken as released; where a snapshot lacks it, it is rebuilt from ``not-to-release/sources`` in the
order of ``not-to-release/file-lists/files.train`` (EWT and GUM ship both). Writes OUT/<file>,
OUT/LICENSE-<name>.txt and OUT/manifest.json (path, licence, licence file, origin = repo@commit).
Dev and test files are never copied.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

LICENCES = (("Attribution-NonCommercial-ShareAlike 4.0", "CC BY-NC-SA 4.0"),
            ("Attribution-ShareAlike 4.0", "CC BY-SA 4.0"), ("Attribution 4.0", "CC BY 4.0"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def show(repo: Path, path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 and done.stdout else None


def gather(out: Path, repo: Path) -> dict:
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    train = next(f for f in files if re.fullmatch(r"[a-z]+_[a-z0-9]+-ud-train\.conllu", f))
    text = show(repo, train)
    if text is None:  # rebuild from the released sources in the file-list's order
        sources = [f for f in files if f.startswith("not-to-release/sources/")]
        parts = []
        for name in show(repo, "not-to-release/file-lists/files.train").split():
            match = next((f for f in sources if f.endswith("/" + name) or f.endswith("/" + name + ".conllu")), None)
            if match:
                parts.append(show(repo, match) or "")
        text = "".join(parts)
    (out / train).write_text(text, encoding="utf-8")
    licence_text = show(repo, "LICENSE.txt") or ""
    name = train.split("_", 1)[1].split("-")[0]
    (out / f"LICENSE-{name}.txt").write_text(licence_text, encoding="utf-8")
    licence = next((short for long, short in LICENCES if long in licence_text), "see licence file")
    url = subprocess.run(["git", "-C", str(repo), "config", "--get", "remote.origin.url"], capture_output=True, text=True)
    remote = url.stdout.strip() or next((p.name for p in (repo, *repo.parents) if p.name.startswith(("UD_", "Universal"))),
                                        repo.name)
    remote = remote.split("+", 1)[-1]
    return {"path": train, "licence": licence, "licence_file": f"LICENSE-{name}.txt",
            "origin": f"{remote.rstrip('/').split('/')[-1].removesuffix('.git')}@{git(repo, 'rev-parse', 'HEAD').strip()[:12]}"}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    manifest = [gather(out, Path(r)) for r in argv[1:]]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
