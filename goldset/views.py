"""The one page Goldset answers for a request Django refuses before any view runs.

A form with too many files or too much pasted text is refused while the request is read (the
CSRF check reads it first), so the upload's own view never sees it: this handler says what
the limit is and what to do instead, rather than Django's bare "Bad Request".
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.template.defaultfilters import filesizeformat


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
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
