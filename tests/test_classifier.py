"""Sequence classifiers of the BERT family (``*ForSequenceClassification``): random-initialised models
built with transformers, saved as checkpoints come (save_pretrained, in a hub-cache layout), loaded
strictly with their labels, with class-logit and attention parity, and their predicted class explained."""
import json

import builders
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from test_families import bpe_tokenizer, hub_cache, roughen

from bertviz_lab import CheckpointError, load
from bertviz_lab.bert.loading.checkpoints import model_from_transformers

LABELS = {0: "negative", 1: "neutral", 2: "positive"}
FAMILIES = ["bert", "roberta", "distilbert", "electra"]


def classifier_config(name, folder):
    """A tiny config of family ``name`` with three labelled classes (RoBERTa writes its tokenizer first)."""
    import transformers as tf

    common = {"num_labels": 3, "id2label": LABELS, "label2id": {v: k for k, v in LABELS.items()}}
    if name == "bert":
        return builders.hf_config(**common)  # eager attention already
    common["attn_implementation"] = "eager"
    if name == "roberta":
        tok = bpe_tokenizer(folder)
        return tf.RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=64, max_position_embeddings=66,
                                type_vocab_size=1, pad_token_id=tok.token_to_id("<pad>"), bos_token_id=0,
                                eos_token_id=2, **common)
    if name == "distilbert":
        return tf.DistilBertConfig(vocab_size=len(builders.VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                   max_position_embeddings=64, pad_token_id=0, **common)
    return tf.ElectraConfig(vocab_size=len(builders.VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=64, max_position_embeddings=64, **common)


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    """name -> (transformers *ForSequenceClassification with random weights, its saved folder)."""
    import transformers as tf

    out = {}
    for seed, name in enumerate(FAMILIES):
        folder = tmp_path_factory.mktemp(f"cls-{name}")
        cfg = classifier_config(name, folder)
        cls = {"bert": tf.BertForSequenceClassification, "roberta": tf.RobertaForSequenceClassification,
               "distilbert": tf.DistilBertForSequenceClassification,
               "electra": tf.ElectraForSequenceClassification}[name]
        torch.manual_seed(seed)
        model = roughen(cls(cfg), seed)
        with torch.no_grad():  # transformers starts heads near zero: make the class logits differ clearly
            for p in model.parameters():
                if p.dim() == 2 and p.shape[0] == 3:
                    p.normal_(0.0, 1.0)
        model.save_pretrained(folder)
        if name != "roberta":
            builders.write_vocab(folder)
        out[name] = (model, folder)
    return out


def reference(hf, name, a):
    """transformers' class logits (classes,) and attention (layers, heads, query, key) for an analysis's tokens."""
    kwargs = {} if name == "distilbert" else {"token_type_ids": torch.tensor([a.segment_ids])}
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor([a.token_ids]), output_attentions=True, **kwargs)
    return ref.logits[0].numpy(), torch.stack([x[0] for x in ref.attentions]).numpy()


@pytest.mark.parametrize("name", FAMILIES)
def test_classifier_loads_from_a_hub_cache_with_class_and_attention_parity(name, classifiers, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf, folder = classifiers[name]
    cache = hub_cache(tmp_path, f"tiny-org/tiny-{name}-sst", folder)
    lab = load(f"tiny-org/tiny-{name}-sst", device="cpu", cache_dir=cache)
    assert lab.model.class_labels == ["negative", "neutral", "positive"]
    assert "set aside" not in lab.name  # the head is part of the model, not dropped
    a = lab.analyze("the big cat sat on the mat and slept")
    logits, attention = reference(hf, name, a)
    with torch.no_grad():
        ours = lab.model(input_ids=torch.tensor([a.token_ids]), token_type_ids=torch.tensor([a.segment_ids]))
    assert np.abs(ours.class_logits[0].numpy() - logits).max() <= 1e-5
    assert np.abs(a.attention - attention).max() <= 1e-5
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    order = np.argsort(-probs)
    assert [c.index for c in a.classes] == order.tolist()
    assert [c.label for c in a.classes] == [LABELS[int(i)] for i in order]
    np.testing.assert_allclose([c.probability for c in a.classes], probs[order], atol=1e-6)
    assert a.predicted_class.label == LABELS[int(order[0])]
    assert a.to_json(attention=False)["classes"] == [
        {"label": c.label, "index": c.index, "probability": c.probability} for c in a.classes]


def test_classes_follow_a_batch_with_padding_and_the_drop_in_takes_the_model(classifiers):
    """Padded rows of a batch give each input's own class logits; model_from_transformers keeps the head."""
    hf, folder = classifiers["roberta"]
    lab = load(str(folder), device="cpu")
    encoded = [lab.encode(t) for t in ["the cat sat", "a big red dog ran to the park quickly"]]
    batch = lab.batch_tensors(encoded)
    with torch.no_grad():
        ours = lab.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).class_logits
        ref = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        dropped_in = model_from_transformers(hf)(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert (ours - ref).abs().max() <= 1e-5
    assert (dropped_in.class_logits - ref).abs().max() <= 1e-5


def test_a_checkpoint_without_a_classifier_has_no_classes(tiny_lab):
    a = tiny_lab.analyze("the cat [MASK] on the mat")
    assert a.classes == [] and a.predicted_class is None and a.to_json(attention=False)["classes"] == []


def test_a_missing_head_weight_and_a_wrong_label_table_are_refused(classifiers, tmp_path):
    _, folder = classifiers["distilbert"]
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in folder.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    state = load_file(str(broken / "model.safetensors"))
    del state["pre_classifier.bias"]
    save_file(state, str(broken / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"missing keys: classifier\.dense\.bias"):
        load(str(broken), device="cpu")
    state["pre_classifier.bias"] = torch.zeros(32)
    save_file(state, str(broken / "model.safetensors"))
    config = json.loads((broken / "config.json").read_text())
    config["id2label"] = {"0": "negative", "1": "positive"}
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="id2label names classes \\[0, 1\\] but the classifier has 3 outputs"):
        load(str(broken), device="cpu")


def test_a_bert_token_classifier_is_not_taken_for_a_sequence_classifier(classifiers, tmp_path):
    """BERT's token classifier has the same weights as its sequence classifier: the config's
    architectures decides, and a token classifier's head stays an unexpected key."""
    _, folder = classifiers["bert"]
    other = tmp_path / "token"
    other.mkdir()
    for f in folder.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    config = json.loads((other / "config.json").read_text())
    config["architectures"] = ["BertForTokenClassification"]
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"unexpected keys: bert\.classifier\.bias, bert\.classifier\.weight"):
        load(str(other), device="cpu")


@pytest.mark.parametrize("name", FAMILIES)
def test_the_predicted_class_is_explained_on_every_family(name, classifiers):
    """explain_class on each family's head: erasure is the class logit's drop when one token is hidden
    from attention (checked one forward at a time), with the gradients and every [CLS]-row ranking."""
    from bertviz_lab.interventions.attribution import CLASS_RANKINGS, explain_class

    lab = load(str(classifiers[name][1]), device="cpu")
    a = lab.analyze("the big cat sat on the mat")
    explained = explain_class(lab, a, steps=4)
    assert explained.label == a.predicted_class.label and explained.context == list(range(1, len(a.tokens) - 1))
    ids = torch.tensor([a.token_ids])

    def logit(hidden):
        bias = torch.zeros((1, 1, 1, len(a.token_ids)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        with torch.no_grad():
            return float(lab.model(input_ids=ids, attention_bias=bias).class_logits[0, explained.index])

    expected = [logit([]) - logit([j]) for j in explained.context]
    np.testing.assert_allclose(explained.scores["erasure"], expected, atol=1e-5)
    assert set(explained.scores) == {"erasure", "gradient x input", "integrated gradients", "decompx"}
    assert all(len(v) == len(explained.context) for v in explained.scores.values())
    assert set(CLASS_RANKINGS) <= set(explained.agreement) and "decompx" in CLASS_RANKINGS
    # the words' DecompX shares and the specials' (said beside them) sum to the class's logit
    assert list(explained.decompx_outside) == [f"0 {a.tokens[0]}", f"{len(a.tokens) - 1} {a.tokens[-1]}"]
    total = sum(explained.scores["decompx"]) + sum(explained.decompx_outside.values())
    assert total == pytest.approx(logit([]), abs=1e-4)
    assert explained.decompx_note().endswith(f"together {total:+.3f}, the class's logit")


@pytest.mark.parametrize("name", FAMILIES)
def test_decompx_shares_of_every_class_logit_sum_to_it_on_every_family(name, classifiers):
    """DecompX through each family's head (zero-origin slopes, biases shared out) is a decomposition:
    the shares of all tokens, [CLS] and [SEP] included, add up to each class logit."""
    from bertviz_lab.bert.sources import decompx
    from bertviz_lab.bert.sources.captured import MIXING_CAPTURES, Captured
    from bertviz_lab.interventions.attribution import class_logit_shares

    hf, folder = classifiers[name]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the big cat sat on the mat")
    out, cache = lab.run(lab.batch_tensors([a.encoded()]), capture=MIXING_CAPTURES, compute_mlm=False)
    shares = class_logit_shares(lab.model, decompx.decompose(Captured(lab.model, cache, 0, len(a.tokens)))[-1])
    assert shares.shape == (len(a.tokens), 3)
    np.testing.assert_allclose(shares.sum(0).numpy(), out.class_logits[0].numpy(), atol=1e-4)


def test_the_drop_in_trusts_the_model_class_over_the_config_it_was_loaded_from(classifiers):
    """BertForSequenceClassification.from_pretrained("bert-base-uncased") keeps the config's
    architectures ["BertForMaskedLM"]: the object's class says what its weights are."""
    import copy

    hf = copy.deepcopy(classifiers["bert"][0])
    hf.config.architectures = ["BertForMaskedLM"]
    ids = torch.tensor([[2, 7, 8, 9, 10, 3]])
    with torch.no_grad():
        ours = model_from_transformers(hf)(input_ids=ids).class_logits
        ref = hf(input_ids=ids).logits
    assert (ours - ref).abs().max() <= 1e-5


def test_the_command_line_prints_and_explains_the_classes(classifiers):
    from bertviz_lab.interventions.attribution import explain_class

    _, folder = classifiers["bert"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat sat on the mat")
    done = builders.run_cli("analyze", "the cat sat on the mat", "--model", folder, "--json", "--explain", "--no-attention")
    record = json.loads(done.stdout)
    assert [c["label"] for c in record["classes"]] == [c.label for c in a.classes]
    assert record["classes"][0]["probability"] == pytest.approx(a.classes[0].probability, abs=1e-6)
    why = record["explain_class"]
    assert why["label"] == a.classes[0].label and "explain" not in record  # no MLM head: no masked-word part
    assert why["scores"]["erasure"] == pytest.approx(explain_class(lab, a).scores["erasure"], abs=1e-5)
    other = [c.label for c in a.classes][-1]
    chosen = json.loads(builders.run_cli("analyze", "the cat sat", "--model", folder, "--json", "--explain",
                                         "--class", other, "--no-attention").stdout)["explain_class"]
    assert chosen["label"] == other
    text = builders.run_cli("analyze", "the cat sat on the mat", "--model", folder).stdout
    assert "classes: " + ", ".join(f"{c.label} {c.probability:.3f}" for c in a.classes) in text
    # printed, the class's explanation carries its faithfulness on this input, as a masked word's does
    text = builders.run_cli("analyze", "the cat sat on the mat", "--model", folder, "--explain").stdout
    erasure = why["faithfulness_on_this_input"]["erasure"]
    assert (f"erasure {erasure['aopc']:.2f}/{erasure['comprehensiveness']:.2f}/{erasure['sufficiency']:.2f}"
            in text.split("on this input, AOPC / comprehensiveness / sufficiency: ")[1])


def test_the_page_names_the_classifier_and_its_predicted_class(classifiers):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session, status_line

    _, folder = classifiers["roberta"]
    lab = load(str(folder), device="cpu")
    assert "classifier: negative, neutral, positive" in status_line(lab)
    demo = build_demo(lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    # in its own words: a classifier's predictions tab is "Classes", its button "Why this class?"
    assert ui.predictions_tab.label == "Classes" and ui.explain_btn.value.startswith("Why this class?")
    out = handlers.run.analyze(RunInput("the cat sat"), Session(model=lab.checkpoint_id, device="cpu"))
    top = lab.analyze("the cat sat").classes[0]
    assert f"Class: {top.label} (P = {top.probability:.2f})." in out[ui.message]
    assert out[ui.nsp_md].startswith(f"**Predicted class:** {top.label} {top.probability:.3f}")
    session = out[ui.session]
    drawn = handlers.views.draw_tab(session, "predictions")[ui.classes_plot]  # the bar beside the masked words
    fig = json.loads(drawn.plot)
    [bars] = fig["data"]
    assert bars["y"] == [c.label for c in session.analysis.classes]
    assert bars["x"] == pytest.approx([c.probability for c in session.analysis.classes])
    assert fig["layout"]["title"]["text"].startswith(f"Predicted class: {top.label} (P = {top.probability:.3f})")
    why = handlers.inspect.explain(session)  # nothing masked: "Why this word?" explains the predicted class
    assert f"the logit of class '{top.label}'" in why[ui.explain_message]
    drawn = json.loads(why[ui.explain_plot].plot)
    assert drawn["layout"]["title"]["text"].startswith(f"Why class '{top.label}' (P = {top.probability:.3f})")
    tokens = session.analysis.tokens  # RoBERTa's pieces: every one but <s> and </s> is scored
    assert drawn["data"][0]["x"] == [f"{i} {t}" for i, t in enumerate(tokens)][1:-1] and "erasure" in drawn["data"][0]["y"]


def test_switching_the_page_to_a_classifier_renames_its_tab_and_button(tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab, allowed_models=[tiny_lab.checkpoint_id, "sst2"])
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    assert ui.predictions_tab.label == "Masked words" and ui.explain_btn.value.startswith("Why this word?")
    out = handlers.run.switch_model("sst2", "cpu", Session(model=tiny_lab.checkpoint_id, device="cpu"),
                                    progress=lambda *a, **k: None)
    assert out[ui.predictions_tab].label == "Classes" and out[ui.explain_btn].value.startswith("Why this class?")
    back = handlers.run.switch_model(tiny_lab.checkpoint_id, "cpu", out[ui.session], progress=lambda *a, **k: None)
    assert back[ui.predictions_tab].label == "Masked words"


def test_the_notebook_draws_the_classes_most_probable_on_top(classifiers):
    import bertviz_lab

    _, folder = classifiers["distilbert"]
    lab = load(str(folder), device="cpu")
    a = lab.analyze("the cat sat")
    fig = bertviz_lab.figure(a, "classes")
    [bars] = fig.data
    assert list(bars.y) == [c.label for c in a.classes] and list(bars.x) == pytest.approx([c.probability for c in a.classes])
    assert bars.x[0] == max(bars.x) and fig.layout.xaxis.range == (0, 1)
