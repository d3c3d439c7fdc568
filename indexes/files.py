"""The one sha256 of a file's bytes that manifests, model checks and reports share."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of ``path``'s bytes, read in blocks (constant memory for a 1 GB model)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
