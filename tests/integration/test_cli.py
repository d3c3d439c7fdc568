"""The medcite command as a user runs it: a subprocess, real files, exit codes and messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_python


def medcite(*args: str, data_dir: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = run_python(["-m", "medcite", *args], data_dir)
    if check and result.returncode != 0:
        raise AssertionError(f"medcite {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("data")
    out = medcite(
        "index", "build", "--source", "open-medicine", "--no-dense", "--quiet", "--name", "om", data_dir=data
    )
    assert "145 documents" in out.stdout
    return data


def test_build_info_and_bm25_retrieve(bm25_index):
    info = json.loads(
        medcite("index", "info", "--name", "om", "--json", "--verify", data_dir=bm25_index).stdout
    )
    assert info["counts"]["per_source"]["open-medicine"]["documents"] == 145
    assert info["lexical"]["backend"] == "bm25s" and info["embedder"] is None
    summary = medcite("index", "info", "--name", "om", data_dir=bm25_index).stdout
    assert "shards: 1; built by the local engine" in summary
    out = medcite(
        "retrieve",
        "CHA2DS2-VASc anticoagulation",
        "--mode",
        "bm25",
        "--k",
        "3",
        "--name",
        "om",
        "--json",
        data_dir=bm25_index,
    )
    hits = json.loads(out.stdout)
    assert len(hits) == 3 and hits[0]["rank"] == 1
    assert hits[0]["doc_id"].startswith("open-medicine:acc_aha_af_2023")
    assert hits[0]["url"] == "https://doi.org/10.1161/CIR.0000000000001193"
    assert "CHA2DS2-VASc" in hits[0]["text"] and "MIT" in hits[0]["license"]


def test_skip_existing_is_idempotent(bm25_index):
    out = medcite(
        "index",
        "build",
        "--source",
        "open-medicine",
        "--no-dense",
        "--quiet",
        "--name",
        "om",
        "--skip-existing",
        data_dir=bm25_index,
    )
    assert "up to date" in out.stdout


def test_a_bm25_query_imports_no_torch(bm25_index):
    """A lexical query needs no model: the process that answers it never imports torch (a cold
    start would otherwise pay for it)."""
    script = (
        "import sys; from medcite.cli import main\n"
        "code = main(['retrieve', 'sepsis lactate', '--mode', 'bm25', '--name', 'om', '--json'])\n"
        "assert not code, code\n"
        "heavy = ('torch', 'sentence_transformers', 'llama_cpp')\n"
        "print('loaded:', sorted(m for m in heavy if m in sys.modules))"
    )
    result = run_python(["-c", script], bm25_index)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("loaded: []"), result.stdout[-300:]


@pytest.mark.parametrize(
    "args,message",
    [
        (["retrieve", "", "--mode", "bm25", "--name", "om"], "query is empty"),
        (["retrieve", "?!?!", "--mode", "bm25", "--name", "om"], "no words"),
        (["retrieve", "x" * 100_000, "--mode", "bm25", "--name", "om"], "limit is"),
        (["retrieve", "sepsis", "--mode", "dense", "--name", "om"], "needs dense vectors"),
        (["retrieve", "sepsis", "--name", "missing"], "medcite index build"),
        (["index", "build", "--source", "nonsense", "--no-dense"], "choose one of"),
        (
            ["index", "build", "--source", "orphanet", "--path", "/nonexistent/x", "--no-dense"],
            "/nonexistent/x",
        ),
        (["index", "build", "--source", "hpo", "--set", "hpo.colour=blue", "--no-dense"], "no option"),
    ],
)
def test_bad_input_gets_a_clear_error_not_a_traceback(bm25_index, args, message):
    result = medcite(*args, data_dir=bm25_index, check=False)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_user_folder_fails_without_leaving_an_index(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "blank.md").write_text("# Only a heading\n\n   \n")
    result = medcite(
        "index",
        "build",
        "--source",
        "user-docs",
        "--path",
        str(docs),
        "--no-dense",
        "--name",
        "mine",
        data_dir=tmp_path / "data",
        check=False,
    )
    assert result.returncode == 2 and "no chunk" in result.stderr
    assert not (tmp_path / "data" / "indexes" / "mine").exists()


def test_ask_with_unknown_profile_or_missing_model_says_what_to_do(bm25_index, tmp_path):
    result = medcite("ask", "Which score?", "--profile", "nope", data_dir=bm25_index, check=False)
    assert result.returncode == 2 and "choose one of" in result.stderr
    profile = tmp_path / "bm25.toml"
    profile.write_text('index = "om"\n[retrieval]\nmode = "bm25"\n[rerank]\nbackend = "none"\n')
    result = run_python(
        ["-m", "medcite", "ask", "Which score?", "--profile", str(profile)],
        bm25_index,
        MEDCITE_MODEL_DIR=str(tmp_path / "no-models"),
    )
    assert result.returncode == 2, result.stderr
    assert "medcite models fetch" in result.stderr and "Traceback" not in result.stderr


def test_benchmarks_and_studies_run_by_name_from_anywhere(tmp_path):
    """``medcite bench NAME`` imports its module from the installed package, not the checkout's
    folder: run from an empty folder."""
    result = subprocess.run(
        [sys.executable, "-m", "medcite", "bench", "quote-reach", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: medcite bench quote-reach")
