"""Vision stage: image loading, crops, heat-map decoding, labelled folders, the shipped reader."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from pi_table.vision import DiceReader, crop_die, load_image
from pi_table.vision.dataset import LabelledDie, LabelledImage, load_crops, load_yolo, parse_crop_label
from pi_table.vision.reader import Classifier, _chw, _tensor, decode, iou, iou_matrix, reading_order
from tests.conftest import REPO, drawn_die_scene, need_shared

DEMO = REPO / "pi_table" / "demo"


def _demo_labels(photo: Path) -> list[tuple[str, float, float, float, float]]:
    """A demo photo's labelled dice (``pi_table/demo/labels/``, YOLO, CLASS = face - 1): (face, cx, cy,
    bw, bh) each, the box's centre and size as fractions of the photo."""
    lines = (DEMO / "labels" / (photo.stem + ".txt")).read_text().split()
    return [(str(int(lines[i]) + 1), *(float(v) for v in lines[i + 1 : i + 5])) for i in range(0, len(lines), 5)]


def fixed_reader(*dice, size: int = 100, models=None):
    """A stand-in reader class (threshold 0.9) whose every read of a ``size`` x ``size`` image gives ``dice``."""
    from pi_table.vision.dice import Reading

    class Fixed:
        threshold = 0.9

        def threshold_for(self, kind):
            return self.threshold

        def status_threshold(self, kind, box):
            return self.threshold

        def read(self, image, name="", kinds=None, threshold=None):
            return Reading(name, size, size, 1.0, tuple(dice))

    Fixed.models = models
    return Fixed


def labelled_tray(tmp_path: Path, side: int, labels: str, classes: str | None = None, name: str = "tray") -> Path:
    """A labelled folder ``tmp_path/name`` in the YOLO layout: one grey ``side`` x ``side`` photo,
    ``images/a.png``, and its ``labels/a.txt`` (``labels``: one die per line); with ``classes``, its
    ``classes.txt`` (``KIND:FACE`` per class, a mixed folder)."""
    folder = tmp_path / name
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    if classes is not None:
        (folder / "classes.txt").write_text(classes)
    cv2.imwrite(str(folder / "images" / "a.png"), np.full((side, side, 3), 128, np.uint8))
    (folder / "labels" / "a.txt").write_text(labels)
    return folder


def reader_in_turn(method: str, dice_per_read, size: int, models=None, check=None):
    """A stand-in reader (threshold 0.9) whose ``method`` (``read`` or ``read_crop``) gives, call by
    call, a ``size`` x ``size`` Reading of the next tuple of ``dice_per_read``; ``check(image)`` is
    called on each image it is given."""
    from pi_table.vision.dice import Reading

    reads = iter(dice_per_read)

    class InTurn:
        threshold = 0.9

        def threshold_for(self, kind):
            return self.threshold

        def status_threshold(self, kind, box):
            return self.threshold

    def next_read(image, name="", kinds=None, threshold=None):
        if check is not None:
            check(image)
        return Reading(name, size, size, 1.0, tuple(next(reads)))

    reader = InTurn()
    reader.models = models
    setattr(reader, method, next_read)
    return reader


def test_load_image_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        load_image(tmp_path / "nope.jpg")
    bad = tmp_path / "bad.jpg"
    bad.write_text("not a jpeg")
    with pytest.raises(ValueError, match="bad.jpg"):
        load_image(bad)
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3


def test_crop_die_centres_the_box():
    image = np.zeros((100, 100, 3), np.uint8)
    image[40:60, 20:40] = 255  # a 20 px white square centred at (30, 50)
    crop = crop_die(image, (20, 40, 40, 60), size=40, margin=2.0)
    assert crop.shape == (40, 40, 3)
    white = np.argwhere(crop[:, :, 0] > 128)
    assert white.min(axis=0).tolist() == [10, 10] and white.max(axis=0).tolist() == [29, 29]


def test_decode_finds_peaks_and_suppresses_neighbours():
    heat = np.zeros((20, 20), np.float32)
    heat[5, 5], heat[5, 6], heat[15, 10] = 0.9, 0.5, 0.6
    size = np.full((2, 20, 20), 4.0, np.float32)
    offset = np.full((2, 20, 20), 0.5, np.float32)
    found = decode(heat, size, offset, threshold=0.3, stride=4.0, width=80, height=80)
    assert [round(d.score, 2) for d in found] == [0.9, 0.6]
    assert found[0].box == pytest.approx((14.0, 14.0, 30.0, 30.0))


def test_decode_suppresses_only_by_kept_boxes():
    # three peaks in a row, boxes 8 cells wide: B overlaps A (IoU 0.6) and is dropped; C overlaps
    # B (0.6) but A only by 0.33, and B was not kept, so C stays (greedy NMS)
    heat = np.zeros((20, 20), np.float32)
    heat[10, 5], heat[10, 7], heat[10, 9] = 0.9, 0.8, 0.7
    size = np.full((2, 20, 20), 8.0, np.float32)
    offset = np.zeros((2, 20, 20), np.float32)
    found = decode(heat, size, offset, threshold=0.3, stride=1.0, width=20, height=20)
    assert [round(d.score, 2) for d in found] == [0.9, 0.7]
    assert all(isinstance(v, float) for d in found for v in d.box)
    assert decode(np.zeros((20, 20), np.float32), size, offset, threshold=0.3, stride=1.0, width=20, height=20) == []


def test_iou_matrix_matches_iou():
    rng = np.random.default_rng(0)
    corners = rng.uniform(0, 50, (12, 2))
    a = np.concatenate([corners, corners + rng.uniform(0, 20, (12, 2))], axis=1)
    a[3, 2:] = a[3, :2]  # a box of no area: IoU 0 with everything
    b = a[::-1][:7]
    m = iou_matrix(a, b)
    assert m.shape == (12, 7)
    assert m.tolist() == [[iou(tuple(x), tuple(y)) for y in b] for x in a]
    assert iou_matrix([], a).shape == (0, 12)


def test_tensors_are_numpys_swap_transpose_and_scale():
    # the reader's tensors come from OpenCV's blobFromImage(s); they must hold exactly what the
    # training code's NumPy conversion gives (RGB, NCHW, value / 255 in float32)
    rng = np.random.default_rng(1)
    canvas = rng.integers(0, 256, (37, 64, 3), dtype=np.uint8)
    want = np.ascontiguousarray(canvas[:, :, ::-1].transpose(2, 0, 1)[None].astype(np.float32) * (1 / 255))
    got = _tensor(canvas)
    assert got.dtype == np.float32 and got.shape == (1, 3, 37, 64) and got.flags["C_CONTIGUOUS"]
    assert np.array_equal(got, want)
    image = rng.integers(0, 256, (120, 90, 3), dtype=np.uint8)
    model = Classifier.__new__(Classifier)  # only crops() is used: no model file needed
    model.crop_size, model.margin = 24, 1.3
    boxes = [(10, 10, 40, 50), (50, 60, 80, 100)]
    crops = np.stack([crop_die(image, b, 24, 1.3) for b in boxes])
    want = np.ascontiguousarray(crops[:, :, :, ::-1].transpose(0, 3, 1, 2).astype(np.float32) * (1 / 255))
    assert np.array_equal(model.crops(image, boxes), want)
    # ... and OpenCV's blobFromImages (the reader's converter before), every uint8 value
    every = np.arange(256 * 3, dtype=np.int64).reshape(16, 16, 3).astype(np.uint8)
    assert np.array_equal(_tensor(every), cv2.dnn.blobFromImage(every, 1 / 255, swapRB=True))
    # room for more planes (the cocked model's position), and no crops: an empty batch of the crop's size
    wide = model.crops(image, boxes, planes=5)
    assert wide.shape == (2, 5, 24, 24) and wide.flags["C_CONTIGUOUS"] and np.array_equal(wide[:, :3], want)
    assert model.crops(image, []).shape == (0, 3, 24, 24)
    # a batch that is a strided view of another (the reader's planes are split from a contiguous copy)
    assert np.array_equal(_chw(crops[:, ::2, 1:]), want[:, :, ::2, 1:])


def test_softplus_at_gives_the_whole_maps_values_whatever_their_count():
    """reader.softplus_at pads its values so that each goes through onnxruntime's vectorised
    Softplus as in the detector's whole 2x80x80 size map: the same float32 bits for any count
    and order of peaks, and the shape given back."""
    from pi_table.vision.reader import softplus_at

    rng = np.random.default_rng(5)
    whole = rng.normal(0, 3, (2, 80, 80)).astype(np.float32)
    want = softplus_at(whole)  # 12800 values: a multiple of the padding, no padding
    assert want.shape == (2, 80, 80) and want.dtype == np.float32
    for count in (1, 3, 16, 17, 63, 65, 200):
        ys, xs = rng.integers(0, 80, count), rng.integers(0, 80, count)
        got = softplus_at(whole[:, ys, xs])
        assert got.shape == (2, count) and np.array_equal(got, want[:, ys, xs])
    assert softplus_at(np.zeros((2, 0), np.float32)).shape == (2, 0)
    assert np.allclose(softplus_at(np.array([0.0, 20.0, -20.0], np.float32)), [np.log(2), 20.0, np.exp(-20.0)])


def test_cocked_model_reads_crops_and_position_planes_as_with_position_makes_them(reader):
    """DiceReader.cocked_probability writes the two position planes into the crops' batch in place:
    the same input as with_position (the training code's), so the same probabilities."""
    from pi_table.vision.reader import centre_offset, with_position

    if reader.cocked is None or not reader.config["cocked"].get("position"):
        pytest.skip("the shipped models have no cocked-die model that sees position")
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    boxes = [d.box for d in reader.read(image).dice]
    h, w = image.shape[:2]
    offsets = np.array([centre_offset(b, w, h) for b in boxes], np.float32)
    z = reader.cocked.logits(with_position(reader.cocked.crops(image, boxes), offsets))
    want = reader.cocked.calibrated(z)[:, reader.cocked.classes.index("cocked")]
    assert len(boxes) >= 3 and np.array_equal(reader.cocked_probability(image, boxes), want)


def test_reading_order_rows_then_columns():
    boxes = [(100, 5, 120, 25), (10, 60, 30, 80), (10, 8, 30, 28), (60, 62, 80, 82)]
    assert reading_order(boxes) == [2, 0, 1, 3]


def test_labelled_folders(tmp_path):
    folder = tmp_path / "set" / "Valid"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.jpg"), np.zeros((50, 100, 3), np.uint8))
    (folder / "labels" / "a.txt").write_text("3 0.5 0.5 0.2 0.4\n")
    [im] = load_yolo(tmp_path / "set")
    assert im.folder == "set/Valid" and (im.width, im.height) == (100, 50)
    assert im.dice[0].face == "4" and im.dice[0].box == pytest.approx((40, 15, 60, 35))
    (folder / "labels" / "a.txt").write_text("x 0.5\n")
    with pytest.raises(ValueError, match="a.txt"):
        load_yolo(tmp_path / "set")
    with pytest.raises(FileNotFoundError):
        load_yolo(tmp_path / "none")


def test_label_fixes_change_a_face_and_box_add_a_die_and_refuse_a_changed_line(tmp_path):
    from pi_table.vision.dataset import load_label_fixes, with_label_fixes

    folder = tmp_path / "set"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.jpg"), np.zeros((100, 100, 3), np.uint8))
    (folder / "labels" / "a.txt").write_text("0 0.2 0.2 0.1 0.1\n\n1 0.6 0.6 0.2 0.2\n")
    fixes_path = tmp_path / "fixes.json"
    fixes_path.write_text(json.dumps({"fixes": [
        {"folder": "set", "image": "a.jpg", "line": 3, "was": "1  0.6 0.6 0.2 0.2", "face": "3", "box": [48, 48, 72, 72]},
        {"folder": "set", "image": "a.jpg", "face": "5", "box": [80, 10, 95, 25]},
        {"folder": "other", "image": "a.jpg", "face": "6", "box": [1, 1, 5, 5]},
    ]}))
    [im] = load_yolo(folder)
    fixed, applied = with_label_fixes(im, load_label_fixes(fixes_path))
    assert applied == 2
    assert [(d.face, d.box) for d in fixed.dice] == [("1", pytest.approx((15, 15, 25, 25))),
                                                     ("3", (48, 48, 72, 72)), ("5", (80, 10, 95, 25))]
    (folder / "labels" / "a.txt").write_text("0 0.2 0.2 0.1 0.1\n\n2 0.6 0.6 0.2 0.2\n")  # the labels changed
    with pytest.raises(ValueError, match="a.txt line 3"):
        with_label_fixes(load_yolo(folder)[0], load_label_fixes(fixes_path))
    for bad in ({"folder": "set", "image": "a.jpg", "face": "2"},  # an added die needs its box
                {"folder": "set", "image": "a.jpg", "line": 1, "face": "2"},  # a changed line needs its text
                {"folder": "set", "image": "a.jpg", "face": "2", "box": [5, 5, 1, 1]}):
        fixes_path.write_text(json.dumps({"fixes": [bad]}))
        with pytest.raises(ValueError, match="malformed label fix 0"):
            load_label_fixes(fixes_path)


def test_shipped_label_fixes_match_the_published_labels():
    """Every fix names a photo of ../shared and a label line that still holds the text it was checked against."""
    from pi_table.vision.dataset import load_label_fixes, with_label_fixes

    real = need_shared()
    fixes = load_label_fixes()
    assert fixes and all(f.why for f in fixes)
    applied = 0
    for im in load_yolo(real):
        fixed, n = with_label_fixes(im, fixes)
        applied += n
        assert len(fixed.dice) == len(im.dice) + sum(1 for f in fixes if f.line is None
                                                     and (f.folder, f.image) == (im.folder, im.path.name))
    assert applied == len(fixes)


def test_sessions_do_not_spin_between_runs():
    """The reader's sessions run one after another: their pool threads sleep between runs
    (spinning ones took the cores from the next session: reader.py ``_session``)."""
    from pi_table.vision.reader import _session

    options = _session(REPO / "models" / "detector.onnx", 2).get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == 2


def test_crop_labels(tmp_path):
    assert parse_crop_label("4") == ("d6", "4")
    assert parse_crop_label("d8_7") == ("d8", "7")
    assert parse_crop_label("d10-tens_70") == ("d10-tens", "70")
    assert parse_crop_label("3_IMG001") == ("d6", "3")
    assert parse_crop_label("IMG001") is None
    (tmp_path / "5").mkdir()
    cv2.imwrite(str(tmp_path / "5" / "x.png"), np.zeros((8, 8, 3), np.uint8))
    assert [(p.name, k, f) for p, k, f in load_crops(tmp_path)] == [("x.png", "d6", "5")]
    assert [k for _, k, _ in load_crops(tmp_path, "d8")] == ["d8"]  # eval --crop --kinds d8

    def crop(*parts):
        path = tmp_path.joinpath("kinds", *parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(path), np.zeros((8, 8, 3), np.uint8))

    crop("d8", "3", "a.png"), crop("D10", "0", "b.tif"), crop("d10-tens", "70", "c.png"), crop("d8", "d10_9.png")
    got = {(p.name, k, f) for p, k, f in load_crops(tmp_path / "kinds")}
    assert got == {("a.png", "d8", "3"), ("b.tif", "d10", "0"), ("c.png", "d10-tens", "70"), ("d10_9.png", "d10", "9")}
    assert {k for _, k, _ in load_crops(tmp_path / "kinds" / "d8")} == {"d8", "d10"}  # the root's own name too
    for bad, needle in ((("d8", "9", "x.png"), "'9' is not on a d8"), (("20240101_1234.png",), "'20240101'")):
        crop(*bad)
        with pytest.raises(ValueError, match=needle):
            load_crops(tmp_path / "kinds")
        tmp_path.joinpath("kinds", *bad).unlink()


@pytest.fixture(scope="module")
def reader():
    return DiceReader(threads=1)


def test_shipped_reader_reads_the_demo_photos(reader):
    """The shipped model on the embedded demo photos (real nellbyler tray photos with labels)."""
    right = total = false = 0
    for photo in sorted(DEMO.glob("*.jpg")):
        reading = reader.read(load_image(photo), name=photo.name)
        truth = sorted(face for face, *_ in _demo_labels(photo))
        faces = sorted(d.face for d in reading.dice if d.status == "ok")
        total += len(truth)
        right += sum(min(faces.count(f), truth.count(f)) for f in set(truth))
        false += max(0, len(reading.dice) - len(truth))
        for die in reading.dice:
            assert die.kind == "d6" and 0 <= die.confidence <= 1 and die.status in ("ok", "unreadable")
            assert die.box[0] < die.box[2] and die.box[1] < die.box[3]
    # A floor well below the model card's figures: it catches a broken model or a broken pipeline.
    assert right >= 0.85 * total and false <= 2, (right, total, false)


def test_reader_rejects_bad_images_and_kinds(reader):
    with pytest.raises(ValueError, match="uint8"):
        reader.read(np.zeros((10, 10), np.float32))
    with pytest.raises(ValueError, match="d7"):
        reader.read(np.zeros((64, 64, 3), np.uint8), kinds=["d7"])
    empty = reader.read(np.full((480, 640, 3), 120, np.uint8))
    assert empty.dice == ()


def test_read_crop_gives_one_die(reader):
    photo = sorted(DEMO.glob("*.jpg"))[0]
    image = load_image(photo)
    h, w = image.shape[:2]
    cls, cx, cy, bw, bh = (float(v) for v in (DEMO / "labels" / (photo.stem + ".txt")).read_text().split()[:5])
    x0, y0, x1, y1 = int((cx - bw / 2) * w), int((cy - bh / 2) * h), int((cx + bw / 2) * w), int((cy + bh / 2) * h)
    reading = reader.read_crop(image[y0:y1, x0:x1].copy())
    assert len(reading.dice) == 1
    assert reading.dice[0].status != "ok" or reading.dice[0].face == str(int(cls) + 1)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "pi_table", *args], capture_output=True, text=True, timeout=120, cwd=REPO)


def test_cli_read_json_on_a_demo_photo():
    photo = sorted(DEMO.glob("*.jpg"))[1]
    result = cli("read", str(photo), "--json", "--threads", "1")
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    data = json.loads(line)
    assert data["image"] == str(photo) and data["width"] == 640 and data["ms"] > 0
    assert data["dice"] and all(set(d) >= {"kind", "face", "value", "box", "confidence", "status"} for d in data["dice"])


def test_cli_read_notes_kinds_it_cannot_read():
    """--kinds d6,d12 (a skill check with a d12 in play): the d6 are read, and stderr says in one
    line that d12 dice are not reported (the reader reads d6, d8, d10 and d10-tens)."""
    photo = sorted(DEMO.glob("*.jpg"))[1]
    result = cli("read", str(photo), "--json", "--threads", "1", "--kinds", "d6,d12")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["dice"]
    assert "does not read d12" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, needle", [
    (("read", "/no/such.jpg"), "/no/such.jpg"),
    (("read", str(REPO / "README.md")), "README.md"),
    (("read", str(DEMO / "LICENSE"), "--kinds", "d7"), "d7"),
    (("read", str(sorted(DEMO.glob("*.jpg"))[0]), "--kinds", "d12,d20"), "reads none of them"),
    (("eval", "/no/such/dir"), "/no/such/dir"),
    (("eval", str(DEMO)), str(DEMO)),
    (("eval", str(REPO / "tests" / "fixtures"), "--cut-crops", "9"), "9.0"),
    (("eval", str(REPO / "tests" / "fixtures"), "--close-ups", "20"), "20.0"),
    (("eval", str(REPO / "tests" / "fixtures"), "--cut-crops", "1.3", "--close-ups", "2"), "--close-ups"),
    (("eval", str(REPO / "tests" / "fixtures"), "--crop", "--misses", "/tmp/pi-table-misses"), "--misses"),
    (("eval", str(REPO / "tests" / "fixtures"), "--border", "2", "--close-ups", "2"), "--border"),
    (("eval", str(REPO / "tests" / "fixtures"), "--border", "abc"), "abc"),
    (("eval", str(REPO / "tests" / "fixtures"), "--border", "0"), "--border must be 1..4, got 0.0"),
    (("eval", str(REPO / "tests" / "fixtures"), "--turn", "45"), "--turn must be 90, 180 or 270, got 45"),
    (("eval", str(REPO / "tests" / "fixtures"), "--turn", "x"), "'x'"),
    (("eval", str(REPO / "tests" / "fixtures"), "--turn", "90", "--cut-crops", "1.3"), "--turn"),
    (("eval", str(REPO / "tests" / "fixtures"), "--turn", "90", "--misses", "/tmp/pi-table-misses"), "--turn"),
    (("eval", str(REPO / "tests" / "fixtures"), "--colour", "sepia"),
     "--colour must be one of grey, pale, warm, cool, got sepia"),
    (("eval", str(REPO / "tests" / "fixtures"), "--colour", "grey", "--cut-crops", "1.3"), "--colour"),
    (("eval", str(REPO / "tests" / "fixtures"), "--colour", "warm", "--misses", "/tmp/pi-table-misses"), "--colour"),
    (("eval", str(REPO / "tests" / "fixtures"), "--misses", str(REPO / "README.md" / "x")), "README.md/x"),
    (("eval", str(REPO / "tests" / "fixtures"), "--misses", str(REPO / "README.md")), "README.md"),
    (("eval", str(REPO / "tests" / "fixtures"), "--crop", "--fixed-labels"), "--fixed-labels"),
    (("eval", str(DEMO), "--sweep", "0.5,x"), "'x'"),
    (("eval", str(DEMO), "--sweep", "0.5,1.5"), "1.5"),
    (("bench", "--against", "/no/such/models"), "/no/such/models"),
    (("eval", str(REPO / "tests" / "fixtures"), "--cut-crops", "2.5", "--cut-offset", "0.5"),
     "--cut-offset must be 0..0.4, got 0.5"),
    (("eval", str(REPO / "tests" / "fixtures"), "--cut-offset", "0.2"), "--cut-offset"),
])
def test_cli_bad_input_exits_2(args, needle):
    result = cli(*args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_cli_eval_on_shared_data():
    real = need_shared()
    result = cli("eval", str(real / "matteop65-d6-desk" / "Valid"), "--json", "--limit", "8", "--threads", "1")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    s = data["all"]
    assert s["images"] == 8 and s["dice"] > 8
    assert 0 <= s["ece"] <= 1 and s["recall"] > 0.6 and s["read_right"] > 0.6  # a broken-pipeline floor; figures in models/*.md


def test_cli_eval_fixed_labels_scores_the_corrected_labels(tmp_path):
    """Two photos whose labels miss a die and give a wrong face (label_fixes.json): scored as
    published and with --fixed-labels."""
    import shutil

    real = need_shared()
    folder = tmp_path / "matteop65-d6-desk" / "Valid"  # the data folder's name, which the fixes go by
    for sub in ("images", "labels"):
        (folder / sub).mkdir(parents=True)
    for name in ("valid_9", "valid_56"):
        shutil.copy(real / "matteop65-d6-desk" / "Valid" / "images" / f"{name}.jpg", folder / "images")
        shutil.copy(real / "matteop65-d6-desk" / "Valid" / "labels" / f"{name}.txt", folder / "labels")
    runs = {}
    for extra in ((), ("--fixed-labels",)):
        result = cli("eval", str(folder), "--json", "--threads", "1", *extra)
        assert result.returncode == 0, result.stderr
        runs[extra] = json.loads(result.stdout)
    plain, fixed = runs[()], runs[("--fixed-labels",)]
    assert plain["label_fixes"] == 0 and fixed["label_fixes"] == 2 and fixed["fixed_labels"]
    assert fixed["all"]["dice"] == plain["all"]["dice"] + 1
    assert fixed["all"]["counts"]["false_dice"] < plain["all"]["counts"]["false_dice"]


def test_cli_eval_sweep_rescores_the_same_reads():
    """--sweep at the reader's own threshold gives the report's figures; at 0 nothing is unreadable."""
    real = need_shared()
    threshold = json.loads((REPO / "models" / "reader.json").read_text())["threshold"]
    result = cli("eval", str(real / "nellbyler-d6-tray"), "--json", "--limit", "6", "--threads", "1",
                 "--sweep", f"0,{threshold},1")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    at0, own, at1 = data["sweep"]["nellbyler-d6-tray"]
    assert at0["unreadable"] == 0 and at0["read_right"] >= own["read_right"] >= at1["read_right"]
    s = data["folders"]["nellbyler-d6-tray"]
    assert (own["read_right"], own["wrong_at_ok"], own["unreadable"]) == (s["read_right"], s["wrong_at_ok"], s["unreadable"])


def test_cocked_threshold_is_the_lowest_that_flags_few_flat_dice_in_each_group():
    from pi_table.train.cocked import choose_cocked_threshold

    photos = np.array([0.1] * 300 + [0.72])  # one flat photo die at 0.72: 1/301 > 0.2%
    renders = np.array([0.2] * 100 + [0.55])  # one flat render die at 0.55: 1/101 > 0.2%
    assert choose_cocked_threshold(photos, renders, 0.002) == 0.73
    assert choose_cocked_threshold(photos, renders, 0.01) == 0.5  # 1 in 101 and 1 in 301 are within 1%
    assert choose_cocked_threshold(photos, renders, 0.005) == 0.56  # 1 in 301 is within 0.5%, 1 in 101 not
    assert choose_cocked_threshold(photos, np.zeros(0), 0.002) == 0.73  # an empty group does not count
    assert choose_cocked_threshold(np.array([0.9999]), renders, 0.0) == 0.999  # none: the highest


def test_eval_counts_cocked_dice_apart_where_the_labels_say_which_lie_flat():
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import Score

    s = Score(dice=4)
    box = (0, 0, 10, 10)
    s.count_read(Die("d8", "", 0, box, 0.9, "cocked", 0.9), "d8", "3", 0.5, cocked=True)  # caught
    s.count_read(Die("d8", "3", 3, box, 0.9, "ok", 0.9), "d8", "3", 0.5, cocked=True)  # missed: read as flat
    s.count_read(Die("d8", "", 0, box, 0.9, "cocked", 0.9), "d8", "5", 0.5, cocked=False)  # a flat die flagged
    s.count_read(Die("d6", "2", 2, box, 0.9, "ok", 0.9), "d6", "2", 0.5)  # a photo: not said
    j = s.to_json()
    assert j["cocked"] == 0.5 and j["cocked_caught"] == 0.5 and j["flat_flagged"] == 1.0
    assert j["unreadable"] == 0.5 and j["read_right"] == 0.5  # a cocked die is not read right
    assert "cocked_caught" not in Score(dice=1).to_json()
    # a cocked die has no face: not in the calibration, and unreadable at any cut of the sweep
    assert len(s.calibration) == 2
    low = s.at_thresholds([0.0])[0]
    assert low["wrong_at_ok"] == 0.0 and low["unreadable"] == 0.5 and low["read_right"] == 0.5
    # read right over labelled flat dice only: the cocked die read by its top face is right, not flat-right
    assert j["counts"]["right"] == 2 and j["counts"]["flat_right"] == 0 and j["flat_read_right"] == 0.0
    flat = Score(dice=3)
    flat.count_read(Die("d8", "3", 3, box, 0.9, "ok", 0.9), "d8", "3", 0.5, cocked=False)  # right
    flat.count_read(Die("d8", "4", 4, box, 0.9, "ok", 0.9), "d8", "3", 0.5, cocked=False)  # wrong at ok
    flat.count_read(Die("d8", "3", 3, box, 0.3, "ok", 0.3), "d8", "3", 0.5, cocked=False)  # below the threshold
    flat.add(s)
    c = flat.to_json()["counts"]
    assert (c["flat_found"], c["flat_right"], c["flat_wrong_ok"], c["right"]) == (4, 1, 1, 3)


def test_score_at_thresholds_moves_only_the_cut():
    from pi_table.vision.evaluate import Score

    s = Score(dice=5, calibration=[(0.99, True), (0.9, True), (0.85, False), (0.6, True)])  # one die missed
    low, mid, high = s.at_thresholds([0.5, 0.88, 0.995])
    assert low == {"threshold": 0.5, "read_right": 0.6, "wrong_at_ok": 0.25, "unreadable": 0.0}
    assert mid == {"threshold": 0.88, "read_right": 0.4, "wrong_at_ok": 0.0, "unreadable": 0.5}
    assert high == {"threshold": 0.995, "read_right": 0.0, "wrong_at_ok": 0.0, "unreadable": 1.0}


def test_training_smoke(tmp_path):
    """The training code (renders, numeral model, then photos and renders) runs end to end on a
    few images and its ONNX output loads in the reader."""
    real = need_shared()
    pytest.importorskip("torch")
    pytest.importorskip("PIL", reason="the renderer needs Pillow (optional extra `train`)")
    renders = tmp_path / "renders"
    steps = [["pi_table.train.render", "--out", str(renders), "--n", "24", "--seed", "3", "--size", "320",
              "--backgrounds", "", "--workers", "1"],
             ["pi_table.train.numerals", "--renders", str(renders), "--valid", str(renders), "--out", str(tmp_path),
              "--smoke"],
             ["pi_table.train", "--data", str(real), "--renders", str(renders), "--out", str(tmp_path), "--smoke",
              "--fixed-labels"]]
    for step in steps:
        result = subprocess.run([sys.executable, "-m", *step], capture_output=True, text=True, timeout=600, cwd=REPO)
        assert result.returncode == 0, result.stderr[-2000:]
    assert "label fixes applied: " in result.stdout + result.stderr  # --fixed-labels ran
    # --valid scores the numeral model per kind (here on its own renders: a check of the code)
    scored = json.loads((tmp_path / "numerals-log.json").read_text())["valid_right"]
    assert set(scored) == {"d8", "d10", "d10-tens"} and all(0 <= v["right"] <= 1 and v["dice"] > 0 for v in scored.values())
    splits = json.loads((tmp_path / "splits.json").read_text())
    valid = splits["folders"]["nellbyler-d6-tray"]["valid"]
    assert len(valid) == 40 and not set(valid) & set(splits["folders"]["nellbyler-d6-tray"]["train"])
    trained = DiceReader(tmp_path)
    assert trained.classifier.refines  # the classifier exports its box head
    from pi_table.train.nets import is_quantized

    assert not any(is_quantized(tmp_path / f) for f in ("detector.onnx", "classifier.onnx", "classifier-2.onnx"))
    assert {"d8:*", "d10:*"} <= set(trained.classifier.classes) and trained.numerals is not None
    assert "d10-tens:90" in trained.classes and "d6:6" in trained.classes
    # the cocked-die model, trained after the reader (it reads splits.json and the classifier's crop)
    cocked = [sys.executable, "-m", "pi_table.train.cocked", "--data", str(real), "--renders", str(renders),
              "--out", str(tmp_path), "--smoke"]
    result = subprocess.run(cocked, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    settings = json.loads((tmp_path / "cocked.json").read_text())
    assert settings["classes"] == ["flat", "cocked"] and 0.5 <= settings["threshold"] <= 0.999
    trained = DiceReader(tmp_path)
    assert trained.cocked is not None and trained.cocked_threshold == settings["threshold"]
    assert trained.cocked.crop_size == 64 and trained.cocked.margin == trained.classifier.margin
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    boxes = [(100, 100, 160, 160), (300, 300, 340, 350)]
    p = trained.cocked_probability(image, boxes)
    assert p.shape == (2,) and np.all((p >= 0) & (p <= 1))
    trained.cocked_threshold, trained.none_threshold = 0.0, 1.01  # every box a die, and cocked
    dice = trained._dice(image, boxes, None, False)
    assert len(dice) == 2 and all(d.status == "cocked" and d.face == "" and d.value == 0 for d in dice)
    # a crop (read --crop) does not say where its die lay: the cocked model does not judge it
    assert all(d.status != "cocked" for d in trained._dice(image, boxes[:1], None, True))
    trained.cocked_threshold = 1.01  # none is cocked
    assert all(d.status != "cocked" for d in trained._dice(image, boxes, None, False))
    # before the reader is trained there is no split to keep the photos' valid images out: refused
    result = subprocess.run(cocked[:-3] + ["--out", str(tmp_path / "untrained"), "--smoke"], capture_output=True,
                            text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--out: no reader.json" in result.stderr and "Traceback" not in result.stderr
    # --int8: the same model with int8 weights; --calibrate-only --int8 quantises a float one into the same bytes
    q, q8 = tmp_path / "q", tmp_path / "q8"
    for folder in (q, q8):
        folder.mkdir()
        for name in ("reader.json", "splits.json"):
            shutil.copy(tmp_path / name, folder / name)
    result = subprocess.run(cocked[:-3] + ["--out", str(q), "--smoke", "--calibrate-only"], capture_output=True,
                            text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--calibrate-only: no cocked.onnx" in result.stderr
    shutil.copy(tmp_path / "cocked.onnx", q / "cocked.onnx")
    shutil.copy(tmp_path / "cocked-log.json", q / "cocked-log.json")
    for folder, extra in ((q, ["--calibrate-only", "--int8"]), (q8, ["--int8"])):
        result = subprocess.run(cocked[:-3] + ["--out", str(folder), "--smoke", *extra], capture_output=True,
                                text=True, timeout=600, cwd=REPO)
        assert result.returncode == 0, result.stderr[-2000:]
        assert is_quantized(folder / "cocked.onnx") and json.loads((folder / "cocked-log.json").read_text())["int8"]
    assert (q / "cocked.onnx").read_bytes() == (q8 / "cocked.onnx").read_bytes()
    assert (q / "cocked.onnx").stat().st_size < 0.5 * (tmp_path / "cocked.onnx").stat().st_size
    # the training run's loss curve stands; the temperature and threshold are fitted again, on the int8 model
    assert json.loads((q / "cocked-log.json").read_text())["loss"] == json.loads((tmp_path / "cocked-log.json").read_text())["loss"]
    # ... and so do its time and options; the calibration's are logged beside them
    trained_log, calibrated_log = (json.loads((d / "cocked-log.json").read_text()) for d in (tmp_path, q))
    assert (calibrated_log["seconds"], calibrated_log["args"]) == (trained_log["seconds"], trained_log["args"])
    assert calibrated_log["calibration"]["args"]["calibrate_only"] == "True" and "calibration" not in trained_log
    assert calibrated_log["calibration"]["args"]["out"] == str(q) and calibrated_log["calibration"]["seconds"] > 0
    assert json.loads((q / "cocked.json").read_text()) == json.loads((q8 / "cocked.json").read_text())
    assert json.loads((q / "reader.json").read_text())["cocked"] == json.loads((q / "cocked.json").read_text())
    # --calibrate-only of a model that stays as it is: the training dice are not cut again, and the log keeps them
    model_bytes, log_before = (q / "cocked.onnx").read_bytes(), json.loads((q / "cocked-log.json").read_text())
    result = subprocess.run(cocked[:-3] + ["--out", str(q), "--smoke", "--calibrate-only", "--int8"],
                            capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert " cut in " not in result.stdout + result.stderr and (q / "cocked.onnx").read_bytes() == model_bytes
    log_after = json.loads((q / "cocked-log.json").read_text())
    assert log_after["dice"] == log_before["dice"] and log_after["dice"]["flat"] > 0
    assert log_after["args"] == trained_log["args"] and log_after["calibration"]["args"]["int8"] == "True"
    assert json.loads((q / "cocked.json").read_text()) == json.loads((q8 / "cocked.json").read_text())
    # a threshold per numbered kind, each chosen on the calib renders' dice of that kind
    config = json.loads((tmp_path / "reader.json").read_text())
    assert config["cocked"] == settings
    assert set(config["thresholds"]) <= {"d8", "d10", "d10-tens"} and config["thresholds"]
    assert all(0.5 <= t <= 0.99 for t in config["thresholds"].values())
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    reading = trained.read(image)
    assert reading.width == 640
    # --ensemble 2 (the default): a second classifier from the next seed; the reader averages both
    assert config["classifier"]["file"] == ["classifier.onnx", "classifier-2.onnx"]
    crops = trained.classifier.crops(image, [(100, 100, 160, 160)])
    each = [Classifier(tmp_path / f, trained.classifier.classes).logits(crops) for f in config["classifier"]["file"]]
    assert not np.allclose(each[0], each[1], atol=1e-4)  # two seeds, two nets
    assert np.allclose(trained.classifier.logits(crops), np.mean(each, axis=0), atol=1e-5)
    # second look on the numeral model: an unsure numeral is the mean of its view and three quarter turns
    boxes = [(100, 100, 160, 160), (300, 300, 340, 350)]
    trained.thresholds = {k: 1.01 for k in ("d8", "d10", "d10-tens")}  # every numeral unsure
    crops = trained.numerals.crops(image, boxes)
    views = [trained.numerals.logits(np.ascontiguousarray(np.rot90(crops, k, axes=(2, 3)))) for k in range(4)]
    trained.second_look = 4
    assert np.allclose(trained._numeral_logits(image, boxes), np.mean(views, axis=0), atol=1e-5)
    trained.second_look = 1
    assert np.allclose(trained._numeral_logits(image, boxes), views[0], atol=1e-6)
    _, p = trained.classify(image, [(100, 100, 160, 160), (300, 300, 340, 350)], kinds=("d8", "d10"))
    assert np.allclose(p.sum(axis=1), 1, atol=1e-5)
    assert all(p[:, trained.classes.index(c)].max() == 0 for c in trained.classes if c.startswith("d6:"))
    # --det-from: a classifier experiment on a trained detector keeps that detector and trains
    # the very classifier the full run did (the classifier stage starts again from the seed)
    again = [sys.executable, "-m", "pi_table.train", "--data", str(real), "--renders", str(renders),
             "--out", str(tmp_path / "b"), "--smoke"]
    result = subprocess.run(again + ["--det-from", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    for name in ("detector.onnx", "classifier.onnx", "classifier-2.onnx"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert json.loads((tmp_path / "b" / "train-log.json").read_text())["detector_from"] == str(tmp_path)
    # ... and reads numbered and cocked dice with that folder's numeral and cocked-die models
    for name in ("numerals.onnx", "numerals.json", "cocked.onnx", "cocked.json"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    b_config = json.loads((tmp_path / "b" / "reader.json").read_text())
    assert b_config["numerals"] == json.loads((tmp_path / "numerals.json").read_text()) and b_config["cocked"] == settings
    # --int8 writes int8 classifiers (7-bit weights: nets.quantize_int8); --calibrate-only --int8 quantises
    # float ones (here b's, byte for byte the full run's) with the crops training uses, into the same files
    result = subprocess.run(again[:-2] + [str(tmp_path / "q"), "--smoke", "--det-from", str(tmp_path), "--int8"],
                            capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert is_quantized(tmp_path / "q" / "classifier.onnx") and not is_quantized(tmp_path / "q" / "detector.onnx")
    assert (tmp_path / "classifier.onnx").stat().st_size > 3 * (tmp_path / "q" / "classifier.onnx").stat().st_size
    result = subprocess.run(again + ["--calibrate-only", "--int8"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "classifier-2.onnx: float weights quantised to int8" in result.stdout
    for name in ("classifier.onnx", "classifier-2.onnx"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "q" / name).read_bytes(), name
    # --member K: each member trained alone (parallel runs), byte for byte as the whole run; the run that
    # writes the last member calibrates
    members = again[:-2] + [str(tmp_path / "m"), "--smoke", "--det-from", str(tmp_path)]
    first = subprocess.run(members + ["--member", "1"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert first.returncode == 0 and "classifier-2.onnx still to come" in first.stdout, first.stderr[-2000:]
    assert not (tmp_path / "m" / "reader.json").exists()
    # (--cascade: written into the calibrating run's reader.json, after the thresholds)
    second = subprocess.run(members + ["--member", "2", "--cascade", "0.97"], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert second.returncode == 0, second.stderr[-2000:]
    assert json.loads((tmp_path / "m" / "reader.json").read_text())["classifier"]["cascade"] == 0.97
    assert "cascade" not in json.loads((tmp_path / "reader.json").read_text())["classifier"]
    for name in ("classifier.onnx", "classifier-2.onnx"):
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert json.loads((tmp_path / "m" / "reader.json").read_text())["classifier"]["file"] == ["classifier.onnx",
                                                                                             "classifier-2.onnx"]
    result = subprocess.run(members + ["--member", "3"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--member must be 1..--ensemble (2), got 3" in result.stderr
    # --cls-renders: close-up renders the classifier trains on, the detector not (it stays --det-from's)
    close = tmp_path / "close"
    result = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(close), "--n", "8", "--seed", "4",
                             "--size", "320", "--backgrounds", "", "--die-px", "60,110", "--max-dice", "2"],
                            capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    with_close = [sys.executable, "-m", "pi_table.train", "--data", str(real), "--renders", str(renders), "--cls-renders",
                  str(close), "--out", str(tmp_path / "c"), "--smoke", "--det-from", str(tmp_path)]
    result = subprocess.run(with_close, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "(+ 4 for the classifier)" in result.stderr + result.stdout
    assert (tmp_path / "c" / "detector.onnx").read_bytes() == (tmp_path / "detector.onnx").read_bytes()
    assert (tmp_path / "c" / "classifier.onnx").read_bytes() != (tmp_path / "classifier.onnx").read_bytes()
    nowhere = [str(tmp_path / "nowhere") if a == str(close) else a for a in with_close]
    result = subprocess.run(nowhere, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--cls-renders" in result.stderr and "Traceback" not in result.stderr
    # --ensemble 1: one classifier, and the second of an earlier run in that folder is removed
    result = subprocess.run(again + ["--det-from", str(tmp_path), "--ensemble", "1"], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "b" / "classifier-2.onnx").exists()
    assert json.loads((tmp_path / "b" / "reader.json").read_text())["classifier"]["file"] == "classifier.onnx"
    assert (tmp_path / "b" / "classifier.onnx").read_bytes() == (tmp_path / "classifier.onnx").read_bytes()
    # --distill: the classifier taught by a trained pair as well as by the labels trains another net
    taught = again[:-2] + [str(tmp_path / "d"), "--smoke", "--det-from", str(tmp_path), "--ensemble", "1",
                           "--distill", str(tmp_path)]
    result = subprocess.run(taught, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "d" / "classifier.onnx").read_bytes() != (tmp_path / "classifier.onnx").read_bytes()
    result = subprocess.run(taught + ["--distill-weight", "1.5"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--distill-weight must be 0..1, got 1.5" in result.stderr
    result = subprocess.run(taught[:-1] + [str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=600,
                            cwd=REPO)
    assert result.returncode == 2 and "--distill" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    # --cls-from: a detector experiment trains a detector and reuses a folder's classifiers (and its numeral and
    # cocked-die models), then calibrates the reader they make
    reuse = again[:-2] + [str(tmp_path / "cf"), "--smoke", "--cls-from", str(tmp_path)]
    result = subprocess.run(reuse, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    for name in ("classifier.onnx", "classifier-2.onnx", "numerals.onnx"):
        assert (tmp_path / "cf" / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert json.loads((tmp_path / "cf" / "reader.json").read_text())["classifier"]["file"] == ["classifier.onnx",
                                                                                              "classifier-2.onnx"]
    assert (tmp_path / "cf" / "detector.onnx").is_file() and "classifier_loss" not in json.loads(
        (tmp_path / "cf" / "train-log.json").read_text())
    for extra, line in ((["--crop-size", "40"], "its classifier reads 48 px crops at margin 1.3, this run 40 at 1.3 (--crop-size, --margin)"),
                        (["--member", "1"], "reuses every classifier; --member trains one")):
        result = subprocess.run(reuse + extra, capture_output=True, text=True, timeout=600, cwd=REPO)
        assert result.returncode == 2 and result.stderr.strip().splitlines() == [f"error: --cls-from {tmp_path}: {line}"
                                                                                  if "crop" in line else
                                                                                  f"error: --cls-from: {line}"]
    result = subprocess.run(reuse[:-1] + [str(renders)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and f"--cls-from {renders}: no reader's settings" in result.stderr
    # --det-seed: the same detector recipe at another seed, the photos' split kept (--seed's), logged
    seeded = reuse[:-2] + ["--cls-from", str(tmp_path), "--det-seed", "7"]
    seeded[seeded.index(str(tmp_path / "cf"))] = str(tmp_path / "cf7")
    result = subprocess.run(seeded, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "cf7" / "detector.onnx").read_bytes() != (tmp_path / "cf" / "detector.onnx").read_bytes()
    assert (tmp_path / "cf7" / "splits.json").read_text() == (tmp_path / "cf" / "splits.json").read_text()
    assert json.loads((tmp_path / "cf7" / "train-log.json").read_text())["det_seed"] == 7
    result = subprocess.run(seeded + ["--det-from", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "error: --det-seed: seeds a detector trained here; --det-from reuses one"]
    for flag in ("--det-seed", "--seed"):  # a negative seed is no generator's: refused before any data is read
        result = subprocess.run(seeded + [flag, "-1"], capture_output=True, text=True, timeout=600, cwd=REPO)
        assert result.returncode == 2 and result.stderr.strip().splitlines() == [f"error: {flag} must be 0 or more, got -1"]
    # --det-init: the detector goes on from a detector model (a fine-tune with --det-lr), logged with its md5
    start = tmp_path / "cf" / "detector.onnx"
    tuned = reuse[:-2] + ["--cls-from", str(tmp_path), "--det-init", str(start), "--det-lr", "5e-4"]
    tuned[tuned.index(str(tmp_path / "cf"))] = str(tmp_path / "ft")
    result = subprocess.run(tuned, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    logged = json.loads((tmp_path / "ft" / "train-log.json").read_text())
    assert logged["det_init"] == {"file": str(start), "md5": hashlib.md5(start.read_bytes()).hexdigest()}
    assert logged["args"]["det_lr"] == "0.0005" and "detector started from" in result.stderr + result.stdout
    for extra, line in ((["--det-init", str(tmp_path / "none.onnx")], f"error: --det-init: no none.onnx in {tmp_path}"),
                        (["--det-from", str(tmp_path)], "error: --det-init: trains a detector; --det-from reuses one"),
                        (["--det-width", "0.5"], f"error: --det-init: {start}: layer 1 has weights (24, 16, 3, 3), "
                                                 "the net (12, 16, 3, 3)"),
                        (["--det-lr", "0"], "error: --det-lr must be in (0, 1), got 0.0")):
        result = subprocess.run(tuned + extra, capture_output=True, text=True, timeout=600, cwd=REPO)
        assert result.returncode == 2 and result.stderr.strip().splitlines()[-1:] == [line], (extra, result.stderr[-500:])
        assert "Traceback" not in result.stderr
    result = subprocess.run(again + ["--ensemble", "0"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--ensemble must be 1 or more, got 0" in result.stderr
    result = subprocess.run(again + ["--det-from", str(renders)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--det-from: no detector.onnx" in result.stderr and "Traceback" not in result.stderr
    # --calibrate-only fits the temperature and thresholds again and keeps the weights
    weights = (tmp_path / "classifier.onnx").read_bytes()
    recal = [sys.executable, "-m", "pi_table.train", "--data", str(real), "--renders", str(renders), "--out", str(tmp_path),
             "--calib-renders", str(renders), "--smoke", "--calibrate-only"]
    result = subprocess.run(recal, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "classifier.onnx").read_bytes() == weights
    logged = json.loads((tmp_path / "train-log.json").read_text())
    assert "recalibrated" in logged and logged["threshold"] == json.loads((tmp_path / "reader.json").read_text())["threshold"]
    assert "shape_temperature" in logged  # fitted where a calib die tops at a numbered shape, else None
    assert json.loads((tmp_path / "reader.json").read_text())["refine_unsure"] == logged["refine_unsure"] == 1  # default
    at = recal.index("--calib-renders") + 1
    result = subprocess.run(recal[:at] + [str(tmp_path / "nowhere")] + recal[at + 1:], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--calib-renders" in result.stderr and "Traceback" not in result.stderr
    assert json.loads((tmp_path / "reader.json").read_text())["cocked"] == settings  # kept
    # --close-up-from: a folder's detector becomes the close-up detector (detector-big.onnx), named in reader.json
    result = subprocess.run(recal + ["--close-up-from", str(tmp_path / "cf")], capture_output=True, text=True, timeout=600,
                            cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "detector-big.onnx").read_bytes() == (tmp_path / "cf" / "detector.onnx").read_bytes()
    assert json.loads((tmp_path / "reader.json").read_text())["detector"]["close_up_file"] == "detector-big.onnx"
    result = subprocess.run(recal + ["--close-up-from", str(renders)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [f"error: --close-up-from: no detector.onnx in {renders}"]
    # a folder without trained models: one line, before any data is loaded, nothing made
    result = subprocess.run(recal[:-2] + ["--out", str(tmp_path / "none"), "--calibrate-only"], capture_output=True,
                            text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--calibrate-only: no reader.json" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "none").exists()
    # a folder lacking a member of the ensemble its reader.json names: refused before any data is loaded
    lacking = tmp_path / "lacking"
    lacking.mkdir()
    for f in tmp_path.iterdir():
        if f.is_file() and f.name != "classifier-2.onnx":
            shutil.copy(f, lacking / f.name)
    result = subprocess.run(recal[:-2] + ["--out", str(lacking), "--calibrate-only"], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--calibrate-only: no classifier-2.onnx" in result.stderr
    assert "Traceback" not in result.stderr
    (lacking / "classifier-2.onnx").write_text("not a model")  # a corrupt member: named, before any data is loaded
    for extra in ([], ["--int8"]):
        result = subprocess.run(recal[:-2] + ["--out", str(lacking), "--calibrate-only", *extra], capture_output=True,
                                text=True, timeout=600, cwd=REPO)
        assert result.returncode == 2 and f"{lacking / 'classifier-2.onnx'} is not an ONNX model" in result.stderr
        assert "Traceback" not in result.stderr
    shutil.copy(tmp_path / "classifier-2.onnx", lacking / "classifier-2.onnx")
    (lacking / "detector-big.onnx").unlink()  # the close-up detector reader.json names: refused the same way
    result = subprocess.run(recal[:-2] + ["--out", str(lacking), "--calibrate-only"], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert result.returncode == 2 and "--calibrate-only: no detector-big.onnx" in result.stderr
    (lacking / "reader.json").write_text("{not json")
    result = subprocess.run(recal[:-2] + ["--out", str(lacking), "--calibrate-only"], capture_output=True, text=True,
                            timeout=600, cwd=REPO)
    assert result.returncode == 2 and "is not a reader's settings" in result.stderr and "Traceback" not in result.stderr
    # another seed splits the photos otherwise: its calib photos could be these models' training photos
    result = subprocess.run(recal + ["--seed", "1"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert result.returncode == 2 and "not this data's split" in result.stderr and "Traceback" not in result.stderr


def test_score_counts_status_by_threshold_and_calibrates_on_the_best_face():
    """A die below the threshold is unreadable, yet its confidence is scored against its best face."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import Score

    score = Score()
    score.count_read(Die("d6", "4", 4, (0, 0, 10, 10), 0.6, "ok"), "d6", "4", threshold=0.9)  # right, unsure
    score.count_read(Die("d6", "2", 2, (0, 0, 10, 10), 0.95, "ok"), "d6", "2", threshold=0.9)  # right, sure
    score.count_read(Die("d6", "3", 3, (0, 0, 10, 10), 0.97, "ok"), "d6", "5", threshold=0.9)  # wrong, sure
    assert (score.right, score.unreadable, score.wrong_ok) == (1, 1, 1)
    assert score.calibration == [(0.6, True), (0.95, True), (0.97, False)]
    assert score.face_confidence == [0.6, 0.95, 0.97]  # not known: the reported confidence stands in


@pytest.mark.parametrize("name", ["classifier.onnx", "classifier-2.onnx", "numerals.onnx", "cocked.onnx"])
def test_each_shipped_model_reads_a_row_as_it_reads_it_alone(name):
    """A batch's row gives the same bytes read alone or beside other rows: what lets the threshold
    choice remember rows (train.RowMemo) and run only the new ones. (The detector reads one image
    a run: its input's batch is fixed at 1.)"""
    from pi_table.vision.reader import _session, models_dir

    rng = np.random.default_rng(7)
    for threads in (1, 0):  # 0: all cores, as the calibration reads
        session = _session(models_dir() / name, threads)
        feed = {i.name: rng.random((4, *[d if isinstance(d, int) else 8 for d in i.shape[1:]]), dtype=np.float32)
                for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        whole = session.run(names, feed)
        alone = session.run(names, {k: v[2:3] for k, v in feed.items()})
        pair = session.run(names, {k: v[1:3] for k, v in feed.items()})
        for w, a, p in zip(whole, alone, pair):
            assert np.array_equal(w[2:3], a) and np.array_equal(w[1:3], p)


def test_row_memo_runs_only_rows_it_has_not_read():
    from pi_table.train.__main__ import RowMemo

    class Doubling:
        """A session whose output ``twice`` is its input doubled; counts the rows it runs."""
        rows = 0
        note = "kept"

        def run(self, names, feed, options=None):
            Doubling.rows += len(feed["x"])
            return [feed["x"] * 2]

    memo = RowMemo(Doubling())
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.array_equal(memo.run(["twice"], {"x": x})[0], x * 2) and Doubling.rows == 4
    mixed = np.stack([x[2], x[2] + 100, x[0], x[2] + 100])  # two rows read before, one new row twice
    assert np.array_equal(memo.run(["twice"], {"x": mixed})[0], mixed * 2) and Doubling.rows == 5
    assert memo.run(["twice"], {"x": np.zeros((0, 3), np.float32)})[0].shape == (0, 3)
    assert memo.note == "kept"  # every other attribute is the session's


def test_threshold_rule_counts_face_errors_not_the_chance_of_no_die(tmp_path, monkeypatch):
    """The calib dice are matched to labelled dice, so the expected wrong share at ok is the
    mean of (1 - face confidence): a die sure of its face (0.999) but reported at 0.996
    because of a 0.3% chance that the box holds no die expects 0.1% wrong, under the 0.3%
    target, from the lowest threshold on; counting the reported confidence (0.4%) never would."""
    import pi_table.vision.reader as reader_module
    from pi_table.train.__main__ import choose_threshold
    from pi_table.vision.dice import Die

    path = tmp_path / "a.png"
    cv2.imwrite(str(path), np.zeros((100, 100, 3), np.uint8))
    labelled = LabelledImage(path, 100, 100, (LabelledDie("d6", "4", (30, 30, 70, 70)),), "f")
    Fixed = fixed_reader(Die("d6", "4", 4, (30, 30, 70, 70), 0.996, "ok", 0.999))
    Fixed.second_look = 4
    monkeypatch.setattr(reader_module, "DiceReader", lambda models, threads=0: Fixed())
    assert choose_threshold(tmp_path, [labelled], 0.003) == 0.5
    assert choose_threshold(tmp_path, [labelled], 0.0005) == 0.99  # 0.1% expected is over this target
    assert Die("d6", "4", 4, (0, 0, 1, 1), 0.9, "ok", 0.95) == Die("d6", "4", 4, (0, 0, 1, 1), 0.9, "ok")
    assert "face_confidence" not in Die("d6", "4", 4, (0, 0, 1, 1), 0.9, "ok", 0.95).to_json()


def _demo_crops(margin: float):
    """Each labelled die of the demo photos cut out at ``margin`` times its box's long side (the
    photo's edge repeated where the cut runs past it), with its labelled face."""
    for photo in sorted(DEMO.glob("*.jpg")):
        image = load_image(photo)
        h, w = image.shape[:2]
        for face, cx, cy, bw, bh in _demo_labels(photo):
            side = int(max(bw * w, bh * h) * margin)
            yield cv2.getRectSubPix(image, (side, side), (cx * w, cy * h)), face


def test_read_crop_finds_the_die_in_a_loose_crop(reader):
    """Someone else's crops frame a die loosely: the box head re-cuts them (CROP_PASSES)."""
    right = total = 0
    for crop, face in _demo_crops(1.8):
        dice = reader.read_crop(crop).dice
        total += 1
        right += len(dice) == 1 and dice[0].status == "ok" and dice[0].face == face
    assert total >= 15 and right >= 0.8 * total, (right, total)


def _read_crop_counts(reader, crops):
    """read --crop on each (crop, face) of ``crops``: (read right, read wrong at ok, crops)."""
    right = wrong = total = 0
    for crop, face in crops:
        dice = reader.read_crop(crop).dice
        total += 1
        ok = len(dice) == 1 and dice[0].status == "ok"
        right += ok and dice[0].face == face
        wrong += ok and dice[0].face != face
    return right, wrong, total


def test_read_crop_reads_the_centre_die_of_a_very_loose_crop(reader, monkeypatch):
    """A crop 3.5 times its die holds neighbours and tray: the detector's box over the centre is
    read (LOOSE_CROP), not what the box head wanders onto; without it fewer are read right and
    more are read wrong at ok."""
    import pi_table.vision.reader as reader_module

    def score():
        return _read_crop_counts(reader, _demo_crops(3.5))

    right, wrong, total = score()
    assert total >= 15 and right >= 0.7 * total and wrong <= 1, (right, wrong, total)
    monkeypatch.setattr(reader_module, "LOOSE_CROP", 0.0)
    monkeypatch.setattr(reader, "_crowded_crop_read", lambda *a: [])  # nor the crowded crops' look
    right_without, wrong_without, _ = score()
    assert right > right_without and wrong <= wrong_without, (right, right_without, wrong, wrong_without)


def _crop_scores(reader, margin: float):
    """read --crop on the demo dice cut at ``margin``: (read right, wrong at ok, the reads)."""
    reads = []
    for crop, face in _demo_crops(margin):
        dice = reader.read_crop(crop).dice
        reads.append((dice[0].face, dice[0].status) if dice else None)
    truth = [face for _, face in _demo_crops(margin)]
    right = sum(r is not None and r[1] == "ok" and r[0] == f for r, f in zip(reads, truth))
    wrong = sum(r is not None and r[1] == "ok" and r[0] != f for r, f in zip(reads, truth))
    return right, wrong, reads


def test_read_crop_reads_the_centre_die_of_a_crowded_crop(reader, monkeypatch):
    """A loose crop the box head takes whole (a few small dice read as one die's pips) is read
    from the die over its centre when the detector sees separate dice (models/history/classifier.md,
    "Crowded crops"): more read right at 3.5x, none more wrong; tight crops read as without it."""
    with_crowd = {m: _crop_scores(reader, m) for m in (1.0, 3.5)}
    monkeypatch.setattr(reader, "_crowded_crop_read", lambda *a: [])
    without = {m: _crop_scores(reader, m) for m in (1.0, 3.5)}
    assert with_crowd[1.0][2] == without[1.0][2]  # a tight crop's pips are not a crowd
    (right, wrong, _), (right0, wrong0, _) = with_crowd[3.5], without[3.5]
    assert right > right0 and wrong <= wrong0, (right, right0, wrong, wrong0)


def test_crowded_crop_read_needs_separate_dice_a_die_sized_read_and_an_unsure_first_read_or_a_cluster(reader, monkeypatch):
    """_crowded_crop_read: the centre die's read again only if two boxes do not overlap at all, the
    read is sure and its die CROWD_DIE..LOOSE_CROP of the crop, and the first read is unsure or two
    other boxes (neighbours) are sure dice (_sure_dice); else [] (the first read stands)."""
    from pi_table.vision.dice import Die

    image = np.zeros((100, 100, 3), np.uint8)
    boxes = [(35, 35, 65, 65), (0, 0, 25, 25), (70, 70, 95, 95)]
    read_at = []
    again = {"box": (34, 34, 66, 66), "confidence": 0.999}
    sure_dice = {"n": 0}
    asked = []
    monkeypatch.setattr(reader, "_boxes", lambda *a, **k: list(boxes))
    monkeypatch.setattr(reader, "_sure_dice", lambda image, bs: asked.append(list(bs)) or sure_dice["n"])

    def fake_dice(image, found, kinds, refine, threshold, scores=None):
        read_at.append(found[0])
        return [Die("d6", "3", 3, again["box"], again["confidence"], "ok")]

    monkeypatch.setattr(reader, "_dice", fake_dice)
    bar = reader.threshold_for("d6")
    unsure = Die("d6", "5", 5, (0, 0, 100, 100), bar - 0.1, "unreadable")
    sure = Die("d6", "5", 5, (0, 0, 100, 100), 0.999, "ok")
    assert [d.face for d in reader._crowded_crop_read(image, unsure, None, None)] == ["3"]
    assert read_at == [(35, 35, 65, 65)]  # the largest box over the centre
    assert reader._crowded_crop_read(image, sure, None, None) == []  # a sure first read and no cluster
    sure_dice["n"] = 2
    assert [d.face for d in reader._crowded_crop_read(image, sure, None, None)] == ["3"]
    assert asked[-1] == [(0, 0, 25, 25), (70, 70, 95, 95)]  # the neighbours, not the box read again
    for box in [(45, 45, 55, 55), (10, 10, 90, 90)]:  # a pip's size; the crop's own die
        again["box"] = box
        assert reader._crowded_crop_read(image, unsure, None, None) == [], box
    again["box"], again["confidence"] = (34, 34, 66, 66), bar - 0.01
    assert reader._crowded_crop_read(image, unsure, None, None) == []  # the read again is unsure too
    again["confidence"] = 0.999
    boxes[:] = [(35, 35, 65, 65), (40, 40, 60, 60), (30, 30, 50, 50)]  # all overlap: one die's parts
    assert reader._crowded_crop_read(image, unsure, None, None) == []


def _lone_dice_off_centre(margin: float, move: float = 0.2):
    """Each labelled die of the demo photos alone on a plain tray (its photo's median colour), in a square
    ``margin`` times its box's long side whose centre lies ``move`` of the square's side right of and below
    the die (a rig's fixed region, a loose hand crop), with its labelled face."""
    for photo in sorted(DEMO.glob("*.jpg")):
        image = load_image(photo)
        tray = np.full_like(image, np.median(image.reshape(-1, 3), axis=0).astype(np.uint8))
        h, w = image.shape[:2]
        for face, cx, cy, bw, bh in _demo_labels(photo):
            x0, y0 = max(0, int((cx - bw / 2) * w) - 2), max(0, int((cy - bh / 2) * h) - 2)
            x1, y1 = int((cx + bw / 2) * w) + 2, int((cy + bh / 2) * h) + 2
            side = int(max(x1 - x0, y1 - y0) * margin)
            canvas = cv2.resize(tray, (3 * side, 3 * side))
            px, py = int(1.5 * side - move * side) - (x1 - x0) // 2, int(1.5 * side - move * side) - (y1 - y0) // 2
            canvas[py : py + y1 - y0, px : px + x1 - x0] = image[y0:y1, x0:x1]
            yield canvas[side : 2 * side, side : 2 * side].copy(), face


def test_read_crop_reads_a_lone_die_off_the_centre_of_a_loose_crop(reader, monkeypatch):
    """A loose crop's only die, off its centre (models/history/classifier.md, "A lone die off the
    centre"): the detector's one box is read though it does not cover the centre; without that, the
    box head's read stands and fewer are read right."""
    import pi_table.vision.reader as reader_module

    def score():
        return _read_crop_counts(reader, _lone_dice_off_centre(2.5))

    right, wrong, total = score()
    assert total >= 15 and right >= 0.9 * total and wrong == 0, (right, wrong, total)
    monkeypatch.setattr(reader_module, "LONE_EDGE", 0.5)  # no box lies that far inside: the fallback never taken
    right_without, wrong_without, _ = score()
    assert right > right_without and wrong <= wrong_without, (right, right_without, wrong, wrong_without)


def test_loose_crop_box_takes_a_lone_box_off_the_centre_only_clear_of_the_edges(reader, monkeypatch):
    """_loose_crop_box: with no box over the centre, the one box the detector finds if it lies clear of the
    crop's edges (LONE_EDGE); not one of two, nor one cut by the edge (a neighbour's)."""
    image = np.zeros((100, 100, 3), np.uint8)
    boxes = [(60, 60, 90, 90)]
    monkeypatch.setattr(reader, "_boxes", lambda *a, **k: list(boxes))
    assert reader._loose_crop_box(image) == (60, 60, 90, 90)
    boxes[:] = [(60, 60, 99, 90)]  # within 2 px of the right edge
    assert reader._loose_crop_box(image) is None
    boxes[:] = [(60, 60, 90, 90), (5, 5, 30, 30)]  # two dice, neither at the centre
    assert reader._loose_crop_box(image) is None
    boxes[:] = [(60, 60, 90, 90), (30, 30, 70, 70)]  # one over the centre: it, as before
    assert reader._loose_crop_box(image) == (30, 30, 70, 70)


def test_loose_crop_box_is_the_largest_box_over_the_centre_and_none_for_the_whole_crop(reader, monkeypatch):
    """_loose_crop_box: boxes over the crop's centre at most LOOSE_CROP_DIE of its side, largest first."""
    image = np.zeros((100, 100, 3), np.uint8)
    boxes = [(40, 40, 60, 60), (30, 30, 90, 90), (0, 0, 100, 100), (0, 0, 20, 20)]
    monkeypatch.setattr(reader, "_boxes", lambda *a, **k: list(boxes))
    assert reader._loose_crop_box(image) == (30, 30, 90, 90)  # (0, 0, 100, 100) is the crop; (0, 0, 20, 20) off centre
    boxes[:] = [(0, 0, 100, 100), (0, 0, 20, 20)]
    assert reader._loose_crop_box(image) is None


def test_cli_eval_cut_crops_scores_read_crop_on_labelled_dice():
    real = need_shared()
    result = cli("eval", str(real / "matteop65-d6-desk" / "Valid"), "--cut-crops", "1.8", "--json", "--limit", "5",
                 "--threads", "1")
    assert result.returncode == 0, result.stderr
    s = json.loads(result.stdout)["all"]
    assert s["images"] == s["dice"] >= 5 and s["recall"] == 1.0  # one crop per labelled die, each read
    assert s["read_right"] > 0.6


def test_cli_eval_close_ups_scores_read_on_one_die_filling_the_picture():
    real = need_shared()
    result = cli("eval", str(real / "matteop65-d6-desk" / "Valid"), "--close-ups", "2", "--json", "--limit", "5",
                 "--threads", "1")
    assert result.returncode == 0, result.stderr
    s = json.loads(result.stdout)["all"]
    assert s["images"] == s["dice"] >= 5  # one close-up per labelled die
    assert s["recall"] >= 0.8 and s["read_right"] > 0.6


def test_centre_match_counts_a_die_whose_label_boxes_only_its_pips(tmp_path):
    """A whole-die box around a pip-sized label: no IoU match, but found and right by centre."""
    from pi_table.vision.dataset import LabelledDie, LabelledImage
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import score_image

    path = tmp_path / "one.png"
    cv2.imwrite(str(path), np.zeros((100, 100, 3), np.uint8))

    Fake = fixed_reader(Die("d6", "1", 1, (30, 30, 70, 70), 0.99, "ok"))

    labelled = LabelledImage(path, 100, 100, (LabelledDie("d6", "1", (45, 45, 55, 55)),), "x")
    s = score_image(Fake(), labelled).to_json()
    assert s["recall"] == 0 and s["read_right"] == 0 and s["counts"]["false_dice"] == 1
    assert s["recall_centre"] == 1 and s["read_right_centre"] == 1


def test_eval_with_kinds_scores_only_the_dice_of_those_kinds(tmp_path):
    """eval --kinds on a mixed tray: a labelled die of a kind left out is not to be reported, so it is
    neither scored nor missed; a die reported as one of the kinds where no such die lies is a false die."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import labelled_images, score_image

    # the d10 "7" at 10..50, a d6 "2" at 60..100, a d8 "3" at 110..150 (YOLO: class, centre and size over 200 px)
    tray = labelled_tray(tmp_path, 200, "2 0.15 0.15 0.2 0.2\n0 0.4 0.15 0.2 0.2\n1 0.65 0.65 0.2 0.2\n",
                         classes="d6:2\nd8:3\nd10:7\n", name="mixed")
    d10 = Die("d10", "7", 7, (10, 10, 50, 50), 0.99, "ok")
    d8_as_d10 = Die("d10", "3", 3, (110, 110, 150, 150), 0.99, "ok")  # the d8 read as a d10
    Fake = fixed_reader(d10, d8_as_d10)
    (labelled,), _ = labelled_images(Fake(), tray, kinds=("d10",))
    s = score_image(Fake(), labelled, kinds=("d10",)).to_json()
    assert s["dice"] == 1 and s["counts"]["right"] == 1 and s["counts"]["false_dice"] == 1
    assert list(s["kinds"]) == ["d10"]
    (labelled,), _ = labelled_images(Fake(), tray)
    every = score_image(Fake(), labelled).to_json()  # without kinds every labelled die counts
    assert every["dice"] == 3 and every["counts"]["right"] == 1 and every["counts"]["false_dice"] == 0


def test_join_numerals_is_a_product_of_the_two_models():
    """Pips keep the classifier's probability; a numbered die's faces share its shape mass by m_s * q_c."""
    from pi_table.vision.reader import join_numerals

    main_classes = ["d6:1", "d6:2", "d8:*", "d10:*", "none"]
    numeral_classes = ["d8:1", "d8:2", "d10:0", "d10-tens:00"]
    classes = ["d6:1", "d6:2", "d8:1", "d8:2", "d10:0", "d10-tens:00", "none"]
    p_main = np.array([[0.9, 0.1, 0.0, 0.0, 0.0],      # a d6: the numeral model does not run
                       [0.0, 0.0, 0.6, 0.3, 0.1]])     # a numbered die
    q = np.array([[0.5, 0.1, 0.2, 0.2]])
    p = join_numerals(p_main, main_classes, q, np.array([1]), numeral_classes, classes)
    assert p[0].tolist() == [0.9, 0.1, 0, 0, 0, 0, 0.0]
    mq = np.array([0.6 * 0.5, 0.6 * 0.1, 0.3 * 0.2, 0.3 * 0.2])  # d10-tens shares the d10's shape
    assert np.allclose(p[1, 2:6], 0.9 * mq / mq.sum()) and p[1, 6] == 0.1
    assert np.allclose(p.sum(axis=1), 1.0)
    assert np.array_equal(join_numerals(p_main, main_classes, None, np.zeros(0, int), numeral_classes, classes)[1],
                          [0, 0, 0, 0, 0, 0, 0.1])


def test_join_d6_numerals_joins_the_kinds_and_reads_the_numeral():
    """An unsure d6 asked of the d6 numeral model: each kind's chance is the classifier's times the numeral model's,
    renormalised over the die's chance (a numeral d6 the classifier takes partly for a d8 becomes a d6 when the
    numeral model sees a d6's numeral); within d6 a numeral read surely decides and pips leave the classifier's
    shares; a numbered kind's faces keep their shares; ``none`` and the rows not asked stay as they were."""
    from pi_table.vision.reader import D6_PIPS, join_d6_numerals

    classes = ["d6:1", "d6:2", "d6:3", "d8:1", "d8:2", "none"]
    numeral_classes = [D6_PIPS, "d6:1", "d6:2", "d6:3", "d8:1", "d8:2"]
    p = np.array([[0.3, 0.1, 0.1, 0.3, 0.1, 0.1],     # not asked
                  [0.3, 0.1, 0.1, 0.3, 0.1, 0.1],     # a numeral "2" the classifier half takes for a d8
                  [0.3, 0.1, 0.1, 0.3, 0.1, 0.1]])    # pips
    q = np.array([[0.0, 0.02, 0.88, 0.0, 0.1, 0.0],
                  [0.9, 0.0, 0.0, 0.0, 0.05, 0.05]])
    out = join_d6_numerals(p, classes, q, np.array([1, 2]), numeral_classes)
    assert out[0].tolist() == p[0].tolist()
    d6 = 0.9 * (0.5 * 0.9) / (0.5 * 0.9 + 0.4 * 0.1)  # the die's 0.9 shared as 0.5 x 0.9 : 0.4 x 0.1
    np.testing.assert_allclose(out[1, :3], d6 * np.array([0.02, 0.88, 0.0]) / 0.9)
    np.testing.assert_allclose(out[1, 3:5], (0.9 - d6) * np.array([0.75, 0.25]))  # the d8's faces keep their shares
    # pips: here as much a d6 as the numeral "2" (q's d6 mass 0.9 against the d8's 0.1 again), the classifier's shares
    np.testing.assert_allclose(out[2, :3], d6 * np.array([0.6, 0.2, 0.2]))
    np.testing.assert_allclose(out[:, 5], p[:, 5])
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    # a numeral model without d6 classes changes nothing
    assert np.array_equal(join_d6_numerals(p, classes, q[:, 1:], np.array([1, 2]), numeral_classes[1:]), p)


def test_an_unsure_d6_is_read_by_the_d6_numeral_model_with_its_first_read(reader, monkeypatch):
    """With a d6 numeral model (``reader.json``'s ``d6_numerals``), a first read (:meth:`_dice`) does not ask
    it, and keeps each box's probabilities; :meth:`_with_d6_numerals` then asks it about each d6 left under
    the d6 threshold (whatever threshold the caller reads at: ``pi-table eval`` reads at 0), joins its read
    with the die's first without running the classifier again, and takes the result only when it is a sure
    d6, keeping the die's box: a numeral "4" decides, pips leave the classifier's read, a numeral that is a
    d8's leaves the die as it was. Sure dice, cocked dice, other kinds and a die whose box has no first read
    are not asked; without the model nothing is."""
    from dataclasses import replace

    from pi_table.vision.dice import Die
    from pi_table.vision.reader import D6_PIPS

    main = reader.classifier.classes
    def row(**probs) -> np.ndarray:
        out = np.zeros(len(main))
        for c, v in probs.items():
            out[main.index(c.replace("_", ":"))] = v
        return out

    rows = [row(d6_3=0.99, none=0.01), row(d6_3=0.55, d6_5=0.44, none=0.01), row(d6_3=0.55, d6_5=0.44, none=0.01),
            row(**{"d8_*": 0.9, "none": 0.1}), row(d6_3=0.3, none=0.7), row(**{"d6_3": 0.5, "d8_*": 0.45, "none": 0.05})]
    boxes = [(10.0 * i, 0.0, 10.0 * i + 8, 8.0) for i in range(len(rows))]
    said = {10.0: "d6:4", 20.0: D6_PIPS, 30.0: "d8:7", 50.0: "d8:7"}

    class Numerals:
        def __init__(self, classes):
            self.classes, self.asked = classes, []

        def crops(self, image, boxes):
            self.asked.extend(b[0] for b in boxes)
            return np.array([b[0] for b in boxes])

        def logits(self, crops):
            out = np.full((len(crops), len(self.classes)), 0.001)
            for i, x in enumerate(crops):
                out[i, self.classes.index(said[x])] = 1.0
            return out

        def calibrated(self, z):
            return z / z.sum(axis=1, keepdims=True)

    classes_before = list(reader.classes)
    numerals = Numerals(reader.numerals.classes)
    d6 = Numerals([D6_PIPS] + [f"d6:{f}" for f in range(1, 7)] + ["d8:7"])
    monkeypatch.setattr(reader, "boxes_and_logits", lambda image, b, refine=None: (list(b), np.stack([rows[int(x[0] // 10)] for x in b])))
    monkeypatch.setattr(reader.classifier, "calibrated", lambda z: np.asarray(z, np.float64))
    monkeypatch.setattr(reader, "numerals", numerals)
    monkeypatch.setattr(reader, "d6_numerals", d6)
    cocked_asked = []
    monkeypatch.setattr(reader, "cocked", object())  # every die flat; each box it is asked about noted
    monkeypatch.setattr(reader, "cocked_probability", lambda image, b: cocked_asked.extend(x[0] for x in b) or np.zeros(len(b)))
    monkeypatch.setattr(reader, "second_look", 1)
    monkeypatch.setattr(reader, "recut_numbered", 0)
    scores: dict = {}
    dice = reader._dice(None, boxes, None, False, scores=scores)
    assert d6.asked == [] and numerals.asked == [30.0, 50.0]  # a first read does not ask it
    assert cocked_asked == [0.0, 10.0, 20.0, 30.0, 50.0]
    assert [d.box[0] for d in dice] == [0.0, 10.0, 20.0, 30.0, 50.0] and set(scores) == set(boxes)
    assert [(d.kind, d.face, d.status) for d in dice] == [("d6", "3", "ok"), ("d6", "", "unreadable"),
                                                           ("d6", "", "unreadable"), ("d8", "", "unreadable"),
                                                           ("d6", "", "unreadable")]
    cocked = Die("d6", "", 0, (60.0, 0.0, 68.0, 8.0), 0.5, "cocked", 0.5)
    unknown = Die("d6", "", 0, (70.0, 0.0, 78.0, 8.0), 0.5, "unreadable", 0.5)  # a box no first read kept
    dice += [cocked, unknown]

    def no_classifier(*a, **k):
        raise AssertionError("the classifier is run again")

    monkeypatch.setattr(reader, "boxes_and_logits", no_classifier)
    numerals.asked = []
    out = reader._with_d6_numerals(None, dice, None, False, None, scores)
    assert d6.asked == [10.0, 20.0, 50.0] and numerals.asked == []  # not the sure d6, the d8, the cocked, the unknown
    assert cocked_asked == [0.0, 10.0, 20.0, 30.0, 50.0]  # flat at these boxes: the cocked-die model not asked again
    assert (out[1].kind, out[1].face, out[1].status, out[1].box) == ("d6", "4", "ok", dice[1].box)
    assert out[1].confidence > 0.97  # a numeral "4" at 0.994 of the d6's 0.99
    assert out[:1] + out[2:] == dice[:1] + dice[2:]  # pips: as read; a d8's numeral: as it was
    assert reader.classes == classes_before
    # read at threshold 0 (as pi-table eval reads), an unsure d6 is "ok" with its best face: asked all the same
    at_zero = [replace(d, face="3", value=3, status="ok") if d.status == "unreadable" and d.kind == "d6" else d
               for d in dice]
    d6.asked = []
    out = reader._with_d6_numerals(None, at_zero, None, False, 0.0, scores)
    assert d6.asked == [10.0, 20.0, 50.0]
    assert out[1].face == "4" and out[2].face == "3" and out[2].confidence < 0.94  # pips at threshold 0: its best face
    d6.asked = []
    monkeypatch.setattr(reader, "d6_numerals", None)  # without the model the unsure d6 keep the classifier's read
    assert reader._with_d6_numerals(None, dice, None, False, None, scores) == dice and d6.asked == []


def read_with_settings(tmp_path, change) -> subprocess.CompletedProcess:
    """``pi-table read`` of a demo photo with a copy of the shipped models whose reader.json ``change(config)``
    has edited in place."""
    import shutil

    models = tmp_path / "models"
    shutil.copytree(REPO / "models", models, ignore=shutil.ignore_patterns("history"))
    config = json.loads((models / "reader.json").read_text())
    change(config)
    (models / "reader.json").write_text(json.dumps(config))
    return subprocess.run([sys.executable, "-m", "pi_table", "read", str(sorted(DEMO.glob("*.jpg"))[0]), "--models",
                           str(models)], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_a_d6_numeral_model_without_the_pips_class_is_refused(tmp_path):
    """``d6_numerals`` naming a model that has no ``d6:pips`` class (the numeral model itself): one line, exit 2."""
    r = read_with_settings(tmp_path, lambda config: config.update(d6_numerals=config["numerals"]))
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "d6_numerals reads no d6 printed with pips ('d6:pips' is not one of its classes)" in r.stderr


def test_a_model_whose_scores_are_not_one_per_class_is_refused(tmp_path):
    """A numeral model file swapped under settings naming other classes (a model trained into a folder whose
    reader.json still names the old model's): one line naming the file, exit 2, not a silent misread."""
    r = read_with_settings(tmp_path, lambda config: config["numerals"]["classes"].pop())
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "numerals.onnx gives 28 scores a crop, its settings name 27 classes" in r.stderr


def test_cli_names_a_missing_model_file(tmp_path):
    """A model folder whose reader.json names a numeral model that is not there: one line, exit 2."""
    import shutil

    models = tmp_path / "models"
    shutil.copytree(REPO / "models", models)
    config = json.loads((models / "reader.json").read_text())
    config["numerals"] = {"file": "numerals.onnx", "classes": ["d8:1"], "temperature": 1.0, "crop_size": 48, "margin": 1.3}
    (models / "reader.json").write_text(json.dumps(config))
    (models / "numerals.onnx").unlink(missing_ok=True)  # the shipped folder has one
    r = subprocess.run([sys.executable, "-m", "pi_table", "read", str(sorted(DEMO.glob("*.jpg"))[0]), "--models", str(models)],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2 and "numerals.onnx" in r.stderr and "Traceback" not in r.stderr


def test_second_look_averages_quarter_turns_of_unsure_dice_only():
    """Dice below the threshold are read again from their crop turned by 1, 2 and 3 quarter
    turns and the four views' scores averaged (at second_look 8 those and the four mirrored);
    sure dice keep their one reading."""
    reader = DiceReader()
    reader.second_look = 4
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    boxes = [d.box for d in reader.detector.detect(image)]
    crops = reader.classifier.crops(image, boxes)
    first = reader.classifier.logits(crops)
    turned = [reader.classifier.logits(np.ascontiguousarray(np.rot90(crops, k, axes=(2, 3)))) for k in range(4)]
    assert not np.allclose(turned[0], turned[1], atol=1e-3)  # the views do differ
    reader.threshold = 1.01  # every die unsure; a box about to be dropped as `none` is not looked at again
    die = reader.classifier.calibrated(first)[:, reader.classifier.classes.index("none")] < reader.none_threshold
    assert die.sum() >= 3
    expected = np.where(die[:, None], np.mean(turned, axis=0), first)
    assert np.allclose(reader._second_look(image, boxes, first), expected, atol=1e-4)
    # eight views: the four turns, each also mirrored, for the classifier
    reader.second_look = 8
    mirrored = [reader.classifier.logits(np.ascontiguousarray(np.flip(np.rot90(crops, k, axes=(2, 3)), axis=3)))
                for k in range(4)]
    assert not np.allclose(mirrored[0], turned[0], atol=1e-3)
    expected8 = np.where(die[:, None], np.mean(turned + mirrored, axis=0), first)
    assert np.allclose(reader._second_look(image, boxes, first), expected8, atol=1e-4)
    # ... but a numeral model's views are the four turns only (a mirrored numeral is no die's)
    out = reader._turned_mean(reader.classifier, image, boxes, first, np.arange(len(boxes)), mirrored=False)
    assert np.allclose(out, np.mean(turned, axis=0), atol=1e-4)
    reader.second_look = 4
    reader.threshold = 0.0  # every die sure
    assert np.array_equal(reader._second_look(image, boxes, first), first)
    reader.second_look = 1  # off
    reader.threshold = 1.01
    assert np.array_equal(reader._second_look(image, boxes, first), first)


def test_refine_unsure_reads_unsure_dice_again_from_the_placed_box_only():
    """``refine_unsure``: a die below its threshold after the first read is cut again around the
    box the box head placed and read again; sure dice keep their first read (and their cost)."""
    reader = DiceReader()
    reader.second_look = 1  # the second look apart: this is the refine pass alone
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    boxes = [d.box for d in reader.detector.detect(image)]
    first, placed = reader.classifier.logits_and_boxes(image, boxes)
    again, placed_again = reader.classifier.logits_and_boxes(image, placed)
    assert not np.allclose(first, again, atol=1e-3)  # the re-cut crops do read differently
    reader.refine, reader.refine_unsure = 0, 1
    reader.threshold = 0.0  # every die sure: one read
    got_boxes, got = reader.boxes_and_logits(image, boxes)
    assert np.array_equal(got, first)
    reader.threshold = 1.01  # every die unsure: the ones not about to be dropped as `none` are read again
    unsure = reader._unsure_rows(first)
    assert len(unsure) >= 3
    got_boxes, got = reader.boxes_and_logits(image, boxes)
    expected = first.copy()
    expected[unsure] = again[unsure]
    assert np.allclose(got, expected, atol=1e-5)
    assert np.allclose(got_boxes[unsure[0]], placed_again[unsure[0]], atol=1e-3)
    reader.refine_unsure = 0  # off
    assert np.array_equal(reader.boxes_and_logits(image, boxes)[1], first)


def test_an_unsure_numbered_die_is_read_again_from_the_placed_box(reader, monkeypatch):
    """``refine_unsure`` for numerals: a die whose best face is a numbered kind's, under that kind's
    threshold, is read again (NUMBERED_RECUT passes of the box head) from the box its first read
    placed, and that read replaces the first; a sure numbered die and an unsure d6 (the classifier's
    own unsure rows are re-cut before the numerals, in boxes_and_logits) keep their first read, and
    neither ``refine_unsure`` 0 nor a crop's passes (``refine`` given) read again."""
    from pi_table.vision import reader as reader_module

    classes = reader.classes
    def row(cls: str, p: float) -> np.ndarray:
        out = np.zeros(len(classes), np.float32)
        out[classes.index(cls)] = p
        out[classes.index("d6:1") if cls != "d6:1" else classes.index("d6:2")] = 1 - p
        return out

    first = {(0, 0, 10, 10): ("d10:7", 0.6), (20, 0, 30, 10): ("d10:7", 0.999), (40, 0, 50, 10): ("d6:3", 0.6),
             (60, 0, 70, 10): ("d8:5", 0.9)}
    calls = []

    def joined(image, boxes, kinds, refine):  # the probabilities before kinds: p + 1, to tell them apart
        calls.append(([tuple(b) for b in boxes], refine))
        if refine is None or refine == 2:  # a first read (or a crop's): each box placed 1 pixel right
            placed = [(b[0] + 1, b[1], b[2] + 1, b[3]) for b in boxes]
            p = np.stack([row(*first[tuple(b)]) for b in boxes])
            return placed, p, np.ones(len(boxes)), p + 1
        p = np.stack([row("d10:3", 0.995) for b in boxes])
        return [(b[0] + 5, b[1], b[2] + 5, b[3]) for b in boxes], p, np.full(len(boxes), 0.5), p + 1

    monkeypatch.setattr(reader, "_joined", joined)
    monkeypatch.setattr(reader, "recut_numbered", 1)
    boxes, p, shares, p_all = reader._classify(None, list(first), None, None)
    assert np.array_equal(p_all, p + 1)  # each row's own read, replaced with it
    # the unsure d10 and d8 read again from their placed boxes, with NUMBERED_RECUT passes; no other box
    assert calls[1] == ([(1, 0, 11, 10), (61, 0, 71, 10)], reader_module.NUMBERED_RECUT) and len(calls) == 2
    assert boxes == [(6, 0, 16, 10), (21, 0, 31, 10), (41, 0, 51, 10), (66, 0, 76, 10)]
    assert [classes[i] for i in p.argmax(axis=1)] == ["d10:3", "d10:7", "d6:3", "d10:3"]
    assert shares.tolist() == [0.5, 1.0, 1.0, 0.5]
    assert reader._unsure_numbered(p).tolist() == []  # both read surely now: no further pass
    calls.clear()
    monkeypatch.setattr(reader, "recut_numbered", 3)  # read surely at the first pass: no second
    reader._classify(None, list(first), None, None)
    assert len(calls) == 2
    calls.clear()

    def still_unsure(image, boxes, kinds, refine):  # a first read as joined's; each recut unsure again, in place
        if refine is None:
            return joined(image, boxes, kinds, refine)
        calls.append(([tuple(b) for b in boxes], refine))
        p = np.stack([row("d10:3", 0.6) for b in boxes])
        return list(boxes), p, np.ones(len(boxes)), p

    monkeypatch.setattr(reader, "_joined", still_unsure)
    monkeypatch.setattr(reader, "recut_settled", False)  # a box left in place is cut again too
    reader._classify(None, list(first), None, None)  # still unsure: read again at each of the three passes
    assert [c[1] for c in calls] == [None] + 3 * [reader_module.NUMBERED_RECUT]
    assert calls[1][0] == calls[2][0] == calls[3][0] == [(1, 0, 11, 10), (61, 0, 71, 10)]
    calls.clear()
    monkeypatch.setattr(reader, "recut_settled", True)  # a box its recut left in place, read far under, settles
    reader._classify(None, list(first), None, None)
    assert [c[1] for c in calls] == [None, reader_module.NUMBERED_RECUT]
    calls.clear()
    monkeypatch.setattr(reader, "_joined", joined)
    monkeypatch.setattr(reader, "recut_numbered", 0)  # off
    assert [classes[i] for i in reader._classify(None, list(first), None, None)[1].argmax(axis=1)][0] == "d10:7"
    assert len(calls) == 1
    calls.clear()
    monkeypatch.setattr(reader, "recut_numbered", 1)
    reader._classify(None, list(first), None, 2)  # a crop's passes: no numbered re-read
    assert len(calls) == 1


def test_a_numbered_die_whose_box_settled_is_not_cut_again(reader, monkeypatch):
    """``recut_settled`` (reader.json; off as shipped): while a numbered die stays unsure, it is cut again unless its last recut moved its box
    less than RECUT_SETTLED of its long side and left it read under RECUT_FAR; a die so settled keeps what that
    read placed and read, a die still moving or read close under its threshold goes on
    (models/history/numerals.md, "Settled boxes are not cut again")."""
    from pi_table.vision import reader as reader_module

    classes = reader.classes

    def read(best: float) -> np.ndarray:
        out = np.zeros(len(classes), np.float32)
        out[classes.index("d10:3")], out[classes.index("d10:4")] = best, 1 - best
        return out

    # per die, by its x0 at the start: pixels each recut moves its 100-pixel box, and its read
    dice = {0: (0.0, 0.6), 100: (5.0, 0.6), 200: (1.5, 0.6), 300: (0.0, 0.95)}
    calls = []

    def joined(image, boxes, kinds, refine):
        calls.append([tuple(b) for b in boxes])
        step, best = zip(*[dice[min(dice, key=lambda s: abs(s - b[0]))] for b in boxes])
        moved = [(b[0] + s, b[1], b[2] + s, b[3]) if refine is not None else tuple(b) for b, s in zip(boxes, step)]
        p = np.stack([read(q) for q in best])
        return moved, p, np.ones(len(boxes)), p

    start = [(x, 0, x + 100, 100) for x in dice]
    assert reader.recut_settled is False  # off as shipped (models/reader.json has no such key): a speed setting
    monkeypatch.setattr(reader, "_joined", joined)
    monkeypatch.setattr(reader, "recut_numbered", 3)
    monkeypatch.setattr(reader, "recut_settled", True)
    boxes, p, _, _ = reader._classify(None, list(start), None, None)
    assert (reader_module.RECUT_SETTLED, reader_module.RECUT_FAR) == (0.02, 0.9)
    assert reader_module.box_moved((0, 0, 100, 100), (1.5, 0, 101.5, 100)) == 0.015
    # the first recut reads all four; the die left in place and the one moved 1.5 pixels settle, read at 0.6;
    # the one moved 5 pixels and the one read at 0.95 (close under d10's threshold) are cut again each time
    assert [len(c) for c in calls] == [4, 4, 2, 2]
    assert calls[2:] == [[(105.0, 0, 205.0, 100), (300.0, 0, 400.0, 100)], [(110.0, 0, 210.0, 100), (300.0, 0, 400.0, 100)]]
    assert boxes == [(0, 0, 100, 100), (115.0, 0, 215.0, 100), (201.5, 0, 301.5, 100), (300, 0, 400, 100)]
    calls.clear()
    monkeypatch.setattr(reader, "recut_settled", False)
    reader._classify(None, list(start), None, None)
    assert [len(c) for c in calls] == [4, 4, 4, 4]


@pytest.mark.parametrize("with_refine", [False, True])
def test_thresholds_are_chosen_without_the_refine_passes_reader_json_then_gets(tmp_path, monkeypatch, with_refine):
    """Training's calibration: the temperatures from first reads, the thresholds chosen with the
    unsure dice's refine passes off (on only with --thresholds-with-refine), and reader.json then
    written with the passes asked for."""
    from argparse import Namespace

    import pi_table.train.__main__ as train

    classes = ["d6:1", "d6:2", "none"]
    rng = np.random.default_rng(0)
    monkeypatch.setattr(train, "calib_logits", lambda models, images, cls: (rng.normal(size=(8, 3)), rng.integers(0, 3, 8)))
    during = []

    def choose(models, images, wrong_target, numbered_target=None, pooled_d6=False):
        config = json.loads((models / "reader.json").read_text())
        during.append((config["refine_unsure"], config.get("recut_numbered")))
        targets.append((wrong_target, numbered_target))
        return {"threshold": 0.93}

    targets = []

    monkeypatch.setattr(train, "choose_thresholds", choose)
    config = {"classifier": {"classes": classes, "temperature": 1.0}, "threshold": 0.9, "refine_unsure": 2,
              "recut_numbered": 1}
    args = Namespace(refine_unsure=2, recut_numbered=3, cascade=None, thresholds_with_refine=with_refine, second_look=4,
                     threshold=None, wrong_target=0.003, numbered_wrong_target=0.0015, calib_d6="photos",
                     numbered_floor=None)
    figures = train.calibrate_reader(tmp_path, config, [], args)
    # without --thresholds-with-refine no recut either (recut_numbered 0)
    assert during == [(2, 3) if with_refine else (0, 0)] and targets == [(0.003, 0.0015)]
    written = json.loads((tmp_path / "reader.json").read_text())
    assert written["refine_unsure"] == figures["refine_unsure"] == 2 and written["threshold"] == 0.93
    assert written["recut_numbered"] == figures["recut_numbered"] == 3


@pytest.mark.parametrize("calib_d6", ["photos", "pooled"])
def test_calib_d6_pooled_fits_the_photos_temperature_on_the_renders_d6_too(tmp_path, monkeypatch, calib_d6):
    """--calib-d6 pooled: the photos' temperature is fitted on the calib photos' dice and the calib
    renders' d6 (not their numbered shapes), and the d6 threshold is chosen on both
    (choose_thresholds' pooled_d6); photos (the default): on the photos alone."""
    from argparse import Namespace

    import pi_table.train.__main__ as train

    classes = ["d6:1", "d6:2", "d8:*", "none"]
    photo = LabelledImage(Path("p.jpg"), 64, 64, (), "nellbyler-d6-tray")
    render = LabelledImage(Path("r.jpg"), 64, 64, (), "renders")
    # photos: 3 dice; renders: 2 d6 and 2 numbered shapes
    rows = {"photos": (np.full((3, 4), 1.0), np.array([0, 1, 0])),
            "renders": (np.full((4, 4), 2.0), np.array([1, 2, 0, 2]))}
    monkeypatch.setattr(train, "calib_logits", lambda models, images, cls: rows["renders" if images and
                                                                                 images[0].folder == "renders" else "photos"])
    fitted = []
    monkeypatch.setattr(train, "fit_temperature", lambda z, t: fitted.append((z[:, 0].tolist(), t.tolist())) or 0.7)
    monkeypatch.setattr(train, "fit_shape_temperature", lambda z, t, cls: None)
    pooled = []
    monkeypatch.setattr(train, "choose_thresholds", lambda models, images, target, numbered=None, pooled_d6=False:
                        pooled.append(pooled_d6) or {"threshold": 0.9})
    args = Namespace(refine_unsure=1, recut_numbered=3, cascade=None, thresholds_with_refine=False, second_look=8,
                     threshold=None, wrong_target=0.003, numbered_wrong_target=0.0015, calib_d6=calib_d6,
                     numbered_floor=None)
    figures = train.calibrate_reader(tmp_path, {"classifier": {"classes": classes, "temperature": 1.0}}, [photo, render],
                                     args)
    if calib_d6 == "pooled":
        assert fitted == [([1.0] * 3 + [2.0] * 2, [0, 1, 0, 1, 0])] and pooled == [True]
    else:
        assert fitted == [([1.0] * 3, [0, 1, 0])] and pooled == [False]
    assert figures["temperature"] == 0.7


def models_copy(tmp_path, edit) -> Path:
    """A copy of the shipped models in ``tmp_path`` whose reader.json is ``edit(config)``'s."""
    import shutil

    from pi_table.vision.reader import models_dir

    for f in models_dir().iterdir():
        if f.is_file():  # not models/history/, the cards' records
            shutil.copy(f, tmp_path / f.name)
    config = json.loads((tmp_path / "reader.json").read_text())
    (tmp_path / "reader.json").write_text(json.dumps(edit(config)))
    return tmp_path


def test_reader_json_names_a_bad_refine_unsure(tmp_path):
    with pytest.raises(ValueError, match="refine_unsure must be 0..3, got 5"):
        DiceReader(models_copy(tmp_path, lambda config: {**config, "refine_unsure": 5}))


def test_reader_json_recut_numbered_defaults_to_refine_unsure_and_is_checked(tmp_path):
    """``recut_numbered``: the passes for numbered dice whose numeral is still unsure; without it, ``refine_unsure``'s."""
    def without_recut(config):
        return {**{k: v for k, v in config.items() if k != "recut_numbered"}, "refine_unsure": 2}

    assert DiceReader(models_copy(tmp_path, without_recut)).recut_numbered == 2
    assert DiceReader(models_copy(tmp_path, lambda config: {**config, "recut_numbered": 3})).recut_numbered == 3
    with pytest.raises(ValueError, match="recut_numbered must be 0..3, got -1"):
        DiceReader(models_copy(tmp_path, lambda config: {**config, "recut_numbered": -1}))


@pytest.mark.parametrize("entry, value, says", [("temperature", "warm", "could not convert string to float: 'warm'"),
                                               ("shape_temperature", -0.5, "shape_temperature must be > 0, got -0.5"),
                                               ("temperature", 0, "temperature must be > 0, got 0.0")])
def test_reader_json_names_a_bad_temperature(tmp_path, entry, value, says):
    """A temperature that is not a positive number: one line naming reader.json and the value."""
    def edit(config):
        config["classifier"][entry] = value
        return config

    with pytest.raises(ValueError) as bad:
        DiceReader(models_copy(tmp_path, edit))
    assert str(bad.value) == f"{tmp_path / 'reader.json'} is not a reader's settings ({says})"


def test_reader_json_names_a_bad_second_look(tmp_path):
    with pytest.raises(ValueError, match="second_look must be 1, 2, 4 or 8, got 3"):
        DiceReader(models_copy(tmp_path, lambda config: {**config, "second_look": 3}))


@pytest.mark.parametrize("name", ["zoom_out", "zoom_in", "join_parts", "recut_settled"])
def test_reader_json_names_a_switch_that_is_not_true_or_false(tmp_path, name):
    """An on/off setting given as text ("no" is truthy): one line naming the file, the setting and the value."""
    with pytest.raises(ValueError) as bad:
        DiceReader(models_copy(tmp_path, lambda config: {**config, name: "no"}))
    assert str(bad.value) == f"{tmp_path / 'reader.json'}: {name} must be true or false, got 'no'"
    assert getattr(DiceReader(models_copy(tmp_path, lambda config: {**config, name: False})), name) is False
    assert getattr(DiceReader(models_copy(tmp_path, lambda config: {**config, name: True})), name) is True


def test_a_malformed_reader_json_is_one_line_at_the_cli(tmp_path):
    """A settings entry missing a key, or a file that is not JSON: exit 2, one line naming the file."""
    import shutil

    from pi_table.vision.reader import models_dir

    for f in models_dir().iterdir():
        if f.is_file():  # not models/history/, the cards' records
            shutil.copy(f, tmp_path / f.name)
    config = json.loads((tmp_path / "reader.json").read_text())
    del config["cocked"]["threshold"]
    (tmp_path / "reader.json").write_text(json.dumps(config))
    image = str(sorted(DEMO.glob("*.jpg"))[0])
    for text, message in ((json.dumps(config), "is not a reader's settings (KeyError: 'threshold')"),
                          ('{"detector": ', "is not JSON")):
        (tmp_path / "reader.json").write_text(text)
        r = subprocess.run([sys.executable, "-m", "pi_table", "read", image, "--models", str(tmp_path)],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
        assert r.returncode == 2 and f"{tmp_path / 'reader.json'} {message}" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bench_times_the_second_looks_worst_case(tmp_path):
    """With a second look the bench adds a row for the largest frame with every die unsure."""
    from pi_table.vision.bench import bench, format_rows

    def factory(threads):
        reader = DiceReader(threads=1)
        reader.second_look = 4
        return reader

    rows = bench(factory, dice_counts=(1, 5), repeats=1, thread_options=(1,))
    assert [(r["dice"], r["all_unsure"]) for r in rows] == [(1, False), (5, False), (5, True)]
    assert rows[-1]["unsure"] == rows[-1]["found"] >= 4  # all read at the threshold above 1
    assert "all" in format_rows(rows).splitlines()[3]
    # each row counts the page faults its reads took (a number on Linux; '-' where the OS does not say)
    assert all(isinstance(r["page_faults_per_frame"], float) and r["page_faults_per_frame"] >= 0 for r in rows)
    assert format_rows(rows).splitlines()[0].split()[-1] == "faults"
    assert format_rows([{**rows[0], "page_faults_per_frame": None}]).splitlines()[1].split()[-1] == "-"


def test_bench_p90_is_never_below_the_median(monkeypatch):
    """p90_ms is the read time 90% of the reads take at most (nearest rank): with few repeats
    it is the slowest read, never a faster one than the median (with --repeats 2 it was the
    faster read: 'median 35.11 ms, p90 25.58 ms')."""
    from types import SimpleNamespace

    from pi_table.vision import bench as bench_mod

    clock = iter(range(10_000))
    monkeypatch.setattr(bench_mod.time, "perf_counter", lambda: next(clock) / 1000)  # each call 1 ms on

    class SlowerEachRead:  # the n-th timed read takes n ms more than the one before
        threshold, classifier, second_look, numerals = 0.5, SimpleNamespace(cascade=None), 1, None

        def read(self, frame):
            for _ in range(getattr(self, "n", 0)):
                bench_mod.time.perf_counter()
            self.n = getattr(self, "n", 0) + 1
            return SimpleNamespace(dice=())

    for repeats in (1, 2, 3, 10, 30):
        row, = bench_mod.bench(lambda threads: SlowerEachRead(), dice_counts=(1,), repeats=repeats, thread_options=(1,))
        assert row["p90_ms"] >= row["median_ms"], (repeats, row)
    row, = bench_mod.bench(lambda threads: SlowerEachRead(), dice_counts=(1,), repeats=2, thread_options=(1,))
    assert row["p90_ms"] == max(row["p90_ms"], row["median_ms"]) and row["p90_ms"] > row["median_ms"]


def test_bench_against_alternates_two_readers_on_the_same_frames(monkeypatch):
    """bench(against=...): both readers read each frame in turn, the order turned each repeat (A B
    B A ...), so a machine slowing down mid-run weighs on both; a case only one has (its second
    look) is timed for it alone; the table gives each frame's ratio. Without it, rows are as before."""
    from types import SimpleNamespace

    from pi_table.vision import bench as bench_mod

    clock = iter(range(100_000))
    monkeypatch.setattr(bench_mod.time, "perf_counter", lambda: next(clock) / 1000)  # each call 1 ms on
    calls = []

    class Fake:
        threshold, numerals = 0.5, None

        def __init__(self, name, cost, second_look):
            self.name, self.cost, self.second_look = name, cost, second_look
            self.classifier = SimpleNamespace(cascade=None)

        def read(self, frame):
            calls.append(self.name)
            for _ in range(self.cost):  # 'cost' ms more than the bare timing
                bench_mod.time.perf_counter()
            return SimpleNamespace(dice=())

    rows = bench_mod.bench(lambda threads: Fake("A", 2, 4), dice_counts=(1,), repeats=4, thread_options=(1,),
                           against=lambda threads: Fake("B", 5, 1))
    assert [(r["reader"], r["dice"], r["all_unsure"]) for r in rows] == [("first", 1, False), ("against", 1, False),
                                                                        ("first", 1, True)]
    assert calls[:6] == ["A"] * 3 + ["B"] * 3  # warm-up
    assert calls[6:14] == ["A", "B", "B", "A", "A", "B", "B", "A"]  # timed, alternating
    assert calls[14:] == ["A"] * 7  # the second look's case: A alone
    assert rows[1]["median_ms"] > rows[0]["median_ms"]
    ratio = bench_mod.format_rows(rows).splitlines()[-1].split()
    assert ratio[:3] == ["1", "1", "d6"] and ratio[-1] == f"{rows[1]['median_ms'] / rows[0]['median_ms']:.3f}x"
    alone = bench_mod.bench(lambda threads: Fake("A", 2, 1), dice_counts=(1,), repeats=1, thread_options=(1,))
    assert "reader" not in alone[0] and "against" not in bench_mod.format_rows(alone)


def test_bench_per_model_splits_a_frame_by_model():
    """--per-model: each shipped model file has its median ms, the rest is 'other', and on a
    frame with every model run (the cascade off: on sure d6 the second classifier would not run) each
    share is positive and they add up to about the frame."""
    from pi_table.vision.bench import bench, format_rows

    reader = DiceReader(threads=1)
    reader.classifier.cascade = None
    rows = bench(lambda threads: reader, dice_counts=(5,), repeats=3, thread_options=(1,), per_model=True)
    spent = rows[0]["models_ms"]
    assert {"detector.onnx", "classifier.onnx", "classifier-2.onnx", "cocked.onnx", "other"} <= set(spent)
    assert all(v > 0 for k, v in spent.items() if k != "numerals.onnx")
    assert sum(spent.values()) == pytest.approx(rows[0]["median_ms"], rel=0.5)
    text = format_rows(rows)
    assert "classifier-2.onnx" in text and "other" in text
    assert "models_ms" not in bench(lambda threads: DiceReader(threads=1), dice_counts=(1,), repeats=1,
                                    thread_options=(1,))[0]


X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma
"""
PI5_CPUINFO = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp

Revision\t: d04170
Model\t\t: Raspberry Pi 5 Model B Rev 1.0
"""


def test_bench_names_the_cpu_and_whether_it_has_int8_dot_products():
    """bench.machine: the CPU's name, its SIMD flags and whether int8 convolutions get dot-product
    instructions (AVX2 alone: no; a Pi 5's asimddp: yes); a numeric x86 'model' is not a name."""
    from pi_table.vision.bench import machine, machine_line

    x86 = machine(X86_CPUINFO)
    assert x86["cpu"] == "AMD EPYC" and x86["simd"] == ["sse4_2", "avx2"] and x86["int8_dot"] is False
    assert "int8 dot products no" in machine_line(x86) and "avx2" in machine_line(x86)
    pi = machine(PI5_CPUINFO)
    assert pi["cpu"] == "Raspberry Pi 5 Model B Rev 1.0" and pi["int8_dot"] is True
    assert pi["simd"] == ["asimd", "asimddp"]
    assert "int8 dot products yes" in machine_line(pi)
    none = machine("")
    assert none["int8_dot"] is None and none["simd"] == [] and "unknown" in machine_line(none)
    vnni = machine(X86_CPUINFO.replace("avx2 fma", "avx2 fma avx512f avx512_vnni"))
    assert vnni["int8_dot"] is True and vnni["simd"][-2:] == ["avx512f", "avx512_vnni"]


def test_bench_times_a_frame_of_numbered_dice_after_the_d6_frames():
    """numbered_counts: a frame of rendered flat d8, d10 and d10-tens (bench.numbered_frame, made
    by the kit's renderer: the train extra) is read too, its row last with kind "numbered", and the
    numeral model's runs are timed in it."""
    pytest.importorskip("PIL")
    from pi_table.vision.bench import NUMBERED_KINDS, bench, format_rows, numbered_frame

    frame = numbered_frame(3)
    assert frame.shape == (640, 640, 3) and frame.dtype == np.uint8
    assert numbered_frame(3) is frame  # rendered once per process
    read = DiceReader(threads=1).read(frame)
    assert sum(d.kind in NUMBERED_KINDS for d in read.dice) >= 2  # (the renders' fonts are the machine's: not pinned to 3 of 3)
    rows = bench(lambda threads: DiceReader(threads=1), dice_counts=(1,), repeats=1, thread_options=(1,),
                 per_model=True, numbered_counts=(3,))
    assert [(r["dice"], r["kind"]) for r in rows if not r["all_unsure"]] == [(1, "d6"), (3, "numbered")]
    assert rows[-1]["kind"] == "numbered" and rows[-1]["models_ms"].get("numerals.onnx", 0) > 0
    assert "numbered" in format_rows(rows)


def test_eval_grows_pip_labels_to_die_boxes(tmp_path):
    """A folder that labels pips (matteop65's): a reader that boxes the whole die matches the grown
    label at IoU >= 0.5; scored against the labels as they are (--boxes as-labelled) it does not."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate

    folder = tmp_path / "matteop65-d6-desk" / "Valid"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.png"), drawn_die_scene([(0.5, 0.5)]))
    (folder / "labels" / "a.txt").write_text("0 0.475 0.425 0.1 0.1\n")  # the one's pip, 20 px

    WholeDie = fixed_reader(Die("d6", "1", 1, (61, 51, 129, 119), 0.99, "ok"), size=200, models=tmp_path)
    grown = evaluate(WholeDie(), tmp_path / "matteop65-d6-desk")["all"]
    as_labelled = evaluate(WholeDie(), tmp_path / "matteop65-d6-desk", die_boxes=False)["all"]
    assert grown["read_right"] == 1 and grown["counts"]["false_dice"] == 0
    assert as_labelled["read_right"] == 0 and as_labelled["read_right_centre"] == 1


def test_eval_misses_lists_each_die_not_read_right_and_draws_a_contact_sheet(tmp_path):
    """--misses: a die read as another face, one below the threshold, one no detection overlaps and
    a false die are each listed once (a die read right is not), and the folder's contact sheet
    holds one tile for each."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import TILE, TILES_PER_ROW, evaluate, write_misses

    # faces 2, 3, 4, 5 (classes 1..4) at four corners, 40 px boxes
    folder = labelled_tray(tmp_path, 200, "1 0.15 0.15 0.2 0.2\n2 0.85 0.15 0.2 0.2\n3 0.15 0.85 0.2 0.2\n"
                                            "4 0.85 0.85 0.2 0.2\n")
    Fake = fixed_reader(Die("d6", "2", 2, (10, 10, 50, 50), 0.99, "ok"),  # right
                        Die("d6", "6", 6, (150, 10, 190, 50), 0.99, "ok"),  # a 3 read as 6
                        Die("d6", "4", 4, (10, 150, 50, 190), 0.5, "ok"),  # a 4 below the 0.9 threshold
                        Die("d6", "1", 1, (90, 90, 120, 120), 0.95, "ok"),  # no die there
                        size=200, models=tmp_path)  # the 5 at bottom right: missed
    misses = []
    result = evaluate(Fake(), folder, misses=misses)
    assert result["all"]["read_right"] == 0.25
    assert sorted((m.what, m.truth, m.read) for m in misses) == [
        ("false", "", "1"), ("missed", "5", ""), ("unreadable", "4", "4"), ("wrong", "3", "6")]
    assert [m.caption() for m in misses if m.what == "wrong"] == ["3 -> 6 0.99 ok"]
    written = write_misses(misses, tmp_path / "out")
    assert [p.name for p in written] == ["misses.json", "tray.jpg"]
    assert len(json.loads(written[0].read_text())) == 4
    sheet = cv2.imread(str(written[1]))
    assert sheet.shape == (TILE + 34, TILE * TILES_PER_ROW, 3)
    # the wrong read's tile shows the die's grey square, not the padding round the photo's edge
    assert sheet[:TILE, TILE:2 * TILE].std() > 5
    with pytest.raises(ValueError, match="not a folder"):
        write_misses(misses, written[1])


def assert_sheet_drawn_and_bad_value_refused(misses, tmp_path: Path, folder: Path, flag: str, value: str, error: str):
    """The misses of the labelled tray ``folder`` make ``misses.json`` and its contact sheet; and
    ``eval FOLDER FLAG VALUE --misses`` with a bad VALUE exits 2 with ``error`` before the misses
    folder is made."""
    from pi_table.vision.evaluate import write_misses

    written = write_misses(misses, tmp_path / "out")
    assert [p.name for p in written] == ["misses.json", "tray.jpg"] and cv2.imread(str(written[1])) is not None
    bad = cli("eval", str(folder), flag, value, "--misses", str(tmp_path / "never"))
    assert bad.returncode == 2 and error in bad.stderr
    assert not (tmp_path / "never").exists()


def test_eval_cut_crops_misses_writes_each_crop_not_read_right(tmp_path):
    """--cut-crops with --misses: a crop read as another face and one below the threshold are
    written to OUT/crops/ and listed, with the labelled die's box centred in the crop; a crop read
    right is not. Their contact sheet is drawn from those files."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate_cut_crops

    # faces 2, 3, 4 (classes 1..3), 40 px boxes
    folder = labelled_tray(tmp_path, 200, "1 0.15 0.15 0.2 0.2\n2 0.85 0.15 0.2 0.2\n3 0.15 0.85 0.2 0.2\n")
    reads = [(Die("d6", "2", 2, (20, 20, 60, 60), 0.99, "ok"),),  # right
             (Die("d6", "6", 6, (18, 20, 60, 62), 0.99, "ok"),),  # a 3 read as 6
             (Die("d6", "4", 4, (20, 20, 60, 60), 0.5, "ok"),)]  # a 4 below the 0.9 threshold
    shapes = []
    fake = reader_in_turn("read_crop", reads, 80, tmp_path, check=lambda image: shapes.append(image.shape))
    misses = []
    result = evaluate_cut_crops(fake, folder, 2.0, misses=misses, misses_dir=tmp_path / "out")
    assert shapes == [(80, 80, 3)] * 3  # 2.0 times the 40 px box
    assert result["all"]["counts"]["right"] == 1
    assert sorted((m.what, m.truth, m.read) for m in misses) == [("unreadable", "4", "4"), ("wrong", "3", "6")]
    for m in misses:
        assert Path(m.image).parent == tmp_path / "out" / "crops" and cv2.imread(m.image).shape == (80, 80, 3)
        assert m.truth_box == pytest.approx((20, 20, 60, 60)) and m.folder == "tray"
    # a bad margin is refused before the --misses folder is made
    assert_sheet_drawn_and_bad_value_refused(misses, tmp_path, folder, "--cut-crops", "9",
                                             "--cut-crops margin must be 0.5..4, got 9.0")


def test_eval_cut_offset_moves_the_crop_off_the_die(tmp_path):
    """--cut-crops M --cut-offset F: each crop's centre lies F of its side right of and below the die
    (a white 40 px die cut at 2.0 and 0.25: the die's centre 20 px up and left of the crop's), and a miss's
    label box says where the die lies in the crop."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate_cut_crops

    folder = labelled_tray(tmp_path, 200, "1 0.5 0.5 0.2 0.2\n")
    photo = folder / "images" / "a.png"
    image = cv2.imread(str(photo))
    image[80:120, 80:120] = 255
    cv2.imwrite(str(photo), image)
    centres = []

    def white_centre(crop):
        ys, xs = np.nonzero(crop[..., 0] > 200)
        centres.append((xs.mean(), ys.mean()))

    reads = [(Die("d6", "3", 3, (0, 0, 40, 40), 0.99, "ok"),)] * 2
    misses = []
    for offset in (0.0, 0.25):
        evaluate_cut_crops(reader_in_turn("read_crop", reads, 80, tmp_path, check=white_centre), folder, 2.0,
                           offset=offset, misses=misses, misses_dir=tmp_path / "out")
    assert centres[0] == pytest.approx((39.5, 39.5), abs=1.0) and centres[1] == pytest.approx((19.5, 19.5), abs=1.0)
    assert [m.truth_box for m in misses] == [pytest.approx((20, 20, 60, 60)), pytest.approx((0, 0, 40, 40))]


def test_eval_sweep_goes_with_cut_crops_close_ups_and_crops(tmp_path):
    """--sweep rescores the reads of every mode, not only whole photos: three cut crops read right at
    0.99 and 0.93 and wrong at 0.95 give, cut at 0.5 and 0.97, 2/3 -> 1/3 read right and 1/3 -> 0
    wrong at ok; the same through the CLI with --cut-crops, --close-ups and --crop (was refused)."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate_cut_crops

    folder = labelled_tray(tmp_path, 200, "1 0.15 0.15 0.2 0.2\n2 0.85 0.15 0.2 0.2\n3 0.15 0.85 0.2 0.2\n")
    reads = [(Die("d6", "2", 2, (20, 20, 60, 60), 0.99, "ok"),), (Die("d6", "6", 6, (20, 20, 60, 60), 0.95, "ok"),),
             (Die("d6", "4", 4, (20, 20, 60, 60), 0.93, "ok"),)]
    result = evaluate_cut_crops(reader_in_turn("read_crop", reads, 80, tmp_path), folder, 2.0, sweep=[0.5, 0.97])
    low, high = result["sweep"]["tray"]
    assert (low["read_right"], low["wrong_at_ok"], low["unreadable"]) == pytest.approx((2 / 3, 1 / 3, 0.0), abs=1e-4)
    assert (high["read_right"], high["wrong_at_ok"], high["unreadable"]) == pytest.approx((1 / 3, 0.0, 2 / 3), abs=1e-4)
    assert result["sweep"]["all"] == result["sweep"]["tray"]
    crops = tmp_path / "crops" / "4"
    crops.mkdir(parents=True)
    cv2.imwrite(str(crops / "a.png"), np.full((64, 64, 3), 128, np.uint8))
    for target, mode in ((folder, ("--cut-crops", "1.3")), (folder, ("--close-ups", "2")), (tmp_path / "crops", ("--crop",))):
        out = cli("eval", str(target), *mode, "--sweep", "0.5,0.97", "--json", "--threads", "1")
        assert out.returncode == 0, (mode, out.stderr)
        data = json.loads(out.stdout)
        assert len(data["sweep"]["all"]) == 2 and data["sweep"]["all"][0]["threshold"] == 0.5, mode


def test_eval_close_ups_misses_writes_each_close_up_not_read_right_or_with_a_false_die(tmp_path):
    """--close-ups with --misses: a die read as another face, one missed, and a close-up read right
    but with a pip taken for a die are written to OUT/close-ups/ and listed (the false die as
    ``false``, no label box), boxes in the close-up's pixels; a close-up read right alone is not."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import CLOSE_UP_SIDE, evaluate_close_ups

    # faces 2, 3, 4, 5 (classes 1..4), 40 px boxes well inside the photo
    folder = labelled_tray(tmp_path, 400, "1 0.25 0.25 0.1 0.1\n2 0.75 0.25 0.1 0.1\n3 0.25 0.75 0.1 0.1\n"
                                            "4 0.75 0.75 0.1 0.1\n")
    die_box = (375.0, 375.0, 1125.0, 1125.0)  # the die in its close-up: 2x its box, scaled to 1500 px
    pip = (600.0, 600.0, 700.0, 700.0)
    reads = [(Die("d6", "2", 2, die_box, 0.99, "ok"),),  # right, alone
             (Die("d6", "6", 6, die_box, 0.99, "ok"),),  # a 3 read as 6
             (),  # the 4 missed
             (Die("d6", "5", 5, die_box, 0.99, "ok"), Die("d6", "1", 1, pip, 0.97, "ok"))]  # right, and a pip
    shapes = []
    fake = reader_in_turn("read", reads, CLOSE_UP_SIDE, tmp_path, check=lambda image: shapes.append(image.shape))
    misses = []
    result = evaluate_close_ups(fake, folder, 2.0, misses=misses, misses_dir=tmp_path / "out")
    assert shapes == [(CLOSE_UP_SIDE, CLOSE_UP_SIDE, 3)] * 4
    assert result["all"]["counts"]["right"] == 2
    assert sorted((m.what, m.truth, m.read) for m in misses) == [("false", "", "1"), ("missed", "4", ""),
                                                                 ("wrong", "3", "6")]
    # the false die and its die's close-up: one picture; each named by its die's place in the photo
    assert sorted({Path(m.image).name for m in misses}) == ["a_2.png", "a_3.png", "a_4.png"]
    for m in misses:
        assert Path(m.image).parent == tmp_path / "out" / "close-ups" and cv2.imread(m.image).shape[:2] == (1500, 1500)
        assert m.folder == "tray"
        if m.what == "false":
            assert m.truth_box is None and m.read_box == pip
        else:
            assert m.truth_box == pytest.approx(die_box)
    # a bad frame is refused before the --misses folder is made
    assert_sheet_drawn_and_bad_value_refused(misses, tmp_path, folder, "--close-ups", "20",
                                             "--close-ups frame must be 1.2..10, got 20.0")


def test_scores_are_kept_per_die_kind(tmp_path):
    """A labelled die counts for its kind, a detection (and a false die) for the kind read."""
    from pi_table.vision.dataset import LabelledDie, LabelledImage
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import format_report, score_image

    path = tmp_path / "r.png"
    cv2.imwrite(str(path), np.zeros((100, 100, 3), np.uint8))

    Fake = fixed_reader(Die("d8", "7", 7, (10, 10, 30, 30), 0.99, "ok"), Die("d6", "2", 2, (70, 70, 90, 90), 0.95, "ok"))

    labelled = LabelledImage(path, 100, 100, (LabelledDie("d8", "7", (11, 10, 30, 31)),
                                              LabelledDie("d10", "0", (40, 40, 60, 60))), "renders")
    s = score_image(Fake(), labelled).to_json()
    assert (s["images"], s["dice"], s["counts"]["right"], s["counts"]["false_dice"]) == (1, 2, 1, 1)
    kinds = s["kinds"]
    assert list(kinds) == ["d6", "d8", "d10"]
    assert kinds["d8"]["read_right"] == 1 and kinds["d8"]["counts"]["false_dice"] == 0
    assert kinds["d10"]["dice"] == 1 and kinds["d10"]["recall"] == 0 and kinds["d10"]["confusion"] == {"d10:0->-": 1}
    assert kinds["d6"]["dice"] == 0 and kinds["d6"]["counts"]["false_dice"] == 1
    report = format_report({"folders": {"renders": s}, "all": s})
    assert "\n  d10 " in report and "\n  d8 " in report


def test_eval_scores_dice_by_size_band(tmp_path):
    """by_size bands the labelled dice by their box's long side: a 25 px die read right, a 45 px die
    read wrong at ok, a 45 px die missed and a 60 px die unsure (below the threshold) each land in
    their band with the counts of the folder's rules, summed over images and shown in the report."""
    from pi_table.vision.dataset import LabelledDie, LabelledImage
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import SIZE_BANDS, Score, format_report, score_image, size_band

    assert [size_band((0, 0, w, 10)) for w in (29.9, 30, 39, 40, 55, 70, 99, 100, 400)] == [
        "<30", "30-40", "30-40", "40-55", "55-70", "70-100", "70-100", ">=100", ">=100"]
    assert size_band((0, 0, 10, 64)) == "55-70"  # the long side, tall or wide
    path = tmp_path / "r.png"
    cv2.imwrite(str(path), np.zeros((300, 300, 3), np.uint8))
    Fake = fixed_reader(Die("d8", "7", 7, (0, 0, 25, 25), 0.99, "ok"), Die("d8", "2", 2, (100, 0, 145, 45), 0.99, "ok"),
                        Die("d8", "3", 3, (0, 100, 60, 160), 0.5, "ok"), size=300)
    labelled = LabelledImage(path, 300, 300, (LabelledDie("d8", "7", (0, 0, 25, 25)), LabelledDie("d8", "1", (100, 0, 145, 45)),
                                              LabelledDie("d8", "5", (200, 200, 245, 245)),
                                              LabelledDie("d8", "3", (0, 100, 60, 160))), "renders")
    total = Score()
    for _ in range(2):
        total.add(score_image(Fake(), labelled))
    s = total.to_json()
    assert list(s["by_size"]) == ["<30", "40-55", "55-70"]
    assert s["by_size"]["<30"] == {"dice": 2, "read_right": 1.0, "recall": 1.0, "wrong_at_ok": 0.0}
    assert s["by_size"]["40-55"] == {"dice": 4, "read_right": 0.0, "recall": 0.5, "wrong_at_ok": 1.0}
    assert s["by_size"]["55-70"] == {"dice": 2, "read_right": 0.0, "recall": 1.0, "wrong_at_ok": 0.0}
    assert s["kinds"]["d8"]["by_size"] == s["by_size"]
    assert sum(c["dice"] for c in s["by_size"].values()) == s["dice"]
    report = format_report({"folders": {"renders": s}, "all": s})
    assert "read right by die size" in report and all(band in report for band in SIZE_BANDS)
    assert "100.0%     2" in report
    assert "by_material" not in s and "by die material" not in report  # no material labelled: no table


def rendered_folder(root, labels: list[str], meta_dice: list[dict]):
    """A render folder at ``root`` as the renderer writes one: one black 100x100 picture ``a.jpg``, its YOLO
    ``labels`` (class 0 = d6 "1", ...), and its meta's ``dice``."""
    import json

    for sub in ("images", "labels", "meta"):
        (root / sub).mkdir(parents=True)
    (root / "classes.txt").write_text("".join(f"d6:{k + 1}\n" for k in range(6)))
    cv2.imwrite(str(root / "images" / "a.jpg"), np.zeros((100, 100, 3), np.uint8))
    (root / "labels" / "a.txt").write_text("".join(line + "\n" for line in labels))
    (root / "meta" / "a.json").write_text(json.dumps({"dice": meta_dice}))
    return root


def scored(reader, labelled) -> dict:
    """The eval JSON (Score.to_json) of ``reader`` on one labelled picture."""
    from pi_table.vision.evaluate import Score, score_image

    total = Score()
    total.add(score_image(reader, labelled))
    return total.to_json()


def test_eval_scores_rendered_dice_by_material(tmp_path):
    """A render folder's meta gives each die's material (LabelledDie.material, read by
    load_yolo); by_material tallies them as by_size does: a marbled die read right, an
    opaque die missed and an opaque die read wrong at ok."""
    from pi_table.vision.dataset import die_materials, load_yolo
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import format_report

    dice = [{"cocked": False, "material": m} for m in ("teal-white/marbled", "ivory-black/opaque", "red-white/opaque")]
    root = rendered_folder(tmp_path / "renders", ["0 0.2 0.2 0.2 0.2", "1 0.6 0.6 0.2 0.2", "2 0.2 0.8 0.2 0.2"], dice)
    [labelled] = load_yolo(root)
    assert [d.material for d in labelled.dice] == ["marbled", "opaque", "opaque"]
    assert die_materials(root / "meta" / "a.json", 2) is None  # not one per labelled die
    assert die_materials(root / "meta" / "missing.json", 3) is None
    Fake = fixed_reader(Die("d6", "1", 1, (10, 10, 30, 30), 0.99, "ok"), Die("d6", "2", 2, (10, 70, 30, 90), 0.99, "ok"))
    s = scored(Fake(), labelled)
    assert s["by_material"] == {"marbled": {"dice": 1, "read_right": 1.0, "recall": 1.0, "wrong_at_ok": 0.0},
                                "opaque": {"dice": 2, "read_right": 0.0, "recall": 0.5, "wrong_at_ok": 1.0}}
    report = format_report({"folders": {"renders": s}, "all": s})
    assert "read right by die material" in report and "marbled" in report
    # read --crop on the same dice cut out (eval --cut-crops) keeps them by material too
    from pi_table.vision.dice import Reading
    from pi_table.vision.evaluate import evaluate_cut_crops

    crops = iter(["1", "2", "4"])  # right, right, a 3 read as 4

    class CropReader:
        def threshold_for(self, kind):
            return 0.9

        def status_threshold(self, kind, box):
            return 0.9

        def read_crop(self, image, name="", kinds=None, threshold=None):
            face = next(crops)
            return Reading(name, 26, 26, 1.0, (Die("d6", face, int(face), (4, 4, 22, 22), 0.99, "ok"),))

    cut = evaluate_cut_crops(CropReader(), root, 1.3)["all"]
    assert {m: (c["dice"], c["read_right"], c["wrong_at_ok"]) for m, c in cut["by_material"].items()} == {
        "marbled": (1, 1.0, 0.0), "opaque": (2, 0.5, 0.5)}


def test_eval_scores_rendered_dice_by_printing(tmp_path):
    """A render's meta says how each die is printed (LabelledDie.printing: pips or numerals); by_printing
    tallies whole pictures by it, as by_material does: a d6 printed with numerals read right, one with pips
    read wrong at ok. Photos say nothing of it and get no table."""
    from pi_table.vision.dataset import load_yolo
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import format_report

    dice = [{"cocked": False, "material": "red-white/opaque", "printing": {"print": p}} for p in ("numerals", "pips")]
    root = rendered_folder(tmp_path / "renders", ["0 0.2 0.2 0.2 0.2", "1 0.6 0.6 0.2 0.2"], dice)
    [labelled] = load_yolo(root)
    Fake = fixed_reader(Die("d6", "1", 1, (10, 10, 30, 30), 0.99, "ok"), Die("d6", "3", 3, (50, 50, 70, 70), 0.99, "ok"))
    s = scored(Fake(), labelled)
    assert s["by_printing"] == {"numerals": {"dice": 1, "read_right": 1.0, "recall": 1.0, "wrong_at_ok": 0.0},
                                "pips": {"dice": 1, "read_right": 0.0, "recall": 1.0, "wrong_at_ok": 1.0}}
    report = format_report({"folders": {"renders": s}, "all": s})
    assert "read right by printing" in report
    (root / "meta" / "a.json").unlink()
    [labelled] = load_yolo(root)
    assert "by_printing" not in scored(Fake(), labelled)


def test_shipped_models_fit_the_size_budget():
    """All shipped ONNX models together stay within 8 MB (the d6 reader issue's size bar)."""
    total = sum(p.stat().st_size for p in (REPO / "models").glob("*.onnx"))
    assert 0 < total <= 8_000_000, total


def test_shipped_reader_reads_rendered_d8_and_d10(tmp_path):
    """The shipped reader on fresh renders (fonts and palettes held out from training, plain
    surfaces): its best face is right on most d8 and d10, and at the shipped thresholds few
    are wrong at ok. A broken-pipeline floor well below the card's figures (models/numerals.md)."""
    pytest.importorskip("PIL", reason="the renderer needs Pillow (optional extra `train`)")
    from pi_table.vision.evaluate import evaluate

    out = tmp_path / "renders"
    render = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--n", "16", "--seed", "99",
                             "--split", "valid", "--kinds", "d8,d10", "--size", "640", "--backgrounds", "",
                             "--workers", "2"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert render.returncode == 0, render.stderr
    result = cli("eval", str(out), "--json", "--threads", "1")
    assert result.returncode == 0, result.stderr
    shipped = json.loads(result.stdout)["all"]["kinds"]
    reader = DiceReader(REPO / "models", threads=1)
    reader.thresholds = {kind: 0.5 for kind in reader.thresholds}
    best = evaluate(reader, out)["all"]["kinds"]
    for kind in ("d8", "d10"):
        assert best[kind]["dice"] >= 15 and best[kind]["read_right"] >= 0.7, (kind, best[kind])
        assert shipped[kind]["read_right"] >= 0.25 and shipped[kind]["wrong_at_ok"] <= 0.05, (kind, shipped[kind])


def test_sweep_has_rows_per_die_kind_in_a_folder_of_several(tmp_path):
    """eval --sweep on a folder of d6 and d8: besides the folder's rows, one set per kind, each
    cut on that kind's dice only (a 0.95-sure d6 is unreadable at 0.97, the 0.99-sure d8 is not)."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate, format_report

    folder = labelled_tray(tmp_path, 100, "1 0.2 0.2 0.2 0.2\n0 0.8 0.8 0.2 0.2\n", classes="d6:2\nd8:7\n",
                           name="renders")
    reader = fixed_reader(Die("d8", "7", 7, (10, 10, 30, 30), 0.99, "ok"), Die("d6", "2", 2, (70, 70, 90, 90), 0.95, "ok"))
    result = evaluate(reader(), folder, sweep=[0.5, 0.97])
    assert {"renders", "renders: d6", "renders: d8", "all"} <= set(result["sweep"])
    assert [r["read_right"] for r in result["sweep"]["renders: d6"]] == [1.0, 0.0]
    assert [r["read_right"] for r in result["sweep"]["renders: d8"]] == [1.0, 1.0]
    assert [r["read_right"] for r in result["sweep"]["renders"]] == [1.0, 0.5]
    report = format_report(result)
    assert "renders: d8" in report and "all: d8" not in report


def test_eval_calib_keeps_the_calib_split_of_photos_and_renders(tmp_path):
    """eval --calib scores only what the thresholds were fitted on: the photos' calib names in
    splits.json, and the one render in 20 (md5 of the name) of a rendered folder."""
    from pi_table.vision.dataset import is_calib_render
    from pi_table.vision.evaluate import evaluate

    names = [f"r{i}.png" for i in range(200)]
    calib_renders = [n for n in names if is_calib_render(n)]
    assert 0 < len(calib_renders) < 30  # about one in 20
    renders = tmp_path / "data" / "renders"
    photos = tmp_path / "data" / "photos"
    for folder, files, classes in ((renders, names[:60], True), (photos, ["p1.png", "p2.png", "p3.png"], False)):
        (folder / "images").mkdir(parents=True)
        (folder / "labels").mkdir()
        if classes:
            (folder / "classes.txt").write_text("d6:2\n")
        for n in files:
            cv2.imwrite(str(folder / "images" / n), np.zeros((100, 100, 3), np.uint8))
            (folder / "labels" / (n[:-4] + ".txt")).write_text("0 0.2 0.2 0.2 0.2\n" if classes else "1 0.2 0.2 0.2 0.2\n")
    models = tmp_path / "models"
    models.mkdir()
    (models / "splits.json").write_text(json.dumps({"folders": {"photos": {"train": ["p1.png"], "calib": ["p2.png"],
                                                                           "valid": ["p3.png"]}}}))
    from pi_table.vision.dice import Die

    reader = fixed_reader(Die("d6", "2", 2, (10, 10, 30, 30), 0.99, "ok"), models=models)()
    result = evaluate(reader, tmp_path / "data", calib=True)
    assert result["folders"]["renders"]["images"] == len([n for n in names[:60] if is_calib_render(n)]) >= 1
    assert result["folders"]["photos"]["images"] == 1
    assert evaluate(reader, tmp_path / "data")["folders"]["renders"]["images"] == 60


def test_eval_calib_does_not_go_with_held_out(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pi_table", "eval", str(tmp_path), "--calib", "--held-out"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--calib" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_shipped_classifier_is_an_ensemble_whose_logits_are_averaged():
    """models/reader.json names two classifiers (seeds 0 and 1); the reader's scores are their mean."""
    from pi_table.vision.reader import models_dir

    reader = DiceReader()
    files = reader.config["classifier"]["file"]
    assert files == ["classifier.onnx", "classifier-2.onnx"] and len(reader.classifier.sessions) == 2
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    boxes = [d.box for d in reader.detector.detect(image)]
    crops = reader.classifier.crops(image, boxes)
    each = [Classifier(models_dir() / f, reader.classifier.classes).logits(crops) for f in files]
    assert not np.allclose(each[0], each[1], atol=1e-3)
    assert np.allclose(reader.classifier.logits(crops), np.mean(each, axis=0), atol=1e-5)


def test_second_look_holds_a_numbered_shape_to_its_kinds_threshold():
    """A die the classifier calls a d10 at 0.96 is unsure (its numeral must reach the d10
    threshold, 0.99) though 0.96 clears the d6 threshold; a d6 face at 0.96 is sure."""
    reader = DiceReader()
    reader.second_look = 4
    reader.classifier.shape_temperature = None  # one temperature, so that row() below gives back its probs
    reader.threshold, reader.thresholds = 0.94, {"d8": 0.95, "d10": 0.99, "d10-tens": 0.97}
    classes = reader.classifier.classes
    assert reader.shape_threshold("d6:3") == 0.94
    assert reader.shape_threshold("d8:*") == 0.95
    assert reader.shape_threshold("d10:*") == 0.97  # the lower of d10's and d10-tens's

    def row(best: str, p: float) -> np.ndarray:
        probs = np.full(len(classes), (1 - p) / (len(classes) - 1))
        probs[classes.index(best)] = p
        return reader.classifier.temperature * np.log(probs)  # calibrated() gives probs back

    logits = np.stack([row("d6:3", 0.96), row("d10:*", 0.96), row("d8:*", 0.96), row("d10:*", 0.98),
                       row("none", 0.96)]).astype(np.float32)
    looked = {}

    def turned_mean(model, image, boxes, z, rows):
        looked["rows"] = list(rows)
        return z

    reader._turned_mean = turned_mean
    reader._second_look(np.zeros((64, 64, 3), np.uint8), [(0, 0, 10, 10)] * len(logits), logits)
    assert looked["rows"] == [1]  # the d10 below 0.97; not the d6 or d8 above theirs, the d10 at 0.98, nor `none`


def test_a_numbered_die_the_numeral_model_sees_whole_is_ok_from_the_big_numbered_threshold(tmp_path):
    """A d8, d10 or tens die whose box is at least the numeral model's crop size over its margin across
    (70 pixels as shipped) is reported ok from BIG_NUMBERED_THRESHOLD (0.93) when its kind's threshold
    is higher; a smaller one, a d6, or any die with ``big_numbered`` off keeps its kind's threshold.
    The eval scores reads by the same rule; the passes for unsure dice do not move."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import _status
    from pi_table.vision.reader import BIG_NUMBERED_THRESHOLD

    reader = DiceReader()
    reader.threshold, reader.thresholds = 0.91, {"d8": 0.99, "d10": 0.9, "d10-tens": 0.99}
    whole = reader.numeral_whole_px
    assert whole == reader.numerals.crop_size / reader.numerals.margin
    big, small = (0, 0, whole, whole * 0.8), (0, 0, whole - 1, whole - 1)
    assert BIG_NUMBERED_THRESHOLD == 0.93 and 69 < whole < 70
    assert reader.status_threshold("d8", big) == 0.93 and reader.status_threshold("d10-tens", big) == 0.93
    assert reader.status_threshold("d8", small) == 0.99 and reader.status_threshold("d10-tens", small) == 0.99
    assert reader.status_threshold("d10", big) == 0.9  # its own is lower
    assert reader.status_threshold("d6", (0, 0, 500, 500)) == 0.91
    assert reader.threshold_for("d8") == 0.99  # what the second look and recut answer to
    assert reader._unsure(Die("d8", "3", 3, big, 0.95, "ok"))

    classes = reader.classes
    probs = np.zeros((2, len(classes)), np.float32)
    probs[:, classes.index("d8:3")], probs[:, classes.index("d8:5")] = 0.95, 0.05
    image = np.zeros((200, 200, 3), np.uint8)
    dice = reader._dice_from(image, [(10, 10, 90, 90), (120, 120, 160, 160)], probs, np.ones(2), None, False,
                             None, cocked=False)
    assert [(d.face, d.status) for d in dice] == [("3", "ok"), ("", "unreadable")]
    assert _status(reader, Die("d8", "3", 3, (10, 10, 90, 90), 0.95, "ok")) == "ok"
    assert _status(reader, Die("d8", "3", 3, (120, 120, 160, 160), 0.95, "ok")) == "unreadable"
    assert _status(reader, Die("d8", "3", 3, (10, 10, 90, 90), 0.92, "ok")) == "unreadable"

    off = DiceReader(models_copy(tmp_path, lambda config: {**config, "big_numbered": False}))
    off.thresholds = reader.thresholds
    assert not off.big_numbered and off.status_threshold("d8", big) == 0.99
    with pytest.raises(ValueError, match="big_numbered must be true or false, got 'no'"):
        DiceReader(models_copy(tmp_path, lambda config: {**config, "big_numbered": "no"}))


def test_a_row_topped_by_a_numbered_shape_takes_the_shape_temperature():
    """Top-label calibration: the row whose top raw score is ``d10:*`` is softened or sharpened
    by ``shape_temperature``; a row topped by a d6 face or ``none`` keeps ``temperature``."""
    classifier = DiceReader().classifier
    classes = classifier.classes
    classifier.temperature, classifier.shape_temperature = 1.0, 0.5
    logits = np.zeros((3, len(classes)), np.float32)
    for row, top in enumerate(("d10:*", "d6:3", "none")):
        logits[row, classes.index(top)] = 2.0
        logits[row, classes.index("d8:*")] = 1.0
    p = classifier.calibrated(logits)

    def softmax(z):
        e = np.exp(z - z.max())
        return e / e.sum()

    assert np.allclose(p[0], softmax(logits[0] / 0.5))
    assert np.allclose(p[1], softmax(logits[1])) and np.allclose(p[2], softmax(logits[2]))
    classifier.shape_temperature = None
    assert np.allclose(classifier.calibrated(logits)[0], softmax(logits[0]))


def test_a_big_dies_numbered_part_is_a_sure_small_die_only_at_the_part_bar():
    """_with_big_dice keeps a cluster's parts as dice when they are surely dice: a d6 face at the
    d6 threshold, a numbered shape at NUMBERED_PART_SURE even where its kinds' thresholds are lower."""
    from pi_table.vision.reader import NUMBERED_PART_SURE

    reader = DiceReader()
    reader.threshold, reader.thresholds = 0.94, {"d8": 0.92, "d10": 0.96, "d10-tens": 0.99}
    assert reader._part_bar("d6:4") == 0.94
    assert reader._part_bar("d10:*") == reader._part_bar("d8:*") == NUMBERED_PART_SURE == 0.99
    reader.thresholds = {"d8": 0.995, "d10": 0.995, "d10-tens": 0.995}
    assert reader._part_bar("d8:*") == 0.995  # never below the kind's own threshold


def test_crop_die_averages_a_die_much_bigger_than_its_crop():
    """Shrinking a 600-pixel die to 48 pixels averages its pixels (cv2.warpAffine alone samples
    one pixel in 16 and turns fine stripes into noise); a die near the crop's size is cut by the
    one warp, as training cut it."""
    image = np.zeros((1000, 1000, 3), np.uint8)
    image[:, ::2] = 255  # one-pixel stripes: grey once averaged
    crop = crop_die(image, (200, 200, 800, 800), size=48, margin=1.3)
    assert crop.shape == (48, 48, 3)
    assert abs(float(crop.mean()) - 127.5) < 10 and float(crop.std()) < 12, (crop.mean(), crop.std())
    small = crop_die(image, (480, 480, 540, 540), size=48, margin=1.3)  # 78-pixel crop: one warp
    scale = 48 / 78
    m = np.array([[scale, 0, 24 - 510 * scale], [0, scale, 24 - 510 * scale]], np.float32)
    assert np.array_equal(small, cv2.warpAffine(image, m, (48, 48), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE))


def test_a_die_filling_half_the_picture_is_found_whole(reader):
    """A phone's close-up (each demo die with twice its box around it, 1500 pixels across): the
    detector alone splits such a die into pips; the zoomed-out second look finds it whole."""
    from pi_table.vision.evaluate import close_up

    whole = total = parts = right = 0
    for photo in sorted(DEMO.glob("*.jpg")):
        image = load_image(photo)
        h, w = image.shape[:2]
        for face, cx, cy, bw, bh in _demo_labels(photo):
            box = ((cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h)
            picture, die_box = close_up(image, box, 2.0)
            assert max(picture.shape[:2]) == 1500
            reading = reader.read(picture)
            total += 1
            found = [d for d in reading.dice if iou(d.box, die_box) >= 0.5]
            whole += bool(found)
            right += bool(found) and found[0].status == "ok" and found[0].face == face
            parts += sum(1 for d in reading.dice if d not in found and iou(d.box, die_box) < 0.5
                         and d.box[0] >= die_box[0] and d.box[2] <= die_box[2] and d.box[1] >= die_box[1] and d.box[3] <= die_box[3])
    assert whole >= 0.9 * total and right >= 0.8 * total and parts <= 0.2 * total, (whole, right, parts, total)


def test_a_cluster_of_small_dice_is_not_taken_for_one_big_die(reader, monkeypatch):
    """When the zoomed-out look boxes a cluster of dice the first look read surely, the first
    look's boxes stand; when the boxes inside are no dice (parts of a big die), the big box
    replaces them."""
    from pi_table.vision.reader import Detection

    photo = sorted(DEMO.glob("*.jpg"))[0]
    image = load_image(photo)
    found = reader.detector.detect(image)
    assert len(found) >= 3
    xs = [v for d in found[:3] for v in (d.box[0], d.box[2])]
    ys = [v for d in found[:3] for v in (d.box[1], d.box[3])]
    cluster = (min(xs) - 5, min(ys) - 5, max(xs) + 5, max(ys) + 5)
    looker = reader.close_up_detector or reader.detector  # the detector of the zoomed-out look
    monkeypatch.setattr(looker, "big_dice", lambda im, f, shrunk=None: [(Detection(cluster, 0.9), [0, 1, 2])])
    assert reader._with_big_dice(image, found) == [d.box for d in found]
    # Three boxes of bare tray (no die) inside a big box: parts, dropped for it.
    tray = [(5.0, 5.0, 25.0, 25.0), (30.0, 5.0, 50.0, 25.0), (5.0, 30.0, 25.0, 50.0)]
    blank = np.full((400, 400, 3), 200, np.uint8)
    fake = [Detection(b, 0.5) for b in tray] + [Detection((300.0, 300.0, 330.0, 330.0), 0.8)]
    monkeypatch.setattr(looker, "big_dice", lambda im, f, shrunk=None: [(Detection((0.0, 0.0, 60.0, 60.0), 0.9), [0, 1, 2])])
    assert reader._with_big_dice(blank, fake) == [(0.0, 0.0, 60.0, 60.0), (300.0, 300.0, 330.0, 330.0)]


def test_a_far_looks_big_die_is_a_cluster_at_one_sure_part(reader, monkeypatch):
    """A big die of the far looks (zoom_out above ZOOM_OUT) over one die the classifier reads
    surely is not taken: the first look's boxes stand. The same box from the ZOOM_OUT look, which
    needs two sure parts, replaces that die when the die is a big part of it (a close-up's die found
    whole and as its top face); when the die is under LONE_DIE of it, the box is read too, and the
    die stands only if the box is no die (DiceReader._no_die_round_one)."""
    from pi_table.vision.reader import FAR_ZOOM_OUTS, LONE_DIE, ZOOM_OUT, Detection

    photo = sorted(DEMO.glob("*.jpg"))[0]
    image = load_image(photo)
    found = reader.detector.detect(image)
    x0, y0, x1, y1 = found[0].box
    p = reader.classifier.calibrated(reader.classifier.logits(reader.classifier.crops(image, [found[0].box])), top_label=False)[0]
    assert p.max() >= reader._part_bar(reader.classifier.classes[int(p.argmax())])  # a sure die
    assert reader.classifier.classes[int(p.argmax())] != "d6:1"  # (a lone "1" may be a pip)
    looker = reader.close_up_detector or reader.detector
    ground = {"answer": True}
    monkeypatch.setattr(reader, "_no_die_round_one", lambda image, box: ground["answer"])
    for grow, zoom, no_die, kept in ((1.0, FAR_ZOOM_OUTS[0], False, True), (0.125, FAR_ZOOM_OUTS[0], False, True),
                                     (0.125, ZOOM_OUT, True, False), (1.0, ZOOM_OUT, False, False),
                                     (1.0, ZOOM_OUT, True, True)):
        big = (x0 - grow * (x1 - x0), y0 - grow * (y1 - y0), x1 + grow * (x1 - x0), y1 + grow * (y1 - y0))
        assert ((x1 - x0) < LONE_DIE * (big[2] - big[0])) == (grow == 1.0)
        ground["answer"] = no_die
        monkeypatch.setattr(looker, "big_dice", lambda im, f, shrunk=None, z=zoom, b=big: [(Detection(b, 0.9, z), [0])])
        boxes = reader._with_big_dice(image, found)
        assert (boxes == [d.box for d in found]) == kept, (grow, zoom, no_die)
        assert (boxes == [big] + [d.box for d in found[1:]]) != kept, (grow, zoom, no_die)


def test_a_box_read_as_a_sure_die_or_a_numbered_shape_is_no_ground_round_one_die(reader, monkeypatch):
    """_no_die_round_one: the big box is the ground round one die only when the classifier (one
    view, one temperature) reads it as no sure die and gives numbered shapes under half of it (a big
    percentile die's "00" reads as a d6 "6" when boxed alone; the die itself is no ground)."""
    classes = reader.classifier.classes
    probs = {}

    def calibrated(logits, top_label=True):
        return np.array([probs[c] if c in probs else 0.0 for c in classes])[None, :]

    monkeypatch.setattr(reader.classifier, "calibrated", calibrated)
    image = np.full((100, 100, 3), 128, np.uint8)
    box = (10.0, 10.0, 90.0, 90.0)
    probs.clear(); probs.update({"d6:1": 0.6, "none": 0.4})
    assert reader._no_die_round_one(image, box)  # unsure, no numbered shape: the ground
    probs.clear(); probs.update({"d6:3": 0.99, "none": 0.01})
    assert not reader._no_die_round_one(image, box)  # a sure die
    probs.clear(); probs.update({"d10:*": 0.55, "d6:6": 0.45})
    assert not reader._no_die_round_one(image, box)  # mostly a numbered die
    probs.clear(); probs.update({"none": 0.99, "d6:1": 0.01})
    assert reader._no_die_round_one(image, box)  # sure of no die


def test_a_big_dies_parts_that_all_read_one_and_cover_little_of_it_are_its_pips(reader, monkeypatch):
    """_is_cluster: sure parts make a cluster of small dice, except when every sure one reads as a
    d6's "1" and together they cover less than CLUSTER_COVER of the big die (its pips)."""
    from pi_table.vision.reader import CLUSTER_COVER

    image = np.zeros((100, 100, 3), np.uint8)
    big = (0, 0, 100, 100)
    pips = [(20, 20, 35, 35), (65, 65, 80, 80)]  # 2 x 225 px: 4.5% of the big die
    dice = [(0, 0, 40, 40), (50, 50, 90, 90)]  # 2 x 1600 px: 32%
    assert 2 * 225 < CLUSTER_COVER * 100 * 100 <= 2 * 1600
    reads = {}
    monkeypatch.setattr(reader, "_sure_parts", lambda image, boxes: [reads[tuple(b)] for b in boxes])
    reads.update({pips[0]: "d6:1", pips[1]: "d6:1"})
    assert not reader._is_cluster(image, big, pips, 2)  # pips
    reads[pips[1]] = "d6:3"
    assert reader._is_cluster(image, big, pips, 2)  # two small dice, not both "1"
    reads[pips[1]] = ""
    assert not reader._is_cluster(image, big, pips, 2) and not reader._is_cluster(image, big, pips[:1], 1)
    reads[pips[0]] = "d10:*"
    assert reader._is_cluster(image, big, pips, 1)  # a far look's die: one sure part
    ground = {"answer": True}
    monkeypatch.setattr(reader, "_no_die_round_one", lambda image, box: ground["answer"])
    assert reader._is_cluster(image, big, pips, 2)  # one sure part under LONE_DIE, in no die: the ground
    ground["answer"] = False
    assert not reader._is_cluster(image, big, pips, 2)  # ... in a box that reads as a die: its part
    ground["answer"] = True
    face = (10, 10, 90, 90)  # a part as big as a top face: one is not enough
    reads[face] = "d6:3"
    assert not reader._is_cluster(image, big, [face], 2) and reader._is_cluster(image, big, [face], 1)
    reads[pips[0]] = "d6:1"
    assert not reader._is_cluster(image, big, pips, 2)  # one small "1": a pip
    reads[pips[0]] = "d10:*"
    reads.update({dice[0]: "d6:1", dice[1]: "d6:1"})
    assert reader._is_cluster(image, big, dice, 2)  # two dice showing 1 fill the box


def test_a_close_ups_pips_read_as_ones_do_not_hide_its_die(reader, monkeypatch):
    """A demo die (a "2", white with black pips) in a close-up, twice its box around it: its pips
    are read surely as "1"s; they are taken for its pips (CLUSTER_COVER), the die is read, no false
    die. Without that test the die is lost and a pip reported."""
    from pi_table.vision import reader as reader_module
    from pi_table.vision.evaluate import close_up
    from pi_table.vision.reader import inside_share

    photo = DEMO / "IMG_20191209_100728.jpg"
    image = load_image(photo)
    h, w = image.shape[:2]
    label, cx, cy, bw, bh = (DEMO / "labels" / (photo.stem + ".txt")).read_text().split()[:5]
    cx, cy, bw, bh = float(cx) * w, float(cy) * h, float(bw) * w, float(bh) * h
    picture, box = close_up(image, (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2), 2.0)

    def read():
        dice = reader.read(picture).dice
        die = max(dice, key=lambda d: iou(d.box, box))
        return (die.face if iou(die.box, box) >= 0.5 else None,
                sum(d is not die and inside_share(d.box, box) > 0.5 for d in dice))

    assert label == "1" and read() == ("2", 0)
    monkeypatch.setattr(reader_module, "CLUSTER_COVER", 0.0)
    face, false = read()
    assert face is None and false >= 1


def test_far_looks_find_close_up_dice_the_zoomed_out_look_splits(reader, monkeypatch):
    """Three rendered close-ups (two d10 and a percentile d10, each with 2 or 3 times its box
    around it, 1500 pixels across; valid split, seed 292: renders/fresh30, where the far looks
    were chosen, with the fonts .ci/run installs) whose die the ZOOM_OUT look alone boxes by its
    face or numerals: the reader reports those parts as dice and misses the die. With the far
    looks it finds the die whole. The wider joins of unsure parts (JOIN_GAP_SURE, read surely) also find
    these dice whole without the far looks: they are off here, so that the far looks are what is tested."""
    pytest.importorskip("PIL")  # the renderer's (train extra)
    from pi_table.train.render.scene import make_scene
    from pi_table.vision import reader as reader_module
    from pi_table.vision.evaluate import close_up
    from pi_table.vision.reader import inside_share

    monkeypatch.setattr(reader_module, "JOIN_GAP_SURE", reader_module.JOIN_GAP)

    pictures = []
    for index, die, frame in ((1, 9, 2.0), (3, 0, 2.0), (8, 1, 3.0)):
        scene = make_scene(292, "valid", index)
        image = cv2.cvtColor(scene.image, cv2.COLOR_RGB2BGR)
        pictures.append(close_up(image, scene.meta["dice"][die]["box_px"], frame))

    def count(far) -> tuple[int, int]:
        monkeypatch.setattr(reader_module, "FAR_ZOOM_OUTS", far)
        whole = parts = 0
        for picture, die_box in pictures:
            dice = reader.read(picture).dice
            match = [d for d in dice if iou(d.box, die_box) >= 0.5]
            whole += bool(match)
            parts += sum(1 for d in dice if d not in match and inside_share(d.box, die_box) > 0.5)
        return whole, parts

    far, near = count(reader_module.FAR_ZOOM_OUTS), count(())
    assert far[0] >= 2 and far[0] > near[0] and far[1] < near[1], (far, near)


def test_dice_small_in_a_wide_shot_are_found_by_an_enlarged_look():
    """A tray photo set in a plain border three times its size (its dice about 7 first-look
    pixels across, under the detector's trained 12..90): the first look alone misses dice and
    misreads others; the enlarged look (Detector.small_dice) reads the same faces as the photo
    as taken. A frame whose dice are in range is not looked at again."""
    from collections import Counter

    from pi_table.vision.bench import tray_frame
    from pi_table.vision.reader import _edge_colour

    fresh = DiceReader(threads=1)  # its zoom_in is switched below: not the module's shared reader
    frame = tray_frame(20)
    as_taken = Counter(d.face for d in fresh.read(frame).dice if d.status == "ok")
    assert sum(as_taken.values()) >= 19
    found = fresh.detector.detect(frame)
    assert fresh.detector.small_dice(frame, found) is found  # dice in range: no second look
    wide = np.empty((1920, 1920, 3), np.uint8)
    wide[:] = _edge_colour(frame)
    wide[640:1280, 640:1280] = frame
    fresh.zoom_in = False
    alone = fresh.read(wide).dice
    fresh.zoom_in = True
    enlarged = fresh.read(wide).dice
    assert len(alone) <= 17, len(alone)
    assert Counter(d.face for d in enlarged if d.status == "ok") == as_taken
    assert len(enlarged) == sum(as_taken.values()) and all(640 <= d.box[0] and d.box[2] <= 1280 for d in enlarged)


def test_small_dice_are_enlarged_again_while_a_look_still_sees_them_small(reader, monkeypatch):
    """The net sizes a die under about 12 input pixels at 13 to 15 (Detector.small_dice): one look
    enlarged from that size leaves the dice still small, so the look is enlarged again from what it
    measured, up to MAX_ZOOM_IN in all; each look replaces the last only when it finds at least as
    many dice, and a frame whose dice are in range is not looked at again."""
    from pi_table.vision import reader as reader_module
    from pi_table.vision.reader import Detection, Detector

    detector = reader.detector
    image = np.zeros((1280, 1280, 3), np.uint8)  # first look: 320 input pixels, 4 image pixels each
    true_px = 7.0  # each die 7 first-look pixels across

    def looks():
        calls = []

        def find(self, tensor, stride, width, height):
            zoom = 16.0 / stride  # stride: image pixels per output cell, 4 input pixels
            calls.append(round(zoom, 2))
            seen = max(true_px * zoom, 15.0)  # the net's size: never under 15 input pixels
            side = seen * stride / 4  # back in image pixels
            return [Detection((100 * i, 0, 100 * i + side, side), 0.9) for i in range(5)]
        return calls, find

    calls, find = looks()
    monkeypatch.setattr(Detector, "_find", find)
    first = find(detector, None, 16.0, 1280, 1280)
    found = detector.small_dice(image, first)
    # 15 -> enlarged 28/15 = 1.87 times: still 15 (7 x 1.87 = 13, under the net's floor) -> 3.48 -> 24.4
    assert calls == [1.0, 1.87, 3.48], calls
    assert found is not first and abs((found[0].box[2] - found[0].box[0]) / 4 * 3.48 - 24.4) < 0.2
    assert reader_module.SMALL_DIE <= 24.4 < reader_module.MID_DIE

    calls, find = looks()
    monkeypatch.setattr(Detector, "_find", find)
    in_range = [Detection((0, 0, 80, 80), 0.9)]  # 20 first-look pixels
    assert detector.small_dice(image, in_range) is in_range and calls == []

    # an enlarged look that finds fewer dice than the last is not taken, and no further look follows
    fewer = iter([[Detection((0, 0, 40, 40), 0.9)], []])
    calls = []
    monkeypatch.setattr(Detector, "_find", lambda self, t, stride, *a: calls.append(stride) or next(fewer))
    two = [Detection((0, 0, 56, 56), 0.9), Detection((100, 0, 156, 56), 0.9)]  # 14 input pixels
    assert detector.small_dice(image, two) is two and len(calls) == 1


def test_a_first_look_sure_of_no_die_is_enlarged_as_if_its_dice_were_small(reader, monkeypatch):
    """A tray seen small in a wide shot: the first look boxes clusters of its tiny dice as dice of a
    size it knows, sure of none (Detector.small_dice, UNSURE_LOOK). Such a look is enlarged as one
    whose dice come out at SMALL_DIE would be; the enlarged look replaces it when it sees
    small dice surely, and is enlarged again while they come out small. An enlarged look whose
    dice come out in range, or sure of none again (a close-up's pips), leaves the first look
    standing, as does a first look with one die at UNSURE_LOOK."""
    from pi_table.vision import reader as reader_module
    from pi_table.vision.reader import Detection, Detector

    detector = reader.detector
    image = np.zeros((1280, 1280, 3), np.uint8)  # first look: 320 input pixels, 4 image pixels each
    sure, unsure = reader_module.UNSURE_LOOK, reader_module.UNSURE_LOOK - 0.05
    clusters = [Detection((100 * i, 0, 100 * i + 80, 80), unsure) for i in range(5)]  # 20 input pixels

    def looks(px: float, score: float):
        calls = []

        def find(self, tensor, stride, width, height):
            calls.append(round(16.0 / stride, 2))  # the look's zoom
            return [Detection((60 * i, 0, 60 * i + px, px), score) for i in range(14)]
        monkeypatch.setattr(Detector, "_find", find)
        return calls

    calls = looks(32, sure)  # dice 8 input pixels at 1x: 14 in the look 1.75 times enlarged
    found = detector.small_dice(image, clusters)
    zoom = reader_module.MID_DIE / reader_module.SMALL_DIE
    assert calls == [round(zoom, 2), round(zoom * reader_module.MID_DIE / 14, 2)], calls
    assert len(found) == 14

    for px, score in ((40, sure), (32, unsure)):  # enlarged: 17.5 pixels, in range; or small but unsure
        calls = looks(px, score)
        assert detector.small_dice(image, clusters) is clusters and calls == [round(zoom, 2)]

    calls = looks(32, sure)
    one_sure = clusters[:4] + [Detection((400, 0, 480, 80), sure)]
    assert detector.small_dice(image, one_sure) is one_sure and calls == []

    # the classifier's word (CLUSTER_SURE): an enlarged look whose dice it reads surely too few of
    # (the pips of dice on a desk the detector never learned) leaves the first look standing
    bar = reader_module.CLUSTER_SURE
    shares = []

    def share(value):
        return lambda boxes: shares.append(len(boxes)) or value
    looks(32, sure)
    assert detector.small_dice(image, clusters, share(bar - 0.01)) is clusters and shares == [14]
    looks(32, sure)
    assert len(detector.small_dice(image, clusters, share(bar))) == 14


def test_the_clusters_look_asks_the_classifier_whether_its_dice_are_dice(reader, monkeypatch):
    """DiceReader takes the clusters' enlarged look (Detector.small_dice) only when the classifier
    reads at least CLUSTER_SURE of its dice surely: small boxes the detector is sure of on a bare
    grey frame (nothing the classifier reads as a die) leave the first look's boxes standing."""
    from pi_table.vision import reader as reader_module
    from pi_table.vision.reader import Detection, Detector

    image = np.full((1280, 1280, 3), 128, np.uint8)
    unsure, sure = reader_module.UNSURE_LOOK - 0.05, reader_module.UNSURE_LOOK
    first = [Detection((100.0 * i, 0.0, 100.0 * i + 80, 80.0), unsure) for i in range(5)]  # 20 input px
    small = [Detection((60.0 * i, 0.0, 60.0 * i + 32, 32.0), sure) for i in range(14)]  # 14 when enlarged
    looks = iter([first, small, small])
    monkeypatch.setattr(Detector, "_find", lambda self, tensor, stride, w, h: next(looks))
    monkeypatch.setattr(type(reader), "_with_big_dice", lambda self, image, found, shrunk: found)
    assert reader.sure_share(image, [d.box for d in small]) < reader_module.CLUSTER_SURE
    boxes = reader._boxes(image, zoom_in=True)
    assert [tuple(b.box) for b in boxes] == [tuple(d.box) for d in first]


@pytest.mark.parametrize("stem, dice, least_right", [
    # its dice about 7 first-look pixels, sized by the net at 13 to 15: one look at the 14-pixel bar
    # missed nearly all; the enlarged looks, taken again while the dice come out small, find them
    ("IMG_20191208_111304", 22, 20),
    # the first look boxes clusters of its tiny dice, sure of none: before the clusters' enlarged look
    # (UNSURE_LOOK) the zoomed-out look took the tray for one die, and all 14 were lost (0 read right,
    # one false die)
    ("IMG_20191208_111710", 14, 12),
])
def test_a_tray_photo_in_a_wide_shot_reads_its_small_dice(stem, dice, least_right):
    """A nellbyler tray photo set in a plain border three times its size, as a wide shot of the table
    shows the tray (Detector.small_dice): nearly every die is found and read, and no false die is
    reported (scored as ``eval --border 3`` scores it)."""
    from pi_table.vision.dataset import load_yolo
    from pi_table.vision.evaluate import score_image

    real = need_shared() / "nellbyler-d6-tray"
    labelled = next(im for im in load_yolo(real) if im.path.stem == stem)
    score = score_image(DiceReader(threads=1), labelled, border=3.0)
    assert score.dice == dice and score.right >= least_right and score.false_dice == 0, (score.right, score.false_dice)


# Known regression of the classifiers shipped on 2026-12-01 (models/history/classifier.md, "Twice as long, calibrated
# on photos and renders together"): they read the desk's box round these two dice as a d6 "1" at 0.949 and 0.985, not
# as no die, so the die is lost and the desk reported. Strict: the test fails again once the case reads right. Taking
# such a "1" round a lone die read as another face for the ground fixed it, but lost held-out close-ups of a "1", whose
# pip reads as a sure "4" or "2" (models/history/detector.md, "One die in a wide shot, read as a "1"").
@pytest.mark.xfail(strict=True, reason="regression with the 2026-12-01 classifiers: the desk's box read as a d6 '1'")
@pytest.mark.parametrize("stem", ["five_10", "two_10"])
def test_one_die_on_a_desk_in_a_wide_shot_is_read_not_taken_for_the_desk(stem):
    """A matteop65 desk photo of one die set in a plain border three times its size: the zoomed-out
    look boxes the photo itself as one big die over that die, which the classifier reads surely, which
    is under LONE_DIE of it, and in a box the classifier reads as no die; the die stands and is read
    (before LONE_DIE: one false die, the desk, `unreadable`, and the die lost)."""
    from pi_table.vision.dataset import load_yolo, with_die_boxes
    from pi_table.vision.evaluate import score_image

    real = need_shared() / "matteop65-d6-desk" / "Train"
    labelled = with_die_boxes(next(im for im in load_yolo(real) if im.path.stem == stem))
    score = score_image(DiceReader(threads=1), labelled, border=3.0)
    assert score.dice == 1 and score.right == 1 and score.false_dice == 0, (score.right, score.false_dice)


@pytest.mark.parametrize("folder, stem", [("nellbyler-d6-tray", "IMG_20191209_100559"), ("matteop65-d6-desk/Valid", "valid_72")])
def test_a_close_up_of_a_one_is_read_though_its_pip_reads_as_another_face(folder, stem):
    """A held-out die showing "1" in a close-up (the die half the picture, as ``eval --close-ups 2`` makes
    them): the zoomed-out look boxes the die, read surely as a "1", over its pip, which the classifier reads
    surely as a "4" or a "2". The die is read as a "1" and its pip is no die (a "1" round a lone die read as
    another face taken for the ground lost both dice; models/history/detector.md, "One die in a wide shot,
    read as a "1"")."""
    from pi_table.vision.dataset import load_yolo, with_die_boxes
    from pi_table.vision.evaluate import close_up
    from pi_table.vision.reader import inside_share

    labelled = next(im for im in load_yolo(need_shared() / folder) if im.path.stem == stem)
    labelled = with_die_boxes(labelled) if folder.startswith("matteop65") else labelled
    die = next(d for d in labelled.dice if d.face == "1")
    picture, box = close_up(load_image(labelled.path), die.box, 2.0)
    dice = DiceReader(threads=1).read(picture, threshold=0.0).dice
    inside = [d for d in dice if inside_share(d.box, box) > 0.5]
    assert [(d.face, d.status) for d in inside] == [("1", "ok")] and iou(inside[0].box, box) >= 0.5


class _Seeing:
    """A stand-in reader for eval's tests: it keeps each image it is given (``seen``) and reads one d6 "3" at ``box``,
    surely."""
    threshold = 0.9

    def __init__(self, box):
        self.box, self.seen = box, []

    def threshold_for(self, kind):
        return self.threshold

    def status_threshold(self, kind, box):
        return self.threshold

    def read(self, image, name="", kinds=None, threshold=None):
        from pi_table.vision.dice import Die, Reading

        self.seen.append(image)
        return Reading(name, image.shape[1], image.shape[0], 1.0, (Die("d6", "3", 3, self.box, 0.99, "ok"),))


def test_eval_turn_reads_each_photo_turned_with_its_labels(tmp_path):
    """--turn D: each photo is read turned D degrees clockwise (a phone held in portrait, the tray seen from
    another side), its labels turned with it: a reader boxing the die where the turned label lies reads it right,
    and the image it is given is the photo turned."""
    from pi_table.vision.evaluate import evaluate, turned_box

    image = np.full((100, 200, 3), 90, np.uint8)
    image[10:30, 20:40] = 250
    folder = tmp_path / "tray"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.png"), image)
    (folder / "labels" / "a.txt").write_text("2 0.15 0.2 0.1 0.2\n")  # a 3 at (20, 10, 40, 30)
    turns = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    expected = {0: (20, 10, 40, 30), 90: (70, 20, 90, 40), 180: (160, 70, 180, 90), 270: (10, 160, 30, 180)}
    for degrees, box in expected.items():
        if degrees:
            assert turned_box((20, 10, 40, 30), 200, 100, degrees) == box

    for degrees, box in expected.items():
        for turn in (0, 90, 180, 270):
            reader = _Seeing(box)
            right = evaluate(reader, folder, turn=turn)["all"]["read_right"]
            assert right == (1 if turn == degrees else 0), (degrees, turn)
            want = image if turn == 0 else cv2.rotate(image, turns[turn])
            assert np.array_equal(reader.seen[0], want)
    with pytest.raises(ValueError, match="--turn must be 90, 180 or 270, got 45"):
        evaluate(_Seeing(expected[0]), folder, turn=45)


def test_eval_colour_reads_each_photo_as_another_cameras_colours(tmp_path):
    """--colour MODE: each photo is read as a camera of other colours gives it (grey: one level in all three
    channels; pale: half way to grey; warm / cool: blue and red a quarter down and up), its labels as they are."""
    from pi_table.vision.evaluate import COLOURS, evaluate, recoloured

    image = np.zeros((40, 60, 3), np.uint8)
    image[:, :] = (200, 100, 40)  # a blue tray (BGR)
    image[10:30, 20:40] = (40, 60, 220)  # a red die
    grey = recoloured(image, "grey")
    assert grey.dtype == np.uint8 and grey.shape == image.shape
    assert np.array_equal(grey[..., 0], grey[..., 1]) and np.array_equal(grey[..., 1], grey[..., 2])
    assert grey[0, 0, 0] == cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)[0, 0]
    pale = recoloured(image, "pale").astype(int)
    assert abs(pale[0, 0, 0] - (200 + int(grey[0, 0, 0])) / 2) <= 1 and abs(pale[15, 25, 2] - (220 + int(grey[15, 25, 0])) / 2) <= 1
    assert tuple(recoloured(image, "warm")[0, 0]) == (150, 100, 50)
    assert tuple(recoloured(image, "cool")[15, 25]) == (50, 60, 165)
    assert recoloured(image, "") is image and set(COLOURS) == {"grey", "pale", "warm", "cool"}
    with pytest.raises(ValueError, match="--colour must be one of grey, pale, warm, cool, got sepia"):
        recoloured(image, "sepia")

    folder = tmp_path / "tray"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.png"), image)
    (folder / "labels" / "a.txt").write_text("2 0.5 0.5 0.33333 0.5\n")  # a 3 at (20, 10, 40, 30)

    for colour in ("", "grey", "warm"):
        reader = _Seeing((20, 10, 40, 30))
        assert evaluate(reader, folder, colour=colour)["all"]["read_right"] == 1  # the labels stay where they were
        assert np.array_equal(reader.seen[0], recoloured(image, colour))
    with pytest.raises(ValueError, match="got sepia"):
        evaluate(_Seeing((20, 10, 40, 30)), folder, colour="sepia")


def test_eval_border_reads_each_photo_in_a_wider_frame(tmp_path):
    """--border F: the photo is read centred in a plain border F times its size, its labels moved
    with it (a reader boxing the die where the label is, once shifted, reads it right)."""
    from pi_table.vision.dice import Die
    from pi_table.vision.evaluate import evaluate, in_border

    image = np.full((100, 200, 3), 90, np.uint8)
    image[40:60, 40:60] = 250
    canvas, ox, oy = in_border(image, 2.0)
    assert canvas.shape == (200, 400, 3) and (ox, oy) == (100, 50)
    assert np.array_equal(canvas[oy:oy + 100, ox:ox + 200], image) and (canvas[0, 0] == 90).all()
    folder = tmp_path / "tray"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    cv2.imwrite(str(folder / "images" / "a.png"), image)
    (folder / "labels" / "a.txt").write_text("2 0.25 0.5 0.1 0.2\n")  # a 3 at (40, 40, 60, 60)
    Shifted = fixed_reader(Die("d6", "3", 3, (140, 90, 160, 110), 0.99, "ok"), size=400, models=tmp_path)
    assert evaluate(Shifted(), folder, border=2.0)["all"]["read_right"] == 1
    assert evaluate(Shifted(), folder)["all"]["read_right"] == 0
    with pytest.raises(ValueError, match="--border must be 1..4, got 5"):
        evaluate(Shifted(), folder, border=5)


def test_a_big_dies_unsure_parts_are_not_dice():
    """A close-up's die is found whole and again as its faces or numerals: a die not surely read (or
    cocked) lying at least half inside a die 1.5 times its size across is dropped; a die read surely, a die
    beside the big one, and dice of a size overlapping at their edges stay."""
    from pi_table.vision.dice import Die

    reader = DiceReader()
    big = Die("d10", "7", 7, (100, 100, 300, 300), 0.999, "ok", 0.999)
    part = Die("d6", "", 0, (150, 150, 200, 200), 0.4, "unreadable", 0.4)
    sure = Die("d6", "3", 3, (220, 220, 270, 270), 0.999, "ok", 0.999)
    cocked_part = Die("d8", "", 0, (120, 230, 170, 280), 0.99, "cocked", 0.99)
    beside = Die("d6", "", 0, (290, 150, 340, 200), 0.4, "unreadable", 0.4)  # 20% of it inside the big box
    large = Die("d6", "", 0, (130, 130, 280, 280), 0.4, "unreadable", 0.4)  # inside, but 3/4 of the big one across
    edge = Die("d6", "", 0, (270, 150, 330, 210), 0.4, "unreadable", 0.4)  # half of it inside: a numeral at the rim
    # just below d6's threshold, read at threshold 0 as pi-table eval reads: held to reader.json's
    unsure = Die("d6", "4", 4, (110, 110, 150, 150), reader.threshold_for("d6") - 0.01, "ok", 0.9)
    kept = reader._without_parts([big, part, sure, cocked_part, beside, large, edge, unsure])
    assert kept == [big, sure, beside, large]
    # neighbours of one size overlapping at their edges are never parts
    a = Die("d6", "", 0, (0, 0, 50, 50), 0.4, "unreadable", 0.4)
    b = Die("d6", "", 0, (10, 10, 60, 60), 0.4, "unreadable", 0.4)
    assert reader._without_parts([a, b]) == [a, b]


def test_a_second_smaller_box_inside_one_die_is_not_another_die(reader, monkeypatch):
    """read's last _without_parts, after the joins: a die not surely read lying at least NEST_INSIDE inside a die at
    least NEST_SIZE times as big across is dropped as a second box on that die (a close-up's top face boxed
    apart from its outline: 1.2 to 1.5 times smaller, too big to be a part); a sure die there, a die as big
    across, and one lying less inside stay."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import NEST_INSIDE, NEST_SIZE

    assert (NEST_INSIDE, NEST_SIZE) == (0.75, 1.2)
    image = np.zeros((1024, 1024, 3), np.uint8)
    # valid_s353_000199 of renders/dark-valid-single: a d6 "2" and, inside it, an unreadable box on its top face
    whole = Die("d6", "2", 2, (456, 698, 646, 890), 0.982, "ok", 0.982)  # 192 px
    face = Die("d6", "", 0, (478, 692, 619, 821), 0.746, "unreadable", 0.746)  # 141 px, 95% inside: 1.36 x smaller
    sure_face = Die("d6", "5", 5, (478, 692, 619, 821), 0.999, "ok", 0.999)
    cocked_face = Die("d6", "", 0, (478, 692, 619, 821), 0.999, "cocked", 0.999)
    as_big = Die("d6", "", 0, (470, 700, 640, 870), 0.3, "unreadable", 0.3)  # 170 px: 192 < 1.2 x 170
    half_in = Die("d6", "", 0, (560, 698, 700, 838), 0.3, "unreadable", 0.3)  # 140 px, 61% inside
    found = {"dice": [whole, face]}
    monkeypatch.setattr(reader, "_boxes", lambda *a: [d.box for d in found["dice"]])
    monkeypatch.setattr(reader, "_dice", lambda *a, **k: list(found["dice"]))
    monkeypatch.setattr(reader, "d6_numerals", None)  # its last look at unsure d6 is another test's
    assert list(reader.read(image).dice) == [whole]
    found["dice"] = [whole, cocked_face]
    assert list(reader.read(image).dice) == [whole]
    for beside in (sure_face, as_big, half_in):
        found["dice"] = [whole, beside]
        assert set(reader.read(image).dice) == {whole, beside}
    # inside an unsure die too: the smaller box goes, the bigger stays
    unsure_whole = Die("d10", "", 0, (241, 565, 433, 771), 0.975, "unreadable", 0.975)  # valid_s353_000051
    inner = Die("d6", "", 0, (261, 627, 398, 767), 0.223, "unreadable", 0.223)
    found["dice"] = [unsure_whole, inner]
    assert list(reader.read(image).dice) == [unsure_whole]


def test_a_numeral_read_as_a_d6_inside_a_numbered_die_is_not_another_die(reader, monkeypatch):
    """read's last step (_without_numerals_as_d6): a die read as a d6, sure or not, lying at least NUMERAL_INSIDE
    inside the box of a d8 or d10 die at least PART_SIZE times as big across is dropped: the big die's own numeral
    boxed apart and read as pips. A d6 beside it, one inside a die not that much bigger, a sure d6 inside a
    bigger d6's box, and a numbered die inside a numbered die's box stay."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import NUMERAL_INSIDE, PART_SIZE

    assert (NUMERAL_INSIDE, PART_SIZE) == (0.9, 1.5)
    image = np.zeros((640, 640, 3), np.uint8)
    # valid_s459_000115 (renders/fresh459-big): a tens die's numeral read as a d6 six at 0.977, ok
    tens = Die("d10-tens", "40", 40, (305, 206, 444, 384), 1.0, "ok", 1.0)  # 178 px
    d10 = Die("d10", "7", 7, (390, 337, 570, 484), 1.0, "ok", 1.0)
    six = Die("d6", "6", 6, (331, 326, 389, 379), 0.977, "ok", 0.977)  # 58 px, wholly inside the tens die's box
    unsure_six = Die("d6", "", 0, (331, 326, 389, 379), 0.6, "unreadable", 0.6)
    found = {"dice": [tens, d10, six]}
    monkeypatch.setattr(reader, "_boxes", lambda *a: [d.box for d in found["dice"]])
    monkeypatch.setattr(reader, "_dice", lambda *a, **k: list(found["dice"]))
    monkeypatch.setattr(reader, "d6_numerals", None)  # its last look at unsure d6 is another test's
    assert set(reader.read(image).dice) == {tens, d10}
    found["dice"] = [tens, unsure_six]
    assert list(reader.read(image).dice) == [tens]
    beside = Die("d6", "3", 3, (40, 40, 98, 93), 0.99, "ok", 0.99)
    big_d6 = Die("d6", "1", 1, (305, 206, 444, 384), 1.0, "ok", 1.0)  # the same box read as a d6: not a numeral's host
    close = Die("d10", "2", 2, (320, 310, 400, 390), 1.0, "ok", 1.0)  # 80 px: under 1.5 x the six's 58
    inner_d8 = Die("d8", "5", 5, (331, 326, 389, 379), 0.99, "ok", 0.99)
    for dice in ([tens, beside], [big_d6, six], [close, six], [tens, inner_d8]):
        found["dice"] = dice
        assert set(reader.read(image).dice) == set(dice)


def test_an_unsure_part_at_a_dies_rim_is_not_another_die(reader, monkeypatch):
    """read's last _without_parts: a die not surely read lying at least RIM_INSIDE inside the box of a die at least
    RIM_SIZE times as big across, grown RIM_GROW times about its centre, is dropped: a side face's numeral or pips
    just outside the top face's box (a close-up of one die). A sure die there, a die half in the grown box, one
    under twice smaller, and a small unsure die beside a small one stay."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import RIM_GROW, RIM_INSIDE, RIM_SIZE

    assert (RIM_INSIDE, RIM_SIZE, RIM_GROW) == (0.9, 2.0, 1.6)
    image = np.zeros((1024, 1024, 3), np.uint8)
    # as on valid_s421_000220 of renders/fresh421-dark-single (boxes set at the rule's edges): a d10 read unsure from
    # its top face, and a side face's "3" boxed beside it
    top = Die("d10", "", 0, (400, 400, 600, 600), 0.33, "unreadable", 0.33)  # 200 px; grown 1.6x: 340..660
    rim = Die("d6", "", 0, (605, 450, 655, 500), 0.27, "unreadable", 0.27)  # 50 px, outside the box, inside grown
    sure_rim = Die("d6", "3", 3, (605, 450, 655, 500), 0.999, "ok", 0.999)
    half_out = Die("d6", "", 0, (630, 450, 690, 510), 0.27, "unreadable", 0.27)  # half of it beyond 660
    found = {"dice": [top, rim]}
    monkeypatch.setattr(reader, "_boxes", lambda *a: [d.box for d in found["dice"]])
    monkeypatch.setattr(reader, "_dice", lambda *a, **k: list(found["dice"]))
    monkeypatch.setattr(reader, "d6_numerals", None)  # its last look at unsure d6 is another test's
    monkeypatch.setattr(reader, "_with_parts_joined", lambda image, dice, *a: dice)
    assert list(reader.read(image).dice) == [top]
    for beside in (sure_rim, half_out):
        found["dice"] = [top, beside]
        assert set(reader.read(image).dice) == {top, beside}
    small = Die("d6", "", 0, (555, 450, 656, 551), 0.27, "unreadable", 0.27)  # 101 px, in the grown box: under twice smaller
    found["dice"] = [top, small]
    assert set(reader.read(image).dice) == {top, small}
    # two small unsure dice side by side, one size: neither is the other's part
    a = Die("d6", "", 0, (100, 100, 150, 150), 0.3, "unreadable", 0.3)
    b = Die("d6", "", 0, (152, 100, 202, 150), 0.3, "unreadable", 0.3)
    found["dice"] = [a, b]
    assert set(reader.read(image).dice) == {a, b}


def test_unsure_parts_close_together_are_read_again_as_one_die(reader, monkeypatch):
    """_with_parts_joined: two or more unsure dice within JOIN_GAP of each other are read as one die
    from their union box grown JOIN_GROW times about its centre; a sure read replaces the parts inside it when they cover little of it (pips,
    numerals) or the detector confirms it; an unsure or cocked read replaces them too (one die to roll
    again, not several false ones) unless they are as big as the frame's sure dice or a sure joined die
    lies in it. Parts filling their union box (touching tray dice) that the detector does not confirm,
    a lone unsure die, unsure dice far apart and sure dice are left as they are."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import CLUSTER_COVER, JOIN_GROW, JOIN_PART, JOIN_SIZE

    assert JOIN_GROW == 1.3
    image = np.zeros((400, 400, 3), np.uint8)
    bar = reader.threshold_for("d6")
    sure_die = Die("d6", "5", 5, (95, 95, 205, 205), 0.999, "ok", 0.999)
    read_again = {"die": sure_die}
    union_read = []
    confirmed = {"yes": False}

    def fake_dice(image, boxes, kinds, crop_mode, threshold, scores=None):
        union_read.append(tuple(boxes[0]))
        return [read_again["die"]] if read_again["die"] else []

    monkeypatch.setattr(reader, "_dice", fake_dice)
    monkeypatch.setattr(reader.close_up_detector or reader.detector, "confirms", lambda image, box, *a: confirmed["yes"])

    def unsure(box):
        return Die("d6", "", 0, box, 0.3, "unreadable", 0.3)

    pips = [unsure((110, 110, 130, 130)), unsure((140, 140, 160, 160)), unsure((170, 170, 190, 190))]  # 3 x 400 px
    sure = Die("d6", "2", 2, (300, 300, 350, 350), 0.999, "ok", 0.999)
    assert reader._with_parts_joined(image, pips + [sure], None, None) == [sure, sure_die]
    assert union_read[-1] == pytest.approx((98, 98, 202, 202))  # JOIN_GROW (1.3) times the parts' union (110..190)
    union_read.clear()
    assert reader._with_parts_joined(image, pips[:1] + [sure], None, None) == pips[:1] + [sure]  # one unsure die
    far_apart = [unsure((10, 10, 30, 30)), unsure((110, 110, 130, 130))]  # 80 px apart, 20 across
    assert reader._with_parts_joined(image, far_apart, None, None) == far_apart and not union_read
    # the union read unsure too: one unreadable die in place of its parts ...
    unsure_die = Die("d6", "", 0, (95, 95, 205, 205), bar - 0.01, "unreadable", bar - 0.01)
    read_again["die"] = unsure_die
    assert reader._with_parts_joined(image, pips, None, None) == [unsure_die]
    assert reader._with_parts_joined(image, pips + [sure], None, None) == [sure, unsure_die]  # 20 < 0.6 x 50
    cocked_die = Die("d6", "", 0, (95, 95, 205, 205), 0.999, "cocked", 0.999)
    read_again["die"] = cocked_die
    assert reader._with_parts_joined(image, pips, None, None) == [cocked_die]  # ... or one cocked die
    # ... but not when the parts are as big as the frame's sure dice (whole dice lying close, JOIN_PART)
    assert JOIN_PART == 0.6
    read_again["die"] = unsure_die
    thirty = Die("d6", "2", 2, (300, 300, 330, 330), 0.999, "ok", 0.999)  # 20 px parts >= 0.6 x 30
    assert reader._with_parts_joined(image, pips + [thirty], None, None) == pips + [thirty]
    # ... nor when it holds a die another group read surely: that group's read stands, the rest stay
    left = [unsure((20, 20, 40, 40)), unsure((50, 50, 70, 70))]
    right = [unsure((320, 320, 340, 340)), unsure((350, 350, 370, 370))]
    found_right = Die("d6", "4", 4, (310, 310, 380, 380), 0.999, "ok", 0.999)
    big_unsure = Die("d6", "", 0, (0, 0, 400, 400), 0.3, "unreadable", 0.3)
    monkeypatch.setattr(reader, "_dice", lambda image, boxes, *a, **k: [big_unsure if boxes[0][0] < 100 else found_right])
    assert reader._with_parts_joined(image, left + right, None, None) == left + [found_right]
    monkeypatch.setattr(reader, "_dice", fake_dice)
    read_again["die"] = None
    assert reader._with_parts_joined(image, pips, None, None) == pips  # not a die (the none rule)
    # two touching dice: they fill their union box; taken only if the detector confirms it
    heap = [unsure((100, 100, 150, 150)), unsure((150, 100, 200, 150))]
    read_again["die"] = Die("d6", "3", 3, (98, 75, 202, 175), 0.999, "ok", 0.999)
    assert 2 * 2500 >= CLUSTER_COVER * 104 * 100
    assert reader._with_parts_joined(image, heap, None, None) == heap
    confirmed["yes"] = True
    assert reader._with_parts_joined(image, heap, None, None) == [read_again["die"]]
    # a joined die more than JOIN_SIZE times as big as the frame's largest sure die: touching dice, not one die
    assert JOIN_SIZE == 2.5
    read_again["die"] = sure_die  # 110 px across
    small = Die("d6", "2", 2, (300, 300, 340, 340), 0.999, "ok", 0.999)  # 40 px: 110 > 2.5 x 40
    assert reader._with_parts_joined(image, pips + [small], None, None) == pips + [small]
    fair = Die("d6", "2", 2, (300, 300, 345, 345), 0.999, "ok", 0.999)  # 45 px: 110 <= 2.5 x 45
    assert reader._with_parts_joined(image, pips + [fair], None, None) == [fair, sure_die]
    # ... but a sure d6 lying inside a joined d8 or d10 (its numeral read as pips) is no measure of the frame's dice
    numeral = Die("d6", "6", 6, (120, 100, 160, 140), 0.999, "ok", 0.999)  # 40 px, inside 95..205
    tens = Die("d10-tens", "50", 50, (95, 95, 205, 205), 0.999, "ok", 0.999)
    read_again["die"] = tens
    assert reader._with_parts_joined(image, pips + [numeral], None, None) == [numeral, tens]
    read_again["die"] = sure_die  # a joined d6: the sure d6 in it is measured as before
    assert reader._with_parts_joined(image, pips + [numeral], None, None) == pips + [numeral]
    read_again["die"] = tens
    assert reader._with_parts_joined(image, pips + [small], None, None) == pips + [small]  # a d6 beside it
    # a read below the reader's threshold counts as unsure though the caller reads at threshold 0
    barely = [Die("d6", "4", 4, (110, 110, 130, 130), bar - 0.01, "ok", bar - 0.01), pips[1]]
    read_again["die"] = sure_die
    assert reader._with_parts_joined(image, barely, None, 0.0) == [sure_die]
    monkeypatch.setattr(reader, "join_parts", False)
    monkeypatch.setattr(reader, "d6_numerals", None)  # its last look at unsure d6 is another test's
    monkeypatch.setattr(reader, "_boxes", lambda *a: [p.box for p in pips])
    monkeypatch.setattr(reader, "_dice", lambda image, boxes, *a, **k: list(pips))
    assert list(reader.read(image).dice) == pips  # reader.json's join_parts false: read as before


def test_pips_far_apart_are_joined_only_when_read_surely(reader, monkeypatch):
    """_with_parts_joined's wider groups: a dark d6's pips 1.5 to 3 pips apart (beyond JOIN_GAP, within
    JOIN_GAP_SURE) are read again as one die from their union and replaced by it only when it reads surely; an
    unsure read leaves them (unsure whole dice lying apart are not one die), and a wider group of more than
    JOIN_MAX_PARTS members or spanning more than JOIN_SPAN of them is not read at all (models/history/detector.md,
    "Pips far apart, taken when read surely"; renders/fresh511-dark-single: 44 -> 32 false dice)."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import JOIN_GAP, JOIN_GAP_SURE, JOIN_MAX_PARTS, JOIN_SPAN

    assert (JOIN_GAP, JOIN_GAP_SURE, JOIN_MAX_PARTS, JOIN_SPAN) == (1.0, 3.0, 6, 7.0)
    image = np.zeros((600, 600, 3), np.uint8)
    bar = reader.threshold_for("d6")
    read = {"die": Die("d6", "4", 4, (80, 80, 200, 200), 0.999, "ok", 0.999)}
    unions = []

    def fake_dice(image, boxes, kinds, crop_mode, threshold, scores=None):
        unions.append(tuple(boxes[0]))
        return [read["die"]]

    monkeypatch.setattr(reader, "_dice", fake_dice)

    def unsure(x, y, size=20):
        return Die("d6", "", 0, (x, y, x + size, y + size), 0.3, "unreadable", 0.3)

    four = [unsure(100, 100), unsure(160, 100), unsure(100, 160), unsure(160, 160)]  # 40 px apart: 2 pips
    assert reader._with_parts_joined(image, four, None, None) == [read["die"]]
    assert unions == [pytest.approx((88, 88, 192, 192))]  # one read: 1.3 times the union (100..180), about its centre
    unions.clear()
    read["die"] = Die("d6", "", 0, (80, 80, 200, 200), bar - 0.01, "unreadable", bar - 0.01)
    assert reader._with_parts_joined(image, four, None, None) == four and len(unions) == 1  # read unsure: left
    unions.clear()
    assert reader._with_parts_joined(image, [unsure(100, 100), unsure(181, 100)], None, None) == [
        unsure(100, 100), unsure(181, 100)] and not unions  # 61 px apart: beyond 3 pips
    seven = four + [unsure(220, 100), unsure(220, 160), unsure(280, 100)]  # more than a face's six pips
    assert reader._with_parts_joined(image, seven, None, None) == seven and not unions
    row = [unsure(100, 300), unsure(170, 300), unsure(240, 300)]  # 160 px, grown 208: over 7 x 20
    assert reader._with_parts_joined(image, row, None, None) == row and not unions


def _one_die_per_read(reader, monkeypatch, read: dict) -> list:
    """Make ``reader._dice`` give ``read["die"]`` for every square it is asked to read; returns the list the squares
    read (x0, y0, x1, y1 pixels) are appended to."""
    squares = []

    def fake_dice(image, boxes, kinds, crop_mode, threshold=None, refine=None, scores=None, others=None):
        squares.append(tuple(boxes[0]))
        return [read["die"]]

    monkeypatch.setattr(reader, "_dice", fake_dice)
    return squares


def test_a_lone_big_unsure_die_is_read_from_around_it(reader, monkeypatch):
    """_with_lone_dice_grown: an unsure die LONE_MIN pixels across or more (a big dark d10's lit top face) is read
    again from the square LONE_GROW times its long side, and replaced, with its unsure parts, by the die read there
    only when that die is read surely, at least LONE_BIGGER times as big, over it and on no sure die; smaller unsure
    dice are not read again (models/history/detector.md, "A lone top face read from around it")."""
    from pi_table.vision.dice import Die
    from pi_table.vision.reader import LONE_BIGGER, LONE_GROW, LONE_MIN, LONE_MIN_D6

    assert (LONE_GROW, LONE_MIN, LONE_MIN_D6, LONE_BIGGER) == (1.5, 80.0, 60.0, 1.2)
    image = np.zeros((800, 800, 3), np.uint8)
    bar = reader.threshold_for("d10")
    face = Die("d6", "", 0, (300, 300, 400, 400), 0.4, "unreadable", 0.4)  # 100 px: the top face alone
    numeral = Die("d6", "", 0, (390, 330, 420, 360), 0.3, "unreadable", 0.3)  # a side numeral, inside the die
    whole = Die("d10", "7", 7, (270, 280, 430, 430), 0.995, "ok", 0.995)  # 160 px, over the face
    read = {"die": whole}
    squares = _one_die_per_read(reader, monkeypatch, read)
    assert reader._with_lone_dice_grown(image, [face, numeral], None, None) == [whole]
    assert squares == [pytest.approx((275, 275, 425, 425))]  # 1.5 x 100 px about the face's centre; the numeral: too small
    squares.clear()
    read["die"] = Die("d10", "", 0, whole.box, bar - 0.01, "unreadable", bar - 0.01)  # read unsure: left
    assert reader._with_lone_dice_grown(image, [face, numeral], None, None) == [face, numeral] and len(squares) == 1
    read["die"] = Die("d6", "3", 3, (290, 290, 405, 405), 0.999, "ok", 0.999)  # the same die at its own size: left
    assert reader._with_lone_dice_grown(image, [face], None, None) == [face]
    read["die"] = Die("d10", "7", 7, (420, 300, 580, 460), 0.999, "ok", 0.999)  # another die beside it: left
    assert reader._with_lone_dice_grown(image, [face], None, None) == [face]
    sure = Die("d10", "2", 2, (265, 275, 425, 425), 0.999, "ok", 0.999)  # the die read surely already: left
    read["die"] = whole
    assert reader._with_lone_dice_grown(image, [sure, face], None, None) == [sure, face]
    squares.clear()
    small = Die("d10", "", 0, (300, 300, 379, 379), 0.4, "unreadable", 0.4)  # read as a d10, under 80 px: not read again
    assert reader._with_lone_dice_grown(image, [small], None, None) == [small] and not squares
    small = Die("d6", "", 0, (300, 300, 359, 359), 0.4, "unreadable", 0.4)  # read as a d6, under 60 px: not read again
    assert reader._with_lone_dice_grown(image, [small], None, None) == [small] and not squares
    mid = Die("d6", "", 0, (300, 300, 370, 370), 0.4, "unreadable", 0.4)  # read as a d6, 70 px: read again
    read["die"] = Die("d10", "7", 7, (280, 280, 390, 390), 0.995, "ok", 0.995)
    assert reader._with_lone_dice_grown(image, [mid], None, None) == [read["die"]]
    assert squares == [pytest.approx((282.5, 282.5, 387.5, 387.5))]


def test_a_sure_six_among_unsure_parts_joins_their_numbered_die(reader, monkeypatch):
    """_with_parts_joined: a dark tens die seen only as its numerals, two read unsure and one ("60") read surely as a
    d6 six, is read from around all three and replaces them when read surely as a numbered die; read as a d6, or
    unsure, the parts stay (touching sure d6 are never joined into one die). With JOIN_SURE_D6 off the sure six is
    no part (models/history/detector.md, "A sure six among a dark die's numerals")."""
    import pi_table.vision.reader as reader_module
    from pi_table.vision.dice import Die

    image = np.zeros((600, 600, 3), np.uint8)
    bar = reader.threshold_for("d10-tens")
    parts = [Die("d6", "", 0, (250, 250, 280, 280), 0.3, "unreadable", 0.3),
             Die("d6", "", 0, (250, 330, 280, 360), 0.4, "unreadable", 0.4)]
    six = Die("d6", "6", 6, (290, 290, 320, 320), 0.99, "ok", 0.99)
    whole = Die("d10-tens", "60", 60, (220, 220, 380, 380), 0.995, "ok", 0.995)
    read = {"die": whole}
    squares = _one_die_per_read(reader, monkeypatch, read)
    monkeypatch.setattr(reader_module, "JOIN_GAP_SURE", 0.0)  # the wider grouping aside: the two parts lie 1.7 apart
    assert reader_module.JOIN_SURE_D6 is True
    assert reader._with_parts_joined(image, parts + [six], None, None) == [whole]
    assert len(squares) == 1  # the unsure pair alone lies too far apart to group; the six links them
    read["die"] = Die("d6", "5", 5, whole.box, 0.999, "ok", 0.999)  # read surely as a d6: no die's numerals
    assert reader._with_parts_joined(image, parts + [six], None, None) == parts + [six]
    read["die"] = Die("d10-tens", "", 0, whole.box, bar - 0.01, "unreadable", bar - 0.01)  # read unsure
    assert reader._with_parts_joined(image, parts + [six], None, None) == parts + [six]
    read["die"] = whole
    monkeypatch.setattr(reader_module, "JOIN_SURE_D6", False)
    squares.clear()
    assert reader._with_parts_joined(image, parts + [six], None, None) == parts + [six] and not squares


def test_one_unsure_part_beside_a_sure_six_is_joined_too(reader, monkeypatch):
    """_with_parts_joined: a dark numbered die seen as one unsure numeral and a numeral read surely as a six is read
    from around the two and replaces them (rule sixjoin1b); before, a frame with one unsure die was not looked at. A
    frame with no unsure die is never read again (models/history/detector.md, "A sure six among a dark die's
    numerals")."""
    from pi_table.vision.dice import Die

    image = np.zeros((600, 600, 3), np.uint8)
    part = Die("d10", "", 0, (250, 250, 280, 280), 0.4, "unreadable", 0.4)
    six = Die("d6", "6", 6, (290, 290, 320, 320), 0.99, "ok", 0.99)
    whole = Die("d10", "6", 6, (220, 220, 380, 380), 0.995, "ok", 0.995)
    squares = _one_die_per_read(reader, monkeypatch, {"die": whole})
    assert reader._with_parts_joined(image, [part, six], None, None) == [whole]
    assert len(squares) == 1
    squares.clear()
    other = Die("d6", "2", 2, (100, 100, 130, 130), 0.99, "ok", 0.99)
    assert reader._with_parts_joined(image, [other, six], None, None) == [other, six] and not squares


# The classifiers shipped on 2026-12-01 read this die's side numeral "10" as a sure d6 "6" beside its two unsure parts;
# measured against that "6", the joined die was too big (JOIN_SIZE) until a sure die's own numerals stopped counting.
def test_parts_left_out_by_kinds_are_still_joined_into_their_die(reader, monkeypatch):
    """read with kinds: a big dark d10 the detector sees only as its numerals, each read unsure as a d6, is
    joined and read whole, as it is without kinds (before, --kinds d10 left the parts out first and lost
    the die: 13 of 308 dark single d10 of renders/fresh496-dark-single). Parts the join does not take are
    not reported; a sure die of a kind left out is no part (a d6 rolled at a d10 table stays left out)."""
    from pi_table.vision.dice import Die

    image = np.zeros((600, 600, 3), np.uint8)
    parts = [Die("d6", "", 0, (250, 250, 290, 290), 0.3, "unreadable", 0.3),
             Die("d6", "", 0, (300, 250, 340, 290), 0.3, "unreadable", 0.3)]
    whole = Die("d10", "5", 5, (220, 200, 370, 350), 1.0, "ok", 1.0)
    union = {"die": whole}

    def fake_dice(image, boxes, kinds, crop_mode, threshold=None, refine=None, scores=None, others=None):
        if len(boxes) == len(parts):  # the first read of the detector's boxes: with kinds, all left out
            if others is not None:
                others.extend(parts)
            return [] if kinds else list(parts)
        return [union["die"]] if union["die"] else []  # the parts' union read again

    monkeypatch.setattr(reader, "_boxes", lambda *a: [d.box for d in parts])
    monkeypatch.setattr(reader, "_dice", fake_dice)
    monkeypatch.setattr(reader, "d6_numerals", None)
    monkeypatch.setattr(reader.close_up_detector or reader.detector, "confirms", lambda *a: False)
    assert reader.read(image).dice == (whole,)
    assert reader.read(image, kinds=("d10",)).dice == (whole,)
    union["die"] = None  # the union is no die: nothing, not the parts of a kind left out
    assert reader.read(image, kinds=("d10",)).dice == ()

    # which left-out boxes are parts: read unsure as their own kind, and not `none`
    p = np.zeros((4, len(reader.classes)))
    d6_1, d6_2, none = (reader.classes.index(c) for c in ("d6:1", "d6:2", "none"))
    p[0, [d6_1, d6_2]] = 0.5, 0.5  # an unsure d6: a part
    p[1, d6_1] = 1.0  # a sure d6: a die of a kind left out, no part
    p[2, [d6_1, none]] = 0.4, 0.6  # no die
    p[3, [d6_1, d6_2]] = 0.5, 0.5  # unsure, but its probability lies in kinds: a die of kinds, read as such
    boxes = [(0, 0, 10, 10), (20, 0, 30, 10), (40, 0, 50, 10), (60, 0, 70, 10)]
    left = reader._unsure_others(boxes, p, np.array([0.0, 0.0, 0.0, 0.9]))
    assert [(d.kind, d.box, d.status) for d in left] == [("d6", (0, 0, 10, 10), "unreadable")]
    assert left[0].confidence == pytest.approx(0.5)


def test_a_dark_die_read_as_its_unsure_numerals_is_read_whole():
    """A rendered dark percentile die ("50", translucent black with red numerals, on dark wood; valid
    split, seed 9, scene 158, one die a picture, 1024 pixels, as renders/dark-valid-single makes them,
    with the fonts .ci/run installs): the first look splits it into three parts, two unsure and its side
    numeral "10" read as a sure d6, and the zoomed-out look does not take it. The unsure parts read together
    (_with_parts_joined) are the one die, read right, and the sure "6" inside it is dropped as its numeral."""
    pytest.importorskip("PIL")  # the renderer's (train extra)
    from pi_table.train.render.scene import make_scene

    scene = make_scene(9, "valid", 158, size=1024, die_px=(130.0, 300.0), max_dice=1, dark=True)
    image = cv2.cvtColor(scene.image, cv2.COLOR_RGB2BGR)
    truth = scene.meta["dice"][0]
    assert (truth["kind"], truth["face"]) == ("d10-tens", "50")
    reader = DiceReader()
    dice = reader.read(image).dice
    assert [(d.kind, d.face, d.status) for d in dice] == [("d10-tens", "50", "ok")]
    assert iou(dice[0].box, truth["box_px"]) >= 0.5
    reader.join_parts = False
    apart = reader.read(image).dice
    assert len(apart) >= 2 and sum(d.status != "ok" for d in apart) >= 2 and all(d.kind == "d6" for d in apart)


def test_a_close_up_die_the_first_look_splits_is_found_whole():
    """A rendered d6 about 75 first-look pixels across (below the 90 the zoomed-out look alone
    trusted): the first look splits it and finds no box at its place, the zoomed-out look finds it
    whole, and it is read as one die (with the old limit it was missed, and without the wider joins of
    unsure parts, JOIN_GAP_SURE, which now read its far-apart pips surely as the die)."""
    pytest.importorskip("PIL", reason="the renderer needs Pillow (optional extra `train`)")
    import pi_table.vision.reader as R
    from pi_table.train.render.scene import make_scene

    scene = make_scene(9, "valid", 0, ("d6",), 640, None, die_px=(130.0, 160.0), max_dice=1)
    image = np.ascontiguousarray(scene.image[:, :, ::-1])
    _, cx, cy, w, h = scene.labels[0]
    truth = ((cx - w / 2) * 640, (cy - h / 2) * 640, (cx + w / 2) * 640, (cy + h / 2) * 640)
    assert R.UNSEEN_LARGE_DIE * 1.1 < max(w, h) * 320 < R.LARGE_DIE  # first-look pixels
    reader = DiceReader()
    assert not any(iou(f.box, truth) > 0.5 for f in reader.detector.detect(image))
    assert [d for d in reader.read(image).dice if iou(d.box, truth) >= 0.5]
    old = R.UNSEEN_LARGE_DIE, R.JOIN_GAP_SURE
    try:
        R.UNSEEN_LARGE_DIE, R.JOIN_GAP_SURE = R.LARGE_DIE, R.JOIN_GAP
        assert not [d for d in reader.read(image).dice if iou(d.box, truth) >= 0.5]
        R.JOIN_GAP_SURE = old[1]  # the old limit with the wider joins: its far-apart pips read as the die
        assert [d for d in reader.read(image).dice if iou(d.box, truth) >= 0.5]
    finally:
        R.UNSEEN_LARGE_DIE, R.JOIN_GAP_SURE = old


class _CountingSession:
    """An onnxruntime session that records the batch size of each run."""

    def __init__(self, session):
        self._session, self.batches = session, []

    def run(self, outputs, feeds):
        self.batches.append(len(feeds["crops"]))
        return self._session.run(outputs, feeds)

    def __getattr__(self, attr):
        return getattr(self._session, attr)


def test_classifier_cascade_keeps_the_first_members_sure_rows_and_averages_the_rest():
    """cascade TAU: rows whose first-member calibrated best class is >= TAU keep its scores and
    box, the second member reads only the other crops, and those get the pair's mean; off (None),
    every member reads every crop. The gate is set halfway between the first member's least and most sure
    of the bench frame's real dice, so that they lie on both sides of it."""
    from pi_table.vision.bench import tray_frame

    reader = DiceReader(threads=1)
    shipped = reader.classifier
    assert len(shipped.sessions) == 2 and shipped.cascade == 0.97  # the shipped reader.json's cascade
    pair = Classifier(shipped.paths, shipped.classes, shipped.temperature, shipped.crop_size, shipped.margin, 1,
                      shipped.shape_temperature)  # no cascade: every member reads every crop
    frame = tray_frame(20)
    boxes = [d.box for d in reader.detector.detect(frame)]
    crops = pair.crops(frame, boxes)
    first, second = (s.run(["logits", "box"], {"crops": crops}) for s in pair.sessions)
    conf = pair.calibrated(first[0]).max(axis=1)
    gate = float((conf.min() + conf.max()) / 2)
    sure = conf >= gate
    assert 0 < sure.sum() < len(boxes)

    cascaded = Classifier(pair.paths, pair.classes, pair.temperature, pair.crop_size, pair.margin, 1,
                          pair.shape_temperature, cascade=gate)
    counter = _CountingSession(cascaded.sessions[1])
    cascaded.sessions[1] = counter
    logits, moved = cascaded.logits_and_boxes(frame, boxes)
    assert counter.batches == [int((~sure).sum())]
    np.testing.assert_array_equal(logits[sure], first[0][sure])
    np.testing.assert_allclose(logits[~sure], ((first[0] + second[0]) / 2)[~sure], atol=1e-4)
    whole, _ = pair.logits_and_boxes(frame, boxes)
    np.testing.assert_allclose(whole, (first[0] + second[0]) / 2, atol=1e-4)
    assert len(moved) == len(boxes)
    # the cascade is only in the first read: a second look's turned views go to both members
    counter.batches.clear()
    cascaded.logits(crops)
    assert counter.batches == [len(boxes)]


class _FixedSession:
    """A stand-in onnxruntime session whose run answers fixed ``logits`` and ``box`` rows (the
    rows of the crops it is given, by their first pixel's index) and records each batch's size."""

    def __init__(self, logits):
        self.logits, self.batches = np.asarray(logits, np.float32), []

    def run(self, outputs, feeds):
        rows = feeds["crops"][:, 0, 0, 0].astype(int)
        self.batches.append(len(rows))
        out = {"logits": self.logits[rows], "box": np.zeros((len(rows), 4), np.float32)}
        return [out[o] for o in outputs]


def test_cascade_sends_numbered_shapes_and_none_to_the_whole_pair():
    """A crop the first member is sure is a d6 face skips the second member; one it is as sure is a
    numbered shape (whose numeral is read from the crop the pair's box head places:
    models/history/classifier.md, "Cascade, d6 faces only") or ``none`` is read by both."""
    reader = DiceReader(threads=1)
    pair = reader.classifier
    cascaded = Classifier(pair.paths, pair.classes, pair.temperature, pair.crop_size, pair.margin, 1,
                          pair.shape_temperature, cascade=0.97)
    sure = np.full((4, len(pair.classes)), -10.0)
    for row, cls in enumerate(["d6:3", "d8:*", "none", "d10:*"]):
        sure[row, pair.classes.index(cls)] = 10.0
    first, second = _FixedSession(sure), _FixedSession(sure - 1.0)
    cascaded.sessions = [first, second]
    crops = np.zeros((4, 3, pair.crop_size, pair.crop_size), np.float32)
    crops[:, 0, 0, 0] = np.arange(4)
    logits = cascaded._run(["logits", "box"], crops, cascade=True)[0]
    assert first.batches == [4] and second.batches == [3]
    np.testing.assert_array_equal(logits[0], sure[0])
    np.testing.assert_allclose(logits[1:], sure[1:] - 0.5)


def test_cascade_is_read_from_reader_json_checked_and_off_in_the_benchs_worst_case(tmp_path):
    from pi_table.vision.bench import bench

    models = tmp_path / "models"
    shutil.copytree(REPO / "models", models)
    config = json.loads((models / "reader.json").read_text())
    config["classifier"]["cascade"] = 0.99
    (models / "reader.json").write_text(json.dumps(config))
    reader = DiceReader(models, threads=1)
    assert reader.classifier.cascade == 0.99
    reader.second_look = 4
    rows = bench(lambda threads: reader, dice_counts=(5,), repeats=1, thread_options=(1,), per_model=True)
    assert rows[-1]["all_unsure"] and reader.classifier.cascade == 0.99  # put back after the worst case
    assert rows[0]["models_ms"].get("classifier-2.onnx", 0.0) < rows[-1]["models_ms"]["classifier-2.onnx"]
    for bad in (0, 1.5, "x"):
        config["classifier"]["cascade"] = bad
        (models / "reader.json").write_text(json.dumps(config))
        r = subprocess.run([sys.executable, "-m", "pi_table", "read", str(sorted(DEMO.glob("*.jpg"))[0]),
                            "--models", str(models)], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert r.returncode == 2 and "cascade" in r.stderr and str(bad) in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bench_table_lists_models_in_run_order_with_other_last():
    """A model that runs only in some rows (a cascade's second classifier) keeps its place."""
    from pi_table.vision.bench import format_rows

    row = {"threads": 1, "found": 1, "median_ms": 1.0, "p90_ms": 1.0, "fps": 1.0}
    rows = [{**row, "dice": 1, "models_ms": {"detector.onnx": 1.0, "classifier.onnx": 1.0, "cocked.onnx": 1.0, "other": 1.0}},
            {**row, "dice": 20, "models_ms": {"detector.onnx": 1.0, "classifier.onnx": 1.0, "classifier-2.onnx": 1.0,
                                              "cocked.onnx": 1.0, "other": 1.0}}]
    header = [line for line in format_rows(rows).splitlines() if line.lstrip().startswith("threads")][-1]
    assert header.split()[:4] == ["threads", "dice", "kind", "unsure"]
    assert header.split()[4:] == ["detector.onnx", "classifier.onnx", "classifier-2.onnx", "cocked.onnx", "other"]


def test_a_big_die_is_confirmed_from_the_first_looks_shrunk_image(reader):
    """Detector.confirms cuts a window that comes out no sharper than the first look's shrunk image
    from that image: nearly the same 128-pixel window as one cut from the photo (pixel-area
    averaging in two steps), and the same answer for a die four times its photo size and for bare
    tray; a window sharper than the shrunk image is cut from the photo itself."""
    from pi_table.vision.reader import _edge_colour

    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    box = reader.read(image).dice[0].box
    x0, y0, x1, y1 = (int(v) for v in box)
    die = cv2.resize(image[y0:y1, x0:x1], None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC)
    frame = cv2.resize(cv2.GaussianBlur(image, (0, 0), 25), (640, 640))
    frame[100 : 100 + die.shape[0], 120 : 120 + die.shape[1]] = die
    big = (120.0, 100.0, 120.0 + die.shape[1], 100.0 + die.shape[0])
    look = reader.close_up_detector or reader.detector
    shrunk, colour = look.shrink(frame), _edge_colour(frame)
    seen = []
    original = look._find
    look._find = lambda tensor, *a: seen.append(tensor) or original(tensor, *a)
    try:
        for window in (big, (400.0, 420.0, 560.0, 580.0)):
            assert look.confirms(frame, window, colour) == look.confirms(frame, window, colour, shrunk) == (window == big)
        assert 0 < np.abs(seen[0] - seen[1]).mean() < 0.01  # 0..1 RGB: another resize, the same window
        small = (300.0, 300.0, 340.0, 340.0)  # 100 pixels to 128: sharper than the shrunk image's 50
        look.confirms(frame, small, colour)
        look.confirms(frame, small, colour, shrunk)
        assert np.array_equal(seen[-1], seen[-2])
    finally:
        look._find = original


def test_dice_small_in_the_frame_read_at_every_scale(reader):
    """A frame whose dice are small takes the enlarged look, which confirms each find in a window
    around it; a window starting a fraction of a pixel into the image put its part at canvas row -1
    and the read failed with a broadcast error (the demo photo at 0.6 times, 384x384, in `pi-table
    read`; at the table the roll was lost). Every scale reads now, and finds the photo's six dice."""
    image = load_image(sorted((REPO / "pi_table" / "demo").glob("*.jpg"))[0])
    found = {}
    for scale in np.arange(0.3, 1.01, 0.05):
        small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        found[round(float(scale), 2)] = len(reader.read(small).dice)
    assert found[0.6] == 6 and found[0.5] == 6, found


def test_wrap_sessions_wraps_every_model_the_d6_numeral_model_too(reader, monkeypatch):
    """wrap_sessions (bench --per-model's timing, the calibration's RowMemo) wraps each model's sessions,
    the d6 numeral model's too when reader.json names one."""
    from types import SimpleNamespace

    from pi_table.vision.reader import wrap_sessions

    d6 = SimpleNamespace(sessions=["session"], paths=[Path("d6-numerals.onnx")])
    monkeypatch.setattr(reader, "d6_numerals", d6)
    for model, attr in ((reader.classifier, "sessions"), (reader.numerals, "sessions"), (reader.cocked, "sessions"),
                        (reader.detector, "session"), (reader.close_up_detector, "session")):
        if model is not None:
            monkeypatch.setattr(model, attr, getattr(model, attr))  # the shared reader's, put back after the test
    wrap_sessions(reader, lambda session, path: ("wrapped", path.name))
    assert d6.sessions == [("wrapped", "d6-numerals.onnx")]
    assert reader.numerals.sessions[0] == ("wrapped", "numerals.onnx") and reader.detector.session[0] == "wrapped"


def test_a_close_up_detector_takes_the_zoomed_out_look_only(tmp_path):
    """reader.json's detector.close_up_file: that detector makes the zoomed-out second look for big
    dice (and its confirmation), the first look keeps detector.onnx; its runs are timed under its
    own file name; a missing file is named."""
    from pi_table.vision.bench import time_models
    from pi_table.vision.reader import models_dir

    for f in models_dir().iterdir():
        if f.is_file():
            shutil.copy(f, tmp_path / f.name)
    shutil.copy(tmp_path / "detector.onnx", tmp_path / "close-up.onnx")
    config = json.loads((tmp_path / "reader.json").read_text())
    config["detector"]["close_up_file"] = "close-up.onnx"
    (tmp_path / "reader.json").write_text(json.dumps(config))
    reader = DiceReader(tmp_path, threads=1)
    assert reader.close_up_detector.path == tmp_path / "close-up.onnx"
    calls = []
    for det, name in ((reader.detector, "first"), (reader.close_up_detector, "close-up")):
        det.big_dice = (lambda look, name: lambda image, found, shrunk=None: calls.append(name) or look(image, found, shrunk))(det.big_dice, name)
    tally = time_models(reader)
    image = load_image(sorted(DEMO.glob("*.jpg"))[0])
    reading = reader.read(image)
    assert calls == ["close-up"] and reading.dice
    assert tally["close-up.onnx"] > 0 and tally["detector.onnx"] > 0
    # the same weights: the same dice as a reader that looks twice with one detector
    plain = DiceReader(tmp_path, threads=1)
    plain.close_up_detector = None
    assert [(d.face, d.status, d.box) for d in reading.dice] == [(d.face, d.status, d.box) for d in plain.read(image).dice]
    (tmp_path / "close-up.onnx").unlink()
    with pytest.raises(FileNotFoundError, match="close-up.onnx"):
        DiceReader(tmp_path, threads=1)


def test_zoomed_out_look_sets_the_image_shrunk_in_the_middle_of_a_canvas_of_its_edge_colour(reader):
    """Detector.prepare_zoomed_out: the image shrunk ``zoom`` times more than the first look, centred on a
    canvas (a multiple of 32, at least 16 pixels around) filled with the median colour of the image's edge."""
    from pi_table.vision.reader import _edge_colour

    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (150, 230, 3), dtype=np.uint8)
    image[0], image[-1], image[:, 0], image[:, -1] = (10, 200, 30), (10, 200, 30), (10, 200, 30), (12, 190, 40)
    tensor, scale, ox, oy = reader.detector.prepare_zoomed_out(image, 3.0)
    canvas = np.round(tensor[0].transpose(1, 2, 0)[..., ::-1] * 255).astype(np.uint8)  # back to HxWx3 BGR
    ph, pw = canvas.shape[:2]
    nw, nh = round(230 * scale), round(150 * scale)
    assert ph % 32 == 0 and pw % 32 == 0 and (ox, oy) == ((pw - nw) // 2, (ph - nh) // 2) and min(ox, oy) >= 16
    inside = np.zeros((ph, pw), bool)
    inside[int(oy) : int(oy) + nh, int(ox) : int(ox) + nw] = True
    assert (canvas[~inside] == _edge_colour(image)).all() and tuple(_edge_colour(image)) == (10, 200, 30)
    size = reader.detector.input_size  # the first look's long side: the image enlarged to it
    first = cv2.resize(image, (size, round(150 * size / 230)), interpolation=cv2.INTER_LINEAR)
    assert np.array_equal(canvas[inside].reshape(nh, nw, 3), cv2.resize(first, (nw, nh), interpolation=cv2.INTER_AREA))
    # the first look's shrunk image and the edge colour, handed in by DiceReader.read: the same tensor
    shrunk = reader.detector.shrink(image)
    assert np.array_equal(shrunk, first)
    again = reader.detector.prepare_zoomed_out(image, 3.0, shrunk, _edge_colour(image))
    assert np.array_equal(again[0], tensor) and again[1:] == (scale, ox, oy)
    # one that does not fit this zoom's first step (another look's size) is not used
    other = reader.detector.prepare_zoomed_out(image, 3.0, np.zeros((10, 10, 3), np.uint8))
    assert np.array_equal(other[0], tensor)


@pytest.mark.skipif(not sys.platform.startswith("linux") or __import__("platform").libc_ver()[0] != "glibc",
                    reason="glibc's mallopt: Linux with glibc only")
def test_reader_frames_reuse_their_memory_instead_of_faulting_in_fresh_pages():
    """keep_freed_memory (called by DiceReader) sets glibc's mmap and trim thresholds, so that a frame's
    buffers (MBs of blobs and crops) come back from the heap: left to glibc's sliding threshold some
    processes faulted in about 850 fresh pages every 20-dice frame."""
    import resource

    from pi_table.vision.bench import tray_frame
    from pi_table.vision.reader import keep_freed_memory

    assert keep_freed_memory() is True  # glibc took both settings
    reader = DiceReader(threads=1)
    frame = tray_frame(20)
    for _ in range(3):
        reader.read(frame)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        reader.read(frame)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10 < 50


def test_bench_holds_opencv_to_the_rows_thread_count():
    """A one-thread row is one thread: OpenCV's pool (crops, resizes) too, restored after the bench."""
    from pi_table.vision.bench import bench

    seen = []

    def factory(threads):
        reader = DiceReader(threads=threads)
        read = reader.read
        reader.read = lambda *a, **k: seen.append((threads, cv2.getNumThreads())) or read(*a, **k)
        return reader

    before = cv2.getNumThreads()
    try:
        cv2.setNumThreads(2)
        bench(factory, dice_counts=(1,), repeats=1, thread_options=(1, 0))
        assert {n for t, n in seen if t == 1} == {1} and {n for t, n in seen if t == 0} == {2}
        assert cv2.getNumThreads() == 2
    finally:
        cv2.setNumThreads(before)


def test_yolo_labels_are_checked_and_sized_as_the_reader_turns_the_photo(tmp_path):
    """A class the folder does not name is an error naming the line (it was read as a d6 face 8, or
    an IndexError); a phone photo stored on its side (EXIF orientation 6) is labelled in its upright
    frame, the frame the reader reads (it was sized as stored: every box missed)."""
    from PIL import Image

    folder = tmp_path / "set"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    upright = np.zeros((40, 60, 3), np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: turned 90 degrees clockwise to view
    Image.fromarray(upright.transpose(1, 0, 2)).save(folder / "images" / "a.jpg", exif=exif)  # stored 40 wide, 60 high
    label = folder / "labels" / "a.txt"
    label.write_text("2 0.5 0.5 0.2 0.2\n")
    [image] = load_yolo(folder)
    assert (image.width, image.height) == load_image(folder / "images" / "a.jpg").shape[1::-1] == (60, 40)
    assert image.dice[0].face == "3" and image.dice[0].box == pytest.approx((24, 16, 36, 24))
    for line, needle in (("7 0.5 0.5 0.2 0.2", "class 7 on label line 1"), ("-1 0.5 0.5 0.2 0.2", "class -1"),
                         ("0 0.5 0.5 0.2 nan", "malformed label line 1"), ("0 0.5 0.5 0.2 0.2 0.9", "malformed")):
        label.write_text(line + "\n")
        with pytest.raises(ValueError, match=needle):
            load_yolo(folder)
    label.write_text("1 0.5 0.5 0.2 0.2\n")
    (folder / "classes.txt").write_text("d8:3\nd10-tens:70\n")
    die = load_yolo(folder)[0].dice[0]
    assert (die.kind, die.face) == ("d10-tens", "70")
    (folder / "classes.txt").write_text("d8:3\nd8:9\n")
    with pytest.raises(ValueError, match="'d8:9'.*not on a d8"):
        load_yolo(folder)


def test_yolo_labels_of_d8_and_d10_photos_are_their_faces_with_kinds_or_a_kind_in_the_folder_name(tmp_path):
    """A YOLO folder without classes.txt (../shared/data/real/README.md: CLASS = face value - 1) of
    d8 or d10 photos is read as that kind's faces under `eval --kinds d8` or in a folder named like
    `someone-d10-tray`: class 7 is a d8's 8, class 9 a d10's "0" (value 10), a tens die's class 3
    "30". Before, every such folder was taken for d6: class 6 or 7 was refused, class 3 was a d6 4."""
    from pi_table.vision.dataset import kind_of_folder

    def folder_with(name: str, lines: str) -> Path:
        folder = tmp_path / name
        (folder / "images").mkdir(parents=True)
        (folder / "labels").mkdir()
        cv2.imwrite(str(folder / "images" / "a.png"), np.zeros((40, 60, 3), np.uint8))
        (folder / "labels" / "a.txt").write_text(lines)
        return folder

    plain = folder_with("photos", "7 0.5 0.5 0.2 0.2\n3 0.2 0.2 0.1 0.1\n")
    assert [(d.kind, d.face) for d in load_yolo(plain, default_kind="d8")[0].dice] == [("d8", "8"), ("d8", "4")]
    assert [(d.kind, d.face) for d in load_yolo(plain, default_kind="d10")[0].dice] == [("d10", "8"), ("d10", "4")]
    assert [(d.kind, d.face) for d in load_yolo(plain, default_kind="d10-tens")[0].dice] == [("d10-tens", "70"),
                                                                                            ("d10-tens", "30")]
    with pytest.raises(ValueError, match="class 7 .* not one of the d6 faces 0..5"):
        load_yolo(plain)  # no kind given: d6, as the shared photos
    tray = folder_with("someone-d10-tray", "9 0.5 0.5 0.2 0.2\n")
    assert [(d.kind, d.face) for d in load_yolo(tray)[0].dice] == [("d10", "0")]
    with pytest.raises(ValueError, match="class 9 .* not one of the d8 faces 0..7"):
        load_yolo(tray, default_kind="d8")  # --kinds comes before the folder's name
    assert (kind_of_folder(Path("nellbyler-d6-tray")), kind_of_folder(Path("matteop65-d6-desk/Valid")),
            kind_of_folder(Path("x/d10-tens")), kind_of_folder(Path("d6-and-d8")), kind_of_folder(Path("d12s")),
            kind_of_folder(Path("photos"))) == ("d6", "d6", "d10-tens", None, None, None)
    r = subprocess.run([sys.executable, "-m", "pi_table", "eval", str(plain), "--kinds", "d8", "--json"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["folders"]["photos"]["dice"] == 2


def test_sixteen_bit_images_are_scaled_by_their_brightest_value(tmp_path):
    """A 12-bit camera's data in a 16-bit PNG reads as the 8-bit photo does (it came out 16 times too dark)."""
    photo = load_image(sorted(DEMO.glob("*.jpg"))[0])
    cv2.imwrite(str(tmp_path / "12bit.png"), photo.astype(np.uint16) * 16)
    again = load_image(tmp_path / "12bit.png")
    assert again.dtype == np.uint8 and np.abs(again.astype(int) - photo).max() <= 1


def test_a_crop_of_a_kind_left_out_of_kinds_is_unreadable_not_read_as_an_allowed_kind(reader):
    """--kinds scales the allowed kinds' probabilities back up; a d8 crop read with --kinds d10 came
    out a sure d10 (the audit: 7 of 16). A die whose probability lies mostly in kinds left out is
    now `unreadable` in a crop (left out of a photo's reading, as dice of other kinds are); read
    with its own kind it reads as before."""
    pytest.importorskip("PIL")
    from pi_table.train.render.scene import make_scene

    crops, index = [], 0
    while len(crops) < 8:
        scene = make_scene(5, "valid", index, kinds=("d8",), die_px=(70.0, 90.0), max_dice=1)
        index += 1
        die = scene.meta["dice"][0]
        if not die["cocked"]:
            x0, y0, x1, y1 = die["box_px"]
            crops.append((cv2.cvtColor(scene.image, cv2.COLOR_RGB2BGR)[max(0, y0 - 12): y1 + 12, max(0, x0 - 12): x1 + 12],
                          str(die["face"])))
    as_d10 = [reader.read_crop(c, kinds=("d10",)).dice[0] for c, _ in crops]
    assert all(d.status == "unreadable" and d.kind == "d10" and not d.face for d in as_d10), as_d10
    as_d8 = [reader.read_crop(c, kinds=("d8",)).dice[0] for c, _ in crops]
    assert sum(d.status == "ok" and d.face == face for d, (_, face) in zip(as_d8, crops)) >= 5, (as_d8, crops)
    whole = reader.read(np.ascontiguousarray(np.pad(crops[0][0], ((100, 100), (100, 100), (0, 0)), mode="edge")),
                        kinds=("d10",))
    assert not [d for d in whole.dice if d.status == "ok"], whole.dice
