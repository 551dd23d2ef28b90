"""``pi-table resolve`` / ``odds`` / ``bench-odds`` (INTERFACES.md "Command line")."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from fractions import Fraction

import pytest

import pi_table.cli as kit_cli
from pi_table.rules import cli as rules_cli
from pi_table.rules import odds

HAVE_FULL_CLI = all(importlib.util.find_spec(m) is not None for m in ("pi_table.vision.cli",))


def _rules_only_parser():
    parser = kit_cli.Parser(prog="pi-table")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=kit_cli.Parser)
    rules_cli.register(sub)
    return parser


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run ``pi-table ARGS`` in-process: (exit status, stdout, stderr)."""
    if not HAVE_FULL_CLI:  # the vision stage's CLI is another stage's work; test ours alone meanwhile
        monkeypatch.setattr(kit_cli, "build_parser", _rules_only_parser)

    def run(*argv: str):
        try:
            rc = kit_cli.main(list(argv))
        except SystemExit as exc:
            rc = exc.code
        out = capsys.readouterr()
        return rc, out.out, out.err
    return run


def test_resolve_action_json(cli):
    rc, out, _ = cli("resolve", "contingency-action", "--action", "8,8,8", "--pressure", "6,6,2", "--json")
    assert rc == 0
    d = json.loads(out)
    assert {k: d[k] for k in ("system", "outcome", "critical_levels", "cuts", "tension_tokens")} == {
        "system": "contingency-action", "outcome": "clean", "critical_levels": 0, "cuts": 2, "tension_tokens": 0}


def test_resolve_action_zero_stat(cli):
    rc, out, _ = cli("resolve", "contingency-action", "--action", "8,8", "--stat", "0", "--json")
    assert rc == 0 and json.loads(out)["outcome"] == "clean"


def test_resolve_skill_json(cli):
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10=9", "--target", "5", "--json")
    d = json.loads(out)
    assert rc == 0
    assert {k: d[k] for k in ("system", "outcome", "result", "result_die", "player_omens", "gm_omens")} == {
        "system": "contingency-skill", "outcome": "success", "result": 5, "result_die": "d6", "player_omens": 1,
        "gm_omens": 0}


def test_resolve_skill_all_options(cli):
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10=9", "--target", "5", "--advantage", "1",
                     "--disadvantage", "1", "--luck", "d6=3", "--modifiers", "d10=-2", "--json")
    d = json.loads(out)
    assert rc == 0 and d["result"] == 8 and d["luck"] == ["d6", 3] and d["faces"] == [5, 4, 7]
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=1,d8=4,d10=9", "--action-number", "2", "--json")
    assert rc == 0 and len(json.loads(out)["penalty_options"]) == 3
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=6,d8=3,d10=8", "--reposition", "--json")
    assert json.loads(out)["movement_points"] == 7
    rc, out, _ = cli("resolve", "contingency-skill", "--choose-fail", "--advantage", "1", "--json")
    assert json.loads(out)["gm_omens"] == 3
    rc, out, _ = cli("resolve", "contingency-skill", "--percentile", "90,0", "--chance", "10", "--json")
    assert json.loads(out)["outcome"] == "success"


def test_resolve_skill_mark_condition(cli):
    """Seed 001 "Failing By One": --mark-condition turns a check failed by exactly one into a success
    with a complication; on another check it changes nothing but a clause of the why; it does not
    apply to choosing to fail, a percentile roll or another system (exit 2, one line naming it)."""
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10=9", "--target", "6", "--mark-condition", "--json")
    d = json.loads(out)
    assert rc == 0 and (d["outcome"], d["fail_by_one"], d["marked_condition"]) == ("success", True, True)
    assert "a condition marked: barely succeeds, with a complication" in d["why"]
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10=9", "--target", "7", "--mark-condition", "--json")
    d = json.loads(out)
    assert rc == 0 and (d["outcome"], d["marked_condition"]) == ("failure", False)
    assert "no condition marked: the check did not fail by one" in d["why"]
    for argv in (("--choose-fail",), ("--percentile", "70,5", "--chance", "20")):
        rc, out, err = cli("resolve", "contingency-skill", *argv, "--mark-condition")
        assert (rc, out) == (2, "") and len(err.strip().splitlines()) == 1 and "--mark-condition" in err
    rc, out, err = cli("resolve", "contract", "--dice", "5", "--mark-condition")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--mark-condition" in err


def test_resolve_percentile_face_100(cli):
    # RULES.md contingency-skill: a face "100" counts 0 (seed 001 "Percentile Dice")
    rc, out, err = cli("resolve", "contingency-skill", "--percentile", "100,5", "--chance", "40", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert (d["tens"], d["result"], d["outcome"]) == (0, 5, "failure")
    rc, out, err = cli("resolve", "contingency-skill", "--percentile", "110,5", "--chance", "40")
    assert rc == 2 and "110" in err and len(err.strip().splitlines()) == 1


def test_resolve_bare_luck_face_0_on_d10(cli):
    # RULES.md "Dice faces as read by the camera": a d10 "0" is 10 outside a percentile pair;
    # the luck die is the result die's size, so a bare --luck 0 reads like --luck d10=0
    rc, out, err = cli("resolve", "contingency-skill", "--dice", "d10=5,d4=4,d12=9", "--luck", "0", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert (d["luck"], d["result"]) == (["d10", 10], 15)
    rc, out, _ = cli("resolve", "contingency-skill", "--dice", "d10=5,d4=4,d12=9", "--luck", "d10=0", "--json")
    assert json.loads(out)["luck"] == d["luck"]
    # the result die is the d12 with advantage: a 0 is on no d12
    rc, out, err = cli("resolve", "contingency-skill", "--dice", "d10=5,d4=4,d12=9", "--advantage", "1", "--luck", "0")
    assert rc == 2 and "0" in err and "d12" in err and len(err.strip().splitlines()) == 1


def test_resolve_pool_charge_contract(cli):
    rc, out, _ = cli("resolve", "contingency-pool", "--dice", "6,2,8,1", "--json")
    d = json.loads(out)
    assert rc == 0 and (d["system"], d["outcome"], d["removed"], d["remaining"]) == ("contingency-pool", "grim", 2, 2)
    rc, out, _ = cli("resolve", "charge", "--dice", "6,6,3", "--json")
    d = json.loads(out)
    assert (d["system"], d["outcome"], d["momentum_gained"]) == ("charge", "critical", 3)
    rc, out, _ = cli("resolve", "charge", "--dice", "6,6", "--dots", "0", "--json")
    assert json.loads(out)["outcome"] == "full"
    rc, out, _ = cli("resolve", "contract", "--dice", "10,6,1,3", "--difficulty", "6", "--json")
    d = json.loads(out)
    assert (d["system"], d["outcome"], d["successes"]) == ("contract", "partial", 2)
    rc, out, _ = cli("resolve", "contract", "--dice", "0,6", "--json")  # a printed "0" is 10
    assert json.loads(out)["successes"] == 3


def test_resolve_human_readable(cli):
    rc, out, _ = cli("resolve", "contingency-action", "--action", "1", "--pressure", "6,6")
    assert rc == 0 and "DISASTROUS" in out and "tension" in out


def test_odds_json_shape(cli):
    rc, out, _ = cli("odds", "contract", "--dice", "6", "--difficulty", "6", "--json")
    d = json.loads(out)
    assert rc == 0
    exact = odds("contract", dice=6, difficulty=6)
    for band, p in exact.items():
        assert d[band]["exact"] == f"{p.numerator}/{p.denominator}"
        assert d[band]["p"] == pytest.approx(float(p))
    assert sum(Fraction(d[b]["exact"]) for b in exact) == 1
    assert sum(Fraction(v["exact"]) for v in d["sides"]["successes"].values()) == 1


def test_odds_notation_and_sides(cli):
    rc, out, _ = cli("odds", "contingency-action", "3d", "1p", "+2p", "--json")
    d = json.loads(out)
    assert rc == 0 and d["params"] == {"dice": 3, "pressure": 3}
    assert Fraction(d["clean"]["exact"]) == odds("contingency-action", dice=3, pressure=3)["clean"]
    assert set(d["sides"]) >= {"tension_tokens", "cuts", "critical_levels"}
    rc, out, _ = cli("odds", "contingency-action", "--dice", "3", "--pressure", "3", "--json")
    assert json.loads(out)["clean"] == d["clean"]
    rc, out, _ = cli("odds", "charge", "2d6", "--json")
    assert json.loads(out)["sides"]["momentum_gained"]["3"]["exact"] == "1/36"
    rc, out, _ = cli("odds", "contingency-skill", "d6", "d8", "d10", "--target", "5", "--luck", "yes", "--json")
    d = json.loads(out)
    assert rc == 0 and set(d["sides"]) >= {"player_omens", "gm_omens", "result"}
    rc, out, _ = cli("odds", "contingency-skill", "10%", "--json")
    assert json.loads(out)["success"]["exact"] == "1/10"
    rc, out, _ = cli("odds", "contract", "12d10")
    assert rc == 0 and "exceptional" in out


@pytest.mark.parametrize("argv, bad", [
    (("resolve", "nosuch", "--dice", "1"), "nosuch"),
    (("odds", "nosuch"), "nosuch"),
    (("resolve", "contract", "--dice", "11"), "11"),
    (("resolve", "contingency-action", "--action", "8,9"), "9"),
    (("resolve", "contingency-action", "--action", "8,,8"), "''"),
    (("resolve", "contingency-action", "--action", "8,x"), "x"),
    (("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10:"), "d10:"),
    (("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d20=9"), "d20"),
    (("resolve", "charge", "--dice", "7"), "7"),
    (("odds", "contract", "--dice", "31"), "31"),
    (("odds", "contract", "--dice", "6", "--difficulty", "11"), "11"),
    (("odds", "contingency-action", "--dice", "21"), "21"),
    (("odds", "contingency-action", "3q"), "3q"),
    (("odds", "contract", "--dice", "six"), "six"),
    (("resolve", "contract", "--dice", "5", "--action", "3"), "--action"),
    (("resolve", "contingency-action", "--action", str("8," * 21).strip(",")), "21"),
])
def test_bad_input_exit_2_one_line(cli, argv, bad):
    rc, out, err = cli(*argv)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert bad in err


@pytest.mark.parametrize("argv, named", [
    # seed 000 notation: "3d" is given once ("+2d" adds); it used to roll the last, 2 dice
    (("odds", "contingency-action", "3d", "2d"), ("3d", "2d")),
    (("odds", "contingency-action", "1p", "2p"), ("1p", "2p")),
    (("odds", "contingency-action", "3d", "--action", "2"), ("3d", "--action 2")),
    # choosing to fail rolls nothing: the percentile pair was dropped
    (("resolve", "contingency-skill", "--choose-fail", "--percentile", "70,5"), ("--percentile 70,5", "--choose-fail")),
    (("resolve", "contingency-skill", "--choose-fail", "--target", "5"), ("--target 5", "--choose-fail")),
    # --chance is the X of a percentile roll: ignored next to --dice
    (("resolve", "contingency-skill", "--dice", "d6=5,d4=4,d10=9", "--chance", "50"), ("--chance 50", "--dice")),
    (("resolve", "contingency-skill", "--percentile", "70,5", "--chance", "40", "--target", "5"),
     ("--target 5", "percentile")),
    # a percentile roll ignored the dice, target, luck; a chance without it was ignored
    (("odds", "contingency-skill", "d6", "d8", "d10", "--percentile", "--chance", "30"), ("d6 d8 d10", "percentile")),
    (("odds", "contingency-skill", "40%", "--luck", "yes"), ("--luck yes", "40%")),
    (("odds", "contingency-skill", "40%", "30%"), ("40%", "30%")),
    (("odds", "contingency-skill", "d6", "d8", "d10", "--chance", "30"), ("--chance 30", "--percentile")),
])
def test_conflicting_options_exit_2(cli, argv, named):
    rc, out, err = cli(*argv)
    assert (rc, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and err.startswith("pi-table: error: ")
    for word in named:
        assert word in err


@pytest.mark.parametrize("argv, named", [
    # seed 004: effect is an action roll's; a fortune roll has no consequence (no risk)
    (("resolve", "charge", "--dice", "3", "--roll", "fortune", "--effect", "great"), ("--effect great", "fortune")),
    (("resolve", "charge", "--dice", "3", "--roll", "fortune", "--risk", "high"), ("--risk high", "fortune")),
    (("resolve", "charge", "--dice", "3", "--roll", "determination", "--effect", "great"),
     ("--effect great", "determination")),
])
def test_charge_unused_options_exit_2(cli, argv, named):
    rc, out, err = cli(*argv)
    assert (rc, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and all(word in err for word in named)
    # a determination roll keeps its risk (lowered a step on a critical)
    rc, out, _ = cli("resolve", "charge", "--dice", "6,6", "--roll", "determination", "--risk", "high", "--json")
    assert rc == 0 and json.loads(out)["next_risk"] == "moderate"


def test_notation_adds_with_plus_only(cli):
    rc, out, _ = cli("odds", "contingency-action", "3d", "+2d", "1p", "+2p", "--json")
    assert rc == 0 and json.loads(out)["params"] == {"dice": 5, "pressure": 3}
    rc, out, _ = cli("odds", "contingency-action", "+2d", "3d", "+2p", "1p", "--json")  # "3d" used to drop the +2d
    assert rc == 0 and json.loads(out)["params"] == {"dice": 5, "pressure": 3}


def test_odds_without_system_names_only_system(cli):
    # the notation words are optional (pi-table odds contract works without them)
    rc, out, err = cli("odds")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "system" in err and "notation" not in err


def test_bench_odds_small(cli):
    rc, out, _ = cli("bench-odds", "--small", "--repeats", "3", "--json")
    assert rc == 0
    report = json.loads(out)
    assert report["kit_under_budget"] in (True, False)
    assert len(report["cases"]) == 3
    for case in report["cases"]:
        assert case["kit"]["warm_ms"] > 0
        for lib in ("icepool", "dyce"):
            assert "error" in case[lib] or case[lib]["agrees"]


@pytest.mark.skipif(not HAVE_FULL_CLI, reason="pi_table.vision.cli (another stage) is not there yet")
def test_console_entry_point():
    proc = subprocess.run([sys.executable, "-m", "pi_table", "resolve", "contingency-action", "--action", "8,8,8",
                           "--pressure", "6,6,2", "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["outcome"] == "clean"
    proc = subprocess.run([sys.executable, "-m", "pi_table", "resolve", "nosuch"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "nosuch" in proc.stderr and "Traceback" not in proc.stderr



def test_resolve_pool_with_a_dropped_die_rolls_one_die_fewer(capsys):
    """Seed 000: a die dropped before the roll (greater effect) is not rolled: --pool 4 --drop effect takes 3 faces."""
    from pi_table import rules
    from pi_table.cli import main as cli_main

    assert cli_main(["resolve", "contingency-pool", "--dice", "6,2,8", "--pool", "4", "--drop", "effect"]) == 0
    assert "1 left" in capsys.readouterr().out
    with pytest.raises(ValueError, match="pool of 4 dice less the one dropped, but 4 faces"):
        rules.resolve("contingency-pool", dice=[6, 2, 8, 1], pool=4, drop="effect")


def test_count_errors_say_one_die_and_one_face_in_the_singular():
    """'1 pressure dice (d6) expected', '1 faces given', 'the pool is 1 dice' read wrong to a GM."""
    from pi_table.rules import resolve_dice

    def dice(*kind_faces):
        return [(k, int(f)) for k, f in kind_faces]

    with pytest.raises(ValueError, match=r"^1 pressure die \(d6\) expected, 0 read$"):
        resolve_dice("contingency-action", dice(("d8", "5")), {"pressure": 1})
    with pytest.raises(ValueError, match=r"^dice: 1 face given, the pool is 2 dice \(zero-dice rule\)$"):
        resolve_dice("charge", dice(("d6", "6")), {"dots": 0})
    with pytest.raises(ValueError, match=r"^dice: 2 faces given, the pool is 1 die \(1 \+ 0 bonus\)$"):
        resolve_dice("charge", dice(("d6", "6"), ("d6", "5")), {"dots": 1})


def test_resolve_pool_forces_its_last_die_out(cli):
    """Seed 000 "Diminishing Resource Pools": ``--force mark|tension`` forces a last die that stayed
    out of the pool (RULES.md contingency-pool: "the kit offers both as actions"); the text says who
    paid; ``--force bad`` and ``--force`` on another system are one-line errors, exit 2."""
    rc, out, _ = cli("resolve", "contingency-pool", "--dice", "3", "--force", "tension", "--json")
    d = json.loads(out)
    assert rc == 0 and (d["removed"], d["remaining"], d["depleted"], d["forced"]) == (1, 0, True, "tension")
    assert d["effects"]["tension_spent"] == 1 and d["offers"] == []
    assert "last die forced out: the GM spends a tension token" in d["why"]
    rc, out, _ = cli("resolve", "contingency-pool", "--dice", "3", "--pool", "1", "--force", "mark")
    assert rc == 0 and "last die forced out: the player takes a mark" in out
    rc, out, _ = cli("resolve", "contingency-pool", "--dice", "7", "--force", "tension", "--json")
    assert rc == 0 and json.loads(out)["effects"]["tension_spent"] == 0
    for argv, named in ((("contingency-pool", "--dice", "3", "--force", "bad"), "'bad'"),
                        (("contingency-action", "--action", "3", "--force", "mark"), "--force")):
        rc, _, err = cli("resolve", *argv)
        assert rc == 2 and named in err and len(err.strip().splitlines()) == 1, err
