"""Encoders whose layers or positions work differently from BERT's, in the hooked encoder: random
transformers models saved as checkpoints come (hub-cache layout), loaded strictly, with hidden-state,
attention and MLM-logit parity (<= 1e-5), every hook point captured per layer, and the Lab on them.

ALBERT: one layer's parameters run every layer, embeddings of ``embedding_size`` projected up.
MPNet: RoBERTa's absolute positions plus a relative-position bias (T5 buckets) added to every layer's scores."""
import json

import builders
import numpy as np
import pytest
import torch
from test_families import ROOT_WORDS, hub_cache, roughen

from bertviz_lab import load
from bertviz_lab.bert.encoder.hook_table import HOOK_TABLE, hook_name
from bertviz_lab.bert.loading.checkpoints import CheckpointError, model_from_transformers

TOL = 1e-5
LAYERS = 3
TEXT, PAIR = "the cat sat on the mat", "she saw a bird"


def sentencepiece_tokenizer(folder):
    """ALBERT's tokenizer as transformers writes it (tokenizer.json: Unigram pieces with ▁ word marks,
    <pad> <unk> [CLS] [SEP] [MASK]) over whole words and single letters (other words fall into letters)."""
    from transformers import AlbertTokenizer

    words = dict.fromkeys(w for w in ROOT_WORDS.split() if w.isalpha())
    letters = sorted({c for w in words for c in w} | set("uvwxyzj"))
    pieces = ([("<pad>", 0.0), ("<unk>", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("[MASK]", 0.0), ("▁", -3.0)]
              + [("▁" + w, -1.0) for w in words] + [(c, -5.0) for c in letters])
    tok = AlbertTokenizer(vocab=pieces)
    tok.save_pretrained(str(folder))
    return tok


def albert_config(vocab_size, **extra):
    import transformers as tf

    return tf.AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=LAYERS,
                           num_attention_heads=4, intermediate_size=64, max_position_embeddings=64, pad_token_id=0,
                           attn_implementation="eager", **extra)


@pytest.fixture(scope="module")
def albert(tmp_path_factory):
    """kind -> (transformers model, its folder): masked LM, pretraining (MLM + sentence order), classifier."""
    import transformers as tf

    out = {}
    root = tmp_path_factory.mktemp("albert")
    kinds = {"mlm": (tf.AlbertForMaskedLM, {}),
             "pretraining": (tf.AlbertForPreTraining, {}),
             "classifier": (tf.AlbertForSequenceClassification,
                            {"num_labels": 3, "id2label": {0: "neg", 1: "neu", 2: "pos"},
                             "label2id": {"neg": 0, "neu": 1, "pos": 2}})}
    for seed, (kind, (cls, extra)) in enumerate(kinds.items()):
        folder = root / kind
        folder.mkdir()
        tok = sentencepiece_tokenizer(folder)
        torch.manual_seed(seed)
        model = roughen(cls(albert_config(len(tok), **extra)), seed + 10)
        model.save_pretrained(folder)
        out[kind] = (model, folder)
    return out


def reference(hf, a, **extra):
    ids = torch.tensor([a.token_ids])
    with torch.no_grad():
        return hf(input_ids=ids, token_type_ids=torch.tensor([a.segment_ids]), output_attentions=True,
                  output_hidden_states=True, **extra)


def test_albert_loads_from_a_hub_cache_with_hidden_state_attention_and_mlm_parity(albert, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf, folder = albert["mlm"]
    lab = load("tiny-org/tiny-albert", device="cpu", cache_dir=hub_cache(tmp_path, "tiny-org/tiny-albert", folder))
    assert lab.model.config.model_type == "albert" and lab.model.has_mlm_head and not lab.model.has_nsp_head
    a = lab.analyze(TEXT, pair=PAIR)
    assert a.tokens[0] == "[CLS]" and a.tokens.count("[SEP]") == 2 and "▁cat" in a.tokens
    assert a.token_ids == sentencepiece_tokenizer(tmp_path)(TEXT, PAIR).input_ids  # transformers' own tokenizer
    assert a.segment_ids[-1] == 1
    ref = reference(hf, a)
    names = [hook_name("out", i) for i in range(LAYERS)]
    with torch.no_grad(), lab.model.hooks(capture=[hook_name("embeddings")] + names) as run:
        ours = lab.model(input_ids=torch.tensor([a.token_ids]), token_type_ids=torch.tensor([a.segment_ids]))
    projected = lab.model.bert.embeddings_project(run.cache[hook_name("embeddings")])  # (1, pos, d_model)
    hidden = torch.stack([projected] + [run.cache[n] for n in names])  # (layers + 1, 1, pos, d_model)
    assert (hidden - torch.stack(ref.hidden_states)).abs().max() <= TOL
    assert np.abs(a.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL
    assert (ours.mlm_logits - ref.logits).abs().max() <= TOL


def test_albert_batches_with_padding_match(albert):
    hf, folder = albert["mlm"]
    lab = load(str(folder), device="cpu")
    assert lab.pad_id == 0 and lab.tokenizer.id_to_token(lab.pad_id) == "<pad>"
    encoded = [lab.encode(t) for t in ("the cat sat", "a big red dog ran to the park quickly")]
    batch = lab.batch_tensors(encoded)
    with torch.no_grad():
        ours = lab.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).mlm_logits
        ref = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    for row, enc in enumerate(encoded):  # real tokens; padding rows are nobody's output
        n = len(enc.ids)
        assert (ours[row, :n] - ref[row, :n]).abs().max() <= TOL


def test_albert_layers_share_one_parameter_set_and_every_hook_point_captures_per_layer(albert):
    hf, folder = albert["mlm"]
    model = load(str(folder), device="cpu").model
    layers = model.bert.encoder.layer
    assert all(layer is not layers[0] for layer in layers[1:])  # a module per layer: its own hook points
    assert all(layer.attention.self.query is layers[0].attention.self.query
               and layer.output.LayerNorm is layers[0].output.LayerNorm for layer in layers)
    assert not [k for k in model.state_dict() if k.startswith(("bert.encoder.layer.1.", "bert.encoder.layer.2."))]
    own = sum(p.numel() for n, p in hf.named_parameters() if "decoder" not in n)
    assert sum(p.numel() for p in model.parameters()) == own  # the one set, counted once
    spots = [s for s, spot in HOOK_TABLE.items() if spot.per_layer]
    ids = torch.tensor([[2, 7, 8, 9, 10, 3]])
    with torch.no_grad(), model.hooks(capture=[hook_name(s, i) for s in spots for i in range(LAYERS)]) as run:
        model(input_ids=ids)
    for spot in spots:  # each layer's capture is its own call's: the layers' inputs differ, so do they
        first = run.cache[hook_name(spot, 0)]
        assert all(not torch.equal(first, run.cache[hook_name(spot, i)]) for i in range(1, LAYERS)), spot
    with torch.no_grad(), model.hooks(capture=[hook_name("out", 0), hook_name("out", 2)],
                                      edits={hook_name("attn_out", 1): lambda x, _: x * 0}) as edited:
        model(input_ids=ids)
    before = (edited.cache[hook_name("out", 0)] - run.cache[hook_name("out", 0)]).abs().max()
    after = (edited.cache[hook_name("out", 2)] - run.cache[hook_name("out", 2)]).abs().max()
    assert before <= 1e-6 and after > 0.1  # the edit acts at layer 2 only, though layer 2 runs layer 1's weights


def test_albert_state_dicts_load_strictly_and_a_second_layer_with_its_own_values_is_refused(albert):
    hf, _ = albert["mlm"]
    model = model_from_transformers(hf)
    state = model.state_dict()
    copy = model_from_transformers(hf)
    copy.load_state_dict(state, strict=True)  # the one set fills every layer
    assert torch.equal(copy.bert.encoder.layer[2].attention.self.key.weight, state[
        "bert.encoder.layer.0.attention.self.key.weight"])
    bad = dict(state)
    bad["bert.encoder.layer.1.attention.self.key.weight"] = state["bert.encoder.layer.0.attention.self.key.weight"] + 1
    with pytest.raises(RuntimeError, match="layer.1.attention.self.key.weight differs from .*layers share"):
        copy.load_state_dict(bad, strict=True)


def test_albert_masked_predictions_and_the_lab_work(albert):
    import bertviz_lab
    from bertviz_lab.interventions import compare, make_intervention

    hf, folder = albert["mlm"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat [MASK] on the mat")
    assert a.tokens.count("[MASK]") == 1 and lab.tokenizer.id_to_token(lab.mask_id) == "[MASK]"
    position = a.tokens.index("[MASK]")
    with torch.no_grad():
        probs = torch.softmax(hf(input_ids=torch.tensor([a.token_ids])).logits[0, position], -1)
    top = torch.topk(probs, 3)
    assert [p.probability for p in a.mlm[0].predictions[:3]] == pytest.approx(top.values.tolist(), abs=1e-6)
    assert [p.token for p in a.mlm[0].predictions[:3]] == [lab.tokenizer.id_to_token(int(i)) for i in top.indices]
    assert a.attention.shape == (LAYERS, 4, len(a.tokens), len(a.tokens))
    assert bertviz_lab.figure(a, "single-head", layer=3, head=2).layout.title.text == "Layer 3, head 2"
    c = compare(lab, "the cat [MASK] on the mat", make_intervention("left-only"))
    assert c.js.shape == (LAYERS, 4)


def test_albert_pretraining_sets_the_sentence_order_head_aside_and_keeps_its_pooler(albert):
    hf, folder = albert["pretraining"]
    lab = load(str(folder), device="cpu")
    assert "set aside: sop_classifier" in lab.name and lab.model.bert.pooler is not None
    assert not lab.model.has_nsp_head  # sentence order is not BERT's next-sentence task
    a = lab.analyze(TEXT, pair=PAIR)
    ref = reference(hf, a)
    with torch.no_grad():
        ours = lab.model(input_ids=torch.tensor([a.token_ids]), token_type_ids=torch.tensor([a.segment_ids]))
    assert (ours.mlm_logits - ref.prediction_logits).abs().max() <= TOL
    assert np.abs(a.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max() <= TOL


def test_albert_sequence_classifier_gives_its_classes(albert):
    hf, folder = albert["classifier"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze(TEXT)
    with torch.no_grad():
        probs = torch.softmax(reference(hf, a).logits[0], -1)
    assert [c.label for c in a.classes] == [["neg", "neu", "pos"][int(i)] for i in torch.argsort(probs, descending=True)]
    assert [c.probability for c in a.classes] == pytest.approx(sorted(probs.tolist(), reverse=True), abs=1e-6)


def test_albert_with_more_than_one_layer_group_is_refused_by_name(albert, tmp_path):
    _, folder = albert["mlm"]
    other = tmp_path / "groups"
    other.mkdir()
    for f in folder.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    raw = json.loads((folder / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**raw, "num_hidden_groups": 3}))
    with pytest.raises(CheckpointError, match="num_hidden_groups 3 and inner_group_num 1 is not supported"):
        load(str(other), device="cpu")


LONG = " ".join(["the cat sat on the mat and the dog ran to the park quickly"] * 12)  # 168 words: far buckets


def mpnet_tokenizer(folder):
    """MPNet's tokenizer as transformers writes it (WordPiece with <s> </s> <pad> <mask>, pairs as <s> A </s></s> B </s>)."""
    from transformers import MPNetTokenizer

    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "[UNK]"] + builders.VOCAB[5:] + ["<mask>"])}
    tok = MPNetTokenizer(vocab=vocab)
    tok.save_pretrained(str(folder))
    return tok


@pytest.fixture(scope="module")
def mpnet(tmp_path_factory):
    """kind -> (transformers model, its folder): masked LM and a three-class sequence classifier."""
    import transformers as tf

    out = {}
    root = tmp_path_factory.mktemp("mpnet")
    kinds = {"mlm": (tf.MPNetForMaskedLM, {}),
             "classifier": (tf.MPNetForSequenceClassification,
                            {"num_labels": 3, "id2label": {0: "neg", 1: "neu", 2: "pos"},
                             "label2id": {"neg": 0, "neu": 1, "pos": 2}})}
    for seed, (kind, (cls, extra)) in enumerate(kinds.items()):
        folder = root / kind
        folder.mkdir()
        tok = mpnet_tokenizer(folder)
        torch.manual_seed(seed)
        cfg = tf.MPNetConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=LAYERS, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=260, attn_implementation="eager", **extra)
        model = roughen(cls(cfg), seed + 20)
        with torch.no_grad():  # a bias as large as a trained one's, so that a wrong bucket shows
            model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
        model.save_pretrained(folder)
        out[kind] = (model, folder)
    return out


def mpnet_parity(lab, hf, text, pair=None):
    """Max abs differences (hidden states, attention, MLM logits) against transformers on one input."""
    a = lab.analyze(text, pair=pair)
    names = [hook_name("embeddings")] + [hook_name("out", i) for i in range(LAYERS)]
    ids = torch.tensor([a.token_ids])
    with torch.no_grad(), lab.model.hooks(capture=names) as run:
        ours = lab.model(input_ids=ids)
        ref = hf(input_ids=ids, output_attentions=True, output_hidden_states=True)
    hidden = (torch.stack([run.cache[n] for n in names]) - torch.stack(ref.hidden_states)).abs().max()
    attention = np.abs(a.attention - torch.stack([x[0] for x in ref.attentions]).numpy()).max()
    return a, float(hidden), float(attention), float((ours.mlm_logits - ref.logits).abs().max())


def test_mpnet_loads_from_a_hub_cache_with_hidden_state_attention_and_mlm_parity(mpnet, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf, folder = mpnet["mlm"]
    lab = load("tiny-org/tiny-mpnet", device="cpu", cache_dir=hub_cache(tmp_path, "tiny-org/tiny-mpnet", folder))
    assert lab.model.config.model_type == "mpnet" and lab.model.has_mlm_head and lab.max_tokens == 258
    assert lab.model.bert.embeddings.token_type_embeddings is None
    for text, pair in ((TEXT, PAIR), (LONG, None)):  # the long input reaches the logarithmic and the last buckets
        a, hidden, attention, logits = mpnet_parity(lab, hf, text, pair)
        assert max(hidden, attention, logits) <= TOL, (hidden, attention, logits)
    assert len(a.tokens) > 150 and a.tokens[0] == "[CLS]"
    pair = lab.analyze(TEXT, pair=PAIR)
    assert pair.token_ids == mpnet_tokenizer(tmp_path)(TEXT, PAIR).input_ids and pair.tokens.count("[SEP]") == 3


def test_mpnet_relative_bias_is_one_hook_point_and_zeroing_it_is_the_model_without_it(mpnet):
    import copy

    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    from bertviz_lab.bert.positions.relative import position_buckets, relative_position_bucket

    hf, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    offsets = torch.arange(-300, 301)  # key - query
    buckets = relative_position_bucket(offsets)
    assert torch.equal(buckets, MPNetEncoder.relative_position_bucket(offsets))
    assert buckets.unique().tolist() == [b for b in range(32) if b != 16]  # a later key is never 0 away
    assert buckets[300 - 7: 300 + 8].tolist() == [7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23]
    bias_hook = hook_name("position_bias")
    assert bias_hook == "bert.encoder.hook_position_bias"
    assert lab.model.hook_names.index(bias_hook) == 3  # after the embeddings' three (no segments), before layer 1
    ids = torch.tensor([lab.analyze(TEXT).token_ids])
    n = ids.shape[1]
    with torch.no_grad(), lab.model.hooks(capture=[bias_hook]) as run:
        lab.model(input_ids=ids)
    table = hf.mpnet.encoder.relative_attention_bias.weight  # (buckets, heads)
    assert torch.equal(run.cache[bias_hook][0], table[position_buckets(n)].permute(2, 0, 1))
    without = copy.deepcopy(hf)
    with torch.no_grad():
        without.mpnet.encoder.relative_attention_bias.weight.zero_()
        ref = torch.stack(without(input_ids=ids, output_attentions=True).attentions)[:, 0]  # (layers, heads, q, k)
        with lab.model.hooks(capture=["*hook_pattern"], edits={bias_hook: lambda x, _: x * 0}) as zeroed:
            logits = lab.model(input_ids=ids).mlm_logits
    ours = torch.stack([zeroed.cache[hook_name("pattern", i)][0] for i in range(LAYERS)])
    assert (ours - ref).abs().max() <= TOL
    assert (logits - without(input_ids=ids).logits).abs().max() <= TOL


def test_mpnet_batches_with_padding_and_masked_predictions_match(mpnet):
    hf, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    encoded = [lab.encode(t) for t in ("the cat sat", "a big red dog ran to the park quickly")]
    batch = lab.batch_tensors(encoded)
    with torch.no_grad():
        ours = lab.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).mlm_logits
        ref = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    for row, enc in enumerate(encoded):  # real tokens; padding rows are nobody's output
        assert (ours[row, :len(enc.ids)] - ref[row, :len(enc.ids)]).abs().max() <= TOL
    a = lab.analyze("the cat [mask] on the mat")
    assert a.tokens.count("[MASK]") == 1 and lab.tokenizer.id_to_token(lab.mask_id) == "<mask>"
    with torch.no_grad():
        probs = torch.softmax(hf(input_ids=torch.tensor([a.token_ids])).logits[0, a.tokens.index("[MASK]")], -1)
    top = torch.topk(probs, 3)
    assert [p.probability for p in a.mlm[0].predictions[:3]] == pytest.approx(top.values.tolist(), abs=1e-6)


def test_mpnet_sequence_classifier_gives_its_classes(mpnet):
    hf, folder = mpnet["classifier"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze(TEXT)
    with torch.no_grad():
        probs = torch.softmax(hf(input_ids=torch.tensor([a.token_ids])).logits[0], -1)
    assert [c.label for c in a.classes] == [["neg", "neu", "pos"][int(i)] for i in torch.argsort(probs, descending=True)]
    assert [c.probability for c in a.classes] == pytest.approx(sorted(probs.tolist(), reverse=True), abs=1e-6)


def test_mpnet_views_and_position_interventions_work_and_leave_the_relative_bias_alone(mpnet):
    """Shuffling the absolute positions moves the position table's rows; the relative bias, from token
    indices (as transformers has it), is the same in both runs."""
    import bertviz_lab
    from bertviz_lab.interventions import compare, make_intervention

    _, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat [MASK] on the mat")
    assert bertviz_lab.figure(a, "single-head", layer=2, head=3).layout.title.text == "Layer 2, head 3"
    c = compare(lab, "the cat [MASK] on the mat", make_intervention("left-only"))
    assert c.js.shape == (LAYERS, 4) and float(c.js.max()) > 0
    shuffle = make_intervention("shuffle-positions", seed=1)
    moved = compare(lab, "the cat [MASK] on the mat", shuffle)
    assert moved.js.shape == (LAYERS, 4) and float(moved.js.max()) > 0
    enc = lab.encode("the cat sat on the mat")
    inputs = shuffle.inputs_for(lab.model, enc.tokens, enc.word_ids)
    ids = torch.tensor([enc.ids])
    bias = hook_name("position_bias")
    with torch.no_grad(), lab.model.hooks(capture=[bias, hook_name("position")]) as plain:
        lab.model(input_ids=ids)
    with torch.no_grad(), lab.model.hooks(capture=[bias, hook_name("position")]) as shuffled:
        lab.model(input_ids=ids, position_ids=inputs.position_ids)
    assert not torch.equal(plain.cache[hook_name("position")], shuffled.cache[hook_name("position")])
    assert torch.equal(plain.cache[bias], shuffled.cache[bias])


def test_value_zeroing_on_mpnet_keeps_its_relative_bias(mpnet):
    """The released algorithm (Mohebbi et al. 2023) on transformers' own MPNet layers, each rerun with its
    position bias as the encoder passes it: our value-zeroing source must equal it (a rerun without the bias
    is off by ~1e-2)."""
    from bertviz_lab.attention.sources import layer_matrices

    hf, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat sat on the mat")
    ids = torch.tensor([a.token_ids])
    with torch.no_grad():
        hidden = hf.mpnet(input_ids=ids, output_hidden_states=True).hidden_states
        bias = hf.mpnet.encoder.compute_position_bias(hidden[0])
    n = ids.shape[1]
    expected = np.zeros((LAYERS, n, n))
    for layer, block in enumerate(hf.mpnet.encoder.layer):
        for t in range(n):
            def zero(_module, _inputs, output, t=t):
                output = output.clone()
                output[:, t] = 0
                return output

            handle = block.attention.attn.v.register_forward_hook(zero)
            try:
                with torch.no_grad():
                    out = block(hidden[layer], None, bias)[0]
            finally:
                handle.remove()
            x, y = out[0].double().numpy(), hidden[layer + 1][0].double().numpy()
            expected[layer, :, t] = 1 - (x * y).sum(-1) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(layer_matrices(lab, a, "value-zeroing"), expected, atol=1e-4)


def test_the_single_head_view_shows_mpnets_score_parts_and_they_make_its_attention(mpnet, tiny_lab):
    """MPNet's scores are q·k/√d plus the relative bias: the two parts, summed and softmaxed, are the attention
    transformers computes; BERT's scores have one part. The page draws them for the chosen head."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session
    from bertviz_lab.lens import score_parts

    hf, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat sat on the mat because it was tired")
    parts = score_parts(lab, a, layer=2)
    assert parts.names == ["content: q·k/√d", "relative-position bias"]
    ids = torch.tensor([a.token_ids])
    with torch.no_grad():
        reference = hf(input_ids=ids, output_attentions=True).attentions[1][0].numpy()  # (heads, query, key)
    np.testing.assert_allclose(torch.softmax(torch.tensor(parts.parts.sum(0)), -1).numpy(), reference, atol=1e-6)
    np.testing.assert_allclose(parts.attention, reference, atol=1e-6)
    table = hf.mpnet.encoder.relative_attention_bias.weight.detach()  # (buckets, heads)
    assert parts.parts[1, 0, 0, 0] == pytest.approx(float(table[0, 0]))  # offset 0: bucket 0 of head 1
    assert abs(parts.parts[1]).max() > 0.5 and parts.has_parts
    plain = score_parts(tiny_lab, tiny_lab.analyze("the cat sat"), layer=1)
    assert plain.names == ["content: q·k/√d"] and not plain.has_parts
    np.testing.assert_allclose(torch.softmax(torch.tensor(plain.parts[0]), -1).numpy(), plain.attention, atol=1e-6)

    demo = build_demo(lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = handlers.run.analyze(RunInput("the cat sat on the mat"), Session(model=lab.checkpoint_id, device="cpu"))[ui.session]
    out = handlers.qk.score_parts(session, 2, 3)
    assert out[ui.parts_message].startswith("Head 2-3: its scores are content: q·k/√d + relative-position bias")
    fig = json.loads(out[ui.parts_plot].plot)
    assert [t["hovertemplate"].split("<br>")[0] for t in fig["data"]] == [
        "content: q·k/√d", "relative-position bias", "attention"]
    assert fig["data"][1]["zmid"] == 0 and fig["data"][2]["zmin"] == 0


def test_mpnet_hides_tokens_with_the_bias_because_leaving_them_out_moves_its_relative_positions(mpnet):
    """Leaving hidden tokens out (the shortcut for absolute positions) would shorten the offsets MPNet's
    relative bias reads, so its hidden rows must run at full length with the bias."""
    from bertviz_lab.interventions import hiding

    _, folder = mpnet["mlm"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat [mask] on the red mat in the big house")
    position = a.tokens.index("[MASK]")
    sets = [[1], [4, 5], [6, 7, 8, 9]]

    def read(out):
        return torch.log_softmax(out.mlm_logits.float(), -1)

    assert not lab.model.config.absolute_positions_only
    used = hiding.outputs_with_hidden(lab, a.encoded(), sets, read, position)
    biased = hiding._biased(lab, a.encoded(), [()] + sets, read, position)
    left_out = hiding._left_out(lab, a.encoded(), [()] + sets, read, position)
    assert torch.equal(used, biased)
    assert (left_out[0] - biased[0]).abs().max() <= 1e-5  # nothing left out: the same pass
    assert (left_out[1:] - biased[1:]).abs().max() > 1e-3  # the offsets moved: a different model (100x the rounding)
