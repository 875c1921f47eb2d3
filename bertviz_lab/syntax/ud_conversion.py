"""A ClearNLP-style dependency parse (spaCy's English pipelines) rewritten as Universal Dependencies
heads with written rules, so a parser's arcs can be compared with the content-word trees that
treebank scoring uses (UD English EWT).

The two schemes disagree about *which word is the head* in four places (UD v2 guidelines,
universaldependencies.org/u/overview/syntax.html; ClearNLP's scheme: Choi & Palmer 2012,
"Guidelines for the Clear Style Constituent to Dependency Conversion"):

- **Prepositions.** ClearNLP hangs the preposition under the word its phrase modifies (``prep``) and
  the noun under the preposition (``pobj``); UD makes the noun the head (``obl`` under a verb,
  adjective or adverb, ``nmod`` under a nominal) and the preposition its ``case``. A clause object of
  a preposition (``pcomp``, "after *leaving*") becomes ``advcl``/``acl`` with the preposition as its
  ``mark``. The passive ``agent`` ("by") becomes ``obl:agent`` of its noun; a ``dative`` "to"-phrase
  an ``obl``.
- **Copulas.** ClearNLP makes "be" the head of "The keys are *on the table*" / "is *happy*" / "is *a
  teacher*" (``prep``/``acomp``/``attr``); UD makes the predicate the head and "be" its ``cop``, and
  the subject, auxiliaries, negation and punctuation move to the predicate. Existential "there is"
  keeps "be" as the head in both (``attr`` becomes ``nsubj``).
- **Coordination.** ClearNLP chains conjuncts (each ``conj`` under the previous one, ``cc`` under the
  conjunct before it); UD attaches every conjunct to the first and the ``cc`` (and a comma between
  conjuncts) to the conjunct that follows it.
- **Names.** A person's name is a chain of ``compound`` onto its last word in ClearNLP; EWT draws it
  ``flat`` from its first word (done only inside a PERSON entity of the parser's NER).

Everything else is a change of label (``dobj`` → ``obj``, ``poss`` → ``nmod:poss``, ``relcl`` →
``acl:relcl``, …). The rules are what the conversion *can* do from the parse alone; their agreement
with gold EWT trees is measured by ``benchmarks/bench_parse_conversion.py``, not assumed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..treebank import Sentence

RENAMED = {"dobj": "obj", "nsubjpass": "nsubj:pass", "csubjpass": "csubj:pass", "auxpass": "aux:pass",
           "poss": "nmod:poss", "relcl": "acl:relcl", "neg": "advmod", "prt": "compound:prt",
           "npadvmod": "obl:unmarked", "oprd": "xcomp", "quantmod": "advmod", "predet": "det:predet",
           "preconj": "cc:preconj", "intj": "discourse", "meta": "parataxis", "root": "root", "dative": "iobj",
           "attr": "xcomp", "acomp": "xcomp", "prep": "obl", "pobj": "obj", "pcomp": "advcl", "agent": "obl:agent"}
PREPOSITION_LABELS = ("prep", "agent", "dative")  # a preposition under what its phrase modifies
NOMINAL_POS = ("NOUN", "PROPN", "PRON", "NUM", "DET", "X", "SYM")
BE = "be"


@dataclass
class ClearParse:
    """A parse in ClearNLP style, independent of the parser that made it: heads are 1-based word
    indices, 0 for a root (several sentences give several roots)."""

    words: list[str]
    heads: list[int]
    relations: list[str]  # ClearNLP labels, lower-case ("root" for a root)
    upos: list[str]
    lemmas: list[str] = field(default_factory=list)
    person: list[bool] = field(default_factory=list)  # inside a PERSON entity
    tags: list[str] = field(default_factory=list)  # Penn tags (to -> "TO")

    def __post_init__(self) -> None:
        n = len(self.words)
        self.lemmas = self.lemmas or [w.lower() for w in self.words]
        self.person = self.person or [False] * n
        self.tags = self.tags or ["_"] * n
        if not (len(self.heads) == len(self.relations) == len(self.upos) == len(self.lemmas) == len(self.person)
                == len(self.tags) == n):
            raise ValueError("a parse needs one head, relation, POS, lemma, entity flag and tag per word")


class _Tree:
    """Mutable 0-based heads (-1 = root) and labels, with the moves the rules are made of."""

    def __init__(self, parse: ClearParse) -> None:
        self.p = parse
        self.head = [h - 1 for h in parse.heads]
        self.rel = [r.lower() for r in parse.relations]

    def children(self, i: int, *labels: str) -> list[int]:
        return [c for c, h in enumerate(self.head) if h == i and (not labels or self.rel[c] in labels)]

    def promote(self, new: int, old: int, new_label: str, old_label: str) -> None:
        """``new`` takes ``old``'s place in the tree (its head and ``new_label``); ``old`` and every
        other dependent of ``old`` move under ``new``."""
        for child in self.children(old):
            if child != new:
                self.head[child] = new
        self.head[new], self.rel[new] = self.head[old], new_label
        self.head[old], self.rel[old] = new, old_label

    def governor_is_nominal(self, i: int) -> bool:
        h = self.head[i]
        return h >= 0 and self.p.upos[h] in NOMINAL_POS


def _copulas(t: _Tree) -> None:
    """"be" with a nominal (attr), adjectival (acomp) or prepositional predicate: the predicate heads."""
    for b in range(len(t.head)):
        if t.p.lemmas[b].lower() != BE or t.p.upos[b] not in ("AUX", "VERB"):
            continue
        if t.children(b, "expl"):  # existential "there is X": be stays the head, X is its subject
            for x in t.children(b, "attr"):
                t.rel[x] = "nsubj"
            continue
        predicate = next(iter(t.children(b, "attr", "acomp")), None)
        if predicate is None:
            predicate = next((p for p in t.children(b, "prep") if p > b and t.children(p, "pobj")), None)
        if predicate is not None:
            t.promote(predicate, b, t.rel[b], "cop")


def _prepositions(t: _Tree) -> None:
    """The object of a preposition heads it; the preposition becomes its case (or a clause's mark)."""
    for p in range(len(t.head)):
        objects = t.children(p, "pobj") or t.children(p, "pcomp")
        if not objects or t.p.upos[p] not in ("ADP", "SCONJ", "ADV", "PART", "VERB"):
            continue
        obj = objects[0]
        clause = t.rel[obj] == "pcomp"
        label = t.rel[p]
        if label in PREPOSITION_LABELS:
            if clause:
                label = "acl" if t.governor_is_nominal(p) else "advcl"
            elif label == "agent":
                label = "obl:agent"
            else:
                label = "nmod" if t.governor_is_nominal(p) else "obl"
        t.promote(obj, p, label, "mark" if clause else "case")


def _coordination(t: _Tree) -> None:
    """Every conjunct under the first; a cc (or a comma) under the conjunct that follows it."""
    def first(i: int) -> int:
        while t.rel[i] == "conj" and t.head[i] >= 0:
            i = t.head[i]
        return i

    chains: dict[int, list[int]] = {}
    for c in range(len(t.head)):
        if t.rel[c] == "conj":
            chains.setdefault(first(c), []).append(c)
    for f, conjuncts in chains.items():
        for c in conjuncts:
            t.head[c] = f
        members = sorted([f, *conjuncts])
        for x in range(len(t.head)):
            if t.head[x] in members and (t.rel[x] in ("cc", "preconj") or (t.rel[x] == "punct" and t.p.words[x] == ",")):
                after = [c for c in conjuncts if c > x]
                if t.rel[x] != "preconj" and after and x > members[0]:
                    t.head[x] = min(after)


def _names(t: _Tree) -> None:
    """A person's name: compound chain onto its last word -> flat from its first word."""
    n, i = len(t.head), 0
    while i < n:
        j = i
        while j + 1 < n and t.p.person[j + 1] and t.p.person[i] and t.p.upos[j + 1] == "PROPN":
            j += 1
        span = range(i, j + 1)
        if j > i and t.p.upos[i] == "PROPN" and all(t.rel[k] == "compound" and t.head[k] in span for k in span if k != j):
            t.promote(i, j, t.rel[j], "flat")
            for k in span:
                if k not in (i, j):
                    t.head[k], t.rel[k] = i, "flat"
        i = j + 1


def _labels(t: _Tree) -> None:
    for i, rel in enumerate(t.rel):
        if rel == "aux" and t.p.tags[i] == "TO":
            t.rel[i] = "mark"  # infinitival "to"
        elif rel == "dative" and t.p.upos[i] in ("ADP",):
            t.rel[i] = "obl"
        else:
            t.rel[i] = RENAMED.get(rel, rel)


PHRASE_COMMA_LABELS = ("advcl", "obl", "obl:unmarked", "acl:relcl", "appos")  # a comma beside one attaches to it


def _edges(t: _Tree) -> tuple[list[int], list[int]]:
    """Each word's subtree's leftmost and rightmost word."""
    left, right = list(range(len(t.head))), list(range(len(t.head)))
    for i in range(len(t.head)):
        j, seen = t.head[i], 0
        while j >= 0 and seen <= len(t.head):
            left[j], right[j] = min(left[j], i), max(right[j], i)
            j, seen = t.head[j], seen + 1
    return left, right


def _punctuation(t: _Tree) -> None:
    """UD hangs a comma on the phrase it closes or opens (a fronted adverbial clause or oblique, a
    relative clause, an apposition), and a sentence's final mark on its root, not on a later conjunct."""
    left, right = _edges(t)
    n = len(t.head)
    for x in range(n):
        if t.rel[x] != "punct":
            continue
        if t.p.words[x] == ",":
            beside = [d for d in range(n) if d != x and t.rel[d] in PHRASE_COMMA_LABELS
                      and (right[d] == x - 1 or (left[d] == x + 1 and t.rel[d] in ("acl:relcl", "appos")))]
            if beside:
                t.head[x] = beside[0]
        elif (x == n - 1 or t.head[x + 1] < 0 or t.rel[x + 1] == "root") and t.head[x] >= 0 and t.rel[t.head[x]] == "conj":
            t.head[x] = t.head[t.head[x]]


def to_ud(parse: ClearParse, text: str = "") -> Sentence:
    """The parse as UD-style heads and relations (see the module's docstring for the rules)."""
    tree = _Tree(parse)
    _copulas(tree)
    _prepositions(tree)
    _coordination(tree)
    _names(tree)
    _labels(tree)
    _punctuation(tree)
    return Sentence(list(parse.words), [h + 1 for h in tree.head], tree.rel, list(parse.upos),
                    text or " ".join(parse.words))
