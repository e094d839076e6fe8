"""Issue 14, items 11, 14 and 17 in real Chromium: a set whose only open items are restricted
ones is reached from the Gold page, resolved item after item and finalised; a lead adjudicates
by selecting text; the lead's menu fits a 1366 px screen, the 403 page keeps the menu and a
favicon is served."""

import time

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from corpus.models import Document
from corpus.services import projects
from evaluation.models import GoldSet
from labelling.models import Assignment, Candidate, Judgement, Pool, Resolution, Span, Verdict
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    SALARY_TEXT,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e


def watch_console(page) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def restricted_world():
    """q1: ann and bob (both in hr) disagree on the two salary passages and agree on the leave
    passage; q2: cem alone (outside hr) graded the leave passage, and nobody of q2 can see its
    salary passage. Everything public is settled, so the only open items are restricted."""
    project = ProjectFactory(slug="acme", name="Acme HR")
    people = {}
    for name, role in (
        ("ann", "labeller"),
        ("bob", "labeller"),
        ("cem", "labeller"),
        ("lea", "lead"),
        ("adm", "admin"),
    ):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    add_documents(project, ("leave", POLICY_TEXT), ("salaries", SALARY_TEXT, ["hr"]))
    projects.set_access_group_members(
        project=project, name="hr", users=[people[n] for n in ("ann", "bob", "lea", "adm")]
    )
    leave = Document.objects.get(doc_id="leave").latest_version
    salaries = Document.objects.get(doc_id="salaries").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    q1 = QuestionFactory(question_set=question_set, external_id="q1", text="band C salary?")
    q2 = QuestionFactory(question_set=question_set, external_id="q2", text="carry over leave")
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    now = timezone.now()

    def assign(question, slot, user):
        return Assignment.objects.create(
            pool=pool,
            question=question,
            slot=slot,
            labeller=user,
            assigned_at=now,
            completed_at=now,
        )

    def grade(assignment, candidate, value, spans=()):
        judgement = Judgement.objects.create(
            assignment=assignment, candidate=candidate, grade=value
        )
        for start, end in spans:
            Span.objects.create(
                judgement=judgement,
                version=candidate.version,
                start=start,
                end=end,
                quote=candidate.version.text[start:end],
            )

    first_band = (0, SALARY_TEXT.index(".") + 1)
    second_band = (first_band[1] + 1, len(SALARY_TEXT))
    c_leave = Candidate.objects.create(pool=pool, question=q1, version=leave, start=0, end=120)
    c_band_c = Candidate.objects.create(
        pool=pool, question=q1, version=salaries, start=0, end=first_band[1], shuffle_rank=1
    )
    c_band_d = Candidate.objects.create(
        pool=pool,
        question=q1,
        version=salaries,
        start=second_band[0],
        end=second_band[1],
        shuffle_rank=2,
    )
    ann, bob = assign(q1, 1, people["ann"]), assign(q1, 2, people["bob"])
    grade(ann, c_leave, 0)
    grade(bob, c_leave, 0)
    grade(ann, c_band_c, 2, [first_band])
    grade(bob, c_band_c, 1, [(0, 24)])  # "Band C pays 52,000 to 61"
    grade(ann, c_band_d, 0)
    grade(bob, c_band_d, 2, [second_band])
    c2_leave = Candidate.objects.create(pool=pool, question=q2, version=leave, start=0, end=120)
    c2_salary = Candidate.objects.create(
        pool=pool, question=q2, version=salaries, start=0, end=len(SALARY_TEXT), shuffle_rank=1
    )
    cem = assign(q2, 1, people["cem"])
    grade(cem, c2_leave, 2, [(0, 60)])
    Verdict.objects.create(assignment=cem, outcome="answerable")
    return {
        "project": project,
        "set": question_set,
        "pool": pool,
        "people": people,
        "open": [c_band_c, c_band_d, c2_salary],
    }


def test_restricted_open_items_are_reached_from_the_gold_page_resolved_and_finalised(
    live_server, page, worker
):
    """Finalising is a job: the worker fixture, not an earlier test, starts the worker."""
    world = restricted_world()
    problems = watch_console(page)
    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{world['set'].pk}/gold/")
    unresolved = page.locator("section.unresolved")
    expect(unresolved.locator("h2")).to_have_text("3 items unresolved")
    # Grouped by question, every item a link.
    expect(unresolved.locator(".unresolved-group h3")).to_have_count(2)
    expect(unresolved.locator(".unresolved-group").nth(0)).to_contain_text("grades differ (2 vs 1)")
    expect(unresolved.locator(".unresolved-group").nth(1)).to_contain_text(
        "none of its labellers can see this document"
    )
    expect(unresolved.locator(".unresolved-items a")).to_have_count(3)

    unresolved.locator(".unresolved-items a").first.click()
    expect(page.locator("h1")).to_have_text("Decide a passage")
    expect(page.locator(".vote-a")).to_contain_text(
        "“Band C pays 52,000 to 61,000 euros per year.”"
    )
    page.get_by_role("button", name="Take ann's").click()
    # Straight on to the next item, then the last one (nobody could vote on it).
    expect(page.locator(".messages")).to_contain_text("Here is the next one")
    expect(page.locator(".question-text")).to_contain_text("q1")
    page.get_by_role("button", name="Take bob's").click()
    expect(page.locator(".question-text")).to_contain_text("q2")
    expect(page.locator("section.votes")).to_contain_text("No labeller has graded this passage")
    page.get_by_label("0 — not relevant").check()
    page.get_by_role("button", name="Record the resolution and go on").click()
    expect(page.locator(".messages")).to_contain_text("Nothing else is waiting for a decision")
    expect(page.locator("p.ok")).to_contain_text("Every item is resolved.")
    assert Resolution.objects.filter(pool=world["pool"]).count() == 3
    assert sorted(Resolution.objects.values_list("grade", flat=True)) == [0, 2, 2]

    # The admin finalises it in the browser.
    page.get_by_role("button", name="Log out").click()
    log_in(page, live_server, "adm", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/gold-sets/")
    page.get_by_role("button", name="Finalise hr as a new gold set").click()
    deadline = time.monotonic() + 30
    while not GoldSet.objects.filter(question_set=world["set"]).exists():
        assert time.monotonic() < deadline, "the gold set was not finalised"
        time.sleep(0.2)
    assert GoldSet.objects.get(question_set=world["set"]).manifest["questions"] == 2
    assert problems == []


def drag_select(page, selector: str, text: str) -> None:
    """Select ``text`` inside the element with the mouse, as a person would: press at its
    first character, release after its last."""
    box = page.evaluate(
        """([selector, text]) => {
            const root = document.querySelector(selector);
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            const nodes = [];
            for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
            const whole = nodes.map((n) => n.data).join("");
            const at = whole.indexOf(text);
            if (at < 0) return null;
            function point(offset) {  // the node and offset of a character of `whole`
                for (const node of nodes) {
                    if (offset < node.data.length) return [node, offset];
                    offset -= node.data.length;
                }
            }
            function rect(offset) {
                const [node, i] = point(offset);
                const r = document.createRange();
                r.setStart(node, i);
                r.setEnd(node, i + 1);
                return r.getBoundingClientRect();
            }
            const a = rect(at), b = rect(at + text.length - 1);
            return {
                x1: a.left + 1, y1: a.top + a.height / 2,
                x2: b.right - 1, y2: b.top + b.height / 2,
            };
        }""",
        [selector, text],
    )
    assert box, text
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=8)
    page.mouse.up()


def test_a_lead_adjudicates_by_selecting_text(live_server, page):
    world = restricted_world()
    problems = watch_console(page)
    band_c, band_d, _ = world["open"]
    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{world['set'].pk}/adjudication/")
    page.get_by_role("link", name="Resolve").first.click()
    # The widest disagreement first (band D, 0 vs 2, before band C's 2 vs 1): one click takes
    # a labeller's vote, spans and all.
    expect(page.locator(".vote-b")).to_contain_text("Band D pays")
    page.get_by_role("button", name="Take bob's").click()
    taken = Resolution.objects.get(candidate=band_d)
    bobs = Span.objects.get(judgement__candidate=band_d)
    assert taken.grade == 2
    assert [(s.start, s.end) for s in taken.spans.all()] == [(bobs.start, bobs.end)]
    # The next item: votes as quoted text, not offsets.
    expect(page.locator(".vote-b .quotes")).to_have_text("“Band C pays 52,000 to 61”")
    expect(page.locator(".vote-b")).not_to_contain_text("[0–24)")
    # A drag that starts and ends inside words takes the whole words (snapped).
    drag_select(page, "#resolve-text", "and C pays 52,000 to 61,0")
    page.keyboard.press("s")
    expect(page.locator("#chosen-spans li")).to_have_count(1)
    expect(page.locator("#chosen-spans li mark")).to_have_text("“Band C pays 52,000 to 61,000”")
    expect(page.get_by_label("Evidence")).to_have_value("custom")
    page.get_by_label("2 — fully answers").check()
    page.get_by_role("button", name="Record the resolution and go on").click()
    expect(page.locator(".messages")).to_contain_text("Here is the next one")
    resolution = Resolution.objects.get(candidate=band_c)
    span = resolution.spans.get()
    assert resolution.grade == 2
    assert (span.start, span.end) == (0, len("Band C pays 52,000 to 61,000"))
    assert span.quote == "Band C pays 52,000 to 61,000"
    # A selection outside the document text is refused with a message, nothing recorded.
    expect(page.locator("h1")).to_have_text("Decide a passage")
    page.locator(".question-text").dblclick()
    page.keyboard.press("s")
    expect(page.locator("#selection-message")).to_be_visible()
    expect(page.locator("#chosen-spans li")).to_have_count(0)
    assert Judgement.objects.count() == 7  # the votes are kept
    assert problems == []


def test_the_lead_menu_fits_1366_pixels_and_the_403_page_keeps_it(live_server, browser):
    restricted_world()
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(20_000)
    statuses = {}
    page.on("response", lambda r: statuses.__setitem__(r.url, r.status))
    log_in(page, live_server, "adm", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/assignments/")
    tops = page.eval_on_selector_all(
        ".topbar .project-nav > *, .topbar .account",
        "els => els.map(e => e.getBoundingClientRect().top)",
    )
    assert max(tops) - min(tops) < 8, tops  # one line
    nav = page.locator(".project-nav")
    expect(nav.get_by_role("link", name="Team")).to_be_visible()
    # The grouped menus open on hover and on keyboard focus.
    page.get_by_role("button", name="Corpus").hover()
    expect(nav.get_by_role("link", name="Documents", exact=True)).to_be_visible()
    favicon = [url for url in statuses if "favicon" in url]
    assert favicon and all(statuses[url] == 200 for url in favicon), statuses
    assert page.request.get(f"{live_server.url}/favicon.ico").status == 200

    page.get_by_role("button", name="Log out").click()
    log_in(page, live_server, "ann", PASSWORD)
    response = page.goto(f"{live_server.url}/p/acme/members/")
    assert response.status == 403
    expect(page.locator(".project-nav")).to_be_visible()
    expect(page.locator(".refusal")).to_contain_text("This needs the admin role")
    expect(page.locator(".refusal")).to_contain_text("You are a labeller in Acme HR")
    expect(page.locator(".refusal")).to_contain_text("adm")
    context.close()
