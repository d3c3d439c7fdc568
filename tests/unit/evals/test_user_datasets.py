"""Benchmark files users bring (``mcq:PATH``, ``qa:PATH``): every format and shape, the column
mapping, per-row validation with row numbers, ``medcite eval validate``, the one-command run, and
a run of a file in each format through ``run_eval`` with a scripted model."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets import FREE_TEXT, MCQ, load_checked, load_freetext, load_mcq
from evals.datasets.files.user_sets import parse_columns
from evals.engine.config import AnswerSetConfig, EvalConfig, McqSet, load_config
from evals.engine.quick_config import config_for_datasets, default_name
from medcite import cli
from tests.helpers import LetterModel

MEDQA_ROWS = [
    {
        "id": "q1",
        "question": "First?",
        "options": {"A": "alpha", "B": "beta", "C": "gamma"},
        "answer_idx": "B",
    },
    {"id": "q2", "question": "Second?", "options": ["one", "two", "three", "four"], "answer": "C"},
    {"id": "q3", "question": "Third?", "options": {"A": "red", "B": "green"}, "answer": "Green"},
]


def paths_for(tmp_path: Path) -> Paths:
    return Paths(data_dir=tmp_path / "data", source_data=tmp_path / "source")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def medmcqa_table(cop: list[int]) -> pa.Table:
    n = len(cop)
    return pa.table(
        {
            "id": [f"m{i}" for i in range(n)],
            "question": [f"Question {i}?" for i in range(n)],
            "opa": ["a"] * n,
            "opb": ["b"] * n,
            "opc": ["c"] * n,
            "opd": ["d"] * n,
            "cop": cop,
        }
    )


def save_to_disk(folder: Path, table: pa.Table) -> Path:
    """What ``datasets.Dataset.save_to_disk`` writes: Arrow IPC stream shards plus state.json."""
    folder.mkdir(parents=True)
    name = "data-00000-of-00001.arrow"
    with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": name}], "_split": None}))
    (folder / "dataset_info.json").write_text("{}")
    return folder


def save_dict_to_disk(folder: Path, splits: dict[str, pa.Table]) -> Path:
    for split, table in splits.items():
        save_to_disk(folder / split, table)
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": list(splits)}))
    return folder


def test_jsonl_medqa_rows_with_letter_list_and_text_answers(tmp_path):
    spec = f"mcq:{write_jsonl(tmp_path / 'medqa.jsonl', MEDQA_ROWS)}"
    loaded = load_checked(MCQ, spec, paths_for(tmp_path))
    assert loaded.skipped == () and loaded.shape.startswith("MedQA-style")
    assert [(i.qid, i.answer) for i in loaded.items] == [("q1", "B"), ("q2", "C"), ("q3", "B")]
    assert loaded.items[1].options == {"A": "one", "B": "two", "C": "three", "D": "four"}
    assert {i.dataset for i in loaded.items} == {spec}  # records are named by the spec as given


def test_json_mirage_object_uses_its_keys_as_ids(tmp_path):
    data = {
        "x-1": {"question": "Q?", "options": {"A": "yes", "B": "no"}, "answer": "A"},
        "x-2": {"question": "R?", "options": {"A": "yes", "B": "no", "C": "maybe"}, "answer": "C"},
    }
    (tmp_path / "bench.json").write_text(json.dumps({"myset": data}))
    (tmp_path / "flat.json").write_text(json.dumps(data))
    for name in ("bench.json", "flat.json"):
        loaded = load_checked(MCQ, f"mcq:{tmp_path / name}", paths_for(tmp_path))
        assert loaded.shape.startswith("MIRAGE") and [(i.qid, i.answer) for i in loaded.items] == [
            ("x-1", "A"),
            ("x-2", "C"),
        ]


def test_csv_medmcqa_cop_is_read_one_based_and_said_so(tmp_path):
    path = write_csv(
        tmp_path / "mm.csv",
        ["id", "question", "opa", "opb", "opc", "opd", "cop"],
        [["a", "Q1?", "w", "x", "y", "z", 1], ["b", "Q2?", "w", "x", "y", "z", 4]],
    )
    loaded = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path))
    assert [i.answer for i in loaded.items] == ["A", "D"]
    assert any("1-based" in note and "answer_base=0" in note for note in loaded.notes)


def test_a_zero_cop_means_zero_based_and_answer_base_overrides(tmp_path):
    path = tmp_path / "mm.parquet"
    pq.write_table(medmcqa_table([0, 3, 1]), path)
    loaded = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path))
    assert [i.answer for i in loaded.items] == ["A", "D", "B"] and any("0-based" in n for n in loaded.notes)
    pq.write_table(medmcqa_table([1, 2, 2]), path)  # no 0: 1-based unless told otherwise
    assert [i.answer for i in load_mcq(f"mcq:{path}", paths_for(tmp_path))] == ["A", "B", "B"]
    told = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path), {"answer_base": "0"})
    assert [i.answer for i in told.items] == ["B", "C", "C"] and "answer_base" in told.notes[-1]


def test_a_saved_hugging_face_dataset_folder(tmp_path):
    folder = save_to_disk(tmp_path / "hf", medmcqa_table([0, 1, 2, 3]))
    loaded = load_checked(MCQ, f"mcq:{folder}", paths_for(tmp_path))
    assert [i.answer for i in loaded.items] == ["A", "B", "C", "D"]
    assert "Hugging Face datasets folder" in loaded.notes[0]


def test_a_dataset_dict_folder_needs_a_split_when_it_has_several(tmp_path):
    folder = save_dict_to_disk(tmp_path / "dd", {"train": medmcqa_table([0, 1]), "test": medmcqa_table([2])})
    with pytest.raises(ConfigError, match=r"splits train, test; choose one .*split=test"):
        load_mcq(f"mcq:{folder}", paths_for(tmp_path))
    test = load_checked(MCQ, f"mcq:{folder}", paths_for(tmp_path), {"split": "test"})
    assert [i.answer for i in test.items] == ["B"] and "split test" in test.notes[0]  # no 0 in it: 1-based
    with pytest.raises(ConfigError, match="no split 'dev'; it has: train, test"):
        load_mcq(f"mcq:{folder}", paths_for(tmp_path), {"split": "dev"})
    single = save_dict_to_disk(tmp_path / "one", {"validation": medmcqa_table([1])})
    assert len(load_mcq(f"mcq:{single}", paths_for(tmp_path))) == 1  # one split: no need to name it


def test_a_column_mapping_renames_columns(tmp_path):
    rows = [{"uid": "u1", "stem": "Q?", "choices": ["p", "q", "r"], "key": "q"}]
    path = write_jsonl(tmp_path / "own.jsonl", rows)
    mapping = parse_columns("question=stem, answer=key,id=uid,options=choices")
    assert mapping == {"question": "stem", "answer": "key", "id": "uid", "options": "choices"}
    (item,) = load_mcq(f"mcq:{path}", paths_for(tmp_path), mapping)
    assert (item.qid, item.question, item.answer) == ("u1", "Q?", "B")
    with pytest.raises(
        ConfigError,
        match=r"no column 'stme' \(mapped to question\); its columns are: uid, stem, choices, key ",
    ):
        load_mcq(f"mcq:{path}", paths_for(tmp_path), {"question": "stme"})
    with pytest.raises(ConfigError, match="unknown column mapping key"):
        load_mcq(f"mcq:{path}", paths_for(tmp_path), {"stem": "question"})
    with pytest.raises(ConfigError, match="NAME=COLUMN"):
        parse_columns("question")
    with pytest.raises(ConfigError, match="cannot tell where the options are"):
        load_mcq(f"mcq:{path}", paths_for(tmp_path), {"question": "stem"})


def test_every_unusable_row_is_reported_with_its_row_number(tmp_path):
    good = {"question": "Fine?", "options": {"A": "a", "B": "b"}, "answer": "A"}
    lines = [
        json.dumps({**good, "id": "ok"}),
        json.dumps({"id": "r2", "options": {"A": "a", "B": "b"}, "answer": "A"}),
        json.dumps({**good, "id": "r3", "question": "  "}),
        json.dumps({**good, "id": "r4", "answer": None}),
        json.dumps({**good, "id": "r5", "answer": "E"}),
        json.dumps({**good, "id": "r6", "options": {"A": "only"}}),
        "{not json",
        json.dumps({**good, "id": "ok"}),
        "",
        json.dumps(["a", "list"]),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path))
    assert [i.qid for i in loaded.items] == ["ok"]
    reasons = {s.row: (s.id, s.reason) for s in loaded.skipped}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8, 10]  # line 9 is blank: not a row
    assert reasons[2] == ("r2", "missing question (no 'question' column in this row)")
    assert reasons[3] == ("r3", "empty question")
    assert reasons[4][1].startswith("missing answer")
    assert reasons[5] == ("r5", "answer 'E' is not among the options A, B")
    assert reasons[6] == ("r6", "fewer than two options (1)")
    assert reasons[7][1].startswith("unreadable row: not valid JSON")
    assert reasons[8] == ("ok", "duplicate id 'ok' (first used at row 1)")
    assert reasons[10][1].startswith("unreadable row")


def test_csv_rows_are_counted_as_data_rows(tmp_path):
    path = tmp_path / "letters.csv"
    path.write_text('question,A,B,C,answer\n"Two\nlines?",x,y,z,C\nShort?,x\n"Gap?",x,,z,A\nNo key?,x,y,z,\n')
    loaded = load_checked(MCQ, f"mcq:{path}", paths_for(tmp_path))
    assert loaded.shape.startswith("one column per option")
    assert [(i.qid, i.question, i.answer) for i in loaded.items] == [("1", "Two\nlines?", "C")]
    assert [(s.row, s.reason) for s in loaded.skipped] == [
        (2, "unreadable row: fewer fields than the header"),
        (3, "option B (B) is empty while a later option is not"),
        (4, "missing answer (no answer_idx, cop or answer)"),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("none.jsonl", None, "no file or folder"),
        (
            "exam.xlsx",
            "x",
            r"workbooks \(\.xlsx\) are not read .*read_excel\('exam\.xlsx'\)\.to_json\('exam\.jsonl', "
            r"orient='records', lines=True\)",
        ),
        ("exam.txt", "x", "unknown file type '.txt'"),
        ("empty.jsonl", "\n", "holds no rows"),
        ("broken.json", "{", "not valid JSON"),
        ("allbad.jsonl", '{"question": "Q?", "options": ["a", "b"], "answer": "z"}\n', "no usable row"),
    ],
)
def test_files_that_cannot_be_used_are_config_errors(tmp_path, name, content, message):
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_mcq(f"mcq:{tmp_path / name}", paths_for(tmp_path))


def test_a_relative_path_is_looked_up_under_the_source_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "source" / "exams").mkdir(parents=True)
    write_jsonl(tmp_path / "source" / "exams" / "q.jsonl", MEDQA_ROWS)
    assert len(load_mcq("mcq:exams/q.jsonl", paths_for(tmp_path))) == 3
    write_jsonl(tmp_path / "local.jsonl", MEDQA_ROWS[:1])  # the working directory comes first
    assert len(load_mcq("mcq:local.jsonl", paths_for(tmp_path))) == 1


def test_qa_files_give_free_text_items(tmp_path):
    rows = [
        {"id": "a", "question": "Why?", "answer": "Because."},
        {"question": "How?", "ideal_answer": ["Like this.", "Or so."]},
        {"id": "c", "question": "What?"},
    ]
    spec = f"qa:{write_jsonl(tmp_path / 'qa.jsonl', rows)}"
    loaded = load_checked(FREE_TEXT, spec, paths_for(tmp_path))
    assert [(i.dataset, i.qid, i.reference) for i in loaded.items] == [
        (spec, "a", "Because."),
        (spec, "2", "Like this."),
    ]
    assert [(s.row, s.reason) for s in loaded.skipped] == [
        (3, "missing answer (no answer, reference, ideal_answer)")
    ]
    path = write_csv(tmp_path / "qa.csv", ["q", "ref"], [["Why?", "Because."]])
    (item,) = load_freetext(f"qa:{path}", paths_for(tmp_path), {"question": "q", "answer": "ref"})
    assert (item.qid, item.reference) == ("1", "Because.")


def test_names_and_prefixes_in_the_registry(tmp_path):
    with pytest.raises(ConfigError, match=r"known: mirage, .*pubmedqa-pqal, mcq:<file>; a free-text set"):
        load_mcq("qa:x.jsonl", paths_for(tmp_path))
    with pytest.raises(ConfigError, match=r"qa:<file>"):
        load_freetext("usmle", paths_for(tmp_path))
    with pytest.raises(ConfigError, match="column mapping applies to mcq:<file> sets only"):
        load_mcq("medqa", paths_for(tmp_path), {"question": "stem"})
    with pytest.raises(ConfigError, match="needs a file"):
        load_mcq("mcq:", paths_for(tmp_path))
    with pytest.raises(ConfigError, match=r"no file or folder '~/no-such-exams\.csv'"):
        load_mcq("mcq:~/no-such-exams.csv", paths_for(tmp_path))


def test_the_columns_field_round_trips_through_a_config_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[mcq]]\ndataset = "mcq:exams/cardio.csv"\ncolumns = {question = "stem", answer = "key"}\n'
        '[[answers]]\ndataset = "qa:notes.jsonl"\ncolumns = {answer = "ref"}\n'
    )
    config = load_config(path)
    assert config.mcq[0] == McqSet(
        dataset="mcq:exams/cardio.csv", columns={"question": "stem", "answer": "key"}
    )
    assert config.answers[0].columns == {"answer": "ref"} and AnswerSetConfig(dataset="x").columns is None
    assert EvalConfig.model_validate(config.model_dump(mode="json")) == config


def test_validate_exit_codes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "data"))
    clean = write_jsonl(tmp_path / "clean.jsonl", MEDQA_ROWS)
    assert cli.main(["eval", "validate", f"mcq:{clean}"]) == 0
    out = capsys.readouterr().out
    assert "MedQA-style" in out and "3 usable, 0 skipped" in out and "gold letters: B: 2, C: 1" in out
    assert "options per question: 2: 1, 3: 1, 4: 1" in out and "no problems found" in out
    dirty = write_jsonl(
        tmp_path / "dirty.jsonl", [*MEDQA_ROWS, {"id": "q9", "question": "X?", "options": ["a"]}]
    )
    assert cli.main(["eval", "validate", f"mcq:{dirty}"]) == 1
    assert "row 4 (id q9): fewer than two options (1)" in capsys.readouterr().out
    assert cli.main(["eval", "validate", f"mcq:{tmp_path / 'missing.csv'}"]) == 2
    assert "no file or folder" in capsys.readouterr().err
    mapped = write_jsonl(tmp_path / "qa.jsonl", [{"q": "Why?", "a": "So."}])
    assert cli.main(["eval", "validate", f"qa:{mapped}", "--columns", "question=q,answer=a"]) == 0
    assert "with a reference answer: 1 of 1" in capsys.readouterr().out


def test_validate_points_at_the_next_command_not_at_itself(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEDCITE_DATA_DIR", str(tmp_path / "data"))
    clean = write_jsonl(tmp_path / "clean.jsonl", MEDQA_ROWS)
    assert cli.main(["eval", "validate", f"mcq:{clean}"]) == 0
    assert f"next: medcite eval run --dataset mcq:{clean}  (closed-book" in capsys.readouterr().out
    mapped = write_jsonl(tmp_path / "qa.jsonl", [{"q": "Why?", "a": "So."}])
    assert cli.main(["eval", "validate", f"qa:{mapped}", "--columns", "question=q,answer=a"]) == 0
    assert (
        f"next: medcite eval run --dataset qa:{mapped} --columns question=q,answer=a"
        in capsys.readouterr().out
    )
    bad = [{"id": f"b{i}", "question": "X?", "options": ["a"]} for i in range(7)]
    unusable = write_jsonl(tmp_path / "unusable.jsonl", bad)
    assert cli.main(["eval", "validate", f"mcq:{unusable}"]) == 1  # every row listed, not an error
    out = capsys.readouterr().out
    assert "0 usable, 7 skipped" in out and "row 7 (id b6): fewer than two options (1)" in out
    assert "medcite eval validate" not in out and "and validate again" in out
    with pytest.raises(ConfigError, match="medcite eval validate"):  # a run still says where to look
        load_mcq(f"mcq:{unusable}", Paths(data_dir=tmp_path / "data"))


def test_validate_works_for_built_in_sets(capsys):
    assert cli.main(["eval", "validate", "pubmedqa"]) == 0  # MEDCITE_SOURCE_DATA's MIRAGE copy
    assert "500 usable, 0 skipped" in capsys.readouterr().out


def test_run_without_a_config_builds_closed_book_vs_the_profile(tmp_path, monkeypatch):
    specs = ["mcq:exams/cardio.csv", "qa:notes/q.jsonl", "medqa"]
    config = config_for_datasets(specs, n=20, profile="default", columns={"question": "stem"})
    assert config.name == default_name(specs) == "cardio-q-medqa"
    assert [c["name"] for c in config.conditions()] == [
        "closed-book",
        "rag/default/hybrid/trained/k=4/threshold=profile",
    ]
    assert [(e.dataset, e.n, e.columns) for e in config.mcq] == [
        ("mcq:exams/cardio.csv", 20, {"question": "stem"}),
        ("medqa", 20, None),
    ]
    assert [(e.dataset, e.n) for e in config.answers] == [("qa:notes/q.jsonl", 20)]

    seen: list[EvalConfig] = []

    def handed(cfg: EvalConfig, *args: object, **kwargs: object) -> None:
        seen.append(cfg)
        raise ZeroDivisionError  # stop before any model is loaded

    monkeypatch.setattr("evals.engine.runner.run_eval", handed)
    with pytest.raises(ZeroDivisionError):
        cli.main(
            [
                "eval",
                "run",
                "--dataset",
                "mcq:exams/cardio.csv",
                "--profile",
                "fast",
                "--name",
                "x",
                "--columns",
                "answer=key",
            ]
        )
    assert seen[0].name == "x" and seen[0].mcq[0].columns == {"answer": "key"} and seen[0].mcq[0].n is None
    assert cli.main(["eval", "run"]) == 2  # neither a config nor --dataset
    assert cli.main(["eval", "run", str(tmp_path / "c.toml"), "--dataset", "medqa"]) == 2  # both


def test_a_file_in_each_format_runs_through_run_eval(bm25_paths, tmp_path, capsys):
    from evals.engine.runner import run_eval
    from evals.records import read_records

    files = tmp_path / "files"
    files.mkdir()
    bad = {"id": "bad", "question": "Q?", "options": ["a", "b"], "answer": "Z"}
    pq.write_table(medmcqa_table([0, 1]), files / "mm.parquet")
    (files / "mirage.json").write_text(
        json.dumps({"k1": {"question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "B"}})
    )
    specs = [
        f"mcq:{write_jsonl(files / 'medqa.jsonl', [*MEDQA_ROWS, bad])}",
        f"mcq:{files / 'mirage.json'}",
        f"mcq:{write_csv(files / 'mm.csv', ['question', 'opa', 'opb', 'cop'], [['Q?', 'x', 'y', 2]])}",
        f"mcq:{files / 'mm.parquet'}",
        f"mcq:{save_to_disk(files / 'hf', medmcqa_table([3]))}",
        f"mcq:{save_dict_to_disk(files / 'dd', {'train': medmcqa_table([0]), 'test': medmcqa_table([1])})}",
    ]
    config = EvalConfig.model_validate(
        {
            "name": "own-files",
            "profile": "fast",
            "mcq": [
                {"dataset": s, "columns": {"split": "test"} if s.endswith("dd") else None} for s in specs
            ],
            "grid": {
                "index": ["default"],
                "mode": ["bm25"],
                "rerank": ["none"],
                "k": [1],
                "closed_book": True,
            },
        }
    )
    out = tmp_path / "run"
    run_eval(config, bm25_paths, out=out, progress=False, generator=LetterModel())
    assert "medqa.jsonl: 1 row(s) skipped" in capsys.readouterr().err
    records = list(read_records(out / "records.jsonl"))
    per_set = {s: sum(1 for r in records if r.dataset == s and r.condition == "closed-book") for s in specs}
    assert list(per_set.values()) == [3, 1, 1, 2, 1, 1]
    assert {r.condition for r in records} == {"closed-book", "rag/default/bm25/none/k=1"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["skipped_rows"][specs[0]] == {
        "count": 1,
        "rows": [{"row": 4, "id": "bad", "reason": "answer 'Z' is not among the options A, B"}],
    }
    assert manifest["skipped_rows"][specs[1]] == {"count": 0, "rows": []}
