"""Tests of the synthetic dice renderer (pi_table.train.render): geometry, labels, splits, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL", reason="the renderer needs Pillow (optional extra `train`)")

from pi_table.train.render import CLASSES, class_id  # noqa: E402
from pi_table.train.render.backgrounds import SURFACES, real_photos, surfaces_for  # noqa: E402
from pi_table.train.render.geometry import axis_angle, hull_points, rest_pose, solid, up_face  # noqa: E402
from pi_table.train.render.scene import make_scene  # noqa: E402
from pi_table.train.render.textures import (  # noqa: E402
    DARK_GREY, MAX_EXTRA_PER_FAMILY, PALETTES, _family, all_fonts, dark_palettes_for, extra_fonts_line,
    extra_train_fonts, font_set, fonts_for, grey_of, numeral_mask, palettes_for,
)

REPO = Path(__file__).resolve().parent.parent
REAL = REPO.parent / "shared" / "data" / "real"
KINDS = ("d6", "d8", "d10", "d10-tens")


def test_classes_list():
    assert len(CLASSES) == 34
    assert CLASSES[:6] == [f"d6:{f}" for f in "123456"]
    assert CLASSES[6:14] == [f"d8:{f}" for f in "12345678"]
    assert CLASSES[14:24] == [f"d10:{f}" for f in "0123456789"]
    assert CLASSES[24:] == [f"d10-tens:{t}0" for t in range(10)]
    assert class_id("d10-tens", "00") == 24 and class_id("d6", "1") == 0


@pytest.mark.parametrize("kind", KINDS)
def test_faces_are_planar_outward_and_printable(kind):
    s = solid(kind)
    assert s.n_faces == {"d6": 6, "d8": 8, "d10": 10, "d10-tens": 10}[kind]
    assert np.allclose(np.linalg.norm(s.normals, axis=1), 1)
    for i, face in enumerate(s.faces):
        pts = s.vertices[list(face)]
        assert np.allclose(pts @ s.normals[i], s.offsets[i]), "face vertices lie on the face plane"
        assert pts.mean(axis=0) @ s.normals[i] > 0, "normals point outward"
        # counter-clockwise seen from outside: the polygon's own normal agrees with the face normal
        area_n = sum(np.cross(pts[k], pts[(k + 1) % len(pts)]) for k in range(len(pts)))
        assert area_n @ s.normals[i] > 0
        assert np.isclose(s.centres[i] @ s.normals[i], s.offsets[i]), "numeral centre on the face"
    # every vertex is inside every half-space: convex
    assert np.all(s.vertices @ s.normals.T <= s.offsets + 1e-9)
    # numerals read unmirrored from outside: right x up = outward normal
    assert np.allclose(np.cross(s.eu, s.ev), s.normals)
    if kind.startswith("d10"):
        assert all(len(f) == 4 for f in s.faces), "pentagonal trapezohedron: kite faces"
        assert len(s.vertices) == 12


def test_opposite_faces_rules():
    sums = {"d6": 7, "d8": 9, "d10": 9, "d10-tens": 90}
    for kind, total in sums.items():
        s = solid(kind)
        for i, j in enumerate(s.opposite):
            assert np.allclose(s.normals[i], -s.normals[j]), "opposite faces are parallel"
            assert int(s.labels[i]) + int(s.labels[j]) == total
        assert sorted(s.labels) == sorted(c.split(":")[1] for c in CLASSES if c.split(":")[0] == kind)


def test_d10_odd_round_one_apex():
    s = solid("d10")
    top = [s.labels[i] for i in range(10) if s.normals[i][2] > 0]
    assert sorted(top) == ["1", "3", "5", "7", "9"]


@pytest.mark.parametrize("kind", KINDS)
def test_up_face_is_the_face_whose_normal_is_most_up(kind):
    s = solid(kind)
    rng = np.random.default_rng(0)
    for face in range(s.n_faces):
        R = rest_pose(s, face, rng.uniform(0, 2 * np.pi))
        world_n = s.normals @ R.T
        assert np.allclose(world_n[face], [0, 0, 1], atol=1e-9), "the resting top face points straight up"
        assert up_face(s, R) == face
    for _ in range(50):  # arbitrary orientations, brute force
        R = axis_angle(rng.standard_normal(3), rng.uniform(0, np.pi))
        z = (s.normals @ R.T)[:, 2]
        assert up_face(s, R) == int(np.argmax(z))
    # a small tilt (cocked die) keeps the same top face
    R = rest_pose(s, 1, 0.3, np.radians(15), 1.0)
    assert up_face(s, R) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_hull_points_bound_the_rounded_solid(kind):
    s = solid(kind)
    h = hull_points(kind)
    assert np.all(np.linalg.norm(h, axis=1) <= s.sphere + 1e-6)
    assert np.all(h @ s.normals.T <= s.offsets + 1e-6)
    # resting with face 0 up, the lowest point lies on the plane of the opposite face
    R = rest_pose(s, 0, 0.7)
    assert np.isclose((h @ R.T)[:, 2].min(), -s.offsets[s.opposite[0]], atol=1e-6)


def test_labels_match_meta_and_geometry():
    seen = set()
    for i in range(6):
        sc = make_scene(3, "train", i, KINDS, 320, None)
        assert len(sc.labels) == len(sc.meta["dice"]) >= 1
        for (c, cx, cy, w, h), d in zip(sc.labels, sc.meta["dice"]):
            assert c == d["cls"] == class_id(d["kind"], d["face"])
            assert 0 < cx < 1 and 0 < cy < 1 and 0 < w < 1 and 0 < h < 1
            x0, y0, x1, y1 = d["box_px"]
            assert abs((x0 + x1) / 2 / 320 - cx) < 1e-6 and abs((x1 - x0) / 320 - w) < 1e-6
            assert isinstance(d["cocked"], bool)
            seen.add(d["kind"])
        assert sc.image.shape == (320, 320, 3) and sc.image.dtype == np.uint8
    assert len(seen) >= 3


def test_seed_determines_output():
    a = make_scene(11, "train", 4, KINDS, 256, None)
    b = make_scene(11, "train", 4, KINDS, 256, None)
    c = make_scene(12, "train", 4, KINDS, 256, None)
    assert np.array_equal(a.image, b.image) and a.labels == b.labels and a.meta == b.meta
    assert not np.array_equal(a.image, c.image)


def test_logo_ones_print_a_makers_logo_on_a_pip_d6s_one(tmp_path):
    """render --logo-ones P: that share of the d6 printed with pips carry a logo (one of LOGOS) on their "1" in
    place of its pip, their other faces pips as before, and the meta's printing names it; numeral-printed dice
    and other kinds carry none; at 0 (the default) no draw is made for it, so every scene is the one rendered
    before the option existed; a share outside 0..1 is one line, exit status 2."""
    import subprocess
    import sys

    from pi_table.train.render.geometry import solid
    from pi_table.train.render.scene import _face_masks
    from pi_table.train.render.textures import LOGOS, logo_mask, pip_mask

    d6 = solid("d6")
    font = fonts_for("train")[0]
    logos = set()
    for seed in range(40):
        plain = _face_masks(np.random.default_rng(seed), d6, font)
        masks, info = _face_masks(np.random.default_rng(seed), d6, font, 1.0)
        assert "logo" not in plain[1]
        if info["print"] == "numerals":
            assert "logo" not in info and np.array_equal(masks, plain[0])
            continue
        logos.add(info["logo"])
        one = d6.labels.index("1")
        assert not np.array_equal(masks[one], plain[0][one]) and masks[one].max() > 0.9
        assert any(np.array_equal(masks[one], logo_mask(info["logo"], size / 100)) for size in range(35, 61))
        others = [i for i in range(6) if i != one]
        assert np.array_equal(masks[others], plain[0][others])
    assert logos <= set(LOGOS) and len(logos) >= 3
    assert pip_mask(1, 0.09, 0.25, False).max() > 0.9  # the pip the logo stands for
    for kinds in (("d6",), KINDS):
        a = make_scene(21, "train", 1, kinds, 256, None)
        b = make_scene(21, "train", 1, kinds, 256, None, logo_ones=0.0)
        assert np.array_equal(a.image, b.image) and a.meta == b.meta
    printed = [d["printing"] for i in range(4) for d in make_scene(21, "train", i, ("d6",), 256, None, logo_ones=1.0).meta["dice"]]
    assert all(("logo" in p) == (p["print"] == "pips") for p in printed) and any("logo" in p for p in printed)
    from tests.conftest import REPO

    for bad in ("1.5", "-0.1", "x"):
        r = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(tmp_path / "r"), "--n", "1",
                            "--logo-ones", bad], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--logo-ones" in r.stderr, r.stderr
        assert not (tmp_path / "r").exists()


def test_faint_pips_paint_that_share_of_dice_in_the_faint_palettes_and_nothing_else_changes(tmp_path):
    """render --faint-pips P: that share of the dice (train split only) is painted in a palette of FAINT_PALETTES,
    pips about as bright as the body or coloured on a dark body; at 0 the scene is the one rendered before the option
    existed, and the valid split's palettes are the same either way (models/history/classifier.md)."""
    from pi_table.train.render.textures import DARK_GREY, FAINT_PALETTES, grey_of, palettes_for

    faint = {p[0] for p in FAINT_PALETTES}
    assert not faint & {p[0] for p in palettes_for("train") + palettes_for("valid")}
    for kinds in (("d6",), KINDS):
        a = make_scene(22, "train", 1, kinds, 256, None)
        b = make_scene(22, "train", 1, kinds, 256, None, faint_pips=0.0)
        assert np.array_equal(a.image, b.image) and a.meta == b.meta
    painted = [d["material"].split("/")[0] for i in range(3) for d in make_scene(22, "train", i, KINDS, 256, None,
                                                                                 faint_pips=1.0).meta["dice"]]
    assert painted and set(painted) <= faint
    dark = [d["material"].split("/")[0] for i in range(2) for d in make_scene(22, "train", i, KINDS, 256, None,
                                                                              dark=True, faint_pips=1.0).meta["dice"]]
    by_name = {p[0]: p for p in FAINT_PALETTES}
    assert dark and all(grey_of(by_name[n][1]) < DARK_GREY for n in dark)
    half = [d["material"].split("/")[0] in faint for i in range(12) for d in make_scene(23, "train", i, ("d6",), 256, None,
                                                                                        faint_pips=0.5).meta["dice"]]
    assert 0 < sum(half) < len(half)
    with pytest.raises(ValueError, match="faint pips are for the train split only"):
        make_scene(22, "valid", 1, KINDS, 256, None, faint_pips=0.5)
    from tests.conftest import REPO

    for bad, why in (("1.5", "must be 0..1"), ("x", "invalid float"), ("0.5 --split valid", "train only")):
        r = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(tmp_path / "r"), "--n", "1",
                            "--faint-pips"] + bad.split(), cwd=REPO, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--faint-pips" in r.stderr, r.stderr
        assert why in r.stderr and not (tmp_path / "r").exists()


def test_font_split_disjoint_and_deterministic():
    train, valid = fonts_for("train"), fonts_for("valid")
    assert train and valid
    if len({_family(p) for p in all_fonts()}) < 2:
        pytest.skip("fewer than two font families installed: both splits share one font")
    assert not set(train) & set(valid)
    assert not {_family(p) for p in train} & {_family(p) for p in valid}, "held out by family"
    assert set(train) | set(valid) == set(all_fonts())


def test_font_set_line_names_the_fonts_and_changes_with_one_more(tmp_path, monkeypatch):
    """font_set() counts the fonts of each split and gives an id that an extra font file changes
    (docs/renders.md: the renders depend on the machine's fonts)."""
    fonts = all_fonts()
    if not fonts:
        pytest.skip("no font installed: nothing to copy into an extra font folder")
    line = font_set()
    n_valid = len(fonts_for("valid")) if len({_family(p) for p in fonts}) > 1 else len(fonts)
    assert line.startswith(f"fonts: {len(fonts)} files, ") and f"valid {n_valid})" in line
    assert font_set() == line  # deterministic
    extra = tmp_path / "fonts"
    extra.mkdir()
    (extra / "PiTableTestFace-Regular.ttf").write_bytes(Path(fonts[0]).read_bytes())
    monkeypatch.setenv("PI_TABLE_FONT_DIRS", str(extra))
    all_fonts.cache_clear()
    fonts_for.cache_clear()
    try:
        more = font_set()
        assert more.startswith(f"fonts: {len(fonts) + 1} files, ") and more.split()[-1] != line.split()[-1]
    finally:
        monkeypatch.delenv("PI_TABLE_FONT_DIRS")
        all_fonts.cache_clear()
        fonts_for.cache_clear()
    assert font_set() == line


def test_extra_fonts_are_train_only_and_leave_the_split_alone(tmp_path):
    """render --extra-fonts: a folder's new families join the train split's draws (at most
    MAX_EXTRA_PER_FAMILY files each); a held-out family or a system font file is dropped; the
    system's split and set line do not change; valid refuses them."""
    fonts = all_fonts()
    if len({_family(p) for p in fonts}) < 2:
        pytest.skip("fewer than two font families installed: no held-out family to guard")
    line, train, valid = font_set(), fonts_for("train"), fonts_for("valid")
    src = Path(fonts[0]).read_bytes()
    extra = tmp_path / "fonts"
    extra.mkdir()
    (extra / "PiTableNewA-Regular.ttf").write_bytes(src)
    for i in range(MAX_EXTRA_PER_FAMILY + 2):
        (extra / f"PiTableNewB-Style{i}.ttf").write_bytes(src)
    held_out = Path(valid[0]).stem.split("-")[0]
    (extra / f"{held_out}-PiTableCopy.ttf").write_bytes(src)  # a held-out family under another file name
    (extra / Path(train[0]).name).write_bytes(src)  # a system font's own file
    kept, dropped = extra_train_fonts((str(extra),))
    assert sorted(_family(p) for p in kept) == ["pitablenewa"] + ["pitablenewb"] * MAX_EXTRA_PER_FAMILY
    assert {Path(p).name for p in dropped} >= {f"{held_out}-PiTableCopy.ttf", Path(train[0]).name}
    assert len(dropped) == 2 + 2
    assert extra_fonts_line(kept).startswith(f"extra train fonts: {1 + MAX_EXTRA_PER_FAMILY} files, 2 families, set ")
    assert (font_set(), fonts_for("train"), fonts_for("valid")) == (line, train, valid)
    seen = {d["font"] for i in range(6) for d in make_scene(3, "train", i, ("d8", "d10"), 192, None,
                                                            extra_fonts=kept).meta["dice"]}
    assert seen & {Path(p).name for p in kept}, "the extra fonts are drawn"
    with pytest.raises(ValueError, match="train split only"):
        make_scene(3, "valid", 0, ("d8",), 192, None, extra_fonts=kept)
    for bad in (str(tmp_path / "nope"), ""):  # "" would be the working folder: refused, not searched
        with pytest.raises(ValueError, match="does not exist"):
            extra_train_fonts((bad,))


def test_palette_and_surface_splits_disjoint():
    pt, pv = palettes_for("train"), palettes_for("valid")
    assert pt and pv and not set(pt) & set(pv) and len(pt) + len(pv) == len(PALETTES)
    st, sv = surfaces_for("train"), surfaces_for("valid")
    assert st and sv and not set(st) & set(sv) and len(st) + len(sv) == len(SURFACES)


def test_valid_split_uses_held_out_fonts_and_palettes():
    valid_fonts = {Path(p).name for p in fonts_for("valid")}
    valid_pals = {p[0] for p in palettes_for("valid")}
    for i in range(3):
        for d in make_scene(5, "valid", i, ("d8", "d10"), 256, None).meta["dice"]:
            assert d["font"] in valid_fonts
            assert d["material"].split("/")[0] in valid_pals


def test_dark_scenes_put_dark_dice_on_dark_ground():
    """make_scene(dark=True) (render --dark): every die a dark-bodied palette of its split, on a
    dark plate, and the meta says so; the same scene without it is the ordinary one, unchanged."""
    import cv2

    for split in ("train", "valid"):
        dark_names = {p[0] for p in dark_palettes_for(split)}
        assert dark_names and all(grey_of(p[1]) < DARK_GREY for p in dark_palettes_for(split))
        assert dark_names < {p[0] for p in palettes_for(split)}
        for i in range(3):
            scene = make_scene(11, split, i, KINDS, 192, None, dark=True)
            assert scene.meta["dark"] is True and scene.meta["dice"]
            assert {d["material"].split("/")[0] for d in scene.meta["dice"]} <= dark_names
            assert float(np.median(cv2.cvtColor(scene.image, cv2.COLOR_RGB2GRAY))) < DARK_GREY
            plain = make_scene(11, split, i, KINDS, 192, None)
            assert "dark" not in plain.meta
            assert np.array_equal(plain.image, make_scene(11, split, i, KINDS, 192, None, dark=False).image)


def test_real_background_split_disjoint():
    if not REAL.is_dir():
        pytest.skip("../shared/data/real is not beside this clone (a user's fresh clone has none)")
    t, v = real_photos(str(REAL), "train"), real_photos(str(REAL), "valid")
    assert t and v and not set(t) & set(v)
    sc = make_scene(2, "train", 0, ("d10",), 256, str(REAL))
    assert sc.labels


def test_six_and_nine_carry_a_mark():
    font = fonts_for("train")[0]
    plain = numeral_mask("6", font, 0.4, "")
    under = numeral_mask("6", font, 0.4, "underline")
    dot = numeral_mask("9", font, 0.4, "dot")
    assert under.sum() > plain.sum() * 1.05
    assert dot.sum() > numeral_mask("9", font, 0.4, "").sum()


def test_cli_tiny_run(tmp_path):
    out = tmp_path / "set"
    cmd = [sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--n", "3", "--seed", "7",
           "--split", "valid", "--kinds", "d8,d10-tens", "--size", "256", "--backgrounds", "", "--workers", "2"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = sorted(p.stem for p in (out / "images").glob("*.jpg"))
    assert len(names) == 3
    for n in names:
        rows = [l.split() for l in (out / "labels" / f"{n}.txt").read_text().splitlines()]
        meta = json.loads((out / "meta" / f"{n}.json").read_text())
        assert len(rows) == len(meta["dice"]) >= 1
        for row, d in zip(rows, meta["dice"]):
            assert len(row) == 5 and CLASSES[int(row[0])] == f"{d['kind']}:{d['face']}"
            assert d["kind"] in ("d8", "d10-tens") and "cocked" in d
    # the fonts the numerals were drawn with are named, so two machines' sets can be compared
    fonts_txt = (out / "fonts.txt").read_text().splitlines()
    assert fonts_txt[0] == font_set() and fonts_txt[0] in r.stderr
    assert fonts_txt[1:] == [Path(f).name for f in fonts_for("valid")]
    # the same scenes with one worker: byte-identical files
    out1 = tmp_path / "set1"
    cmd1 = [c if c != str(out) else str(out1) for c in cmd]
    cmd1[-1] = "1"
    assert subprocess.run(cmd1, cwd=REPO, capture_output=True, text=True, timeout=120).returncode == 0
    for n in names:
        assert (out / "images" / f"{n}.jpg").read_bytes() == (out1 / "images" / f"{n}.jpg").read_bytes()
        assert (out / "labels" / f"{n}.txt").read_text() == (out1 / "labels" / f"{n}.txt").read_text()
    bad = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--kinds", "d20"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0


def test_cli_calib_only_renders_just_the_calib_scenes_as_the_whole_set_does(tmp_path):
    """--calib-only: of scenes 0..39 only those training keeps for calibration (is_calib_render: for seed 3,
    train, indices 2, 29 and 32), each byte for byte the scene the whole set holds."""
    from pi_table.vision.dataset import is_calib_render

    base = [sys.executable, "-m", "pi_table.train.render", "--seed", "3", "--split", "train", "--kinds", "d6",
            "--size", "160", "--backgrounds", ""]
    r = subprocess.run(base + ["--out", str(tmp_path / "calib"), "--n", "40", "--calib-only"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "calib" / "images").glob("*.jpg"))
    assert names == ["train_s3_000002.jpg", "train_s3_000029.jpg", "train_s3_000032.jpg"]
    assert all(is_calib_render(n) for n in names) and r.stdout.startswith("3 scenes")
    whole = subprocess.run(base + ["--out", str(tmp_path / "whole"), "--start", "29", "--n", "1"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0, whole.stderr
    for part in ("images/train_s3_000029.jpg", "labels/train_s3_000029.txt"):
        assert (tmp_path / "calib" / part).read_bytes() == (tmp_path / "whole" / part).read_bytes()


def test_cli_close_up_dice(tmp_path):
    """--die-px and --max-dice: few big dice (a phone held over them), the sizes asked for; bad values
    are one line, exit 2."""
    out = tmp_path / "big"
    cmd = [sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--n", "4", "--seed", "3", "--split", "valid",
           "--kinds", "d10", "--size", "320", "--backgrounds", "", "--die-px", "80,110", "--max-dice", "2"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for meta in (out / "meta").glob("*.json"):
        dice = json.loads(meta.read_text())["dice"]
        assert 1 <= len(dice) <= 2
        assert all(80 <= d["size_px"] <= 110 for d in dice)
        # the default range at this size is 14..35 px: these are well beyond it
        assert all(max(d["box_px"][2] - d["box_px"][0], d["box_px"][3] - d["box_px"][1]) > 50 for d in dice)
    for flag, value in (("--die-px", "90"), ("--die-px", "120,90"), ("--die-px", "4,9"), ("--max-dice", "0"),
                        ("--max-dice", "x")):
        bad = subprocess.run([sys.executable, "-m", "pi_table.train.render", "--out", str(tmp_path / "bad"), flag, value],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and flag in bad.stderr and "Traceback" not in bad.stderr, (flag, value, bad.stderr)
        assert not (tmp_path / "bad").exists()


def test_cli_extra_fonts(tmp_path):
    """--extra-fonts DIR: the set's fonts.txt names the extra fonts under the system's line; for
    --split valid, or a missing folder, one line and exit 2, nothing written."""
    fonts = all_fonts()
    if len({_family(p) for p in fonts}) < 2:
        pytest.skip("fewer than two font families installed")
    extra = tmp_path / "fonts"
    extra.mkdir()
    (extra / "PiTableNewC-Regular.ttf").write_bytes(Path(fonts[0]).read_bytes())
    out = tmp_path / "numf"
    base = [sys.executable, "-m", "pi_table.train.render", "--n", "2", "--seed", "4", "--kinds", "d8", "--size", "192",
            "--backgrounds", ""]
    r = subprocess.run(base + ["--out", str(out), "--extra-fonts", str(extra)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = (out / "fonts.txt").read_text().splitlines()
    assert lines[0] == font_set() and lines[1].startswith("extra train fonts: 1 files, 1 families, set ")
    assert "PiTableNewC-Regular.ttf" in lines[2:]
    for more, says in ((["--split", "valid", "--extra-fonts", str(extra)], "--split train only"),
                       (["--extra-fonts", str(tmp_path / "nope")], "does not exist")):
        bad = subprocess.run(base + ["--out", str(tmp_path / "bad")] + more, cwd=REPO, capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode == 2 and says in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert not (tmp_path / "bad").exists()


def test_backgrounds_keep_their_colours():
    from pi_table.train.render.backgrounds import background

    for i in range(8):
        bg, name = background(np.random.default_rng(i), 128, "train", str(REAL) if REAL.is_dir() else None)
        assert bg.shape == (128, 128, 3) and bg.dtype == np.float32
        assert 0 <= bg.min() and bg.max() <= 1
        means = bg.reshape(-1, 3).mean(0)
        assert means.max() - means.min() < 0.5 * max(means.max(), 1e-3) or "felt" in name or "wood" in name, (name, means)


@pytest.mark.parametrize("kind", KINDS)
def test_the_labelled_face_is_the_one_the_camera_sees_on_top(kind):
    """Ink only the labelled face: ink shows in the middle of the die; ink only its opposite
    face: none shows at all."""
    from pi_table.train.render.raster import Camera, Light, Material, render_die, to_linear

    s = solid(kind)
    cam = Camera(200, 200, 100, 100, 800)
    light = Light(np.array([0.0, 0.0, 1.0]), np.ones(3, np.float32) * 0.7, 0.2, 0.2, np.array([0.0, 0.0, 1.0]))
    mat = Material("opaque", to_linear((240, 240, 240)), to_linear((0, 0, 0)), to_linear((240, 240, 240)))
    mat.spec = 0.0
    rng = np.random.default_rng(1)
    blob = np.zeros((s.n_faces, 96, 96), np.float32)
    for face in rng.choice(s.n_faces, 3, replace=False):
        R = rest_pose(s, int(face), rng.uniform(0, 2 * np.pi))
        scale = 60 / 2.0
        pos = np.array([100.0, -100.0, -(hull_points(kind) @ R.T)[:, 2].min() * scale])
        for inked, expect in ((int(face), True), (s.opposite[int(face)], False)):
            masks = blob.copy()
            masks[inked, 30:66, 30:66] = 1.0  # a square of ink round the numeral centre
            p = render_die(s, R, scale, pos, cam, mat, masks, light)
            lum = p.colour.mean(axis=2) / np.maximum(p.cover, 1e-3)
            # where the labelled face's numeral centre lands in the image
            cx, cy = cam.project((s.centres[int(face)] @ R.T * scale + pos)[None, :])[0]
            u, v = int(round(cx)) - p.x0, int(round(cy)) - p.y0
            centre = lum[v - 2:v + 3, u - 2:u + 3]
            dark = (lum < 0.05) & (p.cover > 0.99)
            if expect:
                assert centre.max() < 0.05, f"{kind} face {s.labels[face]}: its ink is not on top"
            else:
                assert not dark.any(), f"{kind}: ink of the bottom face is visible"


def test_card_scores_a_rendered_folder_whole_and_cut_out(tmp_path):
    """The card writer's rows for a rendered set (--renders, --close-up-renders): one per die kind read
    whole and one cut out at 1.3x, and the two commands that measure them."""
    from pi_table.train.card import _rendered_rows
    from pi_table.vision.reader import DiceReader

    out = tmp_path / "close"
    cmd = [sys.executable, "-m", "pi_table.train.render", "--out", str(out), "--n", "2", "--seed", "5", "--split", "valid",
           "--kinds", "d8", "--backgrounds", "", "--die-px", "90,150", "--max-dice", "2"]
    assert subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120).returncode == 0
    cmds: list[str] = ["before"]
    whole, rows = _rendered_rows(DiceReader(), out, cmds)
    assert cmds == ["before", f"pi-table eval {out}", f"pi-table eval {out} --cut-crops 1.3"]
    assert whole["all"]["dice"] >= 2 and "d8" in whole["all"]["kinds"]
    assert [r.split(" | ")[0] for r in rows if "d8" in r] == ["| close: d8", "| close: d8, cut at 1.3x the box"]


@pytest.mark.parametrize("argv, says", [(["--out", "y", "--n", "ten"], "argument --n: invalid int value: 'ten'"),
                                        (["--n", "3"], "the following arguments are required: --out"),
                                        (["compare", "--out", "y.png", "--zoom", "2x"], "invalid int value: '2x'")])
def test_cli_gives_one_line_for_a_usage_error(capsys, argv, says):
    """A missing or malformed option is one line naming it and exit status 2 (pi_table.cli.Parser), not
    argparse's usage dump."""
    from pi_table.train.render.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


def test_cli_refuses_an_out_that_cannot_be_a_folder_in_one_line(tmp_path, capsys):
    """--out naming a file is one line naming it, exit 2: it was a FileExistsError traceback."""
    from pi_table.train.render.__main__ import main

    afile = tmp_path / "afile"
    afile.write_text("keep")
    for out, says in ((afile, f"{afile} is not a folder"), (afile / "set", f"{afile / 'set'} cannot be made: {afile} is not a folder")):
        with pytest.raises(SystemExit) as stop:
            main(["--out", str(out), "--n", "1", "--backgrounds", ""])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.strip().splitlines() == [f"python3 -m pi_table.train.render: error: --out: {says}"], err
    assert afile.read_text() == "keep"


@pytest.mark.parametrize("argv, says", [
    (["--n", "0"], "--n must be 1 or more, got 0"), (["--n", "-3"], "--n must be 1 or more, got -3"),
    (["--workers", "0"], "--workers must be 1 or more, got 0"), (["--workers", "-2"], "--workers must be 1 or more, got -2"),
    (["--size", "10"], "--size must be 128 or more, got 10"), (["--size", "-5"], "--size must be 128 or more, got -5"),
    (["--seed", "-1"], "--seed must be 0 or more, got -1"), (["--start", "-5"], "--start must be 0 or more, got -5"),
    (["--size", "320", "--die-px", "300,600"],
     "--die-px 300,600: dice at most half of --size (160 px) across fit in the image")])
def test_cli_names_a_number_out_of_range_in_one_line(tmp_path, capsys, argv, says):
    """Checked before anything is written: one line naming the value, exit 2. --n 0 or -3 wrote an
    empty set (exit 0), --workers 0 or -2 and --size 10 (dice a pixel across, labelled) were taken,
    --size -5, a negative --seed or --start and dice too big for the image were tracebacks."""
    from pi_table.train.render.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["--out", str(tmp_path / "set"), "--backgrounds", "", *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.strip().splitlines() == [f"python3 -m pi_table.train.render: error: {says}"], err
    assert not (tmp_path / "set").exists()


@pytest.mark.parametrize("argv, says", [
    (["--n", "0"], "--n must be 1 or more, got 0"), (["--zoom", "0"], "--zoom must be 1 or more, got 0"),
    (["--seed", "-1"], "--seed must be 0 or more, got -1"),
    (["--out", "{tmp}"], "--out: {tmp} is a folder, not an image file"),
    (["--out", "{tmp}/sheet.foo"], "--out: {tmp}/sheet.foo: OpenCV writes no image of that kind (name it .png or .jpg)")])
def test_compare_names_a_bad_option_in_one_line(tmp_path, capsys, argv, says):
    """render compare: one line, exit 2, before any crop is rendered. --n 0 wrote an empty sheet,
    the rest were OpenCV or NumPy tracebacks (the .foo and folder ones after every crop was drawn)."""
    from pi_table.train.render.__main__ import main

    argv = [a.format(tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as stop:
        main(["compare", "--backgrounds", "", *(["--out", str(tmp_path / "sheet.png")] if "--out" not in argv else []),
              *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.strip().splitlines() == [
        f"python3 -m pi_table.train.render compare: error: {says.format(tmp=tmp_path)}"], err
    assert not (tmp_path / "sheet.png").exists()
