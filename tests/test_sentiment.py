"""The shipped SST-2 classifier: how it is trained (resumable legs that end where an uninterrupted run
ends), how SST-2 files are read, and what the shipped weights predict."""
import json
import random

import pytest
from safetensors.torch import load_file

from bertviz_lab.sentiment.data import read_sst2
from bertviz_lab.sentiment.fine_tune import HEAD_FILE, ClassifierSettings, train

WORDS = "the a cat dog sat on mat ran to park with red blue house tree".split()


@pytest.fixture(scope="module")
def sst2_folder(tmp_path_factory):
    """Phrases whose label is whether they contain "big": learnable, and decided by one word."""
    folder = tmp_path_factory.mktemp("sst2")
    rng = random.Random(0)

    def rows(n):
        out = []
        for _ in range(n):
            words = rng.choices(WORDS, k=rng.randint(3, 7))
            label = rng.random() < 0.5
            if label:
                words.insert(rng.randrange(len(words) + 1), "big")
            out.append(f"{int(label)}\t{' '.join(words)}")
        return out

    (folder / "train.tsv").write_text("label\tsentence\n" + "\n".join(rows(400)) + "\n")
    (folder / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join("\t".join(r.split("\t")[::-1]) for r in rows(60)) + "\n")
    return folder


def settings(folder, tiny_folder, **extra):
    values = dict(train=str(folder / "train.tsv"), validation=str(folder / "dev.tsv"), model=str(tiny_folder),
                  train_layers=1, steps=120, batch_size=16, lr=3e-3, head_lr=3e-3, checkpoint_every=7, seed=1)
    values.update(extra)
    return ClassifierSettings(**values)


def test_sst2_files_are_read_in_either_column_order_and_a_bad_row_is_named(sst2_folder, tmp_path):
    train, dev = read_sst2(sst2_folder / "train.tsv"), read_sst2(sst2_folder / "dev.tsv")
    assert len(train.sentences) == 400 and len(dev.sentences) == 60
    assert all(("big" in s.split()) == bool(label) for s, label in zip(dev.sentences, dev.labels))
    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\na fine film\t1\na film\tpositive\n")
    with pytest.raises(ValueError, match="line 3"):
        read_sst2(bad)
    (tmp_path / "nohead.tsv").write_text("a film\t1\n")
    with pytest.raises(ValueError, match="header"):
        read_sst2(tmp_path / "nohead.tsv")


def test_a_leg_cut_short_resumes_to_the_weights_of_one_run_and_the_classifier_learns(sst2_folder, tiny_folder, tmp_path):
    whole = train(tmp_path / "whole", settings(sst2_folder, tiny_folder), progress=False)
    assert train(tmp_path / "cut", settings(sst2_folder, tiny_folder), stop_after=50, progress=False) is None
    assert not (tmp_path / "cut" / HEAD_FILE).exists()
    resumed = train(tmp_path / "cut", settings(sst2_folder, tiny_folder), resume=True, progress=False)
    a, b = load_file(str(tmp_path / "whole" / HEAD_FILE)), load_file(str(tmp_path / "cut" / HEAD_FILE))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert [h["loss"] for h in whole["history"]] == [h["loss"] for h in resumed["history"]]
    assert [leg["to"] for leg in resumed["legs"]] == [50, 120]
    # only what was trained is shipped: the top layer, the pooler and the classifier
    assert {k.split(".")[0] + "." + k.split(".")[1] for k in a} == {"bert.encoder", "bert.pooler", "classifier.out_proj"}
    assert {k.split(".")[3] for k in a if k.startswith("bert.encoder.")} == {"1"}
    assert json.loads((tmp_path / "whole" / "config.json").read_text())["id2label"] == {"0": "negative", "1": "positive"}
    assert whole["validation_accuracy"] >= 0.9, whole["validation_accuracy"]  # "big" decides; chance is 0.5


def test_resume_refuses_other_settings(sst2_folder, tiny_folder, tmp_path):
    train(tmp_path / "cut", settings(sst2_folder, tiny_folder), stop_after=7, progress=False)
    with pytest.raises(ValueError, match="lr"):
        train(tmp_path / "cut", settings(sst2_folder, tiny_folder, lr=1e-3), resume=True, progress=False)


def test_the_shipped_classifier_names_its_weights_and_reads_sentiment():
    import bertviz_lab

    lab = bertviz_lab.load("sst2", device="cpu")
    assert "SST-2" in lab.checkpoint_info().describe() and "layers 4-6" in lab.checkpoint_info().describe()
    assert lab.model.class_labels == ["negative", "positive"]
    good = lab.analyze("a gorgeous , witty , seductive movie .").classes
    bad = lab.analyze("a thoroughly awful and boring movie .").classes
    assert good[0].label == "positive" and good[0].probability > 0.9
    assert bad[0].label == "negative" and bad[0].probability > 0.9


def test_the_shipped_card_is_written_from_its_run_record(tmp_path):
    import shutil

    from bertviz_lab.resources import SST2_CLASSIFIER
    from bertviz_lab.sentiment.card import write_card

    shutil.copy(SST2_CLASSIFIER / "run.json", tmp_path / "run.json")
    card = write_card(tmp_path).read_text()
    assert card == (SST2_CLASSIFIER / "MODEL_CARD.md").read_text()
    record = json.loads((SST2_CLASSIFIER / "run.json").read_text())
    assert f"**{record['validation_accuracy']:.3f}**" in card and record["legs"][-1]["to"] == record["settings"]["steps"]


def test_the_protocol_runs_offline_on_the_shipped_classifier_and_the_papers_short_set():
    from builders import run_cli

    from bertviz_lab.interventions.naopc import read_labelled
    from bertviz_lab.resources import NAOPC_SHORT_SET

    assert len(read_labelled(NAOPC_SHORT_SET)) == 66  # the paper's short set: positives of at most 10 words
    run = run_cli("faithfulness", "--protocol", "naopc-sst2", "--max-sentences", "2", "--rankings", "random",
                  "--resamples", "20", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert "SST-2 classifier" in out["model"] and out["sentences_file"].endswith("sst2_short.csv")
    assert [r["ranking"] for r in out["rankings"]] == ["random"] and out["rankings"][0]["n"] == 2
    assert out["above_half"] == 2  # "it 's a charming and often affecting journey ." and the gorgeous movie
