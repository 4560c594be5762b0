"""The five paper units, one file each; each is ONE Function with a hand-written backward."""
from .dac import DACConv2d, DACConv2dFn, DACLinear, DACLinearFn, section4_counts
from .focus import FocusingLinear, FocusingLinearFn
from .han import HanFn, HanLayer, HanMixerBlock, householder_matrix
from .multiarg import InnerNet, InnerNetFn, MultiArgActivation
from .tmaf import TMAF, DiagonalTMAFFn, TridiagonalTMAFFn

__all__ = ["DACLinear", "DACLinearFn", "DACConv2d", "DACConv2dFn", "section4_counts",
           "FocusingLinear", "FocusingLinearFn",
           "HanFn", "HanLayer", "HanMixerBlock", "householder_matrix",
           "InnerNet", "InnerNetFn", "MultiArgActivation",
           "TMAF", "DiagonalTMAFFn", "TridiagonalTMAFFn"]
