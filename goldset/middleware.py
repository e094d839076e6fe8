import logging
import time

from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

logger = logging.getLogger(__name__)


class ServerTimingMiddleware:
    """With GOLDSET_SERVER_TIMING on, every response says the web CPU its request cost, as
    `Server-Timing: cpu;dur=<ms>` (a browser's network panel shows it; the labelling-load
    benchmark reads it per kind of request). The CPU of the serving thread, so a threaded worker
    counts only its own request; the middleware stack and the view, not the server's own I/O.
    Off by default: a deployment that does not ask for it pays nothing (Django drops it)."""

    def __init__(self, get_response):
        from django.conf import settings

        if not settings.GOLDSET_SERVER_TIMING:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start = time.thread_time()
        response = self.get_response(request)
        response["Server-Timing"] = f"cpu;dur={(time.thread_time() - start) * 1000:.2f}"
        return response


class RejectLookupParametersMiddleware:
    """Views read only the query parameters they name, and never hand request.GET to the ORM.
    A parameter in Django's lookup syntax (`created_by__password__startswith`) is therefore an
    attack or a mistake, and gets a clear 400 rather than being silently ignored."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/admin/"):  # the admin has its own vetted filters
            bad = sorted(key for key in request.GET if "__" in key)
            if bad:
                return HttpResponseBadRequest(
                    f"Unknown filter {', '.join(bad)}: filters come from the page's own list.",
                    content_type="text/plain",
                )
        return self.get_response(request)


class RequestSizeLimitMiddleware:
    """Refuse a request body over GOLDSET_MAX_REQUEST_BYTES from its Content-Length, before any
    of it is read or spooled to disk (per-file limits are checked again by the upload forms)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from django.conf import settings
        from django.template.defaultfilters import filesizeformat

        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return HttpResponseBadRequest("Bad Content-Length.", content_type="text/plain")
        limit = settings.GOLDSET_MAX_REQUEST_BYTES
        if length > limit:
            return HttpResponse(
                f"This upload is {filesizeformat(length)}, over the {filesizeformat(limit)} "
                "limit for one request. Send fewer or smaller files.",
                status=413,
                content_type="text/plain",
            )
        return self.get_response(request)


def database_lost(exception: BaseException | None) -> bool:
    """Whether ``exception`` comes of the database connection failing (a restart, a failover, a
    killed backend: "the connection is closed"), itself or as the cause or context of what was
    raised while handling it (a rollback that failed too, a query refused in a broken atomic
    block)."""
    from django.db import InterfaceError, OperationalError

    seen: set[int] = set()
    while exception is not None and id(exception) not in seen:
        if isinstance(exception, OperationalError | InterfaceError):
            return True
        seen.add(id(exception))
        exception = exception.__cause__ or exception.__context__
    return False


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: every write runs in one transaction, so a request whose connection
    died was rolled back as a whole and may be sent again. JSON for the API, text elsewhere
    (the grading page reads the status and Retry-After, then sends the same action again)."""
    from django.http import JsonResponse

    message = "The database connection was lost and nothing was saved. Please try again."
    if request.path.startswith("/api/"):
        response = JsonResponse({"error": message}, status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain")
    response["Retry-After"] = "1"
    return response


class DatabaseUnavailableMiddleware:
    """A view whose database connection dies answers `database_unavailable`, instead of a bare
    500 that leaves the labeller wondering what was saved. A connection that dies outside a view
    (loading the session or the user in a middleware, saving the session after it) reaches
    Django's 500 handler, which answers the same (`goldset.views.server_error`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_lost(exception):
            return None
        logger.warning(
            "database unavailable during %s %s: %s", request.method, request.path, exception
        )
        return database_unavailable(request)


class PrivatePagesMiddleware:
    """Pages are made for the person logged in (documents an access group restricts, a
    labeller's own work), so no browser cache or proxy may keep them: `Cache-Control: private,
    no-store` on every response to a logged-in user, downloads included, and on the log-in
    pages (they carry a CSRF token). Static files are answered before this runs (WhiteNoise)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from django.utils.cache import patch_cache_control

        response = self.get_response(request)
        user = getattr(request, "user", None)
        if (user is not None and user.is_authenticated) or request.path.startswith(
            ("/accounts/", "/admin/")
        ):
            patch_cache_control(response, private=True, no_store=True)
            response.headers.pop("Expires", None)
        return response
