"""Issue 33, item 14 in Chromium, for the class: every page, for every role, fits 1366 and
1024 px without a horizontal scroll bar, its menu in one row (long project and user names
included); the page's notices stack in one region, each said once; a plot over time with one
or two moments writes its values instead of drawing them on an empty axis; the evaluation's
per-question table shows each question's text beside its id, and the permission replay's
tables fit 1366 px without scrolling.

Screenshots go to /tmp/i14-*.png when GOLDSET_SCREENSHOTS is set (to look at, not to compare).
"""

from __future__ import annotations

import datetime
import json
import os

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from corpus.models import Retriever
from corpus.services import retrieval
from evaluation.models import EvaluationRun, IndexEvaluation, PermissionReplay
from evaluation.services import reports
from evaluation.services.gold_sets import finalise_gold_set
from health.models import IndexHealthCheck
from labelling.models import Question, QuestionSet
from production.models import Sample
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, login
from tests.test_links import crawl_world, seeds_of  # noqa: F401 - crawl_world is a fixture

pytestmark = pytest.mark.e2e

PROJECT_NAME = "Human Resources Policies, Procedures and Benefits Knowledge Base (Europe)"
LONG_QUESTION = (
    "How do I install the VPN client on a personal laptop that IT does not manage, and which "
    "approvals do I need before it may connect to the internal network for the first time?"
)
# One word longer than any column: it must wrap, not widen the page.
LONG_WORD = "AnnualLeaveCarryOverPolicyReferenceHRF112ExceptionsForPeakSeasonsAndMigrations"
RUN_NAMES = [
    "bm25-stemmed-paragraphs-2026-12-06",
    "minilm-l6-fixed-200-overlap-50",
    "hybrid-rrf-k60-bm25-minilm-reranked",
    "team-production-search-v3-elasticsearch",
]
KS = [1, 3, 5, 8, 10, 20]

# The page's width against the window's; the top bar's items; tables that scroll inside.
MEASURE = """() => {
  const items = '.topbar > .brand, .project-nav > *, .account > *';
  const rows = [...document.querySelectorAll(items)]
    .filter(e => e.getClientRects().length)
    .map(e => e.getBoundingClientRect())
    .sort((a, b) => a.left - b.left);
  const scrolling = [...document.querySelectorAll('.table-scroll')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).length;
  return {
    scroll: document.documentElement.scrollWidth, window: window.innerWidth,
    tops: rows.map(r => Math.round(r.top)), bottoms: rows.map(r => Math.round(r.bottom)),
    overlap: rows.some((r, i) => i > 0 && rows[i - 1].right > r.left + 1),
    scrolling,
  };
}"""


def shot(page, name):
    if os.environ.get("GOLDSET_SCREENSHOTS"):
        page.screenshot(path=f"/tmp/i14-{name}.png", full_page=True)


@pytest.fixture
def wide_world(request):
    """The crawl's world, with what makes pages wide: a long project name and user names,
    a second gold set whose questions are long (one word longer than any column), four runs
    with long names scored with the baseline, a permission replay over six k's with findings
    and side channels on long document ids, and daily checks and builds to plot."""
    a = request.getfixturevalue("crawl_world")
    project = a["project"]
    project.name = PROJECT_NAME
    project.save(update_fields=["name"])
    people = a["people"]
    for role in ("admin", "lead"):
        people[role].username = f"alexandra.konstantinopoulou-{role}"
        people[role].save(update_fields=["username"])
    question_set = QuestionSet.objects.get(project=project, pools__pk=a["ids"]["pool_id"])
    Question.objects.filter(question_set=question_set, external_id="q2").update(text=LONG_QUESTION)
    Question.objects.filter(question_set=question_set, external_id="q3").update(
        text=f"Is there a gym discount? See {LONG_WORD}."
    )
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    runs = []
    for number, name in enumerate(RUN_NAMES):
        lines = [
            {"question_id": q, "results": [{"doc_id": doc, "start": 0, "end": 60 + 40 * number}]}
            for q, doc in (("q1", "leave"), ("q2", "vpn"), ("q3", "leave"))
        ]
        content = "".join(json.dumps(line) + "\n" for line in lines).encode()
        runs.append(
            EvaluationRun.objects.create(
                gold_set=gold_set,
                name=name,
                source="upload",
                file_name=f"{name}.jsonl",
                content=content,
                sha256=f"{number}" * 64,
            )
        )
    choice = reports.Choice(run_ids=tuple(r.pk for r in runs), baseline=True, k=5)
    reports.compute_report(gold_set=gold_set, choice=choice)
    evaluation_url = (
        reverse("evaluation:show-evaluation", args=[project.slug]) + "?" + choice.query(gold_set)
    )

    users = [
        ("hr-staff-with-confidential-access", ["hr-confidential", "hr-general", "payroll-emea"]),
        ("contractor-without-any-group", []),
        ("unrestricted", None),
    ]
    PermissionReplay.objects.filter(pk=a["ids"]["replay_id"]).update(
        k=20,
        report={
            "snapshot": "the corpus when the replay started",
            "ks": KS,
            "reference": "unrestricted",
            "leaks": 2,
            "users": [
                {
                    "name": name,
                    "groups": groups or [],
                    "unrestricted": groups is None,
                    "questions": 3,
                    "missing": 0,
                    "results": 60,
                    "leaked_results": 2 if not groups and groups is not None else 0,
                    "leaked_questions": 1,
                    "leak_rate": 0.0333,
                    "leak_at": {f"leak@{k}": 0.3333 for k in KS},
                    "first_leaked_rank": 2,
                    "median_first_leaked_rank": 2.0,
                    "canary_leaks": 0,
                    "unknown_results": 1,
                    "visible_questions": 3,
                    "visible_recall": {f"visible_recall@{k}": 0.6667 for k in KS},
                    "over_restricted": 1,
                }
                for name, groups in users
            ],
            "findings": [
                {
                    "question_id": "q1",
                    "user": "contractor-without-any-group",
                    "doc_id": f"salaries-{LONG_WORD}",
                    "groups": ["hr-confidential"],
                    "rank": rank,
                    "canary": False,
                }
                for rank in (2, 7)
            ],
            "over_restriction": [],
            "side_channels": [
                {
                    "question_id": "q1",
                    "doc_id": "salaries",
                    "insider": "hr-staff-with-confidential-access",
                    "outsider": "contractor-without-any-group",
                    "insider_count": 20,
                    "outsider_count": 19,
                    "hidden": 1,
                    "insider_scores": {"top": 12.3456},
                    "outsider_scores": {"top": 11.2345},
                    "max_score_shift": 1.1111,
                    "post_filter": True,
                    "shorter": True,
                    "score_shift": True,
                }
            ],
            "unknown": [],
            "notes": [],
        },
    )

    # Plots: one daily check of bm25 (the crawl's), two of "two-checks", five of "weekly".
    now = timezone.now()
    scheme = Retriever.objects.get(pk=a["ids"]["retriever_id"]).scheme
    plotted = {}
    for name, count in (("two-checks", 2), ("five-checks", 5)):
        retriever = retrieval.add_retriever(project=project, name=name, kind="bm25", scheme=scheme)
        plotted[name] = retriever
        for day in range(count):
            IndexHealthCheck.objects.create(
                project=project,
                retriever=retriever,
                checked_at=now - datetime.timedelta(days=count - day),
                source="built-in",
                stale_share=0.1 * day,
                lag_oldest_days=2.0 * day,
            )
            IndexEvaluation.objects.create(
                retriever=retriever,
                gold_set=gold_set,
                built_at=now - datetime.timedelta(days=count - day),
                change=LONG_WORD[:40] if day else "first build",
                k=5,
                metrics={"recall@5": 0.5 + 0.1 * day, "ndcg@10": 0.4 + 0.1 * day},
                questions=3,
            )
    one = IndexEvaluation.objects.create(
        retriever_id=a["ids"]["retriever_id"],
        gold_set=gold_set,
        built_at=now,
        change="first build",
        k=5,
        metrics={"recall@5": 0.5, "ndcg@10": 0.4},
        questions=3,
    )
    return {
        **a,
        "gold_set": gold_set,
        "evaluation_url": evaluation_url,
        "plotted": plotted,
        "one_build": one,
    }


def pages_of(world, role) -> list[str]:
    """Every page the role opens as HTML (200), from every route of the URL conf, plus the
    evaluation page showing the stored figures."""
    client = login(world["people"][role])
    found = []
    for url in [*seeds_of(world), world["evaluation_url"]]:
        response = client.get(url)
        if (
            response.status_code == 200
            and not response.streaming
            and "text/html" in response.get("Content-Type", "")
        ):
            found.append(url)
    return found


# The page's htmx parts (banners, plots, the first steps) are in: none waits to load and no
# request is under way. Cheaper than "networkidle" (half a second of quiet on each of the
# hundred-odd pages), which stays the fallback for a page that keeps a load trigger.
SETTLED = (
    "() => document.readyState === 'complete' && !document.querySelector("
    "'[hx-trigger=\"load\"], .htmx-request')"
)


def settled(page) -> None:
    try:
        page.wait_for_function(SETTLED, timeout=5000)
    except PlaywrightTimeout:
        page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("role", ["admin", "lead", "ann"])
def test_every_page_fits_1366_and_1024_pixels_with_its_menu_in_one_row(
    transactional_db, live_server, page, wide_world, role
):
    urls = pages_of(wide_world, role)
    assert len(urls) > (15 if role == "ann" else 45)
    log_in(page, live_server, wide_world["people"][role].username, PASSWORD)
    wrong = []
    for url in urls:
        page.set_viewport_size({"width": 1366, "height": 900})
        page.goto(live_server.url + url)
        settled(page)
        for width in (1366, 1024):
            page.set_viewport_size({"width": width, "height": 900})
            m = page.evaluate(MEASURE)
            if m["scroll"] > m["window"]:
                wrong.append((url, width, f"page {m['scroll']} px wide"))
            if m["tops"] and (max(m["tops"]) >= min(m["bottoms"]) or m["overlap"]):
                wrong.append((url, width, f"menu not in one row: {m['tops']}"))
            if width == 1366 and m["scrolling"]:
                wrong.append((url, width, f"{m['scrolling']} table(s) scroll sideways"))
    assert wrong == []


def test_the_lead_s_pages_that_changed_as_they_look(
    transactional_db, live_server, page, wide_world
):
    """The pages item 14 changed, looked at in both widths: the lead's menu with a page of
    a menu marked, the evaluation's questions with their text, the replay's two tables."""
    world = wide_world
    slug = world["project"].slug
    log_in(page, live_server, world["people"]["lead"].username, PASSWORD)
    for width in (1366, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + world["evaluation_url"])
        # The menu names the page's group: Evaluate, with Evaluation marked in it.
        expect(page.locator(".menu:has([aria-current=page]) .menu-button")).to_have_text("Evaluate")
        row = page.locator("table.per-question tbody tr", has_text="q2")
        expect(row.locator(".question-line")).to_have_attribute("title", LONG_QUESTION)
        expect(row.locator(".question-line")).to_be_visible()
        cut = row.locator(".question-line").evaluate("e => e.scrollWidth > e.clientWidth")
        assert cut  # the long question is cut in the table, whole in its title
        shot(page, f"evaluation-{width}")
        row.get_by_role("link", name="q2").click()
        expect(page.locator("details.drill-down[open] summary")).to_contain_text(LONG_QUESTION)

        replay = world["ids"]["replay_id"]
        page.goto(f"{live_server.url}/p/{slug}/permissions/{replay}/")
        expect(page.locator("table.permissions").first).to_contain_text("leak@k")
        expect(page.locator("table.visibility")).to_contain_text("visible recall@k")
        shot(page, f"replay-{width}")
        page.goto(f"{live_server.url}/p/{slug}/index-health/")
        page.wait_for_load_state("networkidle")
        shot(page, f"index-health-{width}")
        page.goto(f"{live_server.url}/p/{slug}/assignments/")
        shot(page, f"assignments-{width}")
    page.get_by_role("button", name="Evaluate").hover()
    page.get_by_role("link", name="Permission replays").click()
    expect(page.locator("h1")).to_have_text("Permission replays")


def test_several_notices_stack_in_one_region_each_said_once(
    transactional_db, live_server, page, wide_world
):
    world = wide_world
    project, slug = world["project"], world["project"].slug
    first = Sample.objects.get(pk=world["ids"]["sample_id"])
    # A second sample of the same rule this week, with its own question set.
    second_set = QuestionSet.objects.create(project=project, name="production 2026-W49")
    Sample.objects.create(
        project=project,
        rule=first.rule,
        window_start=first.window_start,
        window_end=first.window_end,
        population=0,
        question_set=second_set,
    )
    log_in(page, live_server, world["people"]["lead"].username, PASSWORD)
    for width in (1366, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        # The project page: both samples and the daily check's crossing, in one region.
        page.goto(f"{live_server.url}/p/{slug}/")
        region = page.locator(".banners")
        expect(region).to_have_count(1)
        expect(region.locator("#index-health-banner")).to_be_visible()
        expect(region.locator(".banner", has_text="New production sample")).to_have_count(2)
        expect(page.locator("main .banner:not(.banners .banner)")).to_have_count(0)
        shot(page, f"notices-project-{width}")
    # Draw now on a rule drawn this week: the message and the samples, one region.
    page.goto(f"{live_server.url}/p/{slug}/samples/")
    page.get_by_role("button", name="Draw now").click()
    region = page.locator(".banners")
    expect(region).to_have_count(1)
    expect(region.locator(".messages li")).to_have_count(1)
    expect(region.locator(".messages")).to_contain_text("already drew")
    expect(region.locator(".banner", has_text="New production sample")).to_have_count(2)
    shot(page, "notices-sample-1024")
    # Dismissed, a sample's entry goes; the other stays, still dismissible.
    region.locator(".banner", has_text="production 2026-W49").get_by_role(
        "button", name="Dismiss"
    ).click()
    expect(page.locator(".banners .banner", has_text="New production sample")).to_have_count(1)
    # A page with nothing to say draws no empty region.
    page.goto(f"{live_server.url}/p/{slug}/documents/")
    page.locator(".banners .banner").first.get_by_role("button", name="Dismiss").click()
    page.goto(f"{live_server.url}/p/{slug}/documents/")
    expect(page.locator(".banners")).to_be_hidden()


def test_a_plot_with_one_or_two_moments_writes_its_values(
    transactional_db, live_server, page, wide_world
):
    world = wide_world
    slug = world["project"].slug
    log_in(page, live_server, world["people"]["lead"].username, PASSWORD)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/p/{slug}/index-health/")
    history = page.locator("figure.plot")
    one = history.filter(has_text="bm25")
    expect(one.locator(".plot-few")).to_contain_text(
        "Not enough daily checks yet to draw over time: stale share 50% on"
    )
    expect(one.locator("svg[role=img]")).to_have_count(0)
    two = history.filter(has_text="two-checks")
    expect(two.locator(".plot-few")).to_contain_text("stale share 0% on")
    expect(two.locator(".plot-few")).to_contain_text(", then 10% on")
    expect(two.locator(".plot-few")).to_contain_text("oldest lag 0.0 d on")
    expect(two.locator("svg[role=img]")).to_have_count(0)
    five = history.filter(has_text="five-checks")
    expect(five.locator(".plot-few")).to_have_count(0)
    expect(five.locator("svg[role=img] polyline")).to_have_count(2)

    # A retriever's builds: one build, two builds (sentences), five (a chart).
    for retriever_id, expected in (
        (world["ids"]["retriever_id"], "recall@5 0.500 on"),
        (world["plotted"]["two-checks"].pk, ", then 0.600 on"),
    ):
        page.goto(f"{live_server.url}/p/{slug}/retrievers/{retriever_id}/")
        builds = page.locator("#retriever-builds")
        expect(builds.locator(".plot-few")).to_contain_text("Not enough builds yet")
        expect(builds.locator(".plot-few")).to_contain_text(expected)
        expect(builds.locator("svg[role=img]")).to_have_count(0)
        shot(page, f"builds-{retriever_id}")
    page.goto(f"{live_server.url}/p/{slug}/retrievers/{world['plotted']['five-checks'].pk}/")
    expect(page.locator("#retriever-builds svg[role=img] polyline")).to_have_count(2)

    # Labelling progress: every question of the set was finished at one moment.
    page.goto(f"{live_server.url}/p/{slug}/assignments/")
    expect(page.locator(".plots .plot-few")).to_contain_text(
        "Not enough finished questions yet to draw over time: hr 100% on"
    )
    expect(page.locator("svg.progress-chart")).to_have_count(0)
