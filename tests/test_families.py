"""RoBERTa, DistilBERT and ELECTRA checkpoints in the hooked BERT encoder: random-initialised
models built with transformers, saved as checkpoints come (save_pretrained, in a hub-cache
layout), loaded strictly, with attention and MLM-logit parity, and the rest of the lab on them."""
import shutil

import builders
import numpy as np
import pytest
import torch

import bertviz_lab
from bertviz_lab import load

ROOT_WORDS = " ".join(builders.WORDS[:40]).replace(" ##", "")


def roughen(model, seed):
    """Non-zero biases and LayerNorm parameters, so a missed weight cannot hide."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def hub_cache(tmp_path, repo_id, folder):
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = tmp_path / "hub" / ("models--" + repo_id.replace("/", "--")) / "snapshots" / commit
    snap.mkdir(parents=True)
    for f in folder.iterdir():
        shutil.copy(f, snap / f.name)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text(commit)
    return tmp_path / "hub"


def bpe_tokenizer(folder):
    """A byte-level BPE tokenizer as RoBERTa's tokenizer.json has it (<mask> eats the space before it)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([ROOT_WORDS] * 20, trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tok.save(str(folder / "tokenizer.json"))
    return tok


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """name -> (transformers model, its folder)."""
    import transformers as tf

    out = {}
    root = tmp_path_factory.mktemp("families")
    folder = root / "roberta"
    folder.mkdir()
    tok = bpe_tokenizer(folder)
    cfg = tf.RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
                           pad_token_id=tok.token_to_id("<pad>"), bos_token_id=0, eos_token_id=2,
                           attn_implementation="eager")
    model = roughen(tf.RobertaForMaskedLM(cfg), 1)
    model.save_pretrained(folder)
    out["roberta"] = (model, folder)

    folder = root / "distilbert"
    cfg = tf.DistilBertConfig(vocab_size=len(builders.VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                              max_position_embeddings=64, pad_token_id=0, attn_implementation="eager")
    model = roughen(tf.DistilBertForMaskedLM(cfg), 2)
    model.save_pretrained(folder)
    builders.write_vocab(folder)
    out["distilbert"] = (model, folder)

    for name, cls in (("electra", tf.ElectraForMaskedLM), ("electra-discriminator", tf.ElectraForPreTraining)):
        folder = root / name
        cfg = tf.ElectraConfig(vocab_size=len(builders.VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                               attn_implementation="eager")
        model = roughen(cls(cfg), 3)
        model.save_pretrained(folder)
        builders.write_vocab(folder)
        out[name] = (model, folder)
    return out


@pytest.mark.parametrize("name", ["roberta", "distilbert", "electra"])
def test_family_loads_from_a_hub_cache_with_attention_and_mlm_parity(name, family, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf, folder = family[name]
    cache = hub_cache(tmp_path, f"tiny-org/tiny-{name}", folder)
    lab = load(f"tiny-org/tiny-{name}", device="cpu", cache_dir=cache)
    assert lab.model.has_mlm_head and lab.model.config.model_type == name
    text, pair = "the cat sat on the mat", "she saw a bird"
    a = lab.analyze(text, pair=pair)
    assert a.tokens[0] == "[CLS]" and a.tokens.count("[SEP]") >= 2  # BERT's names for what users see
    ids = torch.tensor([a.token_ids])
    segments = torch.tensor([a.segment_ids])  # RoBERTa's tokenizer gives all zeros; DistilBERT has no segments
    kwargs = {} if name == "distilbert" else {"token_type_ids": segments}
    with torch.no_grad():
        ref = hf(input_ids=ids, output_attentions=True, **kwargs)
        ours = lab.model(input_ids=ids, token_type_ids=segments)
    expected = torch.stack([x[0] for x in ref.attentions]).numpy()  # (layers, heads, q, k)
    np.testing.assert_allclose(a.attention, expected, atol=1e-5)
    np.testing.assert_allclose(ours.mlm_logits.numpy(), ref.logits.numpy(), atol=1e-4)


def test_roberta_positions_start_after_the_padding_index_and_batches_match(family):
    hf, folder = family["roberta"]
    lab = load(str(folder), device="cpu")
    assert lab.max_tokens == 66 - 2  # two rows of the position table are never used by RoBERTa
    texts = ["the cat sat", "a big red dog ran to the park quickly"]
    encoded = [lab.encode(t) for t in texts]
    batch = lab.batch_tensors(encoded)
    with torch.no_grad():
        ours = lab.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).mlm_logits
        ref = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    for row, enc in enumerate(encoded):  # real tokens; padding rows are nobody's output
        n = len(enc.ids)
        np.testing.assert_allclose(ours[row, :n].numpy(), ref[row, :n].numpy(), atol=1e-4)


def test_roberta_masks_typed_as_bert_masks_and_the_lab_works_unchanged(family):
    from bertviz_lab.interventions import compare, make_intervention
    from bertviz_lab.resources import SAMPLE_TREEBANK
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.treebank import read_conllu

    hf, folder = family["roberta"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat [mask] on the mat")
    assert a.tokens.count("[MASK]") == 1 and lab.tokenizer.id_to_token(lab.mask_id) == "<mask>"
    position = a.tokens.index("[MASK]")
    ids = torch.tensor([a.token_ids])
    with torch.no_grad():
        probs = torch.softmax(hf(input_ids=ids).logits[0, position], -1)
    assert a.mlm[0].predictions[0].probability == pytest.approx(float(probs.max()), abs=1e-5)
    from bertviz_lab.notebook import AnalysisDisplay

    shown = bertviz_lab.figure(a, "single-head", layer=2, head=1, display=AnalysisDisplay(hide_special=True))
    assert shown.layout.title.text == "Layer 2, head 1"
    c = compare(lab, "the cat [MASK] on the mat", make_intervention("left-only"))
    assert c.js.shape == (2, 4)
    scores = score_treebank(lab, read_conllu(SAMPLE_TREEBANK), max_sentences=5)
    assert scores.sentences_used == 5


def test_distilbert_has_no_segment_embeddings_and_electra_projects_its_embeddings(family):
    distil = load(str(family["distilbert"][1]), device="cpu")
    assert distil.model.bert.embeddings.token_type_embeddings is None
    pair = distil.analyze("the cat sat", pair="it slept")  # segments are simply not added
    assert pair.attention.shape[-1] == len(pair.tokens)
    electra = load(str(family["electra"][1]), device="cpu")
    assert electra.model.bert.embeddings_project.weight.shape == (32, 16)
    assert electra.model.cls.predictions.transform.dense.weight.shape == (16, 32)


def test_electra_discriminator_loads_its_encoder_and_says_what_was_set_aside(family):
    hf, folder = family["electra-discriminator"]
    lab = load(str(folder), device="cpu")
    assert not lab.model.has_mlm_head and "set aside: discriminator_predictions" in lab.name
    a = lab.analyze("the cat sat on the [MASK]")
    assert a.mlm == [] and "no masked-language-model head" in a.mlm_note
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor([a.token_ids]), token_type_ids=torch.tensor([a.segment_ids]),
                 output_attentions=True).attentions
    np.testing.assert_allclose(a.attention, torch.stack([x[0] for x in ref]).numpy(), atol=1e-5)


def test_roberta_word_shuffle_keeps_a_words_pieces_together(family):
    """Through compare: the tokenizer's word ids, not ## marks, say which pieces move together."""
    from bertviz_lab.interventions import make_intervention
    from bertviz_lab.interventions.kinds import ShuffleWords

    _, folder = family["roberta"]
    lab = load(str(folder), device="cpu")
    enc = lab.encode("the unbelievable cat sat on the mat")
    split = [w for w in set(enc.word_ids) if w is not None and enc.word_ids.count(w) > 1]
    assert split, enc.tokens  # the toy vocabulary splits some word into pieces without ##
    assert not any(t.startswith("##") for t in enc.tokens)
    for seed in range(4):
        order = make_intervention("shuffle-words", seed=seed).inputs_for(lab.model, enc.tokens, enc.word_ids).token_order
        moved = [enc.word_ids[i] for i in order]
        for w in split:  # each split word's pieces are contiguous and in order after the shuffle
            places = [k for k, v in enumerate(moved) if v == w]
            assert places == list(range(places[0], places[0] + len(places)))
            assert [order[k] for k in places] == sorted(order[k] for k in places)
    assert isinstance(make_intervention("shuffle-words"), ShuffleWords)


def hf_tokenizer(name, folder):
    import transformers as tf

    if name == "roberta":
        return tf.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), bos_token="<s>",
                                          eos_token="</s>", sep_token="</s>", cls_token="<s>", pad_token="<pad>",
                                          unk_token="<unk>", mask_token="<mask>")
    return tf.BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))


def payload_of(page: str) -> dict:
    import json
    import re

    return json.loads(re.search(r"window\.BvlNeuron\(document\.getElementById\([^)]*\), (\{.*\})\);</script>",
                                page, re.S).group(1).replace("\\u003c", "<").replace("\\u003e", ">").replace(
        "\\u0026", "&"))


@pytest.mark.parametrize("name", ["roberta", "distilbert", "electra"])
def test_neuron_view_drop_in_takes_a_transformers_model_and_its_softmax_is_its_attention(name, family):
    """BertViz's neuron_view.show signature on a plain transformers model (no fork): the page's query
    and key vectors give softmax(q.k / sqrt(d)) = the model's own attention (eager)."""
    import base64

    from bertviz_lab import neuron_view

    model, folder = family[name]
    tokenizer = hf_tokenizer(name, folder)
    page = neuron_view.show(model, name, tokenizer, "the cat sat on the mat", "it was warm", layer=1, head=2,
                            html_action="return").data
    assert page.startswith("<!doctype html>") and "<meta charset='utf-8'>" in page and "plotly" not in page.lower()
    payload = payload_of(page)
    assert (payload["layer"], payload["head"]) == (1, 2)
    vectors = np.frombuffer(base64.b64decode(payload["vectors"]), dtype="<f2").astype(np.float32)
    q, k = vectors.reshape(2, payload["layers"], payload["heads"], payload["n"], payload["d"])
    scores = np.einsum("lhqd,lhkd->lhqk", q, k) / np.sqrt(payload["d"])
    softmax = np.exp(scores - scores.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    inputs = tokenizer("the cat sat on the mat", "it was warm", return_tensors="pt")
    with torch.no_grad():
        expected = torch.stack(model(**inputs, output_attentions=True).attentions)[:, 0].numpy()
    np.testing.assert_allclose(softmax, expected, atol=5e-3)  # float16 vectors
    assert payload["tokens"] == [t.replace("Ġ", " ").strip() or t for t in
                                 tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])]
    assert payload["segments"].count(1) > 0  # sentence B is marked, with or without token type ids


def test_neuron_view_refuses_a_wrong_model_type(family):
    from bertviz_lab import neuron_view

    model, folder = family["roberta"]
    with pytest.raises(ValueError, match="model is a 'roberta' model"):
        neuron_view.show(model, "bert", hf_tokenizer("roberta", folder), "the cat", html_action="return")
