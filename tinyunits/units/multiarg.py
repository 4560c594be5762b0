"""Deprecated: the old name of tinyunits.units.two_argument (one name per unit, in every folder).

Importing it warns, then gives tinyunits.units.two_argument itself: every name imported
from here is the same object as there.
"""
import sys
import warnings

from . import two_argument

warnings.warn("tinyunits.units.multiarg is deprecated: import tinyunits.units.two_argument"
              " (or its classes from tinyunits.nn)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = two_argument
