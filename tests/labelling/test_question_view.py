"""One question on one page (issue 36 item 5): every passage of a question as a compact row, in
an order of the labeller's own that a reload keeps, chosen with `?view=` and remembered; the
same access and blindness as the passage cards."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import AccessGroup, Retriever
from labelling.grading_passages import passages_for_grading
from labelling.models import Assignment, Judgement, Provenance
from labelling.services import judgements as judgement_services
from tests.factories import (
    DocumentVersionFactory,
    MembershipFactory,
    PoolCandidateFactory,
    QuestionFactory,
    QuestionSetFactory,
    ReadyPoolFactory,
    UserFactory,
)

PASSAGES = 10
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'
SECRET_TITLE = "Salary bands SECRET"
TOKEN = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')


def fast_user(project=None, role="labeller", **fields):
    user = UserFactory(password=None, **fields)
    if project is not None:
        MembershipFactory(project=project, user=user, role=role)
    return user


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


class World:
    """ana and ben both label q1 (ten passages of one document, one of another restricted to
    "hr", one of a document whose text is hostile markup); q2 is ana's alone."""

    def __init__(self, project, **pool_fields):
        self.project = project
        self.ana = fast_user(project, username="ana")
        self.ben = fast_user(project, username="ben")
        self.cleo = fast_user(project, username="cleo")
        self.pool = ReadyPoolFactory(
            question_set=QuestionSetFactory(project=project), **pool_fields
        )
        self.q1 = QuestionFactory(question_set=self.pool.question_set)
        self.q2 = QuestionFactory(question_set=self.pool.question_set)
        text = "".join(
            f"Paragraph {i:02d} of the leave policy, on its own line.\n" for i in range(20)
        )
        version = DocumentVersionFactory(document__project=project, text=text)
        self.visible = [
            PoolCandidateFactory(
                pool=self.pool,
                question=self.q1,
                version=version,
                start=i * 51,
                end=i * 51 + 50,
                shuffle_rank=i + 1,
            )
            for i in range(PASSAGES)
        ]
        hostile = DocumentVersionFactory(
            document__project=project, document__title=HOSTILE, text=f"Before. {HOSTILE} After."
        )
        self.visible.append(
            PoolCandidateFactory(
                pool=self.pool,
                question=self.q1,
                version=hostile,
                start=0,
                end=len(hostile.text),
                shuffle_rank=PASSAGES + 1,
            )
        )
        secret = DocumentVersionFactory(
            document__project=project,
            document__title=SECRET_TITLE,
            text="Band C pays 52,000 to 61,000 euros per year.",
        )
        self.group = AccessGroup.objects.create(project=project, name="hr")
        secret.document.access_groups.add(self.group)
        self.hidden = PoolCandidateFactory(
            pool=self.pool, question=self.q1, version=secret, start=0, end=20, shuffle_rank=0
        )
        PoolCandidateFactory(pool=self.pool, question=self.q2, version=version, start=0, end=50)
        retriever = Retriever.objects.create(project=project, name="secret-ranker", kind="bm25")
        # Ranked in reverse of the shuffle: an adaptive pool's judging order is then its own.
        for rank, candidate in enumerate(reversed([*self.visible, self.hidden]), start=1):
            Provenance.objects.create(
                candidate=candidate,
                retriever=retriever,
                rank=rank,
                score=12.3456,
                start=candidate.start,
                end=candidate.end,
            )
        self.a1 = Assignment.objects.create(pool=self.pool, question=self.q1, labeller=self.ana)
        self.b1 = Assignment.objects.create(
            pool=self.pool, question=self.q1, slot=2, labeller=self.ben
        )
        self.a2 = Assignment.objects.create(pool=self.pool, question=self.q2, labeller=self.ana)

    def url(self, question=None, view=None):
        question = question or self.q1
        url = reverse(
            "labelling:grade-question",
            kwargs={
                "slug": self.project.slug,
                "pool_id": self.pool.pk,
                "question_id": question.pk,
            },
        )
        return url if view is None else f"{url}?view={view}"


@pytest.fixture
def world(project):
    return World(project)


def page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def order(body: str) -> list[int]:
    """The passages of a grading page, in the order the page shows them."""
    return [int(pk) for pk in re.findall(r'<li class="candidate[^"]*" id="candidate-(\d+)"', body)]


def is_question_view(body: str) -> bool:
    return 'class="grading question-view"' in body


def test_every_passage_is_a_row_in_the_labellers_own_order_which_a_reload_keeps(world):
    ana, ben = client_for(world.ana), client_for(world.ben)
    shuffled = [c.pk for c in world.visible]

    first = page(ana, world.url(view="question"))
    assert is_question_view(first)
    mine = order(first)
    assert sorted(mine) == sorted(shuffled) and mine != shuffled
    assert order(page(ana, world.url(view="question"))) == mine
    assert order(page(ana, world.url())) == mine  # remembered: the plain URL, a reload
    # Rows are numbered in this order, not in the cards'.
    labels = re.findall(r'<span class="passage-label">Passage (\d+) of (\d+)</span>', first)
    assert labels == [(str(n), str(len(shuffled))) for n in range(1, len(shuffled) + 1)]

    bens = order(page(ben, world.url(view="question")))
    assert sorted(bens) == sorted(shuffled) and bens != mine
    # The cards keep the pool's shuffled order, the same for both.
    assert order(page(ana, world.url(view="cards"))) == shuffled
    assert order(page(ben, world.url(view="cards"))) == shuffled


def test_the_order_is_per_question_and_keeps_the_others_in_place_when_a_passage_goes(world):
    ana = client_for(world.ana)
    before = order(page(ana, world.url(view="question")))
    gone = world.visible[-1]
    gone.version.document.access_groups.add(world.group)  # now hidden from ana
    after = order(page(ana, world.url(view="question")))
    assert after == [pk for pk in before if pk != gone.pk]


def test_the_choice_is_remembered_per_session_and_an_unknown_view_falls_back(world):
    ana = client_for(world.ana)
    assert not is_question_view(page(ana, world.url()))  # the cards until asked
    assert is_question_view(page(ana, world.url(view="question")))
    assert is_question_view(page(ana, world.url(question=world.q2)))  # the next question too
    assert is_question_view(page(ana, world.url(view="rows%3Cscript%3E")))  # remembered one
    assert not is_question_view(page(ana, world.url(view="cards")))
    assert not is_question_view(page(ana, world.url()))
    fresh = client_for(world.ana)
    assert not is_question_view(page(fresh, world.url(view="")))
    assert not is_question_view(page(fresh, f"{world.url()}?view=question&view=nonsense"))
    # Another account in its own session is untouched by ana's choice.
    page(ana, world.url(view="question"))
    assert not is_question_view(page(client_for(world.ben), world.url()))


def test_the_switch_links_both_views_and_says_which_is_shown(world):
    body = page(client_for(world.ana), world.url(view="question"))
    assert '<a href="?view=cards">Passage cards</a>' in body
    assert '<a href="?view=question" aria-current="page">One question on one page</a>' in body
    assert "<kbd>v</kbd>" in body


@pytest.mark.parametrize("view", ["question", "cards", "nonsense"])
def test_someone_elses_question_is_a_404_in_any_view(world, view):
    # q2 is ana's alone: ben and cleo (members) and an outsider get the same 404.
    url = world.url(question=world.q2, view=view)
    for user in (world.ben, world.cleo, fast_user(None, username=f"out-{view}")):
        response = client_for(user).get(url)
        assert response.status_code == 404
    assert Client().get(url).status_code == 302  # logged out: to the log-in page


def test_hostile_document_text_and_title_are_escaped(world):
    body = page(client_for(world.ana), world.url(view="question"))
    assert HOSTILE not in body
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body


def test_restricted_passages_are_absent_unless_the_labeller_is_in_the_group(world):
    body = page(client_for(world.ana), world.url(view="question"))
    assert world.hidden.pk not in order(body)
    for trace in (SECRET_TITLE, "52,000", "Band C", f"candidate-{world.hidden.pk}"):
        assert trace not in body
    assert f"of {len(world.visible)}</span>" in body
    world.group.members.add(world.ben)
    bens = page(client_for(world.ben), world.url(view="question"))
    assert world.hidden.pk in order(bens) and SECRET_TITLE in bens


def test_no_provenance_and_nothing_of_another_labellers_work(world):
    ana = client_for(world.ana)
    before = TOKEN.sub(r"\1-", page(ana, world.url(view="question")))
    assert "secret-ranker" not in before and "12.3456" not in before
    own = {"assignment": world.b1, "labeller": world.ben}
    done = judgement_services.record_grade(
        **own, candidate_id=world.visible[0].pk, grade=2, revision=0
    )
    judgement_services.record_note(
        **own, candidate_id=world.visible[0].pk, note="ben's note", revision=done.revision
    )
    judgement_services.record_verdict(**own, outcome="answerable", reason="", revision=0)
    after = TOKEN.sub(r"\1-", page(ana, world.url(view="question")))
    assert after == before


def test_an_adaptive_pool_keeps_its_judging_order_in_the_question_view(project):
    world = World(project, strategy="mtf", stop_misses=3)
    ana = client_for(world.ana)
    judging = [c.pk for c in passages_for_grading(assignment=world.a1, user=world.ana)]
    assert judging != [c.pk for c in world.visible]  # the provenance's order, not the shuffle
    assert order(page(ana, world.url(view="question"))) == judging
    assert order(page(ana, world.url(view="cards"))) == judging


def test_a_grade_made_in_the_question_view_is_the_same_write(world):
    ana = client_for(world.ana)
    body = page(ana, world.url(view="question"))
    first = order(body)[0]
    response = ana.post(
        f"{world.url()}candidates/{first}/grade/",
        {"grade": "2", "revision": "0", "labeller": world.ana.pk, "guideline": "0"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["X-Goldset-Subject"] == f"candidate-{first}"
    assert Judgement.objects.get(assignment=world.a1, candidate_id=first).grade == 2
    again = page(ana, world.url())
    assert order(again) == order(body)
    assert f'id="candidate-{first}"' in again and "graded grade-2" in again


def test_the_question_view_reads_the_database_no_more_than_the_cards(
    world, django_assert_max_num_queries
):
    """The view is chosen from the session, which every request reads anyway: once remembered,
    the question view's page costs the cards' reads (pinned at 10 in test_grading_views)."""
    ana = client_for(world.ana)
    ana.get(world.url(view="question"))  # remembered (one session write)
    with django_assert_max_num_queries(10):
        assert is_question_view(page(ana, world.url(view="question")))
    with django_assert_max_num_queries(10):
        assert is_question_view(page(ana, world.url()))
