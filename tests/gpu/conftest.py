"""GPU tests check the plans the model makes: the tuning step (gemmc.runtime.tune) is off unless a test turns it
on, and its disk cache is a fresh folder per test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMMC_TUNE", "0")
    monkeypatch.setenv("GEMMC_CACHE_DIR", str(tmp_path / "gemmc-cache"))
