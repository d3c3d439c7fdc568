"""A small error hierarchy. Each message says what went wrong and what to do next.

Errors are raised, never printed; the CLI and the API map each class to one exit code or status.
"""

from __future__ import annotations

from types import ModuleType


class MedciteError(Exception):
    """Base class for every error medcite raises on purpose."""


class ConfigError(MedciteError):
    """A setting, flag or config file is invalid."""


class MissingExtraError(MedciteError, ImportError):
    """An optional dependency group is not installed."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; it comes with the '{extra}' extra: pip install 'medcite[{extra}]'"
        )
        self.package = package
        self.extra = extra


class SourceError(MedciteError):
    """A corpus source is missing, unreadable or malformed."""


class EmptyCorpusError(SourceError):
    """A source produced no document with text."""


class IndexStoreError(MedciteError):
    """Base for problems with a built index on disk."""


class IndexNotFoundError(IndexStoreError):
    """No built index at the expected location."""


class IndexCorruptError(IndexStoreError):
    """Files of an index are missing, truncated or do not match the manifest."""


class IndexMismatchError(IndexStoreError):
    """The index was built with a tokenizer or embedder other than the one in use."""


class QueryError(MedciteError):
    """A query is empty, too long or otherwise unusable."""


class ModelError(MedciteError):
    """A model file is missing, unverifiable or fails to load."""


def require(module: str, *, package: str, extra: str) -> ModuleType:
    """Import an optional module or raise :class:`MissingExtraError` naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(package, extra) from exc


class GeneratorError(MedciteError):
    """The generator is missing, unreachable, too slow or returned unusable output."""


class GeneratorTimeout(GeneratorError):
    """The generator did not answer within its timeout."""
