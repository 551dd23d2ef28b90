"""Table stage: rolls resolved under the system, tokens, undo, and durability."""

from __future__ import annotations

import os
import re
from dataclasses import replace
import stat

import pytest

from pi_table.table import Table
from pi_table.vision.dice import Die, Reading
from tests.conftest import d6_reading


def test_roll_is_resolved_and_recorded(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(6, 6, 3))
    assert roll.outcome == "critical"
    assert roll.result["system"] == "charge" and roll.why
    assert table.tokens.momentum == 3  # seed 004: a critical that spent no momentum gains 3
    assert table.state().last_roll.id == roll.id
    assert table.rolls(10)[0].reading.dice[0].face == "6"


def test_unreadable_die_asks_for_a_reroll_and_changes_nothing(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(4, status="unreadable"))
    assert roll.outcome == "reroll" and "re-roll" in roll.why[0]
    assert table.tokens.momentum == 0


def test_dice_that_do_not_fit_the_system_are_invalid_not_a_crash(tmp_path):
    table = Table(tmp_path / "t.db", "contract")  # d10 system, d6 read
    roll = table.record(d6_reading(4, 5))
    assert roll.outcome == "invalid" and roll.why


def test_an_empty_tray_says_which_kinds_the_system_reads(tmp_path):
    """No die read (an empty tray, or only dice of kinds the system's read leaves out, such as d8
    on a Contract table): invalid, and the why names the kinds the system reads."""
    table = Table(tmp_path / "t.db", "contract")
    roll = table.record(d6_reading())
    assert roll.outcome == "invalid" and table.tokens.tension == 0
    assert roll.why[-1] == "no die read: contract reads only d10 from the tray; other kinds are left out"
    assert "d8 and d6" in Table(tmp_path / "a.db", "contingency-action").record(d6_reading()).why[-1]
    assert len(table.record(d6_reading(4, 5)).why) == 1  # dice read, of the wrong kind: the rules' own reason


def test_gm_changes_and_undo(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    table.add_tension(3)
    table.add_tension(-1)
    assert table.tokens.tension == 2
    with pytest.raises(ValueError, match="cannot spend 5"):
        table.add_tension(-5)
    with pytest.raises(ValueError, match="delta"):
        table.add_tension("2")  # type: ignore[arg-type]
    table.set_system("contract", {"difficulty": 7})
    assert table.system == "contract" and table.params["difficulty"] == 7
    with pytest.raises(ValueError):
        table.set_system("monopoly")
    assert table.system == "contract"
    assert table.undo() and table.system == "charge"
    assert table.undo() and table.tokens.tension == 3
    assert table.undo() and table.tokens.tension == 0
    assert not table.undo()


def test_correcting_a_die_re_resolves_and_adjusts_tokens(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(6, 6, 3))
    assert table.tokens.momentum == 3
    fixed = table.correct_die(roll.id, 1, "2")
    assert fixed.outcome == "full" and table.tokens.momentum == 2
    with pytest.raises(ValueError, match="face '9'"):
        table.correct_die(roll.id, 0, "9")
    with pytest.raises(ValueError, match="index 7"):
        table.correct_die(roll.id, 7, "2")
    with pytest.raises(KeyError):
        table.correct_die(999, 0, "2")
    assert table.undo()
    assert table.roll(roll.id).outcome == "critical"


def test_a_corrected_face_is_stored_as_printed_on_the_die(tmp_path):
    """INTERFACES.md: a roll's dice are as in ``read``, whose ``face`` is the printed face ("4",
    "0", "00", "70"). A face typed with spaces, a sign or leading zeros (" 5", "+5", "05") is
    the die's printed face once stored, and a tens die's "0" is its "00"."""
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(6, 4, 2))
    for typed in (" 5", "05", "5 "):  # a sign ("+5") is refused: test_a_corrected_face_is_stored_as_printed_and_odd_spellings_are_refused
        fixed = table.correct_die(roll.id, 1, typed)
        assert (fixed.reading.dice[1].face, fixed.reading.dice[1].value) == ("5", 5), typed
        assert table.roll(roll.id).reading.dice[1].face == "5"
    table.set_system("contingency-skill", {"percentile": True, "chance": 50})
    tens = Die("d10-tens", "30", 30, (0.0, 0.0, 10.0, 10.0), 0.99, "ok")
    ones = Die("d10", "7", 7, (20.0, 0.0, 30.0, 10.0), 0.99, "ok")
    roll = table.record(Reading("p.jpg", 640, 640, 1.0, (tens, ones)))
    assert table.correct_die(roll.id, 0, "0").reading.dice[0].face == "00"
    assert table.correct_die(roll.id, 0, "070").reading.dice[0].face == "70"
    assert table.correct_die(roll.id, 1, "00").reading.dice[1].face == "0"


def test_state_survives_a_reopen_and_files_are_private(tmp_path):
    path = tmp_path / "state" / "t.db"
    table = Table(path, "charge")
    table.record(d6_reading(5))
    table.add_tension(2)
    del table  # no close(): as after a kill
    again = Table(path, "contract")  # the stored system wins over the default
    assert again.system == "charge" and again.tokens.tension == 2
    assert again.state().last_roll.outcome == "partial"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_undoing_a_gm_change_keeps_what_rolls_gave_since(tmp_path):
    """Undo takes back the GM's own change, not the tension tokens and omens rolls added after it."""
    table = Table(tmp_path / "t.db", "contingency-action")
    table.add_tension(3)
    roll = table.record(Reading("t.jpg", 640, 640, 1.0, tuple(
        Die(k, str(v), v, (10.0 * i, 0.0, 10.0 * i + 8, 8.0), 0.99, "ok") for i, (k, v) in enumerate((("d8", 1), ("d6", 6), ("d6", 6))))))
    assert roll.outcome == "disastrous" and table.tokens.tension == 5  # seed 000: two cuts past disastrous
    assert table.undo()  # the GM's +3
    assert table.tokens.tension == 2
    table.set_system("contingency-skill", {"target": 5})
    table.add_tension(-1)
    table.new_scene()
    assert table.undo() and table.undo()  # the scene, then the spent token
    assert table.tokens.tension == 2
    assert table.undo() and table.system == "contingency-action" and table.tokens.tension == 2


def test_a_counted_pool_diminishes_roll_by_roll(tmp_path):
    """Seed 000 "Diminishing Resource Pools": each roll rolls the dice that remain. A table whose
    pool is counted (params pool) expects the dice left after each roll; a die dropped before a
    roll is not rolled; the empty pool is flagged and the GM sets the next. The table used to
    expect the first count for ever (the second roll of a pool of 4 was "invalid: 4 expected, 2
    read") and to count a dropped die among the dice rolled."""

    def d8s(*faces):
        return Reading("t.jpg", 640, 640, 1.0, tuple(
            Die("d8", str(f), f, (40.0 * i, 0.0, 40.0 * i + 30, 30.0), 0.99, "ok") for i, f in enumerate(faces)))

    table = Table(tmp_path / "t.db", "contingency-pool", {"pool": 4})
    first = table.record(d8s(6, 2, 8, 1))
    assert (first.outcome, first.result["remaining"], table.params["pool"]) == ("grim", 2, 2)
    table.add_tension(1)
    assert table.undo() and table.params["pool"] == 2  # undoing a token change leaves the pool as rolled
    table.set_system("contingency-pool", {"pool": 2, "drop": "effect"})
    second = table.record(d8s(3))  # one die dropped for greater effect, one rolled
    assert second.outcome == "grim" and table.params == {"pool": 1, "drop": "none", "action": False}
    unread = table.record(replace(d8s(7), dice=(replace(d8s(7).dice[0], status="unreadable", face="", value=0),)))
    assert unread.outcome == "reroll" and table.params["pool"] == 1  # nothing resolved: nothing moves
    table.correct_die(unread.id, 0, "7")
    assert table.roll(unread.id).result["depleted"] and table.params["pool"] is None  # empty: the GM sets the next
    assert table.undo() and table.params["pool"] == 1


def test_a_corrected_face_is_stored_as_printed_and_odd_spellings_are_refused(tmp_path):
    """The GM's face goes through int(), which takes " 6", "+6", "6_0" (60) and other scripts'
    digits ("٦", "６"): these were stored verbatim as the die's face ("٦" served as a d6 face).
    Now outer spaces and leading zeros are dropped, a d10-tens face has two digits, and anything
    but ASCII digits is refused, naming the face, with nothing changed."""
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(6, 6, 3))
    for bad in ("٦", "６", "+6", "6_0", "-1", "", "6.0"):
        with pytest.raises(ValueError, match=re.escape(f"face {bad!r}")):
            table.correct_die(roll.id, 0, bad)
    assert table.roll(roll.id).reading == roll.reading and table.last_change() is None
    fixed = table.correct_die(roll.id, 0, " 02 ")
    assert (fixed.reading.dice[0].face, fixed.reading.dice[0].value) == ("2", 2)
    tens = Table(tmp_path / "p.db", "contingency-skill", {"target": 5})
    pair = tens.record(Reading("t.jpg", 640, 640, 1.0, (Die("d10-tens", "70", 70, (0.0, 0.0, 8.0, 8.0), 0.99, "ok"),
                                                        Die("d10", "3", 3, (20.0, 0.0, 28.0, 8.0), 0.99, "ok"))))
    assert tens.correct_die(pair.id, 0, "0").reading.dice[0].face == "00"
    assert tens.correct_die(pair.id, 0, "100").reading.dice[0].face == "100"
