"""Reading a judge's answer: every shape a model may answer in is a grade or that item's
error, never an exception; a question or passage holding a placeholder stays as written."""

import pytest

from judges.client import JudgeEndpoint
from judges.prompt import (
    DEFAULT_PROMPT,
    DEFAULT_SCALE,
    MAX_GUIDELINE,
    MAX_PASSAGE,
    MAX_QUOTE,
    JudgeAnswerError,
    guideline_scale,
    prompt_problems,
    read_answer,
    render_prompt,
)


def chat(content):
    return {"choices": [{"message": {"content": content}}], "usage": {"prompt_tokens": 5}}


@pytest.mark.parametrize(
    ("content", "grade", "quote"),
    [
        ('{"grade": 2, "quote": "five days"}', 2, "five days"),
        ('{"grade": "1"}', 1, ""),
        ('{"grade": 0.0, "quote": null}', 0, ""),
        ('Sure.\n```json\n{"grade": 1, "quote": "x"}\n```', 1, "x"),
        ('My answer: {"grade": 2, "quote": "a {b} c"} thanks', 2, "a {b} c"),
    ],
)
def test_answers_a_model_gives(content, grade, quote):
    verdict = read_answer("openai", chat(content))
    assert (verdict.grade, verdict.quote) == (grade, quote)
    assert verdict.prompt_tokens == 5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (chat('{"grade": 3}'), "not 0, 1 or 2"),
        (chat('{"grade": true}'), "not 0, 1 or 2"),
        (chat('{"grade": 1.5}'), "not 0, 1 or 2"),
        (chat('{"quote": "x"}'), "not 0, 1 or 2"),
        (chat('{"grade": 1, "quote": ["x"]}'), "quote is not a text"),
        (chat("two"), "no JSON object"),
        (chat("[" * 100_000 + "]" * 100_000), "no JSON object"),
        (chat(None), "not a text"),
        ({"choices": []}, "not a chat completion"),
        (["a list"], "not a chat completion"),
        ({"usage": {"prompt_tokens": -1}}, "not a chat completion"),
    ],
)
def test_unusable_answers_are_errors(data, message):
    with pytest.raises(JudgeAnswerError, match=message):
        read_answer("openai", data)


def test_the_generic_template_and_its_bounds():
    assert read_answer("generic", {"grade": 1, "quote": "q"}).grade == 1
    assert (
        read_answer("generic", {"response": '{"grade": 2}', "eval_count": 7}).completion_tokens == 7
    )
    with pytest.raises(JudgeAnswerError, match="no grade"):
        read_answer("generic", {"result": 2})
    long_quote = read_answer("generic", {"grade": 2, "quote": "x" * 10_000}).quote
    assert len(long_quote) == MAX_QUOTE
    huge = read_answer("openai", {**chat('{"grade": 1}'), "usage": {"prompt_tokens": 10**12}})
    assert huge.prompt_tokens is None  # a count no model reports is not stored


def test_placeholders_are_replaced_once():
    text = render_prompt(
        DEFAULT_PROMPT, question="what about {{passage}}?", passage="{{question}} and {{scale}}"
    )
    assert "what about {{passage}}?" in text
    assert "{{question}} and {{scale}}" in text
    cut = render_prompt("{{question}} {{passage}}", question="q", passage="x" * (MAX_PASSAGE + 5))
    assert cut.endswith("[… passage cut]") and len(cut) < MAX_PASSAGE + 50


def test_prompt_and_endpoint_problems():
    assert prompt_problems(DEFAULT_PROMPT) == []
    assert any("{{passage}}" in p for p in prompt_problems("{{question}}"))
    endpoint = JudgeEndpoint(url="http://llm.internal/v1", model="m", api_key="env:SECRET_KEY")
    assert any("Goldset's own secret" in p for p in endpoint.problems())
    assert JudgeEndpoint(url="http://llm.internal/v1", model="m", temperature=5).problems()
    assert JudgeEndpoint(url="http://llm.internal/v1", model="m", concurrency=0).problems()
    assert JudgeEndpoint(url="http://llm.internal/v1", template="generic").problems() == []


def test_the_scale_carries_the_projects_guideline_bounded():
    assert guideline_scale("") == guideline_scale("  \n") == DEFAULT_SCALE
    guideline = "# Relevance\n\nGrade 2 only when the passage names the form number."
    scale = guideline_scale(guideline)
    assert scale.startswith(DEFAULT_SCALE)
    assert f"<<<GUIDELINE\n{guideline}\nGUIDELINE>>>" in scale
    text = render_prompt(DEFAULT_PROMPT, question="q", passage="p", scale=scale)
    assert guideline in text and text.index(guideline) < text.index("Question: q")
    # A long guideline is cut, and says so; the prompt stays bounded whatever its length.
    long = guideline_scale("word " * 5_000)
    assert "[… guideline cut]" in long
    assert len(long) < len(DEFAULT_SCALE) + MAX_GUIDELINE + 300
    # A guideline holding a placeholder stays as written (one pass, as for a passage).
    held = render_prompt(
        DEFAULT_PROMPT, question="q", passage="p", scale=guideline_scale("see {{passage}}")
    )
    assert "see {{passage}}" in held and held.count("<<<PASSAGE\np\nPASSAGE>>>") == 1
