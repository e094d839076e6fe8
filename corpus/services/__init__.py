"""Writes to the corpus, one module per area: projects (members, access groups), documents
(ingestion, versions, duplicates, quality, chunking) and retrieval (retrievers, indexes,
search)."""
