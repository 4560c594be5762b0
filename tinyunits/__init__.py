"""tinyunits: a small deep-learning framework for neural units beyond the perceptron.

    import tinyunits as tu
    from tinyunits import nn, optim
"""
import os as _os
import sys as _sys

# OpenBLAS's idle threads spin for 2^28 cycles (~0.1 s) after every product before
# they sleep. tinyunits' own threads (tinyunits.threads) then wait for a core at every
# hand-off: on a machine with other work, B2's step took 3 s instead of 0.12. Sleeping
# at once (2^4) costs a wake-up of the other core per product instead: B1's step, five
# products, paid eight a step. 2^22 cycles (1.6 ms at 2.6 GHz) spans the gaps between
# one step's products, and no longer (tests/benchmarks/README.md has the numbers).
# OpenBLAS reads this when NumPy loads it: import tinyunits first, or set it yourself.
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")

from . import validate, backend, buffers  # buffers: glibc tuned for training loops on import
from .backend import get_backend, set_backend
# tensor first: it finishes by importing ops, which build on Tensor and Function
from .tensor import (Tensor, get_default_dtype, is_grad_enabled, no_grad,
                     set_default_dtype, tensor)
from .function import Function
from . import ops
from . import nn  # after ops: layers build on them
from . import optim, threads, train
from .threads import get_num_threads, set_num_threads
from .gradcheck import gradcheck
from .serialization import load, save


def manual_seed(seed: int) -> None:
    """Seed every generator tinyunits uses: the same seed gives the same numbers."""
    backend.manual_seed(validate.integer("manual_seed", "seed", seed, low=0))


__all__ = ["Tensor", "Function", "tensor", "no_grad", "is_grad_enabled",
           "set_backend", "get_backend", "manual_seed", "set_default_dtype",
           "get_default_dtype", "ops", "backend", "nn", "optim", "threads", "train", "gradcheck",
           "set_num_threads", "get_num_threads",
           "save", "load"]
__version__ = "0.1.0"
