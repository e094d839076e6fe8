"""What a web worker does once it has loaded, before its first request (`goldset.wsgi`).

A lead page of a real project's size makes tens of thousands of Python objects per request.
Each request's survivors raise the count that triggers CPython's full (generation 2) garbage
collection, and a full collection walks every object the process holds: the modules, classes
and functions of the whole app (~250,000 objects once every view is imported). Measured on a
lead page, such a collection took 200-500 ms and landed in one request in every five to ten:
it set the pages' p95 (docs/benchmarks.md, lead pages). So the worker imports everything a
request would import first (the URLconf, hence every view and what the views import), then
moves what it holds to the collector's permanent generation (`gc.freeze`, as the CPython
docs suggest for long-lived objects of a server), which full collections no longer walk.
Objects made by requests are collected as before.

It also keeps numpy's BLAS to one thread: a matrix product (the Agreement page's bootstrap)
otherwise ran on a thread per core, which doubled that request's CPU (~260 against ~140 ms)
for no gain in its time, CPU the worker's other requests and the other workers needed.
Gunicorn's workers are the web tier's parallelism.
"""

from __future__ import annotations

import gc

from django.urls import reverse
from threadpoolctl import threadpool_limits


def settle() -> None:
    """Import the whole URLconf now, collect once, then freeze what is left: the app's own
    objects, which live as long as the worker."""
    # Reversing any name loads every URLconf the root one includes, so every view module and
    # what it imports (numpy, scipy, the parsers) load here rather than in the first request.
    reverse("login")
    gc.collect()  # freeze nothing that is already garbage: frozen objects are never freed
    gc.freeze()
    threadpool_limits(limits=1, user_api="blas")  # for the rest of the worker's life
