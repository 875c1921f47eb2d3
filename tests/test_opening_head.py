"""The head a first screen opens on (issue 60): the rule and its one-line reason, on hand-built attention."""
import numpy as np

from bertviz_lab.attention.opening_head import offset_words, opening_head

TOKENS = ["[CLS]", "the", "cat", "sat", "down", "[SEP]"]


def heads() -> np.ndarray:
    n = len(TOKENS)
    attention = np.zeros((2, 3, n, n))  # (layers, heads, query, key)
    attention[:, :] = 1.0 / n  # every head uniform to begin with
    attention[0, 1] = 0.0
    attention[0, 1, :, -1] = 1.0  # a sink: everything on [SEP], the sharpest head if specials counted
    attention[1, 2] = 0.0
    for q in range(n):  # layer 2, head 3: 0.7 on the previous token, the rest on itself
        attention[1, 2, q, max(q - 1, 0)] += 0.7
        attention[1, 2, q, q] += 0.3
    return attention


def test_the_head_with_the_sharpest_word_to_word_pattern_opens_not_a_sink():
    chosen = opening_head(heads(), TOKENS)
    assert (chosen.layer, chosen.head) == (1, 2)
    # words as queries: 'the' (its previous token is [CLS], left out: its largest weight on a word is 0.3 on
    # itself), then 'cat', 'sat', 'down' with 0.7 on the previous word: mean (0.3 + 0.7 * 3) / 4 = 0.6
    assert chosen.sharpness == np.float64(0.6).item()
    assert chosen.reason == ("Opening on layer 2, head 3, the clearest pattern of the 6 heads on this sentence (the "
                             "rule: the head whose words give the most weight to one word, on average 0.60); here "
                             "3 of 4 words attend most to the previous word.")


def test_without_two_words_it_opens_on_the_first_head():
    chosen = opening_head(np.full((1, 2, 3, 3), 1 / 3), ["[CLS]", "hi", "[SEP]"])
    assert (chosen.layer, chosen.head) == (0, 0) and "fewer than two words" in chosen.reason


def test_offsets_in_words():
    assert [offset_words(k) for k in (-1, 0, 1, 3, -2)] == [
        "the previous word", "itself", "the next word", "the word 3 to the right", "the word 2 to the left"]
