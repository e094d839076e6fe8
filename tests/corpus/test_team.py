"""Issue 14, item 12: a team is set up in the browser. Administrators create projects; a
project's admins add members with a role (creating the account with a one-time password or an
invitation link), create access groups and choose their members; the upload form restricts
documents to a group. Also the 403 page (item 17)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from corpus import jobs
from corpus.models import AccessGroup, Document, Job, Membership, Project
from corpus.services import projects
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory, login

User = get_user_model()


@pytest.fixture
def admin(project, member):
    return member("admin", username="adele")


def test_an_installation_administrator_creates_a_project_and_becomes_its_admin(db):
    boss = UserFactory(username="boss", is_staff=True, is_superuser=True)
    browser = login(boss)
    assert b"New project" in browser.get(reverse("corpus:list-projects")).content
    response = browser.post(
        reverse("corpus:add-project"), {"slug": "hr-gold", "name": "HR gold set"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("corpus:list-members", args=["hr-gold"])
    assert "Project HR gold set created; you are its admin." in response.content.decode()
    project = Project.objects.get(slug="hr-gold")
    assert Membership.objects.get(project=project, user=boss).role == "admin"
    again = browser.post(reverse("corpus:add-project"), {"slug": "hr-gold"})
    assert again.status_code == 400
    assert "already exists" in again.content.decode()
    bad = browser.post(reverse("corpus:add-project"), {"slug": "no spaces!"})
    assert bad.status_code == 400 and Project.objects.count() == 1


def test_anyone_else_gets_a_403_page_that_explains_and_keeps_the_menu(project, admin, member):
    lead = member("lead", username="lena")
    browser = login(lead)
    refused = browser.get(reverse("corpus:add-project"))
    assert refused.status_code == 403
    assert "administrator account of this installation" in refused.content.decode()
    assert Project.objects.count() == 1
    # Inside a project: the menu, the role and who can help.
    refused = browser.get(reverse("corpus:list-members", args=[project.slug]))
    body = refused.content.decode()
    assert refused.status_code == 403
    assert 'class="project-nav"' in body and "This needs the admin role" in body
    assert "You are a <strong>lead</strong>" in body and "adele" in body
    assert "Team</a>" not in body  # leads have no team pages


def test_an_admin_creates_an_account_with_a_one_time_password(project, admin):
    browser = login(admin)
    response = browser.post(
        reverse("corpus:create-account", args=[project.slug]),
        {
            "username": "nadia",
            "email": "nadia@example.org",
            "role": "labeller",
            "access": "password",
        },
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = re.search(r'id="one-time-password">([^<]+)<', response.content.decode()).group(1)
    nadia = User.objects.get(username="nadia")
    assert nadia.check_password(password) and nadia.email == "nadia@example.org"
    assert Membership.objects.get(project=project, user=nadia).role == "labeller"
    assert Client().login(username="nadia", password=password)
    # The same name again is a form error, never a second account.
    again = browser.post(
        reverse("corpus:create-account", args=[project.slug]),
        {"username": "Nadia", "role": "lead", "access": "password"},
    )
    assert again.status_code == 400 and "already exists" in again.content.decode()
    assert User.objects.filter(username__iexact="nadia").count() == 1


def test_an_invitation_link_lets_the_new_member_choose_a_password_once(project, admin):
    browser = login(admin)
    response = browser.post(
        reverse("corpus:create-account", args=[project.slug]),
        {"username": "omar", "role": "lead", "access": "invite"},
    )
    link = re.search(r'id="invitation-link" value="([^"]+)"', response.content.decode()).group(1)
    omar = User.objects.get(username="omar")
    assert not omar.has_usable_password()
    path = link.removeprefix("http://testserver")
    guest = Client()
    assert "Welcome, omar" in guest.get(path).content.decode()
    weak = guest.post(path, {"new_password1": "abc", "new_password2": "abc"})
    assert weak.status_code == 400 and "too short" in weak.content.decode()
    done = guest.post(
        path, {"new_password1": "a long passphrase 42", "new_password2": "a long passphrase 42"}
    )
    assert done.status_code == 302
    assert guest.get(reverse("corpus:show-project", args=[project.slug])).status_code == 200
    omar.refresh_from_db()
    assert omar.check_password("a long passphrase 42")
    used = Client().get(path)
    assert used.status_code == 400 and "does not work" in used.content.decode()
    # Once they have logged in, nobody but them can set their password.
    renew = login(admin).post(
        reverse(
            "corpus:renew-access",
            args=[project.slug, Membership.objects.get(user=omar).pk],
        ),
        {"access": "password"},
        follow=True,
    )
    assert "has logged in already" in renew.content.decode()
    assert omar.check_password("a long passphrase 42")


def test_no_admin_can_reset_the_password_of_someone_in_another_project(project, admin):
    elsewhere = ProjectFactory()
    shared = UserFactory(username="shared")
    MembershipFactory(project=project, user=shared)
    MembershipFactory(project=elsewhere, user=shared)
    assert not projects.may_renew_access(user=shared, admin=admin)
    membership = Membership.objects.get(project=project, user=shared)
    response = login(admin).post(
        reverse("corpus:renew-access", args=[project.slug, membership.pk]),
        {"access": "password"},
        follow=True,
    )
    assert "belongs to projects you do not administer" in response.content.decode()
    shared.refresh_from_db()
    assert shared.check_password(PASSWORD)


def test_bad_usernames_are_form_errors(project, admin):
    browser = login(admin)
    for name in ("two words", "x" * 151, "", "semi;colon"):
        response = browser.post(
            reverse("corpus:create-account", args=[project.slug]),
            {"username": name, "role": "labeller", "access": "invite"},
        )
        assert response.status_code == 400, name
    assert not User.objects.exclude(username="adele").exists()


def test_adding_an_existing_account_and_changing_roles(project, admin):
    carl = UserFactory(username="carl")
    elsewhere = ProjectFactory()
    MembershipFactory(project=elsewhere, user=carl)
    MembershipFactory(project=elsewhere, user=admin, role="admin")
    browser = login(admin)
    response = browser.post(
        reverse("corpus:add-member", args=[project.slug]),
        {"username": "carl", "role": "lead"},
        follow=True,
    )
    assert "carl is now a lead of" in response.content.decode()
    membership = Membership.objects.get(project=project, user=carl)
    browser.post(
        reverse("corpus:change-member", args=[project.slug, membership.pk]), {"role": "admin"}
    )
    assert Membership.objects.get(pk=membership.pk).role == "admin"
    bad = browser.post(
        reverse("corpus:change-member", args=[project.slug, membership.pk]), {"role": "owner"}
    )
    assert bad.status_code == 400


def test_a_project_always_keeps_an_admin(project, admin):
    mine = Membership.objects.get(project=project, user=admin)
    browser = login(admin)
    response = browser.post(
        reverse("corpus:change-member", args=[project.slug, mine.pk]),
        {"role": "labeller"},
    )
    assert response.status_code == 400
    assert "the project&#x27;s only admin" in response.content.decode()
    response = browser.post(
        reverse("corpus:remove-member", args=[project.slug, mine.pk]),
        {"confirm": "yes"},
        follow=True,
    )
    assert "only admin" in response.content.decode()
    assert Membership.objects.filter(pk=mine.pk, role="admin").exists()


def test_removing_a_member_takes_them_out_of_its_access_groups(project, admin, member):
    ann = member("labeller", username="ann")
    projects.set_access_group_members(project=project, name="hr", users=[ann, admin])
    membership = Membership.objects.get(project=project, user=ann)
    response = login(admin).post(
        reverse("corpus:remove-member", args=[project.slug, membership.pk]),
        {"confirm": "yes"},
        follow=True,
    )
    assert "ann is no longer a member" in response.content.decode()
    assert not AccessGroup.objects.get(name="hr").members.filter(pk=ann.pk).exists()
    assert login(ann).get(reverse("corpus:show-project", args=[project.slug])).status_code == 404


def test_access_groups_are_created_and_their_members_set(project, admin, member):
    ann = member("labeller", username="ann")
    stranger = UserFactory(username="stranger")
    browser = login(admin)
    response = browser.post(
        reverse("corpus:list-access-groups", args=[project.slug]), {"name": "hr-confidential"}
    )
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    assert response["Location"] == reverse(
        "corpus:edit-access-group", args=[project.slug, group.pk]
    )
    edit = reverse("corpus:edit-access-group", args=[project.slug, group.pk])
    assert browser.post(edit, {"members": [ann.pk]}).status_code == 302
    assert list(group.members.all()) == [ann]
    # Only members of the project can be chosen.
    refused = browser.post(edit, {"members": [stranger.pk]})
    assert refused.status_code == 400 and list(group.members.all()) == [ann]
    for name in ("hr-confidential", "x" * 101, "tab\there", "rtl\u202eevil", "  "):
        bad = browser.post(
            reverse("corpus:list-access-groups", args=[project.slug]), {"name": name}
        )
        assert bad.status_code == 400, name
    assert AccessGroup.objects.filter(project=project).count() == 1


def test_the_access_groups_page_tells_an_outsider_admin_nothing_of_their_documents(
    project, admin, member
):
    from tests.factories import add_documents

    projects.set_access_group_members(project=project, name="hr", users=[])
    url = reverse("corpus:list-access-groups", args=[project.slug])
    before = login(admin).get(url).content
    add_documents(project, ("salaries", "Band C pays 52,000 euros.", ["hr"]))
    after = login(admin).get(url).content
    token = re.compile(rb'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')
    assert token.sub(rb"\1-", before) == token.sub(rb"\1-", after)
    projects.set_access_group_members(project=project, name="hr", users=[admin])
    assert b"<td>1</td>" in login(admin).get(url).content


def test_the_upload_form_restricts_new_documents_to_an_access_group(project, admin, member):
    from django.core.files.uploadedfile import SimpleUploadedFile

    lead = member("lead", username="lena")
    projects.set_access_group_members(project=project, name="hr", users=[admin])
    projects.set_access_group_members(project=project, name="legal", users=[lead])
    upload = reverse("corpus:upload-documents", args=[project.slug])
    # A lead may restrict only to groups they are in; an admin to any.
    assert "legal" in login(lead).get(upload).content.decode()
    assert ">hr<" not in login(lead).get(upload).content.decode()
    hr = AccessGroup.objects.get(name="hr")
    refused = login(lead).post(
        upload, {"files": [SimpleUploadedFile("a.txt", b"Secret text.")], "access_groups": [hr.pk]}
    )
    assert refused.status_code == 400
    response = login(admin).post(
        upload,
        {
            "files": [SimpleUploadedFile("salaries.txt", b"Band C pays 52,000 euros.")],
            "access_groups": [hr.pk],
        },
    )
    assert response.status_code == 302
    job = Job.objects.get(kind="import_uploads")
    jobs.task_named(job.task)(job.pk)
    document = Document.objects.get(project=project, doc_id="salaries.txt")
    assert [g.name for g in document.access_groups.all()] == ["hr"]
    assert not Document.objects.filter(pk=document.pk).visible_to(lead).exists()


# Issue 32, item 7: admins act on their own projects' people -----------------------------------


def add(browser, project, username, role="lead"):
    return browser.post(
        reverse("corpus:add-member", args=[project.slug]),
        {"username": username, "role": role},
        follow=True,
    )


CSRF = re.compile(rb'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')
WHEN = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d")


def test_an_account_outside_the_admins_projects_is_invited_and_usernames_cannot_be_tried(
    project, admin
):
    """An account of another project, the installation's superuser, a deactivated colleague and
    a name nobody has all get the same answer (an invitation waiting), byte for byte once the
    name is set aside; none becomes a member; the members page lists each invitation alike."""
    other = ProjectFactory()
    MembershipFactory(project=other, user=UserFactory(username="dave"))
    UserFactory(username="root", is_staff=True, is_superuser=True)
    # Shares a project with the admin, where the admin is only a labeller: not theirs to add.
    shared = ProjectFactory()
    MembershipFactory(project=shared, user=UserFactory(username="erin"))
    MembershipFactory(project=shared, user=admin, role="labeller")
    gone = UserFactory(username="fred", is_active=False)
    administered = ProjectFactory()
    MembershipFactory(project=administered, user=gone)
    MembershipFactory(project=administered, user=admin, role="admin")
    browser = login(admin)
    answers = {}
    for name in ("dave", "root", "erin", "fred", "nobody1"):
        response = add(browser, project, name)
        assert response.status_code == 200
        body = WHEN.sub(b"", CSRF.sub(rb"\1-", response.content))
        answers[name] = body.replace(name.encode(), b"NAME")
        assert f"{name} is invited as a lead" in response.content.decode()
    first = answers.pop("dave")
    # The invitations listed so far differ in length only by the names; compare the message.
    for name, body in answers.items():
        message = re.search(rb'<li class="success" role="status">(.*?)</li>', body)
        assert message and message.group(1) == re.search(
            rb'<li class="success" role="status">(.*?)</li>', first
        ).group(1), name
    assert set(
        Membership.objects.filter(project=project).values_list("user__username", flat=True)
    ) == {"adele"}
    listed = browser.get(reverse("corpus:list-members", args=[project.slug])).content.decode()
    for name in ("dave", "root", "erin", "fred", "nobody1"):
        assert f"<td>{name}</td>" in listed
    # The old refusal named missing accounts; nothing says so now.
    assert "No account has this username" not in listed


def test_the_answer_to_an_invitation_is_the_same_for_an_account_and_for_no_account(project, admin):
    UserFactory(username="dave")
    browser = login(admin)
    dave = add(browser, project, "dave")
    ghost = add(browser, project, "gost")
    assert dave.status_code == ghost.status_code == 200
    # Everything but the name (and the list of invitations, which now holds both) reads alike.
    for response, name in ((dave, b"dave"), (ghost, b"gost")):
        response.normalised = WHEN.sub(b"", CSRF.sub(rb"\1-", response.content)).replace(
            name, b"NAME"
        )
    strip = re.compile(rb'<table class="invitations">.*?</table>', re.S)
    assert strip.sub(b"", dave.normalised) == strip.sub(b"", ghost.normalised)


def test_an_invited_account_accepts_and_no_one_else_can(project, admin, settings):
    dave = UserFactory(username="dave")
    MembershipFactory(project=ProjectFactory(), user=dave)
    add(login(admin), project, "Dave", role="lead")
    assert not Membership.objects.filter(project=project, user=dave).exists()
    join = reverse("corpus:join-project", args=[project.slug])
    # Someone else cannot take it, nor can a GET.
    intruder = UserFactory(username="mallory")
    assert login(intruder).post(join).status_code == 404
    assert login(dave).get(join).status_code == 405
    assert not Membership.objects.filter(project=project, user__in=[dave, intruder]).exists()
    browser = login(dave)
    projects_page = browser.get(reverse("corpus:list-projects")).content.decode()
    assert "adele invites you to" in projects_page and "as a lead" in projects_page
    response = browser.post(join, follow=True)
    assert response.status_code == 200 and "Welcome to" in response.content.decode()
    assert Membership.objects.get(project=project, user=dave).role == "lead"
    # Used once: the page no longer offers it, and a second accept is a 404.
    assert "invites you" not in browser.get(reverse("corpus:list-projects")).content.decode()
    Membership.objects.filter(project=project, user=dave).delete()
    assert browser.post(join).status_code == 404


def test_an_invitation_lapses(project, admin, settings):
    from datetime import timedelta

    from corpus.models import ProjectInvitation

    dave = UserFactory(username="dave")
    add(login(admin), project, "dave")
    ProjectInvitation.objects.update(
        created_at=ProjectInvitation.objects.get().created_at
        - timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1)
    )
    assert login(dave).post(reverse("corpus:join-project", args=[project.slug])).status_code == 404
    assert (
        "dave"
        not in login(admin)
        .get(reverse("corpus:list-members", args=[project.slug]))
        .content.decode()
        .split("Add an existing account")[0]
        .split("</table>", 1)[1]
    )


def test_a_bad_username_is_a_form_error_naming_the_field(project, admin):
    browser = login(admin)
    for name in ("two words", "x" * 151, "", "semi;colon", "nul\x00"):
        response = browser.post(
            reverse("corpus:add-member", args=[project.slug]), {"username": name, "role": "lead"}
        )
        assert response.status_code == 400, name
    from corpus.models import ProjectInvitation

    assert not ProjectInvitation.objects.exists()


def test_access_group_changes_are_recorded_and_shown_to_the_admins(project, admin, member):
    from corpus.models import AccessGroupChange

    ann = member("labeller", username="ann")
    lena = member("lead", username="lena")
    group = projects.create_access_group(project=project, name="hr-confidential")
    edit = reverse("corpus:edit-access-group", args=[project.slug, group.pk])
    browser = login(admin)
    assert browser.post(edit, {"members": [ann.pk, admin.pk]}).status_code == 302
    assert browser.post(edit, {"members": [admin.pk]}).status_code == 302
    rows = list(AccessGroupChange.objects.order_by("pk"))
    seen = [(r.changed_by_name, r.member_name, r.added, r.self_added) for r in rows]
    assert sorted(seen[:2]) == [("adele", "adele", True, True), ("adele", "ann", True, False)]
    assert seen[2:] == [("adele", "ann", False, False)]
    assert all(r.changed_at and r.group_name == "hr-confidential" for r in rows)
    for url in (edit, reverse("corpus:list-access-groups", args=[project.slug])):
        page = browser.get(url).content.decode()
        assert page.count("added themselves") == 1
        assert "removed" in page and "<td>ann</td>" in page
    # Leads never see the record (the team pages are the admins').
    assert login(lena).get(edit).status_code == 403
    # Removing a member from the project records their removal from each group.
    projects.set_access_group_members(project=project, name="hr-confidential", users=[admin, ann])
    membership = Membership.objects.get(project=project, user=ann)
    browser.post(
        reverse("corpus:remove-member", args=[project.slug, membership.pk]), {"confirm": "yes"}
    )
    last = AccessGroupChange.objects.order_by("-pk").first()
    assert (last.changed_by_name, last.member_name, last.added) == ("adele", "ann", False)
    # A command records its changes too, as no one's.
    scripted = AccessGroupChange.objects.filter(changed_by__isnull=True, added=True)
    assert list(scripted.values_list("member_name", flat=True)) == ["ann"]
    assert "a command or script" in browser.get(edit).content.decode()


def test_the_admin_sites_group_changes_are_recorded_and_the_record_is_read_only(project, admin):
    from corpus.models import AccessGroupChange

    boss = UserFactory(username="boss", is_staff=True, is_superuser=True)
    group = projects.create_access_group(project=project, name="legal")
    client = login(boss)
    url = reverse("admin:corpus_accessgroup_change", args=[group.pk])
    response = client.post(url, {"name": "legal", "project": project.pk, "members": [boss.pk]})
    assert response.status_code == 302
    change = AccessGroupChange.objects.get()
    assert change.changed_by == boss and change.self_added
    record = reverse("admin:corpus_accessgroupchange_change", args=[change.pk])
    assert client.post(record, {"added": "0"}).status_code == 403
    delete = reverse("admin:corpus_accessgroupchange_delete", args=[change.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert AccessGroupChange.objects.filter(pk=change.pk, added=True).exists()


def test_removing_a_member_asks_first(project, admin, member):
    ann = member("labeller", username="ann")
    projects.set_access_group_members(project=project, name="hr", users=[ann, admin])
    membership = Membership.objects.get(project=project, user=ann)
    url = reverse("corpus:remove-member", args=[project.slug, membership.pk])
    browser = login(admin)
    members_page = browser.get(reverse("corpus:list-members", args=[project.slug]))
    assert f'href="{url}"' in members_page.content.decode()
    asked = browser.get(url)
    page = asked.content.decode()
    assert asked.status_code == 200 and "Remove ann from" in page and "hr" in page
    # A POST without the confirmation asks again and removes nothing.
    again = browser.post(url)
    assert again.status_code == 400 and "Tick the box to confirm." in again.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()
    # Only the project's admins are asked at all.
    assert login(member("lead", username="lena")).get(url).status_code == 403
    assert login(ann).get(url).status_code in (403, 404)
    assert Membership.objects.filter(pk=membership.pk).exists()
    done = browser.post(url, {"confirm": "yes"}, follow=True)
    assert "ann is no longer a member" in done.content.decode()
    assert not Membership.objects.filter(pk=membership.pk).exists()
