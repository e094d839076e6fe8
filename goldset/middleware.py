from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


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
