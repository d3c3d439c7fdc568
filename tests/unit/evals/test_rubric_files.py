"""Rubric sets: a HealthBench-layout file read as published, bad files refused whole with the
file, line and field named (hypothesis-made rows too), and the clinician benchmark as rubric
items by its template."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ConfigError
from core.paths import Paths
from evals.datasets.rubric import RubricFileError, load_rubric_set
from evals.datasets.rubric.clinician import TEMPLATE, load_clinician_rubric
from evals.datasets.rubric.healthbench import load_rubric_file
from tests.rubric_support import CANARY, FIXTURE


def rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def write(path: Path, lines: list[Any]) -> Path:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_healthbench_layout_is_read_unchanged():
    items = load_rubric_set(f"rubric:{FIXTURE}", Paths())
    assert [i.qid for i in items] == ["hb-fever-child", "hb-metformin-alcohol", "hb-heart-rate"]
    fever, alcohol, heart = items
    assert [c.points for c in fever.criteria] == [5.0, 7.0, -8.0]
    assert fever.criteria[0].tags == ("level:example", "axis:accuracy") and fever.criteria[0].matcher is None
    assert fever.example_tags == ("theme:emergency_referrals", "physician_agreed_category:not-emergent")
    assert [m.role for m in alcohol.prompt] == ["user", "assistant", "user"]
    assert alcohol.question == "Can I drink alcohol with it?" and len(alcohol.history) == 2
    assert heart.prompt[0].role == "system"
    assert CANARY not in repr(items)  # read, checked, dropped


def test_other_keys_are_ignored_and_a_declared_matcher_is_read(tmp_path):
    row = rows()[0] | {"completion": None, "future_field": {"x": 1}}
    row["rubrics"][0]["matcher"] = {"kind": "regex", "pattern": "paracetamol|ibuprofen"}
    row["rubrics"][1]["matcher"] = {"kind": "mode", "modes": ["abstained"]}
    (item,) = load_rubric_file(write(tmp_path / "m.jsonl", [row]), "rubric:m.jsonl")
    first, second, third = item.criteria
    assert first.matcher is not None and second.matcher is not None
    assert (first.kind, first.matcher.pattern) == ("regex", "paracetamol|ibuprofen")
    assert (second.kind, second.matcher.modes) == ("mode", ("abstained",))
    assert third.matcher is None and third.kind == "rubric"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.pop("prompt_id"), "prompt_id: Field required"),
        (lambda r: r["rubrics"][1].update(points="7"), "rubrics.1.points"),
        (lambda r: r["rubrics"][0].update(points=True), "rubrics.0.points"),
        (lambda r: r["rubrics"].clear(), "rubrics: List should have at least 1 item"),
        (lambda r: r["prompt"][0].update(role="doctor"), "prompt.0.role"),
        (
            lambda r: r["prompt"].append({"role": "assistant", "content": "ok"}),
            "the last message must be the user's",
        ),
        (lambda r: r.update(example_tags="theme:x"), "example_tags"),
        (lambda r: r.update(canary=7), "canary"),
        (
            lambda r: r["rubrics"][0].update(matcher={"kind": "regex", "pattern": "("}),
            "not a regular expression",
        ),
        (
            lambda r: r["rubrics"][0].update(matcher={"kind": "cites"}),
            "rubrics.0.matcher: a cites matcher needs sources",
        ),
    ],
)
def test_a_bad_row_names_the_file_line_and_field(tmp_path, change, field):
    good, bad = rows()[:2]
    change(bad)
    path = write(tmp_path / "bad.jsonl", [good, bad])
    with pytest.raises(RubricFileError) as info:
        load_rubric_file(path, "rubric:bad.jsonl")
    message = str(info.value)
    assert f"{path}:2: " in message and field in message and "nothing was run" in message
    assert f"{path}:1:" not in message


def test_every_bad_line_is_listed_in_the_one_error(tmp_path):
    first = rows()[0]
    path = write(tmp_path / "many.jsonl", [first, "{not json", [1, 2], first, ""])
    with pytest.raises(RubricFileError) as info:
        load_rubric_file(path, "x")
    message = str(info.value)
    assert "3 bad row(s)" in message
    assert f"{path}:2: row: not JSON" in message and f"{path}:3: row: a JSON object is needed" in message
    assert f"{path}:4: prompt_id: 'hb-fever-child' repeats line 1" in message
    with pytest.raises(RubricFileError, match="no rows"):
        load_rubric_file(write(tmp_path / "empty.jsonl", [""]), "x")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
FIELDS = ["prompt_id", "prompt", "rubrics", "example_tags", "ideal_completions_data", "canary"]


@st.composite
def broken_row(draw) -> dict:
    """A fixture row with one field replaced by, or one key removed for, arbitrary JSON."""
    row = draw(st.sampled_from(rows()))
    field = draw(st.sampled_from([*FIELDS, "rubrics.0.criterion", "rubrics.0.points", "prompt.0.content"]))
    value = draw(JSON)
    target, key = row, field
    if "." in field:
        top, index, key = field.split(".")
        target = row[top][int(index)]
    if draw(st.booleans()):
        target.pop(key)
    else:
        target[key] = value
    return row


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(broken_row() | st.builds(lambda i: rows()[i], st.integers(0, 2)), min_size=1, max_size=6),
    st.data(),
)
def test_made_up_rows_load_whole_or_fail_with_the_one_clear_error(tmp_path, lines, data):
    for i, row in enumerate(lines):  # distinct ids, so only a broken field can fail a row
        if isinstance(row.get("prompt_id"), str):
            row["prompt_id"] = f"{row['prompt_id']}-{i}"
    junk = data.draw(st.lists(st.text(alphabet=string.printable, max_size=20), max_size=2))
    path = write(tmp_path / "fuzz.jsonl", [*lines, *junk])
    try:
        items = load_rubric_file(path, "fuzz")
    except RubricFileError as exc:
        assert str(path) in str(exc) and ("nothing was run" in str(exc) or "no rows" in str(exc))
        return
    assert len(items) == len(lines) and not any(j.strip() for j in junk)  # all or nothing


def test_the_clinician_benchmark_becomes_rubric_items_by_its_template():
    items = load_clinician_rubric("test2", "clinician-rubric:test2")
    assert len(items) == 733
    answerable = next(i for i in items if i.kind == "answerable" and len(i.criteria) == 3)
    kinds = {c.kind: c for c in answerable.criteria}
    assert set(kinds) == {"key_fact", "sibling", "cites_guideline"}
    assert kinds["key_fact"].points > 0 > kinds["sibling"].points and kinds["cites_guideline"].points > 0
    key_fact, cites = kinds["key_fact"].matcher, kinds["cites_guideline"].matcher
    assert key_fact is not None and key_fact.kind == "regex" and "axis:accuracy" in kinds["key_fact"].tags
    assert cites is not None and cites.sources[0].startswith("open-medicine:")
    assert "kind:answerable" in answerable.example_tags and any(
        t.startswith("wording:") for t in answerable.example_tags
    )
    near = next(i for i in items if i.kind == "near")
    assert {c.kind for c in near.criteria} == {"abstains", "states_answer"}
    assert all(c.matcher is not None for i in items for c in i.criteria)  # no judge needed
    with pytest.raises(ConfigError, match="unknown clinician part"):
        load_rubric_set("clinician-rubric:test9", Paths())


def test_the_template_is_data_and_a_bad_one_is_refused(tmp_path):
    changed = tmp_path / "t.toml"
    changed.write_text(TEMPLATE.read_text().replace("points = 5\n", "points = 9\n", 1))
    (first, *_) = load_clinician_rubric("test2", "x", changed)
    assert first.criteria[0].points == 9.0
    changed.write_text(TEMPLATE.read_text().replace("{quote}", "{answer}"))
    with pytest.raises(ConfigError, match="names \\['answer'\\]"):
        load_clinician_rubric("test2", "x", changed)


def test_validate_describes_a_rubric_set_or_lists_every_bad_row(tmp_path):
    from evals.engine.validate import validate_dataset

    good = validate_dataset(f"rubric:{FIXTURE}", Paths())
    assert good.problems == 0 and "3 items, 8 criteria (3 with negative points)" in good.text
    assert "graded by: judge: 8" in good.text and "multi-turn prompts: 2" in good.text
    lines = [{"prompt_id": f"p{i}"} for i in range(12)]
    bad = validate_dataset(f"rubric:{write(tmp_path / 'b.jsonl', lines)}", Paths())
    assert bad.problems == 12 and bad.text.count("prompt: Field required") == 12  # all, not the first 10
