"""Names written into the few hand-written SQL queries (each kept for a measured need, each
tested against the ORM's answer).

Table and column names are quoted as standard SQL quotes identifiers, which both databases
Goldset runs on (PostgreSQL and SQLite) accept; values are never written into SQL text, they
are parameters. Django's own quoting lives on its database backends' operations class, which
its documentation does not cover, so it is not used here.
"""

from __future__ import annotations


def identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier: ``"labelling_candidate"``."""
    return '"' + name.replace('"', '""') + '"'
