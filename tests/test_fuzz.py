"""Fuzzing every API field and every CLI option (hypothesis).

HTTP: arbitrary JSON bodies (and non-JSON ones) and path values go to every GM endpoint
with a valid PIN, and arbitrary query and path values to the reads. Never a 500, never a
traceback; a 4xx carries a one-line JSON error; a rejected request leaves the table
(state, rolls, players) as it was. The endpoints come from the OpenAPI description, which
must name every /api route of the app.

CLI: ``pi_table.cli.main([...])`` in-process with random strings and numbers for every
option of resolve, odds, read, eval, serve and loadtest: exit status 0 or 2, never a
traceback, a status 2 says one line.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from urllib.parse import quote

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pi_table.capture import Frame, SettledRoll
from pi_table.outputs.openapi import SPEC
from pi_table.outputs.web import create_app
from pi_table.service import Service, Settings
from tests.conftest import FakeReader, d6_reading

PIN = "13579"
AUTH = {"Authorization": f"Bearer {PIN}"}
_NO_SHRINK = os.environ.get("PI_TABLE_FUZZ_NO_SHRINK") and {"phases": [Phase.explicit, Phase.generate]} or {}
FUZZ = settings(max_examples=int(os.environ.get("PI_TABLE_FUZZ_EXAMPLES", 60)), deadline=None, suppress_health_check=list(HealthCheck), **_NO_SHRINK)
FEW = settings(max_examples=int(os.environ.get("PI_TABLE_FUZZ_EXAMPLES", 100)) // 4 or 1, deadline=None, suppress_health_check=list(HealthCheck), **_NO_SHRINK)

# -- values -------------------------------------------------------------------------------
scalars = (st.none() | st.booleans() | st.integers() | st.integers(-3, 12)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
           | st.sampled_from(["", "5", "0", "00", "70", "d6", "charge", "contract", "-1", "1e309", "NaN", "\x00", "é", " 5 "]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                           max_leaves=10)
FIELDS = ["system", "params", "delta", "face", "kind", "name", "momentum", "luck", "player", "pin", "difficulty", "risk", "dots",
          "dice", "force", "mark_condition", "target", "pool"]
bodies = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=12), json_values, max_size=4) | json_values
path_values = (st.integers(-5, 5) | st.integers(min_value=2**31) | st.integers(min_value=2**63 - 2, max_value=2**70)
               | st.text(max_size=20) | st.sampled_from(["1", "01", "1.5", "-1", "0x10", "%00", "..", "1/2", " 1"]))


def settled(n: int = 0) -> SettledRoll:
    image = np.full((64, 64, 3), 100 + n, np.uint8)
    return SettledRoll(Frame(image=image, t=0.0, index=n, name=f"roll{n}.jpg", settled=True), 0.0, 1.0)


def skill_reading():
    """A contingency-skill check's three dice (d6 2, d8 5, d10 9: the d8 is the result die)."""
    from pi_table.vision.dice import Die, Reading

    return Reading("skill.jpg", 640, 640, 1.0, tuple(
        Die(k, str(v), v, (10.0 + 50 * i, 10.0, 50.0 + 50 * i, 50.0), 0.99, "ok")
        for i, (k, v) in enumerate((("d6", 2), ("d8", 5), ("d10", 9)))))


def pool_reading():
    """A contingency-pool roll of one d8 that stays (3): its last die may be forced out."""
    from pi_table.vision.dice import Die, Reading

    return Reading("pool.jpg", 640, 640, 1.0, (Die("d8", "3", 3, (10.0, 10.0, 50.0, 50.0), 0.99, "ok"),))


@contextmanager
def table(tmp_path_factory):
    """A service with four recorded rolls (two Charge rolls; a skill check failed by one, which takes
    a luck die and a condition marked; a pool roll whose last die stayed, which may be forced out),
    two players (one the roller) and its app's test client; the table plays Charge."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    svc = Service(Settings(state_dir=tmp_path_factory.mktemp("fuzz"), pin=PIN, system="charge"),
                  reader=FakeReader(d6_reading(6, 4, 2), d6_reading(3, 1), skill_reading(), pool_reading()))
    try:
        svc.handle(settled(0))
        svc.handle(settled(1))
        ada = svc.add_player("Ada", luck=3)
        svc.add_player("Bo")
        svc.set_roller(ada.id)
        svc.set_system("contingency-skill", {"target": 6})
        svc.handle(settled(2))
        svc.set_system("contingency-pool", {"pool": 1})
        svc.handle(settled(3))
        svc.set_system("charge", {"assist": True})
        yield svc, create_app(svc).test_client()
    finally:
        svc.close()
        Device.pin_factory.reset()
        Device.pin_factory = old


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One table for many examples (building one costs two PIN hashes): (service, client, csrf)."""
    with table(tmp_path_factory) as (svc, client):
        login = client.post("/gm/login", json={"pin": PIN}).get_json()
        yield svc, client, login["csrf"]


def snapshot(client) -> str:
    """Everything a rejected request must leave alone."""
    parts = [client.get(p).get_json() for p in ("/api/state", "/api/rolls?limit=1000", "/api/players")]
    return json.dumps(parts, sort_keys=True)


def check(resp, allow=()) -> None:
    """The contract for every response: no 5xx (but ``allow``), no traceback, one-line JSON errors."""
    raw = resp.get_data()
    assert resp.status_code < 500 or resp.status_code in allow, (resp.status_code, raw[:300])
    assert b"Traceback" not in raw and b'File "' not in raw
    if resp.status_code >= 400:
        assert resp.is_json, (resp.status_code, raw[:200])
        data = resp.get_json()
        assert isinstance(data, dict) and isinstance(data.get("error"), str), data
        message = data["error"]
        assert message and "\n" not in message and len(message) < 600, message


def names_the_bad_value(message: str, body, path: str, method: str, path_vals=()) -> bool:
    """A 400 message names a field of the body or of the operation, a path value, or says the body is wrong."""
    words = [str(k) for k in body] if isinstance(body, dict) else []
    words += [str(v) for v in path_vals] + [name for name in re.findall(r"{(\w+)}", path)]
    schema = SPEC["paths"][path][method].get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    words += list(schema.get("properties", {}))
    words += ["body", "JSON", "index"]
    return any(w and w in message for w in words)


def gm_operations() -> list[tuple[str, str]]:
    return [(path, method) for path, ops in SPEC["paths"].items() for method in ops
            if method in ("post", "put", "delete") and path.startswith("/api/")]


# -- the description ------------------------------------------------------------------------
def test_openapi_describes_every_api_route(tmp_path_factory):
    with table(tmp_path_factory) as (svc, client):
        resp = client.get("/api/openapi.json")
        assert resp.status_code == 200 and resp.get_json() == json.loads(json.dumps(SPEC))
        assert SPEC["openapi"].startswith("3.")
        routes = set()
        for rule in client.application.url_map.iter_rules():
            if rule.rule.startswith("/api/"):
                path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
                for method in rule.methods - {"HEAD", "OPTIONS"}:
                    routes.add((path, method.lower()))
        described = {(p, m) for p, ops in SPEC["paths"].items() for m in ops}
        assert routes - described == set(), "routes missing from pi_table/outputs/openapi.py"
        assert described - routes == set(), "described but not served"


def test_openapi_schemas_name_every_key_served(tmp_path_factory):
    """Every key of a served Roll (a skill check with a luck die added after it, one with a condition
    marked, a pool roll forced out, a roll with a roller and an assister), State (a luck die awaited)
    and Player is a property of its schema in the description (a Roll's ``odds`` was served, not
    described)."""
    schemas = SPEC["components"]["schemas"]
    with table(tmp_path_factory) as (svc, client):
        skill, pool = svc.table.rolls(2)[1].id, svc.table.rolls(1)[0].id
        assert client.put(f"/api/rolls/{skill}/params", json={"params": {"mark_condition": True}}, headers=AUTH).status_code == 200
        assert client.put(f"/api/rolls/{pool}/params", json={"params": {"force": "mark"}}, headers=AUTH).status_code == 200
        assert client.put("/api/assister", json={"player": 2}, headers=AUTH).status_code == 200
        svc.reader = FakeReader(d6_reading(4, 2))
        svc.handle(settled(4))  # Charge with the assist: Ada rolls, Bo assists
        assert client.post(f"/api/rolls/{skill}/luck", json={}, headers=AUTH).status_code == 200  # awaited
        state = client.get("/api/state").get_json()
        assert client.post(f"/api/rolls/{skill}/luck", json={"face": "1"}, headers=AUTH).status_code == 200
        rolls = client.get("/api/rolls").get_json()
        assert any(len(r["dice"]) == 4 for r in rolls)
        assert state["luck_pending"] and rolls[0]["assist_by"] and rolls[0]["player"]
        assert set(state) <= set(schemas["State"]["properties"]), set(state) - set(schemas["State"]["properties"])
        for roll in rolls:
            assert set(roll) <= set(schemas["Roll"]["properties"]), set(roll) - set(schemas["Roll"]["properties"])
        for player in state["players"]:
            assert set(player) <= set(schemas["Player"]["properties"])


# -- GM endpoints -------------------------------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_gm_endpoints_survive_any_body(shared, data):
    svc, client, csrf = shared
    session_headers = {"X-CSRF-Token": csrf}
    if True:
        for _ in range(4):
            path, method = data.draw(st.sampled_from(gm_operations()), label="operation")
            vals = {}
            for name in re.findall(r"{(\w+)}", path):
                vals[name] = data.draw(path_values | st.integers(0, 5), label=name)
            url = path.format(**{k: quote(str(v), safe="") for k, v in vals.items()})
            raw = data.draw(st.booleans(), label="raw body")
            body = data.draw(st.text(max_size=40) if raw else bodies, label="body")
            payload = body if raw else json.dumps(body)  # NaN/Infinity go as JSON's extensions do
            before = snapshot(client)
            headers = AUTH if data.draw(st.integers(0, 9), label="bearer") == 0 else session_headers
            resp = client.open(url, method=method.upper(), data=payload, content_type="application/json", headers=headers)
            check(resp)
            assert resp.status_code not in (401, 403, 429), resp.get_json()
            if resp.status_code >= 400:
                assert snapshot(client) == before, (method, url, body, resp.get_json())
                if resp.status_code == 400:
                    assert names_the_bad_value(resp.get_json()["error"], body, path, method, vals.values()), (body, resp.get_json())


@FEW
@given(body=bodies, path=st.sampled_from(gm_operations()))
def test_gm_endpoints_refuse_without_pin(shared, body, path):
    svc, _, _ = shared
    client = create_app(svc).test_client()  # no session cookie
    if True:
        url = path[0].format(roll_id=1, index=0, player_id=1)
        before = snapshot(client)
        resp = client.open(url, method=path[1].upper(), data=json.dumps(body), content_type="application/json")
        check(resp)
        assert resp.status_code == 401 and snapshot(client) == before


def test_gm_change_with_an_oversized_body_is_413_json(tmp_path_factory):
    with table(tmp_path_factory) as (svc, client):
        before = snapshot(client)
        resp = client.put("/api/system", data=json.dumps({"system": "x" * 70000}), content_type="application/json", headers=AUTH)
        check(resp)
        assert resp.status_code == 413 and snapshot(client) == before


# -- reads ----------------------------------------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_reads_survive_any_path_and_query(shared, data):
    svc, client, _ = shared
    if True:
        before = snapshot(client)
        for _ in range(5):
            kind = data.draw(st.sampled_from(["limit", "roll", "image", "query", "path", "method"]), label="kind")
            value = data.draw(path_values, label="value")
            q = quote(str(value), safe="")
            url = {"limit": f"/api/rolls?limit={q}", "roll": f"/api/rolls/{q}", "image": f"/api/rolls/{q}/image",
                   "query": f"/api/state?{q}={q}", "path": f"/api/{q}", "method": "/api/state"}[kind]
            method = data.draw(st.sampled_from(["PATCH", "PUT"]), label="method") if kind == "method" else "GET"
            resp = client.open(url, method=method, headers=AUTH if method != "GET" else {})
            check(resp)
            if kind == "limit" and resp.status_code == 400:
                assert "limit" in resp.get_json()["error"]
        assert snapshot(client) == before


def test_events_stream_cap_503_is_json(tmp_path_factory):
    with table(tmp_path_factory) as (svc, client):
        svc.hub.max_streams = 0
        resp = client.get("/api/events")
        check(resp, allow=(503,))
        assert resp.status_code == 503 and resp.headers["Retry-After"] and "viewers" in resp.get_json()["error"]


# -- the command line ---------------------------------------------------------------------------------
words = (st.text(max_size=12) | st.integers(-10**6, 10**6).map(str) | st.integers(0, 12).map(str)
         | st.floats(allow_nan=True, allow_infinity=True).map(str)
         | st.lists(st.integers(-2, 12), min_size=0, max_size=6).map(lambda v: ",".join(map(str, v)))
         | st.sampled_from(["d6=5,d4=4,d10=9", "d6=3", "d10=-2", "70,5", "yes", "no", "tricky", "3d 1p", "6d10", "40%", "-", "--", "--json", "nan", "inf"]))
SYSTEM_WORDS = st.sampled_from(["contingency-action", "contingency-pool", "contingency-skill", "charge", "contract"]) | st.text(max_size=10)
RULE_OPTIONS = ["--dice", "--action", "--pressure", "--stat", "--pool", "--target", "--advantage", "--disadvantage", "--luck",
                "--modifiers", "--action-number", "--chance", "--dots", "--roll", "--push", "--difficulty"]
RESOLVE_ONLY = ["--drop", "--force", "--penalty-choice", "--path", "--percentile", "--risk"]
FLAGS = ["--json", "--as-action", "--assist", "--tension", "--reposition", "--choose-fail"]


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    from pi_table.cli import main

    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out, err = capsys.readouterr()
    return status, out + err


def assert_clean(status: int, text: str, argv) -> None:
    assert status in (0, 2), (status, argv, text[-500:])
    assert "Traceback" not in text, (argv, text[-800:])
    if status == 2:
        errors = [line for line in text.splitlines() if "error" in line]
        assert len(errors) == 1, (argv, text[-500:])


@st.composite
def rules_argv(draw, command: str):
    argv = [command, draw(SYSTEM_WORDS)]
    if command == "odds":
        argv += draw(st.lists(words, max_size=2))  # notation
    options = RULE_OPTIONS + (RESOLVE_ONLY if command == "resolve" else [])
    for opt in draw(st.lists(st.sampled_from(options), max_size=4, unique=True)):
        argv += [opt, draw(words)]
    argv += draw(st.lists(st.sampled_from(FLAGS), max_size=2, unique=True))
    return argv


@FUZZ
@given(argv=rules_argv("resolve"))
def test_cli_resolve_any_options(argv, capsys):
    status, text = run_cli(argv, capsys)
    assert_clean(status, text, argv)


@FUZZ
@given(argv=rules_argv("odds"))
def test_cli_odds_any_options(argv, capsys):
    status, text = run_cli(argv, capsys)
    assert_clean(status, text, argv)


@FEW
@given(data=st.data())
def test_cli_read_eval_and_check_any_options(data, capsys, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    (folder / "not-an-image.jpg").write_bytes(b"\x00garbage")
    (folder / "empty.png").write_bytes(b"")
    path = data.draw(st.sampled_from([str(folder / "not-an-image.jpg"), str(folder / "empty.png"), str(folder), "/nonexistent/x.jpg"])
                     | st.text(min_size=1, max_size=12).filter(lambda s: not s.startswith("-")), label="path")
    command = data.draw(st.sampled_from(["read", "eval", "check"]), label="command")
    argv = [command, path]
    opts = ["--kinds", "--models", "--threads"] + (["--limit", "--cut-crops"] if command == "eval" else [])
    opts += ["--source"] if command == "check" else []
    for opt in data.draw(st.lists(st.sampled_from(opts), max_size=2, unique=True), label="options"):
        argv += [opt, data.draw(words, label=opt)]
    argv += data.draw(st.lists(st.sampled_from(["--json"] + (["--crop"] if command != "check" else [])
                                               + (["--held-out"] if command == "eval" else [])),
                               max_size=2, unique=True), label="flags")
    status, text = run_cli(argv, capsys)
    assert_clean(status, text, argv)


@FEW
@given(data=st.data())
def test_cli_serve_any_options(data, capsys, tmp_path_factory, monkeypatch):
    """``serve`` with random options: bad ones exit 2 before serving; good ones would serve (stubbed)."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    import pi_table.outputs.web as web
    import pi_table.vision as vision

    served = []
    monkeypatch.setattr(web, "listen", lambda service, host, port: object())  # never bind a socket
    monkeypatch.setattr(web, "check_address", lambda host, port: None)
    monkeypatch.setattr(web, "serve_forever", lambda service, server, host: served.append(host))
    monkeypatch.setattr(vision, "DiceReader", lambda threads=1: FakeReader(d6_reading(3)))
    monkeypatch.delenv("PI_TABLE_PIN", raising=False)
    state = tmp_path_factory.mktemp("serve")
    config = state / "pi-table.toml"
    config.write_text(data.draw(st.sampled_from(["", "port = 8081\n", "nonsense = 1\n", "port = [\n", "system = 'nope'\n",
                                                 "interval_s = 'x'\n", "params = {dots = 99}\n"]), label="config"))
    argv = ["serve", "--state-dir", str(state), "--source", data.draw(
        st.sampled_from(["demo", "folder:/nonexistent", "video:/nonexistent.mp4", "webcam:x", "bogus"]) | st.text(max_size=10),
        label="source")]
    for opt in data.draw(st.lists(st.sampled_from(["--host", "--port", "--pin", "--system", "--interval", "--config"]),
                                  max_size=3, unique=True), label="options"):
        value = str(config) if opt == "--config" and data.draw(st.booleans(), label="real config") else data.draw(words, label=opt)
        if opt == "--host" and value not in ("", "-"):
            value = "127.0.0.1"  # never listen: listen and serve_forever are stubbed, but keep it local anyway
        argv += [opt, value]
    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    try:
        status, text = run_cli(argv, capsys)
    finally:
        Device.pin_factory.reset()
        Device.pin_factory = old
    assert_clean(status, text, argv)
    if status == 0:
        assert served, argv


@FEW
@given(opts=st.lists(st.tuples(st.sampled_from(["--viewers", "--state-rps", "--roll-interval", "--duration", "--max-viewers",
                                                "--over", "--rss-slack"]), words), min_size=1, max_size=3))
def test_cli_loadtest_any_options(opts, capsys, monkeypatch):
    """Option checking only: the run itself is replaced by the load test's own option check."""
    import pi_table.outputs.loadtest as loadtest

    def checked(**kw):
        kw.pop("progress")
        loadtest.check_options(**kw)
        return {"ok": True}

    monkeypatch.setattr(loadtest, "run_loadtest", checked)
    monkeypatch.setattr(loadtest, "format_result", lambda result: "ok")
    argv = ["loadtest"] + [x for pair in opts for x in pair]
    status, text = run_cli(argv, capsys)
    assert_clean(status, text, argv)


#: Found by fuzzing ``serve``; in service.py / gpio.py (not this helper's files), reported to the lead.
#: Each should exit 2 with one line; remove the mark when fixed.
BAD_SETTINGS = ["settle_s = 0", "settle_s = 60", "settle_s = 'x'", "pins = 5", "state_dir = 5", "max_viewers = 'x'", "pin = 1234", "interval_s = nan", "interval_s = inf",
              "max_viewers = 0", "threads = -1", "threads = 'x'", "port = true", "--interval nan", "--interval inf"]


@pytest.mark.parametrize("line", ["nonsense = 1", "port = [", "port = 'abc'", "params = 5", "system = 'nope'", "pin = 'ab'",
                                  "interval_s = 'x'", "pins = {led = 'x'}", "--interval -1", "--port 0",
                                  "--port 70000", "--pin ab", "--system nope"] + BAD_SETTINGS)
def test_serve_bad_config_values_exit_2(line, capsys, tmp_path, monkeypatch):
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    import pi_table.outputs.web as web
    import pi_table.vision as vision

    monkeypatch.setattr(web, "listen", lambda service, host, port: object())  # never bind a socket
    monkeypatch.setattr(web, "check_address", lambda host, port: None)
    monkeypatch.setattr(web, "serve_forever", lambda service, server, host: None)
    monkeypatch.setattr(vision, "DiceReader", lambda threads=1: FakeReader(d6_reading(3)))
    monkeypatch.delenv("PI_TABLE_PIN", raising=False)
    argv = ["serve", "--state-dir", str(tmp_path / "state"), "--source", "demo"]
    if line.startswith("--"):
        argv += line.split() + (["--pin", "2468"] if "--pin" not in line else [])
    else:
        (tmp_path / "c.toml").write_text(line + "\n")
        argv += ["--config", str(tmp_path / "c.toml")] + ([] if line.startswith("pin") else ["--pin", "2468"])
    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    try:
        status, text = run_cli(argv, capsys)
    except Exception as exc:  # a traceback the CLI let through
        status, text = 1, repr(exc)
    finally:
        Device.pin_factory.reset()
        Device.pin_factory = old
    assert status == 2 and "Traceback" not in text, (argv, status, text[-300:])


@pytest.fixture(scope="module")
def shipped_reader():
    from pi_table.vision.reader import DiceReader

    return DiceReader(threads=1)


@FEW
@given(data=st.data())
def test_the_reader_reads_any_part_of_a_photo_at_any_scale(shipped_reader, data):
    """Any window of a demo photo, scaled by 0.05-3 times (each axis on its own), sometimes in a
    border or turned: the reader returns a Reading (dice boxes inside the frame), never an error
    (a window starting a fraction of a pixel into the image once put the enlarged look's part at
    canvas row -1)."""
    import cv2

    from pi_table.capture.sources import DEMO_DIR

    image = cv2.imread(str(data.draw(st.sampled_from(sorted(DEMO_DIR.glob("*.jpg"))), label="photo")))
    h, w = image.shape[:2]
    x0, y0 = data.draw(st.integers(0, w - 1), label="x0"), data.draw(st.integers(0, h - 1), label="y0")
    x1, y1 = data.draw(st.integers(x0 + 1, w), label="x1"), data.draw(st.integers(y0 + 1, h), label="y1")
    fx, fy = (data.draw(st.floats(0.05, 3.0), label=axis) for axis in ("fx", "fy"))
    part = cv2.resize(image[y0:y1, x0:x1], (max(1, round((x1 - x0) * fx)), max(1, round((y1 - y0) * fy))))
    if data.draw(st.booleans(), label="border"):
        part = cv2.copyMakeBorder(part, 40, 10, 90, 0, cv2.BORDER_CONSTANT, value=(30, 90, 30))
    part = np.ascontiguousarray(np.rot90(part, data.draw(st.integers(0, 3), label="turns")))
    reading = shipped_reader.read(part)
    assert (reading.width, reading.height) == (part.shape[1], part.shape[0])
    for die in reading.dice:
        assert -1 <= die.box[0] < die.box[2] <= part.shape[1] + 1 and -1 <= die.box[1] < die.box[3] <= part.shape[0] + 1
