"""Does the cited passage give this sentence as the answer to the question? The local model judges.

The support model (``support_model.py``) was trained on BioASQ claims against their snippets.
On the clinician benchmark's dev answers it does not tell a correct answer from a wrong one:
a sentence holding the question's key fact scored no higher than one without it (ROC AUC
0.46 over 142 generated sentences; ``docs/results/clinician/README.md``), because a clinician's
answer restates the question in words its passage does not use, and a wrong answer is often a
sentence its passage does support that answers something else. The generator, shown the
passage, the question and the sentence, reads the three together.

The chat is one question after the system turn: the passage (title, section path, plain text),
the question, the proposed answer, and "does the passage state this answer to the question, with
the same numbers?". On the dev part's generated sentences this reads better than the same words
split over three turns (passage and question first, the sentence in a later turn, so that the
passage's turns could be reused from the KV cache): ROC AUC 0.80 against 0.66 on the same
sentences (``bench/answers/judge_prompts.py``; ``docs/results/clinician/README.md``, fourth round). The
generator still reuses the system turn from its KV cache; the split depends on the prompt alone,
so a judgement is the same in any order or process.

``P(yes) = p(yes) / (p(yes) + p(no))`` over the first reply token (``rag.generate.yes_no``).
A sentence is shown when, for a passage it cites, the rule checks pass (numbers, names, dose
scope, copy: ``verify.rule_checks``), its support reaches the ``floor`` (the support model's
probability; pairs below it are not asked, which also saves the judge's time) and P(yes)
reaches the threshold; both chosen on the dev part (``docs/results/clinician/README.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.errors import ConfigError, GeneratorError
from core.types import Chunk, Message
from rag.generate.yes_no import CANDIDATES, yes_probability
from rag.protocols import Generator
from rag.reading.plain_text import plain_text
from rag.rerank.evidence import cut_at_word, heading

log = logging.getLogger(__name__)

PASSAGE_CHARS = 1500  # the passage's first characters shown to the judge (about 350 tokens)
SYSTEM = "You check answers to clinical questions against a source passage. Answer with one word: yes or no."
ASK = (
    "Passage:\n{passage}\n\nQuestion: {question}\n\nProposed answer: {claim}\n\n"
    "Does the passage state this answer to the question, with the same numbers? "
)


def judge_passage(chunk: Chunk) -> str:
    """What the judge reads of a passage: its heading, then its plain text cut at a word."""
    title = heading(chunk)
    return (f"{title}\n" if title else "") + cut_at_word(plain_text(chunk.text), PASSAGE_CHARS)


def judge_messages(question: str, claim: str, chunk: Chunk) -> list[Message]:
    """The judge's chat for one (question, sentence, passage)."""
    passage = judge_passage(chunk)
    return [
        Message("system", SYSTEM),
        Message("user", ASK.format(passage=passage, question=question, claim=claim)),
    ]


class AnswerJudge:
    """P(the passage states the sentence as the question's answer), from the local generator."""

    def __init__(self, generator: Generator, threshold: float, *, floor: float = 0.0) -> None:
        """``threshold``: the P(yes) a sentence needs; ``floor``: the support (the support model's
        or the heuristic's) a pair needs before the judge is asked at all."""
        for name, value in (("threshold", threshold), ("floor", floor)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"the answer judge's {name} must be in [0, 1], got {value}")
        self.generator = generator
        self.threshold = threshold
        self.floor = floor

    def probabilities(self, question: str, pairs: Sequence[tuple[str, Chunk]]) -> list[float]:
        """P(yes) for each ``(sentence, passage)``, in input order. A judge that fails, or gives
        neither answer any probability, counts as "no": a sentence nobody judged is not shown."""
        out = [0.0] * len(pairs)
        for i, (claim, chunk) in enumerate(pairs):
            messages = judge_messages(question, claim, chunk)
            try:
                logprobs = self.generator.next_token_logprobs(messages, CANDIDATES)
            except GeneratorError as exc:
                log.warning("answer judge failed (%s); the sentence is not shown", type(exc).__name__)
                continue
            out[i] = yes_probability(logprobs) or 0.0
        return out
