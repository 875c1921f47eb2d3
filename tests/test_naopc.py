"""Edin et al.'s naopc-sst2 protocol: word-level [MASK] replacement, comprehensiveness and sufficiency
over every step, exact NAOPC bounds, counted by hand on a classifier built so that one word decides."""
import itertools
import re

import builders
import numpy as np
import pytest
import torch
from builders import run_cli

from bertviz_lab.interventions.naopc import (
    MAX_TOKENS,
    MAX_WORDS,
    NAOPC_RANKINGS,
    bpe_word_map,
    comprehensiveness,
    exact_bounds,
    naopc,
    normalised,
    out_of_bounds,
    read_labelled,
    subset_probabilities,
    sufficiency,
    word_groups,
    wordpiece_word_map,
)


def decisive_classifier(folder, decisive=("cat",)):
    """A 1-layer BERT classifier where only the ``decisive`` tokens move the class (as tests/test_attribution.py's
    ``decisive_lab``): every other embedding row, [MASK]'s included, is orthogonal to u, attention is
    uniform and values project onto u, so [CLS] carries u only through the decisive tokens, and
    replacing a word by [MASK] (the length unchanged) leaves every other token's share as it was."""
    import transformers as tf

    cfg = builders.hf_config(layers=1, num_labels=2, id2label={0: "negative", 1: "positive"},
                             label2id={"negative": 0, "positive": 1})
    model = tf.BertForSequenceClassification(cfg).eval()
    u = torch.cat([torch.ones(16), -torch.ones(16)]) / np.sqrt(32)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        embeddings = model.bert.embeddings
        for table in (embeddings.word_embeddings, embeddings.position_embeddings, embeddings.token_type_embeddings):
            rows = torch.randn(table.weight.shape, generator=generator)
            table.weight.copy_(rows - (rows @ u)[:, None] * u)  # orthogonal to u
        for token in decisive:
            embeddings.word_embeddings.weight[builders.VOCAB.index(token)] += 20 * u
        layer = model.bert.encoder.layer[0]
        for norm in (embeddings.LayerNorm, layer.attention.output.LayerNorm, layer.output.LayerNorm):
            norm.weight.fill_(1.0)
        layer.attention.self.value.weight.copy_(10 * torch.outer(u, u))
        layer.attention.output.dense.weight.copy_(torch.eye(32))
        model.bert.pooler.dense.weight.copy_(0.01 * torch.eye(32))
        model.classifier.weight.copy_(torch.stack([-100 * u, 100 * u]))
    model.save_pretrained(folder)
    builders.write_vocab(folder)
    return folder


@pytest.fixture(scope="module")
def decisive_lab(tmp_path_factory):
    import bertviz_lab

    return bertviz_lab.load(str(decisive_classifier(tmp_path_factory.mktemp("naopc") / "cat")), device="cpu")


@pytest.fixture(scope="module")
def random_classifier(tmp_path_factory):
    """A 2-layer BERT classifier with random weights (class logits clearly apart), saved as a folder."""
    import transformers as tf

    torch.manual_seed(3)
    model = tf.BertForSequenceClassification(builders.hf_config(num_labels=2)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5 if p.dim() == 2 and p.shape[0] == 2 else 0.1)
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.fill_(1.0)
    folder = tmp_path_factory.mktemp("naopc") / "random"
    model.save_pretrained(folder)
    builders.write_vocab(folder)
    return folder


def p1(lab, text):
    """P(class 1) of a typed text ([MASK]s typed in place)."""
    return next(c.probability for c in lab.analyze(text).classes if c.index == 1)


def test_three_words_counted_by_hand(decisive_lab):
    """"the cat sat": P(class 1) is q while "cat" stays and 1/2 once it is masked, whatever else is.
    With d = q - 1/2, cat first: every step drops d, so comprehensiveness = d (counting k = 0 too, as
    the lab's own AOPC does, would give 3/4 d); cat second: 2/3 d; sufficiency masks the last-ranked
    first. The best ordering puts cat first (d), the worst last (d / 3): NAOPC of cat-second is 1/2."""
    enc = decisive_lab.encode("the cat sat")
    groups = word_groups(decisive_lab, enc)
    assert groups == [[1], [2], [3]]
    p = subset_probabilities(decisive_lab, enc, groups)
    q, half = p1(decisive_lab, "the cat sat"), p1(decisive_lab, "the [MASK] sat")
    assert q > 0.9 and half == pytest.approx(0.5, abs=1e-3)  # 1/2 up to float32 rounding
    cat = 1 << 1
    np.testing.assert_allclose(p, [half if m & cat else q for m in range(8)], atol=1e-5)
    d = q - half
    assert comprehensiveness(p, [1, 0, 2]) == pytest.approx(d, abs=1e-5)
    assert comprehensiveness(p, [0, 1, 2]) == pytest.approx(2 / 3 * d, abs=1e-5)
    assert sufficiency(p, [1, 0, 2]) == pytest.approx(d / 3, abs=1e-5)  # masked: sat, the, cat
    assert sufficiency(p, [0, 1, 2]) == pytest.approx(2 / 3 * d, abs=1e-5)  # masked: sat, cat, the
    upper, lower = exact_bounds(p, 3)
    assert (upper, lower) == pytest.approx((d, d / 3), abs=1e-5)
    assert normalised(comprehensiveness(p, [0, 1, 2]), upper, lower) == pytest.approx(0.5, abs=1e-4)
    assert normalised(0.3, 0.2, 0.2) == 0.0  # bounds that meet give 0, as the released code sets it


def test_the_protocol_scores_erasure_at_the_upper_bound(decisive_lab):
    """Erasure ranks "cat" first: comprehensiveness d (NAOPC 1) and sufficiency d / 3 (NAOPC 0)."""
    result = naopc(decisive_lab, ["the cat sat", "the dog saw the cat in the park and slept quickly"],
                   names=["erasure", "attention (last layer)"])
    assert result.rankings == ("attention (last layer)", "erasure", "random") and result.skipped_long == 1
    d = p1(decisive_lab, "the cat sat") - p1(decisive_lab, "the [MASK] sat")
    row = {r["ranking"]: r for r in result.to_json(resamples=20)["rankings"]}["erasure"]
    assert row["n"] == 1 and row["comprehensiveness"] == pytest.approx(d, abs=1e-5)
    assert row["sufficiency"] == pytest.approx(d / 3, abs=1e-5)
    assert row["naopc_comprehensiveness"] == pytest.approx(1.0, abs=1e-4)
    assert row["naopc_sufficiency"] == pytest.approx(0.0, abs=1e-4)


def pieces(tokens: int) -> str:
    """"the cat play" and "s"s: [CLS] the cat play ##s ... [SEP], 3 words of ``tokens`` tokens in all."""
    return "the cat play" + "s" * (tokens - 5)


def test_few_words_of_many_pieces_are_skipped_by_tokens_and_long_sentences_by_words(decisive_lab):
    """3 words of 33 pieces are out of the token bound (the cost of each of the 2^n rows), 32 are in;
    11 short words are still the paper's word skip, and a sentence over both counts as that one."""
    assert (MAX_WORDS, MAX_TOKENS) == (10, 32)
    for tokens, reason in ((32, ""), (33, "tokens")):
        enc = decisive_lab.encode(pieces(tokens))
        groups = word_groups(decisive_lab, enc)
        assert (len(enc.ids), len(groups)) == (tokens, 3)
        assert out_of_bounds(enc, groups, MAX_WORDS, MAX_TOKENS) == reason
    eleven = "the dog saw the cat in the park and slept quickly"
    both = eleven + " play" + "s" * 30
    result = naopc(decisive_lab, ["the cat sat", pieces(32), pieces(33), eleven, both], names=["random"])
    out = result.to_json(resamples=20)
    assert (out["skipped_long"], out["skipped_tokens"], out["rankings"][0]["n"]) == (2, 1, 2)
    assert (out["max_words"], out["max_tokens"]) == (10, 32)
    from bertviz_lab.cli.explanation_commands import naopc_summary

    summary = list(naopc_summary(out))
    assert "2 sentences skipped: more than 10 words (exact bounds need 2^n forward passes)" in summary
    assert any(line.startswith("1 sentences skipped: more than 32 tokens with [CLS] and [SEP]") for line in summary)
    from bertviz_lab import InputError

    with pytest.raises(InputError, match="1 broke the word bound, 1 the token bound"):
        naopc(decisive_lab, [pieces(33), eleven], names=["random"])


def test_bounds_are_the_best_and_worst_of_every_ordering():
    """The subset recursion gives what enumerating all n! orderings gives (calculate_aopc_limits.py)."""
    p = np.random.default_rng(0).random(2 ** 5)
    scores = [comprehensiveness(p, order) for order in itertools.permutations(range(5))]
    assert exact_bounds(p, 5) == pytest.approx((max(scores), min(scores)), abs=1e-12)


def test_a_word_of_two_pieces_becomes_two_masks(tmp_path):
    """"playing" is play ##ing and "##ing" alone moves the class: masking the word masks both pieces
    (the typed "[MASK] [MASK]"); masking only its first piece would leave P as it was."""
    import bertviz_lab

    lab = bertviz_lab.load(str(decisive_classifier(tmp_path / "ing", decisive=("##ing",))), device="cpu")
    enc = lab.encode("the cat is playing")
    groups = word_groups(lab, enc)
    assert groups == [[1], [2], [3], [4, 5]]
    p = subset_probabilities(lab, enc, groups)
    assert p[0] > 0.9
    assert p[1 << 3] == pytest.approx(p1(lab, "the cat is [MASK] [MASK]"), abs=1e-6)
    assert p[1 << 3] == pytest.approx(0.5, abs=1e-3)
    assert p[1 << 2] == pytest.approx(p[0], abs=1e-6)  # "is" masked: "##ing" still there


def test_masked_inputs_keep_cls_and_sep_on_a_random_classifier(random_classifier):
    """Every subset's P(class 1) equals transformers' on ids written by hand: [CLS] and [SEP] stay,
    each masked word's pieces are [MASK] one for one; the word map never offers [CLS] or [SEP]."""
    import transformers as tf

    import bertviz_lab

    lab = bertviz_lab.load(str(random_classifier), device="cpu")
    enc = lab.encode("the cat playing")
    groups = word_groups(lab, enc)
    assert groups == [[1], [2], [3, 4]] and enc.tokens == ["[CLS]", "the", "cat", "play", "##ing", "[SEP]"]
    p = subset_probabilities(lab, enc, groups)
    reference = tf.BertForSequenceClassification.from_pretrained(random_classifier).eval()
    words = [["the"], ["cat"], ["play", "##ing"]]
    for mask in range(8):
        pieces = [t for i, w in enumerate(words) for t in (["[MASK]"] * len(w) if mask >> i & 1 else w)]
        ids = torch.tensor([[builders.VOCAB.index(t) for t in ["[CLS]", *pieces, "[SEP]"]]])
        with torch.no_grad():
            expected = torch.softmax(reference(input_ids=ids).logits, -1)[0, 1].item()
        assert p[mask] == pytest.approx(expected, abs=1e-5), pieces
    assert len(set(np.round(p, 4))) > 4  # the random classifier tells the subsets apart


def test_word_maps_follow_the_released_code():
    """The released results mask "'s" as one word of two tokens (results/permutation_outputs: word 2 =
    tokens 2, 3 of "it 's a charming ..."); punctuation runs are one word; RoBERTa's Ġ starts a word."""
    tokens = "[CLS] it ' s a charming and often affecting journey . [SEP]".split()
    assert wordpiece_word_map(tokens) == [0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    tokens = "[CLS] does n ' t work , un ##believ ##able ... really [SEP]".split()
    assert wordpiece_word_map(tokens) == [0, 1, 2, 3, 3, 4, 5, 6, 6, 6, 7, 8, 9]
    assert bpe_word_map(["<s>", "it", "Ġ'", "s", "Ġa", "Ġcharming", "Ġ.", "</s>"]) == [0, 1, 2, 2, 3, 4, 5, 6]


def test_labelled_sentences_keep_the_positive_rows(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text('sentence\tlabel\nit \'s a "charming" film .\t1\na dull film .\t0\n')
    assert read_labelled(path) == ['it \'s a "charming" film .']
    released = tmp_path / "sst2_test_short.csv"  # the paper's data/sst2_test_short.csv layout, quoted
    released.write_text('word_length,token_length,label,id,text\n10,12,1,1,"a gorgeous , witty , seductive movie . "\n')
    assert read_labelled(released) == ["a gorgeous , witty , seductive movie . "]
    from bertviz_lab import InputError

    with pytest.raises(InputError, match="needs a header with a 'sentence' \\(or 'text'\\) column and a 'gold'"):
        read_labelled(path, label_column="gold")


ROW = re.compile(r"^(.+?)\s+comp\. (-?\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]  suff\. (-?\d\.\d{3}) "
                 r"\[(-?\d\.\d{3}), (-?\d\.\d{3})\]  NAOPC comp\. (-?\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]  "
                 r"NAOPC suff\. (-?\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]  n=3$")


def test_cli_prints_every_ranking_with_intervals(tmp_path, random_classifier):
    tsv = tmp_path / "sst2.tsv"
    tsv.write_text("sentence\tlabel\nthe cat sat on the mat\t1\na big dog ran to the park\t1\n"
                   "she read a red book quickly\t1\n")
    run = run_cli("faithfulness", "--protocol", "naopc-sst2", "--model", str(random_classifier),
                  "--sentences", str(tsv), "--resamples", "50")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "protocol naopc-sst2" in lines[0]
    rows = {m.group(1).strip(): [float(x) for x in m.groups()[1:]] for m in map(ROW.match, lines) if m}
    assert set(rows) == set(NAOPC_RANKINGS)
    for values in rows.values():
        for mean, low, high in (values[0:3], values[3:6], values[6:9], values[9:12]):
            assert low <= mean <= high
    assert re.search(r"bounds \(means over sentences\): upper -?\d\.\d{3}, lower -?\d\.\d{3}; \d of 3 sentences",
                     run.stdout)
