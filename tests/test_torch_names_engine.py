"""The engine's names that PyTorch also has (Tensor methods, tu.* functions) mean what
PyTorch's mean, compared with torch where it is installed, or refuse with an error that
says how tinyunits differs; and the same names attacked with edge inputs (0-d, empty,
NaN and inf, wrong types, threads, fork)."""
import contextlib
import os
import threading

import numpy as np
import pytest

import tinyunits as tu

host = tu.backend.to_host


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _pair(values, torch, dtype="float64"):
    """The same values as a tinyunits leaf and a torch leaf, both requiring grad."""
    values = np.asarray(values, dtype=dtype)
    return (tu.tensor(values, requires_grad=True, dtype=dtype),
            torch.tensor(values, requires_grad=True))


def _same(ours, theirs):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    ours = host(ours.data if isinstance(ours, tu.Tensor) else ours)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


# ------------------------------------------------------------------------------- transpose
@pytest.mark.parametrize("shape, axes", [((2, 3), (0, 1)), ((2, 3), (1, 0)), ((2, 3), (-1, 0)),
                                         ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 1)),
                                         ((2, 3, 4), (1, 1)), ((0, 3), (0, 1))])
def test_transpose_of_two_axes_swaps_them_as_pytorchs(torch, shape, axes):
    values = np.arange(np.prod(shape), dtype=float).reshape(shape)
    ours, theirs = _pair(values, torch)
    a, b = ours.transpose(*axes), theirs.transpose(*axes)
    _same(a, b)  # a matrix's transpose(0, 1) was the matrix itself
    seed = np.random.default_rng(0).normal(size=b.shape)
    a.backward(tu.backend.asarray(seed))
    b.backward(torch.tensor(seed))
    _same(ours.grad, theirs.grad)


def test_transpose_with_the_whole_order_is_numpys_and_a_bad_axis_names_the_op():
    t = tu.tensor(np.zeros((2, 3, 4)))
    assert t.transpose(2, 0, 1).shape == (4, 2, 3) and t.transpose().shape == (4, 3, 2)
    assert t.T.shape == (4, 3, 2)
    with pytest.raises(ValueError, match=r"^Transpose: .*got inputs \(2, 3, 4\)"):
        t.transpose(0, 3)


# ------------------------------------------------------------------------------------ size
@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (4, 1, 5)])
def test_size_is_numpys_count_and_called_pytorchs_shape(torch, shape):
    t, theirs = tu.tensor(np.zeros(shape)), torch.zeros(shape)
    assert t.size == theirs.numel() == np.zeros(shape).size
    assert t.size() == tuple(theirs.size())
    for dim in range(-len(shape), len(shape)):
        assert t.size(dim) == theirs.size(dim)


@pytest.mark.parametrize("dim, error", [(2, ValueError), (-3, ValueError), ("0", TypeError),
                                        (1.0, TypeError)])
def test_size_of_a_missing_axis_names_size_and_the_shape(dim, error):
    with pytest.raises(error, match=r"^size: dim must be an int in \[-2, 2\) for a tensor of "
                                    r"shape \(2, 3\)"):
        tu.tensor(np.zeros((2, 3))).size(dim)


# ------------------------------------------------------------------------------ reductions
@pytest.mark.parametrize("method", ["sum", "mean", "amax"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": (0, 1)},
                                    {"axis": -1}, {"axis": 0, "keepdims": True}])
def test_reductions_take_pytorchs_and_numpys_argument_names(torch, method, kwargs):
    values = np.array([[1.0, 4.0, 4.0], [-2.0, 0.5, 3.0]])  # a tie: amax shares the gradient
    ours, theirs = _pair(values, torch)
    torch_kwargs = {{"axis": "dim", "keepdims": "keepdim"}.get(k, k): v for k, v in kwargs.items()}
    if method == "amax" and not kwargs:
        torch_kwargs = {"dim": (0, 1)}  # torch.amax's default is every axis too, spelled ()
    a, b = getattr(ours, method)(**kwargs), getattr(theirs, method)(**torch_kwargs)
    _same(a, b)
    a.sum().backward()
    b.sum().backward()
    _same(ours.grad, theirs.grad)


def test_max_of_every_element_is_pytorchs_and_ties_share_the_gradient(torch):
    ours, theirs = _pair([[1.0, 3.0], [3.0, -1.0]], torch)
    a, b = ours.max(), theirs.max()
    _same(a, b)
    a.backward()
    b.backward()
    _same(ours.grad, theirs.grad)


@pytest.mark.parametrize("call", [lambda t: t.max(1), lambda t: t.max(dim=1),
                                  lambda t: t.max(1, keepdims=True)])
def test_max_over_a_dim_refuses_to_be_pytorchs_pair_and_says_what_to_write(call):
    t = tu.tensor([[1.0, 5.0], [7.0, 2.0]])
    # PyTorch's t.max(1)[0] is [5, 7]; the values alone would have made it 5
    with pytest.raises(TypeError, match=r"^max: t.max\(dim\) would be PyTorch's \(values, "
                                        r"indices\) pair.*t.amax\(dim\).*got"):
        call(t)
    np.testing.assert_array_equal(host(t.max(axis=1).data), [5.0, 7.0])
    np.testing.assert_array_equal(host(t.amax(1).data), [5.0, 7.0])


def test_a_reduction_given_both_axis_and_dim_names_itself():
    with pytest.raises(TypeError, match=r"^mean: axis and dim must be one of the two"):
        tu.tensor([[1.0]]).mean(axis=0, dim=1)


# ---------------------------------------------------------------------- abs(t), +t, detach
def test_abs_and_unary_plus_are_pytorchs(torch):
    ours, theirs = _pair([-1.5, 0.0, 2.0], torch)
    a, b = abs(ours) + (+ours), abs(theirs) + (+theirs)
    _same(a, b)
    a.sum().backward()
    b.sum().backward()
    _same(ours.grad, theirs.grad)


def test_detach_shares_the_array_as_pytorchs(torch):
    ours, theirs = tu.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    d, e = ours.detach(), theirs.detach()
    d.data[0] = 9.0
    e[0] = 9.0
    _same(ours, theirs)
    assert not d.requires_grad and not e.requires_grad


# --------------------------------------------------------------- tensor, as_tensor, numpy
def test_tensor_copies_and_as_tensor_shares_as_pytorchs(torch):
    a = np.array([1.0, 2.0], np.float32)
    ours = (tu.tensor(a), tu.as_tensor(a))
    theirs = (torch.tensor(a), torch.as_tensor(a))
    a *= 10
    for x, y in zip(ours, theirs):
        _same(x, y)  # tu.tensor was as_tensor: it showed the change
    t, u = tu.tensor([1.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)
    assert (tu.as_tensor(t) is t) == (torch.as_tensor(u) is u) == True  # noqa: E712


@pytest.mark.parametrize("data", [[], [[]], 0.0, True, [float("nan"), float("inf"), -float("inf")],
                                  [1, 2], np.array([1, 2], np.int32), np.float32(1.5),
                                  [[1.5, -2.0], [3.0, 4.0]]])
def test_tensor_of_edge_data_gives_pytorchs_values_shape_and_dtype_kind(torch, data):
    ours, theirs = tu.tensor(data), torch.tensor(data)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.kind == {"b": "b", "i": "i", "f": "f"}[theirs.numpy().dtype.kind]
    np.testing.assert_array_equal(host(ours.data), theirs.numpy())


@pytest.mark.parametrize("data, dtype", [(2 ** 70, None), (1 + 2j, None), ([1.0, None], None),
                                         ("1.5", None), ([[1.0], [1.0, 2.0]], None),
                                         ([1.0], "floot32"), (object(), None)])
@pytest.mark.parametrize("make", ["tensor", "as_tensor"])
def test_tensor_of_what_is_no_numbers_names_the_callable(make, data, dtype):
    with pytest.raises(TypeError, match=rf"^{make}: data must be"):
        getattr(tu, make)(data, dtype=dtype)


def test_numpy_is_a_host_copy_as_documented():
    t = tu.tensor([1.0, 2.0])
    t.numpy()[0] = 5.0  # PyTorch's numpy() would share; tinyunits' copies, on every backend
    assert host(t.data)[0] == 1.0


# --------------------------------------------------------------------------- item, backward
def test_item_answers_for_one_element_of_any_shape_as_pytorchs(torch):
    for shape in [(), (1,), (1, 1)]:
        assert tu.tensor(np.full(shape, 2.5)).item() == torch.full(shape, 2.5).item()
    for shape in [(0,), (2,)]:
        with pytest.raises(ValueError, match=rf"^item: a tensor of shape \({shape[0]},\)"):
            tu.tensor(np.zeros(shape)).item()


def test_backward_seeds_only_a_one_element_output_as_pytorchs(torch):
    ours, theirs = _pair([[3.0]], torch)
    (ours * 2).backward()
    (theirs * 2).backward()
    _same(ours.grad, theirs.grad)
    with pytest.raises(RuntimeError, match="^backward: output of shape"):
        (tu.tensor([1.0, 2.0], requires_grad=True) * 2).backward()
    with pytest.raises(RuntimeError, match="^backward: this tensor does not require grad"):
        tu.tensor([1.0]).sum().backward()


def test_backward_inside_no_grad_still_computes_gradients_as_pytorchs(torch):
    ours, theirs = _pair([1.0, -2.0], torch)
    a, b = (ours * ours).sum(), (theirs * theirs).sum()
    with tu.no_grad(), torch.no_grad():
        a.backward()
        b.backward()
    _same(ours.grad, theirs.grad)


# ---------------------------------------------------------------------- no_grad, threads, fork
def test_no_grad_as_a_decorator_holds_in_the_calling_thread_only():
    @tu.no_grad()
    def evaluate(x, started, go):
        started.set()
        assert go.wait(30)
        return (x * 2).requires_grad, tu.is_grad_enabled()

    x = tu.tensor([1.0], requires_grad=True)
    started, go, box = threading.Event(), threading.Event(), {}
    thread = threading.Thread(target=lambda: box.update(out=evaluate(x, started, go)))
    thread.start()
    assert started.wait(30)
    recorded = (x * 2).requires_grad  # this thread records while the other evaluates
    go.set()
    thread.join(30)
    assert recorded and box["out"] == (False, False) and tu.is_grad_enabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("inside", [False, True])
def test_a_forked_child_keeps_the_forking_threads_grad_mode(inside):
    # as PyTorch's thread-local mode: the child is a copy of the thread that forked
    read, write = os.pipe()
    with tu.no_grad() if inside else contextlib.nullcontext():
        pid = os.fork()
        if pid == 0:  # the child: report and leave at once, running no pytest teardown
            try:
                x = tu.tensor([2.0], requires_grad=True)
                os.write(write, bytes([tu.is_grad_enabled(), (x * x).requires_grad]))
            finally:
                os._exit(0)
    os.close(write)
    seen = os.read(read, 2)
    os.close(read)
    os.waitpid(pid, 0)
    assert seen == bytes([not inside, not inside])
    assert tu.is_grad_enabled()


def test_default_dtype_is_a_name_and_a_wrong_one_names_the_setter():
    assert tu.get_default_dtype() == "float32"  # PyTorch's is torch.float32: documented
    for bad in (np.float64, "float16", None):
        with pytest.raises(ValueError, match="^set_default_dtype: name must be one of"):
            tu.set_default_dtype(bad)


# -------------------------------------------------------------------- Module.named_modules
def test_named_modules_names_as_pytorchs(torch):
    from tinyunits import nn
    ours = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU()))
    for prefix in ("", "net"):
        # the names ended in "." ("0.", "1.0."), and a prefix ran into them ("net0.")
        assert [n for n, _ in ours.named_modules(prefix)] == \
            [n for n, _ in theirs.named_modules(prefix=prefix)]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())


# ------------------------------------------------------------------- ops.pad, ops.concatenate
@pytest.mark.parametrize("pad_width", [1, (1, 2), ((1, 2),), [[1, 0], [0, 2]], np.int64(2)])
def test_pad_takes_every_form_numpy_pad_takes_and_backward_crops_it(pad_width):
    values = np.arange(6.0).reshape(2, 3)
    x = tu.tensor(values, requires_grad=True, dtype="float64")
    y = tu.ops.pad(x, pad_width)
    padded = np.pad(values, pad_width)
    np.testing.assert_array_equal(host(y.data), padded)
    seed = np.arange(padded.size, dtype=float).reshape(padded.shape)
    y.backward(tu.backend.asarray(seed))  # the gradient is the seed's middle, where x sits
    mask = np.pad(np.ones_like(values, dtype=bool), pad_width)
    np.testing.assert_array_equal(host(x.grad), seed[mask].reshape(values.shape))  # raised


@pytest.mark.parametrize("pad_width, error", [
    (((-1, 0), (0, 0)), ValueError), ((1.5, 0), TypeError), (((1, 0), (0, 0), (0, 0)), ValueError),
    (((1, 0), (0,)), ValueError), (None, TypeError), (True, TypeError), ("1", TypeError)])
def test_pad_of_a_bad_width_names_pad_and_the_forms(pad_width, error):
    with pytest.raises(error, match=r"^Pad: pad_width must be ints >= 0: one, one \(before, "
                                    r"after\) pair, or a pair for each of the 2 axes, got .*; "
                                    r"got inputs \(2, 3\)"):
        tu.ops.pad(tu.tensor(np.zeros((2, 3))), pad_width)


@pytest.mark.parametrize("xs", [[], (), "tensor", "generator", None])
def test_concatenate_takes_a_list_of_tensors_as_torch_cat_does(xs):
    t = tu.tensor(np.zeros((2, 3)))
    xs = {"tensor": t, "generator": (u for u in [t])}.get(xs, xs) if isinstance(xs, str) else xs
    with pytest.raises(TypeError, match=r"^concatenate: tensors must be a non-empty list or "
                                        r"tuple of tensors, got"):
        tu.ops.concatenate(xs)  # a Tensor was iterated: its rows joined without a word


def test_torch_cat_refuses_a_tensor_too(torch):
    with pytest.raises(TypeError):
        torch.cat(torch.zeros(2, 3))


def test_size_copies_and_pickles_as_a_plain_int():
    import copy
    import json
    import pickle
    size = tu.tensor(np.zeros((2, 3))).size
    for out in (copy.copy(size), copy.deepcopy(size), pickle.loads(pickle.dumps(size))):
        assert type(out) is int and out == 6  # the int subclass could not be rebuilt
    assert json.loads(json.dumps({"n": size})) == {"n": 6}
