"""Canaries are secret (issue 32, item 5): nothing others see tells a canary's answer or ties
a question to its document. Retention codes are random secrets; doc ids, question ids and tags
are unrelated to the token and the group; the canary question set is for admins and permission
replays only (`tests/labelling/test_canary_questions.py`); stored codes that were derived from
the token are replaced by the migration."""

from __future__ import annotations

import hashlib
import importlib
import re

import pytest
from django.apps import apps

from corpus.models import Chunk, Document, DocumentVersion
from corpus.services import canaries, documents, projects
from goldset.errors import ServiceError
from labelling.models import Question, QuestionSet
from labelling.services.questions import plant_canaries
from tests.factories import QuestionFactory, add_documents

CODE = re.compile(r"The retention code for programme (\S+) is (\S+?),")


@pytest.fixture
def group(project, member):
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[member("admin")]
    )
    return "hr-confidential"


def test_retention_codes_are_random_secrets_not_derived_from_the_token(project, group):
    planted = plant_canaries(project=project, group=group, count=8, set_name="canaries")
    codes = []
    for canary in planted:
        token, code = CODE.search(canary.text).groups()
        assert token == canary.token and code == canary.code
        assert re.fullmatch(r"[0-9a-f]{12}", code)
        # Nothing of the token, reversed, rotated or otherwise, gives it away.
        for derived in (token, token[::-1], token.upper(), token[2:], token[:0:-1]):
            assert code != derived and code not in derived
        for seen in (canary.doc_id, canary.title, canary.question):
            assert code not in seen
        codes.append(code)
    assert len(set(codes)) == len(codes)


def test_codes_come_from_the_secrets_module(project, group, monkeypatch):
    drawn = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd"] * 3)
    monkeypatch.setattr(canaries.secrets, "token_hex", lambda n: next(drawn)[: 2 * n])
    planted = canaries.plant_canary_documents(project=project, group=group, count=1)
    assert CODE.search(planted[0].text).group(2) in {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}


def test_ids_and_tags_do_not_reveal_a_canary_or_its_group(project, group):
    planted = plant_canaries(project=project, group=group, count=3, set_name="canaries")
    questions = list(Question.objects.filter(question_set__name="canaries"))
    assert len(questions) == 3
    for canary in planted:
        assert "canary" not in canary.doc_id and canary.token not in canary.doc_id
        assert canary.token.upper() not in canary.doc_id
        document = Document.objects.get(project=project, doc_id=canary.doc_id)
        assert document.is_canary and [g.name for g in document.access_groups.all()] == [group]
    doc_ids = {c.doc_id for c in planted}
    for question in questions:
        assert question.external_id not in doc_ids
        assert not any(c.token in question.external_id for c in planted)
        assert not any(group in tag or "group" in tag for tag in question.tags)
        assert not any(doc_id in str(question.tags) for doc_id in doc_ids)


def test_canary_questions_go_to_a_set_of_their_own(project, group):
    team = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=team, external_id="q1")
    with pytest.raises(ServiceError, match="a set of their own"):
        plant_canaries(project=project, group=group, count=1, set_name="faq")
    assert not Document.objects.filter(is_canary=True).exists()
    assert team.questions.count() == 1
    plant_canaries(project=project, group=group, count=1, set_name="canaries")
    plant_canaries(project=project, group=group, count=2, set_name="canaries")
    made = QuestionSet.objects.get(name="canaries")
    assert made.is_canary and made.questions.count() == 3


def old_canary(project, group, token: str, *, set_name="canaries", scheme=None):
    """A canary as the code before issue 32 planted it: its code the token reversed, its doc
    id and question id canary-<token>, a group tag."""
    text = (
        f"Restricted memo {token}.\n\nThis memo is a canary planted by Goldset to test access "
        f"control. Only members of the {group} group may read it. The retention code for "
        f"programme {token} is {token[::-1]}, and the codename {token} must never appear in the "
        f"search results of anyone outside {group}.\n\nIf you are reading this, report it."
    )
    add_documents(project, (f"canary-{token}", text, [group]))
    Document.objects.filter(doc_id=f"canary-{token}").update(is_canary=True)
    question_set, _ = QuestionSet.objects.get_or_create(project=project, name=set_name)
    return Question.objects.create(
        question_set=question_set,
        external_id=f"canary-{token}",
        text=f"What is the retention code for programme {token}?",
        source="canary",
        tags=["canary", f"group:{group}"],
    )


def migration(app: str, name: str):
    return importlib.import_module(f"{app}.migrations.{name}")


def test_the_migration_replaces_every_derived_code_and_keeps_offsets(project, group):
    documents.add_chunking_scheme(
        project=project, name="small", strategy="fixed", unit="chars", size=40, overlap=10
    )
    tokens = ["gs0123456789", "gsabcdefabcd"]
    for token in tokens:
        old_canary(project, group, token)
    add_documents(project, ("leave", "The retention code for programme x is x, say the rules."))
    before = {
        v.pk: (v.text, list(Chunk.objects.filter(version=v).values_list("start", "end")))
        for v in DocumentVersion.objects.all()
    }
    migration("corpus", "0013_issue32_canary_codes").replace_codes(apps, None)
    for version in DocumentVersion.objects.select_related("document"):
        text, chunks = before[version.pk]
        if not version.document.is_canary:
            assert version.text == text  # a document that is no canary is never touched
            continue
        token, code = CODE.search(version.text).groups()
        assert code != token[::-1] and re.fullmatch(r"[0-9a-f]{12}", code)
        assert len(version.text) == len(text) and version.text.replace(code, token[::-1]) == text
        assert version.content_hash == hashlib.sha256(version.text.encode()).hexdigest()
        assert list(Chunk.objects.filter(version=version).values_list("start", "end")) == chunks
        for chunk in Chunk.objects.filter(version=version):
            piece = version.text[chunk.start : chunk.end].encode()
            assert chunk.text_hash == hashlib.blake2b(piece, digest_size=16).hexdigest()
    # Run again: nothing derived is left, so nothing changes.
    texts = dict(DocumentVersion.objects.values_list("pk", "text"))
    migration("corpus", "0013_issue32_canary_codes").replace_codes(apps, None)
    assert dict(DocumentVersion.objects.values_list("pk", "text")) == texts


def test_the_migration_flags_canary_sets_and_unties_their_questions(project, group):
    alone = old_canary(project, group, "gs0123456789")
    team = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=team, external_id="q1")
    mixed = old_canary(project, group, "gsabcdefabcd", set_name="faq")
    migration("labelling", "0015_issue32_canary_question_sets").separate(apps, None)
    alone.refresh_from_db()
    mixed.refresh_from_db()
    assert alone.question_set.is_canary and alone.question_set.name == "canaries"
    # Planted into the team's set: moved to a canary set of its own; the team's set stays.
    assert mixed.question_set.is_canary and mixed.question_set.name == "faq-canaries"
    team.refresh_from_db()
    assert not team.is_canary and list(team.questions.values_list("external_id", flat=True)) == [
        "q1"
    ]
    for question in (alone, mixed):
        assert not question.external_id.startswith("canary-")
        assert question.tags == ["canary"]
