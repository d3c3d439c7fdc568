"""Which passages the gate would let the model cite, per clinician question, without generating.

    python -m bench.clinician_passages --part dev --out docs/results/clinician/passages_dev.json

For every question of one part of ``clinician-default`` (``evals/datasets/clinician.py``) the
default profile's retriever and relevance model score the candidates once (cached in
``DATA_DIR/cache/clinician-evidence.json``); then, for each evidence threshold and ``keep`` of a
grid and each aboutness judgement, it counts:

- answerable: the answering passage (or another passage of its document holding the key fact)
  is kept and judged about the question, so a cited correct answer can pass the gate
  (``reachable``); kept but judged not about (``withheld``); not kept (``not_kept``);
- unanswerable: no kept passage is judged about the question, so medcite abstains before
  generating (``stopped``).

These are upper and lower bounds of the answer rate and the abstention rate, at the cost of
retrieval alone: the model may still answer wrongly, and may still abstain, after the gate.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Chunk
from evals.datasets.clinician import ClinicianItem, key_fact_given, load_clinician
from rag.assemble import assemble
from rag.check.aboutness import Question
from rag.check.rules import GateRules
from rag.check.terms import Vocabulary
from rag.profile import load_profile

Judge = Callable[[Question, Chunk, float], bool]
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.49, 0.6, 0.7)
KEEPS = (2, 3, 4, 6, 8)


def evidence_cache(paths: Paths) -> Path:
    return paths.data_dir / "cache" / "clinician-evidence.json"


def scored_candidates(items: Sequence[ClinicianItem], profile_name: str, paths: Paths) -> dict[str, Any]:
    """question -> [[chunk_id, P(relevant)], ...] in retrieval order, for every candidate the
    profile's reranker scores; read from the cache file when there, else computed and saved."""
    path = evidence_cache(paths)
    cache: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    todo = [it for it in items if it.question not in cache]
    if todo:
        profile = load_profile(profile_name)
        assembled = assemble(profile, paths)
        open_ended = assembled.pipeline.with_settings(threshold=None, keep=profile.rerank.candidates)
        start = time.perf_counter()
        for n, item in enumerate(todo, start=1):
            found = open_ended.evidence(item.question)
            cache[item.question] = [[h.chunk.chunk_id, h.score] for h in found.kept]
            if n % 25 == 0 or n == len(todo):
                print(f"scored {n}/{len(todo)} questions ({time.perf_counter() - start:.0f} s)", flush=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(cache))
    return cache


def answering(item: ClinicianItem, chunk: Chunk) -> bool:
    """Whether ``chunk`` answers ``item``: its answering passage, or a passage of an answering
    document that states the key fact."""
    if chunk.chunk_id == item.chunk_id:
        return True
    return any(
        chunk.doc_id == s or chunk.doc_id.startswith(s + "/") for s in item.sources
    ) and key_fact_given(item, chunk.text)


def tally(
    items: Sequence[ClinicianItem],
    candidates: dict[str, Any],
    chunk_of: Callable[[str], Chunk],
    judge: Judge,
    read: Callable[[str], Question],
    threshold: float,
    keep: int,
) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for item in items:
        question = read(item.question)
        kept = [(chunk_of(cid), p) for cid, p in candidates[item.question] if p >= threshold][:keep]
        about = [judge(question, c, p) for c, p in kept]
        row = counts.setdefault(item.kind, {})
        if item.answerable:
            hits = [a for (c, _), a in zip(kept, about, strict=True) if answering(item, c)]
            key = "reachable" if any(hits) else "withheld" if hits else "not_kept"
        else:
            key = "answerable_by_gate" if any(about) else "stopped"
        row[key] = row.get(key, 0) + 1
        row["n"] = row.get("n", 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test"), default="dev")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    paths = Paths.from_env()
    items = load_clinician(part=args.part)
    candidates = scored_candidates(items, args.profile, paths)
    profile = load_profile(args.profile)
    assembled = assemble(profile, paths)
    chunks = assembled.index.chunks
    fingerprint = assembled.index.manifest.get("corpus_fingerprint", "unknown")
    vocabulary = Vocabulary.cached(paths.cache_dir / "vocabulary" / f"{fingerprint}.json", chunks)
    judgements: dict[str, tuple[GateRules, Judge]] = {}
    for name, rules in variants().items():
        judgements[name] = (rules, lambda q, c, p: not q.missing(c))
    grid = []
    for name, (rules, judge) in judgements.items():

        def read(text: str, rules: GateRules = rules) -> Question:
            return Question.read(text, vocabulary, rules)

        for threshold in THRESHOLDS:
            for keep in KEEPS:
                counts = tally(items, candidates, chunks.by_id, judge, read, threshold, keep)
                grid.append({"judgement": name, "threshold": threshold, "keep": keep, "counts": counts})
                ans, near = counts.get("answerable", {}), counts.get("near", {})
                print(
                    f"{name:>16} t={threshold:.2f} keep={keep}: answerable reachable "
                    f"{ans.get('reachable', 0)}/{ans.get('n', 0)}, near stopped "
                    f"{near.get('stopped', 0)}/{near.get('n', 0)}, far stopped "
                    f"{counts.get('far', {}).get('stopped', 0)}/{counts.get('far', {}).get('n', 0)}"
                )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"part": args.part, "grid": grid}, indent=1))


def variants() -> dict[str, GateRules]:
    return {
        "every-term": GateRules(terms="every"),
        **{
            f"weighted>={t}": GateRules(terms="weighted", min_coverage=t)
            for t in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)
        },
    }


if __name__ == "__main__":
    main()
