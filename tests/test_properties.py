"""Property-based tests (Hypothesis): any text either analyses or gives an InputError; any bytes as
a CoNLL-U upload either parse or give a TreebankError naming the file (and the line, when one line is
at fault); nothing else escapes."""
import re

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from bertviz_lab import InputError
from bertviz_lab.treebank import TreebankError, read_conllu

ANY_TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=()), max_size=300),  # surrogates and controls included
    st.lists(st.sampled_from(["[MASK]", "[mask]", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "the", "cat", "##ing", " ", "\t",
                              "\u200b", "é", "日本"]), max_size=80).map("".join),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(text=ANY_TEXT, pair=st.one_of(st.none(), ANY_TEXT), top_k=st.integers(-3, 60))
def test_any_text_analyses_or_says_why(tiny_lab, text, pair, top_k):
    try:
        result = tiny_lab.analyze(text, pair=pair, top_k=top_k, truncate=True)
    except InputError as error:
        assert str(error)  # a message a person can act on
        return
    n = len(result.tokens)
    assert result.attention.shape[-2:] == (n, n) and result.tokens[0] == "[CLS]"


LINE = st.one_of(
    st.text(st.characters(blacklist_categories=()), max_size=40),
    st.builds(lambda fields: "\t".join(fields), st.lists(st.text(max_size=6), min_size=10, max_size=10)),
    st.sampled_from(["# text = x", "", "1\tthe\t_\tDET\t_\t_\t2\tdet\t_\t_", "2\tcat\t_\tNOUN\t_\t_\t0\troot\t_\t_",
                     "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", "3.1\tx\t_\t_\t_\t_\t_\t_\t2:dep\t_"]),
)


UPLOAD = st.one_of(st.binary(max_size=400),
                   st.lists(LINE, max_size=12).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")))


@SETTINGS
@given(data=UPLOAD)
def test_any_upload_parses_or_names_the_file(tmp_path, data):
    path = tmp_path / "upload.conllu"
    path.write_bytes(data)
    try:
        sentences = read_conllu(path)
    except TreebankError as error:
        assert str(path) in str(error)
        assert re.search(r"upload\.conllu(:\d+)?: ", str(error)), str(error)
        return
    for sentence in sentences:
        assert sentence.heads.count(0) == 1 and len(sentence.words) == len(sentence.heads)


def analyses(lab, text: str) -> bool:
    try:
        lab.analyze(text, truncate=True)
    except InputError:
        return False
    return True


def test_the_text_strategy_reaches_both_outcomes(tiny_lab):
    """A property that only ever sees errors (or never sees one) proves nothing: Hypothesis finds a text
    of ANY_TEXT that analyses and one that is refused."""
    quick = settings(database=None, max_examples=500, deadline=None)
    assert analyses(tiny_lab, find(ANY_TEXT, lambda t: analyses(tiny_lab, t), settings=quick))
    assert not analyses(tiny_lab, find(ANY_TEXT, lambda t: not analyses(tiny_lab, t), settings=quick))


def parses(tmp_path, data: bytes) -> bool:
    path = tmp_path / "upload.conllu"
    path.write_bytes(data)
    try:
        return bool(read_conllu(path))
    except TreebankError:
        return False


def test_the_upload_strategy_reaches_both_outcomes(tmp_path):
    """The upload strategy yields a file that parses into sentences and one that is refused."""
    quick = settings(database=None, max_examples=2000, deadline=None)
    assert parses(tmp_path, find(UPLOAD, lambda d: parses(tmp_path, d), settings=quick))
    assert not parses(tmp_path, find(UPLOAD, lambda d: not parses(tmp_path, d), settings=quick))
