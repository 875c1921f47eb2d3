"""Probes with no trained parameters or with their information cost: ``perturbed-masking`` (trees read from the
model by masking, Wu et al. 2020) and ``description-length`` (the online codelength of dependency relations, Voita & Titov
2020)."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from .options import (
    WorkBar,
    add_engine_options,
    add_model_options,
    command,
    emit,
    engine_from_args,
    lab_from_args,
    positive_int,
    seed,
)

EXAMPLES = {
    "perturbed-masking": ["bertviz-lab perturbed-masking --treebank en_pud-ud-test.conllu --model minilm-original",
                          "bertviz-lab perturbed-masking --decoder eisner --max-sentences 100 --json"],
    "description-length": ["bertviz-lab description-length --train en_ewt-ud-train.conllu --dev en_ewt-ud-dev.conllu "
                  "--max-train-sentences 4000",
                  "bertviz-lab description-length --train en_ewt-ud-train.conllu --dev en_ewt-ud-dev.conllu --layers 2 3 "
                  "--no-baselines --json"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    add_perturbed_masking(sub)
    add_description_length(sub)


# ---- perturbed-masking ---------------------------------------------------------------------
def add_perturbed_masking(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "perturbed-masking",
                "dependency trees read from the model with no probe (Perturbed Masking, Wu et al. 2020): UAS per "
                "layer with Eisner and MST decoding, beside right-chain and the published bert-base figure",
                EXAMPLES["perturbed-masking"])
    p.add_argument("--treebank", type=Path, default=None, metavar="CONLLU",
                   help="gold trees to score against, .conllu or .conllu.gz (default: the shipped sample treebank)")
    p.add_argument("--decoder", choices=("eisner", "cle", "both"), default="both",
                   help="eisner: projective (their default); cle: Chu-Liu-Edmonds maximum spanning tree")
    p.add_argument("--no-gold-root", action="store_true",
                   help="decode without the gold root (their default injects it, and their 41.7 uses it)")
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--resamples", type=positive_int, default=1000)
    p.add_argument("--seed", type=seed, default=0)
    add_model_options(p, needs_mlm_head=False)
    add_engine_options(p)
    p.set_defaults(func=run_perturbed_masking)


def run_perturbed_masking(args: argparse.Namespace) -> int:
    from ..tasks.masking_trees import MaskingTreesRequest, masking_trees
    from ..tasks.treebanks import read_treebank

    sentences = read_treebank(args.treebank)[:args.max_sentences]  # a bad file fails before the model loads
    request = MaskingTreesRequest(sentences, ("eisner", "cle") if args.decoder == "both" else (args.decoder,),
                                  not args.no_gold_root, resamples=args.resamples, seed=args.seed,
                                  engine=engine_from_args(args))
    lab = lab_from_args(args)
    with WorkBar("perturbed-masking", "sentence", lambda total: f"{total:,} sentences", "sentence") as bar:
        done = masking_trees(request, lab, progress=bar)
    done.treebank = args.treebank.name if args.treebank else "the sample treebank"
    record = done.to_json()
    return emit(args, record, masking_summary(record))


def masking_summary(record: dict) -> Iterator[str]:
    uas = record["uas"]
    yield (f"model: {record['model']}; treebank: {record['treebank']}, {uas['sentences']:,} sentences, "
           f"{uas['words']:,} words (punctuation and the root arc counted, as their evaluation does)")
    for decoder in ("eisner", "cle"):
        if decoder in uas:
            yield f"{decoder}: " + ", ".join(f"L{row['layer']} {100 * row['uas']:.1f} [{100 * row['low']:.1f}, "
                                             f"{100 * row['high']:.1f}]" for row in uas[decoder])
    chain = uas["right-chain"]
    yield f"right-chain: {100 * chain['uas']:.1f} [{100 * chain['low']:.1f}, {100 * chain['high']:.1f}]"
    published = record["published"]
    yield (f"published: {published['uas']} for {published['model']} on {published['treebank']} (layer "
           f"{published['layer']}, {published['decoder']}): the same protocol on other weights, not a reproduction")
    yield from record["conclusions"]


# ---- description-length -----------------------------------------------------------------------------
def add_description_length(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "description-length",
                "online codelength of dependency relations per layer (MDL probing, Voita & Titov 2020), beside "
                "control labels and random weights", EXAMPLES["description-length"])
    p.add_argument("--train", type=Path, required=True, metavar="CONLLU", help="a train split (never a test split)")
    p.add_argument("--dev", type=Path, required=True, metavar="CONLLU", help="a dev split to stop each probe on")
    p.add_argument("--layers", type=int, nargs="+", default=None, help="layers (0 = embeddings; default: all)")
    p.add_argument("--max-train-sentences", type=positive_int, default=None)
    p.add_argument("--max-dev-sentences", type=positive_int, default=None)
    p.add_argument("--no-baselines", action="store_true", help="skip the control labels and the random weights")
    p.add_argument("--seed", type=seed, default=0)
    add_model_options(p, needs_mlm_head=False)
    add_engine_options(p, "batches of sentences (their word vectors)")
    p.set_defaults(func=run_description_length)


def run_description_length(args: argparse.Namespace) -> int:
    from ..tasks.description_length import BASELINES, DescriptionLengthRequest, description_length

    request = DescriptionLengthRequest(args.train, args.dev, tuple(args.layers) if args.layers else None,
                                       () if args.no_baselines else BASELINES, args.max_train_sentences,
                                       args.max_dev_sentences, args.seed, engine_from_args(args))
    lab = lab_from_args(args)
    record = description_length(request, lab, progress=WorkBar.note).to_json()
    return emit(args, record, codelength_summary(record))


def codelength_summary(record: dict) -> Iterator[str]:
    yield f"model: {record['model']}; online codelength in kbits (compression = uniform / online)"
    for name, rows in record["codelength"].items():
        yield f"{name}: " + ", ".join(f"L{r['layer']} {r['online_kbits']:.1f} ({r['compression']:.2f}x)" for r in rows)
