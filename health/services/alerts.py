"""Index health alerts: the email a project's admins get when the daily check first crosses a
threshold, and the test alert an admin sends from Index health to see that it arrives.

The one channel is email, through the installation's mail settings (EMAIL_BACKEND, EMAIL_HOST,
set by whoever runs Goldset): nobody on a page chooses where an alert goes, so sending one never
reaches a host the operator did not configure. A failure is told in words, never with the mail
server's address or credentials.
"""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.mail import get_connection, send_mail
from django.urls import reverse

from corpus.models import Project, Role
from goldset.errors import ServiceError

# What sending an email raises when the mail server fails (refused, unreachable, too slow).
MAIL_ERRORS = (smtplib.SMTPException, OSError)
# How long a test alert waits for the mail server.
SEND_TIMEOUT_SECONDS = 10
# A second test alert within this many seconds is the same click twice: not sent again.
TEST_ALERT_EVERY_SECONDS = 60
# Backends that deliver nothing: the page says so rather than "sent".
NOT_DELIVERED = {
    "django.core.mail.backends.console.EmailBackend": "printed to the server's console",
    "django.core.mail.backends.locmem.EmailBackend": "kept in memory (a test installation)",
    "django.core.mail.backends.dummy.EmailBackend": "thrown away (the dummy mail backend)",
    "django.core.mail.backends.filebased.EmailBackend": "written to a file on the server",
}


def alert_recipients(project: Project) -> list[str]:
    """The addresses alerts go to: the project's active admins that have one."""
    admins = (
        get_user_model()
        .objects.filter(memberships__project=project, memberships__role=Role.ADMIN, is_active=True)
        .exclude(email="")
    )
    return sorted(admins.values_list("email", flat=True).distinct())


def send_alert(project: Project, *, subject: str, lines: str, timeout: int | None = None) -> int:
    """Email an alert about ``project`` to its admins; returns how many addresses it went to
    (0: no admin has an email address). Errors of the mail server are raised."""
    recipients = alert_recipients(project)
    if not recipients:
        return 0
    url = reverse("health:show-index-health", args=[project.slug])
    send_mail(
        subject=f"[Goldset] {project.name}: {subject}",
        message=f"{lines}\n\nIndex health page: {settings.GOLDSET_BASE_URL}{url}\n",
        from_email=None,
        recipient_list=recipients,
        connection=get_connection(timeout=timeout) if timeout else None,
    )
    return len(recipients)


def send_test_alert(*, project: Project, user) -> str:
    """Send a test alert through the alert channel now; what happened, for the page. A
    ServiceError says why nothing was sent (no address, the mail server failed, sent a moment
    ago already)."""
    if not alert_recipients(project):
        raise ServiceError(
            "No test alert was sent: no admin of this project has an email address, so alerts "
            "reach nobody. An admin adds theirs in their account (ask whoever runs Goldset)."
        )
    if not cache.add(f"health-test-alert:{project.pk}", 1, TEST_ALERT_EVERY_SECONDS):
        raise ServiceError(
            "A test alert was sent less than a minute ago: look for it in the admins' inboxes "
            "before sending another."
        )
    try:
        sent = send_alert(
            project,
            subject="test alert from Index health",
            lines=(
                f"{user.get_username()} sent this test alert from the Index health page of "
                f"{project.name}. When the daily index health check first crosses a threshold, "
                "the alert comes to this address the same way."
            ),
            timeout=SEND_TIMEOUT_SECONDS,
        )
    except MAIL_ERRORS as exc:
        cache.delete(f"health-test-alert:{project.pk}")  # nothing went: trying again is fine
        raise ServiceError(f"The test alert could not be sent: {mail_failure(exc)}") from exc
    where = NOT_DELIVERED.get(settings.EMAIL_BACKEND)
    admins = f"{sent} admin address{'es' if sent != 1 else ''}"
    if where:
        return (
            f"Test alert for {admins}, but this installation sends no mail: it was {where}. "
            "Whoever runs Goldset sets EMAIL_HOST for alerts to arrive."
        )
    return f"Test alert sent to {admins} of {project.name}; it should arrive within minutes."


def mail_failure(exc: Exception) -> str:
    """Why an email could not be sent, in words, without the mail server's address or any
    credential: for a page or a job's message."""
    return (
        f"the mail server {_reason(exc)}. Whoever runs Goldset checks its mail settings "
        "(EMAIL_HOST, EMAIL_PORT)."
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return "refused the installation's user name or password"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "refused the admins' addresses"
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return "refused the sender address (DEFAULT_FROM_EMAIL)"
    if isinstance(exc, TimeoutError):
        return "did not answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(exc, smtplib.SMTPException):
        return "answered with an error"
    return "could not be reached"
