"""The record that ships with a head: its warm-start chain, and no paths of the machine it was trained on."""
import json
from pathlib import Path

from bertviz_lab.mlm.model_card import describe, lineage, portable_paths
from bertviz_lab.resources import DEFAULT_MLM_HEAD


def write_run(folder: Path, steps: int, seconds: float, init: str | None, sources: list[str] | None) -> Path:
    folder.mkdir(parents=True)
    corpus = {"sources": [{"name": s} for s in sources]} if sources else {}
    (folder / "run.json").write_text(json.dumps({
        "steps": steps, "train_seconds": seconds, "fine_tuned_layers": [2, 3, 4, 5], "corpus": corpus,
        "settings": {"init": init, "nsp": bool(sources), "pair_fraction": 0.5 if sources else None}}))
    return folder


def test_lineage_follows_init_folders_newest_first(tmp_path):
    first = write_run(tmp_path / "v1", 9000, 3060, None, None)
    second = write_run(tmp_path / "v2", 7000, 4050, str(first), ["wordnet", "ewt"])
    chain = lineage(str(second))
    assert [(run["steps"], run["minutes"], run["corpus"], run["nsp"]) for run in chain] == \
        [(7000, 67.5, "wordnet + ewt", True), (9000, 51.0, "wordnet", False)]
    assert describe(chain) == "9,000 steps on wordnet (51 min); then 7,000 steps on wordnet + ewt with NSP (68 min)"


def test_published_settings_name_folders_not_machine_paths():
    settings = {"corpus": "/work/research/corpus2", "init": "/work/research/runs/v2", "steps": 3000,
                "model": "default"}
    assert portable_paths(settings) == {"corpus": "corpus2", "init": "v2", "steps": 3000, "model": "default"}
    assert portable_paths({"corpus": "data/corpus", "init": None}) == {"corpus": "data/corpus", "init": None}
    shipped = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["settings"]
    assert not any(isinstance(v, str) and Path(v).is_absolute() for v in shipped.values()), shipped


def test_licence_note_names_every_source_and_the_non_commercial_ones():
    from bertviz_lab.mlm.model_card import licence_note, running_size

    sources = [{"name": "wordnet", "licence": "WordNet 3.0 licence", "licence_file": "LICENSE-WordNet"},
               {"name": "ewt", "licence": "CC BY-SA 4.0", "licence_file": "LICENSE-ewt.txt"},
               {"name": "gum", "licence": "Creative Commons Attribution-NonCommercial-ShareAlike 4.0"},
               {"name": "brown", "licence": "May be used for non-commercial purposes (Brown Corpus, per nltk_data)"}]
    note = licence_note(sources)
    assert "UD English EWT: CC BY-SA 4.0 (`LICENSE-ewt.txt`)" in note and "(`LICENSE-WordNet`)" in note
    assert "ShareAlike 4.0;" in note  # no licence file was shipped for it, so none is named
    assert "Because UD English GUM and Brown Corpus are for non-commercial use only" in note
    assert "non-commercial" not in licence_note(sources[:2] + [{"name": "x", "licence": "University of Illinois/NCSA"}])
    assert running_size(sources[:1]) == "dictionary glosses only"
    assert running_size([{"name": "ewt", "train_lines": 800}]).startswith("about 800 sentences")
    assert running_size([{"name": "ewt", "train_lines": 78_321}]).startswith("about 78,000 sentences")


def test_heldout_note_says_when_a_held_out_documents_other_passages_were_trained_on():
    from bertviz_lab.mlm.model_card import heldout_note

    older = [{"name": "wordnet"}, {"name": "ewt"}, {"name": "gum"}, {"name": "lines"}]  # built before the unit existed
    assert heldout_note(older) == ("whole passages, at most one per document; other passages of a held-out "
                                     "passage's document were trained on in UD English EWT, UD English GUM, UD English LinES")
    whole = [{"name": "wordnet"}, {"name": "ewt", "heldout_unit": "document", "heldout_shares_documents": False}]
    brown = {"name": "brown", "heldout_unit": "passage", "heldout_shares_documents": False}  # one passage per sample
    assert heldout_note(whole + [brown]) == "whole documents"
    shipped = json.loads((DEFAULT_MLM_HEAD / "corpus.json").read_text())["sources"]  # issue 32's chain
    assert heldout_note(shipped) == "whole documents"
    novel = {"name": "novel", "heldout_unit": "passage", "heldout_shares_documents": True}
    assert heldout_note(whole + [brown, novel]).endswith("were trained on in novel")


def test_the_card_says_which_layers_were_fine_tuned_when_all_six_were():
    from bertviz_lab.mlm.model_card import tuned_text

    top_four = tuned_text([2, 3, 4, 5], {"nsp": True})
    assert top_four.startswith("The top 4 encoder layers (layers 3-6 of 6, 1-based) were fine-tuned together with "
                               "the heads and the pooler; layers 1-2 and all embeddings")
    every = tuned_text([0, 1, 2, 3, 4, 5], {"nsp": True})
    assert every.startswith("All 6 encoder layers (layers 1-6 of 6, 1-based) were fine-tuned")
    assert "layers 1-0" not in every and "the embeddings (word, position, segment) are the published" in every


def test_the_shipped_card_is_written_from_its_record(tmp_path):
    """Every figure and licence of the shipped card comes from its run.json and corpus.json: writing it
    again from them gives the card byte for byte (so the card's Licences section is the code's)."""
    import shutil

    from bertviz_lab.mlm.model_card import licences_markdown, rewrite_model_card, shipped_sources

    shutil.copy(DEFAULT_MLM_HEAD / "run.json", tmp_path / "run.json")
    card = rewrite_model_card(tmp_path).read_text()
    assert card == (DEFAULT_MLM_HEAD / "MODEL_CARD.md").read_text()
    record = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())
    assert record["corpus"]["sources"] == shipped_sources()  # the card's tables and the licences read one list
    assert card.endswith(f"## Licences\n\n{licences_markdown(shipped_sources())}\n")


def test_licences_say_code_mit_and_what_the_weights_inherit():
    from bertviz_lab.mlm.model_card import licence_contradiction, licences_markdown

    sources = [{"name": "ewt", "licence": "CC BY-SA 4.0", "licence_file": "LICENSE-ewt.txt"},
               {"name": "brown", "licence": "May be used for non-commercial purposes (Brown Corpus, per nltk_data)"}]
    text = licences_markdown(sources, folder="heads/x")
    assert "benchmarks): MIT, see `LICENSE`." in text and "`minilm-original`\n  and the embeddings of `default`): Apache 2.0" in text
    assert ("(`heads/x/head.safetensors`: the heads and the fine-tuned\n  encoder layers that `default` loads): for "
            "non-commercial use (teaching and research) only, because Brown Corpus, which it was trained on, is for "
            "non-commercial use only.") in text
    assert text.endswith("| UD English EWT | CC BY-SA 4.0 | `heads/x/LICENSE-ewt.txt` |\n"
                         "| Brown Corpus | May be used for non-commercial purposes (Brown Corpus, per nltk_data) | |")
    permissive = licences_markdown(sources[:1])
    assert "non-commercial" not in permissive and "under the terms of the licences of the data it was trained on" in permissive
    assert licence_contradiction("mit", sources).startswith("refusing to declare `license: mit`: the model card")
    assert "(trained on Brown Corpus), while the code is MIT" in licence_contradiction("MIT", sources)
    assert licence_contradiction("other", sources) is None and licence_contradiction("mit", sources[:1]) is None
