"""What a trained model's manifest records about the run that made it (both trainers share it).

The data files' hashes, the command that reproduces the run and the machine it ran on, and what
the run cost: one definition, so the relevance and support manifests say these the same way.
"""

from __future__ import annotations

import platform
import resource
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from indexes.files import sha256_file


def data_hashes(source_data: Path, names: Iterable[str]) -> dict[str, str]:
    """sha256 of each named data file that exists under ``source_data``."""
    return {name: sha256_file(source_data / name) for name in names if (source_data / name).is_file()}


def reproduction(torch: Any) -> dict[str, Any]:
    """``command`` (this process's ``medcite`` arguments, shell-quoted) and ``environment``."""
    return {
        "command": " ".join(shlex.quote(a) for a in ["medcite", *sys.argv[1:]]),
        "environment": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "machine": platform.machine(),
        },
    }


def cost(started: float) -> dict[str, float]:
    """This process's peak memory so far (MiB) and the seconds since ``started`` (perf_counter)."""
    return {
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
