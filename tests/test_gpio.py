"""GPIO panel on gpiozero's mock pins."""

from __future__ import annotations

import time

import pytest

from pi_table.outputs.gpio import Panel, PinConfig


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
    pressed = []
    panel = Panel(PinConfig(), on_spend=lambda: pressed.append("spend"), on_scene=lambda: pressed.append("scene"))
    mock_pins.pin(16).drive_low()  # button to ground, internal pull-up
    mock_pins.pin(16).drive_high()
    mock_pins.pin(20).drive_low()
    deadline = time.monotonic() + 2
    while len(pressed) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
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
    with pytest.raises(ValueError, match="pin 40"):
        PinConfig(status=40)
    with pytest.raises(ValueError, match="used twice"):
        PinConfig(status=17)
    with pytest.raises(ValueError, match="unknown pin setting 'leds'"):
        PinConfig.from_dict({"leds": [1]})
    assert PinConfig.from_dict({"tension": [2, 3, 4]}).tension == (2, 3, 4)
