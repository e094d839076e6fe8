"""Adaptive pools (issue 36 item 1): the lead chooses a judging order and a stopping rule; the
labeller's page shows the candidates in that order (never their provenance) and the question
is done once the rule is reached, the rest staying for a full pass."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import Retriever
from labelling.grading_passages import passages_for_grading, passages_for_grading_orm
from labelling.models import Assignment, Pool, Provenance
from labelling.services import judgements as services
from labelling.services.completion import assignment_progress
from tests.factories import (
    DocumentVersionFactory,
    MembershipFactory,
    PoolCandidateFactory,
    QuestionFactory,
    QuestionSetFactory,
    ReadyPoolFactory,
    UserFactory,
)
from tests.goldeval.test_pooling import CAL_TEXTS  # goldeval's cal tests' texts


def _user(project, role="labeller", **fields):
    user = UserFactory(password=None, **fields)
    MembershipFactory(project=project, user=user, role=role)
    return user


class World:
    """One question, six candidates: retriever "a" ranks a1 a2 a3, retriever "b" ranks b1 b2
    b3. The candidates' shuffled order is the reverse of that."""

    def __init__(self, project, texts=None, **pool_fields):
        self.project = project
        self.ann = _user(project, username="ann")
        self.bob = _user(project, username="bob")
        self.pool = ReadyPoolFactory(
            question_set=QuestionSetFactory(project=project), **pool_fields
        )
        self.question = QuestionFactory(question_set=self.pool.question_set)
        self.other_question = QuestionFactory(question_set=self.pool.question_set)
        names = ["a1", "a2", "a3", "b1", "b2", "b3"]
        # Each candidate's passage is its 50 characters at the start of its 100 (``texts``).
        text = "".join((texts or {}).get(name, "x" * 50).ljust(100) for name in names)
        version = DocumentVersionFactory(document__project=project, text=text)
        self.by_name = {}
        for position, name in enumerate(names):
            self.by_name[name] = PoolCandidateFactory(
                pool=self.pool,
                question=self.question,
                version=version,
                start=position * 100,
                end=position * 100 + 50,
                shuffle_rank=len(names) - position,
            )
        self.retrievers = {
            key: Retriever.objects.create(project=project, name=f"secret-{key}", kind="bm25")
            for key in "ab"
        }
        for name, candidate in self.by_name.items():
            Provenance.objects.create(
                candidate=candidate,
                retriever=self.retrievers[name[0]],
                rank=int(name[1]),
                score=99.125,
                start=candidate.start,
                end=candidate.end,
            )
        self.assignment = Assignment.objects.create(
            pool=self.pool, question=self.question, labeller=self.ann
        )

    def names(self, rows):
        ids = {c.pk: n for n, c in self.by_name.items()}
        return [ids[row.pk] for row in rows]

    def order(self, user=None):
        return self.names(passages_for_grading(assignment=self.assignment, user=user or self.ann))

    def grade(self, name, grade, assignment=None, user=None):
        assignment = assignment or self.assignment
        candidate = self.by_name[name]
        current = passages_for_grading(
            assignment=assignment, user=user or self.ann, candidate_id=candidate.pk
        )[0].revision
        services.record_grade(
            assignment=assignment,
            candidate_id=candidate.pk,
            labeller=user or self.ann,
            grade=grade,
            revision=current,
        )

    def page(self, user=None):
        client = Client()
        client.force_login(user or self.ann)
        url = reverse(
            "labelling:grade-question",
            kwargs={
                "slug": self.project.slug,
                "pool_id": self.pool.pk,
                "question_id": self.question.pk,
            },
        )
        return client.get(url)


def test_a_depth_pool_without_a_rule_keeps_the_shuffled_order(project):
    world = World(project)
    assert world.order() == ["b3", "b2", "b1", "a3", "a2", "a1"]


def test_move_to_front_follows_the_retriever_that_finds_and_leaves_the_one_that_misses(project):
    world = World(project, strategy="mtf")
    assert world.order() == ["a1", "b1", "a2", "b2", "a3", "b3"]
    world.grade("a1", 2)
    assert world.order()[:2] == ["a1", "a2"]  # judged first, then "a" again: it found
    world.grade("a2", 0)
    assert world.order() == ["a1", "a2", "b1", "a3", "b2", "b3"]  # "a" missed: "b" in front


def test_the_page_shows_the_judging_order_and_never_the_provenance(project):
    world = World(project, strategy="mtf")
    world.grade("a1", 2)
    body = world.page().content.decode()
    shown = [int(n) for n in re.findall(r'id="candidate-(\d+)"', body)]
    ids = {c.pk: n for n, c in world.by_name.items()}
    assert [ids[pk] for pk in dict.fromkeys(shown)] == ["a1", "a2", "b1", "a3", "b2", "b3"]
    assert "secret-a" not in body and "99.125" not in body


def test_cal_reorders_what_is_left_by_the_passages_judged_and_the_page_shows_only_the_order(
    project,
):
    world = World(project, texts=CAL_TEXTS, strategy="cal", stop_misses=2)
    assert world.order() == ["a1", "b1", "a2", "b2", "a3", "b3"]  # fused ranks: nothing judged
    world.grade("a1", 2)
    # b3 reads like a1, judged relevant: it comes next, though both retrievers ranked it last.
    assert world.order() == ["a1", "b3", "b1", "a2", "b2", "a3"]
    world.grade("b3", 1)
    world.grade("b1", 0)
    # Judged ones stay where they were judged, in the order they were; the rest re-ordered.
    assert world.order()[:3] == ["a1", "b3", "b1"]
    reference = passages_for_grading_orm(assignment=world.assignment, user=world.ann)
    assert world.order() == world.names(reference)
    body = world.page().content.decode()
    shown = [int(n) for n in re.findall(r'id="candidate-(\d+)"', body)]
    ids = {c.pk: n for n, c in world.by_name.items()}
    assert [ids[pk] for pk in dict.fromkeys(shown)] == world.order()
    for hidden in ("secret-a", "secret-b", "99.125", "active learning", "cal"):
        assert not re.search(rf"\b{re.escape(hidden)}\b", body), hidden
    # Bob's page, with none of his own judgements, is still in the fused ranks' order.
    bobs = Assignment.objects.create(
        pool=world.pool, question=world.question, labeller=world.bob, slot=2
    )
    assert world.names(passages_for_grading(assignment=bobs, user=world.bob)) == [
        "a1",
        "b1",
        "a2",
        "b2",
        "a3",
        "b3",
    ]


def test_the_order_is_the_same_through_the_orm_reference(project):
    world = World(project, strategy="bandit", stop_misses=2)
    world.grade("b1", 1)
    world.grade("a1", 0)
    reference = passages_for_grading_orm(assignment=world.assignment, user=world.ann)
    assert world.order() == world.names(reference)


def test_the_order_learns_only_from_the_labellers_own_judgements(project):
    world = World(project, strategy="bandit")
    before = world.order()
    bobs = Assignment.objects.create(
        pool=world.pool, question=world.question, labeller=world.bob, slot=2
    )
    for name in ("a1", "a2", "a3"):
        world.grade(name, 0, assignment=bobs, user=world.bob)
    assert world.order() == before


def test_the_record_on_earlier_questions_puts_the_better_retriever_first(project):
    world = World(project, strategy="mtf")
    earlier = Assignment.objects.create(
        pool=world.pool, question=world.other_question, labeller=world.ann
    )
    version = DocumentVersionFactory(document__project=project, text="y" * 400)
    for rank, (key, grade) in enumerate([("a", 0), ("a", 0), ("b", 2), ("b", 2)], start=1):
        candidate = PoolCandidateFactory(
            pool=world.pool,
            question=world.other_question,
            version=version,
            start=rank * 50,
            end=rank * 50 + 40,
        )
        Provenance.objects.create(
            candidate=candidate, retriever=world.retrievers[key], rank=rank, start=0, end=1
        )
        services.record_grade(
            assignment=earlier,
            candidate_id=candidate.pk,
            labeller=world.ann,
            grade=grade,
            revision=0,
        )
    assert world.order()[0] == "b1"


def test_a_question_is_done_once_the_stopping_rule_is_reached_and_says_the_rest_is_optional(
    project,
):
    world = World(project, strategy="mtf", stop_misses=2)
    world.grade("a1", 2)
    world.grade("a2", 0)
    services.record_verdict(
        assignment=world.assignment, labeller=world.ann, outcome="answerable", reason="", revision=0
    )
    progress = assignment_progress(world.assignment, world.ann)
    assert not progress.done and progress.optional == 0
    world.grade("b1", 0)
    world.assignment.refresh_from_db()
    progress = assignment_progress(world.assignment, world.ann)
    assert progress.done and progress.optional == 3
    assert world.assignment.completed_at is not None
    body = world.page().content.decode()
    assert "you may stop here: the 3 passages left are optional" in body
    # A full pass is still possible: the rest can be graded, and the count follows.
    world.grade("a3", 1)
    assert assignment_progress(world.assignment, world.ann).optional == 0


def test_a_budget_per_question_stops_too(project):
    world = World(project, stop_budget=2)
    assert world.order() == ["a1", "b1", "a2", "b2", "a3", "b3"]  # depth: best rank first
    world.grade("a1", 1)
    world.grade("b1", 1)
    progress = assignment_progress(world.assignment, world.ann)
    assert progress.optional == 4 and progress.stop_rule == "after 2 judgements of a question"


def test_the_lead_creates_an_adaptive_pool_and_a_bad_rule_is_refused(project):
    lead = _user(project, role="lead", username="lena")
    question_set = QuestionSetFactory(project=project)
    QuestionFactory(question_set=question_set)
    retriever = Retriever.objects.create(
        project=project, name="bm", kind="run"
    )  # a run retriever without a run: the service refuses it, after the form's checks
    client = Client()
    client.force_login(lead)
    url = reverse("labelling:add-pool", kwargs={"slug": project.slug})
    fields = {
        "question_set": question_set.pk,
        "name": "adaptive",
        "retrievers": [retriever.pk],
        "depth": 50,
        "strategy": "bandit",
        "stop_misses": 0,
    }
    response = client.post(url, fields)
    assert response.status_code == 400
    assert "greater than or equal to 1" in response.content.decode()
    page = client.get(url).content.decode()
    assert "Adaptive: Bayesian bandit over the retrievers" in page
    assert "Adaptive: continuous active learning from the passages&#x27; text" in page
    assert not Pool.objects.filter(name="adaptive").exists()


@pytest.mark.parametrize("value", ["random", "DEPTH"])
def test_an_unknown_order_is_refused_by_the_form(project, value):
    lead = _user(project, role="lead", username="lena")
    client = Client()
    client.force_login(lead)
    url = reverse("labelling:add-pool", kwargs={"slug": project.slug})
    response = client.post(url, {"name": "p", "depth": 10, "strategy": value})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_passages_every_labeller_stopped_before_stay_pooled_not_judged_and_block_nothing(project):
    from labelling.services.gold import collect_gold

    world = World(project, strategy="mtf", stop_misses=2)
    Assignment.objects.create(pool=world.pool, question=world.other_question, labeller=world.bob)
    world.grade("a1", 2)
    world.grade("a2", 0)
    world.grade("b1", 0)
    services.record_verdict(
        assignment=world.assignment, labeller=world.ann, outcome="answerable", reason="", revision=0
    )
    questions, unresolved = collect_gold(question_set=world.pool.question_set)
    ours = world.question.external_id
    assert not [item for item in unresolved if item.question_id == ours]
    (gold,) = [q for q in questions if q.question_id == ours]
    judged = {(start, end) for _, _, start, end in gold.judged}
    graded = {(world.by_name[n].start, world.by_name[n].end) for n in ("a1", "a2", "b1")}
    assert judged == graded  # a3, b2 and b3: pooled, not judged
    # Before the rule is reached, the rest still waits for a vote.
    world.assignment.completed_at = None
    world.assignment.save(update_fields=["completed_at"])
    _, unresolved = collect_gold(question_set=world.pool.question_set)
    assert [item for item in unresolved if item.question_id == ours]


def _grade_reply(world, name, grade, revision=0):
    client = Client()
    client.force_login(world.ann)
    url = reverse(
        "labelling:grade-candidate",
        kwargs={
            "slug": world.project.slug,
            "pool_id": world.pool.pk,
            "question_id": world.question.pk,
            "candidate_id": world.by_name[name].pk,
        },
    )
    response = client.post(url, {"grade": grade, "revision": revision}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    match = re.search(r'id="question-progress"[^>]*?data-order="([\d,]*)"', body)
    if match is None:
        return None
    ids = {c.pk: n for n, c in world.by_name.items()}
    return [ids[int(pk)] for pk in match[1].split(",")]


@pytest.mark.parametrize(
    ("strategy", "grade", "sent"), [("cal", 2, True), ("cal", 0, False), ("bandit", 2, False)]
)
def test_a_relevant_grade_in_a_cal_pool_answers_with_the_new_order_for_the_page(
    project, strategy, grade, sent
):
    world = World(project, texts=CAL_TEXTS, strategy=strategy)
    order = _grade_reply(world, "a1", grade)
    if not sent:
        assert order is None
    else:
        # The order after the write, the write included: b3 reads like a1.
        assert order == ["a1", "b3", "b1", "a2", "b2", "a3"] == world.order()
