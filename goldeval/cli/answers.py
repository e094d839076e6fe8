"""``python -m goldeval answers``: answer runs scored against a gold set, as a CI gate.

    python -m goldeval answers --gold gold/ --answers rag=answers.jsonl \\
        [--answers old=old.jsonl] [--judgements gold/answers-gold.jsonl] \\
        [--fail-under faithfulness=0.9] [--format json|markdown|csv]

The automatic scores need only the gold set; the human-graded ones need the adjudicated grades
(``answers-gold.jsonl``, read from the bundle folder when it has one), and cover the answers
whose grades match them exactly (the coverage is printed). Two runs or more are compared with
the retrieval runs' paired randomization test, and the report says what the gold set can
detect (`goldeval.scoring.power`). Exit status: 0 ok, 1 a ``--fail-under`` bar missed or a
``--require-significant`` improvement not significant, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from goldeval.cli.arguments import (
    UsageError,
    fail_under_bars,
    positive_argument,
    run_arguments,
    seed_argument,
)
from goldeval.cli.gates import missed_bars, not_significant
from goldeval.formats.answer_gold import (
    ANSWERS_GOLD_FILE,
    AnswerGold,
    load_answer_gold,
    read_answer_gold,
)
from goldeval.formats.answers import Answer, answer_doc_ids, check_answers, read_answer_file
from goldeval.formats.doc_ids import ALL, split_doc_ids
from goldeval.formats.gold import EvaluationInputError, Gold, bundle_file, load_gold
from goldeval.formats.runs import corpus_doc_ids
from goldeval.formats.textfiles import NotUTF8Error
from goldeval.scoring.answers import (
    BARRED_SCORES,
    COMPARED_SCORES,
    AnswerEvaluation,
    compare_answer_runs,
    evaluate_answers,
)
from goldeval.scoring.answers_report import FORMATS, build_answer_report, render_answer_report
from goldeval.scoring.compare import PERMUTATIONS
from goldeval.scoring.power import ALPHA, detection_limits

EXIT_OK = 0
EXIT_BELOW_BAR = 1


class AnswerFileError(EvaluationInputError):
    """An answer run that cannot be used."""


def add_parser(commands) -> None:
    """Register the subcommand on ``python -m goldeval``'s parser."""

    parser = commands.add_parser(
        "answers",
        help="score answer runs: faithfulness, citations, correctness, refusals",
        description="Exit status: 0 ok, 1 a --fail-under bar was missed, 2 bad input.",
    )
    parser.add_argument("--gold", required=True, type=Path, help="a bundle folder or gold JSONL")
    parser.add_argument(
        "--answers",
        dest="runs",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="an answer run (JSONL); repeat to compare runs (name defaults to the file stem)",
    )
    parser.add_argument(
        "--judgements",
        type=Path,
        default=None,
        help=f"the human grades ({ANSWERS_GOLD_FILE}); default: the bundle's, when it has one",
    )
    parser.add_argument("--min-overlap", type=positive_argument, default=1)
    parser.add_argument("--per-question", action="store_true")
    parser.add_argument("--format", choices=FORMATS, default="json", dest="output_format")
    parser.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="SCORE=VALUE",
        help="exit 1 when a run's score is below VALUE (e.g. faithfulness=0.9); repeatable",
    )
    parser.add_argument(
        "--require-significant",
        action="append",
        default=[],
        metavar="SCORE",
        help="exit 1 unless the first --answers run beats every other on SCORE with a paired "
        f"randomization p-value below {ALPHA}; repeatable",
    )
    parser.add_argument(
        "--seed", type=seed_argument, default=0, help="seed of the randomization test"
    )
    parser.set_defaults(handler=answers_command)


def load_answers(path: Path, *, gold: Gold) -> dict[str, Answer]:
    """An answer run checked against the gold set; its first problem raises, with the line."""
    if not path.is_file():
        raise AnswerFileError("no such file", path=path)
    try:
        read = read_answer_file(path.read_bytes())
    except NotUTF8Error as error:
        raise AnswerFileError(str(error), path=path) from None
    problems = list(read.problems)
    lengths = (
        {doc_id: len(document.text) for doc_id, document in gold.corpus.items()}
        if gold.corpus is not None
        else None
    )
    known = corpus_doc_ids(gold)
    check = split_doc_ids(answer_doc_ids(read.answers), known if known is not None else ALL)
    if check.none_known and not problems:
        raise AnswerFileError(check.refusal("the answer run"), path=path)
    problems += check_answers(
        read.answers,
        question_ids=gold.questions,
        document_lengths=lengths,
        unknown_documents=check.unknown_set,
    )
    if problems:
        first = min(problems, key=lambda problem: problem.line)
        raise AnswerFileError(first.message, path=path, line=first.line)
    if check.unknown:
        # Kept: a citation of a document the corpus lacks supports nothing, as scored.
        print(
            f"warning: {check.warning(str(path), outcome='kept, reaching no gold span')}",
            file=sys.stderr,
        )
    return read.answers


def answers_command(arguments: argparse.Namespace) -> int:

    if not arguments.runs:
        raise UsageError("nothing to score: give at least one --answers [NAME=]PATH")
    bars = fail_under_bars(
        arguments.fail_under,
        allowed=BARRED_SCORES,
        what="score",
        not_allowed=lambda score: (
            f"{score!r} is not a score where higher is better; choose one of "
            + ", ".join(BARRED_SCORES)
        ),
    )
    gated = [score for score in BARRED_SCORES if score in COMPARED_SCORES]
    for score in arguments.require_significant:
        if score not in gated:
            raise UsageError(
                f"--require-significant: {score!r} is not a compared score where higher is "
                "better; choose one of " + ", ".join(gated)
            )
    named_runs = run_arguments(arguments.runs)
    if arguments.require_significant and len(named_runs) < 2:
        raise UsageError(
            "--require-significant: nothing to compare the first run with; give another "
            "--answers run"
        )
    gold = load_gold(arguments.gold)
    answer_gold = _judgements(arguments.judgements, gold_path=arguments.gold)
    evaluations: dict[str, AnswerEvaluation] = {}
    for name, path in named_runs:
        answers = load_answers(path, gold=gold)
        evaluations[name] = evaluate_answers(
            gold=gold,
            answers=answers,
            name=name,
            answer_gold=answer_gold,
            min_overlap=arguments.min_overlap,
        )
    comparisons = compare_answer_runs(evaluations, permutations=PERMUTATIONS, seed=arguments.seed)
    for name, evaluation in evaluations.items():
        if answer_gold is not None:
            counts = evaluation.counts
            print(
                f"coverage: {name}: {counts['graded']} of {counts['to_grade']} answers to grade "
                "have human grades",
                file=sys.stderr,
            )
    # What the gold set can detect, from the runs' own per-question differences: two runs.
    limits = (
        detection_limits(evaluations, metrics=COMPARED_SCORES, comparisons=comparisons)
        if len(evaluations) > 1
        else {}
    )
    report = build_answer_report(
        evaluations, comparisons, per_question=arguments.per_question, limits=limits
    )
    sys.stdout.write(render_answer_report(report, output_format=arguments.output_format))
    misses, notes = missed_bars(
        {name: evaluation.scores for name, evaluation in evaluations.items()},
        bars,
        limits=limits,
        what="no answer it covers",
    )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for miss in misses:
        print(f"below bar: {miss}", file=sys.stderr)
    failures = not_significant(
        comparisons,
        arguments.require_significant,
        candidate=next(iter(evaluations)),
        limits=limits,
    )
    for failure in failures:
        print(f"not significant: {failure}", file=sys.stderr)
    return EXIT_BELOW_BAR if misses or failures else EXIT_OK


def _judgements(path: Path | None, *, gold_path: Path) -> AnswerGold | None:
    if path is None:
        # The bundle's own judgements, from its folder or from the zip the page downloads.
        bundled = bundle_file(gold_path, ANSWERS_GOLD_FILE)
        if bundled is None:
            return None
        return read_answer_gold(bundled, source=gold_path / ANSWERS_GOLD_FILE)
    return load_answer_gold(path)
