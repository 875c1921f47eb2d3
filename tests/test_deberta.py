"""DeBERTa-v2/v3 in the hooked encoder: random transformers models (eager attention) loaded strictly, with
hidden-state, attention and MLM-logit parity (<= 1e-5) for DeBERTa-v3's configuration (shared keys, no
absolute positions, log buckets, layer-normalised relative table) and for DeBERTa-v2's variants (absolute
positions, separate position projections, segments, the original MLM head's names), and the disentangled
score's parts (c2c, c2p, p2c) as hook points that add up to the scores."""
import builders
import pytest
import torch
from test_families import roughen

from bertviz_lab import load
from bertviz_lab.bert.encoder.hook_table import FAMILY_HOOKS, HOOK_TABLE, SCORE_TERMS, hook_name
from bertviz_lab.bert.loading.checkpoints import model_from_transformers
from bertviz_lab.bert.loading.families import BERT_SPECIALS, bert_config_dict, bert_names, family_of

TOL = 1e-5
LAYERS = 3
VOCAB = len(builders.VOCAB)
V3 = dict(relative_attention=True, pos_att_type="p2c|c2p", position_buckets=256, max_relative_positions=-1,
          norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False, type_vocab_size=0)
CONFIGS = {  # name -> DebertaV2Config fields beyond the sizes
    "v3": V3,
    "v3-16-buckets": {**V3, "position_buckets": 16},
    "v2-absolute-own-projections": {**V3, "position_buckets": 32, "share_att_key": False, "position_biased_input": True,
                                    "type_vocab_size": 2, "norm_rel_ebd": "none", "legacy": False},
    "c2p-only-unbucketed": {**V3, "pos_att_type": ["c2p"], "position_buckets": -1, "max_relative_positions": 24},
}


def deberta(kind: str, cls_name: str = "DebertaV2ForMaskedLM", seed: int = 0, **extra):
    """A random transformers DeBERTa-v2 model, its attention sharp enough (query/key weights of std 0.3, a
    relative table of std 1) that a wrong bucket, scale or term shows in the attention."""
    import transformers as tf

    cfg = tf.DebertaV2Config(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=LAYERS, num_attention_heads=4,
                             intermediate_size=128, max_position_embeddings=512, attn_implementation="eager",
                             **{**CONFIGS[kind], **extra})
    torch.manual_seed(seed)
    model = getattr(tf, cls_name)(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("query_proj.weight", "key_proj.weight")):
                p.normal_(0.0, 0.3)
        if model.deberta.encoder.relative_attention:
            model.deberta.encoder.rel_embeddings.weight.normal_(0.0, 1.0)
    return roughen(model, seed + 30)


@pytest.fixture(scope="module")
def models():
    return {kind: deberta(kind) for kind in CONFIGS}


def ids_of(n: int, batch: int = 1, seed: int = 0) -> torch.Tensor:
    return builders.token_ids(n, batch, seed)


def parity(ours, hf, ids, mask=None, segments=None):
    """Max abs differences (hidden states, attention, MLM logits) over the real tokens."""
    names = [hook_name("embeddings")] + [hook_name("out", i) for i in range(LAYERS)]
    patterns = [hook_name("pattern", i) for i in range(LAYERS)]
    with torch.no_grad(), ours.hooks(capture=names + patterns) as run:
        out = ours(input_ids=ids, attention_mask=mask, token_type_ids=segments)
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=segments, output_attentions=True,
                 output_hidden_states=True)
    real = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()  # padded rows are nobody's output
    hidden = max((run.cache[n] - h).abs()[real].max().item() for n, h in zip(names, ref.hidden_states))
    attention = max((run.cache[n] - a).abs().permute(0, 2, 1, 3)[real].max().item()
                    for n, a in zip(patterns, ref.attentions))
    logits = (out.mlm_logits - ref.logits).abs()[real].max().item()
    return hidden, attention, logits


def disentangled_state(model, n: int):
    """The disentangled scheme's table and rows for n tokens, as every layer of a pass reads them."""
    return model.pass_positions(torch.arange(n)[None], None, n, torch.float32).state["disentangled"]


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_deberta_matches_transformers_on_hidden_states_attention_and_mlm_logits(models, kind):
    hf = models[kind]
    ours = model_from_transformers(hf)
    assert ours.config.model_type == "deberta-v2" and "disentangled" in ours.config.positions and ours.has_mlm_head
    assert (ours.bert.embeddings.position_embeddings is None) == (not hf.config.position_biased_input)
    n = 300 if hf.config.position_buckets == 256 else 70  # past the exact offsets into the logarithmic buckets
    segments = torch.cat([torch.zeros(1, n // 2), torch.ones(1, n - n // 2)], 1).long() if hf.config.type_vocab_size \
        else None
    hidden, attention, logits = parity(ours, hf, ids_of(n), segments=segments)
    assert max(hidden, attention, logits) <= TOL, (hidden, attention, logits)
    ids = ids_of(24, batch=3, seed=1)
    mask = torch.ones_like(ids)
    mask[1, 15:], mask[2, 6:] = 0, 0
    hidden, attention, logits = parity(ours, hf, ids, mask=mask)
    assert max(hidden, attention, logits) <= TOL, ("padded batch", hidden, attention, logits)
    with torch.no_grad():  # nobody captures: the fused kernel with the position terms as its mask
        fast = ours(input_ids=ids, attention_mask=mask).mlm_logits
        ref = hf(input_ids=ids, attention_mask=mask).logits
    assert (fast - ref).abs()[mask.bool()].max() <= TOL


def test_the_position_terms_matter_at_this_scale(models):
    """The parity above would not pass with the relative table ignored: zeroing both terms moves the attention."""
    ours = model_from_transformers(models["v3"])
    ids = ids_of(40)
    with torch.no_grad(), ours.hooks(capture=[hook_name("pattern", 0)]) as plain:
        ours(input_ids=ids)
    zero = {hook_name(t, 0): (lambda x, _: x * 0) for t in ("c2p", "p2c")}
    with torch.no_grad(), ours.hooks(capture=[hook_name("pattern", 0)], edits=zero) as zeroed:
        ours(input_ids=ids)
    assert (plain.cache[hook_name("pattern", 0)] - zeroed.cache[hook_name("pattern", 0)]).abs().max() > 0.1


def test_c2c_c2p_p2c_and_the_mask_add_up_to_the_scores_and_match_transformers_terms(models):
    hf = models["v3"]
    ours = model_from_transformers(hf)
    ids = ids_of(20, batch=2)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    spots = SCORE_TERMS + ("scores", "q", "k")
    with torch.no_grad(), ours.hooks(capture=[hook_name(s, i) for s in spots for i in range(LAYERS)]
                                     + [hook_name("embeddings")]) as run:
        ours(input_ids=ids, attention_mask=mask)
    bias = ours.attention_bias(mask, None, torch.float32)  # (batch, 1, 1, key): 0 or the dtype's minimum
    cache = run.cache
    for i in range(LAYERS):
        c2c, c2p, p2c = (cache[hook_name(t, i)] for t in SCORE_TERMS)
        assert c2c.shape == c2p.shape == p2c.shape == (2, 4, 20, 20)
        assert torch.equal(c2c + (c2p + p2c) + bias, cache[hook_name("scores", i)]), i  # the model's order: exact
        assert (c2c + c2p + p2c + bias - cache[hook_name("scores", i)])[bias.expand_as(c2c) == 0].abs().max() <= 1e-5
        q, k = cache[hook_name("q", i)], cache[hook_name("k", i)]
        assert (c2c - q @ k.transpose(-1, -2) / (16 * 3) ** 0.5).abs().max() <= 1e-5  # sqrt(d_head * 3)
    # transformers' own position terms of layer 1, from its inputs (the embeddings' output)
    attention = hf.deberta.encoder.layer[0].attention.self
    with torch.no_grad():
        split = lambda x: x.reshape(2 * 4, 20, 16)  # noqa: E731 (batch * heads, pos, d_head), transformers' layout
        expected = attention.disentangled_attention_bias(
            split(cache[hook_name("q", 0)]), split(cache[hook_name("k", 0)]), None,
            hf.deberta.encoder.get_rel_embedding(), 3).view(2, 4, 20, 20)
    assert (cache[hook_name("c2p", 0)] + cache[hook_name("p2c", 0)] - expected).abs().max() <= 1e-5


def test_c2p_is_the_papers_formula_for_one_head_and_pair(models):
    """He et al. (2021), eq. 4: c2p(i, j) = Q_i . K_r[delta(i, j)] with delta(i, j) = i - j + span (offsets up to 8
    are exact with 16 buckets); p2c(i, j) = K_j . Q_r[...] at the same row delta(i, j) as transformers gathers it
    (``-r_pos`` before the transpose; the paper writes delta(j, i)); both divided by sqrt(3 d)."""
    hf = models["v3-16-buckets"]
    ours = model_from_transformers(hf)
    ids = ids_of(12)
    with torch.no_grad(), ours.hooks(capture=[hook_name(s, 1) for s in ("q", "k", "c2p", "p2c")]) as run:
        ours(input_ids=ids)
    layer = ours.bert.encoder.layer[1].attention.self
    with torch.no_grad():
        table = ours.bert.encoder.LayerNorm(ours.bert.encoder.rel_embeddings.weight)  # (32, 64)
        pos_k = layer.key(table).view(32, 4, 16)[:, 2]  # head 3's keys of every offset row (shared with content)
        pos_q = layer.query(table).view(32, 4, 16)[:, 2]
    q, k = run.cache[hook_name("q", 1)][0, 2], run.cache[hook_name("k", 1)][0, 2]  # (pos, d_head)
    root = (16 * 3) ** 0.5
    assert disentangled_state(ours, 12).c2p_index[11, 0] == 9 + 16  # offset 11 falls in log bucket 9
    for i, j in ((0, 5), (7, 2), (4, 4), (11, 3), (1, 9)):
        assert run.cache[hook_name("c2p", 1)][0, 2, i, j] == pytest.approx(float(q[i] @ pos_k[i - j + 16]) / root,
                                                                         abs=1e-5)
        assert run.cache[hook_name("p2c", 1)][0, 2, i, j] == pytest.approx(float(k[j] @ pos_q[i - j + 16]) / root,
                                                                         abs=1e-5)


def test_zeroing_both_position_terms_is_deberta_without_relative_attention(models):
    """transformers' DeBERTa with ``relative_attention`` off keeps the scale sqrt(3 d) and drops both terms:
    our model with c2p and p2c zeroed in every layer must be that model (same weights)."""
    import transformers as tf

    hf = models["v3"]
    cfg = tf.DebertaV2Config(**{**hf.config.to_dict(), "relative_attention": False})
    without = tf.DebertaV2ForMaskedLM(cfg).eval()
    state = {k: v for k, v in hf.state_dict().items() if "rel_embeddings" not in k}
    without.load_state_dict(state, strict=True)
    ours = model_from_transformers(hf)
    ids = ids_of(30)
    zero = {hook_name(t, i): (lambda x, _: x * 0) for t in ("c2p", "p2c") for i in range(LAYERS)}
    with torch.no_grad(), ours.hooks(capture=[hook_name("pattern", i) for i in range(LAYERS)], edits=zero) as run:
        logits = ours(input_ids=ids).mlm_logits
        ref = without(input_ids=ids, output_attentions=True)
    assert (logits - ref.logits).abs().max() <= TOL
    assert max((run.cache[hook_name("pattern", i)] - a).abs().max() for i, a in enumerate(ref.attentions)) <= TOL


def test_buckets_and_relative_positions_are_transformers(models):
    from transformers.models.deberta_v2 import modeling_deberta_v2 as theirs

    from bertviz_lab.bert.positions.disentangled import DisentangledSpec, log_bucket_position, relative_positions

    offsets = torch.arange(-700, 701)
    for size, reach in ((256, 512), (16, 512), (32, 64)):
        assert torch.equal(log_bucket_position(offsets, size, reach), theirs.make_log_bucket_position(offsets, size, reach))
    spec = DisentangledSpec.from_config(models["v3"].config.to_dict(), 512)
    assert (spec.span, spec.scale_factor, spec.share_att_key, spec.layer_norm) == (256, 3, True, True)
    x = torch.zeros(1, 300, 8)
    assert torch.equal(relative_positions(300, spec)[None], theirs.build_relative_position(x, x, 256, 512))
    # offset -299: 128 + ceil(log(299 / 128) / log(511 / 128) * 127) = 128 + 78 on the key-after-query side
    assert relative_positions(300, spec)[0, 299].item() == -206 and relative_positions(300, spec)[299, 171].item() == 128


def test_weight_names_are_translated_and_load_strictly(models):
    mlm = models["v2-absolute-own-projections"]  # lm_predictions.lm_head, pos_key_proj / pos_query_proj
    ours = model_from_transformers(mlm)
    names = set(ours.state_dict())
    assert {"bert.encoder.rel_embeddings.weight", "bert.embeddings.position_embeddings.weight",
            "bert.encoder.layer.2.attention.self.pos_key_proj.weight",
            "bert.encoder.layer.2.attention.self.pos_query_proj.bias",
            "bert.encoder.layer.0.attention.self.query.weight", "cls.predictions.transform.dense.weight"} <= names
    assert "bert.encoder.LayerNorm.weight" not in names  # norm_rel_ebd "none"
    assert torch.equal(ours.bert.encoder.layer[1].attention.self.value.weight,
                       mlm.deberta.encoder.layer[1].attention.self.value_proj.weight)
    assert torch.equal(ours.cls.predictions.bias, mlm.lm_predictions.lm_head.bias)
    v3 = models["v3"]  # the legacy head: cls.predictions.*, BERT's names
    state = dict(v3.state_dict())
    state["deberta.embeddings.position_embeddings.weight"] = torch.zeros(512, 64)  # real v3 checkpoints carry it, unused
    state["mask_predictions.classifier.weight"] = torch.zeros(1, 64)  # and the replaced-token detector
    raw = v3.config.to_dict()
    family = family_of(raw)
    assert family.specials == BERT_SPECIALS and family.unused == ("embeddings.position_embeddings.",)
    renamed, aside = bert_names(state, family, ["DebertaV2ForMaskedLM"])
    assert aside == ["mask_predictions"]
    assert not [k for k in renamed if "position_embeddings" in k or k.startswith("deberta.")]
    ours = model_from_transformers(v3)
    assert set(ours.state_dict()) == set(renamed) - {"cls.predictions.decoder.weight"}  # the tied decoder: checked, dropped
    cfg = bert_config_dict({**raw, "pos_att_type": "p2c|c2p"}, family)
    assert cfg["pos_att_type"] == ["p2c", "c2p"] and cfg["position_biased_input"] is False


@pytest.mark.parametrize("field, value, message", [
    ("conv_kernel_size", 3, "conv_kernel_size 3 .* is not supported"),
    ("embedding_size", 32, "embedding_size 32 other than hidden_size 64 is not supported"),
    ("pos_att_type", "p2c|p2p", r"pos_att_type \['p2p'\] is not supported"),
])
def test_what_bertlab_does_not_compute_is_refused_by_name(models, field, value, message):
    raw = {**models["v3"].config.to_dict(), field: value}
    with pytest.raises(ValueError, match=message):
        bert_config_dict(raw, family_of(raw))


def test_deberta_hook_points_are_in_the_table_and_a_layer_without_positions_is_refused(models):
    ours = model_from_transformers(models["v3"])
    assert set(ours.hook_names) - {hook_name(s, i) for s, spot in HOOK_TABLE.items() if spot.per_layer
                                   for i in range(LAYERS)} - {hook_name(s) for s, spot in HOOK_TABLE.items()
                                                              if not spot.per_layer} \
        == {hook_name(t, i) for t in SCORE_TERMS for i in range(LAYERS)}
    assert all(FAMILY_HOOKS[t].per_layer for t in SCORE_TERMS)
    only_c2p = model_from_transformers(models["c2p-only-unbucketed"])
    assert hook_name("c2p", 0) in only_c2p.hook_names and hook_name("p2c", 0) not in only_c2p.hook_names
    with pytest.raises(ValueError, match="a DeBERTa layer needs the relative positions"):
        ours.bert.encoder.layer[0](torch.zeros(1, 5, 64), None)  # a layer called without its pass positions
    positions = ours.pass_positions(torch.arange(5)[None], None, 5, torch.float32)
    assert positions.state["disentangled"].table.shape == (512, 64)
    assert positions.state["disentangled"].c2p_index.shape == (5, 5)
    assert ours.bert.encoder.layer[0](torch.randn(1, 5, 64), None, positions).shape == (1, 5, 64)


def test_a_model_without_absolute_positions_refuses_position_ids_and_has_no_position_hook(models):
    """DeBERTa-v3 reads no position ids (transformers ignores them): an intervention that moves them would change
    nothing, so it is refused by name; capturing or editing the absent table is an unknown hook point."""
    v3 = model_from_transformers(models["v3"])
    assert hook_name("position") not in v3.hook_names and hook_name("token") in v3.hook_names
    with pytest.raises(ValueError, match="no absolute positions, .*its c2p and p2c score terms"):
        v3(input_ids=ids_of(6), position_ids=torch.arange(6)[None])
    with pytest.raises(KeyError, match="unknown hook point"):
        with v3.hooks(capture=[hook_name("position")]):
            pass
    v2 = model_from_transformers(models["v2-absolute-own-projections"])  # absolute positions: ids move the table's rows
    ids = ids_of(6)
    with torch.no_grad():
        moved = v2(input_ids=ids, position_ids=torch.arange(3, 9)[None]).mlm_logits
        ref = models["v2-absolute-own-projections"](input_ids=ids, position_ids=torch.arange(3, 9)[None]).logits
    assert (moved - ref).abs().max() <= TOL and (moved - v2(input_ids=ids).mlm_logits).abs().max() > 1e-3


def test_deberta_sequence_classifier_gives_transformers_logits():
    hf = deberta("v3", "DebertaV2ForSequenceClassification", seed=3, num_labels=3,
                 id2label={0: "neg", 1: "neu", 2: "pos"}, label2id={"neg": 0, "neu": 1, "pos": 2})
    ours = model_from_transformers(hf)
    assert ours.class_labels == ["neg", "neu", "pos"] and not ours.has_mlm_head
    ids = ids_of(16, batch=2)
    with torch.no_grad():
        assert (ours(input_ids=ids).class_logits - hf(input_ids=ids).logits).abs().max() <= TOL


def test_a_saved_deberta_folder_loads_into_the_lab(models, tmp_path):
    """The checkpoint path (config.json + model.safetensors), with a WordPiece vocab standing in for DeBERTa-v3's
    SentencePiece tokenizer (same specials, [CLS] [SEP] [MASK] [PAD]): the Lab's attention is transformers'."""
    import numpy as np

    hf = models["v3"]
    hf.save_pretrained(tmp_path)
    builders.write_vocab(tmp_path)
    lab = load(str(tmp_path), device="cpu")
    assert lab.model.config.model_type == "deberta-v2" and lab.model.has_mlm_head
    a = lab.analyze("the cat [MASK] on the mat")
    assert a.tokens[0] == "[CLS]" and a.tokens.count("[MASK]") == 1
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor([a.token_ids]), output_attentions=True)
    assert np.abs(a.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL
    probs = torch.softmax(ref.logits[0, a.tokens.index("[MASK]")], -1)
    assert [p.probability for p in a.mlm[0].predictions[:3]] == pytest.approx(torch.topk(probs, 3).values.tolist(),
                                                                             abs=1e-6)


@pytest.fixture(scope="module")
def v3_lab(models, tmp_path_factory):
    folder = tmp_path_factory.mktemp("v3")
    models["v3"].save_pretrained(folder)
    builders.write_vocab(folder)
    return load(str(folder), device="cpu")


def test_position_interventions_follow_debertas_scheme_each_with_its_control(models, v3_lab):
    """DeBERTa-v3 has no absolute positions: those interventions refuse by name and the inspector offers
    zero-position-terms, which is transformers' DeBERTa without relative attention, beside its control,
    which removes exactly as much per row (a key-shuffled copy) and so changes attention less."""
    import numpy as np
    import transformers as tf

    from bertviz_lab.interventions import compare, make_intervention
    from bertviz_lab.interventions.kinds import InterventionError
    from bertviz_lab.interventions.sweeps import position_controls, position_kinds

    assert position_kinds(v3_lab) == ("zero-position-terms", "zero-position-terms-control")
    for kind in ("zero-positions", "shuffle-positions", "sinusoidal-positions"):
        with pytest.raises(InterventionError, match="no absolute position embeddings"):
            compare(v3_lab, "the cat sat on the mat", make_intervention(kind))
    text = "the cat sat on the mat and the dog ran to the park"
    zeroed = compare(v3_lab, text, make_intervention("zero-position-terms"))
    cfg = tf.DebertaV2Config(**{**models["v3"].config.to_dict(), "relative_attention": False})
    without = tf.DebertaV2ForMaskedLM(cfg).eval()
    without.load_state_dict({k: v for k, v in models["v3"].state_dict().items() if "rel_embeddings" not in k})
    with torch.no_grad():
        ref = without(input_ids=torch.tensor([zeroed.baseline.token_ids]), output_attentions=True)
    assert np.abs(zeroed.intervened.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL
    control = compare(v3_lab, text, make_intervention("zero-position-terms-control", seed=3))
    assert 0 < float(control.js.mean()) < float(zeroed.js.mean())
    rows = position_controls(v3_lab, text)
    assert [r["intervention"] for r in rows] == ["zero-position-terms", "zero-position-terms-control (seed 0)"]
    assert rows[0]["mean JS (nats)"] > rows[1]["mean JS (nats)"] > 0


def test_score_parts_the_neuron_view_bias_and_the_inspector_read_debertas_terms(v3_lab):
    """The single-head view's parts are c2c, c2p and p2c; their sum's softmax is the attention. The neuron
    view's bias is c2p + p2c with DeBERTa's scale 1/sqrt(3 d). The inspector shows the relative table."""
    import numpy as np

    from bertviz_lab.interventions import relative_embedding_similarity
    from bertviz_lab.lens import queries_and_keys, score_bias, score_parts

    a = v3_lab.analyze("the cat sat on the mat")
    parts = score_parts(v3_lab, a, layer=2)
    assert parts.names == ["content → content (c2c)", "content → position (c2p)", "position → content (p2c)"]
    np.testing.assert_allclose(torch.softmax(torch.tensor(parts.parts.sum(0)), -1).numpy(), a.attention[1], atol=1e-6)
    scales, bias = score_bias(v3_lab, a)
    assert scales == pytest.approx([1 / (16 * 3) ** 0.5] * LAYERS)  # head_dim 64 / 4 = 16, three terms
    np.testing.assert_allclose(bias[1], parts.parts[1] + parts.parts[2], atol=1e-5)
    q, k = queries_and_keys(v3_lab, a)
    np.testing.assert_allclose(q[1] @ k[1].transpose(0, 2, 1) * scales[1], parts.parts[0], atol=1e-5)
    similarity = relative_embedding_similarity(v3_lab, 6)
    assert similarity.labels == ["-5", "-4", "-3", "-2", "-1", "0", "+1", "+2", "+3", "+4", "+5"]
    assert np.allclose(np.diag(similarity.cosine), 1.0, atol=1e-5)


def test_value_zeroing_runs_debertas_layers_with_their_positions(v3_lab):
    """Value zeroing reruns a layer with each token's values zeroed: a DeBERTa layer needs its relative positions."""
    import numpy as np

    a = v3_lab.analyze("the cat sat on the mat", source="value-zeroing")
    assert a.attention.shape[0] == LAYERS and np.allclose(a.attention.sum(-1), 1.0, atol=1e-5)
