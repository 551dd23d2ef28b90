"""The main job, ``pi-table serve``: capture -> vision -> rules -> table -> gpio + web.

:class:`Service` holds one of each stage and moves a roll along; the web app and the GPIO
buttons call its GM actions, and every change is pushed to viewers and LEDs.
"""

from __future__ import annotations

import errno
import hashlib
import math
import hmac
import logging
import os
import secrets
import shutil
import sqlite3
import threading
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pi_table.capture import RollSettler, SettledRoll, open_source
from pi_table.capture.sources import DEMO_DIR
from pi_table.outputs.events import Event, EventHub
from pi_table.outputs.gpio import Panel, PinConfig
from pi_table.rules import KINDS_BY_SYSTEM, validate_table_params  # which die kinds each system reads from the tray
from pi_table.table import Roll, StateConflict, Table, TableState
from pi_table.table.state import START_MOMENTUM
from pi_table.vision.dice import Reading
from pi_table.vision.reader import iou

log = logging.getLogger("pi_table")


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/pi-table``, default ``~/.local/state/pi-table`` (INTERFACES.md)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG spec says to ignore it
        base = str(Path.home() / ".local" / "state")
    return Path(base) / "pi-table"


@dataclass
class Settings:
    """Everything ``serve`` is configured with (config file, then command-line options).

    Attributes:
        source: source spec or None (Pi camera if present, else demo).
        host, port: where the web server listens.
        state_dir: database, stored roll photos, PIN hash.
        pin: GM PIN given by option/env/config; None = the stored one, or a new one printed once.
        system, params: the system for a new table.
        interval_s: seconds between replayed photos (``demo``, ``folder:``).
        settle_s: seconds a live camera's tray must be still before it is read (0.1..10; default
            0.8: :class:`pi_table.capture.RollSettler`).
        pins: GPIO wiring.
        max_viewers: live streams held at once (more get 503).
        threads: web server worker threads (each live stream holds one).
        keep_photos: roll photos kept in ``state_dir/rolls``: the newest rolls' (0..10_000_000;
            0: none is stored). An older roll loses its photo, never its place in the history
            (:meth:`pi_table.table.Table.forget_photos`). Default 5000: a camera's 1280x960 photo
            is about 100..250 KB, so at most about 0.5..1.2 GB of the SD card, and months of weekly
            game nights still have theirs; without a cap a camera that watches the tray for months
            (every change in it is a roll) fills the card.
    """

    source: str | None = None
    host: str = "0.0.0.0"
    port: int = 8080
    state_dir: Path = field(default_factory=default_state_dir)
    pin: str | None = None
    system: str = "charge"
    params: dict = field(default_factory=dict)
    interval_s: float = 6.0
    settle_s: float = 0.8
    pins: PinConfig = field(default_factory=PinConfig)
    max_viewers: int = 100
    threads: int = 0
    keep_photos: int = 5000

    def check(self) -> None:
        """Raise ValueError naming the first out-of-range setting (port, max_viewers, threads, keep_photos,
        interval_s, settle_s, the GM PIN's length), before anything is written to the state directory."""
        for key in (*_INTS, "interval_s", "settle_s", "pin"):
            _check_setting(key, getattr(self, key), key)

    @classmethod
    def from_file(cls, path: str | Path) -> "Settings":
        """Read a TOML config (keys as the attributes, ``[pins]`` and ``[params]`` tables).

        Raises:
            FileNotFoundError: no such file. ValueError: a folder, not TOML, or an unknown key.
        """
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"config file {path} is a folder (name the .toml file in it)")
        if not path.is_file():
            raise FileNotFoundError(f"no such config file: {path}")
        try:
            data = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"config file {path} is not valid TOML: {exc}") from None
        settings = cls()
        for key, value in data.items():
            if key not in cls.__dataclass_fields__:
                raise ValueError(f"unknown config key {key!r} in {path}")
            setattr(settings, key, _check_setting(key, value, f"config key {key!r} in {path}"))
        return settings


#: Free space (MiB) on the state directory's disk that roll photos leave to the roll history: below it
#: a roll is stored without its photo (a notice says so), so that photos never take the room the
#: database needs (each roll ~2 KB, its WAL up to ~4 MB before a checkpoint).
PHOTO_RESERVE_MB = 64

#: Most frames a second of a live camera that roll settling watches (a 30 fps camera's others are
#: skipped): plenty to see a throw start and the tray come to rest, and a third of the CPU a still
#: tray cost when every frame was resized, blurred and compared.
WATCH_FPS = 10

#: Rolls the demo's table (in memory) keeps: it replays its photos for as long as serve runs.
DEMO_ROLLS_KEPT = 500

_INTS = {"port": (1, 65535), "max_viewers": (1, 10_000), "threads": (0, 1_000), "keep_photos": (0, 10_000_000)}


def _check_setting(key: str, value, where: str) -> object:
    """One setting's value, type- and range-checked and converted (``interval_s`` to float,
    ``state_dir`` to a Path, ``pins`` to a PinConfig); ValueError "``where`` must be ..."
    naming the value (``where`` says where it came from: a config key, an option)."""
    if key == "pins":
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a table like [pins], got {value!r}")
        return PinConfig.from_dict(value)
    if key == "params":
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a table like [params], got {value!r}")
        return value
    if key in _INTS:
        lo, hi = _INTS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{where} must be a whole number {lo}..{hi}, got {value!r}")
        return value
    if key == "settle_s":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.1 <= value <= 10:
            raise ValueError(f"{where} must be 0.1..10 seconds, got {value!r}")
        return float(value)
    if key == "interval_s":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where} must be a number of seconds >= 0, got {value!r}")
        return float(value)
    if key == "state_dir":
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where} must be a folder path (text), got {value!r}")
        return Path(value).expanduser()
    if key == "pin":
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where} must be text (in quotes), got {value!r}")
        check_gm_pin(value)
        return value
    if key in ("source", "host", "system"):
        if not isinstance(value, str):
            raise ValueError(f"{where} must be text (in quotes), got {value!r}")
        return value
    return value


def check_gm_pin(pin: str | None) -> None:
    """ValueError unless ``pin`` is None (none given) or 4..64 printable characters (its length is
    named, never the PIN)."""
    if pin is not None and (not 4 <= len(pin) <= 64 or not pin.isprintable()):
        raise ValueError(f"GM PIN must be 4..64 printable characters, got {len(pin)} characters")


def _hash_pin(pin: str, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", pin.encode(), salt, 100_000)


class PinCheck:
    """The GM PIN, stored only as a salted PBKDF2 hash (file mode 0600), compared in constant time."""

    def __init__(self, state_dir: Path, pin: str | None):
        path = state_dir / "gm_pin"
        self.new_pin: str | None = None
        if pin is not None:
            check_gm_pin(pin)
            salt = secrets.token_bytes(16)
            self._salt, self._hash = salt, _hash_pin(pin, salt)
        elif path.is_file():
            salt_hex, hash_hex = path.read_text().split()
            self._salt, self._hash = bytes.fromhex(salt_hex), bytes.fromhex(hash_hex)
        else:
            self.new_pin = f"{secrets.randbelow(10**6):06d}"
            self._salt = secrets.token_bytes(16)
            self._hash = _hash_pin(self.new_pin, self._salt)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f"{self._salt.hex()} {self._hash.hex()}\n")

    def __call__(self, pin: str | None) -> bool:
        """True when ``pin`` is the GM PIN."""
        if not pin:
            return False
        return hmac.compare_digest(_hash_pin(pin, self._salt), self._hash)


class _Closed:
    """A source that yields nothing (the loop was stopped while a camera was lost)."""

    live = False
    settled = True

    def __iter__(self):
        return iter(())

    def close(self) -> None:
        pass


class Service:
    """One running table: the stages wired together.

    Args:
        settings: see :class:`Settings`.
        reader: a :class:`pi_table.vision.DiceReader` (loaded from ``models/`` if None).
        panel: a :class:`pi_table.outputs.gpio.Panel` (built from ``settings.pins`` if None).
    """

    def __init__(self, settings: Settings, reader=None, panel: Panel | None = None):
        self.settings = settings
        state_dir = Path(settings.state_dir)
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.demo = settings.source == "demo"
        if self.demo:
            # the bundled photos' rolls are not the GM's (a Pi whose camera is not found at boot plays the
            # demo): they go to a table in memory, so the table on disk keeps its tokens and history, and
            # nothing is written to the SD card all day; each roll's photo is the bundled one
            self.images_dir = DEMO_DIR
            self.table = Table(":memory:", settings.system, settings.params)
        else:
            self.images_dir = state_dir / "rolls"
            self.images_dir.mkdir(exist_ok=True, mode=0o700)
            self.table = Table(state_dir / "table.db", settings.system, settings.params)
        self.check_pin = PinCheck(state_dir, settings.pin)
        self.hub = EventHub(max_streams=settings.max_viewers)
        if reader is None:
            from pi_table.vision import DiceReader

            reader = DiceReader(threads=0)  # all cores; their threads sleep between runs (reader.py _session)
        self.reader = reader
        self.panel = panel if panel is not None else Panel(
            settings.pins, on_spend=self._button(lambda: self.add_tension(-1)),
            on_scene=self._button(self.new_scene), on_reread=self._button(self.reread))
        self.notices: dict[str, str] = {}
        if self.demo:  # the phones must not take the bundled photos for the tray's dice
            self.notices["source"] = ("demo: these rolls are the kit's bundled photos, not your tray, on a table of "
                                      "their own that is not saved (serve --source picks a camera)")
        self._lock = threading.RLock()
        self._show_lock = threading.Lock()  # read tokens and light LEDs as one step
        self._last_frame: SettledRoll | None = None
        self._latest_frame = None  # the last usable frame a live camera gave: the tray as it is now
        self._last_reading: Reading | None = None  # of the last roll recorded
        self.stop_event = threading.Event()
        self.rolls_read = 0
        self.retry_s = 2.0
        self._show()

    # -- the way of a roll ----------------------------------------------------------------
    def handle(self, settled: SettledRoll, new_only: bool = False) -> Roll | None:
        """Read a settled frame, resolve it, store it, and push it to LEDs and viewers.

        With ``new_only`` (a live camera's settled tray) a frame is not recorded when it holds
        the very dice of the last roll this way recorded, in the same places (a lamp, a shadow
        or a hand that came and went, the camera bumped), or only some of them there (the others
        picked up): :func:`new_dice` finds none; or when the tray is empty
        (picked up between throws); None then. The re-read button goes the same way
        (:meth:`reread`).

        The status LED blinks "reading" meanwhile; a frame that is no roll, or a read that raises,
        leaves it as it was before (a "re-roll needed" stays until a roll is recorded).

        While the GM awaits a roll's luck die from the camera (:meth:`arm_luck_die`), the frame is no
        new roll: the luck die is taken from it (:meth:`_luck_die_frame`), and roll #N as it is then
        is returned; None (and a notice saying what to do) when it holds no single readable one.
        """
        with self._lock:
            before = self.panel.status
            if before == "reading":  # the roll before this one is still being shown (not under the lock)
                before = "ready"
            self.panel.show_status("reading")
            try:
                system = self.table.system
                image = settled.frame.image_to_read()
                luck = self._luck_roll()
                if luck is not None:
                    return self._luck_die_frame(luck, image, settled, before)
                reading = self.reader.read(image, name=settled.frame.name, kinds=KINDS_BY_SYSTEM.get(system))
                if new_only and self._not_a_roll(image, settled, reading):
                    self._show(before)
                    return None
                self._last_frame = settled
                self._last_reading = reading
                roll = self.table.record(reading, image=self._store_image(image, settled.frame.name))
                if self.demo:
                    self.table.keep_newest_rolls(DEMO_ROLLS_KEPT)
                else:
                    self._forget_old_photos()
                self.rolls_read += 1
            except BaseException:
                self.panel.show_status(before)
                raise
        self._publish_roll(roll)
        self._changed(status="reroll" if roll.outcome == "reroll" else "ready")
        return roll

    def _luck_roll(self) -> Roll | None:
        """The roll whose luck die the camera's next reading is taken for (:meth:`arm_luck_die`), or
        None. One that can no longer take one (gone from the history, its luck die typed, undone into
        another state) is no longer awaited (logged): the frame is read as a roll again."""
        pending = self.table.luck_pending
        if pending is None:
            return None
        try:
            roll = self.table.roll(pending["roll"])
            self.table.luck_die_kind(roll)
            return roll
        except (KeyError, ValueError) as exc:
            log.info("no longer awaiting roll %s's luck die: %s", pending.get("roll"), exc)
            self.table.disarm_luck_die()
            self.notices.pop("luck", None)
            return None

    def _luck_die_frame(self, roll: Roll, image, settled: SettledRoll, before: str) -> Roll | None:
        """:meth:`handle` while ``roll``'s luck die is awaited (seed 001 "Luck Dice"): the dice new in
        the tray (not lying where one of the roll's dice lay, nor where the last recorded tray's dice
        lay as they were read: :func:`new_dice`) of the result die's kind. Exactly one, readable, and no other
        new die (a new roll's dice beside one of that kind are no luck die): added to the roll
        (:meth:`pi_table.table.Table.add_luck_die`), which is sent to the pages and returned; the
        player may have left the roll's dice in the tray or picked them up. Otherwise None: nothing
        recorded, still awaited, and a notice says what to do. Called under the service's lock."""
        kind = self.table.luck_die_kind(roll)
        reading = self.reader.read(image, name=settled.frame.name, kinds=KINDS_BY_SYSTEM.get(roll.system))
        old = roll.reading.dice
        if self._last_reading is not None:  # the tray as last recorded, as read: a die the GM corrected since
            old += self._last_reading.dice  # still reads as it was read, and a newer roll's dice are no luck die
        new = new_dice(reading, old)
        mine = [d for d in new if d.kind == kind]
        which = f"the luck die ({kind}) of roll #{roll.id}"
        if len(mine) == 1 and len(new) == 1 and mine[0].status == "ok":  # one die rolled alone: not a new roll's
            done = self.table.add_luck_die(roll.id, mine[0].face, kind)
            # the tray as it is now is no new roll: a hand or a shadow passing over it records nothing
            self._last_frame, self._last_reading = settled, reading
            self.notices.pop("luck", None)
            return self._corrected(done)
        if len(mine) == 1 and len(new) == 1:
            notice = f"{which} is {mine[0].status}: roll it again, or type its face on the GM page"
        elif len(mine) > 1:
            notice = f"{len(mine)} new {kind} in the tray: roll only {which}"
        else:  # none of its kind, or other new dice beside it (another roll thrown: cancel the wait, then re-read)
            others = ", ".join(f"{d.kind} {d.face or '?'}" for d in new)
            notice = f"roll only {which} into the tray" + (
                f" (new in it: {others}{'' if mine else f'; no {kind}'})" if others else "")
        self._show(before)
        self._notice("luck", notice)
        return None

    def _not_a_roll(self, image, settled: SettledRoll, reading: Reading) -> bool:
        """True (logged) for a settled tray that is no new roll: the last roll's dice as they lay,
        or some of them with the others picked up (a luck die taken out of the tray, the check's
        dice left), or no die at all (a read of every kind finds none either: dice of kinds the
        system does not read still make a roll, whose why says so)."""
        if self._last_reading is not None and reading.dice and not new_dice(reading, self._last_reading.dice):
            log.info("%s: dice of the last tray where they lay, all of them (light, shadow, a hand, the camera "
                     "moved) or some, the others picked up: not a new roll", settled.frame.name)
            return True
        if not reading.dice and not self.reader.read(image, name=settled.frame.name).dice:
            log.info("%s: the tray is empty: not a roll", settled.frame.name)
            return True
        return False

    def _publish_roll(self, roll: Roll) -> None:
        """Send a roll to the viewers; if its odds are still being computed (slow skill-check
        odds), send it again, as stored then, once they are ready."""
        future = roll.odds_future()
        data = roll.to_json()
        self.hub.publish(Event("roll", data))
        if future is None or data["odds"] is not None:
            return

        def again(done) -> None:
            if done.cancelled() or done.exception() is not None or done.result() is None:
                return
            try:
                fresh = self.table.roll(roll.id) if roll.id is not None else roll
                self.hub.publish(Event("roll", fresh.to_json()))
            except Exception:  # closed table, deleted roll: the next state brings it
                log.debug("could not re-send roll %s with its odds", roll.id, exc_info=True)

        future.add_done_callback(again)

    def _store_image(self, image, name: str = "") -> str | None:
        """Write the photo a roll was read from; its path, or None (and a notice) if it cannot be;
        None with ``keep_photos = 0``. A demo roll's photo is the bundled file it was read from
        (``name``), not a copy."""
        import cv2

        if self.demo and Path(name).parent == DEMO_DIR:
            return name
        if self.settings.keep_photos == 0:
            return None

        path = self.images_dir / f"{time.time_ns()}.jpg"
        try:
            free = shutil.disk_usage(self.images_dir).free
            if free < PHOTO_RESERVE_MB * 2**20:  # the roll history (table.db) keeps the last of the disk
                raise OSError(errno.ENOSPC, f"less than {PHOTO_RESERVE_MB} MB free on the disk: the roll history "
                                            "keeps it")
            ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])
            if not ok:
                raise OSError("JPEG encoding failed")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data.tobytes())
                f.flush()
                os.fsync(f.fileno())  # on the card before the roll that names it is committed (a power cut)
            if self.notices.pop("images", None) is not None:
                log.info("roll photos are stored again")
            return str(path)
        except OSError as exc:
            if not isinstance(exc, FileExistsError):
                path.unlink(missing_ok=True)
            notice = f"roll photos are not being stored ({exc.strerror or exc})"
            if self.notices.get("images") != notice:  # once, not once a roll for as long as the disk is full
                log.warning("roll photo not stored: %s", exc)
            self.notices["images"] = notice
            return None

    def _forget_old_photos(self) -> None:
        """Delete the photos of rolls older than the newest ``keep_photos`` that hold one (the rolls
        stay in the history). A database that cannot be written now leaves them for the next roll."""
        try:
            paths = self.table.forget_photos(self.settings.keep_photos)
        except sqlite3.DatabaseError as exc:  # as Table.record: locked, full, or gone corrupt
            log.info("old roll photos not let go of yet: %s", exc)
            return
        for path in map(Path, paths):
            if path.parent == self.images_dir:  # only the kit's own photos, never a file named elsewhere
                try:
                    path.unlink(missing_ok=True)
                except OSError as exc:
                    log.warning("old roll photo %s not deleted: %s", path, exc)

    def run(self, source_spec: str | None = None, max_rolls: int | None = None) -> None:
        """Capture loop: frames from the source, settled rolls handled, until stopped.

        Returns when a file or photo source ends, ``max_rolls`` rolls were read, or
        :meth:`stop` is called. A video or ``folder:`` that ends says so in the log and on the
        pages (the web pages stay up, and nothing more is read until ``serve`` is restarted).
        A live camera that fails or disappears is reopened every
        ``retry_s`` seconds while the page says "camera lost"; frames that are black or
        corrupt are skipped with a notice.

        Raises:
            ValueError, FileNotFoundError: a bad source spec (before anything runs).
        """
        spec = source_spec if source_spec is not None else self.settings.source
        source = open_source(spec, interval_s=self.settings.interval_s)
        spec = source.spec
        log.info("reading rolls from %s", spec)
        start = self.rolls_read
        while not self.stop_event.is_set():
            self._source = source
            ended = False
            try:
                if self._read_rolls(source, start, max_rolls):
                    return
                ended = True
            except Exception as exc:  # the camera went away mid-stream
                log.warning("source %s failed: %s", spec, exc)
            finally:
                source.close()
                self._latest_frame = None  # its camera is closed: a re-read falls back to the last roll's frame
            if not source.live or self.stop_event.is_set():
                if ended and not self.stop_event.is_set():
                    log.info("%s has ended (%d rolls read): no more rolls are read; the pages stay up until serve "
                             "is stopped", spec, self.rolls_read - start)
                    self._notice("ended", f"{spec} has ended: no more rolls are read")
                return
            source = self._reopen(spec)

    def _reopen(self, spec: str):
        self._notice("camera", "camera lost: waiting for it to come back")
        self._show("lost")  # the status LED: the GM at the table sees it too
        while not self.stop_event.wait(self.retry_s):
            try:
                source = open_source(spec, interval_s=self.settings.interval_s)
            except (ValueError, OSError) as exc:
                log.info("camera still lost: %s", exc)
                continue
            self._notice("camera", None)
            self._show("ready")
            log.info("camera back: %s", spec)
            return source
        return _Closed()

    def _read_rolls(self, source, start: int, max_rolls: int | None) -> bool:
        """Handle frames until the source ends; True when done for good (stop or max_rolls). A live
        camera's frames are watched at most :data:`WATCH_FPS` times a second (by their ``t``)."""
        settler = RollSettler(settle_s=self.settings.settle_s)
        watched = -math.inf  # the time of the last camera frame watched
        for frame in source:
            if self.stop_event.is_set():
                return True
            if not frame.settled:
                if 0 <= frame.t - watched < 0.85 / WATCH_FPS:
                    continue  # a camera's frames in between: a still tray costs a third
                watched = frame.t
            if not self._usable(frame):
                settler.reset()
                continue
            if not frame.settled:
                self._latest_frame = frame
            if self.table.pending:
                self.table.flush()
            settled = settler.push(frame)
            if settled is None:
                continue
            try:
                self.handle(settled, new_only=not frame.settled)  # a replayed photo is a roll by itself
            except Exception:  # a bad read must not stop the table
                log.exception("could not read frame %s", frame.name)
                self.panel.show_status("reroll")
            if max_rolls is not None and self.rolls_read - start >= max_rolls:
                return True
        return self.stop_event.is_set()

    def _usable(self, frame) -> bool:
        """False (with a notice) for a corrupt or black frame."""
        image = frame.image
        if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or image.size == 0:
            self._notice("frame", f"corrupt frame from the camera ({frame.name})")
            return False
        if float(image.max()) < 16:
            self._notice("frame", "the camera sees only black: lens cap, or no light on the tray?")
            return False
        self._notice("frame", None)
        return True

    def _notice(self, key: str, text: str | None) -> None:
        """Set or clear a notice shown on the pages; publishes state when it changes."""
        if self.notices.get(key) == text:
            return
        if text is None:
            self.notices.pop(key, None)
        else:
            self.notices[key] = text
        self._changed()

    def stop(self) -> None:
        """Stop the capture loop after the roll in hand (if any) is recorded."""
        self.stop_event.set()
        source = getattr(self, "_source", None)
        if source is not None and source.settled:
            source.close()  # wakes a photo source sleeping between rolls

    # -- state out --------------------------------------------------------------------------
    def state(self) -> TableState:
        """The table's state with the service's notices; while a luck die is awaited from the camera,
        a notice says whose and what to roll (or what went wrong with the last try)."""
        notices = dict(self.notices)
        luck = notices.pop("luck", None)
        state = self.table.state(tuple(notices.values()))
        pending = state.luck_pending
        if pending is not None:
            luck = luck or (f"waiting for the luck die of roll #{pending['roll']}: roll one {pending['kind']} "
                            "into the tray (the roll's dice may stay there)")
            state = replace(state, notices=(*state.notices, luck))
        return state

    def _show(self, status: str | None = None) -> None:
        # Two changes at once (two GM taps served by two threads) must not leave the LEDs on
        # the older count: reading the tokens and lighting them is one step under a lock.
        with self._show_lock:
            tokens = self.table.shown_tokens()  # momentum: the roller's, when one is picked
            omens = tokens.momentum if self.table.system == "charge" else tokens.gm_omens
            self.panel.show_tokens(tokens.tension, omens)
            if status is not None:
                self.panel.show_status(status)
            elif self.panel.status not in ("reroll", "reading", "lost"):  # a token change mid-read: still reading
                self.panel.show_status("ready")

    def _changed(self, status: str | None = None) -> None:
        self._show(status)
        self.hub.publish(Event("state", self.state().to_json()))

    def _button(self, action):
        """``action`` as a button's callback: it never raises into the pin factory's callback thread
        (which serves every button), and a failed action leaves the LEDs on the table as it is."""
        def pressed() -> None:
            try:
                action()
            except ValueError as exc:  # e.g. spending a token the GM does not have
                log.info("button: %s", exc)
            except Exception:  # a read that failed (the camera gone, the model), the database
                log.exception("button: %s failed", getattr(action, "__name__", "the action"))
                try:
                    self._show()  # not left blinking "reading"
                except Exception:
                    log.debug("button: LEDs not updated", exc_info=True)
        return pressed

    # -- GM actions ---------------------------------------------------------------------------
    def set_system(self, system: str, params: dict | None = None) -> TableState:
        """The system for the next rolls (Table.set_system: a luck die awaited is no longer)."""
        self.table.set_system(system, params)
        self.notices.pop("luck", None)
        self._changed()
        return self.state()

    def add_tension(self, delta: int) -> TableState:
        self.table.add_tension(delta)
        self._changed()
        return self.state()

    def add_omens(self, delta: int) -> TableState:
        """The GM gives or spends his omens (Table.add_omens)."""
        self.table.add_omens(delta)
        self._changed()
        return self.state()

    def choose_fail(self):
        """A player chooses to fail a skill check: the GM gains 1/2/3 omens (Table.choose_fail)."""
        chosen = self.table.choose_fail()
        self._changed()
        return chosen

    def new_scene(self) -> TableState:
        self.table.new_scene()
        self._changed()
        return self.state()

    def correct_die(self, roll_id: int, index: int, face: str, kind: str | None = None,
                    dice: int | None = None) -> Roll:
        """The GM types a die's face, and its kind if the reader took it for another
        (Table.correct_die); the changed roll is sent to the pages (a ``roll`` event, same id)."""
        return self._corrected(self.table.correct_die(roll_id, index, face, kind, dice))

    def remove_die(self, roll_id: int, index: int, dice: int | None = None) -> Roll:
        """The GM takes a false die out of a roll (Table.remove_die); the changed roll is sent to
        the pages as a corrected one is."""
        return self._corrected(self.table.remove_die(roll_id, index, dice))

    def set_roll_params(self, roll_id: int, params: dict) -> Roll:
        """The GM sets the parameters a roll is resolved under after the roll (Table.set_roll_params);
        the changed roll is sent to the pages as a corrected one is."""
        return self._corrected(self.table.set_roll_params(roll_id, params))

    def add_luck_die(self, roll_id: int, face: str, kind: str | None = None) -> Roll:
        """A luck die typed after the roll (Table.add_luck_die); the changed roll is sent to the pages
        as a corrected one is."""
        with self._lock:
            roll = self.table.add_luck_die(roll_id, face, kind)
            if self.table.luck_pending is None:
                self.notices.pop("luck", None)
        return self._corrected(roll)

    def arm_luck_die(self, roll_id: int, kind: str | None = None) -> TableState:
        """The camera's next reading is roll ``roll_id``'s luck die, not a new roll (Table.arm_luck_die;
        taken by :meth:`handle`). StateConflict for a roll that takes none."""
        with self._lock:
            self.table.arm_luck_die(roll_id, kind)
            self.notices.pop("luck", None)
        self._changed()
        return self.state()

    def cancel_luck_die(self, roll_id: int | None = None) -> TableState:
        """No luck die awaited from the camera any more (``roll_id``: only if it is that roll's;
        StateConflict when another roll's is awaited)."""
        with self._lock:
            pending = self.table.luck_pending
            if pending is not None and roll_id is not None and pending["roll"] != roll_id:
                raise StateConflict(f"the camera awaits roll {pending['roll']}'s luck die, not roll {roll_id}'s")
            self.table.disarm_luck_die()
            self.notices.pop("luck", None)
        self._changed()
        return self.state()

    def _corrected(self, roll: Roll) -> Roll:
        self._publish_roll(roll)
        self._changed(status="reroll" if roll.outcome == "reroll" else "ready")
        return roll

    def undo(self) -> bool:
        """Undo the last GM change; a corrected roll taken back is published again (a ``roll``
        event), so the pages' history shows it as it is now."""
        with self._lock:
            last = self.table.last_change()
            done = self.table.undo()
        if done and last is not None and last[1] is not None:
            try:
                self._publish_roll(self.table.roll(last[1]))
            except KeyError:
                pass
        self._changed()
        return done

    # players and the roller (seed 004 momentum, seed 001 luck): see Table.add_player etc.
    def add_player(self, name: str, momentum: int | None = None, luck: int | None = None):
        """Add a player; momentum defaults to 2 (seed 004), luck to 0. ValueError on bad input."""
        player = self.table.add_player(name, START_MOMENTUM if momentum is None else momentum, 0 if luck is None else luck)
        self._changed()
        return player

    def remove_player(self, player_id: int):
        """Remove a player (KeyError if there is none)."""
        player = self.table.remove_player(player_id)
        self._changed()
        return player

    def update_player(self, player_id: int, /, **changes):
        """Set a player's momentum/luck/name (KeyError: no player; ValueError: bad value)."""
        player = self.table.update_player(player_id, **changes)
        self._changed()
        return player

    def new_session(self) -> TableState:
        """A new session: every player's momentum back to 2 (Table.new_session, seed 004)."""
        self.table.new_session()
        self._changed()
        return self.state()

    def set_roller(self, player_id: int | None) -> TableState:
        """Pick whose roll the next one is (None: no one). ValueError for an unknown id."""
        self.table.set_roller(player_id)
        self._changed()
        return self.state()

    def set_assister(self, player_id: int | None) -> TableState:
        """Pick the teammate who pays a Charge assist's 1 momentum (None: no one; seed 004
        "Assist"). ValueError for an unknown id or the roller."""
        self.table.set_assister(player_id)
        self._changed()
        return self.state()

    def reread(self) -> Roll | None:
        """The re-read button: read the tray as it is now (a live camera's latest frame; the Pi
        camera takes a fresh full-resolution one) and record it as a roll, unless it holds the last
        roll's dice where they lay or no die (:meth:`handle` with ``new_only``): a press with the
        last roll still in the tray does not record it, and add its effects, a second time. A photo
        source's tray is its last photo. None when nothing new was recorded."""
        frame = self._latest_frame
        if frame is None:
            if self._last_frame is None:
                return None
            frame = self._last_frame.frame
        return self.handle(SettledRoll(frame, 0.0, 0.0), new_only=True)

    def close(self) -> None:
        self.stop()
        self.panel.close()
        self.table.close()


def new_dice(reading: Reading, before, min_iou: float = 0.3) -> tuple:
    """The dice of ``reading`` that do not lie where one of the dice ``before`` lay, read alike
    (kind, face, status and box IoU >= ``min_iou``: a camera bumped by a few pixels keeps a
    45-pixel die's IoU above 0.6; a die rolled again does not land where it lay): dice thrown into
    the tray since (a luck die rolled beside the roll's dice, or alone). None: the tray holds the
    dice as they lay, or some of them."""
    return tuple(d for d in reading.dice
                 if not any((o.kind, o.face, o.status) == (d.kind, d.face, d.status) and iou(o.box, d.box) >= min_iou
                            for o in before))


# -- the serve command ---------------------------------------------------------------------------
def register(sub) -> None:
    """Add ``serve`` to the ``pi-table`` parser."""
    p = sub.add_parser("serve", help="run the table: camera -> dice -> rules -> LEDs + web page")
    p.add_argument("--source", help="picamera, webcam:N, video:PATH, folder:DIR or demo (default: Pi camera if present, else demo)")
    p.add_argument("--host", help="address to listen on (default 0.0.0.0: every phone on the LAN)")
    p.add_argument("--port", type=int, help="port (default 8080)")
    p.add_argument("--config", help="TOML config file")
    p.add_argument("--pin", default=os.environ.get("PI_TABLE_PIN"), help="GM PIN (or PI_TABLE_PIN); default: stored one, or a new one printed once")
    p.add_argument("--state-dir", help="where the table's database and photos live (default $XDG_STATE_HOME/pi-table)")
    p.add_argument("--system", help="play this system now (charge, contingency-action, ...); the config's system "
                   "and [params] set a new table's, and the GM page changes it")
    p.add_argument("--interval", type=float, help="seconds between replayed photos for demo/folder sources (default 6)")
    p.set_defaults(func=_serve)


def _serve(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings.from_file(args.config) if args.config else Settings()
    for key in ("source", "host", "port", "pin", "system"):
        if getattr(args, key) is not None:
            setattr(settings, key, getattr(args, key))
    if args.state_dir:
        settings.state_dir = Path(args.state_dir).expanduser()
    if args.interval is not None:
        settings.interval_s = _check_setting("interval_s", args.interval, "--interval")
    settings.check()
    settings.params = validate_table_params(settings.system, settings.params)  # a bad system is exit 2, new table or not
    from pi_table.outputs.web import check_address, install_stop_handlers, listen, serve_forever

    check_address(settings.host, int(settings.port))  # a busy port: one line, before pins, camera and PIN
    source = open_source(settings.source, interval_s=settings.interval_s)  # fail fast on a bad spec
    settings.source = source.spec
    source.close()
    try:
        service = Service(settings)
    except (OSError, sqlite3.Error) as exc:  # a read-only or full state folder, a database that is not the table's
        from pi_table.cli import UsageError

        if isinstance(exc, OSError) and exc.filename:
            raise UsageError(f"cannot start: {exc.filename}: {exc.strerror}") from None
        raise UsageError(str(exc) if isinstance(exc, sqlite3.Error) else f"cannot start: {exc}") from None
    table = service.table
    if args.system is not None and (table.system, table.params) != (settings.system, settings.params):
        # typed now, so meant now: set as from the GM page (undoable there); a config's system is a new table's
        was = table.system
        table.set_system(settings.system, settings.params)
        log.info("system set to %s by --system (it was %s; the GM page changes it, and its undo takes this back)",
                 settings.system, was)
    if service.check_pin.new_pin:
        print(f"GM PIN: {service.check_pin.new_pin}  (printed once; stored hashed in {settings.state_dir})", flush=True)
    capture = threading.Thread(target=service.run, name="capture", daemon=True)
    try:
        server = listen(service, settings.host, int(settings.port))  # a busy port stops here, before any roll
        install_stop_handlers(service)  # before the first roll: SIGTERM mid-roll is a clean stop
        capture.start()
        serve_forever(service, server, settings.host)
    finally:
        service.stop()
        if capture.is_alive():
            capture.join(timeout=15)  # let a roll in hand be read and recorded (SIGTERM mid-roll)
        service.close()
    return 0
