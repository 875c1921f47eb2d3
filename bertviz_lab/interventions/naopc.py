"""The published faithfulness protocol for sentiment classifiers, reproduced: AOPC comprehensiveness
and sufficiency with Normalized AOPC (NAOPC) bounds, as Edin et al. evaluate them.

Paper: J. Edin, A. G. Motzfeldt, C. L. Christensen, T. Ruotsalo, L. Maaløe, M. Maistro, "Normalized
AOPC: Fixing Misleading Faithfulness Metrics for Feature Attribution Explainability" (arXiv 2408.08137,
2024; ACL 2025). Released code: github.com/JoakimEdin/naopc. What it does, and what this module does
the same way:

- **Words, not tokens** (``src/utils/tokenizer.py`` ``get_word_map_callable``: ``get_word_map_bert``
  for WordPiece vocabularies, ``get_word_map_roberta`` for byte-level BPE). Word pieces (``##``) join
  their word, punctuation is a word of its own (a run of punctuation is one word), and a piece after
  an apostrophe joins it (``' s`` is the word "'s", ``n ' t`` the words "n" and "'t").
  ``word_map`` ports both functions token for token. A word's score is the sum of its tokens' scores
  (``src/feature_attribution_methods/calculate_feature_attribution_scores.py``).
- **Replacement**: every token of a removed word becomes the mask token, so a word of two pieces
  becomes two [MASK]s (``src/evaluation/evaluate_feature_attributions.py``:
  ``permutation_input_ids[:, token_indices] = mask_token_id``). [CLS] and [SEP] are never replaced
  (``word_attributions[1:-1]``: they are not ranked).
- **Steps**: cumulative, in rank order, one word per step, every word (no bins): with n words and
  ``p(S)`` the probability of class 1 with the words in S masked,
  comprehensiveness = 1/n sum_{k=1..n} (p(∅) - p(top k words)), and sufficiency the same with the
  words removed least important first (``word_ranking.flip(0)``). The last step (every word masked)
  counts in both; the unmasked input (k = 0) does not. The class is always class 1 (positive), the
  explanations are of class 1 too (``target_label = torch.tensor([1])``), whatever the prediction.
- **NAOPC bounds** (``src/evaluation/naopc_exact/calculate_permutations.py`` computes p(S) for all
  2^n word subsets; ``calculate_aopc_limits.py`` ``permutations`` searches every ordering): the upper
  bound is the largest comprehensiveness any ordering of the words reaches and the lower bound the
  smallest; since sufficiency of an ordering is comprehensiveness of its reverse, both metrics share
  them. Normalised: (score - lower) / (upper - lower), 0 when upper = lower
  (``reports/ranking_plot_short.py``). We search the same orderings exactly by dynamic programming
  over the subsets (the best ordering of S ends in one of its words: O(2^n n) instead of n!), so the
  bounds are the same numbers. (One difference: their search starts the maximum at 0.0, so where
  every ordering's sum is negative their upper bound is 0-based; ours is the true maximum.)
  Exact bounds need 2^n forward passes; the paper computes them for its short set only (SST-2
  validation sentences labelled positive with at most 10 words, ``src/utils/create_datasets.py``:
  ``word_length <= 12`` counting [CLS] and [SEP]), so longer sentences are skipped and counted.
  (Their beam-search bounds for long inputs, ``naopc_beam``, are not reproduced.)
- **Tokens too** (ours, not the paper's): a sentence of at most 10 words is still skipped, and counted
  apart, when it has more than ``MAX_TOKENS`` word pieces with [CLS] and [SEP]. The work of one
  sentence is 2^n masked rows x its tokens, and words bound only the first factor: 8 words of ~25
  pieces each cost 96 CPU-seconds (issue 56). The short set needs no more than 16 tokens with this
  lab's uncased WordPiece vocabulary (its ``token_length`` column says 18 at most), so a cap of 32
  keeps every sentence of it and bounds a sentence's masked inputs at 2^10 rows x 32 tokens = 32,768
  token-rows, twice the short set's worst (2^10 x 16): on one thread with the shipped classifier its
  2^10 rows take 3.4 CPU-seconds, and 10 words of 32 tokens 6.7. On a public server every one of
  those passes is also charged to the request's budget (``bert/runtime/budget.py``); the caps bound the
  command line, which has none.

The published means over those 66 sentences (``results/aopc_scores_short/sst2_bert-base-uncased-SST-2.csv``,
all sentences) are DecompX comprehensiveness 0.339, attention 0.165, random 0.122. The paper's NAOPC
tables keep only sentences whose P(class 1) > 0.5 (61 of 66 for that model); ``to_json`` reports
every sentence, and how many are above 0.5.

The explanations are this lab's (``attribution.explain_class`` for class 1 and the faithfulness
rankings read at the [CLS] row), not re-implementations of theirs: their gradient x input and IG
take the L2 norm over embedding dimensions and IG starts from [MASK]; ours are signed sums from [PAD].
"""
from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from ..bert.sources.captured import MIXING_CAPTURES, Captured
from ..engines import LOCAL, Engine, run_units
from ..lab import MAX_TEXT_CHARACTERS, Encoded, InputError, Lab
from .faithfulness import CONTROL, RANKINGS, rankings
from .sets import mean_interval

PROTOCOL = "naopc-sst2"
TARGET_CLASS = 1  # the code explains and scores P(class 1) (positive) for every sentence
MAX_WORDS = 10  # the short set: word_length <= 12 with [CLS] and [SEP]
MAX_TOKENS = 32  # with [CLS] and [SEP]; the short set has at most 16 (18 by its token_length column)
EXPLAINED = ("erasure", "gradient x input", "integrated gradients", "decompx")  # from explain_class
NAOPC_RANKINGS = tuple(dict.fromkeys(RANKINGS[:-1] + EXPLAINED[:-1] + (CONTROL,)))
_ALNUM = re.compile(r"^[a-zA-Z0-9]*$")


def wordpiece_word_map(tokens: Sequence[str]) -> list[int]:
    """A word index per token of a WordPiece input, as ``get_word_map_bert`` gives it (ported line by line)."""
    word_map: list[int] = []
    idx, space, punct_run = 0, False, False
    for i, token in enumerate(tokens):
        if re.match(r"^\[.*\]$", token):  # a special token is a word of its own
            punct_run = False
            idx += idx in word_map
            word_map.append(idx)
            idx, space = idx + 1, False
        elif token.startswith("##"):
            punct_run = False
            word_map.append(idx)
        elif token == "\\" and i + 1 < len(tokens) - 1 and tokens[i + 1].startswith("n"):
            idx += 1
            word_map.append(idx)
        elif re.match(r"^[0-9]*$", token) and i > 0 and re.match(r"^[\$\#\¢\£\€]*$", tokens[i - 1]):
            word_map.append(idx)  # a number after a currency sign joins it
        elif not _ALNUM.match(token):  # punctuation starts a word; a run of it stays one word
            idx += not punct_run and i > 1
            if i + 1 < len(tokens) - 1 and not _ALNUM.match(tokens[i + 1]):
                punct_run = True
            word_map.append(idx)
        else:
            idx += (space and not punct_run and tokens[i - 1] != "'") + punct_run
            word_map.append(idx)
            space, punct_run = True, False
    return word_map


def bpe_word_map(tokens: Sequence[str]) -> list[int]:
    """A word index per token of a byte-level BPE input, as ``get_word_map_roberta`` gives it (``include_space=True``)."""
    word_map: list[int] = []
    idx, space = 0, False
    for token in tokens:
        if re.match(r"^<.*>$", token):
            idx += idx in word_map
            word_map.append(idx)
            idx, space = idx + 1, False
            continue
        if re.match(r"^[ĊĠ]+$", token):  # whitespace alone joins the word before it
            space = True
            word_map.append(idx)
            continue
        space = space or token.startswith("Ġ")
        if not _ALNUM.match(token) and not token.startswith("Ġ"):
            idx += idx > 1
            word_map.append(idx)
            space = True
            continue
        if space:
            idx, space = idx + 1, False
        word_map.append(idx)
    return word_map


def word_groups(lab: Lab, enc: Encoded) -> list[list[int]]:
    """The token positions of each word, in order, [CLS], [SEP] (and any special token) excluded."""
    tokens = [lab.tokenizer.id_to_token(i) for i in enc.ids]
    bpe = type(lab.tokenizer.model).__name__ == "BPE"
    word_map = bpe_word_map(tokens) if bpe else wordpiece_word_map(tokens)
    groups: dict[int, list[int]] = {}
    for position, word in enumerate(word_map):
        groups.setdefault(word, []).append(position)
    specials = lab.special_ids
    return [g for _, g in sorted(groups.items()) if not any(enc.ids[p] in specials for p in g)]


def subset_probabilities(lab: Lab, enc: Encoded, groups: Sequence[Sequence[int]], target: int = TARGET_CLASS,
                         batch_size: int = 256) -> np.ndarray:
    """P(target) with the words of every subset replaced by the mask token, each piece by one: (2^n,),
    indexed by the bitmask of the masked words (bit w = word w; entry 0 = nothing masked)."""
    n, ids = len(groups), torch.tensor(enc.ids)
    subsets = torch.arange(2 ** n)  # (2^n,)
    masked = ((subsets[:, None] >> torch.arange(n)) & 1).bool()  # (2^n, words)
    word_of = torch.zeros((n, len(enc.ids)), dtype=torch.bool)  # (words, tokens)
    for w, group in enumerate(groups):
        word_of[w, list(group)] = True
    token_masked = (masked.float() @ word_of.float()).bool()  # (2^n, tokens)
    rows = torch.where(token_masked, torch.tensor(lab.mask_id), ids)  # (2^n, tokens)
    out = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        tensors = {"input_ids": chunk.to(lab.device),
                   "token_type_ids": torch.tensor(enc.segment_ids).expand_as(chunk).to(lab.device),
                   "attention_mask": torch.ones_like(chunk).to(lab.device)}
        result, _ = lab.run(tensors, capture=(), compute_mlm=False)
        out.append(torch.softmax(result.class_logits.float(), -1)[:, target].cpu())  # (chunk,)
    return torch.cat(out).numpy()


def prefix_masks(order: Sequence[int]) -> list[int]:
    """The bitmasks of the first 1..n words of ``order``."""
    masks, mask = [], 0
    for word in order:
        mask |= 1 << word
        masks.append(mask)
    return masks


def comprehensiveness(p: np.ndarray, order: Sequence[int]) -> float:
    """1/n sum over k = 1..n of p(nothing masked) - p(the first k words of ``order`` masked)."""
    return float(np.mean([p[0] - p[m] for m in prefix_masks(order)]))


def sufficiency(p: np.ndarray, order: Sequence[int]) -> float:
    """Comprehensiveness of the reversed order: the least important words masked first."""
    return comprehensiveness(p, list(order)[::-1])


def exact_bounds(p: np.ndarray, n: int) -> tuple[float, float]:
    """(upper, lower): the largest and smallest comprehensiveness of any ordering of the n words. The
    sum over an ordering's prefixes ends in the full set, so best(S) = drop(S) + best of S less one word."""
    drop = p[0] - p  # (2^n,)
    high, low = np.zeros(2 ** n), np.zeros(2 ** n)
    for subset in range(1, 2 ** n):
        smaller = [subset & ~(1 << w) for w in range(n) if subset >> w & 1]
        high[subset] = drop[subset] + max(high[s] for s in smaller)
        low[subset] = drop[subset] + min(low[s] for s in smaller)
    return float(high[-1] / n), float(low[-1] / n)


def normalised(value: float, upper: float, lower: float) -> float:
    """NAOPC: the score's place between the bounds (0 when they meet, as the released code sets it)."""
    return 0.0 if upper == lower else (value - lower) / (upper - lower)


def word_order(token_scores: np.ndarray, groups: Sequence[Sequence[int]]) -> list[int]:
    """Words by the sum of their tokens' scores, highest first (ties keep sentence order)."""
    words = np.array([float(np.sum(token_scores[list(g)])) for g in groups])
    return np.argsort(-words, kind="stable").tolist()


def token_scores(lab: Lab, text: str, names: Sequence[str], seed: int) -> tuple[Encoded, dict[str, np.ndarray]]:
    """The input and each ranking's score of every token for class 1: the faithfulness rankings at the
    [CLS] row, and erasure, gradient x input, IG and DecompX from ``explain_class``."""
    from .attribution import explain_class

    analysis = lab.analyze(text, truncate=True)
    enc, n = analysis.encoded(), len(analysis.tokens)
    out: dict[str, np.ndarray] = {}
    attention_based = [name for name in names if name in RANKINGS and name != "decompx"]
    if attention_based:
        _, cache = lab.run(lab.batch_tensors([enc]), capture=MIXING_CAPTURES, compute_mlm=False)
        out.update(rankings(Captured(lab.model, cache, 0, n), 0, seed, attention_based))
    if set(names) & set(EXPLAINED):
        explained = explain_class(lab, analysis, label=TARGET_CLASS)
        for name in set(names) & set(EXPLAINED):
            full = np.zeros(n)
            full[explained.context] = explained.scores[name]
            out[name] = full
    return enc, out


@dataclass
class NaopcResult:
    """Per sentence (rows) and ranking (columns): comprehensiveness and sufficiency in P(class 1), with
    each sentence's exact bounds and its unmasked P(class 1)."""

    rankings: tuple[str, ...]
    comprehensiveness: np.ndarray  # (sentences, rankings)
    sufficiency: np.ndarray  # (sentences, rankings)
    upper: np.ndarray  # (sentences,)
    lower: np.ndarray  # (sentences,)
    probability: np.ndarray  # (sentences,) P(class 1) of the unmasked input
    model: str
    skipped_long: int = 0  # sentences over max_words words (exact bounds out of reach)
    skipped_tokens: int = 0  # sentences within max_words but over max_tokens word pieces (too costly per row)
    max_words: int = MAX_WORDS
    max_tokens: int = MAX_TOKENS

    def normalised(self, values: np.ndarray) -> np.ndarray:  # (sentences, rankings)
        span = (self.upper - self.lower)[:, None]
        safe = np.where(span == 0, 1.0, span)
        return np.where(span == 0, 0.0, (values - self.lower[:, None]) / safe)

    def table(self, resamples: int = 1000, seed: int = 0) -> list[dict]:
        columns = {"comprehensiveness": self.comprehensiveness, "sufficiency": self.sufficiency,
                   "naopc_comprehensiveness": self.normalised(self.comprehensiveness),
                   "naopc_sufficiency": self.normalised(self.sufficiency)}
        rows = []
        for r, name in enumerate(self.rankings):
            row: dict = {"ranking": name, "n": len(self.upper)}
            for key, values in columns.items():
                effect = mean_interval(values[:, r], resamples, seed).to_json()
                row.update({key: effect["mean"], f"{key}_ci_low": effect["ci_low"], f"{key}_ci_high": effect["ci_high"]})
            rows.append(row)
        return rows

    def to_json(self, resamples: int = 1000, seed: int = 0) -> dict:
        return {"protocol": PROTOCOL, "model": self.model, "target_class": TARGET_CLASS,
                "rankings": self.table(resamples, seed), "upper_bound_mean": float(self.upper.mean()),
                "lower_bound_mean": float(self.lower.mean()),
                "above_half": int((self.probability > 0.5).sum()), "skipped_long": self.skipped_long,
                "skipped_tokens": self.skipped_tokens, "max_words": self.max_words, "max_tokens": self.max_tokens}


def check_names(names: Sequence[str] | None) -> tuple[str, ...]:
    """The rankings asked for, in NAOPC_RANKINGS order, the random control always included."""
    chosen = set(names or NAOPC_RANKINGS)
    unknown = sorted(chosen - set(NAOPC_RANKINGS))
    if unknown:
        raise InputError(f"unknown ranking {', '.join(map(repr, unknown))}; choose from {', '.join(NAOPC_RANKINGS)}")
    return tuple(name for name in NAOPC_RANKINGS if name in chosen | {CONTROL})


def out_of_bounds(enc: Encoded, groups: Sequence[Sequence[int]], max_words: int, max_tokens: int) -> str:
    """Which bound the sentence breaks: "words" (none, or more than ``max_words``: 2^n rows), "tokens" (more
    than ``max_tokens`` pieces with [CLS] and [SEP], counted before any truncation: the cost of each row), or
    "" when it is scored. Words are checked first, so a sentence over both counts as the paper's skip."""
    if not 0 < len(groups) <= max_words:
        return "words"
    return "tokens" if enc.n_tokens_before_truncation > max_tokens else ""


def naopc_sentence(lab: Lab, unit: tuple[str, int], names: Sequence[str],
                   bounds: tuple[int, int] = (MAX_WORDS, MAX_TOKENS)) -> dict | str:
    """One sentence of the protocol, ``unit`` = (line, its explanations' seed): every ranking's
    comprehensiveness and sufficiency, the exact bounds and P(class 1) of the full input; or the bound it
    breaks ("words" or "tokens"), when it is counted and not run. A unit of work for ``engines.run_units``."""
    line, seed = unit
    enc = lab.encode(line, truncate=True)
    groups = word_groups(lab, enc)
    reason = out_of_bounds(enc, groups, *bounds)
    if reason:
        return reason
    enc, scores = token_scores(lab, line, names, seed)
    p = subset_probabilities(lab, enc, groups)
    orders = [word_order(scores[name], groups) for name in names]
    high, low = exact_bounds(p, len(groups))
    return {"comprehensiveness": [comprehensiveness(p, o) for o in orders],
            "sufficiency": [sufficiency(p, o) for o in orders], "upper": high, "lower": low, "p": float(p[0])}


def naopc(lab: Lab, lines: Sequence[str], names: Sequence[str] | None = None, seed: int = 0,
          progress: Callable[[int, int], None] | None = None, engine: Engine = LOCAL) -> NaopcResult:
    """The protocol over ``lines`` (each a sentence): every ranking's comprehensiveness and sufficiency,
    and the exact bounds, per sentence of at most ``MAX_WORDS`` words and ``MAX_TOKENS`` tokens (the
    others are counted, by the bound they break, and not run: see ``out_of_bounds``). Each sentence is one
    unit on ``engine`` (local or Ray), seeded by its place in ``lines``: the records, and so every interval,
    are the same on either."""
    max_words, max_tokens = MAX_WORDS, MAX_TOKENS
    chosen = check_names(names)
    if not lab.model.class_labels or len(lab.model.class_labels) <= TARGET_CLASS:
        raise InputError("this checkpoint has no sequence classifier with a class 1, so the naopc-sst2 protocol "
                         "cannot score it: load a *ForSequenceClassification checkpoint")
    lines = [line for line in lines if line.strip()]
    work = partial(naopc_sentence, names=chosen, bounds=(max_words, max_tokens))
    units = [(line, seed + done) for done, line in enumerate(lines, start=1)]
    records = run_units(lab, work, units, engine, progress)
    skipped = {reason: sum(r == reason for r in records) for reason in ("words", "tokens")}
    kept = [r for r in records if not isinstance(r, str)]
    comp, suff = [r["comprehensiveness"] for r in kept], [r["sufficiency"] for r in kept]
    upper, lower, prob = [r["upper"] for r in kept], [r["lower"] for r in kept], [r["p"] for r in kept]
    if not upper:
        raise InputError(f"no sentence has between 1 and {max_words} words and at most {max_tokens} tokens (the "
                         f"protocol's short set): {skipped['words']} broke the word bound, {skipped['tokens']} the token bound")
    return NaopcResult(chosen, np.array(comp), np.array(suff), np.array(upper), np.array(lower), np.array(prob),
                       lab.checkpoint_info().describe(), skipped["words"], skipped["tokens"], max_words, max_tokens)


def read_text(path: str | Path) -> str:
    """The file as UTF-8 text without its byte-order mark (Notepad and Excel write one; left in, it would
    be part of the first column's name), or an InputError naming the line and byte that are not UTF-8.
    The bytes are decoded at once so that the byte reported is the file's, not a read buffer's."""
    raw = Path(path).read_bytes()
    start = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[start:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = start + error.start
        line = raw[:at].count(b"\n") + 1
        raise InputError(f"{path} is not UTF-8 text: line {line}, byte {at} cannot be decoded (save it as UTF-8)") from None


def too_long(path: str | Path, line: int, what: str = "a field") -> InputError:
    """The refusal of a field or line over the lab's limit for one text (``lab.MAX_TEXT_CHARACTERS``, which
    the tokenizer would enforce anyway, but without the file or line), named by file and line."""
    return InputError(f"{path}, line {line}: {what} is longer than {MAX_TEXT_CHARACTERS:,} characters, the most one "
                      "sentence may have")


def table_rows(path: str | Path, text: str, comma: bool) -> list[list[str]]:
    """The rows of a CSV (quoted) or TSV (unquoted, as GLUE writes it) text. A field over the lab's text limit
    is refused here by line, not later by the tokenizer without one, and the csv module's own field limit
    (131,072 characters, which it raises as ``csv.Error``) becomes the same sentence."""
    dialect = {"delimiter": ","} if comma else {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    reader = csv.reader(io.StringIO(text, newline=""), **dialect)
    rows = []
    try:
        for row in reader:
            if any(len(field) > MAX_TEXT_CHARACTERS for field in row):
                raise too_long(path, reader.line_num)
            rows.append(row)
    except csv.Error as error:
        if "field limit" in str(error):
            raise too_long(path, reader.line_num) from None
        kind = "CSV" if comma else "tab-separated"
        raise InputError(f"{path}, line {reader.line_num}: not readable as {kind} text ({error})") from None
    return rows


def read_labelled(path: str | Path, label_column: str = "label", keep: str = str(TARGET_CLASS)) -> list[str]:
    """The sentences of a tab-separated file with a header (GLUE's SST-2 layout: ``sentence``, ``label``;
    a ``text`` column also works) whose label is ``keep``: the protocol's set is the positive sentences.
    A ``.csv`` file is read as quoted CSV, so the released short set (``data/sst2_test_short.csv``:
    ``word_length,token_length,label,id,text``) is read as it comes. Whatever is wrong with the file
    (not UTF-8, empty, a field too long, a column missing, no row to keep) is an InputError of one
    sentence that names it."""
    rows = table_rows(path, read_text(path), Path(path).suffix.lower() == ".csv")
    rows = [row for row in rows if any(cell.strip() for cell in row)]  # blank lines hold no sentence
    if not rows:
        raise InputError(f"{path} is empty: give a header line and one sentence per line")
    header = [cell.strip() for cell in rows[0]]
    text = next((c for c in ("sentence", "text") if c in header), None)
    if text is None or label_column not in header:
        raise InputError(f"{path} needs a header with a 'sentence' (or 'text') column and a {label_column!r} "
                         f"column; it has {', '.join(map(repr, header))}")
    t, lab_col = header.index(text), header.index(label_column)
    kept = [row[t] for row in rows[1:] if len(row) > max(t, lab_col) and row[lab_col].strip() == keep]
    if not kept:
        raise InputError(f"{path} has no row whose {label_column!r} is {keep} (the protocol scores those sentences)")
    return kept


def read_sentence_lines(path: str | Path) -> list[str]:
    """The lines of a text file, one sentence each, read as ``read_labelled`` reads a table: a byte-order
    mark dropped, and an undecodable byte, an empty file or a line over the lab's text limit refused in
    one sentence that names the file (and the line)."""
    lines = read_text(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_TEXT_CHARACTERS:
            raise too_long(path, number, "the line")
    if not any(line.strip() for line in lines):
        raise InputError(f"{path} is empty: give one sentence per line")
    return lines
