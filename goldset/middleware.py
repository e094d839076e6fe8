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
