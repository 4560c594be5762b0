"""tinyunits.fast.cudnn: conv2d through cuDNN on a GPU, its im2col parent (fast/conv.py)
everywhere else.

- Off a GPU (NumPy, strict) the drop-in is its parent, bit for bit, even where cuDNN
  is at hand.
- The dispatch, on any backend: a stand-in for cupyx.cudnn (FakeCudnn: the real
  functions' signatures and demands, computing with the reference op) is handed the
  arrays of the current backend as if they were on a GPU (on the strict backend they
  behave as CuPy's), and must get cuDNN's arguments; what cuDNN cannot take goes to the
  parent, and a failing cuDNN turns itself off with one warning.
- On a GPU with CuPy's cuDNN (TINYUNITS_BACKEND=cupy, CuPy 13 with libcudnn 8): cuDNN's
  numbers against the im2col path in float64 and float32, and a float64 gradient check.
  They skip with CuPy 14, which has no cuDNN bindings.
"""
import sys
import types
import warnings

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, fast, ops
from tinyunits.fast import conv, cuda, cudnn

from fast_support import step
from test_fast_conv import CASES, conv_arrays

NCHW = 0  # cudnnTensorFormat_t's CUDNN_TENSOR_NCHW, cupyx.cudnn's default layout


def case(rng, stride, padding, k):
    """x, W, b, g for one of test_fast_conv's CASES, on its shape."""
    return conv_arrays(rng, (5, 3, 9, 8, 4, k, padding), stride)


def drop_in(stride, padding):
    return lambda x, W, b: ops.conv2d(x, W, b, stride=stride, padding=padding)


def parent(stride, padding):
    return lambda x, W, b: conv.Conv2d(stride, padding)(x, W, b)  # not a DROP_INS key: itself


def reference(x, W, b, stride, padding, g):
    """y, dx, dW of the reference op (tinyunits/ops/conv.py) on arrays of the backend."""
    with fast.disabled():
        xt, Wt = (tu.tensor(a, requires_grad=True, dtype=a.dtype) for a in (x, W))
        bias = () if b is None else (tu.tensor(b, dtype=b.dtype),)
        y = ops.conv2d(xt, Wt, *bias, stride=stride, padding=padding)
        y.backward(tu.tensor(g, dtype=g.dtype))
    return y.data, xt.grad, Wt.grad


class FakeCudnn:
    """cupyx.cudnn's convolution functions as CuPy 13 declares them (the keywords without
    a default are required there too), with their demands (outputs C-contiguous, all
    arrays of one float dtype); each writes its output with the reference op and is
    recorded. `fail` names one that raises as cuDNN does (CuDNNError is a RuntimeError)."""

    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def _run(self, name, arrays, out, pad, stride, dilation, groups, options):
        self.calls.append(dict(name=name, pad=pad, stride=stride, dilation=dilation,
                               groups=groups, **options))
        if name == self.fail:
            raise RuntimeError("CUDNN_STATUS_NOT_SUPPORTED (a stand-in's)")
        if not out.flags.c_contiguous:
            raise ValueError("cupyx.cudnn supports c-contiguous arrays only")
        if {a.dtype.name for a in arrays + [out] if a is not None} - {out.dtype.name} \
                or out.dtype.name not in ("float32", "float64"):
            raise TypeError("one float dtype, as cuDNN's descriptors")
        assert pad[0] == pad[1] and stride[0] == stride[1], (pad, stride)
        return pad[0], stride[0]

    def convolution_forward(self, x, W, b, y, pad, stride, dilation, groups, *,
                            auto_tune, tensor_core, d_layout=NCHW, w_layout=NCHW):
        p, s = self._run("forward", [x, W, b], y, pad, stride, dilation, groups,
                         dict(auto_tune=auto_tune, tensor_core=tensor_core,
                              layouts=(d_layout, w_layout)))
        y[...] = reference(x, W, b, s, p, backend.get_array_module(y).zeros_like(y))[0]

    def convolution_backward_filter(self, x, gy, gW, pad, stride, dilation, groups, *,
                                    deterministic, auto_tune, tensor_core,
                                    d_layout=NCHW, w_layout=NCHW):
        p, s = self._run("backward_filter", [x, gy], gW, pad, stride, dilation, groups,
                         dict(deterministic=deterministic, auto_tune=auto_tune,
                              tensor_core=tensor_core, layouts=(d_layout, w_layout)))
        gW[...] = reference(x, backend.get_array_module(gW).zeros_like(gW), None, s, p, gy)[2]

    def convolution_backward_data(self, W, x, b, y, pad, stride, dilation, groups, *,
                                  deterministic, auto_tune, tensor_core,
                                  d_layout=NCHW, w_layout=NCHW):
        # cupyx.cudnn's names: x is the output's gradient, y the input's, b a bias for y
        assert b is None, "dx has no bias"
        p, s = self._run("backward_data", [W, x], y, pad, stride, dilation, groups,
                         dict(deterministic=deterministic, auto_tune=auto_tune,
                              tensor_core=tensor_core, layouts=(d_layout, w_layout)))
        y[...] = reference(backend.get_array_module(y).zeros_like(y), W, None, s, p, x)[1]


@pytest.fixture
def fake(monkeypatch):
    """A FakeCudnn as CuPy's cuDNN, cuDNN on, TF32 off; arrays still where they are."""
    stand_in = FakeCudnn()
    monkeypatch.setattr(cudnn, "library", lambda: stand_in)
    monkeypatch.setattr(cudnn._State, "failure", None)
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    return stand_in


@pytest.fixture
def fake_gpu(fake, monkeypatch):
    """fake, with the current backend's arrays taken for a GPU's."""
    monkeypatch.setattr(cuda, "on_gpu", lambda a: backend.get_array_module(a)
                        is backend.get_array_module())
    return fake


def same_bits(got, want):
    for name, a, b in zip(["y", "dx", "dW", "db"], got, want):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)


off_gpu = pytest.mark.skipif(backend.get_backend() == "cupy",
                             reason="host arrays: NumPy and strict")


# --------------------------------------------------------------------------- off a GPU
def test_a_full_install_builds_the_cudnn_drop_in():
    assert fast.DROP_INS[ops.conv.Conv2d] is cudnn.Conv2d
    assert type(ops.conv.Conv2d()) is cudnn.Conv2d and issubclass(cudnn.Conv2d, conv.Conv2d)


@off_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("stride,padding,k", CASES)
def test_off_a_gpu_it_is_its_parent_even_beside_cudnn(rng, fake, stride, padding, k, dtype):
    *arrays, g = case(rng, stride, padding, k)
    same_bits(step(drop_in(stride, padding), arrays, g, dtype),
              step(parent(stride, padding), arrays, g, dtype))
    assert fake.calls == []


# --------------------------------------------------------------------------- the dispatch
@off_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("stride,padding,k", CASES)
def test_forward_and_backward_hand_cudnn_its_arguments(rng, fake_gpu, stride, padding, k, dtype):
    """NCHW arrays, (p, p) padding, (s, s) stride, no dilation, one group; heuristic
    algorithms, no tensor-core math asked for, deterministic backward. The results are
    the reference's: the stand-in computes with it, and db is g summed in float64."""
    *arrays, g = case(rng, stride, padding, k)
    got = step(drop_in(stride, padding), arrays, g, dtype)
    assert [c.pop("name") for c in fake_gpu.calls] == ["forward", "backward_filter",
                                                      "backward_data"]
    geometry = dict(pad=(padding,) * 2, stride=(stride,) * 2, dilation=(1, 1), groups=1,
                    auto_tune=False, tensor_core="never", layouts=(NCHW, NCHW))
    assert fake_gpu.calls == [geometry, dict(geometry, deterministic=True),
                              dict(geometry, deterministic=True)]
    with fast.disabled():
        want = step(drop_in(stride, padding), arrays, g, dtype)
    same_bits(got, want)


@off_gpu
def test_an_input_without_gradient_costs_no_backward_data(rng, fake_gpu):
    x, W, b, g = (backend.asarray(a, dtype="float64") for a in case(rng, 2, 1, 3))
    Wt = tu.tensor(W, requires_grad=True, dtype="float64")
    ops.conv2d(tu.tensor(x, dtype="float64"), Wt, tu.tensor(b, dtype="float64"),
               stride=2, padding=1).backward(tu.tensor(g, dtype="float64"))
    assert [c["name"] for c in fake_gpu.calls] == ["forward", "backward_filter"]
    assert Wt.grad is not None


@off_gpu
@pytest.mark.parametrize("what", ["int64", "int32 x, float64 W", "float32 x, float64 W",
                                  "float32 with TF32 allowed", "bias of 5 for 4 maps",
                                  "2x3 kernel", "no cuDNN in this CuPy"])
def test_what_cudnn_does_not_take_goes_to_the_parent(rng, fake_gpu, monkeypatch, what):
    """The parent's numbers, or its error, and cuDNN never asked."""
    x, W, b, _ = case(rng, 1, 1, 3)
    dtypes = {"int64": ("int64", "int64"), "int32 x, float64 W": ("int32", "float64"),
              "float32 x, float64 W": ("float32", "float64")}.get(what, ("float32", "float32"))
    x, W, b = (backend.asarray(a, dtype=d) for a, d in zip((x, W, b), dtypes + dtypes[1:]))
    if what == "float32 with TF32 allowed":
        monkeypatch.delenv("NVIDIA_TF32_OVERRIDE")
    if what == "bias of 5 for 4 maps":
        b = backend.get_array_module(b).ones(5, dtype=b.dtype)
    if what == "2x3 kernel":
        W = W[:, :, :2]
    if what == "no cuDNN in this CuPy":
        monkeypatch.setattr(cudnn, "library", lambda: None)
    outcomes = []
    for make in (ops.conv.Conv2d, conv.Conv2d):
        try:
            outcomes.append(backend.to_host(make(1, 1).forward(x, W, b)))
        except ValueError as error:
            outcomes.append(str(error))
    assert fake_gpu.calls == []
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        same_bits(outcomes[:1], outcomes[1:])


@off_gpu
@pytest.mark.parametrize("failing", ["forward", "backward_filter", "backward_data"])
def test_a_failing_cudnn_warns_once_and_the_parent_takes_over(rng, fake_gpu, failing):
    """The failing step gives the parent's numbers (a failing backward runs the parent's
    forward again for what its backward reads); later steps never ask cuDNN."""
    *arrays, g = case(rng, 2, 1, 3)
    fake_gpu.fail = failing
    with pytest.warns(RuntimeWarning, match="conv2d: cuDNN failed .*CUDNN_STATUS_NOT_SUPPORTED"
                                            r".* through im2col") as warned:
        got = step(drop_in(2, 1), arrays, g, "float64")
    assert len(warned) == 1 and isinstance(cudnn._State.failure, RuntimeError)
    asked = len(fake_gpu.calls)
    assert fake_gpu.calls[-1]["name"] == failing
    want = step(parent(2, 1), arrays, g, "float64")
    if failing != "forward":  # y is cuDNN's (the stand-in's: the reference's)
        with fast.disabled():
            want[0] = step(drop_in(2, 1), arrays, g, "float64")[0]
    same_bits(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same_bits(step(drop_in(2, 1), arrays, g, "float64"), step(parent(2, 1), arrays, g,
                                                                   "float64"))
    assert len(fake_gpu.calls) == asked


@off_gpu
def test_an_error_that_is_not_cudnns_is_raised_and_leaves_cudnn_on(rng, fake_gpu, monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise MemoryError("out of device memory")
    monkeypatch.setattr(fake_gpu, "convolution_forward", out_of_memory)
    *arrays, g = case(rng, 1, 1, 3)
    with pytest.raises(MemoryError, match="out of device memory"):
        step(drop_in(1, 1), arrays, g, "float64")
    assert cudnn._State.failure is None


def test_library_is_cupyx_cudnn_where_it_imports_and_none_where_it_does_not(monkeypatch):
    bindings = types.ModuleType("cupyx.cudnn")
    cudnn.library.cache_clear()
    try:
        monkeypatch.setitem(sys.modules, "cupyx", types.ModuleType("cupyx"))
        monkeypatch.setitem(sys.modules, "cupyx.cudnn", bindings)
        assert cudnn.library() is bindings
        cudnn.library.cache_clear()
        monkeypatch.setitem(sys.modules, "cupyx.cudnn", None)  # import fails: CuPy 14
        assert cudnn.library() is None
    finally:
        cudnn.library.cache_clear()


# --------------------------------------------------------------------------- on a GPU
needs_cudnn = pytest.mark.skipif(backend.get_backend() != "cupy" or cudnn.library() is None,
                                 reason="needs TINYUNITS_BACKEND=cupy and a CuPy with cuDNN "
                                        "(cupyx.cudnn: CuPy <= 13 with libcudnn 8)")


@pytest.fixture
def counted(monkeypatch):
    """The names of the cupyx.cudnn functions called, in order."""
    real, calls = cudnn.library(), []

    class Counted:
        def __getattr__(self, name):
            def call(*args, **kwargs):
                calls.append(name)
                return getattr(real, name)(*args, **kwargs)
            return call
    counted_library = Counted()
    monkeypatch.setattr(cudnn, "library", lambda: counted_library)
    return calls


def within_rounding(got, want, arrays, g, stride, padding, k, dtype):
    """tests/test_fast_conv.py's bound: two orders of a sum of n terms differ by at most
    2 n u sum|term| (u the dtype's unit roundoff), per element, sum|term| being the same
    conv of |x|, |W|, |b| and |g|."""
    x, W, b = arrays
    with fast.disabled():
        sums = step(drop_in(stride, padding), [np.abs(x), np.abs(W), np.abs(b)], np.abs(g),
                    "float64")
    B, C, out = x.shape[0], x.shape[1], W.shape[0]
    terms = [C * k * k + 1, out * k * k, g[0, 0].size * B, g[0, 0].size * B]
    u = np.finfo(dtype).eps / 2
    for name, n, a, b_, s in zip(["y", "dx", "dW", "db"], terms, got, want, sums):
        assert a.dtype == b_.dtype == dtype and a.shape == b_.shape, name
        assert np.all(np.abs(a - b_) <= 2 * n * u * s), (name, np.max(np.abs(a - b_) / s))


@needs_cudnn
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("stride,padding,k", CASES)
def test_gpu_cudnn_gives_the_im2col_numbers(rng, counted, stride, padding, k, dtype):
    *arrays, g = case(rng, stride, padding, k)
    got = step(drop_in(stride, padding), arrays, g, dtype)
    if dtype == "float32" and not cudnn.tf32_off():  # TF32 would change the numbers
        assert counted == []
        same_bits(got, step(parent(stride, padding), arrays, g, dtype))
        return
    assert counted == ["convolution_forward", "convolution_backward_filter",
                       "convolution_backward_data"]
    want = step(parent(stride, padding), arrays, g, dtype)
    within_rounding(got, want, arrays, g, stride, padding, k, dtype)


@needs_cudnn
@pytest.mark.parametrize("stride,padding,k", [(1, 1, 3), (2, 1, 3), (1, 0, 2), (3, 2, 3)])
def test_gpu_cudnn_passes_gradcheck(rng, counted, stride, padding, k):
    x, W, b = rng.normal(size=(3, 2, 7, 6)), rng.normal(size=(3, 2, k, k)), rng.normal(size=3)
    report = tu.gradcheck(drop_in(stride, padding), [x, W, b])
    assert report.ok, report
    assert {"convolution_forward", "convolution_backward_filter",
            "convolution_backward_data"} <= set(counted)
