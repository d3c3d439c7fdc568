"""A labelled set for the faithfulness judge: BioASQ claims its gold snippets support, and false
claims made from them by rule, each labelled by construction.

Items are BioASQ questions of Tasks 7B-10B (``bioasq_from_mirage``); Task 11B, the project's
held-out BioASQ year, is left out, and so is any question whose normalised text also occurs in
11B (as ``evals.datasets.support_set`` does). Per item, a seeded sample:

- **contexts**: its gold snippets, one per PubMed article ("title. abstract"), as the metric
  would receive retrieved passages; the judge reads only the first ``CONTEXTS_MAX``, each cut to
  ``CONTEXT_MAX_CHARS``, so "in the contexts" means in that visible text.
- ``supported`` (label 1): a sentence of the item's first ideal answer (six words or more, no
  leading "Yes."/"No.", not opening with a pronoun) whose content words all occur in the visible
  contexts, bar at most one (and at most 10%), and whose numbers all occur there.

From each supported claim, the false claims (label 0), where the rule applies: ``negation`` (one
removed, or added after the first auxiliary), ``number`` (the first doubled, absent from the
contexts), ``antonym`` (the first direction word flipped), ``entity`` (the exact answer swapped
for another item's short one the contexts do not mention), ``unrelated`` (another item's
supported claim, sharing no PubMed id and at most a third of its content words with these
contexts). The edit rules are ``evals.datasets.support_set``'s; negations after "may"/"might"
and swapped "entities" that are not entity-like (:func:`is_entity_like`, :func:`entity_shape`)
are excluded, found by reading samples (docs/results/module_history.md). The claims hold BioASQ
text (BioASQ terms of use), so the set is written under the data folder, never into the
repository; results keep ids, rules, edits and scores.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evals.datasets.bioasq import bioasq_rows, normalise
from evals.datasets.support_set import (
    TEST_TASK,
    article_texts,
    change_direction,
    change_entity,
    change_negation,
    change_number,
    claims_of,
    exact_answers,
    read_snippets,
)
from evals.engine.judge.answer_quality import CONTEXT_MAX_CHARS, CONTEXTS_MAX

RULES = ("supported", "negation", "number", "antonym", "entity", "unrelated")
FALSE_RULES = RULES[1:]
MAX_MISSING_SHARE = 0.10
UNRELATED_MAX_COVERAGE = 1 / 3
_PRONOUN_START = re.compile(r"^(it|its|they|their|this|these|those|he|she|that)\b", re.IGNORECASE)
_HEDGED_NOT = re.compile(r"\b(may|might) not\b", re.IGNORECASE)
_FUNCTION_WORDS = frozenset("a an the by in of on to for from with through via at as and or yes no".split())
_TOKEN = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_STOP = frozenset(
    "the and for are was were with that this these those from into onto than then which what who whom "
    "whose when where while also been being have has had not but can may might could should would will "
    "its their there they them other such each both only more most some any all one two via per about "
    "does did used use using known called including include includes based due between among within "
    "without after before during over under".split()
)


@dataclass(frozen=True)
class Claim:
    """One labelled claim; ``edit`` says what its rule changed (short, no sentence text)."""

    claim_id: str  # "<qid>:<n>:<rule>", n = the supported claim it derives from
    qid: str
    rule: str  # one of RULES
    label: int  # 1: the item's contexts support it
    text: str
    edit: str = ""


@dataclass(frozen=True)
class LabelledItem:
    qid: str
    question: str
    contexts: tuple[str, ...]
    claims: tuple[Claim, ...]


def content_words(text: str) -> list[str]:
    """Lower-cased word tokens of three or more characters (digits kept), stop words out, a plural
    ``s`` cut: the unit the support rule counts."""
    words = [w for w in _TOKEN.findall(text.lower()) if (len(w) >= 3 or w.isdigit()) and w not in _STOP]
    return [w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def coverage(claim: str, contexts_text: str) -> tuple[int, int]:
    """(content words of ``claim`` found in ``contexts_text``, content words of ``claim``)."""
    have = set(content_words(contexts_text))
    words = content_words(claim)
    return sum(w in have for w in words), len(words)


def is_supported(claim: str, contexts_text: str) -> bool:
    """The ``supported`` rule: every number present, at most one content word (and at most 10%)
    missing."""
    if any(n not in contexts_text for n in _NUMBER.findall(claim)):
        return False
    found, total = coverage(claim, contexts_text)
    missing = total - found
    return total >= 4 and missing <= 1 and missing <= MAX_MISSING_SHARE * total


def visible(contexts: Sequence[str]) -> str:
    """What the judge reads of ``contexts`` (the metric's count and truncation)."""
    return "\n\n".join(c[:CONTEXT_MAX_CHARS] for c in contexts[:CONTEXTS_MAX])


def _diff(before: str, after: str) -> str:
    """The changed span, as ``'old' -> 'new'`` (common prefix and suffix trimmed to word edges)."""
    a, b = before.split(), after.split()
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return f"{' '.join(a[i : len(a) - j])!r} -> {' '.join(b[i : len(b) - j])!r}"


def edited_claims(claim: str, context_text: str, exact: Sequence[str], entity: str | None) -> dict[str, str]:
    """The rule-made false variants of one supported claim (rule -> text); a rule that does not
    apply, or leaves the claim unchanged, is absent."""
    made = {
        "negation": change_negation(claim),
        "number": change_number(claim),
        "antonym": change_direction(claim),
        "entity": change_entity(claim, exact, entity) if entity else None,
    }
    out = {rule: text for rule, text in made.items() if text is not None and text != claim}
    if "negation" in out and _HEDGED_NOT.search(out["negation"]) and not _HEDGED_NOT.search(claim):
        del out["negation"]  # "may not X" does not contradict "may X"
    if "number" in out:
        new = set(_NUMBER.findall(out["number"])) - set(_NUMBER.findall(claim))
        if any(n in context_text for n in new):
            del out["number"]  # the doubled number occurs in the passages: it might still hold
    return out


@dataclass(frozen=True)
class _Row:
    qid: str
    question: str
    contexts: tuple[str, ...]
    exact: tuple[str, ...]
    pmids: frozenset[str]
    supported: tuple[str, ...]


def candidate_rows(source_data: Path, claims_per_item: int) -> list[_Row]:
    """Every non-11B BioASQ question with at least one supported claim, sorted by id."""
    rows = bioasq_rows(source_data)
    snippets = read_snippets(source_data)
    held_out = {normalise(str(r["body"])) for r in rows if r["task"] == TEST_TASK}
    out = []
    for row in rows:
        if row["task"] == TEST_TASK or normalise(str(row["body"])) in held_out:
            continue
        contexts = article_texts([str(s) for s in row.get("snippet_ids") or []], snippets)  # type: ignore[attr-defined]
        shown = [c[:CONTEXT_MAX_CHARS] for c in contexts[:CONTEXTS_MAX]]
        sentences = claims_of(row.get("ideal_answer"), 6)
        good = [
            s for s in sentences if not _PRONOUN_START.match(s) and any(is_supported(s, c) for c in shown)
        ]
        if contexts and good:
            out.append(
                _Row(
                    str(row["id"]),
                    str(row["body"]),
                    contexts,
                    exact_answers(dict(row)),
                    frozenset(str(p) for p in row.get("pmids") or []),  # type: ignore[attr-defined]
                    tuple(good[:claims_per_item]),
                )
            )
    return sorted(out, key=lambda r: r.qid)


def build_items(rows: Sequence[_Row], n_items: int, seed: int = 13) -> list[LabelledItem]:
    """A seeded sample of ``n_items`` rows, each with its supported and rule-made claims.

    Items stay in sampled order, so the first k of them (a run stopped early) are a random
    sample too; each item's random choices come from its own seeded generator."""
    picked = random.Random(seed).sample(list(rows), min(n_items, len(rows)))
    entities = sorted({e for r in rows for e in r.exact if is_entity_like(e)})
    items = []
    for row in picked:
        seen = visible(row.contexts)
        folded = seen.lower()
        pool = [e for e in entities if e.lower() not in folded and e not in row.exact]
        shaped = {shape: [e for e in pool if entity_shape(e) == shape] for shape in ("symbol", "words")}
        others = [o for o in rows if o.qid != row.qid and not (o.pmids & row.pmids)]
        claims: list[Claim] = []
        rng = random.Random(f"{seed}:{row.qid}")
        for n, text in enumerate(row.supported):
            claims.append(Claim(f"{row.qid}:{n}:supported", row.qid, "supported", 1, text))
            named = [e for e in row.exact if is_entity_like(e)]  # not whole-sentence exact answers
            entity = _replacement(text, named, shaped, rng)
            for rule, changed in edited_claims(text, seen, named, entity).items():
                claims.append(Claim(f"{row.qid}:{n}:{rule}", row.qid, rule, 0, changed, _diff(text, changed)))
            unrelated = _unrelated(others, seen, rng)
            if unrelated is not None:
                claims.append(
                    Claim(
                        f"{row.qid}:{n}:unrelated",
                        row.qid,
                        "unrelated",
                        0,
                        unrelated[1],
                        f"from {unrelated[0]}",
                    )
                )
        items.append(LabelledItem(row.qid, row.question, row.contexts, tuple(claims)))
    return items


def entity_shape(text: str) -> str:
    """``symbol`` for gene- and drug-code-like names (a digit, or two capitals: "BRCA1", "TNF"),
    ``words`` for plain names ("dementia", "Tocilizumab"): a swap keeps the shape."""
    return "symbol" if re.search(r"\d|[A-Z].*[A-Z]", text) else "words"


def is_entity_like(text: str) -> bool:
    """An exact answer usable as a swapped entity: three letters or more, at most four words, not
    opening with a function word (BioASQ exact answers include "By intracellular DNA", "2.7%",
    "9th" and whole sentences)."""
    words = text.split()
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 3 and 0 < len(words) <= 4 and words[0].lower() not in _FUNCTION_WORDS


def _replacement(
    claim: str, exact: Sequence[str], shaped: dict[str, list[str]], rng: random.Random
) -> str | None:
    """Another item's entity of the shape of the first exact answer the claim names."""
    for answer in exact:
        if len(answer) >= 3 and re.search(r"(?<!\w)" + re.escape(answer) + r"(?!\w)", claim, re.IGNORECASE):
            pool = shaped[entity_shape(answer)]
            return rng.choice(pool) if pool else None
    return None


def _unrelated(others: Sequence[_Row], seen: str, rng: random.Random) -> tuple[str, str] | None:
    """(qid, claim) of another item's supported claim that these contexts barely cover."""
    for _ in range(20):
        other = rng.choice(others)
        text = rng.choice(other.supported)
        found, total = coverage(text, seen)
        if total and found / total <= UNRELATED_MAX_COVERAGE:
            return other.qid, text
    return None


def write_items(items: Sequence[LabelledItem], path: Path) -> None:
    """One JSON line per item (contexts and claims with their rules): the full set, with text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(asdict(item)) + "\n" for item in items)


def read_items(path: Path) -> list[LabelledItem]:
    items = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            raw: dict[str, Any] = json.loads(line)
            claims = tuple(Claim(**c) for c in raw["claims"])
            items.append(LabelledItem(raw["qid"], raw["question"], tuple(raw["contexts"]), claims))
    return items
