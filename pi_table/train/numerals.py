"""Train the numeral model (d8, d10, d10-tens faces; d6 numerals with ``--d6``) from renders:
``python3 -m pi_table.train.numerals``.

    python3 -m pi_table.train.render --out renders/train --n 3000 --seed 0 --split train --workers 2
    python3 -m pi_table.train.render --out renders/num --n 10000 --seed 10 --split train --kinds d8,d10,d10-tens
    python3 -m pi_table.train.numerals --renders renders/train --renders renders/num --valid renders/valid \
        --out models/ --seed 0

There are no public labelled photos of real d8 or d10 faces, so this model is trained on
renders only (``pi_table.train.render``). The reader's classifier tells a numbered die by its
shape (``d8:*``, ``d10:*``); this model reads the numeral from a larger crop
(:mod:`pi_table.vision.reader`, "Numerals"). One image in 20 of the renders (by md5 of its
name) is held out to fit the temperature (Guo et al. 2017) and to report accuracy.

Writes ``numerals.onnx`` (int8 weights unless ``--float``: :func:`pi_table.train.nets.quantize_int8`)
and ``numerals.json`` (the reader's ``numerals`` settings; with ``--d6``, ``d6-numerals.onnx`` and
``d6-numerals.json``, the reader's ``d6_numerals``) into
``--out``, and adds those settings to ``reader.json`` when one is there (``python3 -m
pi_table.train`` copies them in when it runs after). Trained on the CPU (the shipped way), deterministic
for a seed; ``--device cuda --workers N`` trains on a GPU machine, for experiments (another model).

A run longer than a sitting can be trained in slices: ``--checkpoint FILE`` saves the training's
state every ``--checkpoint-every`` steps, ``--stop-after N`` stops after step N, and the same command
run again goes on from FILE. Every random stream is saved but OpenCV's (the camera noise of
``data.photometric``), which restarts with each process: slices stopped at the same steps
(``numerals-log.json``'s ``resumed_at``) give the same model.

``--d6`` trains the d6 numeral model, a second model beside the first: the renders' d6 (their meta says
how each is printed) train classes ``d6:1`` .. ``d6:6`` for numerals and one class, ``d6:pips``, for pips
(no numeral to read), beside the numbered classes; the reader asks it about the d6 its classifier reads
unsure once the parts of one die are joined (:func:`pi_table.vision.reader.join_d6_numerals`). The shipped one
(models/d6-numerals.md) was trained in three runs, each from the one before: from the numeral model
(``--init models/numerals.onnx``), then with the photos' pip d6, then with renders of pip d6 whose "1" is a
maker's logo (``render --logo-ones``); without those a real die's logo "1" read as a "3". As one model for both it
lost tens dice (models/history/numerals.md, "d6 printed with numerals" and the candidates after it).
``--oversample d6:pips=W`` draws the pip d6, most of a render's d6, less often. ``--pip-photos DIR`` adds the
d6 of photo folders whose dice are all printed with pips (../shared/data/real's are) to ``d6:pips``, from their
training split only (:func:`pip_photo_dice`): a real die's logo face is no numeral.

``--init MODEL`` starts from a numeral model this trainer wrote (e.g. the shipped one) instead of fresh
weights and runs the one-cycle schedule again from it (a warm restart, Loshchilov and Hutter 2017):
more training without the first run's hours. :func:`pi_table.train.nets.warm_start` unfolds the
batch norms the export folded away; the log names the model and its md5. Classes the model did not
read (``--d6`` from a model without d6) start fresh; every class it read stays.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from pi_table.cli import Parser
from pi_table.train import int_list, one_cycle, refuse, refuse_bad_options, refuse_bad_out, refuse_smoke_over_models
from pi_table.vision.dataset import is_calib_render
from pi_table.vision.reader import D6_PIPS  # with --d6, the class of a d6 printed with pips

#: Die kinds read by numeral rather than by pips.
NUMBERED: tuple[str, ...] = ("d8", "d10", "d10-tens")
#: ``--oversample``'s name for the dice of ``--pip-photos``.
PHOTOS = "photos"


def parse_args(argv=None) -> argparse.Namespace:
    p = Parser(prog="python3 -m pi_table.train.numerals", description=__doc__.splitlines()[0])
    p.add_argument("--renders", type=Path, action="append", required=True, help="rendered folders; repeatable")
    p.add_argument("--out", type=Path, required=True, help="model folder to write into")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--batch", type=int, default=96)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (one-cycle)")
    p.add_argument("--crop-size", type=int, default=80, help="crop side, pixels")
    p.add_argument("--margin", type=float, default=1.15, help="crop side / box long side")
    p.add_argument("--augment", type=float, default=0.6, help="strength of the photometric augmentation")
    p.add_argument("--channels", default="32,64,128,192", help="channels of the net's four stages (comma-separated)")
    p.add_argument("--label-smoothing", type=float, default=0.0,
                   help="label smoothing of the loss (0..0.5; Szegedy et al. 2016). Default none: with 0.02 the "
                        "surest numerals' confidence stayed below what they earn and no threshold met the 0.3%% rule")
    p.add_argument("--grey-only", action="store_true", help="the net sees grey and high-pass only, not the colours")
    p.add_argument("--valid", type=Path, action="append", default=[],
                   help="rendered folders to score the trained model on, per kind, at the labelled boxes "
                        "(e.g. renders/valid: fonts, palettes and backgrounds training never saw); repeatable")
    p.add_argument("--float", action="store_true",
                   help="ship float32 weights (default: int8, a quarter of the size; see nets.quantize_int8)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu",
                   help="torch device to train on: cpu (how the shipped model is trained), or cuda for experiments "
                        "on a GPU machine (not byte for byte the CPU's model)")
    p.add_argument("--workers", type=int, default=0,
                   help="processes that cut and augment the batches (default 0: the training process itself, as the "
                        "shipped model was trained; N > 0 draws each worker's batches from its own generator, "
                        "seeded by (seed, worker), so it is another model than with 0)")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="file that holds the training's state (net, optimiser, schedule, random streams, losses), "
                        "written every --checkpoint-every steps; when it exists the run goes on from it, so a long run "
                        "can be trained in slices. The other options must match its run's. Slices stopped at the same "
                        "steps give the same model; it differs from one unbroken run only in the camera-noise draws "
                        "after each resume (OpenCV's own generator, which restarts with each process)")
    p.add_argument("--checkpoint-every", type=int, default=250, help="steps between checkpoints (default 250)")
    p.add_argument("--stop-after", type=int, default=None,
                   help="with --checkpoint: stop after this many steps of the run (the checkpoint written, no model "
                        "yet); run the same command again later to go on")
    p.add_argument("--channels-last", action="store_true",
                   help="train with the crops and weights in channels-last memory order: about a quarter less time a "
                        "step on this 2-core CPU (0.96 -> 0.69 s), the same net and recipe, not the same bits as without")
    p.add_argument("--init", type=Path, default=None,
                   help="start from this numeral model (an ONNX file this trainer wrote, int8 or float, e.g. "
                        "models/numerals.onnx) instead of fresh weights: a warm restart, the one-cycle schedule run "
                        "again from it (nets.warm_start); every class its json beside it names stays, and classes "
                        "these renders add (--d6 from a model without d6) start fresh")
    p.add_argument("--d6", action="store_true",
                   help="train the d6 numeral model (d6-numerals.onnx, reader.json's d6_numerals): the renders' d6 "
                        "printed with numerals train classes d6:1..d6:6, those printed with pips one class d6:pips "
                        "(a d6 whose face is not a numeral); the reader asks it about the d6 the classifier reads "
                        "unsure (pi_table.vision.reader, 'Numerals')")
    p.add_argument("--pip-photos", type=Path, action="append", default=[],
                   help="with --d6: photo folders (YOLO, as ../shared/data/real) whose d6 are all printed with pips; "
                        "the d6 of each data folder's training split (the classifier's split at --seed, "
                        "train.data.split_folder) train d6:pips too; repeatable")
    p.add_argument("--oversample", default="",
                   help="KIND=W[,KIND=W]: draw the dice of KIND (d8, d10, d10-tens; with --d6 also d6, d6:pips, and "
                        "photos for the dice of --pip-photos) W times as often as the others (default: every die "
                        "alike)")
    p.add_argument("--smoke", action="store_true", help="a few steps on a few renders: checks the code, not a model "
                   "(refused into a folder of a real run's models)")
    args = p.parse_args(argv)
    args.oversample_weights = kind_weights(args.oversample)
    if args.oversample_weights is None:
        refuse("--oversample", f"must be KIND=W[,KIND=W] with KIND one of {', '.join(NUMBERED + ('d6', D6_PIPS, PHOTOS))} "
                               f"and W above 0, "
                               f"got {args.oversample!r}")
    if args.pip_photos and not args.d6:
        refuse("--pip-photos", "adds d6 printed with pips, which only --d6 trains on")
    if PHOTOS in args.oversample_weights and not args.pip_photos:
        refuse("--oversample", f"{args.oversample!r} weighs the dice of --pip-photos, and none is given")
    if not args.d6 and any(k.startswith("d6") for k in args.oversample_weights):
        refuse("--oversample", f"{args.oversample!r} weighs d6 dice, which only --d6 trains on")
    text = args.channels
    args.channels = int_list(text)
    refuse_bad_options((("--label-smoothing", args.label_smoothing, 0 <= args.label_smoothing <= 0.5, "0..0.5"),
                        ("--steps", args.steps, args.steps >= 1, "1 or more"),
                        ("--batch", args.batch, args.batch >= 1, "1 or more"),
                        ("--seed", args.seed, args.seed >= 0, "0 or more"),
                        ("--lr", args.lr, 0 < args.lr < 1, "in (0, 1)"),
                        ("--crop-size", args.crop_size, args.crop_size >= 16, "16 or more"),
                        ("--margin", args.margin, 0 < args.margin < math.inf, "above 0"),
                        ("--augment", args.augment, 0 <= args.augment < math.inf, "0 or more"),
                        ("--threads", args.threads, args.threads >= 1, "1 or more"),
                        ("--channels", repr(text), len(args.channels) == 4 and min(args.channels) >= 1,
                         "four positive integers"),
                        ("--workers", args.workers, 0 <= args.workers <= 64, "0..64"),
                        ("--checkpoint-every", args.checkpoint_every, args.checkpoint_every >= 1, "1 or more"),
                        ("--stop-after", args.stop_after, args.stop_after is None or args.stop_after >= 1,
                         "1 or more"),
                        ("--device", repr(args.device), args.device == "cpu" or args.device.startswith("cuda"),
                         "cpu or cuda[:N]")))
    refuse_bad_out(args.out)
    if args.smoke:
        refuse_smoke_over_models(args.out)
    if args.init is not None and not args.init.is_file():
        refuse("--init", f"{args.init} is not a file")
    if args.stop_after is not None and args.checkpoint is None:
        refuse("--stop-after", "needs --checkpoint, the file the run goes on from")
    if args.checkpoint is not None and args.device != "cpu":
        refuse("--checkpoint", f"needs --device cpu, got {args.device} (the GPU's random stream is not saved)")
    if args.checkpoint is not None and args.workers:
        refuse("--checkpoint", f"needs --workers 0, got {args.workers} (loader workers' batches cannot be resumed)")
    return args


def model_stem(args: argparse.Namespace) -> str:
    """The name the model's files take in ``--out``: ``numerals`` (``.onnx``, ``.json``, ``-log.json``;
    reader.json's ``numerals``), with ``--d6`` ``d6-numerals`` (reader.json's ``d6_numerals``): the d6
    numeral model runs beside the numeral model, on the d6 the classifier reads unsure."""
    return "d6-numerals" if args.d6 else "numerals"


def reads(die, d6: bool) -> bool:
    """Whether the numeral model trains on and is scored on ``die`` (LabelledDie): a numbered die, or
    with ``d6`` (``--d6``) a render's d6 whose printing (pips or numerals) is known."""
    return die.kind in NUMBERED or (d6 and die.kind == "d6" and die.printing in ("pips", "numerals"))


def numeral_label(die) -> str:
    """The numeral model's class for ``die`` (LabelledDie): ``KIND:FACE``, but ``d6:pips`` for a d6
    printed with pips (:data:`D6_PIPS`: no numeral to read)."""
    return D6_PIPS if die.kind == "d6" and die.printing == "pips" else f"{die.kind}:{die.face}"


def pip_photo_dice(images, seed: int) -> list:
    """The photos ``images`` (LabelledImage, of ``--pip-photos``) of each data folder's training split
    (:func:`pi_table.train.data.split_folder` at ``seed``, the classifier's split: its calib and valid
    photos stay unseen), each keeping only its d6, taken as printed with pips (``printing="pips"``:
    class :data:`D6_PIPS`)."""
    from collections import defaultdict
    from dataclasses import replace

    from pi_table.train.data import split_folder

    by_folder = defaultdict(list)
    for im in images:
        by_folder[im.folder].append(im)
    out = []
    for folder, ims in sorted(by_folder.items()):
        for im in split_folder(ims, folder, seed)["train"]:
            dice = tuple(replace(d, printing="pips") for d in im.dice if d.kind == "d6")
            if dice:
                out.append(replace(im, dice=dice))
    return out


def kind_weights(text: str) -> dict[str, float] | None:
    """``--oversample``'s ``"d10-tens=2,d8=1.5"`` -> ``{"d10-tens": 2.0, "d8": 1.5}``; {} for ""; None
    when a kind is not in :data:`NUMBERED` (nor ``d6``, :data:`D6_PIPS` or :data:`PHOTOS`, for ``--d6``), a
    weight is not a number above 0, or an item lacks ``=``."""
    out = {}
    for item in filter(None, (t.strip() for t in str(text).split(","))):
        kind, _, weight = item.partition("=")
        try:
            w = float(weight)
        except ValueError:
            return None
        if kind not in NUMBERED + ("d6", D6_PIPS, PHOTOS) or not (w > 0 and math.isfinite(w)):
            return None
        out[kind] = w
    return out


def draw_chances(labels: list[str], weights: dict[str, float], photos: int = 0) -> np.ndarray | None:
    """N float64 chances summing to 1 of drawing each of the bank's dice (``labels``, ``KIND:FACE``)
    under ``--oversample``'s ``weights`` (a class named, :data:`D6_PIPS`, by its own weight, else by its
    kind's; kinds not named weigh 1; the last ``photos`` dice, ``--pip-photos``', by :data:`PHOTOS`'s
    weight when it is named); None when ``weights`` is empty (every die alike, drawn as training always
    drew them)."""
    if not weights:
        return None
    w = np.array([weights.get(label, weights.get(label.split(":")[0], 1.0)) for label in labels], np.float64)
    if PHOTOS in weights and photos:
        w[len(w) - photos:] = weights[PHOTOS]
    return w / w.sum()


def training_crops(bank, picks, rng, args) -> list:
    """The ``bank``'s dice ``picks`` (indices) cut and augmented as the model trains on them:
    SxSx3 crops (``args.crop_size``), drawn with ``rng``."""
    from pi_table.train import data as D

    return [D.photometric(bank.sample(int(i), rng, args.crop_size, args.margin), rng, args.augment) for i in picks]


def augmented_batches(bank, targets, args, rng, steps, chances=None):
    """One (Bx3xSxS float32 crops, B int64 class indices) torch batch per item of ``steps``: the
    ``bank``'s dice picked by ``rng`` (with ``chances``, :func:`draw_chances`'; None: every die alike),
    cut and augmented as the model trains on them."""
    import torch

    from pi_table.train import data as D

    for _ in steps:
        picks = rng.integers(0, len(bank), args.batch) if chances is None else rng.choice(len(bank), args.batch, p=chances)
        yield torch.from_numpy(D.chw_batch(training_crops(bank, picks, rng, args))), torch.from_numpy(targets[picks])


def batch_stream(bank, targets, args, chances=None):
    """``--workers`` N > 0: a torch DataLoader of ``args.steps`` :func:`augmented_batches`, made in
    N processes: worker ``w`` makes steps ``w, w + N, ...`` with its own generator seeded
    ``(seed, w)``, so the stream (and the model) differs from the in-process one. On a GPU
    machine this keeps the GPU fed (about 16 ms a step on an H200 with 4 workers)."""
    import torch

    class Batches(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            worker, workers = (info.id, info.num_workers) if info else (0, 1)
            rng = np.random.default_rng([args.seed, worker])
            return augmented_batches(bank, targets, args, rng, range(worker, args.steps, workers), chances)

    return torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=args.workers, prefetch_factor=8)


#: The options that shape the training: a checkpoint resumes only a run made with the same ones.
RUN_OPTIONS: tuple[str, ...] = ("renders", "seed", "steps", "batch", "lr", "crop_size", "margin", "augment", "channels",
                                "label_smoothing", "grey_only", "device", "channels_last", "smoke", "init",
                                "oversample", "d6", "pip_photos")
#: The value a checkpoint made before an option of :data:`RUN_OPTIONS` existed is taken to have had.
OPTIONS_BEFORE: dict[str, str] = {"init": "None", "oversample": "", "d6": "False", "pip_photos": "[]"}


def run_options(args: argparse.Namespace) -> dict:
    """The :data:`RUN_OPTIONS` of ``args`` as strings, as a checkpoint records them."""
    return {k: str(getattr(args, k)) for k in RUN_OPTIONS}


def save_checkpoint(path: Path, state: dict) -> None:
    """Write ``state`` (torch tensors, dicts, lists, numbers, strings) to ``path`` with torch.save,
    through a temporary file beside it and a rename, so that a run stopped mid-write leaves the
    last whole checkpoint."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    torch.save(state, part)
    part.replace(path)


def load_checkpoint(path: Path, args: argparse.Namespace) -> dict | None:
    """The training state saved at ``path`` by :func:`save_checkpoint`, or None when there is no
    such file.

    Raises:
        SystemExit: status 2, one line naming the file, when it is not a checkpoint or was made by a
            run with other :data:`RUN_OPTIONS` (naming the first that differs).
    """
    import torch

    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        made_with = state["options"]
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same one-line error
        refuse("--checkpoint", f"{path} is not a numeral training checkpoint ({type(e).__name__})")
    for key, value in run_options(args).items():
        if made_with.get(key, OPTIONS_BEFORE.get(key)) != value:
            refuse("--checkpoint", f"{path} was made with --{key.replace('_', '-')} {made_with.get(key)}, "
                                   f"this run has {value}")
    return state


def device_error(device: str, gpus: int) -> str | None:
    """Why ``--device`` (``cuda`` or ``cuda:N``) cannot train on a machine where torch sees
    ``gpus`` GPUs, as one line; None when it can."""
    number = device.partition(":")[2]
    if not gpus:
        return f"--device {device}: torch sees no GPU here"
    if number and not (number.isdigit() and int(number) < gpus):
        return f"--device {device}: torch sees {gpus} GPU(s) here, cuda:0..cuda:{gpus - 1}"
    return None


#: The temperatures :func:`fit_temperature` searches (a log grid between the two).
TEMPERATURE_RANGE = (0.3, 5.0)


def temperature_at_bound(temperature: float) -> bool:
    """True when a fitted temperature sits at an end of :data:`TEMPERATURE_RANGE`: the calib dice
    did not pin it (e.g. none of them read wrong, so the likelihood keeps rising as the
    temperature falls), and the confidences it gives are not to be trusted on other dice."""
    lo, hi = TEMPERATURE_RANGE
    return temperature <= lo * (1 + 1e-9) or temperature >= hi * (1 - 1e-9)


def bound_warning(temperature: float, what: str) -> str | None:
    """The warning training logs when ``what``'s fitted temperature sits at an end of
    :data:`TEMPERATURE_RANGE` (:func:`temperature_at_bound`), naming it and the value; None when
    it does not."""
    if not temperature_at_bound(temperature):
        return None
    return (f"warning: {what} came out at the end of its range ({temperature:.2f}): the calib dice do not pin it "
            f"(few or no dice read wrong), so the threshold chosen with it may be off on other dice")


def fit_temperature(logits: np.ndarray, targets: np.ndarray) -> float:
    """Temperature (:data:`TEMPERATURE_RANGE`, 0.3..5) minimising the negative log-likelihood of
    NxC ``logits`` for ``targets`` (N class indices); 1.0 when there are none. Guo et al. 2017."""
    if len(targets) == 0:
        return 1.0
    z = np.asarray(logits, np.float64)
    t = np.asarray(targets)

    def nll(temp: float) -> float:
        s = z / temp
        s = s - s.max(axis=1, keepdims=True)
        return float(-(s[np.arange(len(t)), t] - np.log(np.exp(s).sum(axis=1))).mean())

    grid = np.exp(np.linspace(*(math.log(v) for v in TEMPERATURE_RANGE), 200))
    return float(min(grid, key=nll))


def numeral_logits(model, images, index: dict, load, d6: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The numeral ``model``'s NxF float32 logits for every numbered die of ``images`` at its
    labelled box (with ``d6``, every printed d6 too, :func:`reads`; :func:`numeral_label`'s class), and N class
    indices (dice of a class the model lacks are left out)."""
    z, t = [], []
    for im in images:
        dice = [d for d in im.dice if reads(d, d6)]
        if dice:
            z.append(model.logits(model.crops(load(im.path), [d.box for d in dice])))
            t += [index.get(numeral_label(d), -1) for d in dice]
    z = np.concatenate(z) if z else np.zeros((0, len(index)), np.float32)
    t = np.array(t, int)
    return z[t >= 0], t[t >= 0]


def right_per_kind(logits: np.ndarray, targets: np.ndarray, classes: list[str]) -> dict:
    """``{kind: {"dice": n, "right": share of top-1 right}}`` for NxF ``logits`` and N ``targets``."""
    out = {}
    kinds = np.array([classes[i].split(":")[0] for i in targets]) if len(targets) else np.zeros(0, str)
    for kind in ("d6",) + NUMBERED:
        sel = kinds == kind
        if sel.any():
            out[kind] = {"dice": int(sel.sum()), "right": float(np.mean(logits[sel].argmax(axis=1) == targets[sel]))}
    return out


def md5_of(path: Path) -> str:
    """The md5 hex digest of the file at ``path``."""
    import hashlib

    return hashlib.md5(path.read_bytes()).hexdigest()


def init_record(init: Path) -> dict:
    """What the log keeps of ``--init`` FILE: its path and md5, and when the training log of its name lies
    beside it (``numerals-log.json`` for ``numerals.onnx``) that run's options, ``--init`` record (so on
    back to the first model), dice and seconds (``log``): the commands that made the model from the data,
    for its card (:mod:`pi_table.train.card`)."""
    record = {"file": str(init), "md5": md5_of(init)}
    beside = init.with_name(init.stem + "-log.json")
    try:
        theirs = json.loads(beside.read_text()) if beside.is_file() else None
    except ValueError:
        theirs = None
    if isinstance(theirs, dict):
        record["log"] = {k: theirs[k] for k in ("args", "init", "dice", "seconds") if k in theirs}
    return record


def init_classes(init: Path) -> list[str] | None:
    """The classes of the numeral model ``init`` (the json of its name beside it: ``numerals.json`` for
    ``numerals.onnx``), None without one.

    Raises:
        SystemExit: status 2, one line naming the file, when that file is not a numeral model's settings.
    """
    beside = init.with_suffix(".json")
    if not beside.is_file():
        return None
    try:
        theirs = json.loads(beside.read_text())["classes"]
        named = isinstance(theirs, list) and theirs and all(isinstance(c, str) for c in theirs)
    except (ValueError, KeyError, TypeError):
        named = False
    if not named:
        refuse("--init", f"{beside} names no classes")
    return theirs


def warm_from(net, args: argparse.Namespace, bank, classes: list[str], theirs: list[str] | None) -> None:
    """``--init``: start ``net`` (reading ``classes``) from the model ``args.init``
    (:func:`pi_table.train.nets.warm_start`), whose classes are ``theirs`` (:func:`init_classes`: all
    among ``classes``; None when its json is not beside it: taken to be ``classes``), its batch norms set from 512 training crops cut and augmented as training cuts them (their own
    generator, seeded ``(seed, 1)``, so the training's stream is the same as without ``--init``).

    Raises:
        SystemExit: status 2, one line naming the file, when its layers do not fit the net
            (``--channels``).
    """
    import torch

    from pi_table.train import data as D
    from pi_table.train.__main__ import log
    from pi_table.train.nets import warm_start

    rows = None if theirs is None or theirs == classes else [classes.index(c) for c in theirs]
    rng = np.random.default_rng([args.seed, 1])
    crops = training_crops(bank, rng.integers(0, len(bank), 512), rng, args)
    try:
        warm_start(net, args.init, torch.from_numpy(D.chw_batch(crops)), fc_rows=rows)
    except ValueError as e:
        refuse("--init", str(e))
    log(f"numerals: started from {args.init} (md5 {md5_of(args.init)})")


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    if args.device != "cpu":
        bad = device_error(args.device, torch.cuda.device_count() if torch.cuda.is_available() else 0)
        if bad:
            print(f"error: {bad}", file=sys.stderr)
            return 2

    from pi_table.train import data as D
    from pi_table.train.__main__ import load_folders, log, optimise, start
    from pi_table.train.nets import NumeralNet, export_classifier, export_int8
    from pi_table.vision.dice import class_key
    from pi_table.vision.reader import Classifier

    # (folder, image) pairs, so that the log can score each folder on its own
    tagged = [(str(r), im) for r in args.renders for im in load_folders([r], "--renders", folder_name="renders")]
    valid = [(str(r), im) for r in args.valid for im in load_folders([r], "--valid", folder_name="renders")]
    photos = pip_photo_dice(load_folders(args.pip_photos, "--pip-photos"), args.seed) if args.pip_photos else []
    if args.pip_photos and not photos:
        refuse("--pip-photos", f"no d6 in the training split of {', '.join(map(str, args.pip_photos))}")
    rng, started = start(args)
    train = [im for _, im in tagged if not is_calib_render(im.path.name)]
    calib_tagged = [(r, im) for r, im in tagged if is_calib_render(im.path.name)]
    if args.smoke:
        train, calib_tagged, photos = train[:8], calib_tagged[:4], photos[:3]
        args.steps, args.batch = 4, 16
    calib = [im for _, im in calib_tagged]
    # Each die cut once at twice its box, its die as many pixels across as the crops will have.
    bank_margin = 2.0
    side = int(round(args.crop_size * bank_margin / args.margin))
    bank = D.CropBank.cut(train + photos, lambda d: reads(d, args.d6), side, bank_margin, label=numeral_label)
    photo_dice = sum(len(im.dice) for im in photos)  # the bank's last dice
    if not len(bank):
        print(f"error: --renders: no {', '.join(NUMBERED)} dice in {', '.join(map(str, args.renders))}", file=sys.stderr)
        return 2
    # --init: every class the model read stays, whatever these renders hold; new ones (--d6) start fresh
    init = init_classes(args.init) if args.init else None
    classes = sorted(set(bank.labels) | set(init or []), key=class_key)
    index = {c: i for i, c in enumerate(classes)}
    targets = np.array([index[label] for label in bank.labels])
    log(f"numerals: {len(bank)} dice on {len(train)} renders and {len(photos)} photos ({photo_dice} d6 printed with "
        f"pips; cut in {time.time() - started:.0f} s), calib {len(calib)} renders; {len(classes)} classes")
    chances = draw_chances(bank.labels, args.oversample_weights, photo_dice)  # None: every die alike
    if chances is not None:
        kinds = np.array([label.split(":")[0] for label in bank.labels])
        log("numerals: --oversample, share of the draws per kind: "
            + ", ".join(f"{k} {chances[kinds == k].sum():.1%} (of the dice {np.mean(kinds == k):.1%})"
                        for k in ("d6",) * args.d6 + NUMBERED)
            + (f"; the photos' d6 {chances[len(chances) - photo_dice:].sum():.1%}" if photo_dice else ""))

    def batch_of(crops) -> torch.Tensor:
        return torch.from_numpy(D.chw_batch(crops))

    net = NumeralNet(len(classes), channels=args.channels, colour=not args.grey_only)
    resumed = load_checkpoint(args.checkpoint, args) if args.checkpoint else None
    if args.init is not None and not resumed:
        warm_from(net, args, bank, classes, init)
    net = net.to(args.device)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    net = net.to(memory_format=layout)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=5e-4)
    sched = one_cycle(opt, args.lr, args.steps)
    net.train()
    # before: seconds spent by earlier slices of a checkpointed run; resumed_at: the steps it went on from
    losses, first, before, resumed_at = [], 0, 0.0, []
    if resumed:
        net.load_state_dict(resumed["net"])
        opt.load_state_dict(resumed["opt"])
        sched.load_state_dict(resumed["sched"])
        rng.bit_generator.state = resumed["rng"]
        torch.set_rng_state(resumed["torch_rng"])
        losses, first, before = list(resumed["losses"]), int(resumed["step"]), float(resumed["seconds"])
        resumed_at = list(resumed["resumed_at"]) + [first]
        log(f"numerals: going on from step {first} of {args.steps} ({args.checkpoint})")
    started -= before
    t0 = time.time() - before
    last = max(first, min(args.steps, args.stop_after or args.steps))  # a --stop-after the checkpoint passed: no step

    def checkpoint(step: int) -> None:
        save_checkpoint(args.checkpoint, {"options": run_options(args), "step": step, "net": net.state_dict(),
                                          "opt": opt.state_dict(), "sched": sched.state_dict(),
                                          "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                                          "losses": losses, "seconds": time.time() - started,
                                          "resumed_at": resumed_at})

    stream = (batch_stream(bank, targets, args, chances) if args.workers
              else augmented_batches(bank, targets, args, rng, range(first, last), chances))
    for step, (x, y) in enumerate(stream, start=first):
        logits = net(x.to(args.device, memory_format=layout))
        loss = torch.nn.functional.cross_entropy(logits, y.to(args.device), label_smoothing=args.label_smoothing)
        optimise(opt, sched, loss, losses, step, args.steps, "numerals", t0)
        if args.checkpoint and ((step + 1) % args.checkpoint_every == 0 or step + 1 == last):
            checkpoint(step + 1)
    if last < args.steps:
        log(f"numerals: stopped after step {last} of {args.steps}; the same command goes on from {args.checkpoint}")
        return 0
    net = net.cpu().to(memory_format=torch.contiguous_format)
    stem = model_stem(args)
    path = args.out / f"{stem}.onnx"
    if args.float:
        export_classifier(net, path, args.crop_size)
    else:
        # Activation ranges from 16 batches of training crops, cut as the reader cuts them.
        qrng = np.random.default_rng(args.seed)
        batches = [batch_of([bank.sample(int(i), qrng, args.crop_size, args.margin, jitter=0.0)
                             for i in qrng.integers(0, len(bank), 32)]).numpy() for _ in range(16)]
        export_int8(net, path, args.crop_size, batches)
        log(f"numerals: int8 weights, {path.stat().st_size / 1e6:.2f} MB")
    # ---- temperature and accuracy on the held-out renders, through the runtime classifier
    model = Classifier(path, classes, 1.0, args.crop_size, args.margin, threads=args.threads)
    def scored(pairs):
        """Logits and targets of the numbered dice of (folder, image) ``pairs``, pooled in their
        order, and top-1 right per kind of each folder."""
        parts, per_folder = [], {}
        for folder in dict.fromkeys(r for r, _ in pairs):
            zf, tf = numeral_logits(model, [im for r, im in pairs if r == folder], index, D.load_rgb, args.d6)
            parts.append((zf, tf))
            per_folder[folder] = right_per_kind(zf, tf, classes)
        if not parts:
            return np.zeros((0, len(classes)), np.float32), np.zeros(0, int), per_folder
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), per_folder

    z, t, calib_per_folder = scored(calib_tagged)
    temperature = fit_temperature(z, t)
    if warning := bound_warning(temperature, "the numeral model's temperature"):
        log(warning)
    right = float(np.mean(z.argmax(axis=1) == t)) if len(t) else 0.0
    log(f"numerals: calib renders {len(t)} dice, read right {right:.1%}, temperature {temperature:.3f}")
    valid_right, valid_per_folder = {}, {}
    if valid:
        zv, tv, valid_per_folder = scored(valid)
        valid_right = right_per_kind(zv, tv, classes)
        log("numerals: --valid renders, read right at the labelled box: "
            + ", ".join(f"{k} {v['right']:.1%} of {v['dice']}" for k, v in valid_right.items()))
    settings = {"file": path.name, "classes": classes, "temperature": temperature,
                "crop_size": args.crop_size, "margin": args.margin}
    (args.out / f"{stem}.json").write_text(json.dumps(settings, indent=1) + "\n")
    reader_json = args.out / "reader.json"
    if reader_json.is_file():
        config = json.loads(reader_json.read_text())
        config[stem.replace("-", "_")] = settings
        reader_json.write_text(json.dumps(config, indent=1) + "\n")
    log_entry = {"classes": classes, "loss": [float(np.mean(losses[i : i + 100])) for i in range(0, len(losses), 100)],
                 "calib_dice": int(len(t)), "calib_right": right, "valid_right": valid_right, "temperature": temperature,
                 # top-1 at the labelled boxes per folder and kind: {folder: {kind: {"dice", "right"}}}
                 "calib_right_per_folder": calib_per_folder, "valid_right_per_folder": valid_per_folder,
                 "dice": len(bank), "renders": [str(r) for r in args.renders],
                 # --pip-photos: the photos' d6 (training split only) trained as d6:pips
                 "pip_photos": [str(p) for p in args.pip_photos], "pip_photo_dice": photo_dice,
                 # the steps a --checkpoint run went on from (OpenCV's noise generator restarts there)
                 "resumed_at": resumed_at,
                 # --init: the model this run went on from, its md5, and its own run's log (init_record)
                 "init": None if args.init is None else init_record(args.init),
                 "seconds": round(time.time() - started, 1), "args": {k: str(v) for k, v in vars(args).items()}}
    (args.out / f"{stem}-log.json").write_text(json.dumps(log_entry, indent=1) + "\n")
    log(f"numerals done in {time.time() - started:.0f} s; {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
