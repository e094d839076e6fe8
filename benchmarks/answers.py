"""Time the answer scores on a large generated answer run.

10,000 answers x 5 sentences x 2 citations, each with a context of 5 passages, against gold
spans in a corpus of 1,000 documents; every answer has human grades (5 claims, its citations
graded) and 4 reference facts. Timed: `goldeval.scoring.answers.evaluate_answers` with the grades
(all scores, automatic and human), and separately reading the answer file
(`goldeval.formats.answers.read_answer_file`) and computing each answer's key.

    .venv/bin/python benchmarks/answers.py [--answers 10000] [--repeats 3]

Target: scoring in at most 2 s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goldeval.formats.answer_gold import (  # noqa: E402
    AnswerGold,
    AnswerGrades,
    GradedCitation,
    GradedClaim,
    ReferenceFact,
)
from goldeval.formats.answers import read_answer_file  # noqa: E402
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan  # noqa: E402
from goldeval.scoring.answers import evaluate_answers  # noqa: E402

DOCUMENTS = 1_000
SENTENCES = 5
CITATIONS = 2
CONTEXT = 5


def _passage(rng: random.Random, spans: tuple[GoldSpan, ...]) -> dict:
    # Half the passages land near a gold span of the question, so the overlap scan has work.
    if spans and rng.random() < 0.5:
        span = rng.choice(spans)
        start = max(0, span.start + rng.randrange(-500, 300))
        return {"doc_id": span.doc_id, "start": start, "end": start + 400}
    start = rng.randrange(0, 5_000)
    return {"doc_id": f"d{rng.randrange(DOCUMENTS)}", "start": start, "end": start + 400}


def generate(*, answers: int, seed: int) -> tuple[Gold, bytes]:
    rng = random.Random(seed)
    questions = {}
    lines = []
    for number in range(answers):
        question_id = f"q{number}"
        answerable = rng.random() < 0.85
        spans = ()
        if answerable:
            spans = tuple(
                GoldSpan(f"d{rng.randrange(DOCUMENTS)}", s, s + 300, rng.choice((1, 2)))
                for s in (rng.randrange(0, 5_000) for _ in range(3))
            )
        questions[question_id] = GoldQuestion(question_id, "", answerable, spans)
        text = " ".join(f"Sentence {i} of answer {number} says something." for i in range(5))
        sentences, position = [], 0
        for _ in range(SENTENCES):
            end = text.index(".", position) + 1
            sentences.append(
                {
                    "start": position,
                    "end": end,
                    "citations": [_passage(rng, spans) for _ in range(CITATIONS)],
                }
            )
            position = end + 1
        lines.append(
            json.dumps(
                {
                    "question_id": question_id,
                    "answer": text,
                    "refused": rng.random() < 0.1,
                    "sentences": sentences,
                    "context": [_passage(rng, spans) for _ in range(CONTEXT)],
                }
            )
        )
    return Gold(questions=questions), ("\n".join(lines) + "\n").encode()


def grade(answers, *, seed: int) -> AnswerGold:
    rng = random.Random(seed)
    facts = tuple(ReferenceFact(f"f{i}", "fact", vital=i < 2) for i in range(4))
    gold = AnswerGold()
    for answer in answers.values():
        gold.references[answer.question_id] = facts
        claims = tuple(
            GradedClaim(
                s.start,
                s.end,
                rng.choice(("full", "partial", "none")),
                tuple(GradedCitation(c, rng.choice((0, 1, 2))) for c in s.citations),
            )
            for s in answer.sentences
        )
        key = answer.key()
        gold.grades[(answer.question_id, key)] = AnswerGrades(
            answer.question_id,
            key,
            claims,
            {f.fact_id: rng.choice(("yes", "partly", "no")) for f in facts},
        )
    return gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    gold, data = generate(answers=arguments.answers, seed=1)

    read_times, score_times = [], []
    for repeat in range(arguments.repeats):
        started = time.perf_counter()
        answers = read_answer_file(data).answers
        keys = [answer.key() for answer in answers.values()]
        read_times.append(time.perf_counter() - started)
        answer_gold = grade(answers, seed=repeat)
        started = time.perf_counter()
        evaluation = evaluate_answers(
            gold=gold, answers=answers, name="bench", answer_gold=answer_gold
        )
        score_times.append(time.perf_counter() - started)
    assert len(keys) == arguments.answers and evaluation.coverage == 1.0
    citations = arguments.answers * SENTENCES * CITATIONS
    print(
        f"{arguments.answers:,} answers x {SENTENCES} sentences x {CITATIONS} citations "
        f"({citations:,} citations, {CONTEXT} context passages each), best of "
        f"{arguments.repeats}:"
    )
    print(f"  scoring (every score, with human grades): {min(score_times):.2f} s (target <= 2 s)")
    print(f"  reading the answer file and keying each answer: {min(read_times):.2f} s")
    print(
        f"  faithfulness {evaluation.scores['faithfulness']:.3f}, "
        f"gold citation precision {evaluation.scores['gold_citation_precision']:.3f}"
    )


if __name__ == "__main__":
    main()
