"""Issue 33 item 16: a new project's first-steps checklist ticks itself as each step's result
exists, links to where each is done, shows to leads and admins only, counts nothing a viewer
may not see, and goes away once every step is done."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from corpus.services import projects, retrieval
from corpus.services.documents import add_chunking_scheme, chunk_corpus
from labelling.models import Assignment, Pool
from labelling.services.questions import plant_canaries
from tests.factories import (
    MembershipFactory,
    QuestionFactory,
    QuestionSetFactory,
    add_documents,
    login,
)

STEPS = [
    "Upload documents",
    "Add a chunking scheme",
    "Add a retriever",
    "Build its index",
    "Import questions",
    "Pool candidates",
    "Plan the assignments",
]


def checklist(client, project) -> str:
    answer = client.get(reverse("labelling:show-first-steps", args=[project.slug]))
    assert answer.status_code == 200
    return answer.content.decode()


def ticked(html: str) -> list[str]:
    return [
        title
        for title in STEPS
        if re.search(rf'<li class="done">[^<]*<span[^>]*>✓</span> {re.escape(title)}', html)
    ]


def test_the_checklist_ticks_itself_step_by_step_and_then_goes(project, member):
    lead = login(member("lead"))
    page = lead.get(reverse("corpus:show-project", args=[project.slug])).content.decode()
    assert reverse("labelling:show-first-steps", args=[project.slug]) in page
    html = checklist(lead, project)
    assert ticked(html) == [] and "(0 of 7 done)" in html
    # Each open step links to where it is done.
    for name in [
        "corpus:upload-documents",
        "corpus:list-chunking",
        "corpus:add-retriever",
        "corpus:list-retrievers",
        "labelling:import-questions",
        "labelling:add-pool",
        "labelling:list-assignments",
    ]:
        assert f'href="{reverse(name, args=[project.slug])}"' in html

    add_documents(project, ("leave", "Employees may carry over five days of leave."))
    assert ticked(checklist(lead, project)) == STEPS[:1]
    scheme = add_chunking_scheme(project=project, name="words", strategy="fixed")
    chunk_corpus(scheme=scheme)
    assert ticked(checklist(lead, project)) == STEPS[:2]
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    assert ticked(checklist(lead, project)) == STEPS[:3]
    retrieval.build_index(retriever=bm25)
    assert ticked(checklist(lead, project)) == STEPS[:4]
    question_set = QuestionSetFactory(project=project, name="hr")
    QuestionFactory(question_set=question_set, external_id="q1", text="How many days?")
    assert ticked(checklist(lead, project)) == STEPS[:5]
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    assert ticked(checklist(lead, project)) == STEPS[:6]
    Assignment.objects.create(pool=pool, question=question_set.questions.get())
    assert checklist(lead, project).strip() == ""  # all done: nothing shown


def test_a_retriever_with_nothing_to_build_ticks_the_index_step(project, member):
    lead = login(member("lead"))
    retrieval.add_retriever(project=project, name="ours", kind="run")
    assert "Build its index" in ticked(checklist(lead, project))


def test_labellers_and_strangers_get_no_checklist(project, member):
    url = reverse("labelling:show-first-steps", args=[project.slug])
    assert login(member("labeller")).get(url).status_code == 403
    assert login(MembershipFactory(role="admin").user).get(url).status_code == 404
    # A labeller's project page is their own queue.
    labeller = login(member("labeller"))
    assert labeller.get(reverse("corpus:show-project", args=[project.slug]))["Location"] == (
        reverse("labelling:show-queue", args=[project.slug])
    )


def test_documents_hidden_from_the_viewer_and_canaries_tick_nothing(project, member):
    inside, outside = member("admin"), member("lead")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[inside])
    add_documents(project, ("salaries", "Salary bands for 2026.", ["hr-confidential"]))
    assert ticked(checklist(login(inside), project)) == STEPS[:1]
    assert ticked(checklist(login(outside), project)) == []
    # Canaries are no content, and their question set is no question set of the team's.
    other = member("admin")
    projects.set_access_group_members(project=project, name="legal", users=[other])
    plant_canaries(project=project, group="legal", count=2, set_name="canaries")
    assert ticked(checklist(login(other), project)) == []
    # The list counts no document.
    assert "salaries" not in checklist(login(outside), project)


@pytest.mark.parametrize("role", ["lead", "admin"])
def test_leads_and_admins_see_it(project, member, role):
    assert "First steps" in checklist(login(member(role)), project)
