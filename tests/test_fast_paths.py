"""The faster paths equal their references: conv2d's stride-1 WideColumns against
Columns (im2col/col2im), its chunks of the batch against one chunk, max pooling
against a window-by-window loop; scratch buffers are reused, and never under a
live graph; the split elementwise ops give the same bits on any number of threads."""
import numpy as np
import pytest
import threadpoolctl

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import buffers, threads
from tinyunits.ops import conv

SHAPES = [  # (B, C, H, W, out, k, padding)
    (5, 3, 7, 6, 4, 3, 1),
    (9, 1, 28, 28, 8, 5, 2),
    (3, 2, 4, 9, 3, 2, 0),
    (4, 6, 5, 5, 2, 1, 0),
    (2, 3, 3, 3, 2, 3, 0),  # one output position
]


@pytest.fixture
def thread_counts(monkeypatch):
    """Yields a setter; every elementwise op splits, however small; counts restored."""
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(threads._State, "threads", None)
    blas = threadpoolctl.threadpool_limits(None)
    yield threads.set_num_threads
    blas.restore_original_limits()


def conv_step(plan, x, W, b, g, stride=1, padding=0, layout="batch"):
    """y, dx, dW, db of conv2d with its columns made by `plan`."""
    if layout == "channel":  # as a conv's or ReLU's output arrives: a (C, B, H, W) array's view
        x = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv, "WideColumns", plan)
        ts = [tu.tensor(a, requires_grad=True) for a in (x, W, b)]
        y = ops.conv2d(*ts, stride=stride, padding=padding)
        y.backward(tu.tensor(g))
    return [backend.to_host(a) for a in (y.data, *(t.grad for t in ts))]


def conv_arrays(rng, shape, stride=1):
    B, C, H, W, out, k, padding = shape
    Ho, Wo = (conv.conv_output_size(n, k, stride, padding) for n in (H, W))
    return [rng.normal(size=s) for s in ((B, C, H, W), (out, C, k, k), (out,), (B, out, Ho, Wo))]


@pytest.mark.parametrize("layout", ["batch", "channel"])
@pytest.mark.parametrize("shape", SHAPES)
def test_wide_columns_equal_the_reference(rng, float64, shape, layout):
    """y and dx sum the same terms in the same order; dW adds zero terms too."""
    arrays = conv_arrays(rng, shape)
    want = conv_step(conv.Columns, *arrays, padding=shape[-1], layout=layout)
    got = conv_step(conv.WideColumns, *arrays, padding=shape[-1], layout=layout)
    for name, a, b in zip(("y", "dx", "dW", "db"), got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def test_wide_columns_drop_what_they_read_past_a_row(rng, float64):
    """A wide column's values past Wo mix two rows; a huge value there must not leak."""
    x, W, b, g = conv_arrays(rng, (2, 2, 5, 6, 3, 3, 0))
    x[:, :, :, :2] = 1e300  # read only by the dropped columns' taps q > 0 ... and real ones
    want = conv_step(conv.Columns, x, W, b, g)
    got = conv_step(conv.WideColumns, x, W, b, g)
    for a, b_ in zip(got, want):
        np.testing.assert_allclose(a, b_, rtol=1e-12)


@pytest.mark.parametrize("batch", [1, 5])  # one chunk (its first use of the buffer), several
@pytest.mark.parametrize("plan", [conv.Columns, conv.WideColumns])
def test_conv_reads_nothing_a_borrowed_buffer_held(rng, float64, monkeypatch, plan, batch):
    """Scratch comes back holding a former user's numbers (NaN here): every entry the conv
    reads is written first. (WideColumns' last chunk has columns past the input's end:
    zeroed.)"""
    arrays = conv_arrays(rng, (batch, 3, 7, 6, 4, 3, 1))
    want = conv_step(plan, *arrays, padding=1)
    monkeypatch.setattr(buffers, "borrow",
                        lambda xp, shape, dtype: xp.full(shape, np.nan, dtype=dtype))
    got = conv_step(plan, *arrays, padding=1)
    for name, a, b in zip(("y", "dx", "dW", "db"), got, want):
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("plan", [conv.Columns, conv.WideColumns])
@pytest.mark.parametrize("stride", [1, 2])
def test_chunks_of_the_batch_equal_one_chunk(rng, float64, monkeypatch, plan, stride):
    """Chunks of one sample (the last one short) against the whole batch in one chunk."""
    shape = (7, 3, 9, 8, 4, 3, 1)
    arrays = conv_arrays(rng, shape, stride)
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", 2 ** 30)
    whole = conv_step(plan, *arrays, stride=stride, padding=1)
    per_sample = 3 * 9 * conv.conv_output_size(9, 3, stride, 1) * 9
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", 2 * per_sample)  # 2 samples a chunk: 2+2+2+1
    chunked = conv_step(plan, *arrays, stride=stride, padding=1)
    for name, a, b in zip(("y", "dx", "dW", "db"), chunked, whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def test_conv_matches_the_definition(rng, float64):
    """y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] xpad[b,c,h+p,w+q] + bias[o], dW likewise."""
    x, W, b, g = conv_arrays(rng, (3, 2, 6, 7, 4, 3, 1))
    y, dx, dW, db = conv_step(conv.WideColumns, x, W, b, g, padding=1)
    xpad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xpad, (3, 3), axis=(2, 3))
    np.testing.assert_allclose(y, np.einsum("bchwpq,ocpq->bohw", windows, W)
                               + b[:, None, None], rtol=1e-12)
    np.testing.assert_allclose(dW, np.einsum("bohw,bchwpq->ocpq", g, windows), rtol=1e-12)
    np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), rtol=1e-12)


# --------------------------------------------------------------------------- buffers
@pytest.fixture
def empty_cache(monkeypatch):
    monkeypatch.setattr(buffers, "MIN_BYTES", 0)  # the tests' arrays are small
    buffers.clear()
    yield
    buffers.clear()


def test_small_arrays_and_a_pile_of_one_shape_are_not_kept(empty_cache, monkeypatch):
    """Lesson 1 gave back more of one small shape than it borrowed, every step: the
    list grew without bound (and give_back, scanning it, took 48 s of a 60 s run)."""
    xp = backend.host_module()
    buffers.give_back(xp.empty(10, "float32"))
    assert buffers._State.bytes == 40
    monkeypatch.setattr(buffers, "MIN_BYTES", 41)
    buffers.give_back(xp.empty(10, "float32"))
    assert buffers._State.bytes == 40
    for _ in range(3 * buffers.PER_SHAPE):
        buffers.give_back(xp.empty(20, "float32"))
    assert buffers._State.bytes == 40 + 80 * buffers.PER_SHAPE


def test_a_buffer_given_back_is_lent_again_for_the_same_shape_only(empty_cache):
    xp = backend.host_module()
    a = buffers.borrow(xp, (3, 4), "float32")
    buffers.give_back(a)
    assert buffers.borrow(xp, (4, 3), "float32") is not a
    assert buffers.borrow(xp, (3, 4), "float64") is not a
    assert buffers.borrow(xp, (3, 4), "float32") is a
    assert buffers.borrow(xp, (3, 4), "float32") is not a  # lent once at a time


def test_the_cache_keeps_at_most_its_limit(empty_cache, monkeypatch):
    monkeypatch.setattr(buffers, "LIMIT", 600)
    xp = backend.host_module()
    first, second = (buffers.borrow(xp, (100,), "float32") for _ in range(2))
    buffers.give_back(first)
    buffers.give_back(second)  # 800 bytes > 600: the older one goes
    assert buffers._State.bytes == 400
    assert buffers.borrow(xp, (100,), "float32") is second
    assert buffers.borrow(xp, (100,), "float32") is not first


def test_a_shape_lent_out_leaves_the_cache_and_eviction_goes_on(empty_cache, monkeypatch):
    """Lending a shape's last buffer leaves no empty entry behind for eviction to trip
    on (lesson 1 raised IndexError), and a buffer given back twice is kept once."""
    monkeypatch.setattr(buffers, "LIMIT", 600)
    xp = backend.host_module()
    a, b = buffers.borrow(xp, (100,), "float32"), buffers.borrow(xp, (50,), "float32")
    buffers.give_back(a)
    buffers.give_back(a)
    assert buffers._State.bytes == 400
    assert buffers.borrow(xp, (100,), "float32") is a  # the (100,) entry is now empty
    buffers.give_back(b)
    buffers.give_back(buffers.borrow(xp, (120,), "float32"))  # 680 > 600: evicts b
    assert buffers._State.bytes == 480
    assert buffers.borrow(xp, (100,), "float32") is not a


def test_device_arrays_are_not_kept(empty_cache):
    a = backend.strict.zeros(3)
    buffers.give_back(a)
    assert buffers._State.bytes == 0


def test_two_live_graphs_do_not_share_scratch(rng, empty_cache):
    """Two forwards before either backward (scratch reused in between) give what two
    separate steps give: nothing a graph needs lives in a reused buffer."""
    x1, W, b, g = (a.astype("float32") for a in conv_arrays(rng, (4, 3, 8, 8, 5, 3, 1)))
    x2 = rng.normal(size=x1.shape).astype("float32")

    def leaves():
        return [tu.tensor(a, requires_grad=True) for a in (W, b)]

    separate = []
    for x in (x1, x2):
        Wt, bt = leaves()
        xt = tu.tensor(x, requires_grad=True)
        y = ops.conv2d(xt, Wt, bt, padding=1)
        y.backward(tu.tensor(g))
        separate.append([y.numpy(), backend.to_host(xt.grad), backend.to_host(Wt.grad)])
    (W1, b1), (W2, b2) = leaves(), leaves()
    xt1, xt2 = tu.tensor(x1, requires_grad=True), tu.tensor(x2, requires_grad=True)
    y1, y2 = ops.conv2d(xt1, W1, b1, padding=1), ops.conv2d(xt2, W2, b2, padding=1)
    y2.backward(tu.tensor(g))
    y1.backward(tu.tensor(g))
    for got, want in zip([[y1.numpy(), backend.to_host(xt1.grad), backend.to_host(W1.grad)],
                          [y2.numpy(), backend.to_host(xt2.grad), backend.to_host(W2.grad)]],
                         separate):
        for a, b_ in zip(got, want):
            np.testing.assert_array_equal(a, b_)


# --------------------------------------------------------------------------- pooling, ReLU
def max_pool_reference(x, k, g):
    """Window by window: the first maximum in row-major order gets the gradient."""
    B, C, H, W = x.shape
    y = np.zeros((B, C, H // k, W // k), x.dtype)
    gx = np.zeros_like(x)
    for b, c, i, j in np.ndindex(y.shape):
        window = x[b, c, i * k:i * k + k, j * k:j * k + k]
        first = int(np.argmax(window))  # argmax: the first of equal maxima
        y[b, c, i, j] = window.flat[first]
        gx[b, c, i * k + first // k, j * k + first % k] = g[b, c, i, j]
    return y, gx


@pytest.mark.parametrize("layout", ["batch", "channel"])  # channel: as a conv's output
@pytest.mark.parametrize("k,shape", [(2, (3, 2, 6, 8)), (3, (2, 2, 7, 9)), (2, (1, 1, 5, 5))])
def test_max_pool_gives_the_gradient_to_the_first_maximum(rng, thread_counts, k, shape, layout):
    """g arrives batch-major (as a flattening's gradient): copied to x's layout."""
    x = rng.integers(-2, 3, size=shape).astype("float32")  # many ties
    g = rng.normal(size=(shape[0], shape[1], shape[2] // k, shape[3] // k)).astype("float32")
    want_y, want_gx = max_pool_reference(x, k, g)
    if layout == "channel":
        x = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    for n in (1, 2, 3):
        thread_counts(n)
        xt = tu.tensor(x, requires_grad=True)
        y = ops.max_pool2d(xt, k)
        y.backward(tu.tensor(g))
        np.testing.assert_array_equal(y.numpy(), want_y)
        np.testing.assert_array_equal(backend.to_host(xt.grad), want_gx)


@pytest.mark.parametrize("op", [ops.relu, lambda x: ops.avg_pool2d(x, 2),
                                lambda x: ops.max_pool2d(x, 2),
                                lambda x: ops.conv2d(x, x[:3, :2], padding=1)])
def test_split_ops_give_the_same_bits_on_any_number_of_threads(rng, thread_counts, op):
    x = rng.normal(size=(7, 2, 6, 6)).astype("float32")
    x[0, 0, 0, :3] = (0.0, -0.0, np.nan)
    results = []
    for n in (1, 2, 3):
        thread_counts(n)
        xt = tu.tensor(x, requires_grad=True)
        y = op(xt)
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        results.append([y.numpy().view("int32"), backend.to_host(xt.grad).view("int32")])
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op", [ops.relu, lambda x: ops.max_pool2d(x, 2)])
def test_saved_arrays_come_back_only_after_their_backward(rng, empty_cache, op):
    """ReLU's mask and max pooling's positions are lent to the Function and given back
    by release() after its backward: two live graphs, and a graph kept for a second
    backward (retain_graph) while others come and go, keep their own."""
    xs = [rng.normal(size=(4, 3, 6, 6)).astype("float32") for _ in range(3)]

    def grad(x):
        xt = tu.tensor(x, requires_grad=True)
        y = op(xt)
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        return backend.to_host(xt.grad)

    want = [grad(x) for x in xs]
    kept = tu.tensor(xs[0], requires_grad=True)
    y0 = op(kept)
    y0.backward(tu.tensor(np.ones(y0.shape, "float32")), retain_graph=True)
    first = backend.to_host(kept.grad).copy()
    live = [tu.tensor(x, requires_grad=True) for x in xs[1:]]
    ys = [op(t) for t in live]  # both forwards before either backward
    for t, y, w in zip(live[::-1], ys[::-1], want[:0:-1]):
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        np.testing.assert_array_equal(backend.to_host(t.grad), w)
    if backend.get_backend() == "numpy":
        assert buffers._State.bytes > 0  # given back, to be lent again
    grad(xs[2])  # borrows what the others gave back
    y0.backward(tu.tensor(np.ones(y0.shape, "float32")))  # the kept graph, again
    np.testing.assert_array_equal(first, want[0])
    np.testing.assert_array_equal(backend.to_host(kept.grad), 2 * want[0])


def test_focus_rows_give_the_same_bits_on_any_number_of_threads(rng, thread_counts):
    from tinyunits.units.focus import focus_coefficients
    mu, sigma = rng.uniform(0, 1, 37), rng.uniform(0.01, 1, 37)
    results = []
    for n in (1, 2, 3):
        thread_counts(n)
        results.append(focus_coefficients(mu, sigma, 50))
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_array_equal(a, b)
    d, u = results[0]
    phi = np.exp(-d ** 2 / (2 * sigma[:, None] ** 2))
    np.testing.assert_allclose(u, np.sqrt(50) * phi / np.linalg.norm(phi, axis=1)[:, None],
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("stride", [1, 2])
def test_chunks_on_threads_give_the_same_bits(rng, thread_counts, monkeypatch, stride):
    """Chunks of the batch on 1, 2, 3 threads (each a run of chunks, BLAS on one
    thread): the same bits, dW added up in chunk order whoever made each part."""
    arrays = [a.astype("float32") for a in conv_arrays(rng, (9, 3, 8, 7, 4, 3, 1), stride)]
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", 1)  # a chunk per sample
    results = []
    for n in (1, 2, 3):
        thread_counts(n)
        results.append(conv_step(conv.WideColumns, *arrays, stride=stride, padding=1))
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_array_equal(a, b)
