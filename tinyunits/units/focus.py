"""Deprecated: the old name of tinyunits.units.focusing (one name per unit, in every folder).

Importing it warns, then gives tinyunits.units.focusing itself: every name imported
from here is the same object as there.
"""
import sys
import warnings

from . import focusing

warnings.warn("tinyunits.units.focus is deprecated: import tinyunits.units.focusing"
              " (or its classes from tinyunits.nn)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = focusing
