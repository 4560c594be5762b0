"""DAC's drop-ins: the reference's equations (tinyunits.units.dac) over blocks of output
units, on threads, and as fused CUDA kernels on a GPU.

The reference holds the dense layer's (batch, out, in) tensor of activated inputs whole,
and walks the conv one output unit at a time. Here both passes walk over blocks of
output units (`_blocks`) of about `budget` elements (a CPU cache's worth,
cuda.block_elements: the dense layer counts its activated inputs, the conv every map its
block holds), and the backward recomputes phi and phi' per block; each block's z, A and
M are scratch buffers kept from step to step (tinyunits.fast.buffers). The blocks are
independent: on the CPU both layers run them on the threads the user set
(tinyunits.fast.threads), with BLAS on one thread inside each, and add each block's
share of dx in block order, so any thread count gives the same numbers (BLAS's own
threads, splitting each small product of a block, wait on each other more than they
compute). The conv's blocks lay their arrays out (out, in, batch, H, W), so that every
sum over the inputs j or the taps t is one batched matrix product.

On a GPU (CuPy arrays) neither pass runs this array code: both run as fused CUDA
kernels, one per equation (dac_cuda.cu, launched by dac_cuda.py).

The numbers are the reference's up to the order of the sums: a block's matrix
products sum over j (or over the batch) in another order than the reference's
einsum and tensordot.
"""
from __future__ import annotations

from ..backend import get_array_module
from ..ops.conv import conv_output_size, pad2d, unpad2d
from ..units import dac
from ..units.dac import phi
from . import buffers, dac_cuda, threads
from .cuda import block_elements


def _blocks(n_out: int, elements_per_unit: int, budget: int):
    """Slices over the output units, each covering about `budget` activated elements."""
    step = max(1, budget // max(1, elements_per_unit))
    return [slice(start, min(start + step, n_out)) for start in range(0, n_out, step)]


def _borrow_z(B, x, I):
    """z[i,b,j] = B[i,j] + x[b,j] for the block I of units, (c, b, in), in a buffer reused
    from block to block and step to step: a block is a few MB, made twice a step per
    block."""
    z = buffers.borrow(get_array_module(x), (len(range(B.shape[0])[I]),) + x.shape, x.dtype)
    return get_array_module(x).add(B[I, None, :], x, out=z)


def _give_back(fn, *arrays):
    """The block is done: its (c, b, in) arrays (z, and phi(z) and phi'(z) g, which phi's
    Function made for this block alone) and what that Function kept are free; the
    next block's z reuses them."""
    fn.release()
    for a in arrays:
        buffers.give_back(a)


# --------------------------------------------------------------------------- dense
class DACLinearFn(dac.DACLinearFn):
    fused = False  # True when dac_cuda's kernels ran the forward (on a GPU)

    def __init__(self, activation="relu", budget=None):
        super().__init__(activation)
        self.budget = budget or block_elements()

    def forward(self, x, W, B):
        self.x, self.W, self.B = x, W, B
        if dac_cuda.handles(x, W, B, out_shape=(x.shape[0], W.shape[0])):
            self.fused = True
            return dac_cuda.linear_forward(x, W, B, self.activation)
        xp = get_array_module(x)
        y = xp.empty((x.shape[0], W.shape[0]), dtype=x.dtype)

        def block(I):
            z = _borrow_z(B, x, I)
            A, fn = phi(self.activation, z)                           # (c, b, in): phi(B[i,j] + x[b,j])
            y[:, I] = (A @ W[I, :, None])[:, :, 0].T                   # eq. (4): sum_j W[i,j] * A
            _give_back(fn, z, A)
        with threads.blas_serial(like=x):
            threads.run(block, _blocks(W.shape[0], x.size, self.budget), like=x)
        return y

    def backward(self, g):
        x, W, B = self.x, self.W, self.B
        want = [self.needs_grad(i) for i in range(3)]  # a network's input needs no dx
        if self.fused:
            return dac_cuda.linear_backward(x, W, B, g, self.activation, want)
        xp = get_array_module(x)
        gW, gB = xp.empty_like(W), xp.empty_like(B)

        def block(I):
            """Writes gW[I] and gB[I]; returns gx, block I's share of dx (summed below,
            in block order, so that any number of threads gives the same numbers)."""
            gx = xp.zeros_like(x) if want[0] else None
            z = _borrow_z(B, x, I)
            A, fn = phi(self.activation, z)                           # recomputed per block
            gT = g[:, I].T                                            # (c, b)
            if want[1]:
                gW[I] = (gT[:, None, :] @ A)[:, 0]                        # dW: sum_b A * g
            M = fn.backward(gT[:, :, None])[0]                        # M: phi'(B[i,j] + x[b,j]) * g[b,i]
            if want[2]:
                gB[I] = W[I] * M.sum(axis=1)                              # dB: W * sum_b M
            if want[0]:
                gx += xp.einsum("cbj,cj->bj", M, W[I])                    # dx: sum_i W * M
            _give_back(fn, z, A, M)
            return gx
        gx = xp.zeros_like(x)
        with threads.blas_serial(like=x):
            for share in threads.map(block, _blocks(W.shape[0], x.size, self.budget), like=x):
                if want[0]:
                    gx += share
        return tuple(grad if wanted else None for grad, wanted in zip((gx, gW, gB), want))


# --------------------------------------------------------------------------- conv
class DACConv2dFn(dac.DACConv2dFn):
    fused = False  # True when dac_cuda's kernels ran the forward (on a GPU)

    def __init__(self, stride=1, padding=0, activation="relu", budget=None):
        super().__init__(stride, padding, activation)
        self.budget = budget or block_elements()

    def _cached(self, I):
        """A = zero-pad(phi(B[i,j] + x[b,j])) for the block I: (c, in, b, Hp, Wp), and phi's Function.

        phi runs over the whole padded input, where the border holds phi(B[i,j] + 0), and
        the border is then set to the zero padding of eq. (5): contiguous passes, a tenth
        of a DAC VGG step cheaper than zeroing z and adding into its strided inside. The
        backward reads phi' only inside the border."""
        z = get_array_module(self.B).add(self.B[I, :, None, None, None], self.xpad[None])
        A, fn = phi(self.activation, z)
        p = self.padding
        if p:
            A[..., :p, :] = A[..., -p:, :] = 0
            A[..., :p] = A[..., -p:] = 0
        return A, fn

    def _blocks(self):
        """Blocks of units whose arrays together stay within the budget: per unit the
        backward holds z, A, dA and M (in maps each) and G (k^2 maps), each (b, Hp, Wp).
        Counting one map array only let a block of lesson 1's small convs spill out of
        the cache, which made them slower than the reference's unit-at-a-time loop."""
        m, b, Hp, Wp = self.xpad.shape
        per_unit = (4 * m + self.k ** 2) * b * Hp * Wp
        return _blocks(self.n, per_unit, self.budget)

    def forward(self, x, W, B):
        self.x, self.W, self.B = x, W, B
        if dac_cuda.handles(x, W, B, out_shape=dac_cuda.conv_output_shape(x, W, self.stride,
                                                                          self.padding)):
            self.fused = True
            return dac_cuda.conv_forward(x, W, B, self.stride, self.padding, self.activation)
        xp = get_array_module(x)
        self.xpad = pad2d(xp.ascontiguousarray(x.transpose(1, 0, 2, 3)), self.padding)  # (in, b, Hp, Wp)
        self.n, self.k, self.Wt = W.shape[0], W.shape[2], W.reshape(W.shape[0], W.shape[1], -1)
        Ho, Wo = (conv_output_size(size, self.k, self.stride, self.padding) for size in x.shape[2:])
        y = xp.zeros((self.n, x.shape[0], Ho, Wo), dtype=x.dtype)

        def block(I):
            A, _ = self._cached(I)                                              # eq. (5), once per (i, j)
            U = self.Wt[I].transpose(0, 2, 1) @ A.reshape(A.shape[0], A.shape[1], -1)  # U[i,t] = sum_j W[i,j,t] A[i,j]
            U = U.reshape(A.shape[:1] + (self.k ** 2,) + A.shape[2:])
            for t, window in self.taps(Ho, Wo):
                y[I] += U[:, t][window]                                         # y[i,b,h,w] = sum_t U[i,t,b,h*s+p,w*s+q]
        with threads.blas_serial(like=x):
            threads.run(block, self._blocks(), like=x)
        return xp.ascontiguousarray(y.transpose(1, 0, 2, 3))

    def backward(self, g):
        if self.fused:
            return dac_cuda.conv_backward(self.x, self.W, self.B, g, self.stride, self.padding,
                                          self.activation, [self.needs_grad(i) for i in range(3)])
        xp = get_array_module(g)
        gt, Wt = g.transpose(1, 0, 2, 3), self.Wt                               # gt: (out, b, Ho, Wo)
        gxt = xp.zeros_like(unpad2d(self.xpad, self.padding))                   # (in, b, H, W)
        gW, gB = xp.empty_like(Wt), xp.empty_like(self.B)

        def block(I):
            """Writes gW[I] and gB[I]; returns block I's share of dx (summed below, in
            block order, so that any number of threads gives the same numbers)."""
            A, fn = self._cached(I)                                             # recomputed per block
            G = xp.zeros(A.shape[:1] + (self.k ** 2,) + A.shape[2:], dtype=g.dtype)
            for t, window in self.taps(*g.shape[2:]):
                G[:, t][window] = gt[I]                                         # g[i,b,h,w] where tap t read A
            A2, G2 = A.reshape(A.shape[0], A.shape[1], -1), G.reshape(G.shape[0], G.shape[1], -1)
            gW[I] = A2 @ G2.transpose(0, 2, 1)                                  # dW[i,j,t] = sum A[i,j] G[i,t]
            gA = (Wt[I] @ G2).reshape(A.shape)                                  # dA[i,j] = sum_t W[i,j,t] G[i,t]
            inner = (Ellipsis, slice(self.padding, A.shape[3] - self.padding),
                     slice(self.padding, A.shape[4] - self.padding))
            M = fn.backward(gA)[0][inner]                                       # dA * phi', without the pad
            gB[I] = M.sum(axis=(2, 3, 4))                                       # dB[i,j] = sum_{b,h,w}
            return M.sum(axis=0)                                                # dx[j] = sum_i
        with threads.blas_serial(like=g):
            for share in threads.map(block, self._blocks(), like=g):
                gxt += share
        return gxt.transpose(1, 0, 2, 3), gW.reshape(Wt.shape[:2] + (self.k, self.k)), gB
