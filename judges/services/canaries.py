"""Judge canaries: planted per question set, judged per prompt version, a pass rate per class.

Planting is idempotent. Written canaries (stuffing, instruction, restated) take up to
``per_class`` questions of the set; paraphrase canaries are up to ``per_class`` passages the gold
grades 1 or 2 that share no word with their question (a set without such passages has none,
and the page says so). Judging them is a job like judging candidates: the same client, access
profile (a paraphrase's document outside the judge's groups is never sent), prompt and
resumability. A class whose pass rate falls below `judges.canaries.PASS_RATE` marks the prompt
version unfit.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from django.db.models import Q

from corpus import jobs, visibility
from corpus.httpendpoint import ConfigError
from corpus.models import Job, JobState
from corpus.services.http_retrieval import host_policy
from goldset.errors import ServiceError
from judges.canaries import KINDS, PASS_RATE, WRITERS, passed, shares_a_word
from judges.client import Item, JudgeClient
from judges.models import Judge, JudgeCanary, JudgeCanaryResult, JudgePrompt
from judges.services.configuration import current_prompt, endpoint_of
from judges.services.judging import job_subjects, sendable
from labelling.models import Question, QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1, Decision
from labelling.services.votes import gather_votes

PER_CLASS = 10
MAX_PER_CLASS = 200


def plant_canaries(*, question_set: QuestionSet, per_class: int = PER_CLASS) -> int:
    """Plant the set's canaries; how many are new."""
    if question_set.is_canary:
        raise ServiceError("A canary question set gets no judge canaries.")
    if not 1 <= per_class <= MAX_PER_CLASS:
        raise ServiceError(f"Between 1 and {MAX_PER_CLASS} canaries per class.")
    questions = list(Question.objects.filter(question_set=question_set).included().order_by("pk"))
    if not questions:
        raise ServiceError(f"{question_set.name} has no questions to plant canaries for.")
    chosen = sorted(
        random.Random(question_set.pk).sample(questions, min(per_class, len(questions))),
        key=lambda q: q.pk,
    )
    planted = 0
    for question in chosen:
        for kind, write in WRITERS.items():
            _, new = JudgeCanary.objects.get_or_create(
                question_set=question_set,
                question=question,
                kind=kind,
                candidate=None,
                defaults={"text": write(question.text)},
            )
            planted += new
    paraphrases = []
    for votes in gather_votes(question_set=question_set, machine=False):
        for item in votes.items:
            decision = item.decide(min_span_f1=DEFAULT_MIN_SPAN_F1)
            if (
                isinstance(decision, Decision)
                and decision.grade >= 1
                and not shares_a_word(votes.question.text, item.candidate.text)
            ):
                paraphrases.append(item.candidate)
    paraphrases.sort(key=lambda c: c.pk)
    for candidate in random.Random(question_set.pk).sample(
        paraphrases, min(per_class, len(paraphrases))
    ):
        _, new = JudgeCanary.objects.get_or_create(
            question_set=question_set,
            question_id=candidate.question_id,
            kind="paraphrase",
            candidate=candidate,
        )
        planted += new
    return planted


def start_canaries(
    *, judge: Judge, question_set: QuestionSet, per_class: int = PER_CLASS, user=None
) -> Job:
    if question_set.project_id != judge.project_id:
        raise ServiceError("The judge and the question set belong to different projects.")
    prompt = current_prompt(judge)
    if prompt is None:
        raise ServiceError(f"{judge.name} has no prompt.")
    planted = plant_canaries(question_set=question_set, per_class=per_class)
    return jobs.start(
        project=judge.project,
        task="judges.tasks.judge_canaries",
        kind="judge_canaries",
        description=f"Judge the canaries of {question_set.name} with {judge.name}",
        params={
            "judge_id": judge.pk,
            "prompt_id": prompt.pk,
            "question_set_id": question_set.pk,
            "planted": planted,
        },
        user=user,
    )


def run_canaries(job: Job) -> None:
    params = job.params
    judge, prompt, question_set = job_subjects(job)
    canaries = list(
        JudgeCanary.objects.filter(question_set=question_set)
        .select_related("question", "candidate__version")
        .order_by("pk")
    )
    documents = {c.candidate.version.document_id for c in canaries if c.candidate_id}
    allowed = sendable(judge, documents)
    done = set(
        JudgeCanaryResult.objects.filter(prompt=prompt, error="").values_list(
            "canary_id", flat=True
        )
    )
    todo = [
        c
        for c in canaries
        if c.pk not in done and (not c.candidate_id or c.candidate.version.document_id in allowed)
    ]
    job.total = len(todo)
    job.save(update_fields=["total"])
    items = [
        Item(key=c.pk, prompt=prompt.render(question=c.question.text, passage=c.passage))
        for c in todo
    ]
    try:
        outcomes = JudgeClient(endpoint=endpoint_of(judge), policy=host_policy()).judge_many(
            items, progress=jobs.progress(job)
        )
    except ConfigError as error:
        raise ServiceError(str(error)) from None
    counts: Counter = Counter()
    for outcome in outcomes:
        JudgeCanaryResult.objects.update_or_create(
            canary_id=outcome.key,
            prompt=prompt,
            defaults={
                "judge": judge,
                "grade": outcome.verdict.grade if outcome.verdict else None,
                "error": outcome.error.replace("\x00", "")[:2000],
                "raw": outcome.raw.replace("\x00", ""),
            },
        )
        counts["errors" if outcome.verdict is None else "graded"] += 1
    message = (
        f"{params.get('planted', 0)} canaries planted; {len(todo)} judged by {judge.name} "
        f"(prompt v{prompt.version}): {counts['graded']} graded, {counts['errors']} errors."
    )
    jobs.finish(job, JobState.SUCCEEDED, message)


@dataclass
class CanaryClass:
    kind: str
    label: str
    items: int
    passed: int
    errors: int

    @property
    def rate(self) -> float | None:
        graded = self.items - self.errors
        return self.passed / graded if graded else None

    @property
    def percent(self) -> int | None:
        return None if self.rate is None else round(100 * self.rate)

    @property
    def failed(self) -> bool:
        return self.rate is not None and self.rate < PASS_RATE


def canary_report(*, prompt: JudgePrompt, question_set: QuestionSet, viewer) -> list[CanaryClass]:
    """Each class's pass rate, over the canaries the viewer may see (a paraphrase canary is a
    real passage: only those whose document the viewer may see count)."""
    results = JudgeCanaryResult.objects.filter(
        prompt=prompt, canary__question_set=question_set
    ).select_related("canary")
    if viewer is not None:  # None: a command, run by whoever runs the server
        hidden = visibility.hidden_q(viewer, prefix="canary__candidate__version__document__")
        results = results.exclude(Q(canary__candidate__isnull=False) & hidden)
    tally: dict[str, Counter] = {kind: Counter() for kind in KINDS}
    for result in results:
        kind = result.canary.kind
        tally[kind]["items"] += 1
        verdict = passed(kind, result.grade)
        if verdict is None:
            tally[kind]["errors"] += 1
        elif verdict:
            tally[kind]["passed"] += 1
    return [
        CanaryClass(
            kind=kind,
            label=KINDS[kind],
            items=counts["items"],
            passed=counts["passed"],
            errors=counts["errors"],
        )
        for kind, counts in tally.items()
    ]
