"""Hostile config.json files (issue 56): a config is checked field by field and against its weights' shapes before
any module is built, so every bad one is one CheckpointError sentence, fast (20,000 layers used to hang the CLI for
DeBERTa, MPNet and ALBERT), and the CLI answers it with one line and exit 2.

These are the hand-written cases the checks were developed with; benchmarks/bench_configs.py runs seeded random
mutations of the same family checkpoints (``family_checkpoint``) that were not used to write them."""
import contextlib
import json
import shutil
from pathlib import Path

import builders
import pytest
import torch
from safetensors.torch import load_file

from bertviz_lab import CheckpointError, load
from bertviz_lab.bert.loading.checkpoints import load_model

FAMILIES = ("bert", "roberta", "distilbert", "electra", "albert", "mpnet", "deberta-v2", "modernbert")
VOCAB = builders.VOCAB + ["<s>", "</s>", "<mask>", "<pad>"]  # every family's specials, so one vocab.txt serves all
SIZES = dict(hidden_size=32, num_attention_heads=4, intermediate_size=64)
DISTILBERT = {"hidden_size": "dim", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
              "intermediate_size": "hidden_dim"}


def hf_model(family: str):
    """A small random transformers masked LM of ``family`` (BertForPreTraining for BERT), its released layout."""
    import transformers as tf

    v = len(VOCAB)
    made = {
        "bert": lambda: tf.BertForPreTraining(tf.BertConfig(vocab_size=v, num_hidden_layers=2,
                                                            max_position_embeddings=64, **SIZES)),
        "roberta": lambda: tf.RobertaForMaskedLM(tf.RobertaConfig(vocab_size=v, num_hidden_layers=2,
                                                                  max_position_embeddings=66, type_vocab_size=1,
                                                                  pad_token_id=1, **SIZES)),
        "distilbert": lambda: tf.DistilBertForMaskedLM(tf.DistilBertConfig(vocab_size=v, dim=32, n_layers=2, n_heads=4,
                                                                           hidden_dim=64, max_position_embeddings=64)),
        "electra": lambda: tf.ElectraForMaskedLM(tf.ElectraConfig(vocab_size=v, embedding_size=16, num_hidden_layers=2,
                                                                  max_position_embeddings=64, **SIZES)),
        "albert": lambda: tf.AlbertForMaskedLM(tf.AlbertConfig(vocab_size=v, embedding_size=16, num_hidden_layers=3,
                                                               max_position_embeddings=64, pad_token_id=0, **SIZES)),
        "mpnet": lambda: tf.MPNetForMaskedLM(tf.MPNetConfig(vocab_size=v, num_hidden_layers=3,
                                                            max_position_embeddings=66, **SIZES)),
        "deberta-v2": lambda: tf.DebertaV2ForMaskedLM(tf.DebertaV2Config(
            vocab_size=v, num_hidden_layers=2, max_position_embeddings=64, relative_attention=True,
            pos_att_type="p2c|c2p", position_buckets=16, norm_rel_ebd="layer_norm", share_att_key=True,
            position_biased_input=False, type_vocab_size=0, **SIZES)),
        "modernbert": lambda: tf.ModernBertForMaskedLM(tf.ModernBertConfig(
            vocab_size=v, num_hidden_layers=3, local_attention=8, global_attn_every_n_layers=3, pad_token_id=0,
            bos_token_id=2, cls_token_id=2, eos_token_id=3, sep_token_id=3, **SIZES)),
    }
    torch.manual_seed(0)
    return made[family]().eval()


def family_checkpoint(family: str, folder: Path) -> Path:
    """config.json + model.safetensors as save_pretrained writes them, and a vocab.txt with every family's specials."""
    from transformers.utils import logging

    logging.disable_progress_bar()  # save_pretrained's shard bar on stderr
    folder.mkdir(parents=True, exist_ok=True)
    hf_model(family).save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return folder


def field_name(family: str, name: str) -> str:
    """A BERT field's name in ``family``'s config.json."""
    return DISTILBERT.get(name, name) if family == "distilbert" else name


def with_config(folder: Path, target: Path, edit) -> Path:
    """A copy of ``folder`` whose config.json is ``edit(config)`` (a dict, or text to write as it is)."""
    shutil.copytree(folder, target)
    config = edit(json.loads((folder / "config.json").read_text()))
    (target / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return target


def setting(family: str, name: str, value):
    def edit(config):
        return {**config, field_name(family, name): value}
    return edit


def dropping(family: str, name: str):
    def edit(config):
        config.pop(field_name(family, name), None)
        return config
    return edit


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {family: family_checkpoint(family, root / family) for family in FAMILIES}


@contextlib.contextmanager
def nothing_built():
    """No BertLab is made inside: a refusal comes before any module (20,000 layers were built for minutes before)."""
    from bertviz_lab.bert.loading import checkpoints

    def built(*args, **kwargs):
        raise AssertionError("a model was built before its config was refused")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints, "BertLab", built)
        yield


def refused(folder: Path, *words: str) -> str:
    """The one sentence loading ``folder`` is refused with, before any module is built; it names ``words``."""
    with nothing_built(), pytest.raises(CheckpointError) as info:
        load_model(str(folder), device="cpu")
    message = str(info.value)
    assert "\n" not in message and len(message) < 600, message
    for word in words:
        assert word in message, message
    return message


def test_every_family_checkpoint_loads_unchanged(folders):
    """The control: the checks refuse none of the eight families as transformers saves them."""
    for family, folder in folders.items():
        lab = load(str(folder), device="cpu")
        assert lab.model.config.model_type == family and lab.model.config.vocab_size == len(VOCAB)


@pytest.mark.parametrize("family", FAMILIES)
def test_twenty_thousand_layers_are_refused_fast(folders, family, tmp_path):
    """The issue's hang (DeBERTa, MPNet, ALBERT killed at 120 s, memory rising): now a bound, before anything is built."""
    folder = with_config(folders[family], tmp_path / "deep", setting(family, "num_hidden_layers", 20000))
    refused(folder, field_name(family, "num_hidden_layers"), "20000", "256")


SIZE_CASES = {  # name -> (BERT field, value, words of the sentence)
    "vocab 0": ("vocab_size", 0, ["vocab_size is 0", "from 1 to"]),
    "vocab 1e9": ("vocab_size", 10 ** 9, ["vocab_size is 1000000000", "4,194,304"]),
    "vocab as a float": ("vocab_size", 61.0, ["vocab_size is 61.0", "whole number"]),
    "heads 0": ("num_attention_heads", 0, ["is 0"]),
    "layers as a string": ("num_hidden_layers", "3", ['the string "3"', "whole number"]),
    "hidden true": ("hidden_size", True, ["is true", "whole number"]),
    "intermediate negative": ("intermediate_size", -64, ["is -64"]),
    "positions negative": ("max_position_embeddings", -1, ["max_position_embeddings is -1"]),
    "heads do not divide hidden": ("num_attention_heads", 5, ["5"]),
    "layers a list": ("num_hidden_layers", [3], ["a list of 1"]),
    "hidden null": ("hidden_size", None, ["is null"]),
    "hidden an object": ("hidden_size", {"value": 32}, ["an object"]),
    "layer norm epsilon 0": ("layer_norm_eps", 0, ["layer_norm_eps is 0"]),
    "dropout 2": ("hidden_dropout_prob", 2.0, ["hidden_dropout_prob is 2.0"]),
    "activation unknown": ("hidden_act", "swish-ish", ["swish-ish"]),
}
APPLIES = {"layer_norm_eps": ("distilbert", "modernbert"), "hidden_dropout_prob": ("distilbert", "modernbert"),
           "hidden_act": ("distilbert", "modernbert")}  # families whose config does not read that field


@pytest.mark.parametrize("case", SIZE_CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_bad_size_or_type_is_one_sentence_naming_the_field(folders, family, case, tmp_path):
    name, value, words = SIZE_CASES[case]
    if family in APPLIES.get(name, ()):
        pytest.skip(f"{family} does not read {name}")
    folder = with_config(folders[family], tmp_path / "bad", setting(family, name, value))
    message = refused(folder, field_name(family, name))
    assert all(w.replace(name, field_name(family, name)) in message for w in words), message


WEIGHT_CASES = {  # name -> (BERT field, a value within the bounds that the weights contradict, what the weights hold)
    "vocab": ("vocab_size", 100, f"word embeddings have {len(VOCAB)} rows"),
    "layers": ("num_hidden_layers", 7, "the weights hold"),
    "hidden": ("hidden_size", 64, "32"),
    "intermediate": ("intermediate_size", 128, "64 wide"),
}


# where the config refuses itself first (another field of it that transformers wrote disagrees), that sentence
CONFIG_FIRST = {("deberta-v2", "hidden"): "pooler_hidden_size 32 other than hidden_size 64",
                ("modernbert", "layers"): "layer_types lists 3 layers but num_hidden_layers is 7"}


@pytest.mark.parametrize("case", WEIGHT_CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_config_that_disagrees_with_its_weights_names_both(folders, family, case, tmp_path):
    name, value, held = WEIGHT_CASES[case]
    if family == "albert" and name == "num_hidden_layers":
        pytest.skip("ALBERT's weights hold one shared layer: its count is the config's (bounded)")
    folder = with_config(folders[family], tmp_path / "other", setting(family, name, value))
    if (family, case) in CONFIG_FIRST:
        refused(folder, CONFIG_FIRST[family, case])
        return
    refused(folder, "config.json does not fit the weights", f"{field_name(family, name)} is {value} but", held)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_missing_size_falls_back_to_the_default_and_the_weights_refuse_it(folders, family, tmp_path):
    folder = with_config(folders[family], tmp_path / "missing", dropping(family, "vocab_size"))
    refused(folder, "vocab_size is missing (so 30522, the default)", f"{len(VOCAB)} rows")
    folder = with_config(folders[family], tmp_path / "missing-layers", dropping(family, "num_hidden_layers"))
    if family == "modernbert":  # its config lists every layer's type
        refused(folder, "layer_types lists 3 layers but num_hidden_layers is missing (so 22")
    elif family != "albert":  # ALBERT: 12 runs of its one shared layer is a model its weights allow
        refused(folder, "is missing (so 12, the default) but the weights hold")


@pytest.mark.parametrize("text, words", [
    ("[1, 2, 3]", ["a list of 3", "not an object"]),
    ('"bert"', ['the string "bert"', "not an object"]),
    ("{not json", ["not valid JSON", "line 1"]),
    ("", ["not valid JSON"]),
    ("[" * 100_000, ["nested too deeply"]),
    ('{"model_type": ["bert"]}', ["model_type is a list of 1"]),
    ('{"vocab_size": 1' + "0" * 5000 + "}", ["not valid JSON"]),
    ('{"hidden_size": NaN}', ["hidden_size is NaN"]),
])
def test_a_config_that_is_not_a_json_object_is_one_sentence(folders, tmp_path, text, words):
    folder = with_config(folders["bert"], tmp_path / "text", lambda _: text)
    refused(folder, "config.json", *words)


def test_undecodable_and_oversized_configs_are_refused(folders, tmp_path):
    folder = with_config(folders["bert"], tmp_path / "bytes", lambda c: c)
    (folder / "config.json").write_bytes(b'{"model_type": "\xff\xfe"}')
    refused(folder, "not UTF-8")
    (folder / "config.json").write_text(json.dumps({"pad": "x" * (5 << 20)}))
    refused(folder, "MB; a config is a few KB")


@pytest.mark.parametrize("family, name, value, words", [
    ("deberta-v2", "position_buckets", 10 ** 7, ["position_buckets is 10000000"]),
    ("deberta-v2", "position_buckets", 8, ["position_buckets is 8 (twice that", "has 32 rows"]),
    ("deberta-v2", "relative_attention", "yes", ['relative_attention is the string "yes"', "true or false"]),
    ("deberta-v2", "relative_attention", False, ["relative_attention is false but the weights have a relative-position"]),
    ("deberta-v2", "pos_att_type", [1, 2], ["pos_att_type is a list of 2"]),
    ("deberta-v2", "max_relative_positions", -7, ["max_relative_positions is -7"]),
    ("mpnet", "relative_attention_num_buckets", 0, ["relative_attention_num_buckets is 0"]),
    ("mpnet", "relative_attention_num_buckets", 16, ["relative_attention_num_buckets is 16", "has 32 rows"]),
    ("mpnet", "num_attention_heads", 8, ["num_attention_heads is 8", "has 4 columns"]),
    ("albert", "num_hidden_groups", "1", ['num_hidden_groups is the string "1"']),
    ("albert", "embedding_size", 32, ["embedding_size is 32", "16 wide"]),
    ("electra", "embedding_size", None, ["embedding_size is null"]),
    ("modernbert", "global_attn_every_n_layers", 0, ["global_attn_every_n_layers is 0"]),
    ("modernbert", "layer_types", "full_attention", ["layer_types is the string"]),
    ("modernbert", "rope_parameters", {"full_attention": [1]}, ["rope_parameters is an object"]),
    ("modernbert", "local_attention", -2, ["local_attention is -2"]),
    ("roberta", "pad_token_id", None, ["pad_token_id is null"]),
    ("roberta", "pad_token_id", 100, ["pad_token_id is 100, outside the vocabulary"]),
    ("roberta", "max_position_embeddings", 2, ["max_position_embeddings is 2, which leaves no position"]),
    ("bert", "type_vocab_size", 0, ["type_vocab_size is 0 but the weights have a segment table of shape (2, 32)"]),
    ("bert", "type_vocab_size", 5, ["type_vocab_size is 5", "has 2 rows"]),
    ("bert", "id2label", ["neg", "pos"], ["id2label is a list of 2"]),
    ("bert", "architectures", "BertForPreTraining", ['architectures is the string "BertForPreTraining"']),
    ("bert", "model_type", "gpt2", ["not in the BERT family"]),
    ("distilbert", "n_layers", 3.5, ["n_layers is 3.5"]),
])
def test_the_families_own_fields_are_checked_too(folders, family, name, value, words, tmp_path):
    folder = with_config(folders[family], tmp_path / "own", setting(family, name, value))
    refused(folder, *words)


def test_fields_only_the_loader_or_another_family_sets_are_ignored_as_transformers_ignores_them(folders, tmp_path):
    """A BERT config.json that says rotary, shared layers or MPNet's relative buckets loads BERT's model."""
    stray = {"rotary": True, "share_layers": True, "disentangled": True, "position_offset": 10 ** 6,
             "positions": ["rotary"], "norm_placement": "pre", "mlp": "gated", "final_norm": True,
             "relative_attention_num_buckets": 10 ** 9, "embedding_size": "x", "n_classes": -1,
             "position_biased_input": False}
    folder = with_config(folders["bert"], tmp_path / "stray", lambda c: {**c, **stray})
    cfg = load(str(folder), device="cpu").model.config
    assert cfg.positions == ("learned",) and (cfg.norm_placement, cfg.mlp, cfg.final_norm) == ("post", "dense", False)
    assert not (cfg.share_layers or cfg.relative_attention_num_buckets)
    assert cfg.position_offset == 0 and cfg.embedding_size is None and cfg.position_biased_input


def test_a_pickle_is_checked_against_its_shapes_and_must_hold_named_tensors(folders, tmp_path):
    folder = with_config(folders["bert"], tmp_path / "pickle", setting("bert", "num_hidden_layers", 9))
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    with nothing_built(), pytest.raises(CheckpointError, match="num_hidden_layers is 9 but the weights hold 2 layers"):
        load_model(str(folder), device="cpu", allow_pickle=True)
    torch.save([1, 2, 3], folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="holds a list, not a state dict"):
        load_model(str(folder), device="cpu", allow_pickle=True)
    torch.save({"a": 1}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="holds int under 'a', not only named tensors"):
        load_model(str(folder), device="cpu", allow_pickle=True)


def test_a_safetensors_file_that_is_not_one_is_one_sentence(folders, tmp_path):
    folder = with_config(folders["bert"], tmp_path / "garbage", lambda c: c)
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    refused(folder, "model.safetensors: not a readable safetensors file")


def test_the_shapes_come_from_the_header_before_any_tensor_is_read(folders, tmp_path, monkeypatch):
    """A refused config reads no tensor: the tensors are read only once the config fits their shapes."""
    from bertviz_lab.bert.loading import checkpoints

    read = []
    monkeypatch.setattr(checkpoints, "load_file", lambda *a, **k: read.append(a) or {})
    folder = with_config(folders["mpnet"], tmp_path / "mpnet", setting("mpnet", "num_hidden_layers", 200))
    refused(folder, "num_hidden_layers is 200 but the weights hold 3 layers")
    assert read == []


def test_albert_builds_one_layers_memory_however_many_times_it_runs(folders, tmp_path):
    """ALBERT's count is the config's (its weights hold one shared layer): 256 runs take one layer's parameters,
    not 256 layers' (each follower is made without memory of its own)."""
    folder = with_config(folders["albert"], tmp_path / "deep", setting("albert", "num_hidden_layers", 256))
    model, _, _ = load_model(str(folder), device="cpu")
    shared = {p.data_ptr() for p in model.bert.encoder.layer[0].parameters()}
    assert len(model.bert.encoder.layer) == 256
    assert {p.data_ptr() for layer in model.bert.encoder.layer for p in layer.parameters()} == shared


def test_the_cli_answers_a_hostile_config_with_one_line_and_exit_2(folders, tmp_path):
    """In-process (builders.run_cli): what `bertviz-lab analyze --model FOLDER` prints for 20,000 DeBERTa layers."""
    folder = with_config(folders["deberta-v2"], tmp_path / "cli", setting("deberta-v2", "num_hidden_layers", 20000))
    with nothing_built():
        run = builders.run_cli("analyze", "the cat sat", "--model", str(folder), "--device", "cpu")
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("error: ") and "num_hidden_layers is 20000" in lines[0]


@pytest.mark.parametrize("name, text, words", [
    ("tokenizer_config.json", "[1, 2]", ["tokenizer_config.json holds a list of 2"]),
    ("tokenizer_config.json", '{"do_lower_case": "yes"}', ['do_lower_case is the string "yes"']),
    ("tokenizer_config.json", "{x", ["tokenizer_config.json is not valid JSON"]),
    ("tokenizer.json", "{}", ["tokenizer files cannot be read"]),
    ("vocab.txt", "", ["tokenizer files cannot be read", "[UNK]"]),
])
def test_a_broken_tokenizer_file_is_one_sentence_too(folders, tmp_path, name, text, words):
    folder = with_config(folders["bert"], tmp_path / "tokenizer", lambda c: c)
    (folder / name).write_text(text)
    refused(folder, *words)
