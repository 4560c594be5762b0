"""Deprecated: the old name of tinyunits.units.hannet (one name per unit, in every folder).

Importing it warns, then gives tinyunits.units.hannet itself: every name imported
from here is the same object as there.
"""
import sys
import warnings

from . import hannet

warnings.warn("tinyunits.units.han is deprecated: import tinyunits.units.hannet"
              " (or its classes from tinyunits.nn)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = hannet
