"""The task layer (bertviz_lab/tasks/): one request per action with every default and check in one place, and the
doors giving the same answer because they send the same request."""
import json
from pathlib import Path

import builders
import pytest

from bertviz_lab.lab import InputError
from bertviz_lab.resources import SAMPLE_TREEBANK
from bertviz_lab.tasks.analyze import AnalyzeRequest, analyze
from bertviz_lab.tasks.explain import ExplainRequest, explain_analysis
from bertviz_lab.tasks.score_heads import SAMPLE_MIN_ARCS, ScoreHeadsRequest, score_heads
from bertviz_lab.tasks.structural_probes import StructureRequest
from bertviz_lab.tasks.weights import other_weights, published_checkpoint, weights_for


def test_one_rule_for_whose_weights():
    assert weights_for(True) == "default" and weights_for(False) == "minilm-original"
    assert weights_for(False, loaded="default") == "minilm-original"  # attention for itself: published weights
    assert weights_for(True, loaded="sst2") == "sst2" and weights_for(False, loaded="twin-rotary") == "twin-rotary"
    assert weights_for(False, named="default", loaded="x") == "default"  # named for the action: as typed
    assert published_checkpoint(None) == published_checkpoint("") == "minilm-original"
    assert other_weights("minilm-original", "default") == "default"
    assert other_weights("default", "default") == "minilm-original"


def test_a_score_heads_request_refuses_before_anything_loads():
    with pytest.raises(ValueError, match="unknown attention source 'softmax'; choose one of attention"):
        ScoreHeadsRequest(source="softmax")
    with pytest.raises(InputError, match="unknown engine 'spark'"):
        ScoreHeadsRequest(engine="spark")
    with pytest.raises(InputError, match="for a job, pass --model twice"):
        ScoreHeadsRequest(checkpoints=("a", "b"), compare_checkpoint="c")
    with pytest.raises(InputError, match="nowhere.conllu: no such file"):
        ScoreHeadsRequest(treebanks=(Path("nowhere.conllu"),))


def test_score_heads_defaults_are_the_same_at_every_door(tmp_path):
    """Ensembles and the null model on; relations from 10 arcs on the shipped sample (too small for 50), 50 else."""
    sample = ScoreHeadsRequest(loaded="default")
    assert sample.models == ["minilm-original"] and sample.ensembles and sample.null
    assert sample.chosen_settings().min_arcs == SAMPLE_MIN_ARCS == 10
    other = tmp_path / "x.conllu"
    other.write_text(SAMPLE_TREEBANK.read_text())
    assert ScoreHeadsRequest((other,)).chosen_settings().min_arcs == 50
    assert ScoreHeadsRequest((other,), min_arcs=7).chosen_settings().min_arcs == 7
    assert not ScoreHeadsRequest((other,)).is_job and ScoreHeadsRequest((other, SAMPLE_TREEBANK)).is_job
    assert ScoreHeadsRequest(engine="ray").is_job


def test_score_heads_refuses_a_treebank_over_the_doors_word_limit_naming_the_file(tiny_lab):
    def never(_):
        raise AssertionError("no model loads for a refused treebank")

    with pytest.raises(ValueError, match=r"upload.conllu has [\d,]+ words; this door scores up to 100 per request"):
        score_heads(ScoreHeadsRequest(max_words=100, shown_names=("upload.conllu",)), never)


@pytest.mark.slow
def test_the_page_and_the_agent_door_score_with_one_request(tiny_lab):
    """The MCP tool and the task on the same checkpoint give the same best heads (the page sends this request too:
    tests/test_app_api.py)."""
    from bertviz_lab.app.agent_tools import AgentTools
    from bertviz_lab.syntax.run import best_heads_long

    scored = score_heads(ScoreHeadsRequest(loaded=tiny_lab.checkpoint_id), lambda _: tiny_lab)
    assert "ensemble" in set(best_heads_long(scored.summary.best_heads).measure)  # ensembles on by default
    out = AgentTools(tiny_lab).score_heads("sample", "attention")
    record = scored.to_json()
    def heads(rows):
        return {(r["relation"], r["measure"]): (r["predictor"], r["direction"]) for r in rows}

    assert heads(out["best_heads"]) == heads(record["best_heads"]) and len(out["best_heads"]) > 20
    assert record["treebank"] == SAMPLE_TREEBANK.name and record["sentences_used"] == 66


def test_an_analyze_request_checks_its_settings_once():
    assert AnalyzeRequest("a", top_k=5.0).top_k == 5
    with pytest.raises(InputError, match="top-k must be a whole number from 1 to 50 \\(got 51\\)"):
        AnalyzeRequest("a", top_k=51)
    assert AnalyzeRequest("a", top_k=51, top_k_cap=None).top_k == 51  # the command line has no cap
    with pytest.raises(ValueError, match="unknown attention source"):
        AnalyzeRequest("a", source="attn")
    with pytest.raises(InputError, match="text must be text, not int"):
        AnalyzeRequest(3)
    with pytest.raises(InputError, match="explain 'some'\\? choose one of first, all"):
        ExplainRequest("some")


def test_analyze_adds_what_the_request_asks_and_the_command_line_prints_the_same(tiny_lab, tiny_folder):
    text = "the cat [MASK] on the [MASK] ."
    record = analyze(AnalyzeRequest(text, lens=True, explain=ExplainRequest("all")), tiny_lab)
    out = record.to_json(attention=False)
    assert [e["position"] for e in out["explain"]] == [p.position for p in record.analysis.mlm] and len(out["lens"]) == 2
    first = explain_analysis(tiny_lab, record.analysis)  # the page's and the agent door's: the first mask only
    assert first.to_json()["explain"] == out["explain"][:1]
    cli = builders.run_cli("analyze", text, "--model", tiny_folder, "--device", "cpu", "--json", "--explain", "--lens",
                           "--no-attention")
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout)
    for mine, theirs in zip(out["explain"], printed["explain"], strict=True):
        assert theirs["target"] == mine["target"] and theirs["context"] == mine["context"]
        assert theirs["scores"]["erasure"] == pytest.approx(list(mine["scores"]["erasure"]), abs=1e-5)
    assert [p["predictions"] for p in printed["mlm"]] == json.loads(json.dumps([p["predictions"] for p in out["mlm"]]))


def test_too_long_an_input_is_refused_with_how_to_go_on(tiny_lab):
    long = " ".join(["cat"] * 2000)
    with pytest.raises(InputError, match="more than the model maximum of \\d+; shorten it, or ask for it to be cut"):
        analyze(AnalyzeRequest(long), tiny_lab)
    assert analyze(AnalyzeRequest(long, truncate=True), tiny_lab).analysis.truncated


def test_a_structure_request_refuses_train_with_probes_and_a_test_split(tmp_path):
    with pytest.raises(InputError, match="give --train .* or --probes .*, not both"):
        StructureRequest(SAMPLE_TREEBANK, train=SAMPLE_TREEBANK, probes=tmp_path / "p.safetensors")
    with pytest.raises(InputError, match="en_ewt-ud-test.conllu looks like a test split"):
        StructureRequest(SAMPLE_TREEBANK, train=Path("en_ewt-ud-test.conllu"))
