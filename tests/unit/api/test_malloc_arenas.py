"""The server caps glibc's malloc arenas unless the operator already chose a number."""

from __future__ import annotations

import ctypes.util

import pytest

from api.main import cap_malloc_arenas


def test_an_operator_setting_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert cap_malloc_arenas() is False


@pytest.mark.skipif(ctypes.util.find_library("c") != "libc.so.6", reason="glibc only")
def test_glibc_accepts_the_cap(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert cap_malloc_arenas() is True
