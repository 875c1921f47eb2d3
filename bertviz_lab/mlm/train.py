"""Train a masked-word head for the embedded MiniLM encoder (which ships without one).

The head is BERT's (dense, GELU, LayerNorm, decoder tied to the frozen word embeddings, output
bias). Optionally the top ``train_layers`` encoder layers are fine-tuned too; the word
embeddings always stay frozen. Logits are computed only at the chosen positions.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file
from tqdm import tqdm

from ..bert import BertConfig, BertLab
from ..lab import Lab, load
from .evaluate import evaluate
from .objective import IGNORE, mask_tokens, mlm_loss

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


def head_model(encoder: Lab) -> BertLab:
    """The encoder's weights in a model that also has a freshly initialised MLM head."""
    cfg = BertConfig.from_dict(encoder.model.config.to_dict())
    cfg.has_mlm_head, cfg.has_nsp_head = True, False
    model = BertLab(cfg)
    encoder_state = {k: v for k, v in encoder.model.state_dict().items() if not k.startswith("cls.")}
    missing, unexpected = model.load_state_dict(encoder_state, strict=False)
    assert not unexpected and all(k.startswith("cls.predictions.") for k in missing), (missing, unexpected)
    head = model.cls.predictions
    torch.nn.init.normal_(head.transform.dense.weight, std=0.02)
    torch.nn.init.zeros_(head.transform.dense.bias)
    return model


def trainable_names(model: BertLab, train_layers: int) -> list[str]:
    n = model.config.num_hidden_layers
    first = n - train_layers
    keep = []
    for name, _ in model.named_parameters():
        if name.startswith("cls.predictions."):
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
    head_params = [p for n, p in model.named_parameters() if n in names and n.startswith("cls.")]
    layer_params = [p for n, p in model.named_parameters() if n in names and not n.startswith("cls.")]
    groups = [{"params": head_params, "lr": settings.head_lr}]
    if layer_params:
        groups.append({"params": layer_params, "lr": settings.lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    warm = max(1, int(settings.warmup * settings.steps))

    def schedule(step: int) -> float:
        return step / warm if step < warm else max(0.0, (settings.steps - step) / max(1, settings.steps - warm))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule), head_params + layer_params


@dataclass
class TokenizedCorpus:
    ids: list[list[int]]
    words: list[list[int]]  # word index per token, -1 for specials

    @property
    def lengths(self) -> list[int]:
        return [len(i) for i in self.ids]

    def batch(self, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Right-padded (ids, word ids, attention mask) of the chosen lines."""
        lengths = [len(self.ids[i]) for i in rows]
        width = max(lengths)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        words = torch.full((len(rows), width), -1, dtype=torch.long)
        for row, i in enumerate(rows):
            ids[row, :lengths[row]] = torch.tensor(self.ids[i])
            words[row, :lengths[row]] = torch.tensor(self.words[i])
        attention_mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
        return ids, words, attention_mask


def tokenize_corpus(encoder: Lab, lines: list[str], cut: int) -> TokenizedCorpus:
    encodings = encoder.tokenizer.encode_batch(lines)
    ids_list = [e.ids[:cut - 1] + [e.ids[-1]] if len(e.ids) > cut else e.ids for e in encodings]
    word_list = [[-1 if w is None else w for w in e.word_ids][:len(ids)] for e, ids in zip(encodings, ids_list)]
    return TokenizedCorpus(ids_list, word_list)


def read_lines(settings: TrainSettings) -> tuple[list[str], list[str]]:
    """(validation lines, training lines) of the corpus's train.txt."""
    corpus = Path(settings.corpus)
    if not (corpus / "train.txt").is_file():
        raise FileNotFoundError(f"{corpus}/train.txt not found: run `bertviz-lab build-corpus --out {corpus}`")
    lines = [ln for ln in (corpus / "train.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    return lines[:settings.validation_lines], lines[settings.validation_lines:]


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


def train(out: Path, settings: TrainSettings, progress: bool = True, resume: bool = False,
          stop_after: int | None = None) -> dict | None:
    """Train (or with ``resume`` continue) a head; checkpoints every ``settings.checkpoint_every`` steps.
    ``stop_after`` ends the run after that step as an interruption would (tests use it)."""
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    validation, lines = read_lines(settings)
    encoder = load(settings.model, device=settings.device, mlm_head=None)
    device = encoder.device
    model = head_model(encoder).to(device)
    names = trainable_names(model, settings.train_layers)
    optimizer, scheduler, params = make_optimizer(model, names, settings)
    state = load_checkpoint(out, model, optimizer, scheduler, rng, generator, settings) if resume else Progress()
    corpus = tokenize_corpus(encoder, lines, settings.max_length)
    special_ids = torch.tensor(sorted(encoder.special_ids | {encoder.mask_id}))
    vocab = model.config.vocab_size
    random_low = FIRST_REAL_TOKEN if vocab > 10 * FIRST_REAL_TOKEN else 0  # tiny test vocabularies
    eval_lab = Lab(model, encoder.checkpoint, device, settings.model)
    started = time.time() - state.elapsed
    bar = tqdm(total=settings.steps, initial=state.step, desc="train-mlm-head", unit="step", disable=not progress)
    while state.step < settings.steps:
        state.batches = state.batches or length_batches(corpus.lengths, settings.batch_size, rng)
        ids, words, attention_mask = corpus.batch(state.batches.pop())
        special = torch.isin(ids, special_ids) | (attention_mask == 0)
        inputs, labels = mask_tokens(ids, special, encoder.mask_id, vocab, generator,
                                     word_ids=words if settings.whole_word else None, random_token_low=random_low)
        chosen = labels != IGNORE
        if not chosen.any():
            continue
        set_train_mode(model, settings.train_layers)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=settings.bf16):
            result = model(input_ids=inputs.to(device), attention_mask=attention_mask.to(device),
                           mlm_positions=chosen.to(device))
        loss = mlm_loss(result.mlm_logits.float(), labels.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        state.step += 1
        state.running = loss.item() if state.running is None else 0.98 * state.running + 0.02 * loss.item()
        bar.set_postfix(loss=f"{state.running:.3f}")
        bar.update(1)
        if state.step % settings.eval_every == 0 or state.step == settings.steps:
            model.eval()
            scores = evaluate(eval_lab, validation, seed=settings.seed, progress=False)
            state.history.append({"step": state.step, "loss": round(state.running, 4),
                                  "elapsed_s": round(time.time() - started, 1),
                                  **{k: round(v, 4) for k, v in scores.items() if k in ("top1", "top5", "n")}})
            bar.write(f"step {state.step}: loss {state.running:.3f}, validation top1 {scores['top1']:.3f} "
                      f"top5 {scores['top5']:.3f} (n={scores['n']})")
        if state.step % settings.checkpoint_every == 0 or state.step == stop_after:
            state.elapsed = time.time() - started
            save_checkpoint(out, model, names, optimizer, scheduler, rng, generator, state, settings)
        if state.step == stop_after:
            bar.close()
            return None
    bar.close()
    model.eval()
    corpus_file = Path(settings.corpus) / "corpus.json"
    record = save_head(out, model, names, {
        "settings": asdict(settings), "corpus": json.loads(corpus_file.read_text()) if corpus_file.is_file() else {},
        "train_lines": len(lines), "validation_lines": len(validation), "steps": settings.steps,
        "seed": settings.seed, "train_seconds": round(time.time() - started, 1), "device": str(device),
        "torch_threads": torch.get_num_threads(), "history": state.history})
    (out / CHECKPOINT).unlink(missing_ok=True)
    return record
