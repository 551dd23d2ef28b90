"""Values and checks shared by every system of the rules engine.

Nothing here knows a game: the typed results (:class:`Resolution`, :class:`TableEffects`,
:class:`OddsDetail`), the one-line ``ValueError`` checks that name the bad value, and exact
integer helpers (binomial rows, polynomial powers by Kronecker substitution) that the odds
of every system are built from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Sequence


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TableEffects:
    """What a resolution does to the table; ``pi_table.table`` adds it to the tokens.

    Attributes:
        tension_tokens: tension tokens the GM gains (seed 000 "Cutting Disastrous Outcomes").
        gm_omens: GM omens gained (seed 001 "Game Moderator Omens", "Choosing to Fail").
        player_omens: player omens earned for this roll (seed 001 "Player Omens"); they are
            spent on the roll itself and do not carry over.
        momentum: momentum the roller gains (seed 004 "Momentum").
        momentum_spent: momentum the roller spends on the roll (seed 004 "Push Yourself": 2;
            "Determination Roll": 1 per die). A teammate's assist (1 momentum) is not the
            roller's and is not counted here.
        luck_spent: luck points the roller spends (seed 001 "Luck Dice": 1 per luck die).
        assist_momentum: momentum the assisting teammate spends (seed 004 "Assist": 1), not
            the roller's; the table takes it from the teammate the GM picked to assist.
        tension_spent: tension tokens the GM spends on the roll (seed 000 "Diminishing Resource
            Pools": one to force a pool's last die out; RULES.md ``contingency-pool``).
    All are non-negative integers.
    """

    tension_tokens: int = 0
    gm_omens: int = 0
    player_omens: int = 0
    momentum: int = 0
    momentum_spent: int = 0
    luck_spent: int = 0
    assist_momentum: int = 0
    tension_spent: int = 0

    @property
    def net_momentum(self) -> int:
        """Momentum the roller ends the roll with, less what it started with: gained less spent."""
        return self.momentum - self.momentum_spent

    @property
    def net_tension(self) -> int:
        """The change to the GM's tension tokens: gained less spent (may be negative)."""
        return self.tension_tokens - self.tension_spent

    def to_json(self) -> dict:
        """``{"tension_tokens", "gm_omens", "player_omens", "momentum", "momentum_spent", "luck_spent",
        "assist_momentum", "tension_spent"}``, all int."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple) or isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Fraction):
        return {"p": float(value), "exact": f"{value.numerator}/{value.denominator}"}
    if hasattr(value, "to_json"):
        return value.to_json()
    return value


@dataclass(frozen=True)
class Resolution:
    """A resolved roll: the outcome band and why. One subclass per system adds typed fields.

    Attributes:
        system: one of :data:`pi_table.rules.SYSTEMS`.
        outcome: the outcome band id, lower case ("clean", "partial", "success", ...).
        why: short true sentences for the page: which die decided, cuts, omens, offers.
        effects: what the roll does to the table's tokens.
    """

    system: str
    outcome: str
    why: tuple[str, ...]
    effects: TableEffects

    def to_json(self) -> dict:
        """``system``, ``outcome``, every typed field of the subclass, ``why`` and ``effects``.

        Field names are those of INTERFACES.md ``resolve --json`` (e.g. ``critical_levels``,
        ``cuts``, ``tension_tokens`` for contingency-action).
        """
        out: dict[str, Any] = {"system": self.system, "outcome": self.outcome}
        for f in fields(self):
            if f.name in ("system", "outcome", "why", "effects"):
                continue
            out[f.name] = _jsonable(getattr(self, f.name))
        out["why"] = list(self.why)
        out["effects"] = self.effects.to_json()
        return out

    def odds_params(self) -> dict:
        """Keyword arguments for :func:`pi_table.rules.odds` that give the odds of this roll."""
        raise NotImplementedError


@dataclass(frozen=True)
class OddsDetail:
    """Exact odds of a roll: the outcome bands and the side quantities.

    Attributes:
        system: the system id.
        params: the validated parameters the odds were computed for.
        bands: outcome band id -> exact probability (sums to exactly 1), ladder order.
        sides: side quantity name -> {value: exact probability} (each sums to exactly 1), e.g.
            ``tension_tokens``, ``player_omens``, ``successes``, ``momentum_gained``.
        events: named yes/no events -> exact probability (e.g. ``fail_by_one``, ``depleted``).
    """

    system: str
    params: dict
    bands: dict[str, Fraction]
    sides: dict[str, dict[int, Fraction]] = field(default_factory=dict)
    events: dict[str, Fraction] = field(default_factory=dict)

    def to_json(self) -> dict:
        """Every probability as ``{"p": float, "exact": "num/den"}``."""
        return {
            "system": self.system,
            "params": _jsonable(self.params),
            "bands": _jsonable(self.bands),
            "sides": {name: {str(k): _jsonable(v) for k, v in dist.items()} for name, dist in self.sides.items()},
            "events": _jsonable(self.events),
        }


# --------------------------------------------------------------------------- checks


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo..hi``; ValueError naming ``name`` and the value otherwise.

    Booleans and floats with a fraction are refused; integral floats and numeric strings are
    not accepted either (the CLI converts its strings before calling).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool; ValueError naming it otherwise."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; ValueError naming it and the choices otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_faces(name: str, faces: Any, sides: int, lo_count: int = 0, hi_count: int = 20) -> tuple[int, ...]:
    """Faces typed in or read: a sequence of ints each in ``1..sides``, count in range.

    Raises:
        ValueError: not a sequence, a face off the die (naming it), or a count out of range.
    """
    if isinstance(faces, (str, bytes)) or not isinstance(faces, Iterable):
        raise ValueError(f"{name} must be a list of d{sides} faces, got {faces!r}")
    out = tuple(faces)
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= sides:
            raise ValueError(f"{name}: face {v!r} is not on a d{sides} (1..{sides})")
    if not lo_count <= len(out) <= hi_count:
        raise ValueError(f"{name}: {len(out)} dice given, expected {lo_count}..{hi_count}")
    return out


def check_unknown(system: str, given: Mapping[str, Any], known: Iterable[str]) -> None:
    """ValueError naming the first key of ``given`` that is not in ``known``."""
    known = tuple(known)
    for key in given:
        if key not in known:
            raise ValueError(f"unknown option {key!r} for {system} (expected one of {', '.join(known)})")


#: The kinds of :class:`Param`: how a value is checked and how the /gm page offers it.
PARAM_TYPES: tuple[str, ...] = ("choice", "int", "bool", "json")


@dataclass(frozen=True)
class Param:
    """One table parameter of a system: its default, how its value is checked, and the words and
    control the /gm page offers it with (``GET /api/systems`` ``fields``, :meth:`to_json`).

    Attributes:
        name: the key ``PUT /api/system`` takes (``"risk"``).
        type: one of :data:`PARAM_TYPES`: ``choice`` (one of ``choices``), ``int`` (``low..high``),
            ``bool``, or ``json`` (a list or mapping, checked by ``parse``; typed as JSON on /gm).
        default: the value a new table of the system starts with.
        label: a few words for the GM, in the seed's terms.
        choices: the values of a ``choice``.
        low, high: the range of an ``int`` (inclusive).
        blank: for a parameter that may be None, what None means (``"as many as read"``); ``""``
            for one that may not.
        parse: a check of its own in place of the type's (``value -> value``, raising ValueError),
            where the type's alone would refuse values the rules take (a target's difficulty name).
    """

    name: str
    type: str
    default: Any
    label: str
    choices: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    blank: str = ""
    parse: Callable[[Any], Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"param {self.name}: type must be one of {', '.join(PARAM_TYPES)}, got {self.type!r}")

    def check(self, value: Any) -> Any:
        """``value`` checked (and, by ``parse``, normalised); ValueError naming the parameter and the
        value otherwise (:func:`check_choice`, :func:`check_int`, :func:`check_bool`)."""
        if value is None and self.blank:
            return None
        if self.parse is not None:
            return self.parse(value)
        if self.type == "choice":
            return check_choice(self.name, value, self.choices)
        if self.type == "int":
            return check_int(self.name, value, self.low, self.high)
        if self.type == "bool":
            return check_bool(self.name, value)
        return value

    def to_json(self) -> dict:
        """``{"name", "type", "label", "default"}`` and, where they apply, ``choices``, ``min``, ``max``
        and ``blank`` (what an empty value means)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "label": self.label, "default": self.default}
        if self.choices:
            out["choices"] = list(self.choices)
        if self.low is not None:
            out["min"] = self.low
        if self.high is not None:
            out["max"] = self.high
        if self.blank:
            out["blank"] = self.blank
        return out


def defaults_of(params: Sequence[Param]) -> dict[str, Any]:
    """``{name: default}`` of ``params``, in their order: the parameters a new table starts with."""
    return {p.name: p.default for p in params}


def check_params(system: str, given: Mapping[str, Any], params: Sequence[Param]) -> dict:
    """The table parameters ``given`` for ``system`` with the defaults of ``params`` filled in and
    each value checked by its :class:`Param` (a new dict; a normalised value replaces the given one).

    Raises:
        ValueError: an unknown key or a bad value, named (the first found, in ``params``' order).
    """
    check_unknown(system, given, (p.name for p in params))
    out = defaults_of(params)
    out.update(given)
    for p in params:
        out[p.name] = p.check(out[p.name])
    return out


def plural(n: int, word: str, words: str | None = None) -> str:
    """``"1 cut"``, ``"2 cuts"``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


# --------------------------------------------------------------------------- exact arithmetic


def binomial_row(n: int, p_num: int, q_num: int) -> list[int]:
    """Integer weights of Binomial(n) with success weight ``p_num`` and failure weight ``q_num``.

    Entry ``k`` is ``C(n, k) * p_num**k * q_num**(n-k)``; the row sums to ``(p_num+q_num)**n``.
    """
    row = []
    c = 1
    pk = 1
    qpow = [1] * (n + 1)
    for i in range(1, n + 1):
        qpow[i] = qpow[i - 1] * q_num
    for k in range(n + 1):
        row.append(c * pk * qpow[n - k])
        c = c * (n - k) // (k + 1)
        pk *= p_num
    return row


def poly_pow(coeffs: Sequence[int], n: int) -> list[int]:
    """Coefficients of ``(sum coeffs[i] x**i) ** n`` for non-negative integer ``coeffs``.

    Exact, by Kronecker substitution: the polynomial is evaluated at ``2**B`` (B larger than
    any coefficient of the power), raised with Python's big-integer power and read back in
    B-bit slices. For 30 d10 this is tens of microseconds instead of thousands of Fraction
    operations.
    """
    if n == 0:
        return [1]
    total = sum(coeffs)
    bits = (total**n).bit_length() + 1
    nbytes = (bits + 7) // 8
    bits = nbytes * 8
    x = 0
    for c in reversed(coeffs):
        x = (x << bits) | c
    y = x**n
    degree = (len(coeffs) - 1) * n
    raw = y.to_bytes(nbytes * (degree + 1), "little")
    return [int.from_bytes(raw[i * nbytes:(i + 1) * nbytes], "little") for i in range(degree + 1)]


def fractions_of(weights: Mapping[Any, int], denominator: int) -> dict[Any, Fraction]:
    """``{key: Fraction(w, denominator)}`` in the mapping's order."""
    return {k: Fraction(w, denominator) for k, w in weights.items()}
