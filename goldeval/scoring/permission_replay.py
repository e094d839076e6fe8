"""Permission replays: the questions run as each test user, every result checked against the
documents' access groups as of a recorded snapshot.

Django-free, so the app's Permissions page and ``python -m goldeval permissions`` in a team's
CI compute the same figures from the same inputs: a snapshot (doc id -> access groups, canary
flag), test users (name -> groups, or unrestricted), one run per user, and optionally the gold
set for the recall figures.

A user may see a document without access groups, or one sharing at least one group with them;
an unrestricted user (an admin, ``"*"`` in acl.json) sees everything. Figures (DESIGN.md §3):

- a **finding** is a result, at any rank, from a document the user may not see; ``leak@k`` is
  the share of the user's questions with a finding in the top k; the **leak rate** the share of
  all results returned to them that are findings; the **first leaked rank** the best rank of any
  finding. A finding on a canary (a planted document) is counted apart as well.
- **over-restriction**: a gold span of a document the user may see that the reference run (the
  unrestricted user's) reaches in its top k while the user's run does not;
  ``visible_recall@k`` is span-based recall against the gold restricted to what the user may
  see (`goldeval.scoring.metrics`: the same reach rule, each span credited once).
- **side channels**: for each restricted document in an insider's top k (a user who may see
  it, the reference first) and each outsider (who may not) asked the same question, the two
  result counts and score distributions. An outsider list shorter than a full insider list
  (as many results as the depth looked at) by exactly the hidden documents is the mark of
  filtering after the top k: the missing slots tell the outsider a hidden match exists.
  Different scores for the same passage in the two lists mean scoring depends on what else
  the user may see.
- results naming documents the snapshot does not hold cannot be checked and are listed apart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any

from goldeval.formats.gold import EvaluationInputError, Gold, GoldQuestion
from goldeval.formats.runfiles import Passage, read_run_file
from goldeval.formats.runs import Ranking, Run
from goldeval.formats.textfiles import NotUTF8Error, decode_utf8
from goldeval.scoring.metrics import MetricOptions, evaluate_run, first_reaching_ranks
from goldeval.scoring.report import markdown_cell

UNRESTRICTED = "*"
DEFAULT_KS = (1, 3, 5, 10)
SCORE_TOLERANCE = 1e-6


class PermissionInputError(EvaluationInputError):
    """An acl.json or per-user run that cannot be used."""


@dataclass(frozen=True)
class TestUser:
    __test__ = False  # a test user of the replay, not a pytest class

    name: str
    groups: frozenset[str] = frozenset()
    unrestricted: bool = False

    def may_see(self, access: DocumentAccess) -> bool:
        return self.unrestricted or not access.groups or bool(access.groups & self.groups)


@dataclass(frozen=True)
class DocumentAccess:
    groups: frozenset[str] = frozenset()
    canary: bool = False


@dataclass
class AccessSnapshot:
    """Each document's access groups when the snapshot was taken, and where it came from."""

    documents: dict[str, DocumentAccess]
    source: str = ""

    @classmethod
    def from_gold(cls, gold: Gold) -> AccessSnapshot:
        if not gold.corpus:
            raise PermissionInputError(
                "the gold set carries no corpus.jsonl, so no document's access groups are "
                "known: give an exported bundle folder",
                path=gold.source,
            )
        manifest = gold.manifest or {}
        fingerprint = str((manifest.get("corpus") or {}).get("fingerprint", ""))[:12]
        created = manifest.get("created_at", "")
        return cls(
            documents={
                doc_id: DocumentAccess(frozenset(document.access_groups), document.canary)
                for doc_id, document in gold.corpus.items()
            },
            source=f"the bundle's corpus.jsonl (fingerprint {fingerprint or 'unknown'}, "
            f"finalised {created or 'at an unknown time'})",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "documents": {
                doc_id: {"groups": sorted(a.groups), "canary": a.canary}
                for doc_id, a in sorted(self.documents.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AccessSnapshot:
        return cls(
            documents={
                doc_id: DocumentAccess(frozenset(item.get("groups", ())), bool(item.get("canary")))
                for doc_id, item in (data.get("documents") or {}).items()
            },
            source=str(data.get("source", "")),
        )

    def groups(self) -> set[str]:
        return {group for access in self.documents.values() for group in access.groups}


@dataclass(frozen=True)
class Result:
    doc_id: str
    start: int | None = None
    end: int | None = None
    score: float | None = None


UserRun = dict[str, list[Result]]  # question id -> ranked results


# --- reading inputs -----------------------------------------------------------------------------


def read_acl(data: bytes | str, *, source: Path | str | None = None) -> dict[str, TestUser]:
    """acl.json: ``{"alice": ["hr", "legal"], "bob": [], "admin": "*"}``."""
    path = Path(source) if source is not None else None
    try:
        loaded = json.loads(decode_utf8(data) if isinstance(data, bytes) else data)
    except NotUTF8Error as error:
        raise PermissionInputError(str(error), path=path) from None
    except json.JSONDecodeError as error:
        raise PermissionInputError(
            f"not valid JSON (line {error.lineno}: {error.msg})", path=path
        ) from None
    if not isinstance(loaded, dict) or not loaded:
        raise PermissionInputError(
            'expected an object mapping each test user to their groups, like {"alice": ["hr"], '
            '"bob": [], "admin": "*"}',
            path=path,
        )
    users = {}
    for name, groups in loaded.items():
        if not isinstance(name, str) or not name.strip():
            raise PermissionInputError("a test user's name must be a non-empty string", path=path)
        if groups == UNRESTRICTED:
            users[name] = TestUser(name, unrestricted=True)
        elif isinstance(groups, list) and all(isinstance(g, str) and g for g in groups):
            users[name] = TestUser(name, frozenset(groups))
        else:
            raise PermissionInputError(
                f"test user {name!r}: give a list of access group names (an empty list for a "
                f"user in no group) or {UNRESTRICTED!r} for one who sees everything, not "
                f"{json.dumps(groups)[:60]}",
                path=path,
            )
    return users


def read_user_run(data: bytes | str, *, source: Path | str | None = None) -> UserRun:
    """A JSONL or TREC run (the format of `goldeval.formats.runfiles`), scores kept; the first
    problem raises, with its line."""
    path = Path(source) if source is not None else None
    try:
        parsed = read_run_file(data)
    except NotUTF8Error as error:
        raise PermissionInputError(str(error), path=path) from None
    if parsed.problems:
        first = parsed.problems[0]
        raise PermissionInputError(first.message, path=path, line=first.line)
    return {
        question_id: [
            Result(p.doc_id, p.start, p.end, score)
            for p, score in zip(ranking.passages, ranking.scores, strict=True)
        ]
        for question_id, ranking in parsed.rankings.items()
    }


# --- the report ---------------------------------------------------------------------------------


@dataclass
class Finding:
    question_id: str
    user: str
    doc_id: str
    rank: int
    groups: list[str]
    canary: bool = False


@dataclass
class Unchecked:
    question_id: str
    user: str
    doc_id: str
    rank: int


@dataclass
class OverRestriction:
    question_id: str
    user: str
    doc_id: str
    start: int | None
    end: int | None
    grade: int
    reference_rank: int


@dataclass
class SideChannelCase:
    question_id: str
    doc_id: str  # the restricted document that matched
    insider: str
    outsider: str
    insider_count: int
    outsider_count: int
    hidden: int  # documents of the insider's top k the outsider may not see
    insider_scores: dict[str, float | None]
    outsider_scores: dict[str, float | None]
    shared: int  # passages in both lists with a score
    max_score_shift: float | None
    shorter: bool
    post_filter: bool
    score_shift: bool


@dataclass
class UserReport:
    name: str
    groups: list[str]
    unrestricted: bool
    questions: int = 0
    missing: int = 0
    results: int = 0
    leaked_results: int = 0
    leaked_questions: int = 0
    leak_rate: float = 0.0
    leak_at: dict[str, float] = field(default_factory=dict)
    first_leaked_rank: int | None = None
    median_first_leaked_rank: float | None = None
    canary_leaks: int = 0
    unknown_results: int = 0
    visible_questions: int = 0
    visible_recall: dict[str, float | None] = field(default_factory=dict)
    over_restricted: int | None = None


@dataclass
class PermissionReport:
    snapshot: str
    ks: tuple[int, ...]
    reference: str | None
    users: list[UserReport]
    findings: list[Finding] = field(default_factory=list)
    over_restriction: list[OverRestriction] = field(default_factory=list)
    side_channels: list[SideChannelCase] = field(default_factory=list)
    unknown: list[Unchecked] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def leaks(self) -> int:
        return len(self.findings)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ks"] = list(self.ks)
        data["leaks"] = self.leaks
        data["side_channel_summary"] = {
            "cases": len(self.side_channels),
            "shorter": sum(c.shorter for c in self.side_channels),
            "post_filter": sum(c.post_filter for c in self.side_channels),
            "score_shift": sum(c.score_shift for c in self.side_channels),
        }
        return data


def replay_permissions(
    *,
    snapshot: AccessSnapshot,
    users: Sequence[TestUser],
    runs: Mapping[str, UserRun],
    gold: Gold | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    reference: str | None = None,
    min_overlap: int = 1,
    threshold: int = 1,
) -> PermissionReport:
    """Check every user's run against the snapshot (see the module's docstring)."""
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1:
        raise ValueError("every k must be at least 1")
    depth = ks[-1]
    by_name = {user.name: user for user in users}
    missing_runs = [user.name for user in users if user.name not in runs]
    if missing_runs:
        raise ValueError(f"no run for {', '.join(missing_runs)}")
    if reference is not None and reference not in by_name:
        raise ValueError(f"the reference {reference!r} is not one of the test users")
    report = PermissionReport(
        snapshot=snapshot.source,
        ks=ks,
        reference=reference,
        users=[
            UserReport(name=u.name, groups=sorted(u.groups), unrestricted=u.unrestricted)
            for u in users
        ],
    )
    unknown_groups = sorted({g for u in users for g in u.groups} - snapshot.groups())
    for group in unknown_groups:
        report.notes.append(
            f"no document carries the group {group!r} that a test user has: a misspelling?"
        )
    for user_report, user in zip(report.users, users, strict=True):
        _check_user(report, user_report, user, runs[user.name], snapshot, gold, ks, threshold)
    if gold is not None and reference is not None:
        _over_restriction(
            report, by_name, runs, snapshot, gold, reference, depth, min_overlap, threshold
        )
    elif gold is not None:
        report.notes.append(
            "over-restriction needs an unrestricted reference run (a test user who sees "
            "everything); none was given"
        )
    _side_channels(report, users, runs, snapshot, reference, depth)
    report.findings.sort(key=lambda f: (f.question_id, f.user, f.rank))
    return report


def _check_user(report, user_report, user, run, snapshot, gold, ks, threshold) -> None:
    first_ranks = []
    leaked_by_k = dict.fromkeys(ks, 0)
    for question_id, results in run.items():
        user_report.questions += 1
        user_report.results += len(results)
        first = None
        for rank, result in enumerate(results, start=1):
            access = snapshot.documents.get(result.doc_id)
            if access is None:
                user_report.unknown_results += 1
                report.unknown.append(Unchecked(question_id, user.name, result.doc_id, rank))
                continue
            if user.may_see(access):
                continue
            user_report.leaked_results += 1
            user_report.canary_leaks += access.canary
            report.findings.append(
                Finding(
                    question_id,
                    user.name,
                    result.doc_id,
                    rank,
                    sorted(access.groups),
                    access.canary,
                )
            )
            first = rank if first is None else first
        if first is not None:
            user_report.leaked_questions += 1
            first_ranks.append(first)
            for k in ks:
                leaked_by_k[k] += first <= k
    asked = user_report.questions
    user_report.leak_at = {f"leak@{k}": (leaked_by_k[k] / asked if asked else 0.0) for k in ks}
    user_report.leak_rate = (
        user_report.leaked_results / user_report.results if user_report.results else 0.0
    )
    if first_ranks:
        user_report.first_leaked_rank = min(first_ranks)
        user_report.median_first_leaked_rank = float(median(first_ranks))
    if gold is not None:
        user_report.missing = sum(1 for q in gold.questions if q not in run)
        visible = _visible_gold(gold, user, snapshot)
        evaluation = evaluate_run(
            gold=visible,
            run=_as_run(user.name, run),
            options=MetricOptions(ks=ks, threshold=threshold),
        )
        # Questions whose evidence the user may see: hidden evidence leaves recall undefined.
        user_report.visible_questions = evaluation.answerable - evaluation.recall_undefined
        user_report.visible_recall = {
            f"visible_recall@{k}": evaluation.metrics[f"recall@{k}"] for k in ks
        }


def _visible_gold(gold: Gold, user: TestUser, snapshot: AccessSnapshot) -> Gold:
    """The gold set as the user may see it: spans and judged passages of hidden documents go."""

    def visible(doc_id: str) -> bool:
        access = snapshot.documents.get(doc_id)
        return access is None or user.may_see(access)

    questions = {
        question_id: replace(
            question,
            spans=tuple(s for s in question.spans if visible(s.doc_id)),
            judged=tuple(p for p in question.judged if visible(p.doc_id)),
        )
        for question_id, question in gold.questions.items()
    }
    return Gold(
        questions=questions,
        corpus=gold.corpus,
        manifest=gold.manifest,
        unanchored=[u for u in gold.unanchored if visible(u.span.doc_id)],
        source=gold.source,
    )


def _as_run(name: str, run: UserRun) -> Run:
    return Run(
        name=name,
        rankings={
            question_id: Ranking(passages=[Passage(r.doc_id, r.start, r.end) for r in results])
            for question_id, results in run.items()
        },
    )


def _over_restriction(
    report, users, runs, snapshot, gold, reference, depth, min_overlap, threshold
) -> None:
    reference_run = runs[reference]
    unanchored = {(u.question_id, u.span) for u in gold.unanchored}
    counts = dict.fromkeys(users, 0)
    for question_id, question in gold.questions.items():
        if question_id not in reference_run:
            continue
        reference_ranks = _ranks(question, reference_run[question_id], depth, min_overlap)
        for name, user in users.items():
            if name == reference:
                continue
            mine = runs[name].get(question_id, [])
            ranks = _ranks(question, mine, depth, min_overlap)
            for span, found, got in zip(question.spans, reference_ranks, ranks, strict=True):
                if span.grade < threshold or found is None or got is not None:
                    continue
                if (question_id, span) in unanchored:
                    continue
                access = snapshot.documents.get(span.doc_id, DocumentAccess())
                if not user.may_see(access):
                    continue
                counts[name] += 1
                report.over_restriction.append(
                    OverRestriction(
                        question_id, name, span.doc_id, span.start, span.end, span.grade, found
                    )
                )
    for user_report in report.users:
        if user_report.name != reference:
            user_report.over_restricted = counts[user_report.name]


def _ranks(question: GoldQuestion, results: list[Result], depth: int, min_overlap: int):
    passages = [Passage(r.doc_id, r.start, r.end) for r in results]
    return first_reaching_ranks(question, passages, depth=depth, min_overlap=min_overlap)


def _side_channels(report, users, runs, snapshot, reference, depth) -> None:
    ordered = sorted(users, key=lambda u: (u.name != reference, u.name))
    question_ids = sorted({q for run in runs.values() for q in run})
    for question_id in question_ids:
        insiders: dict[str, str] = {}  # restricted doc id -> the insider whose list has it
        for user in ordered:
            for result in runs[user.name].get(question_id, [])[:depth]:
                access = snapshot.documents.get(result.doc_id)
                if access is not None and access.groups and user.may_see(access):
                    insiders.setdefault(result.doc_id, user.name)
        for doc_id, insider_name in sorted(insiders.items()):
            access = snapshot.documents[doc_id]
            insider = runs[insider_name][question_id][:depth]
            for outsider in users:
                if outsider.may_see(access) or question_id not in runs[outsider.name]:
                    continue
                theirs = runs[outsider.name][question_id][:depth]
                report.side_channels.append(
                    _compare(
                        question_id,
                        doc_id,
                        insider_name,
                        insider,
                        outsider,
                        theirs,
                        snapshot,
                        depth,
                    )
                )


def _compare(question_id, doc_id, insider_name, insider, outsider, theirs, snapshot, depth):
    hidden = sum(
        1
        for r in insider
        if (a := snapshot.documents.get(r.doc_id)) is not None and not outsider.may_see(a)
    )
    mine = {(r.doc_id, r.start, r.end): r.score for r in insider if r.score is not None}
    shifts = [
        abs(mine[key] - r.score)
        for r in theirs
        if r.score is not None and (key := (r.doc_id, r.start, r.end)) in mine
    ]
    max_shift = max(shifts) if shifts else None
    scale = max([1.0, *(abs(s) for s in mine.values())])
    shorter = len(theirs) < len(insider)
    return SideChannelCase(
        question_id=question_id,
        doc_id=doc_id,
        insider=insider_name,
        outsider=outsider.name,
        insider_count=len(insider),
        outsider_count=len(theirs),
        hidden=hidden,
        insider_scores=_summary(insider),
        outsider_scores=_summary(theirs),
        shared=len(shifts),
        max_score_shift=max_shift,
        shorter=shorter,
        # Only a full insider list says the outsider's had room: a shorter one may simply
        # mean nothing else matched.
        post_filter=shorter
        and hidden > 0
        and len(insider) == depth
        and len(theirs) == len(insider) - hidden,
        score_shift=max_shift is not None and max_shift > SCORE_TOLERANCE * scale,
    )


def _summary(results: list[Result]) -> dict[str, float | None]:
    scores = [r.score for r in results if r.score is not None and math.isfinite(r.score)]
    if not scores:
        return {"top": None, "mean": None, "lowest": None}
    return {"top": max(scores), "mean": sum(scores) / len(scores), "lowest": min(scores)}


# --- rendering ----------------------------------------------------------------------------------


def render_markdown(report: PermissionReport, *, limit: int = 50) -> str:
    lines = ["# Permission replay", "", f"Access groups as of {report.snapshot}.", ""]
    verdict = (
        f"**{report.leaks} leak{'s' if report.leaks != 1 else ''}**"
        if report.leaks
        else "**No leak**"
    )
    lines += [verdict + f" (reference run: {report.reference or 'none'}).", ""]
    ks = report.ks
    header = ["user", "groups", "questions", "results", "leaked", "leak rate"]
    header += [f"leak@{k}" for k in ks] + ["first leaked rank", "canary leaks", "unchecked"]
    header += [f"visible recall@{k}" for k in ks] + ["over-restricted"]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for u in report.users:
        groups = "everything" if u.unrestricted else (", ".join(u.groups) or "none")
        row = [
            u.name,
            groups,
            str(u.questions),
            str(u.results),
            str(u.leaked_results),
            _number(u.leak_rate),
        ]
        row += [_number(u.leak_at[f"leak@{k}"]) for k in ks]
        row += [str(u.first_leaked_rank or "—"), str(u.canary_leaks), str(u.unknown_results)]
        row += [_number(u.visible_recall.get(f"visible_recall@{k}")) for k in ks]
        row += ["—" if u.over_restricted is None else str(u.over_restricted)]
        lines.append("| " + " | ".join(markdown_cell(cell) for cell in row) + " |")
    sections = [
        ("Leaks", report.findings, _show_finding),
        ("Over-restriction", report.over_restriction, _show_over_restriction),
        (
            "Side channels",
            [c for c in report.side_channels if c.shorter or c.score_shift],
            _show_side_channel,
        ),
        ("Unchecked results (documents the snapshot does not hold)", report.unknown, _show_unknown),
    ]
    for title, items, show in sections:
        if not items:
            continue
        lines += ["", f"## {title} ({len(items)})", ""]
        lines += [show(item) for item in items[:limit]]
        if len(items) > limit:
            lines.append(f"- … {len(items) - limit} more (see --format json)")
    if report.side_channels and not any(c.shorter or c.score_shift for c in report.side_channels):
        lines += ["", f"Side channels: {len(report.side_channels)} comparisons, none suspicious."]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


def _show_finding(f: Finding) -> str:
    canary = " — a canary" if f.canary else ""
    return (
        f"- {f.user} got {_code(f.doc_id)} (groups {', '.join(f.groups)}){canary} at rank "
        f"{f.rank} for question {f.question_id}"
    )


def _show_over_restriction(o: OverRestriction) -> str:
    return (
        f"- {o.user} missed {_code(o.doc_id)} [{o.start}, {o.end}) (grade {o.grade}) for "
        f"question {o.question_id}; the reference found it at rank {o.reference_rank}"
    )


def _show_side_channel(c: SideChannelCase) -> str:
    text = (
        f"- question {c.question_id}, {_code(c.doc_id)}: {c.outsider} got {c.outsider_count} "
        f"results, {c.insider} {c.insider_count}"
    )
    if c.post_filter:
        text += " (short by exactly the hidden documents: filtered after the top k)"
    if c.score_shift:
        text += f"; scores of shared passages differ by up to {c.max_score_shift:.4g}"
    return text


def _show_unknown(u: Unchecked) -> str:
    return f"- {u.user}, question {u.question_id}, rank {u.rank}: {_code(u.doc_id)}"


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence}{markdown_cell(text)}{fence}"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"
