"""Index health's shared fixtures."""

import datetime

import pytest

from corpus.services import retrieval
from health.services import manifests
from tests.factories import add_documents
from tests.health.test_index_health import GOOD, NEW_POLICY, POLICY_TEXT, VPN, reimport


@pytest.fixture
def stale_project(project, member):
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN))
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    manifests.import_manifest(retriever=team, data=GOOD, file_name="index.csv")
    modified = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=9)
    reimport(project, "policy", NEW_POLICY, modified)
    return team
