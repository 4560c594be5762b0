"""The five paper units, one file each; each is ONE Function with a hand-written backward."""
from .focus import FocusingLinear, FocusingLinearFn
from .han import HanFn, HanLayer, HanMixerBlock, householder_matrix
from .multiarg import InnerNet, InnerNetFn, MultiArgActivation
from .tmaf import TMAF, DiagonalTMAFFn, TridiagonalTMAFFn

__all__ = ["FocusingLinear", "FocusingLinearFn",
           "HanFn", "HanLayer", "HanMixerBlock", "householder_matrix",
           "InnerNet", "InnerNetFn", "MultiArgActivation",
           "TMAF", "DiagonalTMAFFn", "TridiagonalTMAFFn"]
