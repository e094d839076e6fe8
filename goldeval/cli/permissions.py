"""``python -m goldeval permissions``: the permission replay as a CI gate.

    python -m goldeval permissions --gold gold/ --acl acl.json --fail-on-leak \\
        --run-as alice=runs/alice.jsonl --run-as bob=runs/bob.trec --run-as admin=admin.jsonl

The bundle's corpus.jsonl gives each document's access groups (the snapshot); acl.json maps
each test user to the groups they are meant to have (``"*"`` for one who sees everything, whose
run is the reference for over-restriction). Exit status: 0 no leak (or no ``--fail-on-…``
asked), 1 a leak (or an unchecked result / side channel, when asked to fail on those), 2 bad
input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from goldeval.cli.arguments import UsageError, ks_argument, positive_argument
from goldeval.formats.gold import load_gold
from goldeval.formats.runfiles import NO_RANKING
from goldeval.scoring.permission_replay import (
    DEFAULT_KS,
    UNRESTRICTED,
    AccessSnapshot,
    PermissionInputError,
    read_acl,
    read_user_run,
    render_markdown,
    replay_permissions,
)

EXIT_OK = 0
EXIT_FAILED = 1
SHOWN_ON_STDERR = 50


def add_parser(commands) -> None:
    """Register the subcommand on ``python -m goldeval``'s parser."""

    parser = commands.add_parser(
        "permissions",
        help="replay questions as test users and check every result against access groups",
        description="Exit status: 0 ok, 1 a leak (with --fail-on-leak), 2 bad input.",
    )
    parser.add_argument("--gold", required=True, type=Path, help="an exported bundle folder")
    parser.add_argument(
        "--acl",
        required=True,
        type=Path,
        help='JSON mapping each test user to their access groups: {"alice": ["hr"], '
        f'"bob": [], "admin": "{UNRESTRICTED}"}}',
    )
    parser.add_argument(
        "--run-as",
        dest="runs",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="the run (JSONL or TREC) made as test user NAME; repeat for each user",
    )
    parser.add_argument(
        "--k", type=ks_argument, default=DEFAULT_KS, help="cut-offs for leak@k and visible recall@k"
    )
    parser.add_argument(
        "--reference",
        default=None,
        help=f"the unrestricted run for over-restriction (default: the user mapped to "
        f"{UNRESTRICTED!r} in acl.json)",
    )
    parser.add_argument("--min-overlap", type=positive_argument, default=1)
    parser.add_argument("--format", choices=("json", "markdown"), default="markdown")
    parser.add_argument("--fail-on-leak", action="store_true", help="exit 1 on any leak")
    parser.add_argument(
        "--fail-on-unknown",
        action="store_true",
        help="exit 1 when a result names a document the bundle does not hold (cannot be checked)",
    )
    parser.add_argument(
        "--fail-on-side-channel",
        action="store_true",
        help="exit 1 when an outsider's list is short by exactly the hidden documents",
    )
    parser.set_defaults(handler=permissions_command)


def permissions_command(arguments: argparse.Namespace) -> int:

    if not arguments.runs:
        raise UsageError("give one --run-as NAME=PATH per test user")
    acl = read_acl(_read(arguments.acl), source=arguments.acl)
    runs = {}
    for value in arguments.runs:
        name, separator, path = value.partition("=")
        if not separator or not name or not path:
            raise UsageError(f"--run-as expects NAME=PATH, got {value!r}")
        if name in runs:
            raise UsageError(f"two runs are given for {name!r}")
        if name not in acl:
            raise UsageError(
                f"--run-as {name}: {name!r} is not in {arguments.acl} (it names "
                + ", ".join(sorted(acl))
                + ")"
            )
        runs[name] = read_user_run(_read(Path(path)), source=path)
        if not runs[name]:
            raise PermissionInputError(NO_RANKING, path=path)
    gold = load_gold(arguments.gold)
    snapshot = AccessSnapshot.from_gold(gold)
    users = [acl[name] for name in runs]
    reference = arguments.reference
    if reference is None:
        unrestricted = [u.name for u in users if u.unrestricted]
        reference = unrestricted[0] if len(unrestricted) == 1 else None
    elif reference not in runs:
        raise UsageError(f"--reference {reference}: there is no --run-as {reference}=…")
    report = replay_permissions(
        snapshot=snapshot,
        users=users,
        runs=runs,
        gold=gold,
        ks=arguments.k,
        reference=reference,
        min_overlap=arguments.min_overlap,
    )
    for note in report.notes:
        print(f"warning: {note}", file=sys.stderr)
    if arguments.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_markdown(report))
    for finding in report.findings[:SHOWN_ON_STDERR]:
        print(
            f"leak: {finding.user} got {finding.doc_id} (groups {', '.join(finding.groups)}) at "
            f"rank {finding.rank} for question {finding.question_id}"
            + (" — a canary" if finding.canary else ""),
            file=sys.stderr,
        )
    if report.leaks > SHOWN_ON_STDERR:
        print(f"leak: … {report.leaks - SHOWN_ON_STDERR} more", file=sys.stderr)
    failed = (
        (arguments.fail_on_leak and report.leaks)
        or (arguments.fail_on_unknown and report.unknown)
        or (arguments.fail_on_side_channel and any(c.post_filter for c in report.side_channels))
    )
    return EXIT_FAILED if failed else EXIT_OK


def _read(path: Path) -> bytes:
    if not path.is_file():
        raise PermissionInputError("no such file", path=path)
    return path.read_bytes()
