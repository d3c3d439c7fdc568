"""The one lexical tokenizer, used when an index is built and when it is queried.

Medical text is full of short and alphanumeric terms that generic BM25 tokenizers drop:
"vitamin D", "type 1 diabetes", "IL-6", "HbA1c", "CHA2DS2-VASc", "COVID-19". This tokenizer:

- normalises Unicode (NFKC, accents stripped, case folded),
- keeps every alphanumeric run, including 1-character tokens ("d", "1"),
- for compounds joined by ``-``, ``/``, ``+`` or ``'`` emits the parts *and* the joined form, so
  "IL-6", "IL6" and "IL 6" meet on ``il6`` while ``il`` and ``6`` still match alone,
- keeps decimals whole ("6.5", "2.5"), so a dose does not become two integers,
- drops a short list of English function words (never a single letter or digit: "vitamin A").

Its name and version are recorded in every index manifest; a mismatch refuses to load.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

TOKENIZER_NAME = "medical"
TOKENIZER_VERSION = 1

_COMPOUND = re.compile(r"[^\W_]+(?:[-/+'.][^\W_]+)*")
_SPLIT = re.compile(r"[-/+'.]")
_DECIMAL = re.compile(r"\d+\.\d+")
_JOINER = re.compile(r"[-/+']")

STOPWORDS = frozenset(
    """
    about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how if in into is it its itself
    just me more most my myself nor of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves
    """.split()
)


def normalize(text: str) -> str:
    """NFKC, strip combining accents, case fold. Used for matching only, never for display."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.casefold()


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lexical tokens (see the module docstring for the rules)."""
    tokens: list[str] = []
    for match in _COMPOUND.finditer(normalize(text)):
        word = match.group(0)
        pieces = _pieces_keeping_decimals(word)
        tokens.extend(p for p in pieces if p not in STOPWORDS)
        if len(pieces) > 1 and _JOINER.search(word):
            tokens.append("".join(_SPLIT.split(word)))
    return tokens


def _pieces_keeping_decimals(word: str) -> list[str]:
    """Split a compound on separators but keep ``6.5`` style decimals as one piece."""
    out: list[str] = []
    for part in re.split(r"[-/+']", word):
        if not part:
            continue
        if _DECIMAL.fullmatch(part):
            out.append(part)
        else:
            out.extend(p for p in part.split(".") if p)
    return out


def tokenizer_config() -> dict[str, Any]:
    """What the manifest records so a loader can refuse an index built with other rules."""
    return {"name": TOKENIZER_NAME, "version": TOKENIZER_VERSION, "stopwords": len(STOPWORDS)}


def indexed_text(title: str, section: tuple[str, ...], body: str) -> str:
    """The text both indexes see for a chunk: title and section path give the passage context.

    A disease reference chunk about "Inheritance" says nothing of the disease by itself; with
    its title in front, "inheritance of Marfan syndrome" finds it. Citations still quote only
    the chunk's own span.
    """
    heading = " > ".join(part for part in section if part and part != title)
    return f"{title}. {heading}.\n{body}" if heading else f"{title}.\n{body}"
