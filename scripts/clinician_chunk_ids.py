"""Give each answerable clinician question the id of the default-index chunk its quote stands in.

    python scripts/clinician_chunk_ids.py DRAFT.jsonl [DRAFT.jsonl ...] \
        --out evals/datasets/clinician_questions.jsonl

The question writers quote the answering line of a guideline summary verbatim (``guideline``,
``file``, ``quote``); this finds the quote in the open-medicine package's Markdown file and the
chunk of the built default index whose character span holds it (the one overlapping it most).
HPO questions name their chunk already and are checked to exist. A quote that is not in its
file, or in no chunk, stops the script with the question's id: nothing is written half-mapped.
Rows are written sorted by id, one JSON object a line, keys sorted, so the file hashes the same
from the same drafts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from core.paths import Paths
from corpora.sources.base import packaged_source_dir
from indexes.store import load_index


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def _holding(chunks: list[tuple[str, tuple[int, int]]], span: tuple[int, int], qid: str, doc: str) -> str:
    """The chunk overlapping ``span`` most; for a quoted heading (headings are section paths, not
    chunk text) the first chunk after it, if it starts within 200 characters."""
    best = max(chunks, key=lambda c: _overlap(c[1], span), default=None)
    if best is not None and _overlap(best[1], span) > 0:
        return best[0]
    after = [c for c in chunks if span[1] <= c[1][0] <= span[1] + 200]
    if not after:
        raise SystemExit(f"{qid}: no chunk of {doc} holds the quote")
    return min(after, key=lambda c: c[1][0])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drafts", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for draft in args.drafts:
        rows += [json.loads(line) for line in draft.read_text(encoding="utf-8").splitlines() if line.strip()]
    content = packaged_source_dir("open_medicine", "open-medicine", "guidelines/content", "this script")
    index = load_index(Paths.from_env().indexes_dir / "default")
    spans: dict[str, list[tuple[str, tuple[int, int]]]] = {}
    for chunk in index.chunks:
        spans.setdefault(chunk.doc_id, []).append((chunk.chunk_id, (chunk.start, chunk.end)))
    for row in rows:
        if row["kind"] != "answerable":
            continue
        if row.get("source") == "hpo":
            index.chunks.by_id(row["chunk_id"])  # raises when the chunk is not in the index
            continue
        text = (content / row["guideline"] / row["file"]).read_text(encoding="utf-8")
        start = text.find(row["quote"])
        if start < 0:
            raise SystemExit(f"{row['id']}: the quote is not in {row['guideline']}/{row['file']}")
        span = (start, start + len(row["quote"]))
        doc = f"open-medicine:{row['guideline']}/{Path(row['file']).stem}"
        row["chunk_id"] = _holding(spans.get(doc, []), span, row["id"], doc)
    rows.sort(key=lambda r: r["id"])
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate question ids")
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
    print(f"wrote {len(rows)} questions to {args.out}")


if __name__ == "__main__":
    main()
