"""medcite's ground floor: the words every package speaks, imported by all and importing none.

``types`` (Document, Provenance, Chunk, Hit, Citation, Answer, ...), ``errors`` (MedciteError and the
subclasses whose messages say what to do next), ``paths`` (where data, sources and models live),
``packages`` (files shipped inside installed registry packages), ``registry`` (the one place
where configuration strings become classes, as ``"module:attribute"`` strings, so it imports
nothing above it) and ``__version__``. Nothing here imports another project package.
"""

from importlib.metadata import PackageNotFoundError, version

try:  # the one version source is pyproject.toml, read from the installed package's metadata
    __version__ = version("medcite")
except PackageNotFoundError:  # a source tree used without `pip install -e .`
    __version__ = "0+unknown"
