"""The keyword baseline: BM25 over the bundle's corpus, one whole document per passage.

The seed workflow says every evaluation carries a keyword baseline, so a team sees at once
whether its embedding system beats plain BM25 on its own questions.
"""

from __future__ import annotations

from goldeval.bm25 import BM25Index
from goldeval.formats.gold import Gold, Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.text.analysis import Analyzer

BASELINE_NAME = "bm25-baseline"
# Lucene's defaults as Anserini uses them; the Cranfield reference run uses the same settings.
K1 = 0.9
B = 0.4


def bm25_baseline_run(*, gold: Gold, depth: int, name: str = BASELINE_NAME) -> Run:
    """Rank the newest version of every corpus document for each gold question."""
    if not gold.corpus:
        raise ValueError("the gold set carries no corpus to build a baseline from")
    # Planted canaries are not content: the baseline never ranks them.
    documents = [document for document in gold.corpus.values() if not document.canary]
    if not documents:
        return Run(
            name=name, rankings={q: Ranking(passages=[]) for q in gold.questions}, format="ranked"
        )
    index = BM25Index.build(
        [f"{document.title}\n{document.text}" for document in documents],
        analyzer=Analyzer(stem=True, stopwords=True),
        k1=K1,
        b=B,
    )
    run = Run(name=name, format="ranked")
    depth = min(depth, len(documents))  # no ranking is longer than the corpus, whatever the k
    for question_id, question in gold.questions.items():
        hits = index.search(question.question, k=depth) if question.question.strip() else []
        run.rankings[question_id] = Ranking(
            passages=[Passage(documents[position].doc_id) for position, _ in hits]
        )
    return run
