"""Agreement, the adjudication queue, resolutions and the gold rule, against the database."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from corpus.models import Document
from goldset.errors import ServiceError
from labelling.models import Assignment, Candidate, Judgement, Pool, Resolution, Span, Verdict
from labelling.services import adjudication
from labelling.services.gold import resolve_gold
from labelling.services.judgement_import import import_judgements
from tests.factories import (
    POLICY_TEXT,
    QuestionFactory,
    QuestionSetFactory,
    add_documents,
    login,
)


@pytest.fixture
def labelled(project, member):
    """Two labellers double-label two questions of a pool; a lead watches."""
    add_documents(project, ("leave", POLICY_TEXT), ("vpn", "Install the NW-VPN client. " * 10))
    leave = Document.objects.get(doc_id="leave").latest_version
    vpn = Document.objects.get(doc_id="vpn").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    q1 = QuestionFactory(
        question_set=question_set, external_id="q1", text="how many days carry over??"
    )
    q2 = QuestionFactory(question_set=question_set, external_id="q2", text="vpn client")
    pool = Pool.objects.create(question_set=question_set, name="p", depth=10, state="ready")
    ann, bob = member("labeller", username="ann"), member("labeller", username="bob")
    cands = {
        "q1-leave": Candidate.objects.create(
            pool=pool, question=q1, version=leave, start=0, end=180
        ),
        "q1-vpn": Candidate.objects.create(
            pool=pool, question=q1, version=vpn, start=0, end=50, shuffle_rank=1
        ),
        "q2-vpn": Candidate.objects.create(pool=pool, question=q2, version=vpn, start=0, end=50),
    }
    now = timezone.now()
    assignments = {}
    for question in (q1, q2):
        for slot, user in ((1, ann), (2, bob)):
            assignments[(question.external_id, user.username)] = Assignment.objects.create(
                pool=pool,
                question=question,
                slot=slot,
                labeller=user,
                assigned_at=now,
                completed_at=now,
            )

    def grade(question, user, key, value, spans=()):
        judgement = Judgement.objects.create(
            assignment=assignments[(question, user)], candidate=cands[key], grade=value
        )
        for start, end in spans:
            Span.objects.create(
                judgement=judgement,
                version=cands[key].version,
                start=start,
                end=end,
                quote=cands[key].version.text[start:end],
            )
        return judgement

    grade("q1", "ann", "q1-leave", 2, [(0, 100)])
    grade("q1", "bob", "q1-leave", 2, [(20, 120)])  # agree, spans overlap well
    grade("q1", "ann", "q1-vpn", 0)
    grade("q1", "bob", "q1-vpn", 1, [(0, 50)])  # grades differ
    grade("q2", "ann", "q2-vpn", 2, [(0, 50)])
    grade("q2", "bob", "q2-vpn", 2, [(0, 50)])
    Verdict.objects.create(
        assignment=assignments[("q2", "bob")], outcome="unanswerable"
    )  # verdicts differ
    return {
        "set": question_set,
        "pool": pool,
        "cands": cands,
        "q1": q1,
        "q2": q2,
        "lead": member("lead"),
    }


def test_agreement_report_counts_double_labelled_items(labelled):
    report = adjudication.agreement_report(question_set=labelled["set"], n_boot=50)
    assert report["items"] == 3
    assert report["percent"] == pytest.approx(2 / 3)
    assert report["confusion"] == [[0, 1, 0], [0, 0, 0], [0, 0, 2]]
    assert report["pairs"][0]["labellers"] == "ann & bob"
    assert report["per_question"][0]["question_id"] == "q1"  # most disagreement first
    assert report["span_f1"] == pytest.approx((2 * 80 / 200 + 1.0) / 2)
    assert report["verdicts"]["items"] == 2
    assert report["disagreements"] == [
        {
            "question_id": "q1",
            "question_pk": labelled["q1"].pk,
            "pool": labelled["pool"].pk,
            "candidate": labelled["cands"]["q1-vpn"].pk,
            "doc_id": "vpn",
            "grades": [0, 1],
        }
    ]
    json.dumps(report, allow_nan=False)


def test_queue_lists_grade_and_verdict_disagreements(labelled):
    queue = adjudication.adjudication_queue(question_set=labelled["set"])
    assert {
        (e.question.external_id, e.candidate and e.candidate.version.document.doc_id, e.reason[:12])
        for e in queue
    } == {("q1", "vpn", "grades diffe"), ("q2", None, "verdicts dif")}
    strict = adjudication.adjudication_queue(question_set=labelled["set"], min_span_f1=0.9)
    assert any("spans overlap too little" in e.reason for e in strict)


def test_gold_blocks_until_resolved_then_applies_the_rule(labelled):
    gold = resolve_gold(question_set=labelled["set"])
    assert not gold.complete and len(gold.unresolved) == 2
    lead, pool = labelled["lead"], labelled["pool"]
    adjudication.resolve(
        pool=pool,
        question=labelled["q1"],
        candidate=labelled["cands"]["q1-vpn"],
        user=lead,
        grade=0,
        note="not about leave",
    )
    adjudication.resolve(
        pool=pool, question=labelled["q2"], candidate=None, user=lead, outcome="answerable"
    )
    gold = resolve_gold(question_set=labelled["set"])
    assert gold.complete
    rows = {row.question.external_id: row for row in gold.questions}
    assert rows["q1"].answerable is True
    assert [(s.doc_id, s.start, s.end, s.grade) for s in rows["q1"].spans] == [("leave", 0, 120, 2)]
    assert rows["q1"].spans[0].quote == POLICY_TEXT[:120]
    assert [(s.doc_id, s.grade) for s in rows["q2"].spans] == [("vpn", 2)]
    assert len(rows["q1"].judged) == 2
    # every original vote is kept
    assert Judgement.objects.count() == 6 and Resolution.objects.count() == 2


def test_resolution_validates_spans(labelled):
    candidate = labelled["cands"]["q1-vpn"]
    with pytest.raises(ServiceError, match="outside the document"):
        adjudication.resolve(
            pool=labelled["pool"],
            question=labelled["q1"],
            candidate=candidate,
            user=labelled["lead"],
            grade=1,
            spans=[(0, 10**6)],
        )
    with pytest.raises(ServiceError, match="does not belong"):
        adjudication.resolve(
            pool=labelled["pool"],
            question=labelled["q2"],
            candidate=candidate,
            user=labelled["lead"],
            grade=1,
        )
    assert not Resolution.objects.exists()


def test_agreement_command_prints_json(labelled, project, capsys):
    call_command(
        "agreement", "--project", project.slug, "--set", "hr", "--json", "--bootstrap", "20"
    )
    report = json.loads(capsys.readouterr().out)
    for key in (
        "items",
        "percent",
        "kappa",
        "kappa_quadratic",
        "kappa_linear",
        "alpha_ordinal",
        "alpha_nominal",
        "confusion",
        "pairs",
        "span_f1",
        "verdicts",
    ):
        assert key in report
    with pytest.raises(CommandError, match="No question set"):
        call_command("agreement", "--project", project.slug, "--set", "nope", "--json")


def test_lead_pages_and_labellers_kept_out(labelled, project, member):
    set_id = labelled["set"].pk
    urls = [
        reverse(name, args=[project.slug, set_id])
        for name in (
            "labelling:show-agreement",
            "labelling:list-adjudication",
            "labelling:show-gold",
        )
    ]
    cand = labelled["cands"]["q1-vpn"]
    item_url = reverse(
        "labelling:resolve-item",
        args=[project.slug, set_id, labelled["pool"].pk, labelled["q1"].pk, cand.pk],
    )
    labeller = login(member("labeller"))
    for url in [*urls, item_url]:
        assert labeller.get(url).status_code == 403
    lead = login(labelled["lead"])
    agreement_page = lead.get(urls[0]).content.decode()
    assert "Percent agreement" in agreement_page
    assert "The guideline needs rewriting" not in agreement_page  # alpha 0.93 here
    queue = lead.get(urls[1]).content.decode()
    assert "grades differ" in queue and "verdicts differ" in queue
    page = lead.get(item_url).content.decode()
    assert "ann" in page and "bob" in page and 'class="layer-b"' in page
    response = lead.post(
        item_url, {"grade": 1, "spans_from": "custom", "custom_spans": "0-20", "note": "ok"}
    )
    assert response.status_code == 302
    resolution = Resolution.objects.get(candidate=cand)
    assert resolution.grade == 1 and [(s.start, s.end) for s in resolution.spans.all()] == [(0, 20)]
    gold = lead.get(urls[2]).content.decode()
    assert "verdict" in gold  # q2's verdict still blocks


def test_import_judgements_creates_labellers_candidates_and_is_all_or_nothing(project):
    add_documents(project, ("leave", POLICY_TEXT))
    question_set = QuestionSetFactory(project=project, name="hr")
    QuestionFactory(question_set=question_set, external_id="q1")
    lines = [
        {"question_id": "q1", "labeller": "carol", "doc_id": "leave", "grade": 2},
        {"question_id": "q1", "labeller": "dave", "doc_id": "leave", "grade": 1},
        {
            "question_id": "q1",
            "labeller": "dave",
            "doc_id": "leave",
            "start": 0,
            "end": 40,
            "grade": 2,
        },
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    result = import_judgements(project=project, name="j.jsonl", data=data)
    assert (
        result.errors == []
        and result.judgements == 3
        and result.labellers_created == ["carol", "dave"]
    )
    report = adjudication.agreement_report(question_set=question_set, n_boot=0)
    assert report["items"] == 1 and report["confusion"][2][1] == 1
    bad = [
        {"question_id": "q9", "labeller": "x", "doc_id": "leave", "grade": 1},
        {"question_id": "q1", "labeller": "x", "doc_id": "leave", "grade": 3},
        {"question_id": "q1", "labeller": "x", "doc_id": "leave", "grade": 1},
        {"question_id": "q1", "labeller": "x", "doc_id": "leave", "grade": 0},
    ]
    before = Judgement.objects.count()
    result = import_judgements(
        project=project, name="bad.jsonl", data="\n".join(json.dumps(line) for line in bad).encode()
    )
    assert [(e.line, e.error[:20]) for e in result.errors] == [
        (1, "unknown question_id "),
        (2, "grade must be 0, 1 o"),
        (4, "x judges the same it"),
    ]
    assert Judgement.objects.count() == before


def test_low_alpha_flags_the_guideline_and_lists_the_drivers(project, member):
    add_documents(project, *[(f"d{i}", f"{POLICY_TEXT} {i}") for i in range(4)])
    question_set = QuestionSetFactory(project=project, name="hr")
    QuestionFactory(question_set=question_set, external_id="q1")
    votes = [(0, 2), (2, 0), (1, 2), (0, 1)]
    lines = [
        json.dumps({"question_id": "q1", "labeller": name, "doc_id": f"d{i}", "grade": pair[k]})
        for i, pair in enumerate(votes)
        for k, name in enumerate(("ann", "bob"))
    ]
    import_judgements(project=project, name="j.jsonl", data="\n".join(lines).encode())
    page = login(member("lead")).get(
        reverse("labelling:show-agreement", args=[project.slug, question_set.pk])
    )
    body = page.content.decode()
    assert "The guideline needs rewriting" in body and "grades 0 vs 2" in body


def test_one_item_or_question_is_read_as_the_whole_set_gives_it(labelled):
    everything = adjudication.gather_votes(question_set=labelled["set"])
    for question in everything:
        alone = adjudication.question_votes(
            question_set=labelled["set"], pool_id=question.pool.pk, question_id=question.question.pk
        )
        assert [a.pk for a in alone.assignments] == [a.pk for a in question.assignments]
        assert [i.candidate.pk for i in alone.items] == [i.candidate.pk for i in question.items]
        assert alone.outcomes == question.outcomes
        for item in question.items:
            one = adjudication.item_votes(
                question_set=labelled["set"],
                pool_id=item.pool.pk,
                question_id=item.question.pk,
                candidate_id=item.candidate.pk,
            )
            assert one.candidate.pk == item.candidate.pk
            assert one.planned_votes == item.planned_votes
            assert [j.pk for j in one.judgements] == [j.pk for j in item.judgements]
            assert one.votes == item.votes
    other_question = adjudication.item_votes(
        question_set=labelled["set"],
        pool_id=labelled["pool"].pk,
        question_id=labelled["q2"].pk,
        candidate_id=labelled["cands"]["q1-leave"].pk,
    )
    assert other_question is None
    elsewhere = QuestionSetFactory(project=labelled["set"].project, name="other")
    assert (
        adjudication.question_votes(
            question_set=elsewhere, pool_id=labelled["pool"].pk, question_id=labelled["q1"].pk
        )
        is None
    )


@pytest.mark.parametrize(
    ("spans_from", "custom", "spans"),
    [
        ("both", [], [(0, 120)]),
        ("a", [], [(0, 100)]),
        ("b", [], [(20, 120)]),
        ("candidate", [], [(0, 180)]),
        ("custom", [(5, 9), (30, 40)], [(5, 9), (30, 40)]),
    ],
)
def test_a_resolution_takes_its_evidence_from_where_the_lead_says(
    labelled, spans_from, custom, spans
):
    item = adjudication.item_votes(
        question_set=labelled["set"],
        pool_id=labelled["pool"].pk,
        question_id=labelled["q1"].pk,
        candidate_id=labelled["cands"]["q1-leave"].pk,
    )
    resolution = adjudication.resolve_item_from(
        item=item, user=labelled["lead"], grade=2, spans_from=spans_from, custom_spans=custom
    )
    assert sorted((s.start, s.end) for s in resolution.spans.all()) == spans
    assert Judgement.objects.count() == 6
