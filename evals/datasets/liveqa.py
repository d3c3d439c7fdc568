"""TREC 2017 LiveQA-Med test questions judged against MedQuAD answers (Ben Abacha & Demner-Fushman 2019).

Questions come from ``liveqa_trec2017_test/TREC-2017-LiveQA-Medical-Test*.xml`` (``TQ1``..``TQ104``);
judgements from ``liveqa_qrels/.../All-qrels_*.txt``, lines ``<question number> <n-Label>
<answer id>`` with labels 1-Incorrect, 2-Related, 3-Incomplete, 4-Excellent. Two decisions:

- Grade = LiveQA score - 1 (Incorrect 0, Related 1, Incomplete 2, Excellent 3), so an answer
  judged incorrect is judged non-relevant under the usual ``grade > 0`` rule and nDCG's gain
  keeps the order of the scale.
- Answers map to MedQuAD doc ids with :func:`corpora.sources.medquad.liveqa_answer_doc_id`.
  Judgements of answers MedQuAD does not distribute (``ANSWERLESS_PREFIXES``: ADAM,
  MPlusDrugs, MPlusHerbsSuppls) are dropped and counted; 565 of the 2,479 map.
  Pairs judged twice with different scores keep the maximum (see :mod:`evals.datasets.qrels`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from core.errors import ConfigError, SourceError
from corpora.sources.medquad import ANSWERLESS_PREFIXES, liveqa_answer_doc_id
from evals.datasets.qrels import Judgement, build_set, require
from evals.types import RetrievalSet

QRELS = (
    "liveqa_qrels/QA-TestSet-LiveQA-Med-Qrels-2479-Answers/"
    "All-qrels_LiveQAMed2017-TestQuestions_2479_Judged-Answers.txt"
)
QUESTIONS = "liveqa_trec2017_test/TREC-2017-LiveQA-Medical-Test-Questions-w-summaries.xml"
FIELDS = ("original", "paraphrase", "summary")
_LINE = re.compile(r"^(\d+)\s+([1-4])-\S+\s+(\S+)$")


def read_questions(path: Path, field: str = "original") -> dict[str, str]:
    """``{"TQ<n>": text}``; "original" is the consumer's subject and message as sent, "paraphrase"
    the NIST assessors' rewording, "summary" NLM's one-line summary."""
    if field not in FIELDS:
        raise ConfigError(f"unknown LiveQA question field {field!r}; choose from: {', '.join(FIELDS)}")
    try:
        root = ET.parse(require(path, "LiveQA-Med test questions XML")).getroot()
    except ET.ParseError as exc:
        raise SourceError(f"{path} is not valid XML ({exc}); re-copy the LiveQA-Med test set") from exc
    out: dict[str, str] = {}
    for question in root.iter("NLM-QUESTION"):
        qid = question.get("qid", "")
        if field == "original":
            subject = (question.findtext("Original-Question/SUBJECT") or "").strip()
            message = (question.findtext("Original-Question/MESSAGE") or "").strip()
            text = f"{subject}. {message}" if subject and message else subject or message
        else:
            text = question.findtext("NIST-PARAPHRASE" if field == "paraphrase" else "NLM-Summary") or ""
        if qid and text.strip():
            out[qid] = " ".join(text.split())
    return out


def _judged_lines(path: Path) -> Iterator[tuple[int, str, int, str]]:
    """``(line number, question number, LiveQA score 1-4, answer id)`` for each qrels line."""
    with require(path, "LiveQA-Med qrels").open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            m = _LINE.match(line.strip())
            if not m:
                raise SourceError(f"{path}:{number}: expected '<question> <1-4>-<label> <answer id>'")
            question, score, answer = m.groups()
            yield number, question, int(score), answer


def read_judgements(path: Path) -> tuple[list[Judgement], int]:
    """Mapped judgements (query ``TQ<n>``, MedQuAD doc id, grade 0-3) and how many were unmappable."""
    mapped: list[Judgement] = []
    dropped = 0
    for number, question, score, answer in _judged_lines(path):
        if answer.startswith(ANSWERLESS_PREFIXES):
            dropped += 1
            continue
        try:
            mapped.append((f"TQ{question}", liveqa_answer_doc_id(answer), score - 1))
        except ValueError as exc:
            raise SourceError(f"{path}:{number}: {exc}") from exc
    return mapped, dropped


def relevance_coverage(root: Path) -> dict[str, int]:
    """How many questions have a relevant (grade > 0) answer that MedQuAD distributes, how many
    only in the collections it withholds (``ANSWERLESS_PREFIXES``), and how many none at all."""
    best: dict[str, dict[str, int]] = {}
    for _number, question, score, answer in _judged_lines(Path(root) / QRELS):
        kind = "withheld" if answer.startswith(ANSWERLESS_PREFIXES) else "distributed"
        seen = best.setdefault(question, {"distributed": 0, "withheld": 0})
        seen[kind] = max(seen[kind], score - 1)
    return {
        "judged_questions": len(best),
        "relevant_in_medquad": sum(1 for b in best.values() if b["distributed"] > 0),
        "relevant_only_withheld": sum(1 for b in best.values() if b["distributed"] == 0 < b["withheld"]),
        "no_relevant_answer": sum(1 for b in best.values() if b["distributed"] == b["withheld"] == 0),
    }


def load_liveqa(root: Path, field: str = "original") -> RetrievalSet:
    """LiveQA-Med questions with graded MedQuAD answers; ``root`` is the ``medquad`` data folder."""
    root = Path(root)
    queries = read_questions(root / QUESTIONS, field)
    judgements, dropped = read_judgements(root / QRELS)
    return build_set(
        "liveqa-medquad",
        queries,
        judgements,
        counts={"judgements_in_file": len(judgements) + dropped, "judgements_unmapped": dropped},
        notes=(
            f"question text: {field}",
            "grade = LiveQA score - 1 (1-Incorrect -> 0 non-relevant ... 4-Excellent -> 3)",
            f"{dropped} judgements of answers MedQuAD does not distribute "
            f"({', '.join(ANSWERLESS_PREFIXES)}) dropped",
            "pairs judged twice with different scores keep the maximum",
        ),
    )
