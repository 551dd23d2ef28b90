"""Score the reader against labelled images: ``pi-table eval``.

Per data folder: dice detected and read right (the issue's headline figure), detection
recall and precision at IoU >= 0.5, wrong reads at status ``ok``, the ``unreadable`` rate,
false dice per 100 images, a confusion matrix over faces and the expected calibration
error (ECE, 10 equal-width bins; Guo et al. 2017).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pi_table.vision.dataset import (LabelledImage, is_calib_render, is_rendered, load_crops, load_yolo,
                                     with_die_boxes, with_label_fixes)
from pi_table.vision.dice import KINDS
from pi_table.vision.reader import DiceReader, crop_die, inside_share, iou, load_image, union_box


@dataclass
class Score:
    """Counts for one data folder (or all). Rates are fractions 0..1."""

    images: int = 0
    dice: int = 0  # labelled dice
    found: int = 0  # labelled dice matched by a detection (IoU >= 0.5)
    right: int = 0  # matched, status ok, face right
    wrong_ok: int = 0  # matched, status ok, face wrong
    unreadable: int = 0  # matched, status unreadable or cocked
    cocked: int = 0  # matched, status cocked
    # Where the labels say whether a die lies flat (renders' meta/): labelled cocked dice found,
    # those of them reported cocked, labelled flat dice found and those of them reported cocked;
    # of the labelled flat dice, those read right and wrong at ok (a labelled cocked die read by its
    # top face counts in right too, so that count alone penalises a model that catches more of them).
    cocked_found: int = 0
    cocked_caught: int = 0
    flat_found: int = 0
    flat_flagged: int = 0
    flat_right: int = 0
    flat_wrong_ok: int = 0
    false_dice: int = 0  # detections matching no labelled die
    detections: int = 0
    # Label conventions differ (matteop65 boxes a die's pips, nellbyler the whole die): a
    # second, looser match counts a labelled die found when its box centre lies inside a
    # detection, and read right when that detection (the best-overlapping such) is ok and right.
    centre_found: int = 0
    centre_right: int = 0
    confusion: Counter = field(default_factory=Counter)  # (truth, read) -> count; read "-" missed, "?" unreadable
    calibration: list = field(default_factory=list)  # (confidence, right) per matched die
    # per matched die, the chance its face is right given that it is a die (Die.face_confidence)
    face_confidence: list = field(default_factory=list)
    ms: list = field(default_factory=list)
    # The same counts per die kind: labelled dice by their kind, detections by the kind read.
    kinds: dict = field(default_factory=dict)
    # Per size band of the labelled dice (:func:`size_band`): band -> Counter of "dice", "found",
    # "right", "wrong_ok" (the same rules as the counts above).
    sizes: dict = field(default_factory=dict)
    # The same per die material of rendered dice (LabelledDie.material): material -> Counter.
    materials: dict = field(default_factory=dict)
    # The same per how a rendered die is printed (LabelledDie.printing: pips or numerals), whole pictures only.
    printings: dict = field(default_factory=dict)

    def add(self, other: "Score") -> None:
        for name in ("images", "dice", "found", "right", "wrong_ok", "unreadable", "false_dice", "detections",
                     "centre_found", "centre_right", "cocked", "cocked_found", "cocked_caught", "flat_found",
                     "flat_flagged", "flat_right", "flat_wrong_ok"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.confusion.update(other.confusion)
        self.calibration += other.calibration
        self.face_confidence += other.face_confidence
        self.ms += other.ms
        for kind, score in other.kinds.items():
            self.kinds.setdefault(kind, Score()).add(score)
        for mine, theirs in ((self.sizes, other.sizes), (self.materials, other.materials), (self.printings, other.printings)):
            for group, counts in theirs.items():
                mine.setdefault(group, Counter()).update(counts)

    def count_read(self, die, kind: str, face: str, threshold: float = 0.0, cocked: bool | None = None,
                   band: str | None = None, material: str | None = None, printing: str | None = None) -> None:
        """Tally one die matched to a labelled die of ``kind``/``face``: right, wrong at ok, or
        unreadable (``cocked`` too, counted apart as well; ``cocked``: whether the labelled die
        is cocked, None when the labels do not say); with ``band`` (:func:`size_band`, the labelled
        die's, whose ``dice`` the caller counts) in :attr:`sizes` too, and with ``material`` (the
        labelled die's, whose ``dice`` the caller counts) in :attr:`materials`, and with ``printing`` likewise in
        :attr:`printings`.

        ``die`` is read with threshold 0 (its best face, whatever its confidence), so that
        calibration compares each confidence with whether that face was right; ``threshold``
        (the reader's) then decides its status as the reader would.
        """
        label = f"{kind}:{face}"
        self.found += 1
        groups = [g.setdefault(key, Counter()) for g, key in ((self.sizes, band), (self.materials, material),
                                                               (self.printings, printing))
                  if key is not None]
        for g in groups:
            g["found"] += 1
        reported = die.status == "cocked"
        self.cocked += reported
        if cocked is not None:
            self.cocked_found += cocked
            self.cocked_caught += cocked and reported
            self.flat_found += not cocked
            self.flat_flagged += (not cocked) and reported
        right = die.kind == kind and die.face == face
        if reported:
            # no face is read from a cocked die: it has no place in the calibration, and no
            # threshold makes it ok (at_thresholds counts it unreadable at every cut)
            self.unreadable += 1
            self.confusion[(label, "?")] += 1
            return
        self.calibration.append((die.confidence, right))
        self.face_confidence.append(die.confidence if die.face_confidence is None else die.face_confidence)
        if read_ok(die, threshold):
            self.right += right
            self.wrong_ok += not right
            if cocked is False:
                self.flat_right += right
                self.flat_wrong_ok += not right
            for g in groups:
                g["right"] += right
                g["wrong_ok"] += not right
            self.confusion[(label, f"{die.kind}:{die.face}")] += 1
        else:
            self.unreadable += 1
            self.confusion[(label, "?")] += 1

    def ece(self, bins: int = 10) -> float:
        """Expected calibration error over matched dice (confidence vs face right)."""
        if not self.calibration:
            return 0.0
        conf = np.array([c for c, _ in self.calibration])
        right = np.array([r for _, r in self.calibration], float)
        edges = np.linspace(0, 1, bins + 1)
        total = 0.0
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = (conf > lo) & (conf <= hi) if lo > 0 else (conf >= lo) & (conf <= hi)
            if sel.any():
                total += sel.sum() / len(conf) * abs(conf[sel].mean() - right[sel].mean())
        return float(total)

    def at_thresholds(self, thresholds) -> list[dict]:
        """What the same reads would score were ``unreadable`` cut at each of ``thresholds``
        (0..1): per threshold, the share of labelled dice read right, the share of dice
        reported ``ok`` that are wrong, and the share of found dice ``unreadable`` (or ``cocked``).

        Only the cut moves: the reads are those the reader made at its own threshold (its second
        look ran on the dice below ``reader.json``'s threshold). A risk-coverage curve (Geifman
        and El-Yaniv 2017, "Selective classification for deep neural networks").
        """
        conf = np.array([c for c, _ in self.calibration], float)
        right = np.array([r for _, r in self.calibration], bool)
        rows = []
        for t in thresholds:
            ok = conf >= t
            rows.append({"threshold": float(t), "read_right": _rate(int((right & ok).sum()), self.dice),
                         "wrong_at_ok": _rate(int((~right & ok).sum()), int(ok.sum())),
                         "unreadable": _rate(int((~ok).sum()) + self.cocked, len(conf) + self.cocked)})
        return rows

    def to_json(self) -> dict:
        ok = self.right + self.wrong_ok
        return {
            "images": self.images,
            "dice": self.dice,
            "read_right": _rate(self.right, self.dice),
            "recall": _rate(self.found, self.dice),
            "read_right_centre": _rate(self.centre_right, self.dice),
            "recall_centre": _rate(self.centre_found, self.dice),
            "precision": _rate(self.detections - self.false_dice, self.detections),
            "wrong_at_ok": _rate(self.wrong_ok, ok),
            "unreadable": _rate(self.unreadable, self.found),
            "cocked": _rate(self.cocked, self.found),
            **({"cocked_caught": _rate(self.cocked_caught, self.cocked_found),
                "flat_flagged": _rate(self.flat_flagged, self.flat_found),
                "flat_read_right": _rate(self.flat_right, self.flat_found)} if self.cocked_found + self.flat_found else {}),
            "false_dice_per_100_images": round(100 * self.false_dice / self.images, 2) if self.images else 0.0,
            "ece": round(self.ece(), 4),
            "median_ms": round(float(np.median(self.ms)), 2) if self.ms else None,
            "counts": {"right": self.right, "wrong_ok": self.wrong_ok, "unreadable": self.unreadable, "cocked": self.cocked,
                       "cocked_found": self.cocked_found, "cocked_caught": self.cocked_caught,
                       "flat_found": self.flat_found, "flat_flagged": self.flat_flagged,
                       "flat_right": self.flat_right, "flat_wrong_ok": self.flat_wrong_ok,
                       "found": self.found, "false_dice": self.false_dice, "detections": self.detections},
            "confusion": {f"{t}->{r}": n for (t, r), n in sorted(self.confusion.items())},
            **({"by_size": {band: _group_json(c)
                            for band, c in sorted(self.sizes.items(), key=lambda bc: SIZE_BANDS.index(bc[0]))}}
               if self.sizes else {}),
            **({"by_material": {m: _group_json(c) for m, c in sorted(self.materials.items())}} if self.materials else {}),
            **({"by_printing": {m: _group_json(c) for m, c in sorted(self.printings.items())}} if self.printings else {}),
            **({"kinds": {k: v.to_json() for k, v in sorted(self.kinds.items(), key=lambda kv: KINDS.index(kv[0]))}}
               if self.kinds else {}),
        }


@dataclass(frozen=True)
class Miss:
    """One labelled die the reader did not read right, or one false die (``pi-table eval --misses``).

    ``what``: ``missed`` (no detection overlaps it at IoU >= 0.5), ``wrong`` (read ``ok`` as
    another face or kind), ``unreadable`` (below its kind's threshold, or ``cocked``) or ``false``
    (a detection matching no labelled die). Boxes are (x0, y0, x1, y1) pixels of the image;
    ``truth_box`` is None for a false die, ``read_box`` None for a die no detection covers.
    ``overlap`` is the IoU of the two boxes (0 when one is missing). ``read``/``confidence``
    are the reader's best face and its confidence whatever its status.
    """

    image: str
    folder: str
    what: str
    kind: str
    truth: str
    read: str
    confidence: float
    status: str
    truth_box: tuple | None
    read_box: tuple | None
    overlap: float

    def caption(self) -> str:
        """One short line: ``4 -> 1 0.99 ok``, ``missed 4 (IoU 0.37)``, ``false: 3 0.99 ok``."""
        if self.what == "missed":
            return f"missed {self.truth} (IoU {self.overlap:.2f})"
        if self.what == "false":
            return f"false: {self.read} {self.confidence:.2f} {self.status}"
        return f"{self.truth} -> {self.read} {self.confidence:.2f} {self.status}"

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


#: Die size bands of ``eval``'s ``by_size``: the labelled box's long side, pixels of the picture as
#: read (lower bound included). The mounted camera's dice are 28 to 70 px in the renders and about
#: 60 px at the kit's 1280x960 (hardware.md); numerals are hard to read on the smallest.
SIZE_EDGES = (30, 40, 55, 70, 100)
SIZE_BANDS = ("<30", "30-40", "40-55", "55-70", "70-100", ">=100")


def size_band(box) -> str:
    """The :data:`SIZE_BANDS` label of a box (x0, y0, x1, y1 pixels) by its long side."""
    return SIZE_BANDS[int(np.searchsorted(SIZE_EDGES, max(box[2] - box[0], box[3] - box[1]), side="right"))]


def read_ok(die, threshold: float) -> bool:
    """Whether a die read at threshold 0 would be reported ``ok`` at the reader's ``threshold``."""
    return die.status == "ok" and die.confidence >= threshold


def _rate(num: int, den: int) -> float:
    return round(num / den, 5) if den else 0.0


def _group_json(c: Counter) -> dict:
    """One group's figures (a size band's, a material's) from its Counter of dice, found, right, wrong_ok."""
    return {"dice": c["dice"], "read_right": _rate(c["right"], c["dice"]), "recall": _rate(c["found"], c["dice"]),
            "wrong_at_ok": _rate(c["wrong_ok"], c["right"] + c["wrong_ok"])}


def in_border(image: np.ndarray, factor: float) -> tuple[np.ndarray, int, int]:
    """``image`` (HxWx3 uint8 BGR) centred in a plain border (the median colour of its edge) that
    makes it ``factor`` times its size, as a wide shot shows a tray: its dice ``factor`` times
    smaller in the frame. Returns the picture and the image's corner (x, y pixels) in it."""
    from pi_table.vision.reader import _edge_colour

    h, w = image.shape[:2]
    big_h, big_w = int(round(h * factor)), int(round(w * factor))
    ox, oy = (big_w - w) // 2, (big_h - h) // 2
    canvas = np.empty((big_h, big_w, 3), np.uint8)
    canvas[:] = _edge_colour(image)
    canvas[oy:oy + h, ox:ox + w] = image
    return canvas, ox, oy


#: ``eval --turn``: OpenCV's turn of an image by each of these degrees clockwise.
TURNS = {90: "ROTATE_90_CLOCKWISE", 180: "ROTATE_180", 270: "ROTATE_90_COUNTERCLOCKWISE"}


def check_turn(degrees: int) -> None:
    """ValueError naming ``degrees`` unless it is 0 (no turn) or one of :data:`TURNS` (``eval --turn``)."""
    if degrees != 0 and degrees not in TURNS:
        raise ValueError(f"--turn must be 90, 180 or 270, got {degrees}")


def turned_box(box, width: int, height: int, degrees: int) -> tuple[float, float, float, float]:
    """``box`` (x0, y0, x1, y1 pixels) of a ``width`` x ``height`` image, in that image turned ``degrees``
    (90, 180 or 270) clockwise, as ``cv2.rotate`` turns it."""
    x0, y0, x1, y1 = box
    if degrees == 90:
        return (height - y1, x0, height - y0, x1)
    if degrees == 180:
        return (width - x1, height - y1, width - x0, height - y0)
    return (y0, width - x1, y1, width - x0)


#: ``eval --colour``: another camera's colour, as (B, G, R) gains and the share of each pixel's colour kept (0: grey).
#: ``grey``: a monochrome camera (a Pi NoIR module under infrared light); ``pale``: half the saturation (dim light, a
#: cheap sensor); ``warm`` and ``cool``: a white balance a quarter off towards tungsten light or shade. Not tuned on:
#: a check that the reader does not lean on one camera's colours (models/history/classifier.md, "Another camera's
#: colour").
COLOURS = {"grey": ((1.0, 1.0, 1.0), 0.0), "pale": ((1.0, 1.0, 1.0), 0.5),
           "warm": ((0.75, 1.0, 1.25), 1.0), "cool": ((1.25, 1.0, 0.75), 1.0)}


def check_colour(colour: str) -> None:
    """ValueError naming ``colour`` unless it is "" (as taken) or one of :data:`COLOURS` (``eval --colour``)."""
    if colour and colour not in COLOURS:
        raise ValueError(f"--colour must be one of {', '.join(COLOURS)}, got {colour}")


def recoloured(image: np.ndarray, colour: str) -> np.ndarray:
    """``image`` (HxWx3 uint8 BGR) as a camera of another ``colour`` (:data:`COLOURS`) would give it: each channel
    times its gain, then blended with its grey (``cv2.COLOR_BGR2GRAY``) by the share of colour kept; HxWx3 uint8 BGR.
    ``colour`` "" gives ``image`` itself. ValueError for an unknown colour (:func:`check_colour`)."""
    import cv2

    check_colour(colour)
    if not colour:
        return image
    gains, keep = COLOURS[colour]
    out = image.astype(np.float32) * np.array(gains, np.float32)
    if keep < 1.0:
        grey = cv2.cvtColor(np.clip(out, 0, 255).astype(np.uint8), cv2.COLOR_BGR2GRAY).astype(np.float32)
        out = keep * out + (1.0 - keep) * grey[:, :, None]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def score_image(reader: DiceReader, labelled: LabelledImage, kinds=None, misses: list | None = None,
                border: float = 1.0, turn: int = 0, colour: str = "") -> Score:
    """Read one labelled image and match its dice to the labels (greedy by IoU, >= 0.5), reading with
    ``kinds`` (:func:`labelled_images` keeps only the labelled dice of those kinds).

    The counts are kept per die kind too (``Score.kinds``): a labelled die counts for its kind,
    a detection (and a false die) for the kind it was read as. With a ``misses`` list, each
    labelled die not read right and each false die is appended to it as a :class:`Miss`.
    With ``border`` > 1 the image is read set in a plain border that many times its size
    (:func:`in_border`), its labels moved with it; with ``turn`` (90, 180, 270) it is first turned that many
    degrees clockwise, its labels with it (:func:`turned_box`: a phone held in portrait, the tray seen from
    another side); with ``colour`` (:data:`COLOURS`) it is read as another camera's colours (:func:`recoloured`)."""
    image = recoloured(load_image(labelled.path), colour)
    if turn:
        import cv2

        h, w = image.shape[:2]
        image = cv2.rotate(image, getattr(cv2, TURNS[turn]))
        labelled = replace(labelled, dice=tuple(replace(d, box=turned_box(d.box, w, h, turn)) for d in labelled.dice))
    if border > 1:
        image, ox, oy = in_border(image, border)
        labelled = replace(labelled, dice=tuple(replace(d, box=(d.box[0] + ox, d.box[1] + oy, d.box[2] + ox, d.box[3] + oy))
                                                for d in labelled.dice))
    reading = reader.read(image, name=labelled.path.name, kinds=kinds, threshold=0.0)
    by_kind: dict[str, Score] = defaultdict(Score)
    for truth in labelled.dice:
        by_kind[truth.kind].dice += 1
        by_kind[truth.kind].sizes.setdefault(size_band(truth.box), Counter())["dice"] += 1
        if truth.material is not None:
            by_kind[truth.kind].materials.setdefault(truth.material, Counter())["dice"] += 1
        if truth.printing is not None:
            by_kind[truth.kind].printings.setdefault(truth.printing, Counter())["dice"] += 1
    for die in reading.dice:
        by_kind[die.kind].detections += 1
    pairs = sorted(((iou(d.box, t.box), i, j) for i, d in enumerate(reading.dice) for j, t in enumerate(labelled.dice)), reverse=True)
    used_d, used_t = set(), set()
    matched: dict[int, int] = {}  # labelled die -> detection
    for overlap, i, j in pairs:
        if overlap < 0.5:
            break
        if i in used_d or j in used_t:
            continue
        used_d.add(i), used_t.add(j)
        matched[j] = i
        truth = labelled.dice[j]
        by_kind[truth.kind].count_read(reading.dice[i], truth.kind, truth.face, reader.status_threshold(reading.dice[i].kind, reading.dice[i].box),
                                       truth.cocked, size_band(truth.box), truth.material, truth.printing)
    for j, truth in enumerate(labelled.dice):
        if j not in used_t:
            by_kind[truth.kind].confusion[(f"{truth.kind}:{truth.face}", "-")] += 1
    for i, die in enumerate(reading.dice):
        by_kind[die.kind].false_dice += i not in used_d
    if misses is not None:
        misses += _misses(reader, labelled, reading.dice, matched)
    for truth in labelled.dice:
        cx, cy = (truth.box[0] + truth.box[2]) / 2, (truth.box[1] + truth.box[3]) / 2
        covering = [d for d in reading.dice if d.box[0] <= cx <= d.box[2] and d.box[1] <= cy <= d.box[3]]
        if covering:
            best = max(covering, key=lambda d: iou(d.box, truth.box))
            by_kind[truth.kind].centre_found += 1
            by_kind[truth.kind].centre_right += (read_ok(best, reader.status_threshold(best.kind, best.box)) and best.kind == truth.kind
                                                 and best.face == truth.face)
    score = Score(ms=[reading.ms])
    for kind, counts in by_kind.items():
        counts.images = 1  # an image holding (or read as holding) this kind
        score.add(counts)
        score.kinds[kind] = counts
    score.images = 1
    return score


def _misses(reader: DiceReader, labelled: LabelledImage, dice, matched: dict[int, int]) -> list[Miss]:
    """The :class:`Miss` records of one scored image: ``dice`` read at threshold 0, ``matched``
    labelled die index -> detection index (IoU >= 0.5)."""
    out = []
    name, folder = str(labelled.path), labelled.folder
    for j, truth in enumerate(labelled.dice):
        if j not in matched:
            best = max(dice, key=lambda d: iou(d.box, truth.box), default=None)
            overlap = iou(best.box, truth.box) if best else 0.0
            best = best if overlap > 0 else None  # the nearest read only where it overlaps
            out.append(Miss(name, folder, "missed", truth.kind, truth.face, best.face if best else "",
                            best.confidence if best else 0.0, _status(reader, best) if best else "",
                            tuple(truth.box), tuple(best.box) if best else None, overlap))
            continue
        miss = _die_miss(reader, name, folder, truth.kind, truth.face, truth.box, dice[matched[j]])
        if miss is not None:
            out.append(miss)
    read = set(matched.values())
    out += [_false_miss(reader, name, folder, die) for i, die in enumerate(dice) if i not in read]
    return out


def _die_miss(reader: DiceReader, image: str, folder: str, kind: str, face: str, truth_box, die) -> Miss | None:
    """The :class:`Miss` of a labelled die (``kind``, ``face``, ``truth_box``) of the picture ``image``
    that ``die`` was matched to (None: no die found), or None when it was read right."""
    if die is None:
        return Miss(image, folder, "missed", kind, face, "", 0.0, "", tuple(truth_box), None, 0.0)
    status = _status(reader, die)
    if status == "ok" and (die.kind, die.face) == (kind, face):
        return None
    return Miss(image, folder, "wrong" if status == "ok" else "unreadable", kind, face, die.face, die.confidence,
                status, tuple(truth_box), tuple(die.box), iou(die.box, truth_box))


def _false_miss(reader: DiceReader, image: str, folder: str, die) -> Miss:
    """The :class:`Miss` of a detection in the picture ``image`` that matches no labelled die."""
    return Miss(image, folder, "false", die.kind, "", die.face, die.confidence, _status(reader, die), None,
                tuple(die.box), 0.0)


def _keep_picture(path: Path, picture: np.ndarray, found: list[Miss], misses: list) -> None:
    """Write ``picture`` (HxWx3 uint8 BGR) to ``path`` (PNG) and add ``found`` to ``misses`` when
    ``found`` holds a miss; a picture read right is not written."""
    if not found:
        return
    import cv2

    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), picture)
    misses.extend(found)


def _status(reader: DiceReader, die) -> str:
    """A die read at threshold 0 with the status the reader gives it at its own threshold."""
    if die.status == "cocked":
        return "cocked"
    return "ok" if read_ok(die, reader.status_threshold(die.kind, die.box)) else "unreadable"


#: Long side, pixels, of :func:`close_up`'s pictures (a phone photo scaled for the web is 1000 to 2000).
CLOSE_UP_SIDE = 1500


def held_out_names(models: Path) -> dict[str, set[str]] | None:
    """Image names per data folder that the shipped model never trained on (valid split), or None."""
    return split_names(models, "valid")


def split_names(models: Path, part: str) -> dict[str, set[str]] | None:
    """Image names per data folder in ``part`` ("train", "calib" or "valid") of ``models/splits.json``
    (written by ``python3 -m pi_table.train``), or None when there is no such file."""
    path = Path(models) / "splits.json"
    if not path.is_file():
        return None
    splits = json.loads(path.read_text())
    return {folder: set(s.get(part, [])) for folder, s in splits["folders"].items()}


def labelled_images(reader: DiceReader, root: Path, held_out: bool = False, limit: int | None = None,
                    die_boxes: bool = True, calib: bool = False, fixes=None,
                    kinds=None) -> tuple[list[LabelledImage], int]:
    """The labelled images under ``root`` to score; ``held_out`` keeps only the reader's valid split,
    ``calib`` only its calib split (photos: ``splits.json``'s calib names; renders: the one in 20
    training keeps out, :func:`pi_table.vision.dataset.is_calib_render`, which is the calib split
    of the rendered folders training read), on which the temperatures and thresholds were fitted.
    With ``die_boxes`` the boxes of folders that label pips (matteop65's) are grown to the whole
    die first (:func:`pi_table.vision.dataset.with_die_boxes`), as the reader boxes dice. ``fixes``
    (:func:`pi_table.vision.dataset.load_label_fixes`) are then applied to the labels
    (``eval --fixed-labels``). With one kind in ``kinds`` (``eval --kinds d8``), the YOLO classes of
    a folder without ``classes.txt`` are that kind's faces (:func:`pi_table.vision.dataset.load_yolo`).
    With ``kinds``, only the labelled dice of those kinds are kept, last: a mixed tray read with one
    system's kinds, whose other dice are not to be reported (one read as a die of ``kinds`` is a false die).

    Returns:
        (the images, how many of ``fixes`` applied to them).

    Raises:
        FileNotFoundError / ValueError: no such folder, no labelled images (names the path); a fix
        whose label line changed (:func:`pi_table.vision.dataset.with_label_fixes`).
    """
    images = load_yolo(root, default_kind=kinds[0] if kinds and len(kinds) == 1 else None)
    if held_out:
        names = held_out_names(reader.models)
        if names is None:
            raise ValueError(f"--held-out needs {reader.models / 'splits.json'}")
        images = [im for im in images if im.path.name in names.get(im.folder, set())]
        if not images:
            raise ValueError(f"no held-out images of the shipped model under {root}")
    if calib:
        names = split_names(reader.models, "calib") or {}
        images = [im for im in images if im.path.name in names.get(im.folder, set())
                  or (is_rendered(im) and is_calib_render(im.path.name))]
        if not images:
            raise ValueError(f"no calib images of the shipped model under {root}")
    images = images[:limit] if limit else images
    images = [with_die_boxes(im) for im in images] if die_boxes else images
    applied = 0
    for i, im in enumerate(images if fixes else []):
        images[i], n = with_label_fixes(im, fixes)
        applied += n
    if kinds is not None:
        images = [replace(im, dice=tuple(d for d in im.dice if d.kind in kinds)) for im in images]
    return images, applied


def evaluate(reader: DiceReader, root: Path, kinds=None, held_out: bool = False, limit: int | None = None,
             sweep=(), die_boxes: bool = True, calib: bool = False, misses: list | None = None,
             border: float = 1.0, fixes=None, turn: int = 0, colour: str = "") -> dict:
    """Score every labelled image under ``root``; ``held_out`` keeps only the valid split, ``calib``
    only the calib split (:func:`labelled_images`);
    ``die_boxes`` as in :func:`labelled_images` (False: the boxes as labelled); with a ``misses``
    list, every die not read right and every false die is appended to it (:class:`Miss`); ``border``
    (1..4) reads each image set in a plain border that many times its size (:func:`in_border`); ``turn``
    (90, 180, 270) reads each turned that many degrees clockwise (:func:`score_image`); ``colour`` reads each
    as another camera's colours (:data:`COLOURS`, :func:`recoloured`); ``fixes``: label fixes to apply
    (:func:`labelled_images`).

    Returns ``{"folders": {name: Score.to_json()}, "all": Score.to_json(), "label_fixes": applied}``, and with
    thresholds in ``sweep`` also ``"sweep": {name: Score.at_thresholds(sweep)}`` (``all`` too, and
    ``"NAME: KIND"`` for each die kind of a folder holding several).

    Raises:
        FileNotFoundError / ValueError: no such folder, no labelled images (names the path).
    """
    if not 1 <= border <= 4:
        raise ValueError(f"--border must be 1..4, got {border}")
    check_turn(turn)
    check_colour(colour)
    per_folder: dict[str, Score] = defaultdict(Score)
    total = Score()
    images, applied = labelled_images(reader, root, held_out, limit, die_boxes, calib, fixes, kinds)
    for labelled in images:
        s = score_image(reader, labelled, kinds, misses, border, turn, colour)
        per_folder[labelled.folder].add(s)
        total.add(s)
    return _result(per_folder, total, sweep, label_fixes=applied)


def _result(per_folder: dict, total: Score, sweep=(), **extra) -> dict:
    """``{"folders": {name: Score.to_json()}, "all": Score.to_json(), **extra}``, and with thresholds in
    ``sweep`` also ``"sweep": {name: Score.at_thresholds(sweep)}`` for each folder and ``all``, and
    ``"NAME: KIND"`` for each die kind of a folder holding several (:func:`evaluate`)."""
    result = {"folders": {k: v.to_json() for k, v in sorted(per_folder.items())}, "all": total.to_json(), **extra}
    if len(sweep):
        result["sweep"] = {}
        for name, score in [*sorted(per_folder.items()), ("all", total)]:
            result["sweep"][name] = score.at_thresholds(sweep)
            if len(score.kinds) > 1:  # a folder of several kinds (renders): each kind's own rows
                result["sweep"].update({f"{name}: {kind}": score.kinds[kind].at_thresholds(sweep)
                                        for kind in sorted(score.kinds, key=KINDS.index)})
    return result


def check_cut_margin(margin: float) -> None:
    """ValueError naming ``margin`` unless it is a ``--cut-crops`` margin (0.5..4 times the box)."""
    if not 0.5 <= margin <= 4:
        raise ValueError(f"--cut-crops margin must be 0.5..4, got {margin}")


def check_close_up_frame(frame: float) -> None:
    """ValueError naming ``frame`` unless it is a ``--close-ups`` frame (1.2..10 times the box)."""
    if not 1.2 <= frame <= 10:
        raise ValueError(f"--close-ups frame must be 1.2..10, got {frame}")


def check_cut_offset(offset: float) -> None:
    """ValueError naming ``offset`` unless it is a ``--cut-offset`` (0..0.4 of the crop's side)."""
    if not 0 <= offset <= 0.4:
        raise ValueError(f"--cut-offset must be 0..0.4, got {offset}")


def evaluate_cut_crops(reader: DiceReader, root: Path, margin: float, kinds=None, held_out: bool = False,
                       limit: int | None = None, die_boxes: bool = True, fixes=None, misses: list | None = None,
                       misses_dir: Path | None = None, sweep=(), offset: float = 0.0) -> dict:
    """Score ``read --crop`` on crops cut from labelled photos: each die as a square ``margin``
    times its box's long side, at the photo's resolution (1.0 tight, 1.8 loose framing); with
    ``offset`` (``--cut-offset``, 0..0.4), the square's centre moved that share of its side right of
    and below the die's, the die off the crop's centre, as a rig's fixed region or a loose hand crop
    frames it (models/history/classifier.md, "A lone die off the centre").

    With a ``misses`` list and ``misses_dir`` (``eval --cut-crops M --misses OUT``), each crop not
    read right is written to ``misses_dir/crops/`` (PNG) and a :class:`Miss` naming it is appended,
    its boxes in the crop's pixels (the labelled die's: centred, 1/``margin`` of the crop).

    Returns the same shape as :func:`evaluate` (with ``sweep``, its rows too); ValueError if ``margin``
    is not in 0.5..4, ``offset`` not in 0..0.4, or if ``misses`` comes without ``misses_dir``.
    """
    check_cut_margin(margin)
    check_cut_offset(offset)
    picture_path = _miss_pictures(misses, misses_dir, "crops")

    def score(image: np.ndarray, name: str, die, folder: str) -> Score:
        x0, y0, x1, y1 = die.box
        size = max(8, round(max(x1 - x0, y1 - y0) * margin))
        d = offset * max(x1 - x0, y1 - y0) * margin  # the crop's centre moved, in photo pixels
        crop = crop_die(image, (x0 + d, y0 + d, x1 + d, y1 + d), size, margin)
        miss_as = None
        if misses is not None:
            f = size / (max(x1 - x0, y1 - y0, 4.0) * margin)  # crop pixels per photo pixel, as crop_die cuts
            w, h = (x1 - x0) * f, (y1 - y0) * f
            c = size / 2 - d * f  # the die's centre in the crop
            miss_as = (picture_path(name), folder, (c - w / 2, c - h / 2, c + w / 2, c + h / 2))
        return _score_crop(reader, crop, name, die.kind, die.face, kinds, die.cocked, misses=misses, miss_as=miss_as,
                           material=die.material)

    return _each_die(reader, root, held_out, limit, die_boxes, score, fixes, kinds, sweep)


def _miss_pictures(misses: list | None, misses_dir: Path | None, sub: str):
    """``path(name) -> Path``: where the next picture cut from photo ``name`` that was not read right
    goes, ``misses_dir/sub/<name's stem>_<n>.png`` (n counts the photo's dice from 1).

    Raises:
        ValueError: a ``misses`` list comes without ``misses_dir``.
    """
    if misses is not None and misses_dir is None:
        raise ValueError(f"misses needs misses_dir, the folder the {sub} are written to")
    seen: Counter = Counter()

    def path(name: str) -> Path:
        seen[name] += 1
        return Path(misses_dir) / sub / f"{Path(name).stem}_{seen[name]}.png"

    return path


def _each_die(reader: DiceReader, root: Path, held_out: bool, limit: int | None, die_boxes: bool, score,
              fixes=None, kinds=None, sweep=()) -> dict:
    """``score(image, name, die, folder) -> Score`` for every labelled die under ``root`` (images and
    ``fixes`` and ``kinds`` as :func:`labelled_images` takes them; ``folder`` the die's data folder), summed per data
    folder and in all, as :func:`evaluate` returns them (``sweep`` too)."""
    per_folder: dict[str, Score] = defaultdict(Score)
    total = Score()
    images, applied = labelled_images(reader, root, held_out, limit, die_boxes, fixes=fixes, kinds=kinds)
    for labelled in images:
        image = load_image(labelled.path)
        for die in labelled.dice:
            s = score(image, labelled.path.name, die, labelled.folder)
            per_folder[labelled.folder].add(s)
            total.add(s)
    return _result(per_folder, total, sweep, label_fixes=applied)


def close_up(image: np.ndarray, box, frame: float, side: int = CLOSE_UP_SIDE) -> tuple[np.ndarray, tuple]:
    """A phone's close-up of one die made from a labelled photo: the square ``frame`` times the
    die's box's long side around it (moved to stay inside the image where it fits, cut at the
    image's edge where it does not), scaled so its long side is ``side`` pixels.

    Args:
        image: ``HxWx3 uint8 BGR``; box: the die's (x0, y0, x1, y1) in its pixels.

    Returns:
        (the close-up, ``side`` pixels on its long side, HxWx3 uint8 BGR; the die's box in it).
    """
    import cv2

    h, w = image.shape[:2]
    x0, y0, x1, y1 = box
    win = max(x1 - x0, y1 - y0) * frame
    wx0 = int(max(0.0, min(w - win, (x0 + x1) / 2 - win / 2)))
    wy0 = int(max(0.0, min(h - win, (y0 + y1) / 2 - win / 2)))
    window = image[wy0 : int(min(h, wy0 + win)), wx0 : int(min(w, wx0 + win))]
    f = side / max(window.shape[:2])
    size = (max(1, round(window.shape[1] * f)), max(1, round(window.shape[0] * f)))
    scaled = cv2.resize(window, size, interpolation=cv2.INTER_CUBIC if f > 1 else cv2.INTER_AREA)
    return scaled, ((x0 - wx0) * f, (y0 - wy0) * f, (x1 - wx0) * f, (y1 - wy0) * f)


def evaluate_close_ups(reader: DiceReader, root: Path, frame: float, kinds=None, held_out: bool = False,
                       limit: int | None = None, die_boxes: bool = True, fixes=None, misses: list | None = None,
                       misses_dir: Path | None = None, sweep=()) -> dict:
    """Score ``read`` on close-ups of single dice (``eval --close-ups FRAME``): each labelled die
    of the photos under ``root`` cut out with ``frame`` times its box around it and scaled to a
    1500-pixel long side (:func:`close_up`; the die fills 1/``frame`` of the picture, as when a
    phone is held over one die), read as a whole photo. Only that die is scored: it is found
    where a detection has IoU >= 0.5 with it; a detection lying over half inside it that does
    not match it (a pip or face of the die taken for a die) counts as a false die. Neighbours
    the window catches are not scored.

    With a ``misses`` list and ``misses_dir`` (``eval --close-ups FRAME --misses OUT``), each
    close-up whose die is not read right or that has a false die is written to
    ``misses_dir/close-ups/`` (PNG), and a :class:`Miss` naming it is appended for the die and for
    each false die, their boxes in the close-up's pixels.

    Returns the same shape as :func:`evaluate` (with ``sweep``, its rows too); ValueError if ``frame``
    is not in 1.2..10, or if ``misses`` comes without ``misses_dir``.
    """
    check_close_up_frame(frame)
    picture_path = _miss_pictures(misses, misses_dir, "close-ups")

    def score(image: np.ndarray, name: str, die, folder: str) -> Score:
        picture, box = close_up(image, die.box, frame)
        reading = reader.read(picture, name=name, kinds=kinds, threshold=0.0)
        counts = _one_die_counts(reading.ms, die.material)
        match = max(reading.dice, key=lambda d: iou(d.box, box), default=None)
        if match is None or iou(match.box, box) < 0.5:
            counts.confusion[(f"{die.kind}:{die.face}", "-")] += 1
            match = None
        else:
            counts.detections = 1
            counts.count_read(match, die.kind, die.face, reader.status_threshold(match.kind, match.box), die.cocked, material=die.material)
            counts.centre_found, counts.centre_right = 1, counts.right
        false = [d for d in reading.dice if d is not match and inside_share(d.box, box) > 0.5]
        counts.detections += len(false)
        counts.false_dice += len(false)
        if misses is not None:
            path = picture_path(name)  # numbered by the photo's dice, as crops are
            miss = _die_miss(reader, str(path), folder, die.kind, die.face, box, match)
            found = ([miss] if miss else []) + [_false_miss(reader, str(path), folder, d) for d in false]
            _keep_picture(path, picture, found, misses)
        return _one_die(die.kind, counts)

    return _each_die(reader, root, held_out, limit, die_boxes, score, fixes, kinds, sweep)


def _one_die_counts(ms: float, material: str | None) -> Score:
    """A Score for one labelled die read in one picture (``ms``), counted under its ``material`` (a render's) too."""
    return Score(images=1, dice=1, ms=[ms], materials={material: Counter(dice=1)} if material else {})


def _one_die(kind: str, counts: Score) -> Score:
    """The Score of one die's ``counts``, kept under its ``kind`` too."""
    score = Score(kinds={kind: counts})
    score.add(counts)
    return score


def _score_crop(reader: DiceReader, crop: np.ndarray, name: str, kind: str, face: str, kinds,
                cocked: bool | None = None, misses: list | None = None, miss_as=None, material: str | None = None) -> Score:
    """Score ``read --crop`` on one crop of a labelled die (of ``material``, a render's); with
    ``misses`` and ``miss_as`` (the PNG path to write the crop to, its data folder, the labelled
    die's box in the crop) a crop not read right is written there and recorded as a :class:`Miss`."""
    reading = reader.read_crop(crop, name=name, kinds=kinds, threshold=0.0)
    if misses is not None:
        path, folder, truth_box = miss_as
        miss = _die_miss(reader, str(path), folder, kind, face, truth_box, reading.dice[0] if reading.dice else None)
        _keep_picture(path, crop, [miss] if miss else [], misses)
    counts = _one_die_counts(reading.ms, material)
    if not reading.dice:
        counts.confusion[(f"{kind}:{face}", "-")] += 1
    else:
        counts.detections = 1
        counts.count_read(reading.dice[0], kind, face, reader.status_threshold(reading.dice[0].kind, reading.dice[0].box), cocked,
                          material=material)
        counts.centre_found, counts.centre_right = 1, counts.right  # one die, the whole image: both matches agree
    return _one_die(kind, counts)


def evaluate_crops(reader: DiceReader, root: Path, kinds=None, sweep=()) -> dict:
    """Score ``read --crop`` on a crop folder (one die per image, face in the folder/file name; the
    kind in the name, a folder named by it, or the one kind of ``kinds``: :func:`load_crops`), as
    :func:`evaluate` returns its figures (``sweep`` too), the folder named as ``root``."""
    total = Score()
    for path, kind, face in load_crops(root, kinds[0] if kinds and len(kinds) == 1 else "d6"):
        total.add(_score_crop(reader, load_image(path), path.name, kind, face, kinds))
    return _result({Path(root).name: total}, total, sweep)


#: Side in pixels of one die's picture on a contact sheet (:func:`write_misses`), and tiles per row.
TILE, TILES_PER_ROW = 192, 6


def miss_tile(image: np.ndarray, miss: Miss) -> np.ndarray:
    """A TILE x (TILE + 34) uint8 BGR picture of one miss: the photo round the labelled and the
    read box (a square 1.8 times their union's long side, at least 48 pixels), the label's box
    green, the reader's red, its :meth:`Miss.caption` and image name below."""
    import cv2

    boxes = [b for b in (miss.truth_box, miss.read_box) if b is not None]
    x0, y0, x1, y1 = union_box(boxes)
    half = max(24.0, 0.9 * max(x1 - x0, y1 - y0))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    scale = TILE / (2 * half)
    # One affine warp: the square round the boxes to the tile, the photo's edge padded grey.
    m = np.float32([[scale, 0, (half - cx) * scale], [0, scale, (half - cy) * scale]])
    tile = cv2.warpAffine(image, m, (TILE, TILE), flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=(90, 90, 90))
    for box, colour in ((miss.truth_box, (0, 200, 0)), (miss.read_box, (0, 0, 255))):
        if box is not None:
            a = (int(round((box[0] - cx + half) * scale)), int(round((box[1] - cy + half) * scale)))
            b = (int(round((box[2] - cx + half) * scale)), int(round((box[3] - cy + half) * scale)))
            cv2.rectangle(tile, a, b, colour, 1)
    text = np.full((34, TILE, 3), 255, np.uint8)
    cv2.putText(text, miss.caption()[:30], (3, 13), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.putText(text, Path(miss.image).name[-30:], (3, 28), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (80, 80, 80), 1, cv2.LINE_AA)
    return np.vstack([tile, text])


def misses_folder(out: Path) -> Path:
    """``out`` made ready for :func:`write_misses` (created, parents too), so that a bad folder
    is refused before any image is scored.

    Raises:
        ValueError: ``out`` exists and is not a folder, or cannot be made (names it).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--misses: {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--misses: cannot make folder {out}: {exc.strerror}") from None
    return out


def write_misses(misses: list[Miss], out: Path) -> list[Path]:
    """Write ``out/misses.json`` (every :class:`Miss`) and one contact sheet per data folder,
    ``out/<folder, / as _>.jpg``, a tile per miss (:func:`miss_tile`) in the order scored, so
    that a reader's errors can be told from label errors by eye. Returns the files written.

    Raises:
        ValueError: ``out`` is not a folder and cannot be made one (:func:`misses_folder`).
    """
    import cv2

    out = misses_folder(out)
    written = [out / "misses.json"]
    written[0].write_text(json.dumps([m.to_json() for m in misses], indent=1))
    by_folder: dict[str, list[Miss]] = defaultdict(list)
    for m in misses:
        by_folder[m.folder].append(m)
    for folder, items in sorted(by_folder.items()):
        images: dict[str, np.ndarray] = {}
        tiles = []
        for m in items:
            if m.image not in images:
                images = {m.image: load_image(m.image)}  # misses come image by image: keep one
            tiles.append(miss_tile(images[m.image], m))
        blank = np.full_like(tiles[0], 255)
        rows = [np.hstack(tiles[i:i + TILES_PER_ROW] + [blank] * (TILES_PER_ROW - len(tiles[i:i + TILES_PER_ROW])))
                for i in range(0, len(tiles), TILES_PER_ROW)]
        path = out / (folder.replace("/", "_") + ".jpg")
        cv2.imwrite(str(path), np.vstack(rows), [cv2.IMWRITE_JPEG_QUALITY, 90])
        written.append(path)
    return written


def format_report(result: dict) -> str:
    """Human-readable table of :func:`evaluate`'s result, with each folder's confusion matrix."""
    lines = [f"{'folder':34} {'images':>6} {'dice':>6} {'right':>8} {'recall':>8} {'precis.':>8} {'wrong@ok':>9} "
             f"{'unread.':>8} {'false/100':>9} {'ECE':>6} {'ms':>6} {'right(c)':>9} {'recall(c)':>9}"]
    rows = list(result["folders"].items())
    if len(rows) > 1:
        rows.append(("all", result["all"]))
    for name, s in rows:
        kinds = s.get("kinds", {})
        for label, t in [(name, s)] + ([(f"  {k}", v) for k, v in kinds.items()] if len(kinds) > 1 else []):
            lines.append(f"{label:34} {t['images']:>6} {t['dice']:>6} {t['read_right']:>8.2%} {t['recall']:>8.2%} "
                         f"{t['precision']:>8.2%} {t['wrong_at_ok']:>9.2%} {t['unreadable']:>8.2%} "
                         f"{t['false_dice_per_100_images']:>9.2f} {t['ece']:>6.3f} {t['median_ms'] or 0:>6.1f} "
                         f"{t['read_right_centre']:>9.2%} {t['recall_centre']:>9.2%}")
    lines.append("(c): a labelled die counts as found when its box centre lies inside a detection, whatever the overlap")
    # each folder, then each of its die kinds where it holds several ("NAME: KIND")
    with_kinds = [(label, t) for name, s in rows for label, t in [(name, s)] + [(f"{name}: {k}", v) for k, v in
                                                                           s.get("kinds", {}).items() if len(s["kinds"]) > 1]]
    for label, t in with_kinds:
        if t["counts"]["cocked"] or "cocked_caught" in t:
            known = (f"; labelled cocked: {t['cocked_caught']:.2%} of {t['counts']['cocked_found']} reported cocked, "
                     f"labelled flat: {t['flat_flagged']:.2%} of {t['counts']['flat_found']} reported cocked, "
                     f"{t['flat_read_right']:.2%} read right"
                     if "cocked_caught" in t else "")
            lines.append(f"cocked, {label}: {t['cocked']:.2%} of the dice found reported cocked{known}")
    for key, title in (("by_size", "die size (the labelled box's long side, pixels"), ("by_material", "die material (renders' meta"),
                       ("by_printing", "printing (renders' meta: pips or numerals")):
        grouped = [(label, t[key]) for label, t in with_kinds if t.get(key)]
        if not grouped:
            continue
        names = list(SIZE_BANDS) if key == "by_size" else sorted({g for _, groups in grouped for g in groups})
        lines.append(f"\nread right by {title}; read right % and dice)")
        lines.append(f"{'folder':34}" + "".join(f"{name:>14}" for name in names))
        for label, groups in grouped:
            lines.append(f"{label:34}" + "".join(f"{c['read_right']:>8.1%} {c['dice']:>5}" if c else f"{'.':>14}"
                                                  for c in (groups.get(name) for name in names)))
    if result.get("boxes", "die") == "die":
        lines.append("boxes: the labels of folders that box a die's pips (matteop65's) are grown to the whole die "
                     "(GrabCut) before matching; --boxes as-labelled matches them as they are")
    if result.get("fixed_labels"):
        lines.append(f"labels: {result.get('label_fixes', 0)} checked correction(s) of pi_table/vision/label_fixes.json "
                     "applied (--fixed-labels); without it the labels are scored as published")
    if "sweep" in result:
        lines.append("\nthreshold sweep (the same reads, unreadable cut at each threshold)")
        lines.append(f"{'folder':34} {'threshold':>9} {'right':>8} {'wrong@ok':>9} {'unread.':>8}")
        for name, sweep in result["sweep"].items():
            if name.split(":")[0] == "all" and len(result["folders"]) == 1:
                continue  # one folder: all is the same
            for row in sweep:
                lines.append(f"{name:34} {row['threshold']:>9.2f} {row['read_right']:>8.2%} {row['wrong_at_ok']:>9.2%} "
                             f"{row['unreadable']:>8.2%}")
    for name, s in rows[:-1] if len(rows) > 1 else rows:
        pairs: dict[tuple[str, str], int] = {}
        for k, v in s["confusion"].items():
            t, r = k.split("->")
            if r not in "-?" and r.split(":")[0] != t.split(":")[0]:
                r = "x"  # read as a die of another kind
            pairs[(t, r)] = pairs.get((t, r), 0) + v
        lines.append(f"\nconfusion, {name} (rows truth, columns read; x another kind, ? unreadable, - missed)")
        for kind in sorted({t.split(":")[0] for t, _ in pairs}, key=lambda k: _face_key(k + ":0")):
            truths = sorted({t for t, _ in pairs if t.split(":")[0] == kind}, key=_face_key)
            reads = sorted({r for t, r in pairs if t in truths and r not in "-?x"}, key=_face_key) + ["x", "?", "-"]
            lines.append(" " * 12 + "".join(f"{r.split(':')[-1]:>6}" for r in reads))
            for t in truths:
                lines.append(f"{t:>12}" + "".join(f"{pairs.get((t, r), 0) or '.':>6}" for r in reads))
    return "\n".join(lines)


def _face_key(label: str):
    kind, _, face = label.partition(":")
    return (kind, int(face) if face.isdigit() else 0)
