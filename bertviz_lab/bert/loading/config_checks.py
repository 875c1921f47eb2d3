"""config.json checked before any module is built (issue 56): every field the family reads has the right type and a
size no released checkpoint exceeds, and every size the model would be built with is the size the weights hold.

Why first: ``BertLab`` builds every module its config asks for, so a config that asked for 20,000 layers or a
vocabulary of 10^9 rows hung or filled memory long before the strict load could say that the weights do not fit, and
a value of the wrong type ("3", true, a list) broke the translation with a traceback. The loader (checkpoints.py)
therefore goes: config.json as one JSON object (``parse_config``); each field the family reads, by type and bounds
(``checked_fields``); the sizes across fields (``check_config``); the weights' shapes alone (the safetensors header,
no tensor read), under BertLab's names, against every size the model would be built with (``check_sizes``); only
then the tensors and the model. Every refusal is a ``ConfigRefused`` of one sentence that names the field.

The bounds admit every released checkpoint of the eight families with a wide margin (the largest known is named
beside each). Where the weights hold a size it must also be exactly theirs, so the bounds alone decide only what the
weights cannot prove: ALBERT's number of layers (one shared layer's weights run num_hidden_layers times), the number
of heads (except MPNet's, whose relative-bias table has a column per head) and the positions of the families with no
position table (DeBERTa-v3, ModernBERT).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..encoder.model import BertConfig, activation

MAX_CONFIG_BYTES = 4 << 20  # a real config.json is a few KB; an id2label of 10,000 classes is ~300 KB
MAX_VOCAB = 1 << 22  # 4,194,304: XLM-V (an XLM-RoBERTa, 901,629 pieces) is the largest; mDeBERTa-v3 251,000
MAX_WIDTH = 1 << 15  # 32,768 for hidden, embedding and head sizes: ALBERT-xxlarge's 4,096 is the widest
MAX_LAYERS = 256  # DeBERTa-v2-xxlarge has 48 and the ALBERT paper's deepest 48; ALBERT's weights cannot prove it
MAX_INTERMEDIATE = 1 << 18  # 262,144: ALBERT-xxlarge's 16,384 is the widest
MAX_POSITIONS = 1 << 20  # 1,048,576: ModernBERT has 8,192, the longest BERT-family encoders 32,768
MAX_SEGMENTS = 1 << 10  # BERT has 2, RoBERTa 1, DeBERTa-v3 0
MAX_BUCKETS = 1 << 16  # MPNet has 32 relative buckets, DeBERTa-v3 256 position buckets
MAX_THETA = 1e12  # ModernBERT's global rotary theta is 160,000
MAX_TEXT = 200  # characters of a string field (an activation's name, a model type)


class ConfigRefused(ValueError):
    """config.json cannot describe a model this loader builds, or not the model its weights hold; one sentence."""


@dataclass(frozen=True)
class Field:
    """What one config field may hold. ``kind``: "whole" (an integer in [low, high]), "real" (a finite number in
    [low, high], above low when ``open_low``), "flag" (true/false), "text", "activation", "words" (a list of
    strings), "text-or-words", "labels" (id2label) or "rope" (ModernBERT's rope_parameters)."""

    kind: str
    low: float = 0
    high: float = 0
    null: bool = False  # JSON null stands for the loader's default
    open_low: bool = False  # low itself is refused (a LayerNorm epsilon of 0)

    def expected(self) -> str:
        """The sentence's second half: what the field should have been."""
        text = {"whole": f"a whole number from {self.low:,} to {self.high:,}",
                "real": f"a number {'above' if self.open_low else 'from'} {self.low:g} {'and at most' if self.open_low else 'to'} "
                        f"{self.high:g}",
                "flag": "true or false", "text": "a string", "activation": "the name of an activation",
                "words": "a list of strings", "text-or-words": "a string or a list of strings",
                "labels": 'an object of class numbers ("0", "1", ...) to names',
                "rope": "an object of layer types to {\"rope_theta\": number, \"rope_type\": string}"}[self.kind]
        return text + (" or null" if self.null else "")


def whole(low: int, high: int, null: bool = False) -> Field:
    return Field("whole", low, high, null)


def real(low: float, high: float, null: bool = False, open_low: bool = False) -> Field:
    return Field("real", low, high, null, open_low)


FLAG, TEXT, ACTIVATION = Field("flag"), Field("text", null=True), Field("activation")
PROBABILITY, OPTIONAL_PROBABILITY, EPSILON = real(0, 1), real(0, 1, null=True), real(0, 1, open_low=True)
# The fields every family but ModernBERT reads (BERT's names; DistilBERT's own names are added below).
COMMON = {"vocab_size": whole(1, MAX_VOCAB), "hidden_size": whole(1, MAX_WIDTH),
          "num_hidden_layers": whole(1, MAX_LAYERS), "num_attention_heads": whole(1, MAX_WIDTH),
          "intermediate_size": whole(1, MAX_INTERMEDIATE), "max_position_embeddings": whole(1, MAX_POSITIONS),
          "type_vocab_size": whole(0, MAX_SEGMENTS), "pad_token_id": whole(0, MAX_VOCAB - 1, null=True),
          "layer_norm_eps": EPSILON, "hidden_dropout_prob": PROBABILITY, "attention_probs_dropout_prob": PROBABILITY,
          "classifier_dropout": OPTIONAL_PROBABILITY, "hidden_act": ACTIVATION, "initializer_range": real(0, 10),
          "position_embedding_type": TEXT, "architectures": Field("words", null=True),
          "id2label": Field("labels", null=True)}
DISTILBERT_NAMES = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                    "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
                    "attention_dropout": "attention_probs_dropout_prob"}
# BertConfig's fields that only the loader sets (from the family and the weights): a config.json never has them, and
# one that does must not switch on another family's layers or heads.
LOADER_FIELDS = ("position_offset", "head_act", "share_layers", "positions", "norm_placement", "mlp", "final_norm",
                 "disentangled", "rotary", "has_pooler", "has_mlm_head",
                 "has_nsp_head", "n_classes", "classifier_act", "extra")



def parse_config(path: Path) -> dict[str, Any]:
    """config.json as one JSON object with a model type that is a name, or one sentence saying why not."""
    raw = parse_json_object(path)
    model_type = raw.get("model_type", "bert")
    if not isinstance(model_type, str) or len(model_type) > MAX_TEXT:
        raise ConfigRefused(f"model_type is {shown(model_type)}, not the name of a model type")
    return raw


def parse_json_object(path: Path) -> dict[str, Any]:
    """A small JSON file (config.json, tokenizer_config.json) as one object, or one sentence saying why not."""
    size, name = path.stat().st_size, path.name
    if size > MAX_CONFIG_BYTES:
        raise ConfigRefused(f"{name} is {size / 1e6:.1f} MB; a config is a few KB (at most "
                            f"{MAX_CONFIG_BYTES / 1e6:.0f} MB are read)")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigRefused(f"{name} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ConfigRefused(f"{name} is not valid JSON ({error.msg} at line {error.lineno} column "
                            f"{error.colno})") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise ConfigRefused(f"{name} is not valid JSON ({str(error).splitlines()[0][:100]})") from None
    except RecursionError:
        raise ConfigRefused(f"{name} is nested too deeply to be a config") from None
    if not isinstance(raw, dict):
        raise ConfigRefused(f"{name} holds {shown(raw)}, not an object of fields")
    return raw


def shown(value: Any) -> str:
    """A config value in a sentence: short, on one line, and saying its JSON type where that is the problem."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        text = json.dumps(value[:40]) + ("..." if len(value) > 40 else "")
        return f"the string {text}"
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 30 else "a number of over 30 digits"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {"inf": "Infinity", "-inf": "-Infinity"}.get(repr(value), "NaN")
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def check_field(name: str, value: Any, spec: Field) -> None:
    """One field's value against what it may hold; one sentence naming both when it may not."""
    if value is None and spec.null:
        return
    if not _fits(value, spec):
        raise ConfigRefused(f"{name} is {shown(value)}, not {spec.expected()}")


def _fits(value: Any, spec: Field) -> bool:
    kind = spec.kind
    if kind == "whole":
        return isinstance(value, int) and not isinstance(value, bool) and spec.low <= value <= spec.high
    if kind == "real":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        return (value > spec.low if spec.open_low else value >= spec.low) and value <= spec.high
    if kind == "flag":
        return isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str) and len(value) <= MAX_TEXT
    if kind == "activation":
        return _is_activation(value)
    if kind == "words":
        return isinstance(value, list) and all(isinstance(x, str) and len(x) <= MAX_TEXT for x in value)
    if kind == "text-or-words":
        return _fits(value, Field("text")) or _fits(value, Field("words"))
    if kind == "labels":
        return isinstance(value, dict) and all(_class_number(k) and isinstance(v, str) for k, v in value.items())
    if kind == "rope":
        return isinstance(value, dict) and all(_rope_entry(v) for v in value.values())
    raise AssertionError(f"unknown field kind {kind!r}")


def _is_activation(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        return False
    try:
        activation(value)
    except ValueError:
        return False
    return True


def _class_number(key: Any) -> bool:
    """An id2label key: "0", "1", ... in a file (JSON keys are strings), 0, 1, ... from a transformers object."""
    if isinstance(key, int) and not isinstance(key, bool):
        return 0 <= key < MAX_VOCAB
    return isinstance(key, str) and re.fullmatch(r"\d{1,7}", key) is not None


def _rope_entry(entry: Any) -> bool:
    """One layer type's rotary settings: a theta (a positive number, or null for the default) and a type name."""
    if not isinstance(entry, dict):
        return False
    theta, kind = entry.get("rope_theta"), entry.get("rope_type", "default")
    return (theta is None or _fits(theta, real(0, MAX_THETA, open_low=True))) and _fits(kind, Field("text"))


@dataclass(frozen=True)
class Written:
    """Which size fields config.json sets itself and under which names (DistilBERT's ``dim`` is hidden_size), so that
    a refusal names a field as the file does and says when its value is a default the file left to the loader."""

    present: frozenset[str] = frozenset()  # BERT's names
    names: Mapping[str, str] = field(default_factory=dict)  # BERT's name -> the file's, where they differ

    def said(self, name: str, value: Any) -> str:
        own, value = self.names.get(name, name), shown(value)
        return f"{own} is {value}" if name in self.present else f"{own} is missing (so {value}, the default)"


def written_fields(raw: Mapping[str, Any], family: str) -> Written:
    """The fields config.json sets, under BERT's names, and the family's own names for them."""
    names = ({ours: theirs for theirs, ours in DISTILBERT_NAMES.items()} if family == "distilbert" else
             {"hidden_act": "hidden_activation"} if family == "modernbert" else {})
    present = {name for name in raw} | {ours for ours, theirs in names.items() if theirs in raw}
    return Written(frozenset(present), names)


def check_config(cfg: BertConfig) -> None:
    """What no single field shows: the padding row and the first position inside their tables, and DeBERTa's and
    ModernBERT's own settings read as the layers will read them (their refusals by name are ValueErrors)."""
    _ = cfg.disentangled_spec, cfg.rotary_spec
    if cfg.pad_token_id is not None and cfg.pad_token_id >= cfg.vocab_size:
        raise ConfigRefused(f"pad_token_id is {cfg.pad_token_id}, outside the vocabulary of vocab_size "
                            f"{cfg.vocab_size} rows")
    if cfg.position_biased_input and cfg.max_position_embeddings <= cfg.position_offset:
        raise ConfigRefused(f"max_position_embeddings is {cfg.max_position_embeddings}, which leaves no position for a "
                            f"token: this family's positions start at row {cfg.position_offset}")


def check_sizes(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], given: Written = Written()) -> None:
    """Every size BertLab(cfg) would be built with against the weights' shapes (BertLab's names): the weights hold
    the embeddings, the layers (their count from the highest layer index in the names), the position, segment and
    relative tables, so a config that asks for other sizes, or for a table the weights lack (or lacks one they
    hold), is refused by name before any module is built."""
    for check in (_embedding_sizes, _layer_sizes, _layer_count, _tables):
        check(cfg, shapes, given)


def _dims(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], key: str, what: str) -> tuple[int, int]:
    """A table's two sizes; a table the model needs that the weights lack, or of another rank, is refused."""
    if key not in shapes:
        raise ConfigRefused(f"the weights have no {what} ({key}), so they are not the {cfg.model_type} encoder "
                            "config.json describes")
    shape = tuple(shapes[key])
    if len(shape) != 2:
        raise ConfigRefused(f"the weights' {what} ({key}) has shape {shape}, not (rows, columns)")
    return shape[0], shape[1]


def _embedding_sizes(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], given: Written) -> None:
    rows, width = _dims(cfg, shapes, "bert.embeddings.word_embeddings.weight", "word embeddings")  # (vocab, d_emb)
    if rows != cfg.vocab_size:
        raise ConfigRefused(f"{given.said('vocab_size', cfg.vocab_size)} but the weights' word embeddings have "
                            f"{rows} rows")
    if width != cfg.embedding_dim:  # (ELECTRA's embedding_size equal to hidden_size means no projection)
        name = "embedding_size" if cfg.embedding_size or "embedding_size" in given.present else "hidden_size"
        raise ConfigRefused(f"{given.said(name, cfg.embedding_dim)} but the weights' word embeddings are {width} wide")


def _layer_sizes(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], given: Written) -> None:
    rows, cols = _dims(cfg, shapes, "bert.encoder.layer.0.attention.self.query.weight", "first layer's query projection")
    if (rows, cols) != (cfg.hidden_size, cfg.hidden_size):  # (d_model, d_model)
        raise ConfigRefused(f"{given.said('hidden_size', cfg.hidden_size)} but the weights' query projections are "
                            f"{rows} x {cols}")
    if cfg.mlp == "gated":  # ModernBERT's gated MLP: Wi holds the input and the gate, (2 * d_ff, d_model)
        rows, _ = _dims(cfg, shapes, "bert.encoder.layer.0.mlp.Wi.weight", "first layer's MLP input (Wi)")
        held = rows / 2
    else:
        held, _ = _dims(cfg, shapes, "bert.encoder.layer.0.intermediate.dense.weight", "first layer's feed-forward input")
    if held != cfg.intermediate_size:  # (d_ff, d_model)
        raise ConfigRefused(f"{given.said('intermediate_size', cfg.intermediate_size)} but the weights' feed-forward "
                            f"layers are {held:g} wide")


LAYER_KEY = re.compile(r"^bert\.encoder\.layer\.(\d{1,9})\.")


def _layer_count(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], given: Written) -> None:
    """The number of layers is the highest layer index in the names + 1 (ALBERT's weights hold one shared layer,
    run num_hidden_layers times: only the bound decides its count)."""
    indices = {int(m.group(1)) for m in map(LAYER_KEY.match, shapes) if m}
    if cfg.share_layers:
        if indices != {0}:
            raise ConfigRefused(f"the weights hold layers {sorted(indices)[:5]}, not ALBERT's one shared layer")
        return
    held = max(indices) + 1  # layer 0 exists: _layer_sizes read it
    if held != cfg.num_hidden_layers:
        raise ConfigRefused(f"{given.said('num_hidden_layers', cfg.num_hidden_layers)} but the weights hold {held} "
                            f"layers (encoder.layer.0 to encoder.layer.{held - 1})")


@dataclass(frozen=True)
class Table:
    """A table the config switches on (``asked``) with the size it gives it, and the fields to name when the
    weights disagree: the switch, the field deciding the rows and the one deciding the columns."""

    key: str  # BertLab's name of its weight
    what: str
    switch: str
    asked: bool
    rows_field: str
    rows: int
    cols_field: str
    cols: int


def _tables(cfg: BertConfig, shapes: Mapping[str, tuple[int, ...]], given: Written) -> None:
    """The tables the config switches on or off, each with its size: the weights must agree on both."""
    d, spec = cfg.hidden_size, cfg.disentangled_spec
    emb = "embedding_size" if cfg.embedding_size else "hidden_size"
    span_field = ("position_buckets" if spec and spec.position_buckets > 0 else
                  "max_relative_positions" if spec and int(cfg.extra.get("max_relative_positions", -1)) >= 1 else
                  "max_position_embeddings")
    tables = [
        Table("bert.embeddings.position_embeddings.weight", "position table", "position_biased_input",
              cfg.position_biased_input, "max_position_embeddings", cfg.max_position_embeddings, emb,
              cfg.embedding_dim),
        Table("bert.embeddings.token_type_embeddings.weight", "segment table", "type_vocab_size",
              cfg.type_vocab_size > 0, "type_vocab_size", cfg.type_vocab_size, emb, cfg.embedding_dim),
        Table("bert.embeddings_project.weight", "embedding projection", "embedding_size", bool(cfg.embedding_size),
              "hidden_size", d, "embedding_size", cfg.embedding_size or 0),
        Table("bert.encoder.relative_attention_bias.weight", "relative-position bias table",
              "relative_attention_num_buckets", cfg.relative_attention_num_buckets > 0,
              "relative_attention_num_buckets", cfg.relative_attention_num_buckets, "num_attention_heads",
              cfg.num_attention_heads),
        Table("bert.encoder.rel_embeddings.weight", "relative-position table", "relative_attention",
              bool(spec and spec.relative_attention), span_field, 2 * spec.span if spec else 0, "hidden_size", d),
    ]
    for table in tables:
        _table(shapes, table, cfg, given)


def _table(shapes: Mapping[str, tuple[int, ...]], table: Table, cfg: BertConfig, given: Written) -> None:
    held = table.key in shapes
    switch = given.said(table.switch, _value(cfg, table.switch))
    if held and not table.asked:
        raise ConfigRefused(f"{switch} but the weights have a {table.what} of shape {tuple(shapes[table.key])} "
                            f"({table.key})")
    if not table.asked:
        return
    if not held:
        raise ConfigRefused(f"{switch}, which asks for a {table.what} that the weights do not have ({table.key})")
    rows, cols = _dims(cfg, shapes, table.key, table.what)  # (rows, columns)
    if rows != table.rows:
        doubled = " (twice that: offsets either side)" if table.key.endswith("rel_embeddings.weight") else ""
        raise ConfigRefused(f"{given.said(table.rows_field, _value(cfg, table.rows_field))}{doubled} but the weights' "
                            f"{table.what} has {rows} rows")
    if cols != table.cols:
        raise ConfigRefused(f"{given.said(table.cols_field, table.cols)} but the weights' {table.what} has {cols} "
                            f"columns")


def _value(cfg: BertConfig, name: str) -> Any:
    """A field's value: BertConfig's own, or from ``extra`` (DeBERTa's position_buckets, max_relative_positions)."""
    return getattr(cfg, name) if hasattr(cfg, name) else cfg.extra.get(name)
