"""Benchmark files as pandas and people export them: every ``DataFrame.to_json`` layout, JSON Lines,
``.gz``/``.zst``, the layout told from the data and not the name, mixed multiple-choice shapes
(``opa``..``opd`` with a letter ``answer_idx`` and the answer's text), extra columns kept apart
from the options, and errors short enough to read. Fixtures are written here with pandas."""

from __future__ import annotations

import gzip
import json
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets import FREE_TEXT, MCQ, load_checked, load_mcq
from evals.datasets.files.user_sets import listing
from medcite import cli

LETTERS = string.ascii_uppercase
OPA = ["opa", "opb", "opc", "opd"]


def paths_for(tmp_path: Path) -> Paths:
    return Paths(data_dir=tmp_path / "data", source_data=tmp_path / "source")


def usmle_frame(n: int) -> pd.DataFrame:
    """The shape of the public USMLE-style set: opa..opd, a letter answer_idx, the answer's text
    and an explanation, with pandas' default index."""
    rows = []
    for i in range(n):
        options = [f"drug {i}-{j}" for j in range(4)]
        gold = (i * 7) % 4
        rows.append(
            {
                "question": f"A {20 + i % 60}-year-old man presents with case {i}. Which is the next step?",
                **dict(zip(OPA, options, strict=True)),
                "answer_idx": LETTERS[gold],
                "answer": options[gold],
                "explanation": f"Because of finding {i}.",
                "link": f"https://example.org/q/{i}",
            }
        )
    return pd.DataFrame(rows)


def _json(orient: str, suffix: str = ".json", **kwargs: Any) -> Callable[[pd.DataFrame, Path], Path]:
    def write(df: pd.DataFrame, folder: Path) -> Path:
        path = folder / f"{orient}{'-lines' if kwargs.get('lines') else ''}{suffix}"
        df.to_json(path, orient=orient, **kwargs)  # compression follows the suffix, as for users
        return path

    return write


def _parquet(df: pd.DataFrame, folder: Path) -> Path:
    df.to_parquet(folder / "t.parquet", index=False)
    return folder / "t.parquet"


LAYOUTS: dict[str, tuple[Callable[[pd.DataFrame, Path], Path], str]] = {
    "columns": (_json("columns"), "pandas orient=columns"),
    "index": (_json("index"), "orient=index"),
    "records": (_json("records"), "pandas orient=records"),
    "split": (_json("split"), "pandas orient=split"),
    "table": (_json("table"), "pandas orient=table"),
    "lines": (_json("records", ".jsonl", lines=True), "JSON Lines"),
    "lines-unicode": (_json("records", ".jsonl", lines=True, force_ascii=False), "JSON Lines"),
    "columns-gz": (_json("columns", ".json.gz"), "pandas orient=columns ({column: {row: value}}), gzip"),
    "lines-gz": (_json("records", ".jsonl.gz", lines=True), "JSON Lines (one row per line), gzip"),
    "split-zst": (_json("split", ".json.zst"), "pandas orient=split, zstd-compressed"),
    "lines-zst": (_json("records", ".jsonl.zst", lines=True), "JSON Lines (one row per line), zstd"),
    "columns-named-jsonl": (_json("columns", ".jsonl"), "pandas orient=columns"),  # the name misleads
    "lines-named-json": (_json("records", ".json", lines=True), "JSON Lines"),
    "parquet": (_parquet, "a parquet file"),
}


def _as_tuples(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.qid, i.question, dict(i.options), i.answer, dict(i.meta)) for i in items]


def test_the_reported_file_validates_and_loads_with_the_right_answers(tmp_path, capsys, monkeypatch):
    """The issue's file: DataFrame.to_json() of 308 questions (opa..opd, answer_idx, answer, explanation)."""
    df = usmle_frame(308)
    path = tmp_path / "usmle.json"
    df.to_json(path)
    assert list(json.loads(path.read_text()))[:2] == ["question", "opa"]  # orient=columns, as reported
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "data"))
    assert cli.main(["eval", "validate", f"mcq:{path}"]) == 0
    out = capsys.readouterr().out
    assert "308 usable, 0 skipped" in out and "options per question: 4: 308" in out
    assert "read as pandas orient=columns ({column: {row: value}}), 308 rows" in out
    loaded = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path))
    assert [i.answer for i in loaded.items] == list(df["answer_idx"])
    first = loaded.items[0]
    assert (first.qid, first.options) == (
        "1",
        {"A": "drug 0-0", "B": "drug 0-1", "C": "drug 0-2", "D": "drug 0-3"},
    )
    assert first.meta == {
        "row": 1,
        "extra": {"explanation": "Because of finding 0.", "link": "https://example.org/q/0"},
    }


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_each_layout_reads_the_same_items(tmp_path, layout):
    df = usmle_frame(5)
    write, said = LAYOUTS[layout]
    expected = _as_tuples(load_mcq(f"mcq:{_json('records')(df, tmp_path)}", paths_for(tmp_path)))
    (tmp_path / layout).mkdir()
    loaded = load_checked(MCQ, f"mcq:{write(df, tmp_path / layout)}", paths_for(tmp_path))
    assert _as_tuples(list(loaded.items)) == expected and loaded.skipped == ()
    assert said in loaded.notes[0] and loaded.notes[0].endswith(", 5 rows")


def test_row_labels_are_ids_unless_they_are_pandas_default(tmp_path):
    df = usmle_frame(3)
    labelled = df.set_axis(["k7", "k8", "k9"])
    for orient in ("columns", "index", "split", "table"):
        labelled.to_json(tmp_path / f"{orient}.json", orient=orient)
        assert [i.qid for i in load_mcq(f"mcq:{tmp_path / f'{orient}.json'}", paths_for(tmp_path))] == [
            "k7",
            "k8",
            "k9",
        ], orient
    with_id = df.assign(id=["a", "b", "c"]).set_index("id")  # a named index stays a column in orient=table
    with_id.to_json(tmp_path / "named.json", orient="table")
    items = load_mcq(f"mcq:{tmp_path / 'named.json'}", paths_for(tmp_path))
    assert [i.qid for i in items] == ["a", "b", "c"] and "id" not in items[0].meta["extra"]
    df.iloc[[2, 0]].to_json(tmp_path / "subset.json")  # labels 2, 0: not the default, so kept
    assert [i.qid for i in load_mcq(f"mcq:{tmp_path / 'subset.json'}", paths_for(tmp_path))] == ["2", "0"]


def test_answer_as_option_text_only_and_disagreeing_columns(tmp_path):
    df = usmle_frame(4)
    only_text = df.drop(columns=["answer_idx"])
    only_text.loc[1, "answer"] = "  DRUG 1-3 "  # case and spacing do not matter
    only_text.to_json(tmp_path / "text.json", orient="records")
    items = load_mcq(f"mcq:{tmp_path / 'text.json'}", paths_for(tmp_path))
    assert [i.answer for i in items] == ["A", "D", "C", "B"]
    clash = df.copy()
    clash.loc[2, "answer"] = "drug 2-0"  # answer_idx says C
    clash.loc[3, "answer"] = "see the explanation"  # names no option: answer_idx alone decides
    clash.to_json(tmp_path / "clash.json")
    loaded = load_checked(MCQ, f"mcq:{tmp_path / 'clash.json'}", paths_for(tmp_path))
    assert [i.answer for i in loaded.items] == ["A", "D", "B"]
    assert [(s.row, s.reason) for s in loaded.skipped] == [
        (
            3,
            "answer_idx 'C' (option C) and answer 'drug 2-0' (option A) disagree; correct the one that is "
            "wrong",
        )
    ]


def test_extra_columns_are_kept_and_never_options(tmp_path):
    rows = [
        {
            "question": "Q?",
            "A": "yes",
            "B": "no",
            "answer": "B",
            "Explanation": "x",
            "topic": None,
            "subject_name": "Anatomy",
        }
    ]
    pd.DataFrame(rows).to_json(tmp_path / "letters.json", orient="split", index=False)
    (item,) = load_mcq(f"mcq:{tmp_path / 'letters.json'}", paths_for(tmp_path))
    assert item.options == {"A": "yes", "B": "no"} and item.answer == "B"
    assert item.meta["extra"] == {"Explanation": "x", "subject_name": "Anatomy"}  # an empty cell is left out
    mapped = pd.DataFrame([{"stem": "Q?", "choices": ["p", "q"], "key": "q", "note": "n"}])
    mapped.to_json(tmp_path / "mapped.json")  # orient=columns with a mapped question column
    (item,) = load_mcq(
        f"mcq:{tmp_path / 'mapped.json'}",
        paths_for(tmp_path),
        {"question": "stem", "options": "choices", "answer": "key"},
    )
    assert (item.question, item.answer, item.meta["extra"]) == ("Q?", "B", {"note": "n"})


def test_errors_name_a_handful_of_columns_and_the_layout(tmp_path):
    wide = pd.DataFrame([{f"c{i}": i for i in range(40)} | {"question": "Q?"}] * 3)
    wide.to_json(tmp_path / "wide.json")
    with pytest.raises(ConfigError) as err:
        load_mcq(f"mcq:{tmp_path / 'wide.json'}", paths_for(tmp_path))
    message = str(err.value)
    assert "its columns are: c0, c1, c2, c3, c4, c5, c6, c7 ... and 33 more" in message
    assert "(read as pandas orient=columns ({column: {row: value}}), 3 rows)" in message
    assert len(message) < 500
    assert listing([]) == "none" and listing(["a", "b"]) == "a, b"


def test_free_text_files_and_empty_tables(tmp_path):
    qa = pd.DataFrame({"question": ["Why?", "How?"], "answer": ["Because.", "So."]})
    qa.to_json(tmp_path / "qa.json.gz")
    loaded = load_checked(FREE_TEXT, f"qa:{tmp_path / 'qa.json.gz'}", paths_for(tmp_path))
    assert [(i.qid, i.reference) for i in loaded.items] == [("1", "Because."), ("2", "So.")]
    assert (
        loaded.notes[0] == "read as pandas orient=columns ({column: {row: value}}), gzip-compressed, 2 rows"
    )
    pd.DataFrame().to_json(tmp_path / "empty.json")
    with pytest.raises(ConfigError, match=r"holds no rows \(read as an empty JSON object"):
        load_mcq(f"mcq:{tmp_path / 'empty.json'}", paths_for(tmp_path))


def test_values_layout_is_refused_with_what_to_do(tmp_path):
    usmle_frame(2).to_json(tmp_path / "values.json", orient="values")
    with pytest.raises(ConfigError, match=r"orient='values'.*no column names.*orient='records', lines=True"):
        load_mcq(f"mcq:{tmp_path / 'values.json'}", paths_for(tmp_path))


def test_an_unreadable_row_or_file_gets_one_clear_message(tmp_path, monkeypatch):
    df = usmle_frame(3)
    split = json.loads(df.to_json(orient="split"))
    split["data"][1] = split["data"][1][:3]
    (tmp_path / "cut.json").write_text(json.dumps(split))
    loaded = load_checked(MCQ, f"mcq:{tmp_path / 'cut.json'}", paths_for(tmp_path))
    assert [(s.row, s.reason) for s in loaded.skipped] == [
        (2, "unreadable row: 3 values for 9 columns (pandas orient=split)")
    ]
    (tmp_path / "torn.json").write_text(df.to_json()[:200])
    with pytest.raises(
        ConfigError, match=r"torn\.json is not valid JSON \(.* at line 1, column \d+\); fix it"
    ):
        load_mcq(f"mcq:{tmp_path / 'torn.json'}", paths_for(tmp_path))
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b"[]")[:10])
    with pytest.raises(ConfigError, match=r"not a readable gzip file .*gzip -t"):
        load_mcq(f"mcq:{tmp_path / 'bad.json.gz'}", paths_for(tmp_path))
    split["index"] = [0]
    (tmp_path / "labels.json").write_text(json.dumps(split))
    with pytest.raises(ConfigError, match=r"orient=split with 1 row labels \('index'\) for 3 rows"):
        load_mcq(f"mcq:{tmp_path / 'labels.json'}", paths_for(tmp_path))
    df.to_json(tmp_path / "q.jsonl.zst", orient="records", lines=True)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"needs the zstandard module: pip install zstandard.*zstd -d"):
        load_mcq(f"mcq:{tmp_path / 'q.jsonl.zst'}", paths_for(tmp_path))
    (tmp_path / "q.xlsx.gz").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"workbooks \(\.xlsx\) are not read"):
        load_mcq(f"mcq:{tmp_path / 'q.xlsx.gz'}", paths_for(tmp_path))
    (tmp_path / "q.txt.gz").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"unknown file type '\.txt' inside '\.gz'"):
        load_mcq(f"mcq:{tmp_path / 'q.txt.gz'}", paths_for(tmp_path))


def test_json_lines_split_at_newlines_only(tmp_path):
    row = {"question": "Line\u2028separator\x85inside?", "options": ["a", "b"], "answer": "a"}
    (tmp_path / "u.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    (item,) = load_mcq(f"mcq:{tmp_path / 'u.jsonl'}", paths_for(tmp_path))
    assert item.question == row["question"] and item.answer == "A"


SAFE_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12).filter(lambda s: s.strip() != "")


@st.composite
def valid_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Usable MedMCQA-style (opa..opd) or MedQA-style (an options list) rows: 2-4 options whose
    texts differ, the gold as a letter and as its text, an explanation (sometimes empty or missing)
    and, for some tables, ids."""
    n = draw(st.integers(1, 5))
    with_ids = draw(st.booleans())
    listed = draw(st.booleans())
    rows = []
    for i in range(n):
        options = draw(
            st.lists(SAFE_TEXT, min_size=2, max_size=4, unique_by=lambda s: " ".join(s.split()).casefold())
        )
        gold = draw(st.integers(0, len(options) - 1))
        row: dict[str, Any] = {"question": draw(SAFE_TEXT)}
        if listed:
            row["options"] = options
        else:
            row |= {column: options[j] if j < len(options) else None for j, column in enumerate(OPA)}
        row |= {
            "answer_idx": LETTERS[gold],
            "answer": options[gold],
            "explanation": draw(st.none() | st.text(max_size=8)),
        }
        rows.append(({"id": f"q{i}"} if with_ids else {}) | row)
    return rows


def expected_items(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out = []
    for n, row in enumerate(rows, start=1):
        texts = row["options"] if "options" in row else [row[c] for c in OPA if row[c] is not None]
        options = {LETTERS[j]: text.strip() for j, text in enumerate(texts)}
        extra = {"explanation": row["explanation"]} if row["explanation"] not in (None, "") else None
        meta = {"row": n} if extra is None else {"row": n, "extra": extra}
        out.append((row.get("id", str(n)), row["question"].strip(), options, row["answer_idx"], meta))
    return out


@settings(max_examples=30, deadline=None)
@given(rows=valid_rows(), labelled=st.booleans())
def test_any_valid_table_round_trips_through_every_layout(tmp_path_factory, rows, labelled):
    folder = tmp_path_factory.mktemp("layouts")
    df = pd.DataFrame(rows)
    if labelled and "id" in df:
        df.index = list(df["id"])  # labels carried by columns/index/split/table; the id column still wins
    want = expected_items(rows)
    for layout, (write, _) in LAYOUTS.items():
        (folder / layout).mkdir()
        loaded = load_checked(MCQ, f"mcq:{write(df, folder / layout)}", paths_for(folder))
        assert loaded.skipped == (), layout
        assert _as_tuples(list(loaded.items)) == want, layout
