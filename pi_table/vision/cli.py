"""``pi-table read``, ``pi-table check``, ``pi-table eval`` and ``pi-table bench`` (../shared/INTERFACES.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pi_table.vision.dice import KINDS


def parse_kinds(text: str | None) -> tuple[str, ...] | None:
    """``"d6,d8"`` -> ("d6", "d8"); None -> None. ValueError naming an unknown kind."""
    if text is None:
        return None
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    if not kinds:
        raise ValueError(f"--kinds needs at least one die kind, got {text!r}")
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown die kind {kind!r} in --kinds (expected some of {', '.join(KINDS)})")
    return kinds


def parse_thresholds(text: str | None) -> tuple[float, ...]:
    """``"0.5,0.9"`` -> (0.5, 0.9); None -> (). ValueError naming a value that is no number in 0..1."""
    if text is None:
        return ()
    out = []
    for part in text.split(","):
        try:
            t = float(part)
        except ValueError:
            raise ValueError(f"--sweep: {part.strip()!r} is not a number") from None
        if not 0 <= t <= 1:
            raise ValueError(f"--sweep: threshold {t} is not in 0..1")
        out.append(t)
    return tuple(out)


def register(sub) -> None:
    """Add ``read``, ``check``, ``eval`` and ``bench`` to the ``pi-table`` parser."""
    p = sub.add_parser("read", help="read the dice in still images")
    p.add_argument("images", nargs="+", metavar="IMAGE")
    p.add_argument("--json", action="store_true", help="one JSON object per image, one per line")
    p.add_argument("--kinds", help="die kinds that may be reported, e.g. d6,d8,d10")
    p.add_argument("--crop", action="store_true", help="each image is one die, cropped")
    p.add_argument("--models", help="model folder (default: the shipped models/)")
    p.add_argument("--threads", type=int, default=0, help="inference threads (0 = all cores)")
    p.set_defaults(func=_read)

    p = sub.add_parser("check", help="check the camera: are the dice big enough and read (one frame)",
                       description="Read one frame as the table would and say, per die, how many pixels across it "
                                   "shows against what its kind needs, then what to change (hardware.md).")
    p.add_argument("images", nargs="*", metavar="IMAGE", help="photos to check (default: one frame from --source)")
    p.add_argument("--source", help="picamera, webcam:N, video:PATH, folder:DIR or demo (default: the Pi camera "
                                    "where one is present, else demo)")
    p.add_argument("--kinds", help="die kinds in play, e.g. d6,d10: every die is held to the most pixels any of them "
                                   "needs (default: each die to its own kind's)")
    p.add_argument("--json", action="store_true", help="one JSON object per frame, one per line")
    p.add_argument("--models", help="model folder (default: the shipped models/)")
    p.add_argument("--threads", type=int, default=0, help="inference threads (0 = all cores)")
    p.set_defaults(func=_check)

    p = sub.add_parser("eval", help="score the reader against a labelled folder")
    p.add_argument("folder", metavar="DIR", help="a labelled folder (images/ and YOLO labels/; a render folder's "
                   "classes.txt names its classes), a folder of such folders (e.g. ../shared/data/real), or with "
                   "--crop a folder of one-die crops")
    p.add_argument("--json", action="store_true", help="the figures as one JSON object (per folder, kind and die size)")
    p.add_argument("--kinds", help="die kinds that may be reported, and the only labelled dice scored (a mixed tray "
                   "read with one system's kinds); with one kind (--kinds d8), the YOLO classes "
                   "of a folder without classes.txt are its faces, CLASS = face value - 1 (a d10's 0 is 9, a tens "
                   "die's 30 is 3; a folder named like my-d10-tray gives its kind too; else d6)")
    p.add_argument("--crop", action="store_true", help="DIR holds one-die crops named by face value")
    p.add_argument("--cut-crops", type=float, metavar="MARGIN", help="score read --crop on dice cut from DIR's labelled "
                   "photos, each MARGIN times its box (1.0 tight, 1.8 loose)")
    p.add_argument("--cut-offset", type=float, metavar="F", help="with --cut-crops: each crop's centre moved F (0..0.4) "
                   "of its side right of and below its die, the die off the crop's centre (a rig's fixed region)")
    p.add_argument("--close-ups", type=float, metavar="FRAME", help="score read on close-ups of single dice made from "
                   "DIR's labelled photos: each die with FRAME times its box around it (1.2..10; 2: the die fills half "
                   "the picture), scaled to a 1500-pixel long side, as a phone held over one die sees it")
    p.add_argument("--held-out", action="store_true", help="only images the shipped model never trained on (models/splits.json)")
    p.add_argument("--calib", action="store_true", help="only the calib split the temperatures and thresholds were "
                   "fitted on (models/splits.json; renders: the one in 20 training keeps out); not with --held-out")
    p.add_argument("--limit", type=int, help="score only the first N images")
    p.add_argument("--sweep", metavar="T,T,...", help="also score the same reads with unreadable cut at each of "
                   "these thresholds (0..1), e.g. 0.5,0.8,0.9,0.95,0.98; whole photos, --crop, --cut-crops and --close-ups alike")
    p.add_argument("--boxes", choices=("die", "as-labelled"), default="die", help="die: the labels of folders that box "
                   "a die's pips (matteop65's) are grown to the whole die before matching, as the reader boxes dice "
                   "(default); as-labelled: match the label boxes as they are")
    p.add_argument("--border", type=float, metavar="FACTOR", help="read each photo set in a plain border FACTOR "
                   "(1..4) times its size, as a wide shot of the table shows the tray: its dice FACTOR times smaller")
    p.add_argument("--turn", type=int, metavar="DEGREES", help="read each photo turned 90, 180 or 270 degrees "
                   "clockwise, its labels with it (a phone held in portrait, the tray seen from another side)")
    p.add_argument("--colour", metavar="MODE", help="read each photo as another camera's colours: grey (a monochrome "
                   "camera), pale (half the saturation), warm or cool (white balance a quarter off)")
    p.add_argument("--fixed-labels", action="store_true", help="score against the labels with the kit's checked "
                   "corrections applied (pi_table/vision/label_fixes.json: dice the labels leave out, wrong faces, "
                   "loose boxes, each seen on its photo); default: the labels as published")
    p.add_argument("--misses", metavar="OUT", help="write OUT/misses.json and a contact sheet per data folder "
                   "(OUT/<folder>.jpg): every die not read right and every false die, label box green, read box red; "
                   "with --cut-crops, every crop not read right (written to OUT/crops/); with --close-ups, every "
                   "close-up whose die is not read right or that has a false die (written to OUT/close-ups/)")
    p.add_argument("--models", help="model folder (default: the shipped models/)")
    p.add_argument("--threads", type=int, default=0, help="inference threads (0 = all cores)")
    p.set_defaults(func=_eval)

    p = sub.add_parser("bench", help="recognition speed on this machine")
    p.add_argument("--json", action="store_true", help="the timings as one JSON object")
    p.add_argument("--repeats", type=int, default=30, help="timed reads per case")
    p.add_argument("--models", help="model folder (default: the shipped models/)")
    p.add_argument("--per-model", action="store_true",
                   help="also show the ms of each frame spent in each model's runs, and the rest")
    p.add_argument("--against", metavar="DIR", help="also time the models in DIR on the same frames, their reads "
                   "alternating with the first's, and give each frame's ratio (a fair speed comparison of two "
                   "model folders: a machine slowing down weighs on both)")
    p.set_defaults(func=_bench)


def _reader(args, threads=None):
    from pi_table.vision.reader import DiceReader

    if getattr(args, "threads", 0) < 0:
        raise ValueError(f"--threads must be >= 0, got {args.threads}")
    return DiceReader(args.models, threads=args.threads if threads is None else threads)


def _note_unread_kinds(reader, kinds) -> None:
    """A note on stderr for kinds in ``kinds`` the reader does not read (their dice are not
    reported); ValueError when it reads none of them."""
    unread = [k for k in kinds or () if k not in reader.kinds]
    if unread and len(unread) == len(kinds):
        raise ValueError(f"--kinds {','.join(kinds)}: this reader reads none of them (it reads {', '.join(reader.kinds)})")
    if unread:  # e.g. a skill check with a d12 in play: its dice are not reported, and the table should know
        print(f"pi-table: note: this reader does not read {', '.join(unread)} (it reads {', '.join(reader.kinds)}); "
              "such dice are not reported", file=sys.stderr)


def _check(args) -> int:
    from pi_table.vision.check import check_frame, format_check
    from pi_table.vision.reader import check_image_file, load_image

    kinds = parse_kinds(args.kinds)
    if args.images and args.source:
        raise ValueError("give IMAGE files or --source, not both")
    for path in args.images:  # every input checked before any work; decoded one at a time below
        check_image_file(path)
    frames = ((path, load_image(path)) for path in args.images)
    reader = _reader(args)
    _note_unread_kinds(reader, kinds)
    if not args.images:
        from pi_table.capture.sources import open_source

        source = open_source(args.source)
        try:
            frame = _settled_exposure_frame(source)
            if frame is None:
                raise ValueError(f"source {source.spec or args.source!r} gave no frame")
            frames = [(frame.name, frame.image_to_read())]
        finally:
            source.close()
    for name, image in frames:
        check = check_frame(reader, image, name=str(name), kinds=kinds)
        print(json.dumps(check.to_json()) if args.json else format_check(check), flush=True)
    return 0


#: Seconds of a camera's frames ``check`` lets go by before it reads one: a webcam's or the Pi
#: camera's first frames come while its automatic exposure is still settling, often dark.
EXPOSURE_SETTLE_S = 1.0


def _settled_exposure_frame(source):
    """The frame ``check`` reads from ``source``: its first for a file or photos, for a live camera
    the first frame :data:`EXPOSURE_SETTLE_S` seconds (on the frames' own clock) after its first,
    or its last frame if it stops sooner; None if it gives none."""
    frame = first = None
    for frame in source:
        first = frame.t if first is None else first
        if not getattr(source, "live", False) or frame.t - first >= EXPOSURE_SETTLE_S:
            break
    return frame


def _read(args) -> int:
    from pi_table.vision.reader import check_image_file, load_image

    kinds = parse_kinds(args.kinds)
    for path in args.images:  # a missing file or one that is no image: one clear error before any work
        check_image_file(path)
    reader = _reader(args)
    _note_unread_kinds(reader, kinds)
    broken = []
    for path in args.images:  # one image decoded at a time: a batch of big photos never sits in memory at once
        try:
            image = load_image(path)
        except ValueError as exc:  # an image whose header is fine and whose body is not (a cut-off file)
            broken.append((path, str(exc)))
            continue
        reading = (reader.read_crop if args.crop else reader.read)(image, name=path, kinds=kinds)
        if args.json:
            print(json.dumps(reading.to_json()), flush=True)
        else:
            print(f"{path}: {len(reading.dice)} dice, {reading.width}x{reading.height}, {reading.ms:.1f} ms")
            for die in reading.dice:
                box = ",".join(f"{v:.0f}" for v in die.box)
                face = die.face or "?"
                print(f"  {die.kind:8} {face:>3}  {die.status:10} confidence {die.confidence:.3f}  box {box}")
    if broken:  # the others were read and printed; the exit status still says one was not
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        raise ValueError(f"{broken[0][1]}{more}")
    return 0


def _eval(args) -> int:
    from pi_table.vision.evaluate import (check_close_up_frame, check_colour, check_cut_margin, check_cut_offset,
                                          check_turn, evaluate, evaluate_close_ups, evaluate_crops, evaluate_cut_crops,
                                          format_report, misses_folder)

    kinds = parse_kinds(args.kinds)
    folder = Path(args.folder)
    if not folder.exists():
        raise FileNotFoundError(f"no such folder: {folder}")
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    sweep = parse_thresholds(args.sweep)
    modes = [name for name, on in (("--crop", args.crop), ("--cut-crops", args.cut_crops is not None),
                                   ("--close-ups", args.close_ups is not None)) if on]
    if len(modes) > 1:
        raise ValueError(f"{modes[0]} does not go with {modes[1]}")
    if args.calib and (args.held_out or modes):
        raise ValueError("--calib scores the calib split of labelled photos; it does not go with --held-out, --crop, "
                         "--cut-crops or --close-ups")
    if args.border is not None and (modes or args.misses is not None):
        raise ValueError(f"--border reads whole labelled photos; it does not go with {(modes or ['--misses'])[0]}")
    if args.turn is not None and (modes or args.misses is not None):
        raise ValueError(f"--turn reads whole labelled photos; it does not go with {(modes or ['--misses'])[0]}")
    if args.colour is not None and (modes or args.misses is not None):
        raise ValueError(f"--colour reads whole labelled photos; it does not go with {(modes or ['--misses'])[0]}")
    if args.fixed_labels and args.crop:
        raise ValueError("--fixed-labels corrects labelled photos' labels; it does not go with --crop")
    if args.misses is not None and modes and modes[0] not in ("--cut-crops", "--close-ups"):
        raise ValueError(f"--misses shows the dice of labelled photos (whole, cut out with --cut-crops or in "
                         f"close-ups with --close-ups); it does not go with {modes[0]}")
    if args.border is not None and not 1 <= args.border <= 4:
        raise ValueError(f"--border must be 1..4, got {args.border}")
    if args.turn is not None:
        check_turn(args.turn)
    if args.colour is not None:
        check_colour(args.colour)
    if args.cut_offset is not None and args.cut_crops is None:
        raise ValueError("--cut-offset moves the crops of --cut-crops; it needs --cut-crops")
    if args.cut_crops is not None:  # before --misses makes its folder
        check_cut_margin(args.cut_crops)
        check_cut_offset(args.cut_offset or 0.0)
    if args.close_ups is not None:
        check_close_up_frame(args.close_ups)
    if args.misses is not None:
        misses_folder(Path(args.misses))  # a folder it cannot write is refused before the slow part
    misses = [] if args.misses is not None else None
    fixes = None
    if args.fixed_labels:
        from pi_table.vision.dataset import load_label_fixes

        fixes = load_label_fixes()
    reader = _reader(args)
    if args.crop:
        result = evaluate_crops(reader, folder, kinds, sweep=sweep)
    elif args.cut_crops is not None:
        result = evaluate_cut_crops(reader, folder, args.cut_crops, kinds, held_out=args.held_out, limit=args.limit,
                                    die_boxes=args.boxes == "die", fixes=fixes, misses=misses,
                                    misses_dir=None if misses is None else Path(args.misses), sweep=sweep,
                                    offset=args.cut_offset or 0.0)
    elif args.close_ups is not None:
        result = evaluate_close_ups(reader, folder, args.close_ups, kinds, held_out=args.held_out, limit=args.limit,
                                    die_boxes=args.boxes == "die", fixes=fixes, misses=misses,
                                    misses_dir=None if misses is None else Path(args.misses), sweep=sweep)
    else:
        result = evaluate(reader, folder, kinds, held_out=args.held_out, limit=args.limit, sweep=sweep,
                          die_boxes=args.boxes == "die", calib=args.calib, misses=misses,
                          border=1.0 if args.border is None else args.border, fixes=fixes, turn=args.turn or 0,
                          colour=args.colour or "")
    result["models"] = str(reader.models)
    result["boxes"] = args.boxes
    result["held_out"] = bool(args.held_out)
    result["calib"] = bool(args.calib)
    result["fixed_labels"] = bool(args.fixed_labels)
    if args.border is not None:
        result["border"] = args.border
    if args.turn is not None:
        result["turn"] = args.turn
    if args.colour is not None:
        result["colour"] = args.colour
    if args.cut_offset is not None:
        result["cut_offset"] = args.cut_offset
    if misses is not None:
        from pi_table.vision.evaluate import write_misses

        written = write_misses(misses, Path(args.misses))
        result["misses"] = {"count": len(misses), "files": [str(p) for p in written]}
    if args.json:
        print(json.dumps(result))
    else:
        print(format_report(result))
        if misses is not None:
            print(f"\nmisses: {len(misses)} (dice not read right, false dice): {', '.join(map(str, written))}")
    return 0


def _bench(args) -> int:
    import os

    from pi_table.vision.bench import bench, format_rows, machine, machine_line
    from pi_table.vision.reader import DiceReader

    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    against = None
    if args.against is not None:
        DiceReader(args.against, threads=1)  # a folder without models is refused before the slow part
        against = lambda threads: DiceReader(args.against, threads=threads)  # noqa: E731
    rows = bench(lambda threads: DiceReader(args.models, threads=threads), repeats=args.repeats,
                 per_model=args.per_model, numbered_counts=(20,), against=against)
    if not any(r.get("kind") == "numbered" for r in rows):
        print("pi-table bench: no numbered-dice frame timed (it needs a numeral model and the renderer, whose Pillow "
              "comes with the train extra: pip install -e '.[train]')", file=sys.stderr)
    if args.json:
        print(json.dumps({"cpu_count": os.cpu_count(), "machine": machine(), "rows": rows,
                          **({"against": args.against} if against is not None else {})}))
    else:
        print(f"640x640 frames, model load excluded, {args.repeats} reads per case, {os.cpu_count()} cores")
        print(machine_line(machine()))
        if against is not None:
            print(f"first: {args.models or 'the shipped models/'}; against: {args.against}")
        print(format_rows(rows))
    return 0
