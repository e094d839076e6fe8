"""Issue 33, items 1 and 2: the way from a production sample to the labellers ("Assign it")
opens the Assignments page with its pool chosen, and the page's two planning forms, whose
fields have the same names, have distinct element ids (a label of one never ticks a box of the
other); every page's ids and links are crawled in tests/test_links.py."""

import re

import pytest
from django.urls import reverse

from labelling.models import Assignment, Pool
from labelling.services import assignments as services
from tests.factories import grading_pool, login


@pytest.fixture
def people(project, member):
    return {
        "lea": member("lead", username="lea"),
        "ana": member("labeller", username="ana"),
        "ben": member("labeller", username="ben"),
    }


def selected_pool(html: str, select_id: str) -> str:
    select = re.search(rf'<select name="pool"[^>]*id="{select_id}"[^>]*>(.*?)</select>', html, re.S)
    assert select, select_id
    return re.search(r'<option value="(\d+)" selected>', select.group(1)).group(1)


def test_a_link_to_planning_opens_the_assignments_page_with_that_pool_chosen(project, people):
    older, newer = grading_pool(project), grading_pool(project)
    lead = login(people["lea"])
    for name in ("plan-assignments", "add-second-labellers"):
        url = reverse(f"labelling:{name}", args=[project.slug])
        response = lead.get(url, {"pool": older.pk})
        assert response.status_code == 302, name
        assert response["Location"] == (
            reverse("labelling:list-assignments", args=[project.slug]) + f"?pool={older.pk}#plan"
        )
        # Not a number: the page, with no pool named.
        assert lead.get(url, {"pool": "x"})["Location"].endswith("/assignments/#plan")
    page = lead.get(reverse("labelling:list-assignments", args=[project.slug]), {"pool": older.pk})
    html = page.content.decode()
    assert page.status_code == 200 and 'id="plan"' in html
    assert selected_pool(html, "id_pool") == str(older.pk) != str(newer.pk)
    assert not Assignment.objects.exists()  # a GET plans nothing


def test_only_leads_reach_planning_by_get(project, people):
    url = reverse("labelling:plan-assignments", args=[project.slug])
    assert login(people["ana"]).get(url).status_code == 403


def test_the_two_planning_forms_have_their_own_ids_and_still_post(project, people):
    pool = grading_pool(project, questions=4, passages=1)
    services.plan_assignments(pool=pool, labellers=[people["ana"]], double_share=0)
    lead = login(people["lea"])
    html = lead.get(reverse("labelling:list-assignments", args=[project.slug])).content.decode()
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    # Each label names a box of its own form: ben under "Second labellers" is id_second_….
    plan, seconds = html.split("<h2>Double-label more questions</h2>")
    ben = people["ben"].pk
    assert re.search(rf'<label for="id_labellers_\d+"><input[^>]*value="{ben}"', plan)
    assert re.search(rf'<label for="id_second_labellers_\d+"><input[^>]*value="{ben}"', seconds)
    # The posted names are the same as before.
    response = lead.post(
        reverse("labelling:add-second-labellers", args=[project.slug]),
        {"pool": pool.pk, "labellers": [ben], "double_percent": 50, "seed": 0},
    )
    assert response.status_code == 302
    assert set(Assignment.objects.filter(pool=pool, slot=2).values_list("labeller", flat=True)) == {
        ben
    }


def test_a_refused_plan_shows_the_page_again_with_distinct_ids(project, people):
    pool = grading_pool(project, questions=4, passages=1)
    services.plan_assignments(pool=pool, labellers=[people["ana"]], double_share=0)
    lead = login(people["lea"])
    for name, data in (
        ("plan-assignments", {"pool": pool.pk, "double_percent": "300", "seed": "0"}),
        ("add-second-labellers", {"pool": pool.pk, "seed": "0"}),
    ):
        response = lead.post(reverse(f"labelling:{name}", args=[project.slug]), data)
        assert response.status_code == 400, name
        ids = re.findall(r'\sid="([^"]+)"', response.content.decode())
        assert len(ids) == len(set(ids)), name


def test_assign_it_on_a_pool_still_building_says_so_instead_of_choosing_another(project, people):
    ready = grading_pool(project)
    building = grading_pool(project)
    Pool.objects.filter(pk=building.pk).update(state="building")
    lead = login(people["lea"])
    url = reverse("labelling:list-assignments", args=[project.slug])
    html = lead.get(url, {"pool": building.pk}).content.decode()
    assert f"{building.name} is building: it can be planned here once" in html
    assert reverse("labelling:show-pool", args=[project.slug, building.pk]) in html
    html = lead.get(url, {"pool": ready.pk}).content.decode()
    assert "it can be planned here once" not in html
    assert selected_pool(html, "id_pool") == str(ready.pk)
