"""Recognition speed: ``pi-table bench``.

Reads 640x640 tray frames holding 1, 5 and 20 dice, single-threaded and with all cores,
model loading excluded, and reports the median and 90th-percentile ms per frame and frames
per second. Frames are made of real dice cut from the demo photos shipped in the package
(:func:`tray_frame`), so the detector and classifier see real dice, not noise. ``pi-table bench``
also reads a frame of 20 numbered dice (d8, d10, d10-tens: :func:`numbered_frame`, rendered by
the kit's renderer, which needs the ``train`` extra's Pillow), where the numeral model runs too.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np


def tray_frame(dice: int, seed: int = 0) -> np.ndarray:
    """A 640x640x3 uint8 BGR tray frame holding ``dice`` real d6 (up to 25).

    The dice are cut, by their labelled boxes, from the demo photos shipped in the package
    (``pi_table/demo``, real nellbyler-d6-tray photos with ``labels/``) and pasted without
    overlap onto an empty tray made by blurring one of them.
    """
    import cv2

    from pi_table.capture.sources import DEMO_DIR

    patches = []
    photos = sorted(DEMO_DIR.glob("*.jpg"))
    for photo in photos:
        image = cv2.imread(str(photo))
        h, w = image.shape[:2]
        for line in (DEMO_DIR / "labels" / (photo.stem + ".txt")).read_text().splitlines():
            _, cx, cy, bw, bh = (float(v) for v in line.split())
            x0, y0 = int((cx - bw / 2) * w) - 2, int((cy - bh / 2) * h) - 2
            x1, y1 = int((cx + bw / 2) * w) + 2, int((cy + bh / 2) * h) + 2
            patches.append(image[max(0, y0) : y1, max(0, x0) : x1])
    return _on_tray(patches, dice, seed)


#: The numbered kinds :func:`numbered_frame` renders, in turn.
NUMBERED_KINDS = ("d8", "d10", "d10-tens")


@functools.lru_cache(maxsize=4)
def numbered_frame(dice: int, seed: int = 0) -> np.ndarray:
    """A 640x640x3 uint8 BGR tray frame holding ``dice`` (up to 25) flat numbered dice, d8, d10 and
    d10-tens in turn (:data:`NUMBERED_KINDS`), 45 to 60 pixels across as the mounted camera sees the
    demo photos' d6: each rendered alone by the kit's renderer
    (:func:`pi_table.train.render.scene.make_scene`, the valid split: fonts and colours training
    never saw; a render whose die came out cocked is passed over) and pasted, cut by its box, as
    :func:`tray_frame` pastes the real d6. Rendering takes about 0.3 s a die, once per process.

    Raises:
        ImportError: the renderer cannot be imported (its Pillow comes with the ``train`` extra).
    """
    import cv2

    from pi_table.train.render.scene import make_scene

    patches, index = [], 0
    while len(patches) < dice:
        kind = NUMBERED_KINDS[len(patches) % len(NUMBERED_KINDS)]
        scene = make_scene(seed, "valid", index, kinds=(kind,), die_px=(45.0, 60.0), max_dice=1)
        index += 1
        die = scene.meta["dice"][0]
        if die["cocked"]:
            continue
        x0, y0, x1, y1 = die["box_px"]
        image = cv2.cvtColor(scene.image, cv2.COLOR_RGB2BGR)
        patches.append(image[max(0, y0 - 2) : y1 + 2, max(0, x0 - 2) : x1 + 2])
    return _on_tray(patches, dice, seed)


def _on_tray(patches: list, dice: int, seed: int) -> np.ndarray:
    """``dice`` of ``patches`` (HxWx3 uint8 BGR, each at most 110 pixels a side; taken in turn)
    pasted without overlap at random places of a 5x5 grid on an empty tray made by blurring the
    first demo photo: 640x640x3 uint8 BGR."""
    import cv2

    from pi_table.capture.sources import DEMO_DIR

    rng = np.random.default_rng(seed)
    photos = sorted(DEMO_DIR.glob("*.jpg"))
    frame = cv2.GaussianBlur(cv2.resize(cv2.imread(str(photos[0])), (640, 640)), (0, 0), 40)
    cells = [(x, y) for y in range(10, 570, 112) for x in range(10, 570, 112)]
    for k, i in enumerate(rng.permutation(len(cells))[:dice]):
        x, y = cells[i]
        patch = patches[k % len(patches)]
        x += int(rng.integers(0, 100 - patch.shape[1] // 2))
        y += int(rng.integers(0, 100 - patch.shape[0] // 2))
        frame[y : y + patch.shape[0], x : x + patch.shape[1]] = patch
    return frame


class _TimedSession:
    """An onnxruntime session whose ``run`` adds its wall time (ms) to ``tally[name]``; every
    other attribute is the session's."""

    def __init__(self, session, name: str, tally: dict):
        self._session, self._name, self._tally = session, name, tally

    def run(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self._session.run(*args, **kwargs)
        finally:
            self._tally[self._name] = self._tally.get(self._name, 0.0) + (time.perf_counter() - t) * 1000

    def __getattr__(self, attr):
        return getattr(self._session, attr)


def time_models(reader) -> dict:
    """Make each of ``reader``'s onnxruntime sessions (detector, classifiers, numeral and
    cocked-die models) add the ms its runs take to the returned tally, keyed by model file name
    (``detector.onnx``, ``classifier.onnx``, ...). The tally starts empty; clear it between
    frames. A perf_counter pair per run: microseconds against the runs' milliseconds."""
    from pi_table.vision.reader import wrap_sessions

    tally: dict[str, float] = {}
    wrap_sessions(reader, lambda session, path: _TimedSession(session, path.name, tally))
    return tally


def bench(reader_factory, dice_counts=(1, 5, 20), repeats: int = 30, thread_options=(1, 0),
          per_model: bool = False, numbered_counts=(), against=None) -> list[dict]:
    """Time ``reader.read`` per frame.

    OpenCV's own thread pool (crops, resizes, blobs) is held to the same thread count as the
    models (``cv2.setNumThreads``, restored after), so that a one-thread row is one thread. Left
    to its default (all cores), the one-thread 20-dice frame's time outside the models was 0.4 to
    1.0 ms less in 4 alternating rounds here (models/history/classifier.md, "Speed").

    Args:
        reader_factory: ``threads -> DiceReader`` (0 = all cores).
        repeats: timed reads per case, after 3 warm-up reads.
        per_model: also time each model's runs (:func:`time_models`), to show where a frame's
            time goes.
        numbered_counts: also time frames of that many numbered dice (:func:`numbered_frame`),
            with readers that have a numeral model; none when the renderer cannot be imported.
        against: a second ``threads -> DiceReader`` (other models) timed in the same process and
            on the same frames, its reads alternating with the first's (first, second, then
            second, first, ...), so that a machine slowing down mid-run weighs on both alike: two
            benches run one after the other put it all on the later one (``pi-table bench
            --against DIR``). A case one of them has not (a second look, a numeral model) is timed
            for the other alone.

    Returns:
        One dict per (threads, dice): threads, dice, found (dice the reader reported), unsure
        (of those, below the threshold: each read again when ``reader.json`` has a second
        look), all_unsure, median_ms, p90_ms, fps, page_faults_per_frame (the process's minor page
        faults over the timed reads, per read: memory mapped in afresh each frame,
        :func:`pi_table.vision.reader.keep_freed_memory`; None where the OS does not count
        them); with ``per_model``, ``models_ms``: the median
        ms per frame spent in each model file's runs, and ``other`` the median of the rest of
        the frame (crops, decoding, the reader's Python). With a second look, one more row per
        thread count times the largest frame with every die unsure (the threshold set above
        1, and an ensemble's cascade off: every classifier reads every die), its worst case.
        Each row's ``kind`` says which dice its frame holds: ``d6`` (:func:`tray_frame`) or
        ``numbered`` (:func:`numbered_frame`), the numbered rows last. With ``against``, each
        row has ``reader``: ``"first"`` or ``"against"``, the against row right after the first's
        of the same case (faults are then the two readers' together, per read of either).
    """
    import cv2

    rows = []
    opencv_threads = cv2.getNumThreads()
    try:
        for threads in thread_options:
            cv2.setNumThreads(threads if threads else opencv_threads)
            readers = {"first": reader_factory(threads)}
            if against is not None:
                readers["against"] = against(threads)
            rows += _bench_threads(readers, threads, dice_counts, repeats, per_model, numbered_counts)
    finally:
        cv2.setNumThreads(opencv_threads)
    return rows


def numbered_available() -> bool:
    """Whether :func:`numbered_frame` can render (the renderer and its Pillow import)."""
    try:
        import pi_table.train.render.scene  # noqa: F401
    except ImportError:
        return False
    return True


def _cases(reader, dice_counts, numbered_counts) -> list[tuple]:
    """(dice, all unsure, kind) of each frame :func:`bench` times ``reader`` on."""
    cases = [(n, False, "d6") for n in dice_counts]
    if getattr(reader, "second_look", 1) > 1 and dice_counts:
        cases.append((max(dice_counts), True, "d6"))
    if getattr(reader, "numerals", None) is not None and numbered_available():
        cases += [(n, False, "numbered") for n in numbered_counts]
    return cases


def _bench_threads(readers: dict, threads: int, dice_counts, repeats: int, per_model: bool,
                   numbered_counts=()) -> list[dict]:
    """:func:`bench`'s rows for one thread count, ``readers`` (name -> reader) made for it, their
    reads of each case alternating, the order turned each repeat."""
    rows = []
    tallies = {name: time_models(reader) if per_model else None for name, reader in readers.items()}
    cases = {name: _cases(reader, dice_counts, numbered_counts) for name, reader in readers.items()}
    for case in dict.fromkeys(c for name in readers for c in cases[name]):
        n, all_unsure, kind = case
        timed = [name for name in readers if case in cases[name]]
        frame = tray_frame(n) if kind == "d6" else numbered_frame(n)
        saved = {name: (readers[name].threshold, readers[name].classifier.cascade) for name in timed}
        if all_unsure:
            for name in timed:
                readers[name].threshold = 1.01  # the worst case: every die is unsure and looked at again
                readers[name].classifier.cascade = None  # and read by every classifier of an ensemble
        reading = {}
        for name in timed:
            for _ in range(3):
                reading[name] = readers[name].read(frame)
        times = {name: [] for name in timed}
        spent = {name: [] for name in timed}
        faults_before = _page_faults()
        for r in range(repeats):
            for name in timed if r % 2 == 0 else timed[::-1]:
                tally = tallies[name]
                if tally is not None:
                    tally.clear()
                t = time.perf_counter()
                reading[name] = readers[name].read(frame)
                times[name].append((time.perf_counter() - t) * 1000)
                if tally is not None:
                    spent[name].append({**tally, "other": times[name][-1] - sum(tally.values())})
        faults = None if faults_before is None else round((_page_faults() - faults_before) / (repeats * len(timed)), 1)
        for name in timed:
            readers[name].threshold, readers[name].classifier.cascade = saved[name]
            ms = sorted(times[name])
            med = statistics.median(ms)
            rows.append({**({"reader": name} if len(readers) > 1 else {}), "threads": threads or os.cpu_count(),
                         "dice": n, "kind": kind, "found": len(reading[name].dice),
                         "unsure": sum(d.status == "unreadable" for d in reading[name].dice), "all_unsure": all_unsure,
                         "median_ms": round(med, 2), "p90_ms": round(ms[math.ceil(0.9 * len(ms)) - 1], 2),  # nearest rank
                         "fps": round(1000 / med, 1),
                         "page_faults_per_frame": faults})
            if spent[name]:
                names = list(dict.fromkeys(k for frame_ms in spent[name] for k in frame_ms))
                rows[-1]["models_ms"] = {k: round(statistics.median(f.get(k, 0.0) for f in spent[name]), 2)
                                         for k in names}
    return rows


# The instructions a CPU multiplies int8 numbers with, four at a time into 32-bit sums (the
# shipped classifiers and numeral model are int8: models/classifier.md). Without them an int8
# convolution runs at about float speed: 2.44 ms a 48x48 crop for the int8 classifier against 2.34
# for the same net in float32, one thread, on an AVX2-only AMD EPYC at 2 GHz (2026-11-29,
# models/history/classifier.md "Speed"). Names as Linux's /proc/cpuinfo flags / Features give them.
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
SIMD_FLAGS = ("sse4_2", "avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimd", "asimddp", "i8mm")


def machine(cpuinfo: str | None = None) -> dict:
    """The CPU a bench ran on, so that its figures can be compared across machines.

    Args:
        cpuinfo: the text of Linux's ``/proc/cpuinfo`` (read when None; empty elsewhere).

    Returns:
        ``{"cpu": str, "arch": str, "cores": int, "simd": [str], "int8_dot": bool | None}``:
        the model name (``model name``, or on a Raspberry Pi ``Model``; else
        ``platform.processor()``), ``platform.machine()``, ``os.cpu_count()``, the flags of
        :data:`SIMD_FLAGS` it has, and whether it has one of :data:`INT8_DOT_FLAGS` (None when
        no flags could be read: not Linux).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    model = fields.get("model", "")
    name = fields.get("model name") or (model if model and not model.isdigit() else "") or platform.processor() or "unknown"
    return {"cpu": name, "arch": platform.machine(), "cores": os.cpu_count(),
            "simd": [f for f in SIMD_FLAGS if f in flags],
            "int8_dot": any(f in flags for f in INT8_DOT_FLAGS) if flags else None}


def machine_line(m: dict) -> str:
    """:func:`machine`'s dict as one line of text."""
    dot = {True: "yes", False: "no: int8 models run at about float speed", None: "unknown"}[m["int8_dot"]]
    return (f"CPU: {m['cpu']} ({m['arch']}, {m['cores']} cores; SIMD {' '.join(m['simd']) or 'unknown'}; "
            f"int8 dot products {dot})")


def _page_faults() -> int | None:
    """This process's minor page faults so far (``getrusage``), or None without the resource module."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def format_rows(rows: list[dict]) -> str:
    """The bench table as text; rows of two readers (:func:`bench`'s ``against``) in a first
    column, and each case's median ms of the second over the first's after the table."""
    two = any("reader" in r for r in rows)
    who = (lambda r: f"{r['reader']:>8} ") if two else (lambda r: "")
    out = [f"{'reader':>8} " * two + f"{'threads':>7} {'dice':>5} {'kind':>8} {'found':>5} {'unsure':>6} {'median ms':>10} {'p90 ms':>8} {'fps':>7} {'faults':>7}"]
    out += [f"{who(r)}{r['threads']:>7} {r['dice']:>5} {r.get('kind', 'd6'):>8} {r['found']:>5} {('all' if r.get('all_unsure') else r.get('unsure', 0)):>6} "
            f"{r['median_ms']:>10.2f} {r['p90_ms']:>8.2f} {r['fps']:>7.1f} "
            f"{'-' if r.get('page_faults_per_frame') is None else format(r['page_faults_per_frame'], '.1f'):>7}" for r in rows]
    out.append("unsure: dice below the threshold, each read again (second look); 'all': the worst case, every die")
    out.append("faults: the process's minor page faults per frame (memory mapped in afresh each frame)")
    if two:
        out.append("\nagainst / first, median ms of the same frame, their reads alternating")
        case = lambda r: (r["threads"], r["dice"], r.get("kind", "d6"), bool(r.get("all_unsure")))  # noqa: E731
        firsts = {case(r): r for r in rows if r["reader"] == "first"}
        for r in rows:
            if r["reader"] == "against" and case(r) in firsts:
                t, n, kind, unsure = case(r)
                out.append(f"{t:>7} {n:>5} {kind:>8} {'all' if unsure else '':>6} "
                           f"{r['median_ms'] / firsts[case(r)]['median_ms']:>6.3f}x")
    timed = [r for r in rows if r.get("models_ms")]
    if timed:
        # in run order (the row with the most models first: a cascade's second classifier runs in few rows), 'other' last
        names = list(dict.fromkeys(k for r in sorted(timed, key=lambda r: -len(r["models_ms"])) for k in r["models_ms"]))
        names = [n for n in names if n != "other"] + ["other"]
        out.append("\nmedian ms per frame in each model's runs ('other': crops, decoding, the reader's Python)")
        out.append(f"{'reader':>8} " * two + f"{'threads':>7} {'dice':>5} {'kind':>8} {'unsure':>6} " + " ".join(f"{n:>{max(10, len(n))}}" for n in names))
        out += [f"{who(r)}{r['threads']:>7} {r['dice']:>5} {r.get('kind', 'd6'):>8} {('all' if r.get('all_unsure') else r.get('unsure', 0)):>6} "
                + " ".join(f"{r['models_ms'].get(n, 0.0):>{max(10, len(n))}.2f}" for n in names) for r in timed]
    return "\n".join(out)
