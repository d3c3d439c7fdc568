"""One evaluated item of one run: the unit that runs write, reports read and comparisons pair.

Records are JSON lines (``records.jsonl`` in a run directory), so an interrupted run keeps every
finished item and a comparison of two runs pairs records by ``(dataset, qid)``. Imported
published predictions (MIRAGE's reference runs) become records of the same shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ItemRecord:
    dataset: str  # "medqa", "pubmedqa", "bioasq-retrieval", ...
    qid: str
    condition: str  # what was run: "closed-book", "rag", or a grid cell such as "bm25/k=5"
    gold: str | None = None  # the correct option letter (multiple choice)
    pred: str | None = None  # the chosen letter; None means no answer, and `error` says why
    option_probs: Mapping[str, float] | None = None
    retrieved: tuple[tuple[str, float], ...] = ()  # (doc or chunk id, score), best first
    citations: tuple[str, ...] = ()  # chunk ids the answer cites
    answer: str | None = None  # free text, for answer-quality metrics
    latency_s: float = 0.0
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset, self.qid)

    @property
    def correct(self) -> bool | None:
        """True/False for a scored multiple-choice item; a missing answer counts as wrong."""
        if self.gold is None:
            return None
        return self.pred == self.gold

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["retrieved"] = [list(pair) for pair in self.retrieved]
        row["citations"] = list(self.citations)
        return row

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> ItemRecord:
        return cls(
            dataset=str(row["dataset"]),
            qid=str(row["qid"]),
            condition=str(row["condition"]),
            gold=row.get("gold"),
            pred=row.get("pred"),
            option_probs=row.get("option_probs"),
            retrieved=tuple((str(d), float(s)) for d, s in row.get("retrieved", ())),
            citations=tuple(row.get("citations", ())),
            answer=row.get("answer"),
            latency_s=float(row.get("latency_s", 0.0)),
            error=row.get("error"),
            extra=row.get("extra") or {},
        )


def write_records(path: Path, records: Iterable[ItemRecord], *, append: bool = True) -> int:
    """Append records as JSON lines, flushed per line so a killed run keeps what it finished.

    A torn last line left by a killed writer is cut off first: appended after it, the next record
    would share its line and make the file unreadable (the torn item is re-run, as it is not read).
    """
    if append:
        drop_torn_tail(path)
    n = 0
    with path.open("a" if append else "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
            fh.flush()
            n += 1
    return n


def read_records(path: Path) -> Iterator[ItemRecord]:
    """Records from a JSON-lines file; a torn last line (killed mid-write) is skipped."""
    with path.open(encoding="utf-8") as fh:
        lines = fh.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield ItemRecord.from_json(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):  # the write that was interrupted
                return
            raise


def drop_torn_tail(path: Path, block: int = 1 << 16) -> bool:
    """Truncate ``path`` after its last newline; True if a partial line was removed."""
    if not path.is_file():
        return False
    with path.open("rb+") as fh:
        end = fh.seek(0, 2)
        if end == 0:
            return False
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return False
        while end > 0:  # scan back block by block: a record line can be long
            start = max(0, end - block)
            fh.seek(start)
            cut = fh.read(end - start).rfind(b"\n")
            if cut >= 0:
                fh.truncate(start + cut + 1)
                return True
            end = start
        fh.truncate(0)
        return True
