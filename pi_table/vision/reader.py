"""Find every die in a tray photo and read its top face: two small ONNX models.

1. **Detection** (``models/detector.onnx``): a CenterNet-style fully convolutional net
   (Zhou et al. 2019, "Objects as Points") on the image scaled so its long side is
   ``detector.input`` pixels; it outputs, at stride 4, a die-centre heat map, the box size
   and the sub-cell offset. Peaks of the heat map above ``detector.threshold`` are dice.
   **Big dice**: the net learned dice 12 to 90 input pixels across and splits a bigger one (a
   phone held over one die) into pips and faces, so :meth:`DiceReader.read` looks a second time
   with the image three times smaller (``reader.json``'s ``zoom_out``, default on; about a
   quarter of the first look's time) and puts a die it finds there beyond the first look's range
   (90 input pixels), once a look at the scale
   where it is about 51 pixels across confirms it, in place of the parts. A "big die" whose
   parts include two that the classifier calls dice is a cluster of dice seen as one, and is
   dropped; so is one with a single such part under :data:`LONE_DIE` of it across, when the
   classifier reads the big box itself as no die (a desk or tray seen small round one die)
   (:meth:`Detector.big_dice`, :meth:`DiceReader._with_big_dice`). A die not surely read that lies
   at least half inside a die 1.5 times its size across is one of its faces, numerals or pips, and
   is dropped too (:meth:`DiceReader._without_parts`). The second look and its
   confirmation may use a detector of their own (``reader.json``'s ``detector.close_up_file``,
   ``models/detector-big.onnx``: the same net trained with close-up renders as well, whose big
   dice are sharp, not small ones scaled up; models/history/detector.md, "Close-up detector"), so that
   the first look, which reads every tray photo, stays the one the photos were measured with.
   When that look sees something big with no surely detected die in it, it looks again at the image
   four and five times smaller (:data:`FAR_ZOOM_OUTS`, "Far looks" in :meth:`Detector.big_dice`),
   where a die filling a third to two thirds of a close-up comes out whole, not as its face or pips.
   A big die neither look takes (a dark die on dark ground) comes out as its pips or numerals, each
   unsure: unsure dice lying close together are read again as one die from their union box grown
   1.3 times, and that die replaces them when read surely, or, read unsure, as one `unreadable` die
   when they are smaller than the frame's sure dice (:meth:`DiceReader._with_parts_joined`). Last,
   an unsure box lying mostly inside a die 1.2 times its size or more is a second box on that die
   and is dropped (:meth:`DiceReader._without_parts` again), and so is an unsure box at most half as
   big across lying within a die's box grown 1.6 times: a side face's numeral or pips just outside
   the box of a close-up die's top face (:data:`RIM_INSIDE`).
   **Small dice**: near the bottom of that range the net misses dice (a phone photo of the
   whole table) and sizes them badly, so when the first look's median die is under 16 input
   pixels the image is looked at again enlarged, its dice about 28 across, and again while they
   still come out under 16 (``reader.json``'s ``zoom_in``, default on; :meth:`Detector.small_dice`).
   A first look sure of no die may have boxed clusters of dice smaller still (a tray in a wide
   shot, else taken for one big die): it is enlarged too, and the enlarged look taken when it sees
   small dice surely and the classifier reads enough of them as dice (not a big die's pips).
2. **Classification** (``models/classifier.onnx``): each box is cut from the full-resolution
   image as a square ``crop.margin`` times the box's long side, scaled to ``crop.size``
   pixels, and a small CNN gives a score per class ``KIND:FACE`` plus ``none`` (not a die:
   the second stage also rejects false detections). Scores are turned into calibrated
   probabilities by temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural
   Networks"), the temperature fitted on a calibration split that training never saw. A crop
   whose top score is a numbered shape takes its own temperature (``shape_temperature``, fitted
   on the calib dice that top at one): the one temperature is fitted on real d6 photos, and at
   it the classifier was far less sure of a d8's or d10's shape than it was right (top-label
   calibration, Gupta and Ramdas 2022). The classifier is a pair of nets whose scores are
   averaged (an ensemble); ``classifier.cascade`` (0.97 as shipped) lets the second read only
   the crops the first does not read surely as a d6 face (:class:`Classifier`;
   models/history/classifier.md, "Cascade, d6 faces only": on the bench's 20 d6 about two thirds
   of the pair's time, as many dice read right and none more wrong at ``ok`` on fresh renders).
3. **Numerals** (``models/numerals.onnx``, when ``reader.json`` has ``numerals``): the
   classifier above tells a numbered die only by its shape (class ``d8:*`` or ``d10:*``);
   a second CNN reads the numeral from a larger crop (``KIND:FACE`` for d8, d10 and
   d10-tens). It runs only on the boxes the classifier gives some weight to a numbered
   shape, so a tray of d6 costs nothing more. The two are joined as a product of experts
   (Hinton 2002): P(face) = P(any numbered die) x m(shape) q(face) / sum m q, with m the
   classifier's shape probabilities and q the numeral model's.
   The d6 numeral model (``models/d6-numerals.onnx``, when ``reader.json`` has ``d6_numerals``; trained
   with ``numerals --d6``; shipped since 2026-11-30: models/d6-numerals.md)
   reads d6 printed with numerals (classes ``d6:1`` .. ``d6:6``, and
   :data:`D6_PIPS` for a d6 printed with pips): the classifier reads pips well and numerals seldom
   surely, so a d6 left ``unreadable`` once the parts of one die are joined and dropped (at the end of
   :meth:`DiceReader.read`, or of :meth:`DiceReader.read_crop` for its one die) is read by the d6 numeral
   model at its box, and that read joined with the die's first (:func:`join_d6_numerals`): the die's kinds are joined as a
   product of experts (the classifier sees its shape and often takes a numeral d6 for a numbered die, the
   numeral model sees its face: a d6's numeral is not a d8's), and within d6 its faces become
   (q(face) + q(pips) x the classifier's share of the face) / q(d6): the numeral where it sees a d6's, the
   classifier's read where it sees pips. The die takes that read only when it is a sure d6
   (:meth:`DiceReader._with_d6_numerals`). Asked earlier, it read parts of numbered dice (their
   numerals) as sure d6, which then were never joined. Sure dice cost nothing more.

4. **Second look** (``reader.json``'s ``second_look``, views per unsure die): a die whose
   best class is below its kind's threshold (a numbered shape's: its kinds', as
   calibration chose them) is read again from its crop turned by a quarter, a half
   and three quarters (a die's top face reads the same whichever way it is turned), and the
   four views' scores are averaged: test-time augmentation, paid only for unsure dice. On
   the held-out nellbyler dice it lifted the shipped model's top-1 face from 97.3% to 98.8%.
   The numeral model gets the same second look for its unsure numerals. ``second_look`` 8 adds
   the four views mirrored, for the classifier only (:meth:`DiceReader._turned_mean`).

   **Refine the unsure** (``reader.json``'s ``refine_unsure``, passes): before its second look, a
   die below its threshold is cut again around the box the classifier's box head placed and read
   again, as ``refine`` does for every die (which doubles the classifier's cost). A detector's box
   off a close-up's die, its top face alone or a die and its shadow, is read from a crop that is
   off too; sure dice, nearly all of a tray's, keep their one read. One pass in the shipped
   ``reader.json`` (models/history/classifier.md, "Refine the unsure": how it was tested before it shipped).
   A numbered die whose numeral is read unsure (its kind's threshold) is likewise read again from the
   box its first read placed, after the numerals: the classifier may be sure of its shape and so not
   re-cut it, and the numeral model is the more sensitive to where its crop is cut
   (models/history/numerals.md, "Unsure numerals cut again"); while it stays unsure, again from the box
   that read placed, up to ``reader.json``'s ``recut_numbered`` times (3 shipped: "Unsure numerals cut
   again, up to three times"); with ``recut_settled`` (off as shipped), not once a recut has left its box
   where it was and its read far under the threshold (:data:`RECUT_SETTLED`: "Settled boxes are not cut again").

5. **Cocked** (``models/cocked.onnx``, when ``reader.json`` has ``cocked``): a small CNN on
   each die's crop gives the calibrated chance that it does not lie flat; at or above
   ``cocked.threshold`` the die is reported ``cocked``, with no face (RULES.md: a cocked die is
   never guessed). Trained on rendered cocked dice (the photos label none), with rendered flat
   dice and the photos' dice as flat ones (``python3 -m pi_table.train.cocked``). The model
   also sees where the die lies in the image, so it does not judge a single cropped die
   (``read --crop``).

A die whose best face has confidence below ``threshold`` is reported ``unreadable`` and
never guessed. **Big numbered dice**: a d8, d10 or tens die big enough that the numeral model's
crop of it is shrunk, not enlarged (its box's long side at least ``numerals.crop_size /
numerals.margin``, 70 pixels as shipped) is reported ``ok`` from :data:`BIG_NUMBERED_THRESHOLD` up
when its kind's threshold is higher (``reader.json``'s ``big_numbered``, default on;
:meth:`DiceReader.status_threshold`). The passes above (second look, recut) still run below the
kind's own threshold. The settings live in ``models/reader.json``, written by the training code
(``python3 -m pi_table.train``). Runtime: onnxruntime, OpenCV, NumPy only.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from pi_table.vision.dice import KINDS, Die, Reading, class_key, face_value

# ``read --crop``: a crop from someone else may frame the die loosely or tightly; two passes of
# the box head re-cut it around the die first (held-out nellbyler dice cropped at 1.8x their box:
# 36% read right with none, 84% with two; at 1.0x and 1.3x about the same either way).
CROP_PASSES = 2
# A numbered die read unsure is read again (recut_numbered): its box moved by the box head is cut and read
# with this many extra passes of the box head before its numeral is read. With 0 (one move) renders/dark-valid-single
# read 79.3% right, with 1 (two moves) 81.0%, against 76.0% without (models/history/numerals.md,
# "Unsure numerals cut again").
NUMBERED_RECUT = 1
# With reader.json's ``recut_settled`` (default off: a speed setting for a slow computer), a numbered die whose
# box its last recut moved less than RECUT_SETTLED of the box's long side, and left read under RECUT_FAR, is not
# cut again: its next read would come from nearly the same crop, and such reads crossed a numbered threshold
# (0.97-0.98) only from close under it. On three fresh render sets a frame of 20 numbered dice read in 0.77 of the
# time and 9 of 7637 numbered dice fewer were read right, one more than its rule allowed
# (models/history/numerals.md, "Settled boxes are not cut again").
RECUT_SETTLED = 0.02
RECUT_FAR = 0.9
# A looser crop (the die a third of it or less: a neighbour, the tray) misleads the box head, and
# its read can be sure and wrong. When the box head's die is under LOOSE_CROP of the crop's long
# side, the detector looks for it too: the largest box over the crop's centre, at most
# LOOSE_CROP_DIE of the crop, is read as well (models/history/classifier.md, "Loose crops").
LOOSE_CROP = 0.6
LOOSE_CROP_DIE = 0.7
# ... and when no box lies over the centre but the detector finds one die alone, lying inside the crop (clear of its
# edges by LONE_EDGE of its long side: a box cut by the edge is a neighbour's), that die is read: the crop's only die,
# off its centre, as a rig's fixed region or a loose hand crop frames it (models/history/classifier.md, "A lone die
# off the centre").
LONE_EDGE = 0.05
# When the box head takes a loose crop whole (its few dice read as one die's pips), the die over the
# centre is read instead if separate dice are seen; a die it finds under CROWD_DIE of the crop is
# taken for a pip or numeral of a tightly framed die (models/history/classifier.md, "Crowded crops").
CROWD_DIE = 0.2
# A close-up's pips are boxed by the first look and read surely as d6 "1"s, and two sure parts make a
# big die a cluster of small dice: sure parts that all read "1" count only if they cover at least
# CLUSTER_COVER of the big die's box (a pile of dice fills its box; pips leave most of the face bare).
CLUSTER_COVER = 0.3
# One sure part under LONE_DIE of a big die's long side also makes it a cluster when the big die itself is
# neither a sure die nor mostly a numbered shape to the classifier (one die boxed with the ground around it:
# a desk or tray seen small round one die). A numbered die's numerals can read surely as a d6 face (a "00" as
# a "6"), and a big die's top face, read as a part, is 0.6 to 0.7 of it across (models/history/detector.md,
# "One die in a wide shot").
LONE_DIE = 0.4
# Unsure dice within JOIN_GAP times the smaller one's long side of each other are read again together,
# their union box as one die (DiceReader._with_parts_joined: a dark die too big for the first look,
# reported as its pips or numerals; models/history/detector.md, "Unsure parts read together").
JOIN_GAP = 1.0
# ... read from the square JOIN_GROW times their union's long side about its centre: the pips or numerals lie inside the
# die's top face, and a crop around their union alone cuts the die's rim.
JOIN_GROW = 1.3
# ... and not taken when more than JOIN_SIZE times as big across as the frame's largest sure die: dice in one picture are
# about one size, and a heap of touching unsure tray dice was read as one false die several times their size.
JOIN_SIZE = 2.5
# A group whose union is read unsure too is still one die, reported `unreadable` in place of its parts, when its parts
# are under JOIN_PART times the frame's largest sure die across (a die's pips or numerals, not whole dice lying close):
# one unreadable die to roll again where there were several false ones (models/history/detector.md, "One unreadable die
# for its parts").
JOIN_PART = 0.6
# Unsure dice still apart after the groups above are grouped again within JOIN_GAP_SURE times the smaller one's long
# side, and such a wider group's union taken only when it is read surely: a dark d6's pips lie up to about 2.75 pips
# apart (a "2" across the face's diagonal), beyond JOIN_GAP, and a wider group of unsure whole dice read as one die
# rarely reads surely (models/history/detector.md, "Pips far apart, taken when read surely"). Not read when it has more
# than JOIN_MAX_PARTS members (a d6 face has at most six pips) or its union's grown square is more than JOIN_SPAN times
# its largest member across (one face's parts span about five of them: whole dice lying apart, read for nothing).
# JOIN_GAP_SURE at JOIN_GAP or under turns the wider groups off.
JOIN_GAP_SURE = 3.0
JOIN_MAX_PARTS = 6
JOIN_SPAN = 7.0
# Then the unsure dice left and the sure d6 are grouped within JOIN_GAP, and a group holding both is taken only as a
# d8, d10 or d10-tens read surely: a dark numbered die seen only as its numerals often has one of them ("00", "60")
# read surely as a six, a false die at `ok`, and the die itself lost; a die read as a d6 never takes a sure d6
# (models/history/detector.md, "A sure six among a dark die's numerals"). False turns it off.
JOIN_SURE_D6 = True
# An unsure die left after the joins, LONE_MIN pixels across or more (LONE_MIN_D6 when it reads as a d6), is read again
# from the square LONE_GROW times its long side about its centre: a big dark die on dark ground is often boxed by its lit
# top face alone, and a crop around that face shows no outline to tell a d10 from a d6 (it mostly reads as one). The
# die read there replaces it only when read surely, at least LONE_BIGGER times its size across, lying over it
# (PART_INSIDE) and on no sure die: a die read again from a looser crop at its own size came out sure and wrong
# (close-ups of d6) (models/history/detector.md, "A lone top face read from around it"). LONE_GROW 0 turns it off.
LONE_GROW = 1.5
LONE_MIN = 80.0
LONE_BIGGER = 1.2
LONE_OVERLAP = 0.3
# A die read as a d6 from 60 px: close-ups of a few dark dice box a top face at 60-80 px; a tray's unsure numbered dice
# (50-75 px on the bench's frame) stay out, each such grown read costing a numbered read and its recuts
# (models/history/detector.md, "A lone top face read from around it", rule lone60).
LONE_MIN_D6 = 60.0


def models_dir() -> Path:
    """The shipped models: ``$PI_TABLE_MODELS`` if set, else ``models/`` of the repo or the package."""
    env = os.environ.get("PI_TABLE_MODELS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "models", here / "models"):
        if (candidate / "reader.json").is_file():
            return candidate
    return here.parent / "models"


def model_files(entry: dict) -> list[str]:
    """The ONNX file names of a ``reader.json`` model entry: its ``file``, a name or a list of
    names (a classifier ensemble), as a list."""
    files = entry["file"]
    return list(files) if isinstance(files, list) else [files]


@contextlib.contextmanager
def quiet_opencv() -> Iterator[None]:
    """Hold OpenCV's own log at ERROR while the block runs, then put its level back.

    OpenCV prints WARN lines of its own on stderr when a codec or a capture backend fails
    (``[ WARN:0@0.04] global cap_v4l.cpp:914 open VIDEOIO(V4L2:/dev/video7): can't open camera
    by index``); where our one line says what went wrong (:func:`load_image`,
    :class:`pi_table.capture.sources.OpenCVSource`) they are noise. The level is process-wide.
    """
    import cv2

    level = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    try:
        yield
    finally:
        cv2.utils.logging.setLogLevel(level)


def _image_path(path: str | Path) -> Path:
    """``path`` as a Path to an existing file: FileNotFoundError if there is none, ValueError for a folder."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        raise ValueError(f"not an image (a folder): {path}")
    return path


def load_image(path: str | Path) -> np.ndarray:
    """Read an image file as ``HxWx3 uint8 BGR``.

    A JPEG cut off before its end marker is decoded as far as it goes (the rest grey); a 16-bit
    image is scaled to 8 bits by its brightest value (10- and 12-bit camera data).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not an image OpenCV can decode, or its header claims more pixels
            than OpenCV decodes (``CV_IO_MAX_IMAGE_PIXELS``; names the path).
    """
    import cv2

    path = _image_path(path)
    data = np.fromfile(str(path), dtype=np.uint8)
    flags = cv2.IMREAD_COLOR | cv2.IMREAD_ANYDEPTH
    with quiet_opencv():  # a codec's WARN lines: ours is the one line
        try:
            image = cv2.imdecode(data, flags) if data.size else None
            if image is None and data[:2].tolist() == [0xFF, 0xD8] and data[-2:].tolist() != [0xFF, 0xD9]:
                # a JPEG cut off before its end marker (a copy or upload stopped short): decoded as far as
                # it goes, as a browser shows it, the rest grey
                image = cv2.imdecode(np.concatenate([data, np.array([0xFF, 0xD9], np.uint8)]), flags)
        except cv2.error as exc:  # OpenCV refuses a header of more than CV_IO_MAX_IMAGE_PIXELS (2**30) pixels
            if "CV_IO_MAX_IMAGE_PIXELS" in str(exc):
                raise ValueError(f"image too large to decode (more than 2^30 pixels): {path}") from None
            raise ValueError(f"not an image: {path} (OpenCV will not decode it: {exc.err})") from None
    if image is not None and image.dtype == np.uint16:
        # 16-bit files often hold 10- or 12-bit camera data (a test rig's camera): scaled by their
        # own brightest value, not by 65535, which left them 16 times too dark
        image = cv2.convertScaleAbs(image, alpha=255.0 / max(int(image.max()), 255))
    elif image is not None and image.dtype != np.uint8:
        image = None  # float images (32-bit TIFF): no scale to read them by
    if image is None:
        raise ValueError(f"not an image: {path}")
    return image


#: With ``--kinds``, a die whose probability lies less than this share in the kinds allowed is taken
#: for a die of another kind (left out of a photo's reading; ``unreadable`` as a crop). Below it the
#: restriction used to read e.g. a d8 crop as a sure d10 (7 of 16 d8 crops read with --kinds d10).
OTHER_KIND = 0.5


def check_image_file(path: str | Path) -> None:
    """Check that ``path`` is a file whose header OpenCV can decode, without decoding its pixels
    (``read`` checks a whole batch first and then decodes one image at a time).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a folder, an empty file, or a file that is not an image OpenCV reads (names the path).
    """
    import cv2

    path = _image_path(path)
    try:
        str(path).encode()  # OpenCV crashes on a file name that is not valid UTF-8: the full decode says then
        known = path.stat().st_size > 0 and cv2.haveImageReader(str(path))
    except (UnicodeEncodeError, cv2.error):
        known = path.stat().st_size > 0
    if not known:
        raise ValueError(f"not an image: {path}")


def crop_die(image: np.ndarray, box, size: int, margin: float) -> np.ndarray:
    """Square crop around a box, scaled to ``size x size``.

    Args:
        image: ``HxWx3 uint8 BGR``.
        box: (x0, y0, x1, y1) in pixels.
        size: output side in pixels.
        margin: crop side / the box's long side.

    Returns:
        ``size x size x 3 uint8 BGR``; parts outside the image repeat the border.

    A crop more than three times ``size`` (a phone's close-up of one die) is first warped at
    a side of ``ceil(side)`` pixels, then shrunk by pixel-area averaging: ``cv2.warpAffine``
    samples bilinearly whatever flag it is given, so shrinking a 600-pixel die to 48 in one warp
    would read one pixel in 12 and alias its pips and numerals away. Dice at the sizes the models
    were trained on (scale 1/3 and up: up to 110 pixels for the 48-pixel classifier crop at margin
    1.3) take the one warp, exactly as training cut them
    (:func:`pi_table.train.data.crop_rotated`).
    """
    import cv2

    x0, y0, x1, y1 = (float(v) for v in box)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    side = max(x1 - x0, y1 - y0, 4.0) * margin
    out = size if size * 3 >= side else math.ceil(side)
    scale = out / side
    # Affine map: crop centre -> output centre, side -> out (one warp, sub-pixel exact).
    m = np.array([[scale, 0, out / 2 - cx * scale], [0, scale, out / 2 - cy * scale]], dtype=np.float32)
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    crop = cv2.warpAffine(image, m, (out, out), flags=interp, borderMode=cv2.BORDER_REPLICATE)
    return crop if out == size else cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)


#: glibc's mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep the memory a frame's buffers free for the next frame: blocks under
    32 MiB come from the heap, never from a fresh ``mmap`` (``M_MMAP_THRESHOLD``), and up to 128 MiB
    freed at the heap's top stay mapped (``M_TRIM_THRESHOLD``; mallopt(3)). Process-wide and
    idempotent; :class:`DiceReader` calls it.

    A frame allocates a few MB of blobs, crops and model inputs (a 20-dice frame's cocked-die input
    alone is 20x5x64x64 float32, 1.6 MB). Left to glibc's sliding threshold, some processes served
    them from fresh pages every frame and others did not, from one run to the next of the same
    command: 7 of 10 runs of 100 reads of the bench's 20-dice frame took about 850 page faults a frame
    (``resource.getrusage``'s ``ru_minflt``) and read it in 42.1 to 43.4 ms (median), the other 3 none,
    in 39.9 to 41.8 ms. With these settings none of 6 runs faulted (40.0 to 41.4 ms); peak memory was the same
    (133 MB). ``pi-table bench`` processes happened not to fault either way (models/history/classifier.md,
    "Speed").

    Returns:
        Whether the C library took both settings (False where it has no ``mallopt``, e.g. not glibc).
    """
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) & bool(mallopt(_M_TRIM_THRESHOLD, 128 << 20))


@dataclass(frozen=True)
class Detection:
    """One die found by the detector: ``box`` (x0, y0, x1, y1) pixels, ``score`` 0..1;
    ``zoom_out``: how many times smaller than the first look the image was in the look that
    found it (1: the first look; :meth:`Detector.big_dice`'s looks: :data:`ZOOM_OUT` or one of
    :data:`FAR_ZOOM_OUTS`)."""

    box: tuple[float, float, float, float]
    score: float
    zoom_out: float = 1.0


def _session(path: Path, threads: int):
    """An onnxruntime session of ``path`` on ``threads`` intra-op threads (0: all cores), its
    pool's threads sleeping between runs; FileNotFoundError naming a missing model file.

    The reader runs up to five sessions one after another on each frame. onnxruntime's pool
    threads spin on the CPU after a run by default ("session.intra_op.allow_spinning",
    onnxruntime's "Thread management" guide), and a session's spinning threads took the cores
    from the next session's run: on this 2-core machine ``pi-table bench`` read a 20-dice frame
    on both cores in 126 ms with spinning and 50 to 64 ms without, two rounds each, minutes apart
    (one core, which has no pool threads: 75 to 86 ms either way; models/history/classifier.md, "Speed").
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"no model file {path} (train the models as the README's 'Models' says, into {Path(path).parent})")
    return _inference_session(str(path), threads)


def _inference_session(model: str | bytes, threads: int):
    """An onnxruntime CPU session of ``model`` (a file name, or the model's bytes) with
    :func:`_session`'s options: ``threads`` intra-op threads (0: all cores), pool threads asleep
    between runs, every graph optimisation."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(0, int(threads))
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _intersection(a, b) -> float:
    """Area (pixels^2) common to two (x0, y0, x1, y1) boxes."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return ix * iy


def iou(a, b) -> float:
    """Intersection over union of two (x0, y0, x1, y1) boxes."""
    inter = _intersection(a, b)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NxM float64 intersection over union of the (x0, y0, x1, y1) boxes of ``a`` (Nx4) and ``b``
    (Mx4), each pair as :func:`iou` computes it."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    ix = np.maximum(0.0, np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]))
    iy = np.maximum(0.0, np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]))
    inter = ix * iy
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]))[:, None] + ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def inside_share(a, b) -> float:
    """The share (0..1) of box ``a``'s area that lies inside box ``b``; boxes (x0, y0, x1, y1)."""
    return _intersection(a, b) / max(1e-9, (a[2] - a[0]) * (a[3] - a[1]))


class Detector:
    """Die boxes in a whole image (``models/detector.onnx``, see the module docstring).

    Args:
        path: the ONNX file. Input ``image`` float32 1x3xHxW RGB 0..1 (H, W multiples of 32);
            outputs ``heat`` 1x1xH/4xW/4 (0..1), ``size`` 1x2xH/4xW/4 (box w, h in input
            pixels / 4), ``offset`` 1x2xH/4xW/4 (cells). In place of ``size`` the model may give
            ``size_logit``, the same before its softplus (:func:`pi_table.train.nets.export_detector`
            writes that since 2026-11-27): the reader then takes the softplus of the peaks alone
            (:func:`softplus_at`), the same values bit for bit.
        input_size: long side, pixels, the image is scaled to.
        threshold: heat-map peak needed for a detection, 0..1.
        threads: onnxruntime intra-op threads (0 = all cores).
    """

    def __init__(self, path: Path, input_size: int = 320, threshold: float = 0.3, threads: int = 1):
        #: The model file (``pi-table bench --per-model`` names its time by it).
        self.path = Path(path)
        self.session = _session(path, threads)
        self.input_size = int(input_size)
        self.threshold = float(threshold)
        outputs = {o.name for o in self.session.get_outputs()}
        #: The size output the model gives: ``size``, or ``size_logit`` (before its softplus).
        self.size_output = "size_logit" if "size_logit" in outputs and "size" not in outputs else "size"

    def shrink(self, image: np.ndarray, input_size: int | None = None) -> np.ndarray:
        """``image`` (HxWx3 uint8 BGR) with its long side scaled to ``input_size`` pixels (default
        :attr:`input_size`), each side at least 32: what a look at that size sees before its canvas
        is padded (pixel-area averaging to shrink, bilinear to enlarge). HxWx3 uint8 BGR."""
        import cv2

        h, w = image.shape[:2]
        scale = (input_size or self.input_size) / max(h, w)
        nw, nh = max(32, round(w * scale)), max(32, round(h * scale))
        return cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)

    def prepare(self, image: np.ndarray, input_size: int | None = None,
                shrunk: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """``image`` (HxWx3 uint8 BGR) -> (1x3xH'xW' float32 RGB tensor, scale input/original),
        its long side scaled to ``input_size`` pixels (default :attr:`input_size`).
        ``shrunk``: :meth:`shrink`'s image at that size, when the caller has it already."""
        h, w = image.shape[:2]
        scale = (input_size or self.input_size) / max(h, w)
        resized = self.shrink(image, input_size) if shrunk is None else shrunk
        nh, nw = resized.shape[:2]
        pw, ph = -(-nw // 32) * 32, -(-nh // 32) * 32
        canvas = np.zeros((ph, pw, 3), np.uint8)
        canvas[:nh, :nw] = resized
        if pw > nw:
            canvas[:, nw:] = canvas[:, nw - 1 : nw]
        if ph > nh:
            canvas[nh:] = canvas[nh - 1 : nh]
        return _tensor(canvas), scale

    def prepare_zoomed_out(self, image: np.ndarray, zoom: float, shrunk: np.ndarray | None = None,
                           colour: np.ndarray | None = None) -> tuple[np.ndarray, float, float, float]:
        """``image`` (HxWx3 uint8 BGR) shrunk ``zoom`` times more than :meth:`prepare` shrinks it,
        centred on a canvas (a multiple of 32, at least 16 pixels around the image) filled with
        the median colour of the image's edge.

        ``shrunk`` (:meth:`shrink`'s image, the first look's) and ``colour`` (the edge's median,
        3 uint8 BGR), when the caller has them: the same pixels without working them out again.

        Returns:
            (1x3xH'xW' float32 RGB tensor, scale input/original, x and y of the image's corner
            on the canvas in input pixels).
        """
        import cv2

        h, w = image.shape[:2]
        full = self.input_size / max(h, w)
        scale = full / zoom
        nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
        # Through the first look's size: OpenCV's area resize is 3x faster in two steps here.
        size = (max(nw, round(w * full)), max(nh, round(h * full)))
        first = shrunk
        if first is None or first.shape[1::-1] != size:
            first = cv2.resize(image, size, interpolation=cv2.INTER_AREA if full < 1 else cv2.INTER_LINEAR)
        resized = cv2.resize(first, (nw, nh), interpolation=cv2.INTER_AREA)
        pw, ph = -(-(nw + 32) // 32) * 32, -(-(nh + 32) // 32) * 32
        ox, oy = (pw - nw) // 2, (ph - nh) // 2
        # (OpenCV's constant border: the same canvas as NumPy's fill and copy, 20 times faster)
        canvas = cv2.copyMakeBorder(resized, oy, ph - nh - oy, ox, pw - nw - ox, cv2.BORDER_CONSTANT,
                                    value=(_edge_colour(image) if colour is None else colour).tolist())
        return _tensor(canvas), scale, float(ox), float(oy)

    def detect(self, image: np.ndarray, shrunk: np.ndarray | None = None) -> list[Detection]:
        """Dice boxes in ``image`` (HxWx3 uint8 BGR), pixels of that image, best first.
        ``shrunk``: :meth:`shrink`'s image of it, when the caller has it already."""
        tensor, scale = self.prepare(image, shrunk=shrunk)
        return self._find(tensor, 4.0 / scale, image.shape[1], image.shape[0])

    def small_dice(self, image: np.ndarray, found: list[Detection],
                   sure_share: Callable[[list], float] | None = None) -> list[Detection]:
        """``found`` (:meth:`detect`'s boxes of ``image``, HxWx3 uint8 BGR), or, when its dice are
        small for the net, the boxes of a look at ``image`` enlarged so that they come out mid-range.
        ``sure_share``: given boxes (x0, y0, x1, y1, pixels of ``image``), the share (0..1) of them
        the classifier reads surely (:meth:`DiceReader.sure_share`); None takes the clusters' look
        on the detector's word alone.

        The net learned dice 12 to 90 input pixels across (log-uniform,
        ``pi_table.train.data.det_sample``) and misses more of them near the bottom of that range,
        where it also sizes them badly: a die under about 12 pixels comes out at 13 to 15 (the calib
        photos set in a border, models/history/detector.md "Smaller still"). While the median die of
        a look is under :data:`SMALL_DIE` input pixels, the image is looked at again scaled so that
        it comes out at :data:`MID_DIE`, at most :data:`MAX_ZOOM_IN` times the first look's size; a
        look's boxes replace the last's when it finds at least as many dice, and a look whose dice
        still come out small is enlarged again from what it measured. Held-out photos set in a
        plain border 1.5, 2 and 3 times their size (dice 13, 10 and 7 pixels across in the first
        look, as in a phone photo of the whole table; ``pi-table eval DIR --held-out --fixed-labels
        --border F``) read 95.8%, 95.8% and 94.9% of their dice right against 96.7% as taken (one
        enlarged look at most, under 14 pixels: 94.2%, 92.5%, 52.9%; without the clusters' look
        below, 3x read 75.5%). Costs nothing on frames whose dice are in range.

        **Clusters**: a tray seen small may show dice so small that the first look boxes clusters
        of them as dice of a size it knows, sure of none; the zoomed-out look then took the tray for
        one big die and every die in it was lost. A first look whose dice come out in range with no
        score reaching :data:`UNSURE_LOOK` is looked at again enlarged as if its dice came out at
        :data:`SMALL_DIE`, and that look is taken (and enlarged again while its dice come
        out small) only when it sees small dice surely: its median die under :data:`SMALL_DIE`, its
        best score at least :data:`UNSURE_LOOK`, and the classifier reading at least
        :data:`CLUSTER_SURE` of its dice surely (``sure_share``). A close-up's first look is unsure of
        its pips too; enlarged, they come out in range or stay unsure, and the first look stands. A
        detector unsure of dice on a desk it never learned sees their pips surely once enlarged, but
        the classifier reads none of them as a die. models/history/detector.md, "A tray taken for a
        die" and "Pips taken for clusters".
        """
        if not found:
            return found
        h, w = image.shape[:2]
        scale = self.input_size / max(h, w)
        median = float(np.median([_long_side(d.box) for d in found])) * scale
        # a look sure of no die, its boxes in range, may have boxed clusters of dice too small for it
        clusters = median >= SMALL_DIE and max(d.score for d in found) < UNSURE_LOOK
        zoom = 1.0
        while (median < SMALL_DIE or clusters) and zoom < MAX_ZOOM_IN:
            zoom = min(MAX_ZOOM_IN, zoom * MID_DIE / max(min(median, SMALL_DIE), 1.0))
            tensor, zscale = self.prepare(image, int(round(self.input_size * zoom)))
            again = self._find(tensor, 4.0 / zscale, w, h)
            if not again or len(again) < len(found):
                break
            again_median = float(np.median([_long_side(d.box) for d in again])) * zscale
            if clusters and (again_median >= SMALL_DIE or max(d.score for d in again) < UNSURE_LOOK):
                break  # enlarged, they are not small dice seen surely: a close-up's pips, unsure dice in range
            if clusters and sure_share is not None and sure_share([d.box for d in again]) < CLUSTER_SURE:
                break  # small things seen surely that the classifier does not read as dice: pips
            clusters = False
            found, median = again, again_median
        return found

    def _find(self, tensor: np.ndarray, stride: float, width: int, height: int) -> list[Detection]:
        """Run the net on ``tensor`` (1x3xHxW float32) and :func:`decode` its peaks; ``stride``:
        pixels of the frame the boxes are given in per output cell, clipped to ``width`` x ``height``."""
        heat, size, offset = self.session.run(["heat", self.size_output, "offset"], {"image": tensor})
        return decode(heat[0, 0], size[0], offset[0], self.threshold, stride, width, height,
                      size_activation=softplus_at if self.size_output == "size_logit" else None)

    def big_dice(self, image: np.ndarray, found: list[Detection],
                 shrunk: np.ndarray | None = None) -> list[tuple[Detection, list[int]]]:
        """Dice too big for :meth:`detect`, from a second look at ``image`` (HxWx3 uint8 BGR)
        :data:`ZOOM_OUT` times smaller (:meth:`prepare_zoomed_out`; its canvas is about a ninth
        of the first look's, its time about a quarter).

        The net learned dice 12 to 90 input pixels across (``pi_table.train.data.det_sample``)
        and splits a bigger one (a phone's close-up of one die) into pips and faces. The second
        look's dice at least :data:`LARGE_DIE` first-look input pixels across count, except those
        the first look found too at a size it knows (IoU > 0.5, at most 90 pixels), and so do
        those at least :data:`UNSEEN_LARGE_DIE` that the first look did not find at all; not those a
        look at the scale where they would be about 51 pixels across does not find again
        (:meth:`confirms`: the net sizes a die seen below its trained range badly, and a cluster
        of small dice can come out as one big box).

        **Far looks**: at :data:`ZOOM_OUT` the net often boxes only a die's top face or a group of
        its pips when the die fills a third to two thirds of the picture, and the reader then
        reports those parts as dice. When that look saw a box at least :data:`UNSEEN_LARGE_DIE`
        across with no first-look detection of score :data:`FAR_PART_SCORE` or more inside it
        (something big that is not a cluster of a tray's dice; most tray frames pay nothing more),
        the image is also looked at :data:`FAR_ZOOM_OUTS` times smaller (canvases of 128 and 96
        pixels), where such a die comes out whole. A die found only there counts if it is at most
        :data:`FAR_DIE` of the first look's input across (bigger ones in those looks are a whole
        tray seen as one die; the :data:`ZOOM_OUT` look finds a die that big), is not a die a look
        before took, and has no part the first look found with a score of :data:`FAR_PART_SCORE`
        or more; the reader then also drops it if the classifier reads even one of its parts as a
        sure die (:meth:`DiceReader._with_big_dice`). Rendered close-ups (``pi-table eval DIR
        --close-ups F``) lose about a sixth of their false dice; models/history/detector.md, "Far looks".

        Args:
            found: :meth:`detect`'s detections of the same image.
            shrunk: the first look's :meth:`shrink` of the image, if the caller has it (the
                zoomed-out look shrinks it further).

        Returns:
            (big die, its ``zoom_out`` the look's; indices into ``found`` of the boxes that are its
            parts: over half their area inside it and less than half its size): the
            :data:`ZOOM_OUT` look's, best first, then the far looks'.
        """
        h, w = image.shape[:2]
        scale = self.input_size / max(h, w)
        colour = _edge_colour(image)
        big = []
        hint = False  # the ZOOM_OUT look saw something big with no sure first-look die in it
        for zoom in (ZOOM_OUT, *FAR_ZOOM_OUTS):
            far = zoom != ZOOM_OUT
            if far and not hint:
                break
            tensor, zscale, ox, oy = self.prepare_zoomed_out(image, zoom, shrunk, colour)
            canvas = self._find(tensor, 4.0 / zscale, round(tensor.shape[3] / zscale), round(tensor.shape[2] / zscale))
            dx, dy = ox / zscale, oy / zscale
            for d in canvas:
                x0, y0, x1, y1 = d.box[0] - dx, d.box[1] - dy, d.box[2] - dx, d.box[3] - dy
                if not (0 <= (x0 + x1) / 2 <= w and 0 <= (y0 + y1) / 2 <= h):
                    continue  # centred on the plain canvas around the image: nothing there
                box = (max(0.0, x0), max(0.0, y0), min(float(w), x1), min(float(h), y1))
                side = _long_side(box) * scale
                if side < UNSEEN_LARGE_DIE or (far and side > FAR_DIE * self.input_size):
                    continue
                parts = [i for i, f in enumerate(found) if _part_of(f.box, box)]
                sure_part = any(found[i].score >= FAR_PART_SCORE for i in parts)  # a tray's die, not a pip
                if not far and not sure_part:
                    hint = True
                # one the first look found too at a size it knows; below LARGE_DIE, one it found at all
                if any(iou(f.box, box) > 0.5 and (_long_side(f.box) * scale <= LARGE_DIE or side < LARGE_DIE) for f in found):
                    continue
                # a far look's die: not one a nearer look took already, nor a cluster of dice the
                # first look found surely (the cheap test first, before the confirming look)
                if far and (sure_part or any(iou(b.box, box) > 0.5 for b, _ in big)):
                    continue
                if self.confirms(image, box, colour, shrunk):
                    big.append((Detection(box, d.score, zoom), parts))
        return big

    def confirms(self, image: np.ndarray, box, colour: np.ndarray | None = None,
                 shrunk: np.ndarray | None = None) -> bool:
        """Whether a look at the square window 2.5 times ``box`` (pixels of ``image``, HxWx3
        uint8 BGR) around its centre, scaled to 128 pixels (the box about 51 across, where the
        net sizes dice well), finds a die with IoU >= 0.5 to ``box``. Outside the image the
        window is the median colour of the image's edge (``colour``, 3 uint8 BGR, when the
        caller has it). ``shrunk``: :meth:`shrink`'s image of ``image``, when the caller has it;
        a window that comes out no sharper than that image is cut from it (pixel-area averaging
        in two steps, as :meth:`prepare_zoomed_out` shrinks: a big die's window shrinks from a
        quarter of the pixels)."""
        import cv2

        h, w = image.shape[:2]
        side = max(_long_side(box), 4.0) * 2.5
        wx0, wy0 = (box[0] + box[2]) / 2 - side / 2, (box[1] + box[3]) / 2 - side / 2
        px = 128
        f = px / side
        source, s = image, 1.0  # the image the window is cut from, and its pixels per pixel of image
        if shrunk is not None and f <= max(shrunk.shape[:2]) / max(h, w) < 1:
            source, s = shrunk, max(shrunk.shape[:2]) / max(h, w)
        sh, sw = source.shape[:2]
        sx0, sy0, sside, fs = wx0 * s, wy0 * s, side * s, f / s  # the window in the source's pixels
        ix0, iy0 = max(0, int(math.floor(sx0))), max(0, int(math.floor(sy0)))
        ix1, iy1 = min(sw, int(math.ceil(sx0 + sside))), min(sh, int(math.ceil(sy0 + sside)))
        colour = (_edge_colour(image) if colour is None else colour).tolist()
        canvas = None
        if ix1 - ix0 >= 2 and iy1 - iy0 >= 2:
            # ix0 is sx0 rounded down: inside the image the part starts up to a pixel before the window,
            # which must not place it at canvas row or column -1 (a negative slice: a broadcast error).
            cx0, cy0 = max(0, round((ix0 - sx0) * fs)), max(0, round((iy0 - sy0) * fs))
            cw, ch = min(px - cx0, max(1, round((ix1 - ix0) * fs))), min(px - cy0, max(1, round((iy1 - iy0) * fs)))
            if cw > 0 and ch > 0:
                part = cv2.resize(source[iy0:iy1, ix0:ix1], (cw, ch), interpolation=cv2.INTER_AREA if fs < 1 else cv2.INTER_LINEAR)
                canvas = cv2.copyMakeBorder(part, cy0, px - cy0 - ch, cx0, px - cx0 - cw, cv2.BORDER_CONSTANT, value=colour)
        if canvas is None:
            canvas = np.empty((px, px, 3), np.uint8)
            canvas[:] = colour
        for d in self._find(_tensor(canvas), 4.0 / f, round(px / f), round(px / f)):
            if iou((d.box[0] + wx0, d.box[1] + wy0, d.box[2] + wx0, d.box[3] + wy0), box) >= 0.5:
                return True
        return False


# The second, zoomed-out look (Detector.big_dice). The detector learned dice 12 to 90 input pixels
# across (pi_table.train.data.det_sample); 3x smaller, a die filling the whole frame (320 px)
# comes out at 107.
ZOOM_OUT = 3.0
# The far looks (Detector.big_dice, "Far looks"): when the ZOOM_OUT look saw something big with no
# first-look box of score FAR_PART_SCORE or more in it, the image this many times smaller than the
# first look as well; a die found only there is taken up to FAR_DIE of the first look's input
# across, if no part of it is such a box. Chosen on renders/fresh30's close-ups and trays (seed 292)
# and the bench frames, tested on another render set and the photos (models/history/detector.md).
FAR_ZOOM_OUTS = (4.0, 5.0)
FAR_DIE = 0.6
FAR_PART_SCORE = 0.8
LARGE_DIE = 90.0   # first-look input pixels: a zoomed-out find at least this big (beyond what the first look learned) is a big die
# ... and one at least this big that the first look did not find at all (it split it into faces and
# numerals). Chosen on the calib split alone (renders/big, renders/train and the photos' calib
# images; 50 read the same): renders/big calib 67.11% -> 68.79% read right, false dice 49.2 -> 32.2
# per 100 pictures, the other two unchanged. (At 64 with no such condition a cluster of touching
# rendered dice came out as one die.)
UNSEEN_LARGE_DIE = 64.0
# Small dice (Detector.small_dice): a look whose median die is under SMALL_DIE input pixels is taken
# again enlarged so that it comes out at MID_DIE, at most MAX_ZOOM_IN times in all (a 1280-pixel long
# side: about 16 first looks' time, on such frames only). 14/28 was chosen on 2026-11-25 on the calib
# renders and 80 training photos; 16, and a look enlarged again while its dice still come out small,
# on 2026-11-29 on the calib split alone (photos and renders/train, set in borders 1 to 3 times their
# size): the same reads as taken, no false dice added there, and more dice read at every border
# (models/history/detector.md, "Smaller still"; 18 added false dice).
SMALL_DIE = 16.0
MID_DIE = 28.0
MAX_ZOOM_IN = 4.0
# Clusters (Detector.small_dice): a first look whose dice come out in range but with no score of
# UNSURE_LOOK or more is enlarged as if its dice came out at SMALL_DIE, and the enlarged look taken
# when its dice come out small and one scores UNSURE_LOOK or more. The value was chosen on 2026-11-29
# on the calib split and train-split renders (the largest of 0.7/0.75/0.8/0.85 that left the calib
# photos and renders as taken, and the photos at 1.5x, as they read); the enlarged look's condition
# after a first rule failed on close-ups, whose first looks are unsure of their pips
# (models/history/detector.md, "A tray taken for a die").
UNSURE_LOOK = 0.75
# ... and taken only when the classifier reads at least CLUSTER_SURE of its dice surely (the
# threshold of a big die's parts, DiceReader._part_bar). Chosen on 2026-11-29 on matteop65's Train
# folder read by a model that never saw it (runs/lofo-nellbyler: in all 29 frames that took the look,
# none of its dice, the pips of dice the detector was unsure of, read surely), the calib photos at
# border 3 (the trays' looks: 67 to 87%) and renders/train --calib at border 3 (36%, 100%, and 0% for
# a frame of one die). It failed its first rule by one die read right and passed its second (a second
# leave-one-folder-out model: false dice 94.2 -> 47.7 per 100); models/history/detector.md, "Pips taken
# for clusters".
CLUSTER_SURE = 0.25


def _long_side(box) -> float:
    return max(box[2] - box[0], box[3] - box[1])


def _clear_of_edges(box, w: float, h: float, gap: float) -> bool:
    """Whether ``box`` (x0, y0, x1, y1, pixels) lies inside a ``w`` x ``h`` image with every edge more than
    ``gap`` pixels from the image's (a box cut by the image's edge is part of a die, a neighbour's)."""
    return box[0] > gap and box[1] > gap and box[2] < w - gap and box[3] < h - gap


def _centre_box(boxes, w: float, h: float):
    """The largest of ``boxes`` (x0, y0, x1, y1, pixels) that covers the centre of a ``w`` x ``h``
    image, or None."""
    return max((b for b in boxes if b[0] <= w / 2 <= b[2] and b[1] <= h / 2 <= b[3]), key=_long_side, default=None)


def _gap(a, b) -> float:
    """The gap between boxes ``a`` and ``b`` (x0, y0, x1, y1): the larger of the horizontal and vertical
    distances between their edges, 0 when they touch or overlap (pixels)."""
    return max(0.0, max(a[0], b[0]) - min(a[2], b[2]), max(a[1], b[1]) - min(a[3], b[3]))


def _groups_within(boxes, members, gap: float) -> list[list[int]]:
    """``members`` (indices into ``boxes``, x0, y0, x1, y1 pixels) grouped: two lie in one group when
    a chain of members joins them, each link within ``gap`` times the smaller box's long side
    (:func:`_gap`); a member near none is a group of one. Returns the groups as lists of indices."""
    group = {i: i for i in members}

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for a, b in itertools.combinations(members, 2):
        if _gap(boxes[a], boxes[b]) <= gap * min(_long_side(boxes[a]), _long_side(boxes[b])):
            group[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in members:
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _too_big(box, sure_sizes: list[float]) -> bool:
    """Whether ``box`` (x0, y0, x1, y1 pixels) is more than :data:`JOIN_SIZE` times the largest of ``sure_sizes``
    (the long sides of a frame's sure dice, pixels) across: touching dice read as one, not one die. False
    without sure dice."""
    return bool(sure_sizes) and _long_side(box) > JOIN_SIZE * max(sure_sizes)


def union_box(boxes) -> tuple[float, float, float, float]:
    """The smallest box (x0, y0, x1, y1 pixels) holding every one of ``boxes`` (one or more, each x0, y0,
    x1, y1). Raises ValueError for no boxes."""
    return min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)


def _grown_square(box, factor: float, shape) -> tuple[float, float, float, float]:
    """The square ``factor`` times ``box``'s long side about its centre (x0, y0, x1, y1, pixels), clipped
    to an image of ``shape`` (H, W, ...)."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    half = _long_side(box) * factor / 2
    return (max(0.0, cx - half), max(0.0, cy - half), min(float(shape[1]), cx + half), min(float(shape[0]), cy + half))


def _area(box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _part_of(part, whole) -> bool:
    """Whether box ``part`` lies over half inside box ``whole`` and is less than half its area."""
    return inside_share(part, whole) > 0.5 and _area(part) < 0.5 * _area(whole)


def _edge_colour(image: np.ndarray) -> np.ndarray:
    """The median BGR colour (3 uint8) of the pixels on an HxWx3 image's edge."""
    edge = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])
    return np.median(edge, axis=0).astype(np.uint8)


def _tensor(canvas: np.ndarray) -> np.ndarray:
    """HxWx3 uint8 BGR -> 1x3xHxW float32 RGB 0..1, contiguous (:func:`_chw`)."""
    return _chw(canvas[None])


def _chw(images, planes: int = 3, size: int = 0) -> np.ndarray:
    """N HxWx3 uint8 BGR images (a list of one size, or an NxHxWx3 array) -> NxPxHxW float32,
    contiguous: planes 0-2 RGB 0..1, the rest (``planes`` > 3) not set, for the caller to fill.
    Each plane is NumPy's uint8 x float32(1/255): the same values as NumPy's swap, transpose and
    scale and as OpenCV's blobFromImages, bit for bit, in under half blobFromImages' time (a 20-die
    batch of 48-pixel crops 0.50 -> 0.19 ms on one core here, throwaway timing). OpenCV's
    ``split`` first copies each colour into a plane of its own, so that the scaling reads
    contiguous bytes: the same values, and about a sixth less time over a 20-dice frame's five
    batches (0.96 -> 0.79 ms, throwaway timing). ``size``: H and W of an empty list's 0xPxHxW."""
    import cv2

    stack = images if isinstance(images, np.ndarray) else (np.stack(images) if len(images) else
                                                            np.zeros((0, size, size, 3), np.uint8))
    n, h, w = stack.shape[:3]
    out = np.empty((n, planes, h, w), np.float32)
    if n and h and w:
        bgr = cv2.split(np.ascontiguousarray(stack).reshape(n * h, w, 3))
        for c in range(3):
            np.multiply(bgr[2 - c].reshape(n, h, w), np.float32(1 / 255), out=out[:, c], dtype=np.float32)
    return out


def decode(heat: np.ndarray, size: np.ndarray, offset: np.ndarray, threshold: float, stride: float,
           width: int, height: int, nms_iou: float = 0.5, size_activation=None) -> list[Detection]:
    """Heat-map peaks -> boxes.

    Args:
        heat: HxW float32 0..1; size, offset: 2xHxW float32 (cells); threshold: peak score;
        stride: original-image pixels per cell; width, height: image size for clipping.
        size_activation: applied to the 2xK float32 sizes at the K peaks (e.g. :func:`softplus_at`
            when ``size`` holds the values before it), or None when ``size`` is final.
    """
    import cv2

    peaks = (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8))) & (heat >= threshold)
    ys, xs = np.nonzero(peaks)
    order = np.argsort(-heat[ys, xs])
    ys, xs = ys[order], xs[order]
    cx = (xs + offset[0, ys, xs]) * stride
    cy = (ys + offset[1, ys, xs]) * stride
    wh = size[:, ys, xs]
    if size_activation is not None:
        wh = size_activation(wh)
    bw, bh = wh[0] * stride, wh[1] * stride
    boxes = np.stack([np.maximum(0.0, cx - bw / 2), np.maximum(0.0, cy - bh / 2),
                      np.minimum(float(width), cx + bw / 2), np.minimum(float(height), cy + bh / 2)], axis=1)
    keep = (boxes[:, 2] - boxes[:, 0] >= 2) & (boxes[:, 3] - boxes[:, 1] >= 2)
    ys, xs, boxes = ys[keep], xs[keep], boxes[keep]
    overlaps = iou_matrix(boxes, boxes) > nms_iou
    # Greedy non-maximum suppression, best peak first: a box overlapping a kept one by more than
    # nms_iou is dropped. (Python floats taken once, by tolist: the same values as float() of
    # each element, in about a third less time: 0.32 -> 0.22 ms for 20 dice, throwaway timing.)
    rows, scores = boxes.tolist(), heat[ys, xs].tolist()
    suppressed = np.zeros(len(rows), bool)
    found: list[Detection] = []
    for i, row in enumerate(rows):
        if suppressed[i]:
            continue
        suppressed |= overlaps[i]
        found.append(Detection(tuple(row), scores[i]))
    return found


#: onnxruntime's ``Softplus`` as an ONNX model of one node: input ``x``, output ``y``, float32 vectors,
#: opset 17, IR version 8. These are ``onnx.helper``'s bytes for it (tests/test_train_data.py
#: builds it again and compares), kept here so that the reader needs no ``onnx`` package.
_SOFTPLUS_ONNX = (b"\x08\x08\x12\x08pi_table:@\n\x10\n\x01x\x12\x01y\"\x08Softplus\x12\x08softplusZ\x10\n\x01x"
                  b"\x12\x0b\n\t\x08\x01\x12\x05\n\x03\x12\x01nb\x10\n\x01y\x12\x0b\n\t\x08\x01\x12\x05\n\x03\x12\x01nB\x04\n\x00\x10\x11")
#: :func:`softplus_at` pads its values to a multiple of this many.
SOFTPLUS_PAD = 64
_softplus_session = None


def softplus_at(values: np.ndarray) -> np.ndarray:
    """softplus(values) (float32, any shape) as the detector's graph computed it on its whole size
    map: by onnxruntime's ``Softplus`` on one thread, the values padded with zeros to a multiple of
    :data:`SOFTPLUS_PAD`.

    Why: the detector's softplus took 0.34 ms of its 5 ms run on a 320-pixel look here (onnxruntime's
    profiler), for the 2x80x80 cells of which a frame's boxes read only the peaks'. onnxruntime
    computes it with Eigen's vectorised exp and log, in packets of up to 16 floats, and a
    shorter tail another way that can differ in the last bits: padded, every value goes through
    the packets, as in the whole map (12800 values, a multiple of 64). Checked bit for bit on
    14640 values of 120 photos and renders (a throwaway script) and in tests/test_vision.py."""
    global _softplus_session
    if _softplus_session is None:
        _softplus_session = _inference_session(_SOFTPLUS_ONNX, 1)
    flat = np.asarray(values, np.float32).ravel()
    if not flat.size:
        return np.asarray(values, np.float32).copy()
    padded = np.zeros(-(-flat.size // SOFTPLUS_PAD) * SOFTPLUS_PAD, np.float32)
    padded[: flat.size] = flat
    return _softplus_session.run(["y"], {"x": padded})[0][: flat.size].reshape(np.shape(values))


class Classifier:
    """Top face of cropped dice (``models/classifier.onnx``, see the module docstring).

    Args:
        path: ONNX file, or a list of ONNX files of the same inputs and outputs: an ensemble
            whose raw scores (and boxes) are averaged (Lakshminarayanan et al. 2017, "Simple and
            Scalable Predictive Uncertainty Estimation using Deep Ensembles"). Input ``crops``
            float32 Nx3xSxS RGB 0..1, output ``logits`` NxC.
        classes: C class names, ``KIND:FACE`` or ``none``.
        temperature: calibration temperature (> 0), of the averaged scores.
        crop_size: S, pixels; margin: crop side / box long side.
        shape_temperature: the temperature (> 0) of a row whose top raw score is a numbered
            shape class (``d8:*``, ``d10:*``), or None for ``temperature`` everywhere: top-label
            calibration (Gupta and Ramdas 2022, "Top-label calibration and multiclass-to-binary
            reductions"). ``temperature`` is fitted on real d6 photos, where no row tops at a
            numbered shape; the numbered shapes' own is fitted on calib renders, on which the
            classifier is far surer of a shape than that temperature says (module docstring,
            "Classification").
        cascade: for an ensemble, the calibrated probability (0..1] at or above which the first
            member's best class stands alone in :meth:`logits_and_boxes` (the first read of each
            die): the other members read only the crops it is less sure of, and their scores are
            averaged with its scores as without a cascade. Only a d6 face stands alone: a crop whose
            best class is a numbered shape (its numeral is read from the crop the pair's box head
            places) or ``none`` goes to every member. None: every member reads every crop.
            A confidence-gated cascade of an ensemble's members (Wang et al. 2022, "Wisdom of
            Committees: An Overlooked Approach to Faster and More Accurate Models"), for speed:
            on a tray of sure dice the second member's run is saved (module docstring, 2).

    Raises:
        FileNotFoundError: a model file is missing.
        ValueError: no model file, a temperature that is not a positive number, a cascade
            outside (0, 1], or a model whose scores a crop are not one per class.
    """

    def __init__(self, path: Path | list[Path], classes: list[str], temperature: float = 1.0, crop_size: int = 48,
                 margin: float = 1.3, threads: int = 1, shape_temperature: float | None = None,
                 cascade: float | None = None):
        paths = list(path) if isinstance(path, (list, tuple)) else [path]
        if not paths:
            raise ValueError("a classifier needs at least one model file")
        #: The model files, one per session (an ensemble's members).
        self.paths = [Path(p) for p in paths]
        self.sessions = [_session(p, threads) for p in paths]
        self.classes = list(classes)
        for p, s in zip(self.paths, self.sessions):
            scores = {o.name: o.shape for o in s.get_outputs()}.get("logits")
            if scores and len(scores) == 2 and isinstance(scores[1], int) and scores[1] != len(self.classes):
                raise ValueError(f"{p} gives {scores[1]} scores a crop, its settings name {len(self.classes)} classes")
        self.temperature = float(temperature)
        self.shape_temperature = None if shape_temperature is None else float(shape_temperature)
        for name, value in (("temperature", self.temperature), ("shape_temperature", self.shape_temperature)):
            if value is not None and not (0 < value < math.inf):
                raise ValueError(f"{name} must be > 0, got {value}")
        self._shapes = np.array([c.endswith(":*") for c in self.classes], bool)
        #: The classes whose sure rows the cascade leaves to the first member: a die's face read here
        #: (a d6's); not a numbered shape, whose numeral is read from the crop the pair's box head
        #: places, nor ``none``.
        self._skips = ~self._shapes & (np.array(self.classes) != "none")
        self.crop_size = int(crop_size)
        self.margin = float(margin)
        self._refines = all("box" in {o.name for o in s.get_outputs()} for s in self.sessions)
        #: See ``cascade`` above; None when off.
        try:
            self.cascade = None if cascade is None else float(cascade)
        except (TypeError, ValueError):
            self.cascade = math.nan
        if self.cascade is not None and not 0 < self.cascade <= 1:
            raise ValueError(f"cascade must be in (0, 1], got {cascade!r}")

    def crops(self, image: np.ndarray, boxes, planes: int = 3) -> np.ndarray:
        """NxPxSxS float32 crops of ``image`` (HxWx3 uint8 BGR) around ``boxes``: planes 0-2 RGB
        0..1; ``planes`` - 3 more left for the caller to fill (:func:`_chw`)."""
        return _chw([crop_die(image, b, self.crop_size, self.margin) for b in boxes], planes, self.crop_size)

    @property
    def refines(self) -> bool:
        """True when the model also outputs ``box`` (Nx4: the die's box in the crop's frame)."""
        return self._refines

    def logits(self, crops: np.ndarray) -> np.ndarray:
        """NxC raw class scores (before temperature) of Nx3xSxS crops."""
        return self._run(["logits"], crops)[0]

    def _run(self, outputs: list[str], crops: np.ndarray, cascade: bool = False) -> list[np.ndarray]:
        """``outputs`` of every model of the ensemble for ``crops``, each averaged over the models;
        with ``cascade`` (and :attr:`cascade` set), the rows whose first-member ``logits`` give a
        calibrated best class at or above :attr:`cascade` that is a die's face (a d6's; not a
        numbered shape, nor ``none``) keep the first member's outputs and the other members read
        only the rest. ``outputs`` must include ``logits`` for a cascade."""
        if cascade and self.cascade is not None and len(self.sessions) > 1 and len(crops):
            first = self.sessions[0].run(outputs, {"crops": crops})
            p = self.calibrated(first[outputs.index("logits")])
            unsure = (p.max(axis=1) < self.cascade) | ~self._skips[p.argmax(axis=1)]
            if not unsure.any():
                return first
            rest = [s.run(outputs, {"crops": np.ascontiguousarray(crops[unsure])}) for s in self.sessions[1:]]
            merged = [out.copy() for out in first]
            for i in range(len(outputs)):
                merged[i][unsure] = np.mean([first[i][unsure]] + [r[i] for r in rest], axis=0)
            return merged
        runs = [s.run(outputs, {"crops": crops}) for s in self.sessions]
        if len(runs) == 1:
            return runs[0]
        return [np.mean([r[i] for r in runs], axis=0) for i in range(len(outputs))]

    def logits_and_boxes(self, image: np.ndarray, boxes) -> tuple[np.ndarray, list]:
        """Raw class scores (NxC float32) of the crops around ``boxes``, and the boxes as the
        model's box head places them (same boxes back when the model has no box head).

        The box head predicts (dx, dy, lw, lh): the die's centre offset from the crop centre
        in crop sides and the log of its width and height in crop sides (see
        :class:`pi_table.train.nets.ClassifierNet`).
        """
        crops = self.crops(image, boxes)
        if not self.refines:
            return self._run(["logits"], crops, cascade=True)[0], list(boxes)
        logits, out = self._run(["logits", "box"], crops, cascade=True)
        refined = []
        for (x0, y0, x1, y1), (dx, dy, lw, lh) in zip(boxes, out.astype(np.float64)):
            side = max(x1 - x0, y1 - y0, 4.0) * self.margin
            cx, cy = (x0 + x1) / 2 + dx * side, (y0 + y1) / 2 + dy * side
            w, h = np.exp(np.clip([lw, lh], -4, 1)) * side
            refined.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
        return logits, refined

    def calibrated(self, logits: np.ndarray, top_label: bool = True) -> np.ndarray:
        """NxC float64 calibrated probabilities from NxC raw scores: softmax at the temperature,
        at :attr:`shape_temperature` for the rows whose top score is a numbered shape class
        (unless ``top_label`` is False: one temperature for every row)."""
        if len(logits) == 0:
            return np.zeros((0, len(self.classes)), np.float64)
        temperature = np.full((len(logits), 1), self.temperature)
        if top_label and self.shape_temperature is not None and self._shapes.any():
            temperature[self._shapes[np.argmax(logits, axis=1)]] = self.shape_temperature
        logits = logits.astype(np.float64) / temperature
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)


def wrap_sessions(reader, wrap) -> None:
    """Replace each onnxruntime session of ``reader`` (a :class:`DiceReader`: detectors,
    classifiers, numeral, d6 numeral and cocked-die models) by ``wrap(session, path)``, ``path`` its model
    file, in place: for timing (``pi-table bench --per-model``) or remembering reads
    (the calibration's ``RowMemo``)."""
    for det in (reader.detector, reader.close_up_detector):
        if det is not None:
            det.session = wrap(det.session, det.path)
    for model in (reader.classifier, reader.numerals, reader.d6_numerals, reader.cocked):
        if model is not None:
            model.sessions = [wrap(s, p) for s, p in zip(model.sessions, model.paths)]


#: A numbered die's shape class in the classifier: ``d8:*``, ``d10:*`` (d10-tens share the d10's shape).
def shape_class(kind: str) -> str:
    """The classifier's shape class for a numbered die of ``kind`` ("d10-tens" -> "d10:*")."""
    return kind.split("-")[0] + ":*"


#: A big die's part the classifier calls a numbered shape is a sure small die (a cluster's, not a
#: part: :meth:`DiceReader._with_big_dice`) at this probability at least: the rule was chosen when
#: the numbered kinds' thresholds were 0.96 to 0.99; at the lower ones the shape temperature allows,
#: a big real d6's faces passed for d10s and the die was lost (held-out photo close-ups).
NUMBERED_PART_SURE = 0.99

#: The threshold of a numbered die seen whole by the numeral model (module docstring, "Big numbered dice";
#: :meth:`DiceReader.status_threshold`). The kinds' thresholds (0.97-0.98 as shipped, 0.99 before 2026-12-02; ``--numbered-floor``) are
#: set by the dice read wrong with confidence, and those are small dice: on ten rendered test sets spent
#: by earlier rules (seeds 470-478 and 480, valid split: held-out fonts and colours), the 222 numbered dice
#: at least 70 pixels across left unreadable at 0.93 to 0.99 were all read right, while below 70 some were
#: not; then tested by a rule on new seeds (models/history/numerals.md, "Big numbered dice: a threshold of
#: their own").
BIG_NUMBERED_THRESHOLD = 0.93

#: A die's part (:meth:`DiceReader._without_parts`): this share of its box inside a die's box ...
PART_INSIDE = 0.5
#: ... at least this many times as big across. Both were 0.8 and 2.0 until 2026-11-26: a numeral
#: or pip at a close-up die's rim lies partly outside its box. Chosen on calib splits only (dropped
#: 7 of renders/big's 31 false dice, 1 of renders/train's 5, no true die there or in the calib
#: photos); then on new renders (renders/fresh4, fresh4-big, seeds 51 and 52) false dice 255 -> 202,
#: the same 3273 dice read right and 14 wrong at ok; held-out photos unchanged (models/history/detector.md).
PART_SIZE = 1.5
#: A second box on one die (:meth:`DiceReader.read`'s last :meth:`DiceReader._without_parts`): a die not surely
#: read lying at least this share inside another die's box ...
NEST_INSIDE = 0.75
#: ... at least this many times as big across (models/history/detector.md, "A second box inside one die").
NEST_SIZE = 1.2
#: A part at a die's rim (:meth:`DiceReader.read`, after the parts are joined): a die not surely read lying at least this share
#: inside another die's box grown :data:`RIM_GROW` times about its centre ...
RIM_INSIDE = 0.9
#: ... that die at least this many times as big across: a side face's numeral or pips just outside the box of a
#: close-up die's top face (models/history/detector.md, "Parts at a die's rim").
RIM_SIZE = 2.0
#: See :data:`RIM_INSIDE`.
RIM_GROW = 1.6
#: A numeral taken for a d6 (:meth:`DiceReader.read`'s last step): a die read as a d6, sure or not, lying at least
#: this share inside the box of a d8 or d10 (either kind, any status) at least :data:`PART_SIZE` times as big across:
#: a big numbered die's own numeral ("00", "10") boxed and read as pips (models/history/detector.md, "A numeral
#: taken for a d6, again").
NUMERAL_INSIDE = 0.9


def _lies_in(small, big, size: float = PART_SIZE, inside: float = PART_INSIDE, grow: float = 1.0) -> bool:
    """Whether box ``small`` lies at least ``inside`` of its area inside box ``big`` grown ``grow`` times about its
    centre, ``big`` at least ``size`` times as big across (boxes x0, y0, x1, y1 in pixels): a part of a die
    (:data:`PART_INSIDE`, :data:`PART_SIZE`), a second box on it (:data:`NEST_INSIDE`, :data:`NEST_SIZE`), or a
    part at its rim (:data:`RIM_INSIDE`, :data:`RIM_SIZE`, :data:`RIM_GROW`)."""
    if _long_side(big) < size * _long_side(small):
        return False
    return inside_share(small, big if grow == 1.0 else _shrink(big, grow)) >= inside


def _numeral_as_d6(die: Die, numbered: Die) -> bool:
    """Whether ``die``, read as a d6, lies at least :data:`NUMERAL_INSIDE` inside the box of ``numbered``, a d8 or d10
    die (any status) at least :data:`PART_SIZE` times as big across: that die's numeral read as pips."""
    return die.kind == "d6" and numbered.kind != "d6" and _lies_in(die.box, numbered.box, PART_SIZE, NUMERAL_INSIDE)


def _without_numerals_as_d6(dice: list[Die]) -> list[Die]:
    """``dice`` less each die read as a d6 (any status: a d6 read ``ok`` too) whose box lies at least
    :data:`NUMERAL_INSIDE` inside the box of a d8 or d10 die (``d8``, ``d10``, ``d10-tens``; any status) at least
    :data:`PART_SIZE` times as big across. Two dice on a table seen from above do not lie one inside the other; a
    big numbered die's numeral ("00", "10", "6") boxed apart and read as pips does (models/history/detector.md,
    "A numeral taken for a d6, again")."""
    numbered = [d for d in dice if d.kind != "d6"]
    return [d for d in dice if not any(_numeral_as_d6(d, n) for n in numbered)]


# Boxes whose numbered-shape probability is below this are not read by the numeral model.
NUMERAL_MIN = 0.02
#: The d6 numeral model (``python3 -m pi_table.train.numerals --d6``) has classes ``d6:1`` .. ``d6:6`` and this one,
#: a d6 printed with pips: no numeral to read (:func:`join_d6_numerals`).
D6_PIPS = "d6:pips"


def box_moved(before, after) -> float:
    """How far box ``after`` lies from ``before`` (each x0, y0, x1, y1 pixels): its largest corner
    coordinate's change over ``before``'s long side (at least 1 pixel), 0.0 for the same box."""
    side = max(before[2] - before[0], before[3] - before[1], 1.0)
    return float(max(abs(a - b) for a, b in zip(after, before)) / side)


def join_numerals(p_main: np.ndarray, main_classes: list[str], q: np.ndarray | None, rows, numeral_classes: list[str],
                  classes: list[str]) -> np.ndarray:
    """Join the classifier's and the numeral model's probabilities (module docstring, "Numerals").

    Args:
        p_main: NxC float probabilities over ``main_classes`` (``KIND:FACE``, shape classes
            ``KIND:*``, ``none``).
        q: RxF float probabilities over ``numeral_classes`` for the boxes ``rows`` (R indices
            into N), or None.
        classes: the K output classes (every ``KIND:FACE`` of either model, then ``none``).

    Returns:
        NxK float64: classes of ``main_classes`` keep their probability; a numeral class c of
        shape s gets P(shape) * m_s q_c / sum over numeral classes of m q, with P(shape) the
        sum of the shape classes' probabilities. Rows not in ``rows`` give numerals 0.
    """
    main = {c: i for i, c in enumerate(main_classes)}
    p = np.zeros((len(p_main), len(classes)), np.float64)
    for j, c in enumerate(classes):
        if c in main:
            p[:, j] = p_main[:, main[c]]
    if q is None or len(rows) == 0:
        return p
    shapes = [main.get(shape_class(c.split(":")[0])) for c in numeral_classes]
    m = np.stack([p_main[rows, i] if i is not None else np.zeros(len(rows)) for i in shapes], axis=1)  # R x F
    joint = np.asarray(q, np.float64) * m
    norm = joint.sum(axis=1, keepdims=True)
    mass = p_main[rows][:, [i for c, i in main.items() if c.endswith(":*")]].sum(axis=1, keepdims=True)
    cols = [classes.index(c) for c in numeral_classes]
    p[np.ix_(rows, cols)] = mass * joint / np.where(norm > 0, norm, 1.0)
    return p


def join_d6_numerals(p: np.ndarray, classes: list[str], q: np.ndarray, rows, numeral_classes: list[str]) -> np.ndarray:
    """``p`` (NxK probabilities over ``classes``) with the d6 faces of ``rows`` read again with the numeral
    model's view of them (module docstring, "Numerals"): a d6 printed with numerals, which the classifier,
    a reader of pips, reads unsure, and often takes for a numbered die's shape.

    Args:
        p: NxK float probabilities; its d6 faces (``d6:1`` .. ``d6:6``) sum to D, the chance of a d6, and each
            numbered kind's faces to that kind's chance.
        q: RxF float probabilities over ``numeral_classes`` for the boxes ``rows`` (R indices into N),
            which must hold :data:`D6_PIPS` (else ``p`` is returned as it was).

    Returns:
        NxK float64. For each of ``rows``, the kinds both models read (d6, and each numbered kind with
        numerals in ``numeral_classes``) are joined as a product of experts (Hinton 2002), as the numerals
        are (:func:`join_numerals`): each kind's chance becomes proportional to the classifier's times the
        numeral model's (for d6, q's d6 numerals and :data:`D6_PIPS`), the chance of a die of those kinds
        kept: the classifier sees the die's shape, the numeral model its face, and a d6's numeral is not a
        d8's. Within d6, face F gets (q(``d6:F``) + q(:data:`D6_PIPS`) x c(F)) / q(d6), c(F) the classifier's
        share of D: the numeral read where the face is a d6's numeral, the classifier's where it is pips
        (models/history/numerals.md, "d6 printed with numerals"). A numbered kind's faces keep their shares;
        ``none`` and the kinds q does not read stay as they were; other rows unchanged.
    """
    out = np.array(p, np.float64)
    faces = [c for c in classes if c.startswith("d6:")]
    if not len(rows) or D6_PIPS not in numeral_classes or not faces:
        return out
    rows = np.asarray(rows)
    q = np.asarray(q, np.float64)
    total = q.sum(axis=1)
    q = q / np.where(total > 0, total, 1.0)[:, None]
    kind_of = [c.split(":")[0] for c in classes]
    q_kind_of = [c.split(":")[0] for c in numeral_classes]
    kinds = [k for k in dict.fromkeys(kind_of) if k != "none" and k in q_kind_of]
    cols = {k: [j for j, c in enumerate(kind_of) if c == k] for k in kinds}
    mass = np.stack([out[np.ix_(rows, cols[k])].sum(axis=1) for k in kinds], axis=1)  # R x kinds: the classifier's
    votes = np.stack([q[:, [i for i, c in enumerate(q_kind_of) if c == k]].sum(axis=1) for k in kinds], axis=1)
    joint = mass * votes
    norm = joint.sum(axis=1, keepdims=True)
    joined = np.where(norm > 0, mass.sum(axis=1, keepdims=True) * joint / np.where(norm > 0, norm, 1.0), mass)
    for n, k in enumerate(kinds):
        kind_mass = mass[:, n:n + 1]
        within = out[np.ix_(rows, cols[k])] / np.where(kind_mass > 0, kind_mass, 1.0)  # the classifier's shares
        if k == "d6":  # the numeral where q reads a d6's, the classifier's shares where it reads pips
            numerals = np.stack([q[:, numeral_classes.index(c)] if c in numeral_classes else np.zeros(len(rows))
                                 for c in faces], axis=1)  # R x faces
            vote = votes[:, n:n + 1]
            mixed = numerals + q[:, [numeral_classes.index(D6_PIPS)]] * within
            within = np.where(vote > 0, mixed / np.where(vote > 0, vote, 1.0), within)
        out[np.ix_(rows, cols[k])] = joined[:, n:n + 1] * within
    return out


def centre_offset(box, width: int, height: int) -> tuple[float, float]:
    """A box's (x0, y0, x1, y1 pixels) centre minus the centre of a ``width`` x ``height`` image,
    in image long sides (x right, y down): where a die lies from a camera looking down at the
    image centre."""
    long = float(max(width, height, 1))
    return (((box[0] + box[2]) / 2 - width / 2) / long, ((box[1] + box[3]) / 2 - height / 2) / long)


def with_position(crops: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Nx3xSxS float32 crops with two constant planes appended, each die's offset from the image
    centre (Nx2 float32, in image long sides, x right and y down, as seen in the crop): Nx5xSxS
    float32, the cocked model's input (CoordConv, Liu et al. 2018)."""
    n, c, h, w = crops.shape
    batch = np.empty((n, c + 2, h, w), np.float32)
    batch[:, :c] = crops
    return set_position(batch, offsets)


def set_position(batch: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``batch`` (NxPxSxS float32) with its last two planes set to each die's offset from the image
    centre (Nx2, as :func:`with_position` takes them), in place; returns ``batch``."""
    batch[:, -2:] = np.asarray(offsets, np.float32).reshape(len(batch), 2, 1, 1)
    return batch


def reading_order(boxes) -> list[int]:
    """Indices of ``boxes`` top to bottom in rows about one die high, left to right in a row."""
    if not boxes:
        return []
    heights = sorted(b[3] - b[1] for b in boxes)
    row = max(heights[len(heights) // 2], 1.0)
    return sorted(range(len(boxes)), key=lambda i: (round(((boxes[i][1] + boxes[i][3]) / 2) / row), boxes[i][0]))


class DiceReader:
    """The vision stage: an image in, a :class:`~pi_table.vision.dice.Reading` out.

    Args:
        models: folder with ``reader.json``, ``detector.onnx``, ``classifier.onnx``
            (default :func:`models_dir`).
        threads: onnxruntime threads per model (1 on a busy Pi; 0 = all cores).

    Raises:
        FileNotFoundError: a model file is missing (the message says how to train one).
    """

    def __init__(self, models: str | Path | None = None, threads: int = 1):
        keep_freed_memory()  # a frame's buffers reused, not page-faulted in afresh each frame
        self.models = Path(models) if models else models_dir()
        config_path = self.models / "reader.json"
        if not config_path.is_file():
            raise FileNotFoundError(f"no reader model in {self.models} (train one: python3 -m pi_table.train --out {self.models})")
        try:
            self.config = json.loads(config_path.read_text())
        except ValueError as e:
            raise ValueError(f"{config_path} is not JSON ({e})") from None
        try:
            self._configure(config_path, threads)
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{config_path} is not a reader's settings ({type(e).__name__}: {e})") from None
        except ValueError as e:  # a value of the right type out of range, or text where a number goes
            if str(config_path) in str(e):
                raise
            raise ValueError(f"{config_path} is not a reader's settings ({e})") from None

    def _configure(self, config_path: Path, threads: int) -> None:
        """The models and settings ``self.config`` (``reader.json``) names; KeyError or TypeError
        where it lacks one or has one of the wrong type."""
        det, cls = self.config["detector"], self.config["classifier"]
        self.detector = Detector(self.models / det["file"], det["input"], det["threshold"], threads)
        close_up = det.get("close_up_file")
        #: The detector of the zoomed-out second look for dice too big for the first
        #: (``reader.json``'s ``detector.close_up_file``; module docstring, "Big dice"), or None: the
        #: first look's detector looks again itself.
        self.close_up_detector = (Detector(self.models / close_up, det["input"], det["threshold"], threads)
                                  if close_up else None)
        self.classifier = Classifier([self.models / f for f in model_files(cls)], cls["classes"], cls["temperature"], cls["crop_size"],
                                     cls["margin"], threads, cls.get("shape_temperature"), cls.get("cascade"))
        num = self.config.get("numerals")
        self.numerals = (Classifier(self.models / num["file"], num["classes"], num["temperature"], num["crop_size"],
                                    num["margin"], threads) if num else None)
        ck = self.config.get("cocked")
        #: The cocked-die model (``reader.json``'s ``cocked``, module docstring, "Cocked"), or None.
        self.cocked = (Classifier(self.models / ck["file"], ck["classes"], ck["temperature"], ck["crop_size"],
                                  ck["margin"], threads) if ck else None)
        #: P(cocked) at or above which a die is reported ``cocked``.
        self.cocked_threshold = float(ck["threshold"]) if ck else 1.0
        direct = [c for c in cls["classes"] if c != "none" and not c.endswith(":*")]
        numeral_classes = self.numerals.classes if self.numerals else []
        #: The numeral model's classes of numbered kinds (d8, d10, d10-tens: those the classifier reads by shape
        #: alone, ``KIND:*``), joined by :func:`join_numerals`.
        self.numbered_classes = [c for c in numeral_classes if shape_class(c.split(":")[0]) in cls["classes"]]
        d6n = self.config.get("d6_numerals")
        #: The d6 numeral model (``reader.json``'s ``d6_numerals``, :func:`join_d6_numerals`), or None.
        self.d6_numerals = (Classifier(self.models / d6n["file"], d6n["classes"], d6n["temperature"], d6n["crop_size"],
                                       d6n["margin"], threads) if d6n else None)
        if self.d6_numerals is not None and D6_PIPS not in self.d6_numerals.classes:
            raise ValueError(f"{config_path}: d6_numerals reads no d6 printed with pips ({D6_PIPS!r} is not one of "
                             f"its classes)")
        faces = direct + [c for c in self.numbered_classes if c not in direct]
        #: The kinds the numeral model reads (d8, d10, d10-tens as shipped).
        self.numeral_kinds = frozenset(c.split(":")[0] for c in self.numbered_classes)
        #: The long side (pixels) from which a die's numeral crop is shrunk, not enlarged: the numeral
        #: model's crop size over its margin (80 / 1.15 as shipped), or None without a numeral model.
        self.numeral_whole_px = num["crop_size"] / num["margin"] if num else None
        #: The classes of :meth:`classify`'s probabilities: every ``KIND:FACE`` read, then ``none``.
        self.classes = sorted(faces, key=class_key) + ["none"]
        self.threshold = float(self.config.get("threshold", 0.9))
        #: Per-kind thresholds where ``reader.json`` sets them (numbered dice are calibrated on renders).
        self.thresholds = {k: float(v) for k, v in self.config.get("thresholds", {}).items()}
        self.none_threshold = float(self.config.get("none_threshold", 0.5))
        self.refine = int(self.config.get("refine", 0))
        #: Extra passes for unsure dice only (``reader.json``'s ``refine_unsure``, default 0): a die
        #: below its threshold after the first read is cut again around the box the box head
        #: placed and read again (module docstring, "Refine the unsure").
        self.refine_unsure = int(self.config.get("refine_unsure", 0))
        if not 0 <= self.refine_unsure <= 3:
            raise ValueError(f"{config_path}: refine_unsure must be 0..3, got {self.refine_unsure}")
        #: Passes for a numbered die whose numeral is still unsure (``reader.json``'s ``recut_numbered``,
        #: default ``refine_unsure``): each reads it again from the box its last read placed (:meth:`_classify`).
        self.recut_numbered = int(self.config.get("recut_numbered", self.refine_unsure))
        if not 0 <= self.recut_numbered <= 3:
            raise ValueError(f"{config_path}: recut_numbered must be 0..3, got {self.recut_numbered}")
        #: Views averaged for a die below the threshold (1: none; 2: and a half turn; 4: quarter turns;
        #: 8: quarter turns, each also mirrored, for the classifier: :meth:`_turned_mean`).
        self.second_look = int(self.config.get("second_look", 1))
        if self.second_look not in (1, 2, 4, 8):
            raise ValueError(f"{config_path}: second_look must be 1, 2, 4 or 8, got {self.second_look}")
        self.kinds = tuple(sorted({c.split(":")[0] for c in self.classes if c != "none"}, key=KINDS.index))
        #: Whether :meth:`read` looks again, zoomed out, for dice too big for the detector
        #: (``reader.json``'s ``zoom_out``, default true; module docstring, "Big dice").
        self.zoom_out = self._switch(config_path, "zoom_out")
        #: Whether :meth:`read` looks again, enlarged, at a frame whose dice are small for the
        #: detector (``reader.json``'s ``zoom_in``, default true; :meth:`Detector.small_dice`).
        self.zoom_in = self._switch(config_path, "zoom_in")
        #: Whether :meth:`read` reads a group of unsure dice lying close together again as one die
        #: (``reader.json``'s ``join_parts``, default true; :meth:`_with_parts_joined`).
        self.join_parts = self._switch(config_path, "join_parts")
        #: Whether a numbered die the numeral model sees whole is ``ok`` from :data:`BIG_NUMBERED_THRESHOLD`
        #: (``reader.json``'s ``big_numbered``, default true; :meth:`status_threshold`).
        self.big_numbered = self._switch(config_path, "big_numbered")
        #: Whether a numbered die whose box its last recut hardly moved, read far under its threshold, is left
        #: as read (``reader.json``'s ``recut_settled``, default false: a speed setting that failed its rule on
        #: accuracy by one die; :data:`RECUT_SETTLED`, :meth:`_classify`).
        self.recut_settled = self._switch(config_path, "recut_settled", default=False)

    def _switch(self, config_path: Path, name: str, default: bool = True) -> bool:
        """``reader.json``'s on/off setting ``name`` (``default`` when absent: on); ValueError naming the file
        and the value when it is not true or false (``"no"`` would otherwise switch it on)."""
        value = self.config.get(name, default)
        if not isinstance(value, bool):
            raise ValueError(f"{config_path}: {name} must be true or false, got {value!r}")
        return value

    def check_kinds(self, kinds) -> tuple[str, ...] | None:
        """``kinds`` as a tuple, None for all; ValueError naming a kind the kit does not know."""
        if kinds is None:
            return None
        kinds = tuple(kinds)
        for kind in kinds:
            if kind not in KINDS:
                raise ValueError(f"unknown die kind {kind!r} (expected some of {', '.join(KINDS)})")
        return kinds

    def threshold_for(self, kind: str) -> float:
        """The confidence below which a die of ``kind`` is reported ``unreadable``."""
        return self.thresholds.get(kind, self.threshold)

    def status_threshold(self, kind: str, box) -> float:
        """The confidence below which a die of ``kind`` with ``box`` (x0, y0, x1, y1 pixels of the
        image read) is reported ``unreadable``: :meth:`threshold_for`, but for a numbered kind (d8,
        d10, d10-tens) whose box's long side is at least the numeral model's crop size over its
        margin, at most :data:`BIG_NUMBERED_THRESHOLD` (with :attr:`big_numbered`). The passes for
        unsure dice (second look, recut, parts) still answer to :meth:`threshold_for`."""
        threshold = self.threshold_for(kind)
        if (self.big_numbered and self.numeral_whole_px is not None and kind in self.numeral_kinds
                and _long_side(box) >= self.numeral_whole_px):
            return min(threshold, BIG_NUMBERED_THRESHOLD)
        return threshold

    def shape_threshold(self, cls: str) -> float:
        """The threshold a classifier class ``cls`` answers to: its kind's (``d6:3`` -> d6's); for
        a numbered shape the lowest of the kinds it stands for (``d10:*`` -> d10's and
        d10-tens's), since the numeral it carries is read against that."""
        shape = cls.split(":")[0]
        kinds = [k for k in KINDS if shape_class(k) == f"{shape}:*"] if cls.endswith(":*") else [shape]
        return min((self.threshold_for(k) for k in kinds), default=self.threshold)

    def boxes_and_logits(self, image: np.ndarray, boxes, refine: int | None = None) -> tuple[list, np.ndarray]:
        """Boxes (x0, y0, x1, y1 pixels, clipped to the image) as the classifier's box head
        places them, and the raw class scores (NxC float32) of the crops they were read from.

        ``refine`` extra passes re-cut the crops around the moved boxes and read them again
        (each pass costs one more classifier run); 0 reads the detector's crops once and only
        moves the boxes. Defaults to ``reader.json``'s ``refine``.
        """
        passes = self.refine if refine is None else refine
        read_from = list(boxes)
        logits, moved = self.classifier.logits_and_boxes(image, read_from)
        for _ in range(passes if self.classifier.refines else 0):
            read_from = moved
            logits, moved = self.classifier.logits_and_boxes(image, read_from)
        for _ in range(self.refine_unsure if refine is None and self.classifier.refines else 0):
            rows = self._unsure_rows(logits)
            if not len(rows):
                break
            again, placed = self.classifier.logits_and_boxes(image, [moved[i] for i in rows])
            logits, moved, read_from = logits.copy(), list(moved), list(read_from)
            for j, i in enumerate(rows):
                read_from[i], logits[i], moved[i] = moved[i], again[j], placed[j]
        logits = self._second_look(image, read_from, logits)
        h, w = image.shape[:2]
        clipped = [(max(0.0, float(b[0])), max(0.0, float(b[1])), min(float(w), float(b[2])), min(float(h), float(b[3])))
                   for b in moved]
        return clipped, logits

    def _second_look(self, image: np.ndarray, boxes, logits: np.ndarray) -> np.ndarray:
        """``logits`` (NxC) with the rows of unsure dice replaced by the mean over
        :attr:`second_look` turned views of their crops (cut around ``boxes``, as the first).

        Unsure: the best class that is a die is below the threshold of its kind
        (:meth:`shape_threshold`: ``reader.json``'s, whatever threshold a caller reads at, so
        that scoring sees what runs at the table; a numbered shape, ``d10:*``, is held to its
        kinds' threshold, which its read face must reach) and ``none`` is below
        :attr:`none_threshold` (a box about to be dropped is not looked at again).
        """
        if self.second_look == 1 or len(logits) == 0:
            return logits
        rows = self._unsure_rows(logits)
        if not len(rows):
            return logits
        return self._turned_mean(self.classifier, image, [boxes[i] for i in rows], logits, rows)

    def _unsure_rows(self, logits: np.ndarray) -> np.ndarray:
        """Indices of the rows of the classifier's NxC raw scores that are unsure dice: the best
        class that is a die is below its :meth:`shape_threshold` and ``none`` is below
        :attr:`none_threshold`."""
        return self._unsure_in(self.classifier.calibrated(logits))[0] if len(logits) else np.zeros(0, int)

    def _unsure_in(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_unsure_rows` of the classifier's NxC calibrated probabilities ``p``, and per row of
        ``p`` its best class that is a die (N class indices)."""
        none = self.classifier.classes.index("none")
        limits = np.array([self.shape_threshold(c) for c in self.classifier.classes])
        dice = np.delete(np.arange(p.shape[1]), none)
        best = dice[p[:, dice].argmax(axis=1)]
        return np.flatnonzero((p[np.arange(len(p)), best] < limits[best]) & (p[:, none] < self.none_threshold)), best

    def _turned_mean(self, model: "Classifier", image: np.ndarray, boxes, logits: np.ndarray, rows,
                     mirrored: bool = True) -> np.ndarray:
        """``logits`` (NxC, ``model``'s) with the rows ``rows`` replaced by the mean of their view
        and :attr:`second_look` - 1 turned views of ``model``'s crops around ``boxes`` (one per row).
        At ``second_look`` 8 the views are the crop's quarter turns, each also mirrored (the
        dihedral group of the square: a d6's top face mirrored is a view of a face with the same
        pips, and the classifier trained on mirrored crops); with ``mirrored`` False (a numeral
        model: a mirrored numeral is no die's) the four quarter turns."""
        crops = model.crops(image, boxes)
        turns = (1, 2, 3) if self.second_look >= 4 else (2,)
        views = [np.rot90(crops, k, axes=(2, 3)) for k in turns]
        if self.second_look == 8 and mirrored:
            views += [np.flip(v, axis=3) for v in [crops] + views]
        more = model.logits(np.ascontiguousarray(np.concatenate(views))).reshape(len(views), len(rows), -1)
        out = logits.copy()
        out[rows] = (logits[rows] + more.sum(axis=0)) / (1 + len(views))
        return out

    def _numeral_logits(self, image: np.ndarray, boxes, model: "Classifier | None" = None) -> np.ndarray:
        """The numeral model's raw scores (NxF float32) for ``boxes``, the unsure ones (best
        numeral below the numbered kinds' threshold) read again from turned views (second look).
        Averaging the four views of every numeral lifted a 1500-step numeral model's top-1 on
        renders with held-out fonts and colours by 3 to 5 points (d8 69 -> 72%, d10 58 -> 63%).
        ``model``: another numeral model to read them with (the d6 numeral model; unsure: its best
        class below the d6 threshold)."""
        model = model or self.numerals
        logits = model.logits(model.crops(image, boxes))
        if self.second_look == 1:
            return logits
        kinds = self.numeral_kinds if model is self.numerals else ("d6",)
        limit = min(self.threshold_for(k) for k in kinds) if kinds else self.threshold
        rows = np.flatnonzero(model.calibrated(logits).max(axis=1) < limit)
        if not len(rows):
            return logits
        return self._turned_mean(model, image, [boxes[i] for i in rows], logits, rows, mirrored=False)

    def classify(self, image: np.ndarray, boxes, kinds=None, refine: int | None = None) -> tuple[list, np.ndarray]:
        """Boxes as :meth:`boxes_and_logits` moves them, and NxK float32 calibrated probabilities
        over :attr:`classes` (numbered dice read by the numeral model, module docstring).
        Classes of kinds not in ``kinds`` get 0 and the rest are scaled back to sum 1."""
        boxes, p, _, _ = self._classify(image, boxes, kinds, refine)
        return boxes, p

    def _classify(self, image: np.ndarray, boxes, kinds, refine: int | None) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`classify`'s boxes and probabilities, per box the share of its die probability
        (all but ``none``) that lay in ``kinds`` before the others were zeroed (1.0 without ``kinds``),
        and the probabilities before ``kinds`` (NxK float64: what :meth:`_with_d6_numerals` joins again).

        With ``refine`` None and :attr:`recut_numbered` passes, a die whose best face is a numbered kind's
        and under that kind's threshold is read again, each pass, from the box the box head placed
        (:meth:`_unsure_numbered`): the classifier's own unsure rows are re-cut before the numerals
        are read (:meth:`boxes_and_logits`), but a sure numbered shape whose numeral is unsure is not,
        and the numeral model is more sensitive to where its crop is cut (models/history/numerals.md,
        "Unsure numerals cut again"). Each such read is :data:`NUMBERED_RECUT` classifier passes, the
        box moved by each, before the numerals are read. With :attr:`recut_settled`, a die whose box its
        last such read moved less than :data:`RECUT_SETTLED` of its long side (:func:`box_moved`) and
        left under :data:`RECUT_FAR` is not read again: its next read would be of nearly the same crop."""
        boxes, p, shares, p_all = self._joined(image, boxes, kinds, refine)
        settled = np.zeros(len(boxes), bool)
        for _ in range(self.recut_numbered if refine is None and self.numerals is not None else 0):
            rows = self._unsure_numbered(p)
            rows = rows[~settled[rows]]
            if not len(rows):
                break
            again, p_again, shares_again, all_again = self._joined(image, [boxes[i] for i in rows], kinds, NUMBERED_RECUT)
            if self.recut_settled:
                _, face_shares, not_die, _ = self._best_faces(p_again)
                far = face_shares * (1.0 - not_die) < RECUT_FAR  # read well under any numbered kind's threshold
                settled[rows] = far & np.array([box_moved(boxes[i], again[j]) < RECUT_SETTLED for j, i in enumerate(rows)])
            boxes, p, shares, p_all = list(boxes), p.copy(), shares.copy(), p_all.copy()
            for j, i in enumerate(rows):
                boxes[i], p[i], shares[i], p_all[i] = again[j], p_again[j], shares_again[j], all_again[j]
        return boxes, p, shares, p_all

    def _unsure_numbered(self, p: np.ndarray) -> np.ndarray:
        """Indices of the rows of ``p`` (NxK probabilities over :attr:`classes`) whose best face is one
        the numeral model reads (d8, d10, d10-tens) with a confidence under its kind's threshold: the
        best face's share of the die probability times the chance that it is a die, as :meth:`_dice`
        reports it."""
        best, shares, not_die, _ = self._best_faces(p)
        read_by_numerals = set(self.numbered_classes)
        limits = np.array([self.threshold_for(c.split(":")[0]) if c in read_by_numerals else -1.0 for c in self.classes])
        return np.flatnonzero(shares * (1.0 - not_die) < limits[best])

    def _best_faces(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per row of ``p`` (NxK probabilities over :attr:`classes`): the best face's class index (N
        int, ``none`` left out), its share of the die probability (N float64: the face's chance of
        being right given a die; 0 where the row has none), the chance that the box is no die
        (N float64, ``none``) and the die probability (N float32). Every row at once, by the same
        float32 and float64 operations as :meth:`_dice` once did row by row."""
        none = self.classes.index("none")
        faces = np.array(p, np.float32).reshape(len(p), len(self.classes))
        not_die = faces[:, none].astype(np.float64)
        faces[:, none] = 0
        totals = faces.sum(axis=1)
        best = faces.argmax(axis=1)
        shares = (faces[np.arange(len(faces)), best] / np.where(totals > 0, totals, 1)).astype(np.float64)
        return best, shares, not_die, totals

    def _joined(self, image: np.ndarray, boxes, kinds, refine: int | None) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_classify`'s boxes, probabilities, shares and probabilities before ``kinds`` from one
        read of ``boxes`` (:meth:`boxes_and_logits`, then the numerals joined)."""
        boxes, logits = self.boxes_and_logits(image, boxes, refine)
        p_main = self.classifier.calibrated(logits)
        q, rows = None, np.zeros(0, int)
        if self.numerals is not None and len(boxes):
            shapes = [i for i, c in enumerate(self.classifier.classes) if c.endswith(":*")]
            rows = np.flatnonzero(p_main[:, shapes].sum(axis=1) >= NUMERAL_MIN)
            if len(rows):
                q = self.numerals.calibrated(self._numeral_logits(image, [boxes[i] for i in rows]))
                q = q[:, [self.numerals.classes.index(c) for c in self.numbered_classes]]
        p = join_numerals(p_main, self.classifier.classes, q, rows, self.numbered_classes, self.classes)
        return (boxes, *self._in_kinds(p, kinds), p)

    def _in_kinds(self, p: np.ndarray, kinds) -> tuple[np.ndarray, np.ndarray]:
        """``p`` (NxK probabilities over :attr:`classes`) with the classes of kinds not in ``kinds`` zeroed and
        each row scaled back to sum 1 (NxK float32), and per row the share of its die probability (all but
        ``none``) that lay in ``kinds`` before (N float64; 1.0 throughout without ``kinds``)."""
        p, shares = np.array(p), np.ones(len(p))  # a copy: the caller keeps its p
        if kinds is not None:
            allowed = np.array([c == "none" or c.split(":")[0] in kinds for c in self.classes])
            die = np.array([c != "none" for c in self.classes])
            mass = p[:, die].sum(axis=1)
            shares = np.where(mass > 0, p[:, allowed & die].sum(axis=1) / np.where(mass > 0, mass, 1.0), 1.0)
            p[:, ~allowed] = 0.0
            total = p.sum(axis=1, keepdims=True)
            p = p / np.where(total > 0, total, 1.0)
        return np.asarray(p, np.float32), shares

    def cocked_probability(self, image: np.ndarray, boxes) -> np.ndarray:
        """N float64 calibrated chances that the die in each of ``boxes`` (x0, y0, x1, y1 pixels
        of ``image``, HxWx3 uint8 BGR) is cocked, not lying flat; zeros without a cocked model.
        With ``reader.json``'s ``cocked.position`` the model also sees where each box lies
        (:func:`with_position`)."""
        if self.cocked is None or not len(boxes):
            return np.zeros(len(boxes))
        position = bool(self.config["cocked"].get("position"))
        crops = self.cocked.crops(image, boxes, 5 if position else 3)
        if position:  # with_position's planes, written into the crops' batch
            h, w = image.shape[:2]
            set_position(crops, np.array([centre_offset(b, w, h) for b in boxes], np.float32))
        p = self.cocked.calibrated(self.cocked.logits(crops))
        return p[:, self.cocked.classes.index("cocked")]

    def _dice(self, image: np.ndarray, boxes, kinds, crop_mode: bool, threshold: float | None = None,
              refine: int | None = None, scores: dict | None = None, others: list | None = None) -> list[Die]:
        """The dice in ``boxes`` of ``image`` (HxWx3 uint8 BGR): read, unreadable or cocked; with
        ``kinds``, a box whose die probability lies mostly (all but :data:`OTHER_KIND`) in kinds left
        out is left out too, or, in a crop (``crop_mode``), reported ``unreadable``: the kinds
        restriction scales the rest back up, which read such a die surely as a kind it is not.
        ``refine``: the box head's passes (:meth:`boxes_and_logits`; default :data:`CROP_PASSES` in a crop,
        else ``reader.json``'s). ``scores``: a dict that gets, for each box as read (a die's ``box``), its
        probabilities over :attr:`classes` before ``kinds`` (K float64), for :meth:`_with_d6_numerals`.
        ``others``: a list that gets the boxes so left out that are read unsure as the kind they were left out
        for (:meth:`_unsure_others`), as ``unreadable`` dice of that kind, for :meth:`read` to join as parts
        (less those lying inside a bigger box read here, parts of that die, as :meth:`_without_parts`)."""
        if refine is None:
            refine = CROP_PASSES if crop_mode else None
        boxes, probs, shares_in_kinds, p_all = self._classify(image, boxes, kinds, refine)
        if scores is not None:
            scores.update(zip(boxes, p_all))
        dice = self._dice_from(image, boxes, probs, shares_in_kinds, kinds, crop_mode, threshold)
        if others is not None and kinds is not None and not crop_mode:
            left_out = self._unsure_others(boxes, p_all, shares_in_kinds)
            # as _dice_from's dice: a part of a bigger box read here is that die's part, not another one's
            others.extend(o for o in left_out if not any(_lies_in(o.box, e.box) for e in dice + left_out))
        return dice

    def _unsure_others(self, boxes, p_all: np.ndarray, shares_in_kinds) -> list[Die]:
        """The boxes (x0, y0, x1, y1 pixels) left out as dice of kinds not in ``kinds`` (a share of their
        die probability in ``kinds`` under :data:`OTHER_KIND`, ``shares_in_kinds``: :meth:`_in_kinds`) that
        are not surely those dice: read from ``p_all`` (NxK probabilities over :attr:`classes` before
        ``kinds``), not ``none`` and under the threshold of the kind they read as (``reader.json``'s). Each as
        an ``unreadable`` :class:`Die` of that kind, confidence as :meth:`_dice_from` computes it.

        They are what a big die the detector does not see whole looks like to it: its numerals or pips,
        each read unsure as some die. Without ``kinds`` they are joined into their die
        (:meth:`_with_parts_joined`); left out before the join, a big dark d10 read surely whole
        without ``kinds`` was lost with ``--kinds d10`` (13 of 308 on fresh496's dark single d10,
        models/history/detector.md, "Parts of a big die under --kinds")."""
        best, shares, not_die, _ = self._best_faces(p_all)
        out = []
        for i, box in enumerate(boxes):
            if shares_in_kinds[i] >= OTHER_KIND or not_die[i] >= self.none_threshold:
                continue
            kind = self.classes[int(best[i])].split(":")[0]
            confidence = float(shares[i] * (1.0 - not_die[i]))
            if confidence < self.threshold_for(kind):
                out.append(Die(kind, "", 0, box, confidence, "unreadable", float(shares[i])))
        return out

    def _dice_from(self, image: np.ndarray, boxes, probs: np.ndarray, shares_in_kinds, kinds, crop_mode: bool,
                   threshold: float | None, cocked: bool = True) -> list[Die]:
        """:meth:`_dice`'s dice from the classes' probabilities ``probs`` (NxK over :attr:`classes`, ``kinds``
        applied) and shares of each box's die probability in ``kinds`` (N, :meth:`_in_kinds`) of ``boxes``
        (x0, y0, x1, y1 pixels of ``image``, HxWx3 uint8 BGR): the ``none`` rule, the threshold, the cocked-die
        model and the parts of bigger dice as :meth:`_dice` applies them. ``cocked`` False: the cocked-die
        model is not asked (boxes it has already found flat)."""
        classes = self.classes
        default_kind = (kinds[0] if kinds else None) or (self.kinds[0] if self.kinds else "d6")
        dice = []
        overlap = (iou_matrix(boxes, boxes) > 0.5).tolist()
        best_faces, shares, not_die, totals = (a.tolist() for a in self._best_faces(probs))
        kept: list[int] = []
        for i, box in enumerate(boxes):
            if not crop_mode and not_die[i] >= self.none_threshold:
                continue  # the classifier says this box is not a die
            if not crop_mode and any(overlap[i][k] for k in kept):
                continue  # two detections the box head moved onto one die
            other_kind = shares_in_kinds[i] < OTHER_KIND  # mostly a die of a kind left out of --kinds
            if other_kind and not crop_mode:
                continue  # left out, as dice of other kinds are
            kept.append(i)
            best = int(best_faces[i])
            face_confidence = shares[i] if totals[i] > 0 else 0.0
            kind, face = classes[best].split(":")
            # The die's confidence: right face given a die, times the chance it is a die at all.
            confidence = face_confidence * (1.0 - (0.0 if crop_mode else not_die[i]))
            if other_kind:  # a crop is one die: never read as a kind it does not look like
                confidence *= float(shares_in_kinds[i])
            if other_kind or confidence < (self.status_threshold(kind, box) if threshold is None else float(threshold)):
                dice.append(Die(kind if kinds is None or kind in kinds else default_kind, "", 0, box, confidence,
                                "unreadable", face_confidence))
            else:
                dice.append(Die(kind, face, face_value(kind, face), box, confidence, "ok", face_confidence))
        # A die that is not flat: never guessed (RULES.md), the table asks for a re-roll. Not for a
        # crop (read --crop): where its die lay in its photo is not known, and a flat die far from
        # the centre shows a side as a cocked one does (cut out of the held-out renders one by one,
        # 1.8% of the flat dice were flagged, against 0.3% in their whole images).
        if cocked and self.cocked is not None and dice and not crop_mode:
            flagged = self.cocked_probability(image, [d.box for d in dice]) >= self.cocked_threshold
            dice = [replace(d, kind=d.kind if kinds is None or d.kind in kinds else default_kind, face="", value=0,
                            status="cocked") if f else d for d, f in zip(dice, flagged)]
        return dice if crop_mode else self._without_parts(dice)

    def _without_parts(self, dice: list[Die], size: float = PART_SIZE, inside: float = PART_INSIDE,
                       grow: float = 1.0) -> list[Die]:
        """``dice`` less the parts of a bigger die: a die not surely read (below its kind's threshold
        in ``reader.json``, whatever threshold a caller reads at, or cocked) whose box lies at least
        ``inside`` (:data:`PART_INSIDE`) inside the box of a die at least ``size`` (:data:`PART_SIZE`) times as
        big across. Dice in a tray lie side by side, not inside each other's boxes; a close-up's die, beyond the
        detector's trained size, is found whole and again as its faces, numerals or pips. :meth:`read` takes
        them again after the parts are joined (:meth:`_with_parts_joined`, which may need them as parts) at
        :data:`NEST_SIZE` and :data:`NEST_INSIDE`: a second box on one die, its top face boxed apart from its
        whole outline, too big to be a part and overlapping too little for the boxes' overlap rule (IoU over 0.5);
        and last at :data:`RIM_SIZE` and :data:`RIM_INSIDE` of the die's box ``grow`` (:data:`RIM_GROW`) times
        bigger: a side face's numeral or pips beyond the box of a close-up die's top face."""
        def part(d: Die) -> bool:
            return self._unsure(d) and any(_lies_in(d.box, e.box, size, inside, grow) for e in dice)
        return [d for d in dice if not part(d)]

    def _with_big_dice(self, image: np.ndarray, detections: list[Detection], shrunk: np.ndarray | None = None) -> list:
        """The boxes to read: ``detections`` (the detector's first look) with the dice too big for
        it (:meth:`Detector.big_dice`, a close-up) in place of the parts it split them into.
        ``shrunk``: the first look's :meth:`Detector.shrink` of ``image``, if the caller has it.

        A big die with two or more parts that the classifier alone (one view) calls a die at the
        threshold of the class it gives them is a cluster of small dice the second look saw as
        one: the first look's boxes stand. For a die of the far looks (``zoom_out`` above
        :data:`ZOOM_OUT`), one such part is enough, and so it is for any big die when the part is
        under :data:`LONE_DIE` of it across and the big box reads as no die
        (:meth:`_no_die_round_one`: one die in a wide shot, the desk round it boxed as a die). (The
        pips and faces a big die is split into are not called dice so surely; those that are, a white
        d6's pips read as "1"s, are told by how little of the big die they cover: :meth:`_is_cluster`.) The parts are judged as this rule was chosen (:meth:`_part_bar`):
        at the one temperature, not ``shape_temperature``, and a numbered shape at
        :data:`NUMBERED_PART_SURE` at least. Judged as the other dice are, a big die's kite faces
        passed for sure small d10s and the big die was lost (``pi-table eval renders/big --calib``:
        false dice 32.2 per 100 pictures before the shape temperature, 46.6 with it here too,
        32.2 as now).
        """
        boxes = [d.box for d in detections]
        if not self.zoom_out:
            return boxes
        dropped: set[int] = set()
        big = []
        for die, parts in (self.close_up_detector or self.detector).big_dice(image, detections, shrunk):
            parts = [i for i in parts if i not in dropped]
            # a far look's die (Detector.big_dice, "Far looks") is a cluster at one sure part
            cluster = 1 if die.zoom_out > ZOOM_OUT else 2
            if parts and self._is_cluster(image, die.box, [boxes[i] for i in parts], cluster):
                continue
            dropped.update(parts)
            big.append(die.box)
        return big + [b for i, b in enumerate(boxes) if i not in dropped]

    def _is_cluster(self, image: np.ndarray, big_box, parts, cluster: int) -> bool:
        """Whether a big die's ``parts`` (boxes x0, y0, x1, y1, pixels of ``image``, HxWx3 uint8 BGR)
        are a cluster of small dice that :meth:`_with_big_dice` keeps: at least ``cluster`` of them
        are sure dice (:meth:`_sure_parts`), or one is, under :data:`LONE_DIE` of ``big_box``'s long
        side, and ``big_box`` is no die (:meth:`_no_die_round_one`), unless every sure one reads as a
        d6's "1" and together they cover less than :data:`CLUSTER_COVER` of ``big_box``, the big
        die's: then they are its pips (a close-up of one white or red d6; models/history/detector.md, "Close-ups' pips")."""
        reads = self._sure_parts(image, parts)
        sure = [b for b, c in zip(parts, reads) if c]
        if len(sure) < cluster and not (any(_long_side(b) < LONE_DIE * _long_side(big_box) for b in sure)
                                        and self._no_die_round_one(image, big_box)):
            return False
        if any(c != "d6:1" for c in reads if c):
            return True
        return sum(_intersection(b, big_box) for b in sure) >= CLUSTER_COVER * _area(big_box)

    def _no_die_round_one(self, image: np.ndarray, big_box) -> bool:
        """Whether the classifier alone (one view, one temperature) reads ``big_box`` (x0, y0, x1, y1,
        pixels of ``image``, HxWx3 uint8 BGR) as no sure die (:meth:`_part_bar`) and gives numbered
        shapes less than half of it: the ground round one small die, not a die of its own. (A box read
        as a sure "1" round a lone die that reads as another face is not taken for the ground: a close-up
        "1"'s pip reads so too; models/history/detector.md, "One die in a wide shot, read as a "1"".)"""
        p = self._part_probabilities(image, [big_box])
        numbered = float(p[0, self.classifier._shapes].astype(np.float64).sum())
        return not self._sure_reads(p)[0] and numbered < 0.5

    def _sure_dice(self, image: np.ndarray, boxes) -> int:
        """How many of ``boxes`` (x0, y0, x1, y1, pixels of ``image``, HxWx3 uint8 BGR) the classifier
        alone (one view, one temperature) reads as a die at :meth:`_part_bar` of the class it gives."""
        return sum(bool(c) for c in self._sure_parts(image, boxes))

    def _sure_parts(self, image: np.ndarray, boxes) -> list[str]:
        """For each of ``boxes`` (as :meth:`_sure_dice`), the classifier class it alone reads surely
        (``d6:1``, ``d10:*``), or "" where it does not read a sure die."""
        return self._sure_reads(self._part_probabilities(image, boxes)) if len(boxes) else []

    def _part_probabilities(self, image: np.ndarray, boxes) -> np.ndarray:
        """NxK float calibrated probabilities over the classifier's classes for ``boxes`` (N >= 1,
        pixels of ``image``, HxWx3 uint8 BGR): one view, the one temperature, as the parts are judged."""
        return self.classifier.calibrated(self.classifier.logits(self.classifier.crops(image, list(boxes))), top_label=False)

    def _sure_reads(self, p: np.ndarray) -> list[str]:
        """For each row of :meth:`_part_probabilities`' ``p``, its best class when it reads a sure die
        at :meth:`_part_bar`, else ""."""
        classes = self.classifier.classes
        none = classes.index("none")
        return [classes[b] if b != none and p[j, b] >= self._part_bar(classes[b]) else "" for j, b in enumerate(p.argmax(axis=1))]

    def sure_share(self, image: np.ndarray, boxes) -> float:
        """The share (0..1) of ``boxes`` (x0, y0, x1, y1, pixels of ``image``, HxWx3 uint8 BGR) that
        the classifier reads surely as dice (:meth:`_sure_parts`); 0 for no boxes."""
        return self._sure_dice(image, boxes) / len(boxes) if len(boxes) else 0.0

    def _part_bar(self, cls: str) -> float:
        """The probability (one view, one temperature) at which :meth:`_with_big_dice` takes a big
        die's part of classifier class ``cls`` for a sure small die: its kind's threshold, and for
        a numbered shape at least :data:`NUMBERED_PART_SURE`."""
        bar = self.shape_threshold(cls)
        return max(bar, NUMBERED_PART_SURE) if cls.endswith(":*") else bar

    def read(self, image: np.ndarray, name: str = "", kinds=None, threshold: float | None = None) -> Reading:
        """Every die in a tray photo.

        Args:
            image: ``HxWx3 uint8 BGR``.
            name: the image's name, copied into the Reading.
            kinds: die kinds that may be reported (e.g. ``("d6",)``); None for all.
            threshold: confidence below which a die is ``unreadable`` (default ``reader.json``'s);
                0 reports every die's best face, for scoring calibration (``pi-table eval``).

        Returns:
            Reading with dice in reading order; ``ms`` = wall time of this call.
        """
        kinds = self.check_kinds(kinds)
        self._check_image(image)
        start = time.perf_counter()
        boxes = self._boxes(image, self.zoom_in)
        scores: dict = {}  # each box's first read, for the d6 numeral model's join
        others: list[Die] = []  # with kinds: unsure boxes left out as other kinds, parts a die of kinds may join
        dice = (self._dice(image, boxes, kinds, False, threshold, scores=scores,
                           others=others if self.join_parts else None) if boxes else [])
        if self.join_parts:
            dice = self._with_parts_joined(image, dice + others, kinds, threshold, scores)
            dice = self._with_lone_dice_grown(image, dice, kinds, threshold, scores)
            left_out = {id(o) for o in others}
            dice = [d for d in dice if id(d) not in left_out]  # parts not joined stay left out
        dice = self._without_parts(dice, NEST_SIZE, NEST_INSIDE)  # second boxes on one die
        dice = self._without_parts(dice, RIM_SIZE, RIM_INSIDE, RIM_GROW)  # parts at a die's rim
        dice = self._with_d6_numerals(image, dice, kinds, False, threshold, scores)
        dice = _without_numerals_as_d6(dice)
        dice = [dice[i] for i in reading_order([d.box for d in dice])]
        ms = (time.perf_counter() - start) * 1000
        return Reading(name, image.shape[1], image.shape[0], ms, tuple(dice))

    def _with_d6_numerals(self, image: np.ndarray, dice: list[Die], kinds, crop_mode: bool,
                          threshold: float | None, scores: dict) -> list[Die]:
        """``dice`` (read from ``image``, HxWx3 uint8 BGR) with each d6 not surely read (under the d6
        threshold in ``reader.json``, whatever ``threshold`` the caller reads at, as :meth:`_unsure`; not
        cocked) read by the d6 numeral model at its box (``reader.json``'s ``d6_numerals``; the unsure read
        again from turned views, :meth:`_numeral_logits`), that read joined with the die's first
        (``scores``, :meth:`_dice`'s, by box: :func:`join_d6_numerals`), and the die replaced by what the two
        say (built as :meth:`_dice` builds it, reported at ``threshold``; the cocked-die model, which found it
        flat at this box, not asked again) where that is a d6 read surely. Asked last, after the parts of one die are joined and dropped: a part of a numbered die
        (a numeral) read surely as a d6 would not be joined into its die (models/history/numerals.md, "d6
        printed with numerals"). One die at a time, so that each read is its die's alone (:meth:`_dice_from`
        drops overlapping boxes and ``none``). A die whose box ``scores`` lacks is left as it is. Costs
        nothing without the model or an unsure d6; the classifier is not run again (models/history/
        d6-numerals.md, "The first read joined")."""
        if self.d6_numerals is None:
            return dice
        asked = [i for i, d in enumerate(dice) if d.kind == "d6" and d.status != "cocked" and self._unsure(d)
                 and d.box in scores]
        if not asked:
            return dice
        boxes = [dice[i].box for i in asked]
        q = self.d6_numerals.calibrated(self._numeral_logits(image, boxes, self.d6_numerals))
        p = join_d6_numerals(np.stack([scores[b] for b in boxes]), self.classes, q, np.arange(len(boxes)),
                             self.d6_numerals.classes)
        p, shares = self._in_kinds(p, kinds)
        out = list(dice)
        for j, i in enumerate(asked):
            # not cocked at this box in its first read: the cocked-die model would say so again
            again = self._dice_from(image, [boxes[j]], p[j:j + 1], shares[j:j + 1], kinds, crop_mode, threshold,
                                    cocked=False)
            if again and again[0].kind == "d6" and not self._unsure(again[0]):  # sure, at its threshold
                out[i] = again[0]
        return out

    def _unsure(self, die: Die) -> bool:
        """Whether ``die`` is not surely read: cocked, or below its kind's threshold in ``reader.json``
        (whatever threshold the caller reads at)."""
        return die.status == "cocked" or die.confidence < self.threshold_for(die.kind)

    def _with_parts_joined(self, image: np.ndarray, dice: list[Die], kinds, threshold: float | None,
                           scores: dict | None = None) -> list[Die]:
        """``dice`` (read from ``image``, HxWx3 uint8 BGR) with each group of unsure parts of one die
        replaced by that die, read from around their union box.

        A die too big for the first look that the zoomed-out look does not take (a dark die on dark
        ground, its outline faint) is read as its pips or numerals: several dice, none sure, side by
        side. Unsure dice (:meth:`_unsure`) lying within :data:`JOIN_GAP` times the smaller one's long
        side of each other are grouped, and each group of two or more is read as one die from the
        square :data:`JOIN_GROW` times its union box's long side about its centre (the parts lie inside
        the die's top face), the way every box is read (:meth:`_dice`: the box head's refinement,
        numerals, the ``none`` rule, the cocked-die model). That die replaces the unsure dice lying at least
        :data:`PART_INSIDE` inside its box and :data:`PART_SIZE` times smaller across, when (a) it
        is read surely (at its kind's threshold, not cocked), (b) at least two such parts lie in it,
        and (c) they cover less than :data:`CLUSTER_COVER` of its box (pips, numerals) or the big
        dice' detector confirms it (:meth:`Detector.confirms`), and (d) it is at most :data:`JOIN_SIZE`
        times as big across as the frame's largest sure die, if it has any. Without (c) and (d), heaps of
        touching unsure tray dice were read as one false die (models/history/detector.md, "Unsure parts read
        together"). A group whose die is read unsure (or cocked) replaces its own parts by that die, reported as
        it is read, after the sure groups and under (b), (c) and (d), when each part is under :data:`JOIN_PART`
        times the frame's largest sure die across and no sure joined die lies in it: one die to roll again, not
        several false ones ("One unreadable die for its parts"). "The frame's sure dice" leave out, for a group
        read surely as a d8 or d10, a sure d6 that is that die's numeral (:func:`_numeral_as_d6`: a dark tens
        die's "10" read as a "6"), which the last step of :meth:`read` drops ("A sure numeral among unsure parts").
        Then the unsure dice left are grouped again within :data:`JOIN_GAP_SURE` (pips far apart on a dark
        d6), and a wider group that joins two narrow ones, has at most :data:`JOIN_MAX_PARTS` members and
        spans at most :data:`JOIN_SPAN` of them is taken under (a) to (d), read surely only. Then (with
        :data:`JOIN_SURE_D6`) the unsure dice left and the sure d6 are grouped within :data:`JOIN_GAP`, and a group
        holding both is taken under (b) to (d) only when read surely as a d8, d10 or d10-tens: a dark numbered die's
        numeral read surely as a six is one of its parts ("A sure six among a dark die's numerals"; from one unsure
        die, rule sixjoin1b). Costs nothing on a frame with no unsure die.

        Args:
            dice: :meth:`_dice`'s dice of ``image``.
            kinds, threshold: as :meth:`read`'s.
            scores: as :meth:`_dice`'s, for the joined dice' reads.

        Returns:
            The dice, each group's parts replaced by its die (appended after the others).
        """
        flags = [self._unsure(d) for d in dice]
        unsure = [i for i, u in enumerate(flags) if u]
        if not unsure:
            return dice  # one unsure die may be a numbered die's numeral beside its others read as sure sixes
        boxes = [d.box for d in dice]
        groups = _groups_within(boxes, unsure, JOIN_GAP)
        detector = self.close_up_detector or self.detector
        sure_dice = [d for d, u in zip(dice, flags) if not u]
        dropped: set[int] = set()
        joined = []

        def take(die: Die, candidates: list[int]) -> None:
            """``die`` in place of the candidates lying in it as its parts, if two or more do."""
            parts = [i for i in candidates if i not in dropped and _lies_in(dice[i].box, die.box)]
            if len(parts) < 2:
                return
            cover = sum(_intersection(dice[i].box, die.box) for i in parts)
            if cover >= CLUSTER_COVER * _area(die.box) and not detector.confirms(image, die.box):
                return  # touching dice filling their union box, not one die's pips or numerals
            dropped.update(parts)
            joined.append(die)

        def sure_sizes(die: Die, surely: bool) -> list[float]:
            """Long sides of the frame's sure dice, less a sure joined ``die``'s own numerals read as pips
            (:func:`_numeral_as_d6`)."""
            return [_long_side(d.box) for d in sure_dice if not (surely and _numeral_as_d6(d, die))]

        unsure_reads = []  # groups whose union reads unsure: taken after the sure ones, from what those leave
        for members in groups:
            if len(members) < 2:
                continue
            union = union_box([boxes[i] for i in members])
            found = self._dice(image, [_grown_square(union, JOIN_GROW, image.shape)], kinds, False, threshold,
                               scores=scores)
            if not found:
                continue
            die = found[0]
            surely = not self._unsure(die)
            sure = sure_sizes(die, surely)
            if _too_big(die.box, sure):
                continue
            if surely:
                take(die, unsure)
            elif not (sure and any(_long_side(dice[i].box) >= JOIN_PART * max(sure) for i in members)):
                unsure_reads.append((members, die))  # parts under the frame's sure dice: pips or numerals, not whole dice
        # the unsure dice left, grouped again wider: taken only as a die read surely (JOIN_GAP_SURE)
        left = [i for i in unsure if i not in dropped]
        narrow = {i: g for g, members in enumerate(groups) for i in members}
        for members in _groups_within(boxes, left, JOIN_GAP_SURE) if JOIN_GAP_SURE > JOIN_GAP else ():
            if len(members) > JOIN_MAX_PARTS or len({narrow[i] for i in members}) < 2:
                continue  # more than a face's pips, or one narrow group's own members (read above)
            square = _grown_square(union_box([boxes[i] for i in members]), JOIN_GROW, image.shape)
            if _long_side(square) > JOIN_SPAN * max(_long_side(boxes[i]) for i in members):
                continue  # spread wider than one die's parts: unsure whole dice lying apart
            found = self._dice(image, [square], kinds, False, threshold, scores=scores)
            if found and not self._unsure(found[0]) and not _too_big(found[0].box, sure_sizes(found[0], True)):
                take(found[0], left)
        # the sure d6 beside the unsure dice left: a dark numbered die's numerals ("00", "60") read surely as sixes
        left = [i for i in unsure if i not in dropped]
        sixes = [i for i, d in enumerate(dice) if not flags[i] and d.kind == "d6"] if JOIN_SURE_D6 else []
        for members in _groups_within(boxes, left + sixes, JOIN_GAP) if left and sixes else ():
            if not (set(members) & set(left)) or not (set(members) & set(sixes)):
                continue
            square = _grown_square(union_box([boxes[i] for i in members]), JOIN_GROW, image.shape)
            found = self._dice(image, [square], kinds, False, threshold, scores=scores)
            if (found and found[0].kind != "d6" and not self._unsure(found[0])
                    and not _too_big(found[0].box, sure_sizes(found[0], True))):
                take(found[0], members)
        for members, die in unsure_reads:
            if not any(inside_share(d.box, die.box) >= PART_INSIDE for d in joined):
                take(die, members)
        if not joined:
            return dice
        return [d for i, d in enumerate(dice) if i not in dropped] + joined

    def _with_lone_dice_grown(self, image: np.ndarray, dice: list[Die], kinds, threshold: float | None,
                              scores: dict | None = None) -> list[Die]:
        """``dice`` (read from ``image``, HxWx3 uint8 BGR) with each unsure die at least :data:`LONE_MIN` pixels
        across (:data:`LONE_MIN_D6` when read as a d6) replaced by the die read from the square :data:`LONE_GROW`
        times its long side about its centre (:meth:`_dice`, as every box is read), when that die is read surely, is at least :data:`LONE_BIGGER`
        times as big across, holds the unsure die at least :data:`PART_INSIDE` inside its box, is no more than
        :data:`JOIN_SIZE` times the frame's largest sure die across and lies on no sure die (IoU over
        :data:`LONE_OVERLAP`, or a sure die over half inside it); the unsure dice lying over half inside it
        go with the one it replaces (its other parts). A big dark die boxed by its lit top face alone is read
        whole (models/history/detector.md, "A lone top face read from around it"). ``kinds``, ``threshold``,
        ``scores``: as :meth:`read`'s. Costs nothing on a frame whose unsure dice are all smaller."""
        if LONE_GROW <= 0:
            return dice
        flags = [self._unsure(d) for d in dice]
        sure = [d for d, u in zip(dice, flags) if not u]
        sizes = [_long_side(d.box) for d in sure]
        dropped: set[int] = set()
        grown = []
        for i, d in enumerate(dice):
            if i in dropped or not flags[i] or _long_side(d.box) < (LONE_MIN_D6 if d.kind == "d6" else LONE_MIN):
                continue
            found = self._dice(image, [_grown_square(d.box, LONE_GROW, image.shape)], kinds, False, threshold,
                               scores=scores)
            if not found or self._unsure(found[0]):
                continue
            die = found[0]
            if _long_side(die.box) < LONE_BIGGER * _long_side(d.box) or inside_share(d.box, die.box) < PART_INSIDE:
                continue  # the same die read again from a looser crop, or another die
            if _too_big(die.box, sizes):
                continue
            if any(iou(die.box, e.box) > LONE_OVERLAP or inside_share(e.box, die.box) >= PART_INSIDE
                   for e in sure + grown):
                continue  # a die read surely already
            dropped.update(j for j, e in enumerate(dice)
                           if j == i or (flags[j] and inside_share(e.box, die.box) >= PART_INSIDE))
            grown.append(die)
        if not grown:
            return dice
        return [d for j, d in enumerate(dice) if j not in dropped] + grown

    def _boxes(self, image: np.ndarray, zoom_in: bool) -> list:
        """The boxes (x0, y0, x1, y1, pixels) of the dice :meth:`read` reads in ``image`` (HxWx3
        uint8 BGR): the first look, with ``zoom_in`` the small dice' look, and the big dice' look."""
        # the first look's shrunk image serves the zoomed-out look too (the close-up detector
        # takes the same input size)
        shrunk = self.detector.shrink(image)
        detections = self.detector.detect(image, shrunk)
        if zoom_in:
            detections = self.detector.small_dice(image, detections, lambda boxes: self.sure_share(image, boxes))
        return self._with_big_dice(image, detections, shrunk)

    def read_crop(self, image: np.ndarray, name: str = "", kinds=None, threshold: float | None = None) -> Reading:
        """One cropped die (``read --crop``): at most one die, the one at the crop's centre, or the only one in it.

        The whole image is taken for the die's box first and the box head moves it onto the die
        (:data:`CROP_PASSES`). If the die it finds is under :data:`LOOSE_CROP` of the crop's long
        side (a loose crop), the detector looks too (:meth:`_loose_crop_box`) and the die is read
        again from its box; that read is reported if it is at or above its kind's threshold
        (``reader.json``, whatever ``threshold`` the caller reads at) or the first is below its own
        (a die alone in the crop is looked for off the centre too: :data:`LONE_EDGE`).
        If the die it finds fills the crop, a crowded crop's die over the centre may be read
        instead (:meth:`_crowded_crop_read`).

        Args:
            image: ``HxWx3 uint8 BGR``, one die framed tightly or loosely (about 1x to 3.5x its box).
            name, kinds, threshold: as in :meth:`read`.

        Returns:
            Reading with at most one die; ``ms`` = wall time of this call. ValueError: not an image.
        """
        kinds = self.check_kinds(kinds)
        self._check_image(image)
        start = time.perf_counter()
        h, w = image.shape[:2]
        # The training crops have the die's long side = 1/margin of the crop: match that.
        box = (0.0, 0.0, float(w), float(h))
        inner = _shrink(box, 1.0 / self.classifier.margin * 1.15)
        scores: dict = {}  # each box's read, for the d6 numeral model's join
        dice = self._dice(image, [inner], kinds, True, threshold, scores=scores)
        if dice and _long_side(dice[0].box) < LOOSE_CROP * max(w, h):
            found = self._loose_crop_box(image)
            if found is not None:
                again = self._dice(image, [found], kinds, True, threshold, scores=scores)
                if again and (again[0].confidence >= self.threshold_for(again[0].kind)
                              or dice[0].confidence < self.threshold_for(dice[0].kind)):
                    dice = again
        elif dice:
            # The box head's die fills the crop: one die framed tightly, or a loose crop whose few
            # small dice it took for the pips of one big die (models/history/classifier.md, "Crowded crops").
            again = self._crowded_crop_read(image, dice[0], kinds, threshold, scores)
            if again:
                dice = again
        dice = self._with_d6_numerals(image, dice[:1], kinds, True, threshold, scores)
        ms = (time.perf_counter() - start) * 1000
        return Reading(name, w, h, ms, tuple(dice))

    def _loose_crop_box(self, image: np.ndarray):
        """The die at the centre of a loose crop (``image``, HxWx3 uint8 BGR), as :meth:`read` finds
        dice (:meth:`_boxes`, no small dice' look): the largest box (x0, y0, x1, y1, pixels) that covers the
        crop's centre and is at most :data:`LOOSE_CROP_DIE` of its long side (a bigger one is the
        crop itself); with none there, the one such box if it is the only one and lies clear of the crop's
        edges (:data:`LONE_EDGE`: the crop's only die, off its centre); else None."""
        h, w = image.shape[:2]
        small = self._small_boxes(image)
        found = _centre_box(small, w, h)
        if found is None and len(small) == 1 and _clear_of_edges(small[0], w, h, LONE_EDGE * max(w, h)):
            found = small[0]  # the crop's only die, off its centre
        return found

    def _small_boxes(self, image: np.ndarray) -> list:
        """The boxes :meth:`read` finds in a crop (``image``, HxWx3 uint8 BGR; :meth:`_boxes`, no small
        dice' look) at most :data:`LOOSE_CROP_DIE` of its long side, (x0, y0, x1, y1) pixels."""
        side = max(image.shape[:2])
        return [b for b in self._boxes(image, zoom_in=False) if _long_side(b) <= LOOSE_CROP_DIE * side]

    def _crowded_crop_read(self, image: np.ndarray, first: Die, kinds, threshold: float | None,
                           scores: dict | None = None) -> list[Die]:
        """The die over the centre of a crowded crop, for :meth:`read_crop` when the box head took the
        whole crop (``image``, HxWx3 uint8 BGR) for its die ``first``; [] to keep ``first``. ``scores``: as
        :meth:`_dice`'s.

        A loose crop of a tray photo holds a few neighbours, and the box head may read them as the
        pips of one big die, surely and wrongly. The detector's boxes (:meth:`_small_boxes`) are
        taken for separate dice when two of them do not overlap at all; the largest over the centre
        is read again (``kinds``, ``threshold`` as in :meth:`read`) and that read is returned if
        it is at or above its kind's threshold, its die is between :data:`CROWD_DIE` and
        :data:`LOOSE_CROP` of the crop's long side (smaller, a pip or numeral of one die framed
        tightly; larger, the crop's own die), and ``first`` is below its kind's threshold or at
        least two of the other boxes are sure dice for the classifier (:meth:`_sure_dice`): two
        neighbours besides the die over the centre, which may be the top face of one big die
        framed tightly. models/history/classifier.md, "Crowded crops".
        """
        h, w = image.shape[:2]
        small = self._small_boxes(image)
        if not any(iou(a, b) == 0 for i, a in enumerate(small) for b in small[i + 1:]):
            return []
        found = _centre_box(small, w, h)
        if found is None:
            return []
        again = self._dice(image, [found], kinds, True, threshold, scores=scores)
        if (not again or again[0].confidence < self.threshold_for(again[0].kind)
                or not CROWD_DIE <= _long_side(again[0].box) / max(w, h) < LOOSE_CROP):
            return []
        neighbours = [b for b in small if b is not found]
        if first.confidence >= self.threshold_for(first.kind) and self._sure_dice(image, neighbours) < 2:
            return []
        return again

    @staticmethod
    def _check_image(image) -> None:
        if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            shape = getattr(image, "shape", None)
            raise ValueError(f"expected an HxWx3 uint8 BGR image, got {type(image).__name__} {shape}")


def _shrink(box, factor: float):
    x0, y0, x1, y1 = box
    cx, cy, w, h = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) * factor, (y1 - y0) * factor
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
