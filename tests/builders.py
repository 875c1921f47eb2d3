"""Checkpoints the tests build themselves: random Hugging Face BERTs with a small vocabulary."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

WORDS = ("the a an cat dog sat on mat and slept ran to park is was big small red blue he she it "
         "they saw with in of that this bird flew over house tree quickly slowly , . ! ? "
         "play ##ing ##ed ##s run jump un ##believ ##able book read reads").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS))


def write_vocab(folder: Path) -> None:
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))


def token_ids(n: int, batch: int = 1, seed: int = 0) -> torch.Tensor:
    """(batch, n) random word ids of VOCAB between [CLS] and [SEP], seeded."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, len(VOCAB), (batch, n), generator=generator)
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP]
    return ids


def hf_config(hidden=32, layers=2, heads=4, intermediate=64, max_pos=64, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=len(VOCAB), hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=heads, intermediate_size=intermediate,
                      max_position_embeddings=max_pos, type_vocab_size=2, pad_token_id=0,
                      attn_implementation="eager", **extra)


def random_pretraining_model(seed: int = 0, **cfg):
    """A transformers BertForPreTraining with random weights (non-zero biases too)."""
    from transformers import BertForPreTraining

    torch.manual_seed(seed)
    model = BertForPreTraining(hf_config(**cfg)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def save_checkpoint(model, folder: Path, legacy: bool = False, bare: bool = False) -> Path:
    """Write config.json + model.safetensors + vocab.txt the way real checkpoints come.

    legacy: LayerNorm.gamma/beta names, an explicit tied decoder weight and only the decoder
    bias alias (as the original bert-base-uncased conversion has). bare: BertModel-style keys
    without the ``bert.`` prefix and without heads (as the MiniLM package ships).
    """
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    cfg = model.config.to_dict()
    if bare:
        state = {k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}
    elif legacy:
        renamed = {}
        for k, v in state.items():
            k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
            renamed[k] = v
        bias = renamed.pop("cls.predictions.bias")
        renamed["cls.predictions.decoder.bias"] = bias
        renamed["cls.predictions.decoder.weight"] = renamed["bert.embeddings.word_embeddings.weight"].clone()
        state = renamed
    else:
        state.pop("cls.predictions.decoder.weight", None)
        state.pop("cls.predictions.decoder.bias", None)
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(cfg))
    write_vocab(folder)
    return folder


def run_cli(*args: str):
    """``bertviz-lab ARGS`` in this process (``cli.main``, what ``python -m bertviz_lab`` runs), with its
    exit code and printed text as a CompletedProcess: a subprocess would pay ~4 s of imports per call.
    tests/test_hostile.py runs the real ``python -m`` process for what only a process shows (warnings,
    undecodable argv)."""
    import io
    import subprocess
    from contextlib import redirect_stderr, redirect_stdout

    from bertviz_lab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exit_:  # argparse refuses its arguments with exit 2
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


# ---- corpora the MLM/NSP tests build (UD-style documents, a WordNet-shaped folder) ----
def conllu_documents(path: Path, documents: dict[str, list[str]]) -> Path:
    """A CoNLL-U file with ``# newdoc`` documents whose sentences are the given texts."""
    blocks = []
    for doc, sentences in documents.items():
        for i, text in enumerate(sentences):
            words = text.split()
            meta = ([f"# newdoc id = {doc}"] if i == 0 else []) + [f"# sent_id = {doc}-{i}", f"# text = {text}"]
            rows = [f"{k + 1}\t{w}\t{w}\tX\t_\t_\t{0 if k == 0 else 1}\t{'root' if k == 0 else 'dep'}\t_\t_"
                    for k, w in enumerate(words)]
            blocks.append("\n".join(meta + rows))
    path.write_text("\n\n".join(blocks) + "\n\n")
    return path


def fake_wordnet(folder: Path, n: int = 60) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for part in ("noun", "verb", "adj", "adv"):
        rows = [f"  licence header line {part}"] + [
            f"{i:08d} 03 n 01 thing 0 000 | a {part} gloss number {i} here; \"the {part} example {i} is here\""
            for i in range(n)]
        (folder / f"data.{part}").write_text("\n".join(rows) + "\n")
    return folder


def nsp_settings(corpus, tiny_folder, **extra):
    from bertviz_lab.mlm.train import TrainSettings

    return TrainSettings(corpus=str(corpus), steps=6, seed=2, device="cpu", train_layers=1, batch_size=8,
                         eval_every=3, bf16=False, checkpoint_every=2, model=str(tiny_folder), nsp=True,
                         whole_word=True, **extra)
