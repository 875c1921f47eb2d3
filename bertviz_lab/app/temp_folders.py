"""The app's temporary folders: exports people download and analysis codes the page fetches, each with a byte
budget and an age, marked with the server that made them so a restart removes what a dead server left behind."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

MARKER = ".bertviz-lab-server"  # in every temp folder this app makes: the pid and start time of its server


def process_started(pid: int) -> str:
    """The start time of a live process (so a reused pid is not taken for the server), or '' if none runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return ""
    except PermissionError:
        pass  # alive, another user's
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "alive"


def remove_stale_folders(parent: Path | None = None) -> list[Path]:
    """Delete temp folders of this app whose server is gone (killed with -9, or crashed): only folders
    holding our marker, whose process no longer runs. Returns what was removed."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    for folder in parent.glob("bertviz-lab-*"):
        try:
            pid, started = (folder / MARKER).read_text().split()[:2]
            if process_started(int(pid)) not in (started, "alive"):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except (OSError, ValueError):
            continue  # not ours, or not readable: leave it
    return removed


def marked_folder(prefix: str) -> Path:
    """A fresh temp folder holding this server's marker (``remove_stale_folders`` reads it), removed
    when the process exits normally."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    (root / MARKER).write_text(f"{os.getpid()} {process_started(os.getpid())}\n")
    atexit.register(shutil.rmtree, root, True)
    return root


def gradio_cache_folder() -> Path:
    """Gradio's cache (uploads, its copies of files) in a marked folder of this server, unless the
    operator chose one with GRADIO_TEMP_DIR: a server killed with -9 leaves it to the next to remove."""
    if not os.environ.get("GRADIO_TEMP_DIR"):
        os.environ["GRADIO_TEMP_DIR"] = str(marked_folder("bertviz-lab-gradio-"))
    return Path(os.environ["GRADIO_TEMP_DIR"])


class TempFolder:
    """A temp folder per server whose entries (files or subfolders) are deleted after ``max_age``
    seconds, beyond the newest ``max_entries``, beyond ``per_owner`` entries of one session, and
    oldest first while all of them hold more than ``max_bytes``, so no visitor can fill the disk.
    A marker names the server's process, so a later server removes the folder if this one dies."""

    def __init__(self, prefix: str, max_age: float, max_entries: int = 1000, max_bytes: int | None = None,
                 per_owner: int | None = None) -> None:
        self.root = marked_folder(prefix)
        self.max_age, self.max_entries, self.max_bytes, self.per_owner = max_age, max_entries, max_bytes, per_owner
        self._owners: dict[str, str] = {}  # entry name -> the session that made it
        self._lock = threading.Lock()

    def entries(self) -> list[Path]:
        """Newest first."""
        found = []
        for entry in self.root.iterdir():
            if entry.name != MARKER:
                try:
                    found.append((entry.stat().st_mtime, entry))
                except FileNotFoundError:
                    continue
        return [entry for _, entry in sorted(found, reverse=True)]

    @staticmethod
    def size(entry: Path) -> int:
        try:
            return sum(p.stat().st_size for p in entry.rglob("*")) if entry.is_dir() else entry.stat().st_size
        except FileNotFoundError:
            return 0

    def delete(self, entry: Path) -> None:
        shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        self._owners.pop(entry.name, None)

    def prune(self, owner: str = "", keep: Path | None = None) -> None:
        """Before a new entry (``keep`` None): delete old entries, those beyond the newest
        ``max_entries - 1`` and the owner's beyond its newest ``per_owner - 1``. After one (``keep``, just
        written, stays): delete the oldest others while all hold more than ``max_bytes``."""
        now, mine, total = time.time(), 0, 0
        for rank, entry in enumerate(self.entries()):
            if entry == keep:
                total += self.size(entry)
                continue
            try:
                old = now - entry.stat().st_mtime > self.max_age
            except FileNotFoundError:
                continue
            if keep is None:
                mine += bool(owner) and self._owners.get(entry.name) == owner
                if rank >= self.max_entries - 1 or (self.per_owner is not None and mine >= self.per_owner):
                    old = True
            size = 0 if old else self.size(entry)
            if old or (keep is not None and self.max_bytes is not None and total + size > self.max_bytes):
                self.delete(entry)
            else:
                total += size

    def new(self, owner: str = "") -> Path:
        """A fresh subfolder (an export's); call ``settle`` once it is written."""
        with self._lock:
            self.prune(owner)
            path = Path(tempfile.mkdtemp(dir=self.root))
            self._owners[path.name] = owner
            return path

    def settle(self, entry: Path) -> None:
        """An entry is complete: keep the folder within its byte budget, ``entry`` included if it fits."""
        with self._lock:
            self.prune(keep=entry)

    def write(self, data: bytes, suffix: str, owner: str = "") -> Path:
        """A fresh file holding ``data``, written whole before its name appears (nothing is left on failure)."""
        with self._lock:
            self.prune(owner)
            path = self.root / f"{uuid.uuid4().hex}{suffix}"
            partial = self.root / f".{path.name}.part"
            try:
                partial.write_bytes(data)
                partial.rename(path)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            self._owners[path.name] = owner
            self.prune(keep=path)
            return path

    def used_bytes(self) -> int:
        return sum(self.size(entry) for entry in self.entries())

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
