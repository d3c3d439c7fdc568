"""Out-of-corpus and answerable questions through the default profile, to see the support gate work.

For each question: the answer's mode and text, its notes, every generated sentence with its
support, status (shown / flagged / removed) and reasons, the citations, the stage timings and
token usage (a rerun reads the LLM reranker's scores from its cache: ``rerank_cache_hits``).
Re-run after a change to the gate, the verifier, the prompts or the corpus:

    python scripts/support_gate_examples.py --out docs/results/support_gate_examples.json
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Answer
from rag.assemble import assemble, describe
from rag.profile import load_profile

QUESTIONS = {  # question -> what the default corpus holds for it
    "What is the recommended dose of pembrolizumab for metastatic melanoma?": "out of corpus (issue 14)",
    "What antibiotic regimen treats acute bacterial prostatitis?": "out of corpus (only a duration note)",
    "What is the first-line treatment for acute angle-closure glaucoma?": "out of corpus",
    "What are the qSOFA criteria?": "answerable (Sepsis-3)",
    "Which score is used to decide on anticoagulation in atrial fibrillation?": "answerable (AF 2023)",
}


def record(question: str, expected: str, answer: Answer, seconds: float) -> dict[str, Any]:
    """What the results file keeps of one answer (the evidence is named, not quoted)."""
    return {
        "question": question,
        "corpus": expected,
        "mode": answer.mode,
        "text": answer.text,
        "notes": list(answer.notes),
        "sentences": [
            {
                "text": s.text,
                "markers": list(s.markers),
                "support": round(s.support, 3),
                "supported": s.supported,
                "on_topic": s.on_topic,
                "status": s.status,
                "reasons": list(s.reasons),
            }
            for s in answer.sentences
        ],
        "citations": [
            {
                "marker": c.marker,
                "chunk_id": c.chunk_id,
                "title": c.title,
                "support": None if c.support is None else round(c.support, 3),
            }
            for c in answer.citations
        ],
        "evidence": [
            {"rank": h.rank, "chunk_id": h.chunk.chunk_id, "title": h.chunk.title} for h in answer.evidence
        ],
        "timings_s": {k: round(v, 2) for k, v in answer.timings.items()},
        "usage": dict(answer.usage),  # tokens; rerank_cache_hits: reranker scores read from its cache
        "total_s": round(seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=Path("docs/results/support_gate_examples.json"))
    args = parser.parse_args()

    profile = load_profile(args.profile)
    assembled = assemble(profile, Paths.from_env())
    rows = []
    try:
        for question, expected in QUESTIONS.items():
            start = time.perf_counter()
            answer = assembled.pipeline.answer(question)
            rows.append(record(question, expected, answer, time.perf_counter() - start))
            print(
                f"[{answer.mode:>9}] {rows[-1]['total_s']:6.1f}s  {question}\n            {answer.text[:200]}"
            )
            args.out.parent.mkdir(parents=True, exist_ok=True)  # written after each: a run is slow
            args.out.write_text(
                json.dumps(_report(assembled, profile, rows), indent=2, ensure_ascii=False) + "\n"
            )
    finally:
        assembled.close()


def _report(assembled: Any, profile: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "pipeline": describe(assembled),
        "verify": profile.verify.model_dump(),
        "git_commit": commit,
        "machine": f"{platform.machine()}, {platform.system()}",
        "answers": rows,
    }


if __name__ == "__main__":
    main()
