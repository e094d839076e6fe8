"""What an HTTP retriever answers is outside data: every number and string of a result is
checked against what the run format, the columns and the scoring can hold before a run is
stored. A bad value is that question's error, naming the result and the field; the run is
never stored with it."""

import json

import pytest

from corpus.httpendpoint import (
    MAX_DOC_ID,
    MAX_HIT_TEXT,
    PRESETS,
    Endpoint,
    HttpSearchError,
    ResponseMapping,
    map_answer,
)
from corpus.httpguard import HostPolicy
from corpus.httpsearch import Query, SearchClient
from corpus.models import Job, JobState
from corpus.services import http_retrieval, retrieval
from evaluation.models import EvaluationRun
from evaluation.services import evaluation_runs, gold_sets
from goldeval.formats.runfiles import MAX_SCORE
from tests.factories import labelled_question_set
from tests.search_server import RawServer

GENERIC = PRESETS["generic"].mapping
ES = ResponseMapping(results="hits.hits", doc_id="_id", score="_score", text="highlight.text")


def _answer(raw_result: str, mapping=ES) -> list:
    """map_answer on the JSON a server sent, parsed as the client parses it (json.loads reads
    NaN and Infinity as floats, and 1e400 as an infinity)."""
    data = json.loads('{"hits": {"hits": [' + raw_result + "]}}")
    return map_answer(data, mapping, k=10)


@pytest.mark.parametrize(
    "raw, field",
    [
        ('{"_id": "a", "_score": NaN}', "score"),
        ('{"_id": "a", "_score": Infinity}', "score"),
        ('{"_id": "a", "_score": -Infinity}', "score"),
        ('{"_id": "a", "_score": 1e400}', "score"),
        ('{"_id": "a", "_score": %s}' % ("9" * 400), "score"),
        ('{"_id": "a", "_score": 3.5e38}', "score"),
        ('{"_id": "a", "_score": -3.5e38}', "score"),
        ('{"_id": "a", "_score": "NaN"}', "score"),
        ('{"_id": "a", "_score": "-inf"}', "score"),
        ('{"_id": "a", "_score": "1e400"}', "score"),
        ('{"_id": "a", "_score": ""}', "score"),
        ('{"_id": "a", "_score": "' + "1" * 101 + '"}', "score"),
        ('{"_id": "a", "_score": "high"}', "score"),
        ('{"_id": "a", "_score": true}', "score"),
        ('{"_id": "a", "_score": [1]}', "score"),
        ('{"_id": "a", "_score": {"value": 1}}', "score"),
        ('{"_id": "%s", "_score": 1}' % ("d" * (MAX_DOC_ID + 1)), "doc id"),
        ('{"_id": %s, "_score": 1}' % ("7" * (MAX_DOC_ID + 1)), "doc id"),
        ('{"_id": "a\\u0000b", "_score": 1}', "doc id"),
        ('{"_id": "a\\ud800", "_score": 1}', "doc id"),
        ('{"_id": "a\\u202eb", "_score": 1}', "doc id"),
        ('{"_id": "", "_score": 1}', "doc id"),
        ('{"_id": null, "_score": 1}', "doc id"),
        ('{"_id": 1.5, "_score": 1}', "doc id"),
        ('{"_id": true, "_score": 1}', "doc id"),
        ('{"_score": 1}', "doc id"),
        ('{"_id": "a", "highlight": {"text": ["%s"]}}' % ("w" * (MAX_HIT_TEXT + 1)), "text"),
    ],
)
def test_a_value_the_run_cannot_hold_is_the_results_error_naming_its_field(raw, field):
    good = '{"_id": "first", "_score": 2.0}'
    with pytest.raises(HttpSearchError) as caught:
        _answer(f"{good}, {raw}")
    message = str(caught.value)
    assert message.startswith("result 2")  # the second result, not the first
    assert field in message
    assert len(message) < 600  # an over-long value is not copied into the message


@pytest.mark.parametrize(
    "raw, expected",
    [
        ('{"_id": "a", "_score": ' + repr(MAX_SCORE) + "}", ("a", MAX_SCORE)),
        ('{"_id": "a", "_score": -1.5}', ("a", -1.5)),
        ('{"_id": "a", "_score": 0}', ("a", 0.0)),
        ('{"_id": "a", "_score": 12}', ("a", 12.0)),
        ('{"_id": "a", "_score": "12.5"}', ("a", 12.5)),  # some APIs send scores as text
        ('{"_id": "a", "_score": null}', ("a", None)),
        ('{"_id": "a"}', ("a", None)),
        ('{"_id": 42, "_score": 1}', ("42", 1.0)),
        ('{"_id": "%s", "_score": 1}' % ("d" * MAX_DOC_ID), ("d" * MAX_DOC_ID, 1.0)),
        ('{"_id": "caf\\u00e9 \\u05d0", "_score": 1}', ("caf\u00e9 \u05d0", 1.0)),
    ],
)
def test_values_inside_the_bounds_are_taken(raw, expected):
    [hit] = _answer(raw)
    assert (hit.doc_id, hit.score) == expected
    assert hit.score is None or isinstance(hit.score, float)


def test_offsets_must_be_whole_numbers_in_order():
    for start, end in (("1.5", "4"), ("-1", "4"), ("4", "4"), ('"1"', "4"), ("true", "4")):
        data = json.loads(
            '{"results": [{"doc_id": "a", "start": ' + start + ', "end": ' + end + "}]}"
        )
        with pytest.raises(HttpSearchError, match="offsets"):
            map_answer(data, GENERIC, k=5)


# --- a real server that answers what it is told ------------------------------------------------


@pytest.fixture
def raw_server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = RawServer()
    yield server
    server.stop()


def _client(server, **fields) -> SearchClient:
    endpoint = Endpoint.from_dict(
        {
            "url": f"{server.url}/search?q={{{{question}}}}&k={{{{k}}}}",
            "method": "GET",
            "mapping": {"results": "results", "doc_id": "doc_id", "score": "score"},
            **fields,
        }
    )
    return SearchClient(endpoint=endpoint, policy=HostPolicy(["127.0.0.1"]), sleep=lambda s: None)


def test_answers_no_reader_can_hold_are_that_questions_error_and_the_others_go_on(raw_server):
    raw_server.bodies = {
        "nan": (200, {}, b'{"results": [{"doc_id": "a", "score": NaN}]}'),
        "huge": (200, {}, b'{"results": [{"doc_id": "a", "score": 1' + b"0" * 5000 + b"}]}"),
        "deep": (200, {}, b'{"results": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        "good": (200, {}, b'{"results": [{"doc_id": "a", "score": 1.5}]}'),
    }
    with _client(raw_server) as client:
        answers = client.search_many([Query(q, k=5) for q in ("nan", "huge", "deep", "good")])
    nan, huge, deep, good = answers
    # The message names the field; what the server sent is only in the admins' excerpt.
    assert "score" in nan.error and "NaN" not in nan.error and "NaN" in nan.remote
    assert "cannot be read" in huge.error
    assert "nested too deeply" in deep.error
    assert good.ok and [(h.doc_id, h.score) for h in good.hits] == [("a", 1.5)]


def test_a_retry_after_that_is_not_a_finite_number_falls_back_to_the_backoff(raw_server):
    for value in ("nan", "NaN", "inf", "-inf", "1e400", "soon"):
        raw_server.bodies = {"q": (503, {"Retry-After": value}, b"busy")}
        slept = []
        endpoint_fields = {"retries": 2, "backoff": 0.01}
        with _client(raw_server, **endpoint_fields) as client:
            client.sleep = slept.append
            [answer] = client.search_many([Query("q", k=5)])
        assert "HTTP 503" in answer.error and "gave up after 3 attempts" in answer.error
        assert len(slept) == 2 and all(0 <= s <= 30 for s in slept), (value, slept)


# --- the app: a run with a bad answer is never stored ----------------------------------------


@pytest.fixture
def gold_set(project, member):
    people = {
        name: member(role, username=name)
        for name, role in (
            ("ann", "labeller"),
            ("bob", "labeller"),
            ("lea", "lead"),
            ("ada", "admin"),
        )
    }
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    return gold_sets.finalise_gold_set(question_set=question_set, user=people["ada"])


def _http_retriever(project, server):
    return retrieval.add_retriever(
        project=project,
        name="team-search",
        kind="http",
        endpoint={
            "preset": "generic",
            "url": f"{server.url}/search?q={{{{question}}}}&k={{{{k}}}}",
            "mapping": {"start": "", "end": "", "text": ""},
        },
    )


@pytest.mark.parametrize(
    "bad_result, field",
    [
        ('{"doc_id": "vpn", "score": NaN}', "score"),
        ('{"doc_id": "vpn", "score": Infinity}', "score"),
        ('{"doc_id": "vpn", "score": "NaN"}', "score"),
        ('{"doc_id": "vpn", "score": "high"}', "score"),
        ('{"doc_id": "vpn", "score": 1e39}', "score"),
        ('{"doc_id": "vpn\\u0000", "score": 1}', "doc id"),
        ('{"doc_id": "%s", "score": 1}' % ("v" * 300), "doc id"),
        ('{"score": 1}', "doc id"),
    ],
)
def test_an_evaluation_run_with_a_bad_value_is_refused_naming_question_and_field(
    project,
    gold_set,
    raw_server,
    django_capture_on_commit_callbacks,
    inline_jobs,
    bad_result,
    field,
):
    good = b'{"results": [{"doc_id": "leave", "score": 2.0}]}'
    raw_server.default = (200, {}, good)
    raw_server.bodies = {
        "vpn client install": (
            200,
            {},
            b'{"results": [{"doc_id": "leave", "score": 2}, %s]}' % bad_result.encode(),
        )
    }
    retriever = _http_retriever(project, raw_server)
    with pytest.raises(http_retrieval.HttpSearchFailed) as caught:
        evaluation_runs.record_retriever_run(gold_set=gold_set, retriever=retriever)
    [problem] = caught.value.problems
    assert problem["source"] == "question q2"
    assert "result 2" in problem["error"] and field in problem["error"]
    assert not EvaluationRun.objects.exists()
    # The same through the job a lead starts: failed, the problem listed, nothing stored.
    with django_capture_on_commit_callbacks(execute=True):
        job = evaluation_runs.start_retriever_run(gold_set=gold_set, retriever=retriever)
    job = Job.objects.get(pk=job.pk)
    assert job.state == JobState.FAILED
    assert "nothing was stored" in job.message
    assert any("result 2" in e["error"] and field in e["error"] for e in job.errors)
    assert not EvaluationRun.objects.exists()
    # Fixed on the team's side, the run is stored and reads back.
    raw_server.bodies = {}
    run = evaluation_runs.record_retriever_run(gold_set=gold_set, retriever=retriever)
    assert run.questions == 3
