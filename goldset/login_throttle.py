"""Log-in throttling with django-axes: who is refused, and from which address they came.

Axes counts failed log-ins per username and per client address (settings: `AXES_*`); past the
limit both the app's log-in page and the admin's answer 429 with one message, whether or not
the account exists, until the cool-off ends or an admin unlocks it (`manage.py
axes_reset_username NAME`, `axes_reset_ip ADDRESS`, `axes_reset`).
"""

from __future__ import annotations

import math

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' lockout check, for log-ins that come with a request (every form: the app's and
    the admin's pass theirs). A call without one is code acting on the server, not a visitor
    (the test client's `login()`, a shell); axes would refuse it outright, so it is left to
    the password check of the next backend, as Django does without axes."""

    def authenticate(self, request: HttpRequest | None, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_address(request: HttpRequest) -> str:
    """The address a log-in comes from: REMOTE_ADDR, or behind `GOLDSET_TRUSTED_PROXIES`
    reverse proxies, the address the outermost of them saw (X-Forwarded-For is only trusted
    that far: anything to the left of it was written by the client)."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    hops = settings.GOLDSET_TRUSTED_PROXIES
    if not hops:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    return forwarded[-hops] if len(forwarded) >= hops else (forwarded[0] if forwarded else remote)


def lockout_response(request: HttpRequest, response=None, credentials=None) -> HttpResponse:
    """What a locked-out log-in gets, from the app's form and the admin's alike: 429 and one
    message that names neither the account nor whether it exists."""
    minutes = max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
