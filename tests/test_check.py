"""``pi-table check``: a die's pixels across against what its kind needs, and the advice."""

from __future__ import annotations

import json

import cv2
import pytest

from pi_table.capture.sources import DEMO_DIR
from pi_table.vision.check import MIN_DIE_PX, DieCheck, advise, check_frame, die_px, needed_px
from pi_table.vision.dice import Die
from tests.test_cli import run_cli

PHOTO = sorted(DEMO_DIR.glob("*.jpg"))[0]


@pytest.fixture(scope="module")
def reader():
    from pi_table.vision.reader import DiceReader

    return DiceReader(threads=1)


def test_needed_pixels_follow_the_kinds_in_play():
    assert needed_px("d6") == MIN_DIE_PX["d6"] == 30 and needed_px("d10-tens") == 55
    assert needed_px("d6", ("d6", "d10")) == 55  # a d10 beside it would show as few pixels
    assert needed_px("d6", ("d6", "d20")) == 30  # a kind the kit does not read asks nothing
    assert die_px((10, 20, 50, 80)) == 60.0


def test_a_demo_photo_reads_and_is_big_enough_for_d6_only(reader):
    image = cv2.imread(str(PHOTO))
    check = check_frame(reader, image, "demo")
    assert check.dice and all(d.px == die_px(d.die.box) for d in check.dice)
    assert all(d.big_enough for d in check.dice)  # the demo's d6 show 45-51 px
    as_d10 = check_frame(reader, image, "demo", kinds=("d6", "d10"))
    assert not any(d.big_enough for d in as_d10.dice)  # and too few for a d10 rolled beside them
    assert "lower the camera or zoom in" in as_d10.advice[0]


def test_a_camera_too_high_is_told_to_come_down(reader):
    image = cv2.imread(str(PHOTO))
    small = cv2.resize(image, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)  # dice about 23-26 px
    check = check_frame(reader, small, "far")
    smallest = min(check.dice, key=lambda d: d.px) if check.dice else None
    assert smallest is not None and not smallest.big_enough
    assert any("lower the camera" in line for line in check.advice)


def test_advice_for_no_dice_and_for_unread_dice():
    assert advise(())[0].startswith("no dice found")
    ok = DieCheck(Die("d6", "4", 4, (0, 0, 40, 40), 0.99, "ok"), 40.0, 30)
    unread = DieCheck(Die("d6", "", 0, (50, 0, 90, 40), 0.5, "unreadable"), 40.0, 30)
    cocked = DieCheck(Die("d6", "", 0, (100, 0, 140, 40), 0.99, "cocked"), 40.0, 30)
    assert advise((ok,)) == ("all 1 dice read and big enough (40-40 px across): the camera is set up well",)
    (line,) = advise((ok, unread, cocked))
    assert line.startswith("2 of 3 dice not read (1 cocked)") and "light the tray evenly" in line


def test_check_cli_json_and_bad_input(tmp_path):
    r = run_cli("check", str(PHOTO), "--json", "--kinds", "d6,d8")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[0])
    assert out["width"] == 640 and out["dice"] and out["advice"]
    assert {"px", "needed_px", "big_enough", "kind", "face", "status", "box"} <= set(out["dice"][0])
    assert all(d["needed_px"] == 55 for d in out["dice"])
    r = run_cli("check", "--source", "demo")  # one frame of the bundled demo
    assert r.returncode == 0 and "dice" in r.stdout.splitlines()[0]
    for args, needle in ((("check", str(tmp_path / "none.jpg")), "none.jpg"),
                         (("check", "--source", "floppy:1"), "floppy:1"),
                         (("check", "--kinds", "d7"), "d7"),
                         (("check", str(PHOTO), "--source", "demo"), "not both")):
        r = run_cli(*args)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_check_on_a_camera_reads_a_frame_after_its_exposure_settles(monkeypatch, capsys):
    """A webcam's first frames come while its automatic exposure settles, often dark: `check
    --source webcam:N` reads the frame EXPOSURE_SETTLE_S after the first (it read the very first,
    and a dark one found no dice). A photo source still gives its first frame at once."""
    import numpy as np

    from pi_table.capture.sources import Frame
    from pi_table.cli import main
    from pi_table.vision import cli as vision_cli

    photo = cv2.imread(str(PHOTO))
    seen = []

    class Camera:
        live, spec = True, "webcam:0"

        def __iter__(self):
            for i in range(40):  # 30 frames a second: dark for the first half second
                seen.append(i)
                image = (photo * 0.1).astype(np.uint8) if i < 15 else photo
                yield Frame(image=image, t=i / 30, index=i, name=f"webcam:0#{i}")

        def close(self):
            pass

    monkeypatch.setattr("pi_table.capture.sources.open_source", lambda spec, **kw: Camera())
    assert main(["check", "--source", "webcam:0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert seen[-1] == 30 and out["image"] == "webcam:0#30" and len(out["dice"]) >= 3
    assert vision_cli.EXPOSURE_SETTLE_S == 1.0
