import factory
from django.contrib.auth import get_user_model

from corpus.models import Membership, Project

PASSWORD = "correct-horse-battery"

# A realistic policy paragraph: long enough for near-duplicate detection to be meaningful.
POLICY_TEXT = (
    "Employees may carry over at most five days of unused annual leave into the next calendar "
    "year. Requests go through form HR-F-112 and must reach the HR service desk by 31 January. "
    "Leave that is not carried over lapses without payment unless a manager approved an exception "
    "in writing because of an operational need such as a peak season or a system migration. "
    "Part-time staff receive leave in proportion to their contracted hours, rounded up to the "
    "nearest half day, and staff who join during the year receive a pro-rated allowance that HR "
    "calculates from the first working day shown on the signed employment contract."
)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.Sequence(lambda n: f"Project {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = "labeller"


# Retrieval and pooling (issue 3) ---------------------------------------------------------


def add_documents(project, *specs, scheme=None):
    """Ingest (doc_id, text) or (doc_id, text, access groups) documents through the service,
    so versions, chunks and access groups are what the app itself writes."""
    from corpus import services
    from corpus.extraction import assess_quality
    from corpus.sources import DocumentRecord, SourceBatch

    records = [
        DocumentRecord(
            doc_id=spec[0],
            title=spec[0],
            text=spec[1],
            report=assess_quality(spec[1]),
            access_groups=tuple(spec[2]) if len(spec) > 2 else (),
        )
        for spec in specs
    ]
    return services.ingest_batch(project=project, batch=SourceBatch(source="test", records=records))


class QuestionSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "labelling.QuestionSet"

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"set-{n}")


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "labelling.Question"

    question_set = factory.SubFactory(QuestionSetFactory)
    external_id = factory.Sequence(lambda n: f"q{n}")
    text = factory.Sequence(lambda n: f"question {n}?")


# Assignments and grading (issue 4) -------------------------------------------------------

import hashlib as _hashlib  # noqa: E402
import re as _re  # noqa: E402


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "corpus.Document"

    project = factory.SubFactory(ProjectFactory)
    doc_id = factory.Sequence(lambda n: f"doc-{n}")
    title = factory.LazyAttribute(lambda o: f"Policy {o.doc_id}")


class DocumentVersionFactory(factory.django.DjangoModelFactory):
    """A version that becomes its document's latest (pass make_latest=False to keep it old)."""

    class Meta:
        model = "corpus.DocumentVersion"
        skip_postgeneration_save = True

    document = factory.SubFactory(DocumentFactory)
    version = 1
    text = POLICY_TEXT
    content_hash = factory.LazyAttribute(lambda o: _hashlib.sha256(o.text.encode()).hexdigest())

    @factory.post_generation
    def make_latest(obj, create, extracted, **kwargs):
        if create and extracted is not False:
            type(obj.document).objects.filter(pk=obj.document_id).update(latest_version=obj)


class ReadyPoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "labelling.Pool"

    question_set = factory.SubFactory(QuestionSetFactory)
    name = factory.Sequence(lambda n: f"pool-{n}")
    state = "ready"


class PoolCandidateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "labelling.Candidate"

    pool = factory.SubFactory(ReadyPoolFactory)
    question = factory.SubFactory(
        QuestionFactory, question_set=factory.SelfAttribute("..pool.question_set")
    )
    version = factory.SubFactory(
        DocumentVersionFactory,
        document__project=factory.SelfAttribute("...pool.question_set.project"),
    )
    start = 0
    end = 60
    shuffle_rank = factory.Sequence(lambda n: n)


# Passages of POLICY_TEXT used by grading tests: (start, end) of its first three sentences.
POLICY_SENTENCES = [(m.start(), m.end()) for m in _re.finditer(r"[^.\s][^.]*\.", POLICY_TEXT)][:3]


def grading_pool(project, *, questions=2, passages=3, restricted_group=None):
    """A ready pool in `project`: `questions` questions with `passages` candidates each, all on
    one document (sentences of POLICY_TEXT); with `restricted_group`, the last passage of every
    question comes from a second document restricted to that access group."""
    from corpus.models import AccessGroup

    question_set = QuestionSetFactory(project=project)
    pool = ReadyPoolFactory(question_set=question_set)
    version = DocumentVersionFactory(document__project=project)
    hidden_version = None
    if restricted_group:
        hidden_version = DocumentVersionFactory(
            document__project=project, document__title="Salary bands SECRET"
        )
        group, _ = AccessGroup.objects.get_or_create(project=project, name=restricted_group)
        hidden_version.document.access_groups.add(group)
    for _ in range(questions):
        question = QuestionFactory(question_set=question_set)
        for i in range(passages):
            use_hidden = hidden_version is not None and i == passages - 1
            start, end = POLICY_SENTENCES[i % len(POLICY_SENTENCES)]
            PoolCandidateFactory(
                pool=pool,
                question=question,
                version=hidden_version if use_hidden else version,
                start=start,
                end=end,
            )
    return pool
