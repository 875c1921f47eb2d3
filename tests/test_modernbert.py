"""ModernBERT in the hooked encoder: random transformers models (eager attention) loaded strictly, with
hidden-state, attention and MLM-logit parity (<= 1e-5) with and without the optional biases, local layers
whose window bites (+-4 tokens at 30), rotary q and k as hook points that make the scores, the rotary
position interventions with their control, the rotary bands, and the post-norm sources refused by name."""
import json
import math

import builders
import pytest
import torch
from test_families import roughen

from bertviz_lab import load
from bertviz_lab.bert.encoder.hook_table import FAMILY_HOOKS, HOOK_TABLE, hook_name, score_query_key
from bertviz_lab.bert.loading.checkpoints import model_from_transformers
from bertviz_lab.bert.loading.families import BERT_SPECIALS, bert_config_dict, bert_names, family_of
from bertviz_lab.bert.positions.rotary import cos_sin, rotate

TOL = 1e-5
LAYERS = 4
VOCAB = len(builders.VOCAB)
BIASES = dict(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True)
CONFIGS = {"released": {}, "all-biases": BIASES}  # name -> ModernBertConfig fields beyond the sizes
ROTARY_HOOKS = ("rot_q", "rot_k")


def modernbert(kind: str, cls_name: str = "ModernBertForMaskedLM", seed: int = 0, **extra):
    """A random transformers ModernBERT: 4 layers, global every 3 (layers 1 and 4), a local window of 8 (keys at most
    4 away), query/key weights of std 0.3 so that a wrong angle or window shows in the attention."""
    import transformers as tf

    cfg = tf.ModernBertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=LAYERS, num_attention_heads=4,
                              intermediate_size=96, local_attention=8, global_attn_every_n_layers=3, pad_token_id=0,
                              bos_token_id=2, cls_token_id=2, eos_token_id=3, sep_token_id=3,
                              attn_implementation="eager", **{**CONFIGS[kind], **extra})
    torch.manual_seed(seed)
    model = getattr(tf, cls_name)(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("Wqkv.weight"):
                p.normal_(0.0, 0.3)
            elif name.endswith("bias") or "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)  # norm weights and every bias that exists (roughen's names differ)
    return roughen(model, seed + 30)


@pytest.fixture(scope="module")
def models():
    return {kind: modernbert(kind) for kind in CONFIGS}


def ids_of(n: int, batch: int = 1, seed: int = 0) -> torch.Tensor:
    return builders.token_ids(n, batch, seed)


def parity(ours, hf, ids, mask=None):
    """Max abs differences (hidden states, attention, MLM logits) over the real tokens. transformers' hidden states
    are the embeddings, layers 1..L-1, then final_norm(layer L) (its last_hidden_state)."""
    names = [hook_name("embeddings")] + [hook_name("out", i) for i in range(LAYERS - 1)] + [hook_name("final_norm")]
    patterns = [hook_name("pattern", i) for i in range(LAYERS)]
    with torch.no_grad(), ours.hooks(capture=names + patterns) as run:
        out = ours(input_ids=ids, attention_mask=mask)
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    assert len(ref.hidden_states) == LAYERS + 1 and all(a is not None for a in ref.attentions)
    real = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    hidden = max((run.cache[n] - h).abs()[real].max().item() for n, h in zip(names, ref.hidden_states))
    attention = max((run.cache[n] - a).abs().permute(0, 2, 1, 3)[real].max().item()
                    for n, a in zip(patterns, ref.attentions))
    logits = (out.mlm_logits - ref.logits).abs()[real].max().item()
    return hidden, attention, logits


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_modernbert_matches_transformers_on_hidden_states_attention_and_mlm_logits(models, kind):
    hf = models[kind]
    ours = model_from_transformers(hf)
    assert ours.config.model_type == "modernbert" and ours.config.positions == ("rotary",) and ours.has_mlm_head
    assert (ours.config.norm_placement, ours.config.mlp, ours.config.final_norm) == ("pre", "gated", True)
    assert ours.bert.embeddings.position_embeddings is None and ours.bert.embeddings.token_type_embeddings is None
    assert (ours.bert.encoder.layer[1].attention.self.query.bias is not None) == (kind == "all-biases")
    hidden, attention, logits = parity(ours, hf, ids_of(30))
    assert max(hidden, attention, logits) <= TOL, (hidden, attention, logits)
    ids = ids_of(24, batch=3, seed=1)
    mask = torch.ones_like(ids)
    mask[1, 15:], mask[2, 6:] = 0, 0
    hidden, attention, logits = parity(ours, hf, ids, mask=mask)
    assert max(hidden, attention, logits) <= TOL, ("padded batch", hidden, attention, logits)
    with torch.no_grad():  # nobody captures: the fused kernel with the window as its mask
        fast = ours(input_ids=ids, attention_mask=mask).mlm_logits
        ref = hf(input_ids=ids, attention_mask=mask).logits
    assert (fast - ref).abs()[mask.bool()].max() <= TOL


def test_local_layers_see_four_tokens_either_side_and_global_layers_everything(models):
    ours = model_from_transformers(models["released"])
    assert [ours.config.rotary_spec.is_global(i) for i in range(LAYERS)] == [True, False, False, True]
    with torch.no_grad(), ours.hooks(capture=[hook_name("pattern", i) for i in range(LAYERS)]) as run:
        ours(input_ids=ids_of(30))
    offsets = (torch.arange(30)[:, None] - torch.arange(30)[None]).abs()  # (query, key)
    for i in range(LAYERS):
        pattern = run.cache[hook_name("pattern", i)][0]  # (heads, query, key)
        if i in (1, 2):
            assert pattern[:, offsets > 4].max() == 0 and pattern[:, offsets == 4].min() > 0, i
        else:
            assert pattern[:, offsets > 4].min() > 0, i


def test_rotated_q_and_k_make_the_scores_and_q_and_k_are_before_the_turn(models):
    ours = model_from_transformers(models["all-biases"])
    ids = ids_of(20, batch=2)
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    spots = ("q", "k", "rot_q", "rot_k", "scores")
    with torch.no_grad(), ours.hooks(capture=[hook_name(s, i) for s in spots for i in range(LAYERS)]) as run:
        ours(input_ids=ids, attention_mask=mask)
    cache = run.cache
    pad = ours.attention_bias(mask, None, torch.float32)  # (batch, 1, 1, key)
    window = (torch.arange(20)[:, None] - torch.arange(20)[None]).abs() > 4  # (query, key)
    for i in range(LAYERS):
        q, k, rq, rk = (cache[hook_name(s, i)] for s in ("q", "k", "rot_q", "rot_k"))
        theta = 160_000.0 if i in (0, 3) else 10_000.0
        cos, sin = cos_sin(torch.arange(20.0)[None], theta, 16)
        assert torch.equal(rq, rotate(q, cos, sin)) and torch.equal(rk, rotate(k, cos, sin))
        assert (rq - q).abs().max() > 0.1  # the turn is not the identity
        assert torch.allclose(rq.norm(dim=-1), q.norm(dim=-1), atol=1e-5)  # a rotation keeps lengths
        scores = cache[hook_name("scores", i)]
        allowed = (pad.expand_as(scores) == 0) & (~window if i in (1, 2) else torch.ones_like(window))
        expected = rq @ rk.transpose(-1, -2) / 4.0  # sqrt(d_head 16)
        assert (scores - expected)[allowed].abs().max() <= 1e-5, i
        assert (scores[~allowed] <= torch.finfo(torch.float32).min / 2).all(), i


def test_rotary_hook_points_are_in_the_table(models):
    ours = model_from_transformers(models["released"])
    table = {hook_name(s, i) for s, spot in HOOK_TABLE.items() if spot.per_layer for i in range(LAYERS)} \
        | {hook_name(s) for s, spot in HOOK_TABLE.items() if not spot.per_layer and s not in ("position", "nsp_logits",
                                                                                              "segment")}
    assert table <= set(ours.hook_names)
    extra = set(ours.hook_names) - table
    assert extra == ({hook_name(s, i) for s in ROTARY_HOOKS for i in range(LAYERS)}
                     | {hook_name("rotary_positions"), hook_name("final_norm")})
    assert all(FAMILY_HOOKS[s].per_layer for s in ROTARY_HOOKS) and not FAMILY_HOOKS["rotary_positions"].per_layer
    assert score_query_key(ours.hook_names) == ("rot_q", "rot_k")
    import transformers as tf

    assert score_query_key(model_from_transformers(tf.BertModel(builders.hf_config())).hook_names) == ("q", "k")
    with pytest.raises(ValueError, match="a rotary layer needs its angles"):
        ours.bert.encoder.layer[0](torch.zeros(1, 5, 64), None)  # how value zeroing calls a layer


def test_weight_names_config_and_task_heads(models):
    hf = models["all-biases"]
    ours = model_from_transformers(hf)
    theirs = hf.model.layers[2].attn.Wqkv
    layer = ours.bert.encoder.layer[2].attention.self
    assert torch.equal(torch.cat([layer.query.weight, layer.key.weight, layer.value.weight]), theirs.weight)
    assert torch.equal(torch.cat([layer.query.bias, layer.key.bias, layer.value.bias]), theirs.bias)
    assert torch.equal(ours.cls.predictions.bias, hf.decoder.bias)
    names = set(ours.state_dict())
    assert "bert.encoder.layer.0.attn_norm.weight" not in names and "bert.encoder.layer.1.attn_norm.bias" in names
    assert {"bert.final_norm.weight", "bert.encoder.layer.3.mlp.Wi.weight", "cls.predictions.transform.dense.bias",
            "bert.embeddings.LayerNorm.bias"} <= names
    assert "bert.embeddings.LayerNorm.bias" not in set(model_from_transformers(models["released"]).state_dict())
    raw = {k: v for k, v in hf.config.to_dict().items() if k not in ("layer_types", "rope_parameters")}
    old = {**raw, "global_rope_theta": 50_000.0, "local_rope_theta": 500.0, "global_attn_every_n_layers": 2}
    family = family_of(old)
    assert family.specials == BERT_SPECIALS
    cfg = bert_config_dict(old, family)
    assert cfg["layer_types"] == ["full_attention", "sliding_attention"] * 2
    assert (cfg["global_rope_theta"], cfg["local_rope_theta"], cfg["positions"]) == (50_000.0, 500.0, ["rotary"])
    for bad, message in (({"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}}},
                          "rope_type 'linear' is not supported"),
                         ({"decoder_bias": False}, "decoder_bias false")):
        with pytest.raises(ValueError, match=message):
            bert_config_dict({**raw, **bad}, family)
    classifier = modernbert("released", "ModernBertForSequenceClassification", seed=2, num_labels=2)
    state, aside = bert_names(dict(classifier.state_dict()), family_of(classifier.config.to_dict()),
                              ["ModernBertForSequenceClassification"])
    assert aside == ["classifier", "task_head"] and not [k for k in state if "head" in k or "classifier" in k]


@pytest.fixture(scope="module")
def lab(models, tmp_path_factory):
    """The checkpoint path: config.json + model.safetensors, a WordPiece vocab standing in for ModernBERT's BPE
    tokenizer.json (same specials, [CLS] [SEP] [MASK] [PAD])."""
    folder = tmp_path_factory.mktemp("modernbert")
    models["released"].save_pretrained(folder)
    builders.write_vocab(folder)
    return load(str(folder), device="cpu")


def test_a_saved_modernbert_folder_loads_into_the_lab(models, lab):
    import numpy as np

    assert lab.model.config.model_type == "modernbert" and lab.model.has_mlm_head
    a = lab.analyze("the cat [MASK] on the mat and the dog sat on the rug near the door")
    assert a.tokens[0] == "[CLS]" and a.tokens[-1] == "[SEP]" and a.tokens.count("[MASK]") == 1
    with torch.no_grad():
        ref = models["released"](input_ids=torch.tensor([a.token_ids]), output_attentions=True)
    assert np.abs(a.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL
    probs = torch.softmax(ref.logits[0, a.tokens.index("[MASK]")], -1)
    assert [p.probability for p in a.mlm[0].predictions[:3]] == pytest.approx(torch.topk(probs, 3).values.tolist(),
                                                                             abs=1e-6)


TEXT = "the cat sat on the mat and the dog ran to the park with the big red ball"


def test_rotating_every_position_by_a_constant_leaves_attention_unchanged(models, lab):
    """Rotary scores depend on offsets only: adding 7 (or 300) to every position changes attention by float error
    only, in the global and the local layers; transformers given the shifted position ids agrees."""
    import numpy as np

    from bertviz_lab.interventions import compare, make_intervention

    for shift in (7, 300):
        c = compare(lab, TEXT, make_intervention("rotate-positions", shift=shift))
        assert c.intervention.describe() == f"rotate-positions by {shift}"
        assert np.abs(c.intervened.attention - c.baseline.attention).max() <= 5e-5, shift  # measured 1e-6, 7e-6
    ids = torch.tensor([c.baseline.token_ids])
    with torch.no_grad():
        ref = models["released"](input_ids=ids, position_ids=torch.arange(300, 300 + ids.shape[1])[None],
                                 output_attentions=True)
    assert np.abs(c.intervened.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL


def test_disable_rotary_is_no_turn_and_its_control_turns_by_shuffled_positions(lab):
    """disable-rotary: rot_q = q and rot_k = k in every layer; the control turns by a seeded permutation of the
    positions (the same angles, out of order). Both change attention (on random weights the control about as much:
    nothing here learned to use order, so which changes more is a question for trained weights)."""
    from bertviz_lab.interventions import compare, make_intervention
    from bertviz_lab.interventions.kinds import REGISTRY

    model = lab.model
    a = lab.analyze(TEXT)
    ids, tokens = torch.tensor([a.token_ids]), a.tokens
    spots = [hook_name(s, i) for s in ("q", "k", "rot_q", "rot_k") for i in range(LAYERS)]
    off = REGISTRY["disable-rotary"]().inputs(model, tokens)
    with torch.no_grad(), model.hooks(capture=spots, edits=off.edits) as run:
        model(input_ids=ids)
    for i in range(LAYERS):
        assert torch.equal(run.cache[hook_name("rot_q", i)], run.cache[hook_name("q", i)])
        assert torch.equal(run.cache[hook_name("rot_k", i)], run.cache[hook_name("k", i)])
    control = REGISTRY["disable-rotary-control"](seed=3).inputs(model, tokens)
    with torch.no_grad(), model.hooks(capture=spots, edits=control.edits) as run:
        model(input_ids=ids)
    perm = torch.randperm(ids.shape[1], generator=torch.Generator().manual_seed(3)).float()
    assert not torch.equal(perm, torch.arange(ids.shape[1]).float())
    cos, sin = cos_sin(perm[None], 10_000.0, 16)
    assert torch.equal(run.cache[hook_name("rot_q", 1)], rotate(run.cache[hook_name("q", 1)], cos, sin))
    disabled = compare(lab, TEXT, make_intervention("disable-rotary"))
    shuffled = compare(lab, TEXT, make_intervention("disable-rotary-control", seed=3))
    assert shuffled.intervention.describe() == "disable-rotary-control (seed 3)"
    assert float(disabled.js.mean()) > 1e-3 and float(shuffled.js.mean()) > 1e-3


def test_position_kinds_and_refusals_follow_the_rotary_scheme(models, lab):
    from bertviz_lab.interventions import compare, make_intervention
    from bertviz_lab.interventions.kinds import InterventionError
    from bertviz_lab.interventions.sweeps import position_kinds

    assert position_kinds(lab) == ("rotate-positions", "disable-rotary", "disable-rotary-control")
    for kind in ("zero-positions", "shuffle-positions", "shift-positions"):
        with pytest.raises(InterventionError, match=r"no absolute position embeddings to change \(ModernBERT.s positions are rotary"):
            compare(lab, "the cat sat on the mat", make_intervention(kind))
    for kind in ("zero-relative-bias", "zero-position-terms"):
        with pytest.raises(InterventionError, match="no (relative-position bias|disentangled position terms)"):
            compare(lab, "the cat sat on the mat", make_intervention(kind))


def test_rotary_bands_are_theta_to_the_2c_over_d(lab):
    """Band 2 (pair c = 1) of a 16-wide head: 2 pi theta^(2/16); theta 160000 -> 2 pi sqrt(20) = 28.0993 tokens,
    theta 10000 -> 2 pi sqrt(10) = 19.8692 tokens; band 1 turns once every 2 pi tokens."""
    from bertviz_lab.interventions.kinds import InterventionError
    from bertviz_lab.interventions.sweeps import rotary_bands

    bands = rotary_bands(lab)
    assert (bands.global_layers, bands.local_layers, bands.half_window) == ([1, 4], [2, 3], 4)
    rows = bands.rows()
    assert len(rows) == 8 and rows[1]["band"] == 2
    assert rows[0]["global wavelength (tokens)"] == pytest.approx(6.283185, abs=1e-5)
    assert rows[1]["global wavelength (tokens)"] == pytest.approx(28.0993, abs=1e-3)
    assert rows[1]["local wavelength (tokens)"] == pytest.approx(19.8692, abs=1e-3)
    assert rows[7]["global wavelength (tokens)"] == pytest.approx(2 * math.pi * 160_000 ** (14 / 16), rel=1e-9)
    import types

    import transformers as tf

    bert = model_from_transformers(tf.BertForMaskedLM(builders.hf_config()).eval())
    with pytest.raises(InterventionError, match="no rotary positions"):
        rotary_bands(types.SimpleNamespace(model=bert))


@pytest.mark.parametrize("source", ["globenc", "alti", "decompx", "value-zeroing"])
def test_post_norm_sources_refuse_modernbert_by_name(lab, source):
    with pytest.raises(ValueError, match=r"not available for ModernBERT and other pre-norm encoders: .*\(pre-norm\)"):
        lab.analyze("the cat sat on the mat", source=source)


def test_the_plain_norm_source_runs(lab):
    import numpy as np

    a = lab.analyze("the cat sat on the mat", source="norm")
    assert a.attention.shape[0] == LAYERS and np.isfinite(a.attention).all() and a.attention.max() > 0


def test_the_views_read_the_rotated_vectors_and_the_lens_the_final_norm(lab):
    """The neuron view and the q·k views use q and k after the rotary turn (with the local window as the only
    thing added to the scores), the score-parts view names the rotary content score, and the MLM lens's last
    layer is the model's own prediction (ModernBERT normalises the last state before its head)."""
    import numpy as np

    from bertviz_lab.lens import mlm_lens, queries_and_keys, score_bias, score_parts

    a = lab.analyze("the cat sat on the mat and the dog ran to the park with a red ball [MASK] .")
    q, k = queries_and_keys(lab, a)
    scales, bias = score_bias(lab, a)
    for layer in range(LAYERS):
        logits = q[layer] @ k[layer].transpose(0, 2, 1) * scales[layer] + bias[layer]  # (heads, query, key)
        np.testing.assert_allclose(torch.softmax(torch.tensor(logits), -1).numpy(), a.attention[layer], atol=1e-5)
    assert np.isfinite(bias[0]).all() and np.abs(bias[0]).max() < 1e-4  # a global layer: nothing added
    assert (bias[1] < -1e30).any()  # a local layer: keys beyond the window hidden
    parts = score_parts(lab, a, layer=2)
    assert parts.names == ["content: rot(q)·rot(k)/√d"]
    [lens] = mlm_lens(lab, a, top_k=3)
    assert lens.layers[-1].tokens[0] == a.mlm[0].predictions[0].token
    assert lens.layers[-1].probabilities[0] == pytest.approx(a.mlm[0].predictions[0].probability, abs=1e-5)


def test_the_inspector_draws_the_rotary_bands_and_sources_refuse_on_the_page(lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session
    from bertviz_lab.interventions import rotary_bands

    demo = build_demo(lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = handlers.run.analyze(RunInput("the cat sat on the mat"), Session(model=lab.checkpoint_id, device="cpu"))[ui.session]
    out = handlers.interventions.run_positions(20, session)
    assert "Rotary positions (no position table)" in out[ui.positions_message]
    fig = json.loads(out[ui.positions_plot].plot)
    bands = rotary_bands(lab)
    assert [t["name"].split(" (")[0] for t in fig["data"]] == ["global layers 1, 4", "local layers 2, 3"]
    assert [shape["y0"] for shape in fig["layout"]["shapes"]] == [20, 2 * bands.half_window + 1]
    assert fig["layout"]["yaxis"]["type"] == "log" and len(bands.global_wavelengths) == 8
