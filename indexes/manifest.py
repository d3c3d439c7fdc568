"""``manifest.json``: what an index folder holds and how to check it.

It records the schema version, medcite version, the sources and their parameters, a corpus
fingerprint (sha256 over chunk ids and texts), the chunker, tokenizer and embedder
configuration, counts, build time, and the size and sha256 of every file. Loading checks all of
it: a flipped byte, a truncated array or another embedder is refused with a clear error.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from core.errors import IndexCorruptError, IndexMismatchError, IndexNotFoundError
from core.types import Chunk
from indexes.files import sha256_file

SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"


def corpus_fingerprint(chunks: Iterable[Chunk]) -> str:
    """sha256 over ``chunk_id``, NUL, ``text``, NUL for every chunk in order."""
    digest = hashlib.sha256()
    for chunk in chunks:
        add_to_fingerprint(digest, chunk)
    return digest.hexdigest()


def add_to_fingerprint(digest: Any, chunk: Chunk) -> None:
    """One chunk into a running ``corpus_fingerprint`` (a streamed build hashes as it writes)."""
    digest.update(chunk.chunk_id.encode("utf-8") + b"\0" + chunk.text.encode("utf-8") + b"\0")


def file_digest(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": sha256_file(path)}


def describe_files(folder: Path) -> dict[str, dict[str, Any]]:
    """Size and sha256 of every file under ``folder`` except the manifest itself."""
    return {
        str(p.relative_to(folder)): file_digest(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST_FILE
    }


def write_manifest(folder: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    full = {"schema_version": SCHEMA_VERSION, **manifest, "files": describe_files(folder)}
    (folder / MANIFEST_FILE).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
    return full


def _not_found(folder: Path) -> str:
    """Where the index was looked for, absolutely, and how to build it there or look elsewhere:
    the data folder (``MEDCITE_DATA_DIR``, default ``./data``) is relative to the current one."""
    if folder.parent.name != "indexes":  # not under a data folder
        return f"no index at {folder.absolute()}; build one with: medcite index build"
    data, name = folder.parent.parent, folder.name
    build = f"MEDCITE_DATA_DIR={shlex.quote(str(data.absolute()))} medcite index build"
    build += f" --name {name}" if name != "default" else ""
    relative = (
        "" if data.is_absolute() else f" (the data folder is {str(data)!r}, relative to the current one)"
    )
    return (
        f"no index at {folder.absolute()}{relative}; build one there with: {build}, or set "
        f"MEDCITE_DATA_DIR to the data folder that has indexes/{name}"
    )


def require_folder(folder: Path) -> None:
    """Raise IndexNotFoundError, saying how to build it, unless ``folder`` exists (named as given:
    a relative data folder is part of the hint)."""
    if not folder.is_dir():
        raise IndexNotFoundError(_not_found(folder))


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST_FILE
    require_folder(folder)
    if not path.is_file():
        raise IndexCorruptError(
            f"{folder} has no {MANIFEST_FILE} (an interrupted or foreign build); "
            "rebuild it with: medcite index build"
        )
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise IndexCorruptError(f"{path} is not valid JSON ({exc}); rebuild the index") from exc
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise IndexMismatchError(
            f"{folder} has index schema {manifest.get('schema_version')}, this medcite reads "
            f"{SCHEMA_VERSION}; rebuild it with: medcite index build"
        )
    return dict(manifest)


def verify_files(folder: Path, manifest: dict[str, Any], *, checksums: bool = True) -> None:
    """Raise IndexCorruptError unless every recorded file exists with its size (and sha256)."""
    for name, expected in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file():
            raise IndexCorruptError(f"{path} is missing; rebuild the index")
        size = path.stat().st_size
        if size != expected["bytes"]:
            raise IndexCorruptError(
                f"{path} has {size} bytes, the manifest says {expected['bytes']} "
                "(truncated or replaced); rebuild the index"
            )
        if checksums and file_digest(path)["sha256"] != expected["sha256"]:
            raise IndexCorruptError(
                f"{path} does not match its sha256 in the manifest (corrupted or modified); rebuild the index"
            )


def check_compatible(manifest: dict[str, Any], key: str, runtime: dict[str, Any]) -> None:
    """Refuse an index whose recorded ``key`` config differs from the one in use."""
    recorded = manifest.get(key)
    if recorded != runtime:
        raise IndexMismatchError(
            f"index was built with {key} {recorded}, but this run uses {runtime}; "
            "rebuild the index or use the matching configuration"
        )
