"""Rows out of the files people keep benchmark questions in, one reader per format.

JSONL, JSON (a list of rows, MIRAGE's ``{id: row}`` object, or MIRAGE's ``{set: {id: row}}``),
CSV/TSV, parquet, a single ``.arrow`` file, and a folder written by Hugging Face ``datasets``'
``save_to_disk`` (``data-0000x-of-0000n.arrow`` in Arrow IPC stream format with ``state.json``;
a DatasetDict has one such folder per split and ``dataset_dict.json``). Arrow and parquet are read
with pyarrow alone, so neither ``datasets`` nor pandas is needed.

Each row keeps its 1-based number in the file (data rows for CSV, lines for JSONL) so that every
problem found later can name it; a row that cannot be read at all becomes :class:`Unreadable`
instead of failing the whole file. Whole-file problems (missing, unknown type, not parseable) are
ConfigErrors that say what to do.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError, require

SUFFIXES = {
    ".jsonl": "JSONL", ".ndjson": "JSONL", ".json": "JSON", ".csv": "CSV", ".tsv": "TSV",
    ".parquet": "parquet", ".pq": "parquet", ".arrow": "Arrow",
}  # fmt: skip


@dataclass(frozen=True)
class Unreadable:
    """A row that could not be parsed (bad JSON line, wrong field count): why."""

    reason: str


@dataclass(frozen=True)
class RawRow:
    number: int  # 1-based position in the file: JSONL line, CSV data row, list index, object entry
    key: str | None  # the id a MIRAGE-style {id: row} object gives the row
    value: Any  # usually a dict of column -> value; an Unreadable or any other value is a bad row


@dataclass(frozen=True)
class Table:
    rows: list[RawRow]
    layout: str  # what was read, for the report: "CSV file", "MIRAGE-style JSON object {id: row}"


def read_table(path: Path, split: str | None = None) -> Table:
    """Every row of ``path`` (a file or a ``save_to_disk`` folder); ``split`` picks a DatasetDict split."""
    if path.is_dir():
        return _hf_folder(path, split)
    if split is not None:
        raise ConfigError(f"{path}: split={split!r} applies only to a Hugging Face DatasetDict folder")
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(
            f"{path}: unknown file type {path.suffix or '(no suffix)'!r}; use JSONL, JSON, CSV, TSV, "
            "parquet, .arrow, or a folder written by Hugging Face datasets' save_to_disk"
        )
    try:
        if kind == "JSONL":
            return Table(_jsonl_rows(path.read_text(encoding="utf-8-sig")), "JSONL file")
        if kind == "JSON":
            return _json(path)
        if kind in ("CSV", "TSV"):
            return Table(_csv_rows(path, "\t" if kind == "TSV" else ","), f"{kind} file")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc}); save it as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return Table(_table_rows([_arrow_file(path, kind)]), f"{kind} file")


def _jsonl_rows(text: str) -> list[RawRow]:
    rows: list[RawRow] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(RawRow(number, None, json.loads(line)))
        except json.JSONDecodeError as exc:
            rows.append(RawRow(number, None, Unreadable(f"unreadable row: not valid JSON ({exc.msg})")))
    return rows


def _json(path: Path) -> Table:
    text = path.read_text(encoding="utf-8-sig")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one object per line in a .json file
            return Table(_jsonl_rows(text), "JSON lines file")
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix the file or save it as JSONL") from exc
    if isinstance(data, list):
        return Table([RawRow(n, None, row) for n, row in enumerate(data, start=1)], "JSON list of rows")
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        if all(
            "question" not in v and v and all(isinstance(r, dict) for r in v.values()) for v in data.values()
        ):
            rows = [(str(qid), row) for part in data.values() for qid, row in part.items()]
            layout = f"MIRAGE-style JSON object {{set: {{id: row}}}} (sets: {', '.join(data)})"
        else:
            rows = [(str(qid), row) for qid, row in data.items()]
            layout = "MIRAGE-style JSON object {id: row}"
        return Table([RawRow(n, key, row) for n, (key, row) in enumerate(rows, start=1)], layout)
    raise ConfigError(
        f"{path}: expected a JSON list of rows or an object {{id: row}} as MIRAGE's benchmark.json"
    )


def _csv_rows(path: Path, delimiter: str) -> list[RawRow]:
    rows: list[RawRow] = []
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        try:
            for number, row in enumerate(reader, start=1):
                if None in row:
                    bad = Unreadable(f"unreadable row: {len(row[None])} more field(s) than the header")
                    rows.append(RawRow(number, None, bad))
                elif any(value is None for value in row.values()):
                    rows.append(
                        RawRow(number, None, Unreadable("unreadable row: fewer fields than the header"))
                    )
                else:
                    rows.append(RawRow(number, None, dict(row)))
        except csv.Error as exc:
            raise ConfigError(f"{path}: not readable as CSV near data row {len(rows) + 1} ({exc})") from exc
    return rows


def _pyarrow() -> Any:
    return require("pyarrow", package="pyarrow", extra="eval")


def _arrow_file(path: Path, kind: str) -> Any:
    """A pyarrow Table from a parquet file or an Arrow IPC file (stream format, as ``datasets``
    writes it, or the random-access file format)."""
    pa = _pyarrow()
    try:
        if kind == "parquet":
            require("pyarrow.parquet", package="pyarrow", extra="eval")
            import pyarrow.parquet as pq

            return pq.read_table(path)
        data = pa.py_buffer(path.read_bytes())
        try:
            return pa.ipc.open_stream(data).read_all()
        except pa.ArrowInvalid:
            return pa.ipc.open_file(data).read_all()
    except (OSError, pa.ArrowException) as exc:
        raise ConfigError(f"cannot read {path} as {kind}: {exc}") from exc


def _table_rows(tables: list[Any]) -> list[RawRow]:
    rows = [row for table in tables for row in table.to_pylist()]
    return [RawRow(n, None, row) for n, row in enumerate(rows, start=1)]


def _hf_folder(folder: Path, split: str | None) -> Table:
    """A ``save_to_disk`` folder: one Dataset, or a DatasetDict whose split is chosen by ``split``
    (required when it has several)."""
    listing = folder / "dataset_dict.json"
    if not listing.is_file():
        if split is not None:
            raise ConfigError(f"{folder} is a single dataset, not a DatasetDict: drop split={split!r}")
        return Table(_table_rows(_hf_dataset(folder)), "Hugging Face datasets folder")
    try:
        splits = [str(s) for s in json.loads(listing.read_text(encoding="utf-8"))["splits"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read the split list {listing}: {exc}") from exc
    if split is None:
        if len(splits) != 1:
            raise ConfigError(
                f"{folder} holds the splits {', '.join(splits)}; choose one with the mapping key split, "
                f'e.g. --columns split={splits[-1]} (in a config: columns = {{split = "{splits[-1]}"}})'
            )
        split = splits[0]
    elif split not in splits:
        raise ConfigError(f"{folder} has no split {split!r}; it has: {', '.join(splits)}")
    return Table(_table_rows(_hf_dataset(folder / split)), f"Hugging Face DatasetDict folder, split {split}")


def _hf_dataset(folder: Path) -> list[Any]:
    state = folder / "state.json"
    try:
        if state.is_file():
            files = [
                folder / f["filename"] for f in json.loads(state.read_text(encoding="utf-8"))["_data_files"]
            ]
        else:
            files = sorted(folder.glob("*.arrow"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read {state}: {exc}") from exc
    if not files:
        raise ConfigError(
            f"{folder} holds no .arrow data; expected a folder written by datasets' save_to_disk "
            "(data-00000-of-00001.arrow and state.json), or pass a JSONL, JSON, CSV or parquet file"
        )
    return [_arrow_file(path, "Arrow") for path in files]
