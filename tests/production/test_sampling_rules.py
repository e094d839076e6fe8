"""Sampling rules (versioned) drawn over stored traces (production/services/sampling.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from corpus.services import documents, retrieval
from goldset.errors import ServiceError
from production.models import SampledTrace, SamplingRule
from production.services import sampling as services
from production.services.traces import receive_traces
from tests.factories import POLICY_TEXT, ProjectFactory, UserFactory, add_documents

END = datetime(2026, 11, 30, tzinfo=UTC)


def traces(project, n=60):
    items = []
    for i in range(n):
        items.append(
            {
                "trace_id": f"t-{i}",
                "occurred_at": (END - timedelta(hours=i + 1)).isoformat(),
                "user": {"id": f"u{i}", "groups": ["hr" if i % 2 else "sales"]},
                "question": f"question {i}",
                "retrieved": [{"doc_id": "leave", "rank": 1, "score": i / n}],
                "feedback": {"thumb": "down" if i % 5 == 0 else "up"},
                "refused": i % 7 == 0,
                "citations": [] if i % 3 else [{"doc_id": "leave"}],
            }
        )
    receive_traces(project=project, items=items)


@pytest.fixture
def project(db):
    project = ProjectFactory(slug="acme")
    add_documents(project, ("leave", POLICY_TEXT))
    traces(project)
    return project


def rule(project, name="weekly", **spec):
    spec = {"filters": {}, "strategy": "uniform", "size": 10, "seed": 1, **spec}
    return services.save_sampling_rule(
        project=project, user=UserFactory(), name=name, spec=services.check_rule(**spec)
    )


def test_every_sampled_trace_records_rule_version_stratum_and_probability(project):
    weekly = rule(
        project, strategy="stratified", stratify_by="feedback", quotas={"down": 4, "up": 4}
    )
    sample = services.draw_sample(rule=weekly, end=END)
    assert sample.rule == weekly and sample.population == 60
    assert sample.strata == {
        "down": {"population": 12, "drawn": 4},
        "up": {"population": 48, "drawn": 4},
    }
    rows = list(SampledTrace.objects.filter(sample=sample).select_related("trace"))
    assert len(rows) == 8
    for row in rows:
        assert row.stratum == row.trace.thumb
        assert row.inclusion_probability == pytest.approx(4 / (12 if row.stratum == "down" else 48))


def test_filters_select_the_population(project):
    cases = {
        "negative": ({"feedback": "down"}, 12),
        "refused": ({"refused": True}, 9),
        "no-citation": ({"no_citation": True}, 40),
        "low-score": ({"top_score_below": 0.25}, 15),
        "hr": ({"user_group": "hr"}, 30),
        "one-day": ({"window_days": 1}, 24),
    }
    for name, (filters, expected) in cases.items():
        sample = services.draw_sample(rule=rule(project, name, filters=filters, size=100), end=END)
        assert sample.population == expected, name
        assert sample.traces.count() == expected


def test_editing_a_rule_makes_its_next_version_and_an_unchanged_save_does_not(project):
    first = rule(project, size=10)
    assert rule(project, size=10) == first
    second = rule(project, size=20)
    assert (first.version, second.version) == (1, 2)
    first.refresh_from_db()
    assert not first.active and second.active
    assert list(services.latest_rules(project)) == [second]
    services.draw_sample(rule=first, end=END)  # an old version still draws exactly as it was
    assert first.samples.get().traces.count() == 10


def test_a_rule_that_selects_nothing_says_why_and_stores_nothing(project):
    strict = rule(project, filters={"feedback": "down", "top_score_below": 0.0})
    with pytest.raises(ServiceError, match="selects no trace between .* 60 traces arrived then"):
        services.draw_sample(rule=strict, end=END)
    with pytest.raises(ServiceError, match="no trace arrived then. Widen the window"):
        services.draw_sample(rule=rule(project, "later"), end=END + timedelta(days=30))
    zero = rule(project, "zero", strategy="stratified", stratify_by="feedback", quotas={"x": 3})
    with pytest.raises(ServiceError, match="its quotas draw none of them"):
        services.draw_sample(rule=zero, end=END)
    assert not SamplingRule.objects.filter(samples__isnull=False).exists()


def test_bad_rules_are_refused_with_a_message(project):
    with pytest.raises(ServiceError, match="Stratify by one of"):
        services.check_rule(filters={}, strategy="stratified", size=5)
    with pytest.raises(ServiceError, match="Unknown filter colour"):
        services.check_rule(filters={"colour": "red"}, strategy="uniform", size=5)
    with pytest.raises(ServiceError, match="needs at least one built-in retriever"):
        rule(project, "dis", strategy="disagreement")


def test_disagreement_draws_with_the_built_in_retrievers(project):
    add_documents(project, ("salaries", "Band C pays 52,000 a year; band D pays more."))
    scheme = documents.add_chunking_scheme(
        project=project, name="w", strategy="fixed", size=60, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    spec = services.check_rule(filters={}, strategy="disagreement", size=6, seed=2)
    dis = services.save_sampling_rule(
        project=project, user=None, name="dis", spec=spec, retrievers=[bm25]
    )
    sample = services.draw_sample(rule=dis, end=END)
    rows = list(sample.traces.all())
    assert len(rows) == 6
    assert {r.stratum for r in rows} <= {"disagrees", "agrees"}
    assert all(0 < r.inclusion_probability <= 1 for r in rows)


def test_the_command_saves_versions(project):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    args = ["--project", "acme", "--name", "neg", "--filter", "feedback=down", "--size", "5"]
    call_command("sampling_rule", *args, stdout=out)
    call_command("sampling_rule", *args, "--seed", "4", stdout=out)
    assert "Sampling rule neg v1 saved." in out.getvalue()
    assert "Sampling rule neg v2 saved." in out.getvalue()
    assert SamplingRule.objects.get(name="neg", version=2).filters == {"feedback": "down"}
    with pytest.raises(CommandError, match="Feedback is one of"):
        call_command(
            "sampling_rule", "--project", "acme", "--name", "x", "--filter", "feedback=meh"
        )
    with pytest.raises(CommandError, match="name=value"):
        call_command("sampling_rule", "--project", "acme", "--name", "x", "--filter", "oops")


def test_a_sampled_trace_outlives_retention(project, settings):
    from production.services.traces import purge_expired_traces

    settings.GOLDSET_TRACE_RETENTION_DAYS = 1
    sample = services.draw_sample(rule=rule(project, size=3), end=END)
    deleted = purge_expired_traces(now=END + timedelta(days=30))
    assert deleted == 57 and sample.traces.count() == 3
