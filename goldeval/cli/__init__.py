"""``python -m goldeval evaluate``: score runs against a gold set, usable as a CI gate.

(``permissions`` and ``answers`` are subcommands of their own: `goldeval.cli.permissions`,
`goldeval.cli.answers`.)

Exit status: 0 when all is well, 1 when a run misses a ``--fail-under`` bar or the first run's
improvement is not significant (``--require-significant``), 2 for bad input. A bar missed or
passed, or a comparison, by less than the gold set can detect says "not detectable with this
gold set" (`goldeval.scoring.power`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

# The argument types every subcommand shares live apart, so subcommands need not import this
# module (which imports them).
from goldeval.cli.arguments import (
    MAX_CUTOFF,
    MAX_THRESHOLD,
    UsageError,
    fail_under_bars,
    ks_argument,
    persistences_argument,
    positive_argument,
    run_arguments,
    seed_argument,
    threshold_argument,
)
from goldeval.cli.gates import missed_bars, not_significant
from goldeval.cli.holes import add_hole_filling, read_judge_grades
from goldeval.formats.gold import EvaluationInputError, Gold, load_gold
from goldeval.formats.runfiles import SCORES, TIES
from goldeval.formats.runs import Run, check_run_against_gold, load_run
from goldeval.formats.textfiles import cyclic_gc_paused
from goldeval.scoring.compare import PERMUTATIONS, compare_runs
from goldeval.scoring.holes import fill_holes
from goldeval.scoring.incomplete import (
    RBP_PERSISTENCES,
    incomplete_metric_names,
    with_incomplete_measures,
)
from goldeval.scoring.metrics import COMPATS, MetricOptions, evaluate_run
from goldeval.scoring.power import ALPHA, detection_limits
from goldeval.scoring.report import FORMATS, build_report, render

# The subcommands besides `evaluate`, in the order the usage lists them, each in its own module,
# imported only when it is named (or for the whole usage): a CI job's `evaluate` of a million
# run lines should not pay for importing the other five (issue 37).
SUBCOMMANDS = {
    "permissions": "goldeval.cli.permissions",
    "answers": "goldeval.cli.answers",
    "health": "goldeval.cli.health",
    "reusability": "goldeval.cli.reusability",
    "power": "goldeval.cli.power",
}

EXIT_OK = 0
EXIT_BELOW_BAR = 1
EXIT_BAD_INPUT = 2


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (one of `SUBCOMMANDS` or "evaluate"), only
    that subcommand's module is imported and only its parser added."""
    parser = argparse.ArgumentParser(
        prog="python -m goldeval",
        description="Score retrieval runs against a Goldset gold set (span-based metrics).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate = commands.add_parser(
        "evaluate",
        help="score runs against a gold set",
        description="Exit status: 0 ok, 1 a --fail-under bar was missed or a "
        "--require-significant improvement is not significant, 2 bad input.",
    )
    evaluate.add_argument(
        "--gold",
        required=True,
        type=Path,
        help="a bundle folder, a gold JSONL file, or a TREC/BEIR qrels file (document level)",
    )
    evaluate.add_argument(
        "--run",
        dest="runs",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="a JSONL or TREC run; repeat for several runs (name defaults to the file stem)",
    )
    evaluate.add_argument(
        "--k",
        type=ks_argument,
        default=(1, 3, 5, 10),
        help=f"cut-offs (default 1,3,5,10), each at most {MAX_CUTOFF:,}",
    )
    evaluate.add_argument(
        "--gain",
        choices=("exp", "linear"),
        default=None,
        help="nDCG gain: exp (2**g - 1, the default) or linear (g, trec_eval's; the default "
        "under --compat trec_eval)",
    )
    evaluate.add_argument(
        "--threshold",
        type=threshold_argument,
        default=1,
        help=f"lowest grade that counts as relevant (1 to {MAX_THRESHOLD})",
    )
    evaluate.add_argument(
        "--mrr-cutoff", type=positive_argument, default=10, help=f"1 to {MAX_CUTOFF:,} (default 10)"
    )
    evaluate.add_argument(
        "--min-overlap",
        type=positive_argument,
        default=1,
        help=f"characters a passage must share with a span (1 to {MAX_CUTOFF:,})",
    )
    evaluate.add_argument(
        "--ties",
        choices=TIES,
        default="trec_eval",
        help="order of equal scores in TREC runs: trec_eval (docno descending, the default) or "
        "file (file order); JSONL runs always keep list order",
    )
    evaluate.add_argument(
        "--scores",
        choices=SCORES,
        default="double",
        help="precision of TREC run scores: double (the default) or float32 (as trec_eval 9 "
        "and pytrec_eval store them, so scores equal to ~7 digits tie)",
    )
    evaluate.add_argument(
        "--compat",
        choices=COMPATS,
        default="goldset",
        help="which questions the means cover: goldset (answerable ones, missing score 0), "
        "trec_eval (questions in both run and gold), trec_eval-c (every gold question)",
    )
    evaluate.add_argument(
        "-M",
        "--max-passages",
        type=positive_argument,
        default=None,
        help="score only the first N passages of each ranking, as trec_eval -M (default: all)",
    )
    evaluate.add_argument(
        "--incomplete",
        action="store_true",
        help="add the measures for incomplete judgements: ap, bpref, infap, condensed lists "
        "(trec_eval -J), unjudged@k, rbp and its residual",
    )
    evaluate.add_argument(
        "--rbp",
        type=persistences_argument,
        default=RBP_PERSISTENCES,
        metavar="P[,P...]",
        help="with --incomplete: persistences of rank-biased precision (default 0.5,0.8)",
    )
    evaluate.add_argument(
        "--ai-judgements",
        action="append",
        default=[],
        metavar="FILE|bundle",
        help="an LLM judge's grades (ai-judgements.jsonl; the word 'bundle' reads the one in the "
        "--gold bundle; repeatable, e.g. the bundle's and your run's holes): adds, beside the "
        "human figures, the figures with the judge filling the holes and a prediction-powered "
        "confidence interval; never mixed into the human figures",
    )
    evaluate.add_argument(
        "--judge",
        default=None,
        metavar="NAME",
        help="with --ai-judgements: the judge whose grades fill the holes (needed when the "
        "file holds several)",
    )
    evaluate.add_argument(
        "--strict",
        action="store_true",
        help="refuse run questions the gold set does not know (default: skip them, with a warning)",
    )
    evaluate.add_argument("--per-question", action="store_true")
    evaluate.add_argument("--format", choices=FORMATS, default="json", dest="output_format")
    evaluate.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when a run's metric is below VALUE (e.g. ndcg@10=0.6); repeatable",
    )
    evaluate.add_argument(
        "--require-significant",
        action="append",
        default=[],
        metavar="METRIC",
        help="exit 1 unless the first --run beats every other run (and the baseline) on METRIC "
        f"with a paired randomization p-value below {ALPHA}; repeatable",
    )
    evaluate.add_argument(
        "--no-baseline", action="store_true", help="skip the BM25 baseline over corpus.jsonl"
    )
    evaluate.add_argument(
        "--seed", type=seed_argument, default=0, help="seed of the randomization test"
    )
    for name, module in SUBCOMMANDS.items():
        if command is None or command == name:
            importlib.import_module(module).add_parser(commands)
    return parser


def _warn_unanchored(gold: Gold) -> None:
    for item in gold.unanchored:
        span = item.span
        print(
            f"warning: question {item.question_id!r}: span [{span.start}, {span.end}) of "
            f"{span.doc_id!r} version {span.version} could not be re-anchored in version "
            f"{item.corpus_version}; it counts as relevant but no passage can reach it",
            file=sys.stderr,
        )


def evaluate_command(arguments: argparse.Namespace) -> int:
    # The command reads and scores, then exits: the cycle collector would only walk the
    # millions of passages and spans read (they hold no cycles) again and again, which was a
    # third of the time on a 10,000-question run. Reference counting frees as usual.
    with cyclic_gc_paused():
        return _evaluate(arguments)


def _evaluate(arguments: argparse.Namespace) -> int:
    gain = arguments.gain or ("exp" if arguments.compat == "goldset" else "linear")
    try:
        options = MetricOptions(
            ks=arguments.k,
            gain=gain,
            compat=arguments.compat,
            threshold=arguments.threshold,
            mrr_cutoff=arguments.mrr_cutoff,
            min_overlap=arguments.min_overlap,
            max_passages=arguments.max_passages,
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    metric_names = options.metric_names()
    # Reported and usable as bars; compared run against run only the plain metrics are.
    incomplete_names = incomplete_metric_names(options, persistences=arguments.rbp)
    every_name = metric_names + (incomplete_names if arguments.incomplete else [])

    def not_allowed(metric: str) -> str:
        if metric in incomplete_names:
            return f"{metric!r} is a measure for incomplete judgements: add --incomplete"
        return f"unknown metric {metric!r}; available with these options: " + ", ".join(every_name)

    bars = fail_under_bars(
        arguments.fail_under, allowed=every_name, what="metric", not_allowed=not_allowed
    )
    for metric in arguments.require_significant:
        if metric not in metric_names:
            raise UsageError(
                f"--require-significant: unknown metric {metric!r}; available with these "
                "options: " + ", ".join(metric_names)
            )
    named_runs = run_arguments(arguments.runs)
    if arguments.require_significant and not named_runs:
        raise UsageError("--require-significant: give the candidate as the first --run")
    if not named_runs and arguments.no_baseline:
        raise UsageError("nothing to score: give at least one --run")

    if arguments.judge is not None and not arguments.ai_judgements:
        raise UsageError("--judge: give the judgements with --ai-judgements")
    gold = load_gold(arguments.gold)
    for warning in gold.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _warn_unanchored(gold)
    ai = None
    if arguments.ai_judgements:
        ai = read_judge_grades(arguments.ai_judgements, gold=gold, judge=arguments.judge)
    runs: list[Run] = []
    for name, path in named_runs:
        run = load_run(path, name=name, ties=arguments.ties, scores=arguments.scores)
        check_run_against_gold(run, gold, strict=arguments.strict)
        for warning in run.warnings():
            print(f"warning: {warning}", file=sys.stderr)
        runs.append(run)
    baseline_names: set[str] = set()
    if gold.corpus and not arguments.no_baseline:
        # Imported here: only a bundle with a corpus needs the BM25 machinery.
        from goldeval.scoring.baseline import BASELINE_NAME, bm25_baseline_run

        if any(run.name == BASELINE_NAME for run in runs):
            raise UsageError(f"the run name {BASELINE_NAME!r} is taken by the baseline")
        runs.append(bm25_baseline_run(gold=gold, depth=options.depth))
        baseline_names.add(BASELINE_NAME)
    if not runs:
        raise UsageError("nothing to score: give at least one --run (or a bundle with a corpus)")
    if arguments.require_significant and len(runs) < 2:
        raise UsageError(
            "--require-significant: nothing to compare the first run with; give another --run "
            "(or a bundle with a corpus, for the baseline)"
        )

    evaluations = {run.name: evaluate_run(gold=gold, run=run, options=options) for run in runs}
    if arguments.incomplete:
        evaluations = {
            run.name: with_incomplete_measures(
                evaluations[run.name],
                gold=gold,
                run=run,
                options=options,
                persistences=arguments.rbp,
            )
            for run in runs
        }
    comparisons = compare_runs(
        evaluations, metric_names=metric_names, permutations=PERMUTATIONS, seed=arguments.seed
    )
    # What the gold set can detect, from the runs' own per-question differences: needs two runs.
    limits = (
        detection_limits(evaluations, metrics=metric_names, comparisons=comparisons)
        if len(evaluations) > 1
        else {}
    )
    report = build_report(
        evaluations,
        comparisons,
        per_question=arguments.per_question,
        read={run.name: run for run in runs},
        limits=limits,
    )
    if ai is not None:
        fillings = {
            run.name: fill_holes(
                evaluations[run.name],
                gold=gold,
                run=run,
                options=options,
                judgements=ai.judgements,
                judge=ai.judge,
            )
            for run in runs
        }
        add_hole_filling(report, ai, fillings)
    sys.stdout.write(render(report, output_format=arguments.output_format))

    misses, notes = missed_bars(
        {name: e.metrics for name, e in evaluations.items()},
        bars,
        skip=baseline_names,
        limits=limits,
    )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for miss in misses:
        print(f"below bar: {miss}", file=sys.stderr)
    failures = not_significant(
        comparisons, arguments.require_significant, candidate=runs[0].name, limits=limits
    )
    for failure in failures:
        print(f"not significant: {failure}", file=sys.stderr)
    return EXIT_BELOW_BAR if misses or failures else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The whole parser when the command is not (yet) known: its usage and errors list them all.
    named = argv[0] if argv and (argv[0] in SUBCOMMANDS or argv[0] == "evaluate") else None
    arguments = build_parser(named).parse_args(argv)
    try:
        return getattr(arguments, "handler", evaluate_command)(arguments)
    except (EvaluationInputError, UsageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"error: cannot read {error.filename or ''}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
