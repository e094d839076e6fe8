"""The pages Goldset answers for a request that no view answered.

A form with too many files or too much pasted text is refused while the request is read (the
CSRF check reads it first), so the upload's own view never sees it: `bad_request` says what
the limit is and what to do instead, rather than Django's bare "Bad Request". A database
connection lost outside a view (a middleware loading the session or the user) is answered by
`server_error`, and one lost saving the session (which Django reports as a 400) by
`bad_request`, as one lost inside a view is: 503 with Retry-After.
"""

import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.template.defaultfilters import filesizeformat
from django.views import defaults

from goldset.middleware import database_lost, database_unavailable


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if database_lost(exception):
        # Django reports a session it could not save as "interrupted" (400); the database was
        # lost while saving it, so the request is answered as any other one it lost.
        return database_unavailable(request)
    if isinstance(exception, TooManyFilesSent):
        reason = (
            f"The form sent more files than Goldset reads in one request. Upload at most "
            f"{settings.GOLDSET_MAX_UPLOAD_FILES} files at once (or a JSONL or CSV file of "
            "many documents)."
        )
    elif isinstance(exception, RequestDataTooBig):
        limit = filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        reason = (
            f"The form's text was larger than {limit}. Pasted text has that limit: save it as "
            "a file and upload the file instead (up to "
            f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)})."
        )
    elif isinstance(exception, TooManyFieldsSent):
        reason = "The form sent more fields than Goldset reads in one request."
    else:
        reason = "The request could not be read."
    body = loader.get_template("400.html").render({"reason": reason})
    return HttpResponse(body, status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 page, unless the error came of a lost database connection. Django calls the
    handler while the exception is being handled, so `sys.exc_info` names it."""
    if database_lost(sys.exc_info()[1]):
        return database_unavailable(request)
    return defaults.server_error(request)
