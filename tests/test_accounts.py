"""Accounts: log-in throttling (django-axes), changing one's own password, pages no cache keeps."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory, login

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"|"X-CSRFToken": "[^"]+"')


def attempt(client: Client, username: str, password: str, *, url: str = LOGIN):
    return client.post(url, {"username": username, "password": password, "next": "/"})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_forty_wrong_passwords_lock_the_account_and_the_right_one_is_refused(settings):
    UserFactory(username="lena")
    client = Client()
    statuses = [attempt(client, "lena", f"guess-{i}").status_code for i in range(40)]
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form's own "did not match"
    assert set(statuses[limit - 1 :]) == {429}
    response = attempt(client, "lena", PASSWORD)
    assert response.status_code == 429 and not logged_in(client)
    text = response.content.decode()
    assert "Too many failed log-in attempts" in text and "ask an admin to unlock" in text
    # Another browser, another address: the account stays locked for it too.
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert attempt(other, "lena", PASSWORD).status_code == 429 and not logged_in(other)


def test_the_lockout_says_nothing_about_whether_the_account_exists(settings):
    UserFactory(username="lena")
    answers = {}
    for number, username in enumerate(("lena", "nobody-by-this-name")):
        client = Client(REMOTE_ADDR=f"10.0.0.{number + 1}")
        for i in range(settings.AXES_FAILURE_LIMIT - 1):
            before = attempt(client, username, f"guess-{i}")
        # The form shows back the username typed; nothing else may differ.
        typed = username.encode()
        answers[username] = (before.status_code, CSRF.sub(b"", before.content).replace(typed, b"?"))
        locked = attempt(client, username, "guess-last")
        answers[username] += (
            locked.status_code,
            CSRF.sub(b"", locked.content).replace(typed, b"?"),
        )
    assert answers["lena"] == answers["nobody-by-this-name"]
    assert answers["lena"][2] == 429


def test_many_usernames_from_one_address_lock_that_address_only(settings):
    UserFactory(username="lena")
    attacker = Client(REMOTE_ADDR="203.0.113.5")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(attacker, f"user-{i}", "password")
    # The next account tried from that address is refused, even with its right password...
    assert attempt(attacker, "lena", PASSWORD).status_code == 429
    assert not logged_in(attacker)
    # ...while lena, from her own address, logs in.
    lena = Client(REMOTE_ADDR="198.51.100.7")
    assert attempt(lena, "lena", PASSWORD).status_code == 302 and logged_in(lena)


def test_the_admin_login_is_throttled_too(settings):
    UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, "root", f"guess-{i}", url=ADMIN_LOGIN)
    response = attempt(client, "root", PASSWORD, url=ADMIN_LOGIN)
    assert response.status_code == 429 and not logged_in(client)
    assert b"Too many failed log-in attempts" in response.content
    # Locked for the app's own form as well: it is the same account.
    assert attempt(client, "root", PASSWORD).status_code == 429


def test_an_admin_unlocks_an_account_with_the_axes_command(settings):
    UserFactory(username="lena")
    client = Client()
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, "lena", f"guess-{i}")
    assert attempt(client, "lena", PASSWORD).status_code == 429
    call_command("axes_reset_username", "lena")
    # The address is still counted: the per-address limit holds until it is reset as well.
    call_command("axes_reset_ip", "127.0.0.1")
    response = attempt(client, "lena", PASSWORD)
    assert response.status_code == 302 and logged_in(client)


def test_a_success_before_the_limit_starts_the_count_again(settings):
    UserFactory(username="lena")
    client = Client()
    for _ in range(2):
        for i in range(settings.AXES_FAILURE_LIMIT - 1):
            attempt(client, "lena", f"guess-{i}")
        assert attempt(client, "lena", PASSWORD).status_code == 302
        client.post("/accounts/logout/")


def test_users_change_their_own_password():
    user = UserFactory(username="lena")
    client = login(user)
    page = client.get(reverse("password_change"))
    assert page.status_code == 200 and b"Change your password" in page.content
    wrong = client.post(
        reverse("password_change"),
        {"old_password": "not-it", "new_password1": "a-new-Long-one-42", "new_password2": "x"},
    )
    assert wrong.status_code == 200 and b"Your old password was entered incorrectly" in (
        wrong.content
    )
    done = client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a-new-Long-one-42",
            "new_password2": "a-new-Long-one-42",
        },
    )
    assert done.status_code == 302 and done["Location"] == reverse("password_change_done")
    assert b"Your password has been changed" in client.get(done["Location"]).content
    assert logged_in(client)  # the session that changed it stays
    user.refresh_from_db()
    assert user.check_password("a-new-Long-one-42") and not user.check_password(PASSWORD)


def test_the_password_page_needs_a_login_and_every_page_links_to_it():
    assert Client().get(reverse("password_change"))["Location"].startswith(LOGIN)
    user = UserFactory()
    project = ProjectFactory()
    MembershipFactory(project=project, user=user)
    page = login(user).get(reverse("corpus:show-project", args=[project.slug]), follow=True)
    assert reverse("password_change").encode() in page.content


def test_pages_for_a_logged_in_user_are_never_cached():
    user = UserFactory()
    project = ProjectFactory()
    MembershipFactory(project=project, user=user, role="admin")
    client = login(user)
    for url in (
        reverse("corpus:list-projects"),
        reverse("corpus:show-project", args=[project.slug]),
        reverse("corpus:list-documents", args=[project.slug]),
        reverse("password_change"),
        "/admin/",
        "/p/no-such-project/",  # a 404 too
    ):
        response = client.get(url)
        directives = {d.strip() for d in response["Cache-Control"].split(",")}
        assert {"private", "no-store"} <= directives, url
        assert "public" not in directives, url
    # The log-in page carries a CSRF token: not stored either.
    directives = Client().get(LOGIN)["Cache-Control"]
    assert "no-store" in directives and "private" in directives


def test_the_demo_commands_leave_no_lockout_behind(db):
    # Programmatic log-ins (no request: the test client, a shell) are not counted as attempts.
    user = UserFactory(username="lena")
    for _ in range(20):
        assert not Client().login(username="lena", password="wrong")
    assert Client().login(username="lena", password=PASSWORD)
    assert get_user_model().objects.get(pk=user.pk).is_active
