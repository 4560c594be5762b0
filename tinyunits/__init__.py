"""tinyunits: a small deep-learning framework for neural units beyond the perceptron.

    import tinyunits as tu
    from tinyunits import nn, optim
"""
from . import backend, validate
from .backend import get_backend, set_backend
from .tensor import (Tensor, as_tensor, get_default_dtype, is_grad_enabled, no_grad,
                     set_default_dtype, tensor)
from .function import Function
from . import ops
from . import nn
from . import optim, train
from .gradcheck import gradcheck
from .serialization import load, save
from . import fast  # last: it installs its drop-ins for the book's references
from .fast import get_num_threads, set_num_threads

fast.install()


# Old names of modules that moved: they still answer, with a warning naming the new one.
MOVED = {"threads": "tinyunits.fast.threads", "buffers": "tinyunits.fast.buffers",
         "blas": "tinyunits.fast.blas", "checks": "tinyunits.gradcheck.cases"}


def __getattr__(name):
    if name not in MOVED:
        raise AttributeError(f"module 'tinyunits' has no attribute {name!r}")
    import importlib
    import warnings
    warnings.warn(f"tinyunits.{name} is deprecated: it is {MOVED[name]}", DeprecationWarning,
                  stacklevel=2)
    return importlib.import_module(MOVED[name])


def manual_seed(seed: int) -> None:
    """Seed every generator tinyunits uses: the same seed gives the same numbers."""
    backend.manual_seed(validate.integer("manual_seed", "seed", seed, low=0))


__all__ = ["Tensor", "Function", "tensor", "as_tensor", "no_grad", "is_grad_enabled",
           "set_backend", "get_backend", "manual_seed", "set_default_dtype",
           "get_default_dtype", "ops", "backend", "nn", "optim", "fast", "train", "gradcheck",
           "set_num_threads", "get_num_threads",
           "save", "load"]
__version__ = "0.1.0"
