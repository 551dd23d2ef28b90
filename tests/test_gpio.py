"""GPIO panel on gpiozero's mock pins."""

from __future__ import annotations

import time

import pytest

from pi_table.outputs.gpio import Panel, PinConfig
from tests.conftest import serve_with_config


def test_bars_show_token_counts(mock_pins):
    panel = Panel(PinConfig())
    panel.show_tokens(tension=3, omens=7)
    assert panel.lit()["tension"] == 3
    assert panel.lit()["omens"] == 5  # capped at the bar's five LEDs
    assert mock_pins.pin(17).state and mock_pins.pin(22).state and not mock_pins.pin(23).state
    panel.show_tokens(0, 0)
    assert panel.lit()["tension"] == 0
    panel.close()


def test_buttons_call_the_gm_actions(mock_pins):
    """Spend acts on a press; new scene (it wipes the GM's omens) only when held for hold_s."""
    pressed = []
    panel = Panel(PinConfig(hold_s=0.2), on_spend=lambda: pressed.append("spend"),
                  on_scene=lambda: pressed.append("scene"))
    mock_pins.pin(16).drive_low()  # button to ground, internal pull-up
    mock_pins.pin(16).drive_high()
    mock_pins.pin(20).drive_low()  # a bump on new scene: let go before hold_s
    mock_pins.pin(20).drive_high()
    time.sleep(0.5)
    assert pressed == ["spend"]
    mock_pins.pin(20).drive_low()  # held
    deadline = time.monotonic() + 3
    while len(pressed) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    mock_pins.pin(20).drive_high()
    assert pressed == ["spend", "scene"]
    panel.close()


def test_status_led(mock_pins):
    panel = Panel(PinConfig())
    panel.show_status("ready")
    assert mock_pins.pin(12).state
    panel.show_status("off")
    assert not mock_pins.pin(12).state
    with pytest.raises(ValueError, match="blinking"):
        panel.show_status("blinking")
    panel.close()


def test_a_pin_that_fails_to_open_leaves_the_rest_working(mock_pins):
    from gpiozero import LED

    squatter = LED(12)  # the status pin is taken
    panel = Panel(PinConfig())
    assert panel.status_led is None and panel.problems
    panel.show_status("ready")  # no error
    panel.show_tokens(2, 0)
    assert panel.lit()["tension"] == 2
    panel.close()
    squatter.close()


def test_pin_config_validation():
    with pytest.raises(ValueError, match="status = 40"):
        PinConfig(status=40)
    with pytest.raises(ValueError, match="used twice"):
        PinConfig(status=17)
    with pytest.raises(ValueError, match="unknown pin setting 'leds'"):
        PinConfig.from_dict({"leds": [1]})
    assert PinConfig.from_dict({"tension": [2, 3, 4]}).tension == (2, 3, 4)
    for bad in ({"hold_s": 0}, {"hold_s": "1"}, {"hold_s": True}, {"bounce_s": -0.1}, {"bounce_s": 5}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be .*got {next(iter(bad.values()))!r}"):
            PinConfig.from_dict(bad)


def test_a_pi_whose_pins_do_not_open_says_why(monkeypatch, caplog, tmp_path):
    """On a Pi, falling back to mock pins names the board and gpiozero's reasons (lgpio could not
    make its pipes in a read-only working directory: gpiozero issue #1106), not "no GPIO pins"."""
    from gpiozero import Device

    from pi_table.outputs import gpio

    model = tmp_path / "model"
    model.write_bytes(b"Raspberry Pi 5 Model B Rev 1.0\0")
    assert gpio.pi_model(str(model)) == "Raspberry Pi 5 Model B Rev 1.0"
    (tmp_path / "other").write_bytes(b"Generic x86 board\0")
    assert gpio.pi_model(str(tmp_path / "other")) is None and gpio.pi_model(str(tmp_path / "none")) is None

    monkeypatch.setattr(gpio, "pi_model", lambda: "Raspberry Pi 5 Model B Rev 1.0")
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    old = Device.pin_factory
    Device.pin_factory = None
    try:
        with caplog.at_level("WARNING"):
            factory, mock = gpio.pin_factory()
    finally:
        Device.pin_factory.close()
        Device.pin_factory = old
    assert mock
    said = [r.getMessage() for r in caplog.records]
    assert any("this is a Raspberry Pi 5 Model B" in m and "did not open (" in m for m in said), said
    assert not any("no GPIO pins on this machine" in m for m in said)


def test_mock_pins_asked_for_by_gpiozero_pin_factory_are_said_to_be_mock(monkeypatch):
    """GPIOZERO_PIN_FACTORY=mock (gpiozero's own setting) gives mock pins, and the GM page's
    session says so ("mock_pins"); it said false."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    from pi_table.outputs import gpio

    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    old = Device.pin_factory
    Device.pin_factory = None
    try:
        factory, mock = gpio.pin_factory()
    finally:
        if Device.pin_factory is not None:
            Device.pin_factory.close()
        Device.pin_factory = old
    assert isinstance(factory, MockFactory) and mock


@pytest.mark.parametrize("text, needle", [
    ("tension = 17", "pins tension must be a list of one or more BCM pin numbers like [17, 27, 22], got 17"),
    ("omens = []", "pins omens must be a list of one or more BCM pin numbers like [17, 27, 22], got []"),
    ("omens = [5, 6, 13, 19, 26, 5]", "pins omens[5] = 5: GPIO 5 is already omens[0] (a pin used twice)"),
    ("status = 17", "pins status = 17: GPIO 17 is already tension[0] (a pin used twice)"),
    ("spend = '16'", "pins spend = '16' is not a BCM GPIO number"),
    ("reread = [21]", "pins reread = [21] is not a BCM GPIO number"),
    ("tension = [17, 27, 40]", "pins tension[2] = 40 is not a BCM GPIO number"),
])
def test_a_bad_pins_table_is_one_line_naming_the_key_and_nothing_starts(tmp_path, monkeypatch, capsys, mock_pins,
                                                                         text, needle):
    """A [pins] value of the wrong type or shape (a bar given as one pin was a traceback; an empty
    bar started with that bar left out) or a pin used twice: exit 2, one line naming the key and
    the value, and no state directory made."""
    assert serve_with_config(tmp_path, monkeypatch, "[pins]\n" + text + "\n") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("text, needle", [
    ("status = 0", "pins status = 0 is not a BCM GPIO number 2..27 (0 and 1 are kept for a HAT's ID EEPROM)"),
    ("tension = [1, 27, 22, 23, 24]", "pins tension[0] = 1 is not a BCM GPIO number 2..27"),
    ("scene = 28", "pins scene = 28 is not a BCM GPIO number 2..27"),
    ("spend = -1", "pins spend = -1 is not a BCM GPIO number 2..27"),
])
def test_the_id_eeprom_pins_and_pins_off_the_header_are_refused(tmp_path, monkeypatch, capsys, mock_pins, text, needle):
    """BCM 0 and 1 (header pins 27 and 28) are the HAT ID EEPROM's I2C bus, kept for it by the
    firmware (they were accepted and the kit started); only 2..27 are on the header for the panel."""
    assert serve_with_config(tmp_path, monkeypatch, "[pins]\n" + text + "\n") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "state").exists()
    assert PinConfig(status=2).status == 2


def test_the_reread_button_reads_the_tray_now_and_never_records_a_roll_twice(tmp_path, mock_pins):
    """The re-read button read the last roll's frame again and recorded it as a second roll, its
    effects added again (charge 6,6,3: momentum 3, then 6 after one press). Now it reads the tray
    as it is: the same dice where they lay are no new roll; dice the kit had not recorded are."""
    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.service import Service, Settings
    from tests.conftest import FakeReader, d6_reading

    first, missed = d6_reading(6, 6, 3), d6_reading(5, 2)
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="charge"),
                      reader=FakeReader(first, first, missed))
    frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=1.0, index=1, name="cam#1")
    assert service.handle(SettledRoll(frame, 0.8, 0.01), new_only=True).outcome == "critical"
    assert service.table.tokens.momentum == 3

    def press_reread() -> None:
        mock_pins.pin(21).drive_low()
        mock_pins.pin(21).drive_high()

    press_reread()  # the roll still in the tray
    assert len(service.table.rolls(10)) == 1 and service.table.tokens.momentum == 3
    press_reread()  # dice the settler did not catch
    rolls = service.table.rolls(10)
    assert len(rolls) == 2 and rolls[0].outcome == "partial" and service.table.tokens.momentum == 3 + 1
    assert service.panel.status == "ready"
    service.close()


def test_a_button_whose_action_fails_raises_nothing_and_the_others_keep_working(tmp_path, mock_pins):
    """A re-read whose read fails (the camera gone, the model) raised out of the button's callback,
    into the pin factory's thread that serves every button, and left the status LED blinking
    "reading"; now it is logged, the LEDs show the table as it is and the next press works."""
    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.service import Service, Settings
    from tests.conftest import FakeReader, d6_reading

    class FailsAfterTheFirst(FakeReader):
        def read(self, image, name="", kinds=None):
            if self.calls:
                raise RuntimeError("the model failed")
            return super().read(image, name, kinds)

    service = Service(Settings(state_dir=tmp_path, pin="1357", system="contingency-action"),
                      reader=FailsAfterTheFirst(d6_reading(3)))
    service.add_tension(2)
    frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=1.0, index=1, name="cam#1")
    service.handle(SettledRoll(frame, 0.8, 0.01), new_only=True)
    mock_pins.pin(21).drive_low()  # re-read: its read fails
    mock_pins.pin(21).drive_high()
    assert service.panel.status == "ready"
    mock_pins.pin(16).drive_low()  # spend a tension token
    mock_pins.pin(16).drive_high()
    assert service.table.tokens.tension == 1 and service.panel.lit()["tension"] == 1
    service.close()


def test_a_count_above_the_bar_lights_it_all_with_its_last_led_blinking(mock_pins):
    """Seven tension tokens on five LEDs showed exactly as five; now the whole bar is lit and its
    last LED blinks while the count is more than the bar holds, and a count back within it is
    steady again. Zero and below light nothing."""
    panel = Panel(PinConfig())
    panel.show_tokens(tension=7, omens=5)
    assert panel.lit()["tension"] == 5 and panel.lit()["tension_over"]
    assert panel.lit()["omens"] == 5 and not panel.lit()["omens_over"]
    assert all(mock_pins.pin(p).state for p in (17, 27, 22, 23))
    seen = set()
    deadline = time.monotonic() + 2
    while len(seen) < 2 and time.monotonic() < deadline:
        seen.add(bool(mock_pins.pin(24).state))  # the fifth tension LED
        time.sleep(0.02)
    assert seen == {True, False}
    assert all(mock_pins.pin(p).state for p in (5, 6, 13, 19, 26))  # five omens: steady, nothing blinks
    panel.show_tokens(tension=4, omens=0)
    time.sleep(2 * Panel.OVER_BLINK_S)
    assert panel.lit() == {"tension": 4, "omens": 0, "tension_over": False, "omens_over": False, "status": "ready"}
    assert not mock_pins.pin(24).state and mock_pins.pin(23).state
    panel.show_tokens(tension=-3, omens=0)
    assert panel.lit()["tension"] == 0
    panel.close()


def test_the_status_led_keeps_a_re_roll_and_a_read_under_way(tmp_path, mock_pins):
    """A roll with a cocked die sets "re-roll needed"; a shadow or hand over those same dice (no new
    roll) set it back to "ready" while the cocked die still lay there. A token spent by button while
    a roll is being read set "ready" in the middle of the read. Both now keep the status."""
    import threading

    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.service import Service, Settings
    from tests.conftest import FakeReader, d6_reading

    cocked = d6_reading(6, 3)
    cocked = replace_status(cocked, 1, "cocked")
    reading_now, go_on = threading.Event(), threading.Event()

    class Reader(FakeReader):
        def read(self, image, name="", kinds=None):
            if self.calls == 2:  # the third read: wait, as a slow read does
                reading_now.set()
                go_on.wait(5)
            return super().read(image, name, kinds)

    service = Service(Settings(state_dir=tmp_path, pin="1357", system="charge"),
                      reader=Reader(cocked, cocked, d6_reading(5, 2)))
    service.add_tension(1)

    def settled(i: int) -> SettledRoll:
        frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=float(i), index=i, name=f"cam#{i}")
        return SettledRoll(frame, 0.8, 0.01)

    assert service.handle(settled(1), new_only=True).outcome == "reroll"
    assert service.panel.status == "reroll"
    assert service.handle(settled(2), new_only=True) is None  # a shadow over the same dice
    assert service.panel.status == "reroll"
    worker = threading.Thread(target=service.handle, args=(settled(3), True))
    worker.start()
    assert reading_now.wait(5)
    mock_pins.pin(16).drive_low()  # spend a tension token mid-read
    mock_pins.pin(16).drive_high()
    assert service.table.tokens.tension == 0 and service.panel.status == "reading"
    go_on.set()
    worker.join(5)
    assert service.panel.status == "ready" and len(service.table.rolls(10)) == 2
    service.close()


def replace_status(reading, index: int, status: str):
    """``reading`` with die ``index`` given ``status`` (its face kept)."""
    from dataclasses import replace

    dice = list(reading.dice)
    dice[index] = replace(dice[index], status=status)
    return replace(reading, dice=tuple(dice))


# BCM GPIO number -> physical header pin on the 40-pin header (Pi 4 and Pi 5 alike)
HEADER = {2: 3, 3: 5, 4: 7, 5: 29, 6: 31, 7: 26, 8: 24, 9: 21, 10: 19, 11: 23, 12: 32, 13: 33, 14: 8, 15: 10,
          16: 36, 17: 11, 18: 12, 19: 35, 20: 38, 21: 40, 22: 15, 23: 16, 24: 18, 25: 22, 26: 37, 27: 13}


def test_hardware_md_wiring_agrees_with_the_defaults():
    """hardware.md's wiring table (BCM pin, header pin, what) and its [pins] example are the code's
    defaults, and its ground pins are ground pins."""
    import re
    import tomllib

    from tests.conftest import REPO

    text = (REPO / "hardware.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\d+) \| ([^|]+) \|", text, re.M)
    roles = {"tension token LED": "tension", "GM omen / momentum LED": "omens", "status LED": "status",
             "button: spend a tension token": "spend", "button: new scene": "scene", "button: re-read": "reread"}
    found: dict[str, list[int]] = {}
    for bcm, header, what in rows:
        assert HEADER[int(bcm)] == int(header), (bcm, header)
        role = next(r for prefix, r in roles.items() if what.startswith(prefix))
        found.setdefault(role, []).append(int(bcm))
    defaults = PinConfig()
    for role in ("tension", "omens"):
        assert tuple(found[role]) == getattr(defaults, role)
    for role in ("status", "spend", "scene", "reread"):
        assert found[role] == [getattr(defaults, role)]
    ground = re.search(r"^\| GND \| ([\d, ]+) \|", text, re.M).group(1)
    assert {int(p) for p in ground.split(",")} == {6, 9, 14, 20, 25, 30, 34, 39}
    example = re.search(r"```toml\n(\[pins\].*?)```", text, re.S).group(1)
    assert PinConfig.from_dict(tomllib.loads(example)["pins"]) == defaults
    assert f"hold it {defaults.hold_s:g} s" in text
