"""Train the cocked-die model (is a die lying flat?): ``python3 -m pi_table.train.cocked``.

    python3 -m pi_table.train --data ../shared/data/real --renders renders/train --out models/ --seed 0
    python3 -m pi_table.train.cocked --data ../shared/data/real --renders renders/train --renders renders/num \\
        --out models/ --seed 0

A die that does not lie flat (leaning on another die or the tray's wall) is reported with
status ``cocked`` and no face, never guessed (RULES.md, "Dice faces as read by the camera";
INTERFACES.md ``status``): the table asks for a re-roll. The photos in ../shared label no
cocked die, so the cocked examples are rendered ones (``pi_table.train.render`` tilts one die
in ten by 10 to 30 degrees and says so in ``meta/NAME.json``); the flat examples are the
rendered flat dice and every die of the photos' train split (read from ``--out``'s
``splits.json``, written by ``python3 -m pi_table.train``, so that the photos' valid split stays
unseen). A small CNN (:class:`pi_table.train.nets.NumeralNet` with two classes, flat and cocked)
reads a crop of each die (``--crop-size``, 64 px; the classifier's ``margin``),
and where the die lies in the image as two more input planes (CoordConv, Liu et al. 2018): seen
from a camera above the tray's centre, a flat die far from the centre shows a side too, and only
on the side away from the centre (:func:`pi_table.vision.reader.with_position`).

The threshold on P(cocked) is chosen on the calib split: the lowest (0.5..0.999) at which at
most ``--flat-target`` of the flat dice are flagged, in the photos and in the renders each
(a flat die flagged cocked costs a needless re-roll). Writes ``cocked.onnx``, ``cocked.json``
(the reader's ``cocked`` settings, copied into ``reader.json`` now and by ``python3 -m
pi_table.train`` when it runs after) and ``cocked-log.json``. CPU only, deterministic for a seed.

``--channels`` and ``--blocks`` size the net (:class:`~pi_table.train.nets.NumeralNet`'s stages);
``--int8`` quantises it (7-bit weights, :func:`pi_table.train.nets.quantize_int8`) before the
temperature and threshold are fitted, and ``--calibrate-only`` fits them again for ``--out``'s
model without training (quantising a float one first with ``--int8``; models/history/cocked.md says what
each was tried for).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pi_table.cli import Parser
from pi_table.train import int_list, one_cycle, refuse_bad_options, refuse_smoke_over_models
from pi_table.vision.reader import centre_offset, with_position

CLASSES = ["flat", "cocked"]


def parse_args(argv=None) -> argparse.Namespace:
    p = Parser(prog="python3 -m pi_table.train.cocked", description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, action="append", default=[],
                   help="labelled photo folders (flat dice), split as --out's splits.json says; repeatable")
    p.add_argument("--renders", type=Path, action="append", required=True, help="rendered folders; repeatable")
    p.add_argument("--out", type=Path, required=True, help="model folder (reader.json and splits.json there)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=12000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (one-cycle)")
    p.add_argument("--crop-size", type=int, default=64, help="crop side, pixels")
    p.add_argument("--channels", default="16,32,48,64", help="the net's channels at strides 2, 4, 8 and 16 (comma-separated)")
    p.add_argument("--blocks", default="0,1,2,1", help="residual blocks at each of those strides (comma-separated, 0 or more)")
    p.add_argument("--flat-target", type=float, default=0.00165,
                   help="most flat calib dice (photos, renders: each) that may be flagged cocked")
    p.add_argument("--int8", action="store_true", help="write the model with int8 weights (7-bit) and uint8 "
                   "activations, scales from training crops (nets.quantize_int8), before its temperature and "
                   "threshold are fitted: a third of the size and faster on a CPU")
    p.add_argument("--calibrate-only", action="store_true", help="train nothing: fit the temperature and choose the "
                   "threshold again for --out's cocked.onnx (trained with the same --data, --renders and --seed); "
                   "with --int8, a float cocked.onnx is first quantised as an --int8 run writes it")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--smoke", action="store_true", help="a few steps on a few images: checks the code, not a model "
                   "(refused into a folder of a real run's models)")
    args = p.parse_args(argv)
    channels, blocks = int_list(args.channels), int_list(args.blocks)
    refuse_bad_options((("--channels", args.channels, len(channels) == 4 and min(channels) >= 1, "four whole numbers of 1 or more"),
                        ("--blocks", args.blocks, len(blocks) == 4 and min(blocks) >= 0, "four whole numbers of 0 or more")))
    args.channels, args.blocks = tuple(channels), tuple(blocks)
    refuse_bad_options((("--steps", args.steps, args.steps >= 1, "1 or more"),
                        ("--batch", args.batch, args.batch >= 1, "1 or more"),
                        ("--seed", args.seed, args.seed >= 0, "0 or more"),
                        ("--lr", args.lr, 0 < args.lr < 1, "in (0, 1)"),
                        ("--crop-size", args.crop_size, args.crop_size >= 16, "16 or more"),
                        ("--flat-target", args.flat_target, 0 <= args.flat_target <= 1, "0..1"),
                        ("--threads", args.threads, args.threads >= 1, "1 or more")))
    if args.smoke:
        refuse_smoke_over_models(args.out)
    return args


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def quant_batches(banks, rng: np.random.Generator, size: int, margin: float, batches: int = 16,
                  batch: int = 32) -> list[np.ndarray]:
    """The crops whose activation ranges set the int8 model's scales (:func:`pi_table.train.nets.quantize_int8`):
    ``batches`` Nx5xSxS float32 batches (RGB 0..1 and the two position planes, :func:`with_position`) of ``batch``
    training crops, each group of ``banks`` ((CropBank, label) pairs) an equal share as in training, cut as the
    reader cuts them (no photometric change). ``rng`` should be a generator of their own, so that a float model
    quantised by ``--calibrate-only --int8`` gets the same scales as one trained with ``--int8``."""
    from pi_table.train import data as D

    out = []
    for _ in range(batches):
        crops, offsets = [], []
        for k in rng.integers(0, len(banks), batch):
            bank = banks[int(k)][0]
            crop, offset = bank.sample(int(rng.integers(0, len(bank))), rng, size, margin, offset=True)
            crops.append(crop)
            offsets.append(offset)
        out.append(with_position(D.chw_batch(crops), np.array(offsets, np.float32)))
    return out


def split_photos(images, models: Path) -> tuple[list, list]:
    """The photos of ``images`` in ``models/splits.json``'s train and calib lists (by folder and name)."""
    from pi_table.vision.evaluate import split_names

    train, calib = split_names(models, "train") or {}, split_names(models, "calib") or {}
    return ([im for im in images if im.path.name in train.get(im.folder, ())],
            [im for im in images if im.path.name in calib.get(im.folder, ())])


def choose_cocked_threshold(p_flat_photos: np.ndarray, p_flat_renders: np.ndarray, target: float) -> float:
    """The lowest threshold on P(cocked) (0.5..0.999, steps of 0.01 then 0.001 above 0.99) at which
    at most ``target`` of each group of flat dice is at or above it; 0.999 if none is."""
    grid = list(np.round(np.arange(0.5, 0.99, 0.01), 2)) + list(np.round(np.arange(0.99, 0.9995, 0.001), 3))
    for t in grid:
        if all(float(np.mean(p >= t)) <= target for p in (p_flat_photos, p_flat_renders) if len(p)):
            return float(t)
    return 0.999


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from pi_table.train import data as D
    from pi_table.train.__main__ import check_model_file, load_folders, log, optimise, start
    from pi_table.train.nets import NumeralNet, export_classifier, is_quantized, quantize_int8
    from pi_table.train.numerals import bound_warning, fit_temperature
    from pi_table.vision.dataset import is_calib_render
    from pi_table.vision.dataset import with_die_boxes
    from pi_table.vision.reader import Classifier

    for name in ("reader.json", "splits.json"):
        if not (args.out / name).is_file():
            return fail(f"--out: no {name} in {args.out} (train the reader first: python3 -m pi_table.train --out {args.out})")
    path = args.out / "cocked.onnx"
    if args.calibrate_only:
        check_model_file("--calibrate-only", path)
    config = json.loads((args.out / "reader.json").read_text())
    size, margin = int(args.crop_size), float(config["classifier"]["margin"])
    renders = load_folders(args.renders, "--renders", folder_name="renders")
    renders = [im for im in renders if im.dice and all(d.cocked is not None for d in im.dice)]
    if not renders:
        return fail(f"--renders: no renders with meta/ cocked flags in {', '.join(map(str, args.renders))}")
    photos = load_folders(args.data, "--data") if args.data else []
    photo_train, photo_calib = split_photos(photos, args.out)
    rng, started = start(args)
    render_train = [im for im in renders if not is_calib_render(im.path.name)]
    render_calib = [im for im in renders if is_calib_render(im.path.name)]
    if args.smoke:
        # renders holding a cocked die first (a stable sort), so that both classes are there
        render_train = sorted(render_train, key=lambda im: not any(d.cocked for d in im.dice))[:12]
        render_calib = render_calib[:4]
        photo_train, photo_calib = photo_train[:3], photo_calib[:2]
        args.steps, args.batch = 4, 8
    photo_train = [with_die_boxes(im) for im in photo_train]
    photo_calib = [with_die_boxes(im) for im in photo_calib]

    def only(images, cocked: bool):
        kept = [replace(im, dice=tuple(d for d in im.dice if bool(d.cocked) == cocked)) for im in images]
        return [im for im in kept if im.dice]

    # The training dice are cut for training and for an int8 model's scales only: --calibrate-only of a
    # model that stays as it is reads the calib split alone.
    quantize = args.int8 and (not args.calibrate_only or not is_quantized(path))
    banks = []
    if not args.calibrate_only or quantize:
        bank_margin = 2.0
        side = int(round(size * bank_margin / margin))
        banks = [D.CropBank.cut(only(render_train, True), lambda d: True, side, bank_margin),
                 D.CropBank.cut(only(render_train, False), lambda d: True, side, bank_margin),
                 D.CropBank.cut(photo_train, lambda d: True, side, bank_margin)]
        banks = [(b, label) for b, label in zip(banks, (1, 0, 0)) if len(b)]
        if not any(label == 1 for _, label in banks):
            return fail("--renders: no cocked die in the renders' train part")
        log(f"cocked: {', '.join(str(len(b)) for b, _ in banks)} dice (cocked renders, flat renders, photos) "
            f"cut in {time.time() - started:.0f} s")

    def batch_of(crops, offsets) -> torch.Tensor:
        return torch.from_numpy(with_position(D.chw_batch(crops), np.array(offsets, np.float32)))

    net = NumeralNet(len(CLASSES), channels=args.channels, blocks=args.blocks, planes=2)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=5e-4)
    sched = one_cycle(opt, args.lr, args.steps)
    net.train()
    losses, t0 = [], time.time()
    for step in range(0 if args.calibrate_only else args.steps):
        # each group an equal share of the batch: cocked dice are one in ten of the renders
        which = rng.integers(0, len(banks), args.batch)
        crops, offsets, labels = [], [], []
        for k in which:
            bank, label = banks[int(k)]
            crop, offset = bank.sample(int(rng.integers(0, len(bank))), rng, size, margin, offset=True)
            crops.append(D.photometric(crop, rng, 0.6))
            offsets.append(offset)
            labels.append(label)
        loss = torch.nn.functional.cross_entropy(net(batch_of(crops, offsets)), torch.tensor(labels),
                                                 label_smoothing=0.02)
        optimise(opt, sched, loss, losses, step, args.steps, "cocked", t0)
    if not args.calibrate_only:
        export_classifier(net, path, size)
    if quantize:  # in place, 7-bit weights (nets.quantize_int8's reduce_range)
        quantize_int8(path, path, quant_batches(banks, np.random.default_rng([args.seed, 9]), size, margin),
                      reduce_range=True)
        log("cocked: weights quantised to int8")

    # ---- temperature and threshold on the calib split, through the runtime model
    model = Classifier(path, CLASSES, 1.0, size, margin, threads=args.threads)

    def logits_of(images) -> tuple[np.ndarray, np.ndarray]:
        z, t = [np.zeros((0, 2), np.float32)], []
        for im in images:
            image = D.load_rgb(im.path)
            boxes = [d.box for d in im.dice]
            offsets = np.array([centre_offset(b, image.shape[1], image.shape[0]) for b in boxes], np.float32)
            z.append(model.logits(with_position(model.crops(image, boxes), offsets)))
            t += [int(bool(d.cocked)) for d in im.dice]
        return np.concatenate(z), np.array(t, int)

    zr, tr = logits_of(render_calib)
    zp, tp = logits_of(photo_calib)
    temperature = fit_temperature(np.concatenate([zr, zp]), np.concatenate([tr, tp]))
    if warning := bound_warning(temperature, "the cocked-die model's temperature"):
        log(warning)
    model.temperature = temperature
    pr, pp = model.calibrated(zr)[:, 1], model.calibrated(zp)[:, 1]
    threshold = choose_cocked_threshold(pp, pr[tr == 0], args.flat_target)
    figures = {"calib_render_cocked": int((tr == 1).sum()), "calib_render_flat": int((tr == 0).sum()),
               "calib_photo_dice": int(len(tp)),
               "cocked_caught": float(np.mean(pr[tr == 1] >= threshold)) if (tr == 1).any() else 0.0,
               "render_flat_flagged": float(np.mean(pr[tr == 0] >= threshold)) if (tr == 0).any() else 0.0,
               "photo_flat_flagged": float(np.mean(pp >= threshold)) if len(pp) else 0.0}
    log(f"cocked: temperature {temperature:.3f}, threshold {threshold}; calib: cocked renders caught "
        f"{figures['cocked_caught']:.1%} of {figures['calib_render_cocked']}, flat flagged: renders "
        f"{figures['render_flat_flagged']:.2%} of {figures['calib_render_flat']}, photos "
        f"{figures['photo_flat_flagged']:.2%} of {figures['calib_photo_dice']}")
    settings = {"file": path.name, "classes": CLASSES, "temperature": temperature, "crop_size": size,
                "margin": margin, "threshold": threshold, "position": True}
    (args.out / "cocked.json").write_text(json.dumps(settings, indent=1) + "\n")
    config["cocked"] = settings
    (args.out / "reader.json").write_text(json.dumps(config, indent=1) + "\n")
    trained = {"loss": [float(np.mean(losses[i : i + 100])) for i in range(0, len(losses), 100)],
               "dice": {"cocked_renders": len(banks[0][0]), "flat": int(sum(len(b) for b, label in banks if label == 0))}
               if banks else {}}
    run = {"seconds": round(time.time() - started, 1),
           "args": {k: (str(v) if not isinstance(v, list) else [str(x) for x in v]) for k, v in vars(args).items()}}
    entry = {"classes": CLASSES, **trained, "int8": is_quantized(path),
             **figures, "temperature": temperature, "threshold": threshold, **run}
    if args.calibrate_only:
        entry = with_training_log(entry, {**trained, **run}, run, args.out / "cocked-log.json")
    (args.out / "cocked-log.json").write_text(json.dumps(entry, indent=1) + "\n")
    log(f"cocked done in {time.time() - started:.0f} s; {path} ({path.stat().st_size / 1e3:.0f} kB)")
    return 0


def with_training_log(entry: dict, trained: dict, run: dict, path: Path) -> dict:
    """A ``--calibrate-only`` run's log ``entry`` with the training run's values kept from the log
    at ``path``: of the keys of ``trained`` (loss curve, dice, seconds, args), the old log's where it
    has them; this run's seconds and args go under ``calibration``. Without a log, ``entry`` as it
    is; a log that is not a JSON object is named in one line and ``entry`` is kept as it is too (the
    model and settings the run wrote stand)."""
    from pi_table.train.__main__ import log

    if not path.is_file():
        return entry
    try:
        before = json.loads(path.read_text())
    except ValueError:
        before = None
    if not isinstance(before, dict):
        log(f"warning: {path} is not a training log; this calibration's values are logged alone")
        return entry
    return {**entry, **{k: before.get(k, v) for k, v in trained.items()}, "calibration": run}


if __name__ == "__main__":
    sys.exit(main())
