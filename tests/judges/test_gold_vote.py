"""The AI judge as one more vote: shown to leads on the adjudication page, marked as the AI's,
with its quote highlighted; counted by the gold rule only where a lead turned that on for the
set (and then as one vote, the newest valid one of the chosen judge), and recorded in the gold
set's manifest. Off, the gold set is byte for byte what the labellers made."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import Job
from evaluation.services import gold_sets
from judges.models import AIJudgement, GoldVoteSwitch, JudgePrompt, JudgingPass
from judges.services.calibration import calibrate
from judges.services.configuration import add_judge
from judges.services.gold_vote import set_gold_vote
from labelling.models import Judgement, Resolution, Span
from labelling.resolution import Decision, Pending
from labelling.services import adjudication
from labelling.services.gold import resolve_gold
from tests.factories import QuestionSetFactory, login
from tests.judges.world import build_world
from tests.labelling.test_lead_pages import _same_pages as same_pages

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


@pytest.fixture
def labelled(project, people, llm):
    """Four questions: q0 and q2 double-labelled (one of q2's items resolved by the lead), q1
    and q3 labelled by ann alone; every relevant vote marks the passage, as the grading page
    does."""
    world = build_world(
        project,
        ann=people["ann"],
        bob=people["bob"],
        lead=people["lead"],
        questions=4,
        secret=False,
    )
    llm.truth.update(world.truth)
    for judgement in Judgement.objects.filter(candidate__pool=world.pool, grade__gt=0):
        candidate = judgement.candidate
        Span.objects.create(
            judgement=judgement,
            version=candidate.version,
            start=candidate.start,
            end=candidate.end,
            quote=candidate.text,
        )
    world.judge = add_judge(
        project=project, name="qwen", url=f"{llm.url}/agree/v1/chat/completions", model="m"
    )
    return world


def vote(judge, candidate, grade, *, quote="", prompt=None, error="", again=False):
    """An AI judgement as judging stores it (a quote found at the passage's start)."""
    return AIJudgement.objects.create(
        judge=judge,
        prompt=prompt or judge.prompts.get(version=1),
        candidate=candidate,
        judging_pass=JudgingPass.AGAIN if again else JudgingPass.FIRST,
        model="m-1",
        grade=None if error else grade,
        quote=quote,
        span_start=candidate.start if quote else None,
        span_end=candidate.start + len(quote) if quote else None,
        placed="exact" if quote else "",
        error=error,
    )


def item_of(world, candidate):
    return adjudication.item_votes(
        question_set=world.question_set,
        pool_id=world.pool.pk,
        question_id=candidate.question_id,
        candidate_id=candidate.pk,
    )


def resolve_url(world, candidate):
    return reverse(
        "labelling:resolve-item",
        kwargs={
            "slug": world.question_set.project.slug,
            "set_id": world.question_set.pk,
            "pool_id": world.pool.pk,
            "question_id": candidate.question_id,
            "candidate_id": candidate.pk,
        },
    )


def switch_url(world, judge=None):
    judge = judge or world.judge
    return reverse(
        "judges:switch-gold-vote",
        kwargs={"slug": world.question_set.project.slug, "judge_id": judge.pk},
    )


def marks_in_text(page: str, layer: str) -> list[str]:
    text = page.split('id="resolve-text"', 1)[1].split("</div>\n", 1)[0]
    return re.findall(rf'<mark class="layer-{layer}">([^<]*)</mark>', text)


def test_a_lead_sees_the_judges_vote_beside_the_labellers_marked_and_highlighted(
    project, people, labelled, django_capture_on_commit_callbacks
):
    browser = login(people["lead"])
    start = reverse(
        "judges:start-judging", kwargs={"slug": project.slug, "judge_id": labelled.judge.pk}
    )
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(start, {"question_set": labelled.question_set.pk, "judging_pass": "first"})
    assert Job.objects.get(kind="judge").state == "succeeded"
    row = AIJudgement.objects.filter(grade__gt=0, placed="exact").order_by("pk").first()
    candidate = row.candidate
    page = browser.get(resolve_url(labelled, candidate)).content.decode()
    assert "AI judge (fake-judge-1, prompt v1)" in page
    assert "AI vote, not a labeller's" in page
    assert f'Grade <strong class="vote-grade">{row.grade}</strong>' in page
    assert "Not counted by the gold rule" in page
    assert "Take the AI judge's" in page
    # The quote is highlighted in the document text as the judge's own layer (over the
    # labellers' evidence, which covers the whole passage here).
    assert "".join(m for layer in ("aj", "abj", "j") for m in marks_in_text(page, layer)) == (
        row.quote
    )
    assert "AI judge's quote" in page  # the legend
    # Labellers never reach the page, nor learn anything from its answer.
    for labeller in (people["ann"], people["bob"]):
        response = login(labeller).get(resolve_url(labelled, candidate))
        assert response.status_code == 403 and b"AI judge" not in response.content
    # "Take the AI judge's" resolves the item with its grade and its quote as the evidence.
    take = re.search(r'<input type="hidden" name="custom_spans" value="([^"]*)">', page)
    assert take.group(1) == f"{row.span_start}-{row.span_end}"
    response = browser.post(
        resolve_url(labelled, candidate),
        {"grade": row.grade, "spans_from": "custom", "custom_spans": take.group(1), "note": ""},
    )
    assert response.status_code == 302
    resolution = Resolution.objects.get(candidate=candidate)
    assert resolution.grade == row.grade
    assert [(s.start, s.end, s.quote) for s in resolution.spans.all()] == [
        (row.span_start, row.span_end, row.quote)
    ]


def test_the_judges_answer_stays_text_on_the_page(people, labelled):
    candidate = labelled.candidates[4]
    row = vote(labelled.judge, candidate, 2)
    row.quote, row.model = "<script>alert(1)</script>", "<img src=x onerror=alert(2)>"
    row.save()
    page = login(people["lead"]).get(resolve_url(labelled, candidate)).content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x" not in page and "AI judge (&lt;img src=x onerror=alert(2)&gt;" in page


def gold_files(gold_set) -> dict[str, bytes]:
    """The bundle but its manifest and the AI judgements' own file (`ai-judgements.jsonl`,
    exported beside the gold, never in it): what the gold rule decided."""
    others = {"manifest.json", "ai-judgements.jsonl"}
    return {n: c for n, c in gold_sets.bundle_files(gold_set).items() if n not in others}


def test_off_by_default_the_gold_set_is_byte_for_byte_the_labellers(people, labelled):
    admin = people["admin"]
    before = gold_sets.finalise_gold_set(question_set=labelled.question_set, user=admin)
    queue = adjudication.adjudication_queue(question_set=labelled.question_set)
    # The judge disagrees with every item (and fails on some), in two prompt versions.
    newer = JudgePrompt.objects.create(
        judge=labelled.judge, version=2, text="{{question}} {{passage}}"
    )
    for i, candidate in enumerate(labelled.candidates):
        vote(labelled.judge, candidate, (labelled.gold[candidate.pk] + 1) % 3, quote="Passage")
        vote(labelled.judge, candidate, 2, prompt=newer, error="no JSON" if i % 2 else "")
    assert GoldVoteSwitch.objects.count() == 0  # nobody turned it on
    off = gold_sets.finalise_gold_set(question_set=labelled.question_set, user=admin)
    assert gold_files(off) == gold_files(before)
    assert "ai_judge_vote" not in before.manifest
    assert off.manifest["ai_judge_vote"] == {"counted": False}
    assert [
        (e.candidate, e.reason)
        for e in adjudication.adjudication_queue(question_set=labelled.question_set)
    ] == [(e.candidate, e.reason) for e in queue]
    # Turned on, then off again: the same.
    set_gold_vote(question_set=labelled.question_set, judge=labelled.judge, on=True, user=admin)
    set_gold_vote(question_set=labelled.question_set, judge=labelled.judge, on=False, user=admin)
    again = gold_sets.finalise_gold_set(question_set=labelled.question_set, user=admin)
    assert gold_files(again) == gold_files(before)
    assert again.manifest["ai_judge_vote"] == {"counted": False}


def test_turned_on_the_judges_vote_counts_and_the_manifest_says_so(people, labelled, monkeypatch):
    lead, admin, world = people["lead"], people["admin"], labelled
    # The judge agrees with every item but one of ann's alone (q1: she says 2, it says 1).
    disputed = world.candidates[4]
    assert world.gold[disputed.pk] == 2
    for candidate in world.candidates:
        grade = 1 if candidate == disputed else world.gold[candidate.pk]
        vote(world.judge, candidate, grade, quote="Passage" if grade else "")
    browser = login(lead)
    response = browser.post(switch_url(world), {"question_set": world.question_set.pk, "on": "1"})
    assert response.status_code == 302
    assert GoldVoteSwitch.objects.get(question_set=world.question_set).on
    judge_page = browser.get(response["Location"]).content.decode()
    assert "The gold rule of calib now counts qwen&#x27;s vote." in judge_page
    assert 'name="on" value="1" checked' in judge_page
    # The disputed item now waits for a lead, everywhere a lead looks.
    item = item_of(world, disputed)
    assert item.decide(min_span_f1=0.5) == Pending("grades differ (2 vs the AI judge's 1)")
    queue = adjudication.adjudication_queue(question_set=world.question_set)
    assert [e.candidate for e in queue] == [disputed]
    slug, set_id = world.question_set.project.slug, world.question_set.pk
    listing = browser.get(reverse("labelling:list-adjudication", args=[slug, set_id]))
    assert "2 vs the AI judge's 1" in listing.content.decode()
    # The stored decisions (with the counted vote's grade) show what deciding again shows.
    same_pages(world.question_set.project, world.question_set, [lead], monkeypatch)
    gold_page = browser.get(reverse("labelling:show-gold", args=[slug, set_id])).content.decode()
    assert "counts the vote of the AI judge <strong>qwen</strong>" in gold_page
    resolve_page = browser.get(resolve_url(world, disputed)).content.decode()
    assert "Counted by this set's gold rule as one vote" in resolve_page
    with pytest.raises(gold_sets.FinaliseBlocked) as blocked:
        gold_sets.finalise_gold_set(question_set=world.question_set, user=admin)
    assert [u.reason for u in blocked.value.unresolved] == ["grades differ (2 vs the AI judge's 1)"]
    # Single-labelled items it agrees with are settled as agreed, with ann's spans.
    settled = item_of(world, world.candidates[5])
    assert settled.decide(min_span_f1=0.5) == Decision(
        grade=1, spans=((0, len(world.candidates[5].text)),), source="agreed"
    )
    # The lead decides; the gold set counts the judge's other votes and says so.
    adjudication.resolve(
        pool=world.pool, question=disputed.question, candidate=disputed, user=lead, grade=2
    )
    gold_set = gold_sets.finalise_gold_set(question_set=world.question_set, user=admin)
    # 12 items; the lead's resolutions (the disputed one and one of q2's) override the vote.
    assert gold_set.manifest["ai_judge_vote"] == {
        "counted": True,
        "judge": "qwen",
        "votes_counted": 10,
        "models": ["m-1"],
        "prompt_versions": [1],
    }
    stored = json.loads(gold_sets.bundle_files(gold_set)["manifest.json"])
    assert stored["ai_judge_vote"] == gold_set.manifest["ai_judge_vote"]


def test_only_the_newest_valid_vote_of_the_chosen_judge_counts_and_only_once(
    project, people, labelled, llm
):
    world, lead = labelled, people["lead"]
    candidate = world.candidates[3]  # q1, ann alone: 0
    assert world.gold[candidate.pk] == 0
    set_gold_vote(question_set=world.question_set, judge=world.judge, on=True, user=lead)
    v2 = JudgePrompt.objects.create(judge=world.judge, version=2, text="{{question}} {{passage}}")
    vote(world.judge, candidate, 0)
    vote(world.judge, candidate, 0, again=True)
    vote(world.judge, candidate, 2, prompt=v2, error="the answer holds no JSON object")
    item = item_of(world, candidate)
    assert [v.counted for v in item.machine_votes] == [True]  # one vote per judge, v1's
    assert item.counted_machine_vote.voter == "AI judge (m-1, prompt v1)"
    assert item.decide(min_span_f1=0.5).source == "agreed"  # an error is never a vote
    # Another judge's vote is shown, never counted.
    other = add_judge(
        project=project, name="other", url=f"{llm.url}/agree/v1/chat/completions", model="o"
    )
    vote(other, candidate, 2)
    item = item_of(world, candidate)
    assert sorted((v.source["judge"], v.voter, v.counted) for v in item.machine_votes) == [
        ("other", "AI judge (m-1, prompt v1)", False),
        ("qwen", "AI judge (m-1, prompt v1)", True),
    ]
    assert item.decide(min_span_f1=0.5).source == "agreed"
    # The newest prompt version's valid vote replaces the older one.
    AIJudgement.objects.filter(prompt=v2).update(grade=2, error="")
    item = item_of(world, candidate)
    assert item.counted_machine_vote.voter == "AI judge (m-1, prompt v2)"
    assert sum(v.counted for v in item.machine_votes) == 1
    assert item.decide(min_span_f1=0.5) == Pending("grades differ (0 vs the AI judge's 2)")
    # Moved to the other judge: its vote counts instead.
    set_gold_vote(question_set=world.question_set, judge=other, on=True, user=lead)
    item = item_of(world, candidate)
    assert [v.voter for v in item.machine_votes if v.counted] == ["AI judge (m-1, prompt v1)"]
    assert item.counted_machine_vote.source["judge"] == "other"


def test_the_switch_is_a_leads_post_with_its_token(project, people, labelled):
    world = labelled
    data = {"question_set": world.question_set.pk, "on": "1"}
    for who in ("ann", "bob"):
        assert login(people[who]).post(switch_url(world), data).status_code == 403
    lead = login(people["lead"])
    assert lead.get(switch_url(world)).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(people["lead"])
    assert strict.post(switch_url(world), data).status_code == 403
    assert not GoldVoteSwitch.objects.exists()
    # Another project's set, a canary set, or nothing: refused with a message.
    elsewhere = QuestionSetFactory(name="elsewhere")
    canary = QuestionSetFactory(project=project, name="canary-set", is_canary=True)
    for question_set in (elsewhere.pk, canary.pk, ""):
        response = lead.post(switch_url(world), {"question_set": question_set, "on": "1"})
        assert response.status_code == 302
        assert "Choose a question set" in lead.get(response["Location"]).content.decode()
    assert not GoldVoteSwitch.objects.exists()
    assert lead.post(switch_url(world), data).status_code == 302
    assert GoldVoteSwitch.objects.get().on
    lead.post(switch_url(world), {"question_set": world.question_set.pk})
    switch = GoldVoteSwitch.objects.get()
    assert not switch.on and switch.changed_by == people["lead"]


def test_calibration_stays_against_the_humans_gold_whatever_the_switch(people, labelled):
    world = labelled
    for candidate in world.candidates:
        vote(world.judge, candidate, (world.gold[candidate.pk] + 1) % 3)
    before = calibrate(judge=world.judge, question_set=world.question_set, viewer=None, n_boot=0)
    set_gold_vote(question_set=world.question_set, judge=world.judge, on=True, user=people["lead"])
    # Every item the judge voted on is disputed now, but the calibration does not move.
    assert len(resolve_gold(question_set=world.question_set).unresolved) == 11
    after = calibrate(judge=world.judge, question_set=world.question_set, viewer=None, n_boot=0)
    assert after.gold == before.gold and len(after.gold) == 12
    assert after.against_gold == before.against_gold


def test_a_switch_flipped_while_finalising_stops_it_with_a_message(people, labelled, monkeypatch):
    states = iter([{"counted": False}, {"counted": True, "judge": "qwen"}])
    monkeypatch.setattr(gold_sets, "machine_counting", lambda **_: next(states))
    with pytest.raises(gold_sets.GoldSetError, match="finalise again"):
        gold_sets.finalise_gold_set(question_set=labelled.question_set, user=people["admin"])
    assert not labelled.question_set.gold_sets.exists()
