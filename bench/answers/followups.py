"""Follow-ups in a conversation (issue 60): each reading of the last turn, paired on the same conversations.

    medcite bench followups --part dev --out docs/results/clinician/followups_dev.json
    medcite bench followups --part test --arms search,carry,standalone \
        --out docs/results/clinician/followups_test.json

For every conversation of ``evals/datasets/followups.py``, the last user turn is answered with the
earlier user turns as the chat history, once per ``[conversation] reading`` (``search``: the chain
before issue 60; ``carry``; ``rewrite``), and ``standalone``: the writers' own standalone rewrite
asked as one question, what single-question answering reaches on the same facts. The assistant's
earlier replies are not sent: no reading uses them (``rag/reading/conversation.py``). Scored as the
clinician benchmark scores one question (``clinician.outcome``: answerable ``correct`` / ``wrong``
/ ...; unanswerable ``answered`` when shown as an answer), on the reply's text after its "Read
with:" line. Each arm's records are kept as they come under ``DATA_DIR/cache/followups/``, so a
stopped run resumes; generations come from the clinician runs' cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Answer, Message
from evals.datasets.clinician import outcome
from evals.datasets.followups import SHA256, Conversation, FollowupPart, load_followups
from evals.engine.generation_cache import CachingGenerator
from evals.metrics.choice import wilson_interval
from evals.metrics.stats import mcnemar_exact
from rag.assemble import assemble, make_generator
from rag.pipeline import Pipeline
from rag.profile import load_profile

# each arm's [conversation] settings; standalone: the writers' rewrite asked as one question
READINGS: dict[str, dict[str, str]] = {
    "search": {"reading": "search"},
    "carry": {"reading": "carry"},
    "rewrite": {"reading": "rewrite"},
}
ARMS = (*READINGS, "standalone")


def answer(pipeline: Pipeline, conversation: Conversation, arm: str) -> Answer:
    """The last turn's answer as ``arm`` reads it."""
    if arm == "standalone":
        return pipeline.answer(conversation.standalone)
    reading = pipeline.with_changes({"conversation": READINGS[arm]})
    history = [Message("user", text) for text in conversation.turns[:-1]]
    return reading.answer(conversation.turns[-1], history=history)


def record(conversation: Conversation, arm: str, reply: Answer, seconds: float) -> dict[str, Any]:
    item = conversation.as_item()
    said = reply.text.split("\n\n", 1)[1] if reply.text.startswith(("Read with:", "Read as:")) else reply.text
    return {
        "cid": conversation.cid,
        "arm": arm,
        "kind": conversation.kind,
        "follow_up": conversation.follow_up,
        "outcome": outcome(item, reply.mode, said, [c.doc_id for c in reply.citations]),
        "shown": reply.outcome,
        "carried": list(reply.carried),
        "question_read": reply.question,
        "text": reply.text,
        "seconds": round(seconds, 2),
    }


def ask(
    pipeline: Pipeline, conversations: Sequence[Conversation], arm: str, log: Path
) -> list[dict[str, Any]]:
    """Every conversation's record for ``arm``, read back from ``log`` where already there."""
    done = {}
    if log.is_file():
        done = {r["cid"]: r for r in map(json.loads, log.read_text(encoding="utf-8").splitlines()) if r}
    out, start = [], time.perf_counter()
    for n, conversation in enumerate(conversations, start=1):
        if conversation.cid not in done:
            t0 = time.perf_counter()
            reply = answer(pipeline, conversation, arm)
            done[conversation.cid] = record(conversation, arm, reply, time.perf_counter() - t0)
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(done[conversation.cid], ensure_ascii=False) + "\n")
            took = time.perf_counter() - start
            result = done[conversation.cid]["outcome"]
            print(
                f"[{arm} {n}/{len(conversations)} {took:5.0f}s] {result:>12} {conversation.cid}", flush=True
            )
        out.append(done[conversation.cid])
    return out


def _share(k: int, n: int) -> dict[str, Any]:
    return {
        "count": k,
        "n": n,
        "share": round(k / n, 4) if n else None,
        "wilson95": [round(x, 4) for x in wilson_interval(k, n)] if n else None,
    }


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Both halves: answerable correct / wrong, unanswerable shown as an answer; shown answers
    right; correct - 3 x wrong; seconds (median)."""
    answerable = [r for r in records if r["kind"] == "answerable"]
    unanswerable = [r for r in records if r["kind"] != "answerable"]
    counts = Counter(r["outcome"] for r in answerable)
    shown = [r for r in records if r["shown"] == "answer"]
    right = sum(r["outcome"] == "correct" for r in shown)
    return {
        "answerable": {name: _share(k, len(answerable)) for name, k in sorted(counts.items())},
        "unanswerable_answered": _share(
            sum(r["outcome"] == "answered" for r in unanswerable), len(unanswerable)
        ),
        "shown_answers_right": _share(right, len(shown)),
        # correct - 3 x wrong, an unanswerable follow-up shown as an answer counting as wrong
        "score": counts["correct"]
        - 3 * (counts["wrong"] + sum(r["outcome"] == "answered" for r in unanswerable)),
        "by_follow_up": {
            kind: dict(Counter(r["outcome"] for r in records if r["follow_up"] == kind))
            for kind in sorted({r["follow_up"] for r in records})
        },
        "seconds_median": round(statistics.median(r["seconds"] for r in records), 2) if records else None,
        "seconds_median_quoted": _median([r["seconds"] for r in records if r["shown"] == "answer"]),
    }


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def paired(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``b`` against ``a`` on the same conversations: correct gained and lost (exact McNemar),
    unanswerable shown as answers gained and lost."""
    by_a = {r["cid"]: r for r in a}
    pairs = [(by_a[r["cid"]], r) for r in b if r["cid"] in by_a]
    gained = sum(x["outcome"] != "correct" and y["outcome"] == "correct" for x, y in pairs)
    lost = sum(x["outcome"] == "correct" and y["outcome"] != "correct" for x, y in pairs)
    wrong_more = sum(
        x["outcome"] not in ("wrong", "answered") and y["outcome"] in ("wrong", "answered") for x, y in pairs
    )
    wrong_less = sum(
        x["outcome"] in ("wrong", "answered") and y["outcome"] not in ("wrong", "answered") for x, y in pairs
    )
    return {
        "n": len(pairs),
        "correct_gained": gained,
        "correct_lost": lost,
        "mcnemar_p": round(mcnemar_exact(gained, lost), 4),
        "wrong_or_answered_gained": wrong_more,
        "wrong_or_answered_lost": wrong_less,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test", "test-2"), default="dev")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {ARMS}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if unknown := [a for a in arms if a not in ARMS]:
        raise SystemExit(f"unknown arm(s) {unknown}: choose from {ARMS}")
    part: FollowupPart = args.part
    conversations = load_followups(part)[: args.limit]
    paths = Paths.from_env()
    profile = load_profile(args.profile)
    generator = CachingGenerator(
        make_generator(profile.generator, paths), paths.cache_dir / "clinician-generations.sqlite"
    )
    assembled = assemble(profile, paths, generator=generator)
    folder = paths.cache_dir / "followups"
    folder.mkdir(parents=True, exist_ok=True)
    runs = {
        arm: ask(assembled.pipeline, conversations, arm, folder / f"{part}-{args.profile}-{arm}.jsonl")
        for arm in arms
    }
    assembled.close()
    base = "search" if "search" in runs else arms[0]
    result = {
        "part": part,
        "profile": args.profile,
        "conversations_sha256": SHA256[part],
        "arms": {arm: summary(records) for arm, records in runs.items()},
        "paired_with": base,
        "paired": {arm: paired(runs[base], records) for arm, records in runs.items() if arm != base},
        "records": runs,
    }
    print(json.dumps({k: result[k] for k in ("arms", "paired")}, indent=1))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
