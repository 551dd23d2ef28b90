"""Training data: copy-paste scenes, crop box targets, and the box head read back at run time."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from pi_table.train import data as D
from pi_table.vision.dataset import LabelledDie, LabelledImage, load_yolo
from pi_table.vision.reader import Classifier, iou
from tests.conftest import drawn_die_scene, need_shared, pip_radius

REPO_MODELS = Path(__file__).resolve().parent.parent / "models"


def white_box_image(box, size=200) -> np.ndarray:
    image = np.zeros((size, size, 3), np.uint8)
    x0, y0, x1, y1 = box
    image[y0:y1, x0:x1] = 255
    return image


def measured_target(crop: np.ndarray) -> np.ndarray:
    """(dx, dy, lw, lh) of the white block in a crop, measured from its pixels."""
    ys, xs = np.nonzero(crop[:, :, 0] > 127)
    n = crop.shape[0]
    return np.array([(xs.min() + xs.max() + 1) / 2 / n - 0.5, (ys.min() + ys.max() + 1) / 2 / n - 0.5,
                     math.log((xs.max() - xs.min() + 1) / n), math.log((ys.max() - ys.min() + 1) / n)])


def test_die_crop_box_target_matches_where_the_die_lands():
    box = (90, 100, 130, 120)  # 40 x 20: the turn must swap width and height
    image = white_box_image(box)
    rng = np.random.default_rng(0)
    seen_turns = set()
    checked = 0
    for _ in range(40):
        crop = D.die_crop(image, box, rng, 100, 2.0)
        if not crop.box_known:
            continue
        checked += 1
        seen_turns.add(crop.box[2] > crop.box[3])
        # a pixel of a 100 px crop: 0.01 in the offsets, up to 0.05 in the log size of a 20 px block
        error = np.abs(crop.box - measured_target(crop.image))
        assert (error <= [0.02, 0.02, 0.08, 0.08]).all(), (crop.box, measured_target(crop.image))
    assert checked >= 10 and seen_turns == {True, False}


def test_die_crop_without_jitter_is_centred():
    crop = D.die_crop(white_box_image((90, 100, 130, 140)), (90, 100, 130, 140), np.random.default_rng(0), 48, 1.3, jitter=0)
    assert crop.box_known
    assert np.allclose(crop.box, [0, 0, math.log(1 / 1.3), math.log(1 / 1.3)], atol=1e-6)


def test_paste_sample_keeps_dice_apart_and_labelled():
    image = np.full((120, 160, 3), 90, np.uint8)
    image[40:80, 60:100] = (250, 250, 250)  # a white "die"
    im = LabelledImage(path=None, width=160, height=120, dice=(LabelledDie("d6", "3", (60, 40, 100, 80)),), folder="x")
    rng = np.random.default_rng(1)
    for _ in range(10):
        sample = D.paste_sample([(im, im.dice[0])], lambda _: image, rng, out=128)
        assert sample.image.shape == (128, 128, 3) and sample.image.dtype == np.uint8
        assert len(sample.boxes) >= 1
        for i, a in enumerate(sample.boxes):
            cx, cy = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
            assert 0 <= cx < 128 and 0 <= cy < 128
            assert all(iou(tuple(a), tuple(b)) == 0 for b in sample.boxes[i + 1 :])
            # the pasted die is there: its box is much brighter than the surface average
            x0, y0, x1, y1 = (int(round(v)) for v in a)
            inner = sample.image[max(0, y0 + 2) : y1 - 2, max(0, x0 + 2) : x1 - 2]
            if inner.size and (x1 - x0) > 8:
                assert inner.mean() > 150


#: The pip centres (x, y) of :func:`pip_die`'s five.
FIVE_PIPS = ((18, 18), (42, 18), (30, 30), (18, 42), (42, 42))


def pip_die(size=60, body=(245, 245, 245), pip=(20, 20, 20)) -> np.ndarray:
    """A die seen from above: a square body with a five's pips (:data:`FIVE_PIPS`), on a mid-grey ground."""
    image = np.full((size, size, 3), 120, np.uint8)
    image[10:50, 10:50] = body
    for x, y in FIVE_PIPS:
        cv2.circle(image, (x, y), 4, pip, -1)
    return image


def test_recolour_die_keeps_the_pips_and_changes_the_colours():
    image = pip_die()
    rng = np.random.default_rng(3)
    grey = lambda c: float(np.asarray(c, np.float64) @ [0.114, 0.587, 0.299])
    pips = np.zeros(image.shape[:2], bool)
    for x, y in FIVE_PIPS:
        pips[y - 2 : y + 3, x - 2 : x + 3] = True
    body = np.zeros_like(pips)
    body[12:48, 12:48] = True
    body &= ~cv2.dilate(pips.astype(np.uint8), np.ones((7, 7), np.uint8)).astype(bool)
    colours = set()
    for _ in range(20):
        out = D.recolour_die(image, 40, rng)
        assert out.shape == image.shape and out.dtype == np.uint8
        pip_colour, body_colour = out[pips].mean(axis=0), out[body].mean(axis=0)
        # one flat colour each, at least 0.35 of the grey scale apart (either way round)
        assert out[pips].std(axis=0).max() < 3 and out[body].std(axis=0).max() < 3
        assert abs(grey(body_colour) - grey(pip_colour)) >= 0.35 * 255 - 2
        colours.add(tuple(np.round(body_colour / 32).astype(int)))
    assert len(colours) >= 10  # new colours each time, not one tint


def test_paste_die_recolour_zero_draws_nothing_more():
    """--recolour 0 (the default) must leave the random stream, so the shipped recipe's models, as they were."""
    image = pip_die()
    streams = []
    for recolour in (None, 0.0):
        rng = np.random.default_rng(5)
        canvas = np.zeros((96, 96, 3), np.uint8)
        args = (canvas, image, (10, 10, 50, 50), 48.0, 48.0, 40.0, rng)
        D.paste_die(*args) if recolour is None else D.paste_die(*args, recolour=recolour)
        streams.append((canvas.copy(), rng.random()))
    assert np.array_equal(streams[0][0], streams[1][0]) and streams[0][1] == streams[1][1]
    rng = np.random.default_rng(5)
    canvas = np.zeros((96, 96, 3), np.uint8)
    D.paste_die(canvas, image, (10, 10, 50, 50), 48.0, 48.0, 40.0, rng, recolour=1.0)
    assert not np.array_equal(canvas, streams[0][0])


def test_recolour_option_is_checked():
    from pi_table.train.__main__ import parse_args

    assert parse_args(["--data", "x", "--out", "y"]).recolour == 0.0
    with pytest.raises(SystemExit) as e:
        parse_args(["--data", "x", "--out", "y", "--recolour", "1.5"])
    assert e.value.code == 2


def test_cascade_option_is_checked(capsys):
    from pi_table.train.__main__ import parse_args

    assert parse_args(["--data", "x", "--out", "y", "--cascade", "1"]).cascade == 1.0
    for value in ("0", "1.5"):
        with pytest.raises(SystemExit) as e:
            parse_args(["--data", "x", "--out", "y", "--cascade", value])
        assert e.value.code == 2
        assert capsys.readouterr().err.strip() == f"error: --cascade must be in (0, 1], got {float(value)}"


@pytest.mark.parametrize("option", ["--det-steps", "--cls-steps"])
def test_training_names_steps_below_one_in_one_line(capsys, option):
    from pi_table.train.__main__ import parse_args

    with pytest.raises(SystemExit) as e:
        parse_args(["--data", "x", "--out", "y", option, "0"])
    assert e.value.code == 2 and capsys.readouterr().err.strip() == f"error: {option} must be 1 or more, got 0"


@pytest.mark.parametrize("option", ["--wrong-target", "--numbered-wrong-target"])
@pytest.mark.parametrize("value", ["0", "1", "-0.1"])
def test_training_names_a_wrong_target_outside_zero_to_one_in_one_line(capsys, option, value):
    from pi_table.train.__main__ import parse_args

    assert parse_args(["--data", "x", "--out", "y", option, "0.0015"]).__dict__[option[2:].replace("-", "_")] == 0.0015
    with pytest.raises(SystemExit) as e:
        parse_args(["--data", "x", "--out", "y", option, value])
    assert e.value.code == 2 and capsys.readouterr().err.strip() == f"error: {option} must be in (0, 1), got {float(value)}"


def test_numbered_kinds_take_their_own_wrong_target(monkeypatch):
    """choose_thresholds: the photos' threshold at --wrong-target, each numbered kind's at
    --numbered-wrong-target (its default: the same)."""
    from pathlib import Path

    import pi_table.train.__main__ as train

    monkeypatch.setattr("pi_table.vision.reader.DiceReader", lambda models, threads=0: object())
    monkeypatch.setattr(train, "remember_rows", lambda reader: None)
    asked = []
    monkeypatch.setattr(train, "choose_threshold",
                        lambda models, images, target, reader=None: asked.append((images[0].folder, target)) or target)
    photo = LabelledImage(Path("p.jpg"), 64, 64, (LabelledDie("d6", "4", (0, 0, 9, 9)),), "nellbyler-d6-tray")
    render = LabelledImage(Path("r.jpg"), 64, 64, (LabelledDie("d8", "7", (0, 0, 9, 9)),
                                                   LabelledDie("d10-tens", "70", (20, 0, 29, 9))), "renders")
    out = train.choose_thresholds(Path("m"), [photo, render], 0.003, 0.0015)
    assert out == {"threshold": 0.003, "thresholds": {"d8": 0.0015, "d10-tens": 0.0015}}
    assert asked == [("nellbyler-d6-tray", 0.003), ("renders", 0.0015), ("renders", 0.0015)]
    asked.clear()
    assert train.choose_thresholds(Path("m"), [photo, render], 0.003)["thresholds"] == {"d8": 0.003, "d10-tens": 0.003}


@pytest.mark.parametrize("extra, why", [([], "goes with --calibrate-only"), (["--calibrate-only", "--int8"], "keeps every model")])
def test_numbered_only_without_calibrate_only_or_with_int8_is_refused_in_one_line(capsys, extra, why):
    from pi_table.train.__main__ import parse_args

    assert parse_args(["--data", "x", "--out", "y", "--calibrate-only", "--numbered-only"]).numbered_only
    with pytest.raises(SystemExit) as e:
        parse_args(["--data", "x", "--out", "y", "--numbered-only"] + extra)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.startswith("error: --numbered-only: ") and why in err and "\n" not in err


def test_choose_thresholds_without_d6_chooses_the_numbered_kinds_only(monkeypatch):
    """choose_thresholds(d6=False) (--numbered-only): no d6 threshold is chosen, nor its photos read."""
    import pi_table.train.__main__ as train

    monkeypatch.setattr("pi_table.vision.reader.DiceReader", lambda models, threads=0: object())
    monkeypatch.setattr(train, "remember_rows", lambda reader: None)
    asked = []
    monkeypatch.setattr(train, "choose_threshold",
                        lambda models, images, target, reader=None: asked.append(images[0].folder) or target)
    photo = LabelledImage(Path("p.jpg"), 64, 64, (LabelledDie("d6", "4", (0, 0, 9, 9)),), "nellbyler-d6-tray")
    render = LabelledImage(Path("r.jpg"), 64, 64, (LabelledDie("d10", "7", (0, 0, 9, 9)),), "renders")
    assert train.choose_thresholds(Path("m"), [photo, render], 0.003, 0.0015, d6=False) == {"thresholds": {"d10": 0.0015}}
    assert asked == ["renders"]


def test_numbered_only_recalibration_changes_the_numbered_thresholds_and_nothing_else(tmp_path, monkeypatch):
    """--calibrate-only --numbered-only (recalibrate_numbered): the numbered kinds' thresholds are chosen with
    reader.json as the full calibration reads when it chooses (no refine pass, no numbered recut, no cascade) and
    written; every other setting comes back as it was, also when the choice fails; the log records it."""
    import argparse

    import pi_table.train.__main__ as train

    config = {"classifier": {"file": ["a.onnx", "b.onnx"], "temperature": 0.75, "cascade": 0.97},
              "threshold": 0.91, "thresholds": {"d8": 0.98, "d10": 0.98, "d10-tens": 0.99},
              "refine_unsure": 1, "recut_numbered": 3, "second_look": 8, "numerals": {"file": "numerals.onnx"}}
    (tmp_path / "reader.json").write_text(json.dumps(config))
    (tmp_path / "train-log.json").write_text(json.dumps({"temperature": 0.75}))
    seen = []

    def chosen(models, images, target, numbered_target, d6=True):
        seen.append((json.loads((models / "reader.json").read_text()), d6, numbered_target))
        return {"thresholds": {"d8": 0.95, "d10-tens": 0.97}}

    monkeypatch.setattr(train, "choose_thresholds", chosen)
    args = argparse.Namespace(out=tmp_path, wrong_target=0.003, numbered_wrong_target=0.0015, numbered_floor=None)
    assert train.recalibrate_numbered(args, json.loads(json.dumps(config)), [], 0.0) == 0
    during, d6, target = seen[0]
    assert (during["refine_unsure"], during["recut_numbered"], "cascade" in during["classifier"], d6, target) == (0, 0, False, False, 0.0015)
    after = json.loads((tmp_path / "reader.json").read_text())
    assert after == {**config, "thresholds": {"d8": 0.95, "d10": 0.98, "d10-tens": 0.97}}
    log = json.loads((tmp_path / "train-log.json").read_text())
    assert log["temperature"] == 0.75 and log["numbered_recalibrated"]["thresholds"] == after["thresholds"]

    def broken(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "choose_thresholds", broken)
    with pytest.raises(KeyboardInterrupt):
        train.recalibrate_numbered(args, json.loads(json.dumps(after)), [], 0.0)
    assert json.loads((tmp_path / "reader.json").read_text()) == after


@pytest.mark.parametrize("path", ["numbered-only", "full"])
def test_numbered_floor_raises_the_chosen_numbered_thresholds_to_it_and_leaves_the_d6_one(tmp_path, monkeypatch, path):
    """--numbered-floor F: each numbered kind's chosen threshold below F becomes F, one above stays, the d6 threshold
    is untouched, both in --calibrate-only --numbered-only (recalibrate_numbered) and the full calibration
    (calibrate_reader); a floor outside (0, 1) is refused in one line."""
    import argparse

    import pi_table.train.__main__ as train

    monkeypatch.setattr(train, "choose_thresholds", lambda models, images, target, numbered_target, d6=True,
                        pooled_d6=False: {"threshold": 0.9, "thresholds": {"d8": 0.96, "d10": 0.995}})
    config = {"classifier": {"classes": ["d6:1", "d8:1", "none"], "temperature": 1.0}, "threshold": 0.91,
              "thresholds": {"d8": 0.98, "d10": 0.98}}
    (tmp_path / "reader.json").write_text(json.dumps(config))
    if path == "numbered-only":
        args = argparse.Namespace(out=tmp_path, wrong_target=0.003, numbered_wrong_target=0.0015, numbered_floor=0.99)
        train.recalibrate_numbered(args, json.loads(json.dumps(config)), [], 0.0)
    else:
        monkeypatch.setattr(train, "calib_logits", lambda models, images, cls: (np.zeros((4, 3)), np.array([0, 1, 0, 1])))
        args = argparse.Namespace(refine_unsure=1, recut_numbered=3, cascade=None, thresholds_with_refine=False,
                                  second_look=8, threshold=None, wrong_target=0.003, numbered_wrong_target=0.0015,
                                  calib_d6="photos", numbered_floor=0.99)
        train.calibrate_reader(tmp_path, json.loads(json.dumps(config)), [], args)
    after = json.loads((tmp_path / "reader.json").read_text())
    assert after["thresholds"] == {"d8": 0.99, "d10": 0.995}
    assert after["threshold"] == (0.91 if path == "numbered-only" else 0.9)
    assert train.floored({"d8": 0.96}, None) == {"d8": 0.96}


def test_numbered_floor_outside_0_1_is_refused_in_one_line(capsys):
    from pi_table.train.__main__ import parse_args

    assert parse_args(["--data", "x", "--out", "y", "--numbered-floor", "0.99"]).numbered_floor == 0.99
    with pytest.raises(SystemExit) as e:
        parse_args(["--data", "x", "--out", "y", "--numbered-floor", "1.5"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "--numbered-floor" in err and "1.5" in err and "\n" not in err


def test_calib_d6_pooled_chooses_the_d6_threshold_on_the_photos_and_the_renders_d6(monkeypatch):
    """choose_thresholds(pooled_d6=True) (--calib-d6 pooled): the d6 threshold is chosen on the calib
    photos and the calib renders' d6 dice together (the renders' numbered dice not labelled there);
    each numbered kind's on its own dice as before."""
    from pathlib import Path

    import pi_table.train.__main__ as train

    monkeypatch.setattr("pi_table.vision.reader.DiceReader", lambda models, threads=0: object())
    monkeypatch.setattr(train, "remember_rows", lambda reader: None)
    asked = []
    monkeypatch.setattr(train, "choose_threshold", lambda models, images, target, reader=None: asked.append(
        [(im.folder, [d.kind for d in im.dice]) for im in images]) or target)
    photo = LabelledImage(Path("p.jpg"), 64, 64, (LabelledDie("d6", "4", (0, 0, 9, 9)),), "nellbyler-d6-tray")
    render = LabelledImage(Path("r.jpg"), 64, 64, (LabelledDie("d6", "2", (40, 0, 49, 9)),
                                                   LabelledDie("d8", "7", (0, 0, 9, 9))), "renders")
    numbered = LabelledImage(Path("n.jpg"), 64, 64, (LabelledDie("d10", "3", (0, 0, 9, 9)),), "renders")
    out = train.choose_thresholds(Path("m"), [photo, render, numbered], 0.003, 0.0015, pooled_d6=True)
    assert out == {"threshold": 0.003, "thresholds": {"d8": 0.0015, "d10": 0.0015}}
    assert asked[0] == [("nellbyler-d6-tray", ["d6"]), ("renders", ["d6"])]
    assert asked[1:] == [[("renders", ["d8"])], [("renders", ["d10"])]]
    asked.clear()
    train.choose_thresholds(Path("m"), [photo, render, numbered], 0.003, 0.0015)  # photos only, as shipped
    assert asked[0] == [("nellbyler-d6-tray", ["d6"])]


@pytest.mark.parametrize("steps", [1, 3, 19, 20, 21, 40, 8000])
def test_one_cycle_runs_any_step_count_and_keeps_the_five_percent_warm_up(steps):
    """torch's one-cycle schedule divided by zero at exactly 20 steps (warm-up 5%: one step); every
    count now runs to its end, warming up over 5% of the steps wherever that is not one step."""
    import torch

    from pi_table.train import one_cycle

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = one_cycle(opt, 0.1, steps)
    lrs = [opt.param_groups[0]["lr"]]  # the first step's (the schedule set it when made)
    for _ in range(steps - 1):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert all(np.isfinite(lrs)) and max(lrs) <= 0.1 + 1e-9
    if steps in (40, 8000):
        assert sched.total_steps == steps and abs(max(lrs) - 0.1) < 1e-9
        assert int(np.argmax(lrs)) == round(0.05 * steps) - 1  # the peak after 5% of the steps, as before


def test_box_head_moves_the_box_in_image_pixels(tmp_path):
    """A classifier whose box head always says "centre 0.1 crop sides right, half a crop wide"."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class Fixed(nn.Module):
        def forward(self, x):
            n = x.shape[0]
            logits = torch.zeros(n, 2) + x.mean() * 0
            box = torch.tensor([[0.1, 0.0, math.log(0.5), math.log(0.25)]]).repeat(n, 1) + x.mean() * 0
            return logits, box

    path = tmp_path / "classifier.onnx"
    torch.onnx.export(Fixed(), (torch.zeros(2, 3, 48, 48),), str(path), input_names=["crops"],
                      output_names=["logits", "box"], dynamic_axes={"crops": {0: "n"}, "logits": {0: "n"}, "box": {0: "n"}},
                      opset_version=17, dynamo=False)
    classifier = Classifier(path, ["d6:1", "none"], crop_size=48, margin=1.5)
    assert classifier.refines
    image = np.zeros((300, 300, 3), np.uint8)
    _, boxes = classifier.logits_and_boxes(image, [(100, 100, 140, 120)])  # long side 40 -> crop side 60
    cx, cy = 120 + 0.1 * 60, 110
    assert np.allclose(boxes[0], (cx - 15, cy - 7.5, cx + 15, cy + 7.5))


def test_is_unlabelled_spares_dice_labelled_by_their_pips():
    labels = np.array([[100, 100, 140, 140], [210, 215, 222, 227]], np.float32)  # a die; a pip box of a "1"
    assert not D.is_unlabelled((102, 98, 141, 139), labels)  # the die itself
    assert not D.is_unlabelled((200, 200, 235, 240), labels)  # the whole "1" die around its pip box
    assert D.is_unlabelled((300, 300, 340, 340), labels)  # the tray
    assert D.is_unlabelled((140, 100, 175, 140), labels)  # beside a die (its side face)


def test_folder_names_cover_subfolders_and_reject_unknown_ones(capsys):
    from pi_table.train.__main__ import folder_names, under

    folders = ["matteop65-d6-desk/Train", "matteop65-d6-desk/Valid", "nellbyler-d6-tray"]
    assert folder_names(" matteop65-d6-desk , ", folders, "--train-folders") == ["matteop65-d6-desk"]
    assert under("matteop65-d6-desk/Train", ["matteop65-d6-desk"]) and not under("matteop65-d6-desk2", ["matteop65-d6-desk"])
    with pytest.raises(SystemExit) as stop:
        folder_names("nellbyler-d6-tray,typo", folders, "--paste-from")
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "'typo'" in err and "--paste-from" in err and len(err.splitlines()) == 1


def small_renders(out, n: int = 4, seed: int = 1, kinds: str = "d8,d10,d10-tens") -> None:
    """Render ``n`` 256-pixel scenes of ``kinds`` into ``out`` (synthetic backgrounds) for a training
    test; skips without the train extra (Pillow, PyTorch)."""
    import subprocess
    import sys

    pytest.importorskip("PIL", reason="the renderer needs Pillow (optional extra `train`)")
    pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    from tests.conftest import REPO

    render = [sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--n", str(n), "--seed", str(seed),
              "--kinds", kinds, "--size", "256", "--backgrounds", ""]
    assert subprocess.run(render, cwd=REPO, capture_output=True, text=True, timeout=120).returncode == 0


def test_numerals_training_needs_numbered_dice(tmp_path):
    """Renders without any d8/d10 give a one-line error and exit status 2, not a model."""
    import subprocess
    import sys

    from tests.conftest import REPO

    out = tmp_path / "d6"
    small_renders(out, n=2, kinds="d6")
    r = subprocess.run([sys.executable, "-m", "pi_table.train.numerals", "--renders", str(out), "--out", str(tmp_path / "m")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no d8, d10, d10-tens dice" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "m" / "numerals.onnx").exists()


def test_numerals_training_with_d6_reads_d6_printing(tmp_path):
    """``--d6`` (the d6 numeral model, written as d6-numerals.*): the renders' d6 join the numeral model's
    dice, one printed with pips as ``d6:pips`` and one printed with numerals as its face (``numeral_label``,
    from the meta's printing); without it they are left out."""
    import subprocess
    import sys

    from pi_table.train.numerals import numeral_label
    from pi_table.vision.dataset import LabelledDie, load_yolo
    from tests.conftest import REPO

    out = tmp_path / "r"
    small_renders(out, n=6, kinds="d6,d8")
    dice = [d for im in load_yolo(out) for d in im.dice]
    assert {d.printing for d in dice if d.kind == "d6"} <= {"pips", "numerals"} and any(d.kind == "d6" for d in dice)
    assert {d.printing for d in dice if d.kind == "d8"} == {"numerals"}
    assert numeral_label(LabelledDie("d6", "4", (0, 0, 9, 9), False, "opaque", "pips")) == "d6:pips"
    assert numeral_label(LabelledDie("d6", "4", (0, 0, 9, 9), False, "opaque", "numerals")) == "d6:4"
    assert numeral_label(LabelledDie("d8", "7", (0, 0, 9, 9))) == "d8:7"
    logs = {}
    for name, extra in (("with", ["--d6"]), ("without", [])):
        r = subprocess.run([sys.executable, "-m", "pi_table.train.numerals", "--renders", str(out), "--out",
                            str(tmp_path / name), "--smoke"] + extra, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        logs[name] = json.loads((tmp_path / name / ("d6-numerals-log.json" if extra else "numerals-log.json")).read_text())
    assert "d6:pips" in logs["with"]["classes"] and not any(c.startswith("d6") for c in logs["without"]["classes"])
    assert sorted(p.name for p in (tmp_path / "with").glob("*numerals*")) == ["d6-numerals-log.json", "d6-numerals.json",
                                                                               "d6-numerals.onnx"]
    assert logs["with"]["dice"] > logs["without"]["dice"]


def test_numerals_training_with_pip_photos_adds_their_training_splits_d6_as_pips(tmp_path):
    """``--pip-photos DIR`` (with ``--d6``): the d6 of each photo folder's training split (the classifier's
    split, ``split_folder`` at ``--seed``) join the bank as ``d6:pips``, whatever face they show, and their
    calib and valid photos do not; without ``--d6``, or with no d6 in a training split, one line and
    exit status 2."""
    import subprocess
    import sys

    from pi_table.train.numerals import pip_photo_dice
    from pi_table.train.data import split_folder
    from pi_table.vision.dataset import load_yolo
    from tests.conftest import REPO

    renders, photos = tmp_path / "r", tmp_path / "photos"
    small_renders(renders, n=4, kinds="d6,d8")
    small_renders(photos, n=10, seed=2, kinds="d6")
    images = load_yolo(photos)
    taken = pip_photo_dice(images, 0)
    train = split_folder(images, images[0].folder, 0)["train"]
    assert [im.path for im in taken] == [im.path for im in train if any(d.kind == "d6" for d in im.dice)]
    assert 0 < len(taken) < len(images)
    assert {d.printing for im in taken for d in im.dice} == {"pips"} and {d.kind for im in taken for d in im.dice} == {"d6"}
    args = [sys.executable, "-m", "pi_table.train.numerals", "--renders", str(renders), "--out", str(tmp_path / "m"),
            "--smoke", "--pip-photos", str(photos)]
    r = subprocess.run(args + ["--d6", "--oversample", "photos=2"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    log = json.loads((tmp_path / "m" / "d6-numerals-log.json").read_text())
    assert log["pip_photo_dice"] == sum(len(im.dice) for im in taken[:3]) > 0  # --smoke: three photos
    assert log["pip_photos"] == [str(photos)] and "the photos' d6" in r.stdout
    for extra, says in (([], "error: --pip-photos: adds d6 printed with pips, which only --d6 trains on"),
                        (["--d6", "--pip-photos", str(renders / "images")], "error: --pip-photos: ")):
        r = subprocess.run(args + extra, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith(says), r.stderr
    valid = tmp_path / "Valid"  # a folder named Valid is all valid split: no training d6
    shutil.copytree(photos, valid)
    r = subprocess.run(args[:-1] + [str(valid), "--d6"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.strip() == f"error: --pip-photos: no d6 in the training split of {valid}"


def test_numerals_training_with_loader_workers_scores_each_folder(tmp_path):
    """``--workers`` makes the batches in loader processes (the path a GPU run takes), and the
    log scores every ``--valid`` folder on its own as well as pooled."""
    import subprocess
    import sys

    from tests.conftest import REPO

    folders = [tmp_path / "a", tmp_path / "b"]
    for seed, out in enumerate(folders):
        small_renders(out, seed=seed)
    args = [sys.executable, "-m", "pi_table.train.numerals", "--out", str(tmp_path / "m"), "--smoke", "--workers", "2"]
    for out in folders:
        args += ["--renders", str(out), "--valid", str(out)]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    log = json.loads((tmp_path / "m" / "numerals-log.json").read_text())
    per_folder = log["valid_right_per_folder"]
    assert list(per_folder) == [str(f) for f in folders]
    for kind, pooled in log["valid_right"].items():
        assert pooled["dice"] == sum(f[kind]["dice"] for f in per_folder.values() if kind in f)
    assert log["args"]["workers"] == "2" and (tmp_path / "m" / "numerals.onnx").is_file()


@pytest.mark.parametrize("option, value, says", [("--workers", "-1", "--workers must be 0..64, got -1"),
                                                 ("--device", "tpu", "--device must be cpu or cuda[:N], got 'tpu'"),
                                                 ("--steps", "0", "--steps must be 1 or more, got 0"),
                                                 ("--batch", "-3", "--batch must be 1 or more, got -3")])
def test_numeral_training_names_a_bad_device_or_workers_in_one_line(tmp_path, capsys, option, value, says):
    from pi_table.train.numerals import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), option, value])
    assert stop.value.code == 2 and capsys.readouterr().err.strip() == f"error: {says}"


def test_a_cuda_device_the_machine_lacks_is_named():
    from pi_table.train.numerals import device_error

    assert device_error("cuda", 0) == "--device cuda: torch sees no GPU here"
    assert device_error("cuda:7", 1) == "--device cuda:7: torch sees 1 GPU(s) here, cuda:0..cuda:0"
    assert device_error("cuda:x", 2) == "--device cuda:x: torch sees 2 GPU(s) here, cuda:0..cuda:1"
    assert device_error("cuda", 1) is None and device_error("cuda:1", 2) is None


def test_numeral_training_on_a_gpu_it_lacks_is_a_one_line_error(tmp_path, capsys):
    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --device cuda would train")
    from pi_table.train.numerals import main

    assert main(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--device", "cuda"]) == 2
    assert capsys.readouterr().err.strip() == "error: --device cuda: torch sees no GPU here"


def test_fit_temperature_recovers_a_known_temperature():
    """Labels drawn from softmax(z / 2) are fitted best near T = 2 (Guo et al. 2017)."""
    from pi_table.train.numerals import fit_temperature

    rng = np.random.default_rng(0)
    z = rng.normal(0, 4, (4000, 5))
    p = np.exp(z / 2) / np.exp(z / 2).sum(axis=1, keepdims=True)
    t = np.array([rng.choice(5, p=row) for row in p])
    assert 1.8 < fit_temperature(z, t) < 2.2
    assert fit_temperature(np.zeros((0, 5)), np.zeros(0, int)) == 1.0


def test_a_calib_split_read_all_right_leaves_the_temperature_at_its_bound():
    """No calib die read wrong: the likelihood rises as T falls, the fit stops at the grid's end, and
    temperature_at_bound says so (the leave-one-folder-out case of models/history/classifier.md, T = 0.30)."""
    from pi_table.train.numerals import TEMPERATURE_RANGE, fit_temperature, temperature_at_bound

    rng = np.random.default_rng(1)
    z = rng.normal(0, 1, (300, 5))
    t = rng.integers(0, 5, 300)
    z[np.arange(300), t] += 8  # every die's top score is its label, by far
    fitted = fit_temperature(z, t)
    assert fitted == pytest.approx(TEMPERATURE_RANGE[0]) and temperature_at_bound(fitted)
    assert not temperature_at_bound(1.0) and not temperature_at_bound(0.891)
    assert temperature_at_bound(TEMPERATURE_RANGE[1])


def test_the_bound_warning_names_the_temperature_and_its_value():
    """Each fitted temperature (photos', numbered shapes', numeral model's, cocked-die model's) is
    flagged by bound_warning at its range's ends only, with its name and value in the line."""
    from pi_table.train.numerals import TEMPERATURE_RANGE, bound_warning

    line = bound_warning(TEMPERATURE_RANGE[0], "the numeral model's temperature")
    assert line.startswith("warning: the numeral model's temperature") and "(0.30)" in line
    assert "(5.00)" in bound_warning(TEMPERATURE_RANGE[1], "the cocked-die model's temperature")
    assert bound_warning(0.891, "the photos' temperature") is None


def test_fit_shape_temperature_fits_only_the_rows_topped_by_a_numbered_shape():
    """Rows topped by ``d10:*`` drawn at T = 0.5 are fitted near 0.5 whatever the rows topped by a
    d6 face say; with no row topped by a numbered shape there is none (None)."""
    from pi_table.train.__main__ import fit_shape_temperature

    classes = ["d6:1", "d6:2", "d10:*", "none"]
    rng = np.random.default_rng(0)
    z = rng.normal(0, 3, (6000, 4))
    z[:3000, 2] += 6  # these rows top at d10:*
    z[3000:, 0] += 6  # these at d6:1
    z[3000:, 2] = -20.0  # and never at d10:*
    p = np.exp(z / 0.5) / np.exp(z / 0.5).sum(axis=1, keepdims=True)
    t = np.array([rng.choice(4, p=row) for row in p])
    t[3000:] = 3  # labels of the d6-topped rows that no temperature near 0.5 explains
    assert 0.45 < fit_shape_temperature(z, t, classes) < 0.55
    assert fit_shape_temperature(z[3000:], t[3000:], classes) is None
    assert fit_shape_temperature(np.zeros((0, 4)), np.zeros(0, int), classes) is None


@pytest.mark.parametrize("module, option", [("pi_table.train.numerals", "--renders"), ("pi_table.train", "--data")])
def test_training_names_a_missing_folder_in_one_line(tmp_path, module, option):
    import subprocess
    import sys

    from tests.conftest import REPO

    args = [sys.executable, "-m", module, option, str(tmp_path / "nope"), "--out", str(tmp_path / "m")]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"{option}: no such folder" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("option", ["--cls-width", "--det-width"])
def test_training_names_a_bad_width_in_one_line(tmp_path, option):
    import subprocess
    import sys

    from tests.conftest import REPO

    args = [sys.executable, "-m", "pi_table.train", "--data", str(tmp_path), "--out", str(tmp_path / "m"), option, "-1"]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"{option} must be above 0, got -1.0" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("channels", ["24,48,96", "24,48,0,160", "a,b,c,d"])
def test_numeral_training_names_bad_channels_in_one_line(tmp_path, channels):
    import subprocess
    import sys

    from tests.conftest import REPO

    args = [sys.executable, "-m", "pi_table.train.numerals", "--renders", str(tmp_path), "--out", str(tmp_path / "m"),
            "--channels", channels]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"--channels must be four positive integers, got {channels!r}" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("value", ["-0.1", "0.6"])
def test_numeral_training_names_bad_label_smoothing_in_one_line(tmp_path, capsys, value):
    from pi_table.train.numerals import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--label-smoothing", value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: --label-smoothing must be 0..0.5, got {float(value)}"


def test_numeral_right_per_kind_counts_top1_by_kind():
    from pi_table.train.numerals import right_per_kind

    classes = ["d8:1", "d8:2", "d10:0", "d10-tens:00"]
    logits = np.array([[5, 0, 0, 0], [5, 0, 0, 0], [0, 0, 5, 0], [0, 0, 5, 0]], np.float32)
    targets = np.array([0, 1, 2, 3])  # d8 one right one wrong, d10 right, tens read as a d10
    assert right_per_kind(logits, targets, classes) == {
        "d8": {"dice": 2, "right": 0.5}, "d10": {"dice": 1, "right": 1.0}, "d10-tens": {"dice": 1, "right": 0.0}}


def test_classifier_width_scales_every_layer():
    torch = pytest.importorskip("torch")
    from pi_table.train.nets import ClassifierNet

    def channels(net):
        return [m.out_channels for m in net.features.modules() if isinstance(m, torch.nn.Conv2d)]

    assert channels(ClassifierNet(7)) == [16, 32, 32, 64, 64, 96]
    assert channels(ClassifierNet(7, width=1.5)) == [24, 48, 48, 96, 96, 144]
    logits, box = ClassifierNet(7, width=1.5)(torch.zeros(2, 3, 48, 48))
    assert logits.shape == (2, 7) and box.shape == (2, 4)


def test_detector_width_scales_the_backbone():
    torch = pytest.importorskip("torch")
    from pi_table.train.nets import DetectorNet

    assert DetectorNet().s32[0][0].out_channels == 80 and DetectorNet(width=1.5).s32[0][0].out_channels == 120
    heat, size, offset = DetectorNet(width=1.5).eval()(torch.zeros(1, 3, 64, 96))
    assert heat.shape == (1, 1, 16, 24) and size.shape == offset.shape == (1, 2, 16, 24)


@pytest.mark.parametrize("face,pips", [("1", [(0.5, 0.5)]), ("2", [(0.25, 0.25), (0.75, 0.75)]),
                                       ("5", [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)])])
def test_a_pip_box_grows_to_its_die(face, pips):
    """matteop65 boxes pips (a one: its single pip); grow_pip_box finds the whole die round them."""
    from pi_table.vision.dataset import grow_pip_box

    die = (60, 50, 130, 120)
    image = drawn_die_scene(pips, die)
    side, r = 70, pip_radius(len(pips), 70)
    xs = [die[0] + px * side for px, _ in pips]
    ys = [die[1] + py * side for _, py in pips]
    pip_box = (min(xs) - r, min(ys) - r, max(xs) + r, max(ys) + r)
    grown = grow_pip_box(image, LabelledDie("d6", face, pip_box))
    assert grown is not None
    assert iou(grown, die) > 0.85, (grown, die)
    assert iou(pip_box, die) < 0.6  # the label alone would not match the die


def test_a_pip_box_beside_a_black_cable_does_not_grow_into_it():
    """matteop65 Valid 85: a four touching a black cable. GrabCut, seeded with the dark pips,
    took the cable in (a 138-pixel box for a die about 85 across, 1.56 times its expected size);
    such a segment is refused and the die gets its typical box, round the die."""
    from pi_table.vision.dataset import with_die_boxes

    real = need_shared()
    labelled = [im for im in load_yolo(real / "matteop65-d6-desk" / "Valid") if im.path.name == "valid_85.jpg"][0]
    k = next(i for i, d in enumerate(labelled.dice) if abs(d.box[0] - 162) < 2 and abs(d.box[1] - 68) < 2)
    four = with_die_boxes(labelled).dice[k]  # the four by the cable, top left: pips 162..212 x 68..112
    x0, y0, x1, y1 = four.box
    assert four.face == "4" and max(x1 - x0, y1 - y0) < 100, four.box
    assert abs((x0 + x1) / 2 - 187) < 8 and abs((y0 + y1) / 2 - 90) < 8, four.box


def test_with_die_boxes_grows_only_folders_that_box_pips(tmp_path):
    from pi_table.vision.dataset import boxes_pips, with_die_boxes

    path = tmp_path / "d.png"
    cv2.imwrite(str(path), drawn_die_scene([(0.5, 0.5)]))
    pip = LabelledDie("d6", "1", (85, 75, 105, 95))
    desk = LabelledImage(path, 200, 200, (pip,), "matteop65-d6-desk/Train")
    tray = LabelledImage(path, 200, 200, (pip,), "nellbyler-d6-tray")
    assert boxes_pips("matteop65-d6-desk/Valid") and not boxes_pips("nellbyler-d6-tray")
    assert with_die_boxes(tray) == tray
    grown = with_die_boxes(desk)
    assert grown.dice[0].face == "1" and iou(grown.dice[0].box, (60, 50, 130, 120)) > 0.85


def test_a_one_that_cannot_grow_takes_the_size_of_the_images_other_dice(tmp_path):
    """A one's label boxes its single pip; when GrabCut cannot find its die (here a die no
    lighter than the desk), its box is the size of the image's other grown dice, not a
    guess from the pip."""
    from pi_table.vision.dataset import with_die_boxes

    image = drawn_die_scene([(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)], (20, 20, 90, 90),
                            size=300)
    cv2.circle(image, (220, 220), 6, (20, 20, 20), -1)  # a one's pip on a die the colour of the desk
    path = tmp_path / "d.png"
    cv2.imwrite(str(path), image)
    r = pip_radius(5, 70)
    five = LabelledDie("d6", "5", (37.5 - r, 37.5 - r, 72.5 + r, 72.5 + r))
    one = LabelledDie("d6", "1", (214, 214, 226, 226))
    grown = with_die_boxes(LabelledImage(path, 300, 300, (one, five), "matteop65-d6-desk/Train"))
    five_box, one_box = grown.dice[1].box, grown.dice[0].box
    assert iou(five_box, (20, 20, 90, 90)) > 0.85
    assert one_box[2] - one_box[0] == pytest.approx(five_box[2] - five_box[0], abs=1)
    assert (one_box[0] + one_box[2]) / 2 == pytest.approx(220)


@pytest.mark.parametrize("loose", [1.2, 2.6, 4.0])
def test_a_one_alone_is_sized_by_its_pip_however_loosely_it_is_boxed(tmp_path, loose):
    """In an image of ones alone there is no other die to take a size from: the one's die is
    sized by its pip's measured diameter, so a box drawn loosely round the pip (matteop65's
    images of ones) no longer makes the die up to twice too big."""
    from pi_table.vision.dataset import pip_diameter, with_die_boxes

    die = (60, 50, 130, 120)
    image = drawn_die_scene([(0.5, 0.5)], die)
    path = tmp_path / "d.png"
    cv2.imwrite(str(path), image)
    r = pip_radius(1, 70) * loose
    one = LabelledDie("d6", "1", (95 - r, 85 - r, 95 + r, 85 + r))
    assert pip_diameter(image, one.box) == pytest.approx(2 * pip_radius(1, 70) + 1, abs=1)
    grown = with_die_boxes(LabelledImage(path, 200, 200, (one,), "matteop65-d6-desk/Train"))
    assert iou(grown.dice[0].box, die) > 0.85, grown.dice[0].box


def test_set_cross_entropy_is_cross_entropy_for_one_class_and_a_sum_for_a_set():
    """One allowed class: torch's label-smoothed cross-entropy; a set (a rendered d6, face not
    trusted): -log of the set's summed probability."""
    import torch

    from pi_table.train.__main__ import allowed_classes, set_cross_entropy

    classes = ["d6:1", "d6:2", "d6:3", "d8:*", "none"]
    logits = torch.tensor([[2.0, 0.5, -1.0, 0.3, 0.0], [0.1, 0.2, 0.3, 2.0, -1.0]])
    one = torch.from_numpy(np.stack([allowed_classes(classes, "d6:2"), allowed_classes(classes, "d8:*")]))
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([1, 3]), label_smoothing=0.1)
    assert torch.allclose(set_cross_entropy(logits, one, 0.1), expected)
    kind = torch.from_numpy(allowed_classes(classes, "d6:2", kind_only=True)[None])
    assert kind.tolist() == [[True, True, True, False, False]]
    p = torch.softmax(logits[:1], dim=1)
    assert torch.allclose(set_cross_entropy(logits[:1], kind, 0.0), -torch.log(p[0, :3].sum()))


def test_crop_bank_samples_the_die_turned_and_framed_as_the_reader_cuts_it(tmp_path):
    """A white square die cut once at twice its box, sampled without jitter: the die fills
    1/margin of the crop, centred, whatever the angle (a square turned by 45 degrees is wider)."""
    path = tmp_path / "d.png"
    cv2.imwrite(str(path), white_box_image((80, 70, 120, 110)))
    im = LabelledImage(path, 200, 200, (LabelledDie("d8", "3", (80, 70, 120, 110)),), "renders")
    bank = D.CropBank.cut([im], lambda d: d.kind == "d8", side=96, margin=2.0)
    assert bank.crops.shape == (1, 96, 96, 3) and bank.labels == ["d8:3"]
    rng = np.random.default_rng(0)
    widths = []
    for _ in range(40):
        crop = bank.sample(0, rng, size=64, margin=1.25, jitter=0)
        ys, xs = np.nonzero(crop[:, :, 0] > 127)
        assert abs((xs.min() + xs.max()) / 2 - 31.5) <= 2 and abs((ys.min() + ys.max()) / 2 - 31.5) <= 2
        widths.append(xs.max() - xs.min() + 1)
    assert 49 <= min(widths) <= 53 and max(widths) > 64 * 0.95  # 64 / 1.25 = 51 px; turned 45 degrees, 72 px (cut)


def test_numeral_net_reads_any_size_and_exports_logits_only(tmp_path):
    """NumeralNet: logits per crop, grey/high-pass (+ colour) input; its ONNX file has no box output,
    and the reader's Classifier reads it (no box head: refines is False)."""
    torch = pytest.importorskip("torch")
    from pi_table.train.nets import NumeralNet, export_classifier

    net = NumeralNet(28, channels=(8, 16, 24, 32))
    assert net(torch.zeros(3, 3, 64, 64)).shape == (3, 28) and net(torch.zeros(2, 3, 48, 48)).shape == (2, 28)
    assert net.prepare(torch.rand(2, 3, 64, 64)).shape[1] == 6
    assert NumeralNet(28, channels=(8, 16, 24, 32), colour=False).prepare(torch.rand(2, 3, 64, 64)).shape[1] == 3
    path = tmp_path / "numerals.onnx"
    export_classifier(net, path, 64)
    model = Classifier(path, [f"c{i}" for i in range(28)], 1.0, 64, 1.15)
    assert not model.refines
    crops = np.random.default_rng(0).random((4, 3, 64, 64), np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(crops)).numpy()
    assert np.allclose(model.logits(crops), expected, atol=1e-4)


def test_int8_numerals_are_smaller_and_agree_with_the_float_model(tmp_path):
    """nets.quantize_int8: int8 weights take about a quarter of the float file, the reader
    loads the result, and on crops like its calibration batches its logits follow the float
    model's (correlation above 0.95)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from pi_table.train.nets import NumeralNet, export_classifier, quantize_int8

    torch.manual_seed(0)
    net = NumeralNet(28, channels=(16, 32, 48, 64))
    float_path, int8_path = tmp_path / "float.onnx", tmp_path / "int8.onnx"
    export_classifier(net, float_path, 64)
    rng = np.random.default_rng(0)
    batches = [rng.random((8, 3, 64, 64), np.float32) for _ in range(4)]
    quantize_int8(float_path, int8_path, batches)
    assert int8_path.stat().st_size < 0.4 * float_path.stat().st_size
    classes = [f"c{i}" for i in range(28)]
    crops = rng.random((32, 3, 64, 64), np.float32)
    z_float = Classifier(float_path, classes, 1.0, 64, 1.15).logits(crops)
    z_int8 = Classifier(int8_path, classes, 1.0, 64, 1.15).logits(crops)
    assert z_int8.shape == (32, 28)
    assert np.corrcoef(z_float.ravel(), z_int8.ravel())[0, 1] > 0.95


def test_first_conv_padded_to_four_channels_reads_every_crop_bit_for_bit(tmp_path, monkeypatch):
    """nets.pad_first_conv (which quantize_int8 runs last): the int8 classifier's first convolution
    gets a fourth, zero input channel, for onnxruntime's speed; every output stays the same bytes,
    and a second pass changes nothing. The shipped int8 models carry it."""
    pytest.importorskip("torch")
    onnx = pytest.importorskip("onnx")
    import shutil

    from onnx import numpy_helper

    from pi_table.train import nets
    from pi_table.vision.reader import _session, models_dir

    def first_conv_channels(path):
        model = onnx.load(str(path))
        conv = next(n for n in model.graph.node if n.op_type == "Conv")
        made_by = {o: n for n in model.graph.node for o in n.output}
        weights = {i.name: i for i in model.graph.initializer}
        return numpy_helper.to_array(weights[made_by[conv.input[1]].input[0]]).shape[1]

    nets.torch.manual_seed(0)
    float_path, plain, padded = tmp_path / "float.onnx", tmp_path / "plain.onnx", tmp_path / "padded.onnx"
    nets.export_classifier(nets.ClassifierNet(9, width=0.5), float_path, 48)
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 256, (8, 3, 48, 48)).astype(np.float32) * np.float32(1 / 255) for _ in range(3)]
    monkeypatch.setattr(nets, "pad_first_conv", lambda path, multiple=4: False)
    # 7-bit weights, as the shipped classifiers': with full 8-bit ones an x86 CPU without VNNI sums
    # pairs of products in saturating 16 bits (onnxruntime's AVX2 kernel), and the zero channel
    # moves which products are paired, so the bytes differ there (an AVX2-only AMD EPYC, 2026-11-29)
    nets.quantize_int8(float_path, plain, batches, reduce_range=True)
    monkeypatch.undo()
    shutil.copy(plain, padded)
    assert first_conv_channels(plain) == 3
    assert nets.pad_first_conv(padded) and first_conv_channels(padded) == 4
    assert not nets.pad_first_conv(padded)  # already a multiple of 4
    assert not nets.pad_first_conv(float_path)  # not QDQ: left alone
    crops = rng.integers(0, 256, (16, 3, 48, 48)).astype(np.float32) * np.float32(1 / 255)
    before, after = (_session(p, 1).run(["logits", "box"], {"crops": crops}) for p in (plain, padded))
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    # quantize_int8 itself writes the padded model
    again = tmp_path / "again.onnx"
    nets.quantize_int8(float_path, again, batches)
    assert first_conv_channels(again) == 4
    for name, channels in (("classifier.onnx", 4), ("classifier-2.onnx", 4), ("numerals.onnx", 8)):
        assert first_conv_channels(models_dir() / name) == channels


def test_detector_sizes_before_their_softplus_give_the_same_boxes_bit_for_bit(tmp_path, monkeypatch):
    """nets.export_detector writes the box sizes before their softplus (``size_logit``,
    nets.raw_size_output) and the reader takes the softplus of the peaks alone (reader.softplus_at):
    every box is the same as from a file whose graph applies the softplus to the whole map, which
    the reader still reads. The reader's one-node Softplus model is onnx.helper's bytes, and the
    shipped detectors give size_logit."""
    pytest.importorskip("torch")
    onnx = pytest.importorskip("onnx")
    import shutil

    from onnx import TensorProto, helper

    from pi_table.train import nets
    from pi_table.vision import reader as R

    nets.torch.manual_seed(0)
    net = nets.DetectorNet(width=0.5)
    raw, whole = tmp_path / "raw.onnx", tmp_path / "whole.onnx"
    monkeypatch.setattr(nets, "raw_size_output", lambda path: False)
    nets.export_detector(net, whole, 128)
    monkeypatch.undo()
    shutil.copy(whole, raw)
    assert nets.raw_size_output(raw) and not nets.raw_size_output(raw)  # a second pass changes nothing
    assert [o.name for o in onnx.load(str(raw)).graph.output] == ["heat", "size_logit", "offset"]
    again = tmp_path / "again.onnx"
    nets.export_detector(net, again, 128)
    assert [o.name for o in onnx.load(str(again)).graph.output] == ["heat", "size_logit", "offset"]
    image = np.random.default_rng(0).integers(0, 256, (300, 420, 3), dtype=np.uint8)
    # threshold 0: every local peak of the untrained net's heat map is a box, hundreds of them
    a, b = (R.Detector(p, input_size=256, threshold=0.0) for p in (whole, raw))
    assert (a.size_output, b.size_output) == ("size", "size_logit")
    found_a, found_b = a.detect(image), b.detect(image)
    assert len(found_a) > 100 and found_a == found_b
    node = helper.make_node("Softplus", ["x"], ["y"])
    graph = helper.make_graph([node], "softplus", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pi_table")
    model.ir_version = 8
    assert model.SerializeToString() == R._SOFTPLUS_ONNX
    for name in ("detector.onnx", "detector-big.onnx"):
        assert R.Detector(R.models_dir() / name).size_output == "size_logit"


def test_crop_bank_turns_a_dies_offset_from_the_image_centre_with_its_crop():
    """The cocked model sees where a die lies (CoordConv planes): a crop turned by any angle
    must carry the offset turned alike, or a flat die's perspective side points the wrong way."""
    from pi_table.vision.reader import centre_offset

    image = np.zeros((400, 600, 3), np.uint8)
    box = (440, 180, 480, 220)  # right of the image centre (300, 200)
    image[195:205, 470:480] = 255  # a mark on the die's side away from the centre
    im = LabelledImage(None, 600, 400, (LabelledDie("d6", "1", box),), "t")
    bank = D.CropBank.cut([im], lambda d: True, side=96, margin=2.0, load=lambda p: image)
    assert np.allclose(bank.offsets[0], centre_offset(box, 600, 400)) and bank.offsets[0][0] > 0.2
    rng = np.random.default_rng(3)
    for _ in range(8):
        crop, offset = bank.sample(0, rng, 64, 2.0, jitter=0.0, offset=True)
        ys, xs = np.nonzero(crop[:, :, 0] > 127)
        mark = np.array([xs.mean() - 31.5, ys.mean() - 31.5])
        assert np.linalg.norm(offset) == pytest.approx(np.linalg.norm(bank.offsets[0]), rel=1e-4)
        assert mark @ offset / (np.linalg.norm(mark) * np.linalg.norm(offset)) > 0.95  # same direction
    plain = bank.sample(0, np.random.default_rng(3), 64, 2.0, jitter=0.0)
    assert isinstance(plain, np.ndarray)  # without offset=True: the crop alone, as before


@pytest.mark.parametrize("option, value, need", [("--steps", "0", "1 or more"), ("--crop-size", "8", "16 or more"),
                                                 ("--flat-target", "1.5", "0..1"), ("--batch", "-1", "1 or more"),
                                                 ("--channels", "12,24,48", "four whole numbers of 1 or more"),
                                                 ("--channels", "12,x,48,64", "four whole numbers of 1 or more"),
                                                 ("--blocks", "1,1,-1,1", "four whole numbers of 0 or more")])
def test_cocked_training_names_a_bad_option_in_one_line(tmp_path, option, value, need):
    """A bad number gives one line naming it and exit status 2, before any data is read."""
    import subprocess
    import sys

    from tests.conftest import REPO

    r = subprocess.run([sys.executable, "-m", "pi_table.train.cocked", "--renders", str(tmp_path), "--out", str(tmp_path),
                        option, value], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"error: {option} must be {need}, got {float(value) if option == '--flat-target' else value}" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "cocked.onnx").exists()


def test_distill_loss_is_zero_when_student_and_teacher_agree_and_pulls_towards_the_teacher():
    """Hinton et al. 2015: KL from the teacher's softened scores; 0 at agreement, > 0 otherwise, and a
    gradient step moves the student's distribution towards the teacher's."""
    torch = pytest.importorskip("torch")
    from pi_table.train.__main__ import distill_loss

    teacher = np.array([[4.0, 0.0, -2.0], [0.0, 3.0, 0.0]], np.float32)
    assert float(distill_loss(torch.from_numpy(teacher), teacher)) == pytest.approx(0.0, abs=1e-6)
    student = torch.zeros(2, 3, requires_grad=True)
    loss = distill_loss(student, teacher)
    assert float(loss.detach()) > 0.1
    loss.backward()
    with torch.no_grad():
        moved = student - 1.0 * student.grad
    assert float(distill_loss(moved, teacher)) < float(loss.detach())


def test_the_teacher_is_the_shipped_pair_in_the_students_class_order(tmp_path, capsys):
    """--distill models: the teacher's scores are the reader's averaged raw scores, its columns
    picked in the student's class order; a folder without a reader, another crop size or a class
    the teacher lacks is refused with one line and exit 2."""
    from pi_table.train.__main__ import load_teacher, teacher_scores
    from pi_table.vision import DiceReader
    from pi_table.vision.reader import models_dir

    reader = DiceReader(threads=1)
    classes = ["none", "d6:6", "d6:1"]
    teacher = teacher_scores(load_teacher(models_dir(), reader.classifier.crop_size, threads=1), classes, models_dir())
    crops = np.random.default_rng(0).random((3, 3, reader.classifier.crop_size, reader.classifier.crop_size),
                                            dtype=np.float32)
    want = reader.classifier.logits(crops)[:, [reader.classifier.classes.index(c) for c in classes]]
    assert np.allclose(teacher(crops), want, atol=1e-5)
    for folder, classes_, size, says in ((tmp_path, classes, 48, "no reader's settings"),
                                         (models_dir(), classes, 40, "48 px crops, this run 40"),
                                         (models_dir(), ["d6:1", "d12:3", "none"], 48, "no class d12:3")):
        with pytest.raises(SystemExit) as stop:
            teacher_scores(load_teacher(folder, size, threads=1), classes_, folder)
        said = capsys.readouterr().err
        assert stop.value.code == 2 and says in said and len(said.strip().splitlines()) == 1


def test_reuse_classifiers_copies_them_keeps_them_in_place_and_checks_classes(tmp_path, capsys):
    """--cls-from: the classifiers (and numeral model) are copied into --out; --cls-from the --out folder itself
    keeps them where they are; classes that are not this data's are refused in one line."""
    from pi_table.train.__main__ import classifiers_from, reuse_classifiers

    source, out = tmp_path / "a", tmp_path / "b"
    source.mkdir(), out.mkdir()
    entry = {"file": ["classifier.onnx", "classifier-2.onnx"], "classes": ["d6:1", "none"], "crop_size": 48, "margin": 1.3}
    (source / "reader.json").write_text(json.dumps({"classifier": entry}))
    for name in ("classifier.onnx", "classifier-2.onnx", "numerals.onnx"):
        (source / name).write_bytes(name.encode())
    assert classifiers_from(source, 48, 1.3) == entry
    assert reuse_classifiers(source, entry, ["d6:1", "none"], out) == ["classifier.onnx", "classifier-2.onnx"]
    assert (out / "classifier-2.onnx").read_bytes() == b"classifier-2.onnx" and (out / "numerals.onnx").is_file()
    assert reuse_classifiers(source, entry, ["d6:1", "none"], source) == ["classifier.onnx", "classifier-2.onnx"]
    assert (source / "classifier.onnx").read_bytes() == b"classifier.onnx"
    (source / "classifier-2.onnx").unlink()
    for call in (lambda: reuse_classifiers(source, entry, ["d6:2", "none"], out), lambda: classifiers_from(source, 48, 1.3)):
        with pytest.raises(SystemExit) as stop:
            call()
        assert stop.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_numeral_training_in_slices_goes_on_from_its_checkpoint(tmp_path):
    """``--checkpoint`` with ``--stop-after``: the first slice stops with no model and the state of the
    unbroken run at that step; the same command goes on to a model; slices stopped at the same
    steps give the same bytes, and the log names the step it went on from."""
    import subprocess
    import sys

    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    from tests.conftest import REPO

    renders = tmp_path / "r"
    small_renders(renders)

    def train(name, *extra):
        cmd = [sys.executable, "-m", "pi_table.train.numerals", "--renders", str(renders), "--out", str(tmp_path / name),
               "--smoke", "--checkpoint-every", "1", *extra]
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout + r.stderr

    train("whole", "--checkpoint", str(tmp_path / "whole.pt"))  # smoke: 4 steps, a checkpoint after each
    whole = torch.load(tmp_path / "whole.pt", weights_only=True)
    assert whole["step"] == 4 and len(whole["losses"]) == 4 and whole["resumed_at"] == []
    for name in ("a", "b"):
        said = train(name, "--checkpoint", str(tmp_path / f"{name}.pt"), "--stop-after", "2")
        assert "stopped after step 2 of 4" in said and not (tmp_path / name / "numerals.onnx").exists()
    half = torch.load(tmp_path / "a.pt", weights_only=True)
    assert half["step"] == 2 and half["losses"] == whole["losses"][:2]
    for name in ("a", "b"):
        assert "going on from step 2 of 4" in train(name, "--checkpoint", str(tmp_path / f"{name}.pt"))
    assert (tmp_path / "a" / "numerals.onnx").read_bytes() == (tmp_path / "b" / "numerals.onnx").read_bytes()
    log = json.loads((tmp_path / "a" / "numerals-log.json").read_text())
    assert log["resumed_at"] == [2]


def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path, capsys):
    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    from pi_table.train.numerals import load_checkpoint, parse_args, run_options

    args = parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--checkpoint", str(tmp_path / "c.pt")])
    assert load_checkpoint(args.checkpoint, args) is None  # no file yet: a new run
    torch.save({"options": {**run_options(args), "steps": "16000"}}, args.checkpoint)
    with pytest.raises(SystemExit) as stop:
        load_checkpoint(args.checkpoint, args)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: --checkpoint: {args.checkpoint} was made with --steps 16000, this run has 8000"
    args.checkpoint.write_text("not a checkpoint")
    with pytest.raises(SystemExit):
        load_checkpoint(args.checkpoint, args)
    assert "is not a numeral training checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("extra, says", [(["--stop-after", "5"], "error: --stop-after: needs --checkpoint, the file the run goes on from"),
                                         (["--checkpoint", "c.pt", "--workers", "2"], "error: --checkpoint: needs --workers 0, got 2 (loader workers' batches cannot be resumed)"),
                                         (["--checkpoint", "c.pt", "--device", "cuda"], "error: --checkpoint: needs --device cpu, got cuda (the GPU's random stream is not saved)"),
                                         (["--checkpoint-every", "0"], "error: --checkpoint-every must be 1 or more, got 0")])
def test_checkpoint_options_are_checked_in_one_line(tmp_path, capsys, extra, says):
    from pi_table.train.numerals import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), *extra])
    assert stop.value.code == 2 and capsys.readouterr().err.strip() == says


def test_cocked_calibrate_only_names_a_malformed_model_in_one_line(tmp_path):
    """--calibrate-only on a cocked.onnx that is not a model: one line naming it and exit status 2,
    before any data is read (the check the reader's --calibrate-only makes of its files)."""
    import shutil
    import subprocess
    import sys

    from tests.conftest import REPO

    for name in ("reader.json", "splits.json"):
        shutil.copy(REPO / "models" / name, tmp_path / name)
    (tmp_path / "cocked.onnx").write_bytes(b"not a model")
    r = subprocess.run([sys.executable, "-m", "pi_table.train.cocked", "--renders", str(tmp_path / "none"), "--out",
                        str(tmp_path), "--calibrate-only"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"error: --calibrate-only: {tmp_path / 'cocked.onnx'} is not an ONNX model" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (tmp_path / "cocked.onnx").read_bytes() == b"not a model"


def test_cocked_card_gives_the_training_command_and_the_calib_flat_target(tmp_path):
    """cocked.md (pi_table.train.card.write_cocked_card) names the command with the thread count the
    shipped model was trained on, the calib split's flat-dice target as a percentage, and per kind
    of the rendered set the flat dice flagged and read right."""
    import argparse

    from pi_table.train.card import write_cocked_card

    log = {"args": {"seed": "0", "threads": "1", "flat_target": "0.00165", "renders": ["renders/train", "renders/num"]},
           "seconds": 3150.1, "photo_flat_flagged": 0.0, "calib_photo_dice": 225, "render_flat_flagged": 0.0016,
           "calib_render_flat": 3048, "cocked_caught": 0.358, "calib_render_cocked": 318}
    (tmp_path / "cocked-log.json").write_text(json.dumps(log))
    args = argparse.Namespace(models=tmp_path, data="DATA", renders="renders/valid")
    ck = {"crop_size": 64, "margin": 1.3, "temperature": 0.785, "threshold": 0.992, "position": True}
    real = {"folders": {"nellbyler-d6-tray": {"counts": {"found": 344}, "cocked": 0.0}}}
    rend = {"all": {"kinds": {"d8": {"counts": {"cocked_found": 5, "flat_found": 20}, "cocked_caught": 0.4,
                                     "flat_flagged": 0.05, "flat_read_right": 0.9}}}}
    write_cocked_card(args, ck, {"cocked.onnx": 904000}, real, rend)
    card = (tmp_path / "cocked.md").read_text()
    assert card.splitlines()[2] == ("How each shipped choice was made, and what was tried and not shipped: "
                                    "models/history/cocked.md.")
    assert ("python3 -m pi_table.train.cocked --data ../shared/data/real --renders renders/train --renders renders/num "
            "--out models/ --seed 0 --threads 1") in card
    assert "(CPU, 1 thread(s), seed 0, 3150.1 s)" in card
    assert "at most 0.165% of the calib split's" in card and "P(cocked) >=\n0.992 is reported" in card
    assert "| d8 | 5 | 40.00% | 20 | 5.00% | 90.00% |" in card
    assert "| nellbyler-d6-tray | 344 | 0.00% |" in card
    assert "--calibrate-only" not in card
    # fitted again by --calibrate-only: the training command stands, the threshold's target is the calibration's,
    # and the card gives the calibration's command too
    log["calibration"] = {"seconds": 225.0, "args": {"flat_target": "0.001", "int8": "False", "calibrate_only": "True"}}
    (tmp_path / "cocked-log.json").write_text(json.dumps(log))
    write_cocked_card(args, ck, {"cocked.onnx": 904000}, real, rend)
    card = (tmp_path / "cocked.md").read_text()
    assert "(CPU, 1 thread(s), seed 0, 3150.1 s)" in card and "at most 0.1% of the calib split's" in card
    assert ("the weights kept (225.0 s):\n\n```sh\npython3 -m pi_table.train.cocked --data ../shared/data/real "
            "--renders renders/train --renders renders/num --out models/ --seed 0 --threads 1 --calibrate-only "
            "--flat-target 0.001\n```") in card
    # the calibration's command carries the thread count it ran on, where its log says
    log["calibration"]["args"]["threads"] = "2"
    (tmp_path / "cocked-log.json").write_text(json.dumps(log))
    write_cocked_card(args, ck, {"cocked.onnx": 904000}, real, rend)
    card = (tmp_path / "cocked.md").read_text()
    assert "--seed 0 --threads 1\n```" in card and "--threads 2 --calibrate-only --flat-target 0.001" in card


def test_card_gives_each_run_with_the_options_its_log_recorded():
    """pi_table.train.card.recorded_options: the options of a logged run (the trainers log
    ``str(vars(args))``) that differ from the trainer's defaults, as a command gives them: the card's
    recalibration command had only --calib-renders, and said "weights unchanged" of a run that
    quantised the classifiers (--int8) and chose the numbered kinds' thresholds at their own target."""
    from pi_table.train.__main__ import parse_args
    from pi_table.train.card import recorded_options

    # the recalibration logged in models/train-log.json until 2026-12-01 (its options that differ from the defaults)
    recalibration = {"data": "[PosixPath('../shared/data/real')]", "renders": "[PosixPath('renders/train')]",
                     "cls_renders": "[]", "out": "runs/tta8", "calib_renders": "[PosixPath('renders/big')]", "seed": "0",
                     "cls_steps": "8000", "det_from": "None", "numbered_wrong_target": "0.0015", "fixed_labels": "False",
                     "second_look": "8", "cascade": "None", "calibrate_only": "True", "int8": "True", "threads": "2"}
    options = recorded_options(recalibration, parse_args, ["--data", "x", "--out", "y"],
                               skip=("data", "renders", "out", "seed", "threads", "smoke", "calibrate_only"))
    assert options == ["--calib-renders renders/big", "--numbered-wrong-target 0.0015", "--int8"]
    logged = {"renders": "[PosixPath('renders/train'), PosixPath('renders/num')]", "steps": "16000",
              "channels": "(8, 16, 32, 64)", "channels_last": "True", "int8": "False", "seed": "0"}
    assert recorded_options(logged, parse_args, ["--data", "x", "--out", "y"], skip=("seed",)) == [
        "--renders renders/train", "--renders renders/num"]
    from pi_table.train.numerals import parse_args as numerals_args

    assert recorded_options(logged, numerals_args, ["--renders", "x", "--out", "y"], skip=("renders",)) == [
        "--steps 16000", "--channels 8,16,32,64", "--channels-last"]
    cocked_log = {"renders": ["renders/train", "renders/num"], "blocks": "(0, 1, 2, 1)", "flat_target": "0.001"}
    from pi_table.train.cocked import parse_args as cocked_args

    assert recorded_options(cocked_log, cocked_args, ["--renders", "renders/train", "--renders", "renders/num",
                                                      "--out", "y"]) == ["--flat-target 0.001"]


def test_classifier_card_gives_the_command_its_log_recorded():
    """pi_table.train.card.train_command_from_log: the shipped classifiers' card gives the run that made them, from
    models/train-log.json (two --member runs side by side, then copied into models/), not the README's full run."""
    from pi_table.train.__main__ import parse_args
    from pi_table.train.card import train_command_from_log

    shipped = json.loads((REPO_MODELS / "train-log.json").read_text())["args"]
    first, note = train_command_from_log(shipped, parse_args).split("\n")
    assert first.startswith("python3 -m pi_table.train --data ../shared/data/real --renders renders/train ")
    for option in ("--cls-steps 16000", "--det-from models", "--calib-d6 pooled", "--fixed-labels", "--int8",
                   "--cascade 0.97", "--out runs/c16fx", "--seed 0", "--member K"):
        assert option in first
    assert "side by side" in note and "copied into models/" in note
    one_run = {**shipped, "member": "None", "out": "models/", "cls_steps": "8000"}
    assert train_command_from_log(one_run, parse_args).endswith("--out models/ --seed 0")
    assert "--cls-steps" not in train_command_from_log(one_run, parse_args)


def test_card_says_how_the_cascade_was_set_and_what_it_does():
    """pi_table.train.card.cascade_texts: with reader.json's classifier ``cascade``, the card's command
    gains the line that sets it (what --cascade writes) and the card a sentence on what it skips; nothing
    without one or for a single classifier."""
    from pi_table.train.card import cascade_texts

    pair = {"file": ["classifier.onnx", "classifier-2.onnx"], "cascade": 0.97}
    command, sentence = cascade_texts(pair)
    assert command.startswith("\n# then reader.json's classifier `cascade` set to 0.97: what `--cascade 0.97`")
    assert "d6 face at a calibrated 0.97 or more" in sentence and "numbered shape or `none` always goes to both" in sentence
    assert cascade_texts({"file": pair["file"]}) == ("", "")
    assert cascade_texts({"file": "classifier.onnx", "cascade": 0.97}) == ("", "")


@pytest.mark.parametrize("writer, option, values, first_row", [
    ("turned_rows", "turn", [90, 180, 270], "| nellbyler-d6-tray, turned 90 degrees | 40 | 346 | 91.04% |"),
    ("coloured_rows", "colour", ["grey", "pale", "warm", "cool"], "| nellbyler-d6-tray, grey | 40 | 346 | 91.04% |")])
def test_card_reads_the_held_out_photos_turned_and_recoloured(monkeypatch, writer, option, values, first_row):
    """The card writer's turned and colour rows: the held-out photos read turned 90, 180 and 270 degrees (``eval
    --turn``) and as other cameras' colours (``eval --colour``), a row per data folder and turn or colour, and each
    one's command for the card's list."""
    from pi_table.train import card
    from pi_table.vision import evaluate as ev

    calls = []
    score = {"images": 40, "dice": 346, "read_right": 0.9104, "recall": 0.974, "precision": 0.985, "wrong_at_ok": 0.003,
             "unreadable": 0.06, "false_dice_per_100_images": 12.5, "ece": 0.011}

    def fake(reader, root, **kw):
        calls.append(kw)
        return {"folders": {"nellbyler-d6-tray": score}}

    monkeypatch.setattr(ev, "evaluate", fake)
    cmds = []
    rows = getattr(card, writer)("the reader", Path("../shared/data/real"), cmds)
    assert [c[option] for c in calls] == values and all(c["held_out"] for c in calls)
    assert rows[0].startswith(first_row) and len(rows) == len(values)
    assert cmds == [f"pi-table eval ../shared/data/real --held-out --{option} {v}" for v in values]


def test_card_keeps_the_last_leave_one_folder_out_table_from_the_record(tmp_path):
    """pi_table.train.card.kept_lofo: without --lofo models, the classifier card quotes the
    leave-one-folder-out table and its paragraph from models/history/classifier.md as last measured
    there (the card writer used to drop it: the models are not kept); nothing from a record without one."""
    from pi_table.train.card import kept_lofo

    kept = kept_lofo(REPO_MODELS / "history" / "classifier.md")
    assert kept.startswith("Leave one folder out (a model trained on one real folder only")
    assert "| matteop65-d6-desk/Valid (trained only on nellbyler-d6-tray, renders) |" in kept
    assert "shipped recipe's step counts" in kept and "trained again on 2026-11-26" in kept and "## " not in kept
    (tmp_path / "classifier.md").write_text("# a card\n\n## Speed\n")
    assert kept_lofo(tmp_path / "classifier.md") == "" == kept_lofo(tmp_path / "none.md")


def test_cocked_calibration_keeps_the_training_log_and_survives_a_broken_one(tmp_path, capsys):
    """--calibrate-only (pi_table.train.cocked.with_training_log): the training run's curve, dice, time
    and options stay, the calibration's time and options go under "calibration"; a log that is not a
    JSON object is named in one line and this run's values are logged as they are, no traceback."""
    from pi_table.train.cocked import with_training_log

    run = {"seconds": 225.0, "args": {"calibrate_only": "True"}}
    trained = {"loss": [0.1], "dice": {"flat": 3}, **run}
    entry = {"classes": ["flat", "cocked"], "threshold": 0.99, **trained}
    path = tmp_path / "cocked-log.json"
    path.write_text(json.dumps({"loss": [0.6, 0.4], "dice": {"flat": 9}, "seconds": 2777.7, "args": {"threads": "1"}}))
    merged = with_training_log(entry, trained, run, path)
    assert merged["loss"] == [0.6, 0.4] and merged["dice"] == {"flat": 9} and merged["seconds"] == 2777.7
    assert merged["args"] == {"threads": "1"} and merged["calibration"] == run and merged["threshold"] == 0.99
    for broken in ("{not json", "[1, 2]"):
        path.write_text(broken)
        assert with_training_log(entry, trained, run, path) == entry
        assert f"{path} is not a training log" in capsys.readouterr().out
    path.unlink()  # no log at all: this run's values, as before
    assert with_training_log(entry, trained, run, path) == entry and capsys.readouterr().out == ""



def trained_norms(net) -> None:
    """Give ``net``'s batch norms statistics and affine weights that are not the identity, as a
    trained net's are not (warm_start tests)."""
    import torch

    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)


def exported_numeral_net(path, classes: int):
    """A small NumeralNet (channels 8-16-24-32, seed 0, batch norms as if trained) reading ``classes``
    classes, exported as a float model to ``path``; the net (eval mode), 64 random 48x48 crops and its
    scores for them (64 x ``classes``)."""
    import torch

    from pi_table.train.nets import NumeralNet, export_classifier

    torch.manual_seed(0)
    source = NumeralNet(classes, channels=(8, 16, 24, 32))
    trained_norms(source)
    source.eval()
    crops = torch.from_numpy(np.random.default_rng(0).random((64, 3, 48, 48), dtype=np.float32))
    with torch.no_grad():
        want = source(crops).numpy()
    export_classifier(source, path, 48)
    return source, crops, want


def test_warm_start_gives_back_the_exported_numeral_model(tmp_path):
    """``nets.warm_start`` unfolds an exported model's batch norms: a fresh net started from the
    float file reads its crops as the net that wrote it did, in eval mode; from the int8 file it
    keeps the top class of nearly every crop; a net of another width is refused, naming the layer."""
    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    pytest.importorskip("onnxruntime")
    from pi_table.train.nets import NumeralNet, export_int8, warm_start

    source, crops, want = exported_numeral_net(tmp_path / "float.onnx", 28)
    export_int8(source, tmp_path / "int8.onnx", 48, [crops[i : i + 16].numpy() for i in range(0, 64, 16)])

    for name, close in (("float.onnx", True), ("int8.onnx", False)):
        torch.manual_seed(1)
        net = NumeralNet(28, channels=(8, 16, 24, 32))
        warm_start(net, tmp_path / name, crops)
        assert net.training  # left in the mode it came in
        net.eval()
        with torch.no_grad():
            got = net(crops).numpy()
        if close:
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
        else:
            assert np.mean(got.argmax(axis=1) == want.argmax(axis=1)) >= 0.9
        # the net's own batch statistics on the same crops (training mode, dropout aside) agree too
        net.train()
        net.drop.p = 0.0
        with torch.no_grad():
            assert np.mean(net(crops).numpy().argmax(axis=1) == got.argmax(axis=1)) >= 0.9

    with pytest.raises(ValueError, match=r"layer 0 has weights \(8, 6, 3, 3\), the net \(12, 6, 3, 3\)"):
        warm_start(NumeralNet(28, channels=(12, 16, 24, 32)), tmp_path / "float.onnx", crops)


def test_warm_start_into_a_net_with_more_classes_keeps_the_files_classes(tmp_path):
    """``warm_start(..., fc_rows=...)``: a net that reads the file's classes and new ones (a numeral model
    taught d6 numerals, ``numerals --d6``) gives the file's scores for its classes at the rows named,
    the new rows start fresh with the file's mean bias; rows that are not distinct, or past the net's,
    are refused."""
    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    pytest.importorskip("onnxruntime")
    from pi_table.train.nets import NumeralNet, warm_start

    source, crops, want = exported_numeral_net(tmp_path / "float.onnx", 5)
    rows = [1, 2, 4, 5, 6]  # the file's five classes; rows 0 and 3 are new
    torch.manual_seed(1)
    net = NumeralNet(7, channels=(8, 16, 24, 32))
    warm_start(net, tmp_path / "float.onnx", crops, fc_rows=rows)
    net.eval()
    with torch.no_grad():
        got = net(crops).numpy()
    np.testing.assert_allclose(got[:, rows], want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    bias = net.fc.bias.detach().numpy()
    np.testing.assert_allclose(bias[[0, 3]], source.fc.bias.detach().numpy().mean(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"fc_rows \[1, 1, 4, 5, 6\] are not distinct rows of the net's 7"):
        warm_start(NumeralNet(7, channels=(8, 16, 24, 32)), tmp_path / "float.onnx", crops, fc_rows=[1, 1, 4, 5, 6])
    with pytest.raises(ValueError, match=r"float.onnx: fc gives 5 scores, 4 classes named for them"):
        warm_start(NumeralNet(7, channels=(8, 16, 24, 32)), tmp_path / "float.onnx", crops, fc_rows=[1, 2, 4, 5])


def test_warm_start_gives_back_the_exported_detector(tmp_path):
    """``nets.warm_start`` on a detector: its batch norms unfolded from the patches' statistics and
    its lateral and output convolutions (no batch norm) taken as they are, a fresh net reads the
    patches as the exported one does (heat, box size, offset)."""
    torch = pytest.importorskip("torch", reason="training needs PyTorch (optional extra `train`)")
    ort = pytest.importorskip("onnxruntime")
    from pi_table.train.nets import DetectorNet, export_detector, warm_start

    torch.manual_seed(0)
    source = DetectorNet(width=0.5)
    trained_norms(source)
    export_detector(source, tmp_path / "det.onnx", 128)
    patches = torch.from_numpy(np.random.default_rng(0).random((6, 3, 128, 128), dtype=np.float32))
    torch.manual_seed(1)
    net = DetectorNet(width=0.5)
    warm_start(net, tmp_path / "det.onnx", patches)
    net.eval()
    session = ort.InferenceSession(str(tmp_path / "det.onnx"), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        heat, size, offset = (t.numpy() for t in net(patches))
    for i in range(len(patches)):
        want_heat, want_size_logit, want_offset = session.run(None, {"image": patches[i : i + 1].numpy()})
        np.testing.assert_allclose(heat[i : i + 1], want_heat, atol=1e-4)
        np.testing.assert_allclose(offset[i : i + 1], want_offset, atol=1e-4)
        np.testing.assert_allclose(size[i : i + 1], np.log1p(np.exp(want_size_logit)), rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match=r"layer 1 has weights \(12, 16, 3, 3\), the net \(48, 16, 3, 3\)"):
        warm_start(DetectorNet(width=2.0), tmp_path / "det.onnx", patches)


def test_numerals_training_goes_on_from_a_model_with_init(tmp_path):
    """``--init MODEL`` starts the net from a numeral model and logs its md5; a missing file or a
    model of other classes is refused in one line, exit status 2, before training."""
    import hashlib
    import shutil
    import subprocess
    import sys

    from tests.conftest import REPO

    renders = tmp_path / "r"
    small_renders(renders)

    def train(name, *extra):
        cmd = [sys.executable, "-m", "pi_table.train.numerals", "--renders", str(renders), "--out", str(tmp_path / name),
               "--smoke", *extra]
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)

    first = train("first")
    assert first.returncode == 0, first.stderr[-2000:]
    model = tmp_path / "first" / "numerals.onnx"
    again = train("again", "--init", str(model))
    assert again.returncode == 0, again.stderr[-2000:]
    log = json.loads((tmp_path / "again" / "numerals-log.json").read_text())
    first_log = json.loads((tmp_path / "first" / "numerals-log.json").read_text())
    assert first_log["init"] is None
    # the model it went on from, and that model's own run (its log beside it): the commands back to the data
    assert log["init"] == {"file": str(model), "md5": hashlib.md5(model.read_bytes()).hexdigest(),
                           "log": {k: first_log[k] for k in ("args", "init", "dice", "seconds")}}
    third = train("third", "--init", str(tmp_path / "again" / "numerals.onnx"))
    assert third.returncode == 0, third.stderr[-2000:]
    chain = json.loads((tmp_path / "third" / "numerals-log.json").read_text())["init"]
    assert chain["log"]["init"]["file"] == str(model) and chain["log"]["init"]["log"]["init"] is None

    missing = train("missing", "--init", str(tmp_path / "nope.onnx"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == f"error: --init: {tmp_path / 'nope.onnx'} is not a file"
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(model, other / "numerals.onnx")
    (other / "numerals.json").write_text(json.dumps({"classes": ["d8:1", "d8:2"]}))
    refused = train("refused", "--init", str(other / "numerals.onnx"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]  # its json names 2 classes, the file gives more scores
    assert re.fullmatch(re.escape(f"error: --init: {other / 'numerals.onnx'}: fc gives ") + r"\d+ scores, 2 classes named for them",
                        last), last
    assert not (tmp_path / "refused" / "numerals.onnx").exists()
    (other / "numerals.json").unlink()
    (other / "numerals.onnx").write_text("not a model")
    garbled = train("garbled", "--init", str(other / "numerals.onnx"))
    assert garbled.returncode == 2 and "Traceback" not in garbled.stderr
    assert garbled.stderr.strip().splitlines()[-1].startswith(f"error: --init: {other / 'numerals.onnx'} is not an ONNX model")


def test_oversample_draws_a_kind_more_often_and_refuses_a_bad_value(tmp_path, capsys):
    """``--oversample d10-tens=2`` draws each tens die twice as often as a d8 or d10; without it the
    chances are None (the draws training always made); a bad value is one line, exit status 2."""
    from pi_table.train.numerals import draw_chances, kind_weights, parse_args

    labels = ["d8:1", "d10:0", "d10-tens:00", "d10-tens:90"]
    chances = draw_chances(labels, kind_weights("d10-tens=2"))
    np.testing.assert_allclose(chances, [1 / 6, 1 / 6, 2 / 6, 2 / 6])
    assert draw_chances(labels, kind_weights("")) is None
    assert kind_weights("d8=1.5, d10=3") == {"d8": 1.5, "d10": 3.0}
    # --d6: a class (d6 printed with pips) weighs by its own weight, the other d6 by their kind's
    d6 = ["d6:pips", "d6:pips", "d6:3", "d8:1"]
    np.testing.assert_allclose(draw_chances(d6, kind_weights("d6:pips=0.5,d6=2")), [0.5 / 4, 0.5 / 4, 2 / 4, 1 / 4])
    for bad in ("d12=2", "d6:1=2", "d10-tens=0", "d10-tens", "d8=x", "d8=nan"):
        assert kind_weights(bad) is None
        with pytest.raises(SystemExit) as stop:
            parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--oversample", bad])
        assert stop.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: --oversample: must be KIND=W") and repr(bad) in err
    with pytest.raises(SystemExit) as stop:  # d6 weights without --d6: no d6 to draw
        parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--oversample", "d6:pips=0.25"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == "error: --oversample: 'd6:pips=0.25' weighs d6 dice, which only --d6 trains on"
    assert parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--d6", "--oversample",
                       "d6:pips=0.25"]).oversample_weights == {"d6:pips": 0.25}
    # photos: the bank's last dice (--pip-photos') by their own weight, whatever their class
    np.testing.assert_allclose(draw_chances(d6, kind_weights("d6:pips=0.5,photos=2"), photos=1), [0.5, 0.5, 1, 2] / np.float64(4))
    np.testing.assert_allclose(draw_chances(d6, kind_weights("d6:pips=0.5,photos=2")), [0.5, 0.5, 1, 1] / np.float64(3))
    with pytest.raises(SystemExit) as stop:
        parse_args(["--renders", str(tmp_path), "--out", str(tmp_path / "m"), "--d6", "--oversample", "photos=2"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == ("error: --oversample: 'photos=2' weighs the dice of --pip-photos, and "
                                               "none is given")


@pytest.mark.parametrize("module, argv, says", [
    ("pi_table.train.__main__", ["--data", "x", "--out", "y", "--seed", "x1"], "argument --seed: invalid int value: 'x1'"),
    ("pi_table.train.__main__", ["--data", "x"], "the following arguments are required: --out"),
    ("pi_table.train.numerals", ["--renders", "x", "--out", "y", "--steps", "many"], "invalid int value: 'many'"),
    ("pi_table.train.cocked", ["--out", "y"], "the following arguments are required: --renders"),
    ("pi_table.train.card", ["--data", "x", "--note"], "argument --note: expected one argument"),
])
def test_training_commands_give_one_line_for_a_usage_error(capsys, module, argv, says):
    """A missing or malformed option is one line naming it and exit status 2, as pi-table's own
    commands (pi_table.cli.Parser): not argparse's usage dump of the whole option list (the renderer's:
tests/test_render.py)."""
    import importlib

    mod = importlib.import_module(module)
    with pytest.raises(SystemExit) as stop:
        (mod.parse_args if hasattr(mod, "parse_args") else mod.main)(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


def unlabelled_folder(root):
    """A YOLO folder at ``root`` whose one image has no label file: no labelled image."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    cv2.imwrite(str(root / "images" / "a.jpg"), np.full((64, 64, 3), 128, np.uint8))
    return root


@pytest.mark.parametrize("module, argv, option", [
    ("pi_table.train.__main__", ["--data", "{bare}", "--paste-from", ""], "--data"),
    ("pi_table.train.__main__", ["--data", "{real}", "--paste-from", "", "--renders", "{bare}"], "--renders"),
    ("pi_table.train.numerals", ["--renders", "{bare}"], "--renders"),
    ("pi_table.train.numerals", ["--renders", "{real}", "--valid", "{bare}"], "--valid"),
    ("pi_table.train.cocked", ["--renders", "{real}", "--data", "{bare}"], "--data"),
])
def test_training_refuses_a_folder_without_labelled_images_in_one_line(tmp_path, capsys, module, argv, option):
    """A --data or --renders folder that holds images but no labels is one line naming the option
    and folder, exit 2, before --out is written: it was a traceback (a pool of no images) after
    splits.json was written over --out's, or was trained on as no data at all."""
    import importlib
    import shutil

    from tests.conftest import REPO

    bare = unlabelled_folder(tmp_path / "bare")
    real = unlabelled_folder(tmp_path / "real")  # one labelled die, a render's meta (not cocked) beside it
    (real / "labels" / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    (real / "meta").mkdir()
    (real / "meta" / "a.json").write_text(json.dumps({"dice": [{"cocked": False}]}))
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(REPO / "models" / "splits.json", out / "splits.json")
    (out / "reader.json").write_text(json.dumps({"classifier": {"margin": 1.3}}))  # pi_table.train.cocked reads it
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    argv = [a.format(bare=bare, real=real) for a in argv] + ["--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.strip().splitlines() == [
        f"error: {option}: no labelled images in {bare} (each image in images/ needs its .txt in labels/)"], err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("module, argv", [("pi_table.train.__main__", ["--data", "x"]),
                                          ("pi_table.train.numerals", ["--renders", "x"])])
@pytest.mark.parametrize("where", ["file", "under a file"])
def test_training_refuses_an_out_that_cannot_be_a_folder_in_one_line(tmp_path, capsys, module, argv, where):
    """--out naming a file (or a folder under one) is one line naming it, exit 2, before any data is
    read: it was a FileExistsError / NotADirectoryError traceback from making the folder."""
    import importlib

    afile = tmp_path / "afile"
    afile.write_text("keep")
    out = afile if where == "file" else afile / "models"
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).parse_args(argv + ["--out", str(out)])
    says = f"{afile} is not a folder" if where == "file" else f"{out} cannot be made: {afile} is not a folder"
    assert stop.value.code == 2 and capsys.readouterr().err.strip().splitlines() == [f"error: --out: {says}"]
    assert afile.read_text() == "keep"


def test_photometric_colour_sets_the_colour_changes_alone():
    """data.photometric's ``colour``: None draws and gives exactly what ``strength`` alone does (the shipped recipe's
    crops are the same); 0 keeps the channels' order (no swap, no grey, no white balance); a strong colour greys
    and swaps channels far more often (models/history/classifier.md, "Another camera's colour")."""
    from pi_table.train.data import photometric

    image = np.zeros((32, 32, 3), np.uint8)
    image[:, :] = (30, 120, 220)
    for seed in range(20):
        outs = []
        for colour in ((), (None,), (0.6,)):
            cv2.setRNGSeed(seed)  # the camera noise: OpenCV's own generator
            rng = np.random.default_rng(seed)
            outs.append((photometric(image, rng, 0.6, *colour), rng.random()))
        assert all(np.array_equal(o[0], outs[0][0]) and o[1] == outs[0][1] for o in outs)

    def changed(colour):
        n = 0
        for seed in range(200):
            m = photometric(image, np.random.default_rng(seed), 0.6, colour).reshape(-1, 3).mean(0)
            n += not (m[0] + 20 < m[1] and m[1] + 20 < m[2])  # blue under green under red no more
        return n

    assert changed(0.0) == 0
    assert changed(3.0) > changed(0.6) + 40


@pytest.mark.parametrize("option, value, need", [
    ("--crop-size", "0", "16 or more"), ("--threads", "0", "1 or more"), ("--cls-lr", "-1.0", "in (0, 1)"),
    ("--det-batch", "0", "1 or more"), ("--cls-batch", "-4", "1 or more"), ("--det-input", "0", "32 or more"),
    ("--det-patch", "250", "a multiple of 32"), ("--margin", "0.0", "above 0"), ("--threshold", "1.5", "0..1"),
    ("--paste", "2.0", "0..1"), ("--cls-augment", "-0.5", "0 or more"), ("--size-weight", "nan", "0 or more"),
    ("--box-weight", "-1.0", "0 or more"), ("--refine", "-1", "0 or more"), ("--cls-colour", "5.0", "0..4")])
def test_training_names_a_number_out_of_range_in_one_line(capsys, option, value, need):
    """Every number pi_table.train takes is checked before any data is read: one line naming the
    option and value, exit 2. These were taken as they came: --crop-size 0 trained (a crash or a
    nonsense model, minutes later), --threads 0 was torch's RuntimeError traceback, --det-patch 250
    a shape error in the detector's first step, after splits.json was written."""
    from pi_table.train.__main__ import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--data", "x", "--out", "y", option, value])
    assert stop.value.code == 2 and capsys.readouterr().err.strip() == f"error: {option} must be {need}, got {value}"


@pytest.mark.parametrize("module, option, value, need", [
    ("numerals", "--seed", "-1", "0 or more"), ("numerals", "--lr", "0.0", "in (0, 1)"),
    ("numerals", "--crop-size", "0", "16 or more"), ("numerals", "--margin", "-1.0", "above 0"),
    ("numerals", "--augment", "-1.0", "0 or more"), ("numerals", "--threads", "0", "1 or more"),
    ("cocked", "--seed", "-1", "0 or more"), ("cocked", "--lr", "5.0", "in (0, 1)")])
def test_numeral_and_cocked_training_name_a_number_out_of_range_in_one_line(capsys, module, option, value, need):
    """Checked before any data is read, one line, exit 2: a negative --seed was NumPy's ValueError
    traceback once the renders were loaded, --threads 0 torch's RuntimeError; --crop-size 0, a margin
    below 0 and a learning rate of 0 or 5 were taken as they came."""
    import importlib

    parse_args = importlib.import_module(f"pi_table.train.{module}").parse_args
    with pytest.raises(SystemExit) as stop:
        parse_args(["--renders", "x", "--out", "y", option, value])
    assert stop.value.code == 2 and capsys.readouterr().err.strip() == f"error: {option} must be {need}, got {value}"


@pytest.mark.parametrize("module, argv", [("__main__", ["--data", "x"]), ("__main__", ["--data", "x", "--calibrate-only"]),
                                          ("numerals", ["--renders", "x"]), ("cocked", ["--renders", "x"])])
def test_a_smoke_run_refuses_a_folder_of_trained_models(tmp_path, capsys, module, argv):
    """--smoke (a few steps on a few images) into a folder whose training logs are a real run's, as
    the shipped models/, is one line, exit 2: it wrote its few-step model (or thresholds fitted on three
    photos) over the trained one. A folder of smoke runs' models, or none, is taken."""
    import importlib
    import shutil

    from tests.conftest import REPO

    parse_args = importlib.import_module(f"pi_table.train.{module}").parse_args
    shipped = tmp_path / "models"
    shipped.mkdir()
    for log in sorted((REPO / "models").glob("*-log.json")):
        shutil.copy(log, shipped / log.name)
    with pytest.raises(SystemExit) as stop:
        parse_args([*argv, "--out", str(shipped), "--smoke"])
    first = sorted(p.name for p in shipped.iterdir())[0]
    assert stop.value.code == 2 and capsys.readouterr().err.strip().splitlines() == [
        f"error: --smoke: {shipped} holds a trained model ({first} is no smoke run's): a smoke run would write its "
        "few-step model over it; give another --out"]
    assert parse_args([*argv, "--out", str(shipped)]).smoke is False  # a real run may train there
    smoke = tmp_path / "smoke"
    smoke.mkdir()
    (smoke / "train-log.json").write_text(json.dumps({"args": {"smoke": "True"}}))
    assert parse_args([*argv, "--out", str(smoke), "--smoke"]).smoke and parse_args([*argv, "--out", str(tmp_path / "new"), "--smoke"]).smoke


def one_die_folder(root, photos: int = 12):
    """A YOLO folder at ``root``: ``photos`` grey photos (a.jpg, b.jpg, ...), each one d6 labelled 1."""
    unlabelled_folder(root)
    for k in range(photos):
        name = chr(ord("a") + k)
        if k:
            (root / "images" / f"{name}.jpg").write_bytes((root / "images" / "a.jpg").read_bytes())
        (root / "labels" / f"{name}.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    return root


def model_folder(root, *names, **renamed):
    """A folder at ``root`` holding copies of the shipped models' ``names`` (and ``renamed``: new name
    -> shipped name)."""
    import shutil

    from tests.conftest import REPO

    root.mkdir(parents=True)
    for name in names:
        shutil.copy(REPO / "models" / name, root / name)
    for new, name in renamed.items():
        shutil.copy(REPO / "models" / name, root / new.replace("_", "-").replace("-onnx", ".onnx"))
    return root


@pytest.mark.parametrize("case", ["close-up, no data", "det-from without a detector", "cls-from of other classes",
                                  "det-init of another width", "calibrate-only of another split"])
def test_a_refused_training_run_leaves_out_as_it_was(tmp_path, capsys, case):
    """Every check of pi_table.train comes before its first write into --out: a refused run leaves the
    folder byte for byte as it was. --close-up-from copied its detector over --out's close-up detector
    before --data was read (also for --calibrate-only, before the split was checked), and splits.json
    was written over --out's before --det-from's detector, --cls-from's classes and --det-init's shapes
    were checked."""
    from pi_table.train.__main__ import main

    data = one_die_folder(tmp_path / "real")
    out = model_folder(tmp_path / "out", "splits.json", "reader.json", "detector.onnx", "classifier.onnx",
                       "classifier-2.onnx", "numerals.onnx", "d6-numerals.onnx", "cocked.onnx", detector_big_onnx="detector-big.onnx")
    other = model_folder(tmp_path / "other", "detector.onnx", "reader.json", "classifier.onnx", "classifier-2.onnx")
    base = ["--data", str(data), "--paste-from", "", "--out", str(out), "--close-up-from", str(other)]
    argv, says = {
        "close-up, no data": (["--data", str(tmp_path / "nowhere")], f"error: --data: no such folder: {tmp_path / 'nowhere'}"),
        "det-from without a detector": (["--det-from", str(data)], f"error: --det-from: no detector.onnx in {data}"),
        "cls-from of other classes": (["--cls-from", str(other)], f"error: --cls-from {other}: its classifier's classes"),
        "det-init of another width": (["--det-init", str(other / "detector.onnx"), "--det-width", "0.5"],
                                      f"error: --det-init: {other / 'detector.onnx'}: layer 1 has weights"),
        "calibrate-only of another split": (["--calibrate-only"], f"error: --calibrate-only: {out / 'splits.json'} is not "
                                                                   "this data's split for seed 0"),
    }[case]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(SystemExit) as stop:
        main(base + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith(says), err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_det_from_the_out_folder_keeps_its_detector_in_place(tmp_path, monkeypatch):
    """--det-from naming --out itself (classifiers trained again beside the detector there) keeps the
    detector where it is, as --cls-from does: it was shutil.SameFileError, a traceback."""
    import pi_table.vision.reader as reader

    class Reached(Exception):
        pass

    def stop_after_the_detector(path, *args, **kwargs):
        assert path.read_bytes() == detector
        raise Reached

    monkeypatch.setattr(reader, "Detector", stop_after_the_detector)  # the hard-negative mining, next
    from pi_table.train.__main__ import main

    data = one_die_folder(tmp_path / "real")
    out = model_folder(tmp_path / "out", "detector.onnx")
    detector = (out / "detector.onnx").read_bytes()
    with pytest.raises(Reached):
        main(["--data", str(data), "--paste-from", "", "--out", str(out), "--det-from", str(out)])
    assert set(json.loads((out / "splits.json").read_text())["folders"]) == {"real"}


def test_training_data_that_is_all_held_out_is_refused_in_one_line(tmp_path, capsys):
    """--data whose every photo is held out (a folder named Valid, as matteop65-d6-desk/Valid) leaves
    nothing to train on: one line, exit 2, --out left alone. It was NumPy's ValueError traceback at the
    detector's first step, after splits.json was written."""
    from pi_table.train.__main__ import main

    data = one_die_folder(tmp_path / "Valid")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        main(["--data", str(data), "--paste-from", "", "--out", str(out)])
    assert stop.value.code == 2 and capsys.readouterr().err.strip().splitlines() == [
        f"error: --data: no labelled die to train on: every photo of {data} is held out for calib or valid (a folder "
        "named Valid is held out whole) and there are no --renders"]
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("case", ["models empty", "models missing", "data missing", "renders missing", "lofo without =",
                                  "lofo models empty", "lofo folder missing", "models without splits"])
def test_card_names_a_bad_folder_in_one_line_before_measuring(tmp_path, capsys, case):
    """python3 -m pi_table.train.card: a --models folder without a reader (or its splits.json), a missing
    --data / --renders folder or a malformed --lofo is one line naming it, exit 2, before any figure is
    measured. They were FileNotFoundError / ValueError tracebacks, --lofo's after every other table had
    been measured (minutes on the shipped data)."""
    import shutil

    from pi_table.train.card import main

    data = one_die_folder(tmp_path / "real")
    models = tmp_path / "models"
    shutil.copytree(REPO_MODELS, models)
    empty = tmp_path / "empty"
    empty.mkdir()
    nowhere = tmp_path / "nowhere"
    argv, says = {
        "models empty": (["--models", str(empty)], f"--models: no reader model in {empty}"),
        "models missing": (["--models", str(nowhere)], f"--models: no reader model in {nowhere}"),
        "data missing": (["--data", str(nowhere)], f"--data: no such folder: {nowhere}"),
        "renders missing": (["--renders", str(nowhere)], f"--renders: no such folder: {nowhere}"),
        "lofo without =": (["--lofo", "runs/lofo"], "--lofo must be MODELS=DIR, got 'runs/lofo'"),
        "lofo models empty": (["--lofo", f"{empty}={data}"], f"--lofo: no reader model in {empty}"),
        "lofo folder missing": (["--lofo", f"{models}={nowhere}"], f"--lofo {models}={nowhere}: no such folder: {nowhere}"),
        "models without splits": (["--models", str(models)], f"--models: no splits.json in {models}"),
    }[case]
    if case == "models without splits":
        (models / "splits.json").unlink()
    before = {str(p.relative_to(models)): p.read_bytes() for p in models.rglob('*') if p.is_file()}
    with pytest.raises(SystemExit) as stop:
        main(["--models", str(models), "--data", str(data), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith(f"python3 -m pi_table.train.card: error: {says}"), err
    assert {str(p.relative_to(models)): p.read_bytes() for p in models.rglob('*') if p.is_file()} == before


def test_d6_numerals_card_names_every_run_of_its_chain_and_what_it_changes(tmp_path):
    """d6-numerals.md (pi_table.train.card.write_d6_numerals_card) gives each training run the model came from,
    first to last (its log's ``--init`` records), says where the chain's first log was not kept, and per data
    the reads with and without the model."""
    import argparse

    from pi_table.train.card import write_d6_numerals_card

    def run(out, init, renders, extra=None):
        return {"renders": "[" + ", ".join(f"PosixPath('{r}')" for r in renders) + "]", "valid": "[PosixPath('renders/valid')]",
                "out": out, "seed": "0", "threads": "2", "steps": "1000", "lr": "0.00025", "d6": "True",
                "init": init, **(extra or {})}

    log = {"args": run("runs/n8", "runs/n7/d6-numerals.onnx", ["renders/train", "renders/d6", "renders/d6logo"],
                       {"pip_photos": "[PosixPath('../shared/data/real')]", "oversample": "d6:pips=0.25",
                        "oversample_weights": "{'d6:pips': 0.25}"}),
           "seconds": 1383.5, "dice": 44448, "pip_photo_dice": 1867, "calib_dice": 2397, "calib_right": 0.978,
           "valid_right": {"d6": {"dice": 369, "right": 0.989}},
           "init": {"file": "runs/n7/d6-numerals.onnx", "md5": "17",
                    "log": {"args": run("runs/n7", "runs/n6/numerals.onnx", ["renders/train", "renders/d6"]),
                            "seconds": 1614.0, "init": {"file": "runs/n6/numerals.onnx", "md5": "70"}}}}
    (tmp_path / "d6-numerals-log.json").write_text(json.dumps(log))
    args = argparse.Namespace(models=tmp_path, data="DATA", renders=None)
    d6n = {"classes": ["d6:pips", "d6:1", "d8:1"], "temperature": 1.07, "crop_size": 80, "margin": 1.15}

    def score(right, wrong, unreadable):
        return {"dice": 100, "read_right": right, "wrong_at_ok": wrong, "unreadable": unreadable}

    compared = [("nellbyler-d6-tray (held out)", score(0.94, 0.0, 0.05), score(0.95, 0.01, 0.03)),
                ("valid: d6 printed with numerals", {"dice": 9, "read_right": 0.1, "wrong_at_ok": 0.0},
                 {"dice": 9, "read_right": 0.9, "wrong_at_ok": 0.0})]  # a by_printing group: no unreadable
    write_d6_numerals_card(args, d6n, {"d6-numerals.onnx": 1747061}, 0.94, compared)
    card = (tmp_path / "d6-numerals.md").read_text()
    assert card.splitlines()[2] == ("How each shipped choice was made, and what was tried and not shipped: "
                                    "models/history/d6-numerals.md.")
    first = card.index("--out runs/n7")
    last = card.index("--out runs/n8")
    assert first < last
    assert ("python3 -m pi_table.train.numerals --renders renders/train --renders renders/d6 --renders renders/d6logo "
            "--valid renders/valid --out runs/n8 --seed 0 --threads 2") in card
    assert "--init runs/n7/d6-numerals.onnx" in card and "--pip-photos ../shared/data/real" in card
    assert "--oversample d6:pips=0.25" in card and "--oversample-weights" not in card  # parsed from --oversample
    assert "`runs/n6/numerals.onnx` (md5 70)" in card  # the first run's log was not kept: said, not guessed
    assert "| nellbyler-d6-tray (held out) | 100 | 94.00% -> 95.00% | 0.00% -> 1.00% | 5.00% -> 3.00% |" in card
    assert "| valid: d6 printed with numerals | 9 | 10.00% -> 90.00% | 0.00% -> 0.00% | . |" in card
    assert "1.75 MB" in card and "d6:pips, d6:1, d8:1" in card and "T = 1.070" in card
