"""keras.preprocessing.text: Tokenizer and the word helpers, against Keras 2's documented semantics."""

import numpy as np
import pytest

from flexflow_keras.preprocessing import sequence, text
from flexflow_keras.preprocessing.text import Tokenizer

TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "the Cat, the dog"]


def test_text_to_word_sequence_filters_lowers_and_splits():
    assert text.text_to_word_sequence("Hello, World!\tHi") == ["hello", "world", "hi"]
    assert text.text_to_word_sequence("A-B c", filters="", lower=False) == ["A-B", "c"]
    assert text.text_to_word_sequence("a;b;;c", split=";") == ["a", "b", "c"]


def test_word_index_ranks_by_count_with_first_seen_ties():
    tok = Tokenizer()
    tok.fit_on_texts(TEXTS)
    # the: 5, cat: 2, dog: 2 (cat seen first), then single words in first-seen order
    assert list(tok.word_index)[:4] == ["the", "cat", "dog", "sat"]
    assert tok.word_index["the"] == 1 and tok.index_word[2] == "cat"
    assert tok.word_counts["the"] == 5 and tok.word_docs["the"] == 3 and tok.document_count == 3
    assert tok.index_docs[tok.word_index["dog"]] == 2


def test_num_words_and_oov_token():
    tok = Tokenizer(num_words=4)
    tok.fit_on_texts(TEXTS)
    assert tok.texts_to_sequences(["the cat sat on a dog"]) == [[1, 2, 3]]  # ranks >= 4 and unknowns dropped
    tok = Tokenizer(num_words=4, oov_token="<oov>")
    tok.fit_on_texts(TEXTS)
    assert tok.word_index["<oov>"] == 1 and tok.word_index["the"] == 2
    assert tok.texts_to_sequences(["the cat zebra dog"]) == [[2, 3, 1, 1]]  # dog has rank 4: oov
    assert tok.sequences_to_texts([[2, 3, 1]]) == ["the cat <oov>"]


def test_matrix_modes_match_the_formulas():
    tok = Tokenizer()
    tok.fit_on_texts(TEXTS)
    seqs = tok.texts_to_sequences(["the the cat", ""])
    width = len(tok.word_index) + 1
    for mode in ("binary", "count", "freq", "tfidf"):
        m = tok.sequences_to_matrix(seqs, mode=mode)
        assert m.shape == (2, width) and not m[1].any() and m[0, 0] == 0
    assert tok.sequences_to_matrix(seqs, "binary")[0, [1, 2]].tolist() == [1, 1]
    assert tok.sequences_to_matrix(seqs, "count")[0, [1, 2]].tolist() == [2, 1]
    np.testing.assert_allclose(tok.sequences_to_matrix(seqs, "freq")[0, [1, 2]], [2 / 3, 1 / 3])
    idf_the = np.log(1 + 3 / (1 + 3))
    np.testing.assert_allclose(tok.sequences_to_matrix(seqs, "tfidf")[0, 1], (1 + np.log(2)) * idf_the)
    np.testing.assert_array_equal(tok.texts_to_matrix(["the the cat"], "count"), tok.sequences_to_matrix(seqs[:1], "count"))
    with pytest.raises(ValueError, match="mode"):
        tok.sequences_to_matrix(seqs, mode="onehot")


def test_sequences_to_matrix_needs_a_width_and_fit_on_sequences_counts_documents():
    with pytest.raises(ValueError, match="num_words"):
        Tokenizer().sequences_to_matrix([[1, 2]])
    tok = Tokenizer(num_words=5)
    tok.fit_on_sequences([[1, 2, 2], [2, 3], [7]])
    assert tok.document_count == 3 and tok.index_docs[2] == 2
    m = tok.sequences_to_matrix([[2, 7]], mode="tfidf")
    assert m.shape == (1, 5) and m[0, 2] == pytest.approx(np.log(1 + 3 / 3))  # 7 >= num_words: ignored


def test_char_level_json_round_trip_and_hashing():
    tok = Tokenizer(char_level=True, oov_token="?")
    tok.fit_on_texts(["abba", "Cab"])
    # lower-cased characters: a 3, b 3, c 1; the tie keeps first-seen order; the oov token is 1
    assert tok.word_index == {"?": 1, "a": 2, "b": 3, "c": 4}
    again = text.tokenizer_from_json(tok.to_json())
    assert again.word_index == tok.word_index and again.texts_to_sequences(["abz"]) == tok.texts_to_sequences(["abz"])
    hashed = text.hashing_trick("the cat the", 10, hash_function="md5")
    assert hashed[0] == hashed[2] and all(1 <= h <= 9 for h in hashed)
    assert all(1 <= h <= 4 for h in text.one_hot("a b c d e f", 5))
    with pytest.raises(ValueError, match="n >= 2"):
        text.hashing_trick("x", 1)


def test_sequence_module_is_pad_sequences():
    out = sequence.pad_sequences([[1, 2, 3], [4]], maxlen=2)
    np.testing.assert_array_equal(out, [[2, 3], [0, 4]])
