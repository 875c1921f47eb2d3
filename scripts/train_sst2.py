"""Train the shipped SST-2 classifier (assets/minilm-sst2) in resumable legs of at most 45 minutes.

    python scripts/train_sst2.py --data DIR --out runs/sst2             # first leg
    python scripts/train_sst2.py --data DIR --out runs/sst2 --resume    # next legs, until it finishes
    python scripts/train_sst2.py --data DIR --out runs/sst2 --ship      # copy the result into assets/

DIR holds GLUE's SST-2 ``train.tsv`` and ``dev.tsv``; the shipped run read the public copy in
github.com/awake020/pytorch_Bert_sst2 at commit ce2ab1719d32182e6233b24b2de246bd32814fde (its
``SST-2/`` folder: 67,349 train phrases, 872 validation sentences, the GLUE splits). The test split is
never read.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from bertviz_lab.resources import ASSETS
from bertviz_lab.sentiment.card import write_card
from bertviz_lab.sentiment.fine_tune import HEAD_FILE, ClassifierSettings, train

SOURCE = "github.com/awake020/pytorch_Bert_sst2@ce2ab1719d32182e6233b24b2de246bd32814fde (SST-2/train.tsv, SST-2/dev.tsv)"
SHIPPED = ASSETS / "minilm-sst2"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="folder with train.tsv and dev.tsv (GLUE SST-2)")
    parser.add_argument("--out", default="runs/sst2")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--minutes", type=float, default=45.0, help="stop this leg at a checkpoint after this long")
    parser.add_argument("--ship", action="store_true", help="copy the finished run into assets/minilm-sst2")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (1 keeps a busy machine responsive)")
    args = parser.parse_args()
    out = Path(args.out)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.ship:
        SHIPPED.mkdir(exist_ok=True)
        for name in (HEAD_FILE, "config.json", "run.json"):
            shutil.copyfile(out / name, SHIPPED / name)  # the files' contents, readable by all (not 0600)
        write_card(SHIPPED)
        print(f"shipped {out} -> {SHIPPED} (with MODEL_CARD.md)")
        return 0
    data = Path(args.data)
    settings = ClassifierSettings(train=str(data / "train.tsv"), validation=str(data / "dev.tsv"), source=SOURCE)
    record = train(out, settings, resume=args.resume, minutes=min(args.minutes, 45.0))
    if record is None:
        print(f"leg ended at a checkpoint; continue with: python scripts/train_sst2.py --data {data} --out {out} --resume")
        return 0
    print(json.dumps({k: record[k] for k in ("validation_accuracy", "epochs", "legs")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
