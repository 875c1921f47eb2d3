"""The broader corpus (UD train splits as documents), NSP pairs, NSP training and eval-nsp."""
import json
from pathlib import Path

import pytest
import torch
from builders import fake_wordnet, nsp_settings, run_cli

from bertviz_lab import load
from bertviz_lab.mlm.corpus import RunningText, build_corpus
from bertviz_lab.mlm.evaluate_nsp import evaluate_nsp, nsp_probabilities
from bertviz_lab.mlm.examples import NOT_PAIR, Example, epoch_examples, make_nsp_pairs, tokenize_examples
from bertviz_lab.mlm.running_text import Passage, origin_name, read_documents, read_passages, split_passages
from bertviz_lab.mlm.train import train

ROOT = Path(__file__).resolve().parent.parent


def test_only_train_splits_are_read(tmp_path):
    assert origin_name(Path("en_ewt-ud-train.conllu")) == "ewt"
    for name in ("en_ewt-ud-test.conllu", "en_ewt-ud-dev.conllu", "ewt.conllu"):
        with pytest.raises(ValueError, match="reserved for evaluation|train"):
            origin_name(Path(name))


def test_long_documents_become_passages_that_remember_their_document(ud_files):
    passages = read_passages(ud_files[1])
    assert [len(p.sentences) for p in passages] == [40, 40, 40, 10]
    assert {p.document for p in passages} == {"novel"} and passages[1].sentences[0] == "the novel line 40 goes on and on"


def test_held_out_and_validation_are_whole_passages_one_per_document(ud_files):
    passages = read_passages(ud_files[0])  # 30 documents x 6 sentences
    train, validation, held = split_passages(passages, heldout_sentences=20, validation_sentences=10, seed=1)
    assert sum(len(p.sentences) for p in held) == 24  # 4 whole passages: the first count >= 20
    assert sum(len(p.sentences) for p in validation) == 12
    assert len(train) == 30 - 4 - 2
    seen = [p.document for p in train + validation + held]
    assert len(seen) == len(set(seen)) == 30  # nothing lost, nothing twice
    novel = read_passages(ud_files[1])  # one document, four passages
    train, _, held = split_passages(novel, heldout_sentences=60, validation_sentences=0, unit="passage")
    assert [len(p.sentences) for p in held] == [40] and len(train) == 3  # one passage of it, fewer than asked
    train, _, held = split_passages(novel, heldout_sentences=10, validation_sentences=0)
    assert [len(p.sentences) for p in held] == [130] and train == []  # the whole document, joined in order
    assert held[0].sentences[39:41] == ["the novel line 39 goes on and on", "the novel line 40 goes on and on"]
    assert [len(p.sentences) for p in novel] == [40, 40, 40, 10]  # joining copied, never extended the input


def test_whole_documents_leave_training_whole_and_are_drawn_one_ticket_each():
    # "long": 5 passages of 4 sentences; ten short documents of one passage each.
    passages = [Passage("t", "long", [f"long {k}" for k in range(4 * i, 4 * i + 4)]) for i in range(5)]
    passages += [Passage("t", f"short{d}", [f"short {d} {k}" for k in range(4)]) for d in range(10)]
    long_held = {"document": 0, "passage": 0}
    for seed in range(300):
        for unit in long_held:
            train, validation, held = split_passages(passages, 4, 4, seed=seed, unit=unit)
            trained_docs = {p.document for p in train}
            if unit == "document":
                assert not trained_docs & {p.document for p in held + validation}
                assert sum(map(len, (p.sentences for p in train + validation + held))) == 60  # nothing lost
            long_held[unit] += any(p.document == "long" for p in held)
    # one ticket per document: "long" is the held-out one about 1 time in 11; drawn per passage
    # (one ticket per passage, the plausible misreading) it would be about 1 time in 3.
    assert 0.04 < long_held["document"] / 300 < 0.15 and long_held["passage"] / 300 > 0.25


def test_build_corpus_never_trains_on_held_out_text_and_records_licences(tmp_path, ud_files):
    licence = tmp_path / "LICENSE.txt"
    licence.write_text("Attribution-ShareAlike 4.0 International")
    record = build_corpus(tmp_path / "corpus", heldout=20, folder=fake_wordnet(tmp_path / "wn"),
                          running=[RunningText(ud_files[0], "CC BY-SA 4.0", licence, "UD_English-Web@abc"),
                                   RunningText(ud_files[1], "CC BY-NC-SA 4.0")],
                          heldout_sentences=18, validation_sentences=6, validation_lines=10)
    out = tmp_path / "corpus"
    names = [s["name"] for s in record["sources"]]
    assert names == ["wordnet", "web", "novel"]
    assert record["sources"][1]["licence"] == "CC BY-SA 4.0" and "UD_English-Web@abc" in record["sources"][1]["source"]
    assert (out / "LICENSE-web.txt").read_text() == licence.read_text()
    trained = set((out / "train.txt").read_text().splitlines())
    for row in map(json.loads, (out / "train_docs.jsonl").read_text().splitlines()):
        trained.update(row["sentences"])
    held = set((out / "heldout.txt").read_text().splitlines())
    for name in ("web", "novel"):
        docs = read_documents(out / f"heldout-{name}.txt")
        assert docs and all(docs)
        held.update(s for d in docs for s in d)
    validation = set((out / "validation.txt").read_text().splitlines())
    assert held and not held & trained and not validation & trained and not held & validation
    assert len(read_documents(out / "heldout-web.txt")) == 3  # 18 sentences: 3 whole documents of 6
    # one document cannot be held out whole and leave text to train on: that source falls back to passages
    assert [s.get("heldout_unit") for s in record["sources"]] == [None, "document", "passage"]
    assert [s.get("heldout_shares_documents") for s in record["sources"]] == [None, False, True]
    assert [len(d) for d in read_documents(out / "heldout-novel.txt")] == [40]


def test_epoch_examples_pair_true_successors_and_other_documents():
    passages = [Passage("t", "a", [f"a{i}" for i in range(50)]), Passage("t", "b", [f"b{i}" for i in range(50)]),
                Passage("t", "a", [f"a{i}" for i in range(50, 60)])]
    lines = [f"line {i}" for i in range(100)]
    first = epoch_examples(lines, passages, seed=0, epoch=0, running_share=0.5, pair_fraction=0.5)
    assert first == epoch_examples(lines, passages, seed=0, epoch=0, running_share=0.5, pair_fraction=0.5)
    assert first != epoch_examples(lines, passages, seed=0, epoch=1, running_share=0.5, pair_fraction=0.5)
    running = [e for e in first if not e.a.startswith("line")]
    assert len(running) == 110 and len(first) == 210  # every running sentence once, plus 100 lines
    pairs = [e for e in running if e.b is not None]
    assert 35 < len(pairs) < 75
    for e in pairs:
        if e.is_random == 0:
            assert e.b[0] == e.a[0] and int(e.b[1:]) == int(e.a[1:]) + 1  # the true successor
        else:
            assert e.is_random == 1 and e.b[0] != e.a[0]  # never the same document (a0-a59 is one)
    assert 0.3 < sum(e.is_random for e in pairs) / len(pairs) < 0.7
    assert all(e.is_random == NOT_PAIR for e in running if e.b is None)


def test_pairs_get_segments_and_distinct_word_ids(tiny_lab):
    corpus = tokenize_examples(tiny_lab.tokenizer, [Example("the cat sat", "the dog ran", 0), Example("a big house")],
                               single_cut=16, pair_cut=16)
    ids, words, segments = corpus.ids[0], corpus.words[0], corpus.segments[0]
    assert [tiny_lab.tokenizer.id_to_token(i) for i in ids] == ["[CLS]", "the", "cat", "sat", "[SEP]", "the", "dog",
                                                               "ran", "[SEP]"]
    assert segments == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert words == [-1, 0, 1, 2, -1, 3, 4, 5, -1]
    batch = corpus.batch([0, 1])
    assert batch["is_random"].tolist() == [0, NOT_PAIR] and batch["attention_mask"][1].tolist() == [1] * 5 + [0] * 4


def test_nsp_training_ships_a_next_sentence_head_and_resumes_exactly(tmp_path, tiny_corpus, tiny_folder):
    whole = train(tmp_path / "whole", nsp_settings(tiny_corpus, tiny_folder), progress=False)
    assert "nsp" in whole["history"][0] and 0 <= whole["history"][-1]["nsp"] <= 1
    assert train(tmp_path / "cut", nsp_settings(tiny_corpus, tiny_folder), progress=False, stop_after=4) is None
    train(tmp_path / "cut", nsp_settings(tiny_corpus, tiny_folder), progress=False, resume=True)
    from safetensors.torch import load_file

    a, b = load_file(str(tmp_path / "whole" / "head.safetensors")), load_file(str(tmp_path / "cut" / "head.safetensors"))
    assert {"cls.seq_relationship.weight", "bert.pooler.dense.weight"} <= set(a)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    lab = load(str(tiny_folder), device="cpu", mlm_head=tmp_path / "whole")
    assert lab.model.has_nsp_head
    analysis = lab.analyze("the cat sat", pair="the dog ran")
    seq = load_file(str(tmp_path / "whole" / "head.safetensors"))["cls.seq_relationship.weight"].float()
    assert torch.allclose(lab.model.cls.seq_relationship.weight, seq) and 0 < analysis.nsp < 1


def test_nsp_needs_running_text(tmp_path, tiny_folder):
    (tmp_path / "train.txt").write_text("the cat sat on the mat\n" * 30)
    with pytest.raises(ValueError, match="running text"):
        train(tmp_path / "out", nsp_settings(tmp_path, tiny_folder), progress=False)


def test_nsp_probabilities_match_transformers_and_accuracy_counts_them(tiny_hf, tiny_lab):
    documents = [["the cat sat", "the dog ran", "a bird flew"], ["he saw a house", "she read a book"], ["it was big"]]
    pairs = make_nsp_pairs(documents, seed=0)
    probs = nsp_probabilities(tiny_lab, [(a, b) for a, b, _ in pairs], batch_size=2)
    for (a, b, _), p in zip(pairs, probs):
        enc = tiny_lab.encode(a, b)
        with torch.no_grad():
            logits = tiny_hf(input_ids=torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.segment_ids])
                             ).seq_relationship_logits
        assert p == pytest.approx(float(torch.softmax(logits, -1)[0, 0]), abs=1e-5)
    scores = evaluate_nsp(tiny_lab, documents, seed=0, progress=False)
    expected = [(p >= 0.5) == (label == 0) for p, (_, _, label) in zip(probs, pairs)]
    assert scores["n"] == len(pairs) == 3 and scores["accuracy"] == pytest.approx(sum(expected) / 3)
    assert scores["is_next"]["n"] + scores["not_next"]["n"] == 3


def test_eval_nsp_cli_reports_json_and_refuses_what_it_cannot_score(tmp_path, tiny_folder):
    docs = tmp_path / "docs.txt"
    docs.write_text("the cat sat\nthe dog ran\na bird flew\n\nhe saw a house\nshe read a book\n")
    run = run_cli("eval-nsp", "--text-file", str(docs), "--model",
                          str(tiny_folder), "--json")
    assert run.returncode == 0, run.stderr
    scores = json.loads(run.stdout.strip().splitlines()[-1])
    assert scores["n"] == 3 and {"accuracy", "ci", "is_next", "not_next"} <= set(scores)
    one = tmp_path / "one.txt"
    one.write_text("the cat sat\nthe dog ran\n")
    run = run_cli("eval-nsp", "--text-file", str(one), "--model",
                          str(tiny_folder))
    assert run.returncode == 2 and "two documents" in run.stderr and "Traceback" not in run.stderr


def fake_brown(folder: Path) -> Path:
    """Two Brown samples in NLTK's tagged form (``word/tag`` tokens, a sentence per line, paragraphs
    apart), with what the real files have: a headline tagged ``-hl``, a doubled ``?/. ?/.``, an
    abbreviation followed by its own full stop, a dialogue dash, a lone bracket."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ca01").write_text(
        "\n\n\tJury/nn-hl finds/vbz-hl nothing/pn-hl\n\n"
        "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' was/bedz found/vbn ./.\n\n"
        "\n\n\tIt/pps was/bedz over/rb ,/, said/vbd Ivan/np Allen/np Jr./np ./.\n"
        "\n\t)/)\n"
        "\n\tWho/wps voted/vbd ?/. ?/.\n\n")
    (folder / "cn01").write_text("\n\n\t--/-- Come/vb home/nr !/. !/.\n\n\n\tAnn/np waited/vbd ./.\n\n")
    (folder / "cats.txt").write_text("ca01 news\ncn01 adventure\n")
    return folder


def test_brown_samples_become_whole_documents_of_clean_sentences(tmp_path):
    from bertviz_lab.mlm.running_text import read_brown_passages, read_origin

    passages = read_brown_passages(fake_brown(tmp_path / "brown"))
    assert [(p.origin, p.document, p.sentences) for p in passages] == [
        ("brown", "brown-ca01", ['The jury said "no evidence" was found.', "It was over, said Ivan Allen Jr.",
                                 "Who voted?"]),  # no headline, no lone bracket, no "Jr. ." or "??"
        ("brown", "brown-cn01", ["Come home!", "Ann waited."])]
    assert read_origin(tmp_path / "brown", "brown") == passages  # whole samples: a held-out one is a whole document
    assert [len(p.sentences) for p in read_brown_passages(tmp_path / "brown", passage=2)] == [2, 1, 2]
    with pytest.raises(ValueError, match="unknown running-text format"):
        read_origin(tmp_path / "brown", "epub")
    with pytest.raises(FileNotFoundError, match="cats.txt"):
        read_brown_passages(tmp_path)


def test_build_corpus_cli_takes_a_ud_and_a_brown_manifest(tmp_path, ud_files):
    from bertviz_lab import cli

    ud = tmp_path / "ud"
    ud.mkdir()
    (ud / ud_files[0].name).write_text(ud_files[0].read_text())
    (ud / "manifest.json").write_text(json.dumps([{"path": ud_files[0].name, "licence": "CC BY-SA 4.0"}]))
    brown = tmp_path / "b"
    fake_brown(brown / "brown")
    (brown / "LICENSE-brown.txt").write_text("May be used for non-commercial purposes.")
    (brown / "manifest.json").write_text(json.dumps([{"path": "brown", "format": "brown", "licence": "non-commercial",
                                                      "licence_file": "LICENSE-brown.txt", "origin": "nltk_data@abc"}]))
    out = tmp_path / "corpus"
    assert cli.main(["build-corpus", "--out", str(out), "--heldout", "10", "--heldout-sentences", "12",
                     "--wordnet", str(fake_wordnet(tmp_path / "wn")),
                     "--running-text", str(ud / "manifest.json"), "--running-text", str(brown / "manifest.json")]) == 0
    record = json.loads((out / "corpus.json").read_text())
    assert [s["name"] for s in record["sources"]] == ["wordnet", "web", "brown"]
    assert record["sources"][2]["source"] == "Brown Corpus (NLTK's tagged form) (nltk_data@abc)"
    assert (out / "LICENSE-brown.txt").read_text().startswith("May be used")
    assert [s["licence_file"] for s in record["sources"][1:]] == [None, "LICENSE-brown.txt"]  # the UD entry named none
    trained = {s for row in map(json.loads, (out / "train_docs.jsonl").read_text().splitlines()) for s in row["sentences"]}
    assert trained & {"Dan rode home.", 'The jury said "no evidence" was found.'}
    assert [s.get("heldout_unit") for s in record["sources"]] == [None, "document", "document"]
    assert cli.main(["build-corpus", "--out", str(tmp_path / "c2"), "--heldout", "10", "--heldout-sentences", "12",
                     "--wordnet", str(fake_wordnet(tmp_path / "wn")), "--running-text", str(ud / "manifest.json"),
                     "--heldout-unit", "passage"]) == 0
    assert json.loads((tmp_path / "c2" / "corpus.json").read_text())["sources"][1]["heldout_unit"] == "passage"


@pytest.mark.parametrize("manifest, message", [
    ("not json", "is not JSON"),
    ('{"path": "x"}', "expected a list of sources"),
    ('[{"path": "brown"}]', "source 1: no licence"),
    ('[{"path": "brown", "licence": "x", "format": "epub"}]', "unknown format 'epub'"),
    ('[{"path": "nowhere", "licence": "x", "format": "brown"}]', "does not exist"),
    ('[{"path": "brown", "licence": "x", "format": "brown", "licence_file": "LICENSE-none"}]', "licence file"),
    ('[{"path": "en_web-ud-test.conllu", "licence": "x"}]', "reserved for evaluation"),
    ('[{"path": "brown", "licence": "x", "format": "brown"}, {"path": "brown", "licence": "x", "format": "brown"}]',
     "two running-text sources are named 'brown'"),
])
def test_build_corpus_refuses_a_bad_manifest_before_writing_anything(tmp_path, capsys, manifest, message):
    from bertviz_lab import cli

    fake_brown(tmp_path / "brown")
    (tmp_path / "en_web-ud-test.conllu").write_text("")
    (tmp_path / "manifest.json").write_text(manifest)
    out = tmp_path / "corpus"
    code = cli.main(["build-corpus", "--out", str(out), "--wordnet", str(fake_wordnet(tmp_path / "wn")),
                     "--running-text", str(tmp_path / "manifest.json")])  # errors a user can make: no traceback
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_whole_documents_fall_back_to_passages_where_they_would_take_far_more_than_asked():
    from bertviz_lab.mlm.corpus import split_origin

    # six documents of 100 sentences (three passages each): one whole document is ten times the 10 asked
    books = [Passage("t", f"book{d}", [f"book {d} line {k}" for k in range(40 * i, min(100, 40 * i + 40))])
             for d in range(6) for i in range(3)]
    train, validation, held, unit = split_origin(books, 10, 0, seed=0, unit="document")
    assert unit == "passage" and len(held) == 1 and len(held[0].sentences) in (20, 40) and len(train) == 17
    # documents of 10 sentences: whole ones fit (20 asked, 20 taken)
    short = [Passage("t", f"d{d}", [f"d {d} line {k}" for k in range(10)]) for d in range(20)]
    train, validation, held, unit = split_origin(short, 10, 10, seed=0, unit="document")
    assert unit == "document" and len(held) == len(validation) == 1 and len(train) == 18


def test_passage_files_name_their_origin_and_old_ones_are_refused_in_a_sentence(tmp_path):
    """A passage's text comes from an *origin* (a source is only ever a kind of token-to-token weight): files
    write "origin"; one written before issue 42 ("source") is one sentence asking for a rebuild."""
    from bertviz_lab.lab import InputError
    from bertviz_lab.mlm.running_text import read_passages_jsonl, write_passages_jsonl

    new = tmp_path / "new.jsonl"
    write_passages_jsonl(new, [Passage("ewt", "d1", ["a b c"])])
    assert json.loads(new.read_text())["origin"] == "ewt"
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"source": "gum", "document": "d2", "sentences": ["x y"]}) + "\n")
    with pytest.raises(InputError, match="a passage has no 'origin' .*rebuild it with build-corpus"):
        read_passages_jsonl(old)
    assert read_passages_jsonl(new)[0].origin == "ewt"
