"""Capture stage: sources and roll settling."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from pi_table.capture import Frame, RollSettler, open_source
from pi_table.capture.sources import DEMO_DIR, FolderSource


def tray(dice: list[tuple[int, int]], size: int = 320) -> np.ndarray:
    """A grey tray with white squares (dice) at the given centres."""
    image = np.full((size, size, 3), 120, np.uint8)
    for x, y in dice:
        cv2.rectangle(image, (x - 12, y - 12), (x + 12, y + 12), (240, 240, 240), -1)
        cv2.circle(image, (x, y), 3, (20, 20, 20), -1)
    return image


def feed(settler: RollSettler, images: list[np.ndarray], fps: float = 10.0):
    rolls = []
    for i, image in enumerate(images):
        r = settler.push(Frame(image=image, t=i / fps, index=i, name=f"f{i}"))
        if r is not None:
            rolls.append((i, r))
    return rolls


def test_one_roll_per_throw_and_none_while_moving():
    before, after = tray([(60, 60), (200, 90)]), tray([(100, 220), (250, 250), (150, 150)])
    moving = [tray([(60 + 15 * k, 60 + 12 * k), (200 - 10 * k, 90 + 14 * k)]) for k in range(10)]
    frames = [before] * 10 + moving + [after] * 20
    rolls = feed(RollSettler(settle_s=0.8), frames)
    assert len(rolls) == 1
    index, roll = rolls[0]
    assert index >= 10 + len(moving) + 8  # only after 0.8 s of stillness
    assert np.array_equal(roll.frame.image, after)
    assert roll.change > 0


def test_motion_that_leaves_the_tray_as_it_was_is_no_roll():
    still = tray([(60, 60)])
    hand = still.copy()
    cv2.rectangle(hand, (100, 100), (220, 220), (90, 130, 200), -1)
    rolls = feed(RollSettler(settle_s=0.5), [still] * 10 + [hand] * 3 + [still] * 15)
    assert rolls == []


def test_a_hand_resting_in_the_tray_is_never_read():
    still = tray([(60, 60)])
    hand = still.copy()
    cv2.rectangle(hand, (0, 80), (320, 320), (90, 130, 200), -1)  # covers most of the tray
    shaking = [tray([(60 + 5 * k, 60)]) for k in range(5)]
    rolls = feed(RollSettler(settle_s=0.5), [still] * 5 + shaking + [hand] * 30)
    assert rolls == []


def test_a_lamp_switched_on_is_no_roll_and_the_next_throw_under_it_is_one():
    """The still tray is compared with the last settled one scaled to its brightness: a lamp (the
    whole tray 15% brighter) once left the tray "changed" beyond max_change for good, and no later
    throw was recorded; a smaller step recorded the same dice again."""
    def lamp(image, gain):  # the tray under gain times the light (a tray of dice short of white: no clipping)
        return cv2.convertScaleAbs(cv2.convertScaleAbs(image, alpha=0.8), alpha=gain)

    before = tray([(60, 60), (200, 90)])
    after = tray([(100, 220), (250, 250)])
    moving = [lamp(tray([(60 + 15 * k, 60 + 12 * k)]), 1.15) for k in range(8)]
    drift = [lamp(after, 1.15 + 0.002 * k) for k in range(40)]  # then the exposure creeps up
    frames = [lamp(before, 1.0)] * 10 + [lamp(before, 1.15)] * 20 + moving + [lamp(after, 1.15)] * 20 + drift
    rolls = feed(RollSettler(settle_s=0.5), frames)
    assert len(rolls) == 1 and 30 + 8 + 5 <= rolls[0][0] < 30 + 8 + 20, [(i, r.change) for i, r in rolls]  # the throw, once


def test_a_scene_that_stays_changed_is_taken_after_give_up_s():
    """Something big that stays still (the tray moved, a box put on it) is not waited out for ever."""
    before, moved = tray([(60, 60)]), tray([(60, 60)])
    cv2.rectangle(moved, (0, 100), (320, 320), (40, 60, 90), -1)
    rolls = feed(RollSettler(settle_s=0.5, give_up_s=2.0), [before] * 5 + [moved] * 40)
    assert len(rolls) == 1 and rolls[0][0] >= 5 + 25  # after settle_s + give_up_s of stillness


def test_settled_sources_skip_settling():
    image = tray([(60, 60)])
    roll = RollSettler().push(Frame(image=image, t=0.0, index=0, name="x", settled=True))
    assert roll is not None and roll.frame.name == "x"


def test_settler_rejects_bad_frames_and_settings():
    with pytest.raises(ValueError, match="motion_threshold"):
        RollSettler(motion_threshold=2)
    with pytest.raises(ValueError, match="HxWx3"):
        RollSettler().push(Frame(image=np.zeros((10, 10), np.uint8), t=0, index=0, name="g"))


def test_demo_source_replays_bundled_photos():
    source = open_source("demo", interval_s=0)
    assert source.settled and source.spec == "demo"
    frames = []
    for frame in source:
        frames.append(frame)
        if len(frames) == len(source.paths) + 1:
            break
    source.close()
    assert frames[0].image.ndim == 3 and frames[0].image.dtype == np.uint8
    assert frames[-1].name == frames[0].name  # demo loops
    assert (DEMO_DIR / "LICENSE").is_file()


def test_folder_source_and_bad_specs(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), tray([(50, 50)]))
    (tmp_path / "notes.txt").write_text("not an image")
    frames = list(FolderSource(tmp_path))
    assert [f.name.endswith("a.png") for f in frames] == [True]
    with pytest.raises(FileNotFoundError, match="no such folder"):
        open_source(f"folder:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="unknown source 'floppy:1'"):
        open_source("floppy:1")
    with pytest.raises(ValueError, match="webcam:N"):
        open_source("webcam:x")
    with pytest.raises(FileNotFoundError, match="no such video"):
        open_source(f"video:{tmp_path / 'none.avi'}")
    with pytest.raises(ValueError, match="picamera2"):
        open_source("picamera")


def test_folder_source_skips_an_image_too_large_to_decode(tmp_path, caplog):
    """serve --source folder:DIR replays the folder once: a picture whose header claims more
    pixels than OpenCV decodes (2^30) is skipped with one line naming it, like any unreadable
    file; it ended the replay with a cv2.error, and every photo after it was lost."""
    from tests.test_cli import huge_png

    cv2.imwrite(str(tmp_path / "a.png"), tray([(50, 50)]))
    huge_png(tmp_path / "b.png")
    cv2.imwrite(str(tmp_path / "c.png"), tray([(80, 80)]))
    with caplog.at_level("WARNING", logger="pi_table.capture.sources"):
        frames = list(FolderSource(tmp_path))
    assert [Path(f.name).name for f in frames] == ["a.png", "c.png"]
    assert any("b.png" in r.getMessage() and "\n" not in r.getMessage() for r in caplog.records)


def test_video_source_times_frames_by_the_file(tmp_path):
    path = tmp_path / "roll.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (320, 320))
    for k in range(5):
        writer.write(tray([(60 + k, 60)]))
    writer.release()
    frames = list(open_source(f"video:{path}"))
    assert len(frames) == 5
    assert frames[3].t == pytest.approx(0.3)


def test_picamera_source_watches_lores_and_reads_main(monkeypatch):
    """picamera2 is imported lazily; a stand-in module plays the camera here."""
    import sys
    import types

    class FakePicamera2:
        def __init__(self):
            self.started = False

        @staticmethod
        def global_camera_info():
            return [{"Model": "imx708"}]

        def create_video_configuration(self, main, lores):
            return {"main": main, "lores": lores}

        def configure(self, config):
            self.config = config

        def start(self):
            self.started = True

        def capture_array(self, stream):
            w, h = self.config[stream]["size"]
            if stream == "lores":
                return np.full((h * 3 // 2, w), 100, np.uint8)  # YUV420 planar
            return np.full((h, w, 3), 50, np.uint8)

        def stop(self):
            self.started = False

        def close(self):
            pass

    monkeypatch.setitem(sys.modules, "picamera2", types.SimpleNamespace(Picamera2=FakePicamera2))
    source = open_source(None)  # no --source: the Pi camera where present
    assert source.spec == "picamera"
    frame = next(iter(source))
    assert frame.image.shape == (240, 320, 3)
    assert frame.image_to_read().shape == (960, 1280, 3)
    source.close()


@pytest.mark.parametrize("cameras, why", [(None, "not installed"), ([], "finds no camera"), ("boom", "could not list cameras")])
def test_no_source_on_a_machine_without_a_camera_says_why_it_plays_the_demo(monkeypatch, caplog, cameras, why):
    """No --source: the Pi camera where present, else the demo, and the log says which and why
    (a loose ribbon at boot must not look like a working camera)."""
    import sys
    import types

    def info():
        if cameras == "boom":
            raise RuntimeError("libcamera: no pipeline handler")
        return cameras

    module = None if cameras is None else types.SimpleNamespace(Picamera2=types.SimpleNamespace(global_camera_info=info))
    monkeypatch.setitem(sys.modules, "picamera2", module)  # None: import fails
    with caplog.at_level("WARNING"):
        source = open_source(None)
    assert source.spec == "demo"
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "no Pi camera" in said and why in said and "demo" in said, said
    source.close()


def test_the_demo_source_is_named_on_the_pages(tmp_path, mock_pins):
    from pi_table.service import Service, Settings
    from tests.conftest import FakeReader, d6_reading

    demo = Service(Settings(state_dir=tmp_path / "a", pin="1357", source="demo"), reader=FakeReader(d6_reading(3)))
    assert any(n.startswith("demo: ") for n in demo.state().notices)
    webcam = Service(Settings(state_dir=tmp_path / "b", pin="1357", source="webcam:0"), reader=FakeReader(d6_reading(3)))
    assert not any(n.startswith("demo") for n in webcam.state().notices)
    demo.close(), webcam.close()


def test_the_demo_plays_on_a_table_of_its_own_and_writes_no_photos(tmp_path, mock_pins):
    """The demo's rolls (the bundled photos: also what a Pi plays when its camera is not found at
    boot) go to a table in memory: the GM's table on disk keeps its tokens and history, no roll
    photo is written, and the demo's table keeps only its newest DEMO_ROLLS_KEPT rolls. Before,
    they were recorded into table.db (charge 6,6,3 added momentum every 6 s) and each photo was
    copied into the state directory, without end."""
    from pi_table import service as service_module
    from pi_table.capture.sources import DEMO_DIR
    from pi_table.service import Service, Settings
    from pi_table.table import Table
    from tests.conftest import FakeReader, d6_reading

    state = tmp_path / "state"
    table = Table(state / "table.db", "charge")
    table.add_tension(2)
    table.close()
    demo = Service(Settings(state_dir=state, pin="1357", source="demo", system="charge", interval_s=0),
                   reader=FakeReader(d6_reading(6, 6, 3)))
    demo.run("demo", max_rolls=3)
    rolls = demo.table.rolls()
    assert len(rolls) == 3 and rolls[0].outcome == "critical"
    assert all(Path(r.image).parent == DEMO_DIR for r in rolls)  # the bundled photo, served as it is
    assert not (state / "rolls").exists() or not any((state / "rolls").iterdir())
    demo.close()
    table = Table(state / "table.db")
    assert table.rolls() == [] and table.tokens.tension == 2 and table.tokens.momentum == 0
    table.close()

    small = Service(Settings(state_dir=tmp_path / "s", pin="1357", source="demo", interval_s=0),
                    reader=FakeReader(d6_reading(4)))
    service_module.DEMO_ROLLS_KEPT = 2
    try:
        small.run("demo", max_rolls=5)
    finally:
        service_module.DEMO_ROLLS_KEPT = 500
    assert [r.id for r in small.table.rolls()] == [5, 4]
    small.close()


def _exif_rotated_jpeg(image: np.ndarray, orientation: int = 6) -> bytes:
    """``image`` as a JPEG carrying an EXIF Orientation tag (6: to be turned 90 degrees clockwise),
    as a phone held upright stores its photo sideways."""
    jpeg = cv2.imencode(".jpg", image)[1].tobytes()
    ifd = b"\x00\x01" + b"\x01\x12\x00\x03\x00\x00\x00\x01" + orientation.to_bytes(2, "big") + b"\x00\x00" + b"\x00" * 4
    app1 = b"Exif\x00\x00" + b"MM\x00\x2a\x00\x00\x00\x08" + ifd
    return jpeg[:2] + b"\xff\xe1" + (len(app1) + 2).to_bytes(2, "big") + app1 + jpeg[2:]


def test_folder_source_decodes_as_read_does_and_skips_a_broken_file(tmp_path, caplog):
    """folder: decodes with load_image, as `pi-table read` does: a 16-bit photo of 12-bit camera data
    is scaled by its brightest value (cv2.imread left it 16 times too dark), a phone photo stored
    sideways is turned upright, a JPEG cut short is read as far as it goes; a file that is no image
    is skipped with one warning naming it and the replay goes on."""
    from pi_table.vision.reader import load_image

    image = tray([(60, 60)], size=200)[:, :150].copy()  # 200 high, 150 wide
    cv2.imwrite(str(tmp_path / "a_12bit.png"), image.astype(np.uint16) * 16)
    (tmp_path / "b_phone.JPG").write_bytes(_exif_rotated_jpeg(image))
    (tmp_path / "c_broken.jpg").write_bytes(b"not a JPEG at all")
    whole = cv2.imencode(".jpg", image)[1].tobytes()
    (tmp_path / "d_cut.jpeg").write_bytes(whole[: len(whole) * 2 // 3])
    cv2.imwrite(str(tmp_path / "e_scan.TIF"), image)
    with caplog.at_level("WARNING", logger="pi_table.capture.sources"):
        frames = list(FolderSource(tmp_path))
    assert [Path(f.name).name for f in frames] == ["a_12bit.png", "b_phone.JPG", "d_cut.jpeg", "e_scan.TIF"]
    for frame in frames:
        assert np.array_equal(frame.image, load_image(frame.name)), frame.name
    assert frames[0].image.max() == 255 and np.median(frames[0].image) == 128  # not 15 and 7: dark
    assert frames[1].image.shape[:2] == (150, 200)  # upright: turned by its EXIF orientation
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "c_broken.jpg" in warnings[0], warnings


def test_folder_source_reads_a_file_name_that_is_not_utf8(tmp_path):
    """A file name OpenCV cannot take (bytes that are not UTF-8, from an old camera card) is read,
    not a crash: cv2.imread died of a segmentation fault on it (so this runs in a child process)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    try:
        with open(os.fsencode(tmp_path) + b"/caf\xe9.png", "wb") as f:
            f.write(cv2.imencode(".png", tray([(50, 50)]))[1].tobytes())
    except OSError:
        pytest.skip("this file system takes only UTF-8 names")
    code = ("import sys; from pi_table.capture.sources import FolderSource; "
            "print(len(list(FolderSource(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "1", (done.returncode, done.stdout, done.stderr)


def test_a_folder_spec_that_is_no_folder_of_images_says_what_it_is(tmp_path):
    (tmp_path / "photo.jpg").write_bytes(b"x")
    with pytest.raises(ValueError, match="not a folder: .*photo.jpg"):
        open_source(f"folder:{tmp_path / 'photo.jpg'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no images in folder: .*empty$"):
        open_source(f"folder:{tmp_path / 'empty'}")
    (tmp_path / "rolls" / "monday").mkdir(parents=True)
    (tmp_path / "rolls" / "dir.jpg").mkdir()  # a folder named like a photo is no photo
    cv2.imwrite(str(tmp_path / "rolls" / "monday" / "a.png"), tray([(50, 50)]))
    with pytest.raises(ValueError, match="no images in folder: .*rolls .*subfolders are not searched"):
        open_source(f"folder:{tmp_path / 'rolls'}")


def test_opencv_is_quieted_by_one_helper_for_images_and_cameras(monkeypatch, capfd):
    """load_image and the webcam/video source hold OpenCV's WARN lines back through one helper
    (quiet_opencv; they had two near-twin copies), which puts the log level back after; the error
    of a camera that is not there is our one line, without OpenCV's own."""
    import contextlib

    from pi_table.vision import reader

    level = cv2.utils.logging.getLogLevel()
    used = []
    real = reader.quiet_opencv

    @contextlib.contextmanager
    def counting():
        used.append(1)
        with real():
            yield

    monkeypatch.setattr(reader, "quiet_opencv", counting)
    with pytest.raises(ValueError, match="cannot open webcam 63"):
        open_source("webcam:63")
    assert used == [1]
    reader.load_image(DEMO_DIR / sorted(p.name for p in DEMO_DIR.glob("*.jpg"))[0])
    assert used == [1, 1]
    assert cv2.utils.logging.getLogLevel() == level
    assert "WARN" not in capfd.readouterr().err


def test_a_video_whose_file_name_is_not_utf8_is_one_error_not_a_crash(tmp_path):
    """video:PATH whose name holds bytes that are not UTF-8: one error naming it and saying what to
    do; cv2.VideoCapture died of a segmentation fault on it (so this runs in a child process)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    good = tmp_path / "roll.avi"
    writer = cv2.VideoWriter(str(good), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 64))
    writer.write(np.full((64, 64, 3), 120, np.uint8))
    writer.release()
    try:
        os.rename(good, os.fsencode(tmp_path) + b"/caf\xe9.avi")
    except OSError:
        pytest.skip("this file system takes only UTF-8 names")
    code = ("import sys, os; from pi_table.capture.sources import open_source\n"
            "try: open_source('video:' + os.fsdecode(sys.argv[1].encode() + b'/caf\\xe9.avi'))\n"
            "except ValueError as e: print(e)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "cannot open video" in done.stdout and "caf" in done.stdout and "rename" in done.stdout, done.stdout


def test_a_picamera2_that_is_installed_but_does_not_import_is_named_not_a_crash(tmp_path, monkeypatch, caplog):
    """Raspberry Pi OS's picamera2 in a venv whose numpy is not the system's raises ValueError on
    import ("numpy.dtype size changed", picamera2 issue #1088), not ImportError: with no --source,
    serve fell over with numpy's message instead of playing the demo and saying why; with
    --source picamera the error did not say it came from picamera2."""
    import sys

    package = tmp_path / "picamera2"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise ValueError('numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, "
        "got 88 from PyObject')\n")
    monkeypatch.delitem(sys.modules, "picamera2", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level("WARNING"):
        source = open_source(None)
    assert source.spec == "demo"
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "picamera2 is installed but does not import" in said and "numpy.dtype size changed" in said, said
    source.close()
    with pytest.raises(ValueError, match=r"^picamera: picamera2 is installed but does not import \(ValueError: numpy"):
        open_source("picamera")


def test_a_folder_or_video_under_the_home_folder_may_be_written_with_a_tilde(tmp_path, monkeypatch):
    """`serve --source folder:~/rolls` (or source = "folder:~/rolls" in the config): no shell expands
    a ~ after the colon, and it was "no such folder: ~/rolls"."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "rolls").mkdir()
    cv2.imwrite(str(tmp_path / "rolls" / "a.png"), tray([(50, 50)]))
    source = open_source("folder:~/rolls", interval_s=0)
    assert source.spec == "folder:~/rolls" and len(list(source)) == 1
    with pytest.raises(FileNotFoundError, match=f"no such video file: {tmp_path}/none.avi"):
        open_source("video:~/none.avi")


def _png_claiming(width: int, height: int) -> bytes:
    """A small PNG file whose header claims ``width`` x ``height`` pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 100))
            + chunk(b"IEND", b""))


def test_a_photo_claiming_more_pixels_than_opencv_decodes_is_skipped_not_the_end_of_the_replay(tmp_path, caplog):
    """A header claiming 60000 x 60000 pixels (over OpenCV's CV_IO_MAX_IMAGE_PIXELS) made
    load_image raise cv2.error, not ValueError: folder: stopped there ("source failed"), the
    photos after it never replayed, and `pi-table read` printed a traceback (exit 1)."""
    from tests.test_cli import run_cli

    (tmp_path / "a_huge.png").write_bytes(_png_claiming(60000, 60000))
    cv2.imwrite(str(tmp_path / "b_ok.png"), tray([(50, 50)]))
    with caplog.at_level("WARNING", logger="pi_table.capture.sources"):
        frames = list(FolderSource(tmp_path))
    assert [Path(f.name).name for f in frames] == ["b_ok.png"]
    assert any("a_huge.png" in r.getMessage() for r in caplog.records)
    result = run_cli("read", str(tmp_path / "a_huge.png"), tmp_path=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [f"pi-table: error: image too large to decode (more than 2^30 pixels): {tmp_path / 'a_huge.png'}"]
