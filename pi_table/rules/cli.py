"""``pi-table resolve``, ``pi-table odds`` and ``pi-table bench-odds`` (INTERFACES.md "Command line").

Faces are typed comma-separated (``--action 8,8,8``); skill dice as ``kind=face``
(``--dice d6=5,d4=4,d10=9``). ``odds`` also takes the seeds' dice notation as words after
the system: ``pi-table odds contingency-action 3d 1p +2p`` (seed 000: ``d`` action dice,
``p`` pressure dice, ``+Np`` extra pressure), ``pi-table odds contract 6d10``,
``pi-table odds charge 2d6``, ``pi-table odds contingency-skill d6 d8 d10`` and
``pi-table odds contingency-skill 40%`` (seed 001 "Percentage Chance").

Bad input raises ValueError naming the bad value; :func:`pi_table.cli.main` prints it as
one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from fractions import Fraction
from typing import Any, Sequence

from pi_table.rules import api
from pi_table.rules._common import OddsDetail, Resolution, _jsonable

# --------------------------------------------------------------------------- parsing helpers


def parse_int(name: str, text: str) -> int:
    """An integer typed on the command line; ValueError naming ``name`` and the text otherwise."""
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not an integer") from None


def parse_faces(name: str, text: str, d10_zero: bool = False) -> list[int]:
    """``"8,8,2"`` -> ``[8, 8, 2]``; ``""`` -> ``[]``. With ``d10_zero`` a face ``0`` (a d10's
    printed "0") is 10. Raises ValueError naming a malformed item."""
    text = str(text).strip()
    if not text:
        return []
    out = []
    for item in text.split(","):
        item = item.strip()
        if not re.fullmatch(r"[+-]?\d+", item):
            raise ValueError(f"{name}: {item!r} is not a face (expected comma-separated integers, e.g. 6,2,8)")
        v = int(item)
        out.append(10 if d10_zero and v == 0 else v)
    return out


def parse_pairs(name: str, text: str, allow_bare: bool = False) -> list[tuple[str, int]]:
    """``"d6=5,d4=4"`` -> ``[("d6", 5), ("d4", 4)]``. A d10 face ``0`` is 10. With
    ``allow_bare`` an item without ``kind=`` gives ``("", n)``. ValueError on a malformed item."""
    text = str(text).strip()
    if not text:
        raise ValueError(f"{name}: nothing given")
    out = []
    for item in text.split(","):
        item = item.strip()
        m = re.fullmatch(r"(d\d+)\s*[=:]\s*([+-]?\d+)", item, re.IGNORECASE)
        if m:
            kind, v = m.group(1).lower(), int(m.group(2))
            out.append((kind, 10 if kind == "d10" and v == 0 else v))
        elif allow_bare and re.fullmatch(r"[+-]?\d+", item):
            out.append(("", int(item)))
        else:
            raise ValueError(f"{name}: {item!r} is not kind=value (e.g. d6=5)")
    return out


def parse_kinds(name: str, text: str) -> list[str]:
    """``"d6,d8,d10"`` -> ``["d6", "d8", "d10"]``; ValueError naming a malformed item."""
    out = []
    for item in str(text).split(","):
        item = item.strip().lower()
        if not re.fullmatch(r"d\d+", item):
            raise ValueError(f"{name}: {item!r} is not a die kind (e.g. d6)")
        out.append(item)
    return out


def _bool_word(name: str, text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("1", "yes", "true", "on", "y"):
        return True
    if t in ("0", "no", "false", "off", "n"):
        return False
    raise ValueError(f"{name}: {text!r} is not yes/no")


# --------------------------------------------------------------------------- options per system

#: Options of ``resolve`` each system accepts (attribute names of the parsed args).
RESOLVE_OPTIONS: dict[str, tuple[str, ...]] = {
    "contingency-action": ("action", "pressure", "stat"),
    "contingency-pool": ("dice", "drop", "pool", "as_action", "force"),
    "contingency-skill": ("dice", "target", "advantage", "disadvantage", "luck", "modifiers", "action_number",
                          "penalty_choice", "reposition", "path", "choose_fail", "percentile", "chance",
                          "mark_condition"),
    "charge": ("dice", "dots", "roll", "risk", "effect", "assist", "push", "tension"),
    "contract": ("dice", "difficulty"),
}

#: Options of ``odds`` each system accepts.
ODDS_OPTIONS: dict[str, tuple[str, ...]] = {
    "contingency-action": ("dice", "stat", "action", "pressure"),
    "contingency-pool": ("dice", "pool", "as_action"),
    "contingency-skill": ("dice", "target", "advantage", "disadvantage", "luck", "modifiers", "action_number",
                          "percentile", "chance"),
    "charge": ("dice", "dots", "roll", "assist", "push", "tension"),
    "contract": ("dice", "difficulty"),
}

_FLAG_NAMES = {"as_action": "--as-action", "action_number": "--action-number", "penalty_choice": "--penalty-choice", "choose_fail": "--choose-fail",
               "mark_condition": "--mark-condition"}


def _flag(attr: str) -> str:
    return _FLAG_NAMES.get(attr, "--" + attr)


def _given(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    return [n for n in names if getattr(args, n, None) not in (None, False)]


def _shown(args: argparse.Namespace, name: str) -> str:
    """How option ``name`` was given, for an error: its notation words (``'3d 2d'``) or
    ``--flag VALUE``."""
    words = getattr(args, "notation_words", {}).get(name)
    if words:
        return repr(words)
    value = getattr(args, name)
    return _flag(name) if value is True else f"{_flag(name)} {value}"


def _refuse(args: argparse.Namespace, names: Sequence[str], context: str) -> None:
    """ValueError naming the first of ``names`` given: ``context`` would ignore it silently
    (INTERFACES.md "Command line": bad input exits 2 with one line naming the bad value)."""
    given = _given(args, names)
    if given:
        raise ValueError(f"{_shown(args, given[0])} does not apply to {context}")


#: contingency-skill options of a three-dice skill check, beyond --dice and the advantage units.
_SKILL_CHECK_ONLY = ("target", "luck", "modifiers", "action_number", "penalty_choice", "reposition", "path",
                     "mark_condition")


def _check_options(args: argparse.Namespace, allowed: dict[str, tuple[str, ...]]) -> None:
    every = sorted({n for names in allowed.values() for n in names})
    wrong = [n for n in _given(args, every) if n not in allowed[args.system]]
    if wrong:
        raise ValueError(f"{_flag(wrong[0])} does not apply to {args.system} "
                         f"(it takes {', '.join(_flag(n) for n in allowed[args.system])})")


def _system(text: str) -> str:
    return api.check_system(text.strip().lower() if isinstance(text, str) else text)


def resolve_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`pi_table.rules.resolve` from parsed ``resolve`` options.

    Raises ValueError for an option the system does not take, an option given twice or one
    the other options would leave unused (RULES.md contingency-skill: --choose-fail rolls
    nothing, --chance is the X of a percentile roll), or a malformed value (each named).
    """
    system = args.system
    _check_options(args, RESOLVE_OPTIONS)
    kw: dict[str, Any] = {}
    if system == "contingency-action":
        if args.action is None:
            raise ValueError("contingency-action needs --action FACES (e.g. --action 8,8,2)")
        kw["action"] = parse_faces("--action", args.action)
        kw["pressure"] = parse_faces("--pressure", args.pressure or "")
        if args.stat is not None:
            kw["stat"] = parse_int("--stat", args.stat)
    elif system == "contingency-pool":
        if args.dice is None:
            raise ValueError("contingency-pool needs --dice FACES (e.g. --dice 6,2,8,1)")
        kw["dice"] = parse_faces("--dice", args.dice)
        if args.drop is not None:
            kw["drop"] = args.drop
        if args.pool is not None:
            kw["pool"] = parse_int("--pool", args.pool)
        if args.as_action:
            kw["action"] = True
        if args.force is not None:
            kw["force"] = args.force
    elif system == "contingency-skill":
        # RULES.md contingency-skill: choosing to fail rolls nothing (only the net advantage
        # counts); a percentile roll is a d100 against --chance; --chance is only that X.
        if args.choose_fail:
            _refuse(args, ("dice", "percentile", "chance", *_SKILL_CHECK_ONLY),
                    "--choose-fail (nothing is rolled; it takes --advantage and --disadvantage only)")
        elif args.percentile is not None:
            _refuse(args, ("dice", "advantage", "disadvantage", *_SKILL_CHECK_ONLY),
                    f"a percentile roll (--percentile {args.percentile}: a d100 against --chance alone)")
        else:
            _refuse(args, ("chance",), "a skill check with --dice (it is the X of an X% chance: "
                    "a percentile roll, --percentile TENS,ONES)")
        if args.choose_fail:
            kw["choose_fail"] = True
        elif args.percentile is not None:
            faces = parse_faces("--percentile", args.percentile)
            if len(faces) != 2:
                raise ValueError(f"--percentile: {args.percentile!r} is not TENS,ONES (e.g. 70,5)")
            kw["percentile"] = tuple(faces)
        elif args.dice is None:
            raise ValueError("contingency-skill needs --dice KIND=FACE,... (e.g. --dice d6=5,d4=4,d10=9)")
        if args.dice is not None:
            kw["dice"] = parse_pairs("--dice", args.dice)
        if args.target is not None:
            kw["target"] = args.target
        for name in ("advantage", "disadvantage", "action_number", "penalty_choice", "chance"):
            if getattr(args, name) is not None:
                kw[name] = parse_int(_flag(name), getattr(args, name))
        if args.modifiers is not None:
            kw["modifiers"] = _parse_modifiers(args.modifiers)
        if args.reposition:
            kw["reposition"] = True
        if args.mark_condition:
            kw["mark_condition"] = True
        if args.path is not None:
            kw["path"] = parse_faces("--path", args.path)
        if args.luck is not None:  # last: a bare face needs the result die of the rest
            pair = parse_pairs("--luck", args.luck, allow_bare=True)
            if len(pair) != 1:
                raise ValueError(f"--luck: {args.luck!r} is one die (e.g. d6=3)")
            kind, face = pair[0]
            kw["luck"] = (kind, face) if kind else _bare_luck_face(face, kw)
    elif system == "charge":
        # seed 004 / RULES.md charge: effect is an action roll's; a fortune roll has no
        # consequence, so no risk (a determination roll's risk is lowered on a critical).
        roll = args.roll or "action"
        if roll != "action":
            _refuse(args, ("effect",) if roll == "determination" else ("effect", "risk"),
                    f"a {roll} roll (it takes {'--dice, --dots and --risk' if roll == 'determination' else '--dice and --dots'})")
        if args.dice is None:
            raise ValueError("charge needs --dice FACES (e.g. --dice 6,6,3)")
        kw["dice"] = parse_faces("--dice", args.dice)
        if args.dots is not None:
            kw["dots"] = parse_int("--dots", args.dots)
        for name in ("roll", "risk", "effect", "push"):
            if getattr(args, name) is not None:
                kw[name] = getattr(args, name)
        if args.assist:
            kw["assist"] = True
        if args.tension:
            kw["tension"] = True
    else:  # contract
        if args.dice is None:
            raise ValueError("contract needs --dice FACES (e.g. --dice 10,6,1,3)")
        kw["dice"] = parse_faces("--dice", args.dice, d10_zero=True)
        if args.difficulty is not None:
            kw["difficulty"] = parse_int("--difficulty", args.difficulty)
    return kw


def _bare_luck_face(face: int, kw: dict[str, Any]) -> int:
    """A luck face typed without its kind (``--luck 0``): the luck die is the result die's
    size (RULES.md ``contingency-skill``, seed 001 "Luck Dice"), so a printed "0" is 10 when
    the result die is a d10, as in ``--luck d10=0`` (RULES.md "Dice faces as read by the
    camera": a d10 "0" is 10 outside a percentile pair). Any other face is returned as typed."""
    if face != 0 or kw.get("dice") is None or kw.get("choose_fail") or kw.get("percentile") is not None:
        return face
    probe = api.resolve("contingency-skill", **kw)  # the same check without luck: its errors are the real ones
    return 10 if probe.result_die == "d10" else face


def _parse_modifiers(text: str) -> Any:
    """``d10=-2,d6=1`` -> ``{"d10": -2, "d6": 1}``; ``0,-1,0`` -> ``[0, -1, 0]`` (one per die)."""
    if "=" in text or ":" in text:
        out: dict[str, int] = {}
        for item in text.split(","):
            m = re.fullmatch(r"\s*(d\d+)\s*[=:]\s*([+-]?\d+)\s*", item, re.IGNORECASE)
            if not m:
                raise ValueError(f"--modifiers: {item.strip()!r} is not kind=n (e.g. d10=-2)")
            kind = m.group(1).lower()
            if kind in out:
                raise ValueError(f"--modifiers: {kind} given twice")
            out[kind] = int(m.group(2))
        return out
    return parse_faces("--modifiers", text)


_NOTATION_ACTION = re.compile(r"(\+)?(\d+)([dp])", re.IGNORECASE)
_NOTATION_POOL = re.compile(r"(\d*)d(\d+)", re.IGNORECASE)


def _apply_notation(args: argparse.Namespace) -> None:
    """Fold the seed-notation words after the system into the options (in place)."""
    words = [w for word in (args.notation or []) for w in word.replace(",", " ").split()]
    args.notation_words = {}
    if not words:
        return
    system = args.system
    if system == "contingency-action":
        # seed 000 / RULES.md: "3d" action dice and "1p" pressure dice, each given once;
        # "+2p" (and "+1d") add dice from character features.
        base: dict[str, str | None] = {"d": None, "p": None}
        total: dict[str, int | None] = {"d": None, "p": None}
        for w in words:
            m = _NOTATION_ACTION.fullmatch(w)
            if not m:
                raise ValueError(f"{w!r} is not seed 000 notation (e.g. 3d 1p +2p)")
            n, what = int(m.group(2)), m.group(3).lower()
            if not m.group(1):
                if base[what] is not None:
                    noun = "action" if what == "d" else "pressure"
                    raise ValueError(f"{noun} dice given twice ({base[what]} and {w}; use +{n}{what} to add dice)")
                base[what] = w
            total[what] = (total[what] or 0) + n
        if total["d"] is not None:
            other = [_shown(args, n) for n in ("dice", "stat", "action") if getattr(args, n) is not None]
            if other:
                raise ValueError(f"action dice given twice ({' '.join(words)} and {other[0]})")
            args.dice = str(total["d"])
            args.notation_words["dice"] = " ".join(words)
        if total["p"] is not None:
            if args.pressure is not None:
                raise ValueError(f"pressure dice given twice ({' '.join(words)} and --pressure)")
            args.pressure = str(total["p"])
            args.notation_words["pressure"] = " ".join(words)
        return
    if system == "contingency-skill":
        kinds = []
        for w in words:
            m = re.fullmatch(r"(\d+)%", w)
            if m:
                if args.chance is not None:
                    first = args.notation_words.get("chance") or f"--chance {args.chance}"
                    raise ValueError(f"chance given twice ({first} and {w})")
                args.percentile = True
                args.chance = m.group(1)
                args.notation_words["chance"] = w
                continue
            m = _NOTATION_POOL.fullmatch(w)
            if not m:
                raise ValueError(f"{w!r} is not dice notation (e.g. d6 d8 d10, or 40%)")
            kinds += [f"d{m.group(2)}"] * int(m.group(1) or 1)
        if kinds:
            if args.dice is not None:
                raise ValueError(f"dice given twice ({' '.join(words)} and --dice)")
            args.dice = ",".join(kinds)
            args.notation_words["dice"] = " ".join(w for w in words if not w.endswith("%"))
        return
    sides = {"contingency-pool": 8, "charge": 6, "contract": 10}[system]
    total = 0
    for w in words:
        m = _NOTATION_POOL.fullmatch(w) or re.fullmatch(r"(\d+)", w)
        if not m:
            raise ValueError(f"{w!r} is not dice notation (e.g. 4d{sides})")
        if m.re is _NOTATION_POOL and int(m.group(2)) != sides:
            raise ValueError(f"{w!r}: {system} rolls d{sides}")
        total += int(m.group(1) or 1)
    if args.dice is not None:
        raise ValueError(f"dice given twice ({' '.join(words)} and --dice)")
    args.dice = str(total)


def odds_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`pi_table.rules.odds` from parsed ``odds`` options.

    Raises ValueError for an option the system does not take, an option given twice or one
    the other options would leave unused (RULES.md contingency-skill: --choose-fail rolls
    nothing, --chance is the X of a percentile roll), or a malformed value (each named).
    """
    _apply_notation(args)
    system = args.system
    _check_options(args, ODDS_OPTIONS)
    kw: dict[str, Any] = {}
    if system == "contingency-action":
        counts = [(n, getattr(args, n)) for n in ("dice", "stat", "action") if getattr(args, n) is not None]
        if len(counts) > 1:
            raise ValueError(f"action dice given twice ({' and '.join(_shown(args, n) for n, _ in counts)})")
        if counts:
            kw["dice"] = parse_int(_flag(counts[0][0]), counts[0][1])
        if args.pressure is not None:
            kw["pressure"] = parse_int("--pressure", args.pressure)
    elif system == "contingency-pool":
        counts = [(n, getattr(args, n)) for n in ("dice", "pool") if getattr(args, n) is not None]
        if len(counts) > 1:
            raise ValueError("pool size given twice (--dice and --pool)")
        if counts:
            kw["dice"] = parse_int(_flag(counts[0][0]), counts[0][1])
        if args.as_action:
            kw["action"] = True
    elif system == "contingency-skill":
        # RULES.md contingency-skill: a percentile roll is a d100 against --chance alone;
        # --chance is only the X of that roll.
        if args.percentile:
            how = args.notation_words.get("chance") or " ".join(
                ["--percentile"] + ([f"--chance {args.chance}"] if args.chance is not None else []))
            _refuse(args, ("dice", "target", "advantage", "disadvantage", "luck", "modifiers", "action_number"),
                    f"a percentile roll ({how}: a d100 against the chance alone)")
        else:
            _refuse(args, ("chance",), "a skill check (it is the X of an X% chance: add --percentile, or write X%)")
        if args.percentile:
            kw["percentile"] = True
        if args.dice is not None:
            kw["dice"] = parse_kinds("--dice", args.dice)
        if args.target is not None:
            kw["target"] = args.target
        for name in ("advantage", "disadvantage", "action_number", "chance"):
            if getattr(args, name) is not None:
                kw[name] = parse_int(_flag(name), getattr(args, name))
        if args.luck is not None:
            kw["luck"] = _bool_word("--luck", args.luck)
        if args.modifiers is not None:
            kw["modifiers"] = _parse_modifiers(args.modifiers)
    elif system == "charge":
        counts = [(n, getattr(args, n)) for n in ("dice", "dots") if getattr(args, n) is not None]
        if len(counts) > 1:
            raise ValueError("pool given twice (--dice and --dots)")
        if counts:
            kw["dice"] = parse_int(_flag(counts[0][0]), counts[0][1])
        for name in ("roll", "push"):
            if getattr(args, name) is not None:
                kw[name] = getattr(args, name)
        if args.assist:
            kw["assist"] = True
        if args.tension:
            kw["tension"] = True
    else:
        if args.dice is not None:
            kw["dice"] = parse_int("--dice", args.dice)
        if args.difficulty is not None:
            kw["difficulty"] = parse_int("--difficulty", args.difficulty)
    return kw


# --------------------------------------------------------------------------- output


def odds_json(detail: OddsDetail) -> dict:
    """The ``odds --json`` object: each band as ``{"p": float, "exact": "num/den"}`` at the top
    level (INTERFACES.md), plus ``system``, ``params``, ``sides`` (side-quantity distributions,
    ``{name: {value: {"p", "exact"}}}``) and ``events``."""
    out: dict[str, Any] = {band: _jsonable(p) for band, p in detail.bands.items()}
    extra = detail.to_json()
    out["system"] = detail.system
    out["params"] = extra["params"]
    out["sides"] = extra["sides"]
    out["events"] = extra["events"]
    return out


def _pct(p: Fraction) -> str:
    return f"{float(p) * 100:8.3f}%"


def format_odds(detail: OddsDetail) -> str:
    """Human-readable odds: one line per band, then each side quantity and event."""
    params = ", ".join(f"{k}={v}" for k, v in detail.params.items())
    lines = [f"{detail.system} ({params})"]
    for band, p in detail.bands.items():
        lines.append(f"  {band:<12}{_pct(p)}   {p.numerator}/{p.denominator}")
    for name, dist in detail.sides.items():
        lines.append(f"  {name}: " + ", ".join(f"{k}: {float(p) * 100:.2f}%" for k, p in dist.items()))
    for name, p in detail.events.items():
        lines.append(f"  {name}: {float(p) * 100:.3f}%")
    return "\n".join(lines)


def format_resolution(res: Resolution) -> str:
    """Human-readable resolution: the outcome, then the reasons."""
    lines = [f"{res.system}: {res.outcome.upper()}"]
    lines += [f"  {w}" for w in res.why]
    gains = {k: v for k, v in res.effects.to_json().items() if v}
    if gains:
        lines.append("  effects: " + ", ".join(f"{k.replace('_', ' ')} +{v}" for k, v in gains.items()))
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands


def cmd_resolve(args: argparse.Namespace) -> int:
    """``pi-table resolve``: print the Resolution (JSON with ``--json``); 0 on success."""
    args.system = _system(args.system)
    res = api.resolve(args.system, **resolve_kwargs(args))
    if args.json:
        print(json.dumps(res.to_json()))
    else:
        print(format_resolution(res))
    return 0


def cmd_odds(args: argparse.Namespace) -> int:
    """``pi-table odds``: print exact odds (JSON with ``--json``); 0 on success."""
    args.system = _system(args.system)
    detail = api.odds_detail(args.system, **odds_kwargs(args))
    if args.json:
        print(json.dumps(odds_json(detail)))
    else:
        print(format_odds(detail))
    return 0


def cmd_bench_odds(args: argparse.Namespace) -> int:
    """``pi-table bench-odds``: time exact odds against icepool and dyce (see :mod:`pi_table.rules.bench`)."""
    from pi_table.rules import bench

    return bench.main(repeats=args.repeats, small=args.small, as_json=args.json, oracles=not args.no_oracles)


def _common(p: argparse.ArgumentParser, odds_mode: bool) -> None:
    p.add_argument("system", help="contingency-action, contingency-pool, contingency-skill, charge or contract")
    if odds_mode:
        p.add_argument("notation", nargs="*", default=[], help="seed dice notation, e.g. 3d 1p +2p, 6d10, d6 d8 d10, 40%%")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--dice", help="faces (6,2,8,1), skill dice (d6=5,d4=4,d10=9); for odds: a count or d6,d8,d10")
    p.add_argument("--action", help="contingency-action: action d8 faces (resolve) or count (odds)")
    p.add_argument("--pressure", help="contingency-action: pressure d6 faces (resolve) or count (odds)")
    p.add_argument("--stat", help="contingency-action: the stat (0 = zero-dice rule)")
    p.add_argument("--pool", help="contingency-pool: dice in the pool")
    p.add_argument("--as-action", dest="as_action", action="store_true",
                   help="contingency-pool: the roll performs an action (band of the highest die)")
    p.add_argument("--target", help="contingency-skill: target difficulty (1..30 or a name, e.g. tricky)")
    p.add_argument("--advantage", help="contingency-skill: advantage units")
    p.add_argument("--disadvantage", help="contingency-skill: disadvantage units")
    p.add_argument("--luck", help="contingency-skill: the luck die (d6=3, or a bare face of the result die's size) for resolve; yes/no for odds")
    p.add_argument("--modifiers", help="contingency-skill: face modifiers, d10=-2 or one per die (0,-1,0)")
    p.add_argument("--action-number", dest="action_number", help="contingency-skill: n-th action this round")
    p.add_argument("--chance", help="contingency-skill: X of an X%% chance (percentile roll)")
    p.add_argument("--dots", help="charge: action dots (0 = zero-dice rule)")
    p.add_argument("--roll", choices=("action", "fortune", "determination"), help="charge: kind of roll")
    p.add_argument("--assist", action="store_true", help="charge: a teammate assists (+1d6)")
    p.add_argument("--push", choices=("none", "die", "effect", "act"), help="charge: push yourself")
    p.add_argument("--tension", action="store_true", help="charge: add tension (+1d6)")
    p.add_argument("--difficulty", help="contract: difficulty 2..10 (default 6)")


def register(subparsers: Any) -> None:
    """Add ``resolve``, ``odds`` and ``bench-odds`` to the ``pi-table`` parser."""
    r = subparsers.add_parser("resolve", help="apply a ruleset to faces typed in by hand")
    _common(r, odds_mode=False)
    r.add_argument("--drop", choices=("none", "effect", "consequence"), help="contingency-pool: a die dropped before the roll")
    r.add_argument("--force", choices=("none", "mark", "tension"),
                   help="contingency-pool: force a last die that stayed out (the player takes a mark, or the GM spends a tension token)")
    r.add_argument("--penalty-choice", dest="penalty_choice", help="contingency-skill: which listed penalty option to apply")
    r.add_argument("--reposition", action="store_true", help="contingency-skill: report movement points")
    r.add_argument("--path", help="contingency-skill: terrain modifiers of the zones on the way (0,1,0)")
    r.add_argument("--choose-fail", dest="choose_fail", action="store_true", help="contingency-skill: choose to fail")
    r.add_argument("--mark-condition", dest="mark_condition", action="store_true",
                   help="contingency-skill: the player marks a condition: a check failed by exactly one barely succeeds")
    r.add_argument("--percentile", help="contingency-skill: d100 as TENS,ONES (70,5), with --chance")
    r.add_argument("--risk", choices=("low", "moderate", "high"), help="charge: risk")
    r.add_argument("--effect", choices=("limited", "standard", "great"), help="charge: effect")
    r.set_defaults(func=cmd_resolve)

    o = subparsers.add_parser("odds", help="exact outcome probabilities")
    _common(o, odds_mode=True)
    o.add_argument("--percentile", action="store_true", help="contingency-skill: odds of an X%% chance (with --chance)")
    o.set_defaults(func=cmd_odds)

    b = subparsers.add_parser("bench-odds", help="time exact odds against icepool and dyce")
    b.add_argument("--repeats", type=int, default=21, help="warm repeats per case (median)")
    b.add_argument("--small", action="store_true", help="tiny pools (a quick check that the bench works)")
    b.add_argument("--no-oracles", dest="no_oracles", action="store_true", help="time the kit only")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.set_defaults(func=cmd_bench_odds)


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - convenience
    """Run these subcommands alone (``python -m pi_table.rules.cli odds contract --dice 6``)."""
    from pi_table.cli import main as kit_main

    return kit_main(list(argv) if argv is not None else sys.argv[1:])
