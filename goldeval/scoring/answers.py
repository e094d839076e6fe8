"""Answer scores: faithfulness, citations, correctness, refusals and where the evidence sat.

Django-free (``python -m goldeval answers`` runs them in a team's CI) and model-free: the
automatic scores need only the gold set, the human-graded ones the adjudicated grades of
``answers-gold.jsonl`` (`goldeval.formats.answer_gold`). Each score is reported on its own, never
folded into one number. Definitions (DESIGN.md §3, docs/design.md "Answer scores"):

- ``faithfulness`` (Ragas, Es et al. 2024): per answer, claims fully supported by the context
  sent / claims; a partly supported claim is not supported. ``faithfulness_graded`` (Goldset's
  own, named apart) gives a partly supported claim half credit: (full + 0.5 × partial) / claims.
  Each is the mean over answers with claims; an answer without claims is counted apart (Ragas
  gives NaN), never averaged.
- ``citation_recall`` / ``citation_precision`` (ALCE, Gao et al. 2023, ``compute_autoais``, with
  the human grades 2/1/0 in place of the NLI model): a claim counts for recall when its
  citations together support it. A citation counts for precision when they do and it is not
  irrelevant: ALCE calls it irrelevant when it does not support the claim alone and the claim's
  other citations still support it without it (`GradedClaim.supported_by`). A claim with one
  citation: it counts when it supports the claim. Per answer: recall = supported claims /
  claims, precision = precise citations / citations; an answer without citations scores 0 on
  both.
- ``gold_citation_precision``, with no human review: per answer, citations whose passage reaches
  a gold span (grade >= 1) of the question / citations (0 without citations). The reach rule is
  the retrieval metrics' (`goldeval.scoring.metrics.passages_reaching_gold`).
- correctness as the TREC 2024 RAG nugget scorer computes it (Pradeep et al. 2024; the
  nuggetizer's ``calculate_nugget_scores``): a fact present counts 1, partly present 0.5 (0 in
  the strict scores), absent 0. ``correctness`` (All) = sum / reference facts;
  ``correctness_vital`` (Vital) over the vital facts; ``correctness_strict`` (Strict All) and
  ``correctness_strict_vital`` (Strict Vital) count present facts only. A question with facts
  but no vital one scores 0 on the vital scores, as the scorer counts it; a question without
  reference facts has no correctness (None: no reference answer was written). A refused answer
  contains no fact: it scores 0 without a grade.
- refusals: ``refusal_recall`` = refused unanswerable / unanswerable; ``over_refusal`` = refused
  answerable / answerable; ``refusal_precision`` = refused unanswerable / refused; and the
  over-refusal of answerable questions whose gold evidence was in the context sent
  (``over_refusal_evidence_in_context``: a generation problem) and of those whose was not
  (``over_refusal_evidence_not_in_context``: a retrieval miss).
- ``evidence_position`` (Liu et al. 2023, "lost in the middle"): the 1-based rank in the context
  of the first passage reaching gold; its mean, and the share of questions where it sits in the
  first and in the last third of the context (rank r of n: first when r - 1 < n / 3, last when
  n - r < n / 3, so a one-passage context is both).

Which answers each mean covers: faithfulness and the citation scores cover answers to
answerable questions that were not refused (a refusal is scored by the refusal scores, not
punished twice). A question missing from the run counts as ``evaluate`` counts it: it scores 0
on the citation scores and correctness, and it did not refuse, so it stays in the refusal
shares' denominators (refusal recall = refused unanswerable / every unanswerable question of the
gold set, as ``evaluate``'s refusal accuracy). The report lists the missing questions.
Unanswerable questions only enter the refusal scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from goldeval.formats.answer_gold import PRESENCE, SUPPORT, AnswerGold, GradedClaim, ReferenceFact
from goldeval.formats.answers import Answer
from goldeval.formats.gold import Gold, GoldQuestion
from goldeval.formats.runfiles import Passage
from goldeval.scoring.compare import PERMUTATIONS, Comparison, paired_randomization_p_values
from goldeval.scoring.metrics import passages_reaching_gold

# numpy is imported where it is used, not here: a CLI run that scores one run never needs it,
# and importing it is a tenth of a million-line evaluation's whole process (issue 37).
if TYPE_CHECKING:
    pass


HUMAN_SCORES = (
    "faithfulness",
    "faithfulness_graded",
    "citation_precision",
    "citation_recall",
    "correctness",
    "correctness_vital",
    "correctness_strict",
    "correctness_strict_vital",
)
# Which definitions the scores follow; a stored report of other definitions is stale (2: issue
# 34's Ragas faithfulness, ALCE precision, TREC 2024 RAG nugget scores, missing = not refused).
DEFINITIONS = 2
# How a question missing from an answer run counts: the same rule as ``evaluate``'s.
MISSING_RULE = (
    "a question missing from the run scores 0 on the citation scores and correctness and "
    "counts as not refused in the refusal scores, as in python -m goldeval evaluate"
)
AUTOMATIC_SCORES = (
    "gold_citation_precision",
    "refusal_recall",
    "over_refusal",
    "refusal_precision",
    "over_refusal_evidence_in_context",
    "over_refusal_evidence_not_in_context",
    "evidence_in_context",
    "evidence_mean_rank",
    "evidence_first_third",
    "evidence_last_third",
)
SCORE_NAMES = HUMAN_SCORES + AUTOMATIC_SCORES
# Scores where a higher value is better, so a --fail-under bar means something.
BARRED_SCORES = (
    *HUMAN_SCORES,
    "gold_citation_precision",
    "refusal_recall",
    "refusal_precision",
    "evidence_in_context",
)
# Per-question values the paired randomization test compares.
COMPARED_SCORES = (*HUMAN_SCORES, "gold_citation_precision", "refusal_recall", "over_refusal")


# --- each score on its own ----------------------------------------------------------------------


def faithfulness(claims: Sequence[GradedClaim]) -> float | None:
    """Ragas: fully supported claims / claims (a partly supported claim is not supported);
    None for an answer without claims."""
    if not claims:
        return None
    return sum(claim.support == "full" for claim in claims) / len(claims)


def faithfulness_graded(claims: Sequence[GradedClaim]) -> float | None:
    """(full + 0.5 × partial) / claims; None for an answer without claims."""
    if not claims:
        return None
    return sum(SUPPORT[claim.support] for claim in claims) / len(claims)


def precise_citations(claim: GradedClaim) -> int:
    """ALCE's precision rule (``compute_autoais``): nothing counts unless the citations together
    support the claim. With one citation, it counts. With several, each counts unless it is
    irrelevant: it does not support the claim alone (grade < 2) and the other citations still
    support the claim without it."""
    if not claim.cited_support:
        return 0
    if len(claim.citations) == 1:
        return 1
    every = frozenset(range(len(claim.citations)))
    return sum(
        1
        for i, citation in enumerate(claim.citations)
        if citation.grade == 2 or not claim.supported_by(every - {i})
    )


def citation_scores(claims: Sequence[GradedClaim]) -> tuple[float, float]:
    """(precision, recall) of one answer; both 0 when it cites nothing."""
    citations = sum(len(claim.citations) for claim in claims)
    if not claims or citations == 0:
        return 0.0, 0.0
    precision = sum(precise_citations(claim) for claim in claims) / citations
    recall = sum(1 for claim in claims if claim.cited_support) / len(claims)
    return precision, recall


def gold_citation_precision(
    citations: Sequence[Passage], question: GoldQuestion, *, min_overlap: int = 1
) -> float:
    """Citations reaching a gold span (grade >= 1) of the question / citations; 0 without
    citations."""
    if not citations:
        return 0.0
    reached = passages_reaching_gold(question, citations, min_overlap=min_overlap)
    return sum(reached) / len(citations)


@dataclass(frozen=True, slots=True)
class Correctness:
    correctness: float | None  # All
    vital: float | None  # Vital: 0 when the question has no vital fact, as the scorer
    strict: float | None  # Strict All
    strict_vital: float | None  # Strict Vital


def correctness(facts: Sequence[ReferenceFact], present: Mapping[str, str]) -> Correctness:
    """The TREC 2024 RAG nugget scores of one answer. ``present`` maps fact ids to
    "yes"/"partly"/"no"; a fact without a grade is absent. None when there are no reference
    facts; a score over no vital fact is 0 (the scorer's ``if vital_nuggets else 0.0``)."""
    if not facts:
        return Correctness(None, None, None, None)

    def score(chosen: Sequence[ReferenceFact], *, strict: bool) -> float:
        if not chosen:
            return 0.0
        values = [PRESENCE.get(present.get(fact.fact_id, "no"), 0.0) for fact in chosen]
        if strict:
            values = [1.0 if value == 1.0 else 0.0 for value in values]
        return sum(values) / len(chosen)

    vital = [fact for fact in facts if fact.vital]
    return Correctness(
        score(facts, strict=False),
        score(vital, strict=False),
        score(facts, strict=True),
        score(vital, strict=True),
    )


def evidence_rank(
    context: Sequence[Passage], question: GoldQuestion, *, min_overlap: int = 1
) -> int | None:
    """1-based rank of the first context passage reaching a gold span; None when none does."""
    if not context:
        return None
    reached = passages_reaching_gold(question, context, min_overlap=min_overlap)
    return next((rank for rank, hit in enumerate(reached, start=1) if hit), None)


def position_thirds(rank: int, passages: int) -> tuple[bool, bool]:
    """Whether rank ``rank`` of ``passages`` lies in the first third, and in the last."""
    return rank - 1 < passages / 3, passages - rank < passages / 3


@dataclass(frozen=True, slots=True)
class RefusalOutcome:
    answerable: bool
    refused: bool
    evidence_in_context: bool = False  # answerable questions only


def refusal_scores(outcomes: Iterable[RefusalOutcome]) -> dict[str, float | None]:
    """The refusal shares over the gold set's questions (a question missing from the run is an
    outcome that did not refuse, with no evidence in a context it never had)."""
    outcomes = list(outcomes)
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    refused = [o for o in outcomes if o.refused]
    with_evidence = [o for o in answerable if o.evidence_in_context]
    without_evidence = [o for o in answerable if not o.evidence_in_context]

    def share(chosen: list[RefusalOutcome]) -> float | None:
        return sum(o.refused for o in chosen) / len(chosen) if chosen else None

    return {
        "refusal_recall": share(unanswerable),
        "over_refusal": share(answerable),
        "refusal_precision": (
            sum(not o.answerable for o in refused) / len(refused) if refused else None
        ),
        "over_refusal_evidence_in_context": share(with_evidence),
        "over_refusal_evidence_not_in_context": share(without_evidence),
    }


# --- a whole run --------------------------------------------------------------------------------


@dataclass(slots=True)
class AnswerEvaluation:
    name: str
    scores: dict[str, float | None]
    counts: dict[str, int]
    # Each question's values (None: not defined for it), for the drill-down and comparisons.
    per_question: dict[str, dict[str, float | None]] = field(default_factory=dict)
    human_graded: bool = False  # judgements were given
    missing_questions: list[str] = field(default_factory=list)  # gold questions the run lacks

    @property
    def coverage(self) -> float | None:
        """Share of the answers needing human grades that have them."""
        to_grade = self.counts["to_grade"]
        return self.counts["graded"] / to_grade if to_grade else None


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def evaluate_answers(
    *,
    gold: Gold,
    answers: Mapping[str, Answer],
    name: str,
    answer_gold: AnswerGold | None = None,
    min_overlap: int = 1,
) -> AnswerEvaluation:
    """Every answer score of one run. Answers to questions the gold set lacks are ignored (the
    reader's `check_answers` reports them)."""
    counts = dict.fromkeys(
        (
            "questions",
            "answerable",
            "unanswerable",
            "answers",
            "missing",
            "refused",
            "claims",
            "citations",
            "answers_without_claims",
            "to_grade",
            "graded",
            "with_context",
            "evidence_in_context",
        ),
        0,
    )
    per_question: dict[str, dict[str, float | None]] = {}
    missing: list[str] = []
    outcomes: list[RefusalOutcome] = []
    positions: list[tuple[int, int]] = []  # (rank of the first gold passage, context length)
    references = answer_gold.references if answer_gold is not None else {}
    for question_id, question in gold.questions.items():
        counts["questions"] += 1
        answer = answers.get(question_id)
        values: dict[str, float | None] = {}
        per_question[question_id] = values
        if not question.answerable:
            counts["unanswerable"] += 1
            if answer is None:
                counts["missing"] += 1
                missing.append(question_id)
                values["refusal_recall"] = 0.0
                outcomes.append(RefusalOutcome(answerable=False, refused=False))
                continue
            counts["answers"] += 1
            counts["refused"] += answer.refused
            values["refused"] = float(answer.refused)
            values["refusal_recall"] = float(answer.refused)
            outcomes.append(RefusalOutcome(answerable=False, refused=answer.refused))
            continue
        counts["answerable"] += 1
        facts = references.get(question_id, ())
        if answer is None:
            counts["missing"] += 1
            missing.append(question_id)
            values["gold_citation_precision"] = 0.0
            values["over_refusal"] = 0.0
            outcomes.append(RefusalOutcome(answerable=True, refused=False))
            if answer_gold is not None:
                values["citation_precision"] = values["citation_recall"] = 0.0
                _put_correctness(values, correctness(facts, {}))
            continue
        counts["answers"] += 1
        rank = evidence_rank(answer.context, question, min_overlap=min_overlap)
        if answer.context:
            counts["with_context"] += 1
            if rank is not None:
                counts["evidence_in_context"] += 1
                positions.append((rank, len(answer.context)))
        values["refused"] = float(answer.refused)
        values["over_refusal"] = float(answer.refused)
        values["evidence_rank"] = None if rank is None else float(rank)
        outcomes.append(
            RefusalOutcome(
                answerable=True, refused=answer.refused, evidence_in_context=rank is not None
            )
        )
        if answer.refused:
            counts["refused"] += 1
            if answer_gold is not None:
                _put_correctness(values, correctness(facts, {}))
            continue
        citations = [c for sentence in answer.sentences for c in sentence.citations]
        counts["citations"] += len(citations)
        values["gold_citation_precision"] = gold_citation_precision(
            citations, question, min_overlap=min_overlap
        )
        if answer_gold is None:
            continue
        counts["to_grade"] += 1
        grades = answer_gold.grades_for(question_id, answer.key())
        if grades is None:
            continue
        counts["graded"] += 1
        counts["claims"] += len(grades.claims)
        values["faithfulness"] = faithfulness(grades.claims)
        values["faithfulness_graded"] = faithfulness_graded(grades.claims)
        if values["faithfulness"] is None:
            counts["answers_without_claims"] += 1
        values["citation_precision"], values["citation_recall"] = citation_scores(grades.claims)
        _put_correctness(values, correctness(facts, grades.facts))

    scores: dict[str, float | None] = {
        name: _mean(values.get(name) for values in per_question.values())
        for name in (*HUMAN_SCORES, "gold_citation_precision")
    }
    if answer_gold is None or not counts["graded"]:
        # Without a single graded answer, the zeros of missing and refused answers alone would
        # read as a measured score: the human-graded scores are not given at all.
        for name in HUMAN_SCORES:
            scores[name] = None
    scores.update(refusal_scores(outcomes))
    scores["evidence_in_context"] = (
        counts["evidence_in_context"] / counts["with_context"] if counts["with_context"] else None
    )
    thirds = [position_thirds(rank, length) for rank, length in positions]
    scores["evidence_mean_rank"] = _mean(float(rank) for rank, _ in positions)
    scores["evidence_first_third"] = _mean(float(first) for first, _ in thirds)
    scores["evidence_last_third"] = _mean(float(last) for _, last in thirds)
    return AnswerEvaluation(
        name=name,
        scores={name: scores[name] for name in SCORE_NAMES},
        counts=counts,
        per_question=per_question,
        human_graded=answer_gold is not None,
        missing_questions=missing,
    )


def _put_correctness(values: dict[str, float | None], result: Correctness) -> None:
    values["correctness"] = result.correctness
    values["correctness_vital"] = result.vital
    values["correctness_strict"] = result.strict
    values["correctness_strict_vital"] = result.strict_vital


def compare_answer_runs(
    evaluations: Mapping[str, AnswerEvaluation],
    *,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> list[Comparison]:
    """The retrieval runs' paired randomization test, per score, over the questions where both
    runs have a value (an answer without claims has no faithfulness to pair)."""
    import numpy as np

    comparisons: list[Comparison] = []
    names = list(evaluations)
    for i, name_a in enumerate(names):
        for name_b in names[i + 1 :]:
            a, b = evaluations[name_a], evaluations[name_b]
            for metric in COMPARED_SCORES:
                pairs = [
                    (values[metric], b.per_question[q][metric])
                    for q, values in a.per_question.items()
                    if values.get(metric) is not None
                    and b.per_question.get(q, {}).get(metric) is not None
                ]
                if not pairs:
                    continue
                differences = np.array([[x - y] for x, y in pairs], dtype=np.float64)
                p_value = paired_randomization_p_values(
                    differences, permutations=permutations, seed=seed
                )[0]
                comparisons.append(
                    Comparison(
                        a=name_a,
                        b=name_b,
                        metric=metric,
                        delta=float(differences.mean()),
                        p_value=float(p_value),
                    )
                )
    return comparisons
