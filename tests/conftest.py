"""Shared test helpers. Tests that need ../shared skip with a reason where it is absent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
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


def serve_with_config(tmp_path, monkeypatch, text: str, *extra: str) -> int:
    """``pi-table serve --config`` with ``text`` as the file, never binding a socket or loading models."""
    import pi_table.outputs.web as web
    import pi_table.vision as vision
    from pi_table.cli import main

    monkeypatch.setattr(web, "listen", lambda service, host, port: object())
    monkeypatch.setattr(web, "check_address", lambda host, port: None)
    monkeypatch.setattr(web, "serve_forever", lambda service, server, host: None)
    monkeypatch.setattr(vision, "DiceReader", lambda threads=1: FakeReader(d6_reading(3)))
    monkeypatch.delenv("PI_TABLE_PIN", raising=False)
    (tmp_path / "c.toml").write_text(text)
    try:
        return main(["serve", "--config", str(tmp_path / "c.toml"), "--state-dir", str(tmp_path / "state"),
                     "--source", "demo", *extra])
    except SystemExit as exc:
        return exc.code


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


def pip_radius(n: int, side: int) -> int:
    """Pip radius in pixels on a die ``side`` pixels across: a sixth of the side across, about as
    on matteop65's dice (their outline, sides included, is 7.6 times a one's pip)."""
    return side // 12


def drawn_die_scene(pips, die=(60, 50, 130, 120), size=200, seed=0):
    """A light wooden-ish desk with one white die (its box ``die``) whose pips are at ``pips``
    (centres in die sides, 0..1), shaded a little darker towards its lower edge."""
    import cv2

    rng = np.random.default_rng(seed)
    image = np.empty((size, size, 3), np.uint8)
    image[:] = (150, 185, 205)
    image = np.clip(image + rng.normal(0, 6, image.shape), 0, 255).astype(np.uint8)
    x0, y0, x1, y1 = die
    image[y0:y1, x0:x1] = np.linspace(248, 225, y1 - y0)[:, None, None]
    side = x1 - x0
    r = pip_radius(len(pips), side)
    for px, py in pips:
        cv2.circle(image, (int(x0 + px * side), int(y0 + py * side)), r, (20, 20, 20), -1)
    return image
