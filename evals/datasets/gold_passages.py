"""The gold answer passages of multiple-choice items: the text a question was written from.

Used by the leakage check (:mod:`evals.leakage.check`) to ask whether an index holds an item's answer
passage near-verbatim. Per dataset (the base name: a perturbed copy ``medqa~drug-names`` looks up
``medqa``):

- MIRAGE ``pubmedqa`` (PubMedQA*) and ``pubmedqa-pqal``: the PQA-L abstract of that PubMed id
  as one passage (``ori_pqal.json``: its ``CONTEXTS`` sections, then ``LONG_ANSWER``, the
  conclusion that states the answer);
- any other item with ``contexts``: those contexts, one passage each;
- MIRAGE ``bioasq``: the BioASQ gold snippets of that question (``questions.jsonl``
  ``snippet_ids`` -> ``snippet_corpus.jsonl``), matched by question id, else by normalised
  question text;
- ``medqa``, ``medmcqa``, ``mmlu``: none (exam questions ship no passage).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from core.errors import SourceError
from corpora.sources.base import iter_jsonl
from evals.datasets.bioasq import normalise
from evals.types import McqItem

GoldLookup = Callable[[McqItem], tuple[str, ...]]


def original_set(name: str) -> str:
    """``medqa~drug-names`` -> ``medqa``: perturbed copies share their original set's gold passages."""
    from evals.robustness import base_dataset

    return base_dataset(name)[0]


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise SourceError(f"{what} not found at {path}; point MEDCITE_SOURCE_DATA at the shared data")
    return path


def pubmedqa_abstracts(source_data: Path) -> dict[str, tuple[str, ...]]:
    """PubMed id -> the PQA-L abstract as one passage: its sections, then its conclusion
    (``LONG_ANSWER``). One text, not one per section: short sections ("Retrospective,
    comparative cohort study.") are stock phrases that many unrelated abstracts share."""
    path = _require(source_data / "pubmedqa" / "ori_pqal.json", "PubMedQA ori_pqal.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path} is not valid JSON ({exc}); re-copy it") from exc
    out: dict[str, tuple[str, ...]] = {}
    for pmid, row in data.items():
        parts = [str(c) for c in row.get("CONTEXTS", ())]
        if row.get("LONG_ANSWER"):
            parts.append(str(row["LONG_ANSWER"]))
        out[str(pmid)] = (" ".join(parts),)
    return out


def bioasq_snippets(source_data: Path) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The gold snippet texts of every BioASQ question, by question id and by normalised body."""
    root = source_data / "bioasq_from_mirage"
    texts = {
        str(row.get("_id")): str(row.get("text", ""))
        for _, row in iter_jsonl(_require(root / "snippet_corpus.jsonl", "BioASQ snippet_corpus.jsonl"))
    }
    by_id: dict[str, tuple[str, ...]] = {}
    by_text: dict[str, tuple[str, ...]] = {}
    for _, row in iter_jsonl(_require(root / "questions.jsonl", "BioASQ questions.jsonl")):
        snippets = tuple(texts[s] for s in row.get("snippet_ids", ()) if texts.get(s))
        by_id[str(row.get("id"))] = snippets
        by_text.setdefault(normalise(str(row.get("body", ""))), snippets)
    return by_id, by_text


def gold_lookup(source_data: Path, datasets: Iterable[str]) -> GoldLookup:
    """A function item -> its gold passages (empty when its set has none); reads only the files
    the given dataset names need."""
    bases = {original_set(d) for d in datasets}
    abstracts = pubmedqa_abstracts(source_data) if "pubmedqa" in bases else {}
    by_id, by_text = bioasq_snippets(source_data) if "bioasq" in bases else ({}, {})

    def lookup(item: McqItem) -> tuple[str, ...]:
        base = original_set(item.dataset)
        if base == "pubmedqa" or (base == "pubmedqa-pqal" and item.contexts):
            if item.contexts:  # the PQA-L sections of one abstract: one passage, as above
                return (" ".join([*item.contexts, str(item.meta.get("long_answer", ""))]).strip(),)
            pmids = [item.qid, *(str(p) for p in item.meta.get("pmids", ()))]
            return next((abstracts[p] for p in pmids if p in abstracts), ())
        if item.contexts:
            return tuple(item.contexts)
        if base == "bioasq":
            found = by_id.get(item.qid)
            return found if found is not None else by_text.get(normalise(item.question), ())
        return ()

    return lookup
