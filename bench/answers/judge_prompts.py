"""Answer-judge prompts compared on the same generated sentences of a clinician benchmark run.

Each sentence of a run file (``bench/answers/clinician.py --out``) that cites a passage is labelled: for
an answerable question it answers when it holds the question's key fact, and no sentence answers
an unanswerable one. Each prompt's P(yes) is the largest over the sentence's first two cited
passages, read through the clinician generation cache (so a rerun costs nothing). Reported per
prompt: ROC AUC over the sentences, and the question outcomes a gate would give if a sentence
were shown when the rule checks pass, its support reaches a floor and P(yes) a threshold
(a simulation from the run's per-sentence scores; the gate's re-citations are not replayed).

    medcite bench judge-prompts --run docs/results/clinician/dev_judged2.json \
        --out docs/results/clinician/judge_prompts_dev.json
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Chunk, Message
from evals.datasets.clinician import ClinicianItem, load_clinician
from rag.gate.answer_judge import SYSTEM, judge_messages, judge_passage
from rag.gate.verify import rule_checks
from rag.reading.plain_text import plain


def three_turn_messages(question: str, claim: str, chunk: Chunk) -> list[Message]:
    """The third round's judge chat: passage and question, an acknowledgement, then the sentence."""
    passage = judge_passage(chunk)
    return [
        Message("system", SYSTEM),
        Message("user", f"Passage:\n{passage}\n\nQuestion: {question}"),
        Message("assistant", "I have read the passage and the question."),
        Message(
            "user",
            f"Proposed answer: {claim}\n\n"
            "Does the passage state this answer to the question, with the same numbers?",
        ),
    ]


PROMPTS: dict[str, Callable[[str, str, Chunk], list[Message]]] = {
    "one_turn": judge_messages,  # the product's (rag/gate/answer_judge.py)
    "three_turn": three_turn_messages,
}


def sentence_rows(run: dict[str, Any], items: dict[str, ClinicianItem]) -> list[dict[str, Any]]:
    """The run's cited sentences with their question, cited passages and label."""
    rows = []
    for record in run["records"]:
        item = items[record["qid"]]
        for s in record["sentences"]:
            text = s["text"].strip()
            if not s["markers"] or not re.search("[A-Za-z]", text) or text.rstrip(":.") == "Sources":
                continue
            answers = item.kind == "answerable" and re.search(item.key_fact or "", text, re.I) is not None
            chunks = [record["evidence"][m - 1] for m in s["markers"] if 0 < m <= len(record["evidence"])]
            rows.append(
                {
                    "qid": record["qid"],
                    "kind": item.kind,
                    "question": record["question"],
                    "text": text,
                    "chunks": chunks[:2],
                    "support": s["support"],
                    "only_support": all(r.startswith("support") for r in s["reasons"]),
                    "status": s["status"],
                    "label": int(answers),
                }
            )
    return rows


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a random positive scores above a random negative), ties counting half."""
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def outcomes(
    rows: Sequence[dict[str, Any]], items: dict[str, ClinicianItem], shown: Callable[[dict[str, Any]], bool]
) -> dict[str, int]:
    """Question outcomes (kind/outcome -> count) when the sentences ``shown`` accepts are shown."""
    counts: Counter[str] = Counter()
    for qid in sorted({r["qid"] for r in rows}):
        item = items[qid]
        texts = [r["text"] for r in rows if r["qid"] == qid and shown(r)]
        if not texts:
            outcome = "abstained"
        elif item.kind != "answerable":
            outcome = "answered"
        else:
            hit = any(re.search(item.key_fact or "", t, re.I) for t in texts)
            outcome = "correct" if hit else "wrong"
        counts[f"{item.kind}/{outcome}"] += 1
    return dict(sorted(counts.items()))


def score(
    rows: list[dict[str, Any]], prompts: Sequence[str], generator: Any, chunk: Callable[[str], Chunk]
) -> None:
    """Add each prompt's P(yes) (the largest over the cited passages) and the rule checks to ``rows``."""
    from rag.generate.yes_no import CANDIDATES, yes_probability

    for i, row in enumerate(rows, start=1):
        passages = [chunk(c) for c in row["chunks"]]
        row["checks"] = any(all(rule_checks(plain(row["text"]), p)) for p in passages)
        for name in prompts:
            asked = [PROMPTS[name](row["question"], plain(row["text"]), p) for p in passages]
            row[name] = max(
                (yes_probability(generator.next_token_logprobs(m, CANDIDATES)) or 0.0 for m in asked),
                default=0.0,
            )
        print(f"[{i}/{len(rows)}] " + " ".join(f"{n} {row[n]:.2f}" for n in prompts), flush=True)


def summarise(
    rows: list[dict[str, Any]], items: dict[str, ClinicianItem], args: argparse.Namespace
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "sentences": len(rows),
        "answering": sum(r["label"] for r in rows),
        "prompts": {},
    }
    for name in args.prompts:
        pos = [r[name] for r in rows if r["label"]]
        neg = [r[name] for r in rows if not r["label"]]
        grid = {}
        for floor in args.floors:
            for threshold in args.thresholds:

                def shown(r: dict[str, Any], f: float = floor, t: float = threshold, n: str = name) -> bool:
                    kept = r["status"] == "shown" or (r["only_support"] and r["checks"])
                    return bool(kept and r["support"] >= f and r[n] >= t)

                grid[f"support>={floor} p_yes>={threshold}"] = outcomes(rows, items, shown)
        result["prompts"][name] = {"roc_auc": round(auc(pos, neg), 3), "outcomes": grid}
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, required=True, help="a bench/answers/clinician.py result file")
    p.add_argument("--prompts", type=lambda s: s.split(","), default=list(PROMPTS))
    p.add_argument("--floors", type=lambda s: [float(x) for x in s.split(",")], default=[0.0, 0.2])
    default_thresholds = [0.5, 0.55, 0.6, 0.62, 0.65, 0.7]
    p.add_argument(
        "--thresholds", type=lambda s: [float(x) for x in s.split(",")], default=default_thresholds
    )
    p.add_argument("--out", type=Path, required=True)
    return p


def main(argv: Sequence[str] | None = None) -> None:
    from bench.answers.clinician import default_cache
    from evals.engine.generation_cache import CachingGenerator
    from indexes.chunkstore import ChunkStore
    from rag.assemble import make_generator
    from rag.profile import load_profile

    args = parser().parse_args(argv)
    unknown = set(args.prompts) - set(PROMPTS)
    if unknown:
        raise SystemExit(f"unknown prompts {sorted(unknown)}; choose from {sorted(PROMPTS)}")
    paths = Paths.from_env()
    items = {i.qid: i for i in load_clinician()}
    rows = sentence_rows(json.loads(args.run.read_text(encoding="utf-8")), items)
    store = ChunkStore(paths.indexes_dir / "default")
    generator = CachingGenerator(
        make_generator(load_profile("judged").generator, paths), default_cache(paths)
    )
    score(rows, args.prompts, generator, store.by_id)
    result = {"run": str(args.run), **summarise(rows, items, args), "rows": rows}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
