"""The MiniLM models (embedder, relevance and support models) run with ONNX Runtime at query time.

The torch modules of ``indexes/dense/minilm.py`` are the models as trained; each is exported to ONNX
once per set of weights (the file is named by their sha256) into the cache folder, and every
later process that scores a question does so with ONNX Runtime and never imports torch (about
2.4 s and 140 MiB here; ``docs/benchmarks.md``, "First run and per-question time"). Outputs
agree with torch to float32 rounding (``tests/e2e/test_onnx_models.py``, ``medcite bench
onnx-runtime``). Index builds embed with torch: about 8% faster than ONNX Runtime's float model
here, and with bfloat16 products (the default where the CPU has them) 2.2x; the embedder also
comes with int8 weights (:func:`quantized`, ``--embedder-precision int8``): 2.9x the float rate,
the same recall, but other answers for 2.7% of dev questions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ModelError, require
from core.paths import Paths

# Bumped when the exported graph changes for the same weights, so an old file is not reused.
EXPORT_VERSION = 1
QUANT_VERSION = 1  # bumped when the int8 recipe changes
INPUTS = ("ids", "types", "mask")

Encoded = Sequence[tuple[list[int], list[int]]]  # (wordpiece ids, token type ids) per text


def onnx_dir() -> Path:
    """Where exported models are kept: derived from the weights, safe to delete."""
    return Paths.from_env().cache_dir / "onnx"


class OnnxModel:
    """One exported model's session: ``model(ids, types, mask)`` -> its float32 output rows."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        ort = require("onnxruntime", package="onnxruntime", extra="dense")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0: ONNX Runtime's choice (the physical cores)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initialisers are not the user's concern
        try:
            self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types, not OSError
            raise ModelError(f"cannot load {path} ({exc}); delete it and it is exported again") from exc
        self.path = path

    def __call__(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"ids": ids, "types": types, "mask": mask}
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)


def exported(name: str, key: str, build: Callable[[], Any], threads: int | None = None) -> OnnxModel:
    """The session of model ``name`` with weights ``key`` (a sha256), exported first if needed.

    ``build`` returns the torch module (inputs ids, types, mask; one output); it is called, and
    torch imported, only when the file is missing. The file is written under a temporary name and
    renamed, so an interrupted export leaves nothing half-written behind.
    """
    path = onnx_dir() / f"{name}-{key[:16]}-v{EXPORT_VERSION}.onnx"
    if not path.is_file():
        export(build(), path)
    return OnnxModel(path, threads)


def quantized(name: str, key: str, build: Callable[[], Any], threads: int | None = None) -> OnnxModel:
    """Model ``name`` with int8 weights, one scale per output channel (ONNX Runtime's dynamic
    quantisation of the exported float file; activations are quantised per batch as it runs).
    Per-tensor scales lost too much here (cosine to the float vectors: median 0.936, against 0.992)."""
    path = onnx_dir() / f"{name}-{key[:16]}-v{EXPORT_VERSION}-int8q{QUANT_VERSION}.onnx"
    if not path.is_file():
        source = exported(name, key, build, threads).path
        quantization = require("onnxruntime.quantization", package="onnxruntime", extra="dense")
        with _written(path) as tmp, _quiet_logging():
            quantization.quantize_dynamic(
                source, tmp, weight_type=quantization.QuantType.QInt8, per_channel=True
            )
    return OnnxModel(path, threads)


@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    """The quantiser's advice to pre-process the model (a warning on the root logger) is not the
    user's concern."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


@contextlib.contextmanager
def _written(path: Path) -> Iterator[str]:
    """A temporary file beside ``path``, renamed to it when the block succeeds (removed if not),
    so an interrupted export leaves nothing half-written behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from the other users of a shared data folder
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def export(module: Any, path: Path) -> None:
    """Write ``module`` as ONNX with dynamic batch and length (torch's TorchScript exporter)."""
    torch = require("torch", package="torch", extra="dense")
    require("onnx", package="onnx", extra="dense")
    sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in INPUTS)
    axes = {name: {0: "batch", 1: "length"} for name in INPUTS}
    # the exporter warns that it is deprecated for one that needs onnxscript: not the user's concern
    with _written(path) as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            sample,
            tmp,
            input_names=list(INPUTS),
            output_names=["out"],
            dynamic_axes={**axes, "out": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def padded(encoded: Encoded) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-padded int64 ``(ids, type_ids, mask)`` arrays for one batch of encoded texts."""
    width = max(len(ids) for ids, _ in encoded)
    ids = np.zeros((len(encoded), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, (token_ids, type_ids) in enumerate(encoded):
        ids[row, : len(token_ids)] = token_ids
        types[row, : len(type_ids)] = type_ids
        mask[row, : len(token_ids)] = 1
    return ids, types, mask


def score_encoded(model: Callable[..., np.ndarray], encoded: Encoded, batch_size: int) -> np.ndarray:
    """``model``'s output for each encoded text or pair (input order), in length-sorted batches
    (less padding): a float64 vector for one logit per row, else float32 rows."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    out: np.ndarray | None = None
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = model(*padded([encoded[i] for i in rows]))
        if out is None:
            out = np.zeros(
                (len(encoded), *batch.shape[1:]), dtype=np.float64 if batch.ndim == 1 else np.float32
            )
        out[rows] = batch
    if out is None:
        raise ModelError("nothing to score")
    return out
