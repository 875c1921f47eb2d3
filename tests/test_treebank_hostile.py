"""Real-world treebank content and jobs that once crashed or lost results silently (issue 26):
a byte-order mark, FORMs holding Unicode line separators, words the tokenizer deletes, treebanks
with nothing to score, two treebanks of one file name in a job, and a small MLM corpus."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.cli import main
from bertviz_lab.lab import InputError
from bertviz_lab.syntax.scoring import check_scored, score_treebank
from bertviz_lab.syntax.summary import Settings, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, Sentence, read_conllu

ROOT = Path(__file__).resolve().parent.parent
DELETED = ["\u200b", "\u00ad", "\u0301", "\x07"]  # zero-width space, soft hyphen, combining acute, BEL
FAST = Settings(resamples=30, min_arcs=5)


def conllu(words: list[str], sent_id: str = "s") -> str:
    """One sentence block: word 1 is the root, every other word hangs on it."""
    rows = [f"{i}\t{w}\t_\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i, w in enumerate(words, start=1)]
    return f"# sent_id = {sent_id}\n" + "\n".join(rows) + "\n\n"


def with_form(sentence: Sentence, index: int, form: str) -> Sentence:
    """A copy of ``sentence`` whose word ``index`` (0-based) is ``form``."""
    words = list(sentence.words)
    words[index] = form
    return Sentence(words, list(sentence.heads), list(sentence.relations), list(sentence.upos), sentence.text,
                    f"{sentence.sent_id}-hostile", sentence.line)


def score_heads(capsys, *args) -> tuple[int, str, str]:
    code = main(["score-heads", "--json", "--device", "cpu", "--resamples", "30", "--min-arcs", "5", "--no-null-model",
                 *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_error_line(err: str) -> str:
    lines = [line for line in err.replace("\r", "\n").splitlines()  # no progress bar, no estimate of the work
             if line.strip() and "%|" not in line and "on this machine (measured after the first" not in line
             and "; took " not in line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# ---- 1. reading -----------------------------------------------------------------------------
def test_a_byte_order_mark_is_read_as_nothing(tmp_path):
    path = tmp_path / "bom.conllu"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE_TREEBANK.read_bytes())
    assert [s.words for s in read_conllu(path)] == [s.words for s in read_conllu(SAMPLE_TREEBANK)]


def test_forms_with_unicode_line_breaks_stay_one_word(tmp_path):
    """str.splitlines() breaks at these; conllu's own parse does not, but it splits fields at two
    spaces, so the reader splits word lines at tabs itself. Windows line ends are fine too."""
    forms = ["a\u2028b", "x\u0085y", "p\u2029q", "c\x0bd", "e\x0cf", "g\x1ch", "two  spaces"]
    path = tmp_path / "breaks.conllu"
    path.write_bytes(conllu(forms).replace("\n", "\r\n").encode("utf-8"))
    (sentence,) = read_conllu(path)
    assert sentence.words == forms
    assert sentence.heads == [0, 1, 1, 1, 1, 1, 1] and sentence.relations == ["root"] + ["dep"] * 6
    assert sentence.sent_id == "s" and sentence.text == " ".join(forms)


def test_conllu_itself_keeps_unicode_line_breaks_inside_a_form():
    """What the reader relies on when it hands conllu a comment line or an ID."""
    import conllu as library

    (parsed,) = library.parse(conllu(["a\u2028b", "x\u0085y"]))
    assert [t["form"] for t in parsed] == ["a\u2028b", "x\u0085y"]


# ---- 2. words the tokenizer deletes ----------------------------------------------------------
@pytest.mark.parametrize("form", DELETED)
def test_words_without_pieces_skip_their_sentence_and_leave_the_others_unchanged(tiny_lab, form):
    clean = read_conllu(SAMPLE_TREEBANK)[:12]
    hostile = clean[:4] + [with_form(clean[2], 1, form)] + clean[4:]
    assert tiny_lab.encode_words(hostile[4].words).word_ids.count(1) == 0  # the word really has no piece
    before, after = score_treebank(tiny_lab, clean), score_treebank(tiny_lab, hostile)
    assert (after.sentences_used, after.sentences_skipped) == (12, 0)
    assert (after.sentences_skipped_empty_words, after.words_without_pieces) == (1, 1)
    assert (before.sentences_skipped_empty_words, before.words_without_pieces) == (0, 0)
    # every other sentence scores exactly as before (ids after the hostile one shift by one)
    np.testing.assert_array_equal(np.where(after.arcs.sentence > 4, after.arcs.sentence - 1, after.arcs.sentence),
                                  before.arcs.sentence)
    assert 4 not in after.arcs.sentence
    for kind, hits in before.arcs.hits.items():
        np.testing.assert_array_equal(after.arcs.hits[kind], hits, err_msg=kind)
    for key, total in before.stats_sum.items():
        np.testing.assert_allclose(after.stats_sum[key], total, rtol=1e-6, err_msg=key)
    a, b = summarise(before, settings=FAST), summarise(after, settings=FAST)
    for table in ("head_scores", "best_heads", "uuas"):
        pd.testing.assert_frame_equal(getattr(b, table), getattr(a, table))
    assert (b.sentences_skipped_empty_words, b.words_without_pieces) == (1, 1)


def test_the_score_heads_cli_and_report_count_words_without_pieces(tmp_path, tiny_folder, capsys):
    blocks = "".join(conllu(["the", "cat", "sat", "on", "the", "mat"], f"ok{i}") for i in range(6))
    path = tmp_path / "hostile.conllu"
    path.write_text(blocks + conllu(["the", "\u200b", "cat", "\x07"], "bad"), encoding="utf-8")
    code, out, err = score_heads(capsys, "--conllu", str(path), "--model", str(tiny_folder), "--out", str(tmp_path / "o"))
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert (result["sentences"], result["skipped"]) == (6, 0)
    assert (result["skipped_empty_words"], result["words_without_pieces"]) == (1, 2)
    assert "skipped 0 as too long and 1 for 2 words that become no word piece" in err
    report = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "skipped as too long: 0; skipped for a word that becomes no word piece" in report
    assert "control characters): 1 (2 such words)" in report


def test_a_sentence_of_deleted_words_cannot_be_drawn_and_says_why(tiny_lab):
    from bertviz_lab.syntax.scoring import sentence_word_attention

    with pytest.raises(InputError, match=r"word 2 \('\\u200b'\) of this sentence becomes no word piece"):
        sentence_word_attention(tiny_lab, Sentence(["the", "\u200b", "cat"], [0, 1, 1], ["root", "dep", "dep"]))


# ---- 3. nothing to score ---------------------------------------------------------------------
def test_one_word_sentences_are_an_input_error_not_a_numpy_error(tiny_lab):
    scores = score_treebank(tiny_lab, [Sentence(["cat"], [0], ["root"]) for _ in range(300)])
    assert scores.sentences_used == 300 and not (~scores.arcs.is_root).any()
    with pytest.raises(InputError, match="the 300 sentences scored have one word each"):
        summarise(scores)


def test_every_sentence_skipped_is_an_input_error_with_both_reasons(tiny_lab):
    sentences = [Sentence(["the", form, "cat"], [0, 1, 1], ["root", "dep", "dep"]) for form in DELETED]
    sentences.append(Sentence(["the", "cat", "sat", "on", "the", "mat"], [0, 1, 1, 1, 1, 1], ["root"] + ["dep"] * 5))
    scores = score_treebank(tiny_lab, sentences, max_length=6)
    assert (scores.sentences_used, scores.sentences_skipped, scores.sentences_skipped_empty_words) == (0, 1, 4)
    with pytest.raises(InputError) as info:
        check_scored(scores, tiny_lab, 6)
    assert str(info.value) == ("no sentence could be scored: 1 is longer than 6 tokens and 4 have a word the "
                               "tokenizer deletes entirely (4 such words: only zero-width, soft-hyphen, combining "
                               "or control characters)")
    with pytest.raises(InputError, match="no sentence could be scored"):
        summarise(scores)


def test_the_score_heads_cli_answers_one_line_for_one_word_sentences(tmp_path, tiny_folder, capsys):
    path = tmp_path / "one-word.conllu"
    path.write_text("".join(conllu(["cat"], f"s{i}") for i in range(200)), encoding="utf-8")
    code, _, err = score_heads(capsys, "--conllu", str(path), "--model", str(tiny_folder), "--out", str(tmp_path / "o"))
    assert code == 2
    assert "one word each" in one_error_line(err)
    # the same through a job (two treebanks): the pair is named, nothing half-written is left as done
    other = tmp_path / "two.conllu"
    other.write_text(conllu(["the", "cat", "sat"]), encoding="utf-8")
    code, _, err = score_heads(capsys, "--conllu", str(other), str(path), "--model", str(tiny_folder),
                         "--out", str(tmp_path / "job"))
    assert code == 2 and "Traceback" not in err
    errors = [line[line.index("error: "):] for line in err.splitlines() if "error: " in line]
    assert errors == [f"error: {tiny_folder} x one-word.conllu: nothing to score: the 200 sentences scored have one "
                      "word each, and a head is scored on arcs between two words (leave this treebank out; the "
                      "pairs done so far are kept)"]
    # the pair scored before the failure is kept complete; nothing half-written is left behind
    from bertviz_lab.syntax.job import DONE

    done = [folder.name for folder in (tmp_path / "job" / "pairs").iterdir() if (folder / DONE).is_file()]
    assert len(done) == 1 and "two" in done[0], done
    assert not list((tmp_path / "job").rglob(".*partial-*"))


@pytest.mark.slow
def test_five_thousand_one_word_sentences_through_python_m(tmp_path, tiny_folder):
    path = tmp_path / "one-word.conllu"
    path.write_text("".join(conllu(["cat"], f"s{i}") for i in range(5000)), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "score-heads", "--conllu", str(path), "--model",
                          str(tiny_folder), "--device", "cpu", "--out", str(tmp_path / "o")],
                         capture_output=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=240)
    err = run.stderr.decode("utf-8", "replace")
    assert run.returncode == 2 and "Warning" not in err, err
    assert one_error_line(err) == ("error: nothing to score: the 5000 sentences scored have one word each, and a "
                                   "head is scored on arcs between two words")


# ---- 4. two treebanks of one file name in a job -----------------------------------------------
def same_name_treebanks(folder: Path) -> tuple[Path, Path]:
    """de/dev.conllu and fr/dev.conllu: the sample treebank's two halves."""
    blocks = [b for b in SAMPLE_TREEBANK.read_text().split("\n\n") if b.strip()]
    paths = []
    for language, part in (("de", blocks[:30]), ("fr", blocks[30:])):
        (folder / language).mkdir(parents=True)
        paths.append(folder / language / "dev.conllu")
        paths[-1].write_text("\n\n".join(part) + "\n\n", encoding="utf-8")
    return paths[0], paths[1]


def check_both_treebanks_once(out: Path, lab, de: Path, fr: Path) -> None:
    from bertviz_lab.syntax.job import DONE

    done = sorted(p.parent for p in (out / "pairs").glob(f"*/{DONE}"))
    assert len(done) == 2 and done[0] != done[1]
    tidy, best = pd.read_csv(out / "scores.csv"), pd.read_csv(out / "best_heads.csv")
    assert set(tidy.treebank) == {"de/dev.conllu", "fr/dev.conllu"}
    assert not tidy.duplicated(["model", "treebank", "relation", "direction", "layer", "head"]).any()
    assert set(best.treebank) == {"de/dev.conllu", "fr/dev.conllu"}
    for path, name in ((de, "de/dev.conllu"), (fr, "fr/dev.conllu")):  # each pair holds its own treebank
        alone = summarise(score_treebank(lab, read_conllu(path)), settings=FAST).head_scores
        mine = tidy[tidy.treebank == name].merge(alone, on=["relation", "direction", "layer", "head"],
                                                 suffixes=("", "_alone"))
        assert len(mine) == len(alone) == (tidy.treebank == name).sum(), name  # its rows, once each
        assert (mine.correct == mine.correct_alone).all() and (mine.total == mine.total_alone).all(), name
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "de/dev.conllu" in report and "fr/dev.conllu" in report


def test_a_job_keeps_two_treebanks_of_one_file_name_apart(tmp_path, tiny_lab):
    from bertviz_lab.reports.syntax_report import job_report_html
    from bertviz_lab.syntax.job import Job, complete_pairs, pair_folder, run_job

    de, fr = same_name_treebanks(tmp_path / "ud")
    assert pair_folder(tmp_path, "m", de) != pair_folder(tmp_path, "m", fr)
    job = Job([tiny_lab.checkpoint_id], [de, fr], tmp_path / "job", FAST, null=False)
    said: list[str] = []
    run_job(job, lambda _: tiny_lab, say=said.append, report=job_report_html)
    check_both_treebanks_once(job.out, tiny_lab, de, fr)
    assert complete_pairs(job) == 2
    assert any(line.startswith(f"{tiny_lab.checkpoint_id} x de/dev.conllu: ") for line in said)
    # run again: both pairs are found, neither is scored again
    said.clear()
    run_job(job, lambda _: pytest.fail("nothing is left to score"), say=said.append)
    assert sum("done earlier, skipped" in line for line in said) == 2


def test_the_score_heads_cli_counts_the_pairs_it_wrote(tmp_path, tiny_lab, capsys):
    de, fr = same_name_treebanks(tmp_path / "ud")
    out = tmp_path / "job"
    code, stdout, err = score_heads(capsys, "--conllu", str(tmp_path / "ud"), "--model", tiny_lab.checkpoint_id,
                              "--out", str(out))
    assert code == 0, err
    assert json.loads(stdout.strip().splitlines()[-1])["pairs"] == 2
    check_both_treebanks_once(out, tiny_lab, de, fr)
    # a file named again by another spelling is the same pair, not a third one
    spellings = [str(de), str(de.resolve()), str(tmp_path / "ud" / "fr" / ".." / "de" / "dev.conllu"), str(fr)]
    code, stdout, err = score_heads(capsys, "--conllu", *spellings, "--model", tiny_lab.checkpoint_id, "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert json.loads(stdout.strip().splitlines()[-1])["pairs"] == 2
    check_both_treebanks_once(tmp_path / "b", tiny_lab, de, fr)


# ---- 5. a small MLM corpus -------------------------------------------------------------------
def small_corpus(folder: Path, n: int) -> Path:
    words = "the cat sat on mat dog ran to park with a big red small blue house tree".split()
    rng = random.Random(1)
    folder.mkdir()
    (folder / "train.txt").write_text("\n".join(" ".join(rng.choices(words, k=rng.randint(4, 9))) for _ in range(n))
                                      + "\n", encoding="utf-8")
    return folder


def test_a_corpus_of_a_few_hundred_lines_trains(tmp_path, tiny_folder):
    """train.txt of 1,000 lines or fewer once went entirely to validation (1,000 lines by default),
    leaving nothing to train on: 'pop from empty list' at step 0."""
    from bertviz_lab.mlm.train import TrainSettings, train

    corpus = small_corpus(tmp_path / "corpus", 300)
    settings = TrainSettings(corpus=str(corpus), steps=3, seed=0, device="cpu", train_layers=1, batch_size=8,
                             eval_every=3, bf16=False, model=str(tiny_folder))
    assert settings.validation_lines == 1000  # the default the CLI uses
    record = train(tmp_path / "out", settings, progress=False)
    assert record["steps"] == 3 and (tmp_path / "out" / "head.safetensors").is_file()
    assert (record["train_lines"], record["validation_lines"]) == (270, 30)  # a tenth is watched
    assert record["history"][-1]["n"] > 0


@pytest.mark.parametrize("text, words", [("", "no line to train on"),
                                         ("\u200b\n\x07\n\u00ad\n", "nothing to mask")])
def test_a_corpus_with_nothing_to_train_on_raises_a_value_error_that_says_why(tmp_path, tiny_folder, text, words):
    from bertviz_lab.mlm.train import TrainSettings, train

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text(text, encoding="utf-8")
    settings = TrainSettings(corpus=str(corpus), steps=2, device="cpu", train_layers=1, batch_size=4, bf16=False,
                             model=str(tiny_folder))
    with pytest.raises(ValueError, match=words):
        train(tmp_path / "out", settings, progress=False)


def test_train_mlm_head_cli_names_an_empty_corpus(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text("\n\n", encoding="utf-8")
    code = main(["train-mlm-head", "--corpus", str(corpus), "--out", str(tmp_path / "out"), "--device", "cpu"])
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"error: {corpus}/train.txt has no line to train on: it needs at least one non-empty line (two or more "
        "to also watch a validation line)")
