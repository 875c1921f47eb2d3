"""Issue 44, deliverable 6: the agent door. Four typed tools (analyze, predict_masked, explain,
score_heads) that return what the library computes, go through the public gate, and are the only
tools an MCP client sees when the app runs with ``--mcp``."""
import asyncio
import importlib.util
import json
import re
import urllib.request
import warnings
from dataclasses import replace

import gradio as gr
import numpy as np
import pytest

from bertviz_lab.app.agent_tools import TOOLS, AgentTools
from bertviz_lab.app.ports import free_port

TEXT = "the cat [MASK] on the mat"
CAP_TOKENS, CAP_MASKS = 24, 4  # the public limits below (the tiny model takes up to 64 tokens)
HAS_MCP = importlib.util.find_spec("mcp") is not None


def public_limits():
    from bertviz_lab.app.state import Limits

    return replace(Limits.public(), max_tokens=CAP_TOKENS, max_masks=CAP_MASKS)


def sig(value: float) -> float:
    return float(f"{value:.4g}")


@pytest.fixture(scope="module")
def tools(tiny_lab):
    return AgentTools(tiny_lab)


# ---- the tools return the library's values --------------------------------------------------------------
def test_analyze_returns_the_labs_tokens_predictions_and_head_statistics(tools, tiny_lab):
    from bertviz_lab.attention.metrics import head_statistics

    out = tools.analyze(TEXT, "")
    a = tiny_lab.analyze(TEXT)
    assert out["tokens"] == a.tokens == ["[CLS]", "the", "cat", "[MASK]", "on", "the", "mat", "[SEP]"]
    assert (out["layers"], out["heads"]) == (2, 4) and len(out["head_summary"]) == 8
    [masked] = out["masked"]
    assert masked["position"] == 3
    assert [q["token"] for q in masked["predictions"]] == [q.token for q in a.mlm[0].predictions]
    assert [q["probability"] for q in masked["predictions"]] == [sig(q.probability) for q in a.mlm[0].predictions]
    stats = head_statistics(a.attention, a.tokens)
    row = out["head_summary"][6]  # 1-based layer 2, head 3
    assert (row["layer"], row["head"]) == (2, 3)
    assert row["entropy"] == sig(stats["entropy"][1, 2]) and row["to [CLS]"] == sig(stats["to [CLS]"][1, 2])
    assert "attention" not in out  # compact by default: the array only on request
    full = tools.analyze(TEXT, "", attention=True)
    np.testing.assert_allclose(full["attention"], a.attention, atol=5e-5)  # small: the whole array comes along
    json.dumps(out)  # plain JSON, no numpy values


def test_analyze_says_why_a_large_attention_array_is_left_out(tools):
    out = tools.analyze(" ".join(["cat"] * 60), "", attention=True)  # 2 x 4 x 62 x 62 = 30,752 numbers > 20,000
    assert "attention" not in out and out["attention_note"].startswith("the attention array has 30752 numbers")


def test_the_tools_take_a_checkpoint_the_server_enables(tiny_lab, sharp_lab):
    from bertviz_lab.app.state import LabCache

    cache = LabCache([tiny_lab.checkpoint_id, sharp_lab.checkpoint_id], allow_any=False)
    cache.pin(tiny_lab, str(tiny_lab.device))
    cache.pin(sharp_lab, str(sharp_lab.device))
    served = AgentTools(tiny_lab, cache)
    out = served.predict_masked("the [MASK] sat", 3, model=sharp_lab.checkpoint_id)
    assert out["model"] == sharp_lab.analyze("the [MASK] sat").model != tiny_lab.analyze("the [MASK] sat").model
    assert [q["token"] for q in out["masked"][0]["predictions"]] == \
        [q.token for q in sharp_lab.analyze("the [MASK] sat", top_k=3).mlm[0].predictions]
    assert served.analyze("the cat", model="")["model"] == tiny_lab.analyze("the cat").model  # empty: the server's
    with pytest.raises(gr.Error, match="model 'bert-large-cased' is not enabled on this server; choose one of"):
        served.explain(TEXT, model="bert-large-cased")


def test_analyze_of_a_pair_marks_the_second_segment(tools, tiny_lab):
    out = tools.analyze("the cat sat", "it was tired")
    assert out["tokens"] == tiny_lab.analyze("the cat sat", pair="it was tired").tokens
    assert out["segment_ids"] == [0] * 5 + [1] * 4 and out["masked"] == []


def test_predict_masked_returns_top_k_per_mask(tools, tiny_lab):
    out = tools.predict_masked("[MASK] cat sat on the [MASK]", 3)
    a = tiny_lab.analyze("[MASK] cat sat on the [MASK]", top_k=3)
    assert [m["position"] for m in out["masked"]] == [1, 6]
    assert [[q["token"] for q in m["predictions"]] for m in out["masked"]] == \
        [[q.token for q in p.predictions] for p in a.mlm]
    assert all(len(m["predictions"]) == 3 for m in out["masked"])


def test_predict_masked_says_what_is_wrong(tools):
    with pytest.raises(gr.Error, match="top-k must be a whole number from 1 to 50 \\(got 0\\)"):
        tools.predict_masked(TEXT, 0)
    with pytest.raises(gr.Error, match="MASK"):
        tools.predict_masked("the cat sat", 5)
    with pytest.raises(gr.Error, match="the text is empty"):
        tools.predict_masked("  ", 5)


def test_explain_matches_the_attribution_of_the_first_mask(tools, tiny_lab):
    from bertviz_lab.interventions.attribution import explain

    text = "the [MASK] sat on the [MASK] by the door"
    out = tools.explain(text)
    first = explain(tiny_lab, tiny_lab.analyze(text))[0]
    erasure = np.array(first.scores["erasure"])
    assert (out["target"], out["position"]) == (first.target, first.position) == (first.target, 2)
    assert out["top_token"] == tiny_lab.analyze(text).tokens[first.context[int(erasure.argmax())]]
    assert [r["position"] for r in out["scores"]["erasure"]] == first.context
    assert [r["score"] for r in out["scores"]["erasure"]] == [sig(v) for v in erasure]
    assert set(out["scores"]) == {"erasure", "gradient x input", "integrated gradients", "decompx"}
    assert out["spearman_with_erasure"]["decompx"] == sig(first.agreement["decompx"])
    json.dumps(out)


def test_explain_explains_a_classifiers_class_chosen_by_label():
    from bertviz_lab import load
    from bertviz_lab.interventions.attribution import explain_class

    lab = load("sst2", device="cpu")  # the shipped sentiment classifier: no masked-word head
    a = lab.analyze("the cat sat on the mat")
    other = a.classes[-1].label
    out = AgentTools(lab).explain("the cat sat on the mat", label=other)
    assert out["class"] == other and "target" not in out
    assert [r["score"] for r in out["scores"]["erasure"]] == \
        [sig(v) for v in explain_class(lab, a, label=other).scores["erasure"]]
    assert AgentTools(lab).explain("the cat sat on the mat")["class"] == a.classes[0].label  # default: predicted


def test_explain_without_a_mask_is_refused_in_a_sentence(tools):
    with pytest.raises(gr.Error, match="mask a token first"):
        tools.explain("the cat sat")


def test_score_heads_returns_the_syntax_tabs_best_heads_with_intervals(tools, tiny_lab):
    from bertviz_lab.syntax.run import run_syntax
    from bertviz_lab.syntax.summary import Settings
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    out = tools.score_heads("sample", "attention")
    best = run_syntax(tiny_lab, read_conllu(SAMPLE_TREEBANK), Settings(min_arcs=10)).summary.best_heads
    best = best.set_index("relation")
    rows = {(r["relation"], r["measure"]): r for r in out["best_heads"]}
    assert out["sentences_used"] == 66 and out["source"] == "attention"
    for relation in ("all", "nsubj"):
        row = rows[(relation, "best_head")]
        assert row["predictor"] == best.loc[relation, "best_head"]  # "layer-head", 1-based
        assert (row["value"], row["ci_low"], row["ci_high"]) == \
            tuple(sig(best.loc[relation, c]) for c in ("accuracy", "ci_low", "ci_high"))
        assert row["ci_low"] < row["value"] < row["ci_high"] and row["direction"] == best.loc[relation, "direction"]
    json.dumps(out)


def test_score_heads_refuses_other_treebanks_and_unknown_sources(tools):
    with pytest.raises(gr.Error, match="only the sample treebank .*bertviz-lab score-heads --conllu FILE"):
        tools.score_heads("/etc/passwd", "attention")
    with pytest.raises(gr.Error, match="unknown attention source 'nope'"):
        tools.score_heads("sample", "nope")


# ---- through the gate --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def public_demo(tiny_lab):
    from bertviz_lab.app import build_demo

    return build_demo(tiny_lab, limits=public_limits())


def gated(demo, name: str):
    return next(f.fn for f in demo.fns.values() if f.api_name == f"agent_{name}")


def test_every_tool_is_an_api_endpoint_behind_the_gate(public_demo):
    over_tokens = " ".join(["[MASK]"] + ["cat"] * 30)  # 33 tokens > 24
    over_masks = " ".join(["[MASK] cat"] * (CAP_MASKS + 1))
    for name, args in (("analyze", (over_tokens, "")), ("predict_masked", (over_tokens, 5)), ("explain", (over_tokens,))):
        with pytest.raises(gr.Error, match=f"up to {CAP_TOKENS} tokens per input; this input has 33"):
            gated(public_demo, name)(*args)
    with pytest.raises(gr.Error, match=f"up to {CAP_MASKS} masked words per input"):
        gated(public_demo, "predict_masked")(over_masks, 5)
    answer = gated(public_demo, "predict_masked")("the [MASK] sat", 2)  # under the cap: JSON text
    assert json.loads(answer)["masked"][0]["position"] == 2


def test_an_over_budget_request_reaches_the_gate_unchanged(tools):
    """The tools turn their own errors into sentences but leave the budget's to the gate."""
    from bertviz_lab.bert import Budget, BudgetExceeded, spending

    for call in (lambda: tools.explain(TEXT), lambda: tools.predict_masked(TEXT, 5), lambda: tools.score_heads()):
        with spending(Budget(tokens=5)), pytest.raises(BudgetExceeded, match="up to 5 tokens per input"):
            call()


def test_the_tools_keep_their_names_types_and_docstrings_in_the_api(public_demo):
    info = public_demo.get_api_info()["named_endpoints"]
    params = {name: [(p["parameter_name"], p["type"]["type"]) for p in info[f"/agent_{name}"]["parameters"]]
              for name in TOOLS}
    assert params == {"analyze": [("text", "string"), ("pair", "string"), ("parse", "boolean"), ("attention", "boolean"),
                                  ("model", "string")],
                      "predict_masked": [("text", "string"), ("top_k", "integer"), ("model", "string")],
                      "explain": [("text", "string"), ("label", "string"), ("model", "string")],
                      "score_heads": [("treebank", "string"), ("source", "string")],
                      "run_recipe": [("recipe", "string")]}
    assert info["/agent_explain"]["description"].startswith("Explain why the model predicted the word at the first [MASK]")


# ---- recipes over the agent door -----------------------------------------------------------------------
def recipe(action: str, lab, inputs=None, settings=None, seeds=None, sha256=None) -> str:
    return json.dumps({"bertviz_lab_recipe": 1, "action": action, "inputs": inputs or {}, "settings": settings or {},
                       "seeds": seeds or {}, "checkpoint": {"name": lab.checkpoint_id, "sha256": sha256}})


def test_a_recipe_runs_over_the_agent_door_as_the_library_runs_it(tools, tiny_lab):
    from bertviz_lab.interventions.records import Sweep, sweep_record, sweep_set_record
    from bertviz_lab.treebank import sentence_texts

    sha = tiny_lab.checkpoint_info().sha256
    out = tools.run_recipe(recipe("sweep", tiny_lab, {"text": TEXT}, {"kind": "directional", "sinks": "strict"},
                                  {"seed": 3}, sha))
    assert out["rows"] == json.loads(json.dumps(sweep_record(tiny_lab, TEXT, Sweep("directional", sinks="strict",
                                                                                    seed=3))["rows"]))
    assert out["recipe"]["checkpoint"]["sha256"] == sha and out["recipe"]["action"] == "sweep"
    over_set = tools.run_recipe(recipe("sweep", tiny_lab, settings={"kind": "directional", "sample": True,
                                                                    "max_sentences": 6}))
    expected = sweep_set_record(tiny_lab, sentence_texts(), Sweep("directional"), max_sentences=6)
    assert over_set["p_gold"]["both"]["mean"] == pytest.approx(expected["p_gold"]["both"]["mean"])
    analysed = tools.run_recipe(recipe("analyze", tiny_lab, {"text": TEXT}, {"top_k": 2}))
    assert [p["token"] for p in analysed["masked"][0]["predictions"]] == \
        [p.token for p in tiny_lab.analyze(TEXT, top_k=2).mlm[0].predictions]


@pytest.mark.parametrize("action, inputs, settings, words", [
    ("faithfulness", {"text_file": {"path": "/etc/passwd", "sha256": "x"}}, {}, "reads no files"),
    ("compare", {}, {"intervention": "shuffle-words", "sample": True, "max_sentences": 5000},
     "up to 500 sentences per request"),
    ("sweep", {"text": TEXT}, {"kind": "directional", "reference_file": "/etc/passwd"}, "does not take 'reference_file'"),
    ("score-heads", {}, {}, "not 'score-heads'"),
    ("compare", {}, {"intervention": "shuffle-words"}, '"sample": true'),
])
def test_a_recipe_the_agent_door_does_not_run_is_refused_in_a_sentence(tools, tiny_lab, action, inputs, settings,
                                                                       words):
    with pytest.raises(gr.Error, match=re.escape(words)):
        tools.run_recipe(recipe(action, tiny_lab, inputs, settings))


def test_a_recipe_for_other_weights_or_not_json_is_refused(tools, tiny_lab):
    with pytest.raises(gr.Error, match="these are other weights"):
        tools.run_recipe(recipe("analyze", tiny_lab, {"text": TEXT}, sha256="0" * 64))
    with pytest.raises(gr.Error, match="not JSON"):
        tools.run_recipe("{oops")


# ---- the launcher -----------------------------------------------------------------------------------
def test_mcp_is_asked_for_by_flag_or_environment(monkeypatch):
    from bertviz_lab.launcher import parse_args

    monkeypatch.delenv("BERTVIZ_LAB_MCP", raising=False)
    monkeypatch.delenv("GRADIO_MCP_SERVER", raising=False)
    assert parse_args([]).mcp is False and parse_args(["--mcp"]).mcp is True
    monkeypatch.setenv("BERTVIZ_LAB_MCP", "1")
    assert parse_args([]).mcp is True


def test_without_the_mcp_package_the_launcher_stops_in_one_sentence(monkeypatch):
    from bertviz_lab import launcher

    monkeypatch.setattr(launcher.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit) as stop:
        launcher.main(["--mcp"])
    assert stop.value.code == 'error: --mcp needs the MCP package; install it with: pip install "gradio[mcp]"'


# ---- the MCP server ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp_app(public_demo):
    if not HAS_MCP:
        pytest.skip('the mcp package is not installed (pip install "gradio[mcp]")')
    from bertviz_lab.app import launch_kwargs, queue_kwargs

    limits = public_limits()
    public_demo.queue(**queue_kwargs(limits))
    from unittest import mock

    from bertviz_lab.app.ports import patient_url_ok

    with warnings.catch_warnings(), mock.patch("gradio.networking.url_ok", patient_url_ok):
        # the warning is about the page's events, before the lifespan narrows the tools (as the launcher)
        warnings.filterwarnings("ignore", message="This MCP server includes a tool that has a gr.State input")
        _, url, _ = public_demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                                       **launch_kwargs(limits, public_demo, mcp=True))
    yield url.rstrip("/")
    public_demo.close()


def test_the_mcp_schema_lists_exactly_the_five_tools_with_their_docstrings(mcp_app):
    with urllib.request.urlopen(f"{mcp_app}/gradio_api/mcp/schema", timeout=30) as reply:
        schema = json.loads(reply.read())
    by_name = {tool["name"]: tool for tool in schema}
    assert sorted(by_name) == sorted(TOOLS)
    assert by_name["predict_masked"]["description"].startswith("Predict the words hidden by [MASK] in a text")
    props = by_name["predict_masked"]["inputSchema"]["properties"]
    assert props["top_k"]["type"] == "integer" and props["top_k"]["default"] == 5
    assert props["top_k"]["description"] == "how many predictions to return per [MASK], from 1 to 50"
    assert by_name["predict_masked"]["inputSchema"]["required"] == ["text"]


async def over_mcp(url: str, calls: list[tuple[str, dict]]):
    """The tool list and each call's result, over MCP's streamable HTTP transport, as an agent sees them."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(f"{url}/gradio_api/mcp/") as (read, write, _), ClientSession(read, write) as s:
        hello = await s.initialize()
        listed = await s.list_tools()
        return hello.serverInfo, listed.tools, [await s.call_tool(name, arguments) for name, arguments in calls]


def test_an_agent_lists_and_calls_the_tools_over_mcp_under_the_public_gate(mcp_app, tiny_lab):
    over = " ".join(["[MASK]"] + ["cat"] * 30)
    server, listed, (ok, refused) = asyncio.run(over_mcp(
        mcp_app, [("predict_masked", {"text": "the [MASK] sat", "top_k": 2}), ("analyze", {"text": over})]))
    from bertviz_lab import __version__

    assert (server.name, server.version) == ("bertviz-lab", __version__)  # itself, not the MCP library's version
    assert [t.name for t in listed] == list(TOOLS)
    assert listed[2].description.startswith("Explain why the model predicted the word at the first [MASK]")
    assert not ok.isError
    answer = json.loads(ok.content[0].text)  # JSON text, not a Python repr
    assert [q["token"] for q in answer["masked"][0]["predictions"]] == \
        [q.token for q in tiny_lab.analyze("the [MASK] sat", top_k=2).mlm[0].predictions]
    assert refused.isError and f"up to {CAP_TOKENS} tokens per input; this input has 33" in refused.content[0].text
