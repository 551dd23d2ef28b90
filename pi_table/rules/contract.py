"""The Contract (seed 003): count successes on a pool of d10 against a difficulty.

Readings are those of ../shared/RULES.md, section ``contract``: each die >= D is one
success, a 10 is two ("double"), a 1 subtracts one ("botch"); the total gives the band:
< 0 botch, 0 failure, 1-3 partial, 4-5 complete, 6+ exceptional (seed 003 "Outcome").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from pi_table.rules._common import (
    OddsDetail,
    Resolution,
    TableEffects,
    check_faces,
    check_int,
    check_params,
    defaults_of,
    plural,
    poly_pow,
    Param,
)

SYSTEM = "contract"

#: Outcome bands, worst first.
BANDS: tuple[str, ...] = ("botch", "failure", "partial", "complete", "exceptional")
MAX_DICE = 30
MIN_DIFFICULTY = 2
MAX_DIFFICULTY = 10
#: The table parameters of a Contract roll (seed 003), as ``PUT /api/system`` takes them and /gm offers them.
PARAMS: tuple[Param, ...] = (
    Param("difficulty", "int", 6, "difficulty: a die at or above it is a success", low=MIN_DIFFICULTY,
          high=MAX_DIFFICULTY),
    Param("dice", "int", None, "dice in the pool (d10)", low=1, high=MAX_DICE, blank="as many as read"),
)
DEFAULTS: dict[str, Any] = defaults_of(PARAMS)


def band_of(successes: int) -> str:
    """Band of a success total: < 0 botch, 0 failure, 1-3 partial, 4-5 complete, 6+ exceptional."""
    if successes < 0:
        return "botch"
    if successes == 0:
        return "failure"
    if successes <= 3:
        return "partial"
    if successes <= 5:
        return "complete"
    return "exceptional"


def die_value(face: int, difficulty: int) -> int:
    """Successes of one d10 face (1..10): 10 -> 2, >= difficulty -> 1, 1 -> -1, else 0."""
    if face == 10:
        return 2
    if face >= difficulty:
        return 1
    return -1 if face == 1 else 0


@dataclass(frozen=True, kw_only=True)
class ContractResolution(Resolution):
    """A Contract roll (seed 003).

    Attributes:
        dice: d10 faces, 1..10 (a printed "0" is 10).
        difficulty: D, 2..10.
        successes: the total (the seed's "Outcome" number); may be negative.
        hits: dice at or above D (10s included). doubles: 10s. botches: 1s.
    """

    dice: tuple[int, ...]
    difficulty: int
    successes: int
    hits: int
    doubles: int
    botches: int

    def odds_params(self) -> dict:
        return {"dice": len(self.dice), "difficulty": self.difficulty}


def validate_params(params: Mapping[str, Any]) -> dict:
    """``difficulty`` (2..10, default 6) and ``dice`` (expected pool 1..30, or None = as read).
    Raises ValueError naming a bad key or value."""
    return check_params(SYSTEM, params, PARAMS)


def resolve(dice: Sequence[int], difficulty: int = 6) -> ContractResolution:
    """Resolve a Contract roll (seed 003; RULES.md ``contract``).

    Args:
        dice: 1..30 d10 faces, each 1..10 (10 for a face printed "0").
        difficulty: 2..10.

    Raises:
        ValueError: a face off the d10, a pool or difficulty out of range (named).
    """
    check_int("difficulty", difficulty, MIN_DIFFICULTY, MAX_DIFFICULTY)
    faces = check_faces("dice", dice, 10, 1, MAX_DICE)
    successes = sum(die_value(f, difficulty) for f in faces)
    hits = sum(1 for f in faces if f >= difficulty)
    doubles = faces.count(10)
    botches = faces.count(1)
    outcome = band_of(successes)
    why = [f"{plural(hits, 'die', 'dice')} at {difficulty}+" + (f" ({plural(doubles, 'double')}: 10 counts 2)" if doubles else "")]
    if botches:
        why.append(f"{plural(botches, 'botch', 'botches')}: -{botches}")
    why.append(f"{plural(successes, 'success', 'successes')}: {outcome}")
    return ContractResolution(
        system=SYSTEM, outcome=outcome, why=tuple(why), effects=TableEffects(),
        dice=faces, difficulty=difficulty, successes=successes, hits=hits, doubles=doubles, botches=botches,
    )


def success_weights(dice: int, difficulty: int) -> list[int]:
    """Integer weights of the success total: entry ``t`` is the number of the ``10**dice``
    face combinations whose total is ``t - dice`` (totals -dice..2*dice)."""
    # one die: -1 (face 1), 0 (faces 2..D-1), +1 (faces D..9), +2 (face 10); shifted by +1
    return poly_pow((1, difficulty - 2, 10 - difficulty, 1), dice)


def _check(dice: Any, difficulty: Any) -> tuple[int, int]:
    return check_int("dice", dice, 1, MAX_DICE), check_int("difficulty", difficulty, MIN_DIFFICULTY, MAX_DIFFICULTY)


def odds(dice: int = 1, difficulty: int = 6) -> dict[str, Fraction]:
    """Exact band odds of ``dice`` d10 (1..30) at ``difficulty`` (2..10) (seed 003 "Outcome";
    RULES.md ``contract``; INTERFACES.md "Python: exact odds"). One polynomial power by
    Kronecker substitution (:func:`pi_table.rules._common.poly_pow`), denominator 10**dice.
    Returns ``{band: Fraction}`` over :data:`BANDS`, summing to 1.

    Raises ValueError for a value out of range (named).
    """
    dice, difficulty = _check(dice, difficulty)
    w = success_weights(dice, difficulty)
    n = dice  # w[n] is total 0
    den = 10**dice
    return {
        "botch": Fraction(sum(w[:n]), den),
        "failure": Fraction(w[n], den),
        "partial": Fraction(sum(w[n + 1:n + 4]), den),
        "complete": Fraction(sum(w[n + 4:n + 6]), den),
        "exceptional": Fraction(sum(w[n + 6:]), den),
    }


def odds_detail(dice: int = 1, difficulty: int = 6) -> OddsDetail:
    """Bands plus ``successes``: the exact distribution of the success total (-dice..2*dice)
    (seed 003). Arguments and errors as :func:`odds`."""
    dice, difficulty = _check(dice, difficulty)
    w = success_weights(dice, difficulty)
    den = 10**dice
    successes = {t - dice: Fraction(v, den) for t, v in enumerate(w) if v}
    return OddsDetail(SYSTEM, {"dice": dice, "difficulty": difficulty}, odds(dice, difficulty), {"successes": successes})
