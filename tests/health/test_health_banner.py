"""Issue 33, item 12: the Index health page's banner says what the page's own figures say (the
documents the viewer may see, now), never the daily check's (the documents no access group
restricts, then), and does not link to the page it is on; the project page's banner, which is
the daily check's, says so and links to Index health."""

import datetime
import re

from django.urls import reverse

from corpus.services import projects, retrieval
from health.services import manifests
from health.tasks import check_index_health
from tests.factories import add_documents, login
from tests.health.test_index_health import (
    NEW_POLICY,
    POLICY_TEXT,
    SECRET,
    VPN,
    manifest_text,
    reimport,
    sha,
)

# Three documents indexed, one of them restricted to hr; then two of them change.
INDEXED = manifest_text(
    f"policy,1,{sha(POLICY_TEXT)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
    f"vpn,1,{sha(VPN)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
    f"secret,1,{sha(SECRET)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
)


def banner_of(html: str) -> str:
    found = re.search(
        r'<div class="banner warn" role="alert" id="index-health-banner">(.*?)</div>', html, re.S
    )
    return found.group(1) if found else ""


def test_the_page_banner_agrees_with_the_page_and_the_project_banner_names_its_basis(
    project, member
):
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN), ("secret", SECRET, ["hr"]))
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    manifests.import_manifest(retriever=team, data=INDEXED, file_name="index.csv")
    modified = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=9)
    reimport(project, "policy", NEW_POLICY, modified)
    reimport(project, "secret", SECRET + " Revised.", modified)
    lead = member("lead", username="lea")
    projects.set_access_group_members(project=project, name="hr", users=[lead])
    check_index_health.apply()  # the daily check: policy and vpn only (1 of 2 stale)

    client = login(lead)
    url = reverse("health:show-index-health", args=[project.slug])
    html = client.get(url).content.decode()
    banner = banner_of(html)
    # lea may see the restricted document: 2 of 3 are stale for her, on the page and its banner.
    assert "2 of 3 searchable documents are stale" in html
    assert "the figures below cross" in banner
    assert "2 of 3 searchable documents are stale" in banner
    assert "1 of 2" not in banner and "1 of 2" not in html.split("<h2>History</h2>")[0]
    assert "href" not in banner  # no link to the page it is on

    project_banner = client.get(
        reverse("health:show-health-banner", args=[project.slug])
    ).content.decode()
    assert "the daily check of" in project_banner
    assert "over the documents no access group restricts" in project_banner
    assert "1 of 2 searchable documents are stale" in project_banner
    assert f'href="{url}"' in project_banner


def test_no_banner_when_the_page_s_figures_cross_nothing(project, member):
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN))
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    manifests.import_manifest(
        retriever=team,
        data=manifest_text(
            f"policy,1,{sha(POLICY_TEXT)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
            f"vpn,1,{sha(VPN)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
        ),
        file_name="index.csv",
    )
    html = login(member("lead")).get(reverse("health:show-index-health", args=[project.slug]))
    assert html.status_code == 200
    assert 'id="index-health-banner"' not in html.content.decode()
