"""The five paper units, one file each; each is ONE Function with a hand-written backward."""
from .dac import DACConv2d, DACConv2dFn, DACLinear, DACLinearFn, section4_counts
from .focusing import FocusingLinear, FocusingLinearFn
from .hannet import HanFn, HanLayer, HanMixerBlock, householder_matrix
from .tmaf import TMAF, DiagonalTMAFFn, TridiagonalTMAFFn
from .two_argument import InnerNet, InnerNetFn, MultiArgActivation

__all__ = ["DACLinear", "DACLinearFn", "DACConv2d", "DACConv2dFn", "section4_counts",
           "FocusingLinear", "FocusingLinearFn",
           "HanFn", "HanLayer", "HanMixerBlock", "householder_matrix",
           "InnerNet", "InnerNetFn", "MultiArgActivation",
           "TMAF", "DiagonalTMAFFn", "TridiagonalTMAFFn"]
