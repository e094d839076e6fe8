"""Counts and answers about the corpus are computed over what the viewer may see: a lead or an
admin outside an access group gets the same chunk and passage counts, the same duplicate
markings and the same run-upload answers as if the restricted document did not exist."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from corpus.models import Document
from corpus.services import documents, projects, retrieval
from labelling.models import QuestionSet, RunResult
from tests.factories import POLICY_TEXT, QuestionFactory, add_documents, login

SALARIES = (
    "Salary bands\n\nBand C pays 52,000 to 61,000 euros per year of salary. Band D pays 60,000 "
    "to 72,000 euros per year of salary.\n\nSalary bands are reviewed every January."
)
VPN = (
    "VPN access\n\nInstall the NW-VPN client from the software centre. Sign in with your "
    "network account.\n\nThe VPN disconnects after twelve hours without activity."
)
CSRF = re.compile(rb'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"')
# "built 3 seconds ago": the clock moves between two loads of a page.
# naturaltime: "now", "a minute ago", "59\xa0seconds ago", "2\xa0hours ago", ... (a loaded machine
# can put a minute between two builds).
AGO = re.compile(rb"(?:\d+\xc2\xa0|\ban? )\w+ ago|\bnow\b|reflecting the corpus of [^(]*")


def page(client, name, *args, **query) -> bytes:
    # follow: a labeller opening the project lands on their queue
    response = client.get(reverse(name, args=args), query, follow=True)
    assert response.status_code == 200, (name, response.status_code)
    return AGO.sub(b"", CSRF.sub(b"", response.content))


@pytest.fixture
def corpus(project, member):
    people = {
        "lead": member("lead"),
        "admin": member("admin"),
        "insider": member("lead"),
        "labeller": member("labeller"),
    }
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(project, ("leave", POLICY_TEXT), ("vpn", VPN))
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[people["insider"]]
    )
    retriever = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    return {"people": people, "scheme": scheme, "retriever": retriever}


def corpus_pages(client, project, retriever) -> dict[str, bytes]:
    slug = project.slug
    return {
        "project": page(client, "corpus:show-project", slug),
        "chunking": page(client, "corpus:list-chunking", slug),
        "retrievers": page(client, "corpus:list-retrievers", slug),
        "retriever": page(client, "corpus:show-retriever", slug, retriever.pk),
        "documents": page(client, "corpus:list-documents", slug),
        "duplicates": page(client, "corpus:list-duplicates", slug),
    }


@pytest.mark.parametrize("viewer", ["lead", "admin", "labeller"])
def test_counts_do_not_change_when_a_hidden_document_is_added(project, corpus, viewer):
    """The pages of someone outside hr-confidential, before and after a restricted document
    (and its chunks, and its passages in a rebuilt index) joins the corpus: byte for byte
    the same, apart from when the index was built."""
    retriever, client = corpus["retriever"], login(corpus["people"][viewer])
    retrieval.build_index(retriever=retriever)
    before = corpus_pages(client, project, retriever)
    add_documents(project, ("salaries", SALARIES, ["hr-confidential"]))
    retrieval.build_index(retriever=retriever)
    after = corpus_pages(client, project, retriever)
    for name in before:
        assert after[name] == before[name], name
    # The index holds the salary passages, and a member of the group is shown them.
    insider = corpus_pages(login(corpus["people"]["insider"]), project, retriever)
    assert insider["retriever"] != after["retriever"]
    index = retriever.indexes.get()
    assert f"{index.passages:,} passages".encode() in insider["retriever"]
    assert f"{index.passages:,} passages".encode() not in after["retriever"]


def twins(project):
    """A restricted document and its public near-copy, the restricted one the representative."""
    add_documents(project, ("salaries", SALARIES, ["hr-confidential"]))
    add_documents(project, ("salaries-public", SALARIES + " (copy)"))
    secret = Document.objects.get(doc_id="salaries")
    public = Document.objects.get(doc_id="salaries-public")
    assert public.duplicate_group_id and public.duplicate_group.representative_id == secret.pk
    return secret, public


def test_the_public_twin_of_a_hidden_document_is_searchable_and_no_duplicate(project, corpus):
    secret, public = twins(project)
    retriever = corpus["retriever"]
    retrieval.build_index(retriever=retriever)
    for who in ("lead", "admin", "labeller"):
        user = corpus["people"][who]
        client = login(user)
        shown = page(client, "corpus:show-document", project.slug, public.pk).decode()
        assert 'badge ok">searchable' in shown and "not searchable" not in shown
        assert "Near-duplicates" not in shown and "salaries<" not in shown
        listed = page(client, "corpus:list-documents", project.slug).decode()
        assert ">duplicate<" not in listed
        only = page(client, "corpus:list-documents", project.slug, show="duplicates").decode()
        assert "salaries-public" not in only
        assert (
            "salaries-public" not in page(client, "corpus:list-duplicates", project.slug).decode()
        )
        hits = retrieval.retrieve(
            retriever=retriever, questions=["salary bands Band C"], k=3, user=user
        )
        assert hits[0][0].doc_id == "salaries-public"
        assert "salaries" not in {h.doc_id for h in hits[0]}
        visible = Document.objects.filter(project=project).visible_to(user)
        assert visible.searchable_for(user).filter(pk=public.pk).exists()
    # A member of the group sees the pair as it is: the restricted copy is the searchable one.
    insider = corpus["people"]["insider"]
    client = login(insider)
    shown = page(client, "corpus:show-document", project.slug, public.pk).decode()
    assert "not searchable" in shown and "(the searchable copy)" in shown
    hits = retrieval.retrieve(
        retriever=retriever, questions=["salary bands Band C"], k=3, user=insider
    )
    assert hits[0][0].doc_id == "salaries" and "salaries-public" not in {h.doc_id for h in hits[0]}
    # Without a user (pooling for the whole team) the representative is what is searched.
    hits = retrieval.retrieve(retriever=retriever, questions=["salary bands Band C"], k=3)
    assert "salaries-public" not in {h.doc_id for h in hits[0]}


def test_a_group_with_a_hidden_member_marks_the_copy_the_viewer_searches(project, corpus, member):
    secret, public = twins(project)
    add_documents(project, ("salaries-old", SALARIES + " (old)"))
    third = Document.objects.get(doc_id="salaries-old")
    assert third.duplicate_group_id == public.duplicate_group_id
    client = login(corpus["people"]["lead"])
    listed = page(client, "corpus:list-duplicates", project.slug).decode()
    assert "salaries-public" in listed and "salaries-old" in listed
    rows = re.findall(
        r"<tr><td><a [^>]*>([^<]+)</a></td><td>[^<]*</td>\s*<td>(.*?)</td></tr>", listed, re.S
    )
    marked = [doc_id for doc_id, cell in rows if "<strong>yes</strong>" in cell]
    assert marked == ["salaries-public"]


def run_retriever(project, scheme):
    question_set = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=question_set, external_id="q1")
    retriever = retrieval.add_retriever(project=project, name="ours", kind="run", scheme=scheme)
    return retriever, question_set


def upload_run(client, project, retriever, question_set, doc_id: str):
    data = f"q1 Q0 {doc_id} 1 9.5 ours\n".encode()
    upload = io.BytesIO(data)
    upload.name = "ours.trec"
    return client.post(
        reverse("labelling:upload-run", args=[project.slug, retriever.pk]),
        {"question_set": question_set.pk, "file": upload},
    )


def test_a_run_naming_a_hidden_document_gets_the_answer_of_a_missing_one(project, corpus):
    add_documents(project, ("salaries", SALARIES, ["hr-confidential"]))
    retriever, question_set = run_retriever(project, corpus["scheme"])
    for who in ("lead", "admin"):
        client = login(corpus["people"][who])
        hidden = upload_run(client, project, retriever, question_set, "salaries")
        missing = upload_run(client, project, retriever, question_set, "salariez")
        assert hidden.status_code == missing.status_code == 400
        assert (
            b"ours.trec names no document the corpus has: 1 unknown document id "
            b"(&#x27;salaries&#x27;). Nothing was imported." in hidden.content
        )
        assert CSRF.sub(b"", hidden.content) == CSRF.sub(b"", missing.content).replace(
            b"salariez", b"salaries"
        )
    assert not RunResult.objects.exists()
    # A member of the group uploads it.
    client = login(corpus["people"]["insider"])
    response = upload_run(client, project, retriever, question_set, "salaries")
    assert response.status_code == 302 and RunResult.objects.exists()


def test_a_run_naming_a_hidden_document_among_known_ones_warns_as_for_a_missing_one(
    project, corpus
):
    """Stored without it, and warned about in the same bytes as a missing document."""
    add_documents(project, ("salaries", SALARIES, ["hr-confidential"]))
    retriever, question_set = run_retriever(project, corpus["scheme"])
    url = reverse("labelling:upload-run", args=[project.slug, retriever.pk])
    for who in ("lead", "admin"):
        client = login(corpus["people"][who])
        pages = {}
        for doc_id in ("salaries", "salariez"):
            upload = io.BytesIO(f"q1 Q0 vpn 1 9.5 ours\nq1 Q0 {doc_id} 2 9.0 ours\n".encode())
            upload.name = "ours.trec"
            pages[doc_id] = client.post(
                url, {"question_set": question_set.pk, "file": upload}, follow=True
            )
            assert set(RunResult.objects.values_list("version__document__doc_id", flat=True)) == {
                "vpn"
            }
        assert pages["salaries"].status_code == pages["salariez"].status_code == 200
        assert (
            b"ours.trec: 1 unknown document id of 2 named, left out (&#x27;salaries&#x27;)."
            in pages["salaries"].content
        )
        assert CSRF.sub(b"", pages["salaries"].content) == CSRF.sub(
            b"", pages["salariez"].content
        ).replace(b"salariez", b"salaries")


def test_a_run_with_a_nul_in_an_id_is_refused_with_its_line(project, corpus):
    retriever, question_set = run_retriever(project, corpus["scheme"])
    client = login(corpus["people"]["lead"])
    data = b'{"question_id": "q1", "results": [{"doc_id": "vpn\\u0000"}]}\n'
    upload = io.BytesIO(data)
    upload.name = "ours.jsonl"
    response = client.post(
        reverse("labelling:upload-run", args=[project.slug, retriever.pk]),
        {"question_set": question_set.pk, "file": upload},
    )
    assert response.status_code == 400
    assert "result 1 has a doc_id that contains a NUL character" in response.content.decode()
    assert not RunResult.objects.exists()


def test_a_judgement_file_with_a_nul_in_a_labellers_name_writes_nothing(project, tmp_path):
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from labelling.models import Judgement

    add_documents(project, ("leave", POLICY_TEXT))
    question_set = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=question_set, external_id="q1")
    path = tmp_path / "votes.jsonl"
    path.write_text(
        json.dumps({"question_id": "q1", "labeller": "ann\u0000", "doc_id": "leave", "grade": 2})
        + "\n"
    )
    with pytest.raises(CommandError) as error:
        call_command("import_judgements", "--project", project.slug, str(path))
    assert error.value.returncode == 2
    assert not Judgement.objects.exists()
