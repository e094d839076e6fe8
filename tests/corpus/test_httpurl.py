"""One strict reading of every URL Goldset calls (`corpus.httpurl`): what two URL readers could
read differently is refused with a message that says what to write, never a 500."""

import pytest

from corpus.httpurl import host_problems, read_url, url_problems

# Every way a host or port can hide another reading: octal, hex, a single number, fewer parts,
# percent-encoding, whitespace or control characters that one reader drops, fullwidth digits and
# look-alike letters that another folds, brackets left open, ports out of range.
MALFORMED = [
    ("http://0177.0.0.1/", "another notation"),
    ("http://0177.0.0.1:8125/manifest.csv", "another notation"),
    ("http://127.000.0.1/", "another notation"),
    ("http://0x7f.0.0.1/", "another notation"),
    ("http://0x7f.1/", "another notation"),
    ("http://2130706433/", "another notation"),
    ("http://127.1/", "another notation"),
    ("http://256.0.0.1/", "another notation"),
    ("http://%31%32%37.0.0.1/", "not a host name"),
    ("http://127.0.0.1\t/x", "a tab character at position 17"),
    ("http://12\t7.0.0.1/", "a tab character"),
    ("http://vm\n.example/", "a line break character"),
    ("http://vm\r/", "a carriage return character"),
    ("http://exa mple.com/", "a space character"),
    ("http://ex\u200bample.com/", "a zero width space character"),
    ("http://\x00vm/", "U+0000"),
    ("http://１２７.０.０.１/", "outside ASCII"),
    ("http://127.0.0.１:8125/", "outside ASCII"),
    ("http://ｖｍ/", "outside ASCII"),
    ("http://vm:８１２５/", "not a number from 1 to 65535"),
    ("http://vm:99999/", "not a number from 1 to 65535"),
    ("http://vm:0/", "not a number from 1 to 65535"),
    ("http://vm:/", "not a number from 1 to 65535"),
    ("http://vm:+80/", "not a number from 1 to 65535"),
    ("http://[::1/", "no closing ]"),
    ("http://[::1]x/", "only :port may follow"),
    ("http://[::g]/", "not an IPv6 address"),
    ("http://a..b/", "not a host name"),
    ("http://-a.example/", "not a host name"),
    ("http://a_b.example/", "not a host name"),
    ("http:///path", "no host"),
    ("http://user:pw@vm/", "user name or password"),
    ("ftp://vm/", "must start with http:// or https://"),
    ("//vm/", "must start with http:// or https://"),
    ("javascript:alert(1)", "must start with http:// or https://"),
    ("http://vm/#top", "#fragment"),
]


@pytest.mark.parametrize("url, message", MALFORMED)
def test_a_url_read_two_ways_is_refused_with_what_to_write(url, message):
    problems = url_problems(url)
    assert problems and message in "; ".join(problems)
    assert read_url(url)[0] is None


@pytest.mark.parametrize(
    "url, scheme, host, port",
    [
        ("http://127.0.0.1:8125/manifest.csv", "http", "127.0.0.1", 8125),
        ("https://Search.Example.COM./x?q=ä", "https", "search.example.com", None),
        ("http://[::1]:9200/_search", "http", "::1", 9200),
        ("http://10.0.0.5/", "http", "10.0.0.5", None),
        ("http://xn--bcher-kva.example/", "http", "xn--bcher-kva.example", None),
        ("http://vm/api?q=x&k=x", "http", "vm", None),
    ],
)
def test_a_plain_url_reads_one_way(url, scheme, host, port):
    authority, problems = read_url(url)
    assert problems == []
    assert (authority.scheme, authority.host, authority.port) == (scheme, host, port)


def test_the_host_rule_is_the_same_for_a_host_alone():
    assert host_problems("0177.0.0.1") and host_problems("１２７.０.０.１")
    assert host_problems("") == ["the URL has no host"]
    assert host_problems("127.0.0.1") == host_problems("[::1]") == host_problems("vm") == []
