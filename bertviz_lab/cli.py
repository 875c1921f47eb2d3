"""Command line: one argparse tree for every command (``bertviz-lab analyze "TEXT" --json``,
``probe``, ``compare``, ``sweep``, ``positions``, ``eval-mlm``, ``eval-nsp``, ``train-mlm-head``,
``build-corpus``). Each command is an ``add_*`` function (its options) and a ``run_*``
function (what it does); heavy imports happen inside ``run_*`` so ``--help`` stays fast.

Errors a person can fix go to stderr as one line with exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .bert import CheckpointError, DeviceError
from .bert.sources import SOURCES
from .interventions import KINDS, InterventionError, make_intervention
from .interventions.faithfulness import RANKINGS
from .lab import InputError, InputTooLong, Lab, load
from .treebank import TreebankError, sentence_texts

USER_ERRORS = (InputError, CheckpointError, DeviceError, FileNotFoundError, InterventionError, TreebankError)


def share(text: str) -> float:
    """A fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1 (got {value})")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def add_model_options(parser: argparse.ArgumentParser, repeatable: bool = False) -> None:
    parser.add_argument("--model", default=None if repeatable else "default", action="append" if repeatable else "store",
                        help="'default' (embedded MiniLM-L6), a checkpoint folder, or a hub id such as bert-base-uncased")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    parser.add_argument("--dtype", default=None, help="float32 (default), float16 or bfloat16 (GPU only)")
    parser.add_argument("--allow-pickle", action="store_true", help="allow loading pytorch_model.bin pickles")


def lab_from_args(args: argparse.Namespace, model: str | None = None) -> Lab:
    """Load the model the --model/--device/--dtype/--allow-pickle options name."""
    return load(model or args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)


# ---- analyze -------------------------------------------------------------------------------
def add_analyze(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="attention and masked-word predictions for one input")
    p.add_argument("text", nargs="?", default=None, help="the input (or --text)")
    p.add_argument("--text", dest="text_option", default=None, metavar="TEXT", help="the input, as an option")
    p.add_argument("--pair", default=None, help="second segment (sentence B)")
    add_model_options(p)
    p.add_argument("--top-k", type=positive_int, default=5)
    p.add_argument("--mask", type=int, action="append", help="token position to replace by [MASK] (repeatable)")
    p.add_argument("--position", type=int, action="append", help="also predict at this position (repeatable)")
    p.add_argument("--truncate", action="store_true", help="cut inputs longer than the model maximum")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-attention", action="store_true", help="leave the attention array out of the JSON")
    p.add_argument("--source", choices=SOURCES, default="attention",
                   help="what the attention array holds: softmax weights, or norm-based weights (raw norms)")
    p.add_argument("--lens", action="store_true",
                   help="also the MLM head's top-k on every layer's state at each masked position (JSON: lens)")
    p.add_argument("--explain", action="store_true",
                   help="also attribute each masked prediction to the context tokens: erasure, gradient x input, "
                        "integrated gradients, and each attention source's Spearman rho with erasure (JSON: explain)")
    p.add_argument("--qk", action="store_true",
                   help="also each head's query and key vectors (JSON: queries, keys; layers x heads x tokens x dim)")
    p.set_defaults(func=run_analyze)


def run_analyze(args: argparse.Namespace) -> int:
    if args.text is not None and args.text_option is not None and args.text != args.text_option:
        raise InputError("give the input once: as the positional text or as --text, not two different ones")
    args.text = args.text if args.text is not None else args.text_option
    if args.text is None:
        raise InputError("give the input text, e.g. analyze \"The cat sat on the [MASK].\" (or --text \"...\")")
    lab = lab_from_args(args)
    try:
        result = lab.analyze_encoded(lab.encode(args.text, args.pair, truncate=args.truncate), args.text, args.pair,
                                     masks=args.mask or (), top_k=args.top_k, predict_at=args.position or ())
    except InputTooLong as error:
        raise InputError(f"the input is {error.n_tokens} tokens long, more than the model maximum of "
                         f"{error.maximum}; shorten it or pass --truncate") from None
    if args.source != "attention":
        from .sources import with_source

        result = with_source(lab, result, args.source)
    if result.truncated:
        print(f"note: input truncated from {result.n_tokens_before_truncation} to {len(result.tokens)} tokens",
              file=sys.stderr)
    extra: dict = {}
    if args.explain:
        from .interventions.attribution import explain

        extra["explain"] = [a.to_json() for a in explain(lab, result)]
    if args.lens or args.qk:
        from .lens import mlm_lens, queries_and_keys

        if args.lens:
            extra["lens"] = [p.to_json() for p in mlm_lens(lab, result, args.top_k)]
        if args.qk:
            queries, keys = queries_and_keys(lab, result)
            extra.update(queries=queries.round(6).tolist(), keys=keys.round(6).tolist())
    if args.json:
        print(json.dumps({**result.to_json(attention=not args.no_attention), **extra}))
        return 0
    print(f"model: {result.model} on {result.device}")
    for attribution in extra.get("explain", []):
        print(f"why {attribution['target']!r} at position {attribution['position']} (signed; + raised it):")
        for method, values in attribution["scores"].items():
            cells = ", ".join(f"{result.tokens[j]} {v:+.3f}" for j, v in zip(attribution["context"], values))
            print(f"  {method}: {cells}")
        rho = ", ".join(f"{k} {v:+.2f}" for k, v in attribution["spearman_with_erasure"].items())
        print(f"  agreement with erasure (Spearman rho): {rho}")
        faith = ", ".join(f"{k} {v['aopc']:.2f}/{v['comprehensiveness']:.2f}/{v['sufficiency']:.2f}"
                          for k, v in attribution["faithfulness_on_this_input"].items())
        print(f"  on this input, AOPC / comprehensiveness / sufficiency: {faith}")
    for lens in extra.get("lens", []):
        print(f"lens at position {lens['position']} (final answer {lens['final']!r}):")
        for row in lens["layers"]:
            top = ", ".join(f"{t} {p:.3f}" for t, p in zip(row["tokens"], row["probabilities"]))
            print(f"  layer {row['layer']}: {top}  (final answer ranked {row['final_rank']})")
    print("tokens:", " ".join(f"{i}:{t}" for i, t in enumerate(result.tokens)))
    for p in result.mlm:
        preds = ", ".join(f"{q.token} {q.probability:.3f}" for q in p.predictions)
        print(f"position {p.position} ({p.original or p.token}): {preds}")
    for note in (result.mlm_note, result.nsp_note):
        if note:
            print("note:", note)
    if result.nsp is not None:
        print(f"next-sentence probability: {result.nsp:.3f}")
    return 0


# ---- interventions -------------------------------------------------------------------------
def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="run an input baseline vs intervened (masking, context, ablation, positions); "
                                       "with --text-file or --conllu over many sentences with 95%% intervals")
    p.add_argument("text", nargs="?", default=None, help="the input, unless a sentence set is given")
    add_set_options(p)
    p.add_argument("--pair", default=None)
    p.add_argument("--intervention", "--probe", dest="intervention", required=True, choices=KINDS,
                   help="what to change in the forward pass (--probe is the old name, kept as an alias)")
    p.add_argument("--positions", type=int, nargs="*", default=[], help="token positions for mask-tokens / hide-keys")
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions masked in both runs")
    p.add_argument("--heads", default="", help="ablate-heads: 1-based layer-head list, e.g. '3-5,6-1'")
    p.add_argument("--shift", type=int, default=0, help="shift-positions: k")
    p.add_argument("--seed", type=int, default=0, help="shuffle / control seed")
    p.add_argument("--sinks", choices=("symmetric", "strict"), default="symmetric",
                   help="left-only/right-only: every query may see [CLS]/[SEP] (symmetric) or not (strict)")
    p.add_argument("--unit", choices=("words", "tokens"), default="words", help="shuffle-words: what is shuffled")
    add_ablation_options(p)
    p.add_argument("--top-k", type=positive_int, default=5)
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_compare)


def add_set_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text-file", type=Path, default=None,
                   help="a sentence set, one per line: one seeded masked word each, mean effect with a 95%% interval")
    p.add_argument("--conllu", type=Path, default=None, help="a sentence set from a CoNLL-U file's sentences")
    p.add_argument("--sample", action="store_true", help="the sentence set of the shipped sample treebank")
    p.add_argument("--max-sentences", type=positive_int, default=500)


def wants_set(args: argparse.Namespace) -> bool:
    return args.text_file is not None or args.conllu is not None or args.sample


def add_ablation_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ablation", choices=("zero", "mean", "resample"), default="zero",
                   help="replace a head's output by zeros, its mean over --reference-file, or its output on a "
                        "sentence drawn (seeded by --seed) from --reference-file, position by position")
    p.add_argument("--reference-file", type=Path, default=None,
                   help="mean and resample ablation: lines to average over or draw from (default: the sample "
                        "treebank's sentences)")
    p.add_argument("--resample-text", default=None,
                   help="resample ablation from this one input (it needs at least as many tokens as the input)")


def ablation_reference(lab: Lab, args: argparse.Namespace):
    """The reference head outputs an ablation mode needs (None for zero ablation)."""
    from .interventions.resample import ResamplePool
    from .interventions.sweeps import mean_head_outputs, sample_mean_outputs

    if args.ablation == "zero":
        return None
    if args.ablation == "resample":
        if args.resample_text:
            return ResamplePool(lab, [args.resample_text], seed=args.seed)
        lines = args.reference_file.read_text(encoding="utf-8").splitlines() if args.reference_file \
            else sentence_texts()
        return ResamplePool(lab, lines, seed=args.seed)
    if args.reference_file:
        return mean_head_outputs(lab, args.reference_file.read_text(encoding="utf-8").splitlines())
    return sample_mean_outputs(lab)


def run_compare(args: argparse.Namespace) -> int:
    from .interventions import compare

    lab = lab_from_args(args)
    intervention = make_intervention(args.intervention, (lab.n_layers, lab.n_heads), positions=args.positions,
                                     heads=args.heads, shift=args.shift, seed=args.seed, sinks=args.sinks,
                                     unit=args.unit, mode=args.ablation, reference=lambda: ablation_reference(lab, args))
    if wants_set(args):
        from .interventions.sets import compare_set

        effects = compare_set(lab, set_lines(args), intervention, seed=args.seed,
                              max_sentences=args.max_sentences)
        print(json.dumps({"intervention": intervention.describe(), "scored": "gold", **effects.to_json()}))
        return 0
    if not args.text:
        raise InputError("give the input text, or --text-file / --conllu for a set of sentences")
    c = compare(lab, args.text, intervention, pair=args.pair, mask_positions=args.mask, top_k=args.top_k)
    if args.json:
        print(json.dumps(c.to_json()))
        return 0
    print(f"probe: {intervention.describe()}; mean JS divergence {float(c.js.mean()):.4f} nats")
    for x in c.changes:
        print(f"position {x.position} ({x.token}): p({x.baseline_top}) {x.baseline_probability:.4f} -> "
              f"{x.intervened_probability:.4f}; intervened top-1 {x.intervened_top}")
    return 0


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="directional-context, head-ablation or positional sweep; over one input or, "
                                     "with --text-file, over many sentences with 95%% intervals")
    p.add_argument("text", nargs="?", default=None, help="the input (with [MASK]s), unless --text-file is given")
    p.add_argument("--kind", required=True, choices=("directional", "ablation", "positions"))
    p.add_argument("--pair", default=None)
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions to mask (besides typed [MASK])")
    add_set_options(p)
    p.add_argument("--sinks", choices=("symmetric", "strict"), default="symmetric")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shift", type=int, default=10, help="positions: shift-positions by k")
    add_ablation_options(p)
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_sweep)


def set_lines(args: argparse.Namespace) -> list[str]:
    """The sentences of a set: --text-file (one per line), --conllu (its sentences' text), or the sample treebank."""
    from .sentences import read_lines
    from .treebank import SAMPLE_TREEBANK

    return read_lines(args.text_file) if args.text_file is not None else sentence_texts(args.conllu or SAMPLE_TREEBANK)


def run_sweep_set(args: argparse.Namespace, lab: Lab) -> dict:
    from tqdm import tqdm

    from .interventions.sets import ablation_set, directional_set

    lines = set_lines(args)
    with tqdm(total=min(len(lines), args.max_sentences), desc=f"{args.kind} sweep", unit="sent") as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        if args.kind == "directional":
            effects = directional_set(lab, lines, sinks=args.sinks, seed=args.seed,
                                      max_sentences=args.max_sentences, progress=progress)
            return {"kind": "directional", "sinks": args.sinks, "scored": "gold", **effects.to_json()}
        if args.kind == "ablation":
            result = ablation_set(lab, lines, ablation_reference(lab, args), seed=args.seed,
                                  max_sentences=args.max_sentences, progress=progress)
            return {"kind": "ablation", "ablation": args.ablation, "scored": "gold", **result.to_json()}
    raise InputError("sentence sets work with --kind directional or ablation (positions: use compare --text-file)")


def run_sweep(args: argparse.Namespace) -> int:
    from .interventions import ablation_sweep, directional_sweep
    from .interventions.sweeps import position_controls

    lab = lab_from_args(args)
    if wants_set(args):
        result = run_sweep_set(args, lab)
    elif not args.text:
        raise InputError("give the input text, or --text-file for a set of sentences")
    elif args.kind == "directional":
        rows = directional_sweep(lab, args.text, pair=args.pair, mask_positions=args.mask, sinks=args.sinks,
                                 seed=args.seed)
        result = {"kind": "directional", "sinks": args.sinks, "rows": [r.__dict__ for r in rows]}
    elif args.kind == "ablation":
        importance = ablation_sweep(lab, args.text, pair=args.pair, mask_positions=args.mask,
                                    reference=ablation_reference(lab, args))
        result = {"kind": "ablation", "ablation": args.ablation, "drop_in_log_probability": importance.drops.tolist(),
                  "scored": importance.scored,
                  "layers": lab.n_layers, "heads": lab.n_heads}
    else:
        result = {"kind": "positions", "rows": position_controls(lab, args.text, pair=args.pair,
                                                                 mask_positions=args.mask, shift=args.shift,
                                                                 seed=args.seed)}
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


def add_patch(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("patch", help="activation patching on a minimal pair: each head's output (and each layer's "
                                     "residual at the [MASK]) from --source into TEXT; change in the logit "
                                     "difference of --correct minus --wrong")
    p.add_argument("text", nargs="?", default=None, help="the target input, with one [MASK]")
    p.add_argument("--source", default=None, help="the source input: the same number of tokens, [MASK] in place")
    p.add_argument("--correct", default=None)
    p.add_argument("--wrong", default=None)
    p.add_argument("--pairs-file", type=Path, default=None,
                   help="many minimal pairs, one per line: target | source | correct | wrong (mean with 95%% CI)")
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_patch)


def run_patch(args: argparse.Namespace) -> int:
    from .interventions.sweeps import patching_sweep

    if args.pairs_file is not None:
        from .interventions.sets import patching_set, read_pairs

        heads, residual = patching_set(lab_from_args(args), read_pairs(args.pairs_file))
        print(json.dumps({"pairs": heads.n, "heads": heads.to_json(), "residual": residual.to_json()}))
        return 0
    if not (args.text and args.source and args.correct and args.wrong):
        raise InputError("give TEXT --source --correct --wrong, or --pairs-file")
    result = patching_sweep(lab_from_args(args), args.text, args.source, args.correct, args.wrong)
    out = {"baseline_logit_difference": result.baseline, "source_logit_difference": result.source,
           "heads": result.heads.tolist(), "residual": result.residual.tolist()}
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))
    return 0


def add_positions(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("positions", help="cosine similarity of learned vs sinusoidal position embeddings")
    p.add_argument("--n", type=positive_int, default=64)
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_positions)


def run_positions(args: argparse.Namespace) -> int:
    from .interventions import position_similarity

    learned, sinusoid = position_similarity(lab_from_args(args), args.n)
    print(json.dumps({"n": args.n, "learned": learned.round(5).tolist(), "sinusoidal": sinusoid.round(5).tolist()}))
    return 0


# ---- masked-word head ----------------------------------------------------------------------
def add_build_corpus(sub: argparse._SubParsersAction) -> None:
    from .mlm.running_text import HELDOUT_UNITS

    p = sub.add_parser("build-corpus", help="write the training/held-out corpus: WordNet (needs wordnet-base) "
                       "and optionally running text: UD train splits, the Brown Corpus")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--heldout", type=positive_int, default=2000, help="WordNet lines held out")
    p.add_argument("--wordnet", type=Path, default=None, metavar="DIR",
                   help="WordNet's data.noun/verb/adj/adv (default: /usr/share/wordnet, where wordnet-base puts them)")
    p.add_argument("--running-text", type=Path, action="append", default=[], metavar="MANIFEST",
                   help="manifest.json written by scripts/ud_running_text.py (UD train files) or "
                   "scripts/nltk_brown.py (the Brown Corpus): paths, licences, origins; repeatable")
    p.add_argument("--heldout-sentences", type=positive_int, default=1000,
                   help="running-text sentences held out per source (at most 10%% of it; whole documents "
                   "may take up to one document more)")
    p.add_argument("--heldout-unit", choices=HELDOUT_UNITS, default="document",
                   help="hold out whole documents (default), or one passage of a document with the rest trained "
                   "on, as the shipped head's corpus was cut")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run_build_corpus)


def read_manifest(manifest: Path) -> list:
    """The running-text sources a manifest names, checked before anything is written."""
    from .mlm.corpus import RunningText
    from .mlm.running_text import FORMATS, source_label

    if not manifest.is_file():
        raise FileNotFoundError(f"no such manifest: {manifest}")
    try:
        items = json.loads(manifest.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{manifest} is not JSON: {error}") from None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise InputError(f"{manifest}: expected a list of sources ({{\"path\", \"licence\", ...}})")
    base, sources = manifest.parent, []
    for number, item in enumerate(items, 1):
        where = f"{manifest}, source {number}"
        missing = [key for key in ("path", "licence") if not item.get(key)]
        if missing:
            raise InputError(f"{where}: no {' or '.join(missing)}")
        form, path = item.get("format", "conllu"), base / item["path"]
        if form not in FORMATS:
            raise InputError(f"{where}: unknown format {form!r} (one of {', '.join(FORMATS)})")
        try:
            source_label(path, form)
        except ValueError as error:  # a UD dev or test split
            raise InputError(f"{where}: {error}") from None
        if not path.exists():
            raise FileNotFoundError(f"{where}: {path} does not exist")
        licence_file = base / item["licence_file"] if item.get("licence_file") else None
        if licence_file is not None and not licence_file.is_file():
            raise FileNotFoundError(f"{where}: licence file {licence_file} does not exist")
        sources.append(RunningText(path, item["licence"], licence_file, item.get("origin", ""), form))
    return sources


def run_build_corpus(args: argparse.Namespace) -> int:
    from .mlm.corpus import WORDNET_DIR, build_corpus

    running = [source for manifest in args.running_text for source in read_manifest(manifest)]
    try:
        record = build_corpus(args.out, heldout=args.heldout, seed=args.seed, running=running,
                              folder=args.wordnet or WORDNET_DIR, heldout_sentences=args.heldout_sentences,
                              heldout_unit=args.heldout_unit)
    except ValueError as error:  # two sources of one name
        raise InputError(str(error)) from None
    print(json.dumps(record))
    return 0


def add_train(sub: argparse._SubParsersAction) -> None:
    from .mlm.train import TrainSettings

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
    p.add_argument("--whole-word", action="store_true", help="mask whole words (all their pieces) together")
    p.add_argument("--nsp", action="store_true", help="also train the pooler and a next-sentence head "
                   "(needs a corpus built with --running-text)")
    p.add_argument("--init", default=None, metavar="HEAD_FOLDER",
                   help="start from an earlier trained head folder (e.g. assets/minilm-mlm) instead of a fresh head")
    p.add_argument("--running-share", type=share, default=d.running_share,
                   help="share of each epoch's inputs taken from running text")
    p.add_argument("--pair-fraction", type=share, default=d.pair_fraction,
                   help="share of running-text sentences that start a next-sentence pair")
    p.add_argument("--no-bf16", action="store_true", help="train in float32")
    p.add_argument("--eval-every", type=positive_int, default=d.eval_every)
    p.add_argument("--checkpoint-every", type=positive_int, default=d.checkpoint_every,
                   help="steps between resumable checkpoints in --out")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt (same settings)")
    p.add_argument("--leg-minutes", type=float, default=None, metavar="MINUTES",
                   help="end this leg with a checkpoint after this many minutes; --resume runs the next leg "
                        "(the learning-rate schedule spans --steps over all legs)")
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    from .mlm.model_card import publish
    from .mlm.train import TrainSettings, train

    settings = TrainSettings(corpus=args.corpus, steps=args.steps, seed=args.seed, device=args.device,
                             train_layers=args.train_layers, batch_size=args.batch_size, lr=args.lr,
                             head_lr=args.head_lr, whole_word=args.whole_word, bf16=not args.no_bf16,
                             nsp=args.nsp, init=args.init, running_share=args.running_share,
                             pair_fraction=args.pair_fraction,
                             eval_every=args.eval_every, checkpoint_every=args.checkpoint_every)
    leg_command = " ".join(["python -m bertviz_lab train-mlm-head"] + sys.argv[2:])
    try:
        record = train(args.out, settings, resume=args.resume, leg_minutes=args.leg_minutes, command=leg_command)
    except ValueError as error:  # a checkpoint written with other settings, a corpus without running text
        raise InputError(str(error)) from None
    if record is None:  # the leg ended; the chain goes on with --resume
        print(json.dumps({"leg_ended": True, "checkpoint": str(args.out / "checkpoint.pt"),
                          "next_leg": leg_command if args.resume else leg_command + " --resume"}))
        return 0
    print(json.dumps({k: record[k] for k in ("steps", "train_seconds", "fine_tuned_layers", "asset_bytes")}))
    if (Path(args.corpus) / "corpus.json").is_file() and settings.model == "default":
        command = " ".join(["python -m bertviz_lab train-mlm-head"] + [a for a in sys.argv[2:] if a != "--resume"])
        report = publish(args.out, Path(args.corpus), [command], device=args.device)
        print(json.dumps({k: v for k, v in report.items() if k != "teaching"}))
    return 0


def add_select(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("select-head", help="choose between trained heads by the rule written in the model card "
                                           "(development data only: the development cloze set and validation text)")
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"), help="the corpus the chain trained on")
    p.add_argument("--shipped", type=Path, default=None, help="the shipped head folder (default: assets/minilm-mlm)")
    p.add_argument("--chain", type=Path, nargs="+", required=True, metavar="RUN",
                   help="train-mlm-head --out folders: every head kept at a validation point (RUN/steps/step-N) competes")
    p.add_argument("--model", default="default", help="the encoder the heads belong to")
    p.add_argument("--device", default="auto")
    p.add_argument("--publish", type=Path, default=None, metavar="FOLDER",
                   help="when a chain's head wins, make FOLDER a self-contained head like assets/minilm-mlm "
                        "(held-out report, model card with the chain and this choice); when the shipped head "
                        "stays, its model card records the chain and the choice instead")
    p.set_defaults(func=run_select)


def run_select(args: argparse.Namespace) -> int:
    from .mlm.selection import RULE, choose, dev_figures
    from .resources import DEFAULT_MLM_HEAD

    shipped = args.shipped or DEFAULT_MLM_HEAD
    folders = sorted((f for run in args.chain for f in (run / "steps").glob("step-*") if (f / "head.safetensors").is_file()),
                     key=lambda f: (str(f.parent.parent), int(f.name.split("-")[1])))
    if not folders:
        raise InputError(f"no head kept at a validation point under {', '.join(str(r) for r in args.chain)} "
                         "(RUN/steps/step-N/head.safetensors)")

    def figures(folder: Path, steps: int):
        lab = load(args.model, device=args.device, mlm_head=folder)
        where, here = Path(folder).resolve(), Path.cwd().resolve()  # a name the card can print
        name = str(where.relative_to(here)) if where.is_relative_to(here) else str(folder)
        return dev_figures(lab, args.corpus, name, steps)

    base = figures(shipped, 0)
    candidates = [figures(f, int(f.name.split("-")[1])) for f in folders]
    winner, why = choose(base, candidates)
    rows = [{"head": c.name, "steps": c.steps, "cloze": round(c.cloze, 4), "running_top1": round(c.running_top1, 4),
             "nsp": round(c.nsp, 4), "wordnet_top1": round(c.wordnet_top1, 4), "score": round(c.score, 4)}
            for c in [base, *candidates]]
    for row in rows:
        print("  ".join(f"{k} {v}" for k, v in row.items()), file=sys.stderr)
    print(why, file=sys.stderr)
    selection = {"rule": RULE, "winner": winner.name, "why": why, "candidates": rows}
    if args.publish is not None and winner is not base:
        from .mlm.model_card import publish_selected

        publish_selected(Path(winner.name), args.publish, args.corpus, selection, device=args.device)
        selection["published"] = str(args.publish)
    elif args.publish is not None:  # the shipped head stays: its card records the chain it was kept over
        from .mlm.model_card import chain_legs, record_kept

        last = {f.parent.parent: f for f in folders}  # each chain's last kept head (folders are sorted by step)
        legs = [leg for run in args.chain if run in last for leg in chain_legs(last[run])]
        selection["recorded_in"] = str(record_kept(shipped, selection, legs))
    print(json.dumps(selection))
    return 0


def add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval-mlm", help="masked-word top-1/top-5 accuracy on a text file, or on the teaching set")
    p.add_argument("--text-file", type=Path, default=None, help="one sentence per line; one word per line is masked")
    p.add_argument("--teaching", nargs="?", const="shipped", default=None, metavar="TSV",
                   help="score the teaching set (assets/teaching_cloze.tsv, or this file): sentences with an "
                        "accepted answer at top 1 / in the top 5")
    add_scoring_options(p, "--max-sentences", 64)
    p.set_defaults(func=run_eval)


def add_scoring_options(p: argparse.ArgumentParser, limit: str, batch_size: int) -> None:
    """What eval-mlm and eval-nsp share: the model, the seed, a cap, the batch size, JSON output."""
    add_model_options(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(limit, type=positive_int, default=None)
    p.add_argument("--batch-size", type=positive_int, default=batch_size)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (last line)")


def run_eval(args: argparse.Namespace) -> int:
    from .mlm.evaluate import evaluate
    from .sentences import read_lines

    if (args.text_file is None) == (args.teaching is None):
        raise InputError("give either --text-file FILE or --teaching")
    if args.text_file is not None and not args.text_file.is_file():
        raise FileNotFoundError(f"no such file: {args.text_file}")
    lab = lab_from_args(args)
    if not lab.model.has_mlm_head:
        raise InputError(f"model {args.model!r} has no MLM head; eval-mlm needs one")
    if args.teaching is not None:
        return print_teaching(lab, args)
    lines = read_lines(args.text_file)
    scores = evaluate(lab, lines, seed=args.seed, max_sentences=args.max_sentences, batch_size=args.batch_size,
                      progress=sys.stderr.isatty())
    if not scores["n"]:
        raise InputError(f"{args.text_file} has no line with a whole word to mask; nothing was scored")
    if args.json:
        print(json.dumps(scores))
    else:
        def line(name: str, r: dict) -> str:
            return (f"{name}: top-1 {r['top1']:.4f} [{r['top1_ci'][0]:.4f}, {r['top1_ci'][1]:.4f}]  top-5 "
                    f"{r['top5']:.4f} [{r['top5_ci'][0]:.4f}, {r['top5_ci'][1]:.4f}]  (n={r['n']})")

        print(line("all", scores))
        print(line("function words", scores["function_words"]))
        print(line("content words", scores["content_words"]))
        print(f"masked: {scores['masking']}; intervals: 95% Wilson")
    return 0


def print_teaching(lab, args: argparse.Namespace) -> int:
    from .mlm.teaching import TEACHING_SET, evaluate_teaching, read_teaching_set

    path = TEACHING_SET if args.teaching == "shipped" else Path(args.teaching)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        items = read_teaching_set(path)
    except (ValueError, KeyError) as error:
        raise InputError(f"{path}: not a teaching set ({error})") from None
    result = evaluate_teaching(lab, items)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"model: {result['model']}")
    print("| topic | n | accepted at top 1 | accepted in top 5 |\n|---|---:|---:|---:|")
    for topic, r in result["topics"].items():
        print(f"| {topic} | {r['n']} | {r['top1_hits']} | {r['top5_hits']} |")
    print(f"| **all** | {result['n']} | {result['top1_hits']} ({result['top1']:.0%}) | {result['top5_hits']} "
          f"({result['top5']:.0%}) |")
    print(f"95% Wilson intervals: top 1 [{result['top1_ci'][0]:.2f}, {result['top1_ci'][1]:.2f}], "
          f"top 5 [{result['top5_ci'][0]:.2f}, {result['top5_ci'][1]:.2f}]")
    for row in result["items"]:
        mark = "ok " if row["top1_ok"] else ("top5" if row["top5_ok"] else " -  ")
        print(f"{mark} {row['sentence']}  ->  {', '.join(row['top5'])}")
    return 0


def add_eval_nsp(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval-nsp", help="next-sentence accuracy on documents (IsNext vs a random sentence "
                       "of another document)")
    p.add_argument("--text-file", required=True, type=Path,
                   help="documents of one sentence per line, separated by blank lines")
    add_scoring_options(p, "--max-pairs", 32)
    p.set_defaults(func=run_eval_nsp)


def run_eval_nsp(args: argparse.Namespace) -> int:
    from .mlm.evaluate_nsp import evaluate_nsp
    from .mlm.running_text import read_documents

    if not args.text_file.is_file():
        raise FileNotFoundError(f"no such file: {args.text_file}")
    documents = read_documents(args.text_file)
    if len(documents) < 2 or not any(len(d) > 1 for d in documents):
        raise InputError(f"{args.text_file}: needs at least two documents (blank-line separated), one of them "
                         "with two or more sentences")
    lab = lab_from_args(args)
    if not lab.model.has_nsp_head:
        raise InputError(f"model {args.model!r} has no next-sentence head; eval-nsp needs one")
    scores = evaluate_nsp(lab, documents, seed=args.seed, max_pairs=args.max_pairs, batch_size=args.batch_size,
                          progress=sys.stderr.isatty())
    if args.json:
        print(json.dumps(scores))
    else:
        for name, r in (("all", scores), ("IsNext", scores["is_next"]), ("NotNext", scores["not_next"])):
            print(f"{name}: accuracy {r['accuracy']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] (n={r['n']})")
        print(f"pairs: {scores['protocol']}; intervals: 95% Wilson")
    return 0


# ---- syntax --------------------------------------------------------------------------------
def add_probe(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score-heads", aliases=["probe"],
                       help="score every head against a dependency treebank (Clark et al. 2019); "
                            "'probe' is the old name, kept as an alias for one release")
    p.add_argument("--conllu", type=Path, nargs="+", action="extend", default=None,
                   help="CoNLL-U treebanks: files or folders of *.conllu, several after one flag or the flag "
                        "repeated (default: the sample treebank shipped with bertviz-lab); several, or several "
                        "--model, make one job (see --engine)")
    p.add_argument("--out", required=True, type=Path,
                   help="folder for head_scores.csv, best_heads.csv, uuas.csv, report.html (one treebank and "
                        "model); for a job: scores.csv, best_heads.csv, agreement.csv, report.html and pairs/ "
                        "(finished pairs are skipped when the job runs again)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: batched on this machine; ray: Ray Data workers score batches and send back counts")
    p.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start one on this machine)")
    p.add_argument("--workers", type=positive_int, default=2, help="Ray workers (one checkpoint loaded in each)")
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--max-length", type=positive_int, default=None, help="skip sentences longer than this (tokens)")
    p.add_argument("--full-relations", action="store_true", help="keep relation subtypes (nmod:poss, ...)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over sentences (0 = no intervals)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap, the held-out split and the null model")
    p.add_argument("--select-fraction", type=float, default=0.5,
                   help="share of sentences the held-out best head is chosen on (the rest report it)")
    p.add_argument("--min-arcs", type=int, default=50, help="relations listed in best_heads.csv need this many arcs")
    p.add_argument("--no-null-model", action="store_true", help="skip the random-weights null model")
    p.add_argument("--uuas-punct", choices=("include", "exclude"), default="include",
                   help="count arcs whose dependent is punctuation (UD punct) in UUAS, or leave them out "
                        "(stated in uuas.csv and the report)")
    p.add_argument("--null-seeds", type=positive_int, default=5,
                   help="random-weight models (seeds --seed, --seed + 1, ...) the null row's mean and interval "
                        "are taken over")
    p.add_argument("--source", choices=SOURCES, default="attention",
                   help="score heads on softmax attention or on norm-based weights (Kobayashi et al. 2020)")
    p.add_argument("--compare-model", default=None,
                   help="also score this checkpoint and write compare_scores.csv (its accuracy minus --model's)")
    p.add_argument("--no-ensembles", action="store_true",
                   help="leave out the head ensembles per relation (Limisiewicz et al. 2020) in best_heads.csv "
                        "(they need a second pass; one treebank and model only)")
    add_model_options(p, repeatable=True)
    p.set_defaults(func=run_probe, model=None)
    for action in p._actions:
        if action.dest == "model":
            action.help = ("weights to score (default: minilm-original, the published MiniLM; pass 'default' for "
                           "bertviz-lab's fine-tuned masked-word version), a folder or a hub id; repeatable")


def models_to_score(given: list[str] | None) -> list[str]:
    """What score-heads scores: every distinct --model as typed ('default' is the fine-tuned checkpoint,
    as everywhere); the published weights (minilm-original) only when no --model is given."""
    from .bert import ORIGINAL_SOURCE

    return list(dict.fromkeys(given or [ORIGINAL_SOURCE]))


def run_probe(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .export import check_writable
    from .reports.syntax import write_outputs
    from .syntax.job import treebank_files
    from .syntax.run import run_syntax
    from .syntax.summary import Settings
    from .treebank import SAMPLE_TREEBANK, read_conllu

    if not 0 < args.select_fraction < 1:
        raise InputError(f"--select-fraction must be between 0 and 1 (got {args.select_fraction})")
    if args.resamples < 0:
        raise InputError(f"--resamples must be 0 or more (got {args.resamples})")
    models = models_to_score(args.model)
    treebanks = treebank_files(args.conllu or [SAMPLE_TREEBANK])
    parsed = [read_conllu(t, full_relations=args.full_relations) for t in treebanks]  # a bad file fails first
    check_writable(args.out)
    if len(models) > 1 or len(treebanks) > 1 or args.engine == "ray":
        return run_probe_job(args, models, treebanks)
    path, sentences = treebanks[0], parsed[0]
    lab = lab_from_args(args, models[0])
    other = lab_from_args(args, args.compare_model) if args.compare_model else None
    settings = Settings(args.resamples, args.seed, args.select_fraction, args.min_arcs, args.null_seeds,
                        args.uuas_punct)
    with tqdm(total=100, desc="score-heads", unit="%") as bar:
        run = run_syntax(lab, sentences, settings, null=not args.no_null_model, compare_lab=other,
                         batch_size=args.batch_size, max_length=args.max_length, max_sentences=args.max_sentences,
                         source=args.source, ensembles=not args.no_ensembles,
                         progress=lambda f, what: (bar.set_description(what), bar.update(round(100 * f) - bar.n)))
    summary = run.summary
    files = write_outputs(summary, args.out, title=f"Syntax scores: {Path(path).name}", compare=run.compare)
    print(f"scored {summary.sentences_used} sentences with {summary.checkpoint.describe()}, skipped "
          f"{summary.sentences_skipped} as too long and {summary.sentences_skipped_empty_words} for "
          f"{summary.words_without_pieces} words that become no word piece", file=sys.stderr)
    print(json.dumps({"sentences": summary.sentences_used, "skipped": summary.sentences_skipped,
                      "skipped_empty_words": summary.sentences_skipped_empty_words,
                      "words_without_pieces": summary.words_without_pieces,
                      "model": summary.checkpoint.describe(), "model_sha256": summary.checkpoint.sha256,
                      **{k: str(v) for k, v in files.items()}}))
    return 0


def run_probe_job(args: argparse.Namespace, models: list[str], treebanks: list[Path]) -> int:
    """Several treebanks and/or checkpoints, locally or on Ray; resumable with the same --out."""
    from tqdm import tqdm

    from .reports.syntax import job_report_html
    from .syntax.job import Job, complete_pairs, run_job
    from .syntax.summary import Settings

    if args.compare_model:
        raise InputError("--compare-model compares two checkpoints on one treebank; for a job, pass --model twice")
    settings = Settings(args.resamples, args.seed, args.select_fraction, args.min_arcs, args.null_seeds,
                        args.uuas_punct)
    job = Job(models, treebanks, args.out, settings,
              engine=args.engine, ray_address=args.ray_address, workers=args.workers,
              device="cpu" if args.device == "auto" else args.device, batch_size=args.batch_size,
              max_length=args.max_length, max_sentences=args.max_sentences, source=args.source,
              null=not args.no_null_model, full_relations=args.full_relations, allow_pickle=args.allow_pickle)
    bars: dict[str, tqdm] = {}

    def progress_for(name: str):
        def update(done: int, total: int) -> None:
            if name not in bars:
                bars[name] = tqdm(total=total, desc=name, unit="sentence", leave=False)
            bars[name].update(done - bars[name].n)
        return update

    files = run_job(job, lambda model: lab_from_args(args, model), say=lambda m: print(m, file=sys.stderr),
                    progress_for=progress_for, report=job_report_html)
    for bar in bars.values():
        bar.close()
    print(json.dumps({"pairs": complete_pairs(job), "engine": args.engine,
                      **{k: str(v) for k, v in files.items()}}))
    return 0


def add_structure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("structural-probe",
                       help="structural probes (Hewitt & Manning 2019) per layer beside attention trees and head "
                            "ensembles (Limisiewicz et al. 2020), on the same sentences with intervals")
    p.add_argument("--train", type=Path, default=None, metavar="CONLLU",
                   help="a treebank's train split to train the probes on (never a test split)")
    p.add_argument("--probes", type=Path, default=None,
                   help="probes.safetensors from an earlier run on the same weights, instead of training")
    p.add_argument("--stop", type=Path, default=None, metavar="CONLLU",
                   help="sentences to stop training on (default: a seeded 10%% of --train)")
    p.add_argument("--treebank", required=True, type=Path, metavar="CONLLU", help="the treebank to report on")
    p.add_argument("--out", required=True, type=Path,
                   help="folder for probe_scores.csv, structure.csv, ensembles.csv, training_curves.csv, "
                        "probes.safetensors and report.html")
    p.add_argument("--kinds", nargs="+", choices=("distance", "depth"), default=["distance", "depth"])
    p.add_argument("--no-null-model", action="store_true", help="skip the probe on random weights")
    p.add_argument("--epochs", type=positive_int, default=40, help="at most this many epochs (early stopping ends most sooner)")
    p.add_argument("--max-train-sentences", type=positive_int, default=None)
    p.add_argument("--max-sentences", type=positive_int, default=None, help="evaluate on the first N sentences")
    p.add_argument("--min-arcs", type=int, default=50, help="relations with this many arcs get a head ensemble")
    p.add_argument("--resamples", type=positive_int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    add_model_options(p)
    p.set_defaults(func=run_structure)


def refuse_test_split(path: Path | None, what: str) -> None:
    if path is not None and "-test" in path.name:
        raise InputError(f"{what} {path.name} looks like a test split; probes are never trained or stopped on one")


def run_structure(args: argparse.Namespace) -> int:
    from .reports.structure import write_structure
    from .syntax.ensembles import relations_of
    from .syntax.run import attention_weights_source
    from .syntax.structure import StructureSettings, load_probes
    from .syntax.structure import run_structure as run
    from .treebank import read_conllu

    if (args.train is None) == (args.probes is None):
        raise InputError("give --train (a train split to train probes on) or --probes (probes trained earlier), not both")
    refuse_test_split(args.train, "--train")
    refuse_test_split(args.stop, "--stop")
    evaluate = read_conllu(args.treebank)[:args.max_sentences]
    train = read_conllu(args.train)[:args.max_train_sentences] if args.train else []
    stop = read_conllu(args.stop) if args.stop else None
    lab = lab_from_args(args, attention_weights_source(args.model))
    trained = load_probes(args.probes, lab) if args.probes else None
    settings = StructureSettings(resamples=args.resamples, seed=args.seed, kinds=tuple(args.kinds),
                                 null=not args.no_null_model, epochs=args.epochs)
    relations = relations_of(evaluate, args.min_arcs)
    result = run(lab, train, evaluate, settings, stop=stop, trained=trained, relations=relations,
                 names=(args.train.name if args.train else "", args.treebank.name),
                 progress=lambda message: print(message, file=sys.stderr))
    files = write_structure(result, args.out, title=f"Syntax in {lab.checkpoint_info().name}: {args.treebank.name}")
    for line in result.conclusions:
        print(line, file=sys.stderr)
    print(json.dumps({"model": result.checkpoint.describe(), "sentences": result.sentences, "seconds": result.seconds,
                      "files": {k: str(v) for k, v in files.items()}}))
    return 0


def add_faithfulness(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("faithfulness", help="which attention-based explanation to trust: hide each source's top-k "
                                            "tokens and measure the drop in log P(gold word) (AOPC), with ERASER's "
                                            "comprehensiveness and sufficiency for the top word")
    p.add_argument("--text-file", type=Path, default=None,
                   help="one sentence per line (default: the shipped held-out lines)")
    p.add_argument("--max-sentences", type=positive_int, default=200)
    p.add_argument("--k", type=positive_int, default=5, help="hide the top 1..k tokens")
    p.add_argument("--sources", nargs="+", default=None, metavar="RANKING",
                   help="the rankings to score (default: all; the random control is always scored): "
                        + ", ".join(f"'{name}'" for name in RANKINGS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_faithfulness)


def run_faithfulness(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .interventions.faithfulness import faithfulness
    from .resources import DEFAULT_MLM_HEAD
    from .sentences import heldout_lines, read_lines

    path = args.text_file or DEFAULT_MLM_HEAD / "heldout.txt"
    lines = read_lines(args.text_file) if args.text_file else heldout_lines()
    lab = lab_from_args(args)
    with tqdm(total=min(len(lines), args.max_sentences), desc="faithfulness", unit="sent") as bar:
        result = faithfulness(lab, lines, k_max=args.k, seed=args.seed, max_sentences=args.max_sentences,
                              progress=lambda done, total: (setattr(bar, "total", total), bar.update(done - bar.n)),
                              sources=args.sources or RANKINGS)
    from .sentences import truncation_note

    out = result.to_json(resamples=args.resamples, seed=args.seed)
    if args.json:
        print(json.dumps({"k": args.k, "text_file": str(path), **out}))
        return 0
    print(f"model: {result.model}; AOPC over k = 0..{args.k} (higher = more faithful); ERASER comprehensiveness "
          f"(higher = more faithful) and sufficiency (lower = more faithful) of the top word; 95% bootstrap intervals")
    for row in sorted(out["sources"], key=lambda r: -r["aopc"]):
        print(f"{row['source']:<28} AOPC {row['aopc']:6.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]  "
              f"comp. {row['comprehensiveness']:.3f} [{row['comprehensiveness_ci_low']:.3f}, "
              f"{row['comprehensiveness_ci_high']:.3f}]  suff. {row['sufficiency']:.3f} "
              f"[{row['sufficiency_ci_low']:.3f}, {row['sufficiency_ci_high']:.3f}]  n={row['n']}")
    print("paired differences (same sentences):")
    for difference in out["differences"]:
        print(f"  {difference['verdict']}")
    print(out["conclusion"])
    if result.truncated:
        print(truncation_note(result.truncated))
    return 0


def add_qk_space(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("qk-space", help="one head's queries and keys in one 2-D space (AttentionViz's normalisation), "
                                        "over a sentence or a set, and how alike the heads attend")
    p.add_argument("text", nargs="?", default=None, help="one sentence (or --text-file)")
    p.add_argument("--text-file", type=Path, default=None, help="one sentence per line (at most --max-sentences)")
    p.add_argument("--max-sentences", type=positive_int, default=200)
    p.add_argument("--layer", type=positive_int, default=1, help="1-based")
    p.add_argument("--head", type=positive_int, default=1, help="1-based")
    p.add_argument("--method", choices=["pca", "umap"], default="pca", help="umap needs umap-learn")
    p.add_argument("--similarity", action="store_true",
                   help="add the heads x heads Jensen-Shannon divergence of their attention over the sentences")
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_qk_space)


def run_qk_space(args: argparse.Namespace) -> int:
    from .attention.qk_space import head_similarity, joint_embedding
    from .lens import head_vectors
    from .sentences import read_lines

    if (args.text is None) == (args.text_file is None):
        raise InputError("give one sentence or --text-file, not both")
    texts = [args.text] if args.text is not None else read_lines(args.text_file)[:args.max_sentences]
    lab = lab_from_args(args)
    queries, keys, points = head_vectors(lab, texts, args.layer - 1, args.head - 1)
    coords = joint_embedding(queries, keys, args.method)
    out: dict = {"model": lab.name, "layer": args.layer, "head": args.head, "method": args.method,
                 "sentences": len(texts),
                 "points": [{**p, "kind": kind, "x": float(x), "y": float(y)} for kind, rows in
                            (("query", coords[:len(points)]), ("key", coords[len(points):]))
                            for p, (x, y) in zip(points, rows)]}
    if args.similarity:
        attentions = [lab.analyze(t, truncate=True).attention for t in texts]
        out["head_similarity"] = head_similarity(attentions).round(5).tolist()
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"model: {lab.name}; head {args.layer}-{args.head}: {len(points)} queries and keys from {len(texts)} "
          f"sentence(s), {args.method.upper()} (--json for the coordinates)")
    if args.similarity:
        import numpy as np

        divergence = np.array(out["head_similarity"])
        np.fill_diagonal(divergence, np.inf)
        i, j = np.unravel_index(int(np.argmin(divergence)), divergence.shape)
        print(f"most alike heads: {i // lab.n_heads + 1}-{i % lab.n_heads + 1} and {j // lab.n_heads + 1}-"
              f"{j % lab.n_heads + 1} (JS {divergence[i, j]:.4f} nats)")
    return 0


# ---- index / search (exBERT) ---------------------------------------------------------------
def add_index(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="index every token of a treebank per layer, for corpus search (exBERT)")
    p.add_argument("--conllu", type=Path, action="extend", nargs="+", default=None,
                   help="CoNLL-U file(s) (default: the sample treebank); their POS and relations label the tokens")
    p.add_argument("--text-file", type=Path, default=None,
                   help="or plain sentences, one per line (parts of speech and relations from spaCy when installed)")
    p.add_argument("--out", type=Path, required=True, help="a folder for the index")
    p.add_argument("--kind", choices=["embeddings", "contexts"], default="embeddings",
                   help="hidden states after each layer, or the heads' outputs (exBERT's two searches)")
    p.add_argument("--max-sentences", type=positive_int, default=None)
    add_model_options(p)
    p.set_defaults(func=run_index, model=None)


def run_index(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .bert import ORIGINAL_SOURCE
    from .neighbours import build_index
    from .resources import SAMPLE_TREEBANK
    from .sentences import read_lines
    from .treebank import read_conllu

    if args.text_file is not None and args.conllu:
        raise InputError("give --conllu or --text-file, not both")
    if args.text_file is not None:
        sentences = plain_sentences(read_lines(args.text_file)[:args.max_sentences])
    else:
        sentences = [s for path in (args.conllu or [SAMPLE_TREEBANK]) for s in read_conllu(path)]
        sentences = sentences[:args.max_sentences] if args.max_sentences else sentences
    lab = lab_from_args(args, args.model or ORIGINAL_SOURCE)  # representations: the published weights by default
    with tqdm(total=len(sentences), desc=f"indexing {args.kind}", unit="sent") as bar:
        index = build_index(lab, sentences, args.kind, progress=lambda done, total: bar.update(done - bar.n))
    index.save(args.out)
    print(f"indexed {index.vectors.shape[1]:,} tokens of {len(index.sentences):,} sentences ({args.kind}, layers 0-"
          f"{index.layers}) with {index.model} into {args.out}")
    return 0


def plain_sentences(lines: list[str]) -> list:
    """Lines as Sentences: parsed by spaCy when a model is installed (its POS and relations label the
    tokens), otherwise split at spaces with "_" labels."""
    from .syntax.parse import spacy_model_name, spacy_parse
    from .treebank import Sentence

    parse = spacy_model_name() is not None
    out = []
    for line in lines:
        parsed = spacy_parse(line) if parse else None
        words = line.split()
        out.append(parsed or Sentence(words, [0] * len(words), ["_"] * len(words), ["_"] * len(words), line))
    return [s for s in out if s.words]


def add_search(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="the corpus tokens nearest to one token of a sentence at a layer (exBERT)")
    p.add_argument("text", help="the sentence the token is in")
    p.add_argument("--index", type=Path, required=True, help="a folder written by `bertviz-lab index`")
    p.add_argument("--token", default=None, help="the token to search for (its first occurrence), e.g. bank")
    p.add_argument("--position", type=int, default=None, help="or its position (0 = [CLS])")
    p.add_argument("--layer", type=int, default=None, help="0 = embeddings, 1..L = after that layer (default: last)")
    p.add_argument("--heads", default=None, help="contexts index: 1-based heads to compare, e.g. 3,9 (default: all)")
    p.add_argument("-k", type=positive_int, default=10)
    p.add_argument("--json", action="store_true")
    add_model_options(p)
    p.set_defaults(func=run_search, model=None)


def run_search(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .neighbours import TokenIndex, check_same_weights, nearest, query_vector

    index = TokenIndex.load(args.index)
    lab = lab_from_args(args, args.model or index.source)
    check_same_weights(lab, index)
    tokens = lab.encode(args.text, truncate=True).tokens
    if (args.token is None) == (args.position is None):
        raise InputError("give --token or --position")
    position = args.position
    if args.token is not None:
        matches = [i for i, t in enumerate(tokens) if t.lower() == args.token.lower()]  # uncased tokenizers lower it
        if not matches:
            raise InputError(f"{args.token!r} is not one of the tokens {tokens}")
        position = matches[0]
    layer = index.layers if args.layer is None else args.layer
    heads = None if args.heads is None else [int(h) - 1 for h in args.heads.replace(" ", "").split(",") if h]
    found = nearest(index, query_vector(lab, args.text, position, layer, index.kind), layer, args.k, heads)
    if args.json:
        print(json.dumps({"model": index.model, "kind": index.kind, "layer": layer, "position": position,
                          "token": tokens[position], "neighbours": [asdict(n) for n in found]}))
        return 0
    print(f"{index.kind} at layer {layer} of {index.model}: nearest to {tokens[position]!r} (position {position})")
    for n in found:
        print(f"{n.rank:>3}  {n.score:.3f}  {n.upos:<6} {n.deprel:<12} {n.context}")
    return 0


COMMANDS = (add_analyze, add_probe, add_structure, add_faithfulness, add_qk_space, add_index, add_search,
            add_compare, add_sweep, add_patch, add_positions, add_eval, add_eval_nsp,
            add_train, add_select, add_build_corpus)


EXAMPLES = {
    "analyze": ['bertviz-lab analyze "The [MASK] sat on the mat." --json',
                'bertviz-lab analyze "The man went to the [MASK]." --lens --explain'],
    "score-heads": ["bertviz-lab score-heads --out results/sample",
                    "bertviz-lab score-heads --conllu en_ewt-ud-dev.conllu --conllu de_gsd-ud-dev.conllu --out results/ud"],
    "structural-probe": ["bertviz-lab structural-probe --train en_ewt-ud-train.conllu --treebank en_ewt-ud-dev.conllu "
                         "--out results/structure",
                         "bertviz-lab structural-probe --probes results/structure/probes.safetensors --treebank "
                         "en_ewt-ud-dev.conllu --out results/structure-again"],
    "qk-space": ['bertviz-lab qk-space "The cat sat on the mat because it was tired." --layer 3 --head 9 --json',
                 "bertviz-lab qk-space --text-file sentences.txt --layer 2 --head 5 --similarity"],
    "index": ["bertviz-lab index --out results/index-sample",
              "bertviz-lab index --conllu en_ewt-ud-dev.conllu --kind contexts --out results/index-ewt"],
    "search": ['bertviz-lab search "The bank raised the interest rate." --token bank --index results/index-sample',
               'bertviz-lab search "The river bank flooded." --token bank --layer 3 --index results/index-ewt --heads 3,9 '
               '--json'],
    "faithfulness": ["bertviz-lab faithfulness --max-sentences 50",
                     "bertviz-lab faithfulness --text-file sentences.txt --sources GlobEnc ALTI rollout --json"],
    "compare": ['bertviz-lab compare "The cat [MASK] on the mat." --intervention left-only --json',
                "bertviz-lab compare --intervention ablate-heads --heads 3-9 --ablation resample --sample"],
    "sweep": ['bertviz-lab sweep "The cat [MASK] on the mat." --kind directional',
              "bertviz-lab sweep --kind ablation --ablation mean --text-file sentences.txt --json"],
    "patch": ['bertviz-lab patch "The keys to the cabinet [MASK] on the table." --source "The key to the cabinet '
              '[MASK] on the table." --correct are --wrong is',
              "bertviz-lab patch --pairs-file pairs.txt --json"],
    "positions": ["bertviz-lab positions --n 64", "bertviz-lab positions --n 128 --json"],
    "eval-mlm": ["bertviz-lab eval-mlm --teaching", "bertviz-lab eval-mlm --text-file sentences.txt --json"],
    "eval-nsp": ["bertviz-lab eval-nsp --text-file assets/minilm-mlm/heldout-ewt.txt",
                 "bertviz-lab eval-nsp --text-file documents.txt --json"],
    "train-mlm-head": ["bertviz-lab train-mlm-head --corpus data/corpus --out runs/v1 --steps 3000",
                       "bertviz-lab train-mlm-head --corpus data/corpus --out runs/v1 --steps 3000 --resume"],
    "select-head": ["bertviz-lab select-head --corpus data/corpus --chain runs/chain1",
                    "bertviz-lab select-head --corpus data/corpus --chain runs/chain1 runs/chain2 --shipped assets/minilm-mlm"],
    "build-corpus": ["bertviz-lab build-corpus --out data/wordnet",
                     "bertviz-lab build-corpus --out data/corpus --running-text data/ud/manifest.json"],
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bertviz-lab", description="Look inside BERT.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    for name, examples in EXAMPLES.items():  # every sub-command's --help ends with two real examples
        command = sub.choices[name]
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # unwritable --out, a full disk, a name the file system refuses
        where = f" {error.filename}" if error.filename else ""
        print(f"error: cannot read or write{where}: {error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def main_exit() -> None:
    """Entry point of the ``bertviz-lab`` console script (``python -m bertviz_lab`` does the same)."""
    sys.exit(main())
