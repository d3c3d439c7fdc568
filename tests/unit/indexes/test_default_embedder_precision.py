"""Index builds embed with bfloat16 products only where the CPU has bfloat16 dot products."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexes.dense.params import default_embedder_precision

BASE = "flags\t\t: fpu sse2 avx2 avx512f avx512bw"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (f"{BASE} avx512_bf16 avx512_vnni", "bfloat16"),  # AMD Zen 4, Intel Cooper Lake
        (f"{BASE} amx_bf16 amx_tile", "bfloat16"),  # Intel Sapphire Rapids
        (BASE, "float32"),  # AVX-512 without bfloat16: torch would emulate it
        ("flags\t\t: fp asimd", "float32"),
    ],
)
def test_the_cpu_flags_choose_the_precision(tmp_path: Path, flags: str, expected: str) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\n{flags}\n\nprocessor\t: 1\n{flags}\n")
    assert default_embedder_precision(cpuinfo) == expected


def test_no_cpuinfo_means_float32(tmp_path: Path) -> None:
    assert default_embedder_precision(tmp_path / "missing") == "float32"
