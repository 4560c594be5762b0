// CUDA's C++ on the CPU, just enough to compile a kernel file with g++ and run its
// kernels (tests/cuda_emulator.py): every CUDA thread of a block is a CPU thread of its
// own, __syncthreads is a barrier across them, the blocks run one after another, and
// __shared__ memory is one static array per kernel, which the block running uses.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>  // its barrier, not C++20's <barrier>: that header doubles g++'s time here
#include <vector>

using std::tanh;

#define __global__
#define __device__ inline
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
};

thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
pthread_barrier_t block_barrier;

inline void __syncthreads() { pthread_barrier_wait(&block_barrier); }

// Runs body() (a kernel call with its arguments) as a launch of `grid` blocks of
// `block` threads. After each block its threads meet once more, so that none starts the
// next block while another still reads this block's shared memory.
template <typename Body>
void emulate(dim3 grid, dim3 block, Body body)
{
    struct Thread {
        Body* body;
        dim3 index, grid;
        pthread_t handle;
    };
    const unsigned n = block.x * block.y * block.z;
    gridDim = grid;
    blockDim = block;
    pthread_barrier_init(&block_barrier, nullptr, n);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    std::vector<Thread> threads(n);
    for (unsigned t = 0; t < n; ++t) {
        threads[t] = {&body, {t % block.x, t / block.x % block.y, t / (block.x * block.y)}, grid, {}};
        auto run = [](void* arg) -> void* {
            const Thread* me = static_cast<Thread*>(arg);
            threadIdx = me->index;
            for (unsigned z = 0; z < me->grid.z; ++z)
                for (unsigned y = 0; y < me->grid.y; ++y)
                    for (unsigned x = 0; x < me->grid.x; ++x) {
                        blockIdx = {x, y, z};
                        (*me->body)();
                        __syncthreads();
                    }
            return nullptr;
        };
        if (pthread_create(&threads[t].handle, &attr, run, &threads[t]) != 0) {
            std::fprintf(stderr, "cuda_shim: could not start thread %u of %u\n", t, n);
            std::abort();
        }
    }
    for (Thread& t : threads)
        pthread_join(t.handle, nullptr);
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&block_barrier);
}
