"""Benchmark files people bring themselves: ``mcq:PATH`` (multiple choice) and ``qa:PATH``
(free-text questions with a reference answer), so an exam bank or a Hugging Face download runs
through the same eval loop as MIRAGE without a conversion script.

Formats are those of :mod:`evals.datasets.files.tables` (JSON, JSON Lines, CSV/TSV, parquet,
Arrow, ``save_to_disk`` folders, each optionally ``.gz``/``.zst``). Multiple-choice shapes:
MIRAGE's ``{id: {question, options{A..}, answer}}``; MedQA-style rows (``options`` as an object,
a list or ``{key, value}`` pairs; ``answer_idx`` and/or ``answer``); MedMCQA-style rows
(``opa``..``ope``, ``cop`` or ``answer_idx`` or ``answer``); one column per option (``A``, ``B``, ...).

A number as the answer is an option index whose base is detected (any 0 means 0-based, else
1-based: MedMCQA's JSON counts from 1, its Hugging Face copy from 0), can be set with the mapping
key ``answer_base``, and is always reported. When ``answer_idx`` (or ``cop``) and ``answer`` both
name an option they must agree, or the row is skipped. Ids come from ``id`` or ``qid``, else the
row's label, else the row number; every other column is kept in the item's ``meta["extra"]``,
never read as an option. A column mapping renames columns (``{"question": "stem"}``); its keys
``split`` and ``answer_base`` are settings, not columns.

Nothing is dropped silently: a row that cannot be used (missing question, answer not among the
options, duplicate id, ...) is returned as a :class:`SkippedRow` with its row number and reason,
so a run records it and ``medcite eval validate`` lists it. A set is named by its spec as given
(``mcq:exams/cardio.csv``): that is the ``dataset`` of its items and records.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from core.errors import ConfigError
from evals.datasets.files.tables import RawRow, Table, Unreadable, read_table
from evals.datasets.freetext import FreeTextItem
from evals.types import McqItem

MCQ_PREFIX = "mcq:"
QA_PREFIX = "qa:"
LETTERS = string.ascii_uppercase
OPA_COLUMNS = tuple(f"op{c}" for c in "abcdefghij")  # MedMCQA's opa..ope, and room for more
LETTER_COLUMNS = tuple(LETTERS[:10])
SETTINGS = ("split", "answer_base")  # mapping keys that are not columns
MCQ_TARGETS = ("id", "question", "options", "answer", "answer_idx", "cop", *OPA_COLUMNS, *LETTER_COLUMNS)
QA_TARGETS = ("id", "question", "answer")
GOLD_COLUMNS = ("answer_idx", "cop", "answer")  # first present one wins
REFERENCE_COLUMNS = ("answer", "reference", "ideal_answer")
ID_COLUMNS = ("id", "qid")
OPTION_COLUMNS = {"medqa": ("options",), "medmcqa": OPA_COLUMNS, "letters": LETTER_COLUMNS}
LISTED = 8  # column names an error message lists before saying how many more there are
SHAPES = {
    "medqa": "MedQA-style rows (question, options, answer_idx/answer)",
    "medmcqa": "MedMCQA-style rows (question, opa.., cop/answer_idx/answer)",
    "letters": "one column per option (question, A, B, .., answer)",
    "qa": "free-text rows (question, answer/reference/ideal_answer)",
}
T = TypeVar("T")


@dataclass(frozen=True)
class SkippedRow:
    row: int  # 1-based: JSONL line, CSV data row, position in a JSON list or object, table row
    id: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class LoadedSet(Generic[T]):
    """A set's usable items and every row that was not usable, with how the file was read."""

    items: tuple[T, ...]
    skipped: tuple[SkippedRow, ...] = ()
    shape: str = "built-in set"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Draft:
    """A row with a question and options whose gold answer is not resolved yet (the number base
    of index answers is decided over the whole file)."""

    row: int
    qid: str
    question: str
    options: dict[str, str]
    column: str
    gold: Any
    also: Any = None  # the ``answer`` cell when another column gives the gold: the two must agree
    extra: Mapping[str, Any] | None = None  # the columns that are neither id, question, option nor answer


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``question=stem,answer=key`` (the command line's ``--columns``) as a mapping."""
    if not text or not text.strip():
        return None
    mapping: dict[str, str] = {}
    for part in text.split(","):
        target, sep, source = part.partition("=")
        if not sep or not target.strip() or not source.strip():
            raise ConfigError(
                f"--columns: {part.strip()!r} is not NAME=COLUMN, e.g. question=stem,answer=key"
            )
        mapping[target.strip()] = source.strip()
    return mapping


def resolve_path(given: str, source_data: Path) -> Path:
    """A path as given (absolute, or relative to the working directory), else under the source
    data folder, as ``beir:`` folders are found."""
    path = Path(given).expanduser()
    candidate = path if path.is_absolute() or path.exists() else source_data / path
    if not candidate.exists():
        raise ConfigError(
            f"no file or folder {given!r} (looked in the working directory and under {source_data}); "
            "give an absolute path or one relative to where you run medcite"
        )
    return candidate


def _split_settings(
    columns: Mapping[str, str] | None, targets: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, str]]:
    mapping = dict(columns or {})
    settings = {key: str(mapping.pop(key)) for key in SETTINGS if key in mapping}
    unknown = sorted(set(mapping) - set(targets))
    if unknown:
        raise ConfigError(
            f"unknown column mapping key(s) {', '.join(unknown)}; map any of {', '.join(targets[:6])}, "
            f"opa.., A.. to your file's column names, or set {', '.join(SETTINGS)}"
        )
    if settings.get("answer_base", "0") not in ("0", "1"):
        raise ConfigError(
            f"answer_base is 0 or 1 (the number of the first option), not {settings['answer_base']!r}"
        )
    return mapping, settings


def listing(names: list[str], limit: int = LISTED) -> str:
    """Names for a message that fits on a screen: the first ``limit``, then how many more."""
    if not names:
        return "none"
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _present(rows: list[RawRow]) -> list[str]:
    """The column names the rows have, in the order they first appear."""
    return list(dict.fromkeys(str(k) for r in rows if isinstance(r.value, dict) for k in r.value))


def _read_as(table: Table) -> str:
    return f"read as {table.layout}, {len(table.rows)} row{'s' if len(table.rows) != 1 else ''}"


def _mapped(table: Table, mapping: dict[str, str], path: Path) -> list[RawRow]:
    """Rows with each mapped column copied under its standard name; a mapped column that no row has
    is an error (most likely a typo), naming the columns the file does have."""
    if not mapping:
        return table.rows
    present = _present(table.rows)
    for target, source in mapping.items():
        if source not in present:
            raise ConfigError(
                f"{path}: no column {source!r} (mapped to {target}); its columns are: {listing(present)} "
                f"({_read_as(table)})"
            )
    return [
        RawRow(r.number, r.key, {**r.value, **{t: r.value.get(s) for t, s in mapping.items()}})
        if isinstance(r.value, dict)
        else r
        for r in table.rows
    ]


def _text(value: Any) -> str | None:
    """A cell as stripped text; None for a missing cell (CSV's empty cell counts as missing)."""
    if value is None:
        return None
    return str(value).strip() or None


def _bad_row(r: RawRow) -> SkippedRow:
    if isinstance(r.value, Unreadable):
        return SkippedRow(r.number, r.key, r.value.reason)
    return SkippedRow(r.number, r.key, f"unreadable row: expected named fields, got {type(r.value).__name__}")


def _row_id(r: RawRow) -> str:
    for column in ID_COLUMNS:
        qid = _text(r.value.get(column))
        if qid is not None:
            return qid
    return r.key if r.key is not None else str(r.number)


def _question(r: RawRow, qid: str) -> str | SkippedRow:
    raw = r.value.get("question")
    if raw is None:
        return SkippedRow(r.number, qid, "missing question (no 'question' column in this row)")
    return _text(raw) or SkippedRow(r.number, qid, "empty question")


def _id_and_question(r: RawRow) -> tuple[str, str] | SkippedRow:
    """What every row needs, multiple choice or free text: named fields, an id and a question."""
    if not isinstance(r.value, dict):
        return _bad_row(r)
    qid = _row_id(r)
    question = _question(r, qid)
    return question if isinstance(question, SkippedRow) else (qid, question)


def _sequence_options(values: list[Any], names: tuple[str, ...] | None = None) -> dict[str, str] | str:
    """Options in order -> letters A..; trailing empty options are dropped (a 4-option question in a
    5-option file), an empty one before a filled one is an error."""
    texts = [_text(v) for v in values]
    while texts and texts[-1] is None:
        texts.pop()
    if len(texts) > len(LETTERS):
        return f"more than {len(LETTERS)} options"
    for i, text in enumerate(texts):
        if text is None:
            where = f" ({names[i]})" if names else ""
            return f"option {LETTERS[i]}{where} is empty while a later option is not"
    return {LETTERS[i]: text for i, text in enumerate(texts) if text is not None}


def _listed_options(raw: Any) -> dict[str, str] | str:
    """MedQA's ``options``: an object A.., a list, or a list of ``{key, value}`` (bigbio's med_qa)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)  # an options object or list kept as JSON text in a CSV cell
        except ValueError:
            return "options is text, not a list or an object of options"
    if (
        isinstance(raw, list)
        and raw
        and all(isinstance(o, dict) and "key" in o and "value" in o for o in raw)
    ):
        raw = {o["key"]: o["value"] for o in raw}
    if isinstance(raw, dict):
        options = {str(k).strip(): _text(v) for k, v in raw.items()}
        return {k: v for k, v in sorted(options.items()) if v is not None}
    if isinstance(raw, list | tuple):
        return _sequence_options(list(raw))
    return "missing options" if raw is None else f"options is a {type(raw).__name__}, not a list or an object"


def _options(row: dict[str, Any], shape: str) -> dict[str, str] | str:
    if shape == "medqa":
        return _listed_options(row.get("options"))
    names = OPA_COLUMNS if shape == "medmcqa" else LETTER_COLUMNS
    return _sequence_options([row.get(c) for c in names], names)


def _mcq_shape(rows: list[RawRow], path: Path, read_as: str) -> str:
    columns = _present(rows)
    if "options" in columns:
        return "medqa"
    if "opa" in columns:
        return "medmcqa"
    if {"A", "B"} <= set(columns):
        return "letters"
    raise ConfigError(
        f"{path}: cannot tell where the options are; expected an 'options' column, opa..ope, or A, B, ..; "
        f"its columns are: {listing(columns)} ({read_as}). Map yours, e.g. --columns options=choices"
    )


def _extra(row: dict[str, Any], used: set[str]) -> dict[str, Any] | None:
    """The cells of the columns no item field comes from, empty ones left out."""
    extra = {str(k): v for k, v in row.items() if str(k) not in used and v is not None and v != ""}
    return extra or None


def _draft(r: RawRow, shape: str, used: set[str]) -> _Draft | SkippedRow:
    start = _id_and_question(r)
    if isinstance(start, SkippedRow):
        return start
    qid, question = start
    options = _options(r.value, shape)
    if isinstance(options, str):
        return SkippedRow(r.number, qid, options)
    if len(options) < 2:
        return SkippedRow(r.number, qid, f"fewer than two options ({len(options)})")
    for column in GOLD_COLUMNS:
        if _text(r.value.get(column)) is not None:
            also = r.value.get("answer") if column != "answer" else None
            return _Draft(
                r.number, qid, question, options, column, r.value[column], also, _extra(r.value, used)
            )
    return SkippedRow(r.number, qid, "missing answer (no answer_idx, cop or answer)")


def _same_text(a: str, b: str) -> bool:
    """Option text and answer text match up to case and runs of white space."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _as_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = str(value).strip()
    return int(text) if text.isdigit() else None


def _letter_or_text(d: _Draft) -> str | None:
    """The gold letter when the answer is a letter (any case) or, except for ``cop``, exactly one
    option's text."""
    given = _text(d.gold) or ""
    for letter in (given, given.upper()):
        if letter in d.options:
            return letter
    if d.column != "cop":
        same = [k for k, text in d.options.items() if _same_text(text, given)]
        if len(same) == 1:
            return same[0]
    return None


def _meanings(answer: Any, options: Mapping[str, str]) -> set[str]:
    """Every option an ``answer`` cell beside ``answer_idx`` can name: as a letter (any case) or as
    an option's text; empty when it names none (a number, a free-text answer), which is no conflict."""
    given = _text(answer)
    if given is None:
        return set()
    letters = {letter for letter in (given, given.upper()) if letter in options}
    return letters | {k for k, text in options.items() if _same_text(text, given)}


def _answer_base(drafts: list[_Draft], settings: dict[str, str]) -> tuple[int, str | None]:
    numbers = [n for d in drafts if _letter_or_text(d) is None and (n := _as_index(d.gold)) is not None]
    if "answer_base" in settings:
        base = int(settings["answer_base"])
        return base, f"answer numbers read as {base}-based (set with answer_base)" if numbers else None
    if not numbers:
        return 1, None
    base = 0 if 0 in numbers else 1
    why = "a 0 occurs" if base == 0 else "no 0 occurs"
    return base, (
        f"answer numbers read as {base}-based ({why}; {base} = the first option); "
        f"if that is wrong, set answer_base={1 - base} in the column mapping"
    )


def _resolve(d: _Draft, base: int, spec: str) -> McqItem | SkippedRow:
    letter = _letter_or_text(d)
    number = _as_index(d.gold) if letter is None else None
    if number is not None and 0 <= number - base < len(d.options):
        letter = list(d.options)[number - base]
    if letter is None:
        how = f" (read as a {base}-based option number)" if number is not None else ""
        return SkippedRow(
            d.row, d.qid, f"answer {_text(d.gold)!r}{how} is not among the options {', '.join(d.options)}"
        )
    also = _meanings(d.also, d.options)
    if also and letter not in also:
        return SkippedRow(
            d.row,
            d.qid,
            f"{d.column} {_text(d.gold)!r} (option {letter}) and answer "
            f"{_text(d.also)!r} (option {', '.join(sorted(also))}) disagree; "
            "correct the one that is wrong",
        )
    meta: dict[str, Any] = {"row": d.row} if d.extra is None else {"row": d.row, "extra": dict(d.extra)}
    return McqItem(dataset=spec, qid=d.qid, question=d.question, options=d.options, answer=letter, meta=meta)


def _unique(items: list[McqItem], skipped: list[SkippedRow]) -> list[McqItem]:
    """Items with a first-seen id; a later row with the same id is skipped, naming the first."""
    first: dict[str, int] = {}
    kept: list[McqItem] = []
    for item in items:
        row = int(item.meta["row"])
        if item.qid in first:
            skipped.append(
                SkippedRow(row, item.qid, f"duplicate id {item.qid!r} (first used at row {first[item.qid]})")
            )
            continue
        first[item.qid] = row
        kept.append(item)
    return kept


def _read(
    spec: str, prefix: str, source_data: Path, columns: Mapping[str, str] | None, targets: tuple[str, ...]
) -> tuple[Path, list[RawRow], str, dict[str, str], list[str]]:
    given = spec[len(prefix) :].strip()
    if not given:
        raise ConfigError(f"{prefix!r} needs a file, e.g. {prefix}exams/cardio.csv")
    mapping, settings = _split_settings(columns, targets)
    path = resolve_path(given, source_data)
    table = read_table(path, settings.get("split"), names={"question", mapping.get("question", "question")})
    if not table.rows:
        raise ConfigError(
            f"{path} holds no rows ({_read_as(table)}); add questions to it or point {spec!r} at another file"
        )
    notes = [_read_as(table)]
    if mapping:
        notes.append("columns: " + ", ".join(f"{t} <- {s}" for t, s in mapping.items()))
    return path, _mapped(table, mapping, path), table.layout, settings, notes


class NoUsableRows(ConfigError):
    """A file none of whose rows is usable; ``loaded`` has every skipped row (``medcite eval
    validate`` lists them all rather than this message's first five)."""

    def __init__(self, message: str, loaded: LoadedSet[Any]) -> None:
        super().__init__(message)
        self.loaded = loaded


def _finish(
    spec: str, path: Path, items: list[T], skipped: list[SkippedRow], shape: str, notes: list[str]
) -> LoadedSet[T]:
    skipped.sort(key=lambda s: s.row)
    if not items:
        first = "; ".join(f"row {s.row}: {s.reason}" for s in skipped[:5])
        raise NoUsableRows(
            f"{path}: no usable row ({len(skipped)} skipped; {first}). Fix the file or map its columns "
            f"(--columns question=...,answer=...); `medcite eval validate {spec}` lists every problem",
            LoadedSet((), tuple(skipped), shape, tuple(notes)),
        )
    return LoadedSet(tuple(items), tuple(skipped), shape, tuple(notes))


def _usable(results: Iterable[T | SkippedRow], skipped: list[SkippedRow]) -> list[T]:
    """The usable results in order; each skipped row is appended to ``skipped``."""
    usable: list[T] = []
    for result in results:
        if isinstance(result, SkippedRow):
            skipped.append(result)
        else:
            usable.append(result)
    return usable


def load_user_mcq(
    spec: str, source_data: Path, columns: Mapping[str, str] | None = None
) -> LoadedSet[McqItem]:
    """The usable questions of an ``mcq:PATH`` file and every row that was not usable."""
    path, rows, layout, settings, notes = _read(spec, MCQ_PREFIX, source_data, columns, MCQ_TARGETS)
    shape = _mcq_shape(rows, path, notes[0])
    sources = {source for target, source in (columns or {}).items() if target not in SETTINGS}
    used = {*ID_COLUMNS, "question", *GOLD_COLUMNS, *OPTION_COLUMNS[shape], *sources}
    skipped: list[SkippedRow] = []
    drafts = _usable((_draft(r, shape, used) for r in rows), skipped)
    base, note = _answer_base(drafts, settings)
    notes += [note] if note else []
    items = _usable((_resolve(d, base, spec) for d in drafts), skipped)
    mirage = layout.startswith("MIRAGE") and shape == "medqa"
    label = "MIRAGE-style {id: {question, options, answer}}" if mirage else SHAPES[shape]
    return _finish(spec, path, _unique(items, skipped), skipped, label, notes)


def _reference(row: dict[str, Any]) -> str | None:
    for column in REFERENCE_COLUMNS:
        value = row.get(column)
        if isinstance(value, list | tuple):  # BioASQ's ideal_answer is a list
            value = next((v for v in value if _text(v)), None)
        if _text(value) is not None:
            return str(value).strip()
    return None


def _qa_item(r: RawRow, spec: str) -> FreeTextItem | SkippedRow:
    start = _id_and_question(r)
    if isinstance(start, SkippedRow):
        return start
    qid, question = start
    reference = _reference(r.value)
    if reference is None:
        return SkippedRow(r.number, qid, f"missing answer (no {', '.join(REFERENCE_COLUMNS)})")
    return FreeTextItem(dataset=spec, qid=qid, question=question, reference=reference)


def load_user_qa(
    spec: str, source_data: Path, columns: Mapping[str, str] | None = None
) -> LoadedSet[FreeTextItem]:
    """The usable questions of a ``qa:PATH`` file (question + reference answer) and the skipped rows."""
    path, rows, _, settings, notes = _read(spec, QA_PREFIX, source_data, columns, QA_TARGETS)
    if "answer_base" in settings:
        raise ConfigError("answer_base applies to multiple-choice files only (mcq:)")
    skipped: list[SkippedRow] = []
    items: list[FreeTextItem] = []
    first: dict[str, int] = {}
    for r in rows:
        item = _qa_item(r, spec)
        if isinstance(item, SkippedRow):
            skipped.append(item)
        elif item.qid in first:
            skipped.append(
                SkippedRow(
                    r.number, item.qid, f"duplicate id {item.qid!r} (first used at row {first[item.qid]})"
                )
            )
        else:
            first[item.qid] = r.number
            items.append(item)
    return _finish(spec, path, items, skipped, SHAPES["qa"], notes)
