"""Long command-line work says up front how much there is and about how long it takes on this
machine (measured on its first unit, never typed in), then shows a progress bar that ends at its
total, all on stderr; stdout stays the result a parser reads. Each command runs in-process on a tiny
checkpoint and tiny inputs, with stderr captured (not a terminal: the line prints anyway)."""
import json
import re

import builders
import pytest

from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

LINES = ["the cat sat on the mat and slept", "the dog ran to the park with a big red house",
         "he saw the bird flew over the house", "she read a book in the small blue house",
         "the", "a dog"]  # the last two are too short to hide two context words: not scored


# the estimate (measured after the first unit, the warm-up), or, when one report ends the work, the time it took
ESTIMATED = re.compile(r"on this machine \(measured after the first \w+, a warm-up\)$|; took .* on this machine$")


def estimate_line(stderr: str, command: str) -> str:
    """The one estimate line of ``command`` (tqdm redraws its bar with carriage returns around it)."""
    lines = [line.strip() for line in re.split(r"[\r\n]", stderr)
             if line.startswith(f"{command}: ") and ESTIMATED.search(line)]
    assert len(lines) == 1, stderr
    assert re.search(r"; (took )?(about \d+ (s|min)|about \d+ h \d+ min|under a second) on this machine", lines[0]), lines[0]
    return lines[0]


def finished(stderr: str, total: int) -> bool:
    """The bar reached its total: tqdm's last redraw reads ``total/total``."""
    return re.search(rf"\| {total}/{total} \[", stderr) is not None


def test_faithfulness_counts_the_sentences_it_scores(tmp_path, tiny_folder):
    text = tmp_path / "lines.txt"
    text.write_text("\n".join(LINES * 2) + "\n")
    run = builders.run_cli("faithfulness", "--text-file", text, "--model", tiny_folder, "--k", "2", "--resamples", "20",
                           "--rankings", "rollout", "alti", "--json")
    assert run.returncode == 0, run.stderr
    scored = {row["ranking"]: row["n"] for row in json.loads(run.stdout)["rankings"]}  # stdout: one JSON object
    assert scored == {"rollout": 8, "alti": 8, "random": 8}  # 4 of the 6 lines, twice
    line = estimate_line(run.stderr, "faithfulness")
    # 3 rankings (the random control always runs) x (2 steps + 5 ERASER bins hidden + 5 kept alone)
    assert line.startswith("faithfulness: 8 sentences x 3 rankings x (2 steps + 10 ERASER sets) = 288 perturbed inputs")
    assert line.endswith(("(measured after the first sentence, a warm-up)", "on this machine"))
    assert finished(run.stderr, 8)


def test_index_counts_the_sentences_it_indexes(tmp_path, tiny_folder):
    run = builders.run_cli("index", "--model", tiny_folder, "--out", tmp_path / "index", "--max-sentences", "40",
                           "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["sentences"] == 40
    line = estimate_line(run.stderr, "index")
    assert line.startswith("index: 40 sentences through the model, every token's embeddings at 3 layers")
    assert finished(run.stderr, 40)


def test_score_heads_counts_every_pass_over_the_treebank(tmp_path, tiny_folder):
    run = builders.run_cli("score-heads", "--model", tiny_folder, "--out", tmp_path / "out", "--resamples", "20",
                           "--null-seeds", "2", "--min-arcs", "10", "--json")
    assert run.returncode == 0, run.stderr
    sentences = json.loads(run.stdout)["sentences"]
    assert sentences == len(read_conllu(SAMPLE_TREEBANK)) == 66
    line = estimate_line(run.stderr, "score-heads")
    assert line.startswith("score-heads: 66 sentences x 4 passes (the checkpoint, null model, seed 0, null model, "
                           "seed 1, head ensembles) = 264 sentence passes")
    assert finished(run.stderr, 264)


def test_a_score_heads_job_estimates_each_pair(tmp_path, tiny_folder):
    import shutil

    for language in ("de", "fr"):
        (tmp_path / "ud" / language).mkdir(parents=True)
        shutil.copy(SAMPLE_TREEBANK, tmp_path / "ud" / language / "dev.conllu")
    run = builders.run_cli("score-heads", "--model", tiny_folder, "--conllu", tmp_path / "ud", "--out", tmp_path / "out",
                           "--resamples", "20", "--null-seeds", "1", "--min-arcs", "10", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["pairs"] == 2
    for language in ("de", "fr"):  # each pair: its own line and bar (66 sentences, the model and one null model)
        lines = [line for line in re.split(r"[\r\n]", run.stderr) if f" x {language}/dev.conllu: 66 sentences x" in line]
        assert len(lines) == 1 and lines[0].endswith("/dev.conllu: 66 sentences x 2 passes (the checkpoint, null model, "
                                                     "seed 0) = 132 sentence passes; " + lines[0].split("; ")[-1])
        assert ESTIMATED.search(lines[0].split("; ")[-1]), lines[0]
    assert len(re.findall(r"\| 132/132 \[", run.stderr)) >= 2


def test_structural_probe_counts_training_and_evaluation_passes(tmp_path, tiny_folder):
    run = builders.run_cli("structural-probe", "--train", SAMPLE_TREEBANK, "--treebank", SAMPLE_TREEBANK,
                           "--model", tiny_folder, "--epochs", "2", "--resamples", "20", "--kinds", "distance",
                           "--out", tmp_path / "out", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["sentences"]["evaluated"] == 66
    # 66 train sentences: 59 to train on and a seeded 10% (7) to stop on; the model's and the random
    # model's distance probes each: word vectors of all 66, then at most 2 epochs over the 66; then the
    # 66 evaluated sentences' word vectors (model, random weights) and attention maps; and the control task's
    # distance probes on each model's word vectors (Hewitt & Liang): at most 2 epochs over the 66, no new vectors
    total = 2 * (66 + 2 * 66) + 2 * (2 * 66) + 3 * 66
    line = estimate_line(run.stderr, "structural-probe")
    assert line.startswith(f"structural-probe: up to {total} sentence passes (word vectors of training sentences: 59; "
                           "word vectors of stopping sentences: 7; distance probes, up to 2 epochs: 132; ")
    assert "attention maps of evaluated sentences: 66)" in line
    assert "distance probes, up to 2 epochs, control task: 132; " in line
    assert finished(run.stderr, total)


@pytest.mark.parametrize("seconds, said", [(0.4, "under a second"), (40, "about 40 s"), (240, "about 4 min"),
                                           (4800, "about 1 h 20 min")])
def test_durations_read_as_a_person_says_them(seconds, said):
    from bertviz_lab.cli.options import duration

    assert duration(seconds) == said


def test_the_estimate_leaves_out_the_warm_up_and_scales_the_rest(monkeypatch, capsys):
    """2 s for the first 4 of 100 units (the warm-up), then 1 s for the next 4: 3 s so far and 92 units at
    0.25 s each, about 26 s in all (scaling the first units' time would say 50 s), said once."""
    from bertviz_lab.cli import options

    clock = iter([10.0, 10.0, 12.0, 13.0, 13.0])  # made, first call (0 done: the clock starts), 4 done, 8 done
    monkeypatch.setattr(options.time, "perf_counter", lambda: next(clock))
    with options.WorkBar("work", "item", lambda n: f"{n} items", "batch") as bar:
        bar(0, 100)
        bar(4, 100)
        bar(8, 100)
        bar(100, 100)
    err = capsys.readouterr().err
    assert estimate_line(err, "work") == "work: 100 items; about 26 s on this machine (measured after the first batch, a warm-up)"
    assert finished(err, 100)


def test_the_estimate_weighs_units_of_different_sizes(monkeypatch, capsys):
    """Units of cost 1, 1, 1, 1, 4, 4: the first (3 s, the warm-up); one more unit alone is not yet measured on
    (one unit's time varies 2x with its length); three of cost 1 in 3 s, so the last two (cost 8) take 8 s:
    6 s so far + 8 s = about 14 s (unweighted, the same rate would say 6 s + 2 x 1 s = 8 s)."""
    from bertviz_lab.cli import options

    weights = [1, 1, 1, 1, 4, 4]
    clock = iter([0.0, 0.0, 3.0, 6.0])  # made, 0 done (the clock starts), 1 done (the warm-up), 4 done (said)
    monkeypatch.setattr(options.time, "perf_counter", lambda: next(clock))
    with options.WorkBar("work", "item", lambda n: f"{n} items", "item", cost=lambda k: float(sum(weights[:k]))) as bar:
        bar(0, 6)
        bar(1, 6)
        bar(2, 6)
        assert "on this machine" not in capsys.readouterr().err  # one unit after the warm-up: not measured on yet
        bar(3, 6)
        bar(4, 6)
        bar(6, 6)
    assert estimate_line(capsys.readouterr().err, "work").startswith("work: 6 items; about 14 s on this machine")


def test_a_work_done_in_one_report_says_how_long_it_took(monkeypatch, capsys):
    from bertviz_lab.cli import options

    clock = iter([0.0, 0.0, 40.0])
    monkeypatch.setattr(options.time, "perf_counter", lambda: next(clock))
    with options.WorkBar("work", "item", lambda n: f"{n} items", "item") as bar:
        bar(0, 3)
        bar(3, 3)
    assert estimate_line(capsys.readouterr().err, "work") == "work: 3 items; took about 40 s on this machine"


def test_the_naopc_estimate_weighs_each_sentence_by_its_masked_inputs(tiny_lab):
    """Edin et al.'s exact bounds mask every subset of a sentence's words: 2^words inputs of its tokens each, plus its
    explanations (EXPLAINING inputs' worth); a sentence out of bounds is counted, not run, so it costs nothing."""
    from bertviz_lab.cli.explanation_commands import EXPLAINING, naopc_cost
    from bertviz_lab.interventions.naopc import MAX_WORDS

    lines = ["the cat sat", "the cat sat on the mat", " ".join(["cat"] * (MAX_WORDS + 1))]
    cost = naopc_cost(tiny_lab, lines)
    first = 5 * (2 ** 3 + EXPLAINING)  # [CLS] the cat sat [SEP]: 5 tokens, 3 words
    second = 8 * (2 ** 6 + EXPLAINING)
    assert [cost(k) for k in range(4)] == [0.0, first, first + second, first + second]
