"""LEDs and buttons on the Pi's GPIO header, through gpiozero.

Default wiring (BCM numbers, see hardware.md): tension-token bar on 17, 27, 22, 23, 24;
GM omen / momentum bar on 5, 6, 13, 19, 26; status LED on 12; buttons (to ground, internal
pull-up) spend-a-tension-token 16, new scene 20 (held hold_s), re-read the tray 21.

Off a Pi (no pin factory loads) the panel runs on gpiozero's MockFactory and says so once,
so the kit and its tests run on any machine.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PinConfig:
    """BCM pin numbers of the panel, ``hold_s`` (seconds the new-scene button is held before it acts:
    it sets the GM's omens to 0, so a bump must not) and ``bounce_s`` (debounce, seconds).
    Raises ValueError naming the key and the value: a bar that is not a list of pins, a pin that is
    not a BCM GPIO number 2..27 (0 and 1 belong to a HAT's ID EEPROM), a pin used twice, or
    hold_s / bounce_s out of range."""

    tension: tuple[int, ...] = (17, 27, 22, 23, 24)
    omens: tuple[int, ...] = (5, 6, 13, 19, 26)
    status: int = 12
    spend: int = 16
    scene: int = 20
    reread: int = 21
    hold_s: float = 1.0
    bounce_s: float = 0.05

    def __post_init__(self) -> None:
        where: dict[int, str] = {}  # pin -> the first key that uses it
        for key in ("tension", "omens", "status", "spend", "scene", "reread"):
            value = getattr(self, key)
            if key in BARS:
                if not isinstance(value, (tuple, list)) or not value:
                    raise ValueError(f"pins {key} must be a list of one or more BCM pin numbers like "
                                     f"[17, 27, 22], got {list(value) if isinstance(value, tuple) else value!r}")
                named = [(f"{key}[{i}]", pin) for i, pin in enumerate(value)]
            else:
                named = [(key, value)]
            for name, pin in named:
                if not isinstance(pin, int) or isinstance(pin, bool) or not 2 <= pin <= 27:
                    raise ValueError(f"pins {name} = {pin!r} is not a BCM GPIO number 2..27 "
                                     "(0 and 1 are kept for a HAT's ID EEPROM)")
                if pin in where:
                    raise ValueError(f"pins {name} = {pin}: GPIO {pin} is already {where[pin]} (a pin used twice)")
                where[pin] = name
        for key, lo, hi in (("hold_s", 0.1, 10.0), ("bounce_s", 0.0, 1.0)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
                raise ValueError(f"pins {key} must be {lo}..{hi} seconds, got {value!r}")

    @classmethod
    def from_dict(cls, data: dict) -> "PinConfig":
        """Build from a config file's ``[pins]`` table; unknown keys, and values of the wrong type
        or range, are a ValueError naming the key and the value."""
        known = set(cls.__dataclass_fields__)
        for key in data:
            if key not in known:
                raise ValueError(f"unknown pin setting {key!r} (expected one of {', '.join(sorted(known))})")
        values = {k: (tuple(v) if k in BARS and isinstance(v, list) else v) for k, v in data.items()}
        return cls(**values)


BARS = ("tension", "omens")  # the PinConfig keys that hold a list of pins, one LED each


def pi_model(path: str = "/proc/device-tree/model") -> str | None:
    """The board's model (e.g. "Raspberry Pi 5 Model B Rev 1.0") when it is a Raspberry Pi, else None."""
    try:
        model = Path(path).read_bytes().rstrip(b"\0").decode(errors="replace").strip()
    except OSError:
        return None
    return model if model.startswith("Raspberry Pi") else None


def pin_factory():
    """The real pin factory on a Pi, else a MockFactory. Returns (factory, is_mock)."""
    from gpiozero import Device
    from gpiozero.exc import BadPinFactory
    from gpiozero.pins.mock import MockFactory

    if Device.pin_factory is not None:
        return Device.pin_factory, isinstance(Device.pin_factory, MockFactory)
    with warnings.catch_warnings(record=True) as fallbacks:
        warnings.simplefilter("always")
        try:
            Device.ensure_pin_factory()  # sets Device.pin_factory (GPIOZERO_PIN_FACTORY=mock: mock pins too)
            return Device.pin_factory, isinstance(Device.pin_factory, MockFactory)
        except BadPinFactory:
            pass
    model = pi_model()
    if model:  # a Pi whose pins did not open: say why, it is not "no pins"
        reasons = "; ".join(str(w.message) for w in fallbacks) or "no pin factory could be loaded"
        log.warning("this is a %s but its GPIO pins did not open (%s): is python3-lgpio installed and the venv made "
                    "with --system-site-packages, and may the user write the working directory? (README)", model, reasons)
    else:
        log.warning("no GPIO pins on this machine: LEDs and buttons run on mock pins")
    Device.pin_factory = MockFactory()
    return Device.pin_factory, True


@dataclass
class Panel:
    """The GM's panel: two LED bars, a status LED and three buttons.

    Args:
        pins: the wiring.
        on_spend, on_scene, on_reread: called (no arguments) when a button is pressed.
        factory: a gpiozero pin factory; None picks the Pi's, or mock pins off a Pi.

    A pin that fails to open is logged once and that part of the panel is left out;
    the rest keeps working.
    """

    pins: PinConfig = field(default_factory=PinConfig)
    on_spend: Callable[[], None] | None = None
    on_scene: Callable[[], None] | None = None
    on_reread: Callable[[], None] | None = None
    factory: object = None

    def __post_init__(self) -> None:
        from gpiozero import Button, LED, LEDBarGraph

        self.mock = False
        if self.factory is None:
            self.factory, self.mock = pin_factory()  # which says so when it falls back to mock pins
        self.problems: list[str] = []
        self.over = {"tension": False, "omens": False}  # a bar's count is more than it has LEDs
        self.tension_bar = self._open(LEDBarGraph, *self.pins.tension, pin_factory=self.factory)
        self.omen_bar = self._open(LEDBarGraph, *self.pins.omens, pin_factory=self.factory)
        self.status_led = self._open(LED, self.pins.status, pin_factory=self.factory)
        self.buttons = {}
        for name, pin, callback in (("spend", self.pins.spend, self.on_spend), ("scene", self.pins.scene, self.on_scene),
                                    ("reread", self.pins.reread, self.on_reread)):
            button = self._open(Button, pin, bounce_time=self.pins.bounce_s, hold_time=self.pins.hold_s, pin_factory=self.factory)
            if button is not None and callback is not None:
                if name == "scene":  # it wipes the GM's omens: held for hold_s, so a bump does not
                    button.when_held = lambda _b=None, cb=callback: cb()
                else:
                    button.when_pressed = lambda _b=None, cb=callback: cb()
            self.buttons[name] = button
        self.status = "ready"

    def _open(self, cls, *args, **kwargs):
        try:
            return cls(*args, **kwargs)
        except Exception as exc:  # gpiozero raises many kinds: pin in use, no access...
            message = f"GPIO {cls.__name__} on pin(s) {args} failed to open: {exc}"
            log.warning(message)
            self.problems.append(message)
            return None

    OVER_BLINK_S = 0.3  # on and off time of a bar's last LED while its count is more than the bar holds

    def _show_bar(self, name: str, bar, count: int) -> None:
        if bar is None:
            return
        leds = len(bar)
        bar.value = min(max(count, 0), leds) / leds  # setting a value stops any blink
        self.over[name] = count > leds
        if self.over[name]:
            bar[-1].blink(on_time=self.OVER_BLINK_S, off_time=self.OVER_BLINK_S, background=True)

    def show_tokens(self, tension: int, omens: int) -> None:
        """Light ``tension`` LEDs on the first bar and ``omens`` on the second (0 or less: none).
        A count above the bar's length lights the whole bar with its last LED blinking, so that
        "more than five" is not taken for five (the GM page shows the count)."""
        self._show_bar("tension", self.tension_bar, tension)
        self._show_bar("omens", self.omen_bar, omens)

    def show_status(self, status: str) -> None:
        """``ready`` steady on, ``reading`` slow blink, ``reroll`` fast blink, ``lost`` (the camera
        is gone; the kit waits for it) a short flash every 2 s, ``off``. ValueError otherwise."""
        if status not in ("ready", "reading", "reroll", "lost", "off"):
            raise ValueError(f"unknown status {status!r}")
        self.status = status
        led = self.status_led
        if led is None:
            return
        if status == "ready":
            led.on()
        elif status == "off":
            led.off()
        elif status == "lost":
            led.blink(on_time=0.1, off_time=1.9, background=True)
        else:
            period = 0.5 if status == "reading" else 0.1
            led.blink(on_time=period, off_time=period, background=True)

    def lit(self) -> dict:
        """How many LEDs of each bar are lit (a blinking last LED counts as lit), whether each bar
        shows more than it holds (``tension_over``, ``omens_over``: its last LED blinking) and the
        status, for tests and the GM page."""
        def count(name, bar):
            if bar is None:
                return 0
            leds = list(bar)
            return sum(1 for led in leds[:-1] if led.is_lit) + (1 if self.over[name] or leds[-1].is_lit else 0)
        return {"tension": count("tension", self.tension_bar), "omens": count("omens", self.omen_bar),
                "tension_over": self.over["tension"], "omens_over": self.over["omens"], "status": self.status}

    def close(self) -> None:
        for device in (self.tension_bar, self.omen_bar, self.status_led, *self.buttons.values()):
            if device is not None:
                try:
                    device.close()
                except Exception:
                    pass
