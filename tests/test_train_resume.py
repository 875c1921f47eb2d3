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


def test_a_chain_of_legs_equals_one_run_and_records_every_leg(tmp_path, corpus, tiny_folder):
    whole = train(tmp_path / "whole", settings(corpus, tiny_folder), progress=False)
    out = tmp_path / "chain"
    # a leg of 0 minutes ends after its first step, with a checkpoint: 8 steps take 8 legs
    ended = [train(out, settings(corpus, tiny_folder), progress=False, leg_minutes=0, command="leg 1")]
    while ended[-1] is None:
        ended.append(train(out, settings(corpus, tiny_folder), progress=False, resume=True, leg_minutes=0,
                           command=f"leg {len(ended) + 1}"))
    record = ended[-1]
    assert len(ended) == 8 and all(r is None for r in ended[:-1])
    assert [(leg["leg"], leg["from_step"], leg["to_step"]) for leg in record["legs"]] == [
        (i + 1, i, i + 1) for i in range(8)]
    assert [leg["command"] for leg in record["legs"]] == [f"leg {i + 1}" for i in range(8)]
    a = load_file(str(tmp_path / "whole" / "head.safetensors"))
    b = load_file(str(out / "head.safetensors"))
    assert all((a[k] == b[k]).all() for k in a)
    # each validation point (every 4 steps) left a head the selection rule can load
    assert sorted(p.name for p in (out / "steps").iterdir()) == ["step-4", "step-8"]
    assert (out / "steps" / "step-8" / "head.safetensors").read_bytes() == (out / "head.safetensors").read_bytes()
    assert whole["legs"] == [{**whole["legs"][0], "leg": 1, "from_step": 0, "to_step": 8}]
