"""Position interventions per scheme (issue 44.4): MPNet's relative-position bias zeroed through its hook
point (exact against transformers' MPNet with the bias table zeroed), its matched control (the same values
removed from randomly chosen keys), the pair in the position-controls table, and the inspector's view of
the bias per head and offset bucket. Models without a relative bias refuse both in one sentence."""
import base64
import copy

import numpy as np
import pytest
import torch
from test_position_families import LAYERS, mpnet  # noqa: F401  (the random MPNet checkpoints fixture)

from bertviz_lab import load
from bertviz_lab.bert.encoder.hook_table import hook_name
from bertviz_lab.figures import interventions as views
from bertviz_lab.interventions import InterventionError, compare, make_intervention, relative_bias_table
from bertviz_lab.interventions.edits import permuted_keys
from bertviz_lab.interventions.kinds import NO_RELATIVE_BIAS
from bertviz_lab.interventions.sweeps import POSITION_KINDS, position_controls, position_kinds

TOL = 1e-5
MASKED = "the cat [mask] on the mat"


@pytest.fixture(scope="module")
def mpnet_lab(mpnet):  # noqa: F811
    return mpnet["mlm"][0], load(str(mpnet["mlm"][1]), device="cpu")


def hf_run(hf, ids, bias_edit=None):
    """transformers' MPNet on ``ids``: attention (layers, heads, q, k) and MLM logits, its position bias
    passed through ``bias_edit`` (None: as computed)."""
    model = copy.deepcopy(hf)
    if bias_edit is not None:
        compute = model.mpnet.encoder.compute_position_bias
        model.mpnet.encoder.compute_position_bias = lambda x, *a, **k: bias_edit(compute(x, *a, **k))
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    return torch.stack(out.attentions)[:, 0].numpy(), out.logits[0]


def test_zero_relative_bias_equals_transformers_mpnet_with_its_bias_table_zeroed(mpnet_lab):
    hf, lab = mpnet_lab
    c = compare(lab, MASKED, make_intervention("zero-relative-bias"))
    assert c.intervention.describe() == "zero-relative-bias"
    without = copy.deepcopy(hf)
    with torch.no_grad():
        without.mpnet.encoder.relative_attention_bias.weight.zero_()
    ids = torch.tensor([c.baseline.token_ids])
    ref_attention, ref_logits = hf_run(without, ids)
    assert np.abs(c.intervened.attention - ref_attention).max() <= TOL
    assert np.abs(c.baseline.attention - ref_attention).max() > 0.05  # the bias mattered: not a no-op
    position = c.baseline.tokens.index("[MASK]")
    probs = torch.softmax(ref_logits[position], -1)
    top = torch.topk(probs, 3)
    assert [p.token for p in c.intervened.mlm[0].predictions[:3]] == [lab.tokenizer.id_to_token(int(i)) for i in top.indices]
    assert [p.probability for p in c.intervened.mlm[0].predictions[:3]] == pytest.approx(top.values.tolist(), abs=1e-6)


def test_the_control_removes_each_rows_bias_values_from_other_keys(mpnet_lab):
    hf, lab = mpnet_lab
    ids = torch.tensor([lab.analyze("the cat sat on the mat and the dog ran").token_ids])
    n, name = ids.shape[1], hook_name("position_bias")
    control = make_intervention("zero-relative-bias-control", seed=3)
    assert control.describe() == "zero-relative-bias-control (seed 3)"
    with torch.no_grad(), lab.model.hooks(capture=[name]) as plain:
        lab.model(input_ids=ids)
    with torch.no_grad(), lab.model.hooks(capture=[name], edits=control.inputs(lab.model, [""] * n).edits) as edited:
        lab.model(input_ids=ids)
    bias = plain.cache[name][0]  # (heads, q, k)
    removed = bias - edited.cache[name][0]  # what the control took away
    for head in range(bias.shape[0]):  # each head's values, each query row's too, removed in full
        assert torch.allclose(removed[head].sort(-1).values, bias[head].sort(-1).values, atol=1e-6)
    same_place = (removed - bias).abs() <= 1e-6
    assert float(same_place.float().mean()) < 0.3  # but mostly from keys at other offsets than their own
    offset0 = torch.diagonal(removed, dim1=1, dim2=2)  # (heads, q): what the control removed at offset 0
    assert float(offset0.std(-1).min()) > 0.1  # a function of offset no longer: the diagonal varies
    assert torch.equal(permuted_keys(bias[None], 3), permuted_keys(bias[None], 3))
    assert not torch.equal(permuted_keys(bias[None], 3), permuted_keys(bias[None], 4))
    # end to end: transformers' MPNet given the same removal gives the same attention
    c = compare(lab, MASKED, make_intervention("zero-relative-bias-control", seed=3))
    ref, _ = hf_run(hf, torch.tensor([c.baseline.token_ids]), lambda b: b - permuted_keys(b, 3))
    assert np.abs(c.intervened.attention - ref).max() <= TOL
    zeroed = compare(lab, MASKED, make_intervention("zero-relative-bias")).intervened.attention
    assert np.abs(c.intervened.attention - zeroed).max() > 0.05


def test_a_model_without_a_relative_bias_refuses_both_in_one_sentence(tiny_lab):
    tokens = tiny_lab.encode("the cat sat").tokens
    for kind in ("zero-relative-bias", "zero-relative-bias-control"):
        with pytest.raises(InterventionError) as refused:
            make_intervention(kind).inputs(tiny_lab.model, tokens)
        assert str(refused.value) == NO_RELATIVE_BIAS
    assert NO_RELATIVE_BIAS == ("this model has no relative-position bias to zero "
                                "(of the loaded families only MPNet's attention has one)")
    with pytest.raises(InterventionError, match="no relative-position bias"):
        compare(tiny_lab, "the cat sat", make_intervention("zero-relative-bias"))
    with pytest.raises(InterventionError, match="no relative-position bias"):
        relative_bias_table(tiny_lab)
    assert position_kinds(tiny_lab) == POSITION_KINDS  # BERT's table keeps its five rows


def test_position_controls_on_mpnet_list_the_relative_bias_pair(mpnet_lab):
    _, lab = mpnet_lab
    rows = position_controls(lab, MASKED, seed=2)
    assert [r["intervention"] for r in rows[-2:]] == ["zero-relative-bias", "zero-relative-bias-control (seed 2)"]
    assert len(rows) == len(POSITION_KINDS) + 2
    zero, control = rows[-2:]
    expected = compare(lab, MASKED, make_intervention("zero-relative-bias"))
    assert zero["mean JS (nats)"] == pytest.approx(float(expected.js.mean()), abs=1e-9)
    assert zero["mean JS (nats)"] > 0.01 and control["mean JS (nats)"] > 0.01
    assert np.isfinite(zero["change in P(top-1)"]) and np.isfinite(control["change in P(top-1)"])


def test_relative_bias_table_orders_buckets_by_offset_with_their_ranges(mpnet_lab):
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    hf, lab = mpnet_lab
    table = relative_bias_table(lab)
    assert lab.max_tokens == 258 and table.values.shape == (4, 31)  # bucket 16 ("0 away, later") never occurs
    assert 16 not in table.buckets
    assert table.labels[:2] == ["-257..-91", "-90..-64"] and table.labels[-2:] == ["+64..+90", "+91..+257"]
    middle = table.labels.index("0")
    assert table.labels[middle - 9: middle + 10] == (
        ["-15..-12", "-11..-8"] + [str(o) for o in range(-7, 0)] + ["0"] + [f"+{o}" for o in range(1, 8)]
        + ["+8..+11", "+12..+15"])
    for bucket, offsets in zip(table.buckets, table.offsets):  # transformers buckets them the same way
        assert set(MPNetEncoder.relative_position_bucket(torch.tensor(offsets)).tolist()) == {bucket}
    weight = hf.mpnet.encoder.relative_attention_bias.weight.detach()  # (buckets, heads)
    np.testing.assert_array_equal(table.values, weight[table.buckets].T.numpy())
    fig = views.relative_bias_figure(table)
    trace = fig["data"][0]
    z = np.frombuffer(base64.b64decode(trace["z"]["bdata"]), dtype=np.float32).reshape(4, 31)
    np.testing.assert_array_equal(z, table.values.astype(np.float32))
    assert trace["x"] == table.labels and trace["y"] == ["H1", "H2", "H3", "H4"]
    bound = float(np.abs(table.values).max())
    assert (trace["zmin"], trace["zmid"], trace["zmax"]) == (-bound, 0, bound)
    assert fig["layout"]["xaxis"]["title"]["text"] == "offset bucket (key − query)"
    assert LAYERS == 3  # the fixture's encoder: the one table serves all three layers


def test_the_inspector_draws_the_learned_table_next_to_the_relative_bias(mpnet_lab):
    from bertviz_lab.interventions import position_similarity

    _, lab = mpnet_lab
    learned, _ = position_similarity(lab, 12)
    table = relative_bias_table(lab)
    fig = views.position_geometry_figure(learned, table)
    cosine, bias = fig["data"]
    z = np.frombuffer(base64.b64decode(cosine["z"]["bdata"]), dtype=np.float32).reshape(12, 12)
    np.testing.assert_allclose(z, learned, atol=1e-7)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-6)
    assert (cosine["xaxis"], bias["xaxis"]) == ("x", "x2") and bias["x"] == table.labels
    assert (cosine["zmin"], cosine["zmax"]) == (-1, 1) and bias["zmid"] == 0
    assert fig["layout"]["xaxis"]["domain"][1] < fig["layout"]["xaxis2"]["domain"][0]  # side by side
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["<b>learned position embeddings</b>",
                                                                  "<b>relative-position bias (every layer)</b>"]


def test_the_page_inspector_shows_mpnets_relative_bias_and_berts_sinusoids(mpnet, tiny_lab):  # noqa: F811
    import json

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Session
    from bertviz_lab.figures.base import to_json
    from bertviz_lab.interventions import position_similarity

    _, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    table = relative_bias_table(lab)
    for model, said in ((lab, "relative-position bias every layer adds"), (tiny_lab, "learned ones beside sinusoidal")):
        demo = build_demo(model)
        handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
        out = handlers.interventions.run_positions(8, Session(model=model.checkpoint_id, device="cpu"))
        assert said in out[ui.positions_message]
        drawn = json.loads(out[ui.positions_plot].plot)
        if model is lab:  # the relative-bias panel: the table's values, as the figure function draws them
            expected = json.loads(to_json(views.position_geometry_figure(position_similarity(lab, 8)[0], table)))
            assert drawn["data"][-1]["z"] == expected["data"][-1]["z"] and len(drawn["data"]) == 2
        else:
            assert len(drawn["data"]) == 2  # learned beside sinusoidal


def test_position_controls_separate_the_interventions_by_the_masked_word_distribution(tiny_lab):
    """Issue 58: where P(top-1) moves alike, the masked-word JS divergence and the gold word's rank tell the
    positional interventions apart; each is computed from the two runs' full distributions (checked by hand)."""
    from bertviz_lab.attention.metrics import js_divergence
    from bertviz_lab.interventions.sweeps import masked_word_shift

    rows = position_controls(tiny_lab, MASKED, seed=0)
    for row in rows:
        c = compare(tiny_lab, MASKED, make_intervention(row["intervention"].split(" ")[0], shift=10, seed=0))
        before, after = c.baseline.mlm_probabilities, c.intervened.mlm_probabilities
        m = 0.5 * (before + after)
        kl = lambda a, b: (a * (np.log(a) - np.log(b))).sum(-1)  # noqa: E731
        # abs: two float32 runs of one input may differ in their last bits (batch shapes, threads), and a JS of
        # ~2e-4 nats then moves by ~3e-8 (seen in CI): far below any difference the table reports
        assert row["masked-word JS (nats)"] == pytest.approx(float((0.5 * kl(before, m) + 0.5 * kl(after, m)).mean()),
                                                             rel=1e-4, abs=1e-7)
        assert masked_word_shift(tiny_lab, c)[0] == pytest.approx(float(js_divergence(before[None], after[None])[0]))
        top = c.changes[0].baseline_top  # a typed [MASK] has no gold word: the baseline's top word stands for it
        rank = 1 + int((after[0] > after[0, tiny_lab.tokenizer.token_to_id(top)]).sum())
        assert row["gold word's rank after"] == rank
    assert len({round(r["masked-word JS (nats)"], 6) for r in rows}) == len(rows)  # no two alike
