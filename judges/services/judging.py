"""Judging a question set's pooled candidates: a job, resumable and idempotent.

Every pooled candidate of the set's included questions, or a sample of them (the same sample
each time: it is drawn with a seed from the judge, the set and its size), is sent to the judge
unless its document is restricted to access groups the judge is not given: such passages are
never sent, only counted. A candidate already judged without error by the same prompt version
in the same pass is skipped, so a job that stopped half-way is simply started again; one that
failed is tried again. The quote of an answer is placed in the passage (exact, then the
bounded fuzzy match, `goldeval.text.anchoring`) to become a span.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

from corpus import jobs, visibility
from corpus.httpendpoint import ConfigError
from corpus.models import Job, JobState, Project
from corpus.services.http_retrieval import host_policy
from goldeval.text.anchoring import locate
from goldset.errors import ServiceError
from judges.client import Item, JudgeClient, Outcome
from judges.models import AIJudgement, Judge, JudgePrompt, JudgingPass
from judges.services.configuration import current_prompt, endpoint_of
from labelling.models import Candidate, QuestionSet, included_q
from labelling.services import gold_state

BATCH = 64
MAX_SAMPLE = 100_000

MESSAGE = [
    "Judge {judge} (prompt v{version}, {pass_label}): ",
    "{judged:plural:candidate/candidates} judged",
    [", {graded} graded", "graded"],
    [", {errors:plural:error/errors} (listed on the judge's page)", "errors"],
    [", {skipped} already judged", "skipped"],
    [
        ", {withheld:plural:passage/passages} not sent (their documents are outside the "
        "judge's access groups)",
        "withheld",
    ],
    ".",
]


def set_candidates(question_set: QuestionSet):
    """The pooled candidates of the set's included questions."""
    return Candidate.objects.filter(pool__question_set=question_set).filter(
        included_q("question__")
    )


def sample_of(ids: list[int], *, size: int | None, seed: str) -> list[int]:
    """``size`` of ``ids``, the same ones for the same seed; all of them without a size."""
    ids = sorted(ids)
    if size is None or size >= len(ids):
        return ids
    return sorted(random.Random(seed).sample(ids, size))


def sendable(judge: Judge, documents: set[int]) -> set[int]:
    """The documents whose passages may go to ``judge`` (the visibility rule, with the judge's
    access groups as a member's)."""
    groups = visibility.groups_of_documents(documents)
    own = set(judge.access_groups.values_list("pk", flat=True))
    return {pk for pk in documents if visibility.may_see(own, groups.get(pk, set()))}


def start_judging(
    *,
    judge: Judge,
    question_set: QuestionSet,
    sample: int | None = None,
    judging_pass: str = JudgingPass.FIRST,
    user=None,
) -> Job:
    project: Project = judge.project
    if question_set.project_id != project.pk:
        raise ServiceError("The judge and the question set belong to different projects.")
    if question_set.is_canary:
        raise ServiceError("A canary question set is never judged.")
    if sample is not None and not 1 <= sample <= MAX_SAMPLE:
        raise ServiceError(f"A sample is between 1 and {MAX_SAMPLE:,} candidates.")
    if judging_pass not in JudgingPass.values:
        raise ServiceError(f"The pass is one of {', '.join(JudgingPass.values)}.")
    prompt = current_prompt(judge)
    if prompt is None:
        raise ServiceError(f"{judge.name} has no prompt.")
    if not set_candidates(question_set).exists():
        raise ServiceError(f"{question_set.name} has no pooled candidates to judge yet.")
    return jobs.start(
        project=project,
        task="judges.tasks.judge_candidates",
        kind="judge",
        description=f"Judge {question_set.name} with {judge.name}",
        params={
            "judge_id": judge.pk,
            "prompt_id": prompt.pk,
            "question_set_id": question_set.pk,
            "sample": sample,
            "pass": judging_pass,
        },
        user=user,
    )


def job_subjects(job: Job) -> tuple[Judge, JudgePrompt, QuestionSet]:
    """The judge, prompt version and question set a judging or canary job names, read within
    the job's own project (an error once any of them is gone)."""
    params = job.params
    judge = Judge.objects.filter(pk=params.get("judge_id"), project=job.project).first()
    prompt = JudgePrompt.objects.filter(pk=params.get("prompt_id"), judge=judge).first()
    question_set = QuestionSet.objects.filter(
        pk=params.get("question_set_id"), project=job.project
    ).first()
    if judge is None or prompt is None or question_set is None:
        raise ServiceError("The judge, its prompt or the question set is gone.")
    return judge, prompt, question_set


def run_judging(job: Job) -> None:
    params = job.params
    judge, prompt, question_set = job_subjects(job)
    judging_pass = params.get("pass") or JudgingPass.FIRST
    sample = params.get("sample")
    rows = list(set_candidates(question_set).values_list("pk", "version__document_id"))
    allowed = sendable(judge, {document for _, document in rows})
    if sample is None:
        ids = [pk for pk, _ in rows]
    else:
        # A sample is drawn from what the judge may be sent: asked for 300, it judges 300 (a
        # whole pass counts the passages it may not be sent instead).
        ids = [pk for pk, document in rows if document in allowed]
    chosen = sample_of(ids, size=sample, seed=f"{judge.pk}:{question_set.pk}:{sample}")
    candidates = list(
        Candidate.objects.filter(pk__in=chosen)
        .select_related("question", "version", "version__document")
        .order_by("pk")
    )
    if judging_pass == JudgingPass.REVERSED:
        candidates.reverse()
    done_before = set(
        AIJudgement.objects.filter(
            prompt=prompt, judging_pass=judging_pass, candidate_id__in=chosen, error=""
        ).values_list("candidate_id", flat=True)
    )
    shares: dict[int, Counter] = defaultdict(Counter)
    todo = []
    for candidate in candidates:
        document = candidate.version.document_id
        if document not in allowed:
            shares[document]["withheld"] += 1
        elif candidate.pk in done_before:
            shares[document]["skipped"] += 1
        else:
            todo.append(candidate)
            shares[document]["total"] += 1
    job.total = len(todo)
    job.save(update_fields=["total"])
    client = JudgeClient(endpoint=endpoint_of(judge), policy=host_policy())
    advance = jobs.progress(job)
    counts: Counter = Counter()
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        items = [
            Item(
                key=c.pk,
                prompt=prompt.render(question=c.question.text, passage=c.text),
            )
            for c in batch
        ]
        try:
            outcomes = client.judge_many(items, progress=advance)
        except ConfigError as error:
            raise ServiceError(str(error)) from None
        by_pk = {c.pk: c for c in batch}
        for outcome in outcomes:
            candidate = by_pk[outcome.key]
            kind = _record(
                judge=judge,
                prompt=prompt,
                candidate=candidate,
                outcome=outcome,
                judging_pass=judging_pass,
            )
            shares[candidate.version.document_id][kind] += 1
            shares[candidate.version.document_id]["judged"] += 1
            shares[candidate.version.document_id]["done"] += 1
            counts[kind] += 1
            counts["judged"] += 1
    jobs.add_shares(job, {pk: dict(amounts) for pk, amounts in shares.items()})
    totals = Counter()
    for amounts in shares.values():
        totals.update(amounts)
    figures = {
        "judge": judge.name,
        "version": prompt.version,
        "pass_label": JudgingPass(judging_pass).label.lower(),
        "judged": totals["judged"],
        "graded": totals["graded"],
        "errors": totals["errors"],
        "skipped": totals["skipped"],
        "withheld": totals["withheld"],
    }
    job.result = {**(job.result or {}), "judged": counts["judged"], "errors": counts["errors"]}
    jobs.finish(job, JobState.SUCCEEDED, MESSAGE, figures=figures)


def _record(
    *, judge: Judge, prompt: JudgePrompt, candidate: Candidate, outcome: Outcome, judging_pass
) -> str:
    """Store one outcome; "graded" or "errors"."""
    verdict = outcome.verdict
    fields = {
        "judge": judge,
        "model": (verdict.model if verdict and verdict.model else judge.model)[:200],
        "temperature": judge.temperature,
        "seed": judge.seed,
        "raw": outcome.raw.replace("\x00", ""),
        "error": outcome.error.replace("\x00", "")[:2000],
        "grade": None,
        "quote": "",
        "span_start": None,
        "span_end": None,
        "placed": "",
        "prompt_tokens": None,
        "completion_tokens": None,
    }
    if verdict is not None:
        fields.update(
            grade=verdict.grade,
            quote=verdict.quote.replace("\x00", ""),
            prompt_tokens=verdict.prompt_tokens,
            completion_tokens=verdict.completion_tokens,
        )
        if verdict.quote:
            found = locate(verdict.quote, candidate.text)
            if found is None:
                fields["placed"] = "not found"
            else:
                fields.update(
                    span_start=candidate.start + found.start,
                    span_end=candidate.start + found.end,
                    placed="exact" if found.exact else "fuzzy",
                )
    AIJudgement.objects.update_or_create(
        prompt=prompt, candidate=candidate, judging_pass=judging_pass, defaults=fields
    )
    gold_state.mark_stale(pool_id=candidate.pool_id, question_id=candidate.question_id)
    return "graded" if verdict is not None else "errors"
