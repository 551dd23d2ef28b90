"""Train the reader's models from labelled photos (and renders): ``python3 -m pi_table.train``.

    python3 -m pi_table.train --data ../shared/data/real --out models/ --seed 0
    python3 -m pi_table.train --data ../shared/data/real --renders renders/train --out models/ --seed 0
    python3 -m pi_table.train --data ../shared/data/real --out /tmp/m --smoke     # a minute: checks the code

Writes ``detector.onnx``, ``classifier.onnx`` (and ``classifier-2.onnx``... for ``--ensemble``; int8
weights with ``--int8``, :func:`quant_crops`),
``reader.json`` (settings the runtime reads),
``splits.json`` (which images were train / calib / valid, per data folder) and
``train-log.json`` into ``--out``. CPU only, deterministic for a given seed and thread count.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from pi_table.cli import Parser
from pi_table.train import one_cycle, refuse, refuse_bad_options, refuse_bad_out, refuse_smoke_over_models
from pi_table.train.numerals import NUMBERED, bound_warning, fit_temperature, md5_of
from pi_table.vision.dataset import boxes_pips, is_calib_render, load_label_fixes, with_die_boxes, with_label_fixes


def parse_args(argv=None) -> argparse.Namespace:
    p = Parser(prog="python3 -m pi_table.train", description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, action="append", required=True, help="labelled real photos (YOLO folders); repeatable")
    p.add_argument("--renders", type=Path, action="append", default=[], help="rendered folders (pi_table.train.render); repeatable")
    p.add_argument("--cls-renders", type=Path, action="append", default=[],
                   help="rendered folders the classifier trains on besides --renders, the detector not (e.g. close-up "
                   "renders, --die-px 90,220: the detector sees every die scaled to 12..90 px anyway, and its data stays "
                   "that of --renders); their calib renders join the calib split; repeatable")
    p.add_argument("--out", type=Path, required=True, help="where to write the models")
    p.add_argument("--calib-renders", type=Path, action="append", default=[],
                   help="rendered folders whose calib split (one render in 20, as for --renders) joins the calib "
                        "split to fit temperatures and choose thresholds; no model trains on them here "
                        "(e.g. renders/big: close-ups); repeatable")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-folders", default="", help="comma-separated data folders to train on (default all); "
                   "for leave-one-folder-out figures")
    p.add_argument("--det-steps", type=int, default=6000)
    p.add_argument("--cls-steps", type=int, default=8000)
    p.add_argument("--cls-lr", type=float, default=3e-3, help="classifier's peak learning rate (one-cycle)")
    p.add_argument("--det-lr", type=float, default=2e-3, help="detector's peak learning rate (one-cycle)")
    p.add_argument("--det-init", type=Path, default=None, help="a detector ONNX model (e.g. models/detector.onnx) "
                   "the detector starts from instead of fresh weights, its one-cycle schedule run again from there "
                   "(a warm restart, nets.warm_start; with a lower --det-lr and fewer --det-steps: a fine-tune)")
    p.add_argument("--det-seed", type=int, default=None, help="the detector's own seed (its weights' start and its "
                   "draws), the photos' split staying --seed's: the same recipe at other seeds, to see how far a "
                   "retrained detector moves by chance alone (models/history/detector.md, 'How much of that is the seed?'); "
                   "default: the run's generator, as before")
    p.add_argument("--det-from", type=Path, default=None, help="model folder whose detector.onnx is reused instead of "
                   "training one (for classifier experiments; the shipped model trains both); its numeral and cocked-die "
                   "models too where --out has none")
    p.add_argument("--cls-from", type=Path, default=None, help="model folder whose classifiers (its reader.json's "
                   "classifier files, same classes, crop size and margin) are reused instead of training them (for "
                   "detector experiments); its numeral and cocked-die models too where --out has none")
    p.add_argument("--close-up-from", type=Path, default=None, help="model folder whose detector.onnx becomes the "
                   "close-up detector (--out's detector-big.onnx, reader.json's detector.close_up_file): the one the "
                   "zoomed-out second look for dice too big for the first uses; with --calibrate-only too")
    p.add_argument("--size-weight", type=float, default=2.0, help="weight of the detector's log box-size loss")
    p.add_argument("--det-batch", type=int, default=12)
    p.add_argument("--cls-batch", type=int, default=64)
    p.add_argument("--det-input", type=int, default=320, help="detector input long side, pixels")
    p.add_argument("--det-patch", type=int, default=256, help="detector training patch side, pixels")
    p.add_argument("--det-width", type=float, default=1.0, help="detector backbone channel multiplier (1: 24-40-64-80)")
    p.add_argument("--cls-width", type=float, default=1.5, help="classifier channel multiplier (1: 16-32-64-96 "
                   "channels; its run time grows about as its square)")
    p.add_argument("--crop-size", type=int, default=48, help="classifier crop side, pixels")
    p.add_argument("--ensemble", type=int, default=2, help="classifiers trained (each from its own seed: --seed, "
                   "--seed + 1, ...) on the same data and split, whose raw scores the reader averages (a deep "
                   "ensemble; classifier.onnx, classifier-2.onnx, ...); 1 for one")
    p.add_argument("--member", type=int, default=None, help="train only member K (1..--ensemble) of the ensemble, "
                   "byte for byte as the whole run trains it, so that the members of one --out can be trained at once "
                   "by parallel runs (one core each); the run that finds every member's file calibrates")
    p.add_argument("--distill", type=Path, default=None, help="model folder whose classifier(s) (its reader.json's, "
                   "an ensemble averaged) teach each classifier trained here: its loss mixes the labels' with the "
                   "teacher's softened scores on the same crops (knowledge distillation, Hinton et al. 2015), e.g. a "
                   "smaller --cls-width taught by the shipped pair")
    p.add_argument("--distill-weight", type=float, default=0.5, help="with --distill, the teacher's share of the loss "
                   "(0..1)")
    p.add_argument("--margin", type=float, default=1.3, help="crop side / box long side")
    p.add_argument("--threshold", type=float, default=None, help="confidence below which a die is reported unreadable "
                   "(default: chosen on the calib split, see --wrong-target)")
    p.add_argument("--wrong-target", type=float, default=0.003, help="the chosen threshold is the lowest at which the calib "
                   "split's dice reported ok are expected (from their calibrated confidence) to be read wrong at most this share")
    p.add_argument("--numbered-wrong-target", type=float, default=None, help="the same for the numbered kinds' "
                   "thresholds (d8, d10, d10-tens), chosen on the calib renders (default: --wrong-target). Those renders "
                   "share fonts, colours and backgrounds with training; new dice do not, and read wrong more often than "
                   "the calib renders expect (models/numerals.md)")
    p.add_argument("--numbered-floor", type=float, default=None, help="the numbered kinds' thresholds are at least "
                   "this, whatever the calib renders choose (shipped: 0.97; 0.99 with the 32000-step numeral model: the calib "
                   "renders hold too few d8 read wrong with confidence to see them: models/history/numerals.md, \"Four "
                   "times the steps\" and \"A lower floor for the surer model\")")
    p.add_argument("--calib-d6", choices=("photos", "pooled"), default="photos",
                   help="the calib d6 that fit the photos' temperature and choose the d6 threshold: the calib photos' "
                   "(default, as shipped) or pooled with the calib renders' d6 (dice of colours and pips the photos "
                   "lack, as other people's dice are: models/history/classifier.md, \"The d6 calibrated on photos and "
                   "renders together\")")
    p.add_argument("--cls-augment", type=float, default=0.6, help="strength of the crops' photometric augmentation")
    p.add_argument("--cls-colour", type=float, help="strength of the crops' colour changes alone (channels swapped "
                   "for a quarter of that share, grey for a tenth, each channel's gain by an eighth: data.photometric); "
                   "default: --cls-augment's, as shipped (models/history/classifier.md, \"Another camera's colour\")")
    p.add_argument("--paste", type=float, default=0.4, help="share of samples whose dice are pasted onto a new surface")
    p.add_argument("--recolour", type=float, default=0.0, help="chance that a pasted die is recoloured (a random "
                   "two-colour ramp over its brightness: data.recolour_die), so that one folder's white dice also teach "
                   "coloured ones; 0 (default) pastes dice as photographed")
    p.add_argument("--paste-from", default="nellbyler-d6-tray,matteop65-d6-desk", help="comma-separated data folders "
                   "whose dice are pasted onto new surfaces (their boxes must cover the whole die: see --pip-boxes)")
    p.add_argument("--pip-boxes", choices=("grow", "keep"), default="grow", help="labels of folders that box a die's "
                   "pips (pi_table.vision.dataset.PIP_BOX_FOLDERS: matteop65's) are grown to the whole die by GrabCut "
                   "(grow), or trained on as labelled (keep)")
    p.add_argument("--fixed-labels", action="store_true", help="train and calibrate on the labels with the kit's checked "
                   "corrections applied (pi_table/vision/label_fixes.json; as pi-table eval --fixed-labels)")
    p.add_argument("--box-weight", type=float, default=1.0, help="weight of the classifier's box-refinement loss")
    p.add_argument("--refine", type=int, default=0, help="extra classifier passes on re-cut crops at run time (reader.json)")
    p.add_argument("--second-look", type=int, default=8, choices=(1, 2, 4, 8), help="views averaged for a die below the "
                   "threshold at run time (reader.json; 1 for none): its crop turned by quarter turns (8, the default: "
                   "each also mirrored, for the classifier; models/history/classifier.md, \"Eight views\")")
    p.add_argument("--refine-unsure", type=int, default=1, choices=(0, 1, 2, 3),
                   help="passes that read a die below the threshold again from the box the box head placed "
                        "(reader.json's refine_unsure, at run time; default 1, as shipped: models/history/classifier.md, "
                        "'Refine the unsure'; 0 for none). The thresholds are chosen without them, so a re-cut die "
                        "turns ok only by clearing the same bar")
    p.add_argument("--recut-numbered", type=int, default=3, choices=(0, 1, 2, 3),
                   help="passes that read a numbered die whose numeral is still unsure again from the box its last "
                        "read placed (reader.json's recut_numbered, at run time; default 3, as shipped: "
                        "models/history/numerals.md, 'Unsure numerals cut again, up to three times'). Written after the "
                        "thresholds are chosen, as --refine-unsure is")
    p.add_argument("--cascade", type=float, default=None, metavar="TAU",
                   help="for an ensemble, reader.json's classifier cascade (0..1], at run time: the second classifier "
                        "reads only the dice the first does not read as a d6 face at TAU or more "
                        "(pi_table.vision.reader.Classifier; models/history/classifier.md, 'Cascade, d6 faces only'; "
                        "the shipped models: 0.97); the thresholds are chosen without it. Default: none")
    p.add_argument("--thresholds-with-refine", action="store_true",
                   help="choose the thresholds with --refine-unsure on, as it runs (tried, not shipped: it chose "
                        "lower d8 and d10 thresholds that let more wrong numerals through; models/history/classifier.md)")
    p.add_argument("--cls-render-kinds", default="d6,d8,d10,d10-tens", help="comma-separated kinds whose rendered dice the "
                   "classifier trains on; the detector trains on every rendered die")
    p.add_argument("--render-d6-faces", action=argparse.BooleanOptionalAction, default=True,
                   help="train the classifier on rendered d6 faces too (default); with --no-render-d6-faces a "
                   "rendered d6 only teaches 'a d6, some face' (its loss is -log of the d6 faces' summed probability), "
                   "so the d6 faces are learnt from the photos alone. Renders' faces teach pip styles, colours and "
                   "materials the two photo folders lack (models/history/classifier.md: rendered d6 and held-out photos, "
                   "measured by pi-table eval)")
    p.add_argument("--label-smoothing", type=float, default=0.02, help="the classifier's label smoothing (0..0.5)")
    p.add_argument("--calibrate-only", action="store_true", help="train nothing: fit the temperature and choose the "
                   "thresholds again for the models in --out (trained with the same --data, --renders and --seed); "
                   "with --int8, float classifiers there are first quantised as an --int8 run writes them")
    p.add_argument("--numbered-only", action="store_true", help="with --calibrate-only: choose only the numbered kinds' "
                   "thresholds again (d8, d10, d10-tens, at --numbered-wrong-target, as the full calibration chooses them), "
                   "every other setting of reader.json kept: for a numeral model put into --out since, its numerals.json "
                   "beside it (models/history/numerals.md, \"Four times the steps\")")
    p.add_argument("--int8", action="store_true", help="write the classifiers with int8 weights (7-bit), a quarter of "
                   "the size and faster on a CPU (nets.quantize_int8; the shipped pair is int8: models/classifier.md)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--smoke", action="store_true", help="a few steps on a few images: checks the code, not a model "
                   "(refused into a folder of a real run's models)")
    args = p.parse_args(argv)
    refuse_bad_options((("--label-smoothing", args.label_smoothing, 0 <= args.label_smoothing <= 0.5, "0..0.5"),
                        ("--det-steps", args.det_steps, args.det_steps >= 1, "1 or more"),
                        ("--det-lr", args.det_lr, 0 < args.det_lr < 1, "in (0, 1)"),
                        ("--cls-lr", args.cls_lr, 0 < args.cls_lr < 1, "in (0, 1)"),
                        ("--det-batch", args.det_batch, args.det_batch >= 1, "1 or more"),
                        ("--cls-batch", args.cls_batch, args.cls_batch >= 1, "1 or more"),
                        # the detector's feature maps halve five times (nets.DetectorNet: sides multiples of 32)
                        ("--det-input", args.det_input, args.det_input >= 32, "32 or more"),
                        ("--det-patch", args.det_patch, args.det_patch >= 32 and args.det_patch % 32 == 0,
                         "a multiple of 32"),
                        ("--crop-size", args.crop_size, args.crop_size >= 16, "16 or more"),
                        ("--margin", args.margin, 0 < args.margin < math.inf, "above 0"),
                        ("--threshold", args.threshold, args.threshold is None or 0 <= args.threshold <= 1, "0..1"),
                        ("--paste", args.paste, 0 <= args.paste <= 1, "0..1"),
                        ("--cls-augment", args.cls_augment, 0 <= args.cls_augment < math.inf, "0 or more"),
                        ("--cls-colour", args.cls_colour, args.cls_colour is None or 0 <= args.cls_colour <= 4, "0..4"),
                        ("--size-weight", args.size_weight, 0 <= args.size_weight < math.inf, "0 or more"),
                        ("--box-weight", args.box_weight, 0 <= args.box_weight < math.inf, "0 or more"),
                        ("--refine", args.refine, args.refine >= 0, "0 or more"),
                        ("--threads", args.threads, args.threads >= 1, "1 or more"),
                        ("--seed", args.seed, args.seed >= 0, "0 or more"),
                        ("--det-seed", args.det_seed, args.det_seed is None or args.det_seed >= 0, "0 or more"),
                        ("--cls-steps", args.cls_steps, args.cls_steps >= 1, "1 or more"),
                        ("--ensemble", args.ensemble, args.ensemble >= 1, "1 or more"),
                        ("--member", args.member, args.member is None or 1 <= args.member <= args.ensemble,
                         f"1..--ensemble ({args.ensemble})"),
                        ("--det-width", args.det_width, args.det_width > 0, "above 0"),
                        ("--cls-width", args.cls_width, args.cls_width > 0, "above 0"),
                        ("--recolour", args.recolour, 0 <= args.recolour <= 1, "0..1"),
                        ("--distill-weight", args.distill_weight, 0 <= args.distill_weight <= 1, "0..1"),
                        ("--cascade", args.cascade, args.cascade is None or 0 < args.cascade <= 1, "in (0, 1]"),
                        ("--wrong-target", args.wrong_target, 0 < args.wrong_target < 1, "in (0, 1)"),
                        ("--numbered-wrong-target", args.numbered_wrong_target,
                         args.numbered_wrong_target is None or 0 < args.numbered_wrong_target < 1, "in (0, 1)"),
                        ("--numbered-floor", args.numbered_floor,
                         args.numbered_floor is None or 0 < args.numbered_floor < 1, "in (0, 1)")))
    if args.numbered_only and not args.calibrate_only:
        refuse("--numbered-only", "goes with --calibrate-only (it chooses thresholds for models already trained)")
    if args.numbered_only and args.int8:
        refuse("--numbered-only", "keeps every model as it is; --int8 would quantise the classifiers")
    refuse_bad_out(args.out)
    if args.smoke:
        refuse_smoke_over_models(args.out)
    return args


def under(folder: str, names) -> bool:
    """True when data folder ``folder`` is one of ``names`` or inside one
    ("matteop65-d6-desk" covers "matteop65-d6-desk/Train")."""
    return any(folder == n or folder.startswith(n + "/") for n in names)


def folder_names(text: str, folders, option: str) -> list[str]:
    """The comma-separated data folder names of ``option``; SystemExit (status 2) naming one
    that covers none of ``folders``."""
    names = [f.strip() for f in text.split(",") if f.strip()]
    for name in names:
        if not any(under(f, [name]) for f in folders):
            refuse(option, f"no data folder {name!r} (have {', '.join(folders)})")
    return names


def main_label(die) -> str:
    """The classifier's class for a labelled die: ``KIND:FACE`` for pips, the shape class
    (``d8:*``, ``d10:*``) for a numbered die, whose numeral the numeral model reads."""
    from pi_table.vision.reader import shape_class

    return shape_class(die.kind) if die.kind in NUMBERED else f"{die.kind}:{die.face}"


def allowed_classes(classes: list[str], label: str, kind_only: bool = False) -> np.ndarray:
    """Boolean C-vector of the classes a training target accepts: ``label`` alone, or with
    ``kind_only`` every class of its kind (a rendered d6: "a d6, some face")."""
    if kind_only:
        kind = label.split(":")[0]
        return np.array([c.split(":")[0] == kind for c in classes])
    return np.array([c == label for c in classes])


def set_cross_entropy(logits, allowed, smoothing: float):
    """Mean of -log P(target set) over a batch, label-smoothed: (1 - e) (-log sum of the
    allowed classes' probabilities) + e (mean over classes of -log p). With one allowed class
    per row this is ``torch.nn.functional.cross_entropy(..., label_smoothing=e)``.

    Args:
        logits: BxC float tensor; allowed: BxC bool tensor, at least one True per row.
    """
    import torch

    logp = torch.log_softmax(logits, dim=1)
    nll = -torch.logsumexp(logp.masked_fill(~allowed, float("-inf")), dim=1)
    return ((1 - smoothing) * nll - smoothing * logp.mean(dim=1)).mean()


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def start(args: argparse.Namespace) -> tuple[np.random.Generator, float]:
    """Seed torch and NumPy from ``args.seed``, set ``args.threads``, make ``args.out``; the
    run's random generator and start time (s)."""
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    return np.random.default_rng(args.seed), time.time()


def load_folders(roots, option: str, folder_name: str | None = None) -> list:
    """Every labelled image of the YOLO folders ``roots``; SystemExit (status 2) with a
    one-line error naming ``option`` and the folder when one is missing or malformed, or holds
    no labelled image (an image with no label file beside it is not one)."""
    from pi_table.vision.dataset import load_yolo

    images = []
    for root in roots:
        try:
            found = load_yolo(root, folder_name=folder_name)
        except (FileNotFoundError, ValueError) as e:
            refuse(option, str(e))
        if not found:
            refuse(option, f"no labelled images in {root} (each image in images/ needs its .txt in labels/)")
        images += found
    return images


def optimise(opt, sched, loss, losses: list, step: int, steps: int, what: str, t0: float) -> None:
    """One optimiser step on ``loss``; logs the mean of the last 100 losses every 100 steps."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    losses.append(loss.item())
    if (step + 1) % 100 == 0 or step + 1 == steps:
        log(f"{what} step {step + 1}/{steps} loss {np.mean(losses[-100:]):.4f} "
            f"({(time.time() - t0) / (step + 1):.2f} s/step)")


def main(argv=None) -> int:
    args = parse_args(argv)
    import cv2
    import torch

    from pi_table.train import data as D
    from pi_table.train.nets import ClassifierNet, DetectorNet, export_classifier, export_detector, export_int8, quantize_int8
    from pi_table.vision.dice import class_key
    from pi_table.vision.reader import model_files

    to_quantize = []  # --calibrate-only: float classifiers in --out, quantised before calibrating
    if args.calibrate_only:
        check_trained(args.out)  # before loading any data: a wrong --out fails at once
        if args.int8:
            to_quantize = float_classifiers(args.out)
    # before loading any data: a wrong --distill or --cls-from fails at once
    teacher_model = load_teacher(args.distill, args.crop_size, args.threads) if args.distill else None
    reused = classifiers_from(args.cls_from, args.crop_size, args.margin) if args.cls_from else None
    if args.close_up_from is not None:
        check_model_file("--close-up-from", args.close_up_from / "detector.onnx")
    if args.det_from is not None:
        check_model_file("--det-from", args.det_from / "detector.onnx")
    if args.det_init is not None:
        if args.det_from is not None:
            refuse("--det-init", "trains a detector; --det-from reuses one")
        check_model_file("--det-init", args.det_init)
    if args.det_seed is not None and args.det_from is not None:
        refuse("--det-seed", "seeds a detector trained here; --det-from reuses one")
    if reused is not None and args.member is not None:
        refuse("--cls-from", "reuses every classifier; --member trains one")
    rng, started = start(args)

    # ---- data and splits
    by_folder: dict[str, list] = defaultdict(list)
    for im in load_folders(args.data, "--data"):
        by_folder[im.folder].append(im)
    splits = {f: D.split_folder(ims, f, args.seed) for f, ims in sorted(by_folder.items())}
    wanted = folder_names(args.train_folders, splits, "--train-folders")
    paste_from = folder_names(args.paste_from, splits, "--paste-from")
    trained = [f for f in splits if not wanted or under(f, wanted)]
    render_images = load_folders(args.renders, "--renders", folder_name="renders")
    cls_renders = load_folders(args.cls_renders, "--cls-renders", folder_name="renders")
    calib_renders = load_folders(args.calib_renders, "--calib-renders", folder_name="renders")
    # One render in 20 is kept for calibration, as the numeral model keeps it (train/numerals.py).
    render_calib = [im for im in render_images + cls_renders + calib_renders if is_calib_render(im.path.name)]
    render_images = [im for im in render_images if not is_calib_render(im.path.name)]
    cls_renders = [im for im in cls_renders if not is_calib_render(im.path.name)]
    train_imgs = [im for f in trained for im in splits[f]["train"]]
    calib_imgs = [im for f in trained for im in splits[f]["calib"]]
    if args.smoke:
        # three photos of each folder, so that every path (copy-paste too) runs
        train_imgs = [im for f in trained for im in splits[f]["train"][:3]]
        calib_imgs, render_images, render_calib = calib_imgs[:3], render_images[:6], render_calib[:2]
        cls_renders = cls_renders[:4]
        args.det_steps, args.cls_steps, args.det_batch, args.cls_batch = 4, 4, 2, 16
    if args.pip_boxes == "grow":
        # matteop65 boxes a die's pips (a one's box is its pip): grow them to the die (GrabCut), as
        # every other source boxes dice; trained on pip boxes the detector finds lone pips as dice.
        t0 = time.time()
        if not args.calibrate_only or to_quantize:  # quant_crops cuts training dice
            train_imgs = [with_die_boxes(im) for im in train_imgs]
        calib_imgs = [with_die_boxes(im) for im in calib_imgs]
        log(f"pip boxes grown to die boxes in {time.time() - t0:.0f} s")
    if args.fixed_labels:  # after growing: a fix's box is the whole die's
        fixes = load_label_fixes()
        applied = []
        for imgs in (train_imgs, calib_imgs):
            pairs = [with_label_fixes(im, fixes) for im in imgs]
            imgs[:] = [im for im, _ in pairs]
            applied.append(sum(n for _, n in pairs))
        log(f"label fixes applied: {applied[0]} to training photos, {applied[1]} to calib photos")
    splits_text = json.dumps({
        "seed": args.seed,
        "trained_on": [f for f in trained if splits[f]["train"]] + (["renders"] if render_images else []),
        "folders": {f: {k: [im.path.name for im in v] for k, v in s.items()} for f, s in splits.items()},
    }, indent=1) + "\n"
    calib_imgs += render_calib
    if not args.calibrate_only:
        log(f"train {len(train_imgs)} photos + {len(render_images)} renders (+ {len(cls_renders)} for the classifier), "
            f"calib {len(calib_imgs)}; folders {trained}")

    # Pips are read here; a numbered die only by its shape (``d8:*``), its numeral by the numeral model.
    cls_kinds = {k.strip() for k in args.cls_render_kinds.split(",") if k.strip()}
    dice_pool = [(im, d) for im in train_imgs + render_images + cls_renders for d in im.dice
                 if im.folder != "renders" or d.kind in cls_kinds]
    classes = sorted({main_label(d) for _, d in dice_pool}, key=class_key) + ["none"]

    cache: dict[Path, np.ndarray] = {}

    def image_of(im) -> np.ndarray:
        if im.path not in cache:
            cache[im.path] = D.load_rgb(im.path)
        return cache[im.path]

    def boxes_of(im) -> np.ndarray:
        return np.array([d.box for d in im.dice], np.float32).reshape(-1, 4)

    pool = train_imgs + render_images
    # Renders together weigh half as much as the real photos, whatever their number (the
    # classifier's renders: --renders and --cls-renders together).

    def sample_weights(images, renders: int) -> np.ndarray:
        render_weight = 0.5 * len(train_imgs) / max(1, renders)
        w = np.array([render_weight if im.folder == "renders" else 1.0 for im in images])
        return w / w.sum()

    weights = sample_weights(pool, len(render_images))

    def int8_crops() -> list[np.ndarray]:
        return quant_crops(dice_pool, dice_w, pool, image_of, boxes_of, args.crop_size, args.margin, args.seed)

    dice_w = sample_weights([im for im, _ in dice_pool], len(render_images) + len(cls_renders))
    if args.calibrate_only:
        check_same_split(args, splits_text)  # before a classifier is quantised in place
        if to_quantize:
            crops = int8_crops()
            for name in to_quantize:  # in place, with 7-bit weights (nets.quantize_int8's reduce_range)
                quantize_int8(args.out / name, args.out / name, crops, reduce_range=True)
                log(f"{name}: float weights quantised to int8")
        return recalibrate_only(args, calib_imgs, splits_text)
    history: dict = {"classes": classes}
    # a reused or teaching classifier must have this data's classes: checked before --out is written
    cls_files = ["classifier.onnx"] + [f"classifier-{k + 1}.onnx" for k in range(1, args.ensemble)]
    if reused is not None:
        check_reused_classes(args.cls_from, reused, classes)
        cls_files = model_files(reused)
        history["classifiers_from"] = str(args.cls_from)
    teacher = teacher_scores(teacher_model, classes, args.distill) if teacher_model else None
    if not dice_pool and (args.det_from is None or reused is None):
        # a folder named Valid (or of one or two photos) is held out whole: pi_table.train.data.split_folder
        refuse("--data", f"no labelled die to train on: every photo of {', '.join(map(str, args.data))} is held out "
                         "for calib or valid (a folder named Valid is held out whole) and there are no --renders")

    def begin_writing() -> None:
        """The run's first writes into --out, once every check has passed (the last: --det-init's
        shapes): the close-up detector, splits.json and the reused classifiers."""
        copy_close_up(args)
        (args.out / "splits.json").write_text(splits_text)
        if reused is not None:
            reuse_classifiers(args.cls_from, reused, classes, args.out)
    # copy-paste draws from these: dice boxed whole (pip boxes only once grown)
    photo_dice = [(im, d) for im in train_imgs if under(im.folder, paste_from)
                  and (args.pip_boxes == "grow" or not boxes_pips(im.folder)) for d in im.dice]
    paste_folders = {im.folder for im, _ in photo_dice}
    if not photo_dice:
        args.paste = 0.0
        log("no dice to paste from (--paste-from): copy-paste off")

    # ---- detector
    det_path = args.out / "detector.onnx"
    if args.det_from is not None:
        source = args.det_from / "detector.onnx"  # checked (a model) before any data loaded
        begin_writing()
        if source.resolve() != det_path.resolve():  # --det-from the --out folder keeps it in place
            shutil.copyfile(source, det_path)
        history["detector_from"] = str(args.det_from)
        log(f"detector reused from {source}")
        take_side_models(args.det_from, args.out)
    else:
        det_rng = rng
        if args.det_seed is not None:  # the detector's own draws; the split above stays --seed's
            torch.manual_seed(args.det_seed)
            det_rng = np.random.default_rng(args.det_seed)
            history["det_seed"] = args.det_seed
        det = DetectorNet(width=args.det_width)
        if args.det_init is not None:
            det_warm_start(det, args.det_init, pool, image_of, boxes_of, args)
            history["det_init"] = {"file": str(args.det_init), "md5": md5_of(args.det_init)}
        begin_writing()
        opt = torch.optim.AdamW(det.parameters(), lr=args.det_lr, weight_decay=1e-4)
        sched = one_cycle(opt, args.det_lr, args.det_steps)
        det.train()
        losses = []
        t0 = time.time()
        for step in range(args.det_steps):
            imgs, heats, sizes, offs, masks = [], [], [], [], []
            for i in det_rng.choice(len(pool), args.det_batch, p=weights):
                if det_rng.random() < args.paste:
                    sample = D.paste_sample(photo_dice, image_of, det_rng, args.det_patch, recolour=args.recolour)
                else:
                    sample = D.det_sample(image_of(pool[i]), boxes_of(pool[i]), det_rng, args.det_patch)
                h, s, o, m = D.det_targets(sample.boxes, args.det_patch)
                imgs.append(sample.image)
                heats.append(h), sizes.append(s), offs.append(o), masks.append(m)
            x = torch.from_numpy(D.chw_batch(imgs))
            ht, st, ot, mt = (torch.from_numpy(np.stack(a)) for a in (heats, sizes, offs, masks))
            heat, size, off = det(x)
            p = heat.clamp(1e-4, 1 - 1e-4)
            pos = (ht == 1).float()
            neg = ((ht < 1) & (ht >= 0)).float()
            n_pos = pos.sum().clamp(min=1)
            focal = -((torch.log(p) * (1 - p) ** 2 * pos).sum()
                      + (torch.log(1 - p) * p**2 * (1 - ht.clamp(min=0)) ** 4 * neg).sum()) / n_pos
            # Box size in log space: a 2-cell error matters on a small die, not on a big one.
            l_size = (torch.abs(torch.log(size + 1e-3) - torch.log(st.clamp(min=1e-3))) * mt).sum() / n_pos
            l_off = (torch.abs(off - ot) * mt).sum() / n_pos
            loss = focal + args.size_weight * l_size + l_off
            optimise(opt, sched, loss, losses, step, args.det_steps, "detector", t0)
        history["detector_loss"] = [float(np.mean(losses[i : i + 100])) for i in range(0, len(losses), 100)]
        export_detector(det, det_path, args.det_input)

    # ---- hard negatives: what the trained detector finds on the training photos that is no
    # labelled die (a die's side face, a shadow, the tray's rim) becomes `none` for the classifier.
    from pi_table.vision.reader import Detector

    detector = Detector(det_path, args.det_input, 0.3, threads=args.threads)
    mined = []
    for im in (train_imgs if reused is None else []):  # (reused classifiers learn nothing more)
        for found in detector.detect(image_of(im)):
            if D.is_unlabelled(found.box, boxes_of(im)):
                mined.append((im, found.box))
    log(f"hard negatives: {len(mined)} detections on {len(train_imgs)} training photos match no labelled die")
    history["hard_negatives"] = len(mined)

    # ---- classifier
    pasted_side = 64  # canvas of a pasted crop, pixels, scaled to --crop-size after

    def pasted_crop(im, d):
        """A die (or, with im None, no die: surface and maybe a die's edge) on a new surface."""
        canvas = D.surface(rng, pasted_side)
        side = pasted_side / args.margin * math.exp(rng.normal(0, 0.15))
        cx, cy = pasted_side / 2 + rng.normal(0, 0.1, 2) * side
        if rng.random() < 0.3:  # a neighbour at the crop's edge, as in a crowded tray
            ni, nd = photo_dice[int(rng.integers(len(photo_dice)))]
            a = rng.uniform(0, 2 * math.pi)
            r = side * rng.uniform(1.0, 1.3)
            D.paste_die(canvas, image_of(ni), nd.box, cx + r * math.cos(a), cy + r * math.sin(a), side, rng, args.recolour)
        box = None
        if im is None:
            if rng.random() >= 0.5:  # half the empty crops show a die's edge, off-centre
                a = rng.uniform(0, 2 * math.pi)
                r = side * rng.uniform(0.6, 0.9)
                ni, nd = photo_dice[int(rng.integers(len(photo_dice)))]
                D.paste_die(canvas, image_of(ni), nd.box, cx + r * math.cos(a), cy + r * math.sin(a), side, rng, args.recolour)
        else:
            box = D.paste_die(canvas, image_of(im), d.box, cx, cy, side, rng, args.recolour)
        image = cv2.resize(canvas, (args.crop_size,) * 2, interpolation=cv2.INTER_AREA)
        if box is None:
            return D.DieCrop(image, np.zeros(4, np.float32), False)
        return D.DieCrop(image, D.box_target(box, pasted_side / 2, pasted_side / 2, pasted_side), True)

    int8_batches = int8_crops() if args.int8 else None  # the same for every member (quant_crops' own generator)
    for member, cls_file in enumerate(cls_files if reused is None else []):
        if args.member is not None and member != args.member - 1:
            continue
        # Each classifier starts again from its seed (--seed for the first), so that a run with
        # --det-from trains the same classifiers as a full run whose detector came out byte for byte
        # the same; the members differ only in their seed (initial weights, batches, augmentation).
        rng = np.random.default_rng(args.seed + member)
        torch.manual_seed(args.seed + member)
        cv2.setRNGSeed(args.seed + member)  # the photometric noise (cv2.randn); seed 0 is OpenCV's start-up state
        what = "classifier" if len(cls_files) == 1 else f"classifier {member + 1}/{len(cls_files)}"
        cls = ClassifierNet(len(classes), width=args.cls_width, crop_size=args.crop_size)
        opt = torch.optim.AdamW(cls.parameters(), lr=args.cls_lr, weight_decay=5e-4)
        sched = one_cycle(opt, args.cls_lr, args.cls_steps)
        cls.train()
        losses, t0 = [], time.time()
        n_neg = max(1, args.cls_batch // 6)
        for step in range(args.cls_steps):
            crops, targets, boxes, known = [], [], [], []
            for i in rng.choice(len(dice_pool), args.cls_batch - n_neg, p=dice_w):
                im, d = dice_pool[i]
                if rng.random() < args.paste and im.folder in paste_folders:
                    c = pasted_crop(im, d)
                else:
                    c = D.die_crop(image_of(im), d.box, rng, args.crop_size, args.margin)
                crops.append(D.photometric(c.image, rng, args.cls_augment, args.cls_colour))
                targets.append(allowed_classes(classes, main_label(d), kind_only=im.folder == "renders"
                                               and d.kind not in NUMBERED and not args.render_d6_faces))
                boxes.append(c.box), known.append(c.box_known)
            while len(crops) < args.cls_batch:
                r = rng.random()  # negatives: 35% mined, then pasted (--paste of the rest), then photo background
                if mined and r < 0.35:
                    im, box = mined[int(rng.integers(len(mined)))]
                    neg = D.die_crop(image_of(im), box, rng, args.crop_size, args.margin, jitter=0.5).image
                elif args.paste and r < 0.35 + 0.65 * args.paste:
                    neg = pasted_crop(None, None).image
                else:
                    im = pool[int(rng.choice(len(pool), p=weights))]
                    neg = D.negative_crop(image_of(im), boxes_of(im), rng, args.crop_size, args.margin)
                if neg is not None:
                    crops.append(D.photometric(neg, rng, args.cls_augment, args.cls_colour))
                    targets.append(allowed_classes(classes, "none"))
                    boxes.append(np.zeros(4, np.float32)), known.append(False)
            x = torch.from_numpy(D.chw_batch(crops))
            y = torch.from_numpy(np.stack(targets))
            logits, box = cls(x)
            loss = set_cross_entropy(logits, y, args.label_smoothing)
            if teacher is not None:
                loss = (1 - args.distill_weight) * loss + args.distill_weight * distill_loss(logits, teacher(x.numpy()))
            mask = torch.tensor(known, dtype=torch.float32)[:, None]
            l_box = (torch.nn.functional.smooth_l1_loss(box, torch.from_numpy(np.stack(boxes)), reduction="none", beta=0.05)
                     * mask).sum() / mask.sum().clamp(min=1)
            loss = loss + args.box_weight * l_box
            optimise(opt, sched, loss, losses, step, args.cls_steps, what, t0)
        curve = [float(np.mean(losses[i : i + 100])) for i in range(0, len(losses), 100)]
        history.setdefault("classifier_loss", curve)
        if member:
            history.setdefault("ensemble_loss", []).append(curve)
        if args.int8:  # 7-bit weights: nets.quantize_int8's reduce_range
            export_int8(cls, args.out / cls_file, args.crop_size, int8_batches, reduce_range=True)
        else:
            export_classifier(cls, args.out / cls_file, args.crop_size)
    for stale in args.out.glob("classifier-*.onnx"):
        if stale.name not in cls_files:  # a member of an earlier, larger ensemble in this folder
            stale.unlink()
    waiting = [f for f in cls_files if not (args.out / f).is_file()]
    if waiting:  # --member: the other members' runs are still training
        log(f"member {args.member} of {args.ensemble} written; {', '.join(waiting)} still to come (the run that "
            f"writes the last one calibrates)")
        return 0

    # ---- calibration on the calib split, through the runtime reader (detections as at run time)
    config = {
        "detector": {"file": "detector.onnx", "input": args.det_input, "threshold": 0.3},
        "classifier": {"file": cls_files[0] if len(cls_files) == 1 else cls_files, "classes": classes, "temperature": 1.0,
                       "crop_size": args.crop_size, "margin": args.margin},
        "threshold": args.threshold if args.threshold is not None else 0.9,
        "none_threshold": 0.5,
        "refine": args.refine,
        "refine_unsure": args.refine_unsure,
        "recut_numbered": args.recut_numbered,
        "seed": args.seed,
    }
    take_model_settings(args.out, config, numbered=any(c.endswith(":*") for c in classes))
    if (args.out / CLOSE_UP_FILE).is_file():  # --close-up-from, or a --det-from / --cls-from folder's
        config["detector"]["close_up_file"] = CLOSE_UP_FILE
    history.update(calibrate_reader(args.out, config, calib_imgs, args))
    history.update(seconds=round(time.time() - started, 1), args={k: str(v) for k, v in vars(args).items()})
    (args.out / "train-log.json").write_text(json.dumps(history, indent=1) + "\n")
    log(f"done in {time.time() - started:.0f} s; temperature {history['temperature']:.3f}; models in {args.out}")
    return 0


#: The close-up detector's file in a model folder (``--close-up-from``; reader.json's
#: ``detector.close_up_file``; pi_table/vision/reader.py, "Big dice").
CLOSE_UP_FILE = "detector-big.onnx"

#: The temperature both sides' scores are softened by in :func:`distill_loss` (Hinton et al. 2015).
DISTILL_TEMPERATURE = 2.0


def classifiers_from(folder: Path, crop_size: int, margin: float) -> dict:
    """``--cls-from``: the classifier entry of ``folder``'s ``reader.json``, checked before any data
    loads: one line and exit 2 (SystemExit) when it is missing, its crops differ from this run's
    (``--crop-size``, ``--margin``) or a classifier file is missing."""
    from pi_table.vision.reader import model_files

    entry = classifier_entry(folder, "--cls-from")
    files = model_files(entry)
    if entry.get("crop_size") != crop_size or entry.get("margin") != margin:
        refuse(f"--cls-from {folder}", f"its classifier reads {entry.get('crop_size')} px crops at margin "
                                       f"{entry.get('margin')}, this run {crop_size} at {margin} (--crop-size, --margin)")
    for name in files:
        if not (folder / name).is_file():
            refuse(f"--cls-from {folder}", f"no {name}")
    return entry


def copy_close_up(args: argparse.Namespace) -> None:
    """``--close-up-from``: copy that folder's ``detector.onnx`` into ``--out`` as the close-up
    detector (:data:`CLOSE_UP_FILE`); nothing without the option."""
    if args.close_up_from is not None:
        shutil.copyfile(args.close_up_from / "detector.onnx", args.out / CLOSE_UP_FILE)
        log(f"close-up detector {args.out / CLOSE_UP_FILE} copied from {args.close_up_from / 'detector.onnx'}")


def check_reused_classes(folder: Path, entry: dict, classes: list[str]) -> None:
    """``--cls-from``: exit 2 with one line (SystemExit) when ``folder``'s classifier (its ``reader.json``
    ``entry``) was trained on other classes than this data's ``classes``."""
    if list(entry.get("classes", [])) != list(classes):
        refuse(f"--cls-from {folder}", f"its classifier's classes {entry.get('classes')} are not this data's {classes}")


def reuse_classifiers(folder: Path, entry: dict, classes: list[str], out: Path) -> list[str]:
    """Copy ``folder``'s classifiers (``entry``, from :func:`classifiers_from`) into ``out`` and, where
    ``out`` has none, its numeral and cocked-die models (so calibration reads every kind as that
    reader does); their file names. Exit 2 with one line when their classes are not this data's
    (:func:`check_reused_classes`)."""
    from pi_table.vision.reader import model_files

    check_reused_classes(folder, entry, classes)
    files = model_files(entry)
    for name in files:
        if (folder / name).resolve() != (out / name).resolve():  # --cls-from the --out folder keeps them in place
            shutil.copyfile(folder / name, out / name)
        log(f"{name} reused from {folder}")
    take_side_models(folder, out)
    return files


def take_side_models(folder: Path, out: Path) -> None:
    """``--det-from``, ``--cls-from``: copy ``folder``'s numeral, d6 numeral, cocked-die and close-up detector
    models into ``out`` where it has none. They are trained apart (their own commands); with them calibration reads
    numbered, printed d6 and cocked dice as that folder's reader does (without them it would fit thresholds
    on another reader)."""
    for name in ("numerals.onnx", "numerals.json", "d6-numerals.onnx", "d6-numerals.json", "cocked.onnx", "cocked.json",
                 CLOSE_UP_FILE):
        if (folder / name).is_file() and not (out / name).is_file():
            shutil.copyfile(folder / name, out / name)
            log(f"{name} taken from {folder}")


def classifier_entry(folder: Path, option: str) -> dict:
    """The ``classifier`` entry of ``folder/reader.json``, naming its model files; one line,
    ``error: OPTION FOLDER: ...``, and exit 2 (SystemExit) when there is none to read."""
    from pi_table.vision.reader import model_files

    try:
        entry = json.loads((folder / "reader.json").read_text())["classifier"]
        model_files(entry)
    except (OSError, ValueError, KeyError, TypeError) as e:
        refuse(f"{option} {folder}", f"no reader's settings to read ({type(e).__name__}: {e})")
    return entry


def load_teacher(folder: Path, crop_size: int, threads: int):
    """``--distill``: the classifier(s) ``folder/reader.json`` names, an ensemble averaged
    (:class:`pi_table.vision.reader.Classifier`). One line naming what is wrong and exit 2
    (SystemExit) when the folder has no reader's settings or model file, or its classifier cuts
    crops of another size than ``crop_size`` (pixels)."""
    from pi_table.vision.reader import Classifier, model_files

    entry = classifier_entry(folder, "--distill")
    if int(entry.get("crop_size", 0)) != crop_size:
        refuse(f"--distill {folder}", f"its classifier reads {entry.get('crop_size')} px crops, this run {crop_size} (--crop-size)")
    try:
        return Classifier([folder / f for f in model_files(entry)], entry["classes"], threads=threads)
    except FileNotFoundError as e:
        refuse(f"--distill {folder}", str(e))


def teacher_scores(model, classes: list[str], folder: Path):
    """The teacher ``model`` (:func:`load_teacher`, from ``folder``) as a function from Nx3xSxS
    float32 RGB 0..1 crops to their NxC float32 raw scores for ``classes``, in that order; one
    line and exit 2 (SystemExit) naming the classes it lacks."""
    missing = [c for c in classes if c not in model.classes]
    if missing:
        refuse(f"--distill {folder}", f"its classifier has no class {', '.join(missing)}")
    columns = [model.classes.index(c) for c in classes]
    return lambda crops: model.logits(crops)[:, columns]


def distill_loss(student: torch.Tensor, teacher: np.ndarray) -> torch.Tensor:
    """Knowledge-distillation loss (Hinton et al. 2015): KL divergence from the teacher's softened
    distribution to the student's, both scores (NxC, raw) divided by :data:`DISTILL_TEMPERATURE`,
    times its square (so the gradients keep their scale). Scalar; 0 when the two agree."""
    import torch

    t = DISTILL_TEMPERATURE
    target = torch.softmax(torch.from_numpy(np.asarray(teacher, np.float32)) / t, dim=1)
    return torch.nn.functional.kl_div(torch.log_softmax(student / t, dim=1), target, reduction="batchmean") * t * t


def quant_crops(dice_pool, dice_w, pool, image_of, boxes_of, size: int, margin: float, seed: int,
                batches: int = 16, batch: int = 32) -> list[np.ndarray]:
    """The crops whose activation ranges set an int8 classifier's scales (:func:`pi_table.train.nets.quantize_int8`):
    ``batches`` Nx3xSxS float32 RGB 0..1 batches of ``batch`` crops, cut as the reader cuts them
    around a detector's box (:func:`pi_table.train.data.die_crop`, half the training jitter, no
    photometric change), one in six a crop that is no die (``none``), the dice drawn with the
    classifier's sampling weights ``dice_w``. From a generator of their own seeded by ``seed``,
    so the same data give the same crops whether the classifier was just trained or is a float
    model quantised by ``--calibrate-only``."""
    from pi_table.train import data as D

    rng = np.random.default_rng([seed, 8])
    out = []
    for _ in range(batches):
        crops = []
        while len(crops) < batch:
            if rng.random() < 1 / 6:
                im = pool[int(rng.integers(len(pool)))]
                neg = D.negative_crop(image_of(im), boxes_of(im), rng, size, margin)
                if neg is not None:
                    crops.append(neg)
                continue
            im, d = dice_pool[int(rng.choice(len(dice_pool), p=dice_w))]
            crops.append(D.die_crop(image_of(im), d.box, rng, size, margin, jitter=0.5).image)
        out.append(D.chw_batch(crops))
    return out


def float_classifiers(out: Path) -> list[str]:
    """The classifier files ``out/reader.json`` names whose weights are float (not yet quantised)."""
    from pi_table.train.nets import is_quantized
    from pi_table.vision.reader import model_files

    config = json.loads((out / "reader.json").read_text())
    return [name for name in model_files(config["classifier"]) if not is_quantized(out / name)]


def check_trained(out: Path) -> None:
    """For ``--calibrate-only``: ``out`` holds ``reader.json``, ``splits.json`` and every model
    file ``reader.json`` names (each member of a classifier ensemble too), each an ONNX model
    that loads. Otherwise one line
    naming what is missing or malformed, and exit 2 (SystemExit)."""
    from pi_table.vision.reader import model_files

    for name in ("reader.json", "splits.json"):
        if not (out / name).is_file():
            refuse("--calibrate-only", f"no {name} in {out}")
    try:
        config = json.loads((out / "reader.json").read_text())
        entries = [config["detector"], config["classifier"],
                   *(config[k] for k in ("numerals", "d6_numerals", "cocked") if k in config)]
        names = [name for entry in entries for name in model_files(entry)]
        names += [config["detector"]["close_up_file"]] if "close_up_file" in config["detector"] else []
    except (ValueError, KeyError, TypeError) as e:
        refuse("--calibrate-only", f"{out / 'reader.json'} is not a reader's settings ({type(e).__name__}: {e})")
    for name in names:
        check_model_file("--calibrate-only", out / name)


def det_warm_start(det, path: Path, pool, image_of, boxes_of, args: argparse.Namespace) -> None:
    """``--det-init``: start the detector ``det`` from the ONNX detector at ``path``
    (:func:`pi_table.train.nets.warm_start`), its batch norms set from 48 training patches drawn
    by a generator of their own (``args.det_seed``, else ``args.seed``), so the training's draws are
    those of a fresh run.
    A model of another shape is refused in one line, exit status 2 (SystemExit)."""
    import torch

    from pi_table.train import data as D
    from pi_table.train.nets import warm_start

    rng = np.random.default_rng([args.seed if args.det_seed is None else args.det_seed, 48])
    patches = [D.det_sample(image_of(pool[i]), boxes_of(pool[i]), rng, args.det_patch).image
               for i in rng.choice(len(pool), 48)]
    try:
        warm_start(det, path, torch.from_numpy(D.chw_batch(patches)))
    except ValueError as e:
        refuse("--det-init", str(e))
    log(f"detector started from {path} (--det-init)")


def check_model_file(option: str, path: Path) -> None:
    """``path`` is an ONNX model that loads; otherwise one line naming it under ``option`` (missing, or
    not a model), and exit 2 (SystemExit)."""
    import onnx

    if not path.is_file():
        refuse(option, f"no {path.name} in {path.parent}")
    try:
        onnx.load(str(path))
    except Exception as e:  # truncated or not a model: protobuf's DecodeError and kin
        refuse(option, f"{path} is not an ONNX model ({type(e).__name__})")


def calibrate_reader(models: Path, config: dict, calib_imgs, args: argparse.Namespace) -> dict:
    """Fit ``config``'s temperature and choose its thresholds on the calib split, writing
    ``models/reader.json`` at each step (the reader reads it); the figures for the training log.

    The temperature is fitted on the calib photos (:func:`calib_logits`): real dice are what the
    kit reads (the numeral model has its own, fitted on renders); the numbered shapes' own on the
    calib dice that top at one, photos and renders (:func:`fit_shape_temperature`). Both are the single view's
    at the detected boxes; the thresholds are chosen with the second look on, as it runs
    (:func:`choose_thresholds`), unless ``args.threshold`` fixes the threshold. The unsure dice's
    refine passes (``args.refine_unsure``, and ``args.recut_numbered`` for numbered dice) are written after, and the thresholds chosen without them
    (with them only for ``args.thresholds_with_refine``): a re-cut die is reported ``ok`` only
    when its new read clears the bar the first reads set, and the choice cannot trade a few more
    wrong dice for many more right ones (models/history/classifier.md, "Refine the unsure"). An
    ensemble's cascade (``args.cascade``) is likewise written after: the temperatures and
    thresholds are the whole ensemble's.
    """
    classes = config["classifier"]["classes"]
    config["classifier"]["temperature"] = 1.0
    config["classifier"].pop("shape_temperature", None)
    config.pop("thresholds", None)
    config.pop("second_look", None)
    without_later_passes(config)  # the temperatures are the first read's, at the detected boxes
    (models / "reader.json").write_text(json.dumps(config, indent=1) + "\n")
    # Each calib die read once (one view, raw scores): the photos' fit the temperature, Guo et al.
    # 2017; photos' and renders' together the numbered shapes' own (:func:`fit_shape_temperature`).
    photo_logits, photo_targets = calib_logits(models, [im for im in calib_imgs if im.folder != "renders"], classes)
    render_logits, render_targets = calib_logits(models, [im for im in calib_imgs if im.folder == "renders"], classes)
    if args.calib_d6 == "pooled":  # the renders' d6 beside the photos' (their numbered dice keep their own)
        d6 = np.array([classes[t].startswith("d6:") for t in render_targets], bool)
        temperature = fit_temperature(np.concatenate([photo_logits, render_logits[d6]]),
                                      np.concatenate([photo_targets, render_targets[d6]]))
    else:
        temperature = fit_temperature(photo_logits, photo_targets)
    if warning := bound_warning(temperature, "the photos' temperature"):
        log(warning)
    config["classifier"]["temperature"] = temperature
    shape_temperature = fit_shape_temperature(np.concatenate([photo_logits, render_logits]),
                                              np.concatenate([photo_targets, render_targets]), classes)
    if shape_temperature is not None:
        config["classifier"]["shape_temperature"] = shape_temperature
        if warning := bound_warning(shape_temperature, "the numbered shapes' temperature"):
            log(warning)
    config["second_look"] = args.second_look
    config["refine_unsure"] = args.refine_unsure if args.thresholds_with_refine else 0
    if args.thresholds_with_refine:
        config["recut_numbered"] = args.recut_numbered
    (models / "reader.json").write_text(json.dumps(config, indent=1) + "\n")
    if args.threshold is None:
        config.update(choose_thresholds(models, calib_imgs, args.wrong_target, args.numbered_wrong_target,
                                        pooled_d6=args.calib_d6 == "pooled"))
        floored(config.get("thresholds", {}), args.numbered_floor)
    else:
        config["threshold"] = args.threshold
    config["refine_unsure"] = args.refine_unsure
    config["recut_numbered"] = args.recut_numbered
    if args.cascade is not None and isinstance(config["classifier"]["file"], list):
        config["classifier"]["cascade"] = args.cascade
    (models / "reader.json").write_text(json.dumps(config, indent=1) + "\n")
    return {"temperature": temperature, "shape_temperature": shape_temperature, "threshold": config["threshold"],
            "thresholds": config.get("thresholds", {}), "refine_unsure": config["refine_unsure"],
            "recut_numbered": config["recut_numbered"]}


def check_same_split(args: argparse.Namespace, splits_text: str) -> None:
    """``--calibrate-only``: exit 2 with one line (SystemExit) unless ``--out``'s ``splits.json`` is
    ``splits_text``, this data's split for ``--seed``."""
    splits_json = args.out / "splits.json"
    try:
        same = json.loads(splits_json.read_text()) == json.loads(splits_text)
    except ValueError:
        same = False
    if not same:
        refuse("--calibrate-only", f"{splits_json} is not this data's split for seed {args.seed}")


def take_model_settings(out: Path, config: dict, numbered: bool) -> None:
    """Put the settings of the numeral, d6 numeral and cocked-die models in ``out`` (``numerals.json`` and
    ``d6-numerals.json``, written by ``python3 -m pi_table.train.numerals [--d6]``; ``cocked.json``, by
    ``... .cocked``) into ``config`` (the reader's), where those files are there: the numeral model's
    only when ``numbered`` (the classifier reads numbered shapes). A model trained into a folder after
    its ``reader.json`` was written then runs with its own classes and temperature, not the settings
    of the model it replaced."""
    numerals = out / "numerals.json"
    if numerals.is_file() and numbered:
        config["numerals"] = json.loads(numerals.read_text())
    d6 = out / "d6-numerals.json"
    if d6.is_file():
        config["d6_numerals"] = json.loads(d6.read_text())
    cocked = out / "cocked.json"
    if cocked.is_file():
        config["cocked"] = json.loads(cocked.read_text())


def recalibrate_only(args: argparse.Namespace, calib_imgs, splits_text: str) -> int:
    """``--calibrate-only``: the models in ``args.out`` keep their weights; their temperature
    and thresholds are fitted again on the calib split (:func:`calibrate_reader`), and the
    training log records it. The split must be the one the models were trained with
    (``splits.json``, same data and seed), or the calib photos could be training photos."""
    reader_json = args.out / "reader.json"  # checked there (main)
    check_same_split(args, splits_text)
    started = time.time()
    config = json.loads(reader_json.read_text())
    # a numeral or cocked-die model trained into the folder since (its own json beside it) is the one calibrated
    take_model_settings(args.out, config, numbered="numerals" in config)
    if args.numbered_only:
        return recalibrate_numbered(args, config, calib_imgs, started)
    copy_close_up(args)
    if args.close_up_from is not None:
        config["detector"]["close_up_file"] = CLOSE_UP_FILE
    figures = calibrate_reader(args.out, config, calib_imgs, args)
    log_path = args.out / "train-log.json"
    history = json.loads(log_path.read_text()) if log_path.is_file() else {}
    history.update(figures)
    history["recalibrated"] = {"seconds": round(time.time() - started, 1),
                               "calib_renders": [str(r) for r in args.calib_renders],
                               "args": {k: str(v) for k, v in vars(args).items()}}
    log_path.write_text(json.dumps(history, indent=1) + "\n")
    log(f"recalibrated in {time.time() - started:.0f} s; temperature {figures['temperature']:.3f}; "
        f"shape temperature {figures['shape_temperature']}; thresholds {figures['threshold']} {figures['thresholds']}")
    return 0


def floored(thresholds: dict, floor: float | None) -> dict:
    """``thresholds`` (the numbered kinds' confidence thresholds by kind, e.g. ``{"d8": 0.96}``; changed in place and
    returned) raised to ``floor`` where below it (``--numbered-floor``); unchanged when ``floor`` is None."""
    if floor is not None:
        for kind, value in thresholds.items():
            thresholds[kind] = max(value, floor)
    return thresholds


def without_later_passes(config: dict) -> dict:
    """``config`` (reader.json's settings, changed in place and returned) without what :func:`calibrate_reader`
    writes after the thresholds are chosen: the cascade (the temperatures and thresholds are the whole ensemble's
    reads), the unsure dice's refine pass and the numbered dice's recut (``refine_unsure`` 0, ``recut_numbered`` 0)."""
    config["classifier"].pop("cascade", None)
    config["refine_unsure"] = 0
    config["recut_numbered"] = 0
    return config


def recalibrate_numbered(args: argparse.Namespace, config: dict, calib_imgs, started: float) -> int:
    """``--calibrate-only --numbered-only``: ``config`` (``args.out``'s reader.json, with the settings of a numeral
    model put there since) gets only its numbered kinds' ``thresholds`` chosen again, on the calib renders' dice of
    each kind at ``args.numbered_wrong_target`` (default ``args.wrong_target``), read as :func:`calibrate_reader`
    reads them when it chooses: the second look on, no refine pass, no numbered recut, no cascade; every other
    setting (temperatures, the d6 threshold, the passes) is written back as it was. The training log records it
    under ``"numbered_recalibrated"``. For a numeral model trained apart (``python3 -m pi_table.train.numerals``),
    so that it is judged with thresholds chosen for it, not for the model before it."""
    reader_json = args.out / "reader.json"
    reader_json.write_text(json.dumps(without_later_passes(json.loads(json.dumps(config))), indent=1) + "\n")
    try:
        chosen = choose_thresholds(args.out, calib_imgs, args.wrong_target, args.numbered_wrong_target, d6=False)
        new = floored(chosen.get("thresholds", {}), args.numbered_floor)
        config["thresholds"] = {**config.get("thresholds", {}), **new}
    finally:  # the settings as they were (with the new thresholds when chosen), whatever happened
        reader_json.write_text(json.dumps(config, indent=1) + "\n")
    log_path = args.out / "train-log.json"
    history = json.loads(log_path.read_text()) if log_path.is_file() else {}
    history["numbered_recalibrated"] = {"seconds": round(time.time() - started, 1), "thresholds": config["thresholds"],
                                        "numerals": config.get("numerals", {}).get("file"),
                                        "args": {k: str(v) for k, v in vars(args).items()}}
    log_path.write_text(json.dumps(history, indent=1) + "\n")
    log(f"numbered thresholds chosen again in {time.time() - started:.0f} s: {config['thresholds']}")
    return 0


def calib_logits(models: Path, images, classes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The classifier's raw scores (NxC float64, one view) of the runtime reader's detections
    matched to a labelled die (IoU >= 0.5) in ``images``, and their N labels' class indices.

    Detections that match no label are left out: many are a die's side face or a neighbour,
    which the labels do not box, and counting them as ``none`` would blunt every die's confidence.
    """
    from pi_table.train.data import load_rgb
    from pi_table.vision.reader import DiceReader, iou

    reader = DiceReader(models, threads=0)
    logits, targets = [], []
    index = {c: i for i, c in enumerate(classes)}
    for im in images:
        image = load_rgb(im.path)
        boxes = [d.box for d in reader.detector.detect(image)]
        if not boxes:
            continue
        boxes, out = reader.boxes_and_logits(image, boxes)
        for box, row in zip(boxes, out):
            best = max(im.dice, key=lambda d: iou(box, d.box), default=None)
            if best is None or iou(box, best.box) < 0.5:
                continue
            label = main_label(best)
            if label in index:
                logits.append(row)
                targets.append(index[label])
    return np.array(logits, np.float64).reshape(-1, len(classes)), np.array(targets, int)


def fit_shape_temperature(logits: np.ndarray, targets: np.ndarray, classes: list[str]) -> float | None:
    """The classifier's ``shape_temperature`` (:class:`pi_table.vision.reader.Classifier`): the
    temperature minimising the negative log-likelihood of the calib dice (NxC raw ``logits``, N
    ``targets``, from :func:`calib_logits`) whose top raw score is a numbered shape class
    (``d8:*``, ``d10:*``), whatever their label; None when no such die is there (top-label
    calibration, Gupta and Ramdas 2022). On the calib renders the classifier named 99.6 to 100%
    of the numbered dice's shape right at every size, yet at the photos' temperature only 77 to
    85% reached 0.99 (models/history/classifier.md)."""
    shapes = np.array([c.endswith(":*") for c in classes], bool)
    top = shapes[logits.argmax(axis=1)] if len(logits) else np.zeros(0, bool)
    if not top.any():
        return None
    return fit_temperature(logits[top], targets[top])


class RowMemo:
    """An onnxruntime session that remembers its outputs row by row: a batch's rows it has read
    before (the same input bytes, the same outputs asked for) come from memory, and only the rest
    are run, in one batch.

    Every input and output of the wrapped model must have the batch first (the kit's detector,
    classifiers, numeral and cocked-die models do). The kit's crop models read each row on its own
    (a row's outputs do not depend on the rows beside it, on one thread or all: checked by
    ``tests/test_vision.py``) and the detector reads one image a run, so the outputs are the same
    bytes as the session's. Made for :func:`choose_threshold`, which reads the same calib images
    again at each candidate threshold: only the dice newly below the threshold are new crops.
    Memory grows with what is read (the detector's maps are the most: about 0.1-2 MB an image,
    by its size). Every other attribute is the session's.
    """

    def __init__(self, session):
        self._session = session
        self._memory: dict[tuple, list[np.ndarray]] = {}

    def run(self, output_names, input_feed, run_options=None):
        names = tuple(output_names)
        inputs = sorted(input_feed.items())
        n = len(inputs[0][1])
        if n == 0:
            return self._session.run(list(names), input_feed, run_options)
        # A row's key: its shape, dtype and Python's 64-bit hash of its bytes per input (SipHash, about
        # three times blake2b's speed here; the chance that two of a million rows share one is 3e-8).
        keys = [(names,) + tuple((name, value.dtype.str, value.shape[1:], hash(value[i].tobytes()))
                                 for name, value in inputs) for i in range(n)]
        new: dict[tuple, int] = {}  # each key not in memory: its first row
        for i, k in enumerate(keys):
            if k not in self._memory and k not in new:
                new[k] = i
        if new:
            feed = {name: np.ascontiguousarray(value[list(new.values())]) for name, value in inputs}
            outs = self._session.run(list(names), feed, run_options)
            for j, k in enumerate(new):
                self._memory[k] = [o[j] for o in outs]
        return [np.stack([self._memory[k][o] for k in keys]) for o in range(len(names))]

    def __getattr__(self, attr):
        return getattr(self._session, attr)


def remember_rows(reader) -> None:
    """Wrap each of ``reader``'s onnxruntime sessions (detector, classifiers, numeral and
    cocked-die models) in a :class:`RowMemo`, in place."""
    from pi_table.vision.reader import wrap_sessions

    wrap_sessions(reader, lambda session, path: RowMemo(session))


def choose_thresholds(models: Path, images, wrong_target: float, numbered_target: float | None = None,
                      pooled_d6: bool = False, d6: bool = True) -> dict:
    """``reader.json``'s ``threshold`` chosen on the calib photos (with ``pooled_d6``, on them and
    the calib renders' d6 dice together), and ``thresholds`` for each numbered kind chosen on the
    calib renders' dice of that kind (:func:`choose_threshold`), at ``numbered_target`` (default
    ``wrong_target``) expected wrong at ``ok``. With ``d6`` False the d6 threshold is not chosen
    (no ``threshold`` key; ``--numbered-only``).

    Numbered dice have their own because they are read by another model, trained and calibrated
    on renders only: pooled with the photos' d6, their lower confidence would push the one
    threshold up and make most real d6 unreadable.
    """
    from dataclasses import replace

    from pi_table.vision.reader import DiceReader

    photos = [im for im in images if im.folder != "renders"]
    renders = [im for im in images if im.folder == "renders"]
    # One reader for every kind, its sessions remembering what they read (RowMemo): the candidate
    # thresholds and the kinds read the same images again.
    reader = DiceReader(models, threads=0)
    remember_rows(reader)

    def of_kind(kind: str) -> list:  # the renders with only their dice of ``kind`` labelled
        return [im for im in (replace(im, dice=tuple(d for d in im.dice if d.kind == kind)) for im in renders) if im.dice]

    out: dict = {}
    if d6:
        d6_dice = photos
        if pooled_d6:
            d6_dice = photos + of_kind("d6")
            log("d6 (calib photos and renders):")
        out["threshold"] = choose_threshold(models, d6_dice, wrong_target, reader)
    numbered_target = wrong_target if numbered_target is None else numbered_target
    # One per kind: a d10's numeral is read far more surely than a tens die's (two digits).
    for kind in NUMBERED:
        dice = of_kind(kind)
        if dice:
            log(f"{kind} (calib renders):")
            out.setdefault("thresholds", {})[kind] = choose_threshold(models, dice, numbered_target, reader)
    return out


def choose_threshold(models: Path, images, wrong_target: float, reader=None) -> float:
    """The lowest confidence threshold (0.5..0.99) at which the calib split's dice reported
    ``ok`` are expected to be read wrong at most ``wrong_target`` of the time; 0.99 if none.

    The expected share is the mean of (1 - face confidence) over those dice: the confidence is
    calibrated (temperature fitted first), and a calib split of a few hundred dice is too small
    to count errors at a 0.3% rate directly. Face confidence (:attr:`Die.face_confidence`) is
    the chance the face is right given a die: these dice are matched to labelled dice, so the
    reported confidence's other factor, the chance the box holds no die at all, is no chance of
    a wrong face here (counted in, it alone added about 0.05 points to every die's expected
    error, a sixth of the 0.3% target). Each candidate threshold is scored as it would run:
    the reader (with ``reader.json``'s second look, which reads again the dice below that same
    threshold) reads every image and :func:`pi_table.vision.evaluate.score_image` scores it;
    the counted errors are logged beside the expected ones. ``reader``: a
    :class:`~pi_table.vision.reader.DiceReader` of ``models`` to read with (its threshold
    settings are changed), e.g. one whose sessions remember rows (:func:`remember_rows`);
    default a new one.
    """
    from pi_table.vision.evaluate import Score, score_image
    from pi_table.vision.reader import DiceReader

    if not images:
        return 0.9
    reader = reader or DiceReader(models, threads=0)
    reader.thresholds = {}
    scored = None
    for t in np.round(np.arange(0.5, 0.991, 0.01), 2):
        if scored is None or reader.second_look > 1 or reader.refine_unsure > 0:
            # The second look and the refine pass gate on the threshold: each candidate reads the images again.
            reader.threshold = float(t)
            total = Score()
            for im in images:
                total.add(score_image(reader, im))
            scored = (np.array([c for c, _ in total.calibration]), np.array([r for _, r in total.calibration], bool),
                      np.array(total.face_confidence, float))
        conf, right, face = scored
        ok = conf >= t
        if ok.any() and float(np.mean(1 - face[ok])) <= wrong_target:
            log(f"threshold {t:.2f}: calib expected wrong at ok {np.mean(1 - face[ok]):.2%}, counted "
                f"{(~right[ok]).sum()}/{ok.sum()}, unreadable {(~ok).sum()}/{len(ok)}")
            return float(t)
    return 0.99


if __name__ == "__main__":
    sys.exit(main())
