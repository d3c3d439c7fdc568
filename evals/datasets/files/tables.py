"""Rows out of the files people keep benchmark questions in, one reader per format.

JSON and JSON Lines in every table layout pandas writes (:mod:`evals.datasets.files.json_layouts`:
``to_json`` with any ``orient``, ``lines=True``, MIRAGE's objects), CSV/TSV, parquet, a single
``.arrow`` file, and a folder written by Hugging Face ``datasets``' ``save_to_disk``
(``data-0000x-of-0000n.arrow`` in Arrow IPC stream format with ``state.json``; a DatasetDict has one
such folder per split and ``dataset_dict.json``). Any of these files may be compressed as ``.gz``
(stdlib) or ``.zst`` (the ``zstandard`` module, imported only then), as pandas writes them when
the name ends so. Arrow and parquet are read with pyarrow alone, so neither ``datasets`` nor pandas
is needed. Excel workbooks are refused with the one-line conversion, since reading them would
need openpyxl for what a CSV or JSON export carries as well.

Each row keeps its 1-based number in the file (data rows for CSV, lines for JSONL) so that every
problem found later can name it; a row that cannot be read at all becomes :class:`Unreadable`
instead of failing the whole file. Whole-file problems (missing, unknown type, not parseable) are
ConfigErrors that say what to do.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError, require
from evals.datasets.files.json_layouts import RawRow, Unreadable, json_rows

__all__ = ["RawRow", "Table", "Unreadable", "read_table"]

SUFFIXES = {
    ".jsonl": "JSONL",
    ".ndjson": "JSONL",
    ".json": "JSON",
    ".csv": "CSV",
    ".tsv": "TSV",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "Arrow",
}
COMPRESSED = {".gz": "gzip", ".zst": "zstd"}
WORKBOOKS = (".xlsx", ".xlsm", ".xls", ".ods")


@dataclass(frozen=True)
class Table:
    rows: list[RawRow]
    layout: str  # what was read, for the report: "a CSV file", "pandas orient=columns ({column: ..})"


def read_table(path: Path, split: str | None = None, names: Collection[str] = ("question",)) -> Table:
    """Every row of ``path`` (a file or a ``save_to_disk`` folder); ``split`` picks a DatasetDict
    split; ``names``: columns the caller looks for, which tell a JSON file's orientation."""
    if path.is_dir():
        return _hf_folder(path, split)
    if split is not None:
        raise ConfigError(f"{path}: split={split!r} applies only to a Hugging Face DatasetDict folder")
    kind, codec = _kind(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if codec is not None:
        data = _decompress(path, data, codec)
    table = _parse(path, data, kind, names)
    return table if codec is None else Table(table.rows, f"{table.layout}, {COMPRESSED[codec]}-compressed")


def _kind(path: Path) -> tuple[str, str | None]:
    """The format (from the suffix under any compression suffix) and the compression suffix."""
    suffix = path.suffix.lower()
    codec = suffix if suffix in COMPRESSED else None
    inner = Path(path.stem).suffix.lower() if codec else suffix
    if inner in WORKBOOKS:
        converted = Path(path.name.removesuffix(path.suffix) if codec else path.name).with_suffix(".jsonl")
        raise ConfigError(
            f"{path}: spreadsheet workbooks ({inner}) are not read (that needs openpyxl, which medcite "
            f'does not install); convert it once, e.g. python -c "import pandas as pd; '
            f"pd.read_excel('{path.name}').to_json('{converted}', orient='records', lines=True)\" "
            "(needs pandas and openpyxl), or save the sheet as CSV, and pass that file"
        )
    kind = SUFFIXES.get(inner)
    if kind is None:
        what = f"{inner or '(no suffix)'!r} inside {suffix!r}" if codec else repr(suffix or "(no suffix)")
        raise ConfigError(
            f"{path}: unknown file type {what}; use JSONL, JSON, CSV, TSV, parquet, .arrow (each may be "
            ".gz or .zst compressed, e.g. exam.jsonl.gz), or a folder written by Hugging Face datasets' "
            "save_to_disk"
        )
    return kind, codec


def _decompress(path: Path, data: bytes, codec: str) -> bytes:
    if codec == ".gz":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ConfigError(
                f"{path} is not a readable gzip file ({exc}); download it again, or check it with gzip -t"
            ) from exc
    try:
        import zstandard
    except ImportError as exc:
        raise ConfigError(
            f"{path} is zstd-compressed and reading it needs the zstandard module: pip install zstandard, "
            f"or decompress it first (zstd -d {path.name}) and pass the decompressed file"
        ) from exc
    try:
        source = io.BytesIO(data)
        with zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True) as reader:
            return bytes(reader.read())
    except zstandard.ZstdError as exc:
        raise ConfigError(
            f"{path} is not a readable zstd file ({exc}); download it again, or check it with zstd -t"
        ) from exc


def _parse(path: Path, data: bytes, kind: str, names: Collection[str]) -> Table:
    if kind in ("parquet", "Arrow"):
        return Table(_table_rows([_arrow_file(path, kind, data)]), f"a {kind} file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc}); save it as UTF-8") from exc
    if kind in ("CSV", "TSV"):
        return Table(_csv_rows(path, text, "\t" if kind == "TSV" else ","), f"a {kind} file")
    rows, layout = json_rows(text, path, names, lines=kind == "JSONL")
    return Table(rows, layout)


def _csv_rows(path: Path, text: str, delimiter: str) -> list[RawRow]:
    rows: list[RawRow] = []
    with io.StringIO(text, newline="") as fh:
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


def _arrow_file(path: Path, kind: str, data: bytes | None = None) -> Any:
    """A pyarrow Table from a parquet file or an Arrow IPC file (stream format, as ``datasets``
    writes it, or the random-access file format); ``data``: the file's bytes, when already read."""
    pa = _pyarrow()
    try:
        if kind == "parquet":
            require("pyarrow.parquet", package="pyarrow", extra="eval")
            import pyarrow.parquet as pq

            return pq.read_table(path if data is None else pa.BufferReader(data))
        buffer = pa.py_buffer(path.read_bytes() if data is None else data)
        try:
            return pa.ipc.open_stream(buffer).read_all()
        except pa.ArrowInvalid:
            return pa.ipc.open_file(buffer).read_all()
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
        return Table(_table_rows(_hf_dataset(folder)), "a Hugging Face datasets folder")
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
    rows = _table_rows(_hf_dataset(folder / split))
    return Table(rows, f"a Hugging Face DatasetDict folder, split {split}")


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
