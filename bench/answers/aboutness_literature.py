"""How often is a gold BioASQ snippet "about" its own question, by the aboutness check's rule?

The aboutness check (``rag/reading/aboutness.py``) keeps a passage only if it contains every
key term of the question. Its generic words were chosen on clinical guideline questions; on
research questions ("Is levosimendan effective for ALS?", "What is the mechanism of action of
X?") the framing words ("effective", "mechanism", "action") were taken as subject words, so the
passage that answers was judged off-topic and medcite abstained (seen in the first answers of
``evals/configs/answer_quality.toml``).

For every BioASQ question with gold snippets: does its best gold snippet (the one missing the
fewest key terms) pass, and which key terms does it miss. Reported for the dev split (Task
7B-10B, where the research framing words were chosen) and the test split (Task 11B), with the
rule as committed (``HEAD``) and as in the working tree, if they differ. Also a safety check on
the abstention sets: every question whose key terms the change alters, and how many chunks of
the default index are about it before and after (a question with no such chunk cannot be
answered through the check either way). Writes ``docs/results/bench/answers/aboutness_literature.json``.

    medcite bench aboutness-literature [--base REV]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.paths import Paths
from core.types import Chunk
from corpora.sources.base import iter_jsonl
from evals.datasets import FREE_TEXT_LOADERS
from evals.datasets.bioasq import bioasq_rows
from rag.reading import aboutness

DEV = ("Task7B", "Task8B", "Task9B", "Task10B")
TEST = ("Task11B",)
ABSTENTION_SETS = (
    "abstention-default",
    "abstention-default-dev",
    "abstention-near-miss",
    "abstention-near-miss-dev",
)


# where the aboutness module's neighbours of earlier revisions live now
MOVED = {
    "rag.check.terms": "rag.reading.terms",
    "rag.check.conditions": "rag.reading.conditions",
    "rag.check.abbreviations": "rag.reading.abbreviations",
}


def rule_at(rev: str) -> types.ModuleType:
    """The aboutness module as committed at ``rev``, loaded as a separate module. Before issue 31
    it was ``rag/generate/aboutness.py`` and imported its neighbours from ``rag.generate``, then
    ``rag/check/aboutness.py``; they live in ``rag.reading`` now."""
    for path in ("rag/reading/aboutness.py", "rag/check/aboutness.py", "rag/generate/aboutness.py"):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"no aboutness module at {rev}")
    source = shown.stdout.replace("from rag.generate.dose_scope", "from rag.reading.conditions")
    source = source.replace("from rag.check.dose_scope", "from rag.reading.conditions")
    for old, new in MOVED.items():
        source = source.replace(f"from {old} ", f"from {new} ")
    # the gate's rules became [verify] settings; this bench reads the rule functions only
    source = source.replace("from rag.check.rules import GateRules", "GateRules = dict")
    module = types.ModuleType(f"aboutness_{rev}")
    module.__file__ = str(Path(path).resolve())  # it finds its weights beside itself
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def snippet_chunk(text: str) -> Chunk:
    return Chunk(
        chunk_id="",
        doc_id="",
        title="",
        section=(),
        text=text,
        start=0,
        end=len(text),
        source="",
        url="",
        license="",
    )


def gold_pass_rate(
    rows: Sequence[dict[str, Any]],
    snippets: dict[str, str],
    key_terms: Callable[[str], tuple[str, ...]],
    missing: Callable[[Sequence[str], Chunk], tuple[str, ...]],
) -> dict[str, Any]:
    """Share of questions whose best gold snippet has every key term; the terms missed most."""
    passed, counted, missed = 0, 0, Counter[str]()
    for row in rows:
        chunks = [snippet_chunk(snippets[s]) for s in row.get("snippet_ids") or [] if s in snippets]
        if not chunks:
            continue
        counted += 1
        terms = key_terms(str(row["body"]))
        best = min((missing(terms, c) for c in chunks), key=len)
        passed += not best
        missed.update(best)
    return {
        "questions": counted,
        "gold_about": passed,
        "rate": round(passed / max(counted, 1), 4),
        "most_missed": missed.most_common(25),
    }


def abstention_check(paths: Paths, old: types.ModuleType) -> dict[str, Any]:
    """Questions of the abstention sets whose key terms changed, with the default index's chunks
    about them before and after."""
    from rag.indexing import open_index

    index, _ = open_index(paths, "default", with_embedder=False)
    try:
        chunks = list(index.chunks)
    finally:
        index.close()
    out: dict[str, Any] = {}
    for name in ABSTENTION_SETS:
        rows = []
        for item in FREE_TEXT_LOADERS[name](paths):
            before, after = old.key_terms(item.question), aboutness.key_terms(item.question)
            if before == after:
                continue
            rows.append(
                {
                    "question": item.question,
                    "answerable": item.answerable,
                    "before": before,
                    "after": after,
                    "chunks_about_before": sum(not old.missing_terms(before, c) for c in chunks),
                    "chunks_about_after": sum(not aboutness.missing_terms(after, c) for c in chunks),
                }
            )
        out[name] = {
            "changed": len(rows),
            "unanswerable_with_a_chunk_about_it_after": sum(
                r["answerable"] is False and r["chunks_about_after"] > 0 for r in rows
            ),
            "questions": rows,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the committed rule to compare with")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/results/bench/answers/aboutness_literature.json")
    )
    args = parser.parse_args()
    paths = Paths.from_env()
    snippets = {
        str(r["_id"]): str(r.get("text") or "")
        for _, r in iter_jsonl(paths.source_data / "bioasq_from_mirage" / "snippet_corpus.jsonl")
    }
    rows = bioasq_rows(paths.source_data)
    old = rule_at(args.base)
    result: dict[str, Any] = {"base": args.base, "splits": {}}
    for split, tasks in (("dev (Task 7B-10B)", DEV), ("test (Task 11B)", TEST)):
        chosen = [r for r in rows if r["task"] in tasks]
        result["splits"][split] = {
            "base": gold_pass_rate(chosen, snippets, old.key_terms, old.missing_terms),
            "now": gold_pass_rate(chosen, snippets, aboutness.key_terms, aboutness.missing_terms),
        }
        b, n = (result["splits"][split][k]["rate"] for k in ("base", "now"))
        print(f"{split}: best gold snippet about its question {b:.2f} -> {n:.2f}")
    result["abstention_sets"] = abstention_check(paths, old)
    for name, entry in result["abstention_sets"].items():
        print(
            f"{name}: {entry['changed']} questions' key terms changed; unanswerable ones now with a chunk "
            f"about them: {entry['unanswerable_with_a_chunk_about_it_after']}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
