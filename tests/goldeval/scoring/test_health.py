"""Index health (goldeval/scoring/health.py) on a small corpus, and ``python -m goldeval
health``."""

import datetime
import json

import pytest

from goldeval.cli import main
from goldeval.formats.gold import DocumentState, Gold, GoldQuestion, GoldSpan, load_gold
from goldeval.formats.manifests import COLUMNS, read_manifest
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.health import Thresholds, check_index, crowding_of, documents_of

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
H1, H2, H3 = "1" * 64, "2" * 64, "3" * 64
HEADER = ",".join(COLUMNS) + "\n"


def days_ago(days: float) -> datetime.datetime:
    return NOW - datetime.timedelta(days=days)


def state(doc_id, version=1, digest=H1, modified=None, **extra):
    return DocumentState(
        doc_id=doc_id,
        version=version,
        content_hash=digest,
        source_modified_at=modified,
        searchable=extra.pop("searchable", True),
        **extra,
    )


DOCUMENTS = {
    # Re-imported 10 days ago as v2; the index still holds v1.
    "policy": state("policy", 2, H2, days_ago(10)),
    # Re-imported 4 days ago; the index gives only a version number.
    "travel": state("travel", 3, H3, days_ago(4)),
    "vpn": state("vpn", 1, H1, days_ago(30)),
    "leave": state("leave", 1, H1),  # never indexed
    "dup-a": state("dup-a", duplicate_group="g1"),
    "dup-b": state("dup-b", duplicate_group="g1", searchable=False),  # superseded by dup-a
    "dup-c": state("dup-c", duplicate_group="g1", searchable=False),
    "scan": state("scan", extraction_flags=("table_noise",)),
    "canary": state("canary", canary=True),
}


def manifest(text: str):
    parsed = read_manifest(HEADER + text)
    assert parsed.problems == []
    return parsed.rows


INDEX = manifest(
    f"policy,1,{H1},0,100,2026-11-20T00:00:00Z,minilm,r1,384\n"
    f"policy,1,{H1},100,200,2026-11-20T00:00:00Z,minilm,r1,384\n"
    "travel,2,,,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    f"vpn,,{H1},,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    f"dup-a,1,{H1},,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    f"dup-b,1,{H1},,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    f"dup-c,1,{H1},,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    f"scan,1,{H1},,,2026-11-25T00:00:00Z,minilm,r1,384\n"
    "gone,1,,,,2026-11-25T00:00:00Z,minilm,r1,384\n"
)


def run(name, rankings):
    return Run(
        name=name, rankings={q: Ranking([Passage(*p) for p in ps]) for q, ps in rankings.items()}
    )


def test_a_document_reimported_after_indexing_is_stale_with_its_lag():
    report = check_index(documents=DOCUMENTS, rows=INDEX, now=NOW)
    stale = report["stale"]
    assert [(r["doc_id"], r["basis"], r["lag_days"]) for r in stale["rows"]] == [
        ("policy", "hash", 10.0),
        ("travel", "version", 4.0),
    ]
    # Searchable content: policy, travel, vpn, leave, dup-a, scan (canaries and hidden copies not).
    assert stale["of"] == 6 and stale["share"] == pytest.approx(2 / 6)
    assert stale["lag_days"] == {"p50": 7.0, "p95": 9.7, "oldest": 10.0, "unknown": 0}
    assert stale["rows"][0]["indexed_versions"] == [1] and stale["rows"][0]["newest_version"] == 2


def test_missing_superseded_and_unknown_documents_are_listed():
    report = check_index(documents=DOCUMENTS, rows=INDEX, now=NOW)
    assert report["missing"]["doc_ids"] == ["leave"]
    assert report["not_searchable_indexed"]["doc_ids"] == ["dup-b", "dup-c"]
    assert report["unknown"]["doc_ids"] == ["gone"] and report["unknown"]["lines"] == {"gone": 10}
    assert report["index"]["documents"] == 8 and report["index"]["rows"] == 9


def test_how_often_runs_return_documents_they_should_not():
    team = run(
        "team", {"q1": [("gone",), ("vpn",)], "q2": [("dup-b",), ("dup-b",)], "q3": [("vpn",)]}
    )
    report = check_index(documents=DOCUMENTS, rows=INDEX, now=NOW, runs=[team], k=5)
    returned = report["runs"]["team"]["unwanted_returned"]
    assert returned["results"] == 3 and returned["questions"] == 2
    assert returned["share_of_questions"] == pytest.approx(2 / 3)
    assert returned["by_document"] == {"dup-b": 2, "gone": 1}


def test_two_revisions_of_one_model_fail_the_mix_check():
    rows = INDEX + manifest("leave,1,,,,2026-11-30T00:00:00Z,minilm,r2,384\n")
    report = check_index(
        documents=DOCUMENTS, rows=rows, now=NOW, thresholds=Thresholds(fail_on_model_mix=True)
    )
    assert report["index"]["mixed"]
    assert [(m["label"], m["rows"]) for m in report["index"]["models"]] == [
        ("minilm@r1 (384 dimensions)", 9),
        ("minilm@r2 (384 dimensions)", 1),
    ]
    assert [c["check"] for c in report["crossed"]] == ["model_mix"]
    clean = check_index(
        documents=DOCUMENTS, rows=INDEX, now=NOW, thresholds=Thresholds(fail_on_model_mix=True)
    )
    assert not clean["index"]["mixed"] and clean["crossed"] == []


def test_a_run_whose_results_come_from_two_models_is_mixed_per_question():
    rows = manifest(
        "policy,2,,0,100,2026-11-30T00:00:00Z,minilm,r1,384\n"
        "policy,2,,100,200,2026-11-30T00:00:00Z,minilm,r2,384\n"
    )
    team = run(
        "team", {"q1": [("policy", 0, 50)], "q2": [("policy", 10, 20), ("policy", 150, 160)]}
    )
    mix = check_index(documents=DOCUMENTS, rows=rows, now=NOW, runs=[team])["runs"]["team"][
        "model_mix"
    ]
    assert mix["questions"] == 1 and mix["rows"][0]["question_id"] == "q2"


def test_three_members_of_one_near_duplicate_group_in_the_top_five():
    groups = {"dup-a": "g1", "dup-b": "g1", "dup-c": "g1"}
    top = [Passage("dup-a"), Passage("x"), Passage("dup-b"), Passage("dup-c"), Passage("y")]
    assert crowding_of(top, groups) == pytest.approx(2 / 5)
    # Chunks of one document are not its duplicates.
    assert crowding_of([Passage("dup-a", 0, 5), Passage("dup-a", 5, 9)], groups) == 0
    team = run("team", {"q1": [p[:1] for p in top], "q2": [("vpn",), ("x",)]})
    report = check_index(
        documents=DOCUMENTS,
        rows=INDEX,
        now=NOW,
        runs=[team],
        k=5,
        thresholds=Thresholds(max_crowding=0.1),
    )
    crowding = report["runs"]["team"]["crowding"]
    assert crowding["per_question"] == {"q1": 0.4} and crowding["mean"] == pytest.approx(0.2)
    assert [c["check"] for c in report["crossed"]] == ["crowding"]


def test_short_lists_per_run_and_per_test_user():
    team = run("team", {"q1": [("vpn",)] * 3, "q2": [("vpn",)] * 5})
    alice = run("alice", {"q1": [("vpn",)] * 2, "q2": [("vpn",)] * 2})
    report = check_index(
        documents=DOCUMENTS, rows=INDEX, now=NOW, runs=[team], test_users=[alice], k=5
    )
    assert report["runs"]["team"]["short_lists"]["per_question"] == {"q1": 3}
    assert report["runs"]["team"]["short_lists"]["share"] == 0.5
    assert report["test_users"]["alice"]["share"] == 1.0


def test_recall_split_by_extraction_shows_numeric_questions_scoring_zero():
    gold = Gold(
        questions={
            "numbers": GoldQuestion("numbers", "", True, (GoldSpan("scan", 0, 10, 2),)),
            "words": GoldQuestion("words", "", True, (GoldSpan("vpn", 0, 10, 2),)),
        }
    )
    team = run("team", {"numbers": [("vpn", 0, 10)], "words": [("vpn", 0, 10)]})
    report = check_index(documents=DOCUMENTS, rows=INDEX, now=NOW, runs=[team], gold=gold, k=5)
    groups = report["runs"]["team"]["extraction"]["groups"]
    assert groups["table_noise"] == {"questions": 1, "recall@5": 0.0, "zero_recall": ["numbers"]}
    assert groups["flagged"]["questions"] == 1 and groups["clean"]["recall@5"] == 1.0


def test_thresholds_on_stale_share_and_lag():
    report = check_index(
        documents=DOCUMENTS,
        rows=INDEX,
        now=NOW,
        thresholds=Thresholds(max_stale=0.01, max_lag_days=7),
    )
    assert [(c["check"], c["value"]) for c in report["crossed"]] == [
        ("stale", pytest.approx(1 / 3)),
        ("lag", 10.0),
    ]
    assert "2 of 6 searchable documents are stale" in report["crossed"][0]["message"]
    relaxed = check_index(
        documents=DOCUMENTS,
        rows=INDEX,
        now=NOW,
        thresholds=Thresholds(max_stale=0.5, max_lag_days=11),
    )
    assert relaxed["crossed"] == []


def test_without_hash_version_or_times_staleness_is_unverifiable():
    rows = manifest("leave,,,,,2026-11-30T00:00:00Z,minilm,r1,384\n")
    report = check_index(documents=DOCUMENTS, rows=rows, now=NOW)
    assert report["stale"]["unverifiable"]["doc_ids"] == ["leave"]
    assert report["stale"]["documents"] == 0


# --- the CLI --------------------------------------------------------------------------------------


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "gold.jsonl").write_text(
        json.dumps(
            {
                "question_id": "q1",
                "question": "?",
                "spans": [{"doc_id": "policy", "start": 0, "end": 5, "grade": 2, "version": 2}],
            }
        )
        + "\n"
    )
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": d, "version": v, "title": "", "text": "Some text here."}) + "\n"
            for d, v in (("policy", 2), ("vpn", 1))
        )
    )
    (folder / "documents.jsonl").write_text(
        json.dumps(
            {
                "doc_id": "policy",
                "version": 2,
                "content_hash": H2,
                "source_modified_at": "2026-11-21T12:00:00+00:00",
                "searchable": True,
            }
        )
        + "\n"
        + json.dumps(
            {
                "doc_id": "vpn",
                "version": 1,
                "content_hash": H1,
                "source_modified_at": None,
                "searchable": True,
            }
        )
        + "\n"
    )
    return folder


def write_manifest(tmp_path, text):
    path = tmp_path / "index.csv"
    path.write_text(HEADER + text)
    return path


def test_the_cli_exits_1_on_a_crossed_threshold_and_writes_json(bundle, tmp_path, capsys):
    path = write_manifest(
        tmp_path,
        f"policy,1,{H1},,,2026-11-20T00:00:00Z,minilm,r1,384\n"
        f"vpn,1,{H1},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
    )
    arguments = ["health", "--gold", str(bundle), "--manifest", str(path), "--now", NOW.isoformat()]
    assert main([*arguments, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["stale"]["rows"][0]["doc_id"] == "policy"
    assert report["stale"]["rows"][0]["lag_days"] == 10.0
    assert main([*arguments, "--max-stale", "0.01", "--max-lag-days", "7"]) == 1
    captured = capsys.readouterr()
    assert "| stale | 50.0% of 2 searchable | 1 |" in captured.out
    assert "threshold crossed: the oldest stale document lags 10.0 days (limit 7)" in captured.err
    # A NaN threshold would never be crossed: refused as bad input.
    for option in ("--max-stale", "--max-lag-days", "--max-crowding"):
        with pytest.raises(SystemExit) as refused:
            main([*arguments, option, "nan"])
        assert refused.value.code == 2
        assert "expected a finite number, got 'nan'" in capsys.readouterr().err


def test_the_cli_exits_2_with_file_and_line_on_a_bad_manifest(bundle, tmp_path, capsys):
    path = write_manifest(tmp_path, "policy,1,,,,soon,minilm,r1,384\nvpn,1,,,,,m,r,1\n")
    assert main(["health", "--gold", str(bundle), "--manifest", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}:2: indexed_at 'soon' is not an ISO 8601 time" in err
    assert f"error: {path}:3: missing indexed_at" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["health", "--gold", str(bundle), "--manifest", str(empty)]) == 2
    assert "empty.jsonl:1: the manifest is empty" in capsys.readouterr().err


def test_the_cli_fails_on_model_mix_only_when_asked(bundle, tmp_path, capsys):
    path = write_manifest(
        tmp_path,
        f"policy,2,{H2},,,2026-11-30T00:00:00Z,minilm,r1,384\n"
        f"vpn,1,{H1},,,2026-11-30T00:00:00Z,minilm,r2,384\n",
    )
    arguments = ["health", "--gold", str(bundle), "--manifest", str(path)]
    assert main(arguments) == 0
    assert main([*arguments, "--fail-on-model-mix"]) == 1
    assert "the index mixes models: minilm@r1 (384 dimensions)" in capsys.readouterr().err


def test_a_bundle_from_before_documents_jsonl_is_checked_by_its_corpus(bundle, tmp_path):
    (bundle / "documents.jsonl").unlink()
    documents = documents_of(load_gold(bundle))
    assert sorted(documents) == ["policy", "vpn"] and documents["policy"].version == 2
    assert documents["policy"].source_modified_at is None


OLD_TEXT = (
    "Employees may carry over at most five days of unused annual leave into the next year.\n\n"
    "Laptops are returned to the service desk on the last working day of the contract."
)
NEW_TEXT = "Employees may carry over at most ten days of unused annual leave into the next year.\n"


def test_gold_spans_on_a_changed_document_are_reanchored_or_listed(bundle, tmp_path, capsys):
    changed = OLD_TEXT.index("Laptops")
    (bundle / "gold.jsonl").write_text(
        json.dumps(
            {
                "question_id": "q1",
                "question": "How many days carry over?",
                "spans": [
                    {
                        "doc_id": "policy",
                        "start": 0,
                        "end": 86,
                        "grade": 2,
                        "version": 1,
                        "quote": OLD_TEXT[:86],
                    },
                ],
            }
        )
        + "\n"
        + json.dumps(
            {
                "question_id": "q2",
                "question": "Where do laptops go?",
                "spans": [
                    {
                        "doc_id": "policy",
                        "start": changed,
                        "end": len(OLD_TEXT),
                        "grade": 2,
                        "version": 1,
                        "quote": OLD_TEXT[changed:],
                    },
                ],
            }
        )
        + "\n"
    )
    (bundle / "corpus.jsonl").write_text(
        json.dumps({"doc_id": "policy", "version": 1, "title": "", "text": OLD_TEXT})
        + "\n"
        + json.dumps({"doc_id": "policy", "version": 2, "title": "", "text": NEW_TEXT})
        + "\n"
        + json.dumps({"doc_id": "vpn", "version": 1, "title": "", "text": "VPN text."})
        + "\n"
    )
    path = write_manifest(tmp_path, f"policy,2,{H2},,,2026-11-30T00:00:00Z,minilm,r1,384\n")
    arguments = ["health", "--gold", str(bundle), "--manifest", str(path)]
    assert main([*arguments, "--format", "json"]) == 0
    spans = json.loads(capsys.readouterr().out)["gold_spans"]
    assert (spans["on_older_versions"], spans["reanchored"], spans["not_reanchored"]) == (2, 1, 1)
    (lost,) = spans["rows"]
    assert (lost["question_id"], lost["question"], lost["version"], lost["newest_version"]) == (
        "q2",
        "Where do laptops go?",
        1,
        2,
    )
    # q1's span moved onto version 2, but its words changed there (five -> ten days): the
    # facts changed, told apart with the word diff.
    assert spans["facts_changed"] == 1
    (changed_row,) = spans["facts_changed_rows"]
    assert (changed_row["question_id"], changed_row["version"], changed_row["newest_version"]) == (
        "q1",
        1,
        2,
    )
    assert "[-five-] {+ten+}" in changed_row["diff"]
    assert changed_row["new_quote"].startswith("Employees may carry over at most ten days")
    assert main(arguments) == 0
    out = capsys.readouterr().out
    assert (
        "2 span(s) point at an older version: 1 re-anchored onto the newest "
        "(1 of them with the facts changed), 1 not" in out
    )
    assert "| q2 | policy | v1 → v2 |" in out
    assert "### The facts changed" in out
    assert "- q1, policy v1 → v2: Employees may carry over at most [-five-] {+ten+} days" in out
