// DAC's fused CUDA kernels: eq. (4), eq. (7) and their conv analogues, one kernel per
// equation. tinyunits/units/dac.py states the equations and is the readable NumPy
// reference; dac_cuda.py compiles this file once per (dtype, activation) with
//     -Dscalar_t=float|double  -DPHI=PHI_RELU|PHI_LEAKY_RELU|PHI_TANH|PHI_GELU
//     -DLEAKY_SLOPE=...  -DGELU_SATURATED=...  -DTILE=...
// and launches the kernels. Sizes are ints: arrays of 2^31 elements or more take the
// drop-ins' array code (dac_cuda.py's `handles`).
//
// The dense kernels are plain TILE x TILE tilings: a block computes a TILE x TILE tile of
// its output and walks the sum in TILE-wide slices of its operands staged in shared
// memory, so each value is read from global memory once per block, not once per thread.
// Unlike a matrix product, every term of every sum applies phi or phi' to its own
// B[i,j] + x[b,j]: that is DAC's cost, and why the kernels are fused (the composed
// formula writes the (batch, out, in) tensor of activations to memory and reads it back).

#define PHI_RELU 0
#define PHI_LEAKY_RELU 1
#define PHI_TANH 2
#define PHI_GELU 3

// phi and phi', as in tinyunits/ops/elementwise.py (GELU: the tanh approximation).

#if PHI == PHI_GELU
// z clipped to [-GELU_SATURATED, GELU_SATURATED] (ops' GELU.SATURATED), as ops.gelu does:
// past it tanh is +-1 exactly in float and double, so nothing changes, but z^3 and phi''s
// z * z stay finite (unclipped, a large |z| gave phi' inf * 0 = NaN)
__device__ scalar_t gelu_saturated(scalar_t z)
{
    const scalar_t bound = scalar_t(GELU_SATURATED);
    return z > bound ? bound : (z < -bound ? -bound : z);
}
#endif

__device__ scalar_t phi(scalar_t z)
{
#if PHI == PHI_RELU
    return z > 0 ? z : scalar_t(0);
#elif PHI == PHI_LEAKY_RELU
    return z > 0 ? z : scalar_t(LEAKY_SLOPE) * z;
#elif PHI == PHI_TANH
    return tanh(z);
#elif PHI == PHI_GELU
    const scalar_t c = scalar_t(0.7978845608028654);  // sqrt(2 / pi)
    const scalar_t s = gelu_saturated(z);
    return scalar_t(0.5) * z * (1 + tanh(c * (s + scalar_t(0.044715) * s * s * s)));
#endif
}

__device__ scalar_t dphi(scalar_t z)
{
#if PHI == PHI_RELU
    return z > 0 ? scalar_t(1) : scalar_t(0);
#elif PHI == PHI_LEAKY_RELU
    return z > 0 ? scalar_t(1) : scalar_t(LEAKY_SLOPE);
#elif PHI == PHI_TANH
    const scalar_t t = tanh(z);
    return 1 - t * t;
#elif PHI == PHI_GELU
    const scalar_t c = scalar_t(0.7978845608028654);
    const scalar_t s = gelu_saturated(z);  // where z was clipped, 1 - t * t is 0
    const scalar_t t = tanh(c * (s + scalar_t(0.044715) * s * s * s));
    return scalar_t(0.5) * (1 + t)
         + scalar_t(0.5) * s * (1 - t * t) * c * (1 + 3 * scalar_t(0.044715) * s * s);
#endif
}

// --------------------------------------------------------------------------- dense
// x: (batch, n_in), W and B: (n_out, n_in), y and g: (batch, n_out), all row-major.

// eq. (4): y[b,i] = sum_j W[i,j] * phi(B[i,j] + x[b,j])
// Block: the tile of y with b = blockIdx.y*TILE + threadIdx.y, i = blockIdx.x*TILE + threadIdx.x.
extern "C" __global__ void dac_linear_forward(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, scalar_t* y,
    int batch, int n_in, int n_out)
{
    __shared__ scalar_t xs[TILE][TILE];      // xs[b][j]
    __shared__ scalar_t Ws[TILE][TILE + 1];  // Ws[i][j]; the +1 keeps the threads of a warp,
    __shared__ scalar_t Bs[TILE][TILE + 1];  // which read different rows i, off one memory bank
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int b = blockIdx.y * TILE + ty, i = blockIdx.x * TILE + tx;
    const int i_staged = blockIdx.x * TILE + ty;  // the row of W and B this thread stages
    scalar_t sum = 0;
    for (int j0 = 0; j0 < n_in; j0 += TILE) {
        const int j = j0 + tx;
        // zeros outside the arrays: a term with W = 0 adds nothing
        xs[ty][tx] = (b < batch && j < n_in) ? x[b * n_in + j] : scalar_t(0);
        Ws[ty][tx] = (i_staged < n_out && j < n_in) ? W[i_staged * n_in + j] : scalar_t(0);
        Bs[ty][tx] = (i_staged < n_out && j < n_in) ? B[i_staged * n_in + j] : scalar_t(0);
        __syncthreads();
        for (int jj = 0; jj < TILE; ++jj)
            sum += Ws[tx][jj] * phi(Bs[tx][jj] + xs[ty][jj]);
        __syncthreads();
    }
    if (b < batch && i < n_out)
        y[b * n_out + i] = sum;
}

// eq. (7), dW and dB together (both sum over b the same z = B[i,j] + x[b,j]):
//     dW[i,j] = sum_b phi(B[i,j] + x[b,j]) * g[b,i]
//     dB[i,j] = W[i,j] * sum_b phi'(B[i,j] + x[b,j]) * g[b,i]
// Block: the tile with i = blockIdx.y*TILE + threadIdx.y, j = blockIdx.x*TILE + threadIdx.x.
extern "C" __global__ void dac_linear_backward_WB(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, const scalar_t* g,
    scalar_t* dW, scalar_t* dB, int batch, int n_in, int n_out)
{
    __shared__ scalar_t xs[TILE][TILE];  // xs[b][j]
    __shared__ scalar_t gs[TILE][TILE];  // gs[b][i]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * TILE + ty, j = blockIdx.x * TILE + tx;
    const int i_staged = blockIdx.y * TILE + tx;  // the column of g this thread stages
    const bool mine = i < n_out && j < n_in;
    const scalar_t Bij = mine ? B[i * n_in + j] : scalar_t(0);
    scalar_t sum_W = 0, sum_B = 0;
    for (int b0 = 0; b0 < batch; b0 += TILE) {
        const int b = b0 + ty;
        // zeros outside the arrays: a term with g = 0 adds nothing
        xs[ty][tx] = (b < batch && j < n_in) ? x[b * n_in + j] : scalar_t(0);
        gs[ty][tx] = (b < batch && i_staged < n_out) ? g[b * n_out + i_staged] : scalar_t(0);
        __syncthreads();
        for (int bb = 0; bb < TILE; ++bb) {
            const scalar_t z = Bij + xs[bb][tx];
            sum_W += phi(z) * gs[bb][ty];
            sum_B += dphi(z) * gs[bb][ty];
        }
        __syncthreads();
    }
    if (mine) {
        dW[i * n_in + j] = sum_W;
        dB[i * n_in + j] = W[i * n_in + j] * sum_B;
    }
}

// eq. (7): dx[b,j] = sum_i W[i,j] * phi'(B[i,j] + x[b,j]) * g[b,i]   (granular masking)
// Block: the tile with b = blockIdx.y*TILE + threadIdx.y, j = blockIdx.x*TILE + threadIdx.x.
extern "C" __global__ void dac_linear_backward_x(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, const scalar_t* g,
    scalar_t* dx, int batch, int n_in, int n_out)
{
    __shared__ scalar_t Ws[TILE][TILE];  // Ws[i][j]
    __shared__ scalar_t Bs[TILE][TILE];  // Bs[i][j]
    __shared__ scalar_t gs[TILE][TILE];  // gs[b][i]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int b = blockIdx.y * TILE + ty, j = blockIdx.x * TILE + tx;
    const bool mine = b < batch && j < n_in;
    const scalar_t xbj = mine ? x[b * n_in + j] : scalar_t(0);
    scalar_t sum = 0;
    for (int i0 = 0; i0 < n_out; i0 += TILE) {
        const int i = i0 + ty;
        // zeros outside the arrays: a term with W = 0 or g = 0 adds nothing
        Ws[ty][tx] = (i < n_out && j < n_in) ? W[i * n_in + j] : scalar_t(0);
        Bs[ty][tx] = (i < n_out && j < n_in) ? B[i * n_in + j] : scalar_t(0);
        gs[ty][tx] = (b < batch && i0 + tx < n_out) ? g[b * n_out + i0 + tx] : scalar_t(0);
        __syncthreads();
        for (int ii = 0; ii < TILE; ++ii)
            sum += Ws[ii][tx] * dphi(Bs[ii][tx] + xbj) * gs[ty][ii];
        __syncthreads();
    }
    if (mine)
        dx[b * n_in + j] = sum;
}

// --------------------------------------------------------------------------- conv
// x: (batch, n_in, H, Wd), W: (n_out, n_in, k, k), B: (n_out, n_in), y and g:
// (batch, n_out, Ho, Wo). The conv is the dense layer with rows "output position"
// pos = (b, h, w) and the sum over r = (j, p, q) of W viewed as (n_out, n_in*k*k):
// tap r of position pos reads the zero-padded activated map A[b,i,j] of eq. (5) at
// (h*stride + p, w*stride + q), with phi(B[i,j] + x[b,j,...]) inside and 0 in the pad.

// x under tap r of output position pos; false (and 0) where the tap is in the padding.
__device__ bool conv_input(const scalar_t* x, int r, int pos, scalar_t* value,
                           int batch, int n_in, int H, int Wd, int k, int stride,
                           int pad, int Ho, int Wo)
{
    *value = 0;
    if (r >= n_in * k * k || pos >= batch * Ho * Wo)
        return false;
    const int j = r / (k * k), p = r / k % k, q = r % k;
    const int b = pos / (Ho * Wo), h = pos / Wo % Ho, w = pos % Wo;
    const int row = h * stride + p - pad, col = w * stride + q - pad;
    if (row < 0 || row >= H || col < 0 || col >= Wd)
        return false;
    *value = x[((b * n_in + j) * H + row) * Wd + col];
    return true;
}

// eq. (5): y[b,i,h,w] = sum_{j,p,q} W[i,j,p,q] * A[b,i,j, h*s+p, w*s+q]
// Block: the tile with i = blockIdx.y*TILE + threadIdx.y, pos = blockIdx.x*TILE + threadIdx.x.
extern "C" __global__ void dac_conv_forward(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, scalar_t* y,
    int batch, int n_in, int H, int Wd, int n_out, int k, int stride, int pad, int Ho, int Wo)
{
    __shared__ scalar_t Ws[TILE][TILE];      // Ws[i][r]
    __shared__ scalar_t Bs[TILE][TILE];      // Bs[i][r] = B[i, j of r]
    __shared__ scalar_t xs[TILE][TILE];      // xs[r][pos]
    __shared__ scalar_t inside[TILE][TILE];  // inside[r][pos]: 0 in the padding, where A = 0
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * TILE + ty, pos = blockIdx.x * TILE + tx;
    const int R = n_in * k * k;
    scalar_t sum = 0;
    for (int r0 = 0; r0 < R; r0 += TILE) {
        const int r = r0 + tx;
        Ws[ty][tx] = (i < n_out && r < R) ? W[i * R + r] : scalar_t(0);
        Bs[ty][tx] = (i < n_out && r < R) ? B[i * n_in + r / (k * k)] : scalar_t(0);
        scalar_t value;
        inside[ty][tx] = conv_input(x, r0 + ty, pos, &value, batch, n_in, H, Wd, k, stride,
                                    pad, Ho, Wo);
        xs[ty][tx] = value;
        __syncthreads();
        for (int rr = 0; rr < TILE; ++rr)
            sum += Ws[ty][rr] * phi(Bs[ty][rr] + xs[rr][tx]) * inside[rr][tx];
        __syncthreads();
    }
    if (i < n_out && pos < batch * Ho * Wo)
        y[(pos / (Ho * Wo) * n_out + i) * Ho * Wo + pos % (Ho * Wo)] = sum;
}

// The conv analogue of eq. (7) for dW and dB, together:
//     dW[i,j,p,q] = sum_{b,h,w} g[b,i,h,w] * A[b,i,j, h*s+p, w*s+q]
//     dB_taps[i,j,p,q] = W[i,j,p,q] * sum_{b,h,w} g[b,i,h,w] * phi'(B[i,j] + x[b,j, h*s+p-pad, w*s+q-pad])
// with the terms in the padding left out; dB[i,j] = sum_{p,q} dB_taps[i,j,p,q] (dac_cuda.py).
// Block: the tile with i = blockIdx.y*TILE + threadIdx.y, r = blockIdx.x*TILE + threadIdx.x.
extern "C" __global__ void dac_conv_backward_WB(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, const scalar_t* g,
    scalar_t* dW, scalar_t* dB_taps,
    int batch, int n_in, int H, int Wd, int n_out, int k, int stride, int pad, int Ho, int Wo)
{
    __shared__ scalar_t gs[TILE][TILE];      // gs[i][pos]
    __shared__ scalar_t xs[TILE][TILE];      // xs[pos][r]
    __shared__ scalar_t inside[TILE][TILE];  // inside[pos][r]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * TILE + ty, r = blockIdx.x * TILE + tx;
    const int R = n_in * k * k, P = batch * Ho * Wo;
    const bool mine = i < n_out && r < R;
    const scalar_t Bir = mine ? B[i * n_in + r / (k * k)] : scalar_t(0);
    scalar_t sum_W = 0, sum_B = 0;
    for (int pos0 = 0; pos0 < P; pos0 += TILE) {
        const int pos = pos0 + tx;
        gs[ty][tx] = (i < n_out && pos < P)
                   ? g[(pos / (Ho * Wo) * n_out + i) * Ho * Wo + pos % (Ho * Wo)] : scalar_t(0);
        scalar_t value;
        inside[ty][tx] = conv_input(x, r, pos0 + ty, &value, batch, n_in, H, Wd, k, stride,
                                    pad, Ho, Wo);
        xs[ty][tx] = value;
        __syncthreads();
        for (int pp = 0; pp < TILE; ++pp) {
            const scalar_t z = Bir + xs[pp][tx];
            const scalar_t gi = gs[ty][pp] * inside[pp][tx];
            sum_W += phi(z) * gi;
            sum_B += dphi(z) * gi;
        }
        __syncthreads();
    }
    if (mine) {
        dW[i * R + r] = sum_W;
        dB_taps[i * R + r] = W[i * R + r] * sum_B;
    }
}

// The conv analogue of eq. (7) for dx: every output (h, w) whose tap (p, q) read
// x[b,j,row,col] (h*s + p = row + pad, w*s + q = col + pad) sends back W[i,j,p,q] g[b,i,h,w],
// masked by that connection's phi'(B[i,j] + x[b,j,row,col]):
//     dx[b,j,row,col] = sum_i phi'(B[i,j] + x[b,j,row,col]) * sum_{p,q} W[i,j,p,q] * g[b,i,h,w]
// One thread per element of x, a gather with no shared memory: the threads of a block share
// (b, j), so they read the same W[i,j] and neighbouring g, which the caches serve.
extern "C" __global__ void dac_conv_backward_x(
    const scalar_t* x, const scalar_t* W, const scalar_t* B, const scalar_t* g, scalar_t* dx,
    int batch, int n_in, int H, int Wd, int n_out, int k, int stride, int pad, int Ho, int Wo)
{
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= batch * n_in * H * Wd)
        return;  // this kernel has no __syncthreads, so threads past the end may leave
    const int b = e / (n_in * H * Wd), j = e / (H * Wd) % n_in, row = e / Wd % H, col = e % Wd;
    const scalar_t xe = x[e];
    scalar_t sum = 0;
    for (int i = 0; i < n_out; ++i) {
        scalar_t back = 0;  // sum_{p,q} W[i,j,p,q] * g[b,i,h,w]
        for (int p = 0; p < k; ++p) {
            const int hs = row + pad - p;  // = h * stride
            if (hs < 0 || hs % stride != 0 || hs / stride >= Ho)
                continue;
            for (int q = 0; q < k; ++q) {
                const int ws = col + pad - q;  // = w * stride
                if (ws < 0 || ws % stride != 0 || ws / stride >= Wo)
                    continue;
                back += W[((i * n_in + j) * k + p) * k + q]
                      * g[((b * n_out + i) * Ho + hs / stride) * Wo + ws / stride];
            }
        }
        sum += dphi(B[i * n_in + j] + xe) * back;
    }
    dx[e] = sum;
}
