"""The whole way of a roll: a real photo in, a roll event out (HTTP), and the serve command."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from pi_table.outputs.events import Event
from pi_table.service import Service, Settings
from tests.conftest import REPO

LABELS = REPO / "tests" / "fixtures" / "demo_labels"


def label_faces(image_name: str) -> list[str]:
    lines = (LABELS / (Path(image_name).stem + ".txt")).read_text().split()
    return sorted(str(int(lines[i]) + 1) for i in range(0, len(lines), 5))


def test_frame_in_event_out_with_the_shipped_model(tmp_path, mock_pins):
    """Demo photo -> settle -> DiceReader (ONNX) -> rules -> table -> event stream + LEDs."""
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="charge", source="demo", interval_s=0))
    q = service.hub.subscribe()
    service.run(max_rolls=2)
    events: list[Event] = []
    while not q.empty():
        events.append(q.get_nowait())
    rolls = [e.data for e in events if e.name == "roll"]
    assert len(rolls) == 2
    for roll in rolls:
        faces = sorted(d["face"] for d in roll["dice"] if d["status"] == "ok")
        truth = label_faces(roll["source"])
        assert len(roll["dice"]) == len(truth)
        assert sum(f in truth for f in faces) >= len(truth) - 2  # a floor: at most two misses a photo
        assert roll["outcome"] in {"bad", "partial", "full", "critical", "reroll"}
        assert all(len(d["box"]) == 4 for d in roll["dice"])
    state = service.state().to_json()
    assert state["last_roll"]["id"] == rolls[-1]["id"]
    assert Path(service.table.roll(rolls[-1]["id"]).image).is_file()
    service.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def test_serve_command_end_to_end(tmp_path):
    """`pi-table serve` on the demo: /api/state has a read roll, /api/events delivers the next."""
    port = free_port()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "GPIOZERO_PIN_FACTORY": "mock", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "pi_table", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--interval", "1.5"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        state = None
        while time.monotonic() < deadline:
            try:
                state = get_json(base + "/api/state")
                if state["last_roll"]:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert state and state["last_roll"], "no roll read within 60 s"
        assert state["last_roll"]["dice"] and all("box" in d and "face" in d for d in state["last_roll"]["dice"])
        first_id = state["last_roll"]["id"]
        got: list[dict] = []

        def listen():
            with urllib.request.urlopen(base + "/api/events", timeout=20) as resp:
                event = None
                for raw in resp:
                    line = raw.decode().strip()
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "roll":
                        got.append(json.loads(line[6:]))
                        return

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        listener.join(30)
        assert got and got[0]["id"] > first_id and "outcome" in got[0]
        viewer = urllib.request.urlopen(base + "/api/events", timeout=20)  # a page still open at the stop
        assert viewer.readline().startswith(b"retry:")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert viewer.read() is not None  # its stream was ended, not cut
        viewer.close()
        assert "still running" not in proc.stderr.read()  # waitress waited for no stream's worker
        out = proc.stdout.read()
        assert "GM PIN: " in out  # a new PIN, printed once
        assert (tmp_path / "pi-table" / "gm_pin").is_file()
        assert not (tmp_path / "pi-table" / "table.db").exists()  # the demo plays on a table of its own, in memory
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_concurrent_token_changes_leave_the_leds_on_the_final_count(tmp_path, mock_pins):
    """Two GM taps served by two threads at once: the LEDs must end on the stored count.

    Found by the browser test in CI: without a lock the thread that read the older count
    could light the LEDs last.
    """
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="charge", source="demo", interval_s=0))
    shown = service.panel.show_tokens

    def slow_show(tension, omens):  # widen the window a race needs
        time.sleep(0.002)
        shown(tension, omens)

    service.panel.show_tokens = slow_show
    service.add_tension(1)  # every spend below has a token to spend
    for _ in range(5):
        start = threading.Barrier(4)

        def tap(delta):
            start.wait()
            service.add_tension(delta)

        threads = [threading.Thread(target=tap, args=(d,)) for d in (1, 1, 1, -1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        tension = service.state().tokens.tension
        assert service.panel.lit()["tension"] == min(tension, len(service.panel.tension_bar))
    service.close()


@pytest.mark.parametrize("text, needle", [
    ("port = 0", "config key 'port'"),
    ("interval_s = -1", "config key 'interval_s'"),
    ("interval_s = nan", "got nan"),
    ("max_viewers = true", "got True"),
    ("pins = 3", "table like [pins]"),
])
def test_config_values_are_checked_with_where_they_came_from(tmp_path, text, needle):
    path = tmp_path / "pi-table.toml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError, match=re.escape(needle)):
        Settings.from_file(path)


def test_settings_check_names_the_bad_value():
    with pytest.raises(ValueError, match="port must be a whole number 1..65535, got 70000"):
        Settings(port=70000).check()
    with pytest.raises(ValueError, match="interval_s must be a number of seconds >= 0, got inf"):
        Settings(interval_s=float("inf")).check()
    Settings().check()  # the defaults are valid


def test_serve_checks_the_system_on_an_existing_table_and_sets_one_typed_now(tmp_path, capsys, monkeypatch, mock_pins):
    """A bad --system or [params] is exit 2 whether the table is new or not (it was ignored once a
    table existed); --system typed on the command line sets the table's system now, undoably; a
    config's system is a new table's only (the GM page may have changed it since)."""
    import pi_table.outputs.web as web
    import pi_table.vision as vision
    from pi_table.cli import main
    from pi_table.table import Table
    from tests.conftest import FakeReader, d6_reading

    monkeypatch.setattr(web, "listen", lambda service, host, port: object())  # never bind a socket
    monkeypatch.setattr(web, "check_address", lambda host, port: None)
    monkeypatch.setattr(web, "serve_forever", lambda service, server, host: None)
    monkeypatch.setattr(vision, "DiceReader", lambda threads=1: FakeReader(d6_reading(3)))
    state = tmp_path / "state"
    base = ["serve", "--state-dir", str(state), "--source", f"folder:{REPO / 'pi_table' / 'demo'}", "--pin", "2468"]
    Table(state / "table.db", "charge").close()  # a table that exists, on charge

    def serve(*extra: str, config: str | None = None) -> int:
        argv = base + list(extra)
        if config is not None:
            (tmp_path / "c.toml").write_text(config)
            argv += ["--config", str(tmp_path / "c.toml")]
        try:
            return main(argv)
        except SystemExit as exc:
            return exc.code

    for extra, config, needle in ((("--system", "nope"), None, "nope"),
                                  ((), 'system = "contract"\n[params]\ndifficulty = 12\n', "12")):
        capsys.readouterr()
        assert serve(*extra, config=config) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err
    assert Table(state / "table.db").system == "charge"

    assert serve(config='system = "contract"\n') == 0  # a config's system: a new table's only
    assert Table(state / "table.db").system == "charge"
    assert serve("--system", "contract") == 0
    table = Table(state / "table.db")
    assert (table.system, table.params["difficulty"]) == ("contract", 6)
    assert table.undo() and table.system == "charge"


def test_a_live_tray_holding_the_last_rolls_dice_or_none_is_no_new_roll(tmp_path, mock_pins):
    """From a live camera, a settled tray with the very dice of the last roll in the same places
    (a lamp, a shadow or a hand that came and went, the camera bumped a few pixels) is not
    recorded again, and its effects are not added again; nor is an empty tray (the dice picked
    up). A die rolled again is a roll; the re-read button goes the same way."""
    from dataclasses import replace

    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.vision.dice import Reading
    from tests.conftest import FakeReader, d6_reading

    first = d6_reading(6, 6, 3)
    bumped = replace(first, dice=tuple(replace(d, box=(d.box[0] + 4, d.box[1] + 3, d.box[2] + 4, d.box[3] + 3))
                                       for d in first.dice))
    empty = Reading("t.jpg", 640, 640, 1.0, ())
    again = d6_reading(6, 2, 3)
    reader = FakeReader(first, bumped, empty, empty, again, again)
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="charge"), reader=reader)

    def settled(i: int) -> SettledRoll:
        frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=float(i), index=i, name=f"cam#{i}")
        return SettledRoll(frame, 0.8, 0.01)

    assert service.handle(settled(1), new_only=True).outcome == "critical"
    assert service.table.tokens.momentum == 3
    assert service.handle(settled(2), new_only=True) is None  # the same dice, the camera bumped
    assert service.handle(settled(3), new_only=True) is None  # picked up: an empty tray (read twice)
    assert reader.calls == 4
    assert service.handle(settled(4), new_only=True).outcome == "full"  # rolled again
    assert service.reread() is None  # the re-read button, the roll still in the tray: not recorded again
    assert len(service.table.rolls(10)) == 2 and service.table.tokens.momentum == 3 + 2
    service.close()


def test_a_new_check_thrown_while_a_luck_die_is_awaited_is_not_taken_for_it(tmp_path, mock_pins):
    """Seed 001 "Luck Dice": the luck die is one die rolled after the check. With the camera armed for
    Ana's luck die (d8), the next player threw his own check (d4, d8, d12): its d8, the one new d8, was
    taken for Ana's luck die (her failure a success, a luck point spent) and his check was never
    recorded. A tray with other new dice beside the one of the luck die's kind is no luck die: nothing
    recorded, still awaited, and the notice names the new dice."""
    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.vision.dice import Die, Reading
    from tests.conftest import FakeReader

    def die(kind: str, face: int, x: float) -> Die:
        return Die(kind, str(face), face, (x, 10.0, x + 40, 50.0), 0.99, "ok")

    def tray(*dice: Die) -> Reading:
        return Reading("t.jpg", 640, 640, 1.0, dice)

    three = (die("d6", 1, 10), die("d8", 4, 60), die("d10", 9, 110))
    reader = FakeReader(tray(*three), tray(die("d4", 3, 300), die("d8", 7, 360), die("d12", 10, 420)))
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="contingency-skill", params={"target": 8}),
                      reader=reader)
    ana = service.add_player("Ana", luck=2)
    service.set_roller(ana.id)

    def settled(i: int) -> SettledRoll:
        frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=float(i), index=i, name=f"cam#{i}")
        return SettledRoll(frame, 0.8, 0.01)

    first = service.handle(settled(1), new_only=True)
    service.arm_luck_die(first.id)
    assert service.handle(settled(2), new_only=True) is None
    assert service.table.roll(first.id).outcome == "failure" and service.table.player(ana.id).luck == 2
    assert service.state().luck_pending == {"roll": first.id, "kind": "d8"}
    assert any("roll only the luck die (d8)" in n and "d4 3, d8 7, d12 10" in n for n in service.state().notices)
    service.close()


def test_dice_of_the_last_tray_left_where_they_lay_when_some_are_picked_up_are_no_new_roll(tmp_path, mock_pins):
    """A skill check's luck die read from the tray beside the check's dice (seed 001 "Luck Dice"; README:
    the player may leave them there): the player then picked up the luck die, and the check's three dice,
    left where they lay, were recorded as a second check, its GM omen (a 1) given again. A settled tray
    whose every die lies where a die of the last recorded tray lay, read alike, is the last tray with some
    dice picked up: no new roll. A die rolled again among them still is one."""
    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.vision.dice import Die, Reading
    from tests.conftest import FakeReader

    def die(kind: str, face: int, x: float) -> Die:
        return Die(kind, str(face), face, (x, 10.0, x + 40, 50.0), 0.99, "ok")

    def tray(*dice: Die) -> Reading:
        return Reading("t.jpg", 640, 640, 1.0, dice)

    three = (die("d6", 1, 10), die("d8", 4, 60), die("d10", 9, 110))  # middle die d8 4; a 1: a GM omen
    reader = FakeReader(tray(*three), tray(*three, die("d8", 6, 300)), tray(*three), tray(*three[1:]),
                        tray(die("d6", 3, 200), *three[1:]))
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="contingency-skill", params={"target": 8}),
                      reader=reader)

    def settled(i: int) -> SettledRoll:
        frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=float(i), index=i, name=f"cam#{i}")
        return SettledRoll(frame, 0.8, 0.01)

    first = service.handle(settled(1), new_only=True)
    service.arm_luck_die(first.id)
    assert service.handle(settled(2), new_only=True).result["luck"] == ["d8", 6]
    assert service.handle(settled(3), new_only=True) is None  # the luck die picked up, the check's dice left
    assert service.handle(settled(4), new_only=True) is None  # and the d6 picked up too
    assert len(service.table.rolls(10)) == 1 and service.table.tokens.gm_omens == 1
    assert service.handle(settled(5), new_only=True).outcome == "failure"  # the d6 rolled again: a roll
    assert len(service.table.rolls(10)) == 2
    service.close()


def test_the_settle_time_comes_from_the_config(tmp_path, mock_pins):
    """settle_s in the config file sets how long a live tray must be still before it is read."""
    from pi_table.capture import settle

    (tmp_path / "c.toml").write_text("settle_s = 1.5\n")
    settings = Settings.from_file(tmp_path / "c.toml")
    assert settings.settle_s == 1.5
    made = []

    class Recording(settle.RollSettler):
        def __init__(self, **kw):
            super().__init__(**kw)
            made.append(self.settle_s)

    import pi_table.service as service_module

    original = service_module.RollSettler
    service_module.RollSettler = Recording
    try:
        service = Service(Settings(state_dir=tmp_path / "s", pin="1357", settle_s=1.5))
        service._read_rolls(iter(()), 0, None)
        service.close()
    finally:
        service_module.RollSettler = original
    assert made == [1.5]


def test_a_video_or_folder_that_ends_says_so(tmp_path, mock_pins, caplog):
    """The end of a video:PATH or folder:DIR is logged and shown on the pages (it ended silently:
    the pages just stopped getting rolls); serve stays up, its capture loop returns (no spinning)."""
    import cv2
    import numpy as np

    from tests.conftest import FakeReader, d6_reading

    video = tmp_path / "short.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 64))
    for _ in range(5):
        writer.write(np.full((64, 64, 3), 120, np.uint8))
    writer.release()
    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "a.png"), np.full((64, 64, 3), 120, np.uint8))
    for spec, rolls in ((f"video:{video}", 0), (f"folder:{photos}", 1)):
        service = Service(Settings(state_dir=tmp_path / spec[:5], pin="1357", interval_s=0), reader=FakeReader(d6_reading(3)))
        with caplog.at_level("INFO", logger="pi_table"):
            service.run(spec)
        said = [r.getMessage() for r in caplog.records if "has ended" in r.getMessage()]
        assert len(said) == 1 and spec in said[0] and f"({rolls} rolls read)" in said[0], said
        assert f"{spec} has ended: no more rolls are read" in service.state().notices
        service.close()
        caplog.clear()


@pytest.mark.parametrize("text, extra", [('pin = "12"\n', ()), ("", ("--pin", "12")), ('pin = "2468"\n', ("--pin", "98"))])
def test_a_bad_gm_pin_is_refused_before_the_state_directory_is_touched(tmp_path, monkeypatch, capsys, mock_pins,
                                                                      text, extra):
    """A GM PIN of the wrong length, from the config file or --pin, is exit 2 with one line (its
    length, never the PIN), and no state directory or table is made (they were, before the PIN
    was checked)."""
    from tests.conftest import serve_with_config

    assert serve_with_config(tmp_path, monkeypatch, text, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GM PIN must be 4..64 printable characters, got 2 characters" in err[0], err
    assert not (tmp_path / "state").exists()


def test_a_relative_xdg_state_home_is_ignored_as_the_xdg_spec_says(monkeypatch, tmp_path):
    """$XDG_STATE_HOME set to a relative path (or empty) is ignored: the state goes under
    ~/.local/state, not into whatever folder serve was started from."""
    from pi_table.service import default_state_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    for value in ("state", "", "./x"):
        monkeypatch.setenv("XDG_STATE_HOME", value)
        assert default_state_dir() == tmp_path / ".local" / "state" / "pi-table"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "abs"))
    assert default_state_dir() == tmp_path / "abs" / "pi-table"


def test_a_folder_given_as_the_config_file_says_it_is_a_folder(tmp_path, monkeypatch, capsys, mock_pins):
    """--config naming a folder: one line saying it is a folder (it said 'no such config file'), exit 2."""
    from pi_table.cli import main

    (tmp_path / "conf").mkdir()
    try:
        status = main(["serve", "--config", str(tmp_path / "conf"), "--state-dir", str(tmp_path / "state")])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "is a folder" in err[0] and str(tmp_path / "conf") in err[0], err
    assert not (tmp_path / "state").exists()


def test_the_camera_takes_an_armed_luck_die_from_the_next_tray_instead_of_a_new_roll(tmp_path, mock_pins):
    """Seed 001 "Luck Dice": after the result the player rolls one more die, of the result die's size.
    With the GM's camera armed for roll #N's luck die, the next settled tray is no new roll: the one new
    die of that kind (the roll's dice left where they lay, or picked up) is roll #N's luck die. Two new
    ones, or a cocked one: nothing recorded, still armed, a notice says what to do (a die of the roll the
    GM corrected still reads as it was read, and is no new die). The GM cancels it."""
    import numpy as np

    from pi_table.capture import Frame, SettledRoll
    from pi_table.vision.dice import Die, Reading
    from tests.conftest import FakeReader

    def die(kind: str, face: int, x: float, status: str = "ok") -> Die:
        ok = status == "ok"
        return Die(kind, str(face) if ok else "", face if ok else 0, (x, 10.0, x + 40, 50.0), 0.99, status)

    def tray(*dice: Die) -> Reading:
        return Reading("t.jpg", 640, 640, 1.0, dice)

    three = (die("d6", 1, 10), die("d8", 4, 60), die("d10", 9, 110))  # middle die d8 4; a 1: a GM omen
    reader = FakeReader(
        tray(*three),                                          # roll 1
        tray(*three, die("d8", 6, 300)),                       # its luck die beside its dice
        tray(*three, die("d8", 6, 300)),                       # (a hand passed over the tray)
        tray(*(die(d.kind, d.value, d.box[0] + 400) for d in three)),  # roll 2 (thrown again, landed elsewhere)
        tray(die("d8", 5, 110)),                               # its dice picked up: the luck die alone
        tray(*three),                                          # roll 3
        tray(*three, die("d8", 2, 300), die("d8", 7, 400)),    # two new d8: which one?
        tray(*three, die("d8", 2, 300, "cocked")),             # cocked
        tray(*three, die("d8", 2, 300, "cocked")),             # (the same tray again, after the cancel)
        tray(*three, die("d8", 2, 300, "cocked"), die("d8", 7, 500)),  # roll 3's luck die beside roll 4's dice
    )
    service = Service(Settings(state_dir=tmp_path, pin="1357", system="contingency-skill", params={"target": 8}),
                      reader=reader)
    ana = service.add_player("Ana", luck=3)
    service.set_roller(ana.id)
    q = service.hub.subscribe()

    def settled(i: int) -> SettledRoll:
        frame = Frame(image=np.full((64, 64, 3), 100, np.uint8), t=float(i), index=i, name=f"cam#{i}")
        return SettledRoll(frame, 0.8, 0.01)

    first = service.handle(settled(1), new_only=True)
    assert (first.outcome, first.result["result"]) == ("failure", 4) and service.table.tokens.gm_omens == 1
    state = service.arm_luck_die(first.id).to_json()
    assert state["luck_pending"] == {"roll": first.id, "kind": "d8"}
    assert any(f"luck die of roll #{first.id}" in n for n in state["notices"])
    while not q.empty():
        q.get_nowait()
    lucky = service.handle(settled(2), new_only=True)
    assert lucky.id == first.id and len(service.table.rolls(10)) == 1
    assert (lucky.outcome, lucky.result["result"], lucky.result["luck"]) == ("success", 10, ["d8", 6])
    assert service.table.player(ana.id).luck == 2 and service.state().luck_pending is None
    assert not any("luck die" in n for n in service.state().notices)
    events = [q.get_nowait() for _ in range(q.qsize())]
    assert any(e.name == "roll" and e.data["id"] == first.id and len(e.data["dice"]) == 4 for e in events)
    assert service.handle(settled(3), new_only=True) is None  # the same tray again: no new roll
    assert len(service.table.rolls(10)) == 1

    second = service.handle(settled(4), new_only=True)
    service.arm_luck_die(second.id)
    assert service.handle(settled(5), new_only=True).result["luck"] == ["d8", 5]
    assert len(service.table.rolls(10)) == 2 and service.table.player(ana.id).luck == 1

    third = service.handle(settled(6), new_only=True)
    service.correct_die(third.id, 1, "5")  # misread: the d8 that still lies there reads 4 (not a new die)
    service.arm_luck_die(third.id)
    assert service.handle(settled(7), new_only=True) is None
    assert service.state().luck_pending == {"roll": third.id, "kind": "d8"}
    assert any("2 new d8" in n and "roll only the luck die (d8)" in n for n in service.state().notices)
    assert service.handle(settled(8), new_only=True) is None
    assert any("cocked" in n for n in service.state().notices)
    assert len(service.table.roll(third.id).reading.dice) == 3 and len(service.table.rolls(10)) == 3
    assert service.table.player(ana.id).luck == 1
    assert service.cancel_luck_die(third.id).luck_pending is None
    assert not any("luck die" in n for n in service.state().notices)
    assert service.handle(settled(9), new_only=True).outcome == "reroll"  # a roll again (4 dice, one cocked)
    assert len(service.table.rolls(10)) == 4
    service.arm_luck_die(third.id)  # an older roll's luck die: the newest roll's dice lie in the tray
    assert service.handle(settled(10), new_only=True).result["luck"] == ["d8", 7]
    assert len(service.table.rolls(10)) == 4
    service.close()
