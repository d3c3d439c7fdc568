"""medcite: retrieval-augmented medical question answering with verified citations."""

from importlib.metadata import PackageNotFoundError, version

try:  # the one version source is pyproject.toml, read from the installed package's metadata
    __version__ = version("medcite")
except PackageNotFoundError:  # a source tree used without `pip install -e .`
    __version__ = "0+unknown"
