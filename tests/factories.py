import factory
from django.contrib.auth import get_user_model
from django.test import Client

from corpus.models import Membership, Project

PASSWORD = "correct-horse-battery"


def login(user) -> Client:
    """A test client logged in as ``user`` (made with the factory's PASSWORD)."""
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


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
    from corpus.extraction import assess_quality
    from corpus.services import documents
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
    return documents.ingest_batch(
        project=project,
        batch=SourceBatch(source="test", records=records),
        importer=documents.Importer.command_line(),
    )


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


# Gold sets and evaluation (issue 6) ------------------------------------------------------

VPN_TEXT = (
    "Install the NW-VPN client from the software centre before your first day of remote work. "
    "Sign in with your network account and approve the multi-factor prompt on your phone. "
    "The VPN disconnects after twelve hours without activity and asks you to sign in again."
)
SALARY_TEXT = "Band C pays 52,000 to 61,000 euros per year. Band D pays 60,000 to 72,000 euros."


def labelled_question_set(project, *, ann, bob, lead, restricted=False, resolve=True):
    """A question set "hr" labelled in one pool "p", the shapes a gold set must carry:

    - q1 (verbatim, typos and trailing spaces): ann and bob double-label it; they agree on
      leave (grade 2, overlapping spans) and disagree on vpn (0 vs 1), which the lead resolves
      to 0 when ``resolve``;
    - q2: ann alone, vpn graded 2 at [0, 40) and 1 at [100, 150);
    - q3: ann alone, a grade-0 candidate and the verdict "unanswerable".

    ann's note "=cmd()" and the lead's "+not relevant" are spreadsheet formulas waiting to happen.
    With ``restricted``, a third document "salaries" is restricted to the group hr-confidential.
    """
    from django.utils import timezone

    from corpus.models import Document
    from labelling.models import Assignment, Candidate, Judgement, Pool, Span, Verdict
    from labelling.services import adjudication

    specs = [("leave", POLICY_TEXT), ("vpn", VPN_TEXT)]
    if restricted:
        specs.append(("salaries", SALARY_TEXT, ["hr-confidential"]))
    add_documents(project, *specs)
    leave = Document.objects.get(project=project, doc_id="leave").latest_version
    vpn = Document.objects.get(project=project, doc_id="vpn").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    q1_text = "how many days carry over?? \u00e9t\u00e9  "
    q1 = QuestionFactory(question_set=question_set, external_id="q1", text=q1_text)
    q2 = QuestionFactory(question_set=question_set, external_id="q2", text="vpn client install")
    q3 = QuestionFactory(question_set=question_set, external_id="q3", text="gym discount?")
    pool = Pool.objects.create(question_set=question_set, name="p", depth=10, state="ready")
    candidates = {
        "q1-leave": (q1, leave, 0, 180, 0),
        "q1-vpn": (q1, vpn, 0, 50, 1),
        "q2-vpn-a": (q2, vpn, 0, 60, 0),
        "q2-vpn-b": (q2, vpn, 100, 150, 1),
        "q3-leave": (q3, leave, 200, 300, 0),
    }
    candidates = {
        key: Candidate.objects.create(
            pool=pool, question=q, version=v, start=s, end=e, shuffle_rank=rank
        )
        for key, (q, v, s, e, rank) in candidates.items()
    }
    now = timezone.now()
    assignments = {}
    for question, slots in ((q1, (ann, bob)), (q2, (ann,)), (q3, (ann,))):
        for slot, user in enumerate(slots, start=1):
            assignments[(question.external_id, user.username)] = Assignment.objects.create(
                pool=pool,
                question=question,
                slot=slot,
                labeller=user,
                assigned_at=now,
                completed_at=now,
            )

    def grade(question, user, key, value, spans=(), note=""):
        candidate = candidates[key]
        judgement = Judgement.objects.create(
            assignment=assignments[(question, user.username)],
            candidate=candidate,
            grade=value,
            note=note,
        )
        for start, end in spans:
            Span.objects.create(
                judgement=judgement,
                version=candidate.version,
                start=start,
                end=end,
                quote=candidate.version.text[start:end],
            )

    grade("q1", ann, "q1-leave", 2, [(0, 100)])
    grade("q1", bob, "q1-leave", 2, [(20, 120)])
    grade("q1", ann, "q1-vpn", 0, note="=cmd()")
    grade("q1", bob, "q1-vpn", 1, [(0, 50)])
    grade("q2", ann, "q2-vpn-a", 2, [(0, 40)])
    grade("q2", ann, "q2-vpn-b", 1, [(100, 150)])
    grade("q3", ann, "q3-leave", 0)
    Verdict.objects.create(
        assignment=assignments[("q3", ann.username)], outcome="unanswerable", reason="no such perk"
    )
    if resolve:
        adjudication.resolve(
            pool=pool,
            question=q1,
            candidate=candidates["q1-vpn"],
            user=lead,
            grade=0,
            note="+not relevant",
        )
    return question_set


# Gold spans on changed documents (issue 33 items 3 and 4) ---------------------------------

FEE_V1 = (
    "Sports policy.\n\nThe company refunds 40 percent of the gym fee. "
    "Bikes bought for commuting are refunded in full."
)
# Re-uploaded: a longer heading moves everything, and 40 percent became 50 percent.
FEE_V2 = (
    "Sports policy, revised in May.\n\nThe company refunds 50 percent of the gym fee. "
    "Bikes bought for commuting are refunded in full."
)
BAND_V1 = "Pay bands. Band C pays 52,000 euros per year."
BAND_V2 = "Pay bands. Band C pays 55,000 euros per year."


def fee_question_set(project, *, ann, bob, lead, group_lead=None):
    """A question set "fees" in one pool "p" on the document "fees" (FEE_V1):

    - q1 "how much of the gym fee?": ann grades 1, bob 2; ``lead`` resolves it to 2 with the
      evidence "refunds 40 percent of the gym fee" (a resolution span only a lead re-checks);
    - q2 "are bikes refunded?": ann alone, grade 2, evidence "Bikes ... in full.";
    - with ``group_lead``: the document "bands" (BAND_V1) restricted to the access group
      "pay", whose members are ann, bob and ``group_lead``; q3 "band C pay?" double-labelled
      with grades 1 and 2, resolved by ``group_lead`` with "pays 52,000 euros per year".

    Call `change_fee_documents` to re-upload them with the facts changed."""
    from django.utils import timezone

    from corpus.models import AccessGroup, Document
    from labelling.models import Assignment, Candidate, Judgement, Pool, Span
    from labelling.services import adjudication

    specs = [("fees", FEE_V1)]
    if group_lead is not None:
        specs.append(("bands", BAND_V1, ["pay"]))
    add_documents(project, *specs)
    if group_lead is not None:
        group = AccessGroup.objects.get(project=project, name="pay")
        group.members.add(ann, bob, group_lead)
    question_set = QuestionSetFactory(project=project, name="fees")
    pool = Pool.objects.create(question_set=question_set, name="p", depth=10, state="ready")
    now = timezone.now()

    def passage(external_id, text, doc_id, sentence, labellers):
        version = Document.objects.get(project=project, doc_id=doc_id).latest_version
        question = QuestionFactory(question_set=question_set, external_id=external_id, text=text)
        start = version.text.index(sentence)
        candidate = Candidate.objects.create(
            pool=pool, question=question, version=version, start=start, end=start + len(sentence)
        )
        slots = [
            Assignment.objects.create(
                pool=pool,
                question=question,
                slot=slot,
                labeller=user,
                assigned_at=now,
                completed_at=now,
            )
            for slot, user in enumerate(labellers, start=1)
        ]
        return question, candidate, slots

    def grade(assignment, candidate, value, quote):
        judgement = Judgement.objects.create(
            assignment=assignment, candidate=candidate, grade=value
        )
        start = candidate.version.text.index(quote)
        Span.objects.create(
            judgement=judgement,
            version=candidate.version,
            start=start,
            end=start + len(quote),
            quote=quote,
        )

    def resolve(question, candidate, quote, user):
        start = candidate.version.text.index(quote)
        adjudication.resolve(
            pool=pool,
            question=question,
            candidate=candidate,
            user=user,
            grade=2,
            spans=[(start, start + len(quote))],
        )

    sentence = "The company refunds 40 percent of the gym fee."
    q1, fee, (a1, b1) = passage("q1", "how much of the gym fee?", "fees", sentence, (ann, bob))
    grade(a1, fee, 1, "40 percent")
    grade(b1, fee, 2, "40 percent of the gym fee")
    resolve(q1, fee, "refunds 40 percent of the gym fee", lead)
    bikes = "Bikes bought for commuting are refunded in full."
    _, bike, (a2,) = passage("q2", "are bikes refunded?", "fees", bikes, (ann,))
    grade(a2, bike, 2, bikes)
    if group_lead is not None:
        pays = "Band C pays 52,000 euros per year."
        q3, band, (a3, b3) = passage("q3", "band C pay?", "bands", pays, (ann, bob))
        grade(a3, band, 1, "52,000 euros")
        grade(b3, band, 2, "52,000 euros per year")
        resolve(q3, band, "pays 52,000 euros per year", group_lead)
    return question_set


def change_fee_documents(project, *, bands=False):
    """Upload the new versions of `fee_question_set`'s documents (the facts changed)."""
    specs = [("fees", FEE_V2)]
    if bands:
        specs.append(("bands", BAND_V2, ["pay"]))
    add_documents(project, *specs)
