"""Contingency RPG, early playtest (seed 000): the d8 action roll and diminishing resource pools.

Readings of the terse places are those of ../shared/RULES.md, sections ``contingency-action``
and ``contingency-pool``:

- Ladder by the highest d8: 1 disastrous, 2-5 grim, 6-7 mixed, one 8 clean, two or more 8s
  critical with ``k = eights - 1`` levels (seed 000 "Rolling the Dice", "Cutting Critical
  Successes").
- Zero dice: two d8, the lower decides, no critical (8,8 is clean).
- Each 6 on a d6 pressure die is one cut on the ladder index (disastrous 0 .. clean 3,
  critical 3+k); cuts below disastrous give the GM one tension token each (seed 000
  "Adding Pressure", "Cutting Disastrous Outcomes").
- Pools: every die showing 6+ is removed; pressure never applies (seed 000 "Diminishing
  Resource Pools").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from pi_table.rules._common import (
    OddsDetail,
    Resolution,
    TableEffects,
    binomial_row,
    check_bool,
    check_choice,
    check_faces,
    check_int,
    check_params,
    defaults_of,
    plural,
    Param,
)

ACTION = "contingency-action"
POOL = "contingency-pool"

#: Outcome bands, worst first (ladder index order; critical is index 3+k).
LADDER: tuple[str, ...] = ("disastrous", "grim", "mixed", "clean", "critical")

#: Ladder index of one d8 face (seed 000 table: 1 | 2-5 | 6-7 | 8).
FACE_INDEX: tuple[int, ...] = (0, 0, 1, 1, 1, 1, 2, 2, 3)  # indexed by face 1..8; [0] unused

MAX_DICE = 20
MAX_PRESSURE = 20

#: Pool "drop a die" choices (seed 000): none, for greater effect, or at the cost of a consequence.
DROPS: tuple[str, ...] = ("none", "effect", "consequence")

#: What the kit offers when the last die of a pool stays (seed 000, RULES.md).
LAST_DIE_OFFERS: tuple[str, ...] = ("take a mark", "GM spends a tension token")

#: Pool "force" choices (seed 000, RULES.md ``contingency-pool``): whether the last die that stayed
#: is forced out, and how: not at all, the player takes a mark, or the GM spends a tension token.
FORCES: tuple[str, ...] = ("none", "mark", "tension")

#: The why line of a last die forced out, per :data:`FORCES` choice.
FORCED_WHY: dict[str, str] = {
    "mark": "last die forced out: the player takes a mark",
    "tension": "last die forced out: the GM spends a tension token",
}

#: The table parameters of an action roll (seed 000), as ``PUT /api/system`` takes them and /gm offers them.
ACTION_PARAMS: tuple[Param, ...] = (
    Param("stat", "int", None, "stat tested: action d8s (0: the zero-dice rule, two d8, the lower counts)",
          low=0, high=MAX_DICE, blank="as many d8 as read"),
    Param("pressure", "int", None, "pressure dice (d6)", low=0, high=MAX_PRESSURE, blank="as many d6 as read"),
)
#: The table parameters of a resource pool roll (seed 000 "Diminishing Resource Pools").
POOL_PARAMS: tuple[Param, ...] = (
    Param("pool", "int", None, "dice in the pool (d8)", low=1, high=MAX_DICE, blank="as many as read"),
    Param("drop", "choice", "none", "drop a die before the roll: for greater effect, or at the cost of a consequence",
          choices=DROPS),
    Param("action", "bool", False, "the roll performs an action (its band is the highest die)"),
    Param("force", "choice", "none", "last die that stayed forced out: by a mark, or a tension token", choices=FORCES),
)
ACTION_DEFAULTS: dict[str, Any] = defaults_of(ACTION_PARAMS)
POOL_DEFAULTS: dict[str, Any] = defaults_of(POOL_PARAMS)

_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count_word(n: int) -> str:
    return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)


def band_of(index: int) -> tuple[str, int, int]:
    """Band of a (possibly cut) ladder index: ``(band, critical_levels, tension_tokens)``.

    index >= 4: critical with ``index-3`` levels; 3 clean; 2 mixed; 1 grim; 0 disastrous;
    below 0: disastrous and ``-index`` tension tokens (RULES.md contingency-action).
    """
    if index >= 4:
        return "critical", index - 3, 0
    if index >= 0:
        return LADDER[index], 0, 0
    return "disastrous", 0, -index


def _band_words(index: int) -> str:
    band, levels, _ = band_of(max(index, 0))
    return f"critical ({plural(levels, 'level')})" if band == "critical" else band


def read_d8s(faces: Sequence[int], zero_dice: bool) -> tuple[int, int, int]:
    """Ladder index of rolled action d8s: ``(index, deciding face, number of 8s)``.

    Normal roll: the highest face, plus one level per 8 beyond the first. Zero dice: the
    lower of the two faces, no critical (seed 000).
    """
    if zero_dice:
        low = min(faces)
        return FACE_INDEX[low], low, faces.count(8)
    high = max(faces)
    eights = faces.count(8)
    return FACE_INDEX[high] + max(0, eights - 1), high, eights


# --------------------------------------------------------------------------- action roll


@dataclass(frozen=True, kw_only=True)
class ActionResolution(Resolution):
    """A contingency-action roll (seed 000).

    Attributes:
        action: the action d8 faces (1..8) as given.
        pressure: the pressure d6 faces (1..6) as given.
        zero_dice: True when the stat was 0 (two d8, the lower decides, no critical).
        deciding_die: the face that set the ladder (highest, or the lower for zero dice).
        eights: number of 8s among the action dice.
        rolled: the band before cuts; rolled_critical_levels its critical levels.
        critical_levels: levels of the final critical (0 unless outcome is critical).
        cuts: number of 6s on the pressure dice.
        tension_tokens: tension tokens the GM gains (cuts below disastrous).
    """

    action: tuple[int, ...]
    pressure: tuple[int, ...]
    zero_dice: bool
    deciding_die: int
    eights: int
    rolled: str
    rolled_critical_levels: int
    critical_levels: int
    cuts: int
    tension_tokens: int

    def odds_params(self) -> dict:
        return {"dice": 0 if self.zero_dice else len(self.action), "pressure": len(self.pressure)}


def validate_action_params(params: Mapping[str, Any]) -> dict:
    """Table parameters of contingency-action: ``stat`` (0..20 or None = as many d8 as read)
    and ``pressure`` (expected number of d6 pressure dice, 0..20, or None = as read)."""
    return check_params(ACTION, params, ACTION_PARAMS)


def resolve_action(action: Sequence[int], pressure: Sequence[int] = (), stat: int | None = None) -> ActionResolution:
    """Resolve a contingency-action roll (seed 000; RULES.md ``contingency-action``).

    Args:
        action: faces of the action d8s (1..8). With ``stat=0``, exactly the two d8 of the
            zero-dice rule; otherwise 1..20 dice (``stat`` dice when a stat is given).
        pressure: faces of the d6 pressure dice (1..6), 0..20 of them.
        stat: the stat tested (0..20); None = as many as faces given.

    Raises:
        ValueError: a face off its die, a count out of range, or a count that does not match
            the stat (the message names the bad value).
    """
    if stat is not None:
        check_int("stat", stat, 0, MAX_DICE)
    zero = stat == 0
    faces = check_faces("action", action, 8, 0, MAX_DICE)
    if zero and len(faces) != 2:
        raise ValueError(f"stat 0 (zero-dice rule) takes exactly 2 action d8, got {len(faces)}")
    if not zero and not faces:
        raise ValueError("action: no action dice given (use stat 0 and two d8 for the zero-dice rule)")
    if stat and len(faces) != stat:
        raise ValueError(f"stat {stat} takes {stat} action d8, got {len(faces)}")
    cut_faces = check_faces("pressure", pressure, 6, 0, MAX_PRESSURE)
    index, deciding, eights = read_d8s(faces, zero)
    cuts = cut_faces.count(6)
    rolled, rolled_levels, _ = band_of(index)
    outcome, levels, tension = band_of(index - cuts)

    why = []
    if zero:
        why.append(f"zero dice: the lower d8 is {deciding}: {rolled}" + (" (no critical with zero dice)" if eights == 2 else ""))
    elif rolled == "critical":
        why.append(f"{_count_word(eights)} 8s: critical, {plural(rolled_levels, 'level')}")
    else:
        why.append(f"highest action die {deciding}: {rolled}")
    if cut_faces:
        if cuts == 0:
            why.append(f"no 6 on {plural(len(cut_faces), 'pressure die', 'pressure dice')}: no cut")
        else:
            if index == 0:
                why.append(f"{plural(cuts, 'pressure 6')}: {plural(cuts, 'cut')}, none possible below disastrous")
            else:
                why.append(f"{plural(cuts, 'pressure 6')}: {plural(cuts, 'cut')}, {_band_words(index)} to {_band_words(index - cuts)}")
    if tension:
        why.append(f"{plural(tension, 'cut')} below disastrous: GM gains {plural(tension, 'tension token')}")
    return ActionResolution(
        system=ACTION, outcome=outcome, why=tuple(why), effects=TableEffects(tension_tokens=tension),
        action=faces, pressure=cut_faces, zero_dice=zero, deciding_die=deciding, eights=eights,
        rolled=rolled, rolled_critical_levels=rolled_levels, critical_levels=levels, cuts=cuts,
        tension_tokens=tension,
    )


def action_index_weights(dice: int) -> tuple[list[int], int]:
    """Integer weights of the ladder index of ``dice`` action d8 (0 = zero-dice rule).

    Returns ``(weights, denominator)``: ``weights[i]`` / ``denominator`` is P(index = i),
    index 0 disastrous .. 3 clean, 3+k critical with k levels.
    """
    if dice == 0:  # two d8, take the lower: P(min >= f) = ((9-f)/8)^2
        return [64 - 49, 49 - 9, 9 - 1, 1], 64
    crit = binomial_row(dice, 1, 7)  # crit[k]: exactly k eights
    weights = [1, 5**dice - 1, 7**dice - 5**dice] + crit[1:]
    return weights, 8**dice


def _check_action_counts(dice: Any, pressure: Any) -> tuple[int, int]:
    return check_int("dice", dice, 0, MAX_DICE), check_int("pressure", pressure, 0, MAX_PRESSURE)


def action_odds(dice: int = 1, pressure: int = 0) -> dict[str, Fraction]:
    """Exact outcome-band odds of a contingency-action roll (seed 000 "Rolling the Dice",
    "Adding Pressure", "Cutting Critical Successes", "Cutting Disastrous Outcomes"; RULES.md
    ``contingency-action``; INTERFACES.md "Python: exact odds").

    Closed form, no enumeration: the ladder index of N d8 has integer weights 1, 5^N-1,
    7^N-5^N and Binomial(N, 1/8) rows for the 8s; the cuts are Binomial(P, 1/6); prefix
    sums over cuts bucket ``index - cuts`` into bands in O(N + P) big-integer operations.

    Args:
        dice: action d8s, 0..20 (0 = zero-dice rule). pressure: d6 pressure dice, 0..20.

    Returns:
        ``{"disastrous", "grim", "mixed", "clean", "critical"} -> Fraction``, summing to 1.

    Raises:
        ValueError: a count out of range (named).
    """
    dice, pressure = _check_action_counts(dice, pressure)
    weights, den = action_index_weights(dice)
    cut_w = binomial_row(pressure, 1, 5)
    # band weight = sum over index i and cuts c of w_i * v_c, bucketed by i - c.
    # Prefix sums over cuts make it O(index + cuts) instead of O(index * cuts).
    prefix = [0]
    for v in cut_w:
        prefix.append(prefix[-1] + v)
    top = len(cut_w)

    def cut_mass(lo: int, hi: int) -> int:  # sum of cut weights with lo <= c <= hi
        lo = max(lo, 0)
        hi = min(hi, top - 1)
        return prefix[hi + 1] - prefix[lo] if hi >= lo else 0

    band = [0, 0, 0, 0, 0]
    for i, w in enumerate(weights):
        if not w:
            continue
        # final = i - c. disastrous: c >= i; grim: c = i-1; mixed: c = i-2; clean: c = i-3; critical: c <= i-4
        band[0] += w * cut_mass(i, top)
        band[1] += w * cut_mass(i - 1, i - 1)
        band[2] += w * cut_mass(i - 2, i - 2)
        band[3] += w * cut_mass(i - 3, i - 3)
        band[4] += w * cut_mass(0, i - 4)
    total = den * 6**pressure
    return {name: Fraction(b, total) for name, b in zip(LADDER, band)}


def action_odds_detail(dice: int = 1, pressure: int = 0) -> OddsDetail:
    """Bands plus the side quantities of a contingency-action roll (seed 000).

    Sides: ``tension_tokens`` (gained by the GM), ``cuts`` (pressure 6s), ``critical_levels``
    (of the final outcome; 0 when it is not critical). Raises ValueError like :func:`action_odds`.
    """
    dice, pressure = _check_action_counts(dice, pressure)
    weights, den = action_index_weights(dice)
    cut_w = binomial_row(pressure, 1, 5)
    total = den * 6**pressure
    tension: dict[int, int] = {}
    levels: dict[int, int] = {}
    for i, w in enumerate(weights):
        for c, v in enumerate(cut_w):
            _, k, t = band_of(i - c)
            tension[t] = tension.get(t, 0) + w * v
            levels[k] = levels.get(k, 0) + w * v
    sides = {
        "tension_tokens": {k: Fraction(v, total) for k, v in sorted(tension.items())},
        "cuts": {c: Fraction(v, 6**pressure) for c, v in enumerate(cut_w)},
        "critical_levels": {k: Fraction(v, total) for k, v in sorted(levels.items())},
    }
    return OddsDetail(ACTION, {"dice": dice, "pressure": pressure}, action_odds(dice, pressure), sides)


# --------------------------------------------------------------------------- resource pool


@dataclass(frozen=True, kw_only=True)
class PoolResolution(Resolution):
    """A diminishing resource pool roll (seed 000 "Diminishing Resource Pools").

    Attributes:
        dice: the d8 faces rolled (every die left in the pool).
        drop: "none", "effect" (one die dropped before rolling for greater effect) or
            "consequence" (dropped at the cost of a consequence).
        pool_before: dice in the pool before the roll (rolled + dropped).
        removed: dice removed by the roll (faces 6+), plus the last die when it was forced out.
        remaining: dice left in the pool after the roll.
        no_removal: no die was removed: the GM applies a secondary effect / minor consequence.
        offers: for a last die that stayed and was not forced out: "take a mark" or "GM spends
            a tension token" to force its removal (the ``force`` param applies one).
        forced: how the last die that stayed was forced out (``force``): "mark" (the player
            takes a mark), "tension" (the GM spends one tension token: ``effects.tension_spent``)
            or "none" (not forced, or there was no such die to force out).
        depleted: the pool is empty: the event occurs / the resource is gone.
        action: the pool roll is used to perform an action (seed 000: "the same resolution
            mechanics apply to the outcome as if it were a standard action roll").
        deciding_die, critical_levels: the die that set the outcome and its critical levels.
            Used as an action (``action=True``): the highest die, as contingency-action
            without pressure. A plain consumption roll (``action=False``, the default): the
            highest die that stays in the pool (the dice at 6+ are the "clean or mixed"
            results that leave it), or, when every die left, the highest die rolled. This is
            the reading of INTERFACES.md's example (6,2,8,1 -> grim, 2 removed, 2 remaining).
    """

    dice: tuple[int, ...]
    drop: str
    pool_before: int
    removed: int
    remaining: int
    no_removal: bool
    offers: tuple[str, ...]
    depleted: bool
    deciding_die: int
    critical_levels: int
    action: bool = False
    forced: str = "none"

    def odds_params(self) -> dict:
        return {"dice": len(self.dice), "action": self.action}  # forcing the last die out changes no odds


def validate_pool_params(params: Mapping[str, Any]) -> dict:
    """Table parameters of contingency-pool: ``pool`` (expected d8 count, 1..20, or None = as
    read), ``drop`` (one of :data:`DROPS`), ``action`` (bool: the roll performs an action,
    so its band is the highest die) and ``force`` (one of :data:`FORCES`: a last die that
    stays is forced out by a mark or a tension token). Raises ValueError naming a bad key or value."""
    return check_params(POOL, params, POOL_PARAMS)


def pool_read(faces: Sequence[int], action: bool) -> tuple[int, int, int]:
    """Ladder index of a pool roll: ``(index, deciding face, 8s counted)``.

    ``action``: the highest die (as :func:`read_d8s`). Otherwise the highest die that stays
    (below 6), or the highest die rolled when every die is removed.
    """
    stay = [f for f in faces if f < 6]
    if action or not stay:
        return read_d8s(faces, False)
    return read_d8s(stay, False)


def resolve_pool(dice: Sequence[int], drop: str = "none", action: bool = False, force: str = "none") -> PoolResolution:
    """Resolve a roll of a diminishing resource pool (seed 000 "Diminishing Resource Pools";
    RULES.md ``contingency-pool``).

    Args:
        dice: faces of every d8 rolled (1..20 of them, each 1..8).
        drop: one of :data:`DROPS`: whether one die was dropped before the roll and why.
        action: the roll performs an action: the band is the highest die (RULES.md). Else
            the band is read from the dice that stay (see :class:`PoolResolution`).
        force: one of :data:`FORCES`. Where the offer applies (one die rolled and it stayed),
            "mark" or "tension" forces it out: removed 1, remaining 0, depleted; "tension"
            spends one GM tension token (``effects.tension_spent``). Elsewhere it changes
            nothing but a why clause saying there was no last die to force out. The band
            is the roll's either way (forcing changes no odds).

    Raises:
        ValueError: a face off the d8, a count out of range, an unknown drop or force choice.
    """
    faces = check_faces("dice", dice, 8, 1, MAX_DICE)
    check_choice("drop", drop, DROPS)
    check_bool("action", action)
    check_choice("force", force, FORCES)
    dropped = 0 if drop == "none" else 1
    removed = sum(1 for f in faces if f >= 6)
    remaining = len(faces) - removed
    index, deciding, eights = pool_read(faces, action)
    outcome, levels, _ = band_of(index)
    offers = LAST_DIE_OFFERS if len(faces) == 1 and removed == 0 else ()
    forced = force if offers and force != "none" else "none"

    why = []
    if dropped:
        why.append("one die dropped before the roll" + (" for greater effect" if drop == "effect" else " at the cost of a consequence"))
    why.append(f"{plural(removed, 'die', 'dice')} at 6+ removed, {remaining} left")
    if forced != "none":
        offers, removed, remaining = (), 1, 0
        why.append(FORCED_WHY[forced])
    elif force != "none":
        why.append(f"force {force}: no last die stayed to force out")
    if remaining == 0:
        why.append("pool empty: the event occurs / the resource is depleted")
    elif removed == 0:
        why.append("no die removed: the GM applies a secondary effect or minor consequence")
    if offers:
        why.append("last die stayed: take a mark, or the GM spends a tension token, to remove it")
    if action:
        head = "as an action: "
    elif forced != "none":
        head = "the die forced out: "
    elif remaining:
        head = "highest die left in the pool: "
    else:
        head = "every die removed: "
    if outcome == "critical":
        why.append(f"{head}{_count_word(eights)} 8s, critical {plural(levels, 'level')}")
    else:
        why.append(f"{head}{deciding}, {outcome}")
    return PoolResolution(
        system=POOL, outcome=outcome, why=tuple(why), effects=TableEffects(tension_spent=int(forced == "tension")),
        dice=faces, drop=drop, pool_before=len(faces) + dropped, removed=removed, remaining=remaining,
        no_removal=removed == 0, offers=offers, depleted=remaining == 0, deciding_die=deciding,
        critical_levels=levels, action=action, forced=forced,
    )


def pool_index_weights(dice: int, action: bool = False) -> tuple[list[int], int]:
    """Integer weights of the ladder index of a pool roll of ``dice`` d8 (see :func:`pool_read`),
    and the denominator ``8**dice``.

    Not an action: any die in 2..5 -> grim; else any 1 -> disastrous; else (every die 6+)
    mixed / clean / critical by the 8s among dice that all show 6, 7 or 8.
    """
    if action:
        return action_index_weights(dice)
    n = dice
    eights = binomial_row(n, 1, 2)  # among n dice each 6, 7 or 8: exactly k eights
    weights = [4**n - 3**n, 8**n - 4**n, eights[0]] + eights[1:]
    return weights, 8**n


def _pool_bands(weights: list[int], den: int) -> dict[str, Fraction]:
    band = [0] * 5
    for i, w in enumerate(weights):
        band[min(i, 4)] += w
    return {name: Fraction(b, den) for name, b in zip(LADDER, band)}


def pool_odds(dice: int = 1, action: bool = False) -> dict[str, Fraction]:
    """Exact band odds of a pool roll of ``dice`` d8 (1..20), no pressure (seed 000).

    ``action=True``: read as an action (highest die), as ``action_odds(dice, 0)``; else the
    reading of :func:`pool_read`. Returns ``{band: Fraction}`` over :data:`LADDER`, summing to 1.
    Raises ValueError for a count out of range.
    """
    check_int("dice", dice, 1, MAX_DICE)
    check_bool("action", action)
    if action:
        return action_odds(dice, 0)
    return _pool_bands(*pool_index_weights(dice, False))


def pool_odds_detail(dice: int = 1, action: bool = False) -> OddsDetail:
    """Bands, ``removed`` (dice at 6+, Binomial(dice, 3/8)), ``remaining``, and the events
    ``no_removal``, ``depleted`` and ``last_die_offer`` of a pool of ``dice`` d8 (1..20).
    Raises ValueError for a count out of range."""
    check_int("dice", dice, 1, MAX_DICE)
    check_bool("action", action)
    den = 8**dice
    removed = binomial_row(dice, 3, 5)
    events = {
        "no_removal": Fraction(5**dice, den),
        "depleted": Fraction(3**dice, den),
        "last_die_offer": Fraction(5, 8) if dice == 1 else Fraction(0),
    }
    sides = {"removed": {k: Fraction(v, den) for k, v in enumerate(removed)},
             "remaining": {dice - k: Fraction(v, den) for k, v in reversed(list(enumerate(removed)))}}
    return OddsDetail(POOL, {"dice": dice, "action": action}, pool_odds(dice, action), sides, events)
