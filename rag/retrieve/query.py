"""Query checks shared by every retriever: a clear error instead of a library traceback."""

from __future__ import annotations

import unicodedata

from core.errors import QueryError
from indexes import text

MAX_QUERY_CHARS = 4000


def clean_query(query: object, max_chars: int = MAX_QUERY_CHARS) -> str:
    """Return the query stripped of control characters, or raise QueryError saying why not."""
    if not isinstance(query, str):
        raise QueryError(f"the query must be text, got {type(query).__name__}")
    cleaned = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in query).strip()
    if not cleaned:
        raise QueryError("the query is empty; ask a question in words")
    if len(cleaned) > max_chars:
        raise QueryError(
            f"the query has {len(cleaned)} characters; the limit is {max_chars}. "
            "Shorten it to the question itself"
        )
    if not text.tokenize(cleaned) and not any(ch.isalnum() for ch in cleaned):
        raise QueryError("the query has no words to search for (only punctuation or symbols)")
    return cleaned
