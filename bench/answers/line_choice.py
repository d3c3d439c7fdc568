"""Which line each judge puts first: the quote model against a line reader, on held-out folders.

    medcite train reader --fold 0                       # a reader trained without fold 0's folders
    medcite bench line-choice --reader data/training/reader/fold0 --fold 0 --questions 200 \\
        --out docs/results/clinician/line_choice_fold0.json

Answerable training questions of one fold (``training/reader.py``'s folder groups; the reader
never trained on their folders) are read as the chain reads them: every quotable line of the
hybrid retriever's top 10 chunks (none from a passage the passage checks bar), the condition
reader's conflicting lines set apart. Each line is labelled by where it stands
(``training/reader_lines.py``: inside an answering line or not). Reported: the share of
questions whose first line (and whose first three) answers, for the quote model
(``rag/reading/quote_model.py``), the reader, and the quote model's logit plus ``w`` times the
reader's, with the paired difference's 95% bootstrap interval. The quote model was fitted on the
clinician dev part, whose folders are these: it has seen these folders, the reader has not.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.paths import Paths

BLENDS = (0.25, 0.5, 1.0, 2.0)
Score = Callable[[dict[str, Any]], np.ndarray]


def read_questions(paths: Paths, reader: Path, fold: int, count: int) -> list[dict[str, Any]]:
    """Per question: each line's kind, quote-model probability, reader logit, conflicting or not."""
    import safetensors.torch

    from evals.datasets.clinician import load_training
    from rag.assemble import corpus_vocabulary
    from rag.indexing import make_retriever, open_index
    from rag.profile import load_profile
    from rag.reading.lines import line_context
    from rag.reading.question import ReadQuestion
    from rag.reading.quote_model import QuoteModel, score_lines
    from rag.rerank.trained import TrainedReranker
    from training.fit import FitConfig
    from training.reader import FIT, ReaderConfig, _reader_model, candidates, folds_of, read_logits

    items, config = load_training(), ReaderConfig()
    lines = candidates(paths, config, items)
    held = folds_of(items, config.folds)[fold]
    asked = [i for i in items if i.group in held and i.answerable]
    random.Random(7).shuffle(asked)
    model, tokenizer = _reader_model(config, FitConfig(max_length=FIT.max_length))
    model.load_state_dict(safetensors.torch.load_file(str(reader / "best.safetensors")), strict=False)
    verify = load_profile("default").verify
    index, embedder = open_index(paths, "default", with_embedder=True)
    retriever, relevance, quotes = (
        make_retriever(index, embedder, "hybrid"),
        TrainedReranker(),
        QuoteModel.shipped(),
    )
    vocabulary = corpus_vocabulary(paths, index)  # read once, not per question
    out = []
    for n, item in enumerate(asked[:count], start=1):
        kinds = {line.span: line.kind for line in lines[item.qid]}
        read = ReadQuestion.read(item.question, lambda: vocabulary)
        found = score_lines(read, retriever.retrieve(item.question, config.candidates), relevance, verify)
        read_lines = [*found.lines, *found.conflicting]
        if not read_lines:
            continue
        rows = [found.features]
        if found.conflicting_features is not None:
            rows.append(found.conflicting_features)
        chunks = [line.hit.chunk for line in read_lines]
        texts = [
            line_context(c, 0, len(c.text), line.lead) for c, line in zip(chunks, read_lines, strict=True)
        ]
        out.append(
            {
                "qid": item.qid,
                "kinds": [kinds.get((c.doc_id, c.start, c.end), "other") for c in chunks],
                "quote_model": quotes.probabilities(np.vstack(rows)).tolist(),
                "reader": read_logits(model, tokenizer, item.question, texts).tolist(),
                "conflicting": [False] * len(found.lines) + [True] * len(found.conflicting),
            }
        )
        if n % 20 == 0:
            print(f"read {n}/{min(count, len(asked))} questions", flush=True)
    index.close()
    return out


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.asarray(np.log(p / (1 - p)))


def _blend(w: float) -> Score:
    """The quote model's logit plus ``w`` times the reader's."""
    return lambda r: _logit(np.asarray(r["quote_model"])) + w * np.asarray(r["reader"])


def firsts(rows: Sequence[dict[str, Any]], score: Score, top: int) -> np.ndarray:
    """Per question, 1 when one of its ``top`` best-scored lines (conflicting ones excluded, as
    the answer excludes them) answers."""
    out = []
    for row in rows:
        keep = [i for i, c in enumerate(row["conflicting"]) if not c]
        s = score(row)
        order = sorted(keep, key=lambda i: (-s[i], i))[:top]
        out.append(int(any(row["kinds"][i] == "answer" for i in order)))
    return np.asarray(out)


def paired_interval(a: np.ndarray, b: np.ndarray, draws: int = 2000, seed: int = 7) -> list[float]:
    """The 95% bootstrap interval of mean(a - b), questions resampled."""
    rng = np.random.default_rng(seed)
    diff = a - b
    means = [float(diff[rng.integers(0, len(diff), len(diff))].mean()) for _ in range(draws)]
    return [round(float(np.quantile(means, q)), 3) for q in (0.025, 0.975)]


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    judges: dict[str, Score] = {
        "quote model": lambda r: np.asarray(r["quote_model"]),
        "reader": lambda r: np.asarray(r["reader"]),
    }
    for w in BLENDS:
        judges[f"quote model + {w} x reader"] = _blend(w)
    base = {top: firsts(rows, judges["quote model"], top) for top in (1, 3)}
    table = {}
    for name, score in judges.items():
        entry: dict[str, Any] = {}
        for top in (1, 3):
            hits = firsts(rows, score, top)
            entry[f"top{top}"] = round(float(hits.mean()), 3)
            entry[f"top{top}_minus_quote_model_95ci"] = paired_interval(hits, base[top])
        table[name] = entry
    reachable = sum("answer" in r["kinds"] for r in rows)
    return {"questions": len(rows), "answer_line_read": reachable, "judges": table}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", type=Path, required=True, help="a fold's model folder (best.safetensors)")
    parser.add_argument("--fold", type=int, required=True, help="the fold it was trained without")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not (args.reader / "best.safetensors").is_file():
        parser.error(
            f"no best.safetensors in {args.reader}; train one with: medcite train reader --fold {args.fold}"
        )
    rows = read_questions(Paths.from_env(), args.reader, args.fold, args.questions)
    result = {"reader": str(args.reader), "fold": args.fold, "summary": summary(rows), "rows": rows}
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
