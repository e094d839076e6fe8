"""The demo's production loop: a few hundred synthetic traces over the last four weeks (the demo
questions as users might ask them, retrieved by a production system that misses sometimes),
a weekly sampling rule, and one sample drawn, pooled and labelled, so the misses report and the
promotion page have something to show after `make run`.

Deterministic (seeded) and safe to run again: traces are idempotent by trace id, the rule is
saved unchanged, and a sample is drawn only when the demo has none.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from corpus.models import Retriever
from corpus.services import retrieval
from labelling.models import Assignment, Candidate, Judgement, Span, Verdict
from labelling.services.assignments import plan_assignments
from production.models import Sample
from production.services import draws as production
from production.services import sampling as sampling_services
from production.services.traces import receive_traces

SEED = 49
TRACES = 320
HOURS = 28 * 24  # four weeks
VARIANTS = ["{q}", "{q}", "{q} thanks", "quick one: {q}", "{q}?", "pls help - {q}"]


def load_demo_traces(*, project, users, demo_dir: Path, wait, out) -> None:
    hints = [
        json.loads(line)
        for line in (demo_dir / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    rng = random.Random(SEED)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    asked = [
        (
            n,
            rng.choice(hints),
            rng.choice(VARIANTS),
            now - timedelta(hours=rng.randrange(HOURS)),
        )
        for n in range(TRACES)
    ]
    texts = [variant.format(q=hint["question"]) for _, hint, variant, _ in asked]
    bm25 = Retriever.objects.get(project=project, name="bm25")
    rankings = retrieval.retrieve(retriever=bm25, questions=texts, k=8)
    items, halfway = [], now - timedelta(days=14)
    for (n, hint, _, moment), text, ranking in zip(asked, texts, rankings, strict=True):
        # "Production" is BM25 with a flaw: one answer in four loses its best passage, and the
        # index is a little behind the corpus (a retired document now and then).
        hits = list(ranking)
        if hints and rng.random() < 0.25:
            hits = [h for h in hits if h.doc_id != hint.get("answer_doc")]
        retrieved = [
            {"doc_id": h.doc_id, "start": h.start, "end": h.end, "rank": r, "score": h.score}
            for r, h in enumerate(hits[:5], start=1)
        ]
        if rng.random() < 0.03:
            retrieved.append({"doc_id": "retired-policy-2019.md", "rank": len(retrieved) + 1})
        answerable = hint.get("answerable", True)
        refused = not retrieved or (not answerable and rng.random() < 0.5)
        thumb = "down" if rng.random() < (0.5 if len(hits) < len(ranking) else 0.1) else "up"
        items.append(
            {
                "trace_id": f"demo-{n:04d}",
                "occurred_at": moment.isoformat(),
                "user": {"id": f"employee-{rng.randrange(60):02d}", "groups": []},
                "question": text,
                "retrieved": retrieved,
                "answer": "" if refused else "According to the policy: …",
                "refused": refused,
                "feedback": {"thumb": thumb} if rng.random() < 0.4 else None,
                "system_version": "northwind-rag-1.4" if moment < halfway else "northwind-rag-1.5",
            }
        )
    result = receive_traces(project=project, items=items)
    out.write(
        f"Production traces: {result.intake.stored} new, {result.intake.already_present} kept."
    )
    spec = sampling_services.check_rule(
        filters={"window_days": 7}, strategy="negative_first", size=12, seed=SEED
    )
    rule = sampling_services.save_sampling_rule(
        project=project, user=users["lead"], name="weekly", spec=spec
    )
    if Sample.objects.filter(project=project).exists():
        return
    made = production.draw_and_open(rule=rule, user=users["lead"], end=now)
    if made.pool is None:
        return
    wait(made.pool.job, made.pool.name)
    made.pool.refresh_from_db()
    plan_assignments(pool=made.pool, labellers=[users["labeller1"]], double_share=0.0)
    _label(made.pool, {hint["question"]: hint for hint in hints})
    out.write(f"Production sample {made.question_set.name}: drawn, pooled and labelled.")


def _label(pool, hints: dict) -> None:
    """Grade the sample as a careful labeller would, from the demo's hints: the answering
    document's passages 2 (the whole passage as evidence), the rest 0."""
    now = timezone.now()
    for assignment in Assignment.objects.filter(pool=pool).select_related("question"):
        hint = next((h for q, h in hints.items() if q in assignment.question.text), {})
        answer_doc = hint.get("answer_doc") if hint.get("answerable", True) else None
        candidates = Candidate.objects.filter(pool=pool, question=assignment.question)
        for candidate in candidates.select_related("version__document"):
            good = candidate.version.document.doc_id == answer_doc
            judgement, created = Judgement.objects.get_or_create(
                assignment=assignment, candidate=candidate, defaults={"grade": 2 if good else 0}
            )
            if created and good:
                Span.objects.create(
                    judgement=judgement,
                    version=candidate.version,
                    start=candidate.start,
                    end=candidate.end,
                    quote=candidate.version.text[candidate.start : candidate.end],
                )
        outcome = "answerable" if answer_doc else "unanswerable"
        Verdict.objects.get_or_create(assignment=assignment, defaults={"outcome": outcome})
        assignment.completed_at = now
        assignment.save(update_fields=["completed_at"])
