"""Re-anchoring spans onto newer document versions (goldeval/text/anchoring.py), as the gold reader
does.

    .venv/bin/python benchmarks/reanchor.py [--repeats 5] [--with-difflib]

1. One 2,100-character span with three one-character edits (and with 30), in a 100 KB and a
   1 MB document: time of `goldeval.text.anchoring.locate` (median of the repeats);
   ``--with-difflib`` times the difflib search it replaced once on the 100 KB case, for a
   side-by-side figure (slow).
2. A 100-span gold set against a 1 MB corpus of edited versions: 100 documents of ~10 KB, each
   with a version 1 the spans point at and a version 2 that moved the text (a new paragraph
   first), edited inside the span (3-60 one-character edits) or, for 5 of them, deleted it. The
   bundle is written to a temporary folder and read with `goldeval.formats.gold.load_gold`, the
   route of ``python -m goldeval`` and the app; the time covers reading and re-anchoring, and every
   re-anchored span is checked against where its text really went.

Targets (issue 13): case 1 under 0.2 s; case 2 under 5 s.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goldeval.formats.gold import load_gold  # noqa: E402
from goldeval.text.anchoring import locate  # noqa: E402

SPAN = 2_100
SEED = 13


def prose(rng: random.Random, length: int) -> str:
    """Sentences of word-like tokens from a Zipf-ish vocabulary: repetitive as real text is."""
    vocabulary = [
        "".join(rng.choice("etaoinshrdlcumwfgypbvkjxqz"[: rng.randint(8, 26)]) for _ in range(n))
        for n in (rng.randint(1, 10) for _ in range(6_000))
    ]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    parts: list[str] = []
    size = 0
    while size < length:
        sentence = " ".join(rng.choices(vocabulary, weights, k=rng.randint(6, 24)))
        sentence = sentence[:1].upper() + sentence[1:] + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:length]


def edit(text: str, rng: random.Random, edits: int) -> str:
    chars = list(text)
    for _ in range(edits):
        at = rng.randrange(len(chars))
        kind = rng.choice("sid")
        if kind == "s":
            chars[at] = rng.choice("abcdefghijklmnopqrstuvwxyz ")
        elif kind == "i":
            chars.insert(at, rng.choice("abcdefghijklmnopqrstuvwxyz"))
        else:
            del chars[at]
    return "".join(chars)


def median_time(repeats: int, action) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def difflib_search(quote: str, text: str, old_start: int) -> tuple[int, int] | None:
    """The search Goldset used before issue 13 (goldeval/formats/gold.py), kept here to compare."""
    matcher = difflib.SequenceMatcher(None, quote, text, autojunk=False)
    starts = {max(0, t - q) for q, t, size in matcher.get_matching_blocks() if size > 0}

    def ratio(start: int, end: int) -> float:
        return difflib.SequenceMatcher(None, quote, text[start:end], autojunk=False).ratio()

    best_ratio, _, start = max((ratio(s, s + len(quote)), -abs(s - old_start), s) for s in starts)
    end = min(len(text), start + len(quote))
    slack = max(1, len(quote) // 10)
    for candidate in range(max(0, start - slack), start + slack + 1):
        if candidate < end and (value := ratio(candidate, end)) > best_ratio:
            best_ratio, start = value, candidate
    for candidate in range(max(start + 1, end - slack), min(len(text), end + slack) + 1):
        if (value := ratio(start, candidate)) > best_ratio:
            best_ratio, end = value, candidate
    return (start, end) if best_ratio >= 0.9 else None


def one_span(arguments: argparse.Namespace) -> None:
    rng = random.Random(SEED)
    for size in (100_000, 1_000_000):
        old = prose(rng, size)
        at = size // 2
        quote = old[at : at + SPAN]
        for edits in (3, 30):
            new_quote = edit(quote, rng, edits)
            # The new version also moved the passage: a paragraph was added before it.
            added = prose(rng, 1_500)
            new = added + old[:at] + new_quote + old[at + SPAN :]
            elapsed, found = median_time(
                arguments.repeats, lambda q=quote, t=new, n=at: locate(q, t, near=n)
            )
            where = len(added) + at
            ok = found is not None and abs(found.start - where) <= 2
            ok = ok and abs(found.end - where - len(new_quote)) <= 2
            print(
                f"one span, {SPAN:,} characters, {edits} edits, {size // 1000:,} KB document: "
                f"{elapsed * 1000:.1f} ms (median of {arguments.repeats}); "
                f"similarity {found.similarity:.4f}; {'found' if ok else 'WRONG PLACE'}"
            )
            if arguments.with_difflib and size == 100_000:
                started = time.perf_counter()
                difflib_search(quote, new, at)
                print(f"  the old difflib search, same case: {time.perf_counter() - started:.1f} s")


def gold_set(arguments: argparse.Namespace) -> None:
    rng = random.Random(SEED + 1)
    documents, questions, truth = [], [], {}
    for number in range(100):
        doc_id = f"doc-{number:03d}"
        old = prose(rng, 10_000)
        length = rng.randint(200, 2_100)
        at = rng.randrange(0, len(old) - length)
        quote = old[at : at + length]
        added = prose(rng, rng.randint(0, 400))
        if number % 20 == 7:  # the passage was deleted
            new_quote = ""
            truth[doc_id] = None
        else:
            new_quote = edit(quote, rng, rng.randint(3, max(3, length // 35)))
            truth[doc_id] = (len(added) + at, len(added) + at + len(new_quote))
        new = added + old[:at] + new_quote + old[at + length :]
        documents.append({"doc_id": doc_id, "version": 1, "title": doc_id, "text": old})
        documents.append({"doc_id": doc_id, "version": 2, "title": doc_id, "text": new})
        span = {
            "doc_id": doc_id,
            "start": at,
            "end": at + length,
            "grade": 2,
            "version": 1,
            "quote": quote,
        }
        questions.append(
            {"question_id": f"q{number:03d}", "question": "?", "answerable": True, "spans": [span]}
        )
    newest = sum(len(d["text"]) for d in documents if d["version"] == 2)
    with tempfile.TemporaryDirectory() as folder:
        bundle = Path(folder)
        for name, records in (("gold.jsonl", questions), ("corpus.jsonl", documents)):
            with (bundle / name).open("w", encoding="utf-8") as handle:
                for record in records:
                    handle.write(json.dumps(record) + "\n")
        elapsed, gold = median_time(arguments.repeats, lambda: load_gold(bundle))
    right = wrong = lost_right = lost_wrong = 0
    lost = {item.span.doc_id for item in gold.unanchored}
    for question in gold.questions.values():
        span = question.spans[0]
        expected = truth[span.doc_id]
        if span.doc_id in lost:
            lost_right += expected is None
            lost_wrong += expected is not None
        elif expected is not None and all(
            abs(a - b) <= 2 for a, b in zip(expected, (span.start, span.end), strict=True)
        ):
            right += 1
        else:
            wrong += 1
    print(
        f"gold set: 100 spans, newest corpus {newest / 1e6:.2f} MB (two versions of 100 "
        f"documents): load_gold {elapsed:.2f} s (median of {arguments.repeats}); re-anchored "
        f"in place {right}, misplaced {wrong}; reported lost: {lost_right} deleted, "
        f"{lost_wrong} that were there"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--with-difflib", action="store_true")
    arguments = parser.parse_args()
    one_span(arguments)
    gold_set(arguments)
    print("targets: one span < 0.2 s; 100-span gold set < 5 s")


if __name__ == "__main__":
    main()
