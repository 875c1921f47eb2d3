"""Commands that look at one input or one head: ``analyze`` (attention in any source, masked-word
predictions, lens, attributions, queries and keys) and ``qk-space`` (one head's queries and keys
in one 2-D space, and how alike the heads attend)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from ..attention.sources import source_names
from ..lab import Analysis, InputError
from .options import (
    add_engine_options,
    add_model_options,
    command,
    emit,
    engine_from_args,
    lab_from_args,
    positive_int,
)

EXAMPLES = {
    "analyze": ['bertviz-lab analyze "The [MASK] sat on the mat." --json',
                'bertviz-lab analyze "The man went to the [MASK]." --lens --explain'],
    "qk-space": ['bertviz-lab qk-space "The cat sat on the mat because it was tired." --layer 3 --head 9 --json',
                 "bertviz-lab qk-space --text-file sentences.txt --layer 2 --head 5 --similarity"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    add_analyze(sub)
    add_qk_space(sub)


# ---- analyze -------------------------------------------------------------------------------
def add_analyze(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "analyze", "attention and masked-word predictions for one input", EXAMPLES["analyze"])
    p.add_argument("text", nargs="?", default=None, help="the input (or --text)")
    p.add_argument("--text", dest="text_option", default=None, metavar="TEXT", help="the input, as an option")
    p.add_argument("--pair", default=None, help="second segment (sentence B)")
    add_model_options(p, needs_mlm_head=True)
    p.add_argument("--top-k", type=positive_int, default=5)
    p.add_argument("--mask", type=int, action="append", help="token position to replace by [MASK] (repeatable)")
    p.add_argument("--position", type=int, action="append", help="also predict at this position (repeatable)")
    p.add_argument("--truncate", action="store_true", help="cut inputs longer than the model maximum")
    p.add_argument("--no-attention", action="store_true", help="leave the attention array out of the JSON")
    p.add_argument("--source", choices=source_names(), default="attention",
                   help="the attention source the attention array holds: softmax weights, norm-based weights, "
                        "context-mixing measures, or rollout / flow aggregated from the input up")
    p.add_argument("--lens", action="store_true",
                   help="also the MLM head's top-k on every layer's state at each masked position (JSON: lens)")
    p.add_argument("--class", dest="explain_class", default=None, metavar="LABEL",
                   help="with --explain on a classifier: the class whose logit is explained (default: the predicted one)")
    p.add_argument("--explain", action="store_true",
                   help="also attribute each masked prediction (a classifier: its class, see --class) to the context "
                        "tokens: erasure, gradient x input, integrated gradients, each attention source's Spearman rho "
                        "with erasure, and each ranking's faithfulness on this input (JSON: explain, one per masked "
                        "word; a classifier's class: explain_class)")
    p.add_argument("--qk", action="store_true",
                   help="also each head's query and key vectors (JSON: queries, keys; layers x heads x tokens x dim)")
    p.add_argument("--parse", action="store_true",
                   help="also parse the text with the offline parser (spaCy, converted to UD) and score every head's "
                        "agreement with its arcs in both of Clark's directions (JSON: parse, head_agreement)")
    p.set_defaults(func=run_analyze)


def one_input(args: argparse.Namespace) -> str:
    """The input given once, as the positional TEXT or as --text."""
    if args.text is not None and args.text_option is not None and args.text != args.text_option:
        raise InputError("give the input once: as the positional text or as --text, not two different ones")
    text = args.text if args.text is not None else args.text_option
    if text is None:
        raise InputError("give the input text, e.g. analyze \"The cat sat on the [MASK].\" (or --text \"...\")")
    return text


def run_analyze(args: argparse.Namespace) -> int:
    from ..tasks.analyze import AnalyzeRequest, analyze
    from ..tasks.explain import ExplainRequest

    request = AnalyzeRequest(one_input(args), args.pair, tuple(args.mask or ()), tuple(args.position or ()),
                             args.top_k, top_k_cap=None, truncate=args.truncate, source=args.source, lens=args.lens,
                             qk=args.qk, explain=ExplainRequest("all", args.explain_class) if args.explain else None,
                             parse=args.parse)
    lab = lab_from_args(args)
    record = analyze(request, lab)
    result = record.analysis
    if result.truncated:
        print(f"note: input truncated from {result.n_tokens_before_truncation} to {len(result.tokens)} tokens",
              file=sys.stderr)
    out = record.to_json(attention=not args.no_attention)
    return emit(args, out, analyze_summary(result, out))


def attribution_lines(tokens: list[str], attribution: dict) -> Iterator[str]:
    """A masked word's or a class's attribution: each method's scores, their agreement with erasure, and each
    ranking's faithfulness on this input (the same for a masked word and for a classifier's class)."""
    for method, values in attribution["scores"].items():
        yield f"  {method}: " + ", ".join(f"{tokens[j]} {v:+.3f}" for j, v in zip(attribution["context"], values))
    yield "  agreement with erasure (Spearman rho): " + ", ".join(
        f"{k} {v:+.2f}" for k, v in attribution["spearman_with_erasure"].items())
    yield "  on this input, AOPC / comprehensiveness / sufficiency: " + ", ".join(
        f"{k} {v['aopc']:.2f}/{v['comprehensiveness']:.2f}/{v['sufficiency']:.2f}"
        for k, v in attribution["faithfulness_on_this_input"].items())


def analyze_summary(result: Analysis, extra: dict) -> Iterator[str]:
    yield f"model: {result.model} on {result.device}; attention source: {result.source}"
    explained = [(f"why {a['target']!r} at position {a['position']} (signed; + raised it):", a)
                 for a in extra.get("explain", [])]
    if "explain_class" in extra:
        why = extra["explain_class"]
        explained.append((f"why class {why['label']!r} (P = {why['probability']:.3f}; signed; + raised its logit):",
                          why))
    for heading, attribution in explained:
        yield heading
        yield from attribution_lines(result.tokens, attribution)
        if attribution.get("decompx_specials"):  # a class: the specials' DecompX shares, left out above
            from ..interventions.attribution import decompx_note

            yield f"  {decompx_note(attribution['scores']['decompx'], attribution['decompx_specials'])}"
    for lens in extra.get("lens", []):
        yield f"lens at position {lens['position']} (final answer {lens['final']!r}):"
        for row in lens["layers"]:
            top = ", ".join(f"{t} {p:.3f}" for t, p in zip(row["tokens"], row["probabilities"]))
            yield f"  layer {row['layer']}: {top}  (final answer ranked {row['final_rank']})"
    yield "tokens: " + " ".join(f"{i}:{t}" for i, t in enumerate(result.tokens))
    for p in result.mlm:
        yield f"position {p.position} ({p.original or p.token}): " + ", ".join(
            f"{q.token} {q.probability:.3f}" for q in p.predictions)
    yield from (f"note: {note}" for note in (result.mlm_note, result.nsp_note) if note)
    if result.nsp is not None:
        yield f"next-sentence probability: {result.nsp:.3f}"
    if result.classes:
        yield "classes: " + ", ".join(f"{c.label} {c.probability:.3f}" for c in result.classes)
    if "queries" in extra:
        yield "queries and keys: in the JSON (--json)"
    if "parse" in extra:
        yield from parse_summary(extra["parse"], extra["head_agreement"])


def parse_summary(parse: dict, agreement: dict) -> Iterator[str]:
    """The parser's arcs (marked as a parser's, not gold) and the heads that agree with them most."""
    words = parse["words"]
    yield f"parse by {parse['parser']['package']} {parse['parser']['version']} (a parser's arcs, not gold; " \
          "converted to UD by rules):"
    yield "  " + "  ".join(f"{words[h - 1] if h else 'ROOT'} -{r}-> {w}" for w, h, r in
                           zip(words, parse["heads"], parse["relations"]))
    yield f"  {parse['parser']['agreement_note']}"
    for direction, best in agreement["best"].items():
        yield (f"head agreeing most with the parse ({direction}): layer {best['layer']} head {best['head']}, "
               f"{best['share']:.2f} of {agreement['arcs']} arcs")


# ---- qk-space ------------------------------------------------------------------------------
def add_qk_space(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "qk-space", "one head's queries and keys in one 2-D space (AttentionViz's normalisation), "
                                 "over a sentence or a set, and how alike the heads attend", EXAMPLES["qk-space"])
    p.add_argument("text", nargs="?", default=None, help="one sentence (or --text-file)")
    p.add_argument("--text-file", type=Path, default=None, help="one sentence per line (at most --max-sentences)")
    p.add_argument("--max-sentences", type=positive_int, default=200)
    p.add_argument("--layer", type=positive_int, default=1, help="1-based")
    p.add_argument("--head", type=positive_int, default=1, help="1-based")
    p.add_argument("--method", choices=["pca", "umap"], default="pca", help="umap needs umap-learn")
    p.add_argument("--similarity", action="store_true",
                   help="add the heads x heads Jensen-Shannon divergence of their attention over the sentences")
    add_model_options(p, needs_mlm_head=False)
    add_engine_options(p, "batches of --text-file's sentences")
    p.set_defaults(func=run_qk_space)


def run_qk_space(args: argparse.Namespace) -> int:
    from ..attention.qk_space import head_similarity, joint_embedding
    from ..lens import head_vectors, sentence_attentions
    from ..sentences import read_lines

    if (args.text is None) == (args.text_file is None):
        raise InputError("give one sentence or --text-file (one of the two)")
    texts = [args.text] if args.text is not None else read_lines(args.text_file)[:args.max_sentences]
    lab = lab_from_args(args)
    engine = engine_from_args(args)
    queries, keys, points = head_vectors(lab, texts, args.layer - 1, args.head - 1, engine=engine)
    coords = joint_embedding(queries, keys, args.method)  # (2 * points, 2): queries first, then keys
    out: dict = {"model": lab.checkpoint_info().describe(), "layer": args.layer, "head": args.head,
                 "method": args.method, "sentences": len(texts),
                 "points": [{**p, "kind": kind, "x": float(x), "y": float(y)} for kind, rows in
                            (("query", coords[:len(points)]), ("key", coords[len(points):]))
                            for p, (x, y) in zip(points, rows)]}
    if args.similarity:
        out["head_similarity"] = head_similarity(sentence_attentions(lab, texts, engine=engine)).round(5).tolist()
    return emit(args, out, qk_summary(out, lab.n_heads))


def qk_summary(out: dict, n_heads: int) -> Iterator[str]:
    yield (f"model: {out['model']}; head {out['layer']}-{out['head']}: {len(out['points']) // 2} queries and keys "
           f"from {out['sentences']} sentence(s), {out['method'].upper()} (--json for the coordinates)")
    if "head_similarity" in out:
        from ..attention.qk_space import most_alike_heads
        from ..naming import head_name

        first, second, divergence = most_alike_heads(out["head_similarity"], n_heads)
        yield f"most alike heads: {head_name(*first)} and {head_name(*second)} (JS {divergence:.4f} nats)"
