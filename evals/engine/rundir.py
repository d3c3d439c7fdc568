"""A run directory: the resolved config, a manifest, and append-only records.

    <runs>/<name>/config.json      the resolved EvalConfig
                  manifest.json    git commit, package versions, index and model fingerprints, seed, times
                  records.jsonl    one ItemRecord per (condition, dataset, qid), flushed per item
                  runs/<set>/      retrieval: qrels.txt and one <condition>.trec per condition
                  metrics.json     aggregated metrics (unrounded) and paired comparisons
                  report.md        tables and the PNG plots beside it

Re-running a config resumes: records already written are skipped. A changed config under the
same name is refused, so two different experiments never mix in one directory. Fields added to
EvalConfig after a run started take their defaults when the stored config is read back, so a
newer medcite resumes an older run of the same experiment.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from evals.engine.config import EvalConfig
from evals.records import ItemRecord, read_records

PACKAGES = (
    "medcite",
    "numpy",
    "bm25s",
    "faiss-cpu",
    "torch",
    "sentence-transformers",
    "llama-cpp-python",
    "pydantic",
)


def git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True, timeout=10
        )
        status = ["git", "status", "--porcelain", "--untracked-files=no"]
        dirty = subprocess.run(status, cwd=root, capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


class RunDir:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.records_path = folder / "records.jsonl"

    @classmethod
    def open(cls, folder: Path, config: EvalConfig, *, restart: bool = False) -> RunDir:
        """Create the directory, or reopen it to resume the same config."""
        run = cls(folder)
        stored = folder / "config.json"
        resolved = config.model_dump(mode="json")
        if stored.is_file() and not restart:
            if _stored_config(stored) != resolved:
                raise ConfigError(
                    f"{folder} holds a run of a different config named {config.name!r}; "
                    "rename the config, or pass --restart to discard that run"
                )
        else:
            folder.mkdir(parents=True, exist_ok=True)
            for name in ("records.jsonl", "run.trec", "metrics.json", "report.md", "manifest.json"):
                (folder / name).unlink(missing_ok=True)
            shutil.rmtree(folder / "runs", ignore_errors=True)
            stored.write_text(json.dumps(resolved, indent=2) + "\n", encoding="utf-8")
        return run

    def done_keys(self) -> set[tuple[str, str, str]]:
        if not self.records_path.is_file():
            return set()
        return {(r.condition, r.dataset, r.qid) for r in read_records(self.records_path)}

    def records(self) -> list[ItemRecord]:
        return list(read_records(self.records_path)) if self.records_path.is_file() else []

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        base = {
            "git_commit": git_commit(Path(__file__).resolve().parents[2]),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "packages": versions(),
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        path = self.folder / "manifest.json"
        previous = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        sessions = previous.get("sessions", [])
        merged = {**previous, **base, **manifest, "sessions": [*sessions, manifest.get("session", {})]}
        merged.pop("session", None)
        path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")


def _stored_config(path: Path) -> dict[str, Any] | None:
    """The stored config re-resolved with today's defaults; None when it no longer validates."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return EvalConfig.model_validate(raw).model_dump(mode="json")
    except (ValueError, TypeError):
        return None
