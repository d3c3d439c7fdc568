"""The served index under damage: files truncated in place, the folder deleted, the index rebuilt.

The server detaches its indexes at load (everything in memory, nothing mapped or read from the
folder afterwards), so answers stay exactly the same; /ready reports damage as 503 naming the
index, and a rebuild as "serving the build loaded at start" with 200 (the old build is whole and
consistent; a restart serves the new one). The server runs in a subprocess so that a regression
(SIGBUS on a truncated memory-mapped file) fails the test instead of killing pytest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexes.manifest import read_manifest
from tests.api.support import KEY
from tests.helpers import HashEmbedder, make_doc, word_index
from tests.reliability.server_process import server_process

NAME = "faults"
QUERIES = ["anticoagulation atrial fibrillation score", "inheritance gene disorder"]

DOCS = [
    make_doc(
        "f:marfan",
        {
            "Definition": "Marfan syndrome is a connective tissue disorder.",
            "Inheritance": "Autosomal dominant inheritance, FBN1 gene.",
        },
        title="Marfan",
    ),
    make_doc(
        "f:cf",
        {
            "Definition": "Cystic fibrosis affects lungs and pancreas.",
            "Inheritance": "Autosomal recessive inheritance, CFTR gene.",
        },
        title="Cystic fibrosis",
    ),
    make_doc(
        "f:af",
        {
            "Anticoagulation": "Use the CHA2DS2-VASc score to decide on anticoagulation.",
            "Rate": "Beta blockers control the ventricular rate in atrial fibrillation.",
        },
        title="Atrial fibrillation guideline",
    ),
]
OTHER_DOCS = [
    make_doc("g:gout", {"Treatment": "Colchicine treats acute gout; allopurinol lowers urate."}),
    make_doc(
        "g:af",
        {"Anticoagulation": "Apixaban is an anticoagulation choice in atrial fibrillation."},
        title="Atrial fibrillation, other guideline",
    ),
]


def build(data: Path, docs) -> Path:
    return word_index(data, docs, NAME, HashEmbedder()).folder


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """A server over a fresh index in tmp_path: (base url, data folder, server process)."""
    data = tmp_path / "data"
    build(data, DOCS)
    with server_process("tests.reliability.serve_index", str(data), NAME) as (url, proc):
        yield url, data, proc


def answers(url: str, proc: subprocess.Popen) -> list[list[tuple[str, float, str]]]:
    """(chunk id, score, text) of every hit, for each query in BM25 and dense mode."""
    out = []
    for mode in ("bm25", "dense"):
        for query in QUERIES:
            try:
                response = httpx.post(
                    f"{url}/v1/retrieve",
                    json={"query": query, "k": 4, "mode": mode},
                    headers={"Authorization": f"Bearer {KEY}"},
                    timeout=30,
                )
            except httpx.TransportError as exc:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
                pytest.fail(f"the server died (exit code {proc.returncode}; -7 is SIGBUS): {exc}")
            assert response.status_code == 200, response.text
            out.append([(h["chunk_id"], h["score"], h["text"]) for h in response.json()["data"]])
    return out


def readiness(url: str) -> tuple[int, dict]:
    response = httpx.get(f"{url}/ready", timeout=30)
    return response.status_code, response.json()["profiles"]["fast"]


def test_truncating_each_file_in_place_changes_no_answer_and_ready_reports_it(served):
    url, data, proc = served
    before = answers(url, proc)
    assert all(before) and before[0][0][2] == "Use the CHA2DS2-VASc score to decide on anticoagulation."
    assert readiness(url) == (200, readiness(url)[1]) and readiness(url)[1]["status"] == "ready"
    folder = (data / "indexes" / NAME).resolve()
    files = sorted(read_manifest(folder)["files"])
    assert {"chunks.jsonl", "chunk_offsets.npy", "bm25/data.csc.index.npy", "dense/index.faiss"} <= set(files)
    for name in files:  # one after another, asking again after each
        os.truncate(folder / name, 0)  # in place: same inode, as a crashed copy or a full disk leaves it
        assert answers(url, proc) == before, name
        status, entry = readiness(url)
        assert status == 503 and "index problem" in entry["status"] and NAME in entry["status"]
        assert entry["serving"] == folder.name


def test_deleted_index_folder_changes_no_answer_and_ready_reports_it(served):
    url, data, proc = served
    before = answers(url, proc)
    link = data / "indexes" / NAME
    shutil.rmtree(link.resolve())
    link.unlink()
    assert answers(url, proc) == before
    status, entry = readiness(url)
    assert status == 503 and f"no index at {link}" in entry["status"]


def test_rebuild_under_the_server_keeps_serving_the_loaded_build(served):
    url, data, proc = served
    before = answers(url, proc)
    old = (data / "indexes" / NAME).resolve()
    new = build(data, OTHER_DOCS)
    assert not old.exists()  # the build removed the superseded version under the running server
    assert answers(url, proc) == before
    status, entry = readiness(url)
    assert status == 200 and (entry["serving"], entry["on_disk"]) == (old.name, new.name)
    assert (
        "restart the server" in entry["status"]
        and entry["corpus_fingerprint"] != read_manifest(new)["corpus_fingerprint"]
    )
