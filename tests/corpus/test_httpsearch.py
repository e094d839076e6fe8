"""The HTTP retriever's client, against a real server on 127.0.0.1: templates, mapping, retries,
timeouts, the concurrency limit and the SSRF guard (only listed hosts; private, loopback and
link-local addresses only when listed; no redirect to another host)."""

import json

import pytest

from corpus.httpendpoint import (
    PRESETS,
    ConfigError,
    Endpoint,
    HttpSearchError,
    Identity,
    ResponseMapping,
    map_answer,
    parse_path,
    with_preset,
)
from corpus.httpguard import HostPolicy, HostRefused
from corpus.httpsearch import Query, SearchClient
from tests.search_server import IndexedDocument, SearchServer

DOCUMENTS = [
    IndexedDocument("leave", "Annual leave. Employees receive 25 days of paid annual leave."),
    IndexedDocument("vpn", "VPN access. Install the NW-VPN client and approve the prompt."),
    IndexedDocument("salaries", "Salary bands. Band C pays 52,000 euros.", frozenset({"hr"})),
]
ES = ResponseMapping(results="hits.hits", doc_id="_id", score="_score", text="highlight.text")
CUSTOM = ResponseMapping(
    results="data.items", doc_id="ref.id", score="relevance", start="span.from", end="span.to"
)


@pytest.fixture
def server():
    server = SearchServer(
        documents=DOCUMENTS,
        users={"alice": frozenset({"hr"}), "bob": frozenset()},
        leaks={"bob": {"salaries"}},
    ).start()
    yield server
    server.stop()


def es_endpoint(server, **changes):
    data = with_preset("elasticsearch", url=f"{server.url}/policies/_search")
    data.update(changes)
    return Endpoint.from_dict(data)


def client(endpoint, allowed=("127.0.0.1",), **kwargs):
    kwargs.setdefault("sleep", lambda seconds: None)
    return SearchClient(endpoint=endpoint, policy=HostPolicy(allowed), **kwargs)


# --- configuration --------------------------------------------------------------------------


def test_paths_read_keys_indexes_and_quoted_keys():
    assert parse_path("hits.hits") == ("hits", "hits")
    assert parse_path("items[0].id") == ("items", 0, "id")
    assert parse_path("a.0.b") == ("a", 0, "b")
    assert parse_path('highlight["text.en"]') == ("highlight", "text.en")
    for bad in ("", "a..b", "a[x]", 'a["b'):
        with pytest.raises(ConfigError):
            parse_path(bad)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"url": "ftp://example.com/x"}, "must start with http"),
        ({"url": "https://user:pw@example.com/s?q={{question}}"}, "user name or password"),
        ({"body": '{"query": {{question}}}'}, "not JSON"),
        ({"body": '{"q": "{{qustion}}"}'}, "unknown placeholder {{qustion}}"),
        ({"body": '{"q": "fixed"}'}, "the question never reaches the endpoint"),
        ({"method": "GET"}, "a GET request carries no body"),
        ({"method": "DELETE"}, "GET or POST"),
        ({"headers": {"Authorization": "Bearer abc123"}}, "looks like a credential"),
        ({"headers": {"X-Api-Key": "abc"}}, "looks like a credential"),
        ({"headers": {"X-Token": "env:SECRET_KEY"}}, "Goldset's own secret"),
        ({"headers": {"X-Token": "env:not a name"}}, "not an environment variable name"),
        ({"headers": {"Bad Header": "x"}}, "not a valid header name"),
        ({"mapping": {"results": "", "doc_id": "_id"}}, "results path is required"),
        ({"mapping": {"results": "hits", "doc_id": "_id", "start": "s"}}, "both the start"),
        ({"timeout": 0}, "timeout must be between"),
        ({"concurrency": 100}, "concurrency must be between"),
    ],
)
def test_an_endpoint_that_cannot_work_is_refused_with_every_reason(changes, message):
    data = with_preset("elasticsearch", url="https://search.example.com/p/_search")
    data.update(changes)
    with pytest.raises(ConfigError, match=message):
        Endpoint.from_dict(data)


def test_presets_are_valid_endpoints_and_round_trip():
    for name in PRESETS:
        endpoint = Endpoint.from_dict(with_preset(name))
        assert Endpoint.from_dict(endpoint.to_dict()) == endpoint
    # A secret given as env: is stored as the reference, never as its value.
    endpoint = Endpoint.from_dict(
        with_preset("generic", headers={"Authorization": "env:OUR_SEARCH_TOKEN"})
    )
    assert endpoint.to_dict()["headers"] == {"Authorization": "env:OUR_SEARCH_TOKEN"}


def test_mapping_reads_elasticsearch_and_custom_shapes_and_says_what_is_wrong():
    es = {"hits": {"hits": [{"_id": "a", "_score": 2.5, "highlight": {"text": ["", "frag"]}}]}}
    assert [(h.doc_id, h.score, h.text) for h in map_answer(es, ES, k=5)] == [("a", 2.5, "frag")]
    custom = {
        "data": {"items": [{"ref": {"id": 7}, "relevance": "0.5", "span": {"from": 1, "to": 4}}]}
    }
    hit = map_answer(custom, CUSTOM, k=5)[0]
    assert (hit.doc_id, hit.score, hit.start, hit.end) == ("7", 0.5, 1, 4)
    assert len(map_answer({"hits": {"hits": [{"_id": str(i)} for i in range(9)]}}, ES, k=3)) == 3
    # The message says what is wrong; what the server sent is kept apart (`remote`).
    with pytest.raises(HttpSearchError, match="the answer has none there") as wrong:
        map_answer({"took": 1, "items": []}, ES, k=5)
    assert "keys took, items" in wrong.value.remote and "took" not in str(wrong.value)
    with pytest.raises(HttpSearchError, match="result 1: the doc id path '_id' .* does not"):
        map_answer({"hits": {"hits": [{"id": "a"}]}}, ES, k=5)
    with pytest.raises(HttpSearchError, match="result 1: offsets") as wrong:
        bad = {"data": {"items": [{"ref": {"id": "a"}, "span": {"from": 5, "to": 2}}]}}
        map_answer(bad, CUSTOM, k=5)
    assert wrong.value.remote == 'the str "a": the int 5 and the int 2'
    with pytest.raises(HttpSearchError, match="not a number") as wrong:
        map_answer({"hits": {"hits": [{"_id": "a", "_score": "high"}]}}, ES, k=5)
    assert "high" in wrong.value.remote and "high" not in str(wrong.value)


# --- searching ------------------------------------------------------------------------------


def test_an_elasticsearch_search_sends_the_question_verbatim_and_reads_the_hits(server):
    question = 'how many "annual leave" days?\u00e9'
    with client(es_endpoint(server)) as search:
        answer = search.search(Query(question, k=5))
    assert answer.ok, answer.error
    assert [h.doc_id for h in answer.hits][0] == "leave"
    assert answer.hits[0].text == "Employees receive 25 days of paid annual leave."
    sent = json.loads(server.requests[-1].body)
    assert sent["size"] == 5 and sent["query"]["match"]["text"] == question


def test_a_custom_get_api_gets_percent_encoded_values_and_the_test_user(server):
    endpoint = Endpoint.from_dict(
        {
            "url": f"{server.url}/api/find?query={{{{question}}}}&limit={{{{k}}}}&as={{{{user}}}}",
            "method": "GET",
            "mapping": CUSTOM.__dict__,
        }
    )
    alice = Identity(name="alice", groups=("hr",))
    with client(endpoint) as search:
        answers = search.search_many(
            [Query("salary bands & pay", k=3, identity=alice), Query("salary bands", k=3)]
        )
    paths = {r.path for r in server.requests}
    assert paths == {
        "/api/find?query=salary%20bands&limit=3&as=",  # no test user: {{user}} is empty
        "/api/find?query=salary%20bands%20%26%20pay&limit=3&as=alice",
    }
    assert answers[0].hits[0].doc_id == "salaries" and answers[0].hits[0].start is not None
    assert [h.doc_id for h in answers[1].hits] == ["salaries"]


def test_env_headers_are_read_when_the_request_is_made_and_a_missing_one_is_named(server):
    endpoint = es_endpoint(
        server, headers={"Authorization": "env:OUR_SEARCH_TOKEN", "X-Test-User": "{{user}}"}
    )
    bob = Identity(name="bob", headers=(("X-Trace", "replay"),))
    with client(endpoint, environ={"OUR_SEARCH_TOKEN": "Bearer s3cret"}) as search:
        assert search.search_many([Query("salary", k=3, identity=bob)])[0].ok
    headers = server.requests[-1].headers
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["X-Test-User"] == "bob" and headers["X-Trace"] == "replay"
    with (
        client(endpoint, environ={}) as search,
        pytest.raises(ConfigError, match="OUR_SEARCH_TOKEN, which is not set"),
    ):
        search.search_many([Query("salary", k=3)])


def test_transient_failures_are_retried_with_backoff_and_then_reported(server):
    waits = []
    server.failures_left["/policies/_search"] = 2
    with client(es_endpoint(server, retries=2, backoff=0.2), sleep=waits.append) as search:
        answer = search.search(Query("vpn client", k=3))
    assert answer.ok and answer.attempts == 3
    assert waits == [0.0, 0.0]  # the server said Retry-After: 0
    server.failures_left["/policies/_search"] = 5
    with client(es_endpoint(server, retries=1)) as search:
        answer = search.search(Query("vpn client", k=3))
    assert answer.error == "HTTP 503 from 127.0.0.1 (gave up after 2 attempts)"


def test_backoff_grows_exponentially_with_jitter():
    search = client(Endpoint.from_dict(with_preset("generic", backoff=1.0)))
    for attempt, (low, high) in enumerate([(0.5, 1), (1, 2), (2, 4), (4, 8)], start=1):
        assert low <= search._delay(attempt, None) <= high
    assert search._delay(1, 1000) == 30.0  # a server's Retry-After is capped


@pytest.mark.parametrize(
    "path, message",
    [
        ("/slow", "no answer from 127.0.0.1 within 0.5 s (gave up after 2 attempts)"),
        ("/notjson", "the answer is not JSON (text/html)"),
        ("/wrongshape", "the results path 'hits.hits' should lead to a list"),
        ("/broken", "HTTP 500 from 127.0.0.1"),
    ],
)
def test_bad_answers_give_one_clear_message_per_question(server, path, message):
    endpoint = es_endpoint(server, url=f"{server.url}{path}", timeout=0.5, retries=1)
    with client(endpoint) as search:
        answers = search.search_many([Query("leave", k=3), Query("vpn", k=3)])
    assert [a.ok for a in answers] == [False, False]
    assert message in answers[0].error
    # The server's words are never in the message, only in the bounded excerpt kept apart.
    for said in ("Login required", "index_not_found_exception", "took"):
        assert said not in answers[0].error
    remote = {
        "/notjson": "<html>Login required</html>",
        "/wrongshape": "the answer is an object with keys took, items",
        "/broken": '{"error": "index_not_found_exception"}',
    }
    assert remote.get(path, "") in answers[0].remote


def test_an_unreachable_endpoint_is_reported_not_raised():
    endpoint = Endpoint.from_dict(with_preset("elasticsearch", url="http://127.0.0.1:9/x/_search"))
    with client(endpoint) as search:
        answer = search.search(Query("leave", k=3))
    assert answer.error.startswith("could not reach 127.0.0.1")


def test_at_most_concurrency_requests_are_in_flight(server):
    server.delay = 0.1
    with client(es_endpoint(server, concurrency=2)) as search:
        answers = search.search_many([Query(f"leave {i}", k=2) for i in range(8)])
    assert all(a.ok for a in answers)
    assert server.most_active == 2


def test_progress_is_reported_per_question(server):
    seen = []
    with client(es_endpoint(server)) as search:
        search.search_many([Query("leave", k=2)] * 3, progress=seen.append)
    assert seen == [1, 1, 1]


# --- the SSRF guard -------------------------------------------------------------------------


def test_loopback_is_refused_unless_listed(server):
    endpoint = es_endpoint(server)
    for allowed in ((), ("search.example.com",), ("localhost",)):
        with client(endpoint, allowed=allowed) as search:
            answer = search.search(Query("leave", k=3))
        assert answer.error.startswith("refused: "), allowed
    assert server.requests == []
    # A listed name that resolves to loopback is still refused: the address must be listed.
    endpoint = es_endpoint(server, url=f"http://localhost:{server.port}/policies/_search")
    with client(endpoint, allowed=("localhost",)) as search:
        answer = search.search(Query("leave", k=3))
    assert "resolves to 127.0.0.1, a loopback address" in answer.error
    with client(endpoint, allowed=("localhost", "127.0.0.0/8")) as search:
        assert search.search(Query("leave", k=3)).ok


@pytest.mark.parametrize(
    "url, resolved, kind",
    [
        ("http://10.0.0.5:9200/x/_search", None, "not in GOLDSET_HTTP_ALLOWED_HOSTS"),
        ("http://192.168.1.10/x/_search", None, "not in GOLDSET_HTTP_ALLOWED_HOSTS"),
        ("http://169.254.169.254/latest/meta-data", None, "not in GOLDSET_HTTP_ALLOWED_HOSTS"),
        ("http://[::1]:9200/x/_search", None, "not in GOLDSET_HTTP_ALLOWED_HOSTS"),
        # (a decimal-encoded address such as 2130706433 is refused earlier, as configuration:
        # tests/corpus/test_httpurl.py)
        ("http://es.example.com/x/_search", ["10.1.2.3"], "a private address"),
        ("http://es.example.com/x/_search", ["172.20.0.4"], "a private address"),
        ("http://es.example.com/x/_search", ["169.254.169.254"], "a link-local address"),
        ("http://es.example.com/x/_search", ["fe80::1"], "a link-local address"),
        ("http://es.example.com/x/_search", ["::ffff:127.0.0.1"], "a loopback address"),
        ("http://es.example.com/x/_search", ["93.184.216.34", "10.0.0.1"], "a private address"),
        ("http://es.example.com/x/_search", ["0.0.0.0"], "a non-public address"),  # noqa: S104
    ],
)
def test_private_link_local_and_loopback_addresses_are_refused(url, resolved, kind):
    calls = []

    def resolver(host, port):
        calls.append(host)
        return resolved

    endpoint = Endpoint.from_dict(with_preset("elasticsearch", url=url))
    search = SearchClient(
        endpoint=endpoint,
        policy=HostPolicy(["es.example.com", "*.internal.example.com"], resolver=resolver),
        sleep=lambda s: None,
    )
    answer = search.search(Query("leave", k=3))
    assert answer.error.startswith("refused: ") and kind in answer.error
    assert answer.attempts == 1  # refusals are never retried


def test_a_listed_private_network_may_be_called():
    policy = HostPolicy(["es.example.com", "10.0.0.0/8"], resolver=lambda h, p: ["10.1.2.3"])
    assert policy.vetted_addresses("es.example.com", 9200) == ["10.1.2.3"]
    with pytest.raises(HostRefused):
        HostPolicy(["es.example.com"], resolver=lambda h, p: ["10.1.2.3"]).vetted_addresses(
            "es.example.com", 9200
        )


def test_the_port_of_a_listed_address_binds_every_name_that_resolves_to_it(server):
    """GOLDSET_HTTP_ALLOWED_HOSTS="vm,127.0.0.1:8125": `vm` resolving to 127.0.0.1 reaches 8125
    and no other port of that machine, for a name, a wildcard or a network entry alike."""
    other = SearchServer(documents=DOCUMENTS).start()
    try:
        resolve_local = lambda host, port: ["127.0.0.1"]  # noqa: E731 - vm is this machine
        for entries in (
            ["vm", f"127.0.0.1:{server.port}"],
            ["*.corp.example", f"127.0.0.0/8:{server.port}"],
            ["vm", f"127.0.0.1:{server.port}", f"127.0.0.2:{other.port}"],
        ):
            policy = HostPolicy(entries, resolver=resolve_local)
            name = "vm" if entries[0].startswith("vm") else "a.corp.example"
            for port, reached in ((server.port, True), (other.port, False)):
                endpoint = es_endpoint(server, url=f"http://{name}:{port}/policies/_search")
                search = SearchClient(endpoint=endpoint, policy=policy, sleep=lambda s: None)
                with search:
                    answer = search.search(Query("leave", k=3))
                if reached:
                    assert answer.ok, (entries, answer.error)
                else:
                    assert answer.error.startswith("refused: "), entries
                    assert answer.attempts == 1
        assert other.requests == [] and len(server.requests) == 3
        # Said plainly: which port the address is listed for.
        policy = HostPolicy(["vm", "127.0.0.1:8125"], resolver=resolve_local)
        with pytest.raises(HostRefused, match="listed in GOLDSET_HTTP_ALLOWED_HOSTS for port 8125"):
            policy.vetted_addresses("vm", 8126)
        assert policy.vetted_addresses("vm", 8125) == ["127.0.0.1"]
    finally:
        other.stop()


def test_a_host_read_two_ways_is_refused_when_the_call_is_made():
    """A URL that reached the client some other way than a checked form (a placeholder in the
    host) is read by the same strict rule before anything is resolved."""
    import httpx2

    policy = HostPolicy(["10.0.0.0/8", "*.corp.example"], resolver=lambda h, p: ["10.0.0.1"])
    for url in ("http://0x0a.1/", "http://167772161/", "http://10.1/", "http://a_b.corp.example/"):
        with pytest.raises(HostRefused):
            policy.check_url(httpx2.URL(url))


def test_host_entries_match_names_wildcards_networks_and_ports():
    import httpx2

    policy = HostPolicy(["search.example.com:9200", "*.corp.example", "10.0.0.0/8", "[::1]"])
    for ok in (
        "https://search.example.com:9200/s",
        "https://a.b.corp.example/s",
        "http://10.9.8.7/s",
        "http://[::1]:80/s",
    ):
        policy.check_url(httpx2.URL(ok))
    for refused in (
        "https://search.example.com/s",  # port 443, not 9200
        "https://corp.example/s",  # the wildcard covers subdomains only
        "https://evilcorp.example/s",
        "http://11.0.0.1/s",
        "gopher://search.example.com:9200/",
    ):
        with pytest.raises(HostRefused):
            policy.check_url(httpx2.URL(refused))
    for bad in ("*", "exa mple.com", "host:99999", "vm:８１２５", "0177.0.0.1", "１２７.０.０.１"):
        with pytest.raises(ConfigError):
            HostPolicy([bad])


def test_a_redirect_to_another_host_is_refused_and_one_on_the_same_host_followed(server):
    endpoint = es_endpoint(server, url=f"{server.url}/redirect-elsewhere")
    with client(endpoint, allowed=("127.0.0.0/8",)) as search:
        answer = search.search(Query("leave", k=3))
    assert "redirected to another host, port or scheme; redirects are followed only" in (
        answer.error
    )
    assert [r.path for r in server.requests] == ["/redirect-elsewhere"]
    endpoint = es_endpoint(server, url=f"{server.url}/redirect-same")
    with client(endpoint) as search:
        answer = search.search(Query("leave", k=3))
    assert answer.ok and answer.hits[0].doc_id == "leave"
    assert [r.method for r in server.requests[1:]] == ["POST", "POST"]


def test_proxies_from_the_environment_are_not_used(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://10.0.0.1:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.0.0.1:3128")
    with client(es_endpoint(server)) as search:
        assert search.search(Query("leave", k=3)).ok


def test_answers_over_the_size_cap_are_refused(server, monkeypatch):
    monkeypatch.setattr("corpus.httpsearch.MAX_RESPONSE_BYTES", 50)
    with client(es_endpoint(server)) as search:
        answer = search.search(Query("leave", k=3))
    assert "larger than" in answer.error
