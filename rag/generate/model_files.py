"""File integrity for large model files: hashing, a sidecar that spares re-hashing, atomic writes.

Hashing 1 GB takes seconds; a JSON sidecar ``<file>.json`` records the size, mtime and sha256 of
a file once verified, and a later check trusts it while size and mtime are unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

__all__ = ["assemble", "exclusive", "record_sha256", "recorded_sha256"]

_BLOCK = 1 << 20


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def recorded_sha256(path: Path) -> str | None:
    """The hash a sidecar records for ``path``, if it still describes the file on disk (cheap)."""
    try:
        meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return None
    if (
        not isinstance(meta, dict)
        or meta.get("size") != stat.st_size
        or meta.get("mtime_ns") != stat.st_mtime_ns
    ):
        return None
    sha = meta.get("sha256")
    return sha if isinstance(sha, str) else None


def record_sha256(path: Path, sha: str, extra: Mapping[str, Any]) -> None:
    """Write the sidecar for a verified ``path`` (atomically: a torn sidecar would be ignored)."""
    stat = path.stat()
    meta = {**extra, "sha256": sha, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = path.with_name(path.name + ".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, _sidecar(path))


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (processes sharing a model folder take turns)."""
    with lock_path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def assemble(chunks: Sequence[Path], out_path: Path, *, progress: bool) -> str:
    """Concatenate ``chunks`` into ``out_path`` (fsynced) and return the sha256 of the result.

    Hashing while writing saves reading 1 GB back. Any interruption removes ``out_path``.
    """
    digest = hashlib.sha256()
    total = sum(c.stat().st_size for c in chunks)
    bar = tqdm(total=total, desc=f"assemble {out_path.name}", unit="B", unit_scale=True, disable=not progress)
    try:
        with bar, out_path.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(_BLOCK):
                        out.write(block)
                        digest.update(block)
                        bar.update(len(block))
            out.flush()
            os.fsync(out.fileno())
    except BaseException:  # Ctrl-C included: never leave a partial file behind
        out_path.unlink(missing_ok=True)
        raise
    return digest.hexdigest()
