"""Index health: what an index holds compared with the corpus, and what runs over it return.

Django-free, so ``python -m goldeval health`` (on an exported bundle) and the app's Index
health page (on the live corpus) compute every figure with the same code. Each check is a figure
with the rows behind it:

- **stale**: a searchable document whose indexed content differs from its newest version. By
  hash when a manifest row gives ``content_sha256``, else by ``version``, else by time (indexed
  before the newest version's ``source_modified_at``); a document with neither and no time to
  compare is *unverifiable*, counted apart. The share is over searchable documents. Lag is
  ``now − source_modified_at`` of the newest version: p50 and p95 (linear interpolation between
  ranks) and the oldest.
- **missing**: searchable documents with no indexed row.
- **not searchable but indexed**: documents Goldset knows whose newest version runs must not
  return (held back by the extraction check, a hidden near-duplicate); **unknown**: doc ids
  Goldset does not know at all (deleted, or never imported). How often runs return either.
- **mixed models**: more than one (model, revision, dimension) in the index, or among one
  question's top-k results in a run (a result takes the model of the rows it overlaps; a result
  without offsets, every model of its document).
- **crowding**: per question, the share of top-k results taken by a second or later document of
  one near-duplicate group; the run's figure is the mean over questions with results.
- **extraction**: recall@k over answerable questions split by whether a relevant span sits in a
  document with extraction flags, with table noise, or neither (clean).
- **short lists**: the share of a run's questions that got fewer than k results.

Canaries are no content: never missing, never unknown.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from goldeval.formats.gold import DocumentState, Gold
from goldeval.formats.manifests import ManifestRow, describe_model
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from goldeval.text.spans import overlaps
from goldeval.text.worddiff import plain, word_diff

DEFAULT_K = 10
ROWS_SHOWN = 200  # rows behind a figure kept in a report; the count is always complete


@dataclass(frozen=True, slots=True)
class Thresholds:
    max_stale: float | None = None  # share of searchable documents
    max_lag_days: float | None = None  # the oldest stale document's lag
    fail_on_model_mix: bool = False
    max_crowding: float | None = None  # a run's mean crowding


@dataclass(frozen=True, slots=True)
class Crossed:
    check: str
    value: float
    limit: float
    message: str


def check_index(
    *,
    documents: Mapping[str, DocumentState],
    rows: Sequence[ManifestRow],
    now: datetime.datetime,
    runs: Sequence[Run] = (),
    test_users: Sequence[Run] = (),
    gold: Gold | None = None,
    k: int = DEFAULT_K,
    thresholds: Thresholds = Thresholds(),
) -> dict[str, Any]:
    """The health report (plain JSON data): every figure, its rows and the thresholds crossed."""
    by_doc: dict[str, list[ManifestRow]] = defaultdict(list)
    for row in rows:
        by_doc[row.doc_id].append(row)
    content = {doc_id: d for doc_id, d in documents.items() if not d.canary}
    searchable = {doc_id: d for doc_id, d in content.items() if d.searchable}
    report: dict[str, Any] = {
        "checked_at": now.isoformat(),
        "k": k,
        "index": _index_summary(rows, by_doc),
        "stale": _stale(searchable, by_doc, now=now),
        "missing": _listed(sorted(set(searchable) - set(by_doc)), of=len(searchable)),
    }
    not_searchable = sorted(d for d in by_doc if d in content and d not in searchable)
    unknown = sorted(d for d in by_doc if d not in documents)
    report["not_searchable_indexed"] = _listed(not_searchable, of=len(by_doc))
    report["unknown"] = _listed(unknown, of=len(by_doc))
    report["unknown"]["lines"] = {d: by_doc[d][0].line for d in unknown[:ROWS_SHOWN]}
    report["runs"] = {
        run.name: _run_checks(
            run,
            k=k,
            by_doc=by_doc,
            documents=documents,
            unwanted=set(not_searchable) | set(unknown),
            gold=gold,
        )
        for run in runs
    }
    report["test_users"] = {user.name: _short_lists(user, k=k) for user in test_users}
    if gold is not None:
        report["gold_spans"] = stale_gold(gold)
    crossed = _crossed(report, thresholds)
    report["thresholds"] = {
        "max_stale": thresholds.max_stale,
        "max_lag_days": thresholds.max_lag_days,
        "fail_on_model_mix": thresholds.fail_on_model_mix,
        "max_crowding": thresholds.max_crowding,
    }
    report["crossed"] = [
        {"check": c.check, "value": c.value, "limit": c.limit, "message": c.message}
        for c in crossed
    ]
    return report


def _listed(doc_ids: list[str], *, of: int) -> dict[str, Any]:
    return {
        "documents": len(doc_ids),
        "share": len(doc_ids) / of if of else 0.0,
        "doc_ids": doc_ids[:ROWS_SHOWN],
    }


# --- the index itself ---------------------------------------------------------------------------


def _index_summary(
    rows: Sequence[ManifestRow], by_doc: Mapping[str, list[ManifestRow]]
) -> dict[str, Any]:
    models: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        entry = models.setdefault(
            row.model_key,
            {
                "model": row.embedding_model,
                "revision": row.embedding_revision,
                "dimension": row.dimension,
                "label": describe_model(row.model_key),
                "rows": 0,
                "doc_ids": set(),
                "first_line": row.line,
            },
        )
        entry["rows"] += 1
        entry["doc_ids"].add(row.doc_id)
    listed = []
    for entry in sorted(models.values(), key=lambda e: -e["rows"]):
        doc_ids = sorted(entry.pop("doc_ids"))
        listed.append({**entry, "documents": len(doc_ids), "doc_ids": doc_ids[:ROWS_SHOWN]})
    indexed_at = [row.indexed_at for row in rows]
    return {
        "rows": len(rows),
        "documents": len(by_doc),
        "models": listed,
        "mixed": len(listed) > 1,
        "newest_indexed_at": max(indexed_at).isoformat() if indexed_at else None,
    }


def _stale(
    searchable: Mapping[str, DocumentState],
    by_doc: Mapping[str, list[ManifestRow]],
    *,
    now: datetime.datetime,
) -> dict[str, Any]:
    stale: list[dict[str, Any]] = []
    unverifiable: list[str] = []
    for doc_id in sorted(searchable):
        indexed = by_doc.get(doc_id)
        if not indexed:
            continue
        newest = searchable[doc_id]
        basis, behind = _behind(newest, indexed)
        if basis is None:
            unverifiable.append(doc_id)
            continue
        if not behind:
            continue
        modified = newest.source_modified_at
        lag = (now - modified).total_seconds() / 86400 if modified is not None else None
        stale.append(
            {
                "doc_id": doc_id,
                "basis": basis,
                "indexed_versions": sorted({r.version for r in indexed if r.version is not None}),
                "newest_version": newest.version,
                "indexed_at": max(r.indexed_at for r in indexed).isoformat(),
                "source_modified_at": modified.isoformat() if modified is not None else None,
                "lag_days": None if lag is None else round(lag, 3),
            }
        )
    lags = sorted(item["lag_days"] for item in stale if item["lag_days"] is not None)
    stale.sort(key=lambda item: -(item["lag_days"] or 0))
    return {
        "documents": len(stale),
        "share": len(stale) / len(searchable) if searchable else 0.0,
        "of": len(searchable),
        "lag_days": {
            "p50": _percentile(lags, 0.5),
            "p95": _percentile(lags, 0.95),
            "oldest": lags[-1] if lags else None,
            "unknown": sum(1 for item in stale if item["lag_days"] is None),
        },
        "unverifiable": _listed(unverifiable, of=len(searchable)),
        "rows": stale[:ROWS_SHOWN],
    }


def _behind(newest: DocumentState, indexed: list[ManifestRow]) -> tuple[str | None, bool]:
    """How staleness can be told for one document's rows, and whether any row is behind."""
    hashed = [r for r in indexed if r.content_sha256]
    if hashed:
        return "hash", any(r.content_sha256 != newest.content_hash for r in hashed)
    versioned = [r for r in indexed if r.version is not None]
    if versioned:
        return "version", any(r.version != newest.version for r in versioned)
    if newest.source_modified_at is not None:
        return "time", min(r.indexed_at for r in indexed) < newest.source_modified_at
    return None, False


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    position = (len(values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    value = values[low] + (values[high] - values[low]) * (position - low)
    return round(value, 3)


# --- runs over the index ------------------------------------------------------------------------


def _run_checks(
    run: Run,
    *,
    k: int,
    by_doc: Mapping[str, list[ManifestRow]],
    documents: Mapping[str, DocumentState],
    unwanted: set[str],
    gold: Gold | None,
) -> dict[str, Any]:
    checks: dict[str, Any] = {
        "questions": len(run.rankings),
        "unwanted_returned": _unwanted_returned(run, k=k, unwanted=unwanted),
        "model_mix": _run_model_mix(run, k=k, by_doc=by_doc),
        "crowding": _crowding(run, k=k, documents=documents),
        "short_lists": _short_lists(run, k=k),
    }
    if gold is not None:
        checks["extraction"] = _extraction_split(run, k=k, gold=gold, documents=documents)
    return checks


def _top(ranking: Ranking, k: int) -> list[Passage]:
    return ranking.passages[:k]


def _unwanted_returned(run: Run, *, k: int, unwanted: set[str]) -> dict[str, Any]:
    results, questions, returned = 0, [], defaultdict(int)
    for question_id, ranking in run.rankings.items():
        hits = [p.doc_id for p in _top(ranking, k) if p.doc_id in unwanted]
        if hits:
            questions.append(question_id)
            results += len(hits)
            for doc_id in hits:
                returned[doc_id] += 1
    return {
        "results": results,
        "questions": len(questions),
        "share_of_questions": len(questions) / len(run.rankings) if run.rankings else 0.0,
        "question_ids": questions[:ROWS_SHOWN],
        "by_document": dict(sorted(returned.items())),
    }


def _models_of(passage: Passage, rows: list[ManifestRow]) -> set[tuple[str, str, int]]:
    if passage.start is not None and passage.end is not None:
        reached = {
            r.model_key
            for r in rows
            if r.start is not None and overlaps((r.start, r.end), (passage.start, passage.end))
        }
        if reached:
            return reached
    return {r.model_key for r in rows}


def _run_model_mix(run: Run, *, k: int, by_doc: Mapping[str, list[ManifestRow]]) -> dict[str, Any]:
    mixed: list[dict[str, Any]] = []
    overall: set[tuple[str, str, int]] = set()
    for question_id, ranking in run.rankings.items():
        keys: set[tuple[str, str, int]] = set()
        for passage in _top(ranking, k):
            keys |= _models_of(passage, by_doc.get(passage.doc_id, []))
        overall |= keys
        if len(keys) > 1:
            mixed.append(
                {"question_id": question_id, "models": [describe_model(m) for m in sorted(keys)]}
            )
    return {
        "mixed": bool(mixed),
        "questions": len(mixed),
        "models": [describe_model(m) for m in sorted(overall)],
        "rows": mixed[:ROWS_SHOWN],
    }


def crowding_of(passages: Sequence[Passage], groups: Mapping[str, str | None]) -> float | None:
    """Share of the passages taken by a second or later document of one near-duplicate group;
    None for an empty list. Chunks of one document are that document, not its duplicates."""
    if not passages:
        return None
    first_of: dict[str, str] = {}
    crowded = 0
    for passage in passages:
        group = groups.get(passage.doc_id)
        if group is None:
            continue
        first = first_of.setdefault(group, passage.doc_id)
        if first != passage.doc_id:
            crowded += 1
    return crowded / len(passages)


def _crowding(run: Run, *, k: int, documents: Mapping[str, DocumentState]) -> dict[str, Any]:
    groups = {doc_id: d.duplicate_group for doc_id, d in documents.items()}
    per_question = {}
    for question_id, ranking in run.rankings.items():
        share = crowding_of(_top(ranking, k), groups)
        if share is not None:
            per_question[question_id] = share
    crowded = {q: round(s, 4) for q, s in per_question.items() if s > 0}
    return {
        "mean": math.fsum(per_question.values()) / len(per_question) if per_question else 0.0,
        "questions_crowded": len(crowded),
        "per_question": dict(sorted(crowded.items(), key=lambda item: -item[1])[:ROWS_SHOWN]),
    }


def _short_lists(run: Run, *, k: int) -> dict[str, Any]:
    short = {q: len(r.passages) for q, r in run.rankings.items() if len(r.passages) < k}
    return {
        "k": k,
        "questions": len(run.rankings),
        "short": len(short),
        "share": len(short) / len(run.rankings) if run.rankings else 0.0,
        "per_question": dict(sorted(short.items())[:ROWS_SHOWN]),
    }


def _extraction_split(
    run: Run, *, k: int, gold: Gold, documents: Mapping[str, DocumentState]
) -> dict[str, Any]:
    evaluation = evaluate_run(gold=gold, run=run, options=MetricOptions(ks=(k,)))
    name = f"recall@{k}"
    groups: dict[str, list[str]] = {"flagged": [], "table_noise": [], "clean": []}
    for question_id in evaluation.per_question:
        flags: set[str] = set()
        for span in gold.questions[question_id].spans:
            if span.grade >= 1 and span.doc_id in documents:
                flags.update(documents[span.doc_id].extraction_flags)
        if "table_noise" in flags:
            groups["table_noise"].append(question_id)
        if flags:
            groups["flagged"].append(question_id)
        else:
            groups["clean"].append(question_id)
    split = {}
    for group, question_ids in groups.items():
        values = [evaluation.per_question[q][name] for q in question_ids]
        split[group] = {
            "questions": len(question_ids),
            name: math.fsum(values) / len(values) if values else None,
            "zero_recall": sorted(q for q in question_ids if evaluation.per_question[q][name] == 0)[
                :ROWS_SHOWN
            ],
        }
    return {"metric": name, "groups": split}


def stale_gold(gold: Gold) -> dict[str, Any]:
    """Gold spans whose document changed after labelling: re-anchored onto the newest version
    when the gold set was read (`goldeval.formats.gold.reanchor`, i.e.
    `goldeval.text.anchoring.locate`), and the ones that could not be, with their questions (they
    still count, unreachable); of the re-anchored ones, those whose words changed ("the facts
    changed", not just the place), with the word diff (`goldeval.text.worddiff.plain`)."""
    lost = [
        {
            "question_id": item.question_id,
            "question": gold.questions[item.question_id].question,
            "doc_id": item.span.doc_id,
            "version": item.span.version,
            "newest_version": item.corpus_version,
            "start": item.span.start,
            "end": item.span.end,
            "quote": (item.span.quote or "")[:300],
        }
        for item in gold.unanchored
    ]
    changed = [
        {
            "question_id": item.question_id,
            "doc_id": item.span.doc_id,
            "version": item.span.version,
            "newest_version": item.corpus_version,
            "start": item.span.start,
            "end": item.span.end,
            "quote": (item.span.quote or "")[:300],
            "new_quote": item.new_quote[:300],
            "diff": plain(word_diff(item.span.quote or "", item.new_quote)),
        }
        for item in gold.changed_words
    ]
    return {
        "on_older_versions": gold.reanchored + len(lost),
        "reanchored": gold.reanchored,
        "facts_changed": len(changed),
        "not_reanchored": len(lost),
        "rows": lost[:ROWS_SHOWN],
        "facts_changed_rows": changed[:ROWS_SHOWN],
    }


# --- thresholds ---------------------------------------------------------------------------------


def _crossed(report: dict[str, Any], thresholds: Thresholds) -> list[Crossed]:
    crossed: list[Crossed] = []
    stale = report["stale"]
    if thresholds.max_stale is not None and stale["share"] > thresholds.max_stale:
        crossed.append(
            Crossed(
                "stale",
                stale["share"],
                thresholds.max_stale,
                f"{stale['documents']} of {stale['of']} searchable documents are stale "
                f"({stale['share']:.1%}, limit {thresholds.max_stale:.1%})",
            )
        )
    oldest = stale["lag_days"]["oldest"]
    limit = thresholds.max_lag_days
    if limit is not None and oldest is not None and oldest > limit:
        crossed.append(
            Crossed(
                "lag",
                oldest,
                limit,
                f"the oldest stale document lags {oldest:.1f} days (limit {limit:g})",
            )
        )
    if thresholds.fail_on_model_mix:
        if report["index"]["mixed"]:
            labels = ", ".join(m["label"] for m in report["index"]["models"])
            crossed.append(Crossed("model_mix", 1, 0, f"the index mixes models: {labels}"))
        for name, checks in report["runs"].items():
            mix = checks["model_mix"]
            if mix["mixed"]:
                crossed.append(
                    Crossed(
                        "model_mix",
                        mix["questions"],
                        0,
                        f"run {name}: {mix['questions']} question(s) got results embedded by "
                        "different models",
                    )
                )
    if thresholds.max_crowding is not None:
        for name, checks in report["runs"].items():
            mean = checks["crowding"]["mean"]
            if mean > thresholds.max_crowding:
                crossed.append(
                    Crossed(
                        "crowding",
                        mean,
                        thresholds.max_crowding,
                        f"run {name}: near-duplicates take {mean:.1%} of the top {report['k']} "
                        f"(limit {thresholds.max_crowding:.1%})",
                    )
                )
    return crossed


def documents_of(gold: Gold) -> dict[str, DocumentState]:
    """The documents a bundle describes: its documents.jsonl, else (a bundle from before issue
    17) the newest version of each document in corpus.jsonl, hashed as Goldset hashes text,
    without times, groups or flags."""
    if gold.documents is not None:
        return dict(gold.documents)
    return {
        doc_id: DocumentState(
            doc_id=doc_id,
            version=document.version or 1,
            content_hash=hashlib.sha256(document.text.encode("utf-8")).hexdigest(),
            source_modified_at=None,
            searchable=True,
            canary=document.canary,
        )
        for doc_id, document in (gold.corpus or {}).items()
    }
