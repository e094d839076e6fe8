"""Traces from production: the endpoint the team's system posts them to (a project token, never
a session), the admins' token page, and the leads' overview of what came in."""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Project, Role
from goldeval.formats.bounds import json_int
from production.forms import ApiTokenForm
from production.models import ApiToken, Trace
from production.services import traces as services


def _error(status: int, message: str, **headers) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _bearer(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _over_rate(token: ApiToken) -> int:
    """Seconds to wait when this token has used its requests of the current minute, else 0.
    The counter lives in the cache (Redis in production), so every web replica shares it."""
    now = time.time()
    key = f"traces-rate:{token.digest[:16]}:{int(now // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=120)
        count = 1
    if count > settings.GOLDSET_TRACE_REQUESTS_PER_MINUTE:
        return max(1, 60 - int(now % 60))
    return 0


@csrf_exempt
def receive_traces(request: HttpRequest, slug: str) -> HttpResponse:
    """`POST /api/p/<project>/traces`: one trace, a list, or {"traces": [...]}, as JSON, with
    `Authorization: Bearer <token>`. A session is never accepted here, so there is nothing for
    CSRF to protect: a request without a token (a cross-site form, a logged-in browser, with or
    without a CSRF token) gets this API's own 401 in JSON, never Django's HTML CSRF page."""
    token_value = _bearer(request)
    if token_value is None:
        return _error(
            401,
            "Send a project API token: Authorization: Bearer <token>. "
            "A logged-in session is not accepted here.",
            WWW_Authenticate="Bearer",
        )
    if request.method != "POST":
        return _error(405, "Only POST is accepted.", Allow="POST")
    project = Project.objects.filter(slug=slug).first()
    token = services.find_api_token(raw=token_value)
    if token is None or token.state != "live":
        reason = "revoked" if token and token.revoked_at else "expired" if token else "unknown"
        return _error(401, f"This API token is {reason}.", WWW_Authenticate="Bearer")
    if project is None or token.project_id != project.pk:
        return _error(404, "No such project.")
    wait = _over_rate(token)
    if wait:
        return _error(
            429,
            f"Too many requests: at most {settings.GOLDSET_TRACE_REQUESTS_PER_MINUTE} a minute "
            "per token. Send larger batches, or retry after the Retry-After seconds.",
            Retry_After=str(wait),
        )
    content_type = request.content_type or ""
    if content_type != "application/json":
        return _error(415, "Send JSON: Content-Type: application/json.")
    limit = settings.GOLDSET_TRACE_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    body = request.read(limit + 1) if declared <= limit else b""
    if declared > limit or len(body) > limit:
        return _error(413, f"The body is over {limit:,} bytes: send smaller batches.")
    try:
        payload = json.loads(body, parse_int=json_int)
    except (ValueError, RecursionError) as exc:
        return _error(400, f"The body is not valid JSON ({exc}).")
    items = payload.get("traces") if isinstance(payload, dict) and "traces" in payload else payload
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not items:
        return _error(400, 'Send a trace, a list of traces, or {"traces": [...]}.')
    if len(items) > settings.GOLDSET_TRACE_MAX_BATCH:
        most = settings.GOLDSET_TRACE_MAX_BATCH
        return _error(413, f"A batch holds at most {most:,} traces ({len(items):,}).")
    # Marked before the traces are stored, so the batch's one transaction is the request's last
    # write: a connection lost at any point answers 503 with nothing stored, never after.
    services.mark_token_used(token=token)
    result = services.receive_traces(
        project=project, items=items, caller=services.token_caller(token)
    )
    status = 200 if not result.errors else 207 if result.intake.received else 422
    return JsonResponse(result.as_json(), status=status)


@login_required
@require_http_methods(["GET", "POST"])
def list_api_tokens(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = ApiTokenForm(request.POST or None)
    # Post/redirect/get: the new secret travels to the next GET in the session and is popped
    # there, so reloading the page that shows it never makes a second token, and a second
    # reload no longer shows it.
    kept = f"new-api-token:{access.project.pk}"
    if request.method == "POST" and form.is_valid():
        token, secret = services.create_api_token(
            project=access.project, user=request.user, **form.cleaned_data
        )
        request.session[kept] = secret
        return redirect("production:list-api-tokens", slug=access.project.slug)
    secret = request.session.pop(kept, None) if request.method == "GET" else None
    context = {
        "access": access,
        "project": access.project,
        "form": form,
        "secret": secret,
        "tokens": ApiToken.objects.filter(project=access.project).select_related("created_by"),
        "endpoint": request.build_absolute_uri(f"/api/p/{access.project.slug}/traces"),
    }
    response = render(
        request,
        "production/api_tokens.html",
        context,
        status=400 if request.method == "POST" else 200,
    )
    if secret:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_api_token(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    token = get_object_or_404(ApiToken, project=access.project, pk=token_id)
    services.revoke_api_token(token=token, user=request.user)
    messages.success(request, f"Token {token.name} is revoked: requests with it now get 401.")
    return redirect("production:list-api-tokens", slug=access.project.slug)


@login_required
@require_GET
def list_traces(request: HttpRequest, slug: str) -> HttpResponse:
    """What came in, for leads: counts and the index drift; never who asked."""
    access = project_access(request.user, slug, role=Role.LEAD)
    traces = Trace.objects.in_project(access.project)
    context = {
        "access": access,
        "project": access.project,
        "total": traces.count(),
        "unknown": traces.with_unknown_documents().count(),
        "recent": traces.only(
            "trace_id", "occurred_at", "question", "thumb", "refused", "unknown_doc_ids"
        )[:50],
        "drift": traces.with_unknown_documents().only("trace_id", "unknown_doc_ids")[:20],
        "retention_days": settings.GOLDSET_TRACE_RETENTION_DAYS,
    }
    return render(request, "production/list_traces.html", context)
