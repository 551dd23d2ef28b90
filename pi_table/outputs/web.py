"""The web pages and HTTP API of ../shared/INTERFACES.md ("HTTP"), as a Flask app.

Served by waitress (a production WSGI server). Each open ``/api/events`` stream holds one
worker thread, so the pool is sized for ``max_viewers`` streams plus room for ordinary
requests, and streams beyond the cap get ``503`` with ``Retry-After``.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import logging
import queue
import secrets
import signal
import socket
import sqlite3
import threading
import time
from pathlib import Path

from flask import Flask, Response, abort, jsonify, request, send_file, session
from werkzeug.exceptions import HTTPException

from pi_table.outputs.events import Event
from pi_table.table import StateConflict

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
HEARTBEAT_S = 15.0


class Lockout:
    """Refuse PIN attempts from a client after ``tries`` different wrong PINs within ``window_s`` seconds.

    One wrong PIN sent again (a page or script holding a stale PIN, each endpoint tried with the
    same wrong PIN) is one guess, not one per request: it stays a plain 401 (INTERFACES.md "HTTP")
    and locks nobody out, while guessing through PINs is still cut to ``tries`` a minute. The
    guesses are kept as keyed hashes, in memory only.
    """

    def __init__(self, tries: int = 5, window_s: float = 60.0):
        self.tries, self.window_s = tries, window_s
        self._key = secrets.token_bytes(16)
        self._fails: dict[str, dict[bytes, float]] = {}  # client -> guess hash -> last time sent
        self._lock = threading.Lock()

    def locked(self, client: str) -> bool:
        """True when ``client`` sent ``tries`` different wrong PINs in the last ``window_s`` seconds."""
        now = time.monotonic()
        with self._lock:
            fails = {g: t for g, t in self._fails.get(client, {}).items() if now - t < self.window_s}
            self._fails[client] = fails
            return len(fails) >= self.tries

    def fail(self, client: str, guess: str) -> None:
        """Note that ``client`` sent the wrong PIN ``guess``."""
        digest = hmac.new(self._key, guess.encode(errors="surrogatepass"), hashlib.sha256).digest()
        with self._lock:
            self._fails.setdefault(client, {})[digest] = time.monotonic()


def create_app(service) -> Flask:
    """The Flask app for one :class:`pi_table.service.Service`."""
    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    app.config.update(SECRET_KEY=secrets.token_bytes(32), SESSION_COOKIE_HTTPONLY=True,
                      SESSION_COOKIE_SAMESITE="Strict", MAX_CONTENT_LENGTH=64 * 1024)
    app.json.sort_keys = False  # keep the order the kit gives: odds worst band first, as the live events send them
    lockout = Lockout()

    def error(status: int, message: str):
        line = message.splitlines()[0] if message else "error"
        if len(line) > 300:  # a huge bad value is named, not echoed whole
            line = line[:297] + "..."
        return jsonify({"error": line}), status

    def bearer() -> str:
        """The PIN of an ``Authorization: Bearer PIN`` header (the scheme in any case, RFC 7235);
        "" when the request names none."""
        scheme, _, value = request.headers.get("Authorization", "").strip().partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""

    def is_gm() -> bool:
        if session.get("gm"):
            return True
        guess = bearer()
        return bool(guess) and service.check_pin(guess)

    @app.before_request
    def guard():
        if request.method in ("POST", "PUT", "DELETE", "PATCH") and request.path.startswith("/api/"):
            client = request.remote_addr or "?"
            guess = bearer()  # "": no PIN guessed
            if guess and lockout.locked(client):
                return error(429, "too many wrong PINs: wait a minute")
            if not is_gm():
                if guess:
                    lockout.fail(client, guess)
                return error(401, "GM PIN required (Authorization: Bearer PIN)")
            if session.get("gm") and not request.headers.get("Authorization"):
                # cookie-authenticated change: require the CSRF token the /gm page holds
                if request.headers.get("X-CSRF-Token") != session.get("csrf"):
                    return error(403, "missing or wrong X-CSRF-Token")

    def body(*fields: str) -> dict:
        """The request's JSON object; ValueError for anything else, or (when ``fields`` are
        named) for a key that is not one of them (a misspelt ``"parms"`` was ignored: the
        change went through without it)."""
        if not request.is_json:  # curl -d sends application/x-www-form-urlencoded
            raise ValueError(f"request body must be a JSON object sent with Content-Type: application/json, "
                             f"got Content-Type {request.mimetype or 'none'!r}")
        data = request.get_json(silent=True)
        if not isinstance(data, dict):
            raise ValueError("request body must be a JSON object")
        unknown = sorted(set(data) - set(fields))
        if fields and unknown:
            raise ValueError(f"unknown field {unknown[0]!r} (expected {', '.join(fields)})")
        return data

    @app.errorhandler(ValueError)
    def bad_value(exc):
        return error(400, str(exc).splitlines()[0] if str(exc) else "bad request")

    @app.errorhandler(StateConflict)
    def conflict(exc):
        """A fine request the table's state refuses (a luck die for a roll that takes none, a correction
        for a roll that changed since the GM saw it): 409."""
        return error(409, str(exc))

    @app.errorhandler(sqlite3.Error)
    def database_unavailable(exc):
        """A locked, full or unreadable database: 503 JSON naming SQLite's reason (it was a
        500 page); a change that failed so was rolled back whole, and the GM can try again."""
        log.warning("%s %s: database: %s", request.method, request.path, exc)
        resp, status = error(503, f"the table's database is unavailable ({exc}): try again")
        resp.headers["Retry-After"] = "5"
        return resp, status

    @app.errorhandler(KeyError)
    def not_found(exc):
        return error(404, str(exc.args[0]) if exc.args else "not found")

    @app.errorhandler(HTTPException)
    def http_error(exc):
        """Under /api/, HTTP errors (404, 405, 413, ...) are one-line JSON too."""
        if not request.path.startswith("/api/") or exc.code is None or exc.code < 400:
            return exc
        words = {404: f"no such resource {request.path!r}", 405: f"{request.method} is not allowed on {request.path}",
                 413: "request body too large (64 KiB at most)"}
        return error(exc.code, words.get(exc.code) or (exc.description or exc.name).splitlines()[0])

    @app.url_value_preprocessor
    def check_ids(_endpoint, values):
        """Path ids beyond SQLite's 64-bit integers name nothing (and must not reach SQLite)."""
        for name, value in (values or {}).items():
            if isinstance(value, int) and value > 2**63 - 1:
                if name == "index":
                    raise ValueError(f"die index {value} out of range")
                raise KeyError(f"no {name.removesuffix('_id')} {value}")

    @app.get("/api/openapi.json")
    def openapi():
        from pi_table.outputs.openapi import SPEC

        return jsonify(SPEC)

    @app.get("/api/systems")
    def systems():
        """Every system of the kit (RULES.md), in order: ``{id: {"bands": [...], "params": {...},
        "kinds": [...], "after_roll": [...]}}``, bands worst first, the parameters a table of it starts
        with (their keys are the ones ``PUT /api/system`` takes), the die kinds it reads, and the
        parameters a recorded roll's own after-the-roll actions set (:data:`pi_table.rules.AFTER_ROLL_PARAMS`:
        "Apply to roll #N" leaves them as the roll has them), and ``fields``: the parameters a GM sets
        for the next rolls (:func:`pi_table.rules.next_roll_params`, each :meth:`Param.to_json
        <pi_table.rules.Param.to_json>`). The /gm page fills its parameters form and field and its die
        kind menus from it."""
        from pi_table import rules

        return jsonify({s: {"bands": list(rules.BANDS[s]), "params": rules.DEFAULT_PARAMS[s],
                            "kinds": list(rules.KINDS_BY_SYSTEM[s]),
                            "after_roll": list(rules.AFTER_ROLL_PARAMS.get(s, ())),
                            "fields": [p.to_json() for p in rules.next_roll_params(s)]} for s in rules.SYSTEMS})

    @app.get("/")
    def viewer():
        return send_file(STATIC / "index.html")

    @app.get("/gm")
    def gm_page():
        return send_file(STATIC / "gm.html")

    @app.get("/favicon.ico")
    def favicon():
        """The pages' icon (a die, SVG): they link it; this answers browsers and tools that ask anyway."""
        return send_file(STATIC / "icon.svg", mimetype="image/svg+xml", max_age=86400)

    @app.get("/api/join")
    def join():
        """Where the phones at the table open the viewer: ``{"url": "http://192.168.1.23:8080/"}``
        (:func:`join_url`); the pages show it with its QR code, ``/join.svg``."""
        return jsonify({"url": join_url(request.host_url)})

    @app.get("/join.svg")
    def join_qr():
        """The viewer's address (:func:`join_url`) as a QR code, SVG (segno): a phone's camera opens
        the page from it, shown on another phone's /gm or viewer. Its white border is the four
        modules the QR standard asks for (ISO/IEC 18004 quiet zone): the pages around it are dark."""
        import io

        out = io.BytesIO()
        join_qr_code(join_url(request.host_url)).save(out, kind="svg", scale=6, border=4,
                                                      dark="#000000", light="#ffffff")
        return Response(out.getvalue(), mimetype="image/svg+xml", headers={"Cache-Control": "no-cache"})

    @app.post("/gm/login")
    def gm_login():
        client = request.remote_addr or "?"
        if lockout.locked(client):
            return error(429, "too many wrong PINs: wait a minute")
        data = request.get_json(silent=True) or request.form
        if not hasattr(data, "get"):  # JSON that is no object: [1], "1234", 1234
            return error(400, f"login body must be a JSON object like {{\"pin\": \"1234\"}} or a form, got {data!r}")
        pin = str(data.get("pin", ""))
        if not service.check_pin(pin):
            lockout.fail(client, pin)
            return error(401, "wrong PIN")
        session["gm"] = True
        session["csrf"] = secrets.token_urlsafe(16)
        return jsonify({"ok": True, "csrf": session["csrf"]})

    @app.get("/gm/session")
    def gm_session():
        return jsonify({"gm": bool(session.get("gm")), "csrf": session.get("csrf") if session.get("gm") else None,
                        "leds": service.panel.lit(), "mock_pins": getattr(service.panel, "mock", False)})

    @app.get("/api/state")
    def state():
        return jsonify(service.state().to_json())

    @app.get("/api/rolls")
    def rolls():
        raw = request.args.get("limit", "20")
        try:
            limit = int(raw)
        except ValueError:
            raise ValueError(f"limit must be an integer, got {raw!r}") from None
        return jsonify([r.to_json() for r in service.table.rolls(limit)])

    @app.get("/api/rolls/<int:roll_id>")
    def one_roll(roll_id: int):
        return jsonify(service.table.roll(roll_id).to_json())

    @app.get("/api/rolls/<int:roll_id>/image")
    def roll_image(roll_id: int):
        roll = service.table.roll(roll_id)  # by id only: never a path from the request
        path = Path(roll.image) if roll.image else None
        if path is None or path.parent != service.images_dir or not path.is_file():
            abort(404)
        return send_file(path, mimetype="image/jpeg", max_age=3600)

    @app.get("/api/events")
    def events():
        q = service.hub.subscribe()
        if q is None:
            resp = error(503, "too many live viewers; try again soon")[0]
            resp.status_code = 503
            resp.headers["Retry-After"] = "10"
            return resp
        first = Event("state", service.state().to_json())

        def stream():
            try:
                yield "retry: 2000\n\n" + first.encode()
                while True:
                    try:
                        event = q.get(timeout=HEARTBEAT_S)
                    except queue.Empty:
                        yield ": keep-alive\n\n"
                        continue
                    if event is None:
                        return
                    yield event.encode()
            finally:
                service.hub.unsubscribe(q)

        resp = Response(stream(), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        resp.call_on_close(lambda: service.hub.unsubscribe(q))  # also when the stream never started
        return resp

    @app.put("/api/system")
    def put_system():
        data = body("system", "params")
        system = data.get("system")
        if not isinstance(system, str):
            raise ValueError(f"system must be a string, got {system!r}")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise ValueError(f"params must be an object, got {params!r}")
        return jsonify(service.set_system(system, params).to_json())

    def delta() -> int:
        """The ``delta`` of a token change's body; ValueError unless an integer."""
        value = body("delta").get("delta")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"delta must be an integer, got {value!r}")
        return value

    @app.post("/api/tokens/tension")
    def tension():
        return jsonify(service.add_tension(delta()).to_json())

    @app.post("/api/tokens/omens")
    def omens():
        return jsonify(service.add_omens(delta()).to_json())

    @app.post("/api/choose-fail")
    def choose_fail():
        system = service.table.system
        if system != "contingency-skill":  # a fine request the table's state refuses: 409, not 400
            return error(409, f"choosing to fail is a contingency-skill rule; the table plays {system}")
        chosen = service.choose_fail()
        return jsonify({"gm_omens": chosen.gm_omens, "why": list(chosen.why), "state": service.state().to_json()})

    @app.post("/api/scene")
    def scene():
        return jsonify(service.new_scene().to_json())

    @app.post("/api/session")
    def new_session():
        """A new session of play: every player's momentum back to 2 (seed 004); undoable."""
        return jsonify(service.new_session().to_json())

    @app.put("/api/rolls/<int:roll_id>/dice/<int:index>")
    def correct(roll_id: int, index: int):
        data = body("face", "kind", "dice")
        face, kind = face_and_kind(data, needs_face=True)
        return jsonify(service.correct_die(roll_id, index, face, kind, dice_seen(data.get("dice"))).to_json())

    def face_and_kind(data: dict, needs_face: bool) -> tuple[str | None, str | None]:
        """A die's ``face`` (sent as "5" or 5; None when absent and not ``needs_face``) and ``kind``
        (None: as read) from a request body; ValueError naming a value of the wrong type."""
        face, kind = data.get("face"), data.get("kind")
        if (face is not None or needs_face) and (not isinstance(face, (str, int)) or isinstance(face, bool)):
            raise ValueError(f"face must be a string like \"5\", got {face!r}")
        if kind is not None and not isinstance(kind, str):
            raise ValueError(f"kind must be a die kind like \"d10\", got {kind!r}")
        return (None if face is None else str(face)), kind

    @app.delete("/api/rolls/<int:roll_id>/dice/<int:index>")
    def remove_die(roll_id: int, index: int):
        """A false die (a pip, a mark on the tray) taken out of the roll; answers the roll as it is now."""
        return jsonify(service.remove_die(roll_id, index, dice_seen(request.args.get("dice"), query=True)).to_json())

    def dice_seen(value, query: bool = False):
        """The optional number of dice the GM saw the roll with (``"dice"`` in a correction's body,
        ``?dice=N`` on a removal): the table refuses the change with a 409 when the roll has
        another number now (:class:`~pi_table.table.StateConflict`). None when not sent."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if query and value.isascii() and value.isdigit():  # ?dice=3
            return int(value)
        raise ValueError(f"dice must be the number of dice the roll was shown with, like 3, got {value!r}")

    @app.put("/api/rolls/<int:roll_id>/params")
    def roll_params(roll_id: int):
        """The parameters a recorded roll is resolved under, set after the roll (the GM forgot to set
        them first): ``{"params": {...}}``, keys not given stay as the roll had them; answers the roll."""
        data = body("params")
        if "params" not in data:
            raise ValueError("params is missing: send {\"params\": {...}}")
        return jsonify(service.set_roll_params(roll_id, data["params"]).to_json())

    @app.post("/api/rolls/<int:roll_id>/luck")
    def luck_die(roll_id: int):
        """A skill check's luck die, rolled after the roll (seed 001 "Luck Dice"): ``{"face": "5"}`` (and
        ``"kind"``, which must be the result die's) adds it now and answers the roll; ``{}`` has the
        camera take it from its next reading and answers the state (``luck_pending``). 409 for a roll
        that takes none (another system, a percentile roll, not resolved, one already there)."""
        face, kind = face_and_kind(body("face", "kind"), needs_face=False)
        if face is None:
            return jsonify(service.arm_luck_die(roll_id, kind).to_json())
        return jsonify(service.add_luck_die(roll_id, face, kind).to_json())

    @app.delete("/api/rolls/<int:roll_id>/luck")
    def cancel_luck_die(roll_id: int):
        """The camera no longer awaits this roll's luck die (nothing awaited: nothing to do); answers the state."""
        return jsonify(service.cancel_luck_die(roll_id).to_json())

    @app.post("/api/undo")
    def undo():
        done = service.undo()
        return jsonify({"undone": done, "state": service.state().to_json()})

    # -- players: momentum (seed 004) and luck points (seed 001); GM changes via guard() --
    @app.get("/api/players")
    def players():
        return jsonify([p.to_json() for p in service.table.players()])

    @app.post("/api/players")
    def add_player():
        data = body()
        unknown = sorted(set(data) - {"name", "momentum", "luck"})
        if unknown:
            raise ValueError(f"unknown player field {unknown[0]!r} (expected name, momentum, luck)")
        player = service.add_player(data.get("name"), data.get("momentum"), data.get("luck"))
        return jsonify(player.to_json()), 201

    @app.put("/api/players/<int:player_id>")
    def put_player(player_id: int):
        return jsonify(service.update_player(player_id, **body()).to_json())

    @app.delete("/api/players/<int:player_id>")
    def delete_player(player_id: int):
        return jsonify({"deleted": service.remove_player(player_id).to_json(), "state": service.state().to_json()})

    def picked_player(role: str):
        """The player id (or null) a ``{"player": id or null}`` body picks for ``role``; ValueError
        for another field or none (the table checks the id)."""
        data = body("player")
        if "player" not in data:
            raise ValueError(f"body must name the {role}: {{\"player\": id or null}}")
        return data["player"]

    @app.put("/api/roller")
    def put_roller():
        return jsonify(service.set_roller(picked_player("roller")).to_json())

    @app.put("/api/assister")
    def put_assister():
        """The teammate who pays a Charge assist's 1 momentum (seed 004 "Assist"): ``{"player": id or null}``."""
        return jsonify(service.set_assister(picked_player("assister")).to_json())

    return app


def lan_address() -> str | None:
    """This machine's IPv4 address on its local network, the one phones at the table reach it at, or
    None without a network. It is the source address of a route to a private address (a UDP socket
    connected, which sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 9))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def join_url(host_url: str) -> str:
    """The viewer's address for the other phones at the table: ``host_url`` (``http://host:port/``,
    the address this request came to, which a phone on the same network reached), but for a request
    to this machine itself (localhost, 127.0.0.1, ::1) the same port at :func:`lan_address`, which
    the others can reach (``host_url`` where there is none)."""
    from urllib.parse import urlsplit

    parts = urlsplit(host_url)
    if parts.hostname not in ("localhost", "::1") and not (parts.hostname or "").startswith("127."):
        return host_url
    address = lan_address()
    if address is None:
        return host_url
    return f"{parts.scheme}://{address}{f':{parts.port}' if parts.port else ''}/"


def join_qr_code(url: str):
    """``url`` as a segno QR code (error correction M: readable off a phone's screen with a glare),
    for ``/join.svg`` and the terminal (:func:`print_join_qr`)."""
    import segno

    return segno.make(url, error="m")


def print_join_qr(url: str, out=None) -> bool:
    """Print ``url`` as a QR code in the terminal (segno, two rows of modules a line) on ``out``
    (default stderr) when it is a terminal: at ``serve``'s start on a Pi's screen or over ssh, the
    first phone opens the pages from it. Returns whether it printed; under systemd (a journal, not
    a terminal) it prints nothing."""
    import sys

    out = sys.stderr if out is None else out
    if not getattr(out, "isatty", lambda: False)():
        return False
    join_qr_code(url).terminal(out=out, compact=True, border=2)
    print(f"scan to open {url}", file=out)
    return True


def make_server(service, host: str, port: int):
    """A waitress server for the app (port 0 picks a free port: see ``effective_port``)."""
    from waitress.server import create_server

    threads = service.settings.threads or service.settings.max_viewers + 16
    return create_server(create_app(service), host=host, port=port, threads=threads,
                         channel_timeout=120, connection_limit=service.settings.max_viewers + 100,
                         ident="pi-table")


def install_stop_handlers(service) -> None:
    """SIGTERM/SIGINT stop the capture loop and raise SystemExit(0) in the main thread (clean stop).

    Installed before the capture thread starts, so a signal mid-roll never kills the process
    with a roll in hand. No-op outside the main thread.
    """

    def stop(signum, _frame):
        log.info("signal %s: stopping", signum)
        service.stop()
        service.hub.close()  # live pages' streams end now, not at their next heartbeat
        raise SystemExit(0)  # waitress's loop shuts its workers down on SystemExit

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)


def listen(service, host: str, port: int):
    """:func:`make_server`, its socket bound to ``host``:``port``.

    Raises:
        pi_table.cli.UsageError: the address cannot be listened on (a port another program holds,
            such as a second ``pi-table serve`` or the systemd service; a port below 1024 without
            root; an unknown host name), as one line naming it.
    """
    try:
        return make_server(service, host, port)
    except (OSError, ValueError) as exc:  # waitress: ValueError for a host it cannot resolve
        raise _cannot_listen(host, port, exc) from None


def check_address(host: str, port: int) -> None:
    """Bind ``host``:``port`` for a moment and let it go: ``serve`` calls it before it opens the
    pins, the camera and the PIN store, so that a busy port is its only line of output.

    Raises:
        pi_table.cli.UsageError: as :func:`listen` (which still reports a port taken meanwhile).
    """
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                                  flags=socket.AI_PASSIVE):
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress binds
                sock.bind(address)
            return
    except (OSError, UnicodeError) as exc:
        raise _cannot_listen(host, port, exc) from None


def _cannot_listen(host: str, port: int, exc: Exception):
    """The one-line UsageError for an address that cannot be listened on, with a hint where one helps."""
    from pi_table.cli import UsageError

    reason = getattr(exc, "strerror", None) or str(exc).rstrip(".") or type(exc).__name__
    hint = {errno.EADDRINUSE: " (is another pi-table serve or the pi-table service running? stop it, or pick "
                              "another --port)",
            errno.EACCES: " (ports below 1024 need root: pick another --port)"}.get(getattr(exc, "errno", None), "")
    return UsageError(f"cannot listen on {host}:{port}: {reason}{hint}")


def serve_forever(service, server, host: str) -> None:
    """Serve the app on ``server`` (:func:`listen`'s, bound to ``host``) with waitress until
    SIGTERM/SIGINT (the caller installs :func:`install_stop_handlers` first, before its capture
    starts); then stop the capture loop cleanly."""
    port = server.effective_port
    if host in ("0.0.0.0", "::", ""):  # every address: name the ones phones open
        address = lan_address()
        where = (f"phones on this network open http://{address}:{port}/ or http://{socket.gethostname()}.local:{port}/"
                 if address else "no network found yet: phones open http://<this machine's address>:%d/" % port)
        log.info("web page on http://%s:%s/: %s (GM page /gm; /gm shows a QR code to join)", host, port, where)
        if address:
            print_join_qr(f"http://{address}:{port}/")
    else:
        log.info("web page on http://%s:%s/ (GM page /gm)", host, port)
    try:
        server.run()
    finally:
        server.close()
