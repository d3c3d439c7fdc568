"""What the medical-question gate stops of each held-out part, by kind (no passage is read).

    medcite bench medical-scope --out docs/results/clinician/medical_scope_held_out.json

The gate (``rag/reading/clinical.py``, ``[rerank] min_clinical``) keeps no passage for a
question under the threshold. Here it is scored, at the profile's threshold, on the parts it was
neither fitted nor tuned on: the clinician test, test-2 and test-3 parts (every answerable or near
question stopped is a loss), the outside test-2 part (every question stopped is a gain; its far
questions are medical, so stopping them is neither) and the follow-up conversations' turns (dev
and test), each as the profile's chain searches it (``[conversation] reading``).
"""

from __future__ import annotations

import argparse
import functools
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.paths import Paths
from core.types import Message
from evals.datasets.clinician import QUESTIONS_FILE, TEST2_FILE, TEST3_FILE, load_clinician
from evals.datasets.followups import load_followups
from evals.datasets.outside import load_outside
from rag.assemble import assemble
from rag.pipeline import Pipeline, contextual_query
from rag.profile import load_profile

CLINICIAN_PARTS = {"test": QUESTIONS_FILE, "test-2": TEST2_FILE, "test-3": TEST3_FILE}


def held_out(searched: Callable[[str, list[Message]], str]) -> dict[str, list[tuple[str, str]]]:
    """(kind, text searched) of every held-out part, by part; ``searched``: a turn's text as the
    chain searches it, given the earlier turns."""
    parts: dict[str, list[tuple[str, str]]] = {}
    for name, path in CLINICIAN_PARTS.items():
        items = load_clinician(path, part="test" if name == "test" else None)
        parts[f"clinician {name}"] = [(it.kind, it.question) for it in items]
    parts["outside test-2"] = [(q.kind, q.question) for q in load_outside("test-2")]
    for name in ("dev", "test"):
        turns = []
        for conversation in load_followups(name):  # type: ignore[arg-type]
            history: list[Message] = []
            for number, question in enumerate(conversation.turns, start=1):
                turns.append((f"turn {number}", searched(question, history)))
                history.append(Message("user", question))
        parts[f"follow-ups {name}"] = turns
    return parts


def searched(pipeline: Pipeline, question: str, history: list[Message]) -> str:
    """What ``pipeline`` searches with for ``question`` after ``history`` (``Pipeline.stream``)."""
    asked = pipeline.conversation(question, history)
    if pipeline.profile.conversation.reading == "search":
        return contextual_query(asked.text, history)
    return asked.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    profile = load_profile(args.profile)
    threshold = profile.rerank.min_clinical
    if threshold is None:
        raise ConfigError(f"profile {args.profile!r} sets no [rerank] min_clinical: nothing to score")
    assembled = assemble(profile, Paths.from_env())
    try:
        parts = held_out(functools.partial(searched, assembled.pipeline))
    finally:
        assembled.close()
    scope = assembled.pipeline.scope
    assert scope is not None  # min_clinical is set
    out: dict[str, Any] = {"profile": args.profile, "min_clinical": threshold, "parts": {}}
    for part, asked in parts.items():
        p = scope.model.probabilities(scope.embedder.embed([text for _, text in asked]))
        by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        stopped = []
        for (kind, text), prob in zip(asked, p, strict=True):
            by_kind[kind][1] += 1
            if prob < threshold:
                by_kind[kind][0] += 1
                stopped.append({"kind": kind, "question": text, "p_medical": round(float(prob), 3)})
        out["parts"][part] = {
            "stopped": {kind: f"{n}/{total}" for kind, (n, total) in sorted(by_kind.items())},
            "stopped_questions": stopped,
        }
        print(part, out["parts"][part]["stopped"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
