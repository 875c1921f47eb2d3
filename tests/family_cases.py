"""One record per encoder family for the conformance suite (tests/test_family_conformance.py).

Each ``FamilyCase`` builds, once per test session, a tiny random transformers masked-LM model (every bias and
norm parameter moved off its initial value, so that a weight loaded into the wrong place shows), writes it as a
checkpoint folder ``bertviz_lab.load`` reads (``save_pretrained`` plus the family's tokenizer file), loads it,
and gives sample inputs. It also says what the family is: its position schemes and norm placement, the hook
points only it has, the attention sources that refuse it (and why) and the interventions that apply to it.
``parity`` is the one comparison against transformers every case uses.

A new family is one ``FamilyCase`` below (its builder reused from its own test file) plus its own small test
file for what only it does.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import builders
import torch

# The builders of the families' own test files, reused (plain functions, never their fixtures or tests).
from test_deberta import deberta
from test_families import bpe_tokenizer, roughen
from test_modernbert import modernbert
from test_position_families import albert_config, mpnet_tokenizer, sentencepiece_tokenizer

# Inputs every case runs: a long sentence (ModernBERT's local window of +-4 tokens bites at 19 tokens) and a short
# one, so that the batch has padding; every word is in each family's toy vocabulary.
LONG = "the cat sat on the mat and the dog ran to the park with a big red house"
SHORT = "she saw a bird"
MASKED = "the cat [MASK] on the mat and the dog ran to the park"

# Intervention kinds by what they need of the model (bertviz_lab/interventions/kinds.py).
ANY_MODEL = frozenset({"mask-tokens", "hide-keys", "left-only", "right-only", "left-only-control",
                       "right-only-control", "ablate-heads", "shuffle-words"})
ABSOLUTE = frozenset({"zero-positions", "shuffle-positions", "shift-positions", "sinusoidal-positions",
                      "random-positions"})
RELATIVE_BIAS = frozenset({"zero-relative-bias", "zero-relative-bias-control"})
POSITION_TERMS = frozenset({"zero-position-terms", "zero-position-terms-control"})
ROTARY = frozenset({"rotate-positions", "disable-rotary", "disable-rotary-control"})
# why each kind refuses a model it does not fit (the start of its InterventionError)
REFUSALS = {**{kind: "this model has no absolute position embeddings to change" for kind in ABSOLUTE},
            **{kind: "this model has no relative-position bias to zero" for kind in RELATIVE_BIAS},
            **{kind: "this model has no disentangled position terms to zero" for kind in POSITION_TERMS},
            **{kind: "this model has no rotary positions" for kind in ROTARY}}

# The words a source's refusal names its method by (bertviz_lab/bert/source_registry.py's sources).
METHOD_NAMES = {"attention": "attention", "norm": "norm", "norm-residual": "norm with residual and LayerNorm",
                "globenc": "GlobEnc", "alti": "ALTI", "value-zeroing": "value zeroing", "decompx": "DecompX",
                "rollout": "rollout", "flow": "attention flow"}
# Sources that decompose BERT's post-LayerNorm layer, refused on pre-norm encoders; the reason their refusal gives.
POST_NORM_SOURCES = ("norm-residual", "globenc", "alti", "value-zeroing", "decompx")
PRE_NORM_REASON = "not available for ModernBERT and other pre-norm encoders"


@dataclass(frozen=True)
class Tolerance:
    """Max abs differences allowed against transformers (the family's own test file's)."""

    hidden: float = 1e-5
    attention: float = 1e-5
    logits: float = 1e-5


@dataclass(frozen=True)
class Parity:
    """Max abs differences against transformers over the real (unpadded) tokens."""

    hidden: float
    attention: float
    logits: float

    def within(self, tol: Tolerance) -> bool:
        return self.hidden <= tol.hidden and self.attention <= tol.attention and self.logits <= tol.logits


@dataclass
class Built:
    """One case's objects, made once per session."""

    hf: Any  # the transformers masked-LM model (eval, eager attention)
    folder: Path  # its checkpoint folder (config.json, model.safetensors, tokenizer file)
    lab: Any  # bertviz_lab.load(folder, device="cpu")
    inputs: dict[str, torch.Tensor]  # input_ids and attention_mask of [LONG, SHORT], padded as the Lab pads

    @property
    def layers(self) -> int:
        return self.lab.model.config.num_hidden_layers


@dataclass(frozen=True)
class FamilyCase:
    name: str
    model_type: str  # what our config calls it
    positions: tuple[str, ...]  # BertConfig.positions: the architecture's position schemes
    norm_placement: str
    make: Callable[[Path], Any]  # writes the tokenizer into the folder, returns the random transformers model
    family_hooks: frozenset[str] = frozenset()  # FAMILY_HOOKS spots this family has (none: BERT's table only)
    position_table: bool = True  # absolute position embeddings at hook_position
    tolerance: Tolerance = Tolerance()
    interventions: frozenset[str] = field(default=ANY_MODEL | ABSOLUTE)  # the kinds that apply (the rest refuse)
    refused_sources: dict[str, str] = field(default_factory=dict)  # source -> the reason its refusal names

    def build(self, root: Path) -> Built:
        """The case's model, folder, Lab and inputs: built on the first call, the same objects after."""
        key = (self.name, str(root))
        if key not in _BUILT:
            import bertviz_lab

            folder = root / self.name
            folder.mkdir(parents=True)
            hf = self.make(folder).eval()
            hf.save_pretrained(folder)
            lab = bertviz_lab.load(str(folder), device="cpu")
            inputs = lab.batch_tensors([lab.encode(LONG), lab.encode(SHORT)])
            _BUILT[key] = Built(hf, folder, lab, {k: inputs[k] for k in ("input_ids", "attention_mask")})
        return _BUILT[key]


_BUILT: dict[tuple[str, str], Built] = {}


# ---- the one parity helper --------------------------------------------------------------------------------
def parity(model, hf, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Parity:
    """Max abs differences of hidden states, attention and MLM logits between our ``model`` (a BertLab) and the
    transformers ``hf`` on one batch, over the real tokens (padded rows are nobody's output).

    transformers' hidden states are the encoder's input, then every layer's output: ours are the embeddings'
    output (projected up where the family projects: ELECTRA, ALBERT), then ``out`` of each layer, the last one
    through ``final_norm`` where the family has one (ModernBERT's last_hidden_state)."""
    from bertviz_lab.bert.encoder.hook_table import hook_name

    layers = model.config.num_hidden_layers
    outs = [hook_name("out", i) for i in range(layers)]
    if hook_name("final_norm") in model.hook_names:
        outs[-1] = hook_name("final_norm")
    patterns = [hook_name("pattern", i) for i in range(layers)]
    with torch.no_grad(), model.hooks(capture=[hook_name("embeddings")] + outs + patterns) as run:
        ours = model(input_ids=input_ids, attention_mask=attention_mask)
        ref = hf(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True,
                 output_hidden_states=True)
        embedded = run.cache[hook_name("embeddings")]
        if model.bert.embeddings_project is not None:
            embedded = model.bert.embeddings_project(embedded)
    if len(ref.hidden_states) != layers + 1 or len(ref.attentions) != layers:
        raise AssertionError(f"transformers gave {len(ref.hidden_states)} hidden states and {len(ref.attentions)} "
                             f"attentions for {layers} layers")
    real = attention_mask.bool()  # (batch, pos)
    hidden = max((mine - theirs).abs()[real].max().item()
                 for mine, theirs in zip([embedded] + [run.cache[n] for n in outs], ref.hidden_states))
    attention = max((run.cache[n] - theirs).abs().permute(0, 2, 1, 3)[real].max().item()  # query rows of real tokens
                    for n, theirs in zip(patterns, ref.attentions))
    logits = (ours.mlm_logits - ref.logits).abs()[real].max().item()
    return Parity(hidden, attention, logits)


# ---- the families' tiny models ----------------------------------------------------------------------------
QUERY_KEY = ("query.weight", "key.weight", "q_lin.weight", "k_lin.weight", "attn.q.weight", "attn.k.weight")


def sharpen(model, seed: int):
    """Query and key weights of std 0.3 (as tests/test_deberta.py and test_modernbert.py draw theirs), so that
    attention is far from uniform and a wrong scale, bias or position shows in it beyond the tolerance."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(QUERY_KEY):
                p.normal_(0.0, 0.3)
    return model


def _bert(folder: Path):
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM(builders.hf_config(layers=2))
    builders.write_vocab(folder)
    return roughen(sharpen(model, 1), 1)


def _roberta(folder: Path):
    import transformers as tf

    tok = bpe_tokenizer(folder)
    cfg = tf.RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
                           pad_token_id=tok.token_to_id("<pad>"), bos_token_id=0, eos_token_id=2,
                           attn_implementation="eager")
    torch.manual_seed(0)
    return roughen(sharpen(tf.RobertaForMaskedLM(cfg), 1), 1)


def _distilbert(folder: Path):
    import transformers as tf

    cfg = tf.DistilBertConfig(vocab_size=len(builders.VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                              max_position_embeddings=64, pad_token_id=0, attn_implementation="eager")
    torch.manual_seed(0)
    builders.write_vocab(folder)
    return roughen(sharpen(tf.DistilBertForMaskedLM(cfg), 2), 2)


def _electra(folder: Path):
    import transformers as tf

    cfg = tf.ElectraConfig(vocab_size=len(builders.VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                           attn_implementation="eager")
    torch.manual_seed(0)
    builders.write_vocab(folder)
    return roughen(sharpen(tf.ElectraForMaskedLM(cfg), 3), 3)


def _albert(folder: Path):
    import transformers as tf

    tok = sentencepiece_tokenizer(folder)
    torch.manual_seed(0)
    return roughen(sharpen(tf.AlbertForMaskedLM(albert_config(len(tok))), 10), 10)


def _mpnet(folder: Path):
    import transformers as tf

    tok = mpnet_tokenizer(folder)
    cfg = tf.MPNetConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=260, attn_implementation="eager")
    torch.manual_seed(0)
    model = roughen(sharpen(tf.MPNetForMaskedLM(cfg), 20), 20)
    with torch.no_grad():  # a bias as large as a trained one's, so that a wrong bucket shows
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
    return model


def _deberta_v3(folder: Path):
    builders.write_vocab(folder)  # a WordPiece vocab standing in for the SentencePiece one (same specials)
    return deberta("v3")  # position_biased_input false, share_att_key, p2c|c2p, log buckets, no segments


def _modernbert(folder: Path):
    builders.write_vocab(folder)  # a WordPiece vocab standing in for the BPE tokenizer.json (same specials)
    return modernbert("all-biases")  # every optional bias present, so that each is checked


CASES: tuple[FamilyCase, ...] = (
    FamilyCase("bert", "bert", ("learned",), "post", _bert),
    FamilyCase("roberta", "roberta", ("learned",), "post", _roberta, tolerance=Tolerance(logits=1e-4)),
    FamilyCase("distilbert", "distilbert", ("learned",), "post", _distilbert, tolerance=Tolerance(logits=1e-4)),
    FamilyCase("electra", "electra", ("learned",), "post", _electra, tolerance=Tolerance(logits=1e-4)),
    FamilyCase("albert", "albert", ("learned",), "post", _albert),
    FamilyCase("mpnet", "mpnet", ("learned", "relative"), "post", _mpnet, family_hooks=frozenset({"position_bias"}),
               interventions=ANY_MODEL | ABSOLUTE | RELATIVE_BIAS),
    FamilyCase("deberta-v3", "deberta-v2", ("disentangled",), "post", _deberta_v3,
               family_hooks=frozenset({"c2c", "c2p", "p2c"}), position_table=False,
               interventions=ANY_MODEL | POSITION_TERMS),
    FamilyCase("modernbert", "modernbert", ("rotary",), "pre", _modernbert,
               family_hooks=frozenset({"rot_q", "rot_k", "rotary_positions", "final_norm"}), position_table=False,
               interventions=ANY_MODEL | ROTARY,
               refused_sources={name: PRE_NORM_REASON for name in POST_NORM_SOURCES}),
)
CASES_BY_NAME = {case.name: case for case in CASES}
