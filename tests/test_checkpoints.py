"""Loading: legacy names, BertModel-style keys, hub cache, strictness, pickles, devices."""
import json
import shutil

import builders
import pytest
import torch
from safetensors.torch import load_file, save_file

from bertviz_lab import CheckpointError, DeviceError, load
from bertviz_lab.bert.loading.checkpoints import load_model
from bertviz_lab.bert.runtime.devices import resolve_device, resolve_dtype


def logits_of(model, ids):
    with torch.no_grad():
        out = model(input_ids=ids)
    return out.mlm_logits, out.nsp_logits


IDS = torch.tensor([[2, 7, 8, 9, 10, 11, 3]])


def test_legacy_names_load_and_match_transformers(tmp_path, tiny_hf):
    folder = builders.save_checkpoint(tiny_hf, tmp_path / "legacy", legacy=True)
    keys = load_file(str(folder / "model.safetensors")).keys()
    assert any(k.endswith("LayerNorm.gamma") for k in keys) and "cls.predictions.bias" not in keys
    model, ckpt, _ = load_model(str(folder), device="cpu")
    mlm, nsp = logits_of(model, IDS)
    with torch.no_grad():
        ref = tiny_hf(input_ids=IDS)
    assert (mlm - ref.prediction_logits).abs().max() < 1e-5
    assert (nsp - ref.seq_relationship_logits).abs().max() < 1e-5


def test_bertmodel_checkpoint_loads_without_heads(tmp_path, tiny_hf):
    folder = builders.save_checkpoint(tiny_hf, tmp_path / "bare", bare=True)
    lab = load(str(folder), device="cpu")
    assert not lab.model.has_mlm_head and not lab.model.has_nsp_head
    result = lab.analyze("the [MASK] sat on the mat", pair="it slept")
    assert result.mlm == [] and "no masked-language-model head" in result.mlm_note
    assert result.nsp is None and "next-sentence" in result.nsp_note


def test_unexpected_and_missing_keys_are_named(tmp_path, tiny_hf):
    folder = builders.save_checkpoint(tiny_hf, tmp_path / "extra")
    state = load_file(str(folder / "model.safetensors"))
    state["classifier.weight"] = torch.zeros(2, 32)
    del state["bert.encoder.layer.1.output.dense.bias"]
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError) as info:
        load_model(str(folder), device="cpu")
    assert "bert.classifier.weight" in str(info.value)
    assert "bert.encoder.layer.1.output.dense.bias" in str(info.value)


def test_pickle_weights_are_refused_unless_allowed(tmp_path, tiny_hf):
    folder = builders.save_checkpoint(tiny_hf, tmp_path / "pickle")
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="pickle"):
        load_model(str(folder), device="cpu")
    model, _, _ = load_model(str(folder), device="cpu", allow_pickle=True)
    assert model.has_mlm_head


def make_hub_cache(cache, repo_id, source_folder):
    """Lay out a folder exactly as huggingface_hub's cache does (refs + snapshots)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    for f in source_folder.iterdir():
        shutil.copy(f, snap / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snap


def test_hub_id_loads_from_cache_without_network(tmp_path, tiny_hf, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = builders.save_checkpoint(tiny_hf, tmp_path / "src")
    cache = tmp_path / "hub"
    make_hub_cache(cache, "tiny-org/tiny-bert", folder)
    lab = load("tiny-org/tiny-bert", device="cpu", cache_dir=cache)
    assert lab.name == "tiny-org/tiny-bert"
    result = lab.analyze("the cat [MASK] on the mat")
    ids = torch.tensor([result.token_ids])
    with torch.no_grad():
        ref = torch.softmax(tiny_hf(input_ids=ids).prediction_logits[0, 3], -1)
    top = torch.topk(ref, 5)
    assert [p.token for p in result.mlm[0].predictions] == [builders.VOCAB[i] for i in top.indices.tolist()]
    assert result.mlm[0].predictions[0].probability == pytest.approx(top.values[0].item(), abs=1e-5)


def test_unknown_model_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match="not-a-real/model"):
        load("not-a-real/model", device="cpu", cache_dir=tmp_path)
    with pytest.raises(CheckpointError, match="no such folder"):
        load("./missing/folder", device="cpu")
    bad = tmp_path / "notbert"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(CheckpointError, match="not in the BERT family"):
        load(str(bad), device="cpu")


def test_devices():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in {"cpu", "cuda", "mps"}
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA is not available"):
            resolve_device("cuda:0")
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device("tpu9")
    with pytest.raises(DeviceError, match="GPU"):
        resolve_dtype("float16", torch.device("cpu"))
    assert resolve_dtype(None, torch.device("cpu")) == torch.float32
