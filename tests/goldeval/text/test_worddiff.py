from goldeval.text.worddiff import FACTS_CHANGED, MOVED, Piece, outcome, plain, word_diff


def test_a_changed_number_is_one_replaced_word() -> None:
    pieces = word_diff("Staff get 40 percent off.", "Staff get 50 percent off.")
    assert pieces == [
        Piece("same", "Staff get"),
        Piece("removed", "40"),
        Piece("added", "50"),
        Piece("same", "percent off."),
    ]
    assert plain(pieces) == "Staff get [-40-] {+50+} percent off."


def test_currency_amount_change_is_facts_changed() -> None:
    assert outcome("a fee of EUR 35 per day", "a fee of EUR 45 per day") == FACTS_CHANGED
    assert plain(word_diff("EUR 35", "EUR 45")) == "EUR [-35-] {+45+}"


def test_whitespace_or_line_breaks_only_is_moved() -> None:
    assert outcome("Staff get 40\npercent off.", "Staff  get 40 percent off.") == MOVED
    assert all(p.kind == "same" for p in word_diff("a  b\nc", "a b c"))


def test_inserted_and_deleted_words() -> None:
    assert plain(word_diff("up to 40 days", "up to 40 working days")) == "up to 40 {+working+} days"
    assert plain(word_diff("not eligible", "eligible")) == "[-not-] eligible"
    assert outcome("not eligible", "eligible") == FACTS_CHANGED


def test_untrusted_text_is_returned_as_is_for_the_caller_to_escape() -> None:
    pieces = word_diff("<b>40</b>", "<script>x</script>")
    assert [p.kind for p in pieces] == ["removed", "added"]
    assert pieces[1].text == "<script>x</script>"


def test_empty_sides() -> None:
    assert word_diff("", "") == []
    assert plain(word_diff("", "new words")) == "{+new words+}"
    assert outcome("", "") == MOVED
