"""Vision stage: find the dice in a tray photo (detection) and read their top faces (classification).

    >>> from pi_table.vision import DiceReader, load_image
    >>> reading = DiceReader().read(load_image("tray.jpg"), name="tray.jpg")

See :mod:`pi_table.vision.reader` for the models and :mod:`pi_table.vision.dice` for the values.
"""

from pi_table.vision.dice import KINDS, STATUSES, Die, Reading, face_value
from pi_table.vision.reader import DiceReader, crop_die, load_image, models_dir

__all__ = ["KINDS", "STATUSES", "Die", "Reading", "face_value", "DiceReader", "crop_die", "load_image", "models_dir"]
