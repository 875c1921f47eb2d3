"""Hostile files for the naopc-sst2 protocol (issue 56): a byte-order mark is read as if absent, and an
oversize field, undecodable bytes, an empty file or a missing column is one sentence naming the file
(with exit 2 from the command line), never a traceback. No model is loaded: the file is read first."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import run_cli

from bertviz_lab import InputError
from bertviz_lab.interventions.naopc import read_labelled, read_sentence_lines
from bertviz_lab.lab import MAX_TEXT_CHARACTERS

ROOT = Path(__file__).resolve().parent.parent
BOM = b"\xef\xbb\xbf"
TSV = "sentence\tlabel\nit 's a \"charming\" film .\t1\na dull film .\t0\n"
CSV = 'word_length,token_length,label,id,text\n10,12,1,1,"a gorgeous , witty , seductive movie . "\n'


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def naopc_cli(*args: str):
    return run_cli("faithfulness", "--protocol", "naopc-sst2", *args)


def assert_one_line(run, *words: str) -> None:
    """Exit 2, nothing on stdout, one ``error:`` line on stderr holding every word."""
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ") and all(word in lines[0] for word in words), lines[0]


@pytest.mark.parametrize("name, text", [("dev.tsv", TSV), ("short.csv", CSV)])
def test_a_byte_order_mark_reads_as_if_absent(tmp_path, name, text):
    plain = write(tmp_path / name, text.encode())
    marked = write(tmp_path / f"bom-{name}", BOM + text.encode())
    assert read_labelled(marked) == read_labelled(plain) and read_labelled(plain)
    lines = write(tmp_path / "lines.txt", BOM + b"the cat sat\na dog ran\n")
    assert read_sentence_lines(lines) == ["the cat sat", "a dog ran"]


@pytest.mark.parametrize("length", [MAX_TEXT_CHARACTERS + 1, 140_000])  # under and over csv's own 131,072
@pytest.mark.parametrize("name", ["dev.tsv", "short.csv"])
def test_an_oversize_field_is_refused_by_file_line_and_limit(tmp_path, name, length):
    comma = name.endswith(".csv")
    row = f"3,5,1,7,{'a' * length}\n" if comma else f"{'a' * length}\t1\n"
    path = write(tmp_path / name, ((CSV if comma else TSV) + row).encode())
    line = 3 if comma else 4
    with pytest.raises(InputError, match=rf"^{path}, line {line}: a field is longer than 100,000 characters"):
        read_labelled(path)


def test_the_cli_refuses_an_oversize_field_or_line_in_one_line(tmp_path):
    table = write(tmp_path / "big.csv", (CSV + f"3,5,1,7,{'a' * 140_000}\n").encode())
    assert_one_line(naopc_cli("--sentences", str(table)), str(table), "line 3", "100,000 characters")
    lines = write(tmp_path / "big.txt", f"the cat sat\n{'b' * 120_000}\n".encode())
    assert_one_line(naopc_cli("--text-file", str(lines)), str(lines), "line 2: the line is longer", "100,000")


def test_undecodable_empty_and_columnless_files_are_one_sentence_each(tmp_path):
    bad = write(tmp_path / "bad.tsv", b"sentence\tlabel\nok\t1\nbad \xff\t1\n")
    assert_one_line(naopc_cli("--sentences", str(bad)), f"{bad} is not UTF-8 text: line 3, byte 24")
    bad_bom = write(tmp_path / "bad_bom.txt", BOM + b"ok\n\xff\n")
    assert_one_line(naopc_cli("--text-file", str(bad_bom)), "line 2, byte 6 cannot be decoded")
    for name, data in (("empty.tsv", b""), ("bom.csv", BOM), ("blank.tsv", b" \n\t\n")):
        assert_one_line(naopc_cli("--sentences", str(write(tmp_path / name, data))), "is empty")
    assert_one_line(naopc_cli("--text-file", str(write(tmp_path / "blank.txt", BOM + b"\n  \n"))), "is empty")
    columnless = write(tmp_path / "nolabel.csv", BOM + b"text\nfine film\n")
    assert_one_line(naopc_cli("--sentences", str(columnless)), "needs a header", "it has 'text'")
    assert "\\ufeff" not in naopc_cli("--sentences", str(columnless)).stderr
    negative = write(tmp_path / "negative.tsv", b"sentence\tlabel\na dull film .\t0\n")
    assert_one_line(naopc_cli("--sentences", str(negative)), "has no row whose 'label' is 1")


def test_python_m_refuses_an_oversize_field_with_exit_2_not_a_traceback(tmp_path):
    """The issue's case in a real process: csv's field limit once escaped as a traceback with exit 1."""
    table = write(tmp_path / "big.csv", (CSV + f"3,5,1,7,{'a' * 140_000}\n").encode())
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "faithfulness", "--protocol", "naopc-sst2",
                          "--sentences", str(table)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.splitlines() == [f"error: {table}, line 3: a field is longer than 100,000 characters, the most "
                                       "one sentence may have"]


def test_sentence_files_and_sst2_files_with_a_byte_order_mark_read_as_without(tmp_path):
    from bertviz_lab.sentences import read_lines
    from bertviz_lab.sentiment.data import read_sst2

    lines = tmp_path / "lines.txt"
    lines.write_bytes("\ufeffthe cat sat\nit rained\n".encode())
    assert read_lines(lines) == ["the cat sat", "it rained"]
    table = tmp_path / "dev.tsv"
    table.write_bytes("\ufeffsentence\tlabel\na fine film\t1\n".encode())
    assert read_sst2(table).sentences == ["a fine film"]
