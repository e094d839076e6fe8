"""Issue 33, items 1, 2 and 12: no dead end, no duplicate id, no banner pointing at its own page.

Every page the URL conf has, for every role (admin, lead, labeller, a signed-in outsider, and an
anonymous visitor), is opened, and every link, every htmx load and every GET form on it is
followed, page after page, until nothing new is reached. A link or form a page shows must reach
a view that answers it: no 405 (a POST-only view behind a link) and never a 500. Then every
button that posts is pressed once per URL, with its form's own fields: no 405 and no 500
either. Every HTML page it sees (refusals and 404s too, whose links are followed as well) must
have unique element ids (a label's ``for`` would tick a box of another form) and no banner
linking to the page it is on.

The crawl visits each path once per set of query parameter names (``?pool=3`` and ``?pool=4``
are the same kind of link), which bounds it without missing a kind of link.
"""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from corpus.services import projects, retrieval
from evaluation.models import EvaluationRun
from health.models import IndexHealthCheck
from labelling.models import QuestionSet
from production.models import Sample
from tests.factories import UserFactory, login
from tests.test_access_matrix import routes, world

# Served by the web server in production, by Django's admin for staff: not our pages.
NOT_OURS = ("/static/", "/admin/")


class Page(HTMLParser):
    """What a crawler needs of a page: its links, htmx loads and GET forms, its ids, and the
    links inside banners (a banner is a ``<div class="banner">``; divs always close)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, bool]] = []  # (url, htmx)
        self.forms: list[tuple[str, str, list[tuple[str, str]]]] = []  # (method, action, fields)
        self.ids: list[str] = []
        self.banner_links: list[str] = []
        self._divs = 0
        self._banner_at = 0
        self._form: tuple[str, list] | None = None
        self._select: str | None = None
        self._select_value: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "div":
            self._divs += 1
            if not self._banner_at and "banner" in (a.get("class") or "").split():
                self._banner_at = self._divs
        if tag == "a" and a.get("href") is not None:
            self.links.append((a["href"], False))
            if self._banner_at:
                self.banner_links.append(a["href"])
        if a.get("hx-get"):
            self.links.append((a["hx-get"], True))
        if a.get("hx-post"):
            self.forms.append(("post", a["hx-post"], []))
        if tag == "form":
            self._form = ((a.get("method") or "get").lower(), a.get("action") or "", [])
        if self._form is None:
            return
        if tag == "input" and a.get("name") and a.get("type") not in ("submit", "button"):
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            self._form[2].append((a["name"], a.get("value") or ""))
        elif tag == "select" and a.get("name"):
            self._select, self._select_value = a["name"], None
        elif (
            tag == "option"
            and self._select is not None
            and (self._select_value is None or "selected" in a)
        ):
            self._select_value = a.get("value", "")

    def handle_endtag(self, tag):
        if tag == "div":
            if self._banner_at == self._divs:
                self._banner_at = 0
            self._divs -= 1
        if tag == "select" and self._form is not None and self._select is not None:
            self._form[2].append((self._select, self._select_value or ""))
            self._select = None
        if tag == "form" and self._form is not None:
            self.forms.append(self._form)
            self._form = None


def kind_of(url: str) -> tuple[str, tuple[str, ...]]:
    parts = urlsplit(url)
    return parts.path, tuple(sorted({k for k, _ in parse_qsl(parts.query, True)}))


def crawl(client: Client, seeds: list[str], *, signed_in: bool = True) -> dict:
    """Follow everything reachable from the seeds; what went wrong, by kind. A signed-in user
    sent to log in by a link has met a dead end; an anonymous one is meant to be."""
    seen: set = set()
    posts: dict[str, tuple[list, str]] = {}
    dead, broken, duplicate_ids, self_banners = [], [], [], []
    queue = [(url, None, False) for url in seeds]
    while queue:
        url, found_on, htmx = queue.pop()
        if kind_of(url) in seen:
            continue
        seen.add(kind_of(url))
        headers = {"HX-Request": "true"} if htmx else {}
        response = client.get(url, headers=headers)
        status = response.status_code
        if status >= 500 or (found_on and status == 405):
            (broken if status >= 500 else dead).append((url, status, found_on))
        if status in (301, 302) and found_on:
            target = urljoin(url, response["Location"])
            if urlsplit(target).path.startswith("/accounts/login/"):
                if signed_in:
                    dead.append((url, "sent to log in", found_on))
            else:
                queue.append((target, found_on, False))
        if status in (301, 302) or "text/html" not in response.get("Content-Type", ""):
            continue
        body = b"".join(response) if response.streaming else response.content
        page = Page()
        page.feed(body.decode())
        repeated = sorted(i for i, n in Counter(page.ids).items() if n > 1)
        if repeated:
            duplicate_ids.append((url, repeated))
        here = urlsplit(url).path
        for href in page.banner_links:
            if urlsplit(urljoin(url, href)).path == here and not href.startswith("#"):
                self_banners.append((url, href))
        for href, is_htmx in page.links:
            target = _ours(url, href)
            if target:
                queue.append((target, url, is_htmx))
        for method, action, fields in page.forms:
            target = _ours(url, action or url)
            if not target:
                continue
            if method == "post":
                posts.setdefault(urlsplit(target).path, (fields, url))
                continue
            parts = urlsplit(target)
            query = urlencode(fields)
            queue.append((f"{parts.path}?{query}" if query else parts.path, url, False))
    # Then every button that posts, once per URL, as it would be pressed (its form's fields).
    for path, (fields, found_on) in posts.items():
        data: dict[str, list[str]] = {}
        for name, value in fields:
            data.setdefault(name, []).append(value)
        response = client.post(path, data)
        status = response.status_code
        if status >= 500 or status == 405:
            (broken if status >= 500 else dead).append((f"POST {path}", status, found_on))
        # A page shown again with the form's errors (400) is a page too.
        if "text/html" in response.get("Content-Type", "") and not response.streaming:
            page = Page()
            page.feed(response.content.decode())
            repeated = sorted(i for i, n in Counter(page.ids).items() if n > 1)
            if repeated:
                duplicate_ids.append((f"POST {path}", repeated))
    return {
        "visited": len(seen),
        "posted": len(posts),
        "dead": dead,
        "broken": broken,
        "duplicate_ids": duplicate_ids,
        "self_banners": self_banners,
    }


def _ours(page_url: str, href: str) -> str | None:
    if href.startswith(("#", "mailto:", "javascript:", "data:")):
        return None
    target = urlsplit(urljoin("http://testserver" + page_url, href))
    if target.netloc != "testserver" or target.path.startswith(NOT_OURS):
        return None
    return target.path + (f"?{target.query}" if target.query else "")


@pytest.fixture
def crawl_world(db, monkeypatch):
    monkeypatch.setattr("corpus.jobs.queue", lambda job: None)
    a = world("a")
    # A production sample with its question set and pool: the banner every lead page shows and
    # the sample page's "Assign it".
    question_set = QuestionSet.objects.get(project=a["project"], pools__pk=a["ids"]["pool_id"])
    Sample.objects.filter(pk=a["ids"]["sample_id"]).update(question_set=question_set)
    # The lead may see the restricted document, the admin may not: each sees the evaluation
    # pages in one of their two states (figures and forms, or the count-free refusal).
    projects.set_access_group_members(
        project=a["project"], name="hr-confidential", users=[a["people"]["lead"]]
    )
    # The world's stored run as an upload would have stored it (it is empty there).
    line = {"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 50}]}
    EvaluationRun.objects.filter(pk=a["ids"]["run_id"]).update(
        content=(json.dumps(line) + "\n").encode()
    )
    # The team's own system, as a run retriever: forms that offer one show their extra fields.
    retrieval.add_retriever(project=a["project"], name="team", kind="run")
    # A daily index health check that crossed a threshold: the project page's banner.
    IndexHealthCheck.objects.create(
        project=a["project"],
        retriever_id=a["ids"]["retriever_id"],
        checked_at=timezone.now(),
        source="built-in",
        stale_share=0.5,
        crossed=[{"check": "stale", "value": 0.5, "limit": 0.1, "message": "1 of 2 stale"}],
    )
    return a


def seeds_of(a) -> list[str]:
    urls = ["/", reverse("corpus:list-projects")]
    for name, kwargs in routes():
        urls.append(reverse(name, kwargs={k: a["ids"][k] for k in kwargs}))
    return urls


@pytest.mark.parametrize("role", ["admin", "lead", "ann", "outsider", "anonymous"])
def test_every_link_and_get_form_of_every_page_answers(crawl_world, role):
    a = crawl_world
    if role == "anonymous":
        client = Client()  # every page sends it to log in: the log-in page's own links
    elif role == "outsider":
        client = login(UserFactory(username="stranger"))
    else:
        client = login(a["people"][role])
    found = crawl(client, seeds_of(a) + [reverse("login")], signed_in=role != "anonymous")
    # Every kind of page and every posting URL is reached (110 to 140 kinds, 2 to 55 URLs).
    assert found["visited"] > 100 and found["posted"] >= 1
    assert {k: v for k, v in found.items() if k not in ("visited", "posted") and v} == {}
