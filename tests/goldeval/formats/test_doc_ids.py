"""The unknown-document rule every upload and the CLI share (`goldeval.formats.doc_ids`)."""

from goldeval.formats.doc_ids import ALL, SHOWN_CHARACTERS, SHOWN_IDS, split_doc_ids


def test_ids_are_split_counted_once_and_named_in_the_order_given():
    check = split_doc_ids(["a", "x", "b", "x", "y", "a"], {"a", "b"})
    assert (check.named, check.known, check.unknown) == (4, 2, ("x", "y"))
    assert not check.none_known and check.is_unknown("x") and not check.is_unknown("a")
    assert check.warning("run.jsonl") == (
        "run.jsonl: 2 unknown document ids of 4 named, left out ('x', 'y')"
    )
    assert check.warning("run.jsonl", outcome="kept") == (
        "run.jsonl: 2 unknown document ids of 4 named, kept ('x', 'y')"
    )


def test_a_file_naming_no_known_id_is_refused_and_one_naming_none_is_not():
    refused = split_doc_ids(["ghost"], {"a"})
    assert refused.none_known
    assert refused.refusal("run.jsonl") == (
        "run.jsonl names no document the corpus has: 1 unknown document id ('ghost')"
    )
    empty = split_doc_ids([], {"a"})
    assert not empty.none_known and empty.warning("run.jsonl") == ""
    assert split_doc_ids(["anything"], ALL).unknown == ()


def test_examples_are_bounded_in_number_and_length():
    long_id = "L" * 5_000
    ids = [long_id, *(f"ghost-{n}" for n in range(100))]
    check = split_doc_ids(ids, set())
    message = check.refusal("big.jsonl")
    assert f"and {len(ids) - SHOWN_IDS} more" in message
    assert "ghost-3" in message and f"ghost-{SHOWN_IDS - 1}" not in message
    assert repr("L" * SHOWN_CHARACTERS) + "…" in message and long_id not in message
    assert len(message) < 600
