"""The rules engine's public entry points: one name per job, dispatching on the system id.

See ../shared/RULES.md for the systems and ../shared/INTERFACES.md ("Python: exact odds",
``resolve --json``) for the shapes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from pi_table.rules import charge, contingency, contract, skill
from pi_table.rules._common import OddsDetail, Param, Resolution, check_unknown, defaults_of, plural

#: Every system of the kit (RULES.md), in the order of its sections.
SYSTEMS: tuple[str, ...] = ("contingency-action", "contingency-pool", "contingency-skill", "charge", "contract")

#: Outcome band ids of each system, worst first (contingency-skill: as INTERFACES.md lists them).
BANDS: dict[str, tuple[str, ...]] = {
    "contingency-action": contingency.LADDER,
    "contingency-pool": contingency.LADDER,
    "contingency-skill": skill.BANDS,
    "charge": charge.BANDS,
    "contract": contract.BANDS,
}

#: Each system's table parameters (:class:`pi_table.rules._common.Param`: default, check, label), in the
#: order :data:`DEFAULT_PARAMS` lists them.
PARAMS: dict[str, tuple[Param, ...]] = {
    "contingency-action": contingency.ACTION_PARAMS,
    "contingency-pool": contingency.POOL_PARAMS,
    "contingency-skill": skill.PARAMS,
    "charge": charge.PARAMS,
    "contract": contract.PARAMS,
}

#: The parameters a table starts with, per system (JSON-serialisable).
DEFAULT_PARAMS: dict[str, dict] = {system: defaults_of(params) for system, params in PARAMS.items()}

_VALIDATE: dict[str, Callable[[Mapping[str, Any]], dict]] = {
    "contingency-action": contingency.validate_action_params,
    "contingency-pool": contingency.validate_pool_params,
    "contingency-skill": skill.validate_params,
    "charge": charge.validate_params,
    "contract": contract.validate_params,
}

#: Die kinds each system reads from the tray (resolve_dice).
KINDS_BY_SYSTEM: dict[str, tuple[str, ...]] = {
    "contingency-action": ("d8", "d6"),
    "contingency-pool": ("d8",),
    "contingency-skill": ("d4", "d6", "d8", "d10", "d12", "d10-tens"),
    "charge": ("d6",),
    "contract": ("d10",),
}


def check_system(system: Any) -> str:
    """``system`` if it is one of :data:`SYSTEMS`; ValueError naming it otherwise."""
    if not isinstance(system, str) or system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r} (expected one of {', '.join(SYSTEMS)})")
    return system


#: Index of a skill check's luck die among the dice read (seed 001 "Luck Dice"): after the three
#: of the check, when its params have ``luck`` (:func:`resolve_dice`).
LUCK_DIE_INDEX = 3
#: Offers a recorded roll takes up on the GM's word after the roll (RULES.md: "the kit offers it, never applies it
#: silently"): set on that roll (``PUT /api/rolls/<id>/params``, their buttons on /gm), never for the next rolls
#: (:func:`validate_table_params`): a skill check failed by one barely succeeds (seed 001 "Failing By One"), a pool's
#: last die is forced out (seed 000).
OFFERS_TAKEN_UP: dict[str, tuple[str, ...]] = {"contingency-skill": ("mark_condition",), "contingency-pool": ("force",)}
#: Parameters a recorded roll's own after-the-roll actions set: the offers above, and a skill check's luck die
#: (seed 001 "Luck Dice"). The /gm page's "Apply to roll #N" leaves them as the roll has them.
AFTER_ROLL_PARAMS: dict[str, tuple[str, ...]] = {**OFFERS_TAKEN_UP,
                                                 "contingency-skill": ("luck", *OFFERS_TAKEN_UP["contingency-skill"])}


def next_roll_params(system: str) -> tuple[Param, ...]:
    """The parameters of ``system`` a GM sets for the next rolls (``PUT /api/system``; the /gm page's
    form, ``GET /api/systems`` ``fields``): all of :data:`PARAMS` but the offers taken up on a recorded
    roll (:data:`OFFERS_TAKEN_UP`), which have their own controls. ValueError for an unknown system."""
    return tuple(p for p in PARAMS[check_system(system)] if p.name not in OFFERS_TAKEN_UP.get(system, ()))


def validate_table_params(system: str, params: Mapping[str, Any]) -> dict:
    """:func:`validate_params` for the parameters of the next rolls (a table's, ``PUT /api/system``):
    an offer taken up after a roll (:data:`OFFERS_TAKEN_UP`) is refused there unless it is left at
    its default, or every roll it fits would take it up without the player choosing.

    Raises:
        ValueError: as :func:`validate_params`, or such an offer set (named).
    """
    out = validate_params(system, params)
    for key in OFFERS_TAKEN_UP.get(system, ()):
        if out[key] != DEFAULT_PARAMS[system][key]:
            raise ValueError(f"{key} {out[key]!r} is taken up on a recorded roll (PUT /api/rolls/<id>/params, or its "
                             f"button on the GM page), not set for the next rolls")
    return out


def validate_params(system: str, params: Mapping[str, Any]) -> dict:
    """The table parameters of ``system`` with defaults filled in and every value checked.

    See each system's ``validate_params`` for the keys (:data:`DEFAULT_PARAMS` lists them).
    Returns a new JSON-serialisable dict.

    Raises:
        ValueError: unknown system, unknown key, or a bad value (named).
    """
    check_system(system)
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a mapping, got {params!r}")
    return _VALIDATE[system](params)


def resolve(system: str, **options: Any) -> Resolution:
    """Resolve faces typed in by hand.

    Options per system (faces are ints on the die's own numbering; d10 "0" is 10):

    - ``contingency-action``: ``action=[8, 8, 8]``, ``pressure=[6, 6, 2]``, ``stat=N|None``.
    - ``contingency-pool``: ``dice=[6, 2, 8, 1]``, ``drop="none"|"effect"|"consequence"``,
      ``action`` (the roll performs an action: band of the highest die), ``pool`` (expected count),
      ``force="none"|"mark"|"tension"`` (a last die that stayed forced out).
    - ``contingency-skill``: ``dice=[("d6", 5), ("d4", 4), ("d10", 9)]``, ``target=5``,
      ``advantage``, ``disadvantage``, ``modifiers``, ``luck=("d6", 3)``, ``action_number``,
      ``penalty_choice``, ``reposition``, ``path``, ``mark_condition`` (a check failed by
      one barely succeeds, seed 001 "Failing By One"); or ``choose_fail=True``; or
      ``percentile=(tens, ones), chance=X``.
    - ``charge``: ``dice=[6, 6, 3]``, ``dots``, ``roll``, ``risk``, ``effect``, ``assist``,
      ``push``, ``tension``.
    - ``contract``: ``dice=[10, 6, 1, 3]``, ``difficulty=6``.

    Returns the system's :class:`Resolution` subclass.

    Raises:
        ValueError: unknown system or option, a face off its die, a count out of range.
    """
    check_system(system)
    if system == "contingency-action":
        check_unknown(system, options, ("action", "pressure", "stat"))
        pressure = options.get("pressure")
        return contingency.resolve_action(options.get("action", ()), () if pressure is None else pressure, options.get("stat"))
    if system == "contingency-pool":
        check_unknown(system, options, ("dice", "drop", "pool", "action", "force"))
        dice = options.get("dice", ())
        if options.get("pool") is not None:
            contingency.validate_pool_params({"pool": options["pool"]})
            rolled = options["pool"] - (options.get("drop", "none") != "none")  # a dropped die is not rolled
            if len(tuple(dice)) != rolled:
                dropped = " less the one dropped" if rolled != options["pool"] else ""
                raise ValueError(f"pool of {plural(options['pool'], 'die', 'dice')}{dropped}, but {plural(len(tuple(dice)), 'face')} given")
        return contingency.resolve_pool(dice, options.get("drop", "none"), options.get("action", False),
                                        options.get("force", "none"))
    if system == "contingency-skill":
        check_unknown(system, options, ("dice", "target", "advantage", "disadvantage", "modifiers", "luck",
                                        "action_number", "penalty_choice", "reposition", "path",
                                        "choose_fail", "percentile", "chance", "mark_condition"))
        return skill.resolve(**options)
    if system == "charge":
        check_unknown(system, options, ("dice", *charge.DEFAULTS))
        return charge.resolve(**{"dice": (), **options})
    check_unknown(system, options, ("dice", "difficulty"))
    return contract.resolve(options.get("dice", ()), options.get("difficulty", 6))


def _split_kinds(system: str, dice: Sequence[tuple[str, int]]) -> dict[str, list[int]]:
    """Faces by kind, in reading order; ValueError naming kinds the system does not read."""
    if isinstance(dice, (str, bytes)) or not isinstance(dice, Sequence):
        raise ValueError(f"dice must be a list of (kind, value) pairs, got {dice!r}")
    allowed = KINDS_BY_SYSTEM[system]
    by_kind: dict[str, list[int]] = {}
    wrong = []
    for item in dice:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"dice: {item!r} is not a (kind, value) pair")
        kind, value = item
        if kind not in allowed:
            wrong.append(str(kind))
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"dice: value {value!r} of a {kind} is not an integer")
        by_kind.setdefault(kind, []).append(value)
    if wrong:
        raise ValueError(f"{system} does not use {', '.join(sorted(set(wrong)))} (it reads {', '.join(allowed)})")
    return by_kind


def resolve_dice(system: str, dice: Sequence[tuple[str, int]], params: Mapping[str, Any]) -> Resolution:
    """Resolve dice read by the camera under the table's parameters.

    Args:
        system: one of :data:`SYSTEMS`.
        dice: ``(kind, value)`` pairs in reading order; values by the kit's default
            convention (d10 "0" -> 10, d10-tens "00" -> 0).
        params: the table's parameters (validated here; see :func:`validate_params`).

    Routing: contingency-action: d8 action dice, d6 pressure dice (``stat`` 0 = zero-dice
    rule with the two d8; ``stat``/``pressure`` given = the counts expected);
    contingency-pool: d8 (``force``: a last die that stayed forced out); charge: d6 (``dots`` 0 = zero dice); contract: d10 (10 counts 10);
    contingency-skill: three dice d4..d12 in reading order, plus the luck die as the 4th die
    when ``luck`` is true; or a d10-tens and a d10 for a percentile roll (needs ``chance``;
    the ones d10 read as 10 counts 0). ``mark_condition`` (the GM's, set on the recorded roll)
    turns a check failed by exactly one into a success (seed 001 "Failing By One").

    Raises:
        ValueError: unknown system, bad params, dice of kinds the system does not use (named),
            a wrong number of dice, a value off its die.
    """
    p = validate_params(system, params)
    by_kind = _split_kinds(system, dice)
    if system == "contingency-action":
        action, pressure = by_kind.get("d8", []), by_kind.get("d6", [])
        if p["pressure"] is not None and len(pressure) != p["pressure"]:
            raise ValueError(f"{plural(p['pressure'], 'pressure die', 'pressure dice')} (d6) expected, {len(pressure)} read")
        return contingency.resolve_action(action, pressure, p["stat"])
    if system == "contingency-pool":
        faces = by_kind.get("d8", [])
        rolled = None if p["pool"] is None else p["pool"] - (p["drop"] != "none")  # a dropped die is not rolled
        if rolled is not None and len(faces) != rolled:
            dropped = " (one dropped before the roll)" if p["drop"] != "none" else ""
            raise ValueError(f"pool of {p['pool']} d8{dropped}: {rolled} expected, {len(faces)} read")
        return contingency.resolve_pool(faces, p["drop"], p["action"], p["force"])
    if system == "charge":
        return charge.resolve(by_kind.get("d6", []), p["dots"], p["roll"], p["risk"], p["effect"],
                              p["assist"], p["push"], p["tension"])
    if system == "contract":
        faces = by_kind.get("d10", [])
        if p["dice"] is not None and len(faces) != p["dice"]:
            raise ValueError(f"{p['dice']} d10 expected, {len(faces)} read")
        return contract.resolve(faces, p["difficulty"])
    # contingency-skill
    pairs = [(k, v) for k, v in dice]
    tens = [v for k, v in pairs if k == "d10-tens"]
    if tens or p["percentile"]:
        ones = [v for k, v in pairs if k == "d10"]
        if len(tens) != 1 or len(ones) != 1 or len(pairs) != 2:
            raise ValueError(f"a percentile roll reads one d10-tens and one d10, got {', '.join(k for k, _ in pairs) or 'no dice'}")
        return skill.resolve(percentile=(tens[0], ones[0]), chance=p["chance"], mark_condition=p["mark_condition"])
    want = LUCK_DIE_INDEX + 1 if p["luck"] else LUCK_DIE_INDEX
    if len(pairs) != want:
        raise ValueError(f"a skill check reads {want} dice{' (the 4th is the luck die)' if p['luck'] else ''}, got {len(pairs)}")
    return skill.resolve(
        dice=pairs[:LUCK_DIE_INDEX], target=p["target"], advantage=p["advantage"], disadvantage=p["disadvantage"],
        modifiers=p["modifiers"], luck=pairs[LUCK_DIE_INDEX] if p["luck"] else None, action_number=p["action_number"],
        penalty_choice=p["penalty_choice"], reposition=p["reposition"], path=p["path"],
        mark_condition=p["mark_condition"],
    )


_ODDS: dict[str, Callable[..., dict[str, Fraction]]] = {
    "contingency-action": contingency.action_odds,
    "contingency-pool": contingency.pool_odds,
    "contingency-skill": skill.odds,
    "charge": charge.odds,
    "contract": contract.odds,
}
_DETAIL: dict[str, Callable[..., OddsDetail]] = {
    "contingency-action": contingency.action_odds_detail,
    "contingency-pool": contingency.pool_odds_detail,
    "contingency-skill": skill.odds_detail,
    "charge": charge.odds_detail,
    "contract": contract.odds_detail,
}
_ODDS_KEYS: dict[str, tuple[str, ...]] = {
    "contingency-action": ("dice", "pressure"),
    "contingency-pool": ("dice", "action"),
    "contingency-skill": ("dice", "target", "advantage", "disadvantage", "modifiers", "luck", "action_number",
                          "percentile", "chance"),
    "charge": ("dice", "roll", "assist", "push", "tension"),
    "contract": ("dice", "difficulty"),
}


def odds(system: str, **params: Any) -> dict[str, Fraction]:
    """Exact outcome-band probabilities (INTERFACES.md "Python: exact odds").

    - ``odds("contract", dice=6, difficulty=6)``: dice 1..30, difficulty 2..10.
    - ``odds("contingency-action", dice=3, pressure=2)``: dice 0..20 (0 = zero-dice rule),
      pressure 0..20.
    - ``odds("contingency-pool", dice=4)``: dice 1..20; ``action=True`` reads the roll as an
      action (highest die), else the band of the dice that stay (see ``contingency.pool_read``).
    - ``odds("charge", dice=2)``: dice -20..20 (<= 0 zero dice), ``roll``, ``assist``,
      ``push``, ``tension`` as the table's params.
    - ``odds("contingency-skill", dice=["d6", "d8", "d10"], target=5)``: plus ``advantage``,
      ``disadvantage``, ``modifiers``, ``luck``, ``action_number``; or ``percentile=True,
      chance=X``.

    Returns a dict from band id (worst first; skill: success, failure) to ``Fraction``,
    summing to exactly 1.

    Raises:
        ValueError: unknown system or parameter, a value out of range (named).
    """
    check_system(system)
    check_unknown(system, params, _ODDS_KEYS[system])
    return _ODDS[system](**params)


def odds_detail(system: str, **params: Any) -> OddsDetail:
    """Like :func:`odds`, plus the distributions of the side quantities and named events.

    Sides: contingency-action ``tension_tokens``, ``cuts``, ``critical_levels``;
    contingency-pool ``removed`` (events ``no_removal``, ``depleted``, ``last_die_offer``);
    contingency-skill ``result``, ``player_omens``, ``gm_omens`` (event ``fail_by_one``);
    charge ``momentum_gained`` (event ``consequence``); contract ``successes``.
    """
    check_system(system)
    check_unknown(system, params, _ODDS_KEYS[system])
    return _DETAIL[system](**params)
