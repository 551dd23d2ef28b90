"""Players (seed 004 momentum, seed 001 luck points), the roller, and each roll's exact odds."""

from __future__ import annotations

import json
from dataclasses import replace
import queue
import time
from fractions import Fraction

import numpy as np
import pytest

from pi_table import rules
from pi_table.capture import Frame, SettledRoll
from pi_table.outputs.web import create_app
from pi_table.service import Service, Settings
from pi_table.table import Table
from pi_table.table import odds as table_odds
from pi_table.vision.dice import Die, Reading
from tests.conftest import FakeReader, d6_reading

PIN = "2468"
AUTH = {"Authorization": f"Bearer {PIN}"}


def reading(*dice: tuple[str, int]) -> Reading:
    """A Reading of ``(kind, value)`` dice, all ok, boxes in a row."""
    return Reading(image="t.jpg", width=640, height=640, ms=1.0, dice=tuple(
        Die(kind, str(v), v, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, "ok") for i, (kind, v) in enumerate(dice)))


def exact(bands: dict[str, Fraction]) -> dict[str, str]:
    return {b: f"{p.numerator}/{p.denominator}" for b, p in bands.items()}


# -- the table ----------------------------------------------------------------------------------
def test_players_crud_and_validation(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    ana = table.add_player("  Ana ")
    assert (ana.name, ana.momentum, ana.luck) == ("Ana", 2, 0)  # seed 004: a session starts with 2
    bo = table.add_player("Bo", momentum=0, luck=3)
    assert [p.name for p in table.players()] == ["Ana", "Bo"]
    for bad, match in ((dict(name=""), "name"), (dict(name="ana"), "already taken"), (dict(name=7), "name"),
                       (dict(name="Cy", momentum=-1), "momentum.*-1"), (dict(name="Cy", luck="2"), "luck.*'2'"),
                       (dict(name="Cy", luck=True), "luck"), (dict(name="Cy", momentum=100), "momentum.*100")):
        with pytest.raises(ValueError, match=match):
            table.add_player(**bad)
    assert len(table.players()) == 2  # nothing added by a bad call

    assert table.update_player(ana.id, momentum=5, luck=1).momentum == 5
    assert table.player(ana.id).luck == 1
    for bad, match in (({"momentum": -2}, "momentum"), ({"luck": 1.5}, "luck"), ({"momentum": 3, "luck": "x"}, "luck"),
                       ({"speed": 1}, "speed"), ({}, "nothing"), ({"name": "bo"}, "already taken")):
        with pytest.raises(ValueError, match=match):
            table.update_player(ana.id, **bad)
    assert table.player(ana.id).momentum == 5 and table.player(ana.id).luck == 1  # unchanged by a partly bad change
    with pytest.raises(KeyError):
        table.update_player(999, momentum=1)

    table.set_roller(bo.id)
    assert table.roller == bo.id and table.state().roller == bo.id
    with pytest.raises(ValueError, match="999"):
        table.set_roller(999)
    assert table.remove_player(bo.id).name == "Bo"
    assert table.roller is None  # the roller's seat is empty once they leave
    with pytest.raises(KeyError):
        table.remove_player(bo.id)
    assert [p.to_json() for p in table.state().players] == [{"id": ana.id, "name": "Ana", "momentum": 5, "luck": 1}]


def test_undo_covers_player_changes(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    ana = table.add_player("Ana")
    table.update_player(ana.id, momentum=4, luck=2)
    table.set_roller(ana.id)
    table.remove_player(ana.id)
    assert table.players() == [] and table.roller is None
    assert table.undo()  # remove undone: same id, same points, roller again
    assert table.player(ana.id).momentum == 4 and table.roller == ana.id
    assert table.undo() and table.roller is None  # roller undone
    assert table.undo() and (table.player(ana.id).momentum, table.player(ana.id).luck) == (2, 0)  # update undone
    assert table.undo() and table.players() == []  # add undone
    assert not table.undo()


def test_undoing_a_player_change_keeps_momentum_rolls_gave_since(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    ana = table.add_player("Ana")
    table.set_roller(ana.id)
    table.update_player(ana.id, luck=3)
    table.record(d6_reading(6, 6, 3))  # critical: +3 momentum to Ana
    assert table.player(ana.id).momentum == 5
    assert table.undo()  # the luck change
    assert table.player(ana.id).luck == 0 and table.player(ana.id).momentum == 5


def test_players_survive_reopening_the_table(tmp_path):
    path = tmp_path / "state" / "t.db"
    table = Table(path, "charge")
    ana = table.add_player("Ana", luck=2)
    table.add_player("Bo")
    table.set_roller(ana.id)
    table.record(d6_reading(5))  # partial: +1 to Ana
    del table  # no close(): as after a kill
    again = Table(path, "charge")
    assert [(p.name, p.momentum, p.luck) for p in again.players()] == [("Ana", 3, 2), ("Bo", 2, 0)]
    assert again.roller == ana.id
    assert again.rolls(1)[0].player == {"id": ana.id, "name": "Ana"}
    assert again.undo() and again.roller is None  # the change log survives too


def test_momentum_goes_to_the_roller(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    table.record(d6_reading(6))  # no roller: full, +2 to the table-level count (as before players)
    assert table.tokens.momentum == 2 and table.state().tokens.momentum == 2
    ana, bo = table.add_player("Ana"), table.add_player("Bo")
    table.set_roller(bo.id)
    roll = table.record(d6_reading(6, 6, 3))
    assert roll.player == {"id": bo.id, "name": "Bo"} and roll.to_json()["player"]["name"] == "Bo"
    assert table.player(bo.id).momentum == 5 and table.player(ana.id).momentum == 2
    assert table.tokens.momentum == 2  # the table-level count is untouched
    state = table.state().to_json()
    assert state["tokens"]["momentum"] == 5 and state["roller"] == bo.id  # tokens.momentum: the roller's
    assert [p["momentum"] for p in state["players"]] == [2, 5]

    table.set_roller(ana.id)  # the correction goes to whoever made the roll, not the new roller
    table.correct_die(roll.id, 1, "2")  # 6,2,3: full, +2 instead of +3
    assert table.player(bo.id).momentum == 4 and table.player(ana.id).momentum == 2
    assert table.undo()
    assert table.player(bo.id).momentum == 5 and table.roll(roll.id).outcome == "critical"



def test_a_roll_takes_what_it_spends_from_the_roller(tmp_path):
    """Seed 004 "Push Yourself" (2 momentum), "Determination Roll" (1 a die); seed 001 "Luck Dice" (1 luck point)."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "push": "die"})
    ana = table.add_player("Ana", momentum=3, luck=2)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(6, 2))  # full, but it spent momentum: gains none, pays 2
    assert roll.outcome == "full" and roll.result["momentum_spent"] == 2
    assert table.player(ana.id).momentum == 1
    short = table.record(d6_reading(4, 2))  # pushes again with 1 left: never below 0, and the why says so
    assert table.player(ana.id).momentum == 0
    assert any("Ana had 1 momentum for the 2 this roll spends" in w for w in short.why)
    table.update_player(ana.id, momentum=4)
    table.set_system("charge", {"roll": "determination", "dots": 3})
    table.record(d6_reading(5, 2, 1))
    assert table.player(ana.id).momentum == 1
    table.set_system("contingency-skill", {"luck": True, "target": 5})
    table.record(reading(("d6", 3), ("d8", 4), ("d10", 9), ("d8", 2)))  # the 4th die is the luck die
    assert table.player(ana.id).luck == 1 and table.player(ana.id).momentum == 1
    assert table.tokens.momentum == 0  # a roller's spending never touches the table-level count


def test_a_corrected_die_pays_once_and_undo_gives_it_back(tmp_path):
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "push": "die"})
    ana = table.add_player("Ana", momentum=2)
    table.set_roller(ana.id)
    dice = d6_reading(6, 3)
    dice = replace(dice, dice=(dice.dice[0], replace(dice.dice[1], status="unreadable")))
    roll = table.record(dice)  # a re-roll: nothing resolved, nothing paid yet
    assert roll.outcome == "reroll" and table.player(ana.id).momentum == 2
    table.correct_die(roll.id, 1, "3")
    assert table.roll(roll.id).outcome == "full" and table.player(ana.id).momentum == 0
    table.record(d6_reading(4, 1))  # another push meanwhile: already at 0
    table.update_player(ana.id, momentum=5)
    assert table.undo()  # the momentum edit
    assert table.undo()  # the correction: its 2 come back, and the roll is a re-roll again
    assert table.roll(roll.id).outcome == "reroll" and table.player(ana.id).momentum == 2



def test_an_undone_correction_keeps_its_roller_and_a_costlier_fix_says_who_was_short(tmp_path):
    table = Table(tmp_path / "t.db", "charge", {"roll": "determination", "dots": 3})
    ben = table.add_player("Ben", momentum=5)
    table.set_roller(ben.id)
    dice = d6_reading(6, 2, 1)
    roll = table.record(replace(dice, dice=dice.dice[:2] + (replace(dice.dice[2], status="unreadable"),)))
    assert roll.outcome == "reroll" and table.player(ben.id).momentum == 5
    table.update_player(ben.id, momentum=2)
    fixed = table.correct_die(roll.id, 2, "4")  # now resolved: 3 dice of determination, Ben has 2
    assert table.player(ben.id).momentum == 0
    assert any("Ben had 2 momentum for the 3 this roll spends" in w for w in fixed.why), fixed.why
    assert table.undo()
    assert table.roll(roll.id).player == {"id": ben.id, "name": "Ben"}  # was dropped by undo
    assert table.player(ben.id).momentum == 2
    table.correct_die(roll.id, 2, "5")  # the roller pays again, not the table-level count
    assert table.player(ben.id).momentum == 0 and table.tokens.momentum == 0


def test_an_undone_correction_gives_the_roll_its_why_back_whole(tmp_path):
    """Undo puts back a corrected roll's why as it was, the line that its roller was short of
    momentum included (undo resolved the roll again and dropped it; the points were right)."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "push": "die"})
    ana = table.add_player("Ana", momentum=1)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(2, 2))
    assert "Ana had 1 momentum for the 2 this roll spends" in roll.why
    table.set_roll_params(roll.id, {"push": "none", "dots": 2})
    assert table.undo()
    assert table.roll(roll.id).why == roll.why and table.player(ana.id).momentum == 0


def test_correcting_a_removed_rollers_roll_leaves_the_table_level_momentum(tmp_path):
    """The table-level momentum is what rolls with no roller gained. A roll of Ana's, corrected
    after she left the table, moves nobody's momentum: it took 2 from the table-level count."""
    table = Table(tmp_path / "t.db", "charge")
    ana = table.add_player("Ana")
    table.record(d6_reading(6))  # no roller: full, the table-level count gains 2
    table.set_roller(ana.id)
    roll = table.record(d6_reading(6))  # Ana's full roll
    table.remove_player(ana.id)
    table.set_roller(None)
    assert table.tokens.momentum == 2
    table.correct_die(roll.id, 0, "2")  # now bad: Ana's gain would be taken back, but she is gone
    assert table.tokens.momentum == 2 and table.roll(roll.id).outcome == "bad"


def test_a_correction_of_a_roll_from_an_ended_session_leaves_the_players_momentum(tmp_path):
    """A new session gives every player 2 momentum (seed 004). A roll of the session before, corrected
    after it, took its old gain from the new session's 2 (Ana's partial corrected to bad left her 1);
    now the players' momentum stays (the why says so) and so does the assister's, while a roll of
    this session still moves it. Undoing the new session gives back its number too."""
    table = Table(tmp_path / "t.db", "charge", {"assist": True})
    ana, bo = table.add_player("Ana"), table.add_player("Bo")
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    old = table.record(d6_reading(6, 2))  # full, assisted: Ana gains nothing (momentum spent), Bo pays 1
    assert momenta(table) == {"Ana": 2, "Bo": 1}
    table.set_system("charge")
    table.new_session()
    assert momenta(table) == {"Ana": 2, "Bo": 2}
    fixed = table.set_roll_params(old.id, {"assist": False})  # no assist after all: Bo would get 1 back, Ana gain 2
    assert momenta(table) == {"Ana": 2, "Bo": 2}
    assert "its session has ended: the players' momentum stays as it is" in fixed.why
    now = table.record(d6_reading(4))  # partial: Ana +1
    assert momenta(table)["Ana"] == 3
    table.correct_die(now.id, 0, "6")  # full: +2 instead of +1
    assert momenta(table)["Ana"] == 4
    assert table.undo() and table.undo() and momenta(table) == {"Ana": 3, "Bo": 2}
    assert table.session == 1
    assert table.undo() and table.session == 0  # the new session taken back, and its number


def test_a_new_session_gives_every_player_two_momentum_and_keeps_their_luck(tmp_path):
    """Seed 004 "Momentum": "You start every session with 2". A new session sets every player's
    momentum to 2 (from 0 and from 7 alike); luck points stay (seed 001: they do not refresh), as
    do the tokens. Undo takes the session back by the difference: momentum a roll gave since stays."""
    table = Table(tmp_path / "t.db", "charge")
    ana, bo = table.add_player("Ana", momentum=0, luck=3), table.add_player("Bo", momentum=7)
    table.set_roller(ana.id)
    table.add_tension(2)
    players = table.new_session()
    assert [(p.name, p.momentum, p.luck) for p in players] == [("Ana", 2, 3), ("Bo", 2, 0)]
    assert table.tokens.tension == 2 and table.last_change() == ("session", None)
    table.record(d6_reading(6, 2))  # full: Ana gains 2
    assert table.player(ana.id).momentum == 4
    assert table.undo()
    assert (table.player(ana.id).momentum, table.player(bo.id).momentum, table.player(ana.id).luck) == (2, 7, 3)


def test_no_roller_spends_from_the_table_level_momentum(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    table.record(d6_reading(6, 6))  # critical: +3 to the table-level count
    table.set_system("charge", {"dots": 1, "push": "die"})
    table.record(d6_reading(6, 2))
    assert table.tokens.momentum == 1


def momenta(table: Table) -> dict[str, int]:
    return {p.name: p.momentum for p in table.players()}


def test_an_assist_takes_one_momentum_from_the_teammate_who_assists(tmp_path):
    """Seed 004 "Assist": the assisting teammate consumes 1 momentum and gives the roller +1d6."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "assist": True})
    ana, bo = table.add_player("Ana"), table.add_player("Bo", momentum=1)
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    assert table.assister == bo.id and table.state().to_json()["assister"] == bo.id
    roll = table.record(d6_reading(6, 2))  # full, 2 dice (1 dot + assist); momentum was spent: Ana gains none
    assert roll.outcome == "full" and momenta(table) == {"Ana": 2, "Bo": 0}
    assert roll.assist_by == {"id": bo.id, "name": "Bo"} and roll.to_json()["assist_by"]["name"] == "Bo"
    assert "Bo assists: 1 momentum" in roll.why
    assert table.roll(roll.id).to_json()["assist_by"] == {"id": bo.id, "name": "Bo"}  # as stored
    assert table.tokens.momentum == 0  # never the table-level count

    short = table.record(d6_reading(4, 1))  # Bo has none left: never below 0, and the why says so
    assert momenta(table) == {"Ana": 2, "Bo": 0}
    assert "Bo had 0 momentum for the 1 this assist spends" in short.why, short.why

    table.set_system("charge", {"dots": 2})  # no assist: the assister picked pays nothing, and is not named
    table.update_player(bo.id, momentum=3)
    plain = table.record(d6_reading(6, 2))
    assert momenta(table) == {"Ana": 4, "Bo": 3} and plain.to_json()["assist_by"] is None
    assert not any("assist" in w for w in plain.why)


def test_an_assist_with_no_teammate_picked_is_paid_by_no_one_and_says_so(tmp_path):
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "assist": True})
    ana, bo = table.add_player("Ana"), table.add_player("Bo")
    table.set_roller(ana.id)
    roll = table.record(d6_reading(6, 2))
    assert momenta(table) == {"Ana": 2, "Bo": 2} and roll.to_json()["assist_by"] is None
    assert "no teammate picked to pay the assist's 1 momentum" in roll.why, roll.why


def test_the_assister_is_a_player_other_than_the_roller(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    ana, bo = table.add_player("Ana"), table.add_player("Bo")
    table.set_roller(ana.id)
    for bad, match in ((999, "999"), (ana.id, "roller"), ("2", "'2'"), (True, "True")):
        with pytest.raises(ValueError, match=match):
            table.set_assister(bad)
    assert table.assister is None
    table.set_assister(bo.id)
    table.set_roller(bo.id)  # the assister now rolls: no longer the assister
    assert (table.roller, table.assister) == (bo.id, None)
    assert table.undo() and (table.roller, table.assister) == (ana.id, bo.id)
    table.remove_player(bo.id)  # the assister leaves: no one assists
    assert table.assister is None and table.state().assister is None
    assert table.undo() and table.assister == bo.id
    table.set_assister(None)
    assert table.assister is None
    assert table.undo() and table.assister == bo.id


def test_an_assist_set_or_cleared_after_the_roll_charges_the_rolls_own_assister_and_undo_restores_it(tmp_path):
    """A correction (Table._correct) that turns the assist on or off charges or pays back the
    teammate picked when the roll was recorded, not the one picked now; undo takes it back."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1})
    ana, bo, cy = table.add_player("Ana"), table.add_player("Bo"), table.add_player("Cy")
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    roll = table.record(d6_reading(5))  # partial, no assist: Ana gains 1, Bo pays nothing
    assert momenta(table) == {"Ana": 3, "Bo": 2, "Cy": 2} and roll.to_json()["assist_by"] is None
    table.set_assister(cy.id)  # the setting moves on; the roll keeps its own assister

    on = table.set_roll_params(roll.id, {"dots": 0, "assist": True})  # the same die, now the assist's
    assert momenta(table) == {"Ana": 2, "Bo": 1, "Cy": 2}  # momentum spent: Ana's gain taken back; Bo pays 1
    assert on.to_json()["assist_by"] == {"id": bo.id, "name": "Bo"} and "Bo assists: 1 momentum" in on.why
    table.correct_die(roll.id, 0, "6")  # a correction that keeps the assist charges nothing more
    assert momenta(table) == {"Ana": 2, "Bo": 1, "Cy": 2} and table.roll(roll.id).outcome == "full"
    table.remove_die(roll.id, 0)  # no die left: invalid, nothing spent: Bo paid back
    assert momenta(table) == {"Ana": 2, "Bo": 2, "Cy": 2}
    assert table.undo() and table.undo() and momenta(table) == {"Ana": 2, "Bo": 1, "Cy": 2}

    off = table.set_roll_params(roll.id, {"roll": "fortune", "assist": False})  # no action roll: Bo paid back
    assert momenta(table) == {"Ana": 2, "Bo": 2, "Cy": 2} and off.to_json()["assist_by"] is None
    assert table.undo()  # the assist is on again: Bo pays again
    assert momenta(table) == {"Ana": 2, "Bo": 1, "Cy": 2} and table.roll(roll.id).params["assist"] is True
    assert "Bo assists: 1 momentum" in table.roll(roll.id).why
    assert table.undo()  # the assist set after the roll taken back: Bo's 1 and Ana's gain come back
    assert momenta(table) == {"Ana": 3, "Bo": 2, "Cy": 2} and table.roll(roll.id).to_json()["assist_by"] is None


def applied(table: Table, roll_id: int) -> dict:
    """What the roll really did to players' points, as stored with it ({}: not stored)."""
    (result,) = table._db.execute("SELECT result FROM rolls WHERE id=?", (roll_id,)).fetchone()
    return json.loads(result).get("applied", {})


def test_a_correction_gives_a_short_roller_back_only_what_the_push_paid(tmp_path):
    """Ana pushes (2 momentum) with 1: she pays 1. Clearing the push after the roll gives back
    that 1, not 2; pushing again charges her as a fresh roll would; undo restores each step."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "push": "die"})
    ana = table.add_player("Ana", momentum=1)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(2, 2))  # bad, pushed: 2 momentum spent, Ana has 1
    assert table.player(ana.id).momentum == 0
    cleared = table.set_roll_params(roll.id, {"push": "none", "dots": 2})  # bad, no push: gains nothing
    assert table.player(ana.id).momentum == 1, "she paid 1, so 1 comes back"
    assert applied(table, roll.id).get("momentum") == 0 and not any("Ana had" in w for w in cleared.why)
    again = table.set_roll_params(roll.id, {"push": "die", "dots": 1})  # pushed again: as a fresh roll, short again
    assert table.player(ana.id).momentum == 0 and applied(table, roll.id).get("momentum") == -1
    assert "Ana had 1 momentum for the 2 this roll spends" in again.why, again.why
    table.set_roll_params(roll.id, {"push": "none", "dots": 2})  # corrected twice over: still exact
    assert table.player(ana.id).momentum == 1 and applied(table, roll.id).get("momentum") == 0
    for momentum, paid in ((0, -1), (1, 0), (0, -1)):  # each undo puts the points and the stored amount back
        assert table.undo()
        assert table.player(ana.id).momentum == momentum and applied(table, roll.id).get("momentum") == paid


def test_a_correction_gives_a_short_assister_back_only_what_the_assist_paid(tmp_path):
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "assist": True})
    ana, bo = table.add_player("Ana", momentum=0), table.add_player("Bo", momentum=0)
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    roll = table.record(d6_reading(2, 1))  # bad, assisted: Bo has none for the assist's 1
    assert momenta(table) == {"Ana": 0, "Bo": 0}
    assert "Bo had 0 momentum for the 1 this assist spends" in roll.why
    off = table.set_roll_params(roll.id, {"assist": False, "dots": 2})
    assert momenta(table) == {"Ana": 0, "Bo": 0}, "Bo paid nothing, so nothing comes back"
    assert off.to_json()["assist_by"] is None
    table.update_player(bo.id, momentum=3)
    on = table.set_roll_params(roll.id, {"assist": True, "dots": 1})  # Bo now has the momentum: he pays 1
    assert momenta(table) == {"Ana": 0, "Bo": 2} and applied(table, roll.id).get("assister_momentum") == -1
    assert "Bo assists: 1 momentum" in on.why and not any("Bo had" in w for w in on.why)
    table.correct_die(roll.id, 0, "3")  # the assist kept: Bo pays nothing more
    assert momenta(table) == {"Ana": 0, "Bo": 2} and applied(table, roll.id).get("assister_momentum") == -1
    assert table.undo() and momenta(table) == {"Ana": 0, "Bo": 2}
    assert table.undo() and momenta(table) == {"Ana": 0, "Bo": 3} and applied(table, roll.id).get("assister_momentum") == 0
    assert table.undo() and table.undo()  # Bo's momentum edit, then the assist cleared
    assert momenta(table) == {"Ana": 0, "Bo": 0} and applied(table, roll.id).get("assister_momentum") == 0
    assert table.roll(roll.id).params["assist"] is True


def test_a_correction_takes_back_only_the_gain_a_capped_roller_really_got(tmp_path):
    """Ana at MAX_POINTS gains nothing from a partial (seed 004 "Momentum": +1); a correction
    that makes the roll bad takes nothing from her; luck she could not pay is not given back."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1})
    ana = table.add_player("Ana", momentum=99)
    table.set_roller(ana.id)
    roll = table.record(d6_reading(4))  # partial: +1, but she is at the cap
    assert table.player(ana.id).momentum == 99
    table.correct_die(roll.id, 0, "2")  # bad: no gain to take back
    assert table.player(ana.id).momentum == 99
    table.correct_die(roll.id, 0, "5")  # partial again, still at the cap
    assert table.player(ana.id).momentum == 99 and applied(table, roll.id).get("momentum") == 0
    table.update_player(ana.id, momentum=50)
    table.correct_die(roll.id, 0, "1")  # she gained nothing from it: keeps her 50
    assert table.player(ana.id).momentum == 50
    assert table.undo() and table.player(ana.id).momentum == 50 and applied(table, roll.id).get("momentum") == 0
    assert table.undo() and table.undo() and table.undo() and table.player(ana.id).momentum == 99

    table.set_system("contingency-skill", {"luck": True, "target": 5})
    table.update_player(ana.id, luck=0)
    luck = table.record(reading(("d6", 3), ("d8", 4), ("d10", 9), ("d8", 2)))  # a luck die she cannot pay
    assert table.player(ana.id).luck == 0
    assert any("Ana had 0 luck for the 1 this roll spends" in w for w in luck.why), luck.why
    table.set_roll_params(luck.id, {"luck": False})
    assert table.player(ana.id).luck == 0, "the luck point was never paid"
    assert table.undo() and table.player(ana.id).luck == 0 and applied(table, luck.id).get("luck") == 0



def test_a_correction_gives_the_table_level_momentum_back_only_what_a_roll_with_no_roller_paid(tmp_path):
    """With no roller picked, a push is paid from the table-level momentum, never below 0: a
    correction clearing it gives back what was paid, not the push's 2; undo restores it."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1})
    table.record(d6_reading(4))  # partial: +1 to the table-level count
    table.set_system("charge", {"dots": 1, "push": "die"})
    roll = table.record(d6_reading(2, 2))  # bad, pushed: 2 spent, the table has 1
    assert table.tokens.momentum == 0
    table.set_roll_params(roll.id, {"push": "none", "dots": 2})
    assert table.tokens.momentum == 1, "the roll paid 1, so 1 comes back"
    table.set_roll_params(roll.id, {"push": "die", "dots": 1})  # pushed again, then cleared again: still exact
    assert table.tokens.momentum == 0 and applied(table, roll.id).get("table_momentum") == -1
    table.set_roll_params(roll.id, {"push": "none", "dots": 2})
    assert table.tokens.momentum == 1 and applied(table, roll.id).get("table_momentum") == 0
    for momentum, paid in ((0, -1), (1, 0), (0, -1)):
        assert table.undo()
        assert table.tokens.momentum == momentum and applied(table, roll.id).get("table_momentum") == paid


def test_a_roll_stored_before_its_paid_points_were_takes_its_effects_as_paid(tmp_path):
    """A roll stored without what it really did to points (an older table) is corrected as
    before: its resolution's momentum and assist taken as paid."""
    table = Table(tmp_path / "t.db", "charge", {"dots": 1, "push": "die", "assist": True})
    ana, bo = table.add_player("Ana", momentum=1), table.add_player("Bo", momentum=0)
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    roll = table.record(d6_reading(2, 2, 1))
    (result,) = table._db.execute("SELECT result FROM rolls WHERE id=?", (roll.id,)).fetchone()
    old = json.loads(result)
    del old["applied"]
    table._db.execute("UPDATE rolls SET result=? WHERE id=?", (json.dumps(old), roll.id))
    table.set_roll_params(roll.id, {"push": "none", "assist": False, "dots": 3})
    assert momenta(table) == {"Ana": 2, "Bo": 1} and applied(table, roll.id) == {
        "momentum": 0, "luck": 0, "assister_momentum": 0, "table_momentum": 0, "tension_spent": 0,
        "scene": None, "session": None}  # (its scene and session not known either: they move as before)
    assert table.undo() and momenta(table) == {"Ana": 0, "Bo": 0} and applied(table, roll.id) == {}


# -- odds of a roll ---------------------------------------------------------------------------
def test_roll_json_has_exact_odds_matching_the_rules(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    odds = table.record(d6_reading(6, 4, 2)).to_json()["odds"]
    assert list(odds) == ["bad", "partial", "full", "critical"]
    assert {b: o["exact"] for b, o in odds.items()} == exact(rules.odds("charge", dice=3))
    assert sum(Fraction(o["exact"]) for o in odds.values()) == 1
    assert abs(sum(o["p"] for o in odds.values()) - 1) < 1e-12

    table.set_system("charge", {"dots": 0})  # zero dice: two d6, the lower, no critical
    zero = table.record(d6_reading(6, 6)).to_json()
    assert zero["outcome"] == "full" and zero["odds"]["critical"]["exact"] == "0/1"
    assert {b: o["exact"] for b, o in zero["odds"].items()} == exact(rules.odds("charge", dice=0))

    table.set_system("contingency-action", {})
    roll = table.record(reading(("d8", 8), ("d6", 6), ("d8", 3), ("d6", 2), ("d8", 5)))  # 3 action d8, 2 pressure d6
    odds = roll.to_json()["odds"]
    assert list(odds) == ["disastrous", "grim", "mixed", "clean", "critical"]
    assert {b: o["exact"] for b, o in odds.items()} == exact(rules.odds("contingency-action", dice=3, pressure=2))
    assert odds != {b: o for b, o in table_odds.roll_odds("contingency-action", {}, ["d8"] * 3).items()}  # pressure counts
    assert sum(Fraction(o["exact"]) for o in odds.values()) == 1

    table.set_system("contract", {"difficulty": 6})
    odds = table.record(reading(*[("d10", v) for v in (10, 6, 1, 3, 7, 2)])).to_json()["odds"]
    ref = {"botch": .0365, "failure": .0649, "partial": .4986, "complete": .2986, "exceptional": .1014}  # RULES.md
    assert {b: round(o["p"], 4) for b, o in odds.items()} == ref
    assert all(o["exact"].endswith("/1000000") or 10**6 % Fraction(o["exact"]).denominator == 0 for o in odds.values())

    table.set_system("contingency-skill", {"target": 5})
    odds = table.record(reading(("d6", 5), ("d8", 4), ("d10", 9))).to_json()["odds"]
    assert {b: o["exact"] for b, o in odds.items()} == exact(rules.odds("contingency-skill", dice=["d6", "d8", "d10"], target=5))


def test_rolls_that_cannot_be_resolved_have_no_odds(tmp_path):
    table = Table(tmp_path / "t.db", "charge")
    assert table.record(d6_reading(4, status="unreadable")).to_json()["odds"] is None
    table.set_system("contract", {})
    assert table.record(d6_reading(4, 5)).to_json()["odds"] is None  # invalid: d6 in a d10 system


def test_odds_are_cached_and_quick():
    table_odds._cache.clear()
    t0 = time.perf_counter()
    first = table_odds.roll_odds("contract", {"difficulty": 6}, ["d10"] * 12)
    second = table_odds.roll_odds("contract", {"difficulty": 6}, ["d10"] * 12)
    assert first is second  # the same cached object, not computed again
    assert time.perf_counter() - t0 < 0.5
    for _ in range(200):
        table_odds.roll_odds("contract", {"difficulty": 6}, ["d10"] * 12)
    assert time.perf_counter() - t0 < 1.0


# -- the service and the HTTP API -----------------------------------------------------------------
@pytest.fixture
def service(tmp_path, mock_pins):
    svc = Service(Settings(state_dir=tmp_path, pin=PIN, system="charge"), reader=FakeReader(d6_reading(6, 6, 3)))
    yield svc
    svc.close()


@pytest.fixture
def client(service):
    return create_app(service).test_client()


def settled() -> SettledRoll:
    image = np.full((64, 64, 3), 128, np.uint8)
    return SettledRoll(Frame(image=image, t=0.0, index=0, name="roll.jpg", settled=True), 0.0, 1.0)


def test_player_api_needs_the_pin_and_changes_nothing_without_it(client):
    assert client.post("/api/players", json={"name": "Ana"}, headers=AUTH).status_code == 201
    before = client.get("/api/state").get_json()
    for method, path, body in (("post", "/api/players", {"name": "Eve"}), ("put", "/api/players/1", {"momentum": 9}),
                               ("delete", "/api/players/1", None), ("put", "/api/roller", {"player": 1}),
                               ("post", "/api/session", None)):
        resp = getattr(client, method)(path, json=body)
        assert resp.status_code == 401, path
        wrong = getattr(client, method)(path, json=body, headers={"Authorization": "Bearer 0000"})
        assert wrong.status_code in (401, 429), path
    assert client.get("/api/state").get_json()["players"] == before["players"]
    assert client.get("/api/state").get_json()["roller"] is None


def test_new_session_over_http(client):
    """POST /api/session (GM only): every player's momentum back to 2, answered with the state."""
    client.post("/api/players", json={"name": "Ana", "momentum": 6}, headers=AUTH)
    assert client.post("/api/session").status_code == 401
    assert client.get("/api/players").get_json()[0]["momentum"] == 6
    state = client.post("/api/session", headers=AUTH).get_json()
    assert [p["momentum"] for p in state["players"]] == [2]
    assert client.post("/api/undo", headers=AUTH).get_json()["state"]["players"][0]["momentum"] == 6


def test_player_api(client, service):
    assert client.get("/api/players").get_json() == []
    resp = client.post("/api/players", json={"name": "Ana", "luck": 2}, headers=AUTH)
    assert resp.status_code == 201
    ana = resp.get_json()
    assert ana == {"id": ana["id"], "name": "Ana", "momentum": 2, "luck": 2}
    bo = client.post("/api/players", json={"name": "Bo"}, headers=AUTH).get_json()

    for body, word in (({"momentum": -1}, "momentum"), ({"luck": "many"}, "luck"), ({"momentum": 2, "luck": 1000}, "luck"),
                       ({"player_id": 3}, "player_id"), ([1, 2], "JSON object")):
        resp = client.put(f"/api/players/{ana['id']}", json=body, headers=AUTH)
        assert resp.status_code == 400, body
        error = resp.get_json()["error"]
        assert word in error and "\n" not in error
    assert client.post("/api/players", json={"name": "ana"}, headers=AUTH).status_code == 400
    assert client.post("/api/players", json={"name": "Cy", "momentum": 1.5}, headers=AUTH).status_code == 400
    assert client.get("/api/players").get_json()[0] == ana  # nothing changed

    resp = client.put(f"/api/players/{ana['id']}", json={"momentum": 4, "luck": 1}, headers=AUTH)
    assert resp.status_code == 200 and resp.get_json()["momentum"] == 4
    assert client.put("/api/players/999", json={"momentum": 1}, headers=AUTH).status_code == 404

    for bad in (999, 2**70, "1", 1.0, True):
        resp = client.put("/api/roller", json={"player": bad}, headers=AUTH)
        assert resp.status_code == 400 and "player" in resp.get_json()["error"], bad
    assert client.put("/api/roller", json={}, headers=AUTH).status_code == 400
    state = client.put("/api/roller", json={"player": bo["id"]}, headers=AUTH).get_json()
    assert state["roller"] == bo["id"] and [p["name"] for p in state["players"]] == ["Ana", "Bo"]

    service.handle(settled())  # 6,6,3: critical, +3 momentum to Bo
    state = client.get("/api/state").get_json()
    assert {p["name"]: p["momentum"] for p in state["players"]} == {"Ana": 4, "Bo": 5}
    assert state["tokens"]["momentum"] == 5 and state["last_roll"]["player"]["name"] == "Bo"
    assert service.panel.lit()["omens"] == 5  # the LED bar shows the roller's momentum in charge

    resp = client.delete(f"/api/players/{bo['id']}", headers=AUTH)
    assert resp.status_code == 200 and resp.get_json()["state"]["roller"] is None
    assert [p["name"] for p in client.get("/api/players").get_json()] == ["Ana"]
    assert client.post("/api/undo", headers=AUTH).get_json()["state"]["roller"] == bo["id"]
    assert [p["momentum"] for p in client.get("/api/players").get_json()] == [4, 5]


def test_odds_in_rolls_api_and_live_events(client, service):
    stream = client.get("/api/events", buffered=False)
    chunks = iter(stream.response)
    next(chunks)  # the first state
    service.handle(settled())
    text = ""
    while "event: roll" not in text:
        text += next(chunks).decode()
    data = json.loads(text.split("event: roll\ndata: ", 1)[1].split("\n", 1)[0])
    assert {b: o["exact"] for b, o in data["odds"].items()} == exact(rules.odds("charge", dice=3))
    stream.close()
    listed = client.get("/api/rolls?limit=1").get_json()[0]
    assert listed["odds"] == data["odds"] and listed["outcome"] == "critical"
    worst_first = list(rules.BANDS["charge"])
    assert list(data["odds"]) == list(listed["odds"]) == worst_first, list(listed["odds"])  # README: worst band first
    assert list(client.get("/api/state").get_json()["last_roll"]["odds"]) == worst_first


def test_slow_odds_do_not_hold_a_roll_up_and_follow_when_ready(tmp_path, mock_pins, monkeypatch):
    """Skill-check odds with penalties are enumerated in the background; the roll is sent
    at once, and again with its odds once they are ready."""
    compute = table_odds._compute

    def slower(*args):  # as on a Pi: well past the 50 ms a roll waits for its odds
        time.sleep(1.0)
        return compute(*args)

    monkeypatch.setattr(table_odds, "_compute", slower)
    dice = reading(("d12", 12), ("d12", 7), ("d10", 3))
    params = {"target": 6, "action_number": 3}
    svc = Service(Settings(state_dir=tmp_path, pin=PIN, system="contingency-skill", params=params), reader=FakeReader(dice))
    try:
        table_odds._cache.clear()
        q = svc.hub.subscribe()
        t0 = time.perf_counter()
        roll = svc.handle(settled())
        assert time.perf_counter() - t0 < 0.9  # not held up by the odds
        first = q.get(timeout=5)
        assert first.name == "roll" and first.data["id"] == roll.id and first.data["odds"] is None
        want = exact(rules.odds("contingency-skill", dice=["d12", "d12", "d10"], target=6, action_number=3))
        deadline = time.monotonic() + 60
        got = None
        while got is None and time.monotonic() < deadline:
            try:
                event = q.get(timeout=1)
            except queue.Empty:
                continue
            if event.name == "roll" and event.data["id"] == roll.id and event.data["odds"]:
                got = event.data["odds"]
        assert got is not None and {b: o["exact"] for b, o in got.items()} == want
        assert roll.odds(wait_s=None) is not None
    finally:
        svc.close()


def test_undoing_a_correction_sends_the_roll_as_it_is_now(service):
    """The pages' history holds every roll: an undone correction must reach them as a roll event."""
    service.handle(settled())
    roll = service.table.rolls(1)[0]
    service.correct_die(roll.id, 1, "2")
    q = service.hub.subscribe()
    assert service.table.last_change() == ("correct", roll.id)
    assert service.undo()
    events = []
    while not q.empty():
        events.append(q.get_nowait())
    sent = [e.data for e in events if e.name == "roll"]
    assert sent and sent[0]["id"] == roll.id and sent[0]["outcome"] == "critical", sent
    service.add_tension(1)
    assert service.table.last_change() == ("tension", None)


def test_assister_api_needs_the_pin_and_names_a_bad_player(client, service):
    ana = client.post("/api/players", json={"name": "Ana"}, headers=AUTH).get_json()
    bo = client.post("/api/players", json={"name": "Bo"}, headers=AUTH).get_json()
    assert client.get("/api/state").get_json()["assister"] is None
    for headers in ({}, {"Authorization": "Bearer 0000"}):
        assert client.put("/api/assister", json={"player": bo["id"]}, headers=headers).status_code in (401, 429)
    assert service.table.assister is None
    client.put("/api/roller", json={"player": ana["id"]}, headers=AUTH)
    for bad, word in ((999, "999"), (ana["id"], "roller"), ("1", "'1'"), (2**70, "player")):
        resp = client.put("/api/assister", json={"player": bad}, headers=AUTH)
        assert resp.status_code == 400 and word in resp.get_json()["error"], (bad, resp.get_json())
    assert client.put("/api/assister", json={}, headers=AUTH).status_code == 400
    assert client.put("/api/assister", json={"player": 1, "x": 2}, headers=AUTH).status_code == 400
    state = client.put("/api/assister", json={"player": bo["id"]}, headers=AUTH).get_json()
    assert state["assister"] == bo["id"] and client.get("/api/state").get_json()["assister"] == bo["id"]

    service.table.set_system("charge", {"dots": 2, "assist": True})
    service.handle(settled())  # 6,6,3: critical with the assist's die; Bo pays 1, Ana gains none
    state = client.get("/api/state").get_json()
    assert {p["name"]: p["momentum"] for p in state["players"]} == {"Ana": 2, "Bo": 1}
    assert state["last_roll"]["assist_by"] == {"id": bo["id"], "name": "Bo"}
    assert client.put("/api/assister", json={"player": None}, headers=AUTH).get_json()["assister"] is None
    assert client.post("/api/undo", headers=AUTH).get_json()["state"]["assister"] == bo["id"]
