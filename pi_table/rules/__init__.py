"""Rules stage: resolve rolls under each system of ../shared/RULES.md and give exact odds.

Systems: ``contingency-action`` and ``contingency-pool`` (seed 000), ``contingency-skill``
(seeds 001, 002), ``charge`` (seed 004), ``contract`` (seed 003).

    >>> from pi_table.rules import resolve, odds
    >>> resolve("contingency-action", action=[8, 8, 8], pressure=[6, 6, 2]).outcome
    'clean'
    >>> odds("charge", dice=1)["full"]
    Fraction(1, 6)

Pure Python (``fractions``, ``math``), no third-party import: safe on the Pi and quick to load.
"""

from pi_table.rules._common import OddsDetail, Param, Resolution, TableEffects
from pi_table.rules.api import (
    AFTER_ROLL_PARAMS,
    BANDS,
    DEFAULT_PARAMS,
    KINDS_BY_SYSTEM,
    LUCK_DIE_INDEX,
    PARAMS,
    SYSTEMS,
    check_system,
    next_roll_params,
    odds,
    odds_detail,
    resolve,
    resolve_dice,
    validate_params,
    validate_table_params,
)

__all__ = [
    "AFTER_ROLL_PARAMS", "BANDS", "DEFAULT_PARAMS", "KINDS_BY_SYSTEM", "LUCK_DIE_INDEX", "PARAMS", "SYSTEMS",
    "OddsDetail", "Param", "Resolution", "TableEffects",
    "check_system", "next_roll_params", "odds", "odds_detail", "resolve", "resolve_dice", "validate_params",
    "validate_table_params",
]
