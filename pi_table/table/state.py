"""Table state and roll history, stored in SQLite.

Rolls are resolved with :func:`pi_table.rules.resolve_dice` under the table's system;
their :class:`pi_table.rules.TableEffects` (tension tokens, GM omens, momentum) are added
to the table's tokens (seed 000 "Cutting Disastrous Outcomes", seed 001 omens, seed 004
momentum). GM changes are logged so that ``undo`` takes back the last one: the system and
parameters as they were, the tokens and points by the change's own difference (what rolls
gave since stays). A roll's spending (seed 004 push and determination momentum, seed 001
luck points) comes from its roller.

Players (seed 004 momentum, seed 001 luck points) live in the ``players`` table; the GM
picks the *roller* (settings key ``roller``), and the momentum a roll gains goes to the
roller (to the table-level ``tokens.momentum`` while no roller is picked). The GM may also
pick the *assister* (settings key ``assister``), the teammate who pays the 1 momentum of a
Charge roll's assist (seed 004 "Assist").
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pi_table import rules
from pi_table.rules._common import plural
from pi_table.table.odds import odds_future, roll_odds
from pi_table.vision.dice import Die, Reading, parse_face

log = logging.getLogger("pi_table")

SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rolls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    system TEXT NOT NULL,
    params TEXT NOT NULL,
    reading TEXT NOT NULL,
    outcome TEXT NOT NULL,
    result TEXT NOT NULL,
    image TEXT
);
-- the rolls that still hold a photo, newest first, without reading the whole history (Table.forget_photos)
CREATE INDEX IF NOT EXISTS rolls_with_photo ON rolls(id) WHERE image IS NOT NULL;
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    t REAL NOT NULL,
    what TEXT NOT NULL,
    before TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS players (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    momentum INTEGER NOT NULL,
    luck INTEGER NOT NULL
);
"""

#: Most players a table keeps.
MAX_PLAYERS = 20
#: Most momentum or luck points a player can hold (the GM sets 0..MAX_POINTS).
MAX_POINTS = 99
#: Momentum a new player starts with (seed 004 "Momentum": every player starts a session with 2).
START_MOMENTUM = 2
#: Longest player name, in characters.
MAX_NAME = 40

#: Outcome of a roll that cannot be resolved until the GM fixes a die or the dice are re-rolled.
REROLL = "reroll"
#: Outcome of a roll whose dice do not fit the system (wrong kinds or count).
INVALID = "invalid"
#: GM changes that touch only players, the roller and the assister (undone without touching the tokens).
PLAYER_CHANGES = ("player-add", "player-remove", "player-update", "roller", "assister", "session")
#: GM changes to a recorded roll: a face (and kind) typed, a false die taken out, the parameters it is
#: resolved under set after the roll, a luck die added after the roll (seed 001 "Luck Dice"). Each logs the
#: roll's reading and params as they were; undo puts them back and resolves the roll again.
CORRECTIONS = ("correct", "remove-die", "roll-params", "luck-die")
#: Box of a die that is not in its roll's photo (a luck die typed by the GM, or read from a later photo).
NO_BOX = (0.0, 0.0, 0.0, 0.0)
#: Longest a roll's JSON waits for odds computed in the background, in seconds.
ODDS_WAIT_S = 0.05


@dataclass(frozen=True)
class Tokens:
    """The table's counters.

    Attributes:
        tension: the GM's tension tokens (seed 000), never below 0.
        gm_omens: the GM's omens for this scene (seed 001), reset by a new scene.
        momentum: momentum (seed 004), never below 0. In :class:`TableState` it is the
            roller's momentum when the GM has picked a roller; otherwise the table-level
            count that rolls without a roller add to.
    """

    tension: int = 0
    gm_omens: int = 0
    momentum: int = 0

    def to_json(self) -> dict:
        return {"tension": self.tension, "gm_omens": self.gm_omens, "momentum": self.momentum}


@dataclass(frozen=True)
class Player:
    """One player at the table.

    Attributes:
        id: database id (1, 2, ...; never reused).
        name: 1..MAX_NAME printable characters, unique at the table (case-insensitive).
        momentum: momentum points (seed 004 "Momentum"), 0..MAX_POINTS.
        luck: luck points (seed 001 "Luck Dice": one buys a luck die), 0..MAX_POINTS.
    """

    id: int
    name: str
    momentum: int
    luck: int

    def to_json(self) -> dict:
        """``{"id", "name", "momentum", "luck"}``, as in ``GET /api/players``."""
        return {"id": self.id, "name": self.name, "momentum": self.momentum, "luck": self.luck}


def check_points(name: str, value: Any) -> int:
    """``value`` if it is an integer in 0..MAX_POINTS; ValueError naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POINTS:
        raise ValueError(f"{name} must be an integer in 0..{MAX_POINTS}, got {value!r}")
    return value


def check_name(name: Any) -> str:
    """A player name stripped of outer spaces; ValueError unless 1..MAX_NAME printable characters."""
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME or not name.strip().isprintable():
        raise ValueError(f"name must be 1..{MAX_NAME} printable characters, got {name!r}")
    return name.strip()


@dataclass(frozen=True)
class Roll:
    """One recorded roll: what was read, and what it means under the system in force.

    Attributes:
        id: database id (1, 2, ...); None while the roll waits in memory to be written
            (database locked, disk full).
        t: unix time, seconds.
        system, params: the system and parameters it was resolved under.
        reading: the dice as read (boxes in pixels of ``image``).
        outcome: the outcome band id, or ``reroll`` / ``invalid``.
        result: the resolution's JSON (``Resolution.to_json()``), or ``{}``.
        why: short sentences explaining the outcome.
        image: path of the stored photo, or None.
        player: ``{"id", "name"}`` of the roller the roll was recorded for, or None.
        assister: ``{"id", "name"}`` of the teammate picked to assist when the roll was recorded,
            or None; the roll charges them the assist's momentum while its params have it
            (seed 004 "Assist"), a correction that turns the assist on or off too.
    """

    id: int | None
    t: float
    system: str
    params: dict
    reading: Reading
    outcome: str
    result: dict
    why: tuple[str, ...]
    image: str | None = None
    player: dict | None = None
    assister: dict | None = None

    @property
    def assist_by(self) -> dict | None:
        """``{"id", "name"}`` of the teammate who assisted this roll (its resolution spends the
        assist's momentum and an assister was picked), else None."""
        return self.assister if self.result.get("effects", {}).get("assist_momentum") else None

    def odds(self, wait_s: float | None = ODDS_WAIT_S) -> dict | None:
        """Exact odds of each outcome band for this roll's system, params and dice
        (:func:`pi_table.table.odds.roll_odds`): ``{band: {"p", "exact"}}``, worst first.
        None for ``reroll``/``invalid`` rolls, and while slow odds are still being computed
        after ``wait_s`` seconds (None: wait for them)."""
        if self.outcome in (REROLL, INVALID):
            return None
        return roll_odds(self.system, self.params, [d.kind for d in self.reading.dice], wait_s)

    def odds_future(self) -> "Future | None":
        """A future of this roll's odds (done at once unless they are slow to compute);
        None for ``reroll``/``invalid`` rolls."""
        if self.outcome in (REROLL, INVALID):
            return None
        return odds_future(self.system, self.params, [d.kind for d in self.reading.dice])

    def to_json(self) -> dict:
        """The roll as served by the HTTP API: dice as in ``read --json`` plus ``outcome``,
        ``source`` (the photo's or frame's name, without the server's folders: "IMG_1.jpg",
        "rolls.avi#12", "picamera#3"), ``odds`` (``{band: {"p": float, "exact": "n/d"}}`` worst band first, or null),
        ``player`` (``{"id", "name"}`` of the roller, or null) and ``assist_by`` (``{"id", "name"}`` of
        the teammate who assisted and paid for it, or null: :attr:`assist_by`)."""
        return {
            "id": self.id,
            "time": self.t,
            "system": self.system,
            "params": self.params,
            "source": Path(self.reading.image).name,  # never the server's folders (the database keeps the path)
            "width": self.reading.width,
            "height": self.reading.height,
            "ms": round(self.reading.ms, 2),
            "dice": [d.to_json() for d in self.reading.dice],
            "outcome": self.outcome,
            "result": self.result,
            "why": list(self.why),
            "image_url": f"/api/rolls/{self.id}/image" if self.image and self.id is not None else None,
            "saved": self.id is not None,
            "odds": self.odds(),
            "player": self.player,
            "assist_by": self.assist_by,
        }


@dataclass(frozen=True)
class TableState:
    """What ``GET /api/state`` serves: system, params, tokens and the newest roll, plus
    ``players`` (list of :meth:`Player.to_json`), ``roller`` and ``assister`` (player ids or null) and
    ``luck_pending`` (``{"roll": id, "kind": "d8"}`` while the camera's next reading is taken for
    that roll's luck die, :meth:`Table.arm_luck_die`; else null)."""

    system: str
    params: dict
    tokens: Tokens
    last_roll: Roll | None = None
    notices: tuple[str, ...] = field(default_factory=tuple)
    players: tuple[Player, ...] = ()
    roller: int | None = None
    assister: int | None = None
    luck_pending: dict | None = None

    def to_json(self) -> dict:
        return {
            "system": self.system,
            "params": self.params,
            "tokens": self.tokens.to_json(),
            "last_roll": self.last_roll.to_json() if self.last_roll else None,
            "notices": list(self.notices),
            "players": [p.to_json() for p in self.players],
            "roller": self.roller,
            "assister": self.assister,
            "luck_pending": self.luck_pending,
        }


def _reading_to_json(reading: Reading) -> str:
    return json.dumps(reading.to_json())


def _reading_from_json(text: str) -> Reading:
    data = json.loads(text)
    return Reading(
        image=data["image"], width=data["width"], height=data["height"], ms=data["ms"],
        dice=tuple(Die.from_json(d) for d in data["dice"]),
    )


def _result_json(result: dict, why, effects: "rules.TableEffects", player: dict | None,
                 assister: dict | None = None, applied: dict | None = None) -> str:
    """A roll's stored ``result`` column: the resolution, its why lines, its effects, the roller
    and the teammate picked to assist, and ``applied``: what the roll really did to their points
    (:func:`_applied_json`; None: not stored, a roll recorded before it was)."""
    data = {"result": result, "why": list(why), "effects": effects.__dict__, "player": player, "assister": assister}
    if applied is not None:
        data["applied"] = applied
    return json.dumps(data)


def _applied_json(momentum: int = 0, luck: int = 0, assister_momentum: int = 0, table_momentum: int = 0,
                  tension_spent: int = 0, scene: int | None = None, session: int | None = None) -> dict:
    """What a roll really did to players' points, after the 0..MAX_POINTS clamp (a player short of
    points pays what they have; one at MAX_POINTS gains nothing): the signed change to the roller's
    ``momentum`` and ``luck``, to the assister's ``assister_momentum`` (seed 004 "Assist") and to the
    table-level ``table_momentum`` (a roll with no roller; never below 0), all int (spent:
    negative); and ``tension_spent``, the tension tokens the GM really spent on it (seed 000: a
    pool's last die forced out; 0 where the GM had none), non-negative; and ``scene``, the number
    of the scene whose GM omens the roll's went to (:meth:`Table.new_scene` counts them) and
    ``session``, that of the session whose momentum it moved (:meth:`Table.new_session`; None: not
    known). A correction takes back these, not the effects' nominal amounts."""
    return {"momentum": momentum, "luck": luck, "assister_momentum": assister_momentum,
            "table_momentum": table_momentum, "tension_spent": tension_spent, "scene": scene, "session": session}


def _clamp_points(points: int) -> int:
    """``points`` kept in 0..MAX_POINTS."""
    return min(MAX_POINTS, max(0, points))


def _assist_why(assister: dict | None, effects: "rules.TableEffects") -> tuple[str, ...]:
    """The why line of who pays a roll's assist (seed 004 "Assist": the assisting teammate
    consumes 1 momentum); none when the roll has no assist."""
    cost = effects.assist_momentum
    if not cost:
        return ()
    if assister is None:
        return (f"no teammate picked to pay the assist's {cost} momentum",)
    return (f"{assister['name']} assists: {cost} momentum",)


def _tension_short(have: int, effects: "rules.TableEffects") -> tuple[str, ...]:
    """A why line when a roll spends more tension tokens than the GM has (``have``, with what
    the roll gains): he spends what he has, the tokens never go below 0."""
    if effects.tension_spent <= have:
        return ()
    return (f"the GM had {plural(have, 'tension token')} for the {effects.tension_spent} this roll spends",)


def pool_after(system: str, params: dict, result: dict) -> dict | None:
    """The table's params for the next roll after a resolved ``contingency-pool`` roll whose
    params count the pool (``pool``): the dice left in it (None once it is empty: the GM sets
    the next pool), no die dropped (a drop is chosen before each roll) and no last die forced
    out (``force``: chosen for a roll, after it). None when nothing
    changes: another system, an uncounted pool, or a roll not resolved (seed 000 "Diminishing
    Resource Pools": every roll rolls the dice that remain; RULES.md ``contingency-pool``)."""
    if system != "contingency-pool" or params.get("pool") is None or "remaining" not in result:
        return None
    return {**params, "pool": result["remaining"] or None, "drop": "none", "force": "none"}


def resolve_reading(system: str, params: dict, reading: Reading) -> tuple[str, dict, tuple[str, ...], "rules.TableEffects"]:
    """Resolve read dice under a system.

    Returns ``(outcome, result_json, why, effects)``. Dice that are not ``ok`` make the
    outcome ``reroll`` (RULES.md: a cocked or unreadable die is never guessed); dice that
    do not fit the system make it ``invalid``. Neither changes any token.
    """
    no_effects = rules.TableEffects()
    bad = [i for i, d in enumerate(reading.dice) if d.status != "ok"]
    if bad:
        words = ", ".join(f"die {i + 1} {reading.dice[i].status}" for i in bad)
        return REROLL, {}, (f"{words}: re-roll it or enter its face on the GM page",), no_effects
    try:
        resolution = rules.resolve_dice(system, [(d.kind, d.value) for d in reading.dice], params)
    except ValueError as exc:
        why = (str(exc),)
        if not reading.dice:  # an empty tray, or dice of kinds this system does not read (left out by the reader)
            read = rules.KINDS_BY_SYSTEM.get(system, ())
            kinds = " and ".join(filter(None, (", ".join(read[:-1]), read[-1]))) if read else "no kind"
            why += (f"no die read: {system} reads only {kinds} from the tray; other kinds are left out",)
        return INVALID, {}, why, no_effects
    return resolution.outcome, resolution.to_json(), tuple(resolution.why), resolution.effects


class StateConflict(ValueError):
    """A well-formed GM change that the table's state refuses (a luck die for a roll that cannot take
    one; a correction sent for a roll as the GM saw it, which has changed since: another device took a
    die out or put one back, and it would land on another die); nothing changed. The web layer
    answers it 409, not 400."""


class TableFileError(sqlite3.DatabaseError):
    """The table's database file cannot be used: not SQLite, another program's database,
    corrupt, or read-only. The message names the file, which is left as it was."""


class Table:
    """The table's state, backed by an SQLite file (created with owner-only permissions).

    Args:
        path: database file; its folder is created. ``":memory:"`` for tests.
        system, params: used only when the database is new.
        timeout_s: how long a write waits for a lock before the roll is kept in memory.

    A roll that cannot be written (database locked, disk full) is kept in memory, in
    order, and written by the next :meth:`record` or :meth:`flush` that can; ``pending``
    says how many wait. A GM change writes them first, and is refused (sqlite3.OperationalError)
    while they cannot be written: they are resolved and paid as the table was when rolled.

    Raises:
        ValueError: unknown system or bad parameters.
        TableFileError: the file is not SQLite, is another program's database, is corrupt,
            or cannot be opened for writing (read-only); it is left as it was.
        OSError: the folder or the new file cannot be made.
    """

    def __init__(self, path: str | Path, system: str = "charge", params: dict | None = None, timeout_s: float = 5.0):
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                p.touch(mode=0o600)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=timeout_s)
        self._pending: list[Roll] = []
        self.last_error: str | None = None
        try:
            self._check_file()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            if self._get("system") is None:
                self._write_settings(system, rules.validate_table_params(system, params or {}), Tokens())
            self._system_cache = (self.system, self.params)
        except sqlite3.Error as exc:
            self._db.close()
            if isinstance(exc, TableFileError):
                raise
            hint = {"file is not a database": "not an SQLite file",
                    "unable to open database file": "is it or its folder read-only?",
                    "attempt to write a readonly database": "is it or its folder read-only?",
                    "database disk image is malformed": "corrupt: move it away; sqlite3's .recover may save its rolls",
                    }.get(str(exc))
            raise TableFileError(f"cannot use the table's database {self.path}: {exc}"
                                 + (f" ({hint}); it is left as it is" if hint else "")) from None
        except BaseException:
            self._db.close()
            raise

    def _check_file(self) -> None:
        """Refuse, before anything is written, an SQLite file that holds another program's
        tables or fails SQLite's quick check (TableFileError naming the file)."""
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        tables.discard("sqlite_sequence")
        if tables and not {"settings", "rolls"} <= tables:
            raise TableFileError(f"{self.path} is another program's SQLite database (tables: {', '.join(sorted(tables))}), "
                                 "not a pi-table table; it is left as it is: move it away or pick another --state-dir")
        problem = " ".join(self._db.execute("PRAGMA quick_check(1)").fetchone()[0].split())  # may be several lines
        if problem != "ok":
            raise TableFileError(f"the table's database {self.path} is corrupt ({problem}); it is left as it is: "
                                 "move it away (sqlite3's .recover may save its rolls) and serve starts a new one")

    # -- settings -------------------------------------------------------------------------
    def _get(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def _put_setting(self, key: str, value: Any) -> None:
        """Store one setting (JSON) inside the caller's transaction."""
        self._db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (key, json.dumps(value)))

    def _write_settings(self, system: str, params: dict, tokens: Tokens) -> None:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for key, value in (("system", system), ("params", params), ("tokens", tokens.to_json())):
                self._put_setting(key, value)

    @property
    def system(self) -> str:
        return self._get("system")

    @property
    def params(self) -> dict:
        return self._get("params")

    @property
    def tokens(self) -> Tokens:
        return Tokens(**self._get("tokens"))

    def state(self, notices: tuple[str, ...] = ()) -> TableState:
        """The current :class:`TableState`."""
        with self._lock:
            rolls = self._pending[-1:] or self.rolls(limit=1)
            if self._pending:
                notices = (*notices, f"{len(self._pending)} roll(s) not saved yet ({self.last_error}); kept in memory")
            system, params = self._cached_system()
            players, roller = self.players(), self.roller
            return TableState(system, params, self.shown_tokens(players, roller), rolls[0] if rolls else None,
                              notices, tuple(players), roller, self.assister,
                              self.luck_pending)

    # -- rolls ----------------------------------------------------------------------------
    def _row_to_roll(self, row: tuple) -> Roll:
        rid, t, system, params, reading, outcome, result, image = row
        result = json.loads(result)
        return Roll(rid, t, system, json.loads(params), _reading_from_json(reading), outcome,
                    result.get("result", {}), tuple(result.get("why", ())), image, result.get("player"),
                    result.get("assister"))

    def rolls(self, limit: int = 50) -> list[Roll]:
        """Newest first. Raises ValueError for a limit outside 1..1000."""
        if not 1 <= int(limit) <= 1000:
            raise ValueError(f"limit must be in 1..1000, got {limit!r}")
        with self._lock:
            rows = self._db.execute("SELECT * FROM rolls ORDER BY id DESC LIMIT ?", (int(limit),)).fetchall()
        return [self._row_to_roll(r) for r in rows]

    def roll(self, roll_id: int) -> Roll:
        """One roll by id. Raises KeyError if there is none."""
        with self._lock:
            row = self._db.execute("SELECT * FROM rolls WHERE id=?", (int(roll_id),)).fetchone()
        if row is None:
            raise KeyError(f"no roll {roll_id}")
        return self._row_to_roll(row)

    @staticmethod
    def _apply(tokens: Tokens, effects: "rules.TableEffects", momentum: bool = True) -> Tokens:
        """Tokens plus a roll's effects (tension, momentum: gained less spent), never below 0;
        ``momentum=False`` leaves the table-level momentum alone (it went to a player)."""
        return Tokens(
            tension=max(0, tokens.tension + effects.net_tension),
            gm_omens=max(0, tokens.gm_omens + effects.gm_omens),
            momentum=max(0, tokens.momentum + effects.net_momentum) if momentum else tokens.momentum,
        )

    def _pay(self, player: Player, effects: "rules.TableEffects", why: tuple[str, ...],
             paid: tuple[int, int] = (0, 0), momentum: bool = True,
             ) -> tuple[tuple[str, ...], tuple[int, int], tuple[int, int]]:
        """Take what a roll spends from its roller, give what it gains, inside the caller's
        transaction (seed 004 "Momentum", "Push Yourself", "Determination Roll"; seed 001 "Luck
        Dice"). Points stay in 0..MAX_POINTS: a roller short of them pays what they have and is
        named in the returned why; one at MAX_POINTS gains nothing.

        Args:
            paid: ``(momentum, luck)`` the roll already changed the roller's points by (a
                correction, :meth:`_correct`): taken back first, then the effects paid as afresh.
            momentum: False leaves the roller's momentum as it is (a correction of a roll from a
                session that has ended: a new session gave every player their momentum afresh).

        Returns:
            ``(why, (momentum, luck) the roll has now changed the points by, (momentum, luck)
            change made to the points now)``.
        """
        if not momentum:  # the roll's momentum stays as it went: only its luck is paid afresh
            paid, effects = (0, paid[1]), replace(effects, momentum=0, momentum_spent=0)
        base_m, base_l = player.momentum - paid[0], player.luck - paid[1]  # the points without the roll
        short = self._short(replace(player, momentum=_clamp_points(base_m), luck=_clamp_points(base_l)), effects)
        momentum, luck = _clamp_points(base_m + effects.net_momentum), _clamp_points(base_l - effects.luck_spent)
        self._add_points(player.id, momentum - player.momentum, luck - player.luck)
        return why + short, (momentum - base_m, luck - base_l), (momentum - player.momentum, luck - player.luck)

    @staticmethod
    def _assist_cost(assister: Player | None, cost: int, paid: int = 0) -> tuple[int, tuple[str, ...], int]:
        """What paying ``cost`` momentum for an assist does to the teammate who assists (seed 004
        "Assist"), ``paid`` (what the roll already changed their momentum by: a correction) taken
        back first: ``(change to their momentum now, kept in 0..MAX_POINTS; a why line when they
        had less than the cost; what the roll has now changed their momentum by)``. Nothing without one."""
        if assister is None:
            return 0, (), paid
        base = assister.momentum - paid  # their momentum without the roll
        momentum = _clamp_points(base - cost)
        short = (f"{assister.name} had {_clamp_points(base)} momentum for the {cost} this assist spends",)
        return momentum - assister.momentum, short if cost > _clamp_points(base) else (), momentum - base

    @staticmethod
    def _short(player: Player, effects: "rules.TableEffects") -> tuple[str, ...]:
        """A why line for each kind of point the roll spends more of than ``player`` has."""
        return tuple(f"{player.name} had {have} {what} for the {cost} this roll spends"
                     for what, have, cost in (("momentum", player.momentum, effects.momentum_spent),
                                              ("luck", player.luck, effects.luck_spent)) if cost > have)

    def record(self, reading: Reading, image: str | None = None, t: float | None = None) -> Roll:
        """Resolve a reading under the current system, add its effects to the tokens, store it.

        Never loses the roll: if the database cannot be written, the roll is kept in memory
        (returned with ``id=None``) and written later by :meth:`flush`.
        """
        with self._lock:
            t = time.time() if t is None else t
            if self.flush():
                try:
                    return self._insert(reading, image, t)
                except sqlite3.DatabaseError as exc:  # locked, full, or a file gone corrupt since the start
                    self.last_error = str(exc)
            system, params = self._cached_system()
            outcome, result, why, _ = resolve_reading(system, params, reading)
            roll = Roll(None, t, system, params, reading, outcome, result, why, image)
            self._pending.append(roll)
            return roll

    def keep_newest_rolls(self, keep: int) -> int:
        """Forget every roll but the newest ``keep`` (a table that must not grow for ever: the
        demo's, which replays its photos all day), and the undo log's corrections of them.
        Returns how many rolls were forgotten.

        Raises:
            ValueError: ``keep`` below 1.
        """
        if int(keep) < 1:
            raise ValueError(f"keep must be at least 1, got {keep!r}")
        with self._lock, self._db:
            cur = self._db.execute("DELETE FROM rolls WHERE id <= (SELECT MAX(id) FROM rolls) - ?", (int(keep),))
            if cur.rowcount:  # corrections of the rolls forgotten cannot be undone: out of the undo log too
                oldest = self._db.execute("SELECT MIN(id) FROM rolls").fetchone()[0]
                gone = [cid for cid, what, before in self._db.execute("SELECT id, what, before FROM changes")
                        if what in CORRECTIONS and json.loads(before)["roll"] < oldest]
                self._db.executemany("DELETE FROM changes WHERE id=?", [(cid,) for cid in gone])
        return cur.rowcount

    def forget_photos(self, keep: int) -> list[str]:
        """Let go of the photos of every roll but the newest ``keep`` that hold one: their
        ``image`` becomes NULL, while the rolls themselves (dice, outcome, why, what they did to
        the tokens) stay in the history. Returns the paths let go of, oldest first, for the caller
        to delete (the table never deletes files). Rolls kept in memory are not touched.

        Raises:
            ValueError: ``keep`` below 0. sqlite3.DatabaseError: the database cannot be written
                now (locked, disk full, gone corrupt); nothing changed then.
        """
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be a whole number >= 0, got {keep!r}")
        with self._lock:
            rows = self._db.execute("SELECT id, image FROM rolls WHERE image IS NOT NULL ORDER BY id DESC "
                                    "LIMIT -1 OFFSET ?", (keep,)).fetchall()
            if rows:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.executemany("UPDATE rolls SET image=NULL WHERE id=?", [(rid,) for rid, _ in rows])
        return [image for _, image in reversed(rows)]

    def _cached_system(self) -> tuple[str, dict]:
        try:
            self._system_cache = (self.system, self.params)
        except sqlite3.DatabaseError:
            pass
        return self._system_cache

    @property
    def pending(self) -> int:
        """Rolls kept in memory, waiting to be written."""
        return len(self._pending)

    def flush(self) -> bool:
        """Write rolls kept in memory, oldest first. True when none is left waiting."""
        with self._lock:
            while self._pending:
                roll = self._pending[0]
                try:
                    self._insert(roll.reading, roll.image, roll.t)
                except sqlite3.DatabaseError as exc:
                    self.last_error = str(exc)
                    return False
                self._pending.pop(0)
            self.last_error = None
            return True

    def _flush_first(self) -> None:
        """Write the rolls kept in memory before a GM change: they came first, so they are resolved,
        paid and attributed as the table was when they were rolled (a roller, assister, system or
        params changed meanwhile would take them over otherwise). Call it under the lock before the
        change reads anything.

        Raises:
            sqlite3.OperationalError: they cannot be written yet (the disk still full, the database
                locked); the change is refused and nothing changes (the web answers 503 "try again").
        """
        if not self.flush():
            raise sqlite3.OperationalError(
                f"{len(self._pending)} roll(s) kept in memory cannot be written yet ({self.last_error}): "
                "a GM change waits for the rolls before it")

    def _insert(self, reading: Reading, image: str | None, t: float) -> Roll:
        system, params = self.system, self.params
        self._system_cache = (system, params)
        outcome, result, why, effects = resolve_reading(system, params, reading)
        roller = self._picked_player("roller")
        who = {"id": roller.id, "name": roller.name} if roller else None
        assister = self._picked_player("assister")
        helper = {"id": assister.id, "name": assister.name} if assister else None
        why += _assist_why(helper, effects)
        held = self.tokens
        tokens = self._apply(held, effects, momentum=roller is None)
        have = held.tension + effects.tension_tokens  # the GM's tension tokens to spend on the roll
        why += _tension_short(have, effects)
        following = pool_after(system, params, result)
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            if following is not None:
                self._put_setting("params", following)
            paid = (0, 0)
            if roller is not None:
                why, paid, _ = self._pay(roller, effects, why)
            change, short, assisted = self._assist_cost(assister, effects.assist_momentum)
            if change:
                self._add_points(assister.id, change)
            why += short
            payload = _result_json(result, why, effects, who, helper,
                                   _applied_json(*paid, assisted, tokens.momentum - held.momentum, have - tokens.tension,
                                                 self.scene, self.session))
            cur = self._db.execute(
                "INSERT INTO rolls (t, system, params, reading, outcome, result, image) VALUES (?,?,?,?,?,?,?)",
                (t, system, json.dumps(params), _reading_to_json(reading), outcome, payload, image),
            )
            self._put_setting("tokens", tokens.to_json())
        return Roll(cur.lastrowid, t, system, params, reading, outcome, result, why, image, who, helper)

    # -- GM changes (each one undoable) ---------------------------------------------------
    def _log_change(self, what: str, extra: dict | None = None, tokens_after: Tokens | None = None) -> None:
        """Log a GM change: the system and params before it, and the tokens before and after it
        (``tokens_after``; None: it leaves them as they are), so that :meth:`undo` takes back the
        change's own difference and keeps what rolls gave since."""
        tokens = self.tokens
        before = {"system": self.system, "params": self.params, "tokens": tokens.to_json(),
                  "tokens_after": (tokens_after or tokens).to_json(), **(extra or {})}
        self._db.execute("INSERT INTO changes (t, what, before) VALUES (?,?,?)", (time.time(), what, json.dumps(before)))

    def set_system(self, system: str, params: dict | None = None) -> TableState:
        """Choose the system and parameters for the next rolls. ValueError on bad input, and for an
        offer taken up on a recorded roll only (:func:`pi_table.rules.validate_table_params`)."""
        params = rules.validate_table_params(system, params or {})
        with self._lock, self._db:
            self._flush_first()
            self._db.execute("BEGIN IMMEDIATE")
            self._log_change("system")
            for key, value in (("system", system), ("params", params), ("luck_pending", None)):
                self._put_setting(key, value)  # a luck die awaited for a roll of the system before: no longer
        return self.state()

    def _set_tokens(self, what: str, tokens: Tokens) -> TableState:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._log_change(what, tokens_after=tokens)
            self._put_setting("tokens", tokens.to_json())
        return self.state()

    def add_tension(self, delta: int) -> TableState:
        """Give (delta > 0) or spend (delta < 0) tension tokens; never below 0. Undoable.

        Raises:
            ValueError: delta is not an integer in -100..100, or spending more than the GM has.
        """
        return self._add_gm_tokens("tension", "tension", "tension tokens", delta)

    def add_omens(self, delta: int) -> TableState:
        """The GM gives (delta > 0) or spends (delta < 0) his omens for the scene (seed 001 "Game
        Moderator Omens": they are his to spend until the scene ends). Undoable.

        Raises:
            ValueError: delta is not an integer in -100..100, or spending more than the GM has.
        """
        return self._add_gm_tokens("omens", "gm_omens", "GM omens", delta)

    def _add_gm_tokens(self, what: str, field: str, name: str, delta: int) -> TableState:
        """``delta`` added to the GM's count ``field`` of :class:`Tokens`, logged as change ``what``."""
        if isinstance(delta, bool) or not isinstance(delta, int) or not -100 <= delta <= 100:
            raise ValueError(f"delta must be an integer in -100..100, got {delta!r}")
        with self._lock:
            self._flush_first()
            tokens = self.tokens
            have = getattr(tokens, field)
            if have + delta < 0:
                raise ValueError(f"cannot spend {-delta} {name}: the GM has {have}")
            return self._set_tokens(what, replace(tokens, **{field: have + delta}))

    def choose_fail(self) -> "rules.Resolution":
        """A player chooses to fail a skill check: no roll; the GM gains 1 omen with disadvantage,
        2 with neither, 3 with advantage, by the table's ``advantage`` and ``disadvantage`` units
        (seed 001 "Choosing to Fail"; RULES.md ``contingency-skill``). Undoable.

        Returns the choice's resolution (``gm_omens``, ``why``).

        Raises:
            ValueError: the table's system is not ``contingency-skill`` (named).
        """
        with self._lock:
            self._flush_first()
            system, params = self.system, self.params
            if system != "contingency-skill":
                raise ValueError(f"choosing to fail is a contingency-skill rule; the table plays {system}")
            chosen = rules.resolve(system, choose_fail=True, advantage=params["advantage"],
                                   disadvantage=params["disadvantage"])
            tokens = self.tokens
            self._set_tokens("choose-fail", replace(tokens, gm_omens=tokens.gm_omens + chosen.effects.gm_omens))
            return chosen

    @property
    def session(self) -> int:
        """The number of the session being played (0 first): each :meth:`new_session` takes a number
        higher than any taken before, and undoing it goes back to the one before. A roll is of the
        session being played when the number stored with it is at least this one (rolls recorded in
        a new session since taken back are of the session it went back to)."""
        return self._get("session") or 0

    @property
    def scene(self) -> int:
        """The number of the scene being played (0 first), numbered as :attr:`session` is, by
        :meth:`new_scene`."""
        return self._get("scene") or 0

    def _next_number(self, counter: str) -> tuple[int, int]:
        """``(the number of the scene or session being played, the next one)`` for ``counter``
        ("scene" or "session"), the next one higher than any taken before (kept in "<counter>s"),
        inside the caller's transaction."""
        was = self._get(counter) or 0
        new = max(was, self._get(counter + "s") or 0) + 1
        self._put_setting(counter + "s", new)
        return was, new

    def new_scene(self) -> TableState:
        """A new scene: the GM's omens reset to 0 (seed 001, Omens); the scene's number goes up by one
        (:attr:`scene`: a correction of a roll from a scene that has ended leaves the GM's omens alone)."""
        with self._lock:
            self._flush_first()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                tokens = replace(self.tokens, gm_omens=0)
                scene, new = self._next_number("scene")
                self._log_change("scene", {"scene_was": scene}, tokens_after=tokens)
                self._put_setting("tokens", tokens.to_json())
                self._put_setting("scene", new)
            return self.state()

    def _die_at(self, roll: Roll, index: int, dice: int | None = None) -> Die:
        """The die at ``index`` of ``roll``; ValueError naming the index when it has none, and
        :class:`StateConflict` when ``dice`` (the number of dice the GM saw the roll with) is
        given and the roll has another number of dice now."""
        if dice is not None and dice != len(roll.reading.dice):
            raise StateConflict(
                f"roll {roll.id} has {len(roll.reading.dice)} dice now, not the {dice} shown: it changed meanwhile "
                f"(a die removed or put back on another device); look at it again")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(roll.reading.dice):
            raise ValueError(f"die index {index} out of range (roll {roll.id} has {len(roll.reading.dice)} dice)")
        return roll.reading.dice[index]

    def correct_die(self, roll_id: int, index: int, face: str, kind: str | None = None,
                    dice: int | None = None) -> Roll:
        """The GM enters a die's face by hand, and its kind where the reader took it for another
        (a d10 read as a d8); the roll is resolved again and tokens adjusted
        (:meth:`_correct`). The face is stored as the reader writes faces
        (:func:`pi_table.vision.dice.parse_face`: " 06" -> "6").

        Args:
            kind: None keeps the die's kind; else one of the kinds the roll's system reads
                (:data:`pi_table.rules.KINDS_BY_SYSTEM`), the face then read on that kind.
            dice: None, or the number of dice the GM saw the roll with: a roll that has another
                number now (a die removed or put back meanwhile moved the dice after it) is left
                as it is, so that a face typed for one die never lands on its neighbour.

        Raises:
            KeyError: no such roll. ValueError: index out of range, a kind the roll's system
                does not read, or a face that is not plain digits or not on that die (each
                named); :class:`StateConflict` for ``dice``; nothing changes then.
        """
        with self._lock:
            roll = self.roll(roll_id)
            old = self._die_at(roll, index, dice)
            if kind is not None:
                reads = rules.KINDS_BY_SYSTEM.get(roll.system, ())
                if kind not in reads:
                    raise ValueError(f"kind {kind!r} is not a die {roll.system} reads (it reads {', '.join(reads)})")
            kind = old.kind if kind is None else kind
            face, value = parse_face(kind, str(face))
            dice = list(roll.reading.dice)
            dice[index] = replace(old, kind=kind, face=face, value=value, confidence=1.0, status="ok")
            return self._correct(roll, replace(roll.reading, dice=tuple(dice)), "correct")

    def remove_die(self, roll_id: int, index: int, dice: int | None = None) -> Roll:
        """The GM takes a false die out of a roll (a pip or a mark on the tray the reader took
        for a die); the roll is resolved again under its own system and params and tokens
        adjusted, as a corrected face is (:meth:`_correct`). Undoable: the die comes back.
        Taking out the last die leaves a roll of no dice, which no system resolves: ``invalid``.
        Taking out a skill check's luck die (its 4th die while its params have ``luck``: one added by
        :meth:`add_luck_die`, or read with the roll) leaves the check without one (``luck`` false),
        as it was before the luck die (seed 001 "Luck Dice").

        ``dice``: as for :meth:`correct_die`.

        Raises:
            KeyError: no such roll. ValueError: index out of range (named); :class:`StateConflict`
                for ``dice``; nothing changes then.
        """
        with self._lock:
            roll = self.roll(roll_id)
            self._die_at(roll, index, dice)
            dice = roll.reading.dice[:index] + roll.reading.dice[index + 1:]
            params = None
            if roll.system == "contingency-skill" and roll.params.get("luck") and index == rules.LUCK_DIE_INDEX:
                params = {**roll.params, "luck": False}
            return self._correct(roll, replace(roll.reading, dice=dice), "remove-die", params)

    def set_roll_params(self, roll_id: int, params: dict) -> Roll:
        """The GM sets the parameters a recorded roll is resolved under, after the roll (he forgot
        to set The Contract's difficulty, a skill check's target, Charge's push first). The keys
        given replace the roll's own (the others stay as the roll had them), checked for the
        roll's own system (:func:`pi_table.rules.validate_params`); the roll is resolved again
        under them and tokens and the roller's points move by the difference, as a corrected
        face's do (:meth:`_correct`). Undoable: the roll's params and result come back.

        The table's params for the next rolls are left as they are, but where the roll moved
        them: the newest roll of a counted pool (``contingency-pool`` ``pool``) on a table still
        playing it leaves the table's pool at the dice left under the new params, as a corrected
        face does (:func:`pool_after`).

        A pool roll whose last die stayed (its result's ``offers``) takes ``{"force": "mark"}`` or
        ``{"force": "tension"}`` (seed 000 "Diminishing Resource Pools"): the die is forced out, the
        pool is empty, and "tension" spends one of the GM's tension tokens (never below 0: with none,
        none is spent and the roll's why says so); undo gives it back.

        Raises:
            KeyError: no such roll. ValueError: params not a mapping, or a key or value the
                roll's system does not take (named); nothing changes then.
        """
        if not isinstance(params, dict):
            raise ValueError(f"params must be a JSON object, got {params!r}")
        with self._lock:
            roll = self.roll(roll_id)
            params = rules.validate_params(roll.system, {**roll.params, **params})
            return self._correct(roll, roll.reading, "roll-params", params)

    # -- a luck die after the roll (seed 001 "Luck Dice") -----------------------------------
    @staticmethod
    def luck_die_kind(roll: Roll) -> str:
        """The kind of the luck die ``roll`` may take: its result die's (seed 001 "Luck Dice": "an
        additional die equal in size to your result die"; RULES.md ``contingency-skill``).

        Raises:
            StateConflict: the roll takes none (named why): not a contingency-skill check, a
                percentile roll, not resolved (re-roll or invalid: fix its dice first), or it has
                its luck die already (one per check).
        """
        if roll.system != "contingency-skill":
            raise StateConflict(f"roll {roll.id} is a {roll.system} roll: a luck die is a contingency-skill rule "
                                "(seed 001 \"Luck Dice\")")
        if roll.params.get("luck") or roll.result.get("luck"):
            raise StateConflict(f"roll {roll.id} has its luck die already (one per skill check)")
        if roll.outcome in (REROLL, INVALID):
            raise StateConflict(f"roll {roll.id} is not resolved ({roll.outcome}): correct its dice before a luck die")
        if "result_die" not in roll.result:
            raise StateConflict(f"roll {roll.id} is a percentile roll: it takes no luck die")
        return roll.result["result_die"]

    def _check_luck_kind(self, roll: Roll, kind: str | None) -> str:
        """:meth:`luck_die_kind`; ValueError naming ``kind`` when one is given and it is not that."""
        want = self.luck_die_kind(roll)
        if kind is not None and kind != want:
            raise ValueError(f"kind {kind!r}: roll {roll.id}'s luck die is a {want}, the size of its result die "
                             "(seed 001 \"Luck Dice\")")
        return want

    def add_luck_die(self, roll_id: int, face: str, kind: str | None = None) -> Roll:
        """A luck die rolled after the roll (seed 001 "Luck Dice": after the player has the result, one
        luck point buys one die of the result die's size, its face added to the result; it counts for
        the player's and the GM's omens; one per check). The die is added after the roll's dice, the
        roll's params get ``luck: true`` (the 4th die is the luck die, as :func:`pi_table.rules.resolve_dice`
        reads it) and the roll is resolved again as a corrected one is (:meth:`_correct`): the roller
        pays the luck point, the GM's omens move by the difference. Undoable (die, params, points and
        omens back). A luck die awaited from the camera for this roll (:meth:`arm_luck_die`) is no
        longer awaited.

        Args:
            face: the face as printed ("5"; a d10's "0" is 10), read as :func:`parse_face` does.
            kind: None, or the result die's kind (anything else is refused).

        Returns:
            The roll as stored; the luck die has no box (:data:`NO_BOX`: it is not in the roll's photo).

        Raises:
            KeyError: no such roll. StateConflict: the roll takes no luck die (:meth:`luck_die_kind`).
            ValueError: a kind other than the result die's, or a face not on that die (named);
                nothing changes then.
        """
        with self._lock:
            roll = self.roll(roll_id)
            kind = self._check_luck_kind(roll, kind)
            face, value = parse_face(kind, str(face))
            die = Die(kind, face, value, NO_BOX, 1.0, "ok")
            reading = replace(roll.reading, dice=(*roll.reading.dice, die))
            done = self._correct(roll, reading, "luck-die", {**roll.params, "luck": True})
            if (self.luck_pending or {}).get("roll") == roll.id:
                self.disarm_luck_die()
            return done

    @property
    def luck_pending(self) -> dict | None:
        """``{"roll": id, "kind": "d8"}`` while the next reading of the camera is taken for that roll's
        luck die (:meth:`arm_luck_die`), else None."""
        return self._get("luck_pending")

    def arm_luck_die(self, roll_id: int, kind: str | None = None) -> dict:
        """Take the camera's next reading for roll ``roll_id``'s luck die rather than as a new roll
        (the player rolls one die of the result die's size into the tray; the service matches it,
        :meth:`pi_table.service.Service.handle`). Replaces one awaited for another roll. Kept in the
        settings (``luck_pending``, in :class:`TableState`); :meth:`set_system` drops it. Not an
        undoable change: :meth:`disarm_luck_die` cancels it.

        Returns:
            ``{"roll": id, "kind": kind}``.

        Raises:
            KeyError: no such roll. StateConflict, ValueError: as :meth:`add_luck_die`.
        """
        with self._lock:
            roll = self.roll(roll_id)
            pending = {"roll": roll.id, "kind": self._check_luck_kind(roll, kind)}
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._put_setting("luck_pending", pending)
            return pending

    def disarm_luck_die(self) -> dict | None:
        """No luck die awaited from the camera any more; returns the one that was (or None)."""
        with self._lock:
            was = self.luck_pending
            if was is not None:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._put_setting("luck_pending", None)
            return was

    def _correct(self, roll: Roll, reading: Reading, what: str, params: dict | None = None) -> Roll:
        """Store ``reading`` as ``roll``'s dice and ``params`` (None: the roll's own, already
        checked) as its parameters (a GM correction, one of :data:`CORRECTIONS`), resolved again
        under the roll's own system. The tokens change by the difference between the old and the
        new resolution's effects, in one step and never below 0; the roller's points (the table-level momentum for a roll with no
        roller) and the roll's own assister's momentum (seed 004 "Assist") get back what the roll
        really took or gave (stored with it: a player short
        of points paid only what they had), then pay the new effects as a fresh roll would
        (:meth:`_pay`, :meth:`_assist_cost`). The newest pool roll's pool follows it, and the
        change is logged as ``what`` with the reading, params and paid points as they were, for
        :meth:`undo`. Returns the roll as stored."""
        self._flush_first()
        roll_id = roll.id
        params = roll.params if params is None else params
        _, _, _, old_effects = resolve_reading(roll.system, roll.params, roll.reading)
        outcome, result, why, effects = resolve_reading(roll.system, params, reading)
        why += _assist_why(roll.assister, effects)
        owner = self._find_player(roll.player["id"]) if roll.player else None
        # the roll's own assister pays for an assist the correction turns on, and is paid back for one it turns off
        helper = self._find_player(roll.assister["id"]) if roll.assister else None
        stored, paid = self._applied(roll, old_effects)
        applied = dict(paid)  # a player removed since: what the roll did to them stays
        # GM omens last for the scene (seed 001): a roll of a scene that has ended moves none of this one's
        scene_now = paid["scene"] is None or paid["scene"] >= self.scene
        if not scene_now and effects.gm_omens != old_effects.gm_omens:
            why += ("its scene has ended: the GM's omens stay as they are",)
        # a new session gives every player their momentum afresh (seed 004): a roll of a session that has ended
        # moves no player's momentum (its luck points still: they carry over)
        session_now = paid["session"] is None or paid["session"] >= self.session
        if not session_now and (effects.net_momentum, effects.assist_momentum) != (
                old_effects.net_momentum, old_effects.assist_momentum) and (owner or helper):
            why += ("its session has ended: the players' momentum stays as it is",)
        held = self.tokens
        # the GM's tension tokens with the old roll's gains taken back and what it spent given back, plus the
        # new gains: in one step, never below 0 (a token the roll gave that the GM has spent since is not given
        # again); the new resolution spends from these what he has (seed 000: a pool's last die forced out)
        have = max(0, held.tension - old_effects.tension_tokens + paid["tension_spent"] + effects.tension_tokens)
        applied["tension_spent"] = min(effects.tension_spent, have)
        why += _tension_short(have, effects)
        tokens = Tokens(
            tension=have - applied["tension_spent"],
            gm_omens=(max(0, held.gm_omens - old_effects.gm_omens + effects.gm_omens) if scene_now
                      else held.gm_omens),
            momentum=held.momentum)  # a roller's roll (its roller removed since too) leaves the table-level count
        if roll.player is None:  # the table-level momentum gets back what the roll really gave or took
            base = held.momentum - paid["table_momentum"]
            tokens = replace(tokens, momentum=max(0, base + effects.net_momentum))
            applied["table_momentum"] = tokens.momentum - base
        extra = {"roll": roll_id, "reading": roll.reading.to_json(), "roll_params": roll.params, "applied": stored,
                 "why": list(roll.why)}
        latest = self._db.execute("SELECT MAX(id) FROM rolls").fetchone()[0]
        following = None
        if roll_id == latest and roll.system == self.system and (
                roll.params.get("pool") is not None or params.get("pool") is not None):
            # the pool as the roll left it; one not resolved now is rolled again from the pool it had, its
            # drop with it, but no offer taken up after it is set for the next rolls (validate_table_params)
            following = pool_after(roll.system, params, result) or {**params, "force": "none"}
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            if owner is not None:
                why, (applied["momentum"], applied["luck"]), (momentum, luck) = self._pay(
                    owner, effects, why, (paid["momentum"], paid["luck"]), momentum=session_now)
                if not session_now:
                    applied["momentum"] = paid["momentum"]
                # the points as they were and the difference made, so that undo takes back just that difference
                extra["player_points"] = [owner.id, owner.momentum, owner.luck, momentum, luck]
            assist, short, applied["assister_momentum"] = self._assist_cost(
                helper if session_now else None, effects.assist_momentum, paid["assister_momentum"])
            why += short
            if assist:
                self._add_points(helper.id, assist)
                extra["assister_points"] = [helper.id, assist]
            # the table's params as this correction leaves them: undo puts them back only while no roll moved them since
            extra["params_after"] = self.params if following is None else following
            self._log_change(what, extra, tokens_after=tokens)
            if following is not None:
                self._put_setting("params", following)
            self._rewrite_roll(roll_id, reading, params, outcome,
                               _result_json(result, why, effects, roll.player, roll.assister, applied))
            self._put_setting("tokens", tokens.to_json())
        return self.roll(roll_id)

    def _applied(self, roll: Roll, effects: "rules.TableEffects") -> tuple[dict | None, dict]:
        """``(stored, paid)``: what ``roll`` really did to players' points as stored with it
        (:func:`_applied_json`; None for a roll stored before that was), and what a correction takes
        back: the stored amounts, else the roll's nominal ``effects`` taken as paid by its roller
        and assister (as corrections did before the amounts were stored)."""
        row = self._db.execute("SELECT result FROM rolls WHERE id=?", (roll.id,)).fetchone()
        stored = json.loads(row[0]).get("applied") if row else None
        if stored is not None:
            return stored, {**_applied_json(), **stored}
        by_roller = roll.player is not None
        return None, _applied_json(effects.net_momentum if by_roller else 0, -effects.luck_spent if by_roller else 0,
                                   -effects.assist_momentum if roll.assister else 0,
                                   0 if by_roller else effects.net_momentum, effects.tension_spent)

    def _rewrite_roll(self, roll_id: int, reading: Reading, params: dict, outcome: str, result_json: str) -> None:
        """Store a recorded roll's dice, params and resolution anew, inside the caller's transaction
        (a GM correction, or its undo)."""
        self._db.execute("UPDATE rolls SET reading=?, params=?, outcome=?, result=? WHERE id=?",
                         (_reading_to_json(reading), json.dumps(params), outcome, result_json, roll_id))

    def last_change(self) -> tuple[str, int | None] | None:
        """The GM change :meth:`undo` takes back next: ``(what, id of the roll it corrected or
        None)``, e.g. ``("correct", 12)``, ``("roll-params", 12)`` or ``("tension", None)``; None
        when none is left."""
        with self._lock:
            row = self._db.execute("SELECT what, before FROM changes ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        return row[0], json.loads(row[1]).get("roll") if row[0] in CORRECTIONS else None

    def undo(self) -> bool:
        """Undo the last GM change (system, tokens, scene, correction, removed die, a roll's params or
        its luck die, players, roller, assister, a new session's momentum).
        False if none is left.

        A player change undoes only itself (the player's row, the roller); momentum that
        rolls gave since then stays."""
        with self._lock:
            self._flush_first()
            row = self._db.execute("SELECT id, what, before FROM changes ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                return False
            cid, what, before = row[0], row[1], json.loads(row[2])
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                if what in PLAYER_CHANGES:
                    self._undo_player_change(what, before)
                    self._db.execute("DELETE FROM changes WHERE id=?", (cid,))
                    return True
                tokens = before["tokens"]
                if "tokens_after" in before:  # the change's own difference taken back (logs before it: the snapshot)
                    now, after = self.tokens.to_json(), before["tokens_after"]
                    tokens = {k: max(0, now[k] + tokens[k] - after[k]) for k in tokens}
                settings = {"tokens": tokens}
                # a token change leaves the system and params as they are now (a pool roll may have moved them), and
                # so does a correction once a roll recorded since moved the table's pool (logged since it is)
                moved = what in CORRECTIONS and before.get("params_after", self.params) != self.params
                if what == "system" or (what in CORRECTIONS and not moved) or "tokens_after" not in before:
                    settings.update(system=before["system"], params=before["params"])
                if "scene_was" in before:  # a new scene taken back: its number too
                    settings["scene"] = before["scene_was"]
                for key, value in settings.items():
                    self._put_setting(key, value)
                if "player_points" in before:
                    pid, _, _, momentum, luck = before["player_points"]
                    self._add_points(pid, -momentum, -luck)
                elif "player_momentum" in before:  # logged before corrections kept their difference
                    pid, momentum = before["player_momentum"]
                    self._db.execute("UPDATE players SET momentum=? WHERE id=?", (momentum, pid))
                if "assister_points" in before:  # the assist a correction charged or paid back
                    pid, momentum = before["assister_points"]
                    self._add_points(pid, -momentum)
                if what in CORRECTIONS:  # the roll's dice and params as they were (a removed die comes back)
                    reading = Reading(**{**before["reading"], "dice": ()})
                    reading = replace(reading, dice=tuple(Die.from_json(d) for d in before["reading"]["dice"]))
                    roll = self.roll(before["roll"])
                    params = before.get("roll_params", roll.params)  # (logged before params could be set)
                    outcome, result, why, effects = resolve_reading(roll.system, params, reading)
                    # the why as it was, with the lines of who was short of points (logged since they are)
                    why = tuple(before["why"]) if "why" in before else why + _assist_why(roll.assister, effects)
                    self._rewrite_roll(before["roll"], reading, params, outcome,
                                       _result_json(result, why, effects, roll.player, roll.assister,
                                                    before.get("applied")))
                self._db.execute("DELETE FROM changes WHERE id=?", (cid,))
            return True

    # -- players (seed 004 momentum, seed 001 luck points) -------------------------------
    def players(self) -> list[Player]:
        """Every player, in the order they were added."""
        with self._lock:
            rows = self._db.execute("SELECT id, name, momentum, luck FROM players ORDER BY id").fetchall()
        return [Player(*r) for r in rows]

    def _find_player(self, player_id: Any) -> Player | None:
        if isinstance(player_id, bool) or not isinstance(player_id, int) or not 0 < player_id < 2**63:
            return None  # not an id SQLite could hold
        row = self._db.execute("SELECT id, name, momentum, luck FROM players WHERE id=?", (player_id,)).fetchone()
        return Player(*row) if row else None

    def player(self, player_id: int) -> Player:
        """One player by id. Raises KeyError if there is none."""
        with self._lock:
            found = self._find_player(player_id)
        if found is None:
            raise KeyError(f"no player {player_id}")
        return found

    @property
    def roller(self) -> int | None:
        """Id of the player whose roll the next one is, or None."""
        return self._get("roller")

    @property
    def assister(self) -> int | None:
        """Id of the teammate who pays the next Charge roll's assist (seed 004 "Assist"), or None."""
        return self._get("assister")

    def _picked_player(self, role: str) -> Player | None:
        """The player the GM picked as ``role`` ("roller" or "assister"), or None."""
        player_id = self._get(role)
        return self._find_player(player_id) if player_id is not None else None

    def _check_player_id(self, player_id: int | None) -> None:
        """ValueError naming ``player_id`` unless it is None or the id of a player."""
        if player_id is not None and self._find_player(player_id) is None:
            raise ValueError(f"player must be a player id or null, got {player_id!r}")

    def shown_tokens(self, players: list[Player] | None = None, roller: int | None = None) -> Tokens:
        """The tokens as served: ``momentum`` is the roller's when a roller is picked, else the
        table-level count (the field stays for older viewers)."""
        tokens = self.tokens
        if players is None:
            players, roller = self.players(), self.roller
        for p in players:
            if p.id == roller:
                return replace(tokens, momentum=p.momentum)
        return tokens

    def _add_points(self, player_id: int, momentum: int = 0, luck: int = 0) -> None:
        """Add to a player's momentum and luck points, each kept in 0..MAX_POINTS (inside the caller's transaction)."""
        if momentum or luck:
            self._db.execute("UPDATE players SET momentum=MIN(?, MAX(0, momentum + ?)), luck=MIN(?, MAX(0, luck + ?)) "
                             "WHERE id=?", (MAX_POINTS, momentum, MAX_POINTS, luck, player_id))

    def _check_unique(self, name: str, except_id: int | None = None) -> None:
        for p in self.players():
            if p.name.casefold() == name.casefold() and p.id != except_id:
                raise ValueError(f"name {name!r} is already taken (player {p.id})")

    def add_player(self, name: str, momentum: int = START_MOMENTUM, luck: int = 0) -> Player:
        """Add a player (seed 004: momentum starts at 2). Undoable.

        Raises:
            ValueError: a bad or taken name, momentum/luck not an integer in 0..99, or
                already MAX_PLAYERS players (the message names the bad value).
        """
        name = check_name(name)
        check_points("momentum", momentum)
        check_points("luck", luck)
        with self._lock:
            self._flush_first()
            self._check_unique(name)
            if len(self.players()) >= MAX_PLAYERS:
                raise ValueError(f"a table has at most {MAX_PLAYERS} players")
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                cur = self._db.execute("INSERT INTO players (name, momentum, luck) VALUES (?,?,?)", (name, momentum, luck))
                self._log_change("player-add", {"player_id": cur.lastrowid, "roller": self.roller})
            return Player(cur.lastrowid, name, momentum, luck)

    def remove_player(self, player_id: int) -> Player:
        """Remove a player (if it was the roller or the assister, no one is). Undoable. KeyError if none."""
        with self._lock:
            self._flush_first()
            gone = self.player(player_id)
            roller, assister = self.roller, self.assister
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._log_change("player-remove", {"player": gone.to_json(), "roller": roller, "assister": assister})
                self._db.execute("DELETE FROM players WHERE id=?", (gone.id,))
                if roller == gone.id:
                    self._put_setting("roller", None)
                if assister == gone.id:
                    self._put_setting("assister", None)
            return gone

    def new_session(self) -> list[Player]:
        """A new session of play: every player's momentum back to :data:`START_MOMENTUM` (seed 004
        "Momentum": "You start every session with 2"). Luck points stay (seed 001 "Luck Dice": they
        do not refresh naturally), and so do the tokens and the roll history. Undoable: each
        player's momentum comes back by the difference, so that momentum rolls gave since stays.
        Returns the players as they are now."""
        with self._lock:
            self._flush_first()
            players = self.players()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                session, new = self._next_number("session")
                self._log_change("session", {"momentum": [[p.id, p.momentum - START_MOMENTUM] for p in players],
                                             "session_was": session})
                self._db.execute("UPDATE players SET momentum=?", (START_MOMENTUM,))
                self._put_setting("session", new)
            return self.players()

    def update_player(self, player_id: int, /, **changes: Any) -> Player:
        """Set a player's ``momentum``, ``luck`` (integers 0..99) and/or ``name``. Undoable.

        Raises:
            KeyError: no such player. ValueError: no change given, an unknown key, or a bad
                value (named); nothing changes then.
        """
        unknown = sorted(set(changes) - {"name", "momentum", "luck"})
        if unknown:
            raise ValueError(f"unknown player field {unknown[0]!r} (expected name, momentum, luck)")
        if not changes:
            raise ValueError("nothing to change: give momentum, luck or name")
        if "name" in changes:
            changes["name"] = check_name(changes["name"])
        for key in ("momentum", "luck"):
            if key in changes:
                check_points(key, changes[key])
        with self._lock:
            self._flush_first()
            old = self.player(player_id)
            if "name" in changes:
                self._check_unique(changes["name"], old.id)
            new = replace(old, **changes)
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._log_change("player-update", {"player": old.to_json(), "after": new.to_json()})
                self._db.execute("UPDATE players SET name=?, momentum=?, luck=? WHERE id=?",
                                 (new.name, new.momentum, new.luck, new.id))
            return new

    def set_roller(self, player_id: int | None) -> TableState:
        """Pick whose roll the next one is (None: no one; momentum then goes to the table). A
        roller who was the assister is no longer (one does not assist one's own roll). Undoable.

        Raises:
            ValueError: ``player_id`` is not null or the id of a player (named).
        """
        with self._lock:
            self._flush_first()
            self._check_player_id(player_id)
            assister = self.assister
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._log_change("roller", {"roller": self.roller, "assister": assister})
                self._put_setting("roller", player_id)
                if player_id is not None and assister == player_id:
                    self._put_setting("assister", None)
        return self.state()

    def set_assister(self, player_id: int | None) -> TableState:
        """Pick the teammate who assists the next Charge action rolls (seed 004 "Assist": they
        consume 1 momentum for the +1d6 of the params' ``assist``); None: no one (the assist's
        momentum is then paid by no one, and the roll's why says so). Undoable.

        Raises:
            ValueError: ``player_id`` is not null or the id of a player, or is the roller (named).
        """
        with self._lock:
            self._flush_first()
            self._check_player_id(player_id)
            if player_id is not None and player_id == self.roller:
                raise ValueError(f"player {player_id} is the roller: a teammate assists, not the one who rolls")
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._log_change("assister", {"assister": self.assister})
                self._put_setting("assister", player_id)
        return self.state()

    def _undo_player_change(self, what: str, before: dict) -> None:
        """Reverse one player change inside the caller's transaction."""
        if what == "player-add":
            self._db.execute("DELETE FROM players WHERE id=?", (before["player_id"],))
        elif what == "player-remove":
            p = before["player"]
            self._db.execute("INSERT OR REPLACE INTO players (id, name, momentum, luck) VALUES (?,?,?,?)",
                             (p["id"], p["name"], p["momentum"], p["luck"]))
        elif what == "player-update":
            # the change is reversed as a difference, so points that rolls gave since stay
            p, after = before["player"], before.get("after", before["player"])
            self._db.execute(
                "UPDATE players SET name=?, momentum=MIN(?, MAX(0, momentum + ?)), luck=MIN(?, MAX(0, luck + ?)) WHERE id=?",
                (p["name"], MAX_POINTS, p["momentum"] - after["momentum"], MAX_POINTS, p["luck"] - after["luck"], p["id"]))
        elif what == "session":  # each player's momentum back by the difference the new session made
            for pid, change in before["momentum"]:
                self._add_points(pid, change)
            self._put_setting("session", before["session_was"])
        if "roller" in before:
            self._put_setting("roller", before["roller"])
        if "assister" in before:
            self._put_setting("assister", before["assister"])

    def close(self) -> None:
        """Write the rolls kept in memory if the database takes them now, then close it. Rolls
        that still cannot be written (the disk still full) are lost with the process: an error in
        the log says how many."""
        with self._lock:
            if not self.flush():
                log.error("%d roll(s) kept in memory could not be written before closing (%s): they are lost",
                          len(self._pending), self.last_error)
            self._db.close()
