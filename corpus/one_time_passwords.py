"""A one-time password forces a change at first log-in.

An admin who creates an account (or renews a never-used one) with a one-time password has seen
that password: its owner must choose their own before reaching any page. So does a password an
installation administrator types for someone else in the Django admin (`require_change`). The
issued password's hash is kept (`OneTimePassword`); while the account still has that password,
the session is marked at log-in and every request but the password change (and logging out) is
sent to Django's password change page. A password set by any other path afterwards (that page,
an invitation link) ends it: the hashes no longer match.

The mark is set when someone logs in (`user_logged_in`), so a session whose password was never
one-time costs no query per request; a marked one costs one, until the password is changed.
"""

from __future__ import annotations

import secrets

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from corpus.models import OneTimePassword

# The session's mark: its account logged in with a one-time password.
SESSION_KEY = "goldset_one_time_password"


def issue(user) -> str:
    """Give ``user`` a new random password that must be changed at first log-in; returns it
    (shown once, never stored in the clear)."""
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    require_change(user)
    return password


def require_change(user) -> None:
    """The password ``user`` has now was set by someone else (an admin who has seen it): its
    owner changes it at their next log-in. Nothing for an account without a usable one."""
    if user.has_usable_password():
        OneTimePassword.objects.update_or_create(user=user, defaults={"password": user.password})


def withdraw(user) -> None:
    """``user`` no longer has a one-time password to change (it chooses its own instead)."""
    OneTimePassword.objects.filter(user=user).delete()


def in_use(user) -> bool:
    """Whether ``user`` still has the one-time password an admin issued."""
    return (
        user.is_authenticated
        and OneTimePassword.objects.filter(user=user, password=user.password).exists()
    )


@receiver(user_logged_in, dispatch_uid="goldset_one_time_password_at_login")
def _mark_at_login(sender, request, user, **kwargs) -> None:
    if request is not None and hasattr(request, "session") and in_use(user):
        request.session[SESSION_KEY] = True


class ChangeFirstMiddleware:
    """Sends a session marked at log-in to the password change page, from every URL but that
    page and logging out, until the one-time password is changed. After AuthenticationMiddleware
    and MessageMiddleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.session.get(SESSION_KEY):
            if not in_use(request.user):
                del request.session[SESSION_KEY]
            elif request.path not in (reverse("password_change"), reverse("logout")):
                url = reverse("password_change")
                if request.headers.get("HX-Request"):
                    return HttpResponse(status=204, headers={"HX-Redirect": url})
                return redirect(url)
        return self.get_response(request)
