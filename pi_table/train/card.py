"""Write the model cards of a trained reader from measured figures: ``python3 -m pi_table.train.card``.

    python3 -m pi_table.train.card --models models --data ../shared/data/real [--renders renders/valid] \
        [--close-up-renders renders/big-valid] [--lofo runs/lofo-nellbyler=../shared/data/real/matteop65-d6-desk/Valid ...] [--note "..."]

Every figure in the cards is measured here by the same code as ``pi-table eval`` and
``pi-table bench``, and each table names the command that reproduces it; the models' options and
training commands come from ``reader.json`` and the training logs. The cards are rewritten whole:
how each shipped choice was made, and what was tried and not shipped, is kept by hand in
``models/history/<card>`` (each card points there), which this never writes.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

from pi_table.cli import Parser


def _row(name: str, s: dict) -> str:
    return (f"| {name} | {s['images']} | {s['dice']} | {s['read_right']:.2%} | {s['recall']:.2%} | {s['precision']:.2%} | "
            f"{s['wrong_at_ok']:.2%} | {s['unreadable']:.2%} | {s['false_dice_per_100_images']:.1f} | {s['ece']:.3f} | "
            f"{s.get('read_right_centre', 0):.2%} | {s.get('recall_centre', 0):.2%} |")


def _held_out_rows(reader, data: Path, cmds: list[str], option: str, values, label) -> list[str]:
    """The accuracy rows of ``data``'s held-out photos read with ``pi-table eval DATA --held-out --OPTION V`` for each
    V of ``values`` (``evaluate``'s keyword ``option``), one per data folder and value, named "FOLDER, label(V)"; each
    value's command is appended to ``cmds``."""
    from pi_table.vision import evaluate as ev

    rows = []
    for value in values:
        res = ev.evaluate(reader, data, held_out=True, **{option: value})
        rows += [_row(f"{name}, {label(value)}", s) for name, s in res["folders"].items()]
        cmds.append(f"pi-table eval {data} --held-out --{option} {value}")
    return rows


def coloured_rows(reader, data: Path, cmds: list[str]) -> list[str]:
    """The accuracy rows of ``data``'s held-out photos read as other cameras' colours (``pi-table eval DATA
    --held-out --colour MODE``, :data:`pi_table.vision.evaluate.COLOURS`: grey, pale, warm, cool), one per data folder
    and colour; each colour's command is appended to ``cmds``."""
    from pi_table.vision.evaluate import COLOURS

    return _held_out_rows(reader, data, cmds, "colour", COLOURS, str)


def turned_rows(reader, data: Path, cmds: list[str]) -> list[str]:
    """The accuracy rows of ``data``'s held-out photos read turned 90, 180 and 270 degrees clockwise, their labels
    with them (``pi-table eval DATA --held-out --turn D``: a phone held in portrait, a camera on another side of the
    tray), one per data folder and turn; each turn's command is appended to ``cmds``."""
    return _held_out_rows(reader, data, cmds, "turn", (90, 180, 270), lambda degrees: f"turned {degrees} degrees")


def history_line(name: str) -> str:
    """The line near the top of card ``name`` (``classifier.md``, ...) pointing to its hand-kept record."""
    return f"How each shipped choice was made, and what was tried and not shipped: models/history/{name}."


def cascade_texts(classifier: dict) -> tuple[str, str]:
    """For reader.json's ``classifier`` entry, the classifier card's line after its training command and
    its sentence on the cascade (``cascade`` TAU, :class:`pi_table.vision.reader.Classifier`): both ""
    without one, or for a single classifier (nothing to cascade to)."""
    tau = classifier.get("cascade")
    if tau is None or not isinstance(classifier.get("file"), list) or len(classifier["file"]) < 2:
        return "", ""
    command = (f"\n# then reader.json's classifier `cascade` set to {tau:g}: what `--cascade {tau:g}` on the calibrating "
               "run writes, after the thresholds (models/history/classifier.md, \"Cascade, d6 faces only\")")
    sentence = (f"\nCascade, for speed (Wang et al. 2022, \"Wisdom of Committees\"): in a die's first read the second "
                f"classifier reads only the crops that the first alone does not read as a d6 face at a calibrated "
                f"{tau:g} or more; a numbered shape or `none` always goes to both. The thresholds were chosen on the "
                f"whole pair's reads.")
    return command, sentence


def recorded_options(recorded: dict, parse_args, base_argv: list[str], skip=()) -> list[str]:
    """The command-line options of a run whose training log recorded ``recorded`` (``{dest: str(value)}``,
    as the trainers write ``vars(args)``) that differ from ``parse_args(base_argv)``'s defaults, in the
    log's order: ``["--calib-renders renders/big", "--int8", ...]``. A flag is given when it was on,
    each path of a list as its own option, a tuple as its comma-separated values; ``skip``'s dests
    (those the base command names) are left out."""
    defaults = {k: str(v) for k, v in vars(parse_args(base_argv)).items()}
    out = []
    for key, value in recorded.items():
        if key in skip or key not in defaults:
            continue
        if isinstance(value, list):  # a log that kept a list of paths as a list (cocked-log.json's renders)
            value = "[" + ", ".join(f"PosixPath('{v}')" for v in value) + "]"
        if value == defaults[key]:
            continue
        option = "--" + key.replace("_", "-")
        paths = re.findall(r"PosixPath\('([^']*)'\)", value)
        if value in ("True", "False"):
            out += [option] if value == "True" else []
        elif paths or value == "[]":
            out += [f"{option} {path}" for path in paths]
        elif value.startswith("(") and value.endswith(")"):
            out.append(f"{option} {value[1:-1].replace(' ', '')}")
        else:
            out.append(f"{option} {value}")
    return out


#: The README's full training run: the classifier card's command unless its log records another.
DEFAULT_TRAIN_COMMAND = "python3 -m pi_table.train --data ../shared/data/real --renders renders/train --out models/ --seed 0"


def train_command_from_log(recorded: dict, parse_args) -> str:
    """The command of the reader's training run (``python3 -m pi_table.train``) whose log recorded ``recorded``
    (its ``args``): the data, ``--out``, the seed, then every other option it set; a run of one ``--member`` is
    given as the two side by side it was (the later one calibrates), its files then copied into models/."""
    data = " ".join(f"--data {d}" for d in re.findall(r"PosixPath\('([^']*)'\)", recorded.get("data", ""))) \
        or "--data ../shared/data/real"
    out = recorded.get("out", "models/")
    extra = recorded_options(recorded, parse_args, ["--data", "x", "--out", "y"],
                             skip=("data", "out", "seed", "smoke", "member"))
    command = " ".join(["python3 -m pi_table.train", data, *extra, "--out", out, "--seed", recorded.get("seed", "0")])
    if recorded.get("member", "None") != "None":
        command += (f" --member K\n# K = 1 and 2 side by side (a core each; the run that ends last calibrates), then "
                    f"{out}'s classifiers, reader.json and train-log.json copied into models/")
    return command


def numerals_command(recorded: dict, out: str | None = None) -> str:
    """The command of a numeral-model training run (``python3 -m pi_table.train.numerals``) whose log recorded
    ``recorded`` (its ``args``): its renders and valid folders, ``--out`` (``out`` in place of the recorded one
    where given: a model trained elsewhere and copied), seed and threads, then every other option it set."""
    from pi_table.train.numerals import parse_args as numerals_args

    def paths(key: str, default: str) -> list[str]:
        return re.findall(r"PosixPath\('([^']*)'\)", str(recorded.get(key, ""))) or [default]

    extra = recorded_options(recorded, numerals_args, ["--renders", "x", "--out", "y"],  # oversample_weights: --oversample's, parsed
                             skip=("renders", "valid", "out", "seed", "threads", "smoke", "oversample_weights"))
    return " ".join(["python3 -m pi_table.train.numerals", *(f"--renders {r}" for r in paths("renders", "renders/train")),
                     *(f"--valid {v}" for v in paths("valid", "renders/valid")),
                     f"--out {out or recorded.get('out', 'models/')}", f"--seed {recorded.get('seed', 0)}",
                     f"--threads {recorded.get('threads', 2)}", *extra])


def kept_lofo(history: Path) -> str:
    """The leave-one-folder-out table and the paragraph under it, copied from the classifier's
    hand-kept record ``history`` (models/history/classifier.md) as last measured there; "" when
    the record has none."""
    if not history.is_file():
        return ""
    found = re.search(r"^Leave one folder out \(.*?(?=^## )", history.read_text(), re.S | re.M)
    return found.group(0).strip() if found else ""


HEADER = ("| data (held out) | images | dice | read right | detection recall | precision | wrong at `ok` | unreadable | "
          "false dice / 100 images | ECE | read right (c) | recall (c) |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def _rendered_rows(reader, folder: Path, cmds: list[str]) -> tuple[dict, list[str]]:
    """A rendered folder scored per die kind, whole pictures (``pi-table eval FOLDER``, whose result
    comes first) and each die cut out at 1.3 times its box (``--cut-crops 1.3``): table rows, and
    the two commands appended to ``cmds``."""
    from pi_table.vision.evaluate import evaluate, evaluate_cut_crops

    whole = evaluate(reader, folder)
    rows = [_row(f"{folder.name}: {kind}", s) for kind, s in whole["all"].get("kinds", {}).items()]
    cut = evaluate_cut_crops(reader, folder, 1.3)
    rows += [_row(f"{folder.name}: {kind}, cut at 1.3x the box", s) for kind, s in cut["all"].get("kinds", {}).items()]
    cmds += [f"pi-table eval {folder}", f"pi-table eval {folder} --cut-crops 1.3"]
    return whole, rows


def main(argv=None) -> int:
    p = Parser(prog="python3 -m pi_table.train.card", description=__doc__.splitlines()[0])
    p.add_argument("--models", type=Path, default=Path("models"))
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--renders", type=Path, help="rendered validation set (held-out fonts, colours, backgrounds)")
    p.add_argument("--close-up-renders", type=Path, help="rendered close-ups of held-out fonts, colours and "
                   "backgrounds (render --die-px 90,220 --max-dice 3 --split valid): a few big, sharp dice a picture")
    p.add_argument("--lofo", action="append", default=[], help="MODELS=DIR: a leave-one-folder-out model and the folder it never saw")
    p.add_argument("--train-command", default=DEFAULT_TRAIN_COMMAND, help="the classifier card's training command "
                   "(default: the one its train-log.json records, or this for a log that was recalibrated since)")
    p.add_argument("--note", default="")
    args = p.parse_args(argv)
    # Every folder is checked before the minutes of measuring: one line naming the option, exit 2.
    for option, folder in (("--data", args.data), ("--renders", args.renders), ("--close-up-renders", args.close_up_renders)):
        if folder is not None and not folder.is_dir():
            p.error(f"{option}: no such folder: {folder}")
    lofo = []
    for item in args.lofo:
        models, eq, folder = item.partition("=")
        if not (eq and models and folder):
            p.error(f"--lofo must be MODELS=DIR, got {item!r}")
        if not Path(folder).is_dir():
            p.error(f"--lofo {item}: no such folder: {folder}")
        lofo.append((Path(models), Path(folder)))

    from pi_table.train.__main__ import parse_args as train_args  # the recorded runs' options are its
    from pi_table.vision.bench import bench, machine, machine_line
    from pi_table.vision.dataset import load_label_fixes
    from pi_table.vision.evaluate import evaluate, evaluate_close_ups, evaluate_cut_crops
    from pi_table.vision.reader import BIG_NUMBERED_THRESHOLD, SMALL_DIE, DiceReader, model_files

    def reader_of(option: str, models: Path):
        """The reader of the model folder ``models``, which must hold its split (splits.json) too."""
        try:
            reader = DiceReader(models, threads=0)
        except (OSError, ValueError) as e:
            p.error(f"{option}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        if not (Path(models) / "splits.json").is_file():
            p.error(f"{option}: no splits.json in {models} (the split its reader was trained on)")
        return reader

    reader = reader_of("--models", args.models)
    lofo_readers = [(reader_of("--lofo", models), models, folder) for models, folder in lofo]
    config = reader.config
    sweep = sorted({0.5, 0.8, 0.9, 0.95, float(config["threshold"])})
    real = evaluate(reader, args.data, held_out=True, sweep=sweep)
    rows = [_row(name, s) for name, s in real["folders"].items()]
    sweep_text = ",".join(f"{t:g}" for t in sweep)
    cmds = [f"pi-table eval {args.data} --held-out --sweep {sweep_text}"]
    fixed = evaluate(reader, args.data, held_out=True, fixes=load_label_fixes())
    rows += [_row(f"{name}, labels fixed", s) for name, s in fixed["folders"].items()]
    cmds.append(f"pi-table eval {args.data} --held-out --fixed-labels")
    crop_rows = []
    for margin in (1.0, 1.8):
        res = evaluate_cut_crops(reader, args.data, margin, held_out=True)
        crop_rows += [_row(f"{name}, cut at {margin}x the box", s) for name, s in res["folders"].items()]
        cmds.append(f"pi-table eval {args.data} --held-out --cut-crops {margin}")
    res = evaluate_close_ups(reader, args.data, 2.0, held_out=True)
    close_rows = [_row(f"{name}, close-up (die 1/2 of the picture)", s) for name, s in res["folders"].items()]
    cmds.append(f"pi-table eval {args.data} --held-out --close-ups 2")
    wide_rows = []
    for factor in (1.5, 2.0, 3.0):
        res = evaluate(reader, args.data, held_out=True, border=factor)
        wide_rows += [_row(f"{name}, in a border {factor:g}x its size", s) for name, s in res["folders"].items()]
        cmds.append(f"pi-table eval {args.data} --held-out --border {factor:g}")
    turn_rows = turned_rows(reader, args.data, cmds)
    colour_rows = coloured_rows(reader, args.data, cmds)
    render_rows: list[str] = []
    if args.renders:
        rend, render_rows = _rendered_rows(reader, args.renders, cmds)
        res = evaluate_close_ups(reader, args.renders, 2.0)
        close_rows += [_row(f"{args.renders.name}: {kind}, close-up (die 1/2 of the picture)", s)
                       for kind, s in res["all"].get("kinds", {}).items()]
        cmds.append(f"pi-table eval {args.renders} --close-ups 2")
        numbered = numbered_frame_ms(DiceReader(args.models, threads=1), args.renders)
    close_rend, rendered_close_rows = (_rendered_rows(reader, args.close_up_renders, cmds) if args.close_up_renders
                                       else (None, []))
    lofo_rows = []
    for lofo_reader, models, folder in lofo_readers:
        trained = json.loads((models / "splits.json").read_text())["trained_on"]
        # --held-out: the other folder's valid split, the same images as the shipped model's row
        # (a folder that is all valid, like matteop65's Valid, is scored whole either way).
        res = evaluate(lofo_reader, folder, held_out=True)
        for name, s in res["folders"].items():
            lofo_rows.append(_row(f"{name} (trained only on {', '.join(trained)})", s))
        cmds.append(f"pi-table eval {folder} --held-out --models {models}")
    speed = bench(lambda t: DiceReader(args.models, threads=t), repeats=30)
    cls_files = model_files(config["classifier"])
    close_up = config["detector"].get("close_up_file")  # the zoomed-out look's own detector, if any
    sizes = {f: (args.models / f).stat().st_size for f in ("detector.onnx", *([close_up] if close_up else []), *cls_files,
                                                             "numerals.onnx", "d6-numerals.onnx", "cocked.onnx")
             if (args.models / f).is_file()}
    log = json.loads((args.models / "train-log.json").read_text()) if (args.models / "train-log.json").is_file() else {}
    classes = config["classifier"]["classes"]
    renders_used = any("renders" in t for t in json.loads((args.models / "splits.json").read_text())["trained_on"])

    accuracy = "\n".join([HEADER, *rows])
    accuracy += (f"\n\n'labels fixed': the same photos scored against their labels with the kit's checked corrections "
                 f"(`--fixed-labels`, {fixed['label_fixes']} of pi_table/vision/label_fixes.json on these photos: dice the "
                 f"published labels leave out, wrong faces, loose boxes, each seen on its photo). They were found by "
                 f"looking at the dice this reader and the labels disagree on, so a wrong label the reader agrees with "
                 f"stays.")
    chosen_by = log.get("recalibrated", {}).get("args") or log.get("args", {})  # the run that chose the thresholds
    kind_thresholds = ", ".join(f"{kind} {t:g}" for kind, t in config.get("thresholds", {}).items())
    # the numbered kinds' thresholds: chosen again on their own (--numbered-only) since, or with the rest
    numbered_by = log.get("numbered_recalibrated", {}).get("args") or chosen_by
    numbered_target = f"{100 * float(numbered_by.get('numbered_wrong_target', 0.003)):g}%"  # their wrong-at-ok target
    floor = numbered_by.get("numbered_floor", "None")
    numbered_floor = (f", none below {float(floor):g} (`--numbered-floor`: models/history/numerals.md, \"Four times the "
                      f"steps\" and \"A lower floor for the surer model\")" if floor not in (None, "None") else "")
    numbered_rule = (f" (the numbered kinds' own, {kind_thresholds}, on the calib renders at "
                     f"{numbered_target}: numerals.md)"
                     if kind_thresholds else "")
    accuracy += (f"\n\nWhat the `unreadable` threshold costs: the same reads, cut at other thresholds (`--sweep`). "
                 f"The shipped threshold, {config['threshold']}, was chosen on the calib split as the lowest at which "
                 f"the calibrated face confidences (the chance of the right face given a die) expect at most "
                 f"{100 * float(chosen_by.get('wrong_target', 0.003)):g}% wrong at `ok`{numbered_rule}; it was not "
                 f"chosen on these images.\n\n"
                 "| data (held out) | threshold | read right | wrong at `ok` | unreadable |\n|---|---|---|---|---|\n"
                 + "\n".join(f"| {name} | {r['threshold']:g}{' (shipped)' if r['threshold'] == config['threshold'] else ''} "
                              f"| {r['read_right']:.2%} | {r['wrong_at_ok']:.2%} | {r['unreadable']:.2%} |"
                              for name, table in real["sweep"].items() if name != "all" for r in table))
    accuracy += ("\n\n`read --crop` on the same held-out dice, each cut out of its photo (one die per image, "
                 "as someone else's crops; detection is then given):\n\n" + "\n".join([HEADER, *crop_rows]))
    if render_rows:
        accuracy += ("\n\nRendered validation set (fonts, colours and backgrounds training never saw; renders, not "
                     "photos), per die kind, whole photos and `read --crop` on each die cut out:\n\n"
                     + "\n".join([HEADER, *render_rows]))
    accuracy += ("\n\nClose-ups: each of the same held-out dice with twice its box around it, scaled to a "
                 "1500-pixel picture and read whole (`read`, not `--crop`), as a phone held over one die sees it. "
                 "The detector learned dice up to about a quarter of its input across; these are found by the "
                 "reader's second, zoomed-out look (reader.py, \"Big dice\"). Only the die in the middle is scored; "
                 "false dice here are detections lying over half inside it that are not it (a pip taken for a die):"
                 "\n\n" + "\n".join([HEADER, *close_rows]))
    if rendered_close_rows:
        accuracy += ("\n\nRendered close-ups (fonts, colours and backgrounds training never saw): at most three dice "
                     "a picture, 90 to 220 pixels across in 640, sharp, as a phone held over a few dice on a tray shows "
                     "them (the mounted camera's renders have them 28 to 70), whole pictures and `read --crop` on each "
                     "die cut out:\n\n" + "\n".join([HEADER, *rendered_close_rows]))
    accuracy += ("\n\nWide shots: each of the same held-out photos read centred in a plain border (the colour of "
                 "its edge) 1.5, 2 and 3 times its size, as a photo of the whole table shows the tray, its dice that "
                 "many times smaller. The detector learned dice 12 to 90 input pixels across; a frame whose dice come "
                 f"out under {SMALL_DIE:g} is looked at again enlarged, and again while they still come out that small "
                 "(reader.py, \"Small dice\"):\n\n" + "\n".join([HEADER, *wide_rows]))
    accuracy += ("\n\nTurned photos: each of the same held-out photos read turned 90, 180 and 270 degrees clockwise, "
                 "its labels with it, as a phone held in portrait or a camera on another side of the tray sees it. "
                 "Training turns its samples by quarter turns too, but the nets are not turned with them "
                 "(models/history/detector.md, \"Turned photos\"):\n\n" + "\n".join([HEADER, *turn_rows]))
    accuracy += ("\n\nAnother camera's colours: each of the same held-out photos read grey (a monochrome camera), pale "
                 "(half the saturation), warm or cool (white balance a quarter off). The detector's training greys a "
                 "tenth of its samples and moves white balance about an eighth; the classifiers' crops (--cls-augment "
                 "0.6) 6% and about 7% (models/history/classifier.md, \"Another camera's colour\"):\n\n" + "\n".join([HEADER, *colour_rows]))
    if lofo_rows:
        accuracy += ("\n\nLeave one folder out (a model trained on one real folder only, scored on the other; "
                     "the honest figure for trays and cameras it never saw):\n\n" + "\n".join([HEADER, *lofo_rows]))
    elif kept := kept_lofo(args.models / "history" / "classifier.md"):
        accuracy += ("\n\n### Leave one folder out: as last measured, not by this run\n\n"
                     "Not measured on " + date.today().isoformat() + ": the leave-one-folder-out models are not kept "
                     "with the shipped ones. To measure them again, train them with the README's commands (\"leave one "
                     "folder out\": `python3 -m pi_table.train ... --train-folders FOLDER --ensemble 1 --out "
                     "runs/lofo-...`) and run this card writer with `--lofo MODELS=DIR` for each. "
                     "The last measurement, copied from models/history/classifier.md:\n\n" + kept)
    speed_table = "\n".join(["| threads | dice in frame | of them unsure | median ms | p90 ms | frames/s |",
                             "|---|---|---|---|---|---|"]
                            + [f"| {r['threads']} | {r['dice']} | {'all (worst case)' if r['all_unsure'] else r['unsure']} "
                               f"| {r['median_ms']} | {r['p90_ms']} | {r['fps']} |" for r in speed])
    speed_table = machine_line(machine()) + "\n\n" + speed_table
    if any(r["all_unsure"] for r in speed):
        speed_table += ("\n\nUnsure dice (below the threshold) are read again (second look): the frame's time grows "
                        "with them; 'all' is the worst case, every die unsure.")
    data_text = (
        "Real photos: `../shared/data/real` (`nellbyler-d6-tray`, BSD-3-Clause, © 2019 Nell Byler; "
        "`matteop65-d6-desk`, MIT, © 2021 Matteo Anthony Penlington). Split per folder with the seed, "
        "listed image by image in `splits.json`: nellbyler 20% valid / 8% calib / rest train; "
        "matteop `Valid` all valid, `Train` 10% calib / rest train. Training never sees valid or calib; "
        "calib only fits the confidence temperature and picks the `unreadable` threshold. matteop65's pip "
        "boxes are grown to whole-die boxes before training (see Accuracy)."
    )
    if renders_used:
        data_text += (" **d8, d10 and d10-tens were trained on renders only** (`python3 -m pi_table.train.render`, "
                      "see docs/renders.md): there are no public labelled photos of real d8/d10 faces. "
                      + ("Rendered d6 taught the classifier their faces too (pip styles, colours and materials "
                         "the two photo folders lack), and the detector to find them."
                         if log.get("args", {}).get("render_d6_faces", "False") == "True" else
                         "d6 faces were learnt from the real photos; rendered d6 only taught the classifier that "
                         "they are d6 (not which face), and the detector to find them."))
    train_command = args.train_command
    recalibrated = log.get("recalibrated")
    largs = log.get("args", {})
    if not recalibrated and largs and args.train_command == DEFAULT_TRAIN_COMMAND:
        train_command = train_command_from_log(largs, train_args)
    if recalibrated:
        # the weights are that command's; the temperature and thresholds were fitted again since (and, with --int8,
        # the float classifiers quantised first): the options that run was given, from its log
        rargs = recalibrated.get("args", {})
        extra = recorded_options(rargs, train_args, ["--data", "x", "--out", "y"],
                                 skip=("data", "renders", "out", "seed", "threads", "smoke", "calibrate_only"))
        if not rargs:  # a log from before the options were recorded
            extra = [f"--calib-renders {r}" for r in recalibrated.get("calib_renders", [])]
        what = ("the classifiers' weights quantised to int8 (`--int8`) and the temperatures and thresholds fitted again "
                "on the calib split (the detector's weights unchanged)" if rargs.get("int8") == "True" else
                "the temperature and thresholds fitted again on the calib split (weights unchanged)")
        if close_up and rargs and rargs.get("close_up_from", "None") == "None":
            what += (f"; the close-up detector `{close_up}` was already in the folder "
                     f"(`--close-up-from runs/detbig` copies it there, detector.md)")
        train_command += (f"\n# then {what} ({recalibrated.get('seconds', '?')} s):\n"
                          + " ".join([args.train_command, *extra, "--calibrate-only"]))
    cascade_command, cascade_text = cascade_texts(config["classifier"])
    if "--cascade" not in train_command:  # a run given --cascade wrote it itself
        train_command += cascade_command
    today = date.today().isoformat()
    common = f"""Command that trained it (CPU, {log.get('args', {}).get('threads', '?')} threads, seed {config.get('seed', 0)}, {log.get('seconds', '?')} s):

```sh
{train_command}
```

## Data

{data_text}

## Accuracy (measured by `{'`, `'.join(cmds)}`)

A die counts as read right when a detection overlaps its labelled box with IoU >= 0.5, its
status is `ok` and its face is the labelled one. Wrong at `ok`: of the dice reported `ok`,
the share with a wrong face. ECE: expected calibration error of the confidence (10 bins).
`matteop65-d6-desk` labels box a die's pips (a one's box is its single pip): they are grown to the
whole die (GrabCut, `pi_table/vision/dataset.py` `grow_pip_box`) for training and for matching, as
every other source boxes the whole die (`--boxes as-labelled` scores the raw labels).
(c): the looser match, a labelled die found when its box centre lies inside a detection
whatever the overlap.

{accuracy}

## Speed (measured by `pi-table bench`, 640x640 frames, model load excluded, on {today} on the CPU named below)

Timings depend on the CPU (the line below names the one these were taken on) and on the machine's load that
day (a shared build machine has timed the same model from 19 ms to 59 ms for 20 dice on different days):
compare timings taken on the same machine and day only. Figures from other machines and days are in the
models' records (models/history/).

{speed_table}

{args.note}
"""
    det = config["detector"]
    cls = config["classifier"]
    box_text = "."
    if reader.classifier.refines:
        box_text = (f", and `box` Nx4, the die's box in the crop's frame (centre offset in crop sides, log width and "
                    f"height in crop sides; Ren et al. 2015): the reader moves the detector's box there, "
                    f"with {config.get('refine', 0)} extra pass(es) reading a re-cut crop for every die and "
                    f"{config.get('refine_unsure', 0)} for a die below its threshold (`refine_unsure`), "
                    f"{config.get('recut_numbered', config.get('refine_unsure', 0))} for a numbered die whose numeral "
                    f"is still below its kind's (`recut_numbered`). Trained with copy-paste "
                    f"(Dwibedi et al. 2017): {log.get('args', {}).get('paste', '?')} of the detector's and "
                    f"classifier's samples have real dice pasted onto synthetic surfaces neither folder has.")
    close_up_text = (f", and the close-up detector `{close_up}` ({sizes[close_up] / 1e6:.2f} MB), the zoomed-out second "
                     f"look's (reader.py, \"Big dice\")" if close_up in sizes else "")
    big_log = (json.loads((args.models / "detector-big-log.json").read_text())
               if (args.models / "detector-big-log.json").is_file() else {})
    big_command = " ".join(["python3 -m pi_table.train", *recorded_options(
        big_log.get("args", {}), train_args, ["--data", "x", "--out", "y"], skip=("seed", "threads", "smoke")),
        f"--seed {big_log.get('args', {}).get('seed', '?')}"])
    made_text = "".join(f"\n\n{text}" for text in (
        f"train-log.json's note on how the shipped files were made: {log['detector_note']}." if log.get("detector_note") else "",
        f"The close-up detector `{close_up}` is the detector trained by `{big_command}` ({big_log.get('seconds', '?')} s, "
        f"detector-big-log.json), copied into the folder by the recalibration's `--close-up-from`."
        if close_up in sizes and big_log.get("args") else ""))
    (args.models / "detector.md").write_text(f"""# detector.onnx — finds every die in a tray photo

{history_line("detector.md")}

Size {sizes['detector.onnx'] / 1e6:.2f} MB{close_up_text} (all shipped models together {sum(sizes.values()) / 1e6:.2f} MB).
CenterNet-style fully convolutional net (Zhou et al. 2019, "Objects as Points"): input `image`
float32 1x3xHxW RGB 0..1, the photo scaled so its long side is {det['input']} px and padded to a
multiple of 32; outputs at stride 4 `heat` (die centres, 0..1), `size_logit` (box w, h in cells before
their softplus, which the reader takes at the peaks), `offset` (sub-cell centre). Peaks >= {det['threshold']} are detections. Read by
`pi_table/vision/reader.py` (onnxruntime + OpenCV). The classifier (classifier.md) then reads each
box and rejects those that are not dice.{made_text}

{common}""")
    views = int(config.get("second_look", 1))
    look_text = (f"\nSecond look: a die below its kind's threshold is read again from its crop turned by "
                 f"{({4: 'quarter turns', 8: 'quarter turns, each also mirrored,'}).get(views, 'a half turn')} and the {views} views' logits are averaged "
                 f"(test-time augmentation, paid only for unsure dice; the threshold is chosen with it on)."
                 if views > 1 else "")
    shape_text = (" (`KIND:*`: a numbered die told by its shape only; `numerals.onnx` reads its numeral, see numerals.md)"
                  if any(c.endswith(":*") for c in classes) else "")
    calib_dice = (("its calib photos (their labels with the kit's checked fixes, `--fixed-labels`)"
                   if chosen_by.get("fixed_labels") == "True" else "its calib photos")
                  + (" and calib renders' d6 together (`--calib-d6 pooled`), where the d6 threshold is chosen too"
                     if chosen_by.get("calib_d6") == "pooled" else ""))
    shape_t_text = (f", {calib_dice}; a crop whose top score is a numbered shape is scaled by its own T = "
                    f"{cls['shape_temperature']:.3f}, fitted on the calib dice (photos and renders) that top at one "
                    f"(top-label calibration, Gupta and Ramdas 2022)" if cls.get("shape_temperature") else "")
    ensemble_text = (f"A deep ensemble (Lakshminarayanan et al. 2017) of {len(cls_files)} classifiers "
                     f"({', '.join(cls_files)}), trained alike from seeds {config.get('seed', 0)} to "
                     f"{config.get('seed', 0) + len(cls_files) - 1}, whose logits and boxes the reader averages. Each is a small"
                     if len(cls_files) > 1 else "Small")
    from pi_table.train.nets import is_quantized

    cls_int8_text = (" Weights are int8 (per output channel, 7-bit: `reduce_range`, which x86 CPUs without VNNI need) "
                     "and activations uint8: onnxruntime's static quantisation in QDQ format, scales from the activations "
                     "of 512 training crops (`pi_table/train/__main__.py` `quant_crops`, `nets.quantize_int8`; "
                     "`--int8`)." if all(is_quantized(args.models / f) for f in cls_files) else "")
    kinds_text = (f" (a numbered die below its kind's own: {kind_thresholds}, numerals.md)" if kind_thresholds else "")
    (args.models / "classifier.md").write_text(f"""# {' + '.join(cls_files)} — reads the top face of each die

{history_line("classifier.md")}

Size {sum(sizes[f] for f in cls_files) / 1e6:.2f} MB. {ensemble_text} CNN on {cls['crop_size']}x{cls['crop_size']} crops (input `crops` float32
Nx3xSxS RGB 0..1; the crop is {cls['margin']} times the box's long side), output `logits` over
{len(classes)} classes: {', '.join(classes)}{shape_text}{box_text} Confidence = softmax(logits / T), T = {cls['temperature']:.3f}
fitted on the calib split (Guo et al. 2017){shape_t_text}; a die below {config['threshold']}{kinds_text} is reported `unreadable`;
a box whose `none` probability is >= {config['none_threshold']} is dropped as not a die.{look_text}{cls_int8_text}{cascade_text}

{common}""")
    num = config.get("numerals")
    if num:
        nlog = json.loads((args.models / "numerals-log.json").read_text()) if (args.models / "numerals-log.json").is_file() else {}
        speed_numbered = (f"A rendered {numbered['width']}x{numbered['height']} frame with {numbered['dice']} numbered dice "
                          f"(`{numbered['name']}`) reads in {numbered['median_ms']:.1f} ms median on 1 thread "
                          f"(`pi-table read {numbered['path']} --threads 1`; on {date.today().isoformat()}, {machine_line(machine())}): "
                          f"the numeral model runs on each numbered die."
                          if args.renders else "")
        nargs = nlog.get("args", {})
        before = nlog.get("float_before_int8", {})
        int8_text = ""
        if nargs.get("float") == "False":  # logs from before the int8 step have no "float"
            int8_text = ("\nWeights are int8 (per output channel) and activations uint8: onnxruntime's static "
                         "quantisation in QDQ format, scales from the activations of 512 training crops "
                         "(`pi_table/train/nets.py` `quantize_int8`), a quarter of the float32 file, and faster on a CPU with "
                         "int8 dot products (VNNI, ARM's dot products); without them int8 runs at about float speed. Its "
                         "weights use all 8 bits (the classifiers' 7), so on an x86 CPU without VNNI onnxruntime's "
                         "16-bit sums can saturate: models/history/numerals.md, \"Another machine\".")
            if before:
                int8_text += (" The float32 model before quantisation read " + ", ".join(
                    f"{k} {v['right']:.1%}" for k, v in before.get("valid_right", {}).items())
                    + " on the held-out renders (below: after).")
        resumed = nlog.get("resumed_at", [])
        sittings = (f" of training in {len(resumed) + 1} sittings: stopped after the checkpoint at step(s) "
                    f"{', '.join(map(str, resumed))}, the same command again went on from it (numerals-log.json "
                    f"`resumed_at`)" if resumed else "")
        numbered_thresholds = (f" The numbered kinds' thresholds (reader.json: {kind_thresholds}) are chosen with the reader's "
                               f"calibration (classifier.md's command) on the calib renders at "
                               f"{numbered_target} expected wrong at `ok`"
                               f" (`--numbered-wrong-target`){numbered_floor}." if kind_thresholds else "")
        if reader.big_numbered:
            numbered_thresholds += (f" A numbered die this model sees whole (its box at least {num['crop_size']} / "
                                    f"{num['margin']:g} = {num['crop_size'] / num['margin']:.0f} pixels across: its crop "
                                    f"is shrunk, not enlarged) is `ok` from {BIG_NUMBERED_THRESHOLD:g} where its kind's "
                                    f"threshold is higher (reader.json `big_numbered`, on; models/history/numerals.md, "
                                    f"\"Big numbered dice: a threshold of their own\").")
        (args.models / "numerals.md").write_text(f"""# numerals.onnx — reads the numeral of a d8, d10 or d10-tens

{history_line("numerals.md")}

Size {sizes.get('numerals.onnx', 0) / 1e6:.2f} MB. **Trained on renders only**: there are no public labelled photos of
real d8 or d10 faces, so the kit makes its own (`python3 -m pi_table.train.render`, true
octahedron and pentagonal-trapezohedron geometry, see docs/renders.md). Real d8/d10 photos have
never been used to train or to measure it.

The classifier (classifier.md) tells a numbered die only by its shape (`d8:*`, `d10:*`); this
model reads the numeral from a {num['crop_size']}x{num['crop_size']} crop ({num['margin']} times the box): a small residual
net (`pi_table/train/nets.py` `NumeralNet`, He et al. 2016) that sees the crop as normalised grey,
its high-pass and its colours, over {len(num['classes'])} classes: {', '.join(num['classes'])}.
The two are joined as a product of experts (`pi_table/vision/reader.py` `join_numerals`); the
reader's threshold and `none` rule apply as for pips. Trained on {nlog.get('dice', '?')} rendered dice, each cut once
and turned by any angle at every step (`pi_table/train/data.py` `CropBank`). T = {num['temperature']:.3f}, fitted
on the one render in 20 held out from training, where the numeral is read right on
{nlog.get('calib_right', 0):.1%} of {nlog.get('calib_dice', '?')} dice (labelled boxes, one view, before the threshold).{numbered_thresholds}
{int8_text}

Command that trained it (CPU, {nargs.get('threads', '?')} threads, seed {nargs.get('seed', '?')}, {nlog.get('seconds', '?')} s{sittings}):

```sh
{numerals_command(nargs, out='models/')}
```
{nlog.get('note', '')}

## Accuracy on renders with held-out fonts, colours and backgrounds

Per kind, whole reader (detector, classifier, numerals), in classifier.md's "Rendered
validation set" table (`pi-table eval {args.renders}`). The numeral model alone, at the
labelled boxes, one view: {', '.join(f"{k} {v['right']:.1%} of {v['dice']}" for k, v in nlog.get('valid_right', {}).items()) or 'not measured'}.

{speed_numbered}
""")
    ck = config.get("cocked")
    if ck:
        write_cocked_card(args, ck, sizes, real, rend if args.renders else None)
    d6n = config.get("d6_numerals")
    if d6n:
        without = DiceReader(args.models, threads=0)
        without.d6_numerals = None  # the same reader, the d6 numeral model not asked
        compared = [(f"{name} (held out)", s, real["folders"][name])
                    for name, s in evaluate(without, args.data, held_out=True)["folders"].items()]
        for folder, whole in ((args.renders, rend if args.renders else None), (args.close_up_renders, close_rend)):
            if whole is not None:
                for kind, s in evaluate(without, folder)["all"].get("kinds", {}).items():
                    w = whole["all"]["kinds"][kind]
                    compared.append((f"{folder.name}: {kind}", s, w))
                    if len(s.get("by_printing", {})) > 1:  # a d6 printed with pips or with numerals
                        compared += [(f"{folder.name}: {kind} printed with {how}", g, w["by_printing"][how])
                                     for how, g in s["by_printing"].items()]
        write_d6_numerals_card(args, d6n, sizes, reader.threshold_for("d6"), compared)
    print(json.dumps({"real": {k: v["read_right"] for k, v in real["folders"].items()}, "speed": speed}, indent=1))
    return 0


def write_cocked_card(args, ck: dict, sizes: dict, real: dict, rend: dict | None) -> None:
    """``cocked.md``: the cocked-die model's data, threshold and measured figures."""
    clog = json.loads((args.models / "cocked-log.json").read_text()) if (args.models / "cocked-log.json").is_file() else {}
    cargs = clog.get("args", {})
    renders = " ".join(f"--renders {r}" for r in cargs.get("renders", ["renders/train"]))
    threads = cargs.get("threads", 2)  # the trainer's default where the log does not say
    # the run that chose the threshold: a later --calibrate-only, or the training run itself
    calibration = clog.get("calibration")
    fitted = calibration["args"] if calibration else cargs
    refit = ""
    if calibration:
        options = f" --flat-target {fitted.get('flat_target')}" + (" --int8" if fitted.get("int8") == "True" else "")
        refit = (f"\n\nTemperature and threshold fitted again, the weights kept ({calibration.get('seconds', '?')} s):\n\n"
                 f"```sh\npython3 -m pi_table.train.cocked --data ../shared/data/real {renders} --out models/ --seed 0 "
                 f"--threads {fitted.get('threads', threads)} --calibrate-only{options}\n```")
    photo_rows = "\n".join(f"| {name} | {s['counts']['found']} | {s['cocked']:.2%} |" for name, s in real["folders"].items())
    from pi_table.train.cocked import parse_args as cocked_args

    extra = "".join(" " + o for o in recorded_options(
        cargs, cocked_args, ["--renders", "x", "--out", "y"],
        skip=("data", "renders", "out", "seed", "threads", "smoke", "calibrate_only")))
    net = (f"; channels {cargs['channels'].strip('()')} at strides 2, 4, 8, 16 with {cargs['blocks'].strip('()')} "
           f"residual blocks" if cargs.get("channels") and cargs.get("blocks") else "")
    render_rows = ""
    if rend is not None:
        render_rows = ("\n\nOn the rendered validation set (fonts, colours and backgrounds training never saw), "
                       f"`pi-table eval {args.renders}`, per kind: of the dice the renders tilt (10 to 30 degrees), the "
                       "share reported `cocked`; of the flat ones, the share wrongly reported `cocked` and the share "
                       "read right.\n\n"
                       "| kind | cocked dice found | reported cocked | flat dice found | flat reported cocked | flat read right |\n"
                       "|---|---|---|---|---|---|\n" + "\n".join(
                           f"| {kind} | {s['counts']['cocked_found']} | {s.get('cocked_caught', 0):.2%} | "
                           f"{s['counts']['flat_found']} | {s.get('flat_flagged', 0):.2%} | {s.get('flat_read_right', 0):.2%} |"
                           for kind, s in rend["all"].get("kinds", {}).items()))
    (args.models / "cocked.md").write_text(f"""# cocked.onnx — is a die lying flat?

{history_line("cocked.md")}

Size {sizes.get('cocked.onnx', 0) / 1e3:.0f} kB. A die that does not lie flat is reported with status `cocked` and no face,
never guessed (RULES.md, "Dice faces as read by the camera"): the table asks for a re-roll. A small
residual CNN (`pi_table/train/nets.py` `NumeralNet`, two classes `flat`, `cocked`{net}) on a crop of each die
({ck['crop_size']}x{ck['crop_size']}, {ck['margin']} times the box){' and, as two constant input planes, where the die lies in the image (its offset from the image centre; CoordConv, Liu et al. 2018): seen from a camera above the tray, a flat die far from the centre shows a side too, but only the side away from the centre. Not used by `read --crop`: a crop does not say where its die lay' if ck.get('position') else ''}; `pi_table/vision/reader.py` `cocked_probability`.
Confidence = softmax(logits / T), T = {ck['temperature']:.3f} fitted on the calib split; a die at P(cocked) >=
{ck['threshold']} is reported `cocked`, the lowest threshold at which at most {100 * float(fitted.get('flat_target', 0.005)):.3g}% of the calib split's
flat dice, photos and renders each, are flagged (calib: {clog.get('photo_flat_flagged', 0):.2%} of {clog.get('calib_photo_dice', '?')} photo dice,
{clog.get('render_flat_flagged', 0):.2%} of {clog.get('calib_render_flat', '?')} flat rendered dice flagged; {clog.get('cocked_caught', 0):.1%} of
{clog.get('calib_render_cocked', '?')} cocked rendered dice caught).

**The cocked examples are renders only**: the photos in ../shared label no cocked die (their
dice lie flat), so `python3 -m pi_table.train.render` tilts one die in ten by 10 to 30 degrees
and says so in its metadata. Flat examples: the rendered flat dice and every die of the photos'
train split (`splits.json`; the valid split is never seen). How well it catches real cocked dice
has not been measured: no labelled photo of one exists here.

Command that trained it (CPU, {threads} thread(s), seed {cargs.get('seed', '?')}, {clog.get('seconds', '?')} s), after the reader:

```sh
python3 -m pi_table.train.cocked --data ../shared/data/real {renders} --out models/ --seed 0 --threads {threads}{extra}
```{refit}

## Flat dice wrongly reported cocked (held-out photos, `pi-table eval {args.data} --held-out`)

| data (held out) | dice found | reported cocked |
|---|---|---|
{photo_rows}{render_rows}
""")


def write_d6_numerals_card(args, d6n: dict, sizes: dict, threshold: float, compared: list[tuple[str, dict, dict]]) -> None:
    """``d6-numerals.md``: the d6 numeral model's data, every training run it came from (its log's ``--init``
    records, first to last) and, per data in ``compared`` (``(name, without, with)``, the reader's figures
    without and with the model: ``dice``, ``read_right``, ``wrong_at_ok``, ``unreadable``, the last two
    given as "." where a group's figures lack them), what it changes.
    ``threshold``: the reader's d6 threshold, the one a die read again must reach."""
    dlog = json.loads((args.models / "d6-numerals-log.json").read_text()) if (args.models / "d6-numerals-log.json").is_file() else {}
    runs, record = [dlog], dlog.get("init")
    while record and record.get("log"):  # each --init model's own run, back to the first one logged
        runs.insert(0, record["log"])
        record = record["log"].get("init")
    commands = "\n".join(f"# {run.get('seconds', '?')} s\n{numerals_command(run.get('args', {}))}" for run in runs)
    unlogged = (f"\n\nThe first run below started from `{record['file']}` (md5 {record.get('md5', '?')}), a model whose "
                "training command its log does not keep (it was trained before the trainer kept the `--init` "
                "model's run): models/history/numerals.md, \"d6 printed with numerals\", names it, and the README's "
                "training steps give it." if record else "")

    def pair(key: str, wo: dict, w: dict) -> str:
        return f"{wo[key]:.2%} -> {w[key]:.2%}" if key in wo and key in w else "."

    rows = "\n".join(f"| {name} | {w['dice']} | {pair('read_right', wo, w)} | {pair('wrong_at_ok', wo, w)} | "
                     f"{pair('unreadable', wo, w)} |" for name, wo, w in compared)
    alone = ", ".join(f"{k} {v['right']:.1%} of {v['dice']}" for k, v in dlog.get("valid_right", {}).items()) or "not measured"
    photos = (f" and the d6 of the photo folders {', '.join(dlog['pip_photos'])} (all printed with pips; their "
              f"training split only, {dlog.get('pip_photo_dice', '?')} dice: splits.json's valid and calib photos are "
              "never seen)" if dlog.get("pip_photos") else "")
    (args.models / "d6-numerals.md").write_text(f"""# d6-numerals.onnx — reads a d6 printed with numerals

{history_line("d6-numerals.md")}

Size {sizes.get('d6-numerals.onnx', 0) / 1e6:.2f} MB. The classifier (classifier.md) learned its d6 from photos of dice
printed with pips, and seldom reads a d6 printed with numerals (1 to 6) surely: it leaves it `unreadable`. This
model is asked about such dice last (`pi_table/vision/reader.py` `DiceReader._with_d6_numerals`): once the parts
of one die are joined and dropped, each d6 still below the reader's d6 threshold ({threshold:g}; not one of its own)
and not cocked is read by this model at its box, and that read joined with the die's first (the classifier is not
run again: models/history/d6-numerals.md, "The first read joined"). Its {len(d6n['classes'])} classes are
{', '.join(d6n['classes'])}: a d6's numeral, `d6:pips` for a d6 printed with pips (no numeral to read), and the
numbered dice's numerals. Joined (`join_d6_numerals`) as a product of experts over the die's kinds (each kind's
chance the classifier's times this model's, renormalised: the classifier sees the die's shape and often takes a
numeral d6 for a numbered die, this model its face), and within d6 as P(F | d6) = (q(F) + q(pips) x the
classifier's share of F) / q(d6): the numeral where it sees a d6's, the classifier's read where it sees pips.
The die takes that read only when it is then a sure d6, and keeps its box; a sure die costs nothing more. The net is the numeral model's (numerals.md, `NumeralNet`), on {d6n['crop_size']}x{d6n['crop_size']}
crops ({d6n['margin']} times the box). T = {d6n['temperature']:.3f}, fitted on the one render in 20 held out from
training ({dlog.get('calib_right', 0):.1%} of {dlog.get('calib_dice', '?')} calib dice read right, labelled boxes, one view).
The reader's thresholds were chosen before it was added and not fitted again with it.

**Its d6 printed with numerals are renders only**: no labelled photo of one is public, so the kit renders them
(`python3 -m pi_table.train.render`, docs/renders.md; a share of its d6 are printed with numerals, and
`--logo-ones` prints a maker's logo on pip d6's "1", as many real dice have). It learned from
{dlog.get('dice', '?')} rendered dice of {', '.join(dlog.get('renders', [])) or 'renders'}{photos}.
How well it reads real dice printed with numerals has not been measured: no labelled photo of one exists here.

Commands that trained it (CPU, seed 0), each run starting from the one before (`--init`, a warm restart),
the last copied into models/ (with `--out models/` it is put there and reader.json's `d6_numerals` is written).{unlogged}

```sh
{commands}
```

## What it changes (measured by this card writer)

The same reader without the model (reader.json without `d6_numerals`) and with it, `pi-table eval` as in
classifier.md (held-out photos; renders with fonts, colours and backgrounds training never saw, per kind):

| data | dice | read right (without -> with) | wrong at `ok` | unreadable |
|---|---|---|---|---|
{rows}

The model alone at the labelled boxes of renders/valid, one view: {alone}.
""")


def numbered_frame_ms(reader, renders: Path, repeats: int = 20) -> dict:
    """Median ms of ``reader.read`` (as given, its threads) on the image of ``renders`` with the
    most d8/d10/d10-tens dice."""
    import time

    import numpy as np

    from pi_table.vision.dataset import load_yolo
    from pi_table.vision.reader import load_image

    best = max(load_yolo(renders), key=lambda im: sum(d.kind in ("d8", "d10", "d10-tens") for d in im.dice))
    image = load_image(best.path)
    reader.read(image)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        reader.read(image)
        times.append((time.perf_counter() - t) * 1000)
    return {"name": best.path.name, "path": str(best.path), "width": image.shape[1], "height": image.shape[0],
            "dice": sum(d.kind in ("d8", "d10", "d10-tens") for d in best.dice), "median_ms": float(np.median(times))}


if __name__ == "__main__":
    raise SystemExit(main())
