import random
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.dedupe import (
    NUM_PERM,
    NearDuplicateIndex,
    estimated_jaccard,
    group_near_duplicates,
    shingles,
    signature,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def prose(seed: int, words: int = 200) -> str:
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(2000)
    ]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def with_word_changed(text: str, index: int) -> str:
    words = text.split()
    words[index] = "CHANGED"
    return " ".join(words)


# --- shingles ---------------------------------------------------------------


def test_shingles_are_lower_cased_word_trigrams():
    assert shingles("The cat sat, on the MAT.") == {
        "the cat sat",
        "cat sat on",
        "sat on the",
        "on the mat",
    }


def test_text_shorter_than_shingle_size_is_one_shingle():
    assert shingles("Hello World") == {"hello world"}
    assert shingles("Hello World", size=2) == {"hello world"}
    assert shingles("a b c", size=1) == {"a", "b", "c"}


def test_empty_text_has_no_shingles():
    assert shingles("") == set()
    assert shingles("  \n—  ") == set()


def test_shingle_size_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        shingles("a b c", size=0)


# --- signatures -------------------------------------------------------------


def test_signature_is_four_bytes_per_permutation():
    assert len(signature(prose(1))) == 4 * NUM_PERM
    assert len(signature(prose(1), num_perm=64)) == 4 * 64


def test_signature_is_deterministic_within_a_process():
    assert signature(prose(1)) == signature(prose(1))


def test_signature_is_deterministic_across_processes():
    # A fresh interpreter with another hash seed must produce the same bytes,
    # since signatures are stored and compared later.
    code = (
        "import sys; from corpus.dedupe import signature; "
        "sys.stdout.write(signature('a b c d e').hex())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)},
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {signature("a b c d e").hex()}


def test_signature_ignores_case_and_punctuation():
    assert signature("Leave policy: 25 days.") == signature("leave POLICY 25 days")


def test_empty_text_signature_has_the_right_length_and_matches_only_empty_text():
    empty = signature("")
    assert len(empty) == 4 * NUM_PERM
    assert estimated_jaccard(empty, signature("")) == 1.0
    assert estimated_jaccard(empty, signature(prose(1))) == 0.0


def test_estimated_jaccard_of_identical_and_unrelated_texts():
    assert estimated_jaccard(signature(prose(1)), signature(prose(1))) == 1.0
    assert estimated_jaccard(signature(prose(1)), signature(prose(2))) < 0.1


def test_estimated_jaccard_is_close_to_the_true_jaccard():
    a = prose(3, words=300)
    b = " ".join(a.split()[100:] + prose(4, words=100).split())
    true = len(shingles(a) & shingles(b)) / len(shingles(a) | shingles(b))
    assert abs(estimated_jaccard(signature(a), signature(b)) - true) < 0.15


def test_estimated_jaccard_rejects_mismatched_or_malformed_signatures():
    with pytest.raises(ValueError, match="64 and 128 permutations"):
        estimated_jaccard(signature("a", num_perm=64), signature("a"))
    with pytest.raises(ValueError, match="multiple of 4 bytes"):
        estimated_jaccard(b"abc", b"abc")
    with pytest.raises(ValueError, match="multiple of 4 bytes"):
        estimated_jaccard(b"", b"")


# --- index ------------------------------------------------------------------


def test_index_finds_identical_and_near_identical_texts_only():
    text = prose(10)
    index = NearDuplicateIndex(threshold=0.9)
    index.add("original", signature(text))
    index.add("unrelated", signature(prose(11)))
    index.add("edited", signature(with_word_changed(text, 100)))
    assert index.matches(signature(text)) == ["original", "edited"]
    assert index.matches(signature(prose(12))) == []
    assert len(index) == 3
    assert "edited" in index


def test_index_verifies_candidates_against_the_threshold():
    text = prose(20)
    half_changed = " ".join(text.split()[:100] + prose(21, words=100).split())
    index = NearDuplicateIndex(threshold=0.9)
    index.add("half", signature(half_changed))
    assert index.matches(signature(text)) == []
    loose = NearDuplicateIndex(threshold=0.2)
    loose.add("half", signature(half_changed))
    assert loose.matches(signature(text)) == ["half"]


def test_index_rejects_duplicate_keys_and_wrong_signature_lengths():
    index = NearDuplicateIndex()
    index.add(1, signature("a b c"))
    with pytest.raises(ValueError, match="already holds 1"):
        index.add(1, signature("a b c"))
    with pytest.raises(ValueError, match="this index expects 128"):
        index.matches(signature("a b c", num_perm=64))


@pytest.mark.parametrize("threshold", [0, -0.1, 1.01, 2])
def test_threshold_must_be_in_zero_one(threshold):
    with pytest.raises(ValueError, match="above 0 and at most 1"):
        NearDuplicateIndex(threshold=threshold)
    with pytest.raises(ValueError, match="above 0 and at most 1"):
        group_near_duplicates([], threshold=threshold)


def test_threshold_of_one_matches_only_identical_signatures():
    text = prose(30)
    index = NearDuplicateIndex(threshold=1.0)
    index.add("same", signature(text))
    index.add("edited", signature(with_word_changed(text, 5)))
    assert index.matches(signature(text)) == ["same"]


def test_index_with_fewer_permutations():
    index = NearDuplicateIndex(threshold=0.8, num_perm=32)
    index.add("a", signature(prose(1), num_perm=32))
    assert index.matches(signature(prose(1), num_perm=32)) == ["a"]


# --- grouping ---------------------------------------------------------------


def test_identical_texts_group_together():
    text = prose(40)
    groups = group_near_duplicates([("a", signature(text)), ("b", signature(text))])
    assert groups == [["a", "b"]]


def test_one_word_changed_out_of_200_groups_at_0_9():
    text = prose(41)
    assert len(text.split()) == 200
    items = [("original", signature(text)), ("edited", signature(with_word_changed(text, 77)))]
    assert group_near_duplicates(items, threshold=0.9) == [["original", "edited"]]


def test_unrelated_texts_do_not_group():
    items = [(i, signature(prose(100 + i))) for i in range(20)]
    assert group_near_duplicates(items) == []


def test_groups_are_connected_components_in_input_order():
    a, b = prose(50), prose(51)
    items = [
        ("b1", signature(b)),
        ("x", signature(prose(52))),
        ("a1", signature(a)),
        ("b2", signature(with_word_changed(b, 10))),
        ("a2", signature(with_word_changed(a, 150))),
        ("b3", signature(b)),
    ]
    assert group_near_duplicates(items) == [["b1", "b2", "b3"], ["a1", "a2"]]


def test_chained_near_duplicates_form_one_group():
    # a~b and b~c at 0.6 although a and c are further apart: one component.
    words = prose(60, words=400).split()
    a, b, c = (" ".join(words[start : start + 300]) for start in (0, 50, 100))
    sig_a, sig_b, sig_c = signature(a), signature(b), signature(c)
    assert (
        estimated_jaccard(sig_a, sig_c)
        < 0.6
        <= min(estimated_jaccard(sig_a, sig_b), estimated_jaccard(sig_b, sig_c))
    )
    items = [("c", sig_c), ("a", sig_a), ("b", sig_b)]
    assert group_near_duplicates(items, threshold=0.6) == [["c", "a", "b"]]


def test_grouping_nothing_and_duplicate_keys():
    assert group_near_duplicates([]) == []
    with pytest.raises(ValueError, match="Duplicate key 'a'"):
        group_near_duplicates([("a", signature("x")), ("a", signature("y"))])
