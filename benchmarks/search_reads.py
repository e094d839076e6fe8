"""The database reads of one search with its mask cached, without the search: another
checkout's (before) against this one's (after), interleaved.

    DATABASE_URL=postgres://... PYTHONPATH=. .venv/bin/python benchmarks/search_reads.py \
        --compare-with CHECKOUT [--rounds 400] [--documents 60]

Run it on the database `benchmarks/scale.py` just filled (its newest retriever and member:
1,000,000 passages, half the documents hidden from the member). Before: the checkout's
``search_mask.state`` (e.g. main's, from ``git archive``), then the doc ids of the results by
the ORM, as its ``retrieve()`` reads them; after: this checkout's one query,
``search_mask.state_and_doc_ids``. Each round asks both for the same ``--documents`` random
documents the member may see (a top 100 of this corpus names about 60), alternating which goes
first, and checks that both read the same doc ids. p50/p95 of each and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare-with", metavar="CHECKOUT", required=True)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--documents", type=int, default=60)
    args = parser.parse_args()
    os.environ.update(DEBUG="0", SECRET_KEY="bench", ALLOWED_HOSTS="localhost")  # noqa: S106
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    import django

    django.setup()
    from corpus.models import AccessGroup, Document, Membership, Retriever
    from corpus.services import search_mask

    path = Path(args.compare_with) / "corpus" / "services" / "search_mask.py"
    spec = importlib.util.spec_from_file_location("baseline_search_mask", path)
    baseline = sys.modules["baseline_search_mask"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(baseline)

    retriever = Retriever.objects.select_related("project").order_by("-pk").first()
    user = Membership.objects.filter(project=retriever.project_id).first().user
    visible = list(
        Document.objects.filter(project=retriever.project_id)
        .exclude(access_groups__in=AccessGroup.objects.filter(project=retriever.project_id))
        .values_list("pk", flat=True)
    )

    def before(documents: list[int]) -> dict[int, str]:
        baseline.state(retriever, user)
        rows = Document.objects.filter(pk__in=documents).order_by().values_list("pk", "doc_id")
        return dict(rows)

    def after(documents: list[int]) -> dict[int, str]:
        return search_mask.state_and_doc_ids(retriever, user, documents)[1]

    rng = np.random.default_rng(7)
    timings: dict[str, list[float]] = {"before": [], "after": []}
    for number in range(args.rounds):
        documents = sorted(rng.choice(visible, args.documents, replace=False).tolist())
        read = {}
        pairs = [("before", before), ("after", after)]
        for name, reads in pairs[::-1] if number % 2 else pairs:
            started = time.perf_counter()
            read[name] = reads(documents)
            timings[name].append((time.perf_counter() - started) * 1000)
        assert read["before"] == read["after"]
    p50 = {name: float(np.percentile(t, 50)) for name, t in timings.items()}
    p95 = {name: float(np.percentile(t, 95)) for name, t in timings.items()}
    for name in ("before", "after"):
        print(f"{name}: p50 {p50[name]:.2f} ms, p95 {p95[name]:.2f} ms")
    print(
        f"after / before: p50 {p50['after'] / p50['before']:.2f},"
        f" p95 {p95['after'] / p95['before']:.2f}"
    )


if __name__ == "__main__":
    main()
