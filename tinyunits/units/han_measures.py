"""Deprecated: the old name of tinyunits.units.hannet_measures (one name per unit, in every folder).

Importing it warns, then gives tinyunits.units.hannet_measures itself: every name imported
from here is the same object as there.
"""
import sys
import warnings

from . import hannet_measures

warnings.warn("tinyunits.units.han_measures is deprecated: import tinyunits.units.hannet_measures",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = hannet_measures
