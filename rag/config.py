"""Typed settings, read once from the environment by the entry points and passed explicitly.

``MEDCITE_DATA_DIR``: where built indexes, caches and model files go (default ``./data``,
gitignored). ``MEDCITE_SOURCE_DATA``: where local copies of public sources live (default
``../shared/data``, the layout the corpus builders expect).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class Paths(BaseModel):
    model_config = ConfigDict(frozen=True)

    data_dir: Path = Path("data")
    source_data: Path = Path("../shared/data")

    @classmethod
    def from_env(cls) -> Paths:
        return cls(
            data_dir=Path(os.environ.get("MEDCITE_DATA_DIR", "data")),
            source_data=Path(os.environ.get("MEDCITE_SOURCE_DATA", "../shared/data")),
        )

    @property
    def indexes_dir(self) -> Path:
        return self.data_dir / "indexes"

    @property
    def downloads_dir(self) -> Path:
        return self.data_dir / "downloads"
