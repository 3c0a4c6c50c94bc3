"""The families' calibration tables (gemmc/families/<family>/calibration.py): every entry says why it holds and
cites results files that exist, and every entry is read by its family's code."""

from __future__ import annotations

import re

import pytest

from gemmc.families.calibration import Measured, load
from gemmc.families.registry import NAMES
from tests.conftest import ROOT

ENTRIES = [(family, name, entry) for family in NAMES for name, entry in load(family).items()]
IDS = [f"{family}.{name}" for family, name, _ in ENTRIES]


@pytest.mark.parametrize("family", NAMES)
def test_every_family_has_a_calibration_table(family):
    assert load(family), f"gemmc/families/{family}/calibration.py holds no Measured entry"


@pytest.mark.parametrize(("family", "name", "entry"), ENTRIES, ids=IDS)
def test_entry_cites_results_files_that_exist(family, name, entry: Measured):
    assert entry.sources, f"{family}.{name} cites no results file"
    for source in entry.sources:
        assert source.startswith("bench/results/"), f"{family}.{name}: {source} is not in bench/results/"
        assert (ROOT / source).is_file(), f"{family}.{name} cites {source}, which does not exist"


@pytest.mark.parametrize(("family", "name", "entry"), ENTRIES, ids=IDS)
def test_entry_says_why_it_holds_and_where(family, name, entry: Measured):
    assert entry.why.strip(), f"{family}.{name} has no reason"
    assert entry.gpu.strip(), f"{family}.{name} names no GPU"
    # A reason is the mechanism and the measurement, not the story of how it was found (git keeps that).
    history = re.search(r"\bstop[ -]?\d+\b|\bround \d|\brun \d+\b|\bv\d\b|\bsince (stop|run|v\d)", entry.why, re.I)
    assert history is None, f"{family}.{name}'s reason tells history: {history.group(0)!r}"


@pytest.mark.parametrize(("family", "name", "entry"), ENTRIES, ids=IDS)
def test_entry_is_read_by_its_family(family, name, entry: Measured):
    package = ROOT / "gemmc" / "families" / family
    code = "".join(p.read_text() for p in package.glob("*.py") if p.name != "calibration.py")
    assert f"cal.{name}" in code, f"{family}.{name} is in the table but no module of the family reads it"
