"""Fine-tune the embedded encoder into a two-class sentiment classifier on SST-2's train split, in
resumable legs, and ship only what training changed.

The model is Hugging Face's ``BertForSequenceClassification`` (pooler on [CLS], dropout, a Linear to
two classes; ``bert/encoder/classifier.py`` computes it). The top ``train_layers`` encoder layers, the pooler
and the classifier are trained; the embeddings and lower layers stay as published, so the asset holds
just those tensors (float16) and loads on top of the packaged MiniLM. Settings are fixed in advance
(no search on the validation split); the validation split is read once, at the end, with the
shipped float16 weights, and the test split never.

A leg stops after ``minutes`` at a checkpoint (every random state, the optimizer, the step), and
``resume=True`` continues it to exactly the weights of an uninterrupted run (``tests/test_sentiment.py``).
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tqdm import tqdm

from ..bert import BertLab
from ..bert.loading.checkpoints import read_checkpoint
from ..mlm.train import CHECKPOINT, Progress, length_batches, load_checkpoint, make_optimizer, optimizer_step, save_checkpoint
from .data import LABELS, read_sst2

HEAD_FILE = "head.safetensors"


@dataclass
class ClassifierSettings:
    train: str = "data/sst2/train.tsv"
    validation: str = "data/sst2/dev.tsv"
    model: str = "minilm-original"  # the encoder to fine-tune (tests use a tiny folder)
    train_layers: int = 3
    steps: int = 4200  # two epochs of SST-2's 67,349 phrases at batch 32
    batch_size: int = 32
    lr: float = 5e-5  # the layers and the classifier
    head_lr: float = 5e-5  # the pooler
    warmup: float = 0.06
    max_length: int = 64
    seed: int = 0
    checkpoint_every: int = 200
    source: str = ""  # where the data came from (repository and commit), recorded in run.json


def classifier_model(settings: ClassifierSettings) -> tuple[BertLab, object]:
    """The encoder's published weights under a freshly initialised two-class head (seeded)."""
    ckpt = read_checkpoint(settings.model, mlm_head=None)
    cfg = ckpt.config
    if not cfg.has_pooler:
        raise ValueError(f"{ckpt.name} has no pooler, which a BERT sequence classifier reads")
    cfg.has_mlm_head = cfg.has_nsp_head = False
    cfg.n_classes, cfg.classifier_act = len(LABELS), None
    cfg.extra.update(id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)},
                     architectures=["BertForSequenceClassification"])
    model = BertLab(cfg)
    state = {k: v for k, v in ckpt.state.items() if not k.startswith("cls.")}
    generator = torch.Generator().manual_seed(settings.seed)
    head = model.classifier.out_proj
    state["classifier.out_proj.weight"] = torch.empty_like(head.weight).normal_(0.0, 0.02, generator=generator)
    state["classifier.out_proj.bias"] = torch.zeros_like(head.bias)
    model.load_state_dict(state, strict=True)
    return model, ckpt.tokenizer


def trained_names(model: BertLab, train_layers: int) -> list[str]:
    first = model.config.num_hidden_layers - train_layers
    return [n for n, _ in model.named_parameters()
            if n.startswith(("classifier.", "bert.pooler."))
            or (n.startswith("bert.encoder.layer.") and int(n.split(".")[3]) >= first)]


def encode(tokenizer, sentences: list[str], max_length: int) -> list[list[int]]:
    out = []
    for encoding in tokenizer.encode_batch(sentences):
        ids = encoding.ids
        out.append(ids if len(ids) <= max_length else ids[:max_length - 1] + ids[-1:])  # keep [SEP]
    return out


def padded(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)  # (batch, pos); [PAD] is 0
    mask = torch.zeros(len(rows), width, dtype=torch.long)  # (batch, pos)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
    return ids, mask


def set_train_mode(model: BertLab, train_layers: int) -> None:
    """Dropout only where weights are trained: the frozen layers compute what they will compute later."""
    model.eval()
    first = model.config.num_hidden_layers - train_layers
    for i, layer in enumerate(model.bert.encoder.layer):
        layer.train(i >= first)
    model.bert.pooler.train()
    model.classifier.train()


@torch.no_grad()
def accuracy(model: BertLab, rows: list[list[int]], labels: list[int], batch_size: int = 128) -> float:
    model.eval()
    right = 0
    for start in range(0, len(rows), batch_size):
        ids, mask = padded(rows[start:start + batch_size])
        logits = model(ids, attention_mask=mask, compute_mlm=False).class_logits  # (batch, classes)
        right += int((logits.argmax(-1) == torch.tensor(labels[start:start + batch_size])).sum())
    return right / len(rows)


def save_classifier(out: Path, model: BertLab, names: list[str]) -> None:
    """The trained tensors as float16 and the labels as a config fragment the loader merges."""
    out.mkdir(parents=True, exist_ok=True)
    state = {n: p.detach().to("cpu", torch.float16).contiguous() for n, p in model.named_parameters() if n in names}
    save_file(state, str(out / HEAD_FILE), metadata={"format": "pt"})
    labels = {"architectures": ["BertForSequenceClassification"], "id2label": {str(i): n for i, n in enumerate(LABELS)},
              "label2id": {n: i for i, n in enumerate(LABELS)}}
    (out / "config.json").write_text(json.dumps(labels, indent=2) + "\n")


def shipped_accuracy(out: Path, model: BertLab, names: list[str], rows: list[list[int]], labels: list[int]) -> float:
    """Accuracy with the float16-rounded tensors the asset holds, not the float32 ones trained."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in names:
                param.copy_(param.half().float())
    return accuracy(model, rows, labels)


def train(out: str | Path, settings: ClassifierSettings, resume: bool = False, minutes: float | None = None,
          stop_after: int | None = None, progress: bool = True) -> dict | None:
    """Train (or resume) until ``settings.steps``; None when the leg stopped early at a checkpoint
    (after ``minutes`` or at step ``stop_after``), else the run record also written to run.json."""
    out = Path(out)
    torch.manual_seed(settings.seed)
    model, tokenizer = classifier_model(settings)
    names = trained_names(model, settings.train_layers)
    optimizer, scheduler, params = make_optimizer(model, names, settings)
    rng, generator = random.Random(settings.seed), torch.Generator().manual_seed(settings.seed)
    train_data = read_sst2(settings.train)
    rows = encode(tokenizer, train_data.sentences, settings.max_length)
    state = load_checkpoint(out, model, optimizer, scheduler, rng, generator, settings) if resume else Progress()
    ended = state.legs[-1]["to"] if state.legs else 0
    if state.step > ended:  # the last leg was killed: it counts from its last checkpoint
        state.legs.append({"from": ended, "to": state.step, "seconds": None, "killed": True})
    leg_start, first_step = time.monotonic(), state.step
    bar = tqdm(total=settings.steps, initial=state.step, desc="train sst2", disable=not progress, unit="step")
    while state.step < settings.steps:
        if not state.batches:
            state.epoch += 1
            state.batches = length_batches([len(r) for r in rows], settings.batch_size, rng)
        batch = state.batches.pop(0)
        set_train_mode(model, settings.train_layers)
        ids, mask = padded([rows[i] for i in batch])
        logits = model(ids, attention_mask=mask, compute_mlm=False).class_logits  # (batch, classes)
        loss = F.cross_entropy(logits, torch.tensor([train_data.labels[i] for i in batch]))
        optimizer_step(loss, optimizer, scheduler, params, state)
        if state.step % 100 == 0:
            state.history.append({"step": state.step, "loss": round(state.running, 5)})
        bar.update(1)
        bar.set_postfix(loss=f"{state.running:.3f}")
        out_of_time = minutes is not None and time.monotonic() - leg_start > 60 * minutes
        if state.step < settings.steps and (state.step == stop_after or out_of_time
                                            or state.step % settings.checkpoint_every == 0):
            if state.step == stop_after or out_of_time:
                state.legs.append({"from": first_step, "to": state.step,
                                   "seconds": round(time.monotonic() - leg_start, 1)})
            save_checkpoint(out, model, names, optimizer, scheduler, rng, generator, state, settings)
            if state.step == stop_after or out_of_time:
                bar.close()
                return None
    bar.close()
    state.legs.append({"from": first_step, "to": state.step, "seconds": round(time.monotonic() - leg_start, 1)})
    save_classifier(out, model, names)
    validation = read_sst2(settings.validation)
    record = {"settings": asdict(settings), "train_sha256": train_data.sha256, "train_rows": len(rows),
              "validation_sha256": validation.sha256, "validation_rows": len(validation.sentences),
              "validation_accuracy": shipped_accuracy(out, model, names,
                                                      encode(tokenizer, validation.sentences, settings.max_length),
                                                      validation.labels),
              "trained_parameters": sum(p.numel() for n, p in model.named_parameters() if n in names),
              "fine_tuned_layers": sorted({int(n.split(".")[3]) + 1 for n in names if n.startswith("bert.encoder.")}),
              "history": state.history, "legs": state.legs, "epochs": state.epoch + 1}
    (out / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / CHECKPOINT).unlink(missing_ok=True)
    return record
