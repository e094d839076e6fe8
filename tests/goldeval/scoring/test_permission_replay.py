"""The permission replay's core and ``python -m goldeval permissions``: findings, leak@k, leak
rate, first leaked rank, canaries, over-restriction, visible recall, side channels, bad input."""

import json

import pytest

from goldeval.cli import main
from goldeval.formats.gold import load_gold
from goldeval.scoring.permission_replay import (
    AccessSnapshot,
    DocumentAccess,
    PermissionInputError,
    Result,
    TestUser,
    read_acl,
    read_user_run,
    render_markdown,
    replay_permissions,
)

LEAVE = "Employees receive 25 days of paid annual leave per calendar year."
VPN = "Install the NW-VPN client and approve the multi-factor prompt."
SALARIES = "Band C pays 52,000 to 61,000 euros per year. Band D pays more."
CANARY = "Canary 7f3a9c2e: the vault code of project 7f3a9c2e is 4471."

CORPUS = [
    {"doc_id": "leave", "version": 1, "title": "Leave", "text": LEAVE, "access_groups": []},
    {"doc_id": "vpn", "version": 1, "title": "VPN", "text": VPN, "access_groups": []},
    {"doc_id": "salaries", "version": 1, "title": "Pay", "text": SALARIES, "access_groups": ["hr"]},
    {
        "doc_id": "canary-7f3a9c2e",
        "version": 1,
        "title": "Canary",
        "text": CANARY,
        "access_groups": ["hr-secret"],
        "canary": True,
    },
]
GOLD = [
    {
        "question_id": "q1",
        "question": "annual leave days",
        "spans": [{"doc_id": "leave", "start": 0, "end": 40, "grade": 2, "version": 1}],
    },
    {
        "question_id": "q2",
        "question": "salary band C",
        "spans": [{"doc_id": "salaries", "start": 0, "end": 44, "grade": 2, "version": 1}],
    },
    {"question_id": "q3", "question": "gym discount", "answerable": False, "spans": []},
]
ACL = {"alice": ["hr"], "bob": [], "admin": "*"}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    write_jsonl(folder / "gold.jsonl", GOLD)
    write_jsonl(folder / "corpus.jsonl", CORPUS)
    manifest = {"created_at": "2026-01-05T10:00:00+00:00", "corpus": {"fingerprint": "ab" * 32}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "acl.json").write_text(json.dumps(ACL))
    return folder


def run_line(question_id, *results):
    return {"question_id": question_id, "results": [dict(r) for r in results]}


def res(doc_id, start=None, end=None, score=None):
    found = {"doc_id": doc_id, "score": score}
    if start is not None:
        found.update(start=start, end=end)
    return found


ADMIN_RUN = [
    run_line("q1", res("leave", 0, 40, 3.0), res("vpn", score=1.0)),
    run_line("q2", res("salaries", 0, 44, 4.0), res("leave", 0, 40, 1.0)),
    run_line("q3", res("vpn", score=0.5)),
    run_line("canary-q", res("canary-7f3a9c2e", score=9.0), res("vpn", score=0.1)),
]
OTHERS = run_line("canary-q", res("vpn", score=0.1), res("leave", score=0.05))
ALICE_RUN = [
    run_line("q1", res("leave", 0, 40, 3.0)),
    run_line("q2", res("vpn", score=1.0), res("leave", score=0.5)),  # misses salaries
    run_line("q3"),
    OTHERS,
]
# Bob may see no group: the leaky system returns salaries at rank 2 and the canary at rank 1.
BOB_LEAKY = [
    run_line("q1", res("leave", 0, 40, 3.0), res("vpn", score=1.0)),
    run_line("q2", res("leave", 0, 40, 1.0), res("salaries", 0, 44, 4.0)),
    run_line("q3"),
    run_line("canary-q", res("canary-7f3a9c2e", score=9.0)),
]
BOB_CORRECT = [
    run_line("q1", res("leave", 0, 40, 3.0), res("vpn", score=1.0)),
    run_line("q2", res("leave", 0, 40, 1.0), res("vpn", score=0.2)),
    run_line("q3"),
    OTHERS,
]
# Filtering after the top 2: bob gets one result where admin got two, one of them hidden.
BOB_POST_FILTER = [
    run_line("q1", res("leave", 0, 40, 3.0), res("vpn", score=1.0)),
    run_line("q2", res("leave", 0, 40, 1.0)),
    run_line("q3"),
    OTHERS,
]


def replay(tmp_path, bundle, bob, **kwargs):
    gold = load_gold(bundle)
    runs = {
        name: read_user_run(write_jsonl(tmp_path / f"{name}.jsonl", lines).read_bytes())
        for name, lines in (("alice", ALICE_RUN), ("bob", bob), ("admin", ADMIN_RUN))
    }
    users = read_acl(json.dumps(ACL))
    return replay_permissions(
        snapshot=AccessSnapshot.from_gold(gold),
        users=[users["alice"], users["bob"], users["admin"]],
        runs=runs,
        gold=gold,
        ks=(1, 2),
        reference="admin",
        **kwargs,
    )


def by_user(report):
    return {u.name: u for u in report.users}


def test_the_replay_finds_exactly_the_leaks_with_their_rank_groups_and_canary(tmp_path, bundle):
    report = replay(tmp_path, bundle, BOB_LEAKY)
    found = [(f.question_id, f.user, f.doc_id, f.rank, f.groups, f.canary) for f in report.findings]
    assert found == [
        ("canary-q", "bob", "canary-7f3a9c2e", 1, ["hr-secret"], True),
        ("q2", "bob", "salaries", 2, ["hr"], False),
    ]
    bob = by_user(report)["bob"]
    assert (bob.questions, bob.results, bob.leaked_results) == (4, 5, 2)
    assert bob.leak_at == {"leak@1": 0.25, "leak@2": 0.5}
    assert bob.leak_rate == pytest.approx(2 / 5)
    assert (bob.first_leaked_rank, bob.median_first_leaked_rank) == (1, 1.5)
    assert bob.canary_leaks == 1
    # Alice may see salaries, the admin everything: neither leaks, not even the canary's
    # admin run (an unrestricted user sees every document).
    for name in ("alice", "admin"):
        assert by_user(report)[name].leaked_results == 0
        assert by_user(report)[name].leak_at["leak@2"] == 0.0
    assert "snapshot" not in report.notes
    assert "fingerprint abababababab" in report.snapshot


def test_a_correct_system_passes_and_over_restriction_and_visible_recall_are_measured(
    tmp_path, bundle
):
    report = replay(tmp_path, bundle, BOB_CORRECT)
    assert report.leaks == 0 and report.findings == []
    users = by_user(report)
    # Alice may see salaries and the admin's run found it at rank 1; hers did not.
    assert [
        (o.question_id, o.user, o.doc_id, o.reference_rank) for o in report.over_restriction
    ] == [("q2", "alice", "salaries", 1)]
    assert users["alice"].over_restricted == 1 and users["bob"].over_restricted == 0
    assert users["admin"].over_restricted is None  # the reference itself
    # Bob's visible gold is q1 only (q2's evidence is hidden from him): recall 1.0 on it.
    assert users["bob"].visible_questions == 1
    assert users["bob"].visible_recall["visible_recall@1"] == 1.0
    assert users["alice"].visible_questions == 2
    assert users["alice"].visible_recall["visible_recall@2"] == 0.5
    assert users["admin"].visible_recall["visible_recall@1"] == 1.0
    assert "**No leak**" in render_markdown(report)


def test_side_channels_compare_counts_and_scores_of_insiders_and_outsiders(tmp_path, bundle):
    correct = replay(tmp_path, bundle, BOB_CORRECT)
    cases = {(c.question_id, c.doc_id, c.outsider): c for c in correct.side_channels}
    case = cases[("q2", "salaries", "bob")]
    assert (case.insider, case.insider_count, case.outsider_count, case.hidden) == (
        "admin",
        2,
        2,
        1,
    )
    assert not case.shorter and not case.post_filter and not case.score_shift
    assert case.shared == 1 and case.max_score_shift == 0.0
    assert cases[("canary-q", "canary-7f3a9c2e", "alice")].outsider_count == 2

    filtered = replay(tmp_path, bundle, BOB_POST_FILTER)
    case = {(c.question_id, c.outsider): c for c in filtered.side_channels}[("q2", "bob")]
    assert case.shorter and case.post_filter and (case.insider_count, case.outsider_count) == (2, 1)
    assert "filtered after the top k" in render_markdown(filtered)

    shifted = [dict(line) for line in BOB_CORRECT]
    shifted[1] = run_line("q2", res("leave", 0, 40, 0.25), res("vpn", score=0.2))
    case = {(c.question_id, c.outsider): c for c in replay(tmp_path, bundle, shifted).side_channels}
    assert case[("q2", "bob")].score_shift and case[("q2", "bob")].max_score_shift == 0.75


def test_results_the_snapshot_does_not_hold_are_listed_unchecked_and_group_typos_noted(
    tmp_path, bundle
):
    snapshot = AccessSnapshot({"a": DocumentAccess(frozenset({"hr"}))}, source="test")
    report = replay_permissions(
        snapshot=snapshot,
        users=[TestUser("carol", frozenset({"hr-confidental"}))],
        runs={"carol": {"q1": [Result("a"), Result("zzz")]}},
        ks=(1,),
    )
    assert [(u.doc_id, u.rank) for u in report.unknown] == [("zzz", 2)]
    assert report.users[0].unknown_results == 1 and report.leaks == 1
    assert any("'hr-confidental'" in note and "misspelling" in note for note in report.notes)


@pytest.mark.parametrize(
    "acl, message",
    [
        ("{", "not valid JSON"),
        ("[]", "expected an object mapping each test user"),
        ('{"alice": "hr"}', "give a list of access group names"),
        ('{"alice": [1]}', "give a list of access group names"),
        ('{"alice": null}', "give a list of access group names"),
    ],
)
def test_a_bad_acl_is_refused_with_the_reason(acl, message):
    with pytest.raises(PermissionInputError, match=message):
        read_acl(acl)


def test_a_bad_run_is_refused_with_its_line():
    with pytest.raises(PermissionInputError) as refused:
        read_user_run(b'{"question_id": "q1", "results": []}\n{"question_id": 5, "results": 3}\n')
    assert refused.value.line == 2 and "results must be a list" in refused.value.message


# --- the command line -----------------------------------------------------------------------


def cli(tmp_path, bundle, bob, *extra):
    paths = {
        name: write_jsonl(tmp_path / f"{name}-run.jsonl", lines)
        for name, lines in (("alice", ALICE_RUN), ("bob", bob), ("admin", ADMIN_RUN))
    }
    arguments = ["permissions", "--gold", str(bundle), "--acl", str(tmp_path / "acl.json")]
    arguments += [f"--run-as={name}={path}" for name, path in paths.items()]
    return main([*arguments, "--k", "1,2", *extra])


def test_the_cli_exits_1_on_a_leak_and_names_it(tmp_path, bundle, capsys):
    assert cli(tmp_path, bundle, BOB_LEAKY, "--fail-on-leak") == 1
    out, err = capsys.readouterr()
    assert "**2 leaks**" in out and "| bob | none |" in out
    assert "leak: bob got salaries (groups hr) at rank 2 for question q2" in err
    assert "leak: bob got canary-7f3a9c2e (groups hr-secret) at rank 1 for question canary-q" in err
    # Without --fail-on-leak the report is the same and the exit status 0.
    assert cli(tmp_path, bundle, BOB_LEAKY) == 0


def test_the_cli_passes_a_correct_system_and_writes_json(tmp_path, bundle, capsys):
    assert cli(tmp_path, bundle, BOB_CORRECT, "--fail-on-leak", "--format", "json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["leaks"] == 0 and report["reference"] == "admin"
    assert report["users"][0]["over_restricted"] == 1
    assert report["side_channel_summary"] == {
        "cases": 3,
        "shorter": 0,
        "post_filter": 0,
        "score_shift": 0,
    }
    assert cli(tmp_path, bundle, BOB_POST_FILTER, "--fail-on-side-channel") == 1


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a + ["--run-as", "carol=x.jsonl"], "'carol' is not in"),
        (lambda a: a + ["--run-as", "nonsense"], "--run-as expects NAME=PATH"),
        (
            lambda a: [
                x if not x.startswith("--run-as=alice") else "--run-as=alice=/no" for x in a
            ],
            "no such file",
        ),
        (lambda a: a + ["--reference", "nobody"], "there is no --run-as nobody"),
    ],
)
def test_the_cli_exits_2_on_bad_input_with_a_message(tmp_path, bundle, capsys, change, message):
    paths = {
        name: write_jsonl(tmp_path / f"{name}-run.jsonl", lines)
        for name, lines in (("alice", ALICE_RUN), ("bob", BOB_CORRECT))
    }
    arguments = ["permissions", "--gold", str(bundle), "--acl", str(tmp_path / "acl.json")]
    arguments += [f"--run-as={name}={path}" for name, path in paths.items()]
    assert main(change(arguments)) == 2
    assert message in capsys.readouterr().err


def test_the_cli_needs_a_bundle_with_its_corpus(tmp_path, bundle, capsys):
    (bundle / "corpus.jsonl").unlink()
    assert cli(tmp_path, bundle, BOB_CORRECT) == 2
    assert "carries no corpus.jsonl" in capsys.readouterr().err


def test_trec_runs_are_checked_too(tmp_path, bundle, capsys):
    trec = tmp_path / "bob.trec"
    trec.write_text("q1 Q0 leave 1 3.0 team\nq2 Q0 vpn 1 0.5 team\nq2 Q0 salaries 2 4.0 team\n")
    acl = tmp_path / "acl.json"
    arguments = ["permissions", "--gold", str(bundle), "--acl", str(acl), "--fail-on-leak"]
    assert main([*arguments, f"--run-as=bob={trec}"]) == 1
    # TREC ranks by score: salaries (4.0) is bob's first result for q2.
    assert "leak: bob got salaries (groups hr) at rank 1 for question q2" in capsys.readouterr().err
