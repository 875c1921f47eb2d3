"""Position-scheme twins (issue 58): same-size encoders that differ only in their position scheme, trained together.

Why together: a difference between two twins should be put down to the position scheme alone, so every twin sees
the same batches, the same masked positions and the same replacements (the seeds' 80/10/10 rule), from the same
seed, for the same number of steps, with the same optimiser and schedule. One training step runs every twin on one
masked batch; a leg of at most ``leg_minutes`` ends with one checkpoint of all of them, so a chain of legs equals one
run (the learning-rate schedule spans ``steps``).

What they share and what is their own:
- the tokenizer and the word embeddings are the embedded MiniLM's (WordPiece, 30,522 x 384), frozen, so a twin
  ships none of them and every twin reads words the same way; the MLM decoder is tied to them, as in BERT;
- each twin's own: the embedding LayerNorm and segment table, a projection 384 -> ``hidden``, ``layers`` post-norm
  BERT layers, the MLM head's transform and bias, and its position scheme's weights (a learned table of
  ``length`` rows, relative buckets, the disentangled table; sinusoids, ALiBi and rotary have none).

The text: running text only (the corpus's ``train_docs.jsonl``: UD train splits and the Brown Corpus), packed into
blocks of ``length`` WordPieces ([CLS] ... [SEP]) that run across sentence ends within a document, so every
position up to ``length`` is trained; WordNet's one-line glosses would leave the far positions untrained.
"""
from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from ..bert import BertConfig, BertLab
from ..bert.encoder.model import init_weights
from .objective import IGNORE, mask_tokens
from .running_text import Passage, read_documents, read_passages_jsonl
from .twin_card import write_twin_card

FIRST_REAL_TOKEN = 999  # BERT's uncased vocabulary: ids below are [PAD], [unusedN] and the specials
SCHEMES = ("learned", "sinusoidal", "relative", "disentangled", "rotary", "alibi", "none")
WORDS = "bert.embeddings.word_embeddings.weight"  # shared and frozen: never saved with a twin
# Where the twins start, the three candidates: BERT's initialisation; the embedded encoder's own weights
# but its positions (only at its size: 384 wide, 6 layers of 12 heads, feed-forward 1536); or BERT's initialisation
# trained to match the `default` masked-word head's distribution as well as the gold word (distillation).
INITS = ("scratch", "minilm", "distill")
MINILM_SIZE = {"hidden": 384, "layers": 6, "heads": 12, "ffn": 1536}
DISTILL_WEIGHT = 0.5  # loss = (1 - w) * cross-entropy with the gold word + w * KL(teacher || twin), as Hinton et al.


@dataclass
class TwinRecipe:
    """Everything a twin's training depends on; saved with the run and the exported twins."""

    corpus: str = "data/corpus"
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    ffn: int = 1024
    length: int = 128  # WordPieces per training block, [CLS] and [SEP] included: "the training length"
    batch: int = 32
    steps: int = 1200
    lr: float = 5e-4
    warmup: float = 0.06
    weight_decay: float = 0.01
    seed: int = 0
    mask_probability: float = 0.15
    validation_blocks: int = 64
    eval_every: int = 100
    schemes: tuple[str, ...] = SCHEMES
    device: str = "cpu"
    bf16: bool = True  # bfloat16 autocast of the forward passes (CPU with AMX / AVX-512 BF16, CUDA); off on MPS
    init: str = "scratch"  # one of INITS: where every twin starts (the same for all; chosen by pilot_twin_init.py)


def sinusoid_scale(words: torch.Tensor) -> float:
    """What brings a sinusoid row (norm sqrt(d / 2)) to the mean norm of the shared words' real WordPieces, as
    Vaswani et al.'s sqrt(d_model) brings their words to the sinusoids' size (bert/positions/sinusoidal.py)."""
    return round(float(words[FIRST_REAL_TOKEN:].norm(dim=1).mean()) / (words.shape[1] / 2) ** 0.5, 6)


def twin_config(scheme: str, recipe: TwinRecipe, words: torch.Tensor) -> BertConfig:
    """The architecture every twin shares, with ``scheme`` as its one position scheme. A learned table has exactly
    ``length`` rows (it cannot reach a longer input, and says so); the other schemes take inputs up to 4x."""
    vocab_size, embedding_size = words.shape
    extra = {
        "relative": {"relative_attention_num_buckets": 32},  # T5's/MPNet's 32 buckets, max distance 128
        "disentangled": {"relative_attention": True, "pos_att_type": ["c2p", "p2c"], "position_buckets": 32,
                         "max_relative_positions": recipe.length, "share_att_key": True, "norm_rel_ebd": "layer_norm"},
        "rotary": {"layer_types": ["full_attention"] * recipe.layers, "global_rope_theta": 10000.0,
                   "local_rope_theta": 10000.0},
        "sinusoidal": {"sinusoid_scale": sinusoid_scale(words)},
    }.get(scheme, {})
    return BertConfig.from_dict({
        "vocab_size": vocab_size, "embedding_size": embedding_size, "hidden_size": recipe.hidden,
        "num_hidden_layers": recipe.layers, "num_attention_heads": recipe.heads, "intermediate_size": recipe.ffn,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "type_vocab_size": 2,
        "max_position_embeddings": recipe.length if scheme == "learned" else 4 * recipe.length,
        "positions": [scheme], "has_pooler": False, "has_nsp_head": False, "has_mlm_head": True,
        "model_type": "bert", "twin": scheme, **extra})


def packed_blocks(tokenizer, passages: Sequence[Passage] | Sequence[Sequence[str]], length: int) -> torch.Tensor:
    """(blocks, length) long: each document's WordPieces in order, cut into runs of ``length`` - 2 between [CLS]
    and [SEP]; a document's last run is kept, padded with id 0, when it fills at least half a block."""
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    inner = length - 2
    blocks = []
    for passage in passages:
        sentences = passage.sentences if isinstance(passage, Passage) else passage
        ids: list[int] = []
        for encoding in tokenizer.encode_batch(list(sentences), add_special_tokens=False):
            ids.extend(encoding.ids)
        for start in range(0, len(ids), inner):
            run = ids[start:start + inner]
            if len(run) >= inner // 2:
                blocks.append([cls_id] + run + [sep_id] + [0] * (inner - len(run)))
    return torch.tensor(blocks, dtype=torch.long) if blocks else torch.zeros((0, length), dtype=torch.long)


def shared_words() -> tuple[torch.Tensor, Any]:
    """The embedded MiniLM's word embeddings (vocab, 384) and tokenizer, what every twin shares."""
    from ..lab import load

    minilm = load("minilm-original", device="cpu")
    return minilm.model.bert.embeddings.word_embeddings.weight.detach().float().clone(), minilm.tokenizer


def check_init(recipe: TwinRecipe) -> None:
    """Refuse a start the recipe cannot have, by name: an unknown one, or the embedded encoder's weights at a size
    they do not fit."""
    if recipe.init not in INITS:
        raise ValueError(f"unknown start {recipe.init!r}; choose from {', '.join(INITS)}")
    wrong = {k: getattr(recipe, k) for k, v in MINILM_SIZE.items() if getattr(recipe, k) != v}
    if recipe.init == "minilm" and wrong:
        raise ValueError("the embedded encoder's weights fit only its own size (" +
                         ", ".join(f"--{k} {v}" for k, v in MINILM_SIZE.items()) + "), not " +
                         ", ".join(f"--{k} {v}" for k, v in wrong.items()))


def embedded_start(recipe: TwinRecipe, words: torch.Tensor) -> dict[str, torch.Tensor]:
    """The `default` weights (the embedded MiniLM with our masked-word head) as a twin's state: every weight but the
    learned position table, and an identity projection after the embeddings (the twin's 384 -> hidden is 384 -> 384
    here), so each twin starts as the embedded encoder with its own positions in place of the table."""
    from ..lab import load

    state = {k: v.detach().float().clone() for k, v in load("default", device="cpu").model.state_dict().items()
             if "position_embeddings" not in k}
    state["bert.embeddings_project.weight"] = torch.eye(recipe.hidden, words.shape[1])
    state["bert.embeddings_project.bias"] = torch.zeros(recipe.hidden)
    return state


def build_twins(recipe: TwinRecipe, words: torch.Tensor) -> dict[str, BertLab]:
    """Every twin by BERT's initialisation from the same seed, then every weight the twins have in common (all but
    the position scheme's) copied from one reference model, so they start from the same point, not only from the
    same seed (a position table drawn first would shift every later draw); the shared words frozen in place.
    With ``recipe.init == "minilm"`` the reference is the embedded encoder (``embedded_start``)."""
    check_init(recipe)
    reference = init_weights(BertLab(twin_config("none", recipe, words)), seed=recipe.seed).state_dict()
    if recipe.init == "minilm":
        reference.update(embedded_start(recipe, words))
    twins = {}
    for scheme in recipe.schemes:
        model = init_weights(BertLab(twin_config(scheme, recipe, words)), seed=recipe.seed)
        with torch.no_grad():
            for name, value in model.state_dict().items():
                if name in reference and reference[name].shape == value.shape:
                    value.copy_(reference[name])
            model.bert.embeddings.word_embeddings.weight.copy_(words)
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        twins[scheme] = model.to(recipe.device)
    return twins


def schedule(recipe: TwinRecipe) -> Callable[[int], float]:
    warm = max(1, int(recipe.warmup * recipe.steps))
    return lambda step: step / warm if step < warm else max(0.0, (recipe.steps - step) / max(1, recipe.steps - warm))


@dataclass
class TwinRun:
    """A chain's state: the step reached, every validation point and every leg."""

    step: int = 0
    history: list[dict] = field(default_factory=list)  # {"step", "loss": {scheme: validation loss}}
    legs: list[dict] = field(default_factory=list)


def batch_order(n_blocks: int, recipe: TwinRecipe, step: int) -> list[int]:
    """The rows of step ``step``'s batch: epochs of a seeded shuffle, so a resumed chain draws what one run would."""
    per_epoch = max(1, n_blocks // recipe.batch)
    epoch, index = divmod(step, per_epoch)
    order = list(range(n_blocks))
    random.Random(recipe.seed * 1_000_003 + epoch).shuffle(order)
    return order[index * recipe.batch:(index + 1) * recipe.batch]


def masked_batch(blocks: torch.Tensor, rows: list[int], recipe: TwinRecipe, step: int, mask_id: int,
                 vocab: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(inputs, labels, attention mask) of one step, the same for every twin: a generator seeded by the step."""
    ids = blocks[rows]  # (batch, length)
    real = ids != 0
    special = (ids == ids[:, :1]) | ~real  # [CLS] (each block's first id) and padding
    special |= torch.zeros_like(special).scatter_(1, real.sum(1, keepdim=True) - 1, True)  # each block's [SEP]
    generator = torch.Generator().manual_seed(recipe.seed * 7_919 + step)
    inputs, labels = mask_tokens(ids, special, mask_id, vocab, generator, recipe.mask_probability,
                                 random_token_low=999)  # BERT's random replacements: real WordPieces only
    return inputs, labels, real.long()


def mlm_loss_of(model: BertLab, inputs: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor,
                teacher_log_probs: torch.Tensor | None = None) -> torch.Tensor:
    """Masked-word cross-entropy; with ``teacher_log_probs`` (n chosen, vocab), mixed with KL(teacher || twin)."""
    chosen = labels != IGNORE
    logits = model(inputs, attention_mask=mask, mlm_positions=chosen).mlm_logits.float()  # (n chosen, vocab)
    loss = torch.nn.functional.cross_entropy(logits, labels[chosen])
    if teacher_log_probs is None:
        return loss
    kl = torch.nn.functional.kl_div(logits.log_softmax(-1), teacher_log_probs, log_target=True, reduction="batchmean")
    return (1 - DISTILL_WEIGHT) * loss + DISTILL_WEIGHT * kl


def teacher_of(recipe: TwinRecipe) -> BertLab | None:
    """The `default` masked-word model, frozen, when the twins are distilled from it; otherwise None."""
    if recipe.init != "distill":
        return None
    from ..lab import load

    return load("default", device=recipe.device).model.eval().requires_grad_(False)


def teacher_log_probs_of(teacher: BertLab | None, inputs: torch.Tensor, labels: torch.Tensor,
                         mask: torch.Tensor) -> torch.Tensor | None:
    """(n chosen, vocab) the teacher's log-probabilities at the masked positions of this step, once for all twins."""
    if teacher is None:
        return None
    with torch.no_grad():
        logits = teacher(inputs, attention_mask=mask, mlm_positions=labels != IGNORE).mlm_logits  # (n chosen, vocab)
    return logits.float().log_softmax(-1)


def validation_losses(twins: dict[str, BertLab], blocks: torch.Tensor, recipe: TwinRecipe, mask_id: int,
                      vocab: int) -> dict[str, float]:
    """Masked-word loss of every twin on the same fixed masked validation blocks (seeded, never trained on)."""
    rows = list(range(len(blocks)))
    inputs, labels, mask = masked_batch(blocks, rows, recipe, -1, mask_id, vocab)
    out = {}
    for scheme, model in twins.items():
        model.eval()
        with torch.no_grad():
            out[scheme] = round(float(mlm_loss_of(model, inputs, labels, mask)), 4)
        model.train()
    return out


def own_state(model: BertLab) -> dict[str, torch.Tensor]:
    """A twin's own weights, in float16, without the shared words."""
    return {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items() if k != WORDS}


@dataclass(frozen=True)
class Leg:
    """How this leg runs: from the checkpoint (``resume``), for at most ``minutes``, started by ``command``."""

    resume: bool = False
    minutes: float | None = None
    command: str | None = None
    stop_at: int | None = None  # end the leg after this step (to bring a twin retrained alone to the others' step)


def train_twins(out: Path, recipe: TwinRecipe, shared: tuple[torch.Tensor, Any], leg: Leg = Leg(),
                say: Callable[[str], None] = print) -> TwinRun:
    """Train (or go on training, with ``leg.resume``) every twin in ``recipe.schemes`` for one leg; ``shared`` is
    (words, tokenizer) from ``shared_words``. Returns the run's state. The checkpoint (``out/checkpoint.pt``: every
    twin, optimiser and the run) is written at the end of the leg and at every validation point."""
    words, tokenizer = shared
    resume, leg_minutes, command = leg.resume, leg.minutes, leg.command
    torch.manual_seed(recipe.seed)
    corpus = Path(recipe.corpus)
    train_blocks = packed_blocks(tokenizer, read_passages_jsonl(corpus / "train_docs.jsonl"), recipe.length)
    validation = packed_blocks(tokenizer, read_documents(corpus / "validation_docs.txt"), recipe.length)
    validation = validation[:recipe.validation_blocks]
    mask_id, vocab = tokenizer.token_to_id("[MASK]"), words.shape[0]
    twins = build_twins(recipe, words)
    teacher = teacher_of(recipe)
    optimisers = {s: torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=recipe.lr,
                                       weight_decay=recipe.weight_decay) for s, m in twins.items()}
    lr_at = schedule(recipe)
    run = TwinRun()
    checkpoint = out / "checkpoint.pt"
    if resume and checkpoint.is_file():
        saved = torch.load(checkpoint, map_location=recipe.device, weights_only=False)
        for scheme, model in twins.items():
            model.load_state_dict({**saved["models"][scheme], WORDS: words}, strict=True)
            optimisers[scheme].load_state_dict(saved["optimisers"][scheme])
        run = TwinRun(**saved["run"])
    out.mkdir(parents=True, exist_ok=True)
    say(f"{len(train_blocks)} training blocks of {recipe.length} WordPieces, {len(validation)} validation blocks; "
        f"twins {', '.join(twins)} from step {run.step} of {recipe.steps}")
    started, first = time.time(), run.step
    for model in twins.values():
        model.train()
    while run.step < recipe.steps:
        inputs, labels, mask = masked_batch(train_blocks, batch_order(len(train_blocks), recipe, run.step), recipe,
                                            run.step, mask_id, vocab)
        inputs, labels, mask = inputs.to(recipe.device), labels.to(recipe.device), mask.to(recipe.device)
        losses = {}
        teacher_log_probs = teacher_log_probs_of(teacher, inputs, labels, mask)
        for scheme, model in twins.items():
            for group in optimisers[scheme].param_groups:
                group["lr"] = recipe.lr * lr_at(run.step)
            # dropout seeded by the step and the twin: a chain of legs equals one run, and a twin trained alone
            # draws what it draws among the others (merge_twins)
            torch.manual_seed(recipe.seed * 7_919 + run.step * 31 + SCHEMES.index(scheme))
            with torch.autocast(torch.device(recipe.device).type, dtype=torch.bfloat16,
                                enabled=recipe.bf16 and torch.device(recipe.device).type in ("cpu", "cuda")):
                loss = mlm_loss_of(model, inputs, labels, mask, teacher_log_probs)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            optimisers[scheme].step()
            optimisers[scheme].zero_grad(set_to_none=True)
            losses[scheme] = float(loss.detach())
        run.step += 1
        leg_over = (leg_minutes is not None and time.time() - started >= leg_minutes * 60 or run.step == leg.stop_at) \
            and run.step < recipe.steps
        if run.step % recipe.eval_every == 0 or run.step == recipe.steps or leg_over:
            point = {"step": run.step, "train_loss": {s: round(v, 4) for s, v in losses.items()},
                     "loss": validation_losses(twins, validation.to(recipe.device), recipe, mask_id, vocab)}
            run.history.append(point)
            say(f"step {run.step}/{recipe.steps}: validation loss " +
                ", ".join(f"{s} {v:.3f}" for s, v in point["loss"].items()))
            save_checkpoint(checkpoint, twins, optimisers, run)
        if leg_over:
            break
    if run.step == first:  # nothing trained (the run was done: e.g. a call that only exports): no leg to record
        return run
    run.legs.append({"leg": len(run.legs) + 1, "from_step": first, "to_step": run.step,
                     "minutes": round((time.time() - started) / 60, 1), "command": command,
                     "torch_threads": torch.get_num_threads()})
    save_checkpoint(checkpoint, twins, optimisers, run)
    (out / "run.json").write_text(json.dumps({"recipe": asdict(recipe), **asdict(run)}, indent=1))
    return run


def save_checkpoint(path: Path, twins: dict[str, BertLab], optimisers: dict, run: TwinRun) -> None:
    """All twins, their optimisers and the run, written to a temporary file and renamed (a kill leaves the last)."""
    partial = path.with_suffix(".partial")
    torch.save({"models": {s: {k: v for k, v in m.state_dict().items() if k != WORDS} for s, m in twins.items()},
                "optimisers": {s: o.state_dict() for s, o in optimisers.items()}, "run": asdict(run)}, partial)
    partial.replace(path)


def export_twins(run_folder: Path, out: Path, recipe: TwinRecipe, words: torch.Tensor) -> dict[str, int]:
    """Write each twin's own weights (float16, no shared words) as ``twin-<scheme>.safetensors`` and the shared
    ``twins.json`` (recipe, configs, the run's history and legs) into ``out``; returns the bytes per file."""
    saved = torch.load(run_folder / "checkpoint.pt", map_location="cpu", weights_only=False)
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    configs = {}
    for scheme in recipe.schemes:
        model = BertLab(twin_config(scheme, recipe, words))
        model.load_state_dict({**saved["models"][scheme], WORDS: words}, strict=True)
        path = out / f"twin-{scheme}.safetensors"
        save_file(own_state(model), str(path), metadata={"scheme": scheme, "step": str(saved["run"]["step"])})
        path.chmod(0o644)  # safetensors writes 0600: readable by whoever installs the package
        sizes[path.name] = path.stat().st_size
        configs[scheme] = model.config.to_dict()
    (out / "twins.json").write_text(json.dumps({"recipe": asdict(recipe), "configs": configs,
                                                "history": saved["run"]["history"], "legs": saved["run"]["legs"],
                                                "step": saved["run"]["step"]}, indent=1))
    write_twin_card(out)  # MODEL_CARD.md from twins.json (and measures.json, once bench_twins.py wrote it)
    return sizes


def merge_twins(joint: Path, alone: Path, schemes: Sequence[str]) -> int:
    """Put ``schemes``' twins from the run ``alone`` (trained on their own, from step 0, on the same batches: each
    twin's weights depend only on its own start and the batch of every step) into the run ``joint``, both at the
    same step: their weights, optimisers and validation losses. Returns the step. Used when one twin's recipe was
    corrected after the others had started (its retraining is recorded as a leg of the joint run)."""
    a = torch.load(joint / "checkpoint.pt", map_location="cpu", weights_only=False)
    b = torch.load(alone / "checkpoint.pt", map_location="cpu", weights_only=False)
    if a["run"]["step"] != b["run"]["step"]:
        raise ValueError(f"the runs are at steps {a['run']['step']} and {b['run']['step']}: bring {alone} to the same "
                         "step first (--stop-at)")
    losses = {point["step"]: point for point in b["run"]["history"]}
    for scheme in schemes:
        a["models"][scheme], a["optimisers"][scheme] = b["models"][scheme], b["optimisers"][scheme]
        for point in a["run"]["history"]:
            for key in ("loss", "train_loss"):
                if point["step"] in losses and scheme in losses[point["step"]][key]:
                    point[key][scheme] = losses[point["step"]][key][scheme]
                else:
                    point[key].pop(scheme, None)  # trained with the recipe before the correction: not this twin's
    a["run"]["legs"].append({"leg": len(a["run"]["legs"]) + 1, "merged": list(schemes), "from": str(alone),
                             "to_step": a["run"]["step"], "legs_alone": b["run"]["legs"]})
    partial = joint / "checkpoint.partial"
    torch.save(a, partial)
    partial.replace(joint / "checkpoint.pt")
    return a["run"]["step"]
