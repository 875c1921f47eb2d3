"""Commands about a corpus: ``index`` and ``search`` (exBERT's corpus search: index every token of
a treebank per layer, then find the tokens nearest to one token of a sentence) and
``build-corpus`` (the text the masked-word and next-sentence heads are trained on)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..lab import InputError
from .options import (
    WorkBar,
    add_engine_options,
    add_model_options,
    chosen_checkpoint,
    command,
    emit,
    engine_from_args,
    head_list,
    lab_from_args,
    positive_int,
    seed,
)

EXAMPLES = {
    "index": ["bertviz-lab index --out results/index-sample",
              "bertviz-lab index --conllu en_ewt-ud-dev.conllu --kind contexts --out results/index-ewt"],
    "search": ['bertviz-lab search "The bank raised the interest rate." --token bank --index results/index-sample',
               'bertviz-lab search "The river bank flooded." --token bank --layer 3 --index results/index-ewt --heads 3,9 '
               '--json'],
    "build-corpus": ["bertviz-lab build-corpus --out data/wordnet",
                     "bertviz-lab build-corpus --out data/corpus --running-text data/ud/manifest.json"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    add_index(sub)
    add_search(sub)
    add_build_corpus(sub)


# ---- index / search (exBERT) ---------------------------------------------------------------
def add_index(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "index", "index every token of a treebank per layer, for corpus search (exBERT)",
                EXAMPLES["index"])
    p.add_argument("--conllu", type=Path, action="extend", nargs="+", default=None,
                   help="CoNLL-U file(s) (default: the sample treebank); their POS and relations label the tokens")
    p.add_argument("--text-file", type=Path, default=None,
                   help="or plain sentences, one per line (parts of speech and relations from spaCy when installed)")
    p.add_argument("--out", type=Path, required=True, help="a folder for the index")
    p.add_argument("--kind", choices=["embeddings", "contexts"], default="embeddings",
                   help="hidden states after each layer, or the heads' outputs (exBERT's two searches)")
    p.add_argument("--max-sentences", type=positive_int, default=None)
    add_model_options(p, needs_mlm_head=False)
    add_engine_options(p, "batches of sentences")
    p.set_defaults(func=run_index)


def run_index(args: argparse.Namespace) -> int:
    from ..neighbours import build_index, index_record
    from ..syntax.parse import corpus_sentences

    if args.text_file is not None and args.conllu:
        raise InputError("give --conllu or --text-file, not both")
    sentences = corpus_sentences(args.conllu or (), args.text_file, args.max_sentences)
    lab = lab_from_args(args)
    layers = lab.n_layers + (args.kind == "embeddings")  # contexts have no layer 0 (the embeddings have no heads)
    with WorkBar("index", "sentence", lambda n: f"{n:,} sentences through the model, every token's {args.kind} at "
                                                f"{layers} layers", "batch") as bar:
        index = build_index(lab, sentences, args.kind, progress=bar, engine=engine_from_args(args))
    index.save(args.out)
    record = index_record(index, args.out)
    return emit(args, record, [f"indexed {record['tokens']:,} tokens of {record['sentences']:,} sentences "
                               f"({record['kind']}, layers 0-{record['layers']}) with {record['model']} into "
                               f"{record['out']}"])


def add_search(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "search", "the corpus tokens nearest to one token of a sentence at a layer (exBERT)",
                EXAMPLES["search"])
    p.add_argument("text", help="the sentence the token is in")
    p.add_argument("--index", type=Path, required=True, help="a folder written by `bertviz-lab index`")
    p.add_argument("--token", default=None, help="the token to search for (its first occurrence), e.g. bank")
    p.add_argument("--position", type=int, default=None, help="or its position (0 = [CLS])")
    p.add_argument("--layer", type=int, default=None, help="0 = embeddings, 1..L = after that layer (default: last)")
    p.add_argument("--heads", type=head_list, default=None,
                   help="contexts index: 1-based heads to compare, e.g. 3,9 (default: all)")
    p.add_argument("-k", type=positive_int, default=10)
    add_model_options(p, needs_mlm_head=False, recorded="the checkpoint the index was built with, as a search needs")
    p.set_defaults(func=run_search)


def run_search(args: argparse.Namespace) -> int:
    from ..neighbours import TokenIndex
    from ..tasks.search import SearchRequest, search

    if (args.token is None) == (args.position is None):
        raise InputError("give --token or --position (one of the two)")
    index = TokenIndex.load(args.index)
    lab = lab_from_args(args, chosen_checkpoint(args, recorded=index.checkpoint_id))  # the index's weights by default
    request = SearchRequest(args.text, args.token, args.position, args.layer, args.heads, args.k)
    record = search(request, lab, index).to_json()
    return emit(args, record, [
        f"{record['kind']} at layer {record['layer']} of {record['model']}: nearest to {record['token']!r} "
        f"(position {record['position']})",
        *(f"{n['rank']:>3}  {n['score']:.3f}  {n['upos']:<6} {n['deprel']:<12} {n['context']}"
          for n in record["neighbours"])])


# ---- build-corpus --------------------------------------------------------------------------
def add_build_corpus(sub: argparse._SubParsersAction) -> None:
    from ..mlm.running_text import HELDOUT_UNITS

    p = command(sub, "build-corpus", "write the training/held-out corpus: WordNet (needs wordnet-base) and "
                                     "optionally running text: UD train splits, the Brown Corpus",
                EXAMPLES["build-corpus"])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--heldout", type=positive_int, default=2000, help="WordNet lines held out")
    p.add_argument("--wordnet", type=Path, default=None, metavar="DIR",
                   help="WordNet's data.noun/verb/adj/adv (default: /usr/share/wordnet, where wordnet-base puts them)")
    p.add_argument("--running-text", type=Path, action="append", default=[], metavar="MANIFEST",
                   help="manifest.json written by scripts/ud_running_text.py (UD train files) or "
                   "scripts/nltk_brown.py (the Brown Corpus): paths, licences, origins; repeatable")
    p.add_argument("--heldout-sentences", type=positive_int, default=1000,
                   help="running-text sentences held out per origin (at most 10%% of it; whole documents "
                   "may take up to one document more)")
    p.add_argument("--heldout-unit", choices=HELDOUT_UNITS, default="document",
                   help="hold out whole documents (default), or one passage of a document with the rest trained "
                   "on, as the shipped head's corpus was cut")
    p.add_argument("--seed", type=seed, default=0)
    p.set_defaults(func=run_build_corpus)


def run_build_corpus(args: argparse.Namespace) -> int:
    from ..mlm.corpus import WORDNET_DIR, build_corpus, read_manifest

    running = [item for manifest in args.running_text for item in read_manifest(manifest)]
    try:
        record = build_corpus(args.out, heldout=args.heldout, seed=args.seed, running=running,
                              folder=args.wordnet or WORDNET_DIR, heldout_sentences=args.heldout_sentences,
                              heldout_unit=args.heldout_unit)
    except ValueError as error:  # two running-text sources of one name
        raise InputError(str(error)) from None
    return emit(args, record, [
        f"wrote {args.out}: {record['train_lines']:,} training lines, {record['heldout_lines']:,} held-out WordNet "
        f"lines (seed {record['seed']})",
        *(f"  {s['name']}: {s['train_lines']:,} train, {s['heldout_lines']:,} held out; licence {s['licence']}"
          for s in record["sources"])])
