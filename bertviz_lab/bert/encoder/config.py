"""The encoder's configuration: Hugging Face's BERT fields, and the architecture as typed axes (never a family):
the position schemes (bert/positions/), the norm placement, the MLP kind, a final norm and shared layers."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..positions import build as build_schemes
from ..positions.disentangled import DisentangledSpec
from ..positions.rotary import RotarySpec

NORM_PLACEMENTS = ("post", "pre")
MLP_KINDS = ("dense", "gated")


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    # The rest of the BERT family (bert/loading/families/): ELECTRA's smaller embeddings, RoBERTa's
    # first position, the MLM head's own activation where it is not hidden_act.
    embedding_size: int | None = None  # None: the hidden size (no projection after the embeddings)
    position_offset: int = 0  # position i reads row i + offset of the position table
    head_act: str | None = None  # None: hidden_act
    share_layers: bool = False  # ALBERT: every layer runs the first layer's parameters
    relative_attention_num_buckets: int = 0  # the "relative" scheme's buckets (MPNet: 32)
    # The architecture's axes (never a family): position schemes by name (bert/positions/), in order
    positions: tuple[str, ...] = ("learned",)
    norm_placement: str = "post"  # "post": LayerNorm after each residual sum (BERT); "pre": before each block
    mlp: str = "dense"  # "dense": BERT's intermediate/output; "gated": a GeGLU Wi/Wo (ModernBERT)
    final_norm: bool = False  # a LayerNorm on the last layer's output (pre-norm encoders)
    model_type: str = "bert"
    # Which parts the checkpoint carries; set by the loader from the weights it finds.
    has_pooler: bool = True
    has_mlm_head: bool = True
    has_nsp_head: bool = True
    n_classes: int = 0  # outputs of a sequence classifier's head; 0: none
    classifier_act: str | None = None  # its activation after the dense layer (None: BERT's pooler instead)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BertConfig:
        known = {f.name for f in fields(cls)} - {"extra"}
        cfg = cls(**{k: v for k, v in raw.items() if k in known})
        cfg.extra = {k: v for k, v in raw.items() if k not in known}
        if cfg.hidden_size % cfg.num_attention_heads:
            raise ValueError(
                f"hidden_size {cfg.hidden_size} is not a multiple of "
                f"num_attention_heads {cfg.num_attention_heads}"
            )
        pe = cfg.extra.get("position_embedding_type", "absolute")
        if pe != "absolute":
            raise ValueError(f"position_embedding_type {pe!r} is not supported (only 'absolute')")
        cfg.positions = tuple(str(name) for name in cfg.positions)  # JSON gives a list
        if cfg.norm_placement not in NORM_PLACEMENTS:
            raise ValueError(f"norm_placement {cfg.norm_placement!r} is not one of {', '.join(NORM_PLACEMENTS)}")
        if cfg.mlp not in MLP_KINDS:
            raise ValueError(f"mlp {cfg.mlp!r} is not one of {', '.join(MLP_KINDS)}")
        if (cfg.norm_placement == "pre") != (cfg.mlp == "gated"):
            raise ValueError("a pre-norm layer comes with the gated MLP (ModernBERT's), a post-norm one with the dense")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["positions"] = list(out["positions"])
        out.update(out.pop("extra"))
        return out

    @property
    def position_biased_input(self) -> bool:
        """A learned absolute table is added to the token embeddings (its shape is checked against the weights)."""
        return "learned" in self.positions

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def embedding_dim(self) -> int:
        return self.embedding_size or self.hidden_size

    @property
    def absolute_positions_only(self) -> bool:
        """Every scheme acts on the input alone (learned or sinusoidal vectors, or none): a token's output depends
        on the others only through attention, and leaving a token out of the input (the rest keeping their
        position ids) equals hiding it from every query on every layer."""
        return all(scheme.input_only for scheme in build_schemes(self))

    @property
    def disentangled_spec(self) -> DisentangledSpec | None:
        """The disentangled scheme's settings (DeBERTa's config fields), or None without that scheme."""
        return (DisentangledSpec.from_config(self.extra, self.max_position_embeddings)
                if "disentangled" in self.positions else None)

    @property
    def rotary_spec(self) -> RotarySpec | None:
        """The rotary scheme's layer types, thetas and window, or None without that scheme."""
        return RotarySpec.from_config(self.extra, self.num_hidden_layers) if "rotary" in self.positions else None

    def has_bias(self, part: str) -> bool:
        """Whether ``part``'s layers have biases: ``norm``, ``attention``, ``mlp`` or ``classifier`` (the config's
        ``<part>_bias``, false in ModernBERT's; every other family has them)."""
        return bool(self.extra.get(f"{part}_bias", True))

    @property
    def norm_bias(self) -> bool:
        return self.has_bias("norm")

    @property
    def max_tokens(self) -> int:
        """Tokens one input may have: the position table's rows from the offset on."""
        return self.max_position_embeddings - self.position_offset
