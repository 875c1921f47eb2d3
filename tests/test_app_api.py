"""The app's API through gradio_client, against the app launched in this process."""
import json

import numpy as np
import pandas as pd
import pytest
from conftest import call

gradio_client = pytest.importorskip("gradio_client")


def test_attention_endpoint_equals_analyze(default_app, default_lab):
    client = gradio_client.Client(default_app, verbose=False)
    text = "The bank raised the interest rate."
    result = client.predict(text, "", 5, api_name="/attention")
    expected = default_lab.analyze(text)
    assert result["tokens"] == expected.tokens
    np.testing.assert_allclose(np.array(result["attention"], dtype=np.float32), expected.attention, atol=1e-6)


def test_masked_sentence_predicts_exactly_the_masked_positions(tiny_app, tiny_lab):
    client = gradio_client.Client(tiny_app, verbose=False)
    table = call(client, "analyze", "the [MASK] sat on the [MASK]", "", 3)["pred_table"]
    positions = sorted({row[0] for row in table["data"]})
    assert positions == [2, 6]
    expected = tiny_lab.analyze("the [MASK] sat on the [MASK]", top_k=3)
    got = [(row[0], row[3]) for row in table["data"]]
    assert got == [(p.position, q.token) for p in expected.mlm for q in p.predictions]


def test_masked_words_view_shows_the_mlm_lens(tiny_app, tiny_lab):
    import json

    from bertviz_lab.lens import mlm_lens

    client = gradio_client.Client(tiny_app, verbose=False)
    call(client, "analyze", "the [MASK] sat on the mat", "", 3)
    out = call(client, "sync_view", 1, 1, False, False, "all", "attention", "predictions")
    figure = json.loads(out["lens_plot"]["plot"])
    [lens] = mlm_lens(tiny_lab, tiny_lab.analyze("the [MASK] sat on the mat", top_k=3), top_k=3)
    assert figure["layout"]["title"]["text"].startswith("MLM lens at position 2")
    trace = figure["data"][0]
    assert trace["y"] == [f"layer {r.layer} (answer #{r.final_rank})" for r in lens.layers]
    assert [t.replace("<b>", "").replace("</b>", "") for t in trace["text"][-1]] == lens.layers[-1].tokens


def test_bad_input_gives_a_message_and_the_app_keeps_serving(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    def message(text):
        return call(client, "analyze", text, "", 5)["message"]

    assert "empty" in message("   ")
    assert "too many masked" in message("[MASK] [MASK] [MASK] cat")
    long = message("the " * 100)
    assert "102 tokens" in long and "truncated to 64" in long
    assert message("the cat sat") == "5 tokens."


def test_unknown_model_is_a_message(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    assert "not enabled on this server" in call(client, "load_model", "no-such/model", "cpu")["message"]


def test_switching_model_clears_every_view_of_the_old_one(tiny_app, tiny_lab):
    client = gradio_client.Client(tiny_app, verbose=False)
    assert call(client, "analyze", "the cat sat", "", 5)["payload"]["labels"][1] == "1 the"
    out = call(client, "load_model", tiny_lab.checkpoint_id, "cpu")
    assert "Press Run" in out["message"] and out["payload"] is None  # the page clears its heatmap and head view
    assert out["picker"]["choices"] == [] and out["pred_table"]["data"] in ([], [[]])
    for name in ("overview_plot", "aggregates_plot", "summary_plot", "pred_plot", "lens_plot"):
        assert "Press Run" in out[name]["plot"], name  # no stale figure of the previous input
    for name in ("intervention_plot", "offsets_plot", "js_plot", "ablation_plot", "positions_plot", "patch_plot"):
        assert out[name] is None, name  # interventions of the old model: emptied (the page hides empty plots)
    assert out["intervention_message"].startswith("Results appear here")
    skipped = call(client, "sync_view", 1, 1, False, False, "all", "attention", "aggregates")["notes"]
    assert skipped == {"__type__": "update"}  # nothing to draw, and no error


def test_model_that_cannot_be_loaded_is_a_message(tiny_lab, tmp_path):
    from conftest import launch

    from bertviz_lab.app import build_demo

    demo = build_demo(tiny_lab, allow_any_model=True)
    url = launch(demo)
    try:
        client = gradio_client.Client(url, verbose=False)
        message = call(client, "load_model", str(tmp_path / "missing"), "cpu")["message"]
        assert "Could not load the model" in message and "no such folder" in message
        assert call(client, "analyze", "the cat", "", 5)["message"] == "4 tokens."
    finally:
        demo.close()


def test_directional_intervention_and_sweep_through_the_api(sharp_app, sharp_lab):
    from bertviz_lab.interventions import compare, make_intervention

    client = gradio_client.Client(sharp_app, verbose=False)
    text = "the big cat [MASK] on the red mat"
    out = call(client, "intervention", text, "", 5, "left-only", [], "1-1", 0, 0)
    message, table = out["intervention_message"], out["intervention_changes"]
    expected = compare(sharp_lab, text, make_intervention("left-only"))
    assert f"{float(expected.js.mean()):.4f}" in message
    assert table["data"][0][0] == 4
    assert table["data"][0][4] == pytest.approx(round(expected.changes[0].intervened_probability, 4))
    swept = call(client, "directional_sweep", text, "", [])
    sweep = swept["direction_table"]
    assert sweep["headers"][4:] == ["p both", "p left only", "p right only", "p left control", "p right control"]
    row = dict(zip(sweep["headers"], sweep["data"][0]))
    assert row["scored"] == "top-1"  # a typed [MASK]: no gold word, the full-context top-1 is scored
    assert row["p left only"] == pytest.approx(round(expected.changes[0].intervened_probability, 4))
    bars = json.loads(swept["direction_plot"]["plot"])["data"]  # the same five probabilities, as a chart
    assert [b["name"].split(" (")[0] for b in bars] == ["both sides", "left only", "right only", "left control",
                                                         "right control"]
    assert [round(b["y"][0], 4) for b in bars] == [row[c] for c in sweep["headers"][4:]]
    assert bars[0]["x"][0] == f"4 [MASK] → {row['target']}"


def test_positional_intervention_and_position_inspector_through_the_api(sharp_app, sharp_lab):
    import json

    from bertviz_lab.interventions import compare, make_intervention

    client = gradio_client.Client(sharp_app, verbose=False)
    text = "the big cat [MASK] on the red mat"
    out = call(client, "intervention", text, "", 5, "shift-positions", [], "1-1", 7, 0)
    expected = compare(sharp_lab, text, make_intervention("shift-positions", shift=7))
    message = out["intervention_message"]
    assert "shift-positions by 7" in message and f"{float(expected.js.mean()):.4f}" in message
    js = json.loads(out["js_plot"]["plot"])
    assert js["data"][0]["type"] == "heatmap"
    positions = call(client, "position_embeddings", 12)
    assert "first 12 positions" in positions["positions_message"]
    traces = json.loads(positions["positions_plot"]["plot"])["data"]
    assert len(traces) == 2 and traces[0]["z"]["shape"] == "12, 12"
    bad = call(client, "intervention", text, "", 5, "shift-positions", [], "1-1", 500, 0)["intervention_message"]
    assert bad.startswith("⚠️") and "shift" in bad


def test_score_heads_and_sentence_arcs_through_the_api(sharp_app, sharp_lab, tmp_path):
    from bertviz_lab.figures.syntax import ANSWER_COLUMNS
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.syntax.summary import Settings, summarise
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    client = gradio_client.Client(sharp_app, verbose=False)
    out = call(client, "score_heads", "sample", None, False, False)
    sentences = read_conllu(SAMPLE_TREEBANK)
    assert f"Scored {len(sentences)} sentences" in out["syntax_message"]
    assert sharp_lab.checkpoint_info().sha256[:12] in out["syntax_weights"]  # the table names its weights
    expected = summarise(score_treebank(sharp_lab, sentences), settings=Settings(min_arcs=10)).best_heads
    table = out["syntax_table"]  # one short row per relation in plain headers: held-out figures and a verdict
    assert table["headers"] == list(ANSWER_COLUMNS)
    column = table["headers"].index
    assert [row[column("relation")] for row in table["data"]] == list(expected.relation)
    heads = [f"layer {h.split('-')[0]}, head {h.split('-')[1]} ({d})"
             for h, d in zip(expected.heldout_head, expected.heldout_direction)]
    assert [row[column("best head (chosen on half the sentences)")] for row in table["data"]] == heads
    accuracy = column("its accuracy on the other half [95% interval]")
    assert [row[accuracy] for row in table["data"]] == [f"{a:.2f} [{lo:.2f}, {hi:.2f}]" for a, lo, hi in zip(
        expected.heldout_accuracy, expected.heldout_ci_low, expected.heldout_ci_high)]
    full = pd.read_csv(out["syntax_csv"])  # every column, one click away
    assert list(full.relation) == list(expected.relation) and list(full.best_head) == list(expected.best_head)
    assert np.allclose(full.ci_low, expected.ci_low, atol=1e-6)
    arcs = call(client, "syntax_arcs", 0, 2, 3)
    assert "Layer 2, head 3 recovers" in arcs["syntax_arcs_text"] and "**nsubj**: sat → cat" in arcs["syntax_arcs_text"]  # head → dependent
    # an uploaded file that is not CoNLL-U gives a message, not a crash
    bad = tmp_path / "bad.conllu"
    bad.write_text("this is not a treebank\n")
    message = call(client, "score_heads", "upload", gradio_client.handle_file(str(bad)), False, False)["syntax_message"]
    assert message.startswith("⚠️") and "bad.conllu:1:" in message


def test_structural_probe_needs_probes_trained_on_these_weights(sharp_app):
    client = gradio_client.Client(sharp_app, verbose=False)
    out = call(client, "structural_probe", "sample", None, False)
    assert out["structure_message"].startswith("⚠️ bertviz-lab ships structural probes only for minilm-original")
    assert "probes are tied to the exact weights" in out["structure_message"] and out["structure_plot"] is None


@pytest.mark.slow
def test_structural_probe_beside_attention_trees_in_the_app(default_app, minilm_lab):
    from bertviz_lab.syntax.structure import StructureSettings, StructureTreebanks, run_structure, shipped_probes
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    client = gradio_client.Client(default_app, verbose=False)
    out = call(client, "structural_probe", "sample", None, False, True)
    assert minilm_lab.checkpoint_info().sha256[:12] in out["structure_message"]  # the published weights, named
    expected = run_structure(minilm_lab, StructureTreebanks(read_conllu(SAMPLE_TREEBANK)),
                             StructureSettings(perturbed_masking=True), trained=shipped_probes(minilm_lab))
    for line in expected.conclusions:  # the page says what the paired intervals support
        assert line.replace("->", "-&gt;")[:60] in out["structure_message"] or line[:60] in out["structure_message"]
    traces = {t["name"]: t for t in json.loads(out["structure_plot"]["plot"])["data"]}
    probe = traces["structural probe (representations)"]
    rows = expected.comparison[expected.comparison.method == "structural probe"].sort_values("layer")
    assert probe["x"] == rows.layer.tolist() and probe["y"] == pytest.approx(rows.uuas.tolist())
    masking = traces["perturbed masking (no probe; Eisner, gold root)"]  # Perturbed Masking's trees, beside them
    rows = expected.comparison[expected.comparison.method == "perturbed masking tree"].sort_values("layer")
    assert masking["x"] == list(range(1, 7)) and masking["y"] == pytest.approx(rows.uuas.tolist())
    assert "the perturbed-masking tree at layer" in out["structure_message"]
    # the shipped control-task probes (Hewitt & Liang) come with the shipped probes: selectivity is on the page
    assert sorted(shipped_probes(minilm_lab)["control/distance"]) == list(range(1, 7))
    assert len(expected.selectivity) and "on the control task" in out["structure_message"]


def test_views_switch_to_norm_based_attention(tiny_app, tiny_lab):
    import json
    import urllib.request

    from bertviz_lab.attention.sources import with_source
    from bertviz_lab.figures.payload import dequantise

    client = gradio_client.Client(tiny_app, verbose=False)
    text = "the big cat sat on the mat"
    assert call(client, "analyze", text, "", 5)["source"] == "attention"
    out = call(client, "attention_source", 2, 3, False, False, "all", "norm")
    payload = out["payload"]  # what the page draws the single head and the head view from
    assert (payload["layer"], payload["head"], payload["source_label"]) == (1, 2, " (norm)")
    expected = with_source(tiny_lab, tiny_lab.analyze(text), "norm").attention
    with urllib.request.urlopen(tiny_app.rstrip("/") + "/" + payload["codes_url"]) as reply:  # as the page fetches it
        codes = reply.read()
    np.testing.assert_allclose(dequantise(payload, codes), expected, atol=float(expected.max()) / 65535)
    assert any("Kobayashi" in note for note in payload["notes"])
    assert "plot" not in (out["aggregates_plot"] or {})  # the Aggregates tab is not open: nothing drawn for it
    aggregates = json.loads(call(client, "sync_view", 2, 3, False, False, "all", "norm", "aggregates")
                            ["aggregates_plot"]["plot"])
    names = [a["text"] for a in aggregates["layout"]["annotations"]]
    assert any("norm of layer 2" in n for n in names) and any("flow up to layer 2" in n for n in names)
    # a new Run goes back to softmax attention
    assert call(client, "analyze", text, "", 5)["source"] == "attention"


def test_faithfulness_panel_through_the_api(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    out = call(client, "faithfulness", 10)
    table = out["faith_table"]
    rankings = [row[table["headers"].index("ranking")] for row in table["data"]]
    assert set(rankings) >= {"random", "rollout", "flow", "norm (last layer)"}
    assert "Faithfulness of each explanation" in out["faith_message"]


TEXT_MASKED = "the big cat [MASK] on the red mat"


def test_position_controls_list_each_intervention_with_its_control(sharp_app):
    client = gradio_client.Client(sharp_app, verbose=False)
    controls = call(client, "position_controls", TEXT_MASKED, "", [], 5)
    interventions = [row[0] for row in controls["controls_table"]["data"]]
    assert interventions[:3] == ["zero-positions", "sinusoidal-positions", "random-positions"]


@pytest.mark.parametrize("sinks, said", [("strict", "strict masks"), ("symmetric", "symmetric sinks")])
def test_directional_sweep_says_which_sink_treatment_ran(sharp_app, sinks, said):
    client = gradio_client.Client(sharp_app, verbose=False)
    assert said in call(client, "directional_sweep", TEXT_MASKED, "", [], sinks)["direction_message"]


def test_patching_through_the_api_reports_the_library_values(sharp_app, sharp_lab):
    from bertviz_lab.interventions.sweeps import patching_sweep

    client = gradio_client.Client(sharp_app, verbose=False)
    donor = "the big dog [MASK] on the red mat"
    patched = call(client, "patching", TEXT_MASKED, donor, "the", "mat")
    expected = patching_sweep(sharp_lab, TEXT_MASKED, donor, "the", "mat")
    assert f"target {expected.baseline:+.2f}, donor {expected.donor:+.2f}" in patched["patch_message"]


def test_mean_ablation_through_the_api(sharp_app):
    client = gradio_client.Client(sharp_app, verbose=False)
    ablation = call(client, "intervention", TEXT_MASKED, "", 5, "ablate-heads", [], "1-1", 0, 0, "symmetric", "words",
                    "mean")
    assert "ablate-heads heads 1-1 (mean)" in ablation["intervention_message"]


def test_sets_through_the_api(sharp_app, sharp_lab, tmp_path):
    from bertviz_lab.interventions import make_intervention
    from bertviz_lab.interventions.sets import SetSettings, compare_set
    from bertviz_lab.treebank import sentence_texts

    client = gradio_client.Client(sharp_app, verbose=False)
    uploaded = tmp_path / "mine.txt"
    uploaded.write_text("the big cat sat on the red mat\na small dog ran to the park\nthe bird sang in a tree\n")
    out = call(client, "directional_set", 20, "symmetric", "upload", gradio_client.handle_file(str(uploaded)))
    rows = {row[0]: row for row in out["direction_set_table"]["data"]}
    assert set(rows) == {"both", "left-only", "right-only", "left-only-control", "right-only-control"}
    assert rows["both"][-1] == 3  # n: every uploaded sentence
    out = call(client, "intervention_set", "sinusoidal-positions", "1-1", 0, 0, "symmetric", "words", "zero", 20, "sample",
               None)
    expected = compare_set(sharp_lab, sentence_texts(), make_intervention("sinusoidal-positions"),
                           settings=SetSettings(max_sentences=20))
    table = {row[0]: row for row in out["intervention_set_table"]["data"]}
    assert table["mean JS (nats)"][1] == pytest.approx(round(float(expected.effects["mean JS (nats)"].mean), 4))
    ablation = call(client, "ablation_set", 20, "mean", "sample", None)
    assert "mean ablation, gold word scored" in ablation["ablation_set_message"]


def test_value_zeroing_source_through_the_api(tiny_app, tiny_lab):
    import urllib.request

    from bertviz_lab.attention.sources import with_source
    from bertviz_lab.figures.payload import dequantise

    client = gradio_client.Client(tiny_app, verbose=False)
    text = "the big cat sat on the mat"
    call(client, "analyze", text, "", 5)
    payload = call(client, "attention_source", 2, 3, False, False, "all", "value-zeroing")["payload"]
    assert payload["source_label"] == " (value-zeroing)"
    expected = with_source(tiny_lab, tiny_lab.analyze(text), "value-zeroing").attention
    with urllib.request.urlopen(tiny_app.rstrip("/") + "/" + payload["codes_url"]) as reply:
        codes = reply.read()
    np.testing.assert_allclose(dequantise(payload, codes), expected, atol=float(expected.max()) / 65535)
    assert any("Mohebbi" in note for note in payload["notes"])


def test_explain_attributes_the_prediction_and_rates_the_sources(tiny_app, tiny_lab):
    import json

    from bertviz_lab.interventions.attribution import explain

    client = gradio_client.Client(tiny_app, verbose=False)
    assert "press Run first" in call(client, "explain")["explain_message"]
    text = "the big cat [MASK] on the red mat"
    call(client, "analyze", text, "", 5)
    out = call(client, "explain")
    [expected] = explain(tiny_lab, tiny_lab.analyze(text))
    figure = json.loads(out["explain_plot"]["plot"])
    assert figure["layout"]["title"]["text"].startswith(f"Why '{expected.target}' at position 4")
    np.testing.assert_allclose(figure["data"][0]["customdata"][0], expected.scores["erasure"], atol=1e-4)
    rows = {row[0]: row[1] for row in out["explain_table"]["data"]}
    # every ranking is in the table; rankings that score exactly alike (the same token order) share one row
    named = [name for row in rows for name in row.split(" = ")]
    assert sorted(named) == sorted(expected.agreement)
    for row, rho in rows.items():
        assert {round(expected.agreement[name], 3) for name in row.split(" = ")} == {rho}
    assert "share a row" in out["explain_message"]
    call(client, "analyze", "the big cat sat", "", 5)
    assert "mask a token first" in call(client, "explain")["explain_message"]


def test_the_shipped_head_says_how_far_to_trust_it(default_app, tiny_app):
    import json

    from bertviz_lab.resources import DEFAULT_MLM_HEAD

    held = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["heldout"]["natural_english"]
    note = call(gradio_client.Client(default_app, verbose=False), "analyze", "Paris is the [MASK] of France.", "", 5)
    assert f"first {held['top1']:.0%} of the time and among its five best guesses {held['top5']:.0%} of the time" \
        in note["nsp_md"]
    assert "--model bert-base-uncased" in note["nsp_md"]
    other = call(gradio_client.Client(tiny_app, verbose=False), "analyze", "the [MASK] sat", "", 5)
    assert "small embedded model" not in (other["nsp_md"] or "")  # only the shipped head's own figures


def test_the_views_offer_every_registered_source_and_refuse_what_they_cannot_draw(tiny_app, tiny_lab):
    """The page's source choice is the registry's (rollout and flow included); a source the lab cannot
    compute here is refused in one sentence and the views keep what they showed (never a silent swap)."""
    import urllib.request

    from bertviz_lab.attention.sources import source_names, with_source
    from bertviz_lab.figures.payload import dequantise

    client = gradio_client.Client(tiny_app, verbose=False)
    radio = next(c for c in client.config["components"] if c.get("props", {}).get("elem_id") == "source")
    assert [value for _, value in radio["props"]["choices"]] == list(source_names())
    text = "the big cat sat on the mat"
    call(client, "analyze", text, "", 5)
    payload = call(client, "attention_source", 2, 3, False, False, "all", "rollout")["payload"]
    assert payload["source_label"] == " (rollout)" and any("Abnar" in note for note in payload["notes"])
    expected = with_source(tiny_lab, tiny_lab.analyze(text), "rollout").attention
    with urllib.request.urlopen(tiny_app.rstrip("/") + "/" + payload["codes_url"]) as reply:
        np.testing.assert_allclose(dequantise(payload, reply.read()), expected, atol=float(expected.max()) / 65535)
    call(client, "analyze", " ".join(["cat"] * 50), "", 5)  # 52 tokens: attention flow runs on at most 48
    refused = call(client, "attention_source", 1, 1, False, False, "all", "flow")
    assert refused["notes"].startswith("⚠️ attention flow") and "48 tokens" in refused["notes"]
    assert refused["notes"].endswith("; the views still show attention.")
    assert refused["payload"] == {"__type__": "update"}  # the page keeps drawing what it drew
    aggregates = json.loads(call(client, "sync_view", 1, 1, False, False, "all", "attention", "aggregates")
                            ["aggregates_plot"]["plot"])  # drawn from softmax attention, as before the refusal
    assert [a["text"] for a in aggregates["layout"]["annotations"]][1:] == [
        "<b>mean of layer 1</b>", "<b>mean over layers</b>", "<b>rollout up to layer 1</b>"]


def test_a_source_the_registry_does_not_know_is_refused_not_replaced(tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput, ViewControls
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    handlers.run.analyze(RunInput("the cat sat"), session)
    out = handlers.views.switch_source(ViewControls(), session, "no-such-source")
    assert out[ui.notes].startswith("⚠️ unknown attention source 'no-such-source'; choose one of attention, norm")
    assert session.source == "attention" and ui.payload not in out
    assert handlers.views.switch_source(ViewControls(layer=2), session, "norm")[ui.payload]["source_label"] == " (norm)"
    assert session.source == "norm" and session.options.layer == 1


def test_api_callers_keep_their_positions_and_the_old_tab_id(tiny_app, tiny_lab):
    """An event's API takes one value per control in the page's order, named after the control."""
    client = gradio_client.Client(tiny_app, verbose=False)
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    names = {api: [p["parameter_name"] for p in endpoints[f"/{api}"]["parameters"]]
             for api in ("intervention", "intervention_set", "score_heads", "sync_view", "mask_tokens", "load_model",
                         "patching", "directional_set")}
    assert names == {
        "intervention": ["text", "pair", "top_k", "kind", "picked", "heads", "shift", "seed", "sinks", "unit", "ablation"],
        "intervention_set": ["kind", "heads", "shift", "seed", "sinks", "unit", "ablation", "n", "sentence_set", "upload"],
        "score_heads": ["treebank", "upload", "use_loaded", "compare", "score_source"],
        "sync_view": ["layer", "head", "hide", "word", "pair_filter", "source", "tab", "scale"],  # scale: added last
        "mask_tokens": ["text", "pair", "top_k", "chosen", "layer", "head", "hide", "word", "pair_filter", "scale"],
        "load_model": ["checkpoint", "device_name"], "patching": ["text", "donor", "correct", "wrong"],
        "directional_set": ["n", "sinks", "sentence_set", "upload"]}
    call(client, "analyze", TEXT_MASKED, "", 5)
    out = call(client, "intervention", TEXT_MASKED, "", 5, "shift-positions", [], "1-1", 3, 0)
    assert "shift-positions by 3" in out["intervention_message"] and "plot" in out["intervention_plot"]
    drawn = call(client, "sync_view", 2, 1, False, False, "all", "attention", "interventions")["intervention_plot"]
    assert json.loads(drawn["plot"])["layout"]["title"]["text"].startswith("Layer 2, head 1")


# Every endpoint's parameter names, in order: the public API gradio_client callers script against. A controller's
# event handler takes these as its own parameters (no adapter rebuilds them), so a renamed parameter shows here.
API_PARAMETERS = {
    "ablation_set": ["n", "ablation", "sentence_set", "upload"],
    "ablation_sweep": ["text", "pair", "picked", "ablation"],
    "agent_analyze": ["text", "pair", "parse", "attention", "model"],
    "agent_explain": ["text", "label", "model"],
    "agent_predict_masked": ["text", "top_k", "model"],
    "agent_run_recipe": ["recipe"],
    "agent_score_heads": ["treebank", "source"],
    "analyze": ["text", "pair", "top_k", "layer", "head", "hide", "word", "pair_filter", "scale"],
    "analyze_example": ["text", "pair", "top_k", "layer", "head", "hide", "word", "pair_filter", "scale"],
    "analyze_submit": ["text", "pair", "top_k", "layer", "head", "hide", "word", "pair_filter", "scale"],
    "attention": ["text", "pair", "top_k"],
    "attention_source": ["layer", "head", "hide", "word", "pair_filter", "source", "scale"],
    "clear_set_results": [],
    "clear_set_results_size": [],
    "clear_set_results_upload": [],
    "colour_scale": ["layer", "head", "hide", "word", "pair_filter", "source", "tab", "scale"],
    "directional_set": ["n", "sinks", "sentence_set", "upload"],
    "directional_sweep": ["text", "pair", "picked", "sinks"],
    "explain": [],
    "export_csv": [],
    "export_npz": [],
    "recipe": ["result"],
    "recipe_of_result": ["result"],
    "faithfulness": ["n"],
    "from_url": [],
    "head_similarity": ["which"],
    "hide_special": ["layer", "head", "hide", "word", "pair_filter", "source", "scale"],
    "intervention": ["text", "pair", "top_k", "kind", "picked", "heads", "shift", "seed", "sinks", "unit", "ablation"],
    "intervention_controls": ["kind"],
    "intervention_set": ["kind", "heads", "shift", "seed", "sinks", "unit", "ablation", "n", "sentence_set", "upload"],
    "load_model": ["checkpoint", "device_name"],
    "mask_tokens": ["text", "pair", "top_k", "chosen", "layer", "head", "hide", "word", "pair_filter", "scale"],
    "neuron_view": ["layer", "head", "token"],
    "patching": ["text", "donor", "correct", "wrong"],
    "pick_head": ["value"],
    "position_controls": ["text", "pair", "picked", "shift"],
    "position_embeddings": ["n"],
    "positions_lesson": ["twins", "text", "layer", "head"],
    "qk_space": ["layer", "head", "which", "color_by", "method"],
    "score_heads": ["treebank", "upload", "use_loaded", "compare", "score_source"],
    "score_parts": ["layer", "head"],
    "search_tokens": ["position", "layer", "head", "kind", "heads"],
    "select_tab": ["layer", "head", "hide", "word", "pair_filter", "source", "scale"],
    "select_work_tab": ["layer", "head", "hide", "word", "pair_filter", "source", "scale"],
    "structural_probe": ["treebank", "upload", "use_loaded", "perturbed_masking"],
    "sync_view": ["layer", "head", "hide", "word", "pair_filter", "source", "tab", "scale"],
    "parse_sentence": ["text", "layer", "head"],
    "syntax_arcs": ["index", "layer", "head"],
    "syntax_direction": ["relation", "direction"],
    "syntax_relation": ["relation", "direction"],
    "syntax_sentence": ["index", "layer", "head"],
    "word_level": ["layer", "head", "hide", "word", "pair_filter", "source", "scale"],
}


def test_every_endpoint_keeps_its_parameter_names_in_order(tiny_lab):
    from bertviz_lab.app import build_demo

    endpoints = build_demo(tiny_lab).get_api_info()["named_endpoints"]
    got = {name.lstrip("/"): [p["parameter_name"] for p in e["parameters"]] for name, e in endpoints.items()}
    expected = {**API_PARAMETERS}
    if "positions_lesson" not in got:  # without shipped twins (a checkout without assets/twins) the tab is absent
        expected.pop("positions_lesson")
    assert got == expected


def test_every_event_names_a_handler_its_controller_has_with_one_parameter_per_input(tiny_lab):
    """The event table and the controllers agree: each "controller.method" exists, and takes exactly the event's
    inputs (plus what Gradio injects: progress, the event data)."""
    import inspect

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.events import EVENTS, method_of

    controllers = build_demo(tiny_lab).bvl_controllers
    for event in EVENTS:
        owner, name = method_of(controllers, event.handler)
        parameters = [p for p in inspect.signature(getattr(owner, name)).parameters.values()
                      if p.name not in ("progress", "evt")]
        assert len(parameters) == len(event.inputs), (event.api_name, [p.name for p in parameters], event.inputs)


def test_a_run_sends_control_properties_only_when_they_change(tiny_lab):
    """Gradio rebuilds a component for every property update, so a Run sends the token choices, the slider
    maxima and the views' un-greying only when the page holds something else."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    handlers = build_demo(tiny_lab).bvl_controllers
    ui = handlers.page.ui
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    first = handlers.run.analyze(RunInput("the cat sat"), session)
    assert [label for label, _ in first[ui.picker]["choices"]] == ["1 the", "2 cat", "3 sat"]
    assert first[ui.layer] == {"__type__": "update", "maximum": tiny_lab.n_layers, "value": 1}
    assert first[ui.views_box] == {"__type__": "update", "elem_classes": []}
    again = handlers.run.analyze(RunInput("the cat sat"), session)  # the same tokens and model: plain values
    assert again[ui.picker] == [] and again[ui.search_token] is None and again[ui.layer] == again[ui.head] == 1
    assert ui.views_box not in again
    other = handlers.run.analyze(RunInput("a dog ran"), session)  # new tokens: new choices, the same maxima
    assert [label for label, _ in other[ui.picker]["choices"]] == ["1 a", "2 dog", "3 ran"]
    assert other[ui.search_token]["choices"] == other[ui.picker]["choices"] and other[ui.layer] == 1
    refused = handlers.run.analyze(RunInput("   "), session)
    assert refused[ui.views_box] == {"__type__": "update", "elem_classes": ["bvl-stale"]}
    assert handlers.run.analyze(RunInput("a dog ran"), session)[ui.views_box] == {"__type__": "update", "elem_classes": []}
    # greyed, then a model switch (no analysis) and a second refusal that greys nothing: the page is still grey,
    # so the next Run that succeeds un-greys it
    handlers.run.analyze(RunInput("   "), session)
    handlers.run.switch_model(tiny_lab.checkpoint_id, "cpu", session, progress=lambda *a, **k: None)
    assert ui.views_box not in handlers.run.analyze(RunInput("   "), session)
    back = handlers.run.analyze(RunInput("a dog ran"), session)
    assert back[ui.views_box] == {"__type__": "update", "elem_classes": []} and "choices" in back[ui.picker]
    # a refusal by the gate may come after a handler noted controls as sent (e.g. the lens pass over the budget):
    # the session forgets them, so the next Run sends every property again
    demo = build_demo(tiny_lab)
    gate, session = demo.bvl_gate, Session(model=tiny_lab.checkpoint_id, device="cpu")
    handlers.run.analyze(RunInput("a dog ran"), session)
    gate.refused((session,), {}, ("message", "views_box"), "over the budget")
    again = handlers.run.analyze(RunInput("a dog ran"), session)
    assert again[ui.layer]["maximum"] == tiny_lab.n_layers and again[ui.views_box]["elem_classes"] == []


def test_only_the_page_opening_knows_the_views_drawn_on_request_are_empty(tiny_lab):
    """A new session may replace one that expired while its page still shows results, so its first Run clears
    them; the page's opening (from_url) knows they are empty and sends no such updates."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    handlers = build_demo(tiny_lab).bvl_controllers
    ui = handlers.page.ui
    first = handlers.run.analyze(RunInput("the cat sat"), Session(model=tiny_lab.checkpoint_id, device="cpu"))
    assert first[ui.explain_plot] is None and ui.neuron_html in first
    opened = handlers.run.from_url(Session(model=tiny_lab.checkpoint_id, device="cpu"), None)
    assert ui.payload in opened and ui.explain_plot not in opened and ui.neuron_html not in opened


def test_the_open_heads_codes_travel_inside_the_reply_up_to_the_limit_then_in_a_file_of_their_own(default_lab,
                                                                                                monkeypatch):
    """Up to INLINE_HEAD_MAX the page draws the open head from the reply itself (no second request before the
    first pixels): every input a BERT takes, 512 tokens at 8 bits included; above it (a long-context model's
    input; here a lowered limit) the open head comes as a small file before every head's."""
    import base64

    from bertviz_lab.app import build_demo
    from bertviz_lab.app import view_controller as controller_module
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    handlers = build_demo(default_lab).bvl_controllers
    ui = handlers.page.ui
    for words, limit, bits, inline in ((12, None, 16, True), (600, None, 8, True), (200, 64 * 1024, 16, False)):
        if limit is not None:
            monkeypatch.setattr(controller_module, "INLINE_HEAD_MAX", limit)
        session = Session(model=default_lab.checkpoint_id, device="cpu")
        p = handlers.run.analyze(RunInput(" ".join(["cat"] * words), top_k=1), session)[ui.payload]
        n = len(p["labels"])
        size = n * n * bits // 8  # one head's codes
        assert p["bits"] == bits and p["head_bytes"] == size and (size <= controller_module.INLINE_HEAD_MAX) is inline
        if inline:
            assert "head_url" not in p
            first = np.frombuffer(base64.b64decode(p["head_codes"]), dtype="<u2" if bits == 16 else np.uint8)
            weights = session.analysis.attention[0, 0]  # the open head: layer 1, head 1
            np.testing.assert_allclose(first.reshape(n, n) * p["scales"][0][0] / (2 ** bits - 1), weights,
                                       atol=1e-4 if bits == 16 else 2e-3)
        else:
            assert "head_codes" not in p and p["head_url"].startswith("bvl-codes/")


def test_parse_sentence_draws_the_parsers_arcs_and_every_heads_agreement(tiny_app, tiny_lab):
    from bertviz_lab.syntax.live_parser import parse_text
    from bertviz_lab.syntax.scoring import sentence_word_attention
    from bertviz_lab.syntax.sentence_agreement import head_agreement

    client = gradio_client.Client(tiny_app, verbose=False)
    text = "The keys to the cabinet are on the table."
    out = call(client, "parse_sentence", text, 2, 1)
    message = out["syntax_parse_message"]
    assert "a parser's arcs, not gold" in message and "UD English EWT test" in message
    assert "Layer 2, head 1 recovers" in message and "**cop**: table → are" in message  # converted: the noun heads
    arcs = json.loads(out["syntax_parse_arcs"]["plot"])
    assert "the parser's arcs (above)" in arcs["layout"]["title"]["text"]
    sentence = parse_text(text)
    shares, _ = head_agreement(sentence, sentence_word_attention(tiny_lab, sentence)[0])
    trace = json.loads(out["syntax_parse_agreement"]["plot"])["data"][1]  # the head->dep panel
    z = np.frombuffer(__import__("base64").b64decode(trace["z"]["bdata"]), dtype=trace["z"]["dtype"])
    np.testing.assert_allclose(z.reshape(shares["head->dep"].shape), shares["head->dep"], atol=1e-6)
    assert call(client, "parse_sentence", "   ", 1, 1)["syntax_parse_message"].startswith("⚠️")


def test_copy_as_recipe_gives_each_result_its_own_settings_and_the_command_line_reruns_it(sharp_app, sharp_lab,
                                                                                            tmp_path, capsys):
    import json

    from bertviz_lab.cli import main

    client = gradio_client.Client(sharp_app, verbose=False)
    empty = call(client, "recipe", None)
    assert "No result yet" in empty["recipe_note"] and empty["recipe_code"] == ""
    call(client, "analyze", "the cat sat on the [MASK] today", "", 3)
    page_set = call(client, "intervention_set", "shuffle-words", "", 0, 7, "symmetric", "words", "zero", 20, "sample",
                    None)
    call(client, "analyze", "a dog ran to the park", "", 5)  # a later Run changes no earlier result's recipe
    latest = call(client, "recipe", None)
    assert latest["recipe_choice"]["value"] == "the analysed input"
    assert [c[0] for c in latest["recipe_choice"]["choices"]] == ["the analysed input",
                                                                 "the intervention over a sentence set"]
    assert json.loads(latest["recipe_code"])["inputs"] == {"text": "a dog ran to the park"}
    chosen = call(client, "recipe_of_result", "the intervention over a sentence set")
    recipe = json.loads(chosen["recipe_code"])
    assert recipe["action"] == "compare" and recipe["seeds"]["seed"] == 7 and recipe["settings"]["sample"] is True
    assert recipe["checkpoint"]["sha256"] == sharp_lab.checkpoint_info().sha256
    path = tmp_path / "recipe.json"
    path.write_text(chosen["recipe_code"])
    capsys.readouterr()
    assert main(["run", str(path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    table = {row[0]: row for row in page_set["intervention_set_table"]["data"]}
    assert table["mean JS (nats)"][1] == pytest.approx(round(cli["mean JS (nats)"]["mean"], 4))
    assert table["mean JS (nats)"][-1] == cli["mean JS (nats)"]["n"] == 20


def test_opening_the_export_tab_lists_the_visits_results_before_copy_as_recipe(tiny_lab):
    """The Result list of "Copy as recipe" holds this visit's results as soon as the Export tab opens (it was
    empty until the button was pressed once); another tab's opening leaves it alone."""
    from types import SimpleNamespace

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.state import Session

    handlers = build_demo(tiny_lab).bvl_controllers
    ui, session = handlers.page.ui, Session(model=tiny_lab.checkpoint_id, device="cpu")
    handlers.run.analyze(RunInput("the cat sat"), session)
    opened = handlers.views.select_tab(1, 1, False, False, "all", session, evt=SimpleNamespace(_data={"value": "Export"}))
    assert opened[ui.recipe_choice]["choices"] == ["the analysed input"]
    other = handlers.views.select_tab(1, 1, False, False, "all", session, evt=SimpleNamespace(_data={"value": "Syntax"}))
    assert ui.recipe_choice not in other
