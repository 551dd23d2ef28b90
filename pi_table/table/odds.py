"""Exact odds of a recorded roll: the chance of each outcome band before the dice fell.

A roll is mapped to the arguments of :func:`pi_table.rules.odds` from its system, its
parameters and the number and kinds of dice read (RULES.md; INTERFACES.md "Python: exact
odds"). Results are cached by ``(system, params, dice signature)``, so serving a roll's
odds again (``/api/state``, ``/api/rolls``, the SSE ``roll`` event) costs a dict lookup.
Every system's odds are closed-form (well under a millisecond) except a skill check with
multiple-action penalties, which is enumerated on a background thread so that a roll is
never held up: its JSON has ``odds: null`` until they are ready.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Iterable

from pi_table import rules


def odds_args(system: str, params: dict, kinds: Iterable[str]) -> dict[str, Any]:
    """The keyword arguments of ``rules.odds(system, **args)`` for a roll.

    Args:
        system: one of ``rules.SYSTEMS``.
        params: the table parameters the roll was resolved under (validated here).
        kinds: the kinds of the dice read, in reading order (``"d6"``, ``"d8"``, ...).

    Mapping (RULES.md):
        - ``charge``: ``dice`` = action dots when the GM set ``dots`` (0 or less: zero-dice
          rule), else the d6 read minus the bonus dice; plus ``roll``/``assist``/``push``/``tension``.
        - ``contingency-action``: ``dice`` = ``stat`` when set (0: zero-dice rule), else the
          d8 read; ``pressure`` = the d6 read.
        - ``contingency-pool``: ``dice`` = the d8 read; ``action`` from the params.
        - ``contract``: ``dice`` = the d10 read; ``difficulty`` from the params.
        - ``contingency-skill``: the first three kinds (a 4th die is the luck die), target,
          advantage, disadvantage, modifiers, luck, action_number (penalties applied the
          recommended way); or ``percentile=True, chance=X`` for a d100 roll.

    Raises:
        ValueError: unknown system or bad params (named).
    """
    p = rules.validate_params(system, params)
    kinds = list(kinds)
    count = Counter(kinds)
    if system == "charge":
        bonus = int(p["assist"]) + int(p["push"] == "die") + int(p["tension"])
        dice = p["dots"] if p["dots"] is not None else count["d6"] - bonus
        return {"dice": dice, "roll": p["roll"], "assist": p["assist"], "push": p["push"], "tension": p["tension"]}
    if system == "contingency-action":
        return {"dice": p["stat"] if p["stat"] is not None else count["d8"], "pressure": count["d6"]}
    if system == "contingency-pool":
        return {"dice": count["d8"], "action": p["action"]}
    if system == "contract":
        return {"dice": count["d10"], "difficulty": p["difficulty"]}
    if p["percentile"] or "d10-tens" in count:
        return {"percentile": True, "chance": p["chance"]}
    return {"dice": kinds[:3], "target": p["target"], "advantage": p["advantage"], "disadvantage": p["disadvantage"],
            "modifiers": p["modifiers"], "luck": p["luck"], "action_number": p["action_number"]}


def _signature(system: str, kinds: Iterable[str]) -> tuple:
    """What of the dice the odds depend on: the kinds in order for a skill check (modifiers
    may be given per position), else how many of each kind."""
    kinds = tuple(kinds)
    if system == "contingency-skill":
        return kinds
    return tuple(sorted(Counter(kinds).items()))


def _slow(system: str, params: dict) -> bool:
    """True where the odds are enumerated (a skill check with multiple-action penalties:
    up to ~2 s on a desktop for three d12): those are computed off the roll's path."""
    return system == "contingency-skill" and not params.get("percentile") and (params.get("action_number") or 1) > 1


def _compute(system: str, params_json: str, signature: tuple) -> dict | None:
    params = json.loads(params_json)
    kinds = list(signature) if system == "contingency-skill" else [k for k, n in signature for _ in range(n)]
    try:
        bands = rules.odds(system, **odds_args(system, params, kinds))
    except ValueError:
        return None
    return {band: {"p": float(p), "exact": f"{p.numerator}/{p.denominator}"} for band, p in bands.items()}


#: Most cached results; the cache is emptied when it would grow past this.
CACHE_SIZE = 1024
_cache: dict[tuple, dict | None] = {}
_futures: dict[tuple, Future] = {}
_lock = threading.Lock()
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="odds")


def _store(key: tuple, value: dict | None) -> None:
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[key] = value
        _futures.pop(key, None)


def odds_future(system: str, params: dict, kinds: Iterable[str]) -> Future:
    """A future of :func:`roll_odds`'s value: already done when cached or quick to compute;
    else computed on the one background ``odds`` thread (one computation per key)."""
    try:
        key = (system, json.dumps(params, sort_keys=True), _signature(system, kinds))
    except (TypeError, ValueError):
        key = None
    done: Future = Future()
    if key is None:
        done.set_result(None)
        return done
    with _lock:
        if key in _cache:
            done.set_result(_cache[key])
            return done
        running = _futures.get(key)
    if running is not None:
        return running
    if not _slow(system, params):
        value = _compute(*key)
        _store(key, value)
        done.set_result(value)
        return done

    def work() -> dict | None:
        value = _compute(*key)
        _store(key, value)
        return value

    with _lock:
        running = _futures.get(key)
        if running is None:
            running = _futures[key] = _executor.submit(work)
    return running


def roll_odds(system: str, params: dict, kinds: Iterable[str], wait_s: float | None = None) -> dict | None:
    """Exact band odds of a roll as JSON: ``{band: {"p": float, "exact": "num/den"}}``.

    Args:
        system, params, kinds: as :func:`odds_args`.
        wait_s: longest wait, in seconds, for odds computed in the background (see
            :func:`odds_future`); None waits until they are done.

    Bands in the system's order (worst first; skill: success, failure); the ``p`` values sum
    to 1 and ``exact`` is the reduced fraction. None when the roll's dice or parameters do not
    give a computable roll (e.g. a count out of range, a percentile roll with no ``chance``),
    or when ``wait_s`` ran out first. Callers give ``reroll``/``invalid`` rolls None themselves.
    Cached by (system, params, dice signature); the returned dict is shared: do not modify it.
    """
    future = odds_future(system, params, kinds)
    try:
        return future.result(timeout=wait_s)
    except FutureTimeout:
        return None
