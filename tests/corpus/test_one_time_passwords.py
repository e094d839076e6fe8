"""Issue 33 item 16: the one-time password an admin gives a new account forces a change at
first log-in. Every other page sends its owner to the password change until they choose their
own; logging out stays open; any change of password ends it."""

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from corpus.models import Membership, OneTimePassword
from corpus.services import projects
from tests.factories import PASSWORD, MembershipFactory, login

User = get_user_model()
NEW = "a pass phrase of my own"


@pytest.fixture
def admin(project):
    return MembershipFactory(project=project, role="admin").user


def created_with_one_time_password(project, admin) -> str:
    page = login(admin).post(
        reverse("corpus:create-account", args=[project.slug]),
        {"username": "nadia", "role": "labeller", "access": "password"},
    )
    assert page.status_code == 200
    assert "choose their own password" in page.content.decode()
    return re.search(r'id="one-time-password">([^<]+)<', page.content.decode()).group(1)


def log_in(username, password) -> tuple[Client, object]:
    client = Client()
    answer = client.post(reverse("login"), {"username": username, "password": password})
    return client, answer


def test_every_page_waits_until_the_new_member_chooses_a_password(project, admin):
    password = created_with_one_time_password(project, admin)
    client, answer = log_in("nadia", password)
    change = reverse("password_change")
    assert answer.status_code == 302
    landing = client.get(answer["Location"])
    assert landing.status_code == 302 and landing["Location"] == change
    for url in [
        reverse("corpus:list-projects"),
        reverse("corpus:show-project", args=[project.slug]),
        reverse("labelling:show-queue", args=[project.slug]),
        reverse("password_change_done"),
        "/admin/",
    ]:
        answer = client.get(url)
        assert (answer.status_code, answer["Location"]) == (302, change), url
    # A write is refused the same way, and htmx is told where to go.
    assert client.post(reverse("corpus:list-projects"))["Location"] == change
    partial = client.get(reverse("corpus:list-projects"), headers={"HX-Request": "true"})
    assert partial.status_code == 204 and partial["HX-Redirect"] == change
    page = client.get(change)
    assert page.status_code == 200
    assert "Choose your own password before you go on" in page.content.decode()
    done = client.post(
        change,
        {"old_password": password, "new_password1": NEW, "new_password2": NEW},
        follow=True,
    )
    assert "Your password has been changed" in done.content.decode()
    # Free to go on, in the same session, and at the next log-in.
    assert client.get(reverse("corpus:list-projects")).status_code == 200
    again, answer = log_in("nadia", NEW)
    assert again.get(reverse("corpus:list-projects")).status_code == 200
    assert not log_in("nadia", password)[0].session.get("_auth_user_id")


def test_logging_out_stays_open_and_the_next_log_in_asks_again(project, admin):
    password = created_with_one_time_password(project, admin)
    client, _ = log_in("nadia", password)
    assert client.post(reverse("logout")).status_code in (200, 302)
    assert "_auth_user_id" not in client.session
    client, _ = log_in("nadia", password)
    assert client.get(reverse("corpus:list-projects"))["Location"] == reverse("password_change")


def test_a_renewed_one_time_password_forces_a_change_an_invitation_does_not(project, admin):
    member = MembershipFactory(project=project, role="labeller").user
    member.last_login = None
    member.save()
    membership = Membership.objects.get(user=member, project=project)
    page = login(admin).post(
        reverse("corpus:renew-access", args=[project.slug, membership.pk]), {"access": "password"}
    )
    password = re.search(r'id="one-time-password">([^<]+)<', page.content.decode()).group(1)
    client, _ = log_in(member.username, password)
    assert client.get(reverse("corpus:list-projects"))["Location"] == reverse("password_change")
    client.post(reverse("logout"))
    # An invitation instead: its owner chooses their own password, nothing left to force.
    member.refresh_from_db()
    member.last_login = None
    member.save()
    account = projects.renew_access(user=member, admin=admin, invite=True)
    assert not OneTimePassword.objects.filter(user=member).exists()
    assert account.invitation_path


def test_a_password_changed_by_any_other_path_ends_it(project, admin):
    password = created_with_one_time_password(project, admin)
    nadia = User.objects.get(username="nadia")
    assert OneTimePassword.objects.filter(user=nadia).exists()
    nadia.set_password(NEW)  # e.g. on the admin site
    nadia.save()
    client, _ = log_in("nadia", NEW)
    assert client.get(reverse("corpus:list-projects")).status_code == 200
    assert not log_in("nadia", password)[0].session.get("_auth_user_id")


def test_members_with_their_own_password_never_see_the_change_page(project, admin):
    client, _ = log_in(admin.username, PASSWORD)
    assert client.get(reverse("corpus:list-projects")).status_code == 200
    assert "Choose your own password" not in client.get(reverse("password_change")).content.decode()


def test_the_command_line_account_is_one_time_too(project):
    out = StringIO()
    call_command("add_member", "olga", "--project", project.slug, "--create", stdout=out)
    password = re.search(r"password (\S+)", out.getvalue()).group(1)
    assert "one-time" in out.getvalue()
    client, _ = log_in("olga", password)
    assert client.get(reverse("corpus:list-projects"))["Location"] == reverse("password_change")


def test_a_password_set_for_someone_else_in_the_django_admin_is_one_time_too(project, member):
    staff = User.objects.create_superuser("root", "root@example.org", "root pass phrase")
    admin_site = Client()
    admin_site.force_login(staff)
    added = admin_site.post(
        reverse("admin:auth_user_add"),
        {
            "username": "pia",
            "password1": "typed by root 123",
            "password2": "typed by root 123",
            "usable_password": "true",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    client, _ = log_in("pia", "typed by root 123")
    assert client.get(reverse("corpus:list-projects"))["Location"] == reverse("password_change")
    # A new password set for an existing member there is one-time as well...
    ola = member("labeller", username="ola")
    changed = admin_site.post(
        reverse("admin:auth_user_password_change", args=[ola.pk]),
        {"password1": "root knows this 1", "password2": "root knows this 1"},
    )
    assert changed.status_code == 302
    client, _ = log_in("ola", "root knows this 1")
    assert client.get(reverse("corpus:list-projects"))["Location"] == reverse("password_change")
    # ...but never one the staff account sets for itself.
    own = admin_site.post(
        reverse("admin:auth_user_password_change", args=[staff.pk]),
        {"password1": "my own new phrase 2", "password2": "my own new phrase 2"},
    )
    assert own.status_code == 302
    client, _ = log_in("root", "my own new phrase 2")
    assert client.get(reverse("corpus:list-projects")).status_code == 200
