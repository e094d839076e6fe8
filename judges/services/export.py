"""A question set's AI judgements as the bundle's ``ai-judgements.jsonl`` carries them
(`goldeval.formats.ai_judgements`): votes beside the gold, never in it.

Per candidate of the set's included questions (`judges.services.judging.set_candidates`) and
judge, the newest judgement that has a grade: the newest prompt version's, then the latest
judged; errors are left out. One passage pooled twice (two pools of the set) keeps the newest
grade once, as the file allows one grade per judge and passage. Who may download the bundle is
the gold set's rule: every document named here counts among the bundle's documents
(`evaluation.services.gold_sets`), so a downloader from whom one is hidden gets no bundle.
"""

from __future__ import annotations

from collections.abc import Collection

from goldeval.formats.ai_judgements import AIJudgement
from goldeval.formats.runfiles import Passage
from judges.models import AIJudgement as AIJudgementRow
from judges.services.judging import set_candidates
from labelling.models import QuestionSet


def bundle_ai_judgements(
    question_set: QuestionSet, *, question_ids: Collection[str]
) -> list[AIJudgement]:
    """The set's newest graded AI judgement per candidate and judge, of the questions
    ``question_ids`` (the gold set's), ordered by question, document, offsets, judge."""
    rows = (
        AIJudgementRow.objects.graded()
        .filter(candidate__in=set_candidates(question_set))
        .order_by("-prompt__version", "-judged_at", "-pk")
        .values_list(
            "candidate__question__external_id",
            "candidate__version__document__doc_id",
            "candidate__version__version",
            "candidate__start",
            "candidate__end",
            "grade",
            "judge__name",
            "model",
            "prompt__version",
        )
    )
    wanted = set(question_ids)
    kept: dict[tuple, AIJudgement] = {}
    for question_id, doc_id, version, start, end, grade, judge, model, prompt in rows.iterator():
        if question_id not in wanted:
            continue
        passage = Passage(doc_id, start, end)
        kept.setdefault(
            (judge, question_id, passage),
            AIJudgement(
                question_id=question_id,
                passage=passage,
                grade=grade,
                judge=judge,
                model=model,
                prompt_version=prompt,
                version=version,
            ),
        )
    return sorted(
        kept.values(),
        key=lambda j: (j.question_id, j.passage.doc_id, j.passage.start, j.passage.end, j.judge),
    )
