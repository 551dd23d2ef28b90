"""Contingency RPG skill checks (seeds 001 and 002): three dice, the middle one decides.

Readings are those of ../shared/RULES.md, section ``contingency-skill``:

- Three dice, each d4, d6, d8, d10 or d12 (wellness, attribute, skill; seed 001 "Making
  Skill Rolls"). Face modifiers first, no die below 1.
- Result die: sort by (modified face, die size) ascending, take the middle; net advantage
  takes the last, net disadvantage the first; units cancel one for one (seed 001
  "Advantage and Disadvantage").
- Success: result (+ luck die) >= target (seed 001 "Typical Difficulty Targets").
- Failing by exactly one: the player may mark a condition to barely succeed (offered,
  never applied; seed 001 "Failing By One"). The GM takes the offer up with the param
  ``mark_condition``: a check failed by exactly one is then a success, with a complication;
  on any other check (or a percentile roll) it changes nothing.
- Luck die: one luck point, the result die's size, face added to the result, counts for
  omens (seed 001 "Luck Dice").
- Player omens per die (modified faces, luck die included): 8-9 -> 1, 10-11 -> 2, 12 -> 3
  (a modified face above 12 also gives 3); GM omens: +1 per die whose modified face is 1
  (seed 001 "Omen Tokens").
- Choosing to fail: no roll; the GM gains 1 (disadvantage), 2 (neither), 3 (advantage) omens
  (seed 001 "Choosing to Fail").
- Multiple actions (seed 002 "Performing Multiple Actions"): the n-th action of a round
  carries n-1 penalties of -2, each as -2 to one die or -1 to two dice. A penalty part never
  targets a die already at 1 (Michael's example has three options, none touching his 1).
  Instant actions add no penalty (they roll with the action they are part of); triggered
  actions count as actions.
- Reposition (seed 002 "Repositioning", "Challenging Terrain"): movement points = 1 + result;
  a move costs 2 plus the higher terrain modifier of the two zones.
- Percentile d100 (seed 001 "Percentile Dice", "Percentage Chance"): tens d10 (00..90; a
  "100" face counts 0) plus ones d10 (0..9; a "0" read as 10 counts 0), result 0..99; "X% chance" succeeds on a
  result >= 100 - X.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, product
from math import lcm
from typing import Any, Iterable, Mapping, Sequence

from pi_table.rules._common import (
    OddsDetail,
    Resolution,
    TableEffects,
    check_bool,
    check_int,
    check_params,
    defaults_of,
    plural,
    Param,
)

SYSTEM = "contingency-skill"
BANDS: tuple[str, ...] = ("success", "failure")
#: Die kinds of a skill check (seed 001 "Dice Notation"; d20 and d100 are not pool dice).
SIZES: dict[str, int] = {"d4": 4, "d6": 6, "d8": 8, "d10": 10, "d12": 12}
#: Difficulty descriptors (seed 001 "Typical Difficulty Targets"); 11 stands for 11+.
DIFFICULTIES: dict[int, str] = {
    1: "Automatic", 2: "Very Easy", 3: "Easy", 4: "Moderate", 5: "Tricky", 6: "Hard",
    7: "Difficult", 8: "Very Difficult", 9: "Improbable", 10: "Inconceivable", 11: "Near Impossible",
}
MAX_TARGET = 30
MAX_UNITS = 10
MAX_MODIFIER = 20
MAX_ACTIONS = 6
MOVE_COST = 2


# --------------------------------------------------------------------------- small rules


def difficulty_name(target: int) -> str:
    """Descriptor of a target difficulty: 1 Automatic .. 10 Inconceivable, 11+ Near Impossible."""
    return DIFFICULTIES[min(max(target, 1), 11)]


def parse_target(value: Any) -> int:
    """A target as an int (1..30) or a descriptor of the difficulty table ("tricky", "very easy").

    Raises ValueError naming the value otherwise.
    """
    if isinstance(value, str):
        key = value.strip().lower().replace("-", " ").replace("_", " ")
        for number, name in DIFFICULTIES.items():
            if name.lower() == key:
                return number
        try:
            value = int(key)
        except ValueError:
            raise ValueError(f"target must be 1..{MAX_TARGET} or a difficulty name "
                             f"({', '.join(n.lower() for n in DIFFICULTIES.values())}); got {value!r}") from None
    return check_int("target", value, 1, MAX_TARGET)


def player_omens(face: int) -> int:
    """Player omens of one modified face: 8-9 -> 1, 10-11 -> 2, 12+ -> 3, else 0 (seed 001)."""
    if face < 8:
        return 0
    if face < 10:
        return 1
    if face < 12:
        return 2
    return 3


def gm_omens(face: int) -> int:
    """GM omens of one modified face: 1 for a face of 1, else 0 (seed 001)."""
    return 1 if face == 1 else 0


def choose_to_fail_omens(net_advantage: int) -> int:
    """GM omens for choosing to fail: 1 with disadvantage, 2 with neither, 3 with advantage."""
    return 1 if net_advantage < 0 else 3 if net_advantage > 0 else 2


def movement_points(result: int) -> int:
    """Reposition movement points: 1 + the skill roll's result (seed 002 "Repositioning")."""
    return 1 + result


def move_cost(terrain_from: int, terrain_to: int) -> int:
    """Movement points to move between two zones: 2 + the higher terrain modifier (seed 002
    "Challenging Terrain"). Raises ValueError for a negative or non-integer modifier."""
    check_int("terrain", terrain_from, 0, 20)
    check_int("terrain", terrain_to, 0, 20)
    return MOVE_COST + max(terrain_from, terrain_to)


def zones_reached(points: int, path: Sequence[int] | None = None) -> tuple[int, int]:
    """How far ``points`` movement points go: ``(zones moved, points left)``.

    Args:
        points: movement points (>= 0).
        path: terrain modifiers of the zones on the way, the starting zone first; None =
            open ground all the way (each move costs 2).
    """
    check_int("movement points", points, 0, 1000)
    if path is None:
        return points // MOVE_COST, points % MOVE_COST
    terrains = [check_int("terrain", t, 0, 20) for t in path]
    moved = 0
    for a, b in zip(terrains, terrains[1:]):
        cost = move_cost(a, b)
        if cost > points:
            break
        points -= cost
        moved += 1
    return moved, points


def percentile_tens(tens: int) -> int:
    """Value of a percentile tens d10: 0, 10, .. 90; a face "100" counts 0 (seed 001
    "Percentile Dice": ignore the hundreds unit; RULES.md ``contingency-skill``).

    Raises ValueError naming any other value.
    """
    if isinstance(tens, bool) or not isinstance(tens, int) or tens % 10 or not 0 <= tens <= 100:
        raise ValueError(f"percentile tens die must be 0, 10, .. 90 (or 100, counted 0), got {tens!r}")
    return tens % 100


def percentile_result(tens: int, ones: int) -> int:
    """d100 from a tens d10 (0, 10, .. 90; a "100" face counts 0) and a ones d10 (0..9; 10
    for a "0" face counts 0); seed 001 "Percentile Dice", RULES.md ``contingency-skill``.

    Raises ValueError for a tens value that is not a multiple of 10 in 0..100 or a ones value
    outside 0..10.
    """
    tens = percentile_tens(tens)
    check_int("percentile ones die", ones, 0, 10)
    return tens + ones % 10


def percentage_succeeds(result: int, chance: int) -> bool:
    """An "X% chance" succeeds on a d100 result >= 100 - X (seed 001 "Percentage Chance")."""
    return result >= 100 - chance


# --------------------------------------------------------------------------- core check


def die_size(kind: Any) -> int:
    """Size of a skill die given as "d6" or 6. Raises ValueError for another die."""
    if isinstance(kind, str) and kind in SIZES:
        return SIZES[kind]
    if isinstance(kind, int) and not isinstance(kind, bool) and kind in SIZES.values():
        return kind
    raise ValueError(f"skill dice are {', '.join(SIZES)}; got {kind!r}")


def _select(faces: Sequence[int], sizes: Sequence[int], net: int) -> int:
    """Index of the result die: sort by (face, size, position), take middle / last / first."""
    order = sorted(range(len(faces)), key=lambda i: (faces[i], sizes[i], i))
    return order[-1] if net > 0 else order[0] if net < 0 else order[len(order) // 2]


def _omens(faces: Iterable[int]) -> tuple[int, int]:
    po = go = 0
    for f in faces:
        po += player_omens(f)
        go += gm_omens(f)
    return po, go


@dataclass(frozen=True)
class PenaltyOption:
    """One legal way to apply multiple-action penalties (seed 002).

    Attributes:
        reductions: points taken off each of the three dice, in the order given.
        faces: the three faces after the penalties (never below 1).
        result_die: index of the result die. result: its face (luck not included).
        success: result >= target. player_omens, gm_omens: of the three dice.
    """

    reductions: tuple[int, ...]
    faces: tuple[int, ...]
    result_die: int
    result: int
    success: bool
    player_omens: int
    gm_omens: int

    def to_json(self) -> dict:
        return {"reductions": list(self.reductions), "faces": list(self.faces), "result_die": self.result_die,
                "result": self.result, "success": self.success, "player_omens": self.player_omens,
                "gm_omens": self.gm_omens}


def penalty_states(faces: Sequence[int], penalties: int) -> list[tuple[int, ...]]:
    """Every distinct set of faces reachable by applying ``penalties`` penalties of -2, each as
    -2 to one die or -1 to two dice, never below 1, never on a die already at 1 (seed 002).
    When no die is above 1 a penalty has nothing left to take. Sorted by faces, highest first.
    """
    states = {tuple(faces)}
    for _ in range(penalties):
        nxt = set()
        for st in states:
            targets = [i for i, f in enumerate(st) if f > 1]
            if not targets:
                nxt.add(st)
                continue
            for i in targets:
                s = list(st)
                s[i] = max(1, s[i] - 2)
                nxt.add(tuple(s))
            for i, j in combinations(targets, 2):
                s = list(st)
                s[i] -= 1
                s[j] -= 1
                nxt.add(tuple(s))
        states = nxt
    return sorted(states, reverse=True)


def _recommend_key(o: PenaltyOption) -> tuple:
    # RULES.md: highest success first, then most omens; then fewer GM omens, higher result.
    return (o.success, o.player_omens, -o.gm_omens, o.result)


def penalty_options(faces: Sequence[int], sizes: Sequence[int], penalties: int, target: int, net: int) -> tuple[list[PenaltyOption], int]:
    """Every legal way to apply the penalties with its result and omens, and the index of the
    recommended one (success first, then most player omens, then fewest GM omens, then the
    highest result)."""
    options = []
    for st in penalty_states(faces, penalties):
        i = _select(st, sizes, net)
        po, go = _omens(st)
        options.append(PenaltyOption(tuple(a - b for a, b in zip(faces, st)), st, i, st[i], st[i] >= target, po, go))
    best = max(range(len(options)), key=lambda k: _recommend_key(options[k]))
    return options, best


def _modifier_list(modifiers: Any, kinds: Sequence[str]) -> tuple[int, ...]:
    """Per-die modifiers from None, a sequence aligned with the dice, or {kind: modifier}."""
    if modifiers is None:
        return (0,) * len(kinds)
    if isinstance(modifiers, Mapping):
        out = [0] * len(kinds)
        for kind, mod in modifiers.items():
            hits = [i for i, k in enumerate(kinds) if k == kind]
            if not hits:
                raise ValueError(f"modifier for {kind!r}, but no {kind} among the dice ({', '.join(kinds)})")
            if len(hits) > 1:
                raise ValueError(f"modifier for {kind!r} is ambiguous: {len(hits)} {kind} dice; give one modifier per die in order")
            out[hits[0]] = check_int(f"modifier for {kind}", mod, -MAX_MODIFIER, MAX_MODIFIER)
        return tuple(out)
    if isinstance(modifiers, (str, bytes)) or not isinstance(modifiers, Iterable):
        raise ValueError(f"modifiers must be {{kind: n}} or one integer per die, got {modifiers!r}")
    mods = tuple(modifiers)
    if len(mods) != len(kinds):
        raise ValueError(f"modifiers: {len(mods)} given for {len(kinds)} dice")
    return tuple(check_int("modifier", m, -MAX_MODIFIER, MAX_MODIFIER) for m in mods)


def _check_modifiers_param(modifiers: Any) -> Any:
    if modifiers is None:
        return None
    if isinstance(modifiers, Mapping):
        for kind, mod in modifiers.items():
            die_size(kind)
            check_int(f"modifier for {kind}", mod, -MAX_MODIFIER, MAX_MODIFIER)
        return dict(modifiers)
    if isinstance(modifiers, (str, bytes)) or not isinstance(modifiers, Iterable):
        raise ValueError(f"modifiers must be {{kind: n}} or one integer per die, got {modifiers!r}")
    mods = [check_int("modifier", m, -MAX_MODIFIER, MAX_MODIFIER) for m in modifiers]
    if len(mods) != 3:
        raise ValueError(f"modifiers: {len(mods)} given for 3 dice")
    return mods


def _check_path(path: Any) -> list[int]:
    """A Reposition's ``path``: the terrain modifiers (0..20) of the zones on the way, start first
    (seed 002 "Challenging Terrain"); ValueError naming a bad one."""
    if isinstance(path, (str, bytes)) or not isinstance(path, Iterable):
        raise ValueError(f"path must be a list of terrain modifiers, got {path!r}")
    return [check_int("terrain", t, 0, 20) for t in path]


#: The table parameters of a skill check (seeds 001, 002), as ``PUT /api/system`` takes them and /gm offers them.
PARAMS: tuple[Param, ...] = (
    Param("target", "int", 4, "target difficulty (4 Moderate, 6 Hard, 8 Very Difficult)",
          low=1, high=MAX_TARGET, parse=parse_target),
    Param("advantage", "int", 0, "advantage units", low=0, high=MAX_UNITS),
    Param("disadvantage", "int", 0, "disadvantage units", low=0, high=MAX_UNITS),
    Param("modifiers", "json", None, 'face modifiers: {"d6": 1} per kind, or one per die [0, 1, 0]',
          blank="none", parse=_check_modifiers_param),
    Param("luck", "bool", False, "a luck die rolled with the check (read as the 4th die)"),
    Param("action_number", "int", 1, "action this round (the n-th carries n-1 penalties of -2)", low=1,
          high=MAX_ACTIONS),
    Param("penalty_choice", "int", None, "how the penalties are applied (a way's number, in the roll's list)",
          low=0, high=10_000, blank="the recommended way"),
    Param("reposition", "bool", False, "a Reposition roll: report movement points"),
    Param("path", "json", None, "terrain modifiers of the zones on the way, start first: [0, 2, 0]",
          blank="open ground", parse=_check_path),
    Param("percentile", "bool", False, "a percentile roll (d100: a tens and a ones d10)"),
    Param("chance", "int", None, "X of an \"X% chance\"", low=0, high=100, blank="no chance given"),
    Param("mark_condition", "bool", False, "a condition marked: a check failed by one barely succeeds"),
)
DEFAULTS: dict[str, Any] = defaults_of(PARAMS)


def validate_params(params: Mapping[str, Any]) -> dict:
    """Fill the defaults of :data:`DEFAULTS` and check every value (:data:`PARAMS`).

    Keys: ``target`` (1..30 or a difficulty name; default 4 Moderate), ``advantage`` and
    ``disadvantage`` (units, 0..10), ``modifiers`` (None, ``{kind: n}`` or three ints,
    -20..20), ``luck`` (bool: a luck die was rolled; the camera reads it as the 4th die),
    ``action_number`` (1..6: the n-th action this round carries n-1 penalties),
    ``penalty_choice`` (None = the recommended way, or an index into the listed ways),
    ``reposition`` (bool: report movement points), ``path`` (terrain modifiers of the zones
    on the way, start first), ``percentile`` (bool: a d100 roll), ``chance`` (0..100, the
    X of "X% chance") and ``mark_condition`` (bool: the player marks a condition to barely
    succeed a check failed by exactly one, seed 001 "Failing By One"; set by the GM on the
    recorded roll; changes nothing on any other roll). Raises ValueError naming a bad key or value.
    """
    return check_params(SYSTEM, params, PARAMS)


@dataclass(frozen=True, kw_only=True)
class SkillResolution(Resolution):
    """A skill check (seeds 001/002).

    Attributes:
        dice: the three dice as ``(kind, face)`` pairs, faces as rolled.
        modifiers: the face modifier of each die.
        faces: each die's face after modifiers and multiple-action penalties (>= 1).
        net_advantage: advantage units minus disadvantage units.
        result_die: kind of the result die ("d6"); result_index: its position in ``dice``.
        luck: the luck die as ``(kind, face)``, or None.
        result: the result die's face plus the luck face.
        target: the target difficulty; difficulty: its descriptor.
        margin: result - target.
        fail_by_one: failed by exactly one: the player may mark a condition to barely
            succeed with a complication (offered, never applied unless asked for).
        marked_condition: the player marked a condition (``mark_condition``) on a check failed
            by exactly one: the outcome is ``success``, with a complication (seed 001
            "Failing By One"). ``margin`` and ``fail_by_one`` still tell the roll as rolled.
        player_omens, gm_omens: from every die including the luck die.
        penalties: multiple-action penalties carried (action_number - 1).
        penalty_options: every legal way to apply them; penalty_applied: index of the one used;
            penalty_recommended: index of the recommended one.
        movement_points, zones_moved, points_left: for a Reposition roll, else None.
    """

    dice: tuple[tuple[str, int], ...]
    modifiers: tuple[int, ...]
    faces: tuple[int, ...]
    net_advantage: int
    result_die: str
    result_index: int
    luck: tuple[str, int] | None
    result: int
    target: int
    difficulty: str
    margin: int
    fail_by_one: bool
    marked_condition: bool
    player_omens: int
    gm_omens: int
    penalties: int
    penalty_options: tuple[PenaltyOption, ...]
    penalty_applied: int | None
    penalty_recommended: int | None
    movement_points: int | None
    zones_moved: int | None
    points_left: int | None

    def odds_params(self) -> dict:
        return {
            "dice": [k for k, _ in self.dice], "target": self.target,
            "advantage": max(self.net_advantage, 0), "disadvantage": max(-self.net_advantage, 0),
            "modifiers": list(self.modifiers), "luck": self.luck is not None,
            "action_number": self.penalties + 1,
        }


@dataclass(frozen=True, kw_only=True)
class ChooseToFailResolution(Resolution):
    """Choosing to fail a skill roll (seed 001 "Choosing to Fail"): no dice, GM omens by
    net advantage. Attributes: net_advantage, gm_omens."""

    net_advantage: int
    gm_omens: int

    def odds_params(self) -> dict:
        raise ValueError("choosing to fail has no odds: nothing is rolled")


@dataclass(frozen=True, kw_only=True)
class PercentileResolution(Resolution):
    """A percentile roll with a percentage chance (seed 001).

    Attributes: tens (0..90), ones (0..9), result (0..99), chance (X of "X%"), needed (100-X).
    """

    tens: int
    ones: int
    result: int
    chance: int
    needed: int

    def odds_params(self) -> dict:
        return {"percentile": True, "chance": self.chance}


def _parse_dice(dice: Any) -> tuple[tuple[str, int], ...]:
    if isinstance(dice, (str, bytes)) or not isinstance(dice, Iterable):
        raise ValueError(f"dice must be three (kind, face) pairs, got {dice!r}")
    out = []
    for item in dice:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"dice: {item!r} is not a (kind, face) pair")
        kind, face = item
        size = die_size(kind)
        kind = f"d{size}"
        if isinstance(face, bool) or not isinstance(face, int) or not 1 <= face <= size:
            raise ValueError(f"dice: face {face!r} is not on a {kind} (1..{size})")
        out.append((kind, face))
    if len(out) != 3:
        raise ValueError(f"a skill check rolls 3 dice, got {len(out)}")
    return tuple(out)


def resolve(
    dice: Any = None, target: Any = 4, advantage: int = 0, disadvantage: int = 0, modifiers: Any = None,
    luck: Any = None, action_number: int = 1, penalty_choice: int | None = None, reposition: bool = False,
    path: Sequence[int] | None = None, choose_fail: bool = False, percentile: Any = None, chance: int | None = None,
    mark_condition: bool = False,
) -> Resolution:
    """Resolve a skill check, a choice to fail, or a percentile roll (seeds 001/002).

    Args:
        dice: three ``(kind, face)`` pairs, kind d4..d12, face as rolled (1..size).
        target: 1..30 or a difficulty name. advantage, disadvantage: units (0..10).
        modifiers: None, ``{kind: n}`` or one int per die (-20..20); faces floor at 1.
        luck: the luck die as ``(kind, face)`` or a face; its kind must be the result die's.
        action_number: 1..6; the n-th action carries n-1 penalties of -2 (seed 002).
        penalty_choice: index into the listed ways to apply them; None = the recommended one.
        reposition: report movement points (1 + result); path: terrain modifiers of the
            zones on the way, start first (zones moved and points left).
        choose_fail: no roll; the GM gains 1/2/3 omens by net advantage.
        percentile: ``(tens, ones)`` d10 values (0..90 or 100 for a "100" face, counted 0;
            0..9 or 10 for "0"); needs ``chance``.
        chance: 0..100, the X of "X% chance".
        mark_condition: the player marks a condition (seed 001 "Failing By One"): a check
            failed by exactly one barely succeeds, with a complication (outcome ``success``,
            omens unchanged); on any other check or a percentile roll it changes nothing but a
            clause of the why. Not with ``choose_fail`` (nothing is rolled).

    Returns:
        :class:`SkillResolution`, :class:`ChooseToFailResolution` or :class:`PercentileResolution`.

    Raises:
        ValueError: a face off its die, a wrong number of dice, a luck die of the wrong size,
            an option out of range (each named).
    """
    adv = check_int("advantage", advantage, 0, MAX_UNITS)
    dis = check_int("disadvantage", disadvantage, 0, MAX_UNITS)
    net = adv - dis
    check_bool("mark_condition", mark_condition)
    if choose_fail:
        if dice is not None or luck is not None or percentile is not None:
            raise ValueError("choosing to fail rolls no dice; give no dice")
        if mark_condition:
            raise ValueError("choosing to fail rolls nothing: there is no check failed by one to mark a condition for")
        omens = choose_to_fail_omens(net)
        mode = "advantage" if net > 0 else "disadvantage" if net < 0 else "neither advantage nor disadvantage"
        return ChooseToFailResolution(
            system=SYSTEM, outcome="failure",
            why=(f"chose to fail with {mode}: GM gains {plural(omens, 'omen')}",),
            effects=TableEffects(gm_omens=omens), net_advantage=net, gm_omens=omens,
        )
    if percentile is not None:
        if dice is not None:
            raise ValueError("give either three skill dice or a percentile pair, not both")
        if chance is None:
            raise ValueError("a percentile roll needs a chance (0..100, the X of 'X% chance')")
        check_int("chance", chance, 0, 100)
        if not isinstance(percentile, (tuple, list)) or len(percentile) != 2:
            raise ValueError(f"percentile must be (tens, ones), got {percentile!r}")
        result = percentile_result(*percentile)
        tens = percentile_tens(percentile[0])
        ok = percentage_succeeds(result, chance)
        outcome = "success" if ok else "failure"
        unmarked = ("no condition marked: a percentile roll has no failing by one",) if mark_condition else ()
        return PercentileResolution(
            system=SYSTEM, outcome=outcome,
            why=(f"d100 {result} ({tens:02d} + {percentile[1] % 10})", f"{chance}% chance needs {100 - chance}+: {outcome}",
                 *unmarked),
            effects=TableEffects(), tens=tens, ones=percentile[1] % 10, result=result,
            chance=chance, needed=100 - chance,
        )
    if dice is None:
        raise ValueError("a skill check needs three dice, e.g. d6=5,d4=4,d10=9")
    rolled = _parse_dice(dice)
    target = parse_target(target)
    kinds = [k for k, _ in rolled]
    sizes = [SIZES[k] for k in kinds]
    mods = _modifier_list(modifiers, kinds)
    penalties = check_int("action_number", action_number, 1, MAX_ACTIONS) - 1
    base = tuple(max(1, f + m) for (_, f), m in zip(rolled, mods))

    why = []
    if any(mods):
        why.append("modifiers " + ", ".join(f"{k} {f}{m:+d}={b}" for (k, f), m, b in zip(rolled, mods, base) if m))
    options: list[PenaltyOption] = []
    applied = recommended = None
    faces = base
    if penalties:
        options, recommended = penalty_options(base, sizes, penalties, target, net)
        if penalty_choice is None:
            applied = recommended
        else:
            applied = check_int("penalty_choice", penalty_choice, 0, len(options) - 1)
        faces = options[applied].faces
        red = options[applied].reductions
        what = ", ".join(f"{kinds[i]} {base[i]}->{faces[i]}" for i in range(3) if red[i]) or "nothing left to reduce"
        why.append(f"{plural(penalties, 'penalty', 'penalties')} of -2 ({'recommended' if applied == recommended else 'chosen'} "
                   f"of {plural(len(options), 'way')}): {what}")
    elif penalty_choice is not None:
        raise ValueError(f"penalty_choice {penalty_choice!r} given, but the first action of a round has no penalty")

    idx = _select(faces, sizes, net)
    mode = "highest (advantage)" if net > 0 else "lowest (disadvantage)" if net < 0 else "middle"
    result_kind = kinds[idx]
    result = faces[idx]
    why.append(f"{mode} die {result_kind} {result}")
    luck_pair = None
    all_faces = list(faces)
    if luck is not None:
        if isinstance(luck, (tuple, list)):
            if len(luck) != 2:
                raise ValueError(f"luck must be (kind, face) or a face, got {luck!r}")
            lkind, lface = luck
            lkind = f"d{die_size(lkind)}"
            if lkind != result_kind:
                raise ValueError(f"luck die {lkind} must be the result die's size, {result_kind}")
        else:
            lkind, lface = result_kind, luck
        lsize = SIZES[lkind]
        if isinstance(lface, bool) or not isinstance(lface, int) or not 1 <= lface <= lsize:
            raise ValueError(f"luck: face {lface!r} is not on a {lkind} (1..{lsize})")
        luck_pair = (lkind, lface)
        result += lface
        all_faces.append(lface)
        why.append(f"luck die {lkind} {lface}: result {result}")
    po, go = _omens(all_faces)
    success = result >= target
    fail_by_one = result == target - 1
    marked = bool(mark_condition) and fail_by_one  # seed 001 "Failing By One": the player's choice, never silent
    outcome = "success" if success or marked else "failure"
    if marked:
        why.append(f"{result} vs {target} ({difficulty_name(target)}): failed by one")
        why.append("a condition marked: barely succeeds, with a complication")
    else:
        why.append(f"{result} vs {target} ({difficulty_name(target)}): {outcome}")
        if fail_by_one:
            why.append("failed by one: may mark a condition to barely succeed, with a complication")
        elif mark_condition:
            why.append("no condition marked: the check did not fail by one")
    if po or go:
        parts = []
        if po:
            parts.append(plural(po, "player omen"))
        if go:
            parts.append(plural(go, "GM omen"))
        why.append(", ".join(parts))
    mp = zm = left = None
    if reposition or path is not None:
        mp = movement_points(result)
        zm, left = zones_reached(mp, path)
        why.append(f"reposition: {mp} movement points, {plural(zm, 'zone')} moved")
    return SkillResolution(
        system=SYSTEM, outcome=outcome, why=tuple(why), effects=TableEffects(gm_omens=go, player_omens=po, luck_spent=int(luck_pair is not None)),
        dice=rolled, modifiers=mods, faces=tuple(faces), net_advantage=net, result_die=result_kind,
        result_index=idx, luck=luck_pair, result=result, target=target, difficulty=difficulty_name(target),
        margin=result - target, fail_by_one=fail_by_one, marked_condition=marked, player_omens=po, gm_omens=go, penalties=penalties,
        penalty_options=tuple(options), penalty_applied=applied, penalty_recommended=recommended,
        movement_points=mp, zones_moved=zm, points_left=left,
    )


# --------------------------------------------------------------------------- exact odds


def _face_counts(size: int, mod: int) -> dict[int, int]:
    """Modified face -> number of raw faces giving it (floor 1), ascending."""
    out: dict[int, int] = {}
    for r in range(1, size + 1):
        f = r + mod if r + mod > 1 else 1
        out[f] = out.get(f, 0) + 1
    return out


def _selection(sizes: Sequence[int], mods: Sequence[int], net: int) -> list[tuple[int, int, int]]:
    """For each die i and modified face v: ``(i, v, weight)`` where weight is the
    number of raw face combinations of the three dice in which die i is the result die with
    face v. Uses the total order (face, size, position) of the sort rule, so each combination
    is counted once; the weights sum to the product of the sizes."""
    counts = [_face_counts(s, m) for s, m in zip(sizes, mods)]
    top = max(max(c) for c in counts) + 2
    below_strict = []  # below_strict[j][v]: faces of die j strictly below v
    for c in counts:
        cum = [0] * (top + 1)
        run = 0
        for v in range(top + 1):
            cum[v] = run
            run += c.get(v, 0)
        below_strict.append(cum)
    out = []
    for i in range(3):
        si = sizes[i]
        j, k = [x for x in range(3) if x != i]
        tie_j = (sizes[j], j) < (si, i)
        tie_k = (sizes[k], k) < (si, i)
        cj, ck = counts[j], counts[k]
        bj_cum, bk_cum = below_strict[j], below_strict[k]
        sj, sk = sizes[j], sizes[k]
        for v, c in counts[i].items():
            bj = bj_cum[v] + (cj.get(v, 0) if tie_j else 0)
            bk = bk_cum[v] + (ck.get(v, 0) if tie_k else 0)
            if net > 0:
                r = bj * bk
            elif net < 0:
                r = (sj - bj) * (sk - bk)
            else:
                r = bj * (sk - bk) + (sj - bj) * bk
            if r:
                out.append((i, v, c * r))
    return out


def _check_odds_args(dice: Any, target: Any, advantage: Any, disadvantage: Any, modifiers: Any, luck: Any) -> tuple:
    if isinstance(dice, (str, bytes)) or not isinstance(dice, Iterable):
        raise ValueError(f"dice must be three die kinds, e.g. ['d6', 'd8', 'd10']; got {dice!r}")
    sizes = [die_size(k) for k in dice]
    if len(sizes) != 3:
        raise ValueError(f"a skill check rolls 3 dice, got {len(sizes)}")
    target = parse_target(target)
    net = check_int("advantage", advantage, 0, MAX_UNITS) - check_int("disadvantage", disadvantage, 0, MAX_UNITS)
    mods = _modifier_list(modifiers, [f"d{s}" for s in sizes])
    check_bool("luck", luck)
    return sizes, target, net, mods


def odds(
    dice: Sequence[Any] = ("d6", "d6", "d6"), target: Any = 4, advantage: int = 0, disadvantage: int = 0,
    modifiers: Any = None, luck: bool = False, action_number: int = 1, percentile: bool = False, chance: int | None = None,
) -> dict[str, Fraction]:
    """Exact success/failure odds of a skill check (seed 001 "Making Skill Rolls",
    "Advantage and Disadvantage", "Luck Dice"; seed 002 "Performing Multiple Actions";
    INTERFACES.md "Python: exact odds"). Without penalties: per die and face, the count of
    combinations in which it is the result die (the sort rule's total order), O(sum of sizes);
    with luck the luck die's size follows that die.

    Args:
        dice: three kinds ("d4".."d12" or 4..12). target, advantage, disadvantage, modifiers,
            luck (a luck die is rolled): as :func:`resolve`.
        action_number: > 1 adds penalties, applied the recommended way (enumerated: slower).
        percentile, chance: the odds of an "X% chance" on d100 instead (exactly X/100).

    Returns ``{"success": Fraction, "failure": Fraction}``, summing to 1.

    Raises ValueError for a bad value (named).
    """
    if percentile:
        return _percentile_detail(chance).bands
    sizes, target, net, mods = _check_odds_args(dice, target, advantage, disadvantage, modifiers, luck)
    if check_int("action_number", action_number, 1, MAX_ACTIONS) > 1:
        return _enumerated_detail(sizes, target, net, mods, luck, action_number - 1).bands
    den = sizes[0] * sizes[1] * sizes[2]
    win = 0
    if luck:
        big = lcm(*sizes)
        for i, v, w in _selection(sizes, mods, net):
            s = sizes[i]
            need = target - v if target - v > 1 else 1
            if need <= s:
                win += w * (s - need + 1) * (big // s)
        den *= big
    else:
        for i, v, w in _selection(sizes, mods, net):
            if v >= target:
                win += w
    return {"success": Fraction(win, den), "failure": Fraction(den - win, den)}


def _percentile_detail(chance: Any) -> OddsDetail:
    if chance is None:
        raise ValueError("percentile odds need a chance (0..100, the X of 'X% chance')")
    chance = check_int("chance", chance, 0, 100)
    p = Fraction(chance, 100)
    return OddsDetail(SYSTEM, {"percentile": True, "chance": chance}, {"success": p, "failure": 1 - p},
                      {"result": {r: Fraction(1, 100) for r in range(100)}})


def _add(d: dict[int, int], k: int, v: int) -> None:
    d[k] = d.get(k, 0) + v


def odds_detail(
    dice: Sequence[Any] = ("d6", "d6", "d6"), target: Any = 4, advantage: int = 0, disadvantage: int = 0,
    modifiers: Any = None, luck: bool = False, action_number: int = 1, percentile: bool = False, chance: int | None = None,
) -> OddsDetail:
    """Bands plus the side quantities of a skill check (seed 001 "Omen Tokens", "Failing By
    One"): ``result`` (result die + luck), ``player_omens`` and ``gm_omens`` (luck die
    included), and the event ``fail_by_one``.
    Arguments and errors as :func:`odds`."""
    if percentile:
        return _percentile_detail(chance)
    sizes, target, net, mods = _check_odds_args(dice, target, advantage, disadvantage, modifiers, luck)
    if check_int("action_number", action_number, 1, MAX_ACTIONS) > 1:
        return _enumerated_detail(sizes, target, net, mods, luck, action_number - 1)
    sel = _selection(sizes, mods, net)
    big = lcm(*sizes) if luck else 1
    den = sizes[0] * sizes[1] * sizes[2] * big
    result: dict[int, int] = {}
    for i, v, w in sel:
        if luck:
            s = sizes[i]
            step = w * (big // s)
            for lf in range(1, s + 1):
                _add(result, v + lf, step)
        else:
            _add(result, v, w)
    win = sum(w for r, w in result.items() if r >= target)
    bands = {"success": Fraction(win, den), "failure": Fraction(den - win, den)}
    sides = {"result": {r: Fraction(w, den) for r, w in sorted(result.items())}}
    counts = [_face_counts(s, m) for s, m in zip(sizes, mods)]
    for name, g in (("player_omens", player_omens), ("gm_omens", gm_omens)):
        sides[name] = {k: Fraction(w, den) for k, w in sorted(_omen_weights(sizes, counts, net, g, luck, big).items())}
    events = {"fail_by_one": Fraction(result.get(target - 1, 0), den)}
    params = {"dice": [f"d{s}" for s in sizes], "target": target, "net_advantage": net, "modifiers": list(mods), "luck": luck}
    return OddsDetail(SYSTEM, params, bands, sides, events)


def _omen_weights(sizes, counts, net: int, g, luck: bool, big: int) -> dict[int, int]:
    """Weights (denominator prod(sizes) * big) of the total of ``g`` (omens of one face) over
    the three dice and, with luck, the luck die of the result die's size."""
    if not luck:  # three independent dice: a plain convolution
        dist = {0: 1}
        for c in counts:
            nxt: dict[int, int] = {}
            for t, w in dist.items():
                for f, n in c.items():
                    _add(nxt, t + g(f), w * n)
            dist = nxt
        return dist
    # With luck the luck die's size follows the result die: keep the result die's index i.
    # For die i at face v, each other die is split into faces ordered before / after
    # (v, size_i, i); the result-die rule says which halves the other two dice fall in.
    per_i: list[dict[int, int]] = [{}, {}, {}]
    for i in range(3):
        si = sizes[i]
        j, k = [x for x in range(3) if x != i]
        for v, cv in counts[i].items():
            halves = []
            for x in (j, k):
                tie = (sizes[x], x) < (si, i)
                below: dict[int, int] = {}
                above: dict[int, int] = {}
                for f, n in counts[x].items():
                    _add(below if f < v or (f == v and tie) else above, g(f), n)
                halves.append((below, above))
            (bj, aj), (bk, ak) = halves
            pairs = [(bj, bk)] if net > 0 else [(aj, ak)] if net < 0 else [(bj, ak), (aj, bk)]
            own = g(v)
            for a, b in pairs:
                for ga, na in a.items():
                    for gb, nb in b.items():
                        _add(per_i[i], ga + gb + own, na * nb * cv)
    out: dict[int, int] = {}
    for i in range(3):
        s = sizes[i]
        luck_g: dict[int, int] = {}
        for lf in range(1, s + 1):
            _add(luck_g, g(lf), big // s)
        for t, w in per_i[i].items():
            for lg, n in luck_g.items():
                _add(out, t + lg, w * n)
    return out


def _enumerated_detail(sizes, target: int, net: int, mods, luck: bool, penalties: int) -> OddsDetail:
    """Odds with multiple-action penalties, applied the recommended way, by enumerating every
    face combination through :func:`penalty_options` (the same code :func:`resolve` uses)."""
    big = lcm(*sizes) if luck else 1
    den = sizes[0] * sizes[1] * sizes[2] * big
    result: dict[int, int] = {}
    po_d: dict[int, int] = {}
    go_d: dict[int, int] = {}
    for raw in product(*(range(1, s + 1) for s in sizes)):
        base = tuple(max(1, f + m) for f, m in zip(raw, mods))
        options, best = penalty_options(base, sizes, penalties, target, net)
        o = options[best]
        if luck:
            s = sizes[o.result_die]
            step = big // s
            for lf in range(1, s + 1):
                _add(result, o.result + lf, step)
                _add(po_d, o.player_omens + player_omens(lf), step)
                _add(go_d, o.gm_omens + gm_omens(lf), step)
        else:
            _add(result, o.result, 1)
            _add(po_d, o.player_omens, 1)
            _add(go_d, o.gm_omens, 1)
    win = sum(w for r, w in result.items() if r >= target)
    bands = {"success": Fraction(win, den), "failure": Fraction(den - win, den)}
    sides = {name: {k: Fraction(w, den) for k, w in sorted(d.items())}
             for name, d in (("result", result), ("player_omens", po_d), ("gm_omens", go_d))}
    events = {"fail_by_one": Fraction(result.get(target - 1, 0), den)}
    params = {"dice": [f"d{s}" for s in sizes], "target": target, "net_advantage": net, "modifiers": list(mods),
              "luck": luck, "action_number": penalties + 1}
    return OddsDetail(SYSTEM, params, bands, sides, events)
