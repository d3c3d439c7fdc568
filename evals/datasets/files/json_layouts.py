"""The rows a JSON benchmark file holds, whatever table layout wrote it, recognised from the data.

People export question banks with pandas far more often than by hand, and ``DataFrame.to_json``
writes one table six ways (``orient=``): ``records`` (a list of rows), ``columns`` (the default:
``{column: {row label: value}}``), ``index`` (``{row label: row}``, which is also MIRAGE's
``{id: row}``), ``split`` (``{columns, index, data}``), ``table`` (a Table Schema with ``data``) and
``values`` (a list of lists, without column names: refused, since nothing says which column is the
question). JSON Lines (``lines=True``) and MIRAGE's ``{set: {id: row}}`` are read too, and a single
object is one row. The layout is told from the document, not from the file name, so a
``to_json()`` file saved as ``.jsonl`` reads as well as one saved as ``.json``.

``columns`` and ``index`` are each other's transpose; which one a file is comes from where the
names the caller looks for (``question`` and its mapped name) stand: as outer keys (columns) or
inside the rows (index); failing that, pandas' default row labels ``0..n-1`` mark the row side.
Row labels become row keys (ids) unless they are that default ``0..n-1``, which carries nothing, so
one table read in any layout gives the same ids. The row types live here, the lowest layer of
the file readers; :mod:`evals.datasets.files.tables` re-exports them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError

SPLIT_KEYS = {"columns", "index", "data", "name"}
PANDAS_INDEX = re.compile(r"index|level_\d+")  # the names pandas gives an unnamed (multi-)index
JSON_LINES = "JSON Lines (one row per line)"
ONE_OBJECT = "a single JSON object (one row)"


@dataclass(frozen=True)
class Unreadable:
    """A row that could not be parsed (bad JSON line, wrong field count): why."""

    reason: str


@dataclass(frozen=True)
class RawRow:
    number: int  # 1-based position in the file: JSONL line, CSV data row, list index, object entry
    key: str | None  # the id a row label gives the row ({id: row} objects, pandas' index)
    value: Any  # usually a dict of column -> value; an Unreadable or any other value is a bad row


def jsonl_rows(text: str) -> list[RawRow]:
    """One row per non-blank line, numbered by line; a line that is not JSON is an Unreadable row.
    Lines end at ``\n`` only: U+2028, U+0085 and the like may stand unescaped inside a JSON string."""
    rows: list[RawRow] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append(RawRow(number, None, json.loads(line)))
        except json.JSONDecodeError as exc:
            rows.append(RawRow(number, None, Unreadable(f"unreadable row: not valid JSON ({exc.msg})")))
    return rows


def json_rows(text: str, path: Path, names: Collection[str], lines: bool) -> tuple[list[RawRow], str]:
    """The rows of a JSON or JSON Lines text and the layout they were found in. ``names``: columns
    the caller looks for (orients ``columns`` and ``index`` apart); ``lines``: the file is named
    as JSON Lines, so a broken first line is one bad row rather than a broken file."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" or lines:  # several documents: one row per line
            return jsonl_rows(text), JSON_LINES
        raise ConfigError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); fix it there, "
            "or write the table as JSON Lines (one row per line), where a broken row is skipped, not the file"
        ) from exc
    rows, layout = json_layout(data, path, names)
    return rows, JSON_LINES if lines and layout == ONE_OBJECT else layout


def json_layout(data: Any, path: Path, names: Collection[str]) -> tuple[list[RawRow], str]:
    """The rows of a parsed JSON document, by layout (see the module docstring)."""
    if isinstance(data, list):
        return _listed(data, path)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} holds a single JSON {type(data).__name__}, not a table; expected rows as JSON Lines, "
            "a list of objects, or any DataFrame.to_json layout"
        )
    if not data:
        return [], "an empty JSON object (an empty DataFrame's to_json)"
    if set(data) == {"schema", "data"} and isinstance(data["schema"], dict):
        return _schema_table(data, path)
    if {"columns", "data"} <= set(data) <= SPLIT_KEYS and isinstance(data["columns"], list):
        return _split(data, path)
    if all(isinstance(v, dict) for v in data.values()):
        return _object_of_objects(data, set(names))
    return [RawRow(1, None, data)], ONE_OBJECT


def _listed(data: list[Any], path: Path) -> tuple[list[RawRow], str]:
    if data and all(isinstance(row, list) for row in data):
        raise ConfigError(
            f"{path} is a list of lists (pandas orient='values'), which has no column names, so nothing "
            "says which value is the question or an option; write it with the names, e.g. "
            "df.to_json(path, orient='records', lines=True)"
        )
    rows = [RawRow(n, None, row) for n, row in enumerate(data, start=1)]
    return rows, "a JSON list of rows (pandas orient=records)"


def _keys(labels: list[Any]) -> list[str | None]:
    """Row labels as row keys; pandas' default labels 0..n-1 (numbers or text) are no ids."""
    texts = [str(label) for label in labels]
    if texts == [str(i) for i in range(len(texts))]:
        return [None] * len(texts)
    return list(texts)


def _schema_table(data: dict[str, Any], path: Path) -> tuple[list[RawRow], str]:
    """orient=table: rows are objects; an unnamed index (pandas calls it ``index``) becomes the row
    key, a named one (``df.set_index("id")``) stays a column."""
    primary = data["schema"].get("primaryKey") or []
    dropped = [str(p) for p in primary] if all(PANDAS_INDEX.fullmatch(str(p)) for p in primary) else []
    rows = data["data"]
    if not isinstance(rows, list):
        raise ConfigError(f"{path}: pandas orient=table, but its 'data' is not a list of rows; re-export it")
    keys: list[str | None] = [None] * len(rows)
    if len(dropped) == 1:
        keys = _keys([row.get(dropped[0]) if isinstance(row, dict) else None for row in rows])
    out: list[RawRow] = []
    for number, (row, key) in enumerate(zip(rows, keys, strict=True), start=1):
        if isinstance(row, dict):
            out.append(RawRow(number, key, {k: v for k, v in row.items() if k not in dropped}))
        else:
            why = f"unreadable row: a {type(row).__name__} in the table's data, not an object of fields"
            out.append(RawRow(number, key, Unreadable(why)))
    return out, "pandas orient=table (Table Schema)"


def _split(data: dict[str, Any], path: Path) -> tuple[list[RawRow], str]:
    """orient=split: column names once, each row a list of values in that order."""
    columns = [str(c) for c in data["columns"]]
    rows = data["data"]
    if not isinstance(rows, list):
        raise ConfigError(f"{path}: pandas orient=split, but its 'data' is not a list of rows; re-export it")
    index = data.get("index")
    if index is not None and (not isinstance(index, list) or len(index) != len(rows)):
        count = len(index) if isinstance(index, list) else "no list of"
        raise ConfigError(
            f"{path}: pandas orient=split with {count} row labels ('index') for {len(rows)} rows "
            "('data'); the file is cut or edited by hand: re-export it"
        )
    keys = _keys(index) if index is not None else [None] * len(rows)
    out: list[RawRow] = []
    for number, (row, key) in enumerate(zip(rows, keys, strict=True), start=1):
        if isinstance(row, list) and len(row) == len(columns):
            out.append(RawRow(number, key, dict(zip(columns, row, strict=True))))
        else:
            got = f"{len(row)} values" if isinstance(row, list) else f"a {type(row).__name__}"
            why = f"unreadable row: {got} for {len(columns)} columns (pandas orient=split)"
            out.append(RawRow(number, key, Unreadable(why)))
    return out, "pandas orient=split"


def _ordered_union(objects: Collection[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(k) for obj in objects for k in obj))


def _object_of_objects(data: dict[str, Any], names: set[str]) -> tuple[list[RawRow], str]:
    """``{column: {row: value}}`` (orient=columns), ``{row: {column: value}}`` (orient=index,
    MIRAGE's {id: row}) or MIRAGE's ``{set: {id: row}}``, told apart as the module docstring says."""
    outer = [str(k) for k in data]
    inner = _ordered_union(data.values())
    if names & set(outer) and not names & set(inner):
        return _columns(data, inner)
    nested = all(v and all(isinstance(r, dict) for r in v.values()) for v in data.values())
    if nested and not names & set(inner):
        rows = [(str(qid), row) for part in data.values() for qid, row in part.items()]
        layout = f"MIRAGE-style JSON object {{set: {{id: row}}}} (sets: {', '.join(outer)})"
        return [RawRow(n, key, row) for n, (key, row) in enumerate(rows, start=1)], layout
    if not names & set(inner) and _keys(inner) == [None] * len(inner) and _keys(outer) != [None] * len(outer):
        return _columns(data, inner)
    keys = _keys(outer)
    rows_in = list(data.values())
    layout = "MIRAGE-style JSON object {id: row} (pandas orient=index)"
    return [RawRow(n, keys[n - 1], row) for n, row in enumerate(rows_in, start=1)], layout


def _columns(data: dict[str, Any], labels: list[str]) -> tuple[list[RawRow], str]:
    """orient=columns, pandas' default: each column an object {row label: value}; a cell a column
    lacks is None, as pandas writes a missing value."""
    keys = _keys(labels)
    rows = [
        RawRow(n, key, {str(column): cells.get(label) for column, cells in data.items()})
        for n, (label, key) in enumerate(zip(labels, keys, strict=True), start=1)
    ]
    return rows, "pandas orient=columns ({column: {row: value}})"
