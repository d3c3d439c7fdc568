"""Typed settings, read once from the environment by the entry points and passed explicitly.

``MEDCITE_DATA_DIR``: where built indexes, caches and model files go (default ``./data``,
gitignored). ``MEDCITE_SOURCE_DATA``: where local copies of public sources live (default
``../shared/data``, the layout the corpus builders expect).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# The defaults, spelled here only (the API's settings read them too).
DEFAULT_DATA_DIR = "data"
DEFAULT_SOURCE_DATA = "../shared/data"
# Outside the repo so fresh checkouts and CI clones on one machine share the 1 GB generator file.
DEFAULT_MODEL_DIR = "~/.cache/medcite/models"


class Paths(BaseModel):
    model_config = ConfigDict(frozen=True)

    data_dir: Path = Path(DEFAULT_DATA_DIR)
    source_data: Path = Path(DEFAULT_SOURCE_DATA)
    model_dir: Path = Field(default_factory=lambda: Path(DEFAULT_MODEL_DIR).expanduser())

    @classmethod
    def from_env(cls) -> Paths:
        return cls(
            data_dir=Path(os.environ.get("MEDCITE_DATA_DIR", DEFAULT_DATA_DIR)),
            source_data=Path(os.environ.get("MEDCITE_SOURCE_DATA", DEFAULT_SOURCE_DATA)),
            model_dir=Path(os.environ.get("MEDCITE_MODEL_DIR", DEFAULT_MODEL_DIR)).expanduser(),
        )

    @property
    def indexes_dir(self) -> Path:
        return self.data_dir / "indexes"

    @property
    def cache_dir(self) -> Path:
        """Embedding, rerank, generation and judge caches (SQLite), safe to delete."""
        return self.data_dir / "cache"

    @property
    def downloads_dir(self) -> Path:
        return self.data_dir / "downloads"
