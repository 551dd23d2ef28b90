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
    assert second.outcome == "grim" and table.params == {"pool": 1, "drop": "none", "action": False, "force": "none"}
    unread = table.record(replace(d8s(7), dice=(replace(d8s(7).dice[0], status="unreadable", face="", value=0),)))
    assert unread.outcome == "reroll" and table.params["pool"] == 1  # nothing resolved: nothing moves
    table.correct_die(unread.id, 0, "7")
    assert table.roll(unread.id).result["depleted"] and table.params["pool"] is None  # empty: the GM sets the next
    assert table.undo() and table.params["pool"] == 1


def test_a_correction_of_a_roll_from_an_ended_scene_leaves_the_gm_omens_alone(tmp_path):
    """GM omens last for the scene and a new scene sets them to 0 (seed 001 "Game Moderator Omens").
    A misread 1 noticed after the scene ended, corrected on its roll, took an omen from the new
    scene's; now the new scene keeps its omens (the why says so), a roll of this scene still moves
    them, and undoing the new scene gives back its number too."""
    table = Table(tmp_path / "t.db", "contingency-skill")
    old = table.record(kinds_reading(("d6", 1), ("d8", 4), ("d10", 9)))  # a 1: one GM omen
    assert table.tokens.gm_omens == 1
    table.new_scene()
    now = table.record(kinds_reading(("d6", 1), ("d8", 5), ("d10", 7)))  # this scene's omen
    assert table.tokens.gm_omens == 1
    fixed = table.correct_die(old.id, 0, "3")  # the old 1 was a 3
    assert table.tokens.gm_omens == 1 and "its scene has ended: the GM's omens stay as they are" in fixed.why
    assert table.scene == 1
    assert table.undo() and table.tokens.gm_omens == 1
    table.correct_die(now.id, 0, "2")  # this scene's roll: its omen goes
    assert table.tokens.gm_omens == 0
    assert table.undo() and table.tokens.gm_omens == 1
    assert table.undo() and table.scene == 0  # the new scene taken back, and its number
    assert table.tokens.gm_omens == 2  # the old scene's 1 back, with the omen rolled since
    table.correct_die(now.id, 0, "2")  # rolled in the scene taken back: of this scene now, its omen goes
    assert table.tokens.gm_omens == 1
    table.new_scene()  # a number higher than the one taken back: that roll's scene has ended
    assert table.scene == 2 and table.correct_die(now.id, 0, "1").result and table.tokens.gm_omens == 0


def test_a_forced_pool_roll_corrected_into_no_roll_sets_no_force_for_the_next_rolls(tmp_path):
    """The newest counted pool roll, its last die forced out with a tension token, then corrected so
    that it no longer resolves (its die taken out as a false die): the table expects that pool again,
    but the force stays that roll's (an offer taken up on one roll, never set for the next rolls:
    the next lone die that stayed would have been forced out, and the GM charged, by itself)."""
    table = Table(tmp_path / "t.db", "contingency-pool", {"pool": 1})
    table.add_tension(1)
    d8s = lambda *faces: kinds_reading(*(("d8", f) for f in faces))  # noqa: E731
    roll = table.record(d8s(3))
    table.set_roll_params(roll.id, {"force": "tension"})
    assert table.params["pool"] is None and table.tokens.tension == 0
    assert table.remove_die(roll.id, 0).outcome == "invalid"
    assert (table.params["pool"], table.params["force"], table.tokens.tension) == (1, "none", 1)
    assert table.record(d8s(4)).result["offers"]  # the next lone die that stays is offered, not forced


def test_the_gm_forces_a_pools_last_die_out_on_the_recorded_roll_and_undo_puts_it_back(tmp_path):
    """Seed 000 "Diminishing Resource Pools" (RULES.md contingency-pool): the last die of a pool
    stayed; the GM forces it out with the roll's params (PUT /api/rolls/<id>/params {"force": ...}).
    The kit only offered it in a why line: the table's counted pool stayed at 1, no tension token was
    spent, the pool was not depleted. Now "tension" spends one of the GM's tokens (never below 0: with
    none, the why says so), "mark" spends none, the table's pool is empty (the GM sets the next), and
    undo brings the die, the pool and the token back. Where no last die stayed, only the why changes."""
    from pi_table.table.odds import odds_args

    def d8s(*faces):
        return Reading("t.jpg", 640, 640, 1.0, tuple(
            Die("d8", str(f), f, (40.0 * i, 0.0, 40.0 * i + 30, 30.0), 0.99, "ok") for i, f in enumerate(faces)))

    table = Table(tmp_path / "t.db", "contingency-pool", {"pool": 1})
    table.add_tension(2)
    roll = table.record(d8s(3))
    assert roll.result["offers"] and table.params["pool"] == 1 and table.tokens.tension == 2
    forced = table.set_roll_params(roll.id, {"force": "tension"})
    assert (forced.result["depleted"], forced.result["remaining"], forced.result["forced"]) == (True, 0, "tension")
    assert "last die forced out: the GM spends a tension token" in forced.why
    assert table.tokens.tension == 1 and table.params["pool"] is None and table.params["force"] == "none"
    assert forced.odds() == roll.odds()  # forcing the die out changes no odds
    assert odds_args("contingency-pool", forced.params, ["d8"]) == {"dice": 1, "action": False}
    marked = table.set_roll_params(roll.id, {"force": "mark"})  # the player takes a mark instead: the token back
    assert marked.result["depleted"] and table.tokens.tension == 2 and table.params["pool"] is None
    assert table.undo() and table.tokens.tension == 1 and table.roll(roll.id).result["forced"] == "tension"
    assert table.undo() and table.tokens.tension == 2 and table.params["pool"] == 1
    back = table.roll(roll.id)
    assert back.result["offers"] and not back.result["depleted"] and back.params["force"] == "none"

    table.add_tension(-2)  # the GM has no tension token left: none spent, the why says so
    broke = table.set_roll_params(roll.id, {"force": "tension"})
    assert table.tokens.tension == 0 and broke.result["depleted"] and table.params["pool"] is None
    assert "the GM had 0 tension tokens for the 1 this roll spends" in broke.why
    table.set_roll_params(roll.id, {"force": "none"})  # taken back: no token he never paid comes back
    assert table.tokens.tension == 0 and table.params["pool"] == 1

    table.add_tension(1)
    table.set_system("contingency-pool", {"pool": 2})
    two = table.record(d8s(3, 7))  # one die left: the offer does not apply to this roll
    same = table.set_roll_params(two.id, {"force": "tension"})
    assert (same.outcome, same.result["remaining"], same.result["forced"]) == (two.outcome, 1, "none")
    assert "force tension: no last die stayed to force out" in same.why and table.tokens.tension == 1
    assert {k: v for k, v in same.result.items() if k != "why"} == {k: v for k, v in two.result.items() if k != "why"}
    assert table.params["pool"] == 1


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


# -- a false die taken out, a die's kind set right (the GM page's corrections) -----------------
def kinds_reading(*dice: tuple[str, int]) -> Reading:
    """A Reading of the given (kind, value) dice, boxes in a row."""
    return Reading("k.jpg", 640, 640, 1.0, tuple(
        Die(kind, str(value), value, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, "ok")
        for i, (kind, value) in enumerate(dice)))


def test_a_false_die_taken_out_of_a_charge_roll_moves_the_rollers_momentum_and_undo_puts_it_back(tmp_path):
    """A pip or a mark on the tray read as a 6 made a critical (+3 momentum) of a full (+2): taking
    it out resolves the roll again under its own system and params, and the roller's momentum
    moves by the difference, as a corrected face's does; undo brings the die and the point back.
    A bad index or roll changes nothing; taking out every die leaves an invalid roll."""
    table = Table(tmp_path / "t.db", "charge")
    ana = table.add_player("Ana", momentum=2)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(6, 6, 3))
    assert roll.outcome == "critical" and table.player(ana.id).momentum == 5
    table.add_tension(2)
    table.set_system("contract")  # the roll keeps its own system
    fixed = table.remove_die(roll.id, 1)
    assert fixed.outcome == "full" and [d.face for d in fixed.reading.dice] == ["6", "3"]
    assert fixed.system == "charge" and table.roll(roll.id).outcome == "full"
    assert table.player(ana.id).momentum == 4 and table.tokens.momentum == 0 and table.tokens.tension == 2
    assert table.last_change() == ("remove-die", roll.id)
    with pytest.raises(ValueError, match="die index 2 out of range"):
        table.remove_die(roll.id, 2)
    with pytest.raises(KeyError):
        table.remove_die(999, 0)
    assert table.player(ana.id).momentum == 4 and len(table.roll(roll.id).reading.dice) == 2
    assert table.undo()
    back = table.roll(roll.id)
    assert back.outcome == "critical" and [d.face for d in back.reading.dice] == ["6", "6", "3"]
    assert table.player(ana.id).momentum == 5 and table.tokens.tension == 2 and table.system == "contract"
    for _ in range(3):  # every die taken out: no system resolves no dice
        table.remove_die(roll.id, 0)
    assert table.roll(roll.id).outcome == "invalid" and table.player(ana.id).momentum == 2
    for _ in range(3):
        assert table.undo()
    assert table.roll(roll.id).outcome == "critical" and table.player(ana.id).momentum == 5


def test_a_false_die_taken_out_without_a_roller_moves_the_table_level_momentum(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    roll = table.record(d6_reading(6, 6, 3))
    assert table.tokens.momentum == 3
    table.remove_die(roll.id, 0)
    assert table.tokens.momentum == 2
    assert table.undo() and table.tokens.momentum == 3


def test_a_false_die_taken_out_of_a_skill_check_moves_the_gm_omens_by_the_difference(tmp_path):
    """Seed 001: each die showing 1 gives the GM an omen. A false d8 read as 1 made the skill check
    4 dice (invalid: no omens); taking it out resolves it (one real 1: +1 omen). A real roll's 1
    taken out takes its omen back, and omens the GM gave himself since stay through an undo."""
    table = Table(tmp_path / "t.db", "contingency-skill")
    roll = table.record(kinds_reading(("d6", 1), ("d8", 4), ("d10", 9), ("d8", 1)))
    assert roll.outcome == "invalid" and table.tokens.gm_omens == 0
    fixed = table.remove_die(roll.id, 3)
    assert fixed.outcome == "success" and table.tokens.gm_omens == 1
    assert table.undo()
    assert table.roll(roll.id).outcome == "invalid" and table.tokens.gm_omens == 0
    second = table.record(kinds_reading(("d6", 1), ("d8", 1), ("d10", 9)))
    assert second.outcome == "failure" and table.tokens.gm_omens == 2
    table.add_omens(3)
    fixed = table.remove_die(second.id, 0)  # two dice: not a skill check
    assert fixed.outcome == "invalid" and table.tokens.gm_omens == 3
    assert table.undo() and table.roll(second.id).outcome == "failure" and table.tokens.gm_omens == 5


def test_a_die_read_as_the_wrong_kind_is_set_right_with_its_face(tmp_path):
    """The reader took a d10 for a d8: the GM sets its kind with its face (a 9 is on a d10, not on a
    d8); a kind the roll's system does not read is refused, naming it, and changes nothing. Undo
    puts the kind as read back."""
    table = Table(tmp_path / "t.db", "contingency-skill")
    roll = table.record(kinds_reading(("d6", 1), ("d8", 3), ("d8", 2)))
    assert roll.outcome == "failure"
    with pytest.raises(ValueError, match="face '9'"):
        table.correct_die(roll.id, 2, "9")
    with pytest.raises(ValueError, match="kind 'd20'"):
        table.correct_die(roll.id, 2, "9", kind="d20")
    assert table.roll(roll.id).reading.dice[2].kind == "d8"
    fixed = table.correct_die(roll.id, 2, "9", kind="d10")
    assert (fixed.reading.dice[2].kind, fixed.reading.dice[2].face, fixed.reading.dice[2].value) == ("d10", "9", 9)
    assert fixed.outcome == "failure" and "middle die d8 3" in fixed.why[0]
    assert table.correct_die(roll.id, 1, "7", kind="d10").why[0] == "middle die d10 7"
    assert table.undo() and table.undo()
    assert [d.kind for d in table.roll(roll.id).reading.dice] == ["d6", "d8", "d8"]
    charge = Table(tmp_path / "c.db", "charge")
    six = charge.record(d6_reading(6))
    with pytest.raises(ValueError, match="kind 'd10' is not a die charge reads"):
        charge.correct_die(six.id, 0, "7", kind="d10")
    assert charge.correct_die(six.id, 0, "4", kind="d6").outcome == "partial"


def test_a_false_die_taken_out_of_the_newest_pool_roll_moves_the_pool(tmp_path):
    """Seed 000 "Diminishing Resource Pools": a pool of 4 d8 read as 5 dice is invalid and leaves
    the pool as it was; the false die taken out, the roll resolves and the next roll's pool is the
    dice left (a 1 or 2 removes a die); undo puts both back."""
    table = Table(tmp_path / "t.db", "contingency-pool", {"pool": 4})
    roll = table.record(kinds_reading(("d8", 1), ("d8", 2), ("d8", 5), ("d8", 7), ("d8", 3)))
    assert roll.outcome == "invalid" and table.params["pool"] == 4
    fixed = table.remove_die(roll.id, 4)
    assert fixed.outcome != "invalid" and fixed.result["remaining"] == 3 and table.params["pool"] == 3
    assert table.undo() and table.roll(roll.id).outcome == "invalid" and table.params["pool"] == 4


def test_undoing_a_correction_leaves_the_pool_a_newer_roll_moved(tmp_path):
    """Seed 000 "Diminishing Resource Pools": undoing a correction of a pool roll put the table's params
    back as they were at the correction, even where a roll recorded since had moved the pool: the pool
    a newer roll had emptied came back at 3 dice, and the next roll of the 0 dice left was "invalid".
    Now undo puts back only the pool the correction itself moved, and only while no roll moved it since."""
    table = Table(tmp_path / "t.db", "contingency-pool", {"pool": 5})
    first = table.record(kinds_reading(("d8", 6), ("d8", 5), ("d8", 8), ("d8", 2), ("d8", 3)))
    assert (first.result["remaining"], table.params["pool"]) == (3, 3)
    table.correct_die(first.id, 3, "4")  # a face misread; still 3 left
    second = table.record(kinds_reading(("d8", 6), ("d8", 7), ("d8", 8)))
    assert second.result["depleted"] and table.params["pool"] is None
    assert table.undo() and table.roll(first.id).reading.dice[3].face == "2"
    assert table.params["pool"] is None  # as the newer roll left it

    table.set_system("contingency-pool", {"pool": 3})
    third = table.record(kinds_reading(("d8", 6), ("d8", 5), ("d8", 2)))
    assert table.params["pool"] == 2
    table.correct_die(third.id, 1, "7")  # the newest roll: the pool follows it (1 left)
    assert table.params["pool"] == 1
    fourth = table.record(kinds_reading(("d8", 8)))
    assert fourth.result["depleted"] and table.params["pool"] is None
    assert table.undo() and table.params["pool"] is None  # the newer roll's pool stays


def test_the_contracts_difficulty_set_after_the_roll_resolves_it_again_and_undo_puts_it_back(tmp_path):
    """The GM forgot to set difficulty 8 before the roll: set on the roll afterwards, the roll is
    resolved again under it (7 and 6 no longer succeed); the table's own params for the next rolls
    stay as they are. A bad param is refused, named, and changes nothing; undo puts the roll's
    params and result back."""
    table = Table(tmp_path / "t.db", "contract")
    roll = table.record(kinds_reading(("d10", 7), ("d10", 6), ("d10", 6), ("d10", 10)))
    assert (roll.outcome, roll.result["successes"], roll.params["difficulty"]) == ("complete", 5, 6)
    fixed = table.set_roll_params(roll.id, {"difficulty": 8})
    assert (fixed.outcome, fixed.result["successes"], fixed.params) == ("partial", 2, {"difficulty": 8, "dice": None})
    assert table.roll(roll.id).params["difficulty"] == 8 and table.roll(roll.id).outcome == "partial"
    assert table.params["difficulty"] == 6 and table.last_change() == ("roll-params", roll.id)
    with pytest.raises(ValueError, match="difficulty"):
        table.set_roll_params(roll.id, {"difficulty": 11})
    with pytest.raises(ValueError, match="'push'"):
        table.set_roll_params(roll.id, {"push": "die"})  # a charge param: not one the contract takes
    with pytest.raises(ValueError, match="params must be a JSON object"):
        table.set_roll_params(roll.id, [8])
    with pytest.raises(KeyError):
        table.set_roll_params(999, {"difficulty": 8})
    assert table.roll(roll.id).params["difficulty"] == 8 and table.last_change() == ("roll-params", roll.id)
    assert table.undo()
    back = table.roll(roll.id)
    assert (back.outcome, back.result["successes"], back.params["difficulty"]) == ("complete", 5, 6)
    assert table.last_change() is None


def test_a_condition_marked_on_a_skill_check_failed_by_one_barely_succeeds_and_undo_puts_the_failure_back(tmp_path):
    """Seed 001 "Failing By One" (RULES.md contingency-skill: the kit offers it, never applies it
    silently): the roll stays a failure with the offer in its why until the GM sets
    ``mark_condition`` on it; then it is a success with a complication, its omens and the table's
    params for the next rolls unchanged; undo puts the failure back. On a roll not failed by one
    it changes only the why."""
    table = Table(tmp_path / "t.db", "contingency-skill", {"target": 6})
    roll = table.record(kinds_reading(("d6", 5), ("d8", 1), ("d10", 9)))  # middle d6 5 vs 6; a 1: 1 GM omen
    assert (roll.outcome, roll.result["fail_by_one"], table.tokens.gm_omens) == ("failure", True, 1)
    assert any("may mark a condition" in w for w in roll.why)
    marked = table.set_roll_params(roll.id, {"mark_condition": True})
    assert (marked.outcome, marked.result["marked_condition"], marked.params["mark_condition"]) == ("success", True, True)
    assert "a condition marked: barely succeeds, with a complication" in marked.why
    assert table.tokens.gm_omens == 1 and table.params["mark_condition"] is False
    assert table.last_change() == ("roll-params", roll.id)
    with pytest.raises(ValueError, match="mark_condition"):
        table.set_roll_params(roll.id, {"mark_condition": "yes"})
    assert table.roll(roll.id).outcome == "success"
    assert table.undo()
    back = table.roll(roll.id)
    assert (back.outcome, back.params["mark_condition"], back.result["marked_condition"]) == ("failure", False, False)
    assert back.why == roll.why and table.tokens.gm_omens == 1
    other = table.record(kinds_reading(("d6", 4), ("d8", 2), ("d10", 9)))  # failed by two
    same = table.set_roll_params(other.id, {"mark_condition": True})
    assert (same.outcome, same.result["marked_condition"]) == ("failure", False)
    assert {k: v for k, v in same.result.items() if k != "why"} == {k: v for k, v in other.result.items() if k != "why"}
    assert [w for w in same.why if w not in other.why] == ["no condition marked: the check did not fail by one"]


def test_a_charge_push_set_after_the_roll_takes_two_momentum_from_the_roller_and_undo_gives_it_back(tmp_path):
    """Seed 004 "Push Yourself": a push costs the roller 2 momentum. Set on a failed action roll
    afterwards (the GM forgot to tick it), the roller pays the 2 then, as if it had been set first;
    the other params stay as the roll had them; undo gives the momentum back."""
    table = Table(tmp_path / "t.db", "charge", {"risk": "high"})
    ana = table.add_player("Ana", momentum=3)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(3))
    assert roll.outcome == "bad" and table.player(ana.id).momentum == 3
    table.add_tension(1)
    fixed = table.set_roll_params(roll.id, {"push": "effect"})
    assert fixed.params["push"] == "effect" and fixed.params["risk"] == "high" and fixed.result["momentum_spent"] == 2
    assert table.player(ana.id).momentum == 1 and table.tokens.momentum == 0 and table.tokens.tension == 1
    assert table.undo()
    assert table.roll(roll.id).params["push"] == "none" and table.player(ana.id).momentum == 3
    assert table.tokens.tension == 1


def test_a_counted_pool_set_after_the_newest_roll_leaves_the_tables_pool_at_the_dice_left(tmp_path):
    """The newest pool roll moves the table's pool (seed 000 "Diminishing Resource Pools"); the GM
    counting the pool only after the roll sets it there as a corrected face does; undo puts the
    uncounted pool back."""
    table = Table(tmp_path / "t.db", "contingency-pool")
    roll = table.record(kinds_reading(("d8", 6), ("d8", 2), ("d8", 5), ("d8", 7)))
    assert table.params["pool"] is None
    table.set_roll_params(roll.id, {"pool": 4})
    assert table.roll(roll.id).params["pool"] == 4 and table.params["pool"] == 2
    assert table.undo() and table.params["pool"] is None and table.roll(roll.id).params["pool"] is None


def test_rolls_forgotten_take_their_corrections_out_of_the_undo_log():
    """keep_newest_rolls (the demo's table) forgets old rolls; a correction of one of them left in the
    undo log made every later undo fail on a roll that is gone (KeyError), for good."""
    table = Table(":memory:", "charge")
    first = table.record(d6_reading(6, 4, 2))
    table.correct_die(first.id, 1, "5")
    table.add_tension(1)
    for _ in range(3):
        table.record(d6_reading(3))
    assert table.keep_newest_rolls(2) == 2
    assert table.undo()  # the tension change
    assert table.tokens.tension == 0
    assert not table.undo() and table.last_change() is None  # the forgotten roll's correction went with it


def test_a_luck_die_added_after_a_skill_check_pays_a_luck_point_and_counts_for_omens(tmp_path):
    """Seed 001 "Luck Dice": after the result, one luck point buys one die of the result die's size,
    its face added to the result, counted for the player's and the GM's omens. The GM types it on
    the recorded roll (no new roll); undo takes die, params, luck point and omens back."""
    table = Table(tmp_path / "t.db", "contingency-skill", {"target": 7})
    ana = table.add_player("Ana", luck=2)
    table.set_roller(ana.id)
    roll = table.record(kinds_reading(("d6", 1), ("d8", 4), ("d10", 9)))  # middle die d8 4; a 1: a GM omen
    assert (roll.outcome, roll.result["result"], roll.result["result_die"]) == ("failure", 4, "d8")
    assert table.tokens.gm_omens == 1
    lucky = table.add_luck_die(roll.id, "8")
    assert lucky.id == roll.id and len(table.rolls(10)) == 1
    assert (lucky.outcome, lucky.result["result"], lucky.result["luck"]) == ("success", 12, ["d8", 8])
    assert lucky.params["luck"] is True and (roll.result["player_omens"], lucky.result["player_omens"]) == (1, 2)
    assert [(d.kind, d.face) for d in lucky.reading.dice][-1] == ("d8", "8")
    assert table.player(ana.id).luck == 1 and table.tokens.gm_omens == 1
    assert table.last_change() == ("luck-die", roll.id)
    assert table.undo()
    back = table.roll(roll.id)
    assert (back.outcome, len(back.reading.dice), back.params["luck"]) == ("failure", 3, False)
    assert table.player(ana.id).luck == 2 and table.tokens.gm_omens == 1
    # a 1 on the luck die is the GM's omen too; the kind, when given, must be the result die's
    assert table.add_luck_die(roll.id, "1", kind="d8").outcome == "failure" and table.tokens.gm_omens == 2


def test_taking_out_a_luck_die_leaves_the_check_as_it_was_before_it(tmp_path):
    """A luck die added by mistake (typed on the wrong roll, a die read in from the tray that was no
    luck die) is taken out with "remove": the check is resolved again as before the luck die, not
    left a 3-die check that still expects one ("invalid"); the luck point comes back; undo puts the
    luck die back. Another die taken out of a check with a luck die still leaves it unresolvable."""
    table = Table(tmp_path / "t.db", "contingency-skill", {"target": 7})
    ana = table.add_player("Ana", luck=2)
    table.set_roller(ana.id)
    roll = table.record(kinds_reading(("d6", 1), ("d8", 4), ("d10", 9)))
    table.add_luck_die(roll.id, "8")
    out = table.remove_die(roll.id, 3)
    assert (out.outcome, out.result["result"], out.params["luck"], len(out.reading.dice)) == ("failure", 4, False, 3)
    assert table.player(ana.id).luck == 2 and table.tokens.gm_omens == 1
    assert table.undo()
    back = table.roll(roll.id)
    assert (back.outcome, back.params["luck"], len(back.reading.dice)) == ("success", True, 4)
    assert table.player(ana.id).luck == 1
    assert table.remove_die(roll.id, 0).outcome == "invalid"  # d8 4, d10 9 and the luck die: no check


def test_a_luck_die_is_refused_on_a_roll_that_takes_none_and_a_bad_face_is_named(tmp_path):
    """One luck die per skill check, on a resolved one (seed 001); another system's roll, a percentile
    roll or a re-roll takes none (StateConflict: HTTP 409); a face off the die or another kind is
    named (ValueError: 400); nothing changes then."""
    from pi_table.table import StateConflict

    table = Table(tmp_path / "t.db", "contingency-skill")
    roll = table.record(kinds_reading(("d6", 3), ("d8", 4), ("d10", 9)))
    for face, kind, match in (("9", None, "face '9' is not on a d8"), ("x", None, "face 'x'"),
                              ("3", "d6", "kind 'd6'.*d8")):
        with pytest.raises(ValueError, match=match) as err:
            table.add_luck_die(roll.id, face, kind)
        assert not isinstance(err.value, StateConflict)
    assert table.roll(roll.id) == roll and table.last_change() is None
    table.add_luck_die(roll.id, "2")
    with pytest.raises(StateConflict, match="already"):
        table.add_luck_die(roll.id, "2")
    with pytest.raises(StateConflict, match="already"):
        table.arm_luck_die(roll.id)
    cocked = table.record(replace(kinds_reading(("d6", 3), ("d8", 4), ("d10", 9)), dice=(
        *kinds_reading(("d6", 3), ("d8", 4)).dice, Die("d10", "", 0, (110.0, 10.0, 150.0, 50.0), 0.4, "cocked"))))
    with pytest.raises(StateConflict, match="not resolved"):
        table.add_luck_die(cocked.id, "2")
    table.set_system("contingency-skill", {"percentile": True, "chance": 40})
    tens = table.record(kinds_reading(("d10-tens", 70), ("d10", 5)))
    with pytest.raises(StateConflict, match="percentile"):
        table.add_luck_die(tens.id, "2")
    charge = Table(tmp_path / "c.db", "charge")
    six = charge.record(d6_reading(6))
    with pytest.raises(StateConflict, match="charge"):
        charge.add_luck_die(six.id, "2")
    with pytest.raises(KeyError):
        charge.add_luck_die(99, "2")


def test_a_luck_die_awaited_from_the_camera_is_in_the_state_and_a_new_system_drops_it(tmp_path):
    """The GM arms the camera for roll #N's luck die: ``luck_pending`` in the state (kept in the
    table's settings), dropped when the GM changes the system or the die is typed."""
    table = Table(tmp_path / "t.db", "contingency-skill")
    roll = table.record(kinds_reading(("d6", 3), ("d8", 4), ("d10", 9)))
    assert table.state().to_json()["luck_pending"] is None
    assert table.arm_luck_die(roll.id) == {"roll": roll.id, "kind": "d8"}
    assert Table(tmp_path / "t.db").state().to_json()["luck_pending"] == {"roll": roll.id, "kind": "d8"}
    table.set_system("contingency-skill", {"target": 6})
    assert table.luck_pending is None
    table.arm_luck_die(roll.id)
    table.add_luck_die(roll.id, "3")
    assert table.luck_pending is None


def test_a_correction_does_not_give_again_a_tension_token_the_gm_spent_since(tmp_path):
    """Seed 000: a cut below disastrous gives the GM a tension token. He spends it; a correction
    that keeps the cut does not give it again (taken back and added again in one step, never
    below 0), one that takes the cut away leaves him at 0, and undo keeps his spending."""
    table = Table(tmp_path / "t.db", "contingency-action")
    roll = table.record(kinds_reading(("d8", 1), ("d6", 6)))
    assert roll.outcome == "disastrous" and table.tokens.tension == 1
    table.add_tension(-1)
    table.correct_die(roll.id, 1, "6")  # the same face typed again: nothing changes
    assert table.tokens.tension == 0
    table.correct_die(roll.id, 1, "2")  # no cut: none to take back from 0
    assert table.tokens.tension == 0
    table.correct_die(roll.id, 1, "6")  # the cut again: the roll's token once more
    assert table.tokens.tension == 1
    assert table.undo() and table.tokens.tension == 0
    assert table.undo() and table.undo() and table.tokens.tension == 0
    assert table.undo() and table.tokens.tension == 1  # the GM's spending taken back
