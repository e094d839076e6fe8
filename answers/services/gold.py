"""What a gold set says about answers: the reference facts and the agreed grades of each
answer, as the records of the bundle's ``answers-gold.jsonl`` (`goldeval.formats.answer_gold` reads
them; `goldeval.formats.bundle` writes them).

The rule, item by item (`answers.services.items`): an answer reviewed by one labeller takes that
review; one reviewed by two takes, for each item (a claim's support, a citation's grade, a group
of citations, a fact, the refusal call), the value both reviewers gave, else the lead's decision
on that item, else the value of the review a lead chose whole. An answer whose review is
unfinished, that has an undecided item, or whose facts were graded on an older reference
version is left out: it is not covered, and the scores say so.
"""

from __future__ import annotations

from typing import Any

from answers.models import Answer, AnswerAssignment, AnswerRun, ReferenceAnswer
from answers.services.items import Item, answer_items, settled_review
from goldeval.formats.answers import Answer as CoreAnswer
from goldeval.formats.answers import Sentence
from goldeval.formats.runfiles import Passage
from labelling.models import QuestionSet, included_q


def reference_records(question_set: QuestionSet) -> list[dict[str, Any]]:
    """The current reference answer of every included question that has one."""
    records = []
    current: dict[int, ReferenceAnswer] = {}
    for reference in (
        ReferenceAnswer.objects.filter(
            included_q("question__"), question__question_set=question_set
        )
        .select_related("question")
        .prefetch_related("facts")
        .order_by("question_id", "-version")
    ):
        current.setdefault(reference.question_id, reference)
    for reference in current.values():
        records.append(
            {
                "kind": "reference",
                "question_id": reference.question.external_id,
                "version": reference.version,
                "facts": [
                    {
                        "fact_id": str(fact.pk),
                        "text": fact.text,
                        "importance": "vital" if fact.vital else "okay",
                        "spans": [
                            {k: span[k] for k in ("doc_id", "start", "end") if k in span}
                            for span in fact.spans
                        ],
                    }
                    for fact in reference.facts.all()
                ],
            }
        )
    return records


def review_of(assignment: AnswerAssignment) -> dict[str, Any]:
    """One review's grades in the bundle's shape, comparable with another review's."""
    claims = []
    for claim in assignment.claims.all():
        record = {
            "start": claim.start,
            "end": claim.end,
            "support": claim.support,
            "citations": [
                {**_passage(citation.passage), "grade": citation.grade}
                for citation in claim.citations.all()
            ],
        }
        if claim.supporting_sets:
            # Which partial citations support the claim together, as goldeval reads them (ALCE's
            # precision); left out when none were recorded.
            record["supporting_sets"] = [list(group) for group in claim.supporting_sets]
        claims.append(record)
    return {
        "claims": claims,
        "facts": sorted(
            ({"fact_id": str(f.fact_id), "present": f.present} for f in assignment.facts.all()),
            key=lambda fact: int(fact["fact_id"]),
        ),
        "wrongly_refused": assignment.wrongly_refused,
        "reference": assignment.reference_id,
    }


def _passage(passage) -> dict[str, Any]:
    doc_id = passage.version.document.doc_id
    if passage.start is None:
        return {"doc_id": doc_id}
    return {"doc_id": doc_id, "start": passage.start, "end": passage.end}


def answer_records(question_set: QuestionSet) -> list[dict[str, Any]]:
    """The agreed grades of every answer of the set's runs that has them."""
    current = {reference["question_id"]: reference for reference in reference_records(question_set)}
    current_versions = {
        question_id: {fact["fact_id"] for fact in reference["facts"]}
        for question_id, reference in current.items()
    }
    records = []
    seen: dict[tuple[str, str], dict[str, Any] | None] = {}
    for answer in _answers(question_set):
        compared = answer_items(answer)
        if compared is None:
            continue  # a review is unfinished: not covered
        review = settled_review(compared)
        if review is None:
            continue  # an item is undecided: not covered (`undecided_items` names them)
        graded = {fact["fact_id"] for fact in review["facts"]}
        if graded - current_versions.get(answer.question.external_id, set()):
            continue  # graded on an older reference version
        key = (answer.question.external_id, answer.key)
        if key in seen:
            # The same answer in two runs (grades are keyed by what the answer says): one line,
            # or none when their agreed reviews differ (as two reviews that disagree).
            if seen[key] is not None and _grades(seen[key]) != _grades(review):
                seen[key] = None
            continue
        seen[key] = review
        records.append(
            {
                "kind": "answer",
                "question_id": answer.question.external_id,
                "answer_key": answer.key,
                "run": answer.run.name,
                "claims": review["claims"],
                "facts": review["facts"],
                "wrongly_refused": review["wrongly_refused"],
            }
        )
    dropped = {key for key, review in seen.items() if review is None}
    return [r for r in records if (r["question_id"], r["answer_key"]) not in dropped]


def _answers(question_set: QuestionSet):
    return (
        Answer.objects.filter(included_q("question__"), run__question_set=question_set)
        .select_related("run", "question", "resolution")
        .prefetch_related(
            "assignments__claims__citations__passage__version__document",
            "assignments__facts",
            "item_decisions",
        )
        .order_by("run__name", "question_id")
    )


def undecided_items(question_set: QuestionSet) -> list[tuple[Answer, list[Item]]]:
    """The answers whose finished reviews still have undecided items, with those items: what
    keeps them out of the gold until a lead decides (never one reviewer's value taken)."""
    found = []
    for answer in _answers(question_set):
        compared = answer_items(answer)
        if compared is not None and compared.undecided:
            found.append((answer, compared.undecided))
    return found


def _grades(review: dict[str, Any]) -> tuple:
    return (review["claims"], review["facts"], review["wrongly_refused"])


def answers_gold_records(question_set: QuestionSet) -> list[dict[str, Any]]:
    """Every line of the bundle's answers-gold.jsonl; empty when the set has no answer work."""
    references = reference_records(question_set)
    answers = answer_records(question_set)
    return [*references, *answers]


def core_answers(run: AnswerRun) -> dict[str, CoreAnswer]:
    """The run's answers as `goldeval.formats.answers` reads them from a file, so the scores and
    the answer keys are the CLI's (`write_answer_file` writes the same file back)."""
    answers: dict[str, CoreAnswer] = {}
    rows = (
        run.answers.filter(included_q("question__"))
        .select_related("question")
        .prefetch_related("sentences", "passages__version__document")
        .order_by("line")
    )
    for row in rows:
        passages = list(row.passages.all())
        citations: dict[int, list[Passage]] = {}
        for p in sorted(passages, key=lambda p: p.position):
            if p.role == "citation":
                citations.setdefault(p.sentence_id, []).append(_core_passage(p))
        context = tuple(
            _core_passage(p)
            for p in sorted(passages, key=lambda p: p.position)
            if p.role == "context"
        )
        answers[row.question.external_id] = CoreAnswer(
            question_id=row.question.external_id,
            text=row.text,
            refused=row.refused,
            sentences=tuple(
                Sentence(s.start, s.end, tuple(citations.get(s.pk, ())))
                for s in sorted(row.sentences.all(), key=lambda s: s.position)
            ),
            context=context,
            system=run.system,
            version=run.system_version,
            line=row.line,
            sentences_given=row.sentences_given,
        )
    return answers


def _core_passage(passage) -> Passage:
    return Passage(passage.version.document.doc_id, passage.start, passage.end)
