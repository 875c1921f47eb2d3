"""Gather the Brown Corpus from an nltk_data snapshot for `build-corpus --running-text`.

Usage: python scripts/nltk_brown.py OUT NLTK_DATA

NLTK_DATA is a clone of https://github.com/nltk/nltk_data (a work tree, or a bare git directory).
Unzips ``packages/corpora/brown.zip`` into OUT/brown, writes OUT/LICENSE-brown.txt (the licence
nltk_data's index states, and the corpus's README) and OUT/manifest.json (path, format, licence,
licence file, origin = nltk_data@commit). Reading the files needs ``pip install nltk``.
"""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path


def show(repo: Path, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout


def gather(out: Path, repo: Path) -> dict:
    index = show(repo, "packages/corpora/brown.xml").decode()
    stated = re.search(r'license="([^"]*)"', index)
    if stated is None:
        raise SystemExit(f"{repo}: packages/corpora/brown.xml states no licence; not gathering the Brown Corpus")
    licence = stated.group(1)
    with zipfile.ZipFile(io.BytesIO(show(repo, "packages/corpora/brown.zip"))) as archive:
        archive.extractall(out)
    readme = (out / "brown" / "README").read_text(encoding="ascii", errors="replace")
    (out / "LICENSE-brown.txt").write_text(
        f"Brown Corpus (W. N. Francis and H. Kucera, Brown University, 1964; revised 1971 and 1979),\n"
        f"as distributed by nltk_data (packages/corpora/brown.zip). Licence stated by nltk_data's index:\n"
        f"{licence}\n\nThe corpus's README:\n\n{readme}", encoding="utf-8")
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return {"path": "brown", "format": "brown", "licence": f"{licence.rstrip('.')} (Brown Corpus, per nltk_data)",
            "licence_file": "LICENSE-brown.txt", "origin": f"nltk_data@{commit[:12]}"}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    manifest = [gather(out, Path(argv[1]))]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
