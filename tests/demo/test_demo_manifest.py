"""The demo's team index manifest: a few stale documents and one mixed-model slice."""

import datetime

from corpus.services import retrieval
from demo.management.commands.load_demo import demo_index_manifest
from health.services import checks as index_health
from health.services import manifests
from tests.factories import POLICY_TEXT, VPN_TEXT, add_documents

PLAN = {
    "retriever": "team-search",
    "model": "m",
    "revision": "r1",
    "newer_revision": "r2",
    "dimension": 384,
    "stale": ["policy"],
    "mixed": ["vpn"],
    "missing": ["gym"],
    "deleted": ["old-travel"],
}


def test_the_demo_manifest_fills_the_index_health_figures(project):
    add_documents(
        project, ("policy", POLICY_TEXT), ("vpn", VPN_TEXT), ("gym", "The gym is open at six.")
    )
    now = datetime.datetime.now(datetime.UTC)
    team = retrieval.add_retriever(project=project, name="team-search", kind="run")
    manifests.import_manifest(
        retriever=team, data=demo_index_manifest(project, now=now, plan=PLAN), file_name="m.csv"
    )
    report = index_health.retriever_health(retriever=team).report
    assert [row["doc_id"] for row in report["stale"]["rows"]] == ["policy"]
    assert report["missing"]["doc_ids"] == ["gym"] and report["unknown"]["doc_ids"] == [
        "old-travel"
    ]
    assert report["index"]["mixed"] and len(report["index"]["models"]) == 2
