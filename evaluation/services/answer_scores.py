"""The Answers page of a gold set: every answer run of its question set scored against it.

Computed by a job (`start_answers_report`, task ``evaluation.tasks.answer_report``) and stored
as an `EvaluationReport` keyed by the runs scored, so opening the page scores nothing: the
gold set is re-anchored and every run read in the worker, as for the evaluation page.

The figures are `goldeval.scoring.answers`' on exactly what ``python -m goldeval answers --gold
BUNDLE --answers RUN.jsonl --per-question`` reads: the bundle's gold and ``answers-gold.jsonl``
(frozen when the gold set was finalised) and each run as `goldeval.formats.answers` reads it
(`core_answers` rebuilds it from the rows; the page offers the same file for download). So the
report here is the CLI's, number for number (tests/evaluation/test_answer_scores.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.urls import reverse

from answers.models import AnswerAssignment, AnswerPassage, AnswerRun
from answers.services.gold import core_answers
from corpus import jobs
from corpus.models import Document, Job, JobState
from evaluation.models import EvaluationReport, GoldSet
from evaluation.services.gold_sets import bundle_files, load_gold_set
from goldeval.formats.answer_gold import ANSWERS_GOLD_FILE, AnswerGold, read_answer_gold
from goldeval.formats.answers import Answer
from goldeval.formats.gold import Gold
from goldeval.scoring.answers import DEFINITIONS, compare_answer_runs, evaluate_answers
from goldeval.scoring.answers_report import build_answer_report
from goldeval.scoring.metrics import passages_reaching_gold


@dataclass
class QuestionDrill:
    """One question of the drill-down: each run's answer, claim by claim."""

    question_id: str
    text: str
    answerable: bool
    answers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class AnswersPage:
    report: dict[str, Any]
    runs: list[AnswerRun]
    questions: list[QuestionDrill]
    has_judgements: bool


def hides_anything(*, gold_set: GoldSet, viewer) -> bool:
    """Whether a document of the bundle or of an answer run is hidden from the viewer: the
    page shows their text, so it is refused to them (as the bundle's download is)."""
    if gold_set.hidden_document_count(viewer):
        return True
    return AnswerPassage.objects.filter(
        answer__run__question_set_id=gold_set.question_set_id,
        version__document__in=Document.objects.hidden_from(viewer),
    ).exists()


def reviews_finished_since(gold_set: GoldSet) -> int:
    """Answer reviews finished after this gold set was finalised: a gold set is frozen, so
    they count only from the next version (the page says so beside the human-graded "—")."""
    return AnswerAssignment.objects.filter(
        answer__run__question_set_id=gold_set.question_set_id, done_at__gt=gold_set.created_at
    ).count()


def answer_gold_of(gold_set: GoldSet) -> AnswerGold | None:
    files = bundle_files(gold_set, names=[ANSWERS_GOLD_FILE])
    if ANSWERS_GOLD_FILE not in files:
        return None
    return read_answer_gold(files[ANSWERS_GOLD_FILE])


def answers_page(*, gold_set: GoldSet) -> AnswersPage:
    gold = load_gold_set(gold_set)
    answer_gold = answer_gold_of(gold_set)
    runs = list(AnswerRun.objects.filter(question_set_id=gold_set.question_set_id).order_by("name"))
    answers = {run.name: core_answers(run) for run in runs}
    evaluations = {
        run.name: evaluate_answers(
            gold=gold,
            # As the CLI, which refuses answers to questions the gold lacks (excluded ones).
            answers={q: a for q, a in answers[run.name].items() if q in gold.questions},
            name=run.name,
            answer_gold=answer_gold,
        )
        for run in runs
    }
    report = build_answer_report(evaluations, compare_answer_runs(evaluations), per_question=True)
    return AnswersPage(
        report=report,
        runs=runs,
        questions=_drill(gold, runs, answers, answer_gold),
        has_judgements=answer_gold is not None,
    )


def _drill(
    gold: Gold,
    runs: list[AnswerRun],
    answers: dict[str, dict[str, Answer]],
    answer_gold: AnswerGold | None,
) -> list[QuestionDrill]:
    graders: dict[tuple[int, str], list[str]] = {}
    for run_id, question_id, username in AnswerAssignment.objects.filter(
        answer__run__in=runs, done_at__isnull=False
    ).values_list("answer__run_id", "answer__question__external_id", "labeller__username"):
        graders.setdefault((run_id, question_id), []).append(username)
    references = answer_gold.references if answer_gold is not None else {}
    drill = []
    for question_id, question in gold.questions.items():
        row = QuestionDrill(question_id, question.question, question.answerable)
        facts = references.get(question_id, ())
        for run in runs:
            answer = answers[run.name].get(question_id)
            if answer is None:
                row.answers.append({"run": run.name, "missing": True})
                continue
            grades = answer_gold.grades_for(question_id, answer.key()) if answer_gold else None
            row.answers.append(
                {
                    "run": run.name,
                    "missing": False,
                    "refused": answer.refused,
                    "sentences": _sentences(answer, question, grades),
                    "graded": grades is not None,
                    "wrongly_refused": bool(grades and grades.wrongly_refused),
                    "missing_facts": [
                        fact
                        for fact in facts
                        if grades is not None and grades.facts.get(fact.fact_id, "no") != "yes"
                    ],
                    "graders": sorted(graders.get((run.pk, question_id), [])),
                }
            )
        drill.append(row)
    return drill


def _sentences(answer: Answer, question, grades) -> list[dict[str, Any]]:
    """Each sentence of the answer with the support its claim got (claims inside it, when a
    labeller split it: the weakest) and its citations, marked when they reach gold."""
    order = {"none": 0, "partial": 1, "full": 2}
    rows = []
    for sentence in answer.sentences:
        supports = [
            claim.support
            for claim in (grades.claims if grades else ())
            if claim.start < sentence.end and sentence.start < claim.end
        ]
        reached = passages_reaching_gold(question, sentence.citations) if sentence.citations else []
        rows.append(
            {
                "text": answer.text[sentence.start : sentence.end],
                "support": min(supports, key=order.__getitem__) if supports else "",
                "citations": [
                    {"doc_id": c.doc_id, "start": c.start, "end": c.end, "gold": hit}
                    for c, hit in zip(sentence.citations, reached, strict=True)
                ],
            }
        )
    return rows


# --- stored, computed by a job ------------------------------------------------------------------


def answers_key(gold_set: GoldSet) -> str:
    """Which figures the page needs now: the gold set's answer runs (a new run, a new key), by
    the scores' current definitions (figures of older ones are computed again)."""
    runs = sorted(
        AnswerRun.objects.filter(question_set_id=gold_set.question_set_id).values_list(
            "pk", flat=True
        )
    )
    choice = {"answers": runs, "definitions": DEFINITIONS}
    return hashlib.sha256(json.dumps(choice, sort_keys=True).encode()).hexdigest()


def stored_answers_report(gold_set: GoldSet) -> dict[str, Any] | None:
    report = EvaluationReport.objects.filter(gold_set=gold_set, key=answers_key(gold_set)).first()
    return None if report is None else report.content


def answers_job(gold_set: GoldSet) -> Job | None:
    """The job computing the page's figures now, or the last one that tried."""
    return jobs.newest(
        project_id=gold_set.question_set.project_id,
        kind="answer_report",
        gold_set_id=gold_set.pk,
        key=answers_key(gold_set),
    )


def pending_answers_job(gold_set: GoldSet) -> Job | None:
    return jobs.unfinished(answers_job(gold_set))


def start_answers_report(*, gold_set: GoldSet, user=None) -> Job:
    running = pending_answers_job(gold_set)
    if running is not None:
        return running
    return jobs.start(
        project=gold_set.question_set.project,
        task="evaluation.tasks.answer_report",
        kind="answer_report",
        user=user,
        params={"gold_set_id": gold_set.pk, "key": answers_key(gold_set)},
        total=1,
        description=f"Score the answer runs against {gold_set}",
    )


def compute_answers_report(*, gold_set: GoldSet) -> dict[str, Any]:
    """Score every answer run and store what the page shows (idempotent)."""
    key = answers_key(gold_set)
    page = answers_page(gold_set=gold_set)
    content = {
        "report": page.report,
        "runs": [{"name": run.name, "pk": run.pk} for run in page.runs],
        "questions": [asdict(question) for question in page.questions],
        "has_judgements": page.has_judgements,
    }
    content = json.loads(json.dumps(content, default=_plain))
    try:
        with transaction.atomic():
            EvaluationReport.objects.update_or_create(
                gold_set=gold_set,
                key=key,
                defaults={"choice": {"answers": True}, "content": content},
            )
    except IntegrityError:  # another job stored the same figures first
        pass
    return content


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot store {type(value).__name__}")


def run_answers_report(job: Job) -> None:
    """The job of `start_answers_report`."""
    gold_set = GoldSet.objects.select_related("question_set__project").get(
        pk=job.params["gold_set_id"], question_set__project=job.project
    )
    compute_answers_report(gold_set=gold_set)
    url = reverse("evaluation:show-answers", args=[gold_set.question_set.project.slug, gold_set.pk])
    job.result = {"redirect": True, "link": {"url": url, "text": "Show the answer scores"}}
    job.done = 1
    jobs.finish(job, JobState.SUCCEEDED, "The answer scores are ready.")
