"""Shared test helpers. Tests that need ../shared skip with a reason where it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_table.vision.dice import Die, Reading

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REAL = SHARED / "data" / "real"


def need_shared() -> Path:
    """The real-photo folder, or skip the test when ../shared is not beside the repo."""
    if not REAL.is_dir():
        pytest.skip("../shared/data/real is not beside this clone (a user's fresh clone has none)")
    return REAL


def d6_reading(*values: int, status: str = "ok", name: str = "test.jpg") -> Reading:
    """A Reading of d6 dice with the given faces, boxes in a row."""
    dice = tuple(
        Die("d6", str(v) if status == "ok" else "", v if status == "ok" else 0, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, status)
        for i, v in enumerate(values)
    )
    return Reading(image=name, width=640, height=640, ms=1.0, dice=dice)


class FakeReader:
    """Stands in for DiceReader in stage tests: returns the readings it is given, in turn."""

    def __init__(self, *readings: Reading):
        self.readings = list(readings)
        self.calls = 0

    def read(self, image, name: str = "", kinds=None) -> Reading:
        self.calls += 1
        reading = self.readings[min(self.calls - 1, len(self.readings) - 1)]
        return Reading(name or reading.image, image.shape[1], image.shape[0], reading.ms, reading.dice)


@pytest.fixture
def mock_pins():
    """gpiozero's MockFactory as the pin factory for the test, reset afterwards."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    yield Device.pin_factory
    Device.pin_factory.reset()
    Device.pin_factory = old
