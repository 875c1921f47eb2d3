"""Subcommands that live in other modules, registered on the main parser."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .cli_common import EXTRA_COMMANDS, add_model_options, lab_from_args, positive_int


def build_corpus_command(sub) -> None:
    p = sub.add_parser("build-corpus", help="write the WordNet training/held-out corpus (needs wordnet-base)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--heldout", type=positive_int, default=2000)
    p.add_argument("--seed", type=int, default=0)

    def run(args) -> int:
        from .corpus import build_corpus

        print(json.dumps(build_corpus(args.out, heldout=args.heldout, seed=args.seed)))
        return 0

    p.set_defaults(func=run)


def train_command(sub) -> None:
    from .train_mlm import TrainSettings

    d = TrainSettings()
    p = sub.add_parser("train-mlm-head", help="train an MLM head for the embedded encoder")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--corpus", default=d.corpus, help="folder made by build-corpus (train.txt)")
    p.add_argument("--steps", type=positive_int, default=d.steps)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device)
    p.add_argument("--train-layers", type=int, default=d.train_layers, choices=range(0, 7),
                   help="fine-tune this many top encoder layers (0 = frozen encoder)")
    p.add_argument("--batch-size", type=positive_int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--head-lr", type=float, default=d.head_lr)
    p.add_argument("--whole-word", action="store_true")
    p.add_argument("--no-bf16", action="store_true", help="train in float32")
    p.add_argument("--eval-every", type=positive_int, default=d.eval_every)

    def run(args) -> int:
        from .train_mlm import train

        settings = TrainSettings(corpus=args.corpus, steps=args.steps, seed=args.seed, device=args.device,
                                 train_layers=args.train_layers, batch_size=args.batch_size, lr=args.lr,
                                 head_lr=args.head_lr, whole_word=args.whole_word, bf16=not args.no_bf16,
                                 eval_every=args.eval_every)
        record = train(args.out, settings)
        print(json.dumps({k: record[k] for k in ("steps", "train_seconds", "fine_tuned_layers", "asset_bytes")}))
        heldout = Path(args.corpus) / "heldout.txt"
        if heldout.is_file():
            from .analysis import load
            from .mlm_eval import evaluate
            from .model_card import write_model_card

            lab = load("default", device=args.device, mlm_head=args.out)  # float16 weights, as shipped
            scores = evaluate(lab, heldout.read_text(encoding="utf-8").splitlines(), seed=0, progress=False)
            record["heldout"] = scores
            (args.out / "run.json").write_text(json.dumps(record, indent=2))
            command = " ".join(["python -m bertviz_lab train-mlm-head"] + sys.argv[2:])
            write_model_card(args.out, scores, f"python -m bertviz_lab eval-mlm --text-file {heldout} --json",
                             command)
            print(json.dumps({"heldout": scores}))
        return 0

    p.set_defaults(func=run)


def eval_command(sub) -> None:
    p = sub.add_parser("eval-mlm", help="masked-word top-1/top-5 accuracy on a text file")
    p.add_argument("--text-file", required=True, type=Path)
    add_model_options(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (last line)")

    def run(args) -> int:
        from .analysis import InputError
        from .mlm_eval import evaluate

        if not args.text_file.is_file():
            raise FileNotFoundError(f"no such file: {args.text_file}")
        lab = lab_from_args(args)
        if not lab.model.has_mlm_head:
            raise InputError(f"model {args.model!r} has no MLM head; eval-mlm needs one")
        lines = args.text_file.read_text(encoding="utf-8").splitlines()
        scores = evaluate(lab, lines, seed=args.seed, max_sentences=args.max_sentences, batch_size=args.batch_size,
                          progress=sys.stderr.isatty())
        if args.json:
            print(json.dumps(scores))
        else:
            print(f"top-1 {scores['top1']:.4f}  top-5 {scores['top5']:.4f}  (n={scores['n']})")
        return 0

    p.set_defaults(func=run)


EXTRA_COMMANDS.extend([build_corpus_command, train_command, eval_command])


def compare_command(sub) -> None:
    from .interventions import PROBES

    p = sub.add_parser("compare", help="run an input baseline vs probed (masking, context, ablation, positions)")
    p.add_argument("text")
    p.add_argument("--pair", default=None)
    p.add_argument("--probe", required=True, choices=PROBES)
    p.add_argument("--positions", type=int, nargs="*", default=[], help="token positions for mask-tokens / hide-keys")
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions masked in both runs")
    p.add_argument("--heads", default="", help="ablate-heads: 1-based layer-head list, e.g. '3-5,6-1'")
    p.add_argument("--shift", type=int, default=0, help="shift-positions: k")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--top-k", type=positive_int, default=5)
    p.add_argument("--json", action="store_true")
    add_model_options(p)

    def run(args) -> int:
        from .interventions import Probe, parse_heads
        from .probing import compare

        lab = lab_from_args(args)
        heads = parse_heads(args.heads, lab.n_layers, lab.n_heads) if args.probe == "ablate-heads" else []
        probe = Probe(args.probe, positions=args.positions, heads=heads, shift=args.shift, seed=args.seed)
        c = compare(lab, args.text, probe, pair=args.pair, mask_positions=args.mask, top_k=args.top_k)
        if args.json:
            print(json.dumps(c.to_json()))
        else:
            print(f"probe: {probe.describe()}; mean JS divergence {float(c.js.mean()):.4f} nats")
            for x in c.changes:
                print(f"position {x.position} ({x.token}): p({x.baseline_top}) {x.baseline_probability:.4f} -> "
                      f"{x.probed_probability:.4f}; probed top-1 {x.probed_top}")
        return 0

    p.set_defaults(func=run)


def sweep_command(sub) -> None:
    p = sub.add_parser("sweep", help="directional-context or single-head-ablation sweep over masked positions")
    p.add_argument("text")
    p.add_argument("--kind", required=True, choices=("directional", "ablation"))
    p.add_argument("--pair", default=None)
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions to mask (besides typed [MASK])")
    p.add_argument("--json", action="store_true")
    add_model_options(p)

    def run(args) -> int:
        from .probing import ablation_sweep, directional_sweep

        lab = lab_from_args(args)
        if args.kind == "directional":
            rows = directional_sweep(lab, args.text, pair=args.pair, mask_positions=args.mask)
            result = {"kind": "directional", "rows": [r.__dict__ for r in rows]}
        else:
            drops = ablation_sweep(lab, args.text, pair=args.pair, mask_positions=args.mask)
            result = {"kind": "ablation", "drop_in_log_probability": drops.tolist(),
                      "layers": lab.n_layers, "heads": lab.n_heads}
        print(json.dumps(result) if args.json else json.dumps(result, indent=1))
        return 0

    p.set_defaults(func=run)


def positions_command(sub) -> None:
    p = sub.add_parser("positions", help="cosine similarity of learned vs sinusoidal position embeddings")
    p.add_argument("--n", type=positive_int, default=64)
    p.add_argument("--json", action="store_true")
    add_model_options(p)

    def run(args) -> int:
        from .probing import position_similarity

        learned, sinusoid = position_similarity(lab_from_args(args), args.n)
        print(json.dumps({"n": args.n, "learned": learned.round(5).tolist(), "sinusoidal": sinusoid.round(5).tolist()}))
        return 0

    p.set_defaults(func=run)


EXTRA_COMMANDS.extend([compare_command, sweep_command, positions_command])


def syntax_probe_command(sub) -> None:
    p = sub.add_parser("probe", help="score every head against a dependency treebank (Clark et al. 2019)")
    p.add_argument("--conllu", type=Path, default=None,
                   help="CoNLL-U treebank (default: the sample treebank in assets/)")
    p.add_argument("--out", required=True, type=Path, help="folder for head_scores.csv, best_heads.csv, report.html")
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--max-length", type=positive_int, default=None, help="skip sentences longer than this (tokens)")
    p.add_argument("--full-relations", action="store_true", help="keep relation subtypes (nmod:poss, ...)")
    add_model_options(p)

    def run(args) -> int:
        from tqdm import tqdm

        from .syntax import SAMPLE_TREEBANK, probe_treebank, read_conllu, write_outputs

        path = args.conllu or SAMPLE_TREEBANK
        sentences = read_conllu(path, full_relations=args.full_relations)
        lab = lab_from_args(args)
        total = min(len(sentences), args.max_sentences or len(sentences))
        with tqdm(total=total, desc="probe", unit="sent") as bar:
            def progress(done: int, _total: int) -> None:
                bar.update(done - bar.n)

            result = probe_treebank(lab, sentences, batch_size=args.batch_size, max_length=args.max_length,
                                    max_sentences=args.max_sentences, progress=progress)
        files = write_outputs(result, args.out, title=f"Syntax probe: {Path(path).name}")
        print(f"scored {result.sentences_used} sentences, skipped {result.sentences_skipped} as too long",
              file=sys.stderr)
        print(json.dumps({"sentences": result.sentences_used, "skipped": result.sentences_skipped,
                          **{k: str(v) for k, v in files.items()}}))
        return 0

    p.set_defaults(func=run)


EXTRA_COMMANDS.append(syntax_probe_command)
