"""What months of ``serve`` on a Pi must not do: grow without bound (roll photos on the SD
card), lose rolls kept in memory when it stops, let photos take the room the roll history
needs, or burn the CPU watching a still tray."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from pi_table.capture import Frame
from pi_table.service import Service, Settings
from tests.conftest import FakeReader, d6_reading


def photo_frames(n: int, tmp_path: Path) -> list[Frame]:
    """``n`` settled frames (a photo source's), each a different small tray photo."""
    frames = []
    for i in range(n):
        image = np.full((48, 64, 3), 90, np.uint8)
        cv2.circle(image, (8 + 5 * i % 50, 20), 6, (250, 250, 250), -1)
        frames.append(Frame(image=image, t=float(i), index=i, name=str(tmp_path / f"p{i}.jpg"), settled=True))
    return frames


def record(service: Service, frames: list[Frame]) -> list:
    from pi_table.capture import SettledRoll

    return [service.handle(SettledRoll(f, 0.0, 1.0)) for f in frames]


def test_roll_photos_kept_are_capped_and_the_history_stays(tmp_path, mock_pins):
    """Each roll stored a JPEG in rolls/ for ever (a camera watching for months fills the SD card);
    now only the newest ``keep_photos`` rolls keep theirs: older photos are deleted, their rolls
    (dice, outcome, tokens) stay, with ``image_url`` null."""
    service = Service(Settings(state_dir=tmp_path / "s", pin="1357", keep_photos=3), reader=FakeReader(d6_reading(4)))
    rolls = record(service, photo_frames(10, tmp_path))
    photos = sorted((tmp_path / "s" / "rolls").iterdir())
    assert len(photos) == 3
    history = service.table.rolls(limit=20)
    assert len(history) == 10 and [r.id for r in history] == [r.id for r in reversed(rolls)]
    with_photo = [r for r in history if r.image]
    assert [r.id for r in with_photo] == [r.id for r in history[:3]]  # the newest three
    assert sorted(Path(r.image) for r in with_photo) == photos
    assert all(r.to_json()["image_url"] is None for r in history[3:])
    service.close()


def test_a_database_gone_corrupt_while_photos_are_let_go_of_costs_no_roll(tmp_path, mock_pins, monkeypatch):
    """forget_photos raising SQLite's DatabaseError (the file damaged while serve runs, as Table.record
    already survives) leaves the old photos for a later roll; the roll is still recorded and sent
    (OperationalError alone was caught: the roll was read, recorded, then lost to the pages)."""
    import sqlite3

    service = Service(Settings(state_dir=tmp_path / "s", pin="1357", keep_photos=1), reader=FakeReader(d6_reading(4)))

    def corrupt(keep):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(service.table, "forget_photos", corrupt)
    rolls = record(service, photo_frames(2, tmp_path))
    assert [r.id for r in rolls] == [1, 2] and len(list((tmp_path / "s" / "rolls").iterdir())) == 2
    service.close()


def test_keep_photos_zero_stores_none_and_the_key_is_checked(tmp_path, mock_pins):
    service = Service(Settings(state_dir=tmp_path / "s", pin="1357", keep_photos=0), reader=FakeReader(d6_reading(4)))
    rolls = record(service, photo_frames(3, tmp_path))
    assert list((tmp_path / "s" / "rolls").iterdir()) == [] and all(r.image is None for r in rolls)
    assert not any("photo" in n for n in service.state().notices)  # no photo by choice is no fault
    service.close()
    (tmp_path / "c.toml").write_text("keep_photos = -1\n")
    with pytest.raises(ValueError, match=re.escape("config key 'keep_photos'") + ".*got -1"):
        Settings.from_file(tmp_path / "c.toml")
    assert Settings().keep_photos == 5000


def test_rolls_kept_in_memory_are_written_when_the_table_closes(tmp_path, caplog):
    """Rolls kept in memory (database locked, disk full) were dropped by close(): serve stopped
    (SIGTERM, a restart) before the next roll flushed them lost them silently. Now close() writes
    them if it can, and says how many are lost if it cannot."""
    import sqlite3

    from pi_table.table import Table

    path = tmp_path / "t.db"
    table = Table(path, "charge", timeout_s=0.1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    table.record(d6_reading(6))
    table.record(d6_reading(2))
    assert table.pending == 2
    blocker.execute("ROLLBACK")
    table.close()
    again = Table(path, "charge")
    assert [r.outcome for r in again.rolls(5)] == ["bad", "full"]
    again.close()

    table = Table(path, "charge", timeout_s=0.1)
    blocker.execute("BEGIN EXCLUSIVE")
    table.record(d6_reading(5))
    with caplog.at_level("ERROR", logger="pi_table"):
        table.close()
    blocker.execute("ROLLBACK")
    assert any("1 roll(s) kept in memory could not be written" in r.getMessage() for r in caplog.records)


def test_photos_leave_the_last_free_space_to_the_roll_history(tmp_path, mock_pins, monkeypatch, caplog):
    """On a nearly full disk every roll still wrote its photo first, so the photos took the room
    the database needed: rolls piled up in memory (seen on a small tmpfs: space freed by hand was
    filled by new photos, the rolls still unsaved). Now a photo is not written while less than
    PHOTO_RESERVE_MB is free: the roll is saved without it, one notice and one log line say so,
    and photos come back once there is room."""
    import shutil

    free = {"bytes": 10 * 2**20}
    real = shutil.disk_usage

    def usage(path):
        total, used, _ = real(path)
        return type(real(path))(total, used, free["bytes"])

    monkeypatch.setattr(shutil, "disk_usage", usage)
    service = Service(Settings(state_dir=tmp_path / "s", pin="1357"), reader=FakeReader(d6_reading(4)))
    with caplog.at_level("WARNING", logger="pi_table"):
        rolls = record(service, photo_frames(3, tmp_path))
    assert all(r.id is not None and r.image is None for r in rolls)
    assert list((tmp_path / "s" / "rolls").iterdir()) == []
    assert any("roll photos are not being stored" in n and "MB free" in n for n in service.state().notices)
    assert len([r for r in caplog.records if "photo" in r.getMessage()]) == 1
    free["bytes"] = 10 * 2**30
    roll = record(service, photo_frames(1, tmp_path))[0]
    assert roll.image and Path(roll.image).is_file()
    assert not any("photo" in n for n in service.state().notices)
    service.close()


class ThirtyFps:
    """A live camera stand-in at 30 frames a second (``t`` = i / 30): the given images, then stop."""

    live = True
    settled = False
    spec = "webcam:0"

    def __init__(self, images, on_end):
        self.images, self.on_end = images, on_end

    def __iter__(self):
        for i, image in enumerate(self.images):
            yield Frame(image=image, t=i / 30, index=i, name=f"cam#{i}")
        self.on_end()

    def close(self):
        pass


def test_a_live_camera_is_watched_at_most_ten_times_a_second(tmp_path, mock_pins, monkeypatch):
    """Every frame of a 30 fps camera went through roll settling (resize, blur, compare): ~10% of
    a desktop core for a still tray with no one at the table, several times that on a Pi, for
    months. Frames closer than 1/WATCH_FPS s to the last one watched are now skipped: a still
    tray costs a third, and a throw is still one roll, read once the tray has been still."""
    import pi_table.service as service_module
    from tests.test_capture import tray

    pushed = []

    class Counting(service_module.RollSettler):
        def push(self, frame):
            pushed.append(frame.index)
            return super().push(frame)

    monkeypatch.setattr(service_module, "RollSettler", Counting)
    before, after = tray([(60, 60)]), tray([(200, 200), (100, 250)])
    moving = [tray([(60 + 20 * k, 60 + 15 * k)]) for k in range(9)]
    frames = [before] * 30 + moving + [after] * 60  # 1 s still, 0.3 s of a throw, 2 s still
    service = Service(Settings(state_dir=tmp_path / "s", pin="1357", source="webcam:0"),
                      reader=FakeReader(d6_reading(5)))
    monkeypatch.setattr(service_module, "open_source",
                        lambda spec, interval_s=0: ThirtyFps(frames, on_end=service.stop_event.set))
    service.run()
    assert len(pushed) <= len(frames) / 3 + 1
    assert service.rolls_read == 1
    roll = service.table.rolls(1)[0]
    assert int(roll.reading.image.split("#")[1]) >= 39 + 0.8 * 30  # read after settle_s of stillness
    service.close()


def test_settling_counts_a_pixel_changed_in_any_colour():
    """The settler's colour difference (the largest over B, G, R, computed with OpenCV now) counts
    the same pixels as the plain numpy reduction it replaced."""
    from pi_table.capture.settle import RollSettler

    rng = np.random.default_rng(3)
    settler = RollSettler()
    for _ in range(5):
        a = rng.integers(0, 256, (37, 53, 3), np.uint8)
        b = np.clip(a.astype(int) + rng.integers(-30, 31, a.shape), 0, 255).astype(np.uint8)
        want = np.count_nonzero(np.abs(a.astype(int) - b.astype(int)).max(axis=2) > settler.pixel_delta) / (37 * 53)
        assert settler._changed(a, b) == pytest.approx(want)
