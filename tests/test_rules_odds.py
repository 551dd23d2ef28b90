"""Exact odds: brute force over every face combination (through ``resolve``, the table's own
code path), icepool as an independent oracle, the RULES.md reference for The Contract, and
exact normalisation of every distribution."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import product
from math import prod

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pi_table.rules import contingency, contract, odds, odds_detail, resolve

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dist(counter: Counter, total: int) -> dict:
    return {k: Fraction(v, total) for k, v in counter.items() if v}


def _nonzero(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


def _check_detail(detail) -> None:
    assert sum(detail.bands.values()) == 1
    for name, dist in detail.sides.items():
        assert sum(dist.values()) == 1, name
        assert all(v >= 0 for v in dist.values())
    for p in detail.events.values():
        assert 0 <= p <= 1


# --------------------------------------------------------------------------- brute force


@SETTINGS
@given(dice=st.integers(0, 4), pressure=st.integers(0, 4))
def test_action_brute_force(dice, pressure):
    n_action = 2 if dice == 0 else dice
    assume(8**n_action * 6**pressure <= 30_000)
    bands, tension, levels, cuts = Counter(), Counter(), Counter(), Counter()
    total = 0
    for a in product(range(1, 9), repeat=n_action):
        for p in product(range(1, 7), repeat=pressure):
            r = resolve("contingency-action", action=a, pressure=p, stat=dice if dice == 0 else None)
            bands[r.outcome] += 1
            tension[r.tension_tokens] += 1
            levels[r.critical_levels] += 1
            cuts[r.cuts] += 1
            total += 1
    detail = odds_detail("contingency-action", dice=dice, pressure=pressure)
    _check_detail(detail)
    assert _nonzero(detail.bands) == _dist(bands, total)
    assert odds("contingency-action", dice=dice, pressure=pressure) == detail.bands
    assert _nonzero(detail.sides["tension_tokens"]) == _dist(tension, total)
    assert _nonzero(detail.sides["critical_levels"]) == _dist(levels, total)
    assert _nonzero(detail.sides["cuts"]) == _dist(cuts, total)


@pytest.mark.parametrize("action", [False, True])
@pytest.mark.parametrize("dice", [1, 2, 3, 4])
def test_pool_brute_force(dice, action):
    bands, removed, remaining, events = Counter(), Counter(), Counter(), Counter()
    total = 8**dice
    for faces in product(range(1, 9), repeat=dice):
        r = resolve("contingency-pool", dice=faces, action=action)
        bands[r.outcome] += 1
        removed[r.removed] += 1
        remaining[r.remaining] += 1
        events["no_removal"] += r.no_removal
        events["depleted"] += r.depleted
        events["last_die_offer"] += bool(r.offers)
    detail = odds_detail("contingency-pool", dice=dice, action=action)
    _check_detail(detail)
    assert _nonzero(detail.bands) == _dist(bands, total)
    assert _nonzero(detail.sides["removed"]) == _dist(removed, total)
    assert _nonzero(detail.sides["remaining"]) == _dist(remaining, total)
    for name, p in detail.events.items():
        assert p == Fraction(events[name], total), name


@SETTINGS
@given(dice=st.integers(-2, 4), roll=st.sampled_from(["action", "fortune", "determination"]),
       assist=st.booleans(), push=st.sampled_from(["none", "die", "effect"]), tension=st.booleans())
def test_charge_brute_force(dice, roll, assist, push, tension):
    if roll != "action":
        assist, push, tension = False, "none", False
    if push == "die" and tension:
        tension = False
    pool = dice + int(assist) + int(push == "die") + int(tension)
    n = pool if pool > 0 else 2
    bands, momentum, cons = Counter(), Counter(), 0
    for faces in product(range(1, 7), repeat=n):
        r = resolve("charge", dice=faces, dots=dice, roll=roll, assist=assist, push=push, tension=tension)
        bands[r.outcome] += 1
        momentum[r.momentum_gained] += 1
        cons += r.consequence
    total = 6**n
    detail = odds_detail("charge", dice=dice, roll=roll, assist=assist, push=push, tension=tension)
    _check_detail(detail)
    assert _nonzero(detail.bands) == _dist(bands, total)
    assert _nonzero(detail.sides["momentum_gained"]) == _dist(momentum, total)
    assert detail.events["consequence"] == Fraction(cons, total)


@SETTINGS
@given(dice=st.integers(1, 4), difficulty=st.integers(2, 10))
def test_contract_brute_force(dice, difficulty):
    bands, succ = Counter(), Counter()
    for faces in product(range(1, 11), repeat=dice):
        r = resolve("contract", dice=faces, difficulty=difficulty)
        bands[r.outcome] += 1
        succ[r.successes] += 1
    total = 10**dice
    detail = odds_detail("contract", dice=dice, difficulty=difficulty)
    _check_detail(detail)
    assert _nonzero(detail.bands) == _dist(bands, total)
    assert _nonzero(detail.sides["successes"]) == _dist(succ, total)


KINDS = ["d4", "d6", "d8", "d10", "d12"]


@SETTINGS
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=3, max_size=3), target=st.integers(1, 16),
       adv=st.integers(0, 2), dis=st.integers(0, 2), mods=st.lists(st.integers(-3, 3), min_size=3, max_size=3),
       luck=st.booleans(), action_number=st.sampled_from([1, 1, 1, 2]))
def test_skill_brute_force(kinds, target, adv, dis, mods, luck, action_number):
    sizes = [int(k[1:]) for k in kinds]
    result, po, go, success = Counter(), Counter(), Counter(), Counter()
    total = prod(sizes)
    for faces in product(*(range(1, s + 1) for s in sizes)):
        r = resolve("contingency-skill", dice=list(zip(kinds, faces)), target=target, advantage=adv,
                    disadvantage=dis, modifiers=mods, action_number=action_number)
        if not luck:
            result[r.result] += 1
            po[r.player_omens] += 1
            go[r.gm_omens] += 1
            success[r.outcome] += 1
            continue
        s = int(r.result_die[1:])
        for lf in range(1, s + 1):  # weight each luck face by total_luck / s to keep one denominator
            rl = resolve("contingency-skill", dice=list(zip(kinds, faces)), target=target, advantage=adv,
                         disadvantage=dis, modifiers=mods, action_number=action_number, luck=(r.result_die, lf))
            w = 27720 // s
            result[rl.result] += w
            po[rl.player_omens] += w
            go[rl.gm_omens] += w
            success[rl.outcome] += w
    if luck:
        total *= 27720
    detail = odds_detail("contingency-skill", dice=kinds, target=target, advantage=adv, disadvantage=dis,
                         modifiers=mods, luck=luck, action_number=action_number)
    _check_detail(detail)
    assert _nonzero(detail.bands) == _dist(success, total)
    assert odds("contingency-skill", dice=kinds, target=target, advantage=adv, disadvantage=dis,
                modifiers=mods, luck=luck, action_number=action_number) == detail.bands
    assert _nonzero(detail.sides["result"]) == _dist(result, total)
    assert _nonzero(detail.sides["player_omens"]) == _dist(po, total)
    assert _nonzero(detail.sides["gm_omens"]) == _dist(go, total)
    assert detail.events["fail_by_one"] == Fraction(result[target - 1], total)


# --------------------------------------------------------------------------- icepool oracle

icepool = pytest.importorskip("icepool")


def _ice_bands(die, mapping) -> dict:
    out: dict = {}
    den = die.denominator()
    for outcome, q in die.items():
        band = mapping(outcome)
        out[band] = out.get(band, 0) + Fraction(q, den)
    return _nonzero(out)


@settings(max_examples=15, deadline=None)
@given(dice=st.integers(1, 30), difficulty=st.integers(2, 10))
def test_contract_icepool(dice, difficulty):
    one = icepool.d10.map(lambda f: contract.die_value(f, difficulty))
    oracle = _ice_bands(dice @ one, contract.band_of)
    assert _nonzero(odds("contract", dice=dice, difficulty=difficulty)) == oracle


@settings(max_examples=15, deadline=None)
@given(dice=st.integers(1, 20), pressure=st.integers(0, 20))
def test_action_icepool(dice, pressure):
    hc = icepool.d8.pool(dice).highest_outcome_and_count()
    index = hc.map(lambda h, c: contingency.FACE_INDEX[h] + (c - 1 if h == 8 else 0), star=True)
    cuts = pressure @ (icepool.d6 == 6) if pressure else icepool.Die([0])
    final = icepool.map(lambda i, c: i - c, index, cuts)
    oracle = _ice_bands(final, lambda i: contingency.band_of(i)[0])
    assert _nonzero(odds("contingency-action", dice=dice, pressure=pressure)) == oracle


@settings(max_examples=15, deadline=None)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=3, max_size=3), target=st.integers(1, 14),
       net=st.integers(-1, 1), mods=st.lists(st.integers(-2, 2), min_size=3, max_size=3))
def test_skill_icepool(kinds, target, net, mods):
    dice = [icepool.d(int(k[1:])).map(lambda f, m=m: max(1, f + m)) for k, m in zip(kinds, mods)]
    pool = icepool.Pool(dice)
    pick = pool.highest(1) if net > 0 else pool.lowest(1) if net < 0 else pool.middle(1)
    oracle = _ice_bands(pick.sum(), lambda r: "success" if r >= target else "failure")
    got = odds("contingency-skill", dice=kinds, target=target, advantage=max(net, 0), disadvantage=max(-net, 0),
               modifiers=mods)
    assert _nonzero(got) == oracle


@settings(max_examples=10, deadline=None)
@given(size=st.sampled_from([4, 6, 8, 10, 12]), target=st.integers(2, 24), net=st.integers(-1, 1))
def test_skill_luck_icepool(size, target, net):
    # same-size dice: the luck die is that size whichever die is the result
    pool = icepool.d(size).pool(3)
    pick = pool.highest(1) if net > 0 else pool.lowest(1) if net < 0 else pool.middle(1)
    oracle = _ice_bands(pick.sum() + icepool.d(size), lambda r: "success" if r >= target else "failure")
    got = odds("contingency-skill", dice=[f"d{size}"] * 3, target=target, advantage=max(net, 0),
               disadvantage=max(-net, 0), luck=True)
    assert _nonzero(got) == oracle


def test_charge_icepool():
    for n in range(1, 21):
        hc = icepool.d6.pool(n).highest_outcome_and_count()
        oracle = _ice_bands(hc, lambda t: "critical" if t == (6, t[1]) and t[1] >= 2 else
                            "full" if t[0] == 6 else "partial" if t[0] >= 4 else "bad")
        assert _nonzero(odds("charge", dice=n)) == oracle


# --------------------------------------------------------------------------- references and sums


def test_contract_reference_all_bands_exact():
    o = odds("contract", dice=6, difficulty=6)
    assert o == {"botch": Fraction(36519, 10**6), "failure": Fraction(64911, 10**6), "partial": Fraction(498580, 10**6),
                 "complete": Fraction(298560, 10**6), "exceptional": Fraction(101430, 10**6)}


@pytest.mark.parametrize("system, kwargs", [
    ("contract", {"dice": 30, "difficulty": d}) for d in range(2, 11)
] + [
    ("contingency-action", {"dice": 20, "pressure": 20}), ("contingency-action", {"dice": 0, "pressure": 20}),
    ("contingency-pool", {"dice": 20}), ("contingency-pool", {"dice": 20, "action": True}),
    ("charge", {"dice": 20}), ("charge", {"dice": -20}),
    ("contingency-skill", {"dice": ["d12"] * 3, "advantage": 1, "luck": True, "target": 12}),
    ("contingency-skill", {"dice": ["d4", "d8", "d12"], "disadvantage": 1, "luck": True, "modifiers": [1, -3, 2]}),
    ("contingency-skill", {"dice": ["d4", "d8", "d12"], "action_number": 3, "luck": True}),
    ("contingency-skill", {"percentile": True, "chance": 37}),
])
def test_largest_pools_sum_to_one(system, kwargs):
    detail = odds_detail(system, **kwargs)
    _check_detail(detail)
    assert odds(system, **kwargs) == detail.bands


@pytest.mark.parametrize("system, kwargs, bad", [
    ("contract", {"dice": 31}, "31"), ("contract", {"difficulty": 11}, "11"),
    ("contingency-action", {"dice": 21}, "21"), ("contingency-action", {"pressure": -1}, "-1"),
    ("contingency-pool", {"dice": 0}, "0"), ("charge", {"dice": 21}, "21"), ("charge", {"push": "hard"}, "hard"),
    ("contingency-skill", {"dice": ["d6", "d7", "d8"]}, "d7"), ("contingency-skill", {"dice": ["d6", "d8"]}, "2"),
    ("contingency-skill", {"target": "trivial"}, "trivial"), ("contingency-skill", {"advantage": 11}, "11"),
    ("contingency-skill", {"percentile": True, "chance": 101}, "101"),
    ("contingency-action", {"dice": "3"}, "3"), ("contract", {"dice": 2.5}, "2.5"),
])
def test_bad_odds_named(system, kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        odds(system, **kwargs)
    with pytest.raises(ValueError, match=bad):
        odds_detail(system, **kwargs)
