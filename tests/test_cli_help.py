"""Every sub-command's --help ends with two examples that parse; --text and repeated --conllu work."""
import shlex

import pytest

from bertviz_lab.cli import EXAMPLES, build_parser, main


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_help_ends_with_two_examples_that_parse(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    assert text.rstrip().splitlines()[-3] == "examples:" and len(EXAMPLES[command]) == 2
    for example in EXAMPLES[command]:
        argv = shlex.split(example)[1:]
        assert build_parser().parse_args(argv).command == command


def test_every_sub_command_has_examples():
    commands = {c for c in build_parser()._subparsers._group_actions[0].choices}
    assert commands == set(EXAMPLES)


def test_analyze_takes_the_text_as_an_option_too(tiny_folder, capsys):
    import json

    assert main(["analyze", "--text", "the cat sat", "--model", str(tiny_folder), "--device", "cpu", "--json",
                 "--no-attention"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    assert main(["analyze", "the cat", "--text", "the dog", "--model", str(tiny_folder)]) == 2
    assert "give the input once" in capsys.readouterr().err
    assert main(["analyze", "--model", str(tiny_folder)]) == 2
    assert "give the input text" in capsys.readouterr().err


def test_conllu_is_repeatable_and_takes_several_paths():
    args = build_parser().parse_args(["score-heads", "--out", "o", "--conllu", "a.conllu", "b.conllu",
                                      "--conllu", "c.conllu"])
    assert [p.name for p in args.conllu] == ["a.conllu", "b.conllu", "c.conllu"]


def test_every_command_takes_json_and_its_help_says_what_it_changes():
    """--json means one JSON object and its absence a short summary, for every command alike."""
    commands = build_parser()._subparsers._group_actions[0].choices
    for name, command in commands.items():
        [flag] = [a for a in command._actions if a.dest == "json"]
        assert flag.option_strings == ["--json"] and flag.help.startswith("print one JSON object instead of a short summary"), name
    assert "probe" not in commands  # the old name of score-heads is gone (issue 57)


def test_a_refused_flag_is_one_sentence_naming_the_help(capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["sweep", "x", "--kind", "sideways"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    [line] = err.splitlines()  # no usage dump: one sentence (argparse words the choices per Python version)
    assert line.startswith("error: argument --kind: invalid choice: ") and "sideways" in line and "positions" in line
    assert line.endswith(" (see bertviz-lab sweep --help)")
