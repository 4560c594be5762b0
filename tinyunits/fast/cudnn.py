"""conv2d on a GPU through cuDNN, with the im2col drop-in (conv.py) as reference and fallback.

On a GPU, im2col writes every k x k window of the input out as a column (k*k times
the input in device memory, a launch per tap per chunk) before CuPy's GEMM multiplies
them; cuDNN's kernels read the windows where they are (implicit GEMM, Winograd, ...)
and pick one per shape. PyTorch convolves through cuDNN: on the last H100 run the
conv net B2 took 4.1-5.1x PyTorch's time (tests/benchmarks/README.md).

`Conv2d` hands a call to cuDNN when `takes` says so: CuPy arrays of one dtype, shapes
the reference accepts, and CuPy's cuDNN bindings at hand (`library()`: cupyx.cudnn,
in CuPy 13 with libcudnn 8 installed). CuPy 14 removed them, and CuPy 13 has no CUDA 13
build: with the CuPy the `gpu` extra installs today (14) and on the GPUs lent to this
project (cupy-cuda13x 14.2) this drop-in is its parent. Everything else runs the
parent too (host and strict arrays, integers, mixed dtypes), which also says what is
wrong with a bad call. cuDNN's first error turns it off for the process, with one
warning, and the call runs the parent.

dtypes: float64 always. float32 only when NVIDIA_TF32_OVERRIDE=0 is set before the
process starts: on Ampere and later GPUs cuDNN's default math computes float32
convolutions in TF32 (10-bit mantissas), which cupyx.cudnn offers no switch for, and
a drop-in computes its reference's numbers. The algorithms come from cuDNN's
heuristics (auto_tune=False: no timing runs on a shape's first call); backward's are
deterministic, so a step gives the same bits from run to run, as on the CPU.

Never run on a GPU (none was lent while this was written), so unmeasured: its speed
against im2col and PyTorch; whether the heuristics' algorithms within CuPy's 8 MiB
workspace are the fast ones; what deterministic backward costs; whether float32
results stay within tests/test_fast_conv.py's rounding bound (Winograd and FFT
algorithms round otherwise than a GEMM). tests/test_fast_cudnn.py checks the dispatch
everywhere with a stand-in for cupyx.cudnn, and the numbers on a GPU with CuPy 13.
"""
from __future__ import annotations

import functools
import math
import os
import warnings

from .. import backend
from ..backend import get_array_module
from ..ops.conv import conv_output_size
from ..ops.reduction import wide_sum
from . import conv, cuda

MAX_ELEMENTS = 2 ** 31  # cuDNN's 4-d descriptors count elements in int
NO_DILATION, ONE_GROUP = (1, 1), 1


class _State:
    failure = None  # cuDNN's error that turned it off for this process


@functools.lru_cache(maxsize=None)
def library():
    """CuPy's cuDNN bindings (cupyx.cudnn), or None where this CuPy has none."""
    return backend.import_cudnn()  # only asked with CuPy arrays in hand


def tf32_off() -> bool:
    """Does NVIDIA's switch keep cuDNN's float32 convolutions out of TF32?"""
    return os.environ.get("NVIDIA_TF32_OVERRIDE") == "0"


def turn_off(error) -> None:
    """cuDNN failed: the rest of the process convolves through im2col, said once."""
    _State.failure = error
    warnings.warn(f"conv2d: cuDNN failed ({type(error).__name__}: {error}); convolutions "
                  "run through im2col (tinyunits/fast/conv.py) from now on", RuntimeWarning)


class Conv2d(conv.Conv2d):
    via_cudnn = False  # True when cuDNN ran this node's forward

    def takes(self, x, W, b) -> bool:
        """Does cuDNN take conv2d(x, W, b)? Shapes that are not the reference's go to the
        parent, whose errors name what is wrong (cuDNN's would turn it off)."""
        arrays = (x, W) if b is None else (x, W, b)
        if not (all(cuda.on_gpu(a) and a.dtype == x.dtype for a in arrays)
                and (x.dtype.name == "float64" or x.dtype.name == "float32" and tf32_off())
                and x.ndim == W.ndim == 4 and x.shape[1] == W.shape[1]
                and W.shape[2] == W.shape[3] and min(x.shape[2:]) + 2 * self.padding >= W.shape[2]
                and (b is None or b.shape == (W.shape[0],))):
            return False
        sizes = (x.size, W.size, math.prod(self.output_shape(x, W)))
        return max(sizes) < MAX_ELEMENTS and _State.failure is None and library() is not None

    def output_shape(self, x, W) -> tuple:
        k, s, p = W.shape[2], self.stride, self.padding
        return (x.shape[0], W.shape[0]) + tuple(conv_output_size(n, k, s, p) for n in x.shape[2:])

    def forward(self, x, W, b=None):
        self.via_cudnn = self.takes(x, W, b)
        if self.via_cudnn:
            try:
                y = get_array_module(x).empty(self.output_shape(x, W), dtype=x.dtype)
                library().convolution_forward(x, W, b, y, *self._geometry(),
                                              auto_tune=False, tensor_core="never")
            except RuntimeError as error:  # CuDNNError, or no algorithm fits the workspace
                turn_off(error)
                self.via_cudnn = False
            else:
                self.x, self.W, self.kept = x, W, None  # the parent's release reads kept
                return y
        return super().forward(x, W, b)

    def backward(self, g):
        if self.via_cudnn:
            if _State.failure is None:
                try:
                    return self._cudnn_backward(g)
                except RuntimeError as error:
                    turn_off(error)
            super().forward(self.x, self.W)  # what the parent's backward reads
        return super().backward(g)

    def _cudnn_backward(self, g):
        x, W, lib, xp = self.x, self.W, library(), get_array_module(g)
        g = g.astype(x.dtype, copy=False)  # cuDNN computes in one dtype
        options = dict(deterministic=True, auto_tune=False, tensor_core="never")
        gx = gW = None
        if self.needs_grad(1):
            gW = xp.empty(W.shape, dtype=W.dtype)
            lib.convolution_backward_filter(x, g, gW, *self._geometry(), **options)
        if self.needs_grad(0):
            gx = xp.empty(x.shape, dtype=x.dtype)
            lib.convolution_backward_data(W, g, None, gx, *self._geometry(), **options)
        gb = wide_sum(g, (0, 2, 3)) if len(self.inputs) == 3 else None  # adds in float64
        return gx, gW, gb

    def _geometry(self):
        """cupyx.cudnn's pad, stride, dilation and groups, after its arrays."""
        return (self.padding,) * 2, (self.stride,) * 2, NO_DILATION, ONE_GROUP
