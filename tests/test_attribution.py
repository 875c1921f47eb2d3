"""Attribution of a masked-word prediction: erasure, gradient x input and integrated gradients
(Captum), and each attention source's agreement with erasure."""
import numpy as np
import pytest
import torch

from bertviz_lab.interventions.attribution import context_positions, erasure, explain, gradient_methods
from bertviz_lab.interventions.faithfulness import ERASER_BINS, RANKINGS, bin_size
from bertviz_lab.lab import ForwardChanges

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
        a = sharp_lab.analyze_encoded(analysis.encoded(), changes=ForwardChanges(attention_bias=bias),
                                      keep_probabilities=True)
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
        return float(sharp_lab.analyze_encoded(analysis.encoded(), changes=ForwardChanges(attention_bias=bias),
                                               keep_probabilities=True).mlm_probabilities[0, target])

    full = probability([])
    drops = [0.0] + [np.log(full) - np.log(probability(order[:k])) for k in range(1, 6)]
    scores = attribution.perturbation["attention (last layer)"]
    assert scores["aopc"] == pytest.approx(np.mean(drops), abs=1e-4)
    bins = [order[:bin_size(b, len(context))] for b in ERASER_BINS]
    assert scores["comprehensiveness"] == pytest.approx(np.mean([full - probability(h) for h in bins]), abs=1e-5)
    assert "faithfulness_on_this_input" in attribution.to_json()
