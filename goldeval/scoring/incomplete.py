"""Measures for incomplete judgements: AP, bpref, infAP, condensed lists, unjudged@k and RBP.

A new retriever surfaces passages nobody judged; the plain measures score them as irrelevant, so
a gold set pooled from last quarter's systems quietly punishes this quarter's. These measures
say how much that matters. They walk the same ranking with the same span rule as
`goldeval.scoring.metrics` (its walk is shared, not copied): a passage reaches a span when both
sit in the same document and overlap by ``min_overlap`` characters, each span is credited once,
and a passage is *judged* when it reaches a judged span or a judged candidate.

Every passage of a ranking is one of: a relevant hit (it newly reaches units of grade >= the
threshold), judged non-relevant (judged, no new relevant unit: grade 0, below the threshold, or a
span another passage already reached), or unjudged. A qrels grade below 0 is a passage in the
pool left unjudged (trec_eval's reading; `GoldQuestion.pooled_unjudged`): unjudged, but inside
the pool, which only infAP tells apart.

With R the relevant units of the question (grade >= threshold), each measure walks the whole
ranking (its first ``max_passages`` under trec_eval's -M), not only the top k:

- ap: sum over relevant hits of (units newly reached) x (relevant hits so far / rank), over R
  (trec_eval's map; a passage reaching two relevant spans counts twice, as recall rises twice).
- bpref (Buckley & Voorhees 2004, as trec_eval 10 computes it): each relevant hit adds
  (units) x (1 - min(n, R) / min(N, R)), n the judged non-relevant passages above it, N the
  judged non-relevant items of the question (its judged candidates reaching no relevant span,
  plus spans graded below the threshold outside every judged candidate; never fewer than the
  judged non-relevant passages the ranking holds); the sum over R. Unjudged passages are skipped.
- infap (Yilmaz & Aslam 2006, trec_eval's): at a relevant hit at 0-based rank j > 0 with r
  relevant, m judged non-relevant and u pooled-unjudged passages above it, it adds
  1/(j+1) + j/(j+1) x (r + m + u)/j x (r + e)/(r + m + 2e), e = 0.00001 (1 at j = 0), times its
  units; the sum over R. With every passage judged it equals ap to within about 1e-5.
- condensed measures (Sakai 2007; trec_eval -J): the ranking with its unjudged passages removed,
  scored by the plain metrics: condensed_ndcg@k, condensed_precision@k, condensed_mrr@c,
  condensed_ap.
- unjudged@k: unjudged passages among the first k, divided by k (trec_eval's unj: a ranking
  shorter than k is filled with judged passages).
- rbp_pP (Moffat & Zobel 2008) = (1 - p) x sum of gain x p**(rank - 1); the gain of a hit is its
  grade over the question's highest grade when that is above 1, else its grade, as trec_eval
  (every grade >= 1 gains, whatever the threshold). rbp_residual_pP = p**n + (1 - p) x sum of
  p**(rank - 1) over unjudged passages, n the passages scored: how much RBP could still rise if
  every unjudged passage, and everything past the end, were fully relevant. Under the trec_eval
  conventions it is trec_eval's rbp_resid, which is 0 for a ranking without unjudged passages.

A question without relevant units scores 0 on ap, bpref and infap (as precision does); a
question missing from the run has an empty ranking (rbp 0, residual 1), 0 everywhere under the
trec_eval conventions, as trec_eval -c fills it.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace

from goldeval.formats.gold import Gold, GoldQuestion, Passage
from goldeval.formats.runs import Run

# The plain metrics' own walk and scoring, so the span rule has one home.
from goldeval.scoring.metrics import (
    MetricOptions,
    RunEvaluation,
    _compile,
    _credit,
    _gain_table,
    _score_ranking,
    passages_reaching_gold,
)

RBP_PERSISTENCES = (0.5, 0.8)
# A run with more than this share of unjudged passages in its top UNJUDGED_WARNING_K is warned
# about: its plain figures may be too low, and the condensed ones belong beside them.
UNJUDGED_WARNING = 0.10
UNJUDGED_WARNING_K = 10
# trec_eval's INFAP_EPSILON (trec_eval.h).
INFAP_EPSILON = 0.00001


def rbp_name(persistence: float) -> str:
    return f"rbp_p{persistence:g}"


def rbp_residual_name(persistence: float) -> str:
    return f"rbp_residual_p{persistence:g}"


def incomplete_metric_names(
    options: MetricOptions, *, persistences: Sequence[float] = RBP_PERSISTENCES
) -> list[str]:
    """The names this module adds to a run's figures, in report order."""
    ks = sorted(set(options.ks))
    names = ["ap", "bpref", "infap", "condensed_ap"]
    names += [f"condensed_precision@{k}" for k in ks]
    names += [f"condensed_ndcg@{k}" for k in ks]
    names.append(f"condensed_mrr@{options.mrr_cutoff}")
    names += [f"unjudged@{k}" for k in ks]
    for p in persistences:
        names += [rbp_name(p), rbp_residual_name(p)]
    return names


def unjudged_warning(evaluation: RunEvaluation) -> str | None:
    """A sentence for a run whose mean unjudged@10 is above 10 %, else None (also when the
    measure was not computed)."""
    share = evaluation.metrics.get(f"unjudged@{UNJUDGED_WARNING_K}")
    if share is None or share <= UNJUDGED_WARNING:
        return None
    return (
        f"{share:.1%} of its top {UNJUDGED_WARNING_K} passages were never judged (above "
        f"{UNJUDGED_WARNING:.0%}): its plain figures count them as irrelevant and may be too low; "
        "compare the condensed figures, or pool this run and label again"
    )


def check_persistences(persistences: Sequence[float]) -> None:
    if not persistences or any(not (0 < p < 1) for p in persistences):
        raise ValueError("every RBP persistence must lie strictly between 0 and 1")


def with_incomplete_measures(
    evaluation: RunEvaluation,
    *,
    gold: Gold,
    run: Run,
    options: MetricOptions,
    persistences: Sequence[float] = RBP_PERSISTENCES,
) -> RunEvaluation:
    """``evaluation`` (of ``run`` on ``gold`` with ``options``) with this module's measures
    added to its per-question values and means, over the same questions (its convention)."""
    check_persistences(persistences)
    all_grades = {span.grade for q in gold.questions.values() for span in q.spans if span.grade > 0}
    gains = _gain_table(all_grades, options.gain)
    # Condensed rankings are scored by the plain metrics, whose walk stops at options.depth.
    discounts = [1.0 / math.log2(rank + 2) for rank in range(options.depth)]
    unreachable = {(item.question_id, item.span) for item in gold.unanchored}
    names = incomplete_metric_names(options, persistences=persistences)
    trec_eval = options.compat != "goldset"
    per_question = {}
    for question_id, values in evaluation.per_question.items():
        question = gold.questions[question_id]
        ranking = run.rankings.get(question_id)
        if ranking is None and trec_eval:
            added = dict.fromkeys(names, 0.0)  # trec_eval -c fills a missing question with 0
        else:
            added = score_question(
                question,
                ranking.passages if ranking is not None else [],
                options=options,
                gains=gains,
                discounts=discounts,
                unreachable=unreachable,
                persistences=persistences,
            )
        per_question[question_id] = {**values, **added}
    metrics = dict(evaluation.metrics)
    for name in names:
        column = [v[name] for v in per_question.values()]
        metrics[name] = math.fsum(column) / len(column) if column else None
    return replace(evaluation, metrics=metrics, per_question=per_question)


def score_question(
    question: GoldQuestion,
    passages: Sequence[Passage],
    *,
    options: MetricOptions,
    gains: dict[int, float],
    discounts: list[float],
    unreachable: set,
    persistences: Sequence[float] = RBP_PERSISTENCES,
) -> dict[str, float]:
    """This module's measures of one ranking of one question."""
    compiled = _compile(question, options=options, gains=gains, unreachable=unreachable)
    scored = len(passages)
    if options.max_passages is not None:
        scored = min(scored, options.max_passages)
    hits, judged_ranks, looked_at = _credit(
        compiled.documents,
        compiled.grades,
        passages,
        depth=scored,
        min_overlap=options.min_overlap,
        threshold=options.threshold,
    )
    threshold = options.threshold
    relevant_hits = [(rank, units) for rank, grade, units in hits if grade >= threshold]
    relevant = compiled.relevant
    values: dict[str, float] = {}
    values["ap"] = _average_precision(relevant_hits, relevant)
    values["bpref"] = _bpref(
        relevant_hits,
        judged_ranks,
        relevant=relevant,
        judged_nonrelevant=_judged_nonrelevant(question, options=options),
    )
    values["infap"] = _infap(
        relevant_hits,
        judged_ranks,
        relevant=relevant,
        pooled=_pooled_unjudged_ranks(question, passages, looked_at, judged_ranks),
    )

    # Condensed: the judged passages in their order, scored by the plain metrics.
    condensed = [passages[rank] for rank in judged_ranks]
    plain = _score_ranking(compiled, condensed, options=options, gains=gains, discounts=discounts)
    position = {rank: index for index, rank in enumerate(judged_ranks)}
    values["condensed_ap"] = _average_precision(
        [(position[rank], units) for rank, units in relevant_hits], relevant
    )
    for k in sorted(set(options.ks)):
        values[f"condensed_precision@{k}"] = plain[f"precision@{k}"]
        values[f"condensed_ndcg@{k}"] = plain[f"ndcg@{k}"]
    values[f"condensed_mrr@{options.mrr_cutoff}"] = plain[f"mrr@{options.mrr_cutoff}"]

    for k in sorted(set(options.ks)):
        values[f"unjudged@{k}"] = (min(k, looked_at) - bisect_left(judged_ranks, k)) / k

    hit_grades = {rank: grade for rank, grade, _ in hits}
    top_grade = max((span.grade for span in question.spans), default=0)
    all_judged = len(judged_ranks) == looked_at
    trec_eval = options.compat != "goldset"
    for p in persistences:
        total = math.fsum(
            _rbp_gain(grade, top_grade) * p**rank for rank, grade in hit_grades.items()
        )
        values[rbp_name(p)] = (1 - p) * total
        # p**n + (1 - p) * (sum of p**rank over the unjudged ranks) is, since the sum over every
        # rank below n is (1 - p**n) / (1 - p), 1 - (1 - p) * (the sum over the judged ranks):
        # a walk over the few judged ranks instead of every passage.
        residual = 1.0 - (1 - p) * math.fsum(p**rank for rank in judged_ranks)
        values[rbp_residual_name(p)] = 0.0 if trec_eval and all_judged else residual
    return values


def _rbp_gain(grade: int, top_grade: int) -> float:
    """trec_eval's RBP gain: the grade, scaled to [0, 1] by the question's top grade."""
    return grade / top_grade if top_grade > 1 else float(grade)


def _average_precision(relevant_hits: list[tuple[int, int]], relevant: int) -> float:
    if not relevant:
        return 0.0
    total = 0.0
    for found, (rank, units) in enumerate(relevant_hits, start=1):
        total += units * found / (rank + 1)
    return total / relevant


def _bpref(
    relevant_hits: list[tuple[int, int]],
    judged_ranks: list[int],
    *,
    relevant: int,
    judged_nonrelevant: int,
) -> float:
    if not relevant:
        return 0.0
    units_at = dict(relevant_hits)
    nonrelevant_in_ranking = len(judged_ranks) - len(units_at)
    divisor = min(max(judged_nonrelevant, nonrelevant_in_ranking), relevant)
    total = 0.0
    nonrelevant_so_far = 0
    for rank in judged_ranks:
        units = units_at.get(rank)
        if units is None:
            nonrelevant_so_far += 1
        elif nonrelevant_so_far:
            total += units * (1.0 - min(nonrelevant_so_far, relevant) / divisor)
        else:
            total += units
    return total / relevant


def _infap(
    relevant_hits: list[tuple[int, int]],
    judged_ranks: list[int],
    *,
    relevant: int,
    pooled: list[int],
) -> float:
    if not relevant:
        return 0.0
    total = 0.0
    judged_before = 0  # index into judged_ranks
    pooled_before = 0  # index into pooled
    for found, (rank, units) in enumerate(relevant_hits):
        if rank == 0:
            total += units
            continue
        judged_before = bisect_left(judged_ranks, rank, lo=judged_before)
        pooled_before = bisect_left(pooled, rank, lo=pooled_before)
        relevant_before = found
        nonrelevant_before = judged_before - relevant_before
        j = float(rank)
        in_pool = (relevant_before + nonrelevant_before + pooled_before) / j
        precision = (relevant_before + INFAP_EPSILON) / (
            relevant_before + nonrelevant_before + 2 * INFAP_EPSILON
        )
        total += units * (1.0 / (j + 1.0) + (j / (j + 1.0)) * in_pool * precision)
    return total / relevant


def _pooled_unjudged_ranks(
    question: GoldQuestion, passages: Sequence[Passage], looked_at: int, judged_ranks: list[int]
) -> list[int]:
    """Ranks of unjudged passages that a qrels file put in the pool (grade below 0)."""
    if not question.pooled_unjudged:
        return []
    pooled = {doc_id for doc_id, _, _ in question.pooled_unjudged}
    judged = set(judged_ranks)
    return [
        rank
        for rank in range(looked_at)
        if rank not in judged and passages[rank][0] in pooled  # doc-level: whole documents
    ]


def _judged_nonrelevant(question: GoldQuestion, *, options: MetricOptions) -> int:
    """N of bpref: the question's judged items that are not relevant at the threshold."""
    threshold = options.threshold
    if all(span.start is None for span in question.spans) and all(
        start is None for _, start, _ in question.judged
    ):
        # Document level (qrels): the same rule, without an overlap search.
        relevant = {span.doc_id for span in question.spans if span.grade >= threshold}
        judged_docs = {doc_id for doc_id, _, _ in question.judged}
        below = {s.doc_id for s in question.spans if s.grade < threshold} - judged_docs
        return len(judged_docs - relevant) + len(below)
    at_threshold = GoldQuestion(
        question_id=question.question_id,
        question=question.question,
        answerable=question.answerable,
        spans=tuple(span for span in question.spans if span.grade >= options.threshold),
    )
    reaching = passages_reaching_gold(
        at_threshold, question.judged, min_overlap=options.min_overlap
    )
    count = reaching.count(False)
    judged_by_document: dict[str, list[tuple[int | None, int | None]]] = {}
    for doc_id, start, end in question.judged:
        judged_by_document.setdefault(doc_id, []).append((start, end))
    for span in question.spans:
        if span.grade >= options.threshold:
            continue
        covers = judged_by_document.get(span.doc_id, [])
        if not any(_covers(start, end, span.start, span.end) for start, end in covers):
            count += 1
    return count


def _covers(start: int | None, end: int | None, span_start: int | None, span_end: int | None):
    """Whether a judged passage holds a span (a whole-document passage holds every span)."""
    if start is None:
        return True
    if span_start is None:
        return False
    return start <= span_start and span_end <= end
