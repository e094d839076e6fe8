"""How far a judge's grades can be trusted: its agreement with the adjudicated human gold of
the same items, beside the agreement of the two labellers with each other.

Per judge and prompt version, over the candidates of one question set the viewer may see. The
gold of an item is the gold rule's decision (`labelling.services.votes`: a lead's resolution,
the agreed or single vote); items still pending are left out. The agreement figures are the
labellers' own (`labelling.agreement.pairwise_report`): percent agreement, Cohen's kappa
unweighted and quadratic with 95 % bootstrap intervals, the 3×3 confusion (rows: gold,
columns: judge). The judge-only figures (bias, z against the humans, items needed) are
`goldeval.scoring.judges`'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from goldeval.formats.runfiles import Passage
from goldeval.scoring import judges as judge_scoring
from judges.models import AIJudgement, Judge, JudgePrompt, JudgingPass
from judges.services.canaries import CanaryClass, canary_report
from labelling.agreement import pairwise_report
from labelling.models import Provenance, QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1, Decision
from labelling.services.votes import gather_votes

HALF_WIDTH = 0.10
# Until a kappa is known, the items needed are read at this kappa (the best published prompts).
PLANNING_KAPPA = 0.6


@dataclass
class Calibration:
    judge: Judge
    prompt: JudgePrompt | None
    question_set: QuestionSet
    judged: int = 0  # graded by the judge (first pass), on items the viewer may see
    errors: int = 0
    against_gold: dict = field(default_factory=dict)
    humans: dict = field(default_factory=dict)
    bias: judge_scoring.Bias | None = None
    z: float | None = None
    needed: int | None = None  # items for a ±0.10 interval, when the current one is wider
    self_consistency: dict = field(default_factory=dict)
    order: dict = field(default_factory=dict)
    canaries: list[CanaryClass] = field(default_factory=list)
    # System rankings: each retriever's mean nDCG@10 over the pool by gold and by the judge.
    systems: dict[str, tuple[float, float]] = field(default_factory=dict)
    kendall_tau: float | None = None
    tau_ap: float | None = None
    gold: dict[int, int] = field(default_factory=dict)  # candidate pk -> the gold's grade

    @property
    def unfit(self) -> bool:
        """A canary class failed: this prompt version can be gamed."""
        return any(c.failed for c in self.canaries)

    def as_dict(self) -> dict:
        return {
            "judge": self.judge.name,
            "model": self.judge.model,
            "prompt_version": self.prompt.version if self.prompt else None,
            "guideline_version": self.prompt.guideline.version
            if self.prompt and self.prompt.guideline_id
            else None,
            "question_set": self.question_set.name,
            "judged": self.judged,
            "errors": self.errors,
            "against_gold": self.against_gold,
            "humans": self.humans,
            "bias": None
            if self.bias is None
            else {
                "above": self.bias.above,
                "below": self.bias.below,
                "mean_step": self.bias.mean_step,
                "items": self.bias.items,
            },
            "z_against_humans": self.z,
            "items_needed_for_0_10": self.needed,
            "self_consistency": self.self_consistency,
            "order_sensitivity": self.order,
            "canaries": {
                c.kind: {
                    "items": c.items,
                    "passed": c.passed,
                    "errors": c.errors,
                    "pass_rate": c.rate,
                    "failed": c.failed,
                }
                for c in self.canaries
            },
            "unfit": self.unfit,
            "systems": {
                name: {"ndcg@10_gold": gold, "ndcg@10_judge": judge}
                for name, (gold, judge) in self.systems.items()
            },
            "kendall_tau": self.kendall_tau,
            "tau_ap": self.tau_ap,
        }


def calibrate(
    *,
    judge: Judge,
    question_set: QuestionSet,
    viewer,
    prompt: JudgePrompt | None = None,
    n_boot: int = 1000,
) -> Calibration:
    prompt = prompt or judge.prompt
    result = Calibration(judge=judge, prompt=prompt, question_set=question_set)
    rows = AIJudgement.objects.filter(prompt=prompt, candidate__pool__question_set=question_set)
    if viewer is not None:  # None: a command, run by whoever runs the server
        rows = rows.not_hidden_from(viewer)
    grades: dict[str, dict[int, int]] = {p: {} for p in JudgingPass.values}
    for candidate_id, judging_pass, grade in rows.values_list(
        "candidate_id", "judging_pass", "grade"
    ):
        if grade is None:
            if judging_pass == JudgingPass.FIRST:
                result.errors += 1
        else:
            grades[judging_pass][candidate_id] = grade
    first = grades[JudgingPass.FIRST]
    result.judged = len(first)
    gold_pairs, human_pairs = [], []
    both: dict[int, tuple[int, int]] = {}  # candidate pk -> (gold, judge)
    for question in gather_votes(question_set=question_set, viewer=viewer, machine=False):
        for item in question.items:
            votes = item.votes
            if len(votes) == 2:
                human_pairs.append((votes[0].grade, votes[1].grade))
            if item.candidate.pk not in first:
                continue
            decision = item.decide(min_span_f1=DEFAULT_MIN_SPAN_F1)
            if isinstance(decision, Decision):
                gold_pairs.append((decision.grade, first[item.candidate.pk]))
                both[item.candidate.pk] = (decision.grade, first[item.candidate.pk])
    result.against_gold = pairwise_report(gold_pairs, n_boot=n_boot)
    result.humans = pairwise_report(human_pairs, n_boot=n_boot)
    result.bias = judge_scoring.bias(gold_pairs)
    result.z = judge_scoring.kappa_z(_kappa(result.against_gold), _kappa(result.humans))
    result.needed = _needed(result.against_gold)
    for name, other in ((JudgingPass.AGAIN, "self_consistency"), (JudgingPass.REVERSED, "order")):
        pairs = [(first[pk], grade) for pk, grade in grades[name].items() if pk in first]
        if pairs:
            setattr(result, other, pairwise_report(pairs, n_boot=n_boot))
    result.gold = {pk: grades[0] for pk, grades in both.items()}
    _rank_systems(result, both)
    if prompt is not None:
        result.canaries = canary_report(prompt=prompt, question_set=question_set, viewer=viewer)
    return result


def _kappa(report: dict) -> tuple:
    interval = report.get("kappa_ci") or (None, None)
    return (report.get("kappa"), *interval)


def _needed(report: dict) -> int | None:
    """Items for a ±0.10 interval around the judge's kappa, or None once there are that many
    and the bootstrap interval is that narrow."""
    kappa = report.get("kappa")
    needed = judge_scoring.items_needed(
        PLANNING_KAPPA if kappa is None else kappa, chance=_chance(report.get("confusion"))
    )
    interval = report.get("kappa_ci")
    narrow = bool(interval) and (interval[1] - interval[0]) / 2 <= HALF_WIDTH
    return None if narrow and report.get("items", 0) >= needed else needed


def _chance(confusion) -> float:
    """Chance agreement p_e from a confusion matrix's marginals (0.5 without items)."""
    if not confusion:
        return 0.5
    total = sum(map(sum, confusion))
    if not total:
        return 0.5
    rows = [sum(row) / total for row in confusion]
    columns = [sum(column) / total for column in zip(*confusion, strict=True)]
    chance = sum(r * c for r, c in zip(rows, columns, strict=True))
    return min(chance, 0.95)


def _rank_systems(result: Calibration, both: dict[int, tuple[int, int]]) -> None:
    """How the pool's retrievers rank by the gold and by the judge, on the items both graded
    (each retriever's ranking of those candidates, by its provenance)."""
    rows = (
        Provenance.objects.filter(candidate_id__in=both)
        .select_related("retriever", "candidate__version__document")
        .order_by("retriever__name", "candidate__pool_id", "candidate__question_id", "rank")
    )
    rankings: dict[str, dict[str, list[Passage]]] = {}
    gold: dict[str, dict[Passage, int]] = {}
    judge: dict[str, dict[Passage, int]] = {}
    for row in rows:
        candidate = row.candidate
        key = f"{candidate.pool_id}:{candidate.question_id}"
        passage = Passage(candidate.version.document.doc_id, candidate.start, candidate.end)
        rankings.setdefault(row.retriever.name, {}).setdefault(key, []).append(passage)
        gold.setdefault(key, {})[passage], judge.setdefault(key, {})[passage] = both[candidate.pk]
    if len(rankings) < 2:
        return
    by_gold = judge_scoring.system_scores(rankings, gold)
    by_judge = judge_scoring.system_scores(rankings, judge)
    result.systems = {name: (by_gold[name], by_judge[name]) for name in rankings}
    result.kendall_tau = judge_scoring.kendall_tau(by_gold, by_judge)
    result.tau_ap = judge_scoring.tau_ap(by_gold, by_judge)
