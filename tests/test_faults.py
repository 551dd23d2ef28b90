"""What a table lives through: a lost camera, black frames, a locked or full database,
a viewer that never reads, and the power lead kicked out (SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from pi_table.capture import Frame
from pi_table.outputs.events import Event, EventHub
from pi_table.service import Service, Settings
from pi_table.table import Table
from tests.conftest import REPO, FakeReader, d6_reading
from tests.test_capture import tray
from tests.test_service import free_port, get_json


class LiveSource:
    """A camera stand-in: yields the given frames, then fails (raises) if ``fail``."""

    live = True
    settled = False
    spec = "webcam:0"

    def __init__(self, images, fail: bool, on_end=None):
        self.images, self.fail, self.on_end = images, fail, on_end

    def __iter__(self):
        for i, image in enumerate(self.images):
            yield Frame(image=image, t=i / 10, index=i, name=f"cam#{i}")
        if self.fail:
            raise RuntimeError("camera unplugged")
        if self.on_end:
            self.on_end()

    def close(self):
        pass


def roll_frames(before, after):
    moving = [tray([(60 + 20 * k, 60 + 15 * k)]) for k in range(6)]
    return [before] * 5 + moving + [after] * 15


def test_camera_lost_and_back(tmp_path, mock_pins, monkeypatch):
    before, after = tray([(60, 60)]), tray([(200, 200), (100, 250)])
    opened = []
    plan = [LiveSource([before] * 5, fail=True), ValueError("no camera"), ValueError("no camera"),
            LiveSource(roll_frames(before, after), fail=False)]

    def fake_open(spec, interval_s=0):
        item = plan[min(len(opened), len(plan) - 1)]
        opened.append(spec)
        if isinstance(item, Exception):
            raise item
        return item

    monkeypatch.setattr("pi_table.service.open_source", fake_open)
    service = Service(Settings(state_dir=tmp_path, pin="1234", source="webcam:0"), reader=FakeReader(d6_reading(5)))
    service.retry_s = 0.01
    shown = []  # the status LED's statuses: while the camera is lost it says so (it stayed "ready")
    show_status = service.panel.show_status
    monkeypatch.setattr(service.panel, "show_status", lambda status: (shown.append(status), show_status(status)))
    q = service.hub.subscribe()
    service.run(max_rolls=1)
    assert "lost" in shown and shown[shown.index("lost") + 1] == "ready"
    assert shown[-1] == "ready"  # the roll read after the camera came back
    events = [q.get_nowait() for _ in range(q.qsize())]
    notices = [n for e in events if e.name == "state" for n in e.data["notices"]]
    assert any("camera lost" in n for n in notices)
    assert [e.name for e in events].count("roll") == 1
    assert len(opened) == 4 and "camera lost" not in " ".join(service.state().notices)
    service.close()


def test_black_and_corrupt_frames_are_skipped_with_a_notice(tmp_path, mock_pins, monkeypatch):
    black = np.zeros((240, 320, 3), np.uint8)
    frames = [tray([(60, 60)])] * 3 + [black] * 20 + [np.zeros((4, 4), np.uint8)]
    service = Service(Settings(state_dir=tmp_path, pin="1234", source="webcam:0"), reader=FakeReader(d6_reading(5)))
    monkeypatch.setattr("pi_table.service.open_source",
                        lambda spec, interval_s=0: LiveSource(frames, fail=False, on_end=service.stop_event.set))
    q = service.hub.subscribe()
    service.run()
    events = [q.get_nowait() for _ in range(q.qsize())]
    assert "roll" not in [e.name for e in events]
    notices = " ".join(n for e in events if e.name == "state" for n in e.data["notices"])
    assert "black" in notices and "corrupt frame" in notices
    service.close()


def test_locked_database_keeps_rolls_in_memory_and_writes_them_later(tmp_path):
    path = tmp_path / "t.db"
    table = Table(path, "charge", timeout_s=0.1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    roll = table.record(d6_reading(6))
    assert roll.id is None and roll.outcome == "full" and table.pending == 1
    state = table.state()
    assert state.last_roll.outcome == "full" and "not saved yet" in " ".join(state.notices)
    second = table.record(d6_reading(2))
    assert second.id is None and table.pending == 2
    blocker.execute("ROLLBACK")
    blocker.close()
    assert table.flush() and table.pending == 0
    assert [r.outcome for r in table.rolls(5)] == ["bad", "full"]
    assert table.tokens.momentum == 2 + 0  # full gains 2, bad gains 0 (seed 004)


def test_full_disk_keeps_rolls_in_memory(tmp_path):
    table = Table(tmp_path / "t.db", "charge", timeout_s=0.1)
    pages = table._db.execute("PRAGMA page_count").fetchone()[0]
    table._db.execute(f"PRAGMA max_page_count = {pages}")  # the database cannot grow: as a full disk
    rolls = [table.record(d6_reading(4, 4, 4, 4, 4, 4, 4, 4, name=f"r{i}.jpg")) for i in range(40)]
    assert table.pending > 0 and rolls[-1].id is None
    assert "full" in (table.last_error or "")
    table._db.execute("PRAGMA max_page_count = 1000000")
    assert table.flush()
    assert len(table.rolls(100)) == 40


def test_a_gm_change_waits_for_the_rolls_kept_in_memory_before_it(tmp_path):
    """Rolls kept in memory (a full disk) were written by the next record or flush that could, resolved,
    paid and attributed as the table was THEN: a GM change that went through meanwhile (a small settings
    write fits where a roll does not) re-attributed them, e.g. Ana's roll, assisted by Bo, went to Cy,
    assisted by Ana. Now a GM change first writes the rolls before it; while they cannot be written it
    is refused (sqlite3.OperationalError: HTTP 503 "try again"), and nothing changes."""
    table = Table(tmp_path / "t.db", "charge", {"assist": True}, timeout_s=0.1)
    ana, bo, cy = (table.add_player(name) for name in ("Ana", "Bo", "Cy"))
    table.set_roller(ana.id)
    table.set_assister(bo.id)
    pages = table._db.execute("PRAGMA page_count").fetchone()[0]
    table._db.execute(f"PRAGMA max_page_count = {pages}")  # the database cannot grow: as a full disk
    rolls = [table.record(d6_reading(5, 4, 4, 4, 4, 4, 4, 4, name=f"r{i}.jpg")) for i in range(40)]
    assert table.pending > 0 and rolls[-1].id is None
    with pytest.raises(sqlite3.OperationalError, match="kept in memory"):
        table.set_roller(cy.id)
    with pytest.raises(sqlite3.OperationalError, match="kept in memory"):
        table.add_tension(1)
    assert (table.roller, table.assister, table.tokens.tension) == (ana.id, bo.id, 0)
    table._db.execute("PRAGMA max_page_count = 1000000")
    table.set_roller(cy.id)  # the rolls before it are written first, as Ana's, assisted by Bo
    assert table.pending == 0 and table.roller == cy.id and len(table.rolls(100)) == 40
    assert {(r.player["name"], r.assist_by["name"]) for r in table.rolls(100)} == {("Ana", "Bo")}


def test_a_database_gone_corrupt_keeps_rolls_in_memory(tmp_path, monkeypatch):
    """SQLite's DatabaseError ("database disk image is malformed": the file damaged while serve runs)
    keeps the roll in memory as a locked or full database does; the roll was lost (only logged)."""
    table = Table(tmp_path / "t.db", "charge")
    insert = table._insert

    def corrupt(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(table, "_insert", corrupt)
    roll = table.record(d6_reading(6, 6, 3))
    assert roll.id is None and roll.outcome == "critical" and table.pending == 1
    assert "malformed" in table.last_error
    monkeypatch.setattr(table, "_insert", insert)
    assert table.flush() and table.pending == 0 and [r.outcome for r in table.rolls()] == ["critical"]


def test_a_viewer_that_never_reads_does_not_hold_up_others():
    hub = EventHub(max_streams=10, queue_size=8)
    stuck, reader = hub.subscribe(), hub.subscribe()
    got = []
    for i in range(50):
        hub.publish(Event("roll", {"id": i}))
        got.append(reader.get_nowait().data["id"])
    assert got == list(range(50))
    assert hub.streams == 1  # the stuck viewer was dropped


def test_sigkill_right_after_a_roll_loses_nothing(tmp_path):
    port = free_port()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "GPIOZERO_PIN_FACTORY": "mock", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "pi_table", "serve", "--host", "127.0.0.1", "--port", str(port), "--interval", "1", "--pin", "4321",
           "--source", f"folder:{REPO / 'pi_table' / 'demo'}"]  # the demo's own table is in memory
    base = f"http://127.0.0.1:{port}"

    def wait_for_roll(proc, after_id=0, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            try:
                state = get_json(base + "/api/state")
                if state["last_roll"] and state["last_roll"]["id"] > after_id:
                    return state
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("no roll")

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_roll(proc)
        req = urllib.request.Request(base + "/api/tokens/tension", data=json.dumps({"delta": 3}).encode(), method="POST",
                                     headers={"Authorization": "Bearer 4321", "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()
        state = wait_for_roll(proc, get_json(base + "/api/state")["last_roll"]["id"])
        rolls_before = get_json(base + "/api/rolls?limit=100")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                after = get_json(base + "/api/rolls?limit=100")
                state_after = get_json(base + "/api/state")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        ids_after = {r["id"] for r in after}
        assert {r["id"] for r in rolls_before} <= ids_after
        assert state_after["tokens"]["tension"] == state["tokens"]["tension"] == 3
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


SLOW_SERVE = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
import pi_table.vision
from pi_table.cli import main
from tests.conftest import FakeReader, d6_reading

class SlowReader(FakeReader):
    def read(self, image, name="", kinds=None):
        print("reading", flush=True)
        time.sleep(1.5)  # SIGTERM lands while the dice are being read
        return super().read(image, name, kinds)

pi_table.vision.DiceReader = lambda threads=1: SlowReader(d6_reading(6, 5))
status = main(["serve", "--source", "folder:" + sys.argv[1] + "/pi_table/demo", "--interval", "0.2", "--state-dir", sys.argv[2], "--host", "127.0.0.1",
               "--port", sys.argv[3], "--pin", "1234"])
print("stopped", status, flush=True)
'''


def test_sigterm_mid_roll_stops_cleanly_and_keeps_the_roll(tmp_path):
    """SIGTERM while a roll is being read: the read finishes, the roll is stored, exit 0."""
    env = {**os.environ, "GPIOZERO_PIN_FACTORY": "mock"}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SERVE, str(REPO), str(tmp_path), str(free_port())],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "reading"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()[-2000:]
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    table = Table(tmp_path / "table.db", "charge")
    rolls = table.rolls()
    assert len(rolls) == 1 and rolls[0].outcome == "full" and [d.face for d in rolls[0].reading.dice] == ["6", "5"]
    table.close()
