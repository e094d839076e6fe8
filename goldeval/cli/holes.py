"""``evaluate --ai-judgements FILE|bundle [--judge NAME]``: read one judge's grades for
`goldeval.scoring.holes`, and put its figures in the report beside (never inside) the human ones.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goldeval.cli.arguments import UsageError
from goldeval.formats.ai_judgements import (
    AI_JUDGEMENTS_FILE,
    AIJudgement,
    AIJudgements,
    load_ai_judgements,
    read_ai_judgements,
)
from goldeval.formats.gold import Gold, bundle_file
from goldeval.scoring.holes import HoleFilling

FROM_BUNDLE = "bundle"


@dataclass(frozen=True)
class JudgeGrades:
    judge: str
    judgements: list[AIJudgement]
    source: str
    models: list[str]
    prompt_versions: list[int]


def read_judge_grades(givens: list[str], *, gold: Gold, judge: str | None) -> JudgeGrades:
    """The grades of one judge from ``givens`` (files, or the word ``bundle``: the gold
    bundle's own ai-judgements.jsonl), of the gold set's questions, at the versions it holds.
    Several files are one: a passage graded in two counts once when the grades agree, and is
    refused when they differ."""
    read = AIJudgements()
    seen: dict[tuple, tuple[int, str]] = {}
    sources = []
    for given in givens:
        one = _read(given, gold=gold)
        sources.append(str(one.source))
        for judgement in one.judgements:
            key = (judgement.judge, judgement.question_id, judgement.passage)
            before = seen.get(key)
            if before is None:
                seen[key] = (judgement.grade, str(one.source))
                read.judgements.append(judgement)
            elif before[0] != judgement.grade:
                raise UsageError(
                    f"--ai-judgements: judge {judgement.judge!r} grades a passage of question "
                    f"{judgement.question_id!r} {before[0]} in {before[1]} and "
                    f"{judgement.grade} in {one.source}: give one grade per judge and passage"
                )
        read.warnings += one.warnings
    return _one_judge(read, gold=gold, judge=judge, source=", ".join(sources))


def _read(given: str, *, gold: Gold) -> AIJudgements:
    if given == FROM_BUNDLE:
        if gold.source is None:
            raise UsageError("--ai-judgements bundle: --gold is not a bundle")
        data = bundle_file(gold.source, AI_JUDGEMENTS_FILE)
        if data is None:
            raise UsageError(
                f"--ai-judgements bundle: the gold set has no {AI_JUDGEMENTS_FILE} (a gold set "
                "finalised after its candidates were judged by an LLM judge carries one)"
            )
        return read_ai_judgements(data, path=Path(gold.source) / AI_JUDGEMENTS_FILE)
    return load_ai_judgements(given)


def _one_judge(read: AIJudgements, *, gold: Gold, judge: str | None, source: str) -> JudgeGrades:
    for warning in read.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    judges = read.judges
    if not judges:
        raise UsageError(f"--ai-judgements: {source} holds no judgement")
    if judge is None:
        if len(judges) > 1:
            raise UsageError(
                "--ai-judgements: the file holds the grades of several judges; choose one with "
                "--judge (" + ", ".join(judges) + ")"
            )
        judge = judges[0]
    elif judge not in judges:
        raise UsageError(f"--judge: no judgement of {judge!r} (the file has: {', '.join(judges)})")
    kept, unknown, moved = [], 0, 0
    for judgement in read.of_judge(judge):
        if judgement.question_id not in gold.questions:
            unknown += 1
            continue
        document = (gold.corpus or {}).get(judgement.passage.doc_id)
        if (
            document is not None
            and judgement.version is not None
            and document.version is not None
            and judgement.version != document.version
        ):
            moved += 1  # offsets of an older version: they would point elsewhere
            continue
        kept.append(judgement)
    if unknown:
        print(
            f"warning: {unknown} AI judgement(s) of questions not in the gold set ignored",
            file=sys.stderr,
        )
    if moved:
        print(
            f"warning: {moved} AI judgement(s) of an older version of their document ignored "
            "(their offsets point elsewhere in the newest one)",
            file=sys.stderr,
        )
    return JudgeGrades(
        judge=judge,
        judgements=kept,
        source=source,
        models=sorted({j.model for j in kept if j.model}),
        prompt_versions=sorted({j.prompt_version for j in kept if j.prompt_version is not None}),
    )


def add_hole_filling(
    report: dict[str, Any], grades: JudgeGrades, fillings: dict[str, HoleFilling]
) -> None:
    """The judge's figures, under their own keys: ``ai_judgements`` at the top (which judge,
    from where) and in each run (``judge_filled``, ``ppi``); ``metrics`` stay human only."""
    report["ai_judgements"] = {
        "source": grades.source,
        "judge": grades.judge,
        "models": grades.models,
        "prompt_versions": grades.prompt_versions,
        "judgements": len(grades.judgements),
    }
    for name, filling in fillings.items():
        report["runs"][name]["ai_judgements"] = filling.as_dict()
