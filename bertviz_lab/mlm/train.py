"""Train a masked-word head for the embedded MiniLM encoder (which ships without one).

The head is BERT's (dense, GELU, LayerNorm, decoder tied to the frozen word embeddings, output
bias). Optionally the top ``train_layers`` encoder layers are fine-tuned too; the word
embeddings always stay frozen. Logits are computed only at the chosen positions.
"""
from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from ..bert import BertConfig, BertLab
from ..lab import Lab, load
from .evaluate import evaluate
from .evaluate_nsp import evaluate_nsp
from .examples import NOT_PAIR, TokenizedCorpus, epoch_examples, tokenize_examples
from .objective import IGNORE, mask_tokens, mlm_loss, nsp_loss
from .running_text import Passage, n_sentences, read_documents, read_passages_jsonl

FIRST_REAL_TOKEN = 999  # in BERT's uncased vocabulary ids below this are [PAD]/[unusedN]/specials


@dataclass
class TrainSettings:
    corpus: str = "data/corpus"
    steps: int = 3000
    seed: int = 0
    device: str = "auto"
    train_layers: int = 6
    batch_size: int = 64
    lr: float = 2e-4
    head_lr: float = 1e-3
    warmup: float = 0.05
    max_length: int = 64
    whole_word: bool = False
    bf16: bool = True
    eval_every: int = 500
    validation_lines: int = 1000
    checkpoint_every: int = 250  # steps between resumable checkpoints (out/checkpoint.pt)
    model: str = "default"  # the encoder to train a head for (tests use a tiny one)
    nsp: bool = False  # also train the pooler and a next-sentence head (needs running text)
    init: str | None = None  # a head folder (head.safetensors) to start from instead of a fresh head
    running_share: float = 0.65  # share of each epoch's inputs that come from running text
    pair_fraction: float = 0.5  # share of running-text sentences that start an NSP pair
    pair_max_length: int = 128


def head_model(encoder: Lab, nsp: bool = False, init: str | Path | None = None) -> BertLab:
    """The encoder's weights in a model that also has a freshly initialised MLM head (and NSP
    head), or with ``init`` the weights of an earlier trained head folder where it has them."""
    cfg = BertConfig.from_dict(encoder.model.config.to_dict())
    if nsp and not cfg.has_pooler:
        raise ValueError(f"{encoder.name} has no pooler, which next-sentence prediction needs")
    cfg.has_mlm_head, cfg.has_nsp_head = True, nsp
    model = BertLab(cfg)
    encoder_state = {k: v for k, v in encoder.model.state_dict().items() if not k.startswith("cls.")}
    missing, unexpected = model.load_state_dict(encoder_state, strict=False)
    assert not unexpected and all(k.startswith("cls.") for k in missing), (missing, unexpected)
    head = model.cls.predictions
    torch.nn.init.normal_(head.transform.dense.weight, std=0.02)
    torch.nn.init.zeros_(head.transform.dense.bias)
    if nsp:
        torch.nn.init.normal_(model.cls.seq_relationship.weight, std=0.02)
        torch.nn.init.zeros_(model.cls.seq_relationship.bias)
    if init is not None:
        start = load_file(str(Path(init) / "head.safetensors"))
        own = dict(model.named_parameters())
        unknown = sorted(set(start) - set(own))
        if unknown:
            raise ValueError(f"{init}: weights this model lacks: {', '.join(unknown[:5])}")
        with torch.no_grad():
            for name, value in start.items():
                own[name].copy_(value.float())
    return model


def trainable_names(model: BertLab, train_layers: int) -> list[str]:
    n = model.config.num_hidden_layers
    first = n - train_layers
    keep = []
    for name, _ in model.named_parameters():
        if name.startswith("cls.") or (model.has_nsp_head and name.startswith("bert.pooler.")):
            keep.append(name)
        elif name.startswith("bert.encoder.layer."):
            if int(name.split(".")[3]) >= first:
                keep.append(name)
    return keep


def length_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffle, then sort within pools of 50 batches so each batch has similar lengths."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lengths.__getitem__)
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def make_optimizer(model: BertLab, names: list[str], settings: TrainSettings):
    """AdamW with the head's and the layers' learning rates, warm-up then linear decay."""
    for name, p in model.named_parameters():
        p.requires_grad = name in names
    heads = ("cls.", "bert.pooler.")
    head_params = [p for n, p in model.named_parameters() if n in names and n.startswith(heads)]
    layer_params = [p for n, p in model.named_parameters() if n in names and not n.startswith(heads)]
    groups = [{"params": head_params, "lr": settings.head_lr}]
    if layer_params:
        groups.append({"params": layer_params, "lr": settings.lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    warm = max(1, int(settings.warmup * settings.steps))

    def schedule(step: int) -> float:
        return step / warm if step < warm else max(0.0, (settings.steps - step) / max(1, settings.steps - warm))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule), head_params + layer_params


def validation_share(n_lines: int, wanted: int) -> int:
    """How many of train.txt's first lines to watch instead of training on, when the corpus has no
    validation.txt: ``wanted``, but at most a tenth of the lines (at least one of two or more).
    Taking all ``wanted`` (1,000 by default) left a corpus of 1,000 lines or fewer nothing to train on."""
    return min(wanted, max(1, n_lines // 10)) if n_lines > 1 else 0


def read_lines(settings: TrainSettings) -> tuple[list[str], list[str], list[Passage]]:
    """(validation lines, training lines, running-text passages) of the corpus folder.

    Validation comes from ``validation.txt`` when build-corpus wrote one (set aside from the training
    splits), else from the first lines of train.txt (which are then not trained on; see
    ``validation_share``). A corpus with nothing to train on is a ValueError saying so."""
    corpus = Path(settings.corpus)
    if not (corpus / "train.txt").is_file():
        raise FileNotFoundError(f"{corpus}/train.txt not found: run `bertviz-lab build-corpus --out {corpus}`")
    lines = [ln for ln in (corpus / "train.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    passages = read_passages_jsonl(corpus / "train_docs.jsonl") if (corpus / "train_docs.jsonl").is_file() else []
    if (corpus / "validation.txt").is_file():
        validation = [ln for ln in (corpus / "validation.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    else:
        held = validation_share(len(lines), settings.validation_lines)
        validation, lines = lines[:held], lines[held:]
    if not lines and not passages:
        raise ValueError(f"{corpus}/train.txt has no line to train on: it needs at least one non-empty line "
                         "(two or more to also watch a validation line)")
    return validation, lines, passages


def check_maskable(corpus: TokenizedCorpus, special_ids: torch.Tensor, where: str) -> None:
    """An epoch with no token to mask would repeat forever without a training step."""
    special = set(special_ids.tolist())
    if not any(token not in special for row in corpus.ids for token in row):
        raise ValueError(f"{where}: no training line has a word the tokenizer keeps (lines of only zero-width, "
                         "control or combining characters become no word piece), so there is nothing to mask")


def save_head(out: Path, model: BertLab, names: list[str], record: dict) -> dict:
    """The trained parameters as float16 safetensors, and run.json describing the run."""
    out.mkdir(parents=True, exist_ok=True)
    state = {n: p.detach().to("cpu", torch.float16).contiguous() for n, p in model.named_parameters() if n in names}
    save_file(state, str(out / "head.safetensors"), metadata={"format": "pt"})
    record.update({"trained_parameters": sum(p.numel() for p in state.values()),
                   "fine_tuned_layers": sorted({int(n.split(".")[3]) for n in names
                                                if n.startswith("bert.encoder.layer.")}),
                   "asset_bytes": (out / "head.safetensors").stat().st_size})
    (out / "run.json").write_text(json.dumps(record, indent=2))
    return record


def set_train_mode(model: BertLab, train_layers: int) -> None:
    model.train()
    for i, layer in enumerate(model.bert.encoder.layer):  # frozen layers: no dropout noise
        layer.train(i >= model.config.num_hidden_layers - train_layers)
    model.bert.embeddings.eval()


CHECKPOINT = "checkpoint.pt"


@dataclass
class Progress:
    """Everything that moves during training besides the weights, so a resumed run continues exactly."""

    step: int = 0
    running: float | None = None
    history: list = field(default_factory=list)
    batches: list = field(default_factory=list)
    elapsed: float = 0.0
    epoch: int = -1
    legs: list = field(default_factory=list)  # one entry per leg of a resumable chain (see ``end_leg``)


def optimizer_step(loss: torch.Tensor, optimizer, scheduler, params: list, state: Progress) -> None:
    """One step of every trainer here: gradients clipped to norm 1, the schedule advanced, the step counted and
    the running loss (an exponential mean, 0.98) updated."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    scheduler.step()
    state.step += 1
    value = loss.item()
    state.running = value if state.running is None else 0.98 * state.running + 0.02 * value


def save_checkpoint(out: Path, model: BertLab, names: list[str], optimizer, scheduler, rng: random.Random,
                    generator: torch.Generator, state: Progress, settings: TrainSettings) -> None:
    """Weights being trained, optimizer, scheduler, every random state and the progress, written to a
    temporary file and renamed: a kill at any moment leaves the previous checkpoint intact."""
    out.mkdir(parents=True, exist_ok=True)
    version, internal, gauss = rng.getstate()
    payload = {"settings": json.dumps(asdict(settings)), "progress": json.dumps(asdict(state)),
               "weights": {n: p.detach().cpu().clone() for n, p in model.named_parameters() if n in names},
               "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
               "python_random": [version, list(internal), gauss], "mask_generator": generator.get_state(),
               "torch_random": torch.get_rng_state()}
    tmp = out / f".{CHECKPOINT}.partial"
    torch.save(payload, tmp)
    tmp.replace(out / CHECKPOINT)


def load_checkpoint(out: Path, model: BertLab, optimizer, scheduler, rng: random.Random,
                    generator: torch.Generator, settings: TrainSettings) -> Progress:
    path = out / CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint to resume from: {path} does not exist")
    payload = torch.load(path, map_location="cpu", weights_only=True)
    saved = json.loads(payload["settings"])
    if saved != json.loads(json.dumps(asdict(settings))):
        changed = sorted(k for k in saved if saved[k] != asdict(settings).get(k))
        raise ValueError(f"{path} was written with other settings ({', '.join(changed)}); resume with the same ones")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in payload["weights"]:
                param.copy_(payload["weights"][name])
    optimizer.load_state_dict(payload["optimizer"])
    scheduler.load_state_dict(payload["scheduler"])
    version, internal, gauss = payload["python_random"]
    rng.setstate((version, tuple(internal), gauss))
    generator.set_state(payload["mask_generator"])
    torch.set_rng_state(payload["torch_random"])
    return Progress(**json.loads(payload["progress"]))


def validation_documents(settings: TrainSettings) -> list:
    """Held-aside documents for watching NSP during training (NotNext needs at least two), or none."""
    path = Path(settings.corpus) / "validation_docs.txt"
    documents = read_documents(path) if settings.nsp and path.is_file() else []
    return documents if len(documents) > 1 else []


def batch_loss(model: BertLab, batch: dict, inputs: torch.Tensor, labels: torch.Tensor,
               settings: TrainSettings) -> torch.Tensor:
    """MLM loss at the masked positions, plus NSP loss over the batch's sentence pairs."""
    device = next(model.parameters()).device
    chosen = labels != IGNORE  # (batch, pos)
    set_train_mode(model, settings.train_layers)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=settings.bf16):
        result = model(input_ids=inputs.to(device), token_type_ids=batch["segments"].to(device),
                       attention_mask=batch["attention_mask"].to(device), mlm_positions=chosen.to(device))
    loss = mlm_loss(result.mlm_logits.float(), labels.to(device))
    pairs = batch["is_random"] != NOT_PAIR  # (batch,)
    if settings.nsp and pairs.any():
        pairs = pairs.to(device)
        loss = loss + nsp_loss(result.nsp_logits.float()[pairs], batch["is_random"].to(device)[pairs])
    return loss


def validation_point(eval_lab: Lab, validation: list[str], documents: list, settings: TrainSettings, state,
                     started: float) -> dict:
    """One row of the training history: running loss, validation top-1/top-5 and (with documents) NSP."""
    scores = evaluate(eval_lab, validation, seed=settings.seed, progress=False)
    point = {"step": state.step, "loss": round(state.running, 4), "elapsed_s": round(time.time() - started, 1),
             **{k: round(v, 4) for k, v in scores.items() if k in ("top1", "top5", "n")}}
    if documents:
        point["nsp"] = round(evaluate_nsp(eval_lab, documents, seed=settings.seed, progress=False)["accuracy"], 4)
    return point


def check_running_text(settings: TrainSettings, passages: list[Passage]) -> None:
    if settings.nsp and not passages:
        raise ValueError(f"{settings.corpus} has no running text (train_docs.jsonl), which next-sentence "
                         "prediction needs: build the corpus with --running-text")


def end_leg(state: Progress, leg_started: float, first_step: int, command: str | None) -> None:
    """Record the leg that just ended: the steps it ran, its wall time and how it was started, so a
    chain of legs can be reproduced leg by leg from the model card."""
    state.legs.append({"leg": len(state.legs) + 1, "from_step": first_step, "to_step": state.step,
                       "minutes": round((time.time() - leg_started) / 60, 1), "command": command,
                       "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def watch(out: Path, eval_lab: Lab, names: list[str], validation: tuple[list[str], list], settings: TrainSettings,
          state: Progress, started: float) -> str:
    """A validation point: scored, added to the history and kept as a snapshot; returns its line."""
    point = validation_point(eval_lab, *validation, settings, state, started)
    state.history.append(point)
    snapshot(out, eval_lab.model, names, settings, state)
    return (f"step {state.step}: loss {state.running:.3f}, validation top1 {point['top1']:.3f} top5 {point['top5']:.3f} "
            f"(n={point['n']})" + (f", NSP {point['nsp']:.3f}" if "nsp" in point else ""))


def snapshot(out: Path, model: BertLab, names: list[str], settings: TrainSettings, state: Progress) -> None:
    """The head as it is at a validation point (``out/steps/step-N``), so the selection rule can
    choose between the points of a chain, not only its end."""
    save_head(out / "steps" / f"step-{state.step}", model, names,
              {"settings": asdict(settings), "steps": state.step, "seed": settings.seed, "history": list(state.history),
               "legs": list(state.legs)})


def train(out: Path, settings: TrainSettings, progress: bool = True, resume: bool = False,
          stop_after: int | None = None, leg_minutes: float | None = None, command: str | None = None) -> dict | None:
    """Train (or with ``resume`` continue) a head; checkpoints every ``settings.checkpoint_every`` steps.
    ``leg_minutes`` ends this leg at the first step past that wall time, with a checkpoint and the leg
    recorded; ``--resume`` runs the next. The learning-rate schedule spans ``settings.steps`` over all
    legs, so a chain equals one run. ``stop_after`` ends after that step as a kill would (tests)."""
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    validation, lines, passages = read_lines(settings)
    check_running_text(settings, passages)
    validation_docs = validation_documents(settings)
    encoder = load(settings.model, device=settings.device, mlm_head=None)
    device = encoder.device
    model = head_model(encoder, nsp=settings.nsp, init=settings.init).to(device)
    names = trainable_names(model, settings.train_layers)
    optimizer, scheduler, params = make_optimizer(model, names, settings)
    state = load_checkpoint(out, model, optimizer, scheduler, rng, generator, settings) if resume else Progress()
    corpus = None

    def examples_of(epoch: int):
        chosen = epoch_examples(lines, passages, settings.seed, epoch, settings.running_share, settings.pair_fraction)
        return tokenize_examples(encoder.tokenizer, chosen, min(settings.max_length, encoder.max_tokens),
                                 min(settings.pair_max_length, encoder.max_tokens))

    special_ids = torch.tensor(sorted(encoder.special_ids | {encoder.mask_id}))
    vocab = model.config.vocab_size
    random_low = FIRST_REAL_TOKEN if vocab > 10 * FIRST_REAL_TOKEN else 0  # tiny test vocabularies
    eval_lab = Lab(model, encoder.checkpoint, device, settings.model)
    started = time.time() - state.elapsed
    leg_started, first_step = time.time(), state.step
    bar = tqdm(total=settings.steps, initial=state.step, desc="train-mlm-head", unit="step", disable=not progress)
    while state.step < settings.steps:
        if not state.batches:
            state.epoch += 1
            corpus = examples_of(state.epoch)
            check_maskable(corpus, special_ids, settings.corpus)
            state.batches = length_batches(corpus.lengths, settings.batch_size, rng)
        elif corpus is None:  # resumed mid-epoch: rebuild that epoch's inputs
            corpus = examples_of(state.epoch)
        batch = corpus.batch(state.batches.pop())
        inputs, labels = mask_tokens(batch["ids"], torch.isin(batch["ids"], special_ids) | (batch["attention_mask"] == 0),
                                     encoder.mask_id, vocab, generator,
                                     word_ids=batch["words"] if settings.whole_word else None,
                                     random_token_low=random_low)
        if not (labels != IGNORE).any():
            continue
        optimizer_step(batch_loss(model, batch, inputs, labels, settings), optimizer, scheduler, params, state)
        bar.set_postfix(loss=f"{state.running:.3f}")
        bar.update(1)
        if state.step % settings.eval_every == 0 or state.step == settings.steps:
            model.eval()
            bar.write(watch(out, eval_lab, names, (validation, validation_docs), settings, state, started),
                      file=sys.stderr)  # progress, beside the bar: stdout is the command's result
        leg_over = leg_minutes is not None and state.step < settings.steps and time.time() - leg_started >= leg_minutes * 60
        if leg_over:
            end_leg(state, leg_started, first_step, command)
        if state.step % settings.checkpoint_every == 0 or state.step == stop_after or leg_over:
            state.elapsed = time.time() - started
            save_checkpoint(out, model, names, optimizer, scheduler, rng, generator, state, settings)
        if state.step == stop_after or leg_over:
            bar.close()
            return None
    bar.close()
    model.eval()
    end_leg(state, leg_started, first_step, command)
    record = save_head(out, model, names, {
        "settings": asdict(settings), "corpus": corpus_record(settings), "train_lines": len(lines) + n_sentences(passages),
        "validation_lines": len(validation), "steps": settings.steps, "seed": settings.seed,
        "train_seconds": round(time.time() - started, 1), "device": str(device),
        "torch_threads": torch.get_num_threads(), "history": state.history, "legs": state.legs})
    (out / CHECKPOINT).unlink(missing_ok=True)
    return record


def corpus_record(settings: TrainSettings) -> dict:
    corpus_file = Path(settings.corpus) / "corpus.json"
    return json.loads(corpus_file.read_text()) if corpus_file.is_file() else {}
