"""A labelled question set large enough to calibrate a judge on, built through the models as
the app writes them.

``questions`` questions, each with three candidates on documents of their own; ann grades
every candidate, bob the candidates of every other question (agreeing except on every fifth
of his items, which the lead resolves to ann's grade). The gold grade of candidate i is
``GOLD[i % 7]``, so all three grades occur. ``truth`` maps each passage's text to its gold
grade, for the fake LLM. One more question's candidate sits on a document restricted to the
group ``secret``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from corpus.models import Document, Retriever
from labelling.models import (
    Assignment,
    Candidate,
    Judgement,
    Pool,
    Provenance,
    Resolution,
    Verdict,
)
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents

GOLD = (2, 0, 1, 0, 2, 1, 0)
SECRET_TEXT = "Executive bonus pool for the year is confidential and decided by the board."


@dataclass
class World:
    question_set: object
    pool: Pool
    candidates: list[Candidate]
    gold: dict[int, int]  # candidate pk -> gold grade
    truth: dict[str, int]
    secret: Candidate | None = None
    human_pairs: list[tuple[int, int]] = field(default_factory=list)


def passage_text(i: int) -> str:
    topic = ("leave", "expenses", "laptops", "travel", "parking", "training", "security")[i % 7]
    return f"Passage {i} on {topic}: clause {i * 13 % 97} applies to every team."


def build_world(project, *, ann, bob, lead, questions: int = 20, secret: bool = True) -> World:
    count = questions * 3
    specs = [(f"doc-{i}", passage_text(i)) for i in range(count)]
    if secret:
        specs.append(("secret-doc", SECRET_TEXT, ["secret"]))
    add_documents(project, *specs)
    versions = {
        d.doc_id: d.latest_version
        for d in Document.objects.filter(project=project).select_related("latest_version")
    }
    question_set = QuestionSetFactory(project=project, name="calib")
    pool = Pool.objects.create(question_set=question_set, name="p", depth=10, state="ready")
    # Three systems ranked each question's candidates: best first, worst first, as pooled.
    systems = [
        Retriever.objects.create(project=project, name=name, kind="run")
        for name in ("best", "worst", "middle")
    ]
    now = timezone.now()
    world = World(question_set=question_set, pool=pool, candidates=[], gold={}, truth={})
    bob_items = 0
    for q in range(questions):
        question = QuestionFactory(
            question_set=question_set, external_id=f"q{q}", text=f"What is rule {q}?"
        )
        ann_slot = Assignment.objects.create(
            pool=pool, question=question, slot=1, labeller=ann, assigned_at=now, completed_at=now
        )
        bob_slot = None
        if q % 2 == 0:
            bob_slot = Assignment.objects.create(
                pool=pool,
                question=question,
                slot=2,
                labeller=bob,
                assigned_at=now,
                completed_at=now,
            )
        for j in range(3):
            i = q * 3 + j
            version = versions[f"doc-{i}"]
            candidate = Candidate.objects.create(
                pool=pool,
                question=question,
                version=version,
                start=0,
                end=len(version.text),
                shuffle_rank=j,
            )
            grade = GOLD[i % 7]
            world.candidates.append(candidate)
            world.gold[candidate.pk] = grade
            world.truth[version.text] = grade
            Judgement.objects.create(assignment=ann_slot, candidate=candidate, grade=grade)
            if bob_slot is not None:
                bob_items += 1
                other = grade if bob_items % 5 else (grade + 1) % 3
                Judgement.objects.create(assignment=bob_slot, candidate=candidate, grade=other)
                world.human_pairs.append((grade, other))
                if other != grade:
                    Resolution.objects.create(
                        pool=pool,
                        question=question,
                        candidate=candidate,
                        grade=grade,
                        resolved_by=lead,
                    )
        mine = world.candidates[-3:]
        orders = (
            sorted(mine, key=lambda c: -world.gold[c.pk]),
            sorted(mine, key=lambda c: world.gold[c.pk]),
            mine,
        )
        for system, order in zip(systems, orders, strict=True):
            for rank, candidate in enumerate(order, start=1):
                Provenance.objects.create(
                    candidate=candidate,
                    retriever=system,
                    rank=rank,
                    score=1 / rank,
                    start=candidate.start,
                    end=candidate.end,
                )
        for slot in filter(None, (ann_slot, bob_slot)):
            Verdict.objects.create(assignment=slot, outcome="answerable")
    if secret:
        question = QuestionFactory(
            question_set=question_set, external_id="q-secret", text="How big is the bonus pool?"
        )
        version = versions["secret-doc"]
        world.secret = Candidate.objects.create(
            pool=pool, question=question, version=version, start=0, end=len(version.text)
        )
    return world
