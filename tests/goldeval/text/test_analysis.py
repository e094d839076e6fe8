from goldeval.text.analysis import ENGLISH_STOPWORDS, Analyzer


def test_codes_stay_whole_and_lower_cased() -> None:
    text = "See HR-POL-014, form AB1234, ISO-9001 and release v2.3 of the handbook."
    tokens = Analyzer().tokens(text)
    assert tokens == [
        "see",
        "hr-pol-014",
        "form",
        "ab1234",
        "iso-9001",
        "and",
        "release",
        "v2.3",
        "of",
        "the",
        "handbook",
    ]


def test_words_are_lower_cased_and_punctuation_dropped() -> None:
    assert Analyzer().tokens("Parental LEAVE: who's eligible?!") == [
        "parental",
        "leave",
        "who",
        "eligible",
    ]


def test_letter_only_hyphenations_split_into_words() -> None:
    # "part-time" must match a question saying "part time"; only codes (with digits) stay whole.
    assert Analyzer().tokens("part-time e-mail COVID-19") == [
        "part",
        "time",
        "e",
        "mail",
        "covid-19",
    ]


def test_trailing_and_leading_separators_are_not_part_of_a_code() -> None:
    assert Analyzer().tokens("-AB12- ...v2.3. end.") == ["ab12", "v2.3", "end"]


def test_possessive_is_dropped() -> None:
    assert Analyzer().tokens("the employee's manager’s HR-POL-014's") == [
        "the",
        "employee",
        "manager",
        "hr-pol-014",
    ]


def test_unicode_letters_are_words() -> None:
    assert Analyzer().tokens("Café Straße naïve 東京") == ["café", "straße", "naïve", "東京"]


def test_stopwords_removed_only_when_asked() -> None:
    text = "The policy is not in the handbook"
    assert Analyzer(stopwords=True).tokens(text) == ["policy", "handbook"]
    assert "the" in Analyzer().tokens(text)
    assert {"the", "is", "not", "in", "a", "and"} <= ENGLISH_STOPWORDS


def test_stemming_applies_to_words_not_codes() -> None:
    tokens = Analyzer(stem=True).tokens("Running policies for employees ABC123s v2.3")
    assert tokens == ["run", "polici", "for", "employe", "abc123s", "v2.3"]


def test_stem_and_stopwords_together() -> None:
    assert Analyzer(stem=True, stopwords=True).tokens("The boundary-layers of the wings") == [
        "boundari",
        "layer",
        "wing",
    ]


def test_settings_do_not_share_results() -> None:
    # Analysis is cached per setting; a stemmed result must never leak into the plain analyzer.
    assert Analyzer(stem=True).tokens("policies") == ["polici"]
    assert Analyzer().tokens("policies") == ["policies"]
    assert Analyzer(stopwords=True).tokens("the") == []
    assert Analyzer().tokens("the") == ["the"]


def test_empty_and_symbol_only_text() -> None:
    assert Analyzer().tokens("") == []
    assert Analyzer(stem=True, stopwords=True).tokens(" -- ... !! __ ") == []
