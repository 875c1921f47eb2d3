"""An interrupted train-mlm-head run resumes to exactly the result of an uninterrupted one."""
import random

import pytest
from safetensors.torch import load_file

from bertviz_lab.mlm.train import CHECKPOINT, TrainSettings, train


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    words = "the cat sat on mat dog ran to park with a ball big red small blue house tree".split()
    rng = random.Random(0)
    lines = [" ".join(rng.choices(words, k=rng.randint(4, 9))) for _ in range(260)]
    (folder / "train.txt").write_text("\n".join(lines) + "\n")
    return folder


def settings(corpus, tiny_folder):
    return TrainSettings(corpus=str(corpus), steps=8, seed=3, device="cpu", train_layers=1, batch_size=8,
                         eval_every=4, validation_lines=20, bf16=False, checkpoint_every=3, model=str(tiny_folder))


def test_interrupted_training_resumes_to_the_same_weights(tmp_path, corpus, tiny_folder):
    whole = train(tmp_path / "whole", settings(corpus, tiny_folder), progress=False)
    assert whole["steps"] == 8 and not (tmp_path / "whole" / CHECKPOINT).exists()
    # killed after step 5: the last checkpoint is from step 5, written atomically
    assert train(tmp_path / "cut", settings(corpus, tiny_folder), progress=False, stop_after=5) is None
    assert (tmp_path / "cut" / CHECKPOINT).is_file() and not (tmp_path / "cut" / "head.safetensors").exists()
    resumed = train(tmp_path / "cut", settings(corpus, tiny_folder), progress=False, resume=True)
    a = load_file(str(tmp_path / "whole" / "head.safetensors"))
    b = load_file(str(tmp_path / "cut" / "head.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert [h["loss"] for h in whole["history"]] == [h["loss"] for h in resumed["history"]]


def test_resume_refuses_other_settings_or_a_missing_checkpoint(tmp_path, corpus, tiny_folder):
    train(tmp_path / "cut", settings(corpus, tiny_folder), progress=False, stop_after=3)
    other = settings(corpus, tiny_folder)
    other.lr = 1e-3
    with pytest.raises(ValueError, match="lr"):
        train(tmp_path / "cut", other, progress=False, resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(tmp_path / "nothing", settings(corpus, tiny_folder), progress=False, resume=True)
