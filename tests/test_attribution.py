"""Attribution of a masked-word prediction: erasure, gradient x input and integrated gradients
(Captum), and each attention source's agreement with erasure."""
import builders
import numpy as np
import pytest
import torch

from bertviz_lab.interventions.attribution import context_positions, erasure, explain, gradient_methods
from bertviz_lab.interventions.faithfulness import ERASER_BINS, RANKINGS, bin_size
from bertviz_lab.lab import ForwardChanges, Readout

TEXT = "the big cat [MASK] on the red mat"


def test_erasure_is_the_drop_when_one_token_is_hidden(sharp_lab):
    analysis = sharp_lab.analyze(TEXT)
    position = analysis.mlm[0].position
    target = sharp_lab.tokenizer.token_to_id(analysis.mlm[0].predictions[0].token)
    context = context_positions(analysis, position)
    scores = erasure(sharp_lab, analysis, position, target, context)

    def logp(hidden):
        bias = torch.zeros((1, 1, 1, len(analysis.tokens)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        a = sharp_lab.analyze_encoded(analysis.encoded(), readout=Readout(keep_probabilities=True),
                                      changes=ForwardChanges(attention_bias=bias))
        return float(np.log(a.mlm_probabilities[0, target]))

    base = logp([])
    for j, score in zip(context, scores):
        assert score == pytest.approx(base - logp([j]), abs=1e-4)


def test_integrated_gradients_add_up_to_the_change_from_the_baseline(default_lab):
    """Completeness (Sundararajan et al. 2017): over all positions, IG sums to F(input) - F(baseline),
    the baseline being every word token replaced by [PAD] with [CLS], [SEP] and the [MASK] kept.
    Replacing the [MASK] too (a plausible misreading: it is not a special token) moves F(baseline)
    by about 1 nat here, so the sums would disagree."""
    lab = default_lab
    analysis = lab.analyze("The man went to the [MASK] to buy milk.")
    position = analysis.mlm[0].position
    target = lab.tokenizer.token_to_id(analysis.mlm[0].predictions[0].token)
    everything = list(range(len(analysis.tokens)))
    ig = gradient_methods(lab, analysis, position, target, everything, steps=64)["integrated gradients"]

    def logp(ids):
        with torch.no_grad():
            out = lab.model(input_ids=torch.tensor([ids]), mlm_positions=torch.tensor(
                [[k == position for k in range(len(ids))]]))
        return float(torch.log_softmax(out.mlm_logits.float(), -1)[0, target])

    keep = ("[CLS]", "[SEP]", "[MASK]")
    baseline = [lab.pad_id if t not in keep else i for t, i in zip(analysis.tokens, analysis.token_ids)]
    no_mask = [lab.pad_id if t not in keep[:2] else i for t, i in zip(analysis.tokens, analysis.token_ids)]
    expected = logp(analysis.token_ids) - logp(baseline)
    assert float(ig.sum()) == pytest.approx(expected, abs=1e-3)
    assert abs((logp(analysis.token_ids) - logp(no_mask)) - expected) > 0.1


def test_explain_scores_every_context_token_and_rates_each_source(sharp_lab):
    [attribution] = explain(sharp_lab, sharp_lab.analyze(TEXT), steps=8)
    assert attribution.target == sharp_lab.analyze(TEXT).mlm[0].predictions[0].token
    assert attribution.context == [1, 2, 3, 5, 6, 7, 8]  # word tokens other than the [MASK] at 4
    assert set(attribution.scores) == {"erasure", "gradient x input", "integrated gradients", "decompx"}
    assert all(len(v) == len(attribution.context) for v in attribution.scores.values())
    rho = attribution.agreement
    assert {"attention (last layer)", "flow", "value-zeroing (last layer)", "integrated gradients", "globenc", "alti",
            "decompx"} <= set(rho)
    assert all(-1 <= v <= 1 for v in rho.values() if not np.isnan(v))
    assert set(attribution.to_json()) == {"position", "target", "context", "scores", "spearman_with_erasure",
                                          "faithfulness_on_this_input"}


def test_explain_needs_a_mask(sharp_lab):
    from bertviz_lab import InputError

    with pytest.raises(InputError, match="mask a token first"):
        explain(sharp_lab, sharp_lab.analyze("the big cat sat"))


def test_explain_reports_each_sources_faithfulness_on_this_input(sharp_lab):
    """Per source, on this one input and for the predicted word: AOPC over k = 0..5 hidden tokens (log P)
    and ERASER's comprehensiveness (probability lost when the top bin is hidden), here checked by hand
    for the last layer's attention at k = 1 and the 50% bin."""
    analysis = sharp_lab.analyze(TEXT)
    [attribution] = explain(sharp_lab, analysis, steps=4)
    assert set(attribution.perturbation) == set(RANKINGS)
    position = attribution.position
    target = sharp_lab.tokenizer.token_to_id(attribution.target)
    context = attribution.context
    last = analysis.attention[-1].mean(0)[position]  # the head mean of the last layer, as ranked
    order = sorted(context, key=lambda i: -float(last[i]))

    def probability(hidden):
        bias = torch.zeros((1, 1, 1, len(analysis.tokens)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        return float(sharp_lab.analyze_encoded(analysis.encoded(), readout=Readout(keep_probabilities=True),
                                               changes=ForwardChanges(attention_bias=bias)).mlm_probabilities[0, target])

    full = probability([])
    drops = [0.0] + [np.log(full) - np.log(probability(order[:k])) for k in range(1, 6)]
    scores = attribution.perturbation["attention (last layer)"]
    assert scores["aopc"] == pytest.approx(np.mean(drops), abs=1e-4)
    bins = [order[:bin_size(b, len(context))] for b in ERASER_BINS]
    assert scores["comprehensiveness"] == pytest.approx(np.mean([full - probability(h) for h in bins]), abs=1e-5)
    assert "faithfulness_on_this_input" in attribution.to_json()


@pytest.fixture(scope="module")
def decisive_lab(tmp_path_factory):
    """A 1-layer BERT sequence classifier built by hand so that one word, "cat", decides the class.

    u = (+1 x 16, -1 x 16) / sqrt(32) has zero mean, so LayerNorm (weight 1, bias 0) keeps a vector's
    u-component at zero. Every embedding row is made orthogonal to u except "cat"'s, which gets 20 u.
    Queries and keys are zero (uniform attention); values project onto u (W_V = 10 u u^T) and the
    feed-forward block is zero, so [CLS] carries u only through the value of "cat". The pooler is
    0.01 I (tanh nearly linear) and the classifier is +-100 u: positive with "cat", a coin toss without."""
    import transformers as tf

    import bertviz_lab

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
        embeddings.word_embeddings.weight[builders.VOCAB.index("cat")] += 20 * u
        layer = model.bert.encoder.layer[0]
        for norm in (embeddings.LayerNorm, layer.attention.output.LayerNorm, layer.output.LayerNorm):
            norm.weight.fill_(1.0)
        layer.attention.self.value.weight.copy_(10 * torch.outer(u, u))
        layer.attention.output.dense.weight.copy_(torch.eye(32))
        model.bert.pooler.dense.weight.copy_(0.01 * torch.eye(32))
        model.classifier.weight.copy_(torch.stack([-100 * u, 100 * u]))
    folder = tmp_path_factory.mktemp("decisive") / "ckpt"
    model.save_pretrained(folder)
    builders.write_vocab(folder)
    return bertviz_lab.load(str(folder), device="cpu")


def test_one_word_decides_the_class_and_erasure_ranks_it_first(decisive_lab):
    from bertviz_lab.interventions.attribution import class_logits_with_hidden, explain_class

    without = decisive_lab.analyze("the dog sat on the mat")
    assert [c.probability for c in without.classes] == pytest.approx([0.5, 0.5], abs=1e-3)
    analysis = decisive_lab.analyze("the dog saw the cat in the park")
    assert analysis.predicted_class.label == "positive" and analysis.predicted_class.probability > 0.99
    explained = explain_class(decisive_lab, analysis, steps=16)
    assert (explained.label, explained.index) == ("positive", 1)
    cat = analysis.tokens.index("cat")
    assert explained.context == [1, 2, 3, 4, 5, 6, 7, 8] and cat == 5
    erasure = dict(zip(explained.context, explained.scores["erasure"]))
    assert max(erasure, key=erasure.get) == cat
    logits = class_logits_with_hidden(decisive_lab, analysis.encoded(), [[cat]])[:, 1]
    assert erasure[cat] == pytest.approx(float(logits[0] - logits[1]), abs=1e-5)
    assert float(logits[1]) == pytest.approx(0.0, abs=1e-3)  # hiding "cat" leaves nothing along u
    # hiding another word gives "cat" 1/8 instead of 1/9 of [CLS]'s attention: the logit rises a little
    assert all(-0.2 * erasure[cat] < v < 0 for j, v in erasure.items() if j != cat)
    for method in ("gradient x input", "integrated gradients", "decompx"):  # no other word has a path to u
        scores = dict(zip(explained.context, explained.scores[method]))
        assert max(scores, key=scores.get) == cat
        assert all(abs(v) < 1e-3 * scores[cat] for j, v in scores.items() if j != cat)
    negative = explain_class(decisive_lab, analysis, label="negative", steps=16)
    np.testing.assert_allclose(negative.scores["erasure"], -np.asarray(explained.scores["erasure"]), atol=1e-4)
    assert set(explained.agreement) == set(RANKINGS) | {"gradient x input", "integrated gradients"}
    assert set(explained.to_json()) == {"label", "index", "probability", "context", "scores", "spearman_with_erasure",
                                        "faithfulness_on_this_input", "decompx_specials"}
    # every bin's top tokens by erasure hold "cat": hiding them leaves the coin toss, P = 1/2
    full = analysis.predicted_class.probability
    faithful = explained.perturbation["erasure"]
    assert faithful["comprehensiveness"] == pytest.approx(full - 0.5, abs=2e-3)
    assert faithful["aopc"] == pytest.approx(5 / 6 * (np.log(full) - np.log(0.5)), abs=5e-3)  # k = 0..5
    assert faithful["sufficiency"] <= 0  # "cat" kept with fewer others: more of [CLS]'s attention
    assert set(explained.perturbation) == set(explained.agreement) | {"erasure"}


def test_explain_class_refuses_a_model_without_a_classifier_and_an_unknown_label(sharp_lab, decisive_lab):
    from bertviz_lab import InputError
    from bertviz_lab.interventions.attribution import explain_class

    with pytest.raises(InputError, match="no sequence classifier"):
        explain_class(sharp_lab, sharp_lab.analyze("the big cat sat"))
    with pytest.raises(InputError, match="no class 'neutral': the classifier's classes are negative, positive"):
        explain_class(decisive_lab, decisive_lab.analyze("the cat sat"), label="neutral")
