"""Charge (Forged-in-the-Dark family, seed 004): d6 pools read by the highest die.

Readings are those of ../shared/RULES.md, section ``charge``:

- Highest die: 6 full, two or more 6s critical, 4-5 partial, 1-3 bad; zero (or negative)
  dice: two d6, the lower decides, no critical (seed 004 "Rolling Dice").
- Bonus dice: assist (+1d6, a teammate spends 1 momentum) and one of push yourself (spend 2
  momentum: +1d6, +1 effect, or act while taken out) or add tension (+1d6) (seed 004
  "Player Evens the Odds", "Boosting Action Rolls").
- Momentum: a roll that spent no momentum gains 1 (partial), 2 (full), 3 (critical)
  (seed 004 "Momentum").
- Risk low / moderate / high: consequence rating 1 / 2 / 3 on a partial or bad action roll;
  effect limited / standard / great: 1 / 2 / 3 progress segments on a success; a critical
  has increased effect (seed 004 "Consequences", "Clocks").
- Determination roll: 1d6 per momentum spent, same ladder read as the consequence
  happening / reduced / avoided / avoided with the next roll's risk lowered (seed 004
  "Determination Roll"). Fortune roll: same bands, no momentum, no consequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from pi_table.rules._common import (
    OddsDetail,
    Resolution,
    TableEffects,
    check_choice,
    check_faces,
    check_int,
    check_params,
    defaults_of,
    plural,
    Param,
)

SYSTEM = "charge"

#: Outcome bands, worst first.
BANDS: tuple[str, ...] = ("bad", "partial", "full", "critical")
RISKS: tuple[str, ...] = ("low", "moderate", "high")
EFFECTS: tuple[str, ...] = ("limited", "standard", "great")
ROLLS: tuple[str, ...] = ("action", "fortune", "determination")
#: Push yourself (2 momentum): no push, for a die, for effect, to act while taken out.
PUSHES: tuple[str, ...] = ("none", "die", "effect", "act")

#: Momentum gained by a roll that spent none (seed 004 "Momentum").
MOMENTUM_GAIN: dict[str, int] = {"bad": 0, "partial": 1, "full": 2, "critical": 3}
#: What a determination roll does to the consequence (seed 004 "Determination Roll").
DETERMINATION: dict[str, str] = {
    "bad": "the consequence still happens",
    "partial": "the consequence is reduced",
    "full": "the consequence is avoided",
    "critical": "the consequence is avoided and the next roll's risk is lowered",
}
#: The GM's consequence choices on a partial or bad action roll (seed 004 "Consequences").
CONSEQUENCES: tuple[str, ...] = (
    "reduced effect", "complication (danger clock)", "escalated risk", "lost opportunity", "worse condition (stress)",
)
CLOCK_SIZES: tuple[int, ...] = (4, 6, 8)
STRESS_SEGMENTS = 4
MAX_DICE = 20
MIN_DICE = -20

#: The table parameters of a Charge roll (seed 004), as ``PUT /api/system`` takes them and /gm offers them.
PARAMS: tuple[Param, ...] = (
    Param("risk", "choice", "moderate", "risk (consequence rating 1, 2, 3)", choices=RISKS),
    Param("effect", "choice", "standard", "effect (progress segments 1, 2, 3)", choices=EFFECTS),
    Param("dots", "int", None, "dots (action dots, likelihood dice, or momentum spent on a determination roll)",
          low=MIN_DICE, high=MAX_DICE, blank="as many dice as read"),
    Param("roll", "choice", "action", "roll", choices=ROLLS),
    Param("assist", "bool", False, "assist: +1 die, a teammate pays 1 momentum"),
    Param("push", "choice", "none", "push yourself (2 momentum): for a die, for effect, or to act while taken out",
          choices=PUSHES),
    Param("tension", "bool", False, "add tension: +1 die"),
)
DEFAULTS: dict[str, Any] = defaults_of(PARAMS)


def consequence_rating(risk: str) -> int:
    """Consequence rating of a risk: low 1, moderate 2, high 3 (seed 004 "Consequences").
    Raises ValueError for another risk."""
    return RISKS.index(check_choice("risk", risk, RISKS)) + 1


def progress_ticks(effect: str) -> int:
    """Progress-clock segments for a success: limited 1, standard 2, great 3 (seed 004 "Clocks").
    Raises ValueError for another effect."""
    return EFFECTS.index(check_choice("effect", effect, EFFECTS)) + 1


def tick_clock(filled: int, segments: int, ticks: int) -> tuple[int, bool]:
    """Tick a clock of 4, 6 or 8 segments: ``(filled after, full)``; filling stops at full.

    Raises ValueError for another size, a filled count outside 0..segments or negative ticks.
    """
    if segments not in CLOCK_SIZES:
        raise ValueError(f"a clock has 4, 6 or 8 segments, got {segments!r}")
    check_int("filled", filled, 0, segments)
    check_int("ticks", ticks, 0, 100)
    after = min(segments, filled + ticks)
    return after, after == segments


def take_stress(stress: int, amount: int) -> tuple[int, bool]:
    """Add stress to a 4-segment stress clock: ``(stress after, taken_out)``. When it fills the
    character is taken out and the clock clears to 0 (seed 004 "Health and Condition").
    Raises ValueError for stress outside 0..3 or a negative amount."""
    check_int("stress", stress, 0, STRESS_SEGMENTS - 1)
    check_int("amount", amount, 0, 100)
    if stress + amount >= STRESS_SEGMENTS:
        return 0, True
    return stress + amount, False


def flashback_cost(cost: int) -> int:
    """A flashback's momentum cost, set by the GM: 0..2 (seed 004 "Flashbacks"). ValueError otherwise."""
    return check_int("flashback cost", cost, 0, 2)


def lower_risk(risk: str) -> str:
    """One risk step lower (low stays low)."""
    return RISKS[max(0, RISKS.index(risk) - 1)]


def _raise_effect(effect: str) -> str:
    return EFFECTS[min(len(EFFECTS) - 1, EFFECTS.index(effect) + 1)]


@dataclass(frozen=True, kw_only=True)
class ChargeResolution(Resolution):
    """A Charge roll (seed 004).

    Attributes:
        dice: d6 faces (1..6) as given.
        roll: "action", "fortune" or "determination".
        pool: dice in the pool (dots + bonus dice; <= 0 means the zero-dice rule).
        bonus_dice: bonus dice in the pool (assist, push for a die, add tension).
        zero_dice: two dice rolled, the lower decides, no critical.
        deciding_die: the face that set the band. sixes: number of 6s.
        risk, effect: as set by the GM; ``effect`` is the final effect (push for effect and
            a critical each raise it one step, capped at great).
        consequence: a partial or bad action roll: the GM picks one of :data:`CONSEQUENCES`.
        consequence_rating: 1/2/3 by risk when there is a consequence, else 0; it is the
            danger-clock ticks and the stress of that consequence.
        progress_ticks: progress-clock segments on a success of an action roll, else 0.
        momentum_spent: momentum the roller spent (2 per push; determination: 1 per die).
        assist_momentum: momentum a teammate spent to assist (0 or 1).
        momentum_gained: 1/2/3 on partial/full/critical of an action roll that spent none.
        determination: for a determination roll, what happens to the consequence; else "".
        next_risk: the risk of the next roll (lowered by a critical determination roll).
    """

    dice: tuple[int, ...]
    roll: str
    pool: int
    bonus_dice: int
    zero_dice: bool
    deciding_die: int
    sixes: int
    risk: str
    effect: str
    consequence: bool
    consequence_rating: int
    progress_ticks: int
    momentum_spent: int
    assist_momentum: int
    momentum_gained: int
    determination: str
    next_risk: str

    def odds_params(self) -> dict:
        return {"dice": self.pool, "roll": self.roll}


def validate_params(params: Mapping[str, Any]) -> dict:
    """Fill the defaults of :data:`DEFAULTS` and check every value.

    Keys: ``risk`` (:data:`RISKS`), ``effect`` (:data:`EFFECTS`), ``dots`` (-20..20 or None =
    as many dice as read, bonus dice included), ``roll`` (:data:`ROLLS`), ``assist`` (bool),
    ``push`` (:data:`PUSHES`), ``tension`` (bool). Raises ValueError naming a bad key or value.
    """
    out = check_params(SYSTEM, params, PARAMS)
    if out["roll"] != "action" and (out["assist"] or out["push"] != "none" or out["tension"]):
        raise ValueError(f"bonus dice (assist, push, tension) apply to action rolls only, not a {out['roll']} roll")
    if out["push"] == "die" and out["tension"]:
        raise ValueError("push yourself for a die and add tension are the same bonus die: choose one")
    return out


def bonus_dice(assist: bool, push: str, tension: bool) -> int:
    """Bonus dice: assist 1, push for a die 1, add tension 1."""
    return int(assist) + int(push == "die") + int(tension)


def read_d6s(faces: Sequence[int], zero_dice: bool) -> tuple[str, int, int]:
    """Band of rolled d6s: ``(band, deciding face, sixes)``; zero dice: the lower, no critical."""
    sixes = faces.count(6)
    face = min(faces) if zero_dice else max(faces)
    if face <= 3:
        return "bad", face, sixes
    if face <= 5:
        return "partial", face, sixes
    return ("critical" if sixes >= 2 and not zero_dice else "full"), face, sixes


def resolve(
    dice: Sequence[int], dots: int | None = None, roll: str = "action", risk: str = "moderate",
    effect: str = "standard", assist: bool = False, push: str = "none", tension: bool = False,
) -> ChargeResolution:
    """Resolve a Charge roll (seed 004; RULES.md ``charge``).

    Args:
        dice: the d6 faces rolled (1..6). With ``dots`` given there must be ``dots`` + bonus
            dice of them, or exactly 2 when that pool is 0 or less (zero-dice rule); without
            ``dots`` the pool is the number of faces (1..22).
        dots: action dots (action roll), likelihood dice (fortune roll) or momentum spent
            (determination roll); -20..20.
        roll, risk, effect, assist, push, tension: see :func:`validate_params`.

    Raises:
        ValueError: a face off the d6, a count that does not fit the pool, a bad option.
    """
    validate_params({"dots": dots, "roll": roll, "risk": risk, "effect": effect,
                    "assist": assist, "push": push, "tension": tension})
    bonus = bonus_dice(assist, push, tension)
    faces = check_faces("dice", dice, 6, 1, MAX_DICE + 2)
    if dots is None:
        pool = len(faces)
        if pool < bonus:
            raise ValueError(f"dice: {plural(pool, 'face')} given, fewer than the {plural(bonus, 'bonus die', 'bonus dice')}")
    else:
        pool = dots + bonus
        want = pool if pool > 0 else 2
        if len(faces) != want:
            what = f"{plural(pool, 'die', 'dice')} ({dots} + {bonus} bonus)" if pool > 0 else "2 dice (zero-dice rule)"
            raise ValueError(f"dice: {plural(len(faces), 'face')} given, the pool is {what}")
    zero = pool <= 0
    band, deciding, sixes = read_d6s(faces, zero)

    why = []
    if zero:
        why.append(f"zero dice: the lower of two d6 is {deciding}: {band}" + (" (no critical with zero dice)" if sixes == 2 else ""))
    elif band == "critical":
        why.append(f"{sixes} sixes: critical")
    else:
        why.append(f"highest die {deciding}: {band}")
    if bonus:
        parts = [n for n, on in (("assist", assist), ("push", push == "die"), ("tension", tension)) if on]
        why.append(f"{plural(bonus, 'bonus die', 'bonus dice')} ({', '.join(parts)})")

    spent = 2 if push != "none" else 0
    assist_m = int(assist)
    gained = 0
    consequence = False
    rating = 0
    ticks = 0
    final_effect = effect
    determination = ""
    next_risk = risk
    if roll == "action":
        if push == "effect":
            final_effect = _raise_effect(final_effect)
        if band == "critical":
            raised = _raise_effect(final_effect)
            why.append("critical: increased effect" + ("" if raised != final_effect else " (already great)"))
            final_effect = raised
        if band in ("bad", "partial"):
            consequence = True
            rating = consequence_rating(risk)
            why.append(f"{risk} risk: consequence rating {rating} (danger {rating} / stress {rating})")
        if band != "bad":
            ticks = progress_ticks(final_effect)
        if spent or assist_m:
            who = " and ".join(w for w, on in (("push", spent), ("assist", assist_m)) if on)
            why.append(f"momentum spent ({who}): no momentum gained")
        else:
            gained = MOMENTUM_GAIN[band]
            if gained:
                why.append(f"gains {plural(gained, 'momentum', 'momentum')}")
    elif roll == "determination":
        spent = max(dots if dots is not None else len(faces), 0)
        determination = DETERMINATION[band]
        why.append(determination)
        if band == "critical":
            next_risk = lower_risk(risk)
    else:
        why.append("fortune roll: no momentum, no consequence")

    return ChargeResolution(
        system=SYSTEM, outcome=band, why=tuple(why), effects=TableEffects(momentum=gained, momentum_spent=spent, assist_momentum=assist_m),
        dice=faces, roll=roll, pool=pool, bonus_dice=bonus, zero_dice=zero, deciding_die=deciding,
        sixes=sixes, risk=risk, effect=final_effect, consequence=consequence,
        consequence_rating=rating, progress_ticks=ticks, momentum_spent=spent,
        assist_momentum=assist_m, momentum_gained=gained, determination=determination,
        next_risk=next_risk,
    )


def band_weights(pool: int) -> tuple[list[int], int]:
    """Integer weights of (bad, partial, full, critical) for a pool of d6, and the denominator.

    Pool <= 0 is the zero-dice rule (two d6, the lower, no critical).
    """
    if pool <= 0:  # P(min >= f) = ((7-f)/6)^2
        return [36 - 9, 9 - 1, 1, 0], 36
    n = pool
    five = 5**n
    full = n * 5 ** (n - 1)
    six = 6**n
    return [3**n, five - 3**n, full, six - five - full], six


def _pool_of(dice: Any, roll: str, assist: Any, push: Any, tension: Any) -> int:
    p = validate_params({"dots": dice, "roll": roll, "assist": assist, "push": push, "tension": tension})
    return check_int("dice", p["dots"], MIN_DICE, MAX_DICE) + bonus_dice(assist, push, tension)


def odds(dice: int = 1, roll: str = "action", assist: bool = False, push: str = "none", tension: bool = False) -> dict[str, Fraction]:
    """Exact band odds of a Charge pool (seed 004 "Rolling Dice", "Player Evens the Odds";
    RULES.md ``charge``; INTERFACES.md "Python: exact odds"). Closed form: bad 3^n,
    partial 5^n-3^n, full n*5^(n-1), critical the rest, over 6^n; zero dice over 36.

    Args:
        dice: dots / likelihood / momentum spent, -20..20 (<= 0 with no bonus dice: zero-dice rule).
        roll, assist, push, tension: as :func:`validate_params`; bonus dice add to the pool.

    Returns ``{"bad", "partial", "full", "critical"} -> Fraction`` summing to 1.
    Raises ValueError for a value out of range (named).
    """
    weights, den = band_weights(_pool_of(dice, roll, assist, push, tension))
    return {b: Fraction(w, den) for b, w in zip(BANDS, weights)}


def odds_detail(dice: int = 1, roll: str = "action", assist: bool = False, push: str = "none", tension: bool = False) -> OddsDetail:
    """Bands plus ``momentum_gained`` (seed 004 "Momentum": 1 / 2 / 3 on partial / full /
    critical; 0 whenever momentum was spent or the roll is not an action roll) and the event
    ``consequence`` (seed 004 "Consequences": a partial or bad action roll). Arguments and
    errors as :func:`odds`."""
    pool = _pool_of(dice, roll, assist, push, tension)
    weights, den = band_weights(pool)
    bands = {b: Fraction(w, den) for b, w in zip(BANDS, weights)}
    gains = roll == "action" and not assist and push == "none"
    momentum: dict[int, Fraction] = {}
    for b, pr in bands.items():
        k = MOMENTUM_GAIN[b] if gains else 0
        momentum[k] = momentum.get(k, Fraction(0)) + pr
    events = {"consequence": bands["bad"] + bands["partial"] if roll == "action" else Fraction(0)}
    params = {"dice": dice, "roll": roll, "assist": assist, "push": push, "tension": tension, "pool": pool}
    return OddsDetail(SYSTEM, params, bands, {"momentum_gained": dict(sorted(momentum.items()))}, events)
