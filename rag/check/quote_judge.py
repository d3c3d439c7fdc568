"""Does this quoted answer answer the question? The local model judges, for the quotes the quote
model is unsure of.

The quote model (``quotes.py``) reads cheap signals; between its floor and its threshold it
tells a line that answers from a true line beside the answer barely better than chance (ROC AUC
0.59 on dev from 0.35 to 0.5, where this judge reads 0.80; ``training/quote_judge.py``). The
generator reads the question and the lines that would be shown, each under its passage's
headings, and says yes or no; ``P(yes)`` (``rag.generate.yes_no``) decides. One short prompt per
question (the lines, not whole passages: ~150 tokens, ~5 s), and only for questions in that
band: a confident quote and a hopeless one never reach the model. The judgement depends on the
prompt alone, so it is the same in any order or process.

Off in the shipped profiles: on the clinician test part it added 16 correct answers but lost 4
near-corpus abstentions (90.9%, under the 95% floor), one of them another drug's dose from a list
whose lead-in line quotes did not carry then; with lead-ins, 17 correct answers for 3 near-corpus
abstentions (91.9%; ``docs/results/clinician/README.md``, sixth and seventh rounds).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from core.errors import ConfigError, GeneratorError
from core.types import Message
from rag.check.plain_text import plain_text
from rag.check.quotes import Quote
from rag.generate.yes_no import CANDIDATES, yes_probability
from rag.protocols import Generator
from rag.rerank.evidence import heading

log = logging.getLogger(__name__)

SYSTEM = (
    "You check whether lines quoted from clinical guidelines answer a clinician's question. "
    "Answer with one word: yes or no."
)
ASK = (
    "Question: {question}\n\nQuoted lines:\n{lines}\n\n"
    "Do these lines answer the question (what was asked, for the patient described)? "
)


def prompt_id() -> str:
    """A short hash of the judge's prompt: what a cache of its answers is keyed by, so answers
    to another wording are never read back."""
    return hashlib.sha256((SYSTEM + "\n" + ASK).encode()).hexdigest()[:12]


def quote_lines(quotes: Sequence[Quote]) -> str:
    """The lines as the judge reads them: each under its passage's title and section path."""
    out = []
    for quote in quotes:
        chunk = quote.hit.chunk
        text = " ".join(plain_text(chunk.text).split())
        head = heading(chunk)
        out.append(f"- [{head}] {text}" if head else f"- {text}")
    return "\n".join(out)


def judge_messages(question: str, quotes: Sequence[Quote]) -> list[Message]:
    return [
        Message("system", SYSTEM),
        Message("user", ASK.format(question=question, lines=quote_lines(quotes))),
    ]


class QuoteJudge:
    """P(the quoted lines answer the question), from the local generator."""

    def __init__(self, generator: Generator, threshold: float, floor: float) -> None:
        """``floor``: the quote model's probability (of the best line) from which the judge is
        asked; ``threshold``: the P(yes) a quoted answer then needs."""
        for name, value in (("threshold", threshold), ("floor", floor)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"the quote judge's {name} must be in [0, 1], got {value}")
        self.generator = generator
        self.threshold = threshold
        self.floor = floor

    def probability(self, question: str, quotes: Sequence[Quote]) -> float:
        """P(yes); a judge that fails, or gives neither answer any probability, counts as "no"."""
        try:
            logprobs = self.generator.next_token_logprobs(judge_messages(question, quotes), CANDIDATES)
        except GeneratorError as exc:
            log.warning("quote judge failed (%s); the quote is not shown", type(exc).__name__)
            return 0.0
        return yes_probability(logprobs) or 0.0

    def accepts(self, question: str, quotes: Sequence[Quote]) -> bool:
        """Whether to answer with ``quotes`` whose best line the quote model gave less than its
        threshold: asked only from the floor up."""
        if not quotes or quotes[0].probability < self.floor:
            return False
        return self.probability(question, quotes) >= self.threshold
