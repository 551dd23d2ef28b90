"""Rules engine: every worked example of the seeds (../shared/seeds) and RULES.md readings.

Seed files: 000 Contingency action roll and pools, 001 skill check, 002 multiple actions and
movement, 003 The Contract, 004 Charge.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from pi_table import rules
from pi_table.rules import charge, contract, skill
from pi_table.rules import odds, odds_detail, resolve, resolve_dice, validate_params
from pi_table.rules import DEFAULT_PARAMS, TableEffects
from pi_table.rules.contingency import LAST_DIE_OFFERS


# --------------------------------------------------------------------------- seed 000: action roll


@pytest.mark.parametrize("face, band", [(1, "disastrous"), (2, "grim"), (3, "grim"), (4, "grim"), (5, "grim"),
                                        (6, "mixed"), (7, "mixed"), (8, "clean")])
def test_000_ladder_single_die(face, band):
    # seed 000 "Rolling the Dice": Disastrous 1 | Grim 2-5 | Mixed 6-7 | Clean 8 | Critical multiple 8s
    assert resolve("contingency-action", action=[face]).outcome == band


def test_000_highest_die_decides():
    r = resolve("contingency-action", action=[1, 5, 7, 3])
    assert (r.outcome, r.deciding_die) == ("mixed", 7)


def test_000_multiple_eights_critical():
    r = resolve("contingency-action", action=[8, 8, 2])
    assert (r.outcome, r.critical_levels) == ("critical", 1)
    r = resolve("contingency-action", action=[8, 8, 8])
    assert (r.outcome, r.critical_levels) == ("critical", 2)


def test_000_zero_dice_lower_and_no_critical():
    # "roll two d8s and take the lower ... cannot achieve a Critical Success, even if both dice result in an eight"
    assert resolve("contingency-action", action=[8, 8], stat=0).outcome == "clean"
    assert resolve("contingency-action", action=[2, 7], stat=0).outcome == "grim"
    assert resolve("contingency-action", action=[6, 8], stat=0).outcome == "mixed"
    assert resolve("contingency-action", action=[1, 8], stat=0).outcome == "disastrous"


def test_000_clean_cut_by_one_pressure_six():
    # "if you achieved a Clean Outcome ... one of the pressure dice was a six ... becomes a Mixed Outcome"
    r = resolve("contingency-action", action=[8, 3], pressure=[6, 2])
    assert (r.outcome, r.cuts, r.tension_tokens) == ("mixed", 1, 0)


def test_000_three_eights_two_sixes_clean():
    # "three eights (8, 8, 8) ... two sixes (6, 6) ... down to a Clean Outcome"
    r = resolve("contingency-action", action=[8, 8, 8], pressure=[6, 6, 2])
    assert (r.outcome, r.critical_levels, r.cuts, r.tension_tokens) == ("clean", 0, 2, 0)
    assert r.to_json()["system"] == "contingency-action"


def test_000_three_eights_three_sixes_messy():
    # "Or three sixes (6, 6, 6) ... down two levels to become a Messy Outcome"
    assert resolve("contingency-action", action=[8, 8, 8], pressure=[6, 6, 6]).outcome == "mixed"


def test_000_disastrous_cut_gives_tension():
    # "a one (1) along with two sixes (6, 6) ... the Game Moderator gains two Tension Tokens"
    r = resolve("contingency-action", action=[1], pressure=[6, 6])
    assert (r.outcome, r.tension_tokens, r.effects.tension_tokens) == ("disastrous", 2, 2)


def test_000_cut_below_disastrous_from_grim():
    r = resolve("contingency-action", action=[3], pressure=[6, 6, 6])
    assert (r.outcome, r.tension_tokens) == ("disastrous", 2)


def test_000_pressure_without_sixes_no_cut():
    r = resolve("contingency-action", action=[7], pressure=[1, 2, 5])
    assert (r.outcome, r.cuts) == ("mixed", 0)


def test_000_notation_counts_in_odds():
    # "3d 1p +2p" = 3 action dice, 3 pressure dice
    assert odds("contingency-action", dice=3, pressure=3) == odds_detail("contingency-action", dice=3, pressure=3).bands


@pytest.mark.parametrize("kwargs", [
    {"action": [9]}, {"action": [0]}, {"action": []}, {"action": [8], "pressure": [7]},
    {"action": [8] * 21}, {"action": [8, 8, 8], "stat": 2}, {"action": [8], "stat": 0},
    {"action": [8], "stat": 21}, {"action": "888"},
])
def test_000_bad_action_input(kwargs):
    with pytest.raises(ValueError):
        resolve("contingency-action", **kwargs)


def test_bad_value_named():
    with pytest.raises(ValueError, match="9"):
        resolve("contingency-action", action=[8, 9])
    with pytest.raises(ValueError, match="nope"):
        resolve("nope", dice=[1])
    with pytest.raises(ValueError, match="31"):
        odds("contract", dice=31)
    with pytest.raises(ValueError, match="bogus"):
        odds("charge", bogus=1)


# --------------------------------------------------------------------------- seed 000: pools


def test_000_pool_interfaces_example():
    # INTERFACES.md: resolve contingency-pool --dice 6,2,8,1 -> grim, removed 2, remaining 2
    r = resolve("contingency-pool", dice=[6, 2, 8, 1])
    assert (r.outcome, r.removed, r.remaining) == ("grim", 2, 2)
    assert not r.no_removal and not r.depleted


def test_000_pool_used_as_action_reads_highest():
    # "If you are consuming a resource in order to perform an action, the same resolution mechanics apply"
    r = resolve("contingency-pool", dice=[6, 2, 8, 1], action=True)
    assert r.outcome == "clean"
    assert resolve("contingency-pool", dice=[8, 8, 2], action=True).outcome == "critical"


def test_000_pool_removes_six_or_higher():
    r = resolve("contingency-pool", dice=[5, 6, 7, 8])
    assert (r.removed, r.remaining) == (3, 1)


def test_000_pool_no_removal_flags_secondary_effect():
    r = resolve("contingency-pool", dice=[1, 2, 5])
    assert r.no_removal and r.removed == 0 and not r.depleted


def test_000_pool_empty_depleted():
    r = resolve("contingency-pool", dice=[6, 7])
    assert r.depleted and r.remaining == 0 and r.outcome == "mixed"


def test_000_pool_single_die_offers():
    r = resolve("contingency-pool", dice=[3])
    assert r.offers == ("take a mark", "GM spends a tension token")
    assert resolve("contingency-pool", dice=[7]).offers == ()


def test_000_pool_last_die_forced_out_by_a_mark_or_a_tension_token():
    """Seed 000 "Diminishing Resource Pools" (RULES.md contingency-pool): a pool of one die whose die
    is not removed: the player may take a mark, or the GM spend a tension token, to force it out. The
    kit only offered it in a why line; ``force`` now applies it: the die is removed, the pool empty,
    and for "tension" the effects spend one of the GM's tokens. The band is the roll's (no odds move)."""
    for force, why, spent in (("mark", "last die forced out: the player takes a mark", 0),
                              ("tension", "last die forced out: the GM spends a tension token", 1)):
        r = resolve("contingency-pool", dice=[3], force=force)
        assert (r.removed, r.remaining, r.depleted, r.no_removal, r.forced) == (1, 0, True, False, force)
        assert r.offers == () and why in r.why and any("pool empty" in w for w in r.why)
        assert r.outcome == "grim" and r.odds_params() == {"dice": 1, "action": False}
        assert (r.effects.tension_spent, r.effects.net_tension, r.effects.tension_tokens) == (spent, -spent, 0)
        assert r.to_json()["effects"]["tension_spent"] == spent
        dice = resolve_dice("contingency-pool", [("d8", 3)], {"pool": 1, "force": force})
        assert dice.depleted and dice.effects.tension_spent == spent
    # not forced: the offer stays as it was
    plain = resolve("contingency-pool", dice=[3])
    assert plain.offers == LAST_DIE_OFFERS and plain.forced == "none" and plain.remaining == 1
    assert plain.effects == resolve("contingency-pool", dice=[3], force="none").effects == TableEffects()


@pytest.mark.parametrize("dice", [[7], [3, 2], [6, 7], [3, 8]])
@pytest.mark.parametrize("force", ["mark", "tension"])
def test_000_pool_force_where_no_last_die_stayed_changes_nothing_but_the_why(dice, force):
    """``force`` on a roll whose offer does not apply (the last die left, or more dice rolled) changes
    nothing but one why clause saying so; it never makes the roll invalid."""
    plain, forced = resolve("contingency-pool", dice=dice), resolve("contingency-pool", dice=dice, force=force)
    strip = lambda r: {k: v for k, v in r.to_json().items() if k != "why"}  # noqa: E731
    assert strip(forced) == strip(plain) and forced.effects == TableEffects()
    extra = [w for w in forced.why if w not in plain.why]
    assert extra == [f"force {force}: no last die stayed to force out"]
    assert resolve_dice("contingency-pool", [("d8", f) for f in dice], {"force": force}).outcome == plain.outcome


def test_000_pool_force_bad_value_is_named():
    for bad in ("bad", None, 1, True):
        with pytest.raises(ValueError, match=f"force must be one of none, mark, tension; got {bad!r}"):
            validate_params("contingency-pool", {"force": bad})
        with pytest.raises(ValueError, match="force"):
            resolve("contingency-pool", dice=[3], force=bad)
    assert DEFAULT_PARAMS["contingency-pool"]["force"] == "none"
    assert validate_params("contingency-pool", {})["force"] == "none"


def test_000_pool_drop_recorded():
    r = resolve("contingency-pool", dice=[3, 4], drop="consequence")
    assert r.pool_before == 3 and r.drop == "consequence"
    with pytest.raises(ValueError, match="sideways"):
        resolve("contingency-pool", dice=[3], drop="sideways")


def test_000_pool_pressure_never_applies():
    with pytest.raises(ValueError, match="pressure"):
        resolve("contingency-pool", dice=[3], pressure=[6])
    assert resolve_dice("contingency-pool", [("d8", 3)], {}).outcome == "grim"
    with pytest.raises(ValueError, match="d6"):
        resolve_dice("contingency-pool", [("d8", 3), ("d6", 6)], {})


# --------------------------------------------------------------------------- seed 001: skill check


def test_001_middle_of_5_4_9():
    # "if your dice result in a 5, 4 and 9, then the outcome of your dice roll will be 5"
    r = resolve("contingency-skill", dice=[("d6", 5), ("d4", 4), ("d10", 9)], target=5)
    assert (r.outcome, r.result, r.result_die, r.player_omens, r.gm_omens) == ("success", 5, "d6", 1, 0)


def test_001_advantage_disadvantage():
    dice = [("d6", 5), ("d4", 4), ("d10", 9)]
    assert resolve("contingency-skill", dice=dice, advantage=1).result == 9
    assert resolve("contingency-skill", dice=dice, disadvantage=1).result == 4
    # "two units of advantage and one unit of disadvantage ... a single unit of advantage"
    assert resolve("contingency-skill", dice=dice, advantage=2, disadvantage=1).result == 9
    assert resolve("contingency-skill", dice=dice, advantage=2, disadvantage=2).result == 5
    assert resolve("contingency-skill", dice=dice, advantage=1, disadvantage=3).result == 4


def test_001_sort_by_face_then_size():
    # "sorting the dice from lowest face value to highest, then by dice size"
    r = resolve("contingency-skill", dice=[("d10", 4), ("d6", 4), ("d8", 2)])
    assert (r.result, r.result_die) == (4, "d6")  # order 2(d8), 4(d6), 4(d10): middle is the d6
    r = resolve("contingency-skill", dice=[("d10", 4), ("d6", 4), ("d8", 2)], advantage=1)
    assert r.result_die == "d10"
    r = resolve("contingency-skill", dice=[("d10", 4), ("d6", 4), ("d8", 8)], disadvantage=1)
    assert r.result_die == "d6"


def test_001_monique_luck_die_is_d6():
    # "Monique ... d6, a d8 and a d10 ... 3, 1 and 9 ... their Luck Dice for this roll will be a D6"
    r = resolve("contingency-skill", dice=[("d6", 3), ("d8", 1), ("d10", 9)], target=5)
    assert r.result_die == "d6" and r.result == 3
    assert (r.player_omens, r.gm_omens) == (1, 1)  # the 9 and the 1
    lucky = resolve("contingency-skill", dice=[("d6", 3), ("d8", 1), ("d10", 9)], target=5, luck=("d6", 4))
    assert (lucky.result, lucky.outcome) == (7, "success")
    with pytest.raises(ValueError, match="d8"):
        resolve("contingency-skill", dice=[("d6", 3), ("d8", 1), ("d10", 9)], luck=("d8", 4))
    with pytest.raises(ValueError, match="7"):
        resolve("contingency-skill", dice=[("d6", 3), ("d8", 1), ("d10", 9)], luck=("d6", 7))


def test_001_luck_die_counts_for_omens():
    r = resolve("contingency-skill", dice=[("d12", 12), ("d12", 12), ("d12", 12)], luck=("d12", 12), target=11)
    # "it is possible, although highly improbably, to gain up to 12 omens from a single roll"
    assert r.player_omens == 12 and r.result == 24
    r = resolve("contingency-skill", dice=[("d8", 5), ("d8", 6), ("d8", 7)], luck=("d8", 1))
    assert (r.gm_omens, r.result) == (1, 7)


@pytest.mark.parametrize("face, omens", [(1, 0), (7, 0), (8, 1), (9, 1), (10, 2), (11, 2), (12, 3)])
def test_001_player_omen_table(face, omens):
    assert skill.player_omens(face) == omens


def test_001_gm_omen_per_one_and_modifiers():
    r = resolve("contingency-skill", dice=[("d4", 1), ("d6", 1), ("d8", 3)])
    assert r.gm_omens == 2 and r.effects.gm_omens == 2
    # modifiers first, never below 1; omens use the modified face
    r = resolve("contingency-skill", dice=[("d6", 5), ("d4", 4), ("d10", 9)], modifiers={"d10": -2})
    assert r.faces == (5, 4, 7) and r.player_omens == 0
    r = resolve("contingency-skill", dice=[("d6", 2), ("d4", 4), ("d10", 9)], modifiers={"d6": -3})
    assert r.faces[0] == 1 and r.gm_omens == 1
    r = resolve("contingency-skill", dice=[("d6", 5), ("d4", 4), ("d10", 9)], modifiers={"d10": 1})
    assert r.player_omens == 2


def test_001_difficulty_table_and_target_met():
    assert skill.difficulty_name(1) == "Automatic" and skill.difficulty_name(5) == "Tricky"
    assert skill.difficulty_name(14) == "Near Impossible"
    assert skill.parse_target("hard") == 6
    # "reaches or exceeds the target difficulty"; Aial's Hard (6) needs 6 or higher (seed 002)
    assert resolve("contingency-skill", dice=[("d6", 6), ("d8", 2), ("d10", 9)], target="hard").outcome == "success"
    assert resolve("contingency-skill", dice=[("d6", 5), ("d8", 2), ("d10", 9)], target=6).outcome == "failure"


def test_001_fail_by_one_offered():
    r = resolve("contingency-skill", dice=[("d6", 5), ("d8", 2), ("d10", 9)], target=6)
    assert r.fail_by_one and r.outcome == "failure"
    assert not resolve("contingency-skill", dice=[("d6", 4), ("d8", 2), ("d10", 9)], target=6).fail_by_one


def test_001_fail_by_one_a_condition_marked_barely_succeeds():
    """Seed 001 "Failing By One" (RULES.md contingency-skill: offered, never applied silently):
    with ``mark_condition`` a check failed by exactly one is a success with a complication, its
    omens unchanged; the offer alone (no param) leaves it a failure."""
    dice = [("d6", 5), ("d8", 2), ("d10", 9)]  # middle die d6 5 vs Hard 6
    plain = resolve("contingency-skill", dice=dice, target=6)
    r = resolve("contingency-skill", dice=dice, target=6, mark_condition=True)
    assert (r.outcome, r.fail_by_one, r.marked_condition, r.margin) == ("success", True, True, -1)
    assert "a condition marked: barely succeeds, with a complication" in r.why
    assert not any("may mark" in w for w in r.why)
    assert r.effects == plain.effects and (r.player_omens, r.gm_omens) == (plain.player_omens, plain.gm_omens)
    assert r.to_json()["marked_condition"] is True and plain.to_json()["marked_condition"] is False
    assert (plain.outcome, plain.marked_condition) == ("failure", False)
    # the table's params carry it, the camera's dice resolved under them (luck die included)
    params = validate_params("contingency-skill", {"target": 6, "mark_condition": True})
    assert rules.DEFAULT_PARAMS["contingency-skill"]["mark_condition"] is False
    assert resolve_dice("contingency-skill", dice, params).outcome == "success"
    lucky = resolve_dice("contingency-skill", [*dice, ("d6", 1)], {"target": 7, "luck": True, "mark_condition": True})
    assert (lucky.result, lucky.outcome, lucky.gm_omens) == (6, "success", 1)


@pytest.mark.parametrize("kw, outcome, clause", [
    ({"dice": [("d6", 6), ("d8", 2), ("d10", 9)], "target": 6}, "success", "did not fail by one"),
    ({"dice": [("d6", 4), ("d8", 2), ("d10", 9)], "target": 6}, "failure", "did not fail by one"),  # by two
    ({"percentile": (70, 5), "chance": 20}, "failure", "a percentile roll has no failing by one"),  # 75 vs 80+
])
def test_001_mark_condition_not_applicable_changes_nothing_but_the_why(kw, outcome, clause):
    """A condition marked on a check not failed by one (or a percentile roll) changes nothing: the
    same outcome, effects and fields, one short clause more in the why; never an error."""
    plain = resolve("contingency-skill", **kw)
    marked = resolve("contingency-skill", **kw, mark_condition=True)
    assert marked.outcome == plain.outcome == outcome and marked.effects == plain.effects
    extra = [w for w in marked.why if w not in plain.why]
    assert len(marked.why) == len(plain.why) + 1 and len(extra) == 1 and clause in extra[0]
    assert getattr(marked, "marked_condition", False) is False
    # exact odds of the table's params do not choke on it (it changes no odds)
    from pi_table.table.odds import odds_args
    params = validate_params("contingency-skill", {**({"percentile": True, "chance": 20} if "percentile" in kw else {}),
                                                   "mark_condition": True})
    assert odds("contingency-skill", **odds_args("contingency-skill", params, ["d6", "d8", "d10"]))


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_001_mark_condition_bad_value_named(bad):
    with pytest.raises(ValueError, match="mark_condition"):
        validate_params("contingency-skill", {"mark_condition": bad})
    with pytest.raises(ValueError, match="mark_condition"):
        resolve("contingency-skill", dice=[("d6", 5), ("d8", 2), ("d10", 9)], target=6, mark_condition=bad)
    with pytest.raises(ValueError, match="choosing to fail"):
        resolve("contingency-skill", choose_fail=True, mark_condition=True)


@pytest.mark.parametrize("adv, dis, omens", [(0, 1, 1), (0, 0, 2), (1, 0, 3), (2, 1, 3), (1, 2, 1)])
def test_001_choosing_to_fail(adv, dis, omens):
    r = resolve("contingency-skill", choose_fail=True, advantage=adv, disadvantage=dis)
    assert (r.outcome, r.gm_omens, r.effects.gm_omens) == ("failure", omens, omens)


def test_001_percentile():
    # "a 7 and 30 will result in 37"; a "100" face counts 0; "10% chance ... roll a 90 or higher"
    assert skill.percentile_result(30, 7) == 37
    assert skill.percentile_result(0, 10) == 0
    assert resolve("contingency-skill", percentile=(90, 0), chance=10).outcome == "success"
    assert resolve("contingency-skill", percentile=(80, 9), chance=10).outcome == "failure"
    assert odds("contingency-skill", percentile=True, chance=10)["success"] == Fraction(1, 10)
    with pytest.raises(ValueError, match="35"):
        skill.percentile_result(35, 1)


def test_001_percentile_face_100_counts_zero():
    # seed 001 "Percentile Dice": a face "100" -> ignore the hundreds unit, the face results in zero
    from pi_table.vision.dice import face_value
    assert skill.percentile_result(100, 5) == 5
    r = resolve("contingency-skill", percentile=(100, 5), chance=40)
    assert (r.tens, r.result, r.outcome) == (0, 5, "failure")
    assert face_value("d10-tens", "100") == 0
    assert face_value("d10-tens", "00") == 0 and face_value("d10-tens", "90") == 90
    r = resolve_dice("contingency-skill", [("d10-tens", face_value("d10-tens", "100")), ("d10", 10)],
                     {"percentile": True, "chance": 100})
    assert r.result == 0 and r.outcome == "success"
    for bad in ("110", "95", "200", "-10"):
        with pytest.raises(ValueError, match=bad):
            face_value("d10-tens", bad)
    with pytest.raises(ValueError, match="100"):
        face_value("d10", "100")  # only the tens die has a "100" face
    for bad in (110, 95, -10):
        with pytest.raises(ValueError, match=str(bad)):
            skill.percentile_result(bad, 1)


def test_001_bad_skill_input():
    with pytest.raises(ValueError, match="d20"):
        resolve("contingency-skill", dice=[("d20", 5), ("d4", 4), ("d10", 9)])
    with pytest.raises(ValueError, match="2"):
        resolve("contingency-skill", dice=[("d6", 5), ("d4", 4)])
    with pytest.raises(ValueError, match="5"):
        resolve("contingency-skill", dice=[("d4", 5), ("d4", 4), ("d10", 9)])


# --------------------------------------------------------------------------- seed 002: combat


def test_002_michael_three_penalty_options():
    # Michael rolls 1, 4, 9 on his second action: one -2 penalty, the 1 cannot be reduced.
    r = resolve("contingency-skill", dice=[("d6", 1), ("d8", 4), ("d10", 9)], action_number=2, target=3)
    faces = {o.faces for o in r.penalty_options}
    assert faces == {(1, 2, 9), (1, 4, 7), (1, 3, 8)}
    by = {o.faces: o for o in r.penalty_options}
    assert (by[(1, 2, 9)].result, by[(1, 2, 9)].player_omens) == (2, 1)   # 4 -> 2, keeps the omen
    assert (by[(1, 4, 7)].result, by[(1, 4, 7)].player_omens) == (4, 0)   # 9 -> 7, loses the omen
    assert (by[(1, 3, 8)].result, by[(1, 3, 8)].player_omens) == (3, 1)   # both by 1
    # recommended: success first, then most omens -> (1, 3, 8) at target 3
    assert r.penalty_options[r.penalty_recommended].faces == (1, 3, 8)
    assert r.faces == (1, 3, 8) and r.outcome == "success"
    r4 = resolve("contingency-skill", dice=[("d6", 1), ("d8", 4), ("d10", 9)], action_number=2, target=4)
    assert r4.faces == (1, 4, 7) and r4.outcome == "success"


def test_002_compounding_penalty_third_action():
    r = resolve("contingency-skill", dice=[("d6", 6), ("d8", 6), ("d10", 6)], action_number=3)
    assert r.penalties == 2
    assert all(sum(o.reductions) == 4 for o in r.penalty_options)


def test_002_penalty_floor_at_one():
    r = resolve("contingency-skill", dice=[("d6", 1), ("d8", 1), ("d10", 2)], action_number=2)
    assert {o.faces for o in r.penalty_options} == {(1, 1, 1)}


def test_002_penalty_choice():
    r = resolve("contingency-skill", dice=[("d6", 1), ("d8", 4), ("d10", 9)], action_number=2,
                penalty_choice=0)
    assert r.penalty_applied == 0
    with pytest.raises(ValueError, match="penalty_choice"):
        resolve("contingency-skill", dice=[("d6", 1), ("d8", 4), ("d10", 9)], action_number=2, penalty_choice=9)


def test_002_shawn_seven_movement_points():
    # "If Shawn was able to get a result of six (6) then they will have seven (7) Movement Points ...
    #  allowing them to move up to three zones away"
    r = resolve("contingency-skill", dice=[("d6", 6), ("d8", 3), ("d10", 8)], reposition=True)
    assert (r.result, r.movement_points, r.zones_moved, r.points_left) == (6, 7, 3, 1)


def test_002_challenging_terrain():
    # "+2 ... and +1 ... total of 4 Movement Points"
    assert skill.move_cost(2, 1) == 4
    assert skill.move_cost(0, 0) == 2
    assert skill.zones_reached(7, [0, 2, 1, 0]) == (1, 3)  # 0->2 costs 4, 2->1 costs 4 > 3
    assert skill.zones_reached(7) == (3, 1)


# --------------------------------------------------------------------------- seed 003: The Contract


def test_003_interfaces_example():
    r = resolve("contract", dice=[10, 6, 1, 3], difficulty=6)
    assert (r.outcome, r.successes, r.doubles, r.botches) == ("partial", 2, 1, 1)


@pytest.mark.parametrize("total, band", [(-2, "botch"), (-1, "botch"), (0, "failure"), (1, "partial"), (3, "partial"),
                                         (4, "complete"), (5, "complete"), (6, "exceptional"), (12, "exceptional")])
def test_003_outcome_bands(total, band):
    assert contract.band_of(total) == band


def test_003_botches_and_doubles():
    assert resolve("contract", dice=[1, 1, 5]).outcome == "botch"
    assert resolve("contract", dice=[10, 10, 10]).successes == 6
    assert resolve("contract", dice=[10, 10, 10]).outcome == "exceptional"
    assert resolve("contract", dice=[2, 3, 4, 5]).outcome == "failure"
    assert resolve("contract", dice=[7, 7], difficulty=8).successes == 0
    assert resolve("contract", dice=[2], difficulty=2).successes == 1


def test_003_reference_odds_n6_d6():
    o = odds("contract", dice=6, difficulty=6)
    ref = {"botch": .0365, "failure": .0649, "partial": .4986, "complete": .2986, "exceptional": .1014}
    for band, p in ref.items():
        assert abs(float(o[band]) - p) < 5e-5, band
        assert (o[band] * 10**6).denominator == 1
    assert sum(o.values()) == 1


@pytest.mark.parametrize("kwargs", [{"dice": 0}, {"dice": 31}, {"difficulty": 1}, {"difficulty": 11}, {"dice": True}])
def test_003_bad_odds(kwargs):
    with pytest.raises(ValueError):
        odds("contract", **kwargs)


def test_003_bad_faces():
    with pytest.raises(ValueError, match="11"):
        resolve("contract", dice=[11])
    with pytest.raises(ValueError, match="0"):
        resolve("contract", dice=[0])
    with pytest.raises(ValueError, match="1"):
        resolve("contract", dice=[5], difficulty=1)


# --------------------------------------------------------------------------- seed 004: Charge


@pytest.mark.parametrize("dice, band, gain", [
    ([6, 6, 3], "critical", 3), ([6, 2], "full", 2), ([5, 4, 1], "partial", 1), ([4], "partial", 1),
    ([3, 2, 1], "bad", 0),
])
def test_004_momentum_table(dice, band, gain):
    # seed 004 "Momentum": 4-5 -> 1, 6 -> 2, 66 -> 3; "higher than 3" gains momentum
    r = resolve("charge", dice=dice)
    assert (r.outcome, r.momentum_gained, r.effects.momentum) == (band, gain, gain)


def test_004_spent_momentum_gains_none():
    # "When momentum is spent for a roll, that roll cannot in turn generate momentum."
    assert resolve("charge", dice=[6, 6, 3], dots=2, push="die").momentum_gained == 0
    assert resolve("charge", dice=[6, 3], dots=1, assist=True).momentum_gained == 0
    r = resolve("charge", dice=[6, 3], dots=1, tension=True)
    assert r.momentum_gained == 2 and r.bonus_dice == 1


def test_004_zero_dice():
    # "zero (or negative) dice, roll two dice and take the single lowest ... can't roll a critical"
    assert resolve("charge", dice=[6, 6], dots=0).outcome == "full"
    assert resolve("charge", dice=[6, 2], dots=0).outcome == "bad"
    assert resolve("charge", dice=[5, 6], dots=-1).outcome == "partial"
    assert odds("charge", dice=0)["critical"] == 0


def test_004_consequences_and_clocks():
    r = resolve("charge", dice=[4, 2], risk="high")
    assert r.consequence and r.consequence_rating == 3
    assert resolve("charge", dice=[3], risk="low").consequence_rating == 1
    assert resolve("charge", dice=[6]).consequence is False
    assert charge.progress_ticks("limited") == 1 and charge.progress_ticks("great") == 3
    assert resolve("charge", dice=[6], effect="limited").progress_ticks == 1
    assert charge.tick_clock(3, 4, 2) == (4, True)
    assert charge.take_stress(3, 1) == (0, True) and charge.take_stress(1, 2) == (3, False)
    with pytest.raises(ValueError, match="5"):
        charge.tick_clock(0, 5, 1)


def test_004_determination_and_fortune():
    r = resolve("charge", dice=[6, 6], dots=2, roll="determination", risk="high")
    assert r.determination.startswith("the consequence is avoided") and r.next_risk == "moderate"
    assert r.momentum_spent == 2 and r.momentum_gained == 0
    assert resolve("charge", dice=[4], roll="determination").determination == "the consequence is reduced"
    f = resolve("charge", dice=[6, 6], roll="fortune")
    assert f.outcome == "critical" and f.momentum_gained == 0 and not f.consequence
    assert charge.flashback_cost(2) == 2
    with pytest.raises(ValueError):
        charge.flashback_cost(3)


def test_004_bonus_dice_rules():
    with pytest.raises(ValueError, match="choose one"):
        resolve("charge", dice=[6, 6, 3], dots=1, push="die", tension=True)
    with pytest.raises(ValueError, match="dice"):
        resolve("charge", dice=[6, 6], dots=3)


# --------------------------------------------------------------------------- camera routing


def test_resolve_dice_routes_kinds():
    r = resolve_dice("contingency-action", [("d8", 8), ("d8", 8), ("d8", 8), ("d6", 6), ("d6", 6), ("d6", 2)], {})
    assert (r.outcome, r.cuts) == ("clean", 2)
    r = resolve_dice("contract", [("d10", 10), ("d10", 6), ("d10", 1), ("d10", 3)], {"difficulty": 6})
    assert r.successes == 2
    r = resolve_dice("contingency-skill", [("d6", 3), ("d8", 1), ("d10", 9), ("d6", 4)], {"luck": True, "target": 5})
    assert r.result == 7
    r = resolve_dice("contingency-skill", [("d10-tens", 90), ("d10", 10)], {"percentile": True, "chance": 10})
    assert r.result == 90 and r.outcome == "success"
    with pytest.raises(ValueError, match="d8"):
        resolve_dice("charge", [("d8", 3)], {})


def test_validate_params_and_defaults():
    for system in rules.SYSTEMS:
        assert validate_params(system, {}) == rules.DEFAULT_PARAMS[system]
        assert set(rules.BANDS[system]) == set(odds_detail(system).bands)
    with pytest.raises(ValueError, match="colour"):
        validate_params("charge", {"colour": "red"})
    with pytest.raises(ValueError, match="12"):
        validate_params("contract", {"difficulty": 12})


def test_each_param_is_checked_as_it_is_described():
    """Each system's parameters (rules.PARAMS) are both the checks validate_params runs and what
    GET /api/systems tells the /gm form: every choice, both ends of a range and a blank where one
    is allowed pass on their own (the other parameters at their defaults); one past either end, a
    value off the choices, a non-bool and a blank where none is allowed fail, naming the key. A
    parameter whose description and check drifted apart fails here."""
    for system in rules.SYSTEMS:
        params = rules.PARAMS[system]
        assert rules.DEFAULT_PARAMS[system] == {p.name: p.default for p in params}
        for p in params:
            good, bad = [p.default], []
            if p.type == "choice":
                good += list(p.choices)
                bad += ["nonsense", 1]
            elif p.type == "int":
                good += [p.low, p.high]
                bad += [p.low - 1, p.high + 1, 2.5, True]
            elif p.type == "bool":
                good += [True, False]
                bad += ["yes", 1]
            else:  # json: a list or mapping
                bad += ["nonsense", 3]
            (good if p.blank else bad).append(None)
            for value in good:
                validate_params(system, {p.name: value})
            for value in bad:
                with pytest.raises(ValueError, match=p.name if p.name != "path" else "path|terrain"):
                    validate_params(system, {p.name: value})
    skill_target = next(p for p in rules.PARAMS["contingency-skill"] if p.name == "target")
    assert validate_params("contingency-skill", {"target": "tricky"})["target"] == 5 == skill_target.check("Tricky")
    assert [p.name for p in rules.next_roll_params("contingency-pool")] == ["pool", "drop", "action"]
    with pytest.raises(ValueError, match="unknown system 'chess'"):
        rules.next_roll_params("chess")
    with pytest.raises(ValueError, match="type must be one of"):
        rules.Param("x", "float", 0.0, "x")


def test_odds_params_round_trip():
    r = resolve("contingency-skill", dice=[("d6", 3), ("d8", 1), ("d10", 9)], luck=("d6", 2))
    assert set(odds("contingency-skill", **r.odds_params())) == {"success", "failure"}
    r = resolve("contingency-pool", dice=[6, 2, 8, 1])
    assert sum(odds("contingency-pool", **r.odds_params()).values()) == 1
