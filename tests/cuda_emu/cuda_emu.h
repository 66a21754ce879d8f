// CPU emulation of the CUDA execution model, for testing kernels/gpu/*.cu.
//
// A generated wrapper includes this header, then the unmodified .cu file,
// then one emu_<kernel>() launcher per kernel that runs every block and
// thread through emu_launch(). What the kernels may use is what is here:
// the qualifiers (defined away), blockIdx/threadIdx/blockDim/gridDim as
// unsigned 32-bit fields as in CUDA, atomicAdd as a real atomic and the
// __umul64hi intrinsic.
// Blocks are spread over a few OS threads, so atomics do race. There is
// no __syncthreads or shared memory: threads of a block run one by one.
#pragma once

#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
};

static thread_local uint3 blockIdx;
static thread_local uint3 threadIdx;
static thread_local dim3 blockDim;
static thread_local dim3 gridDim;

template <typename T>
inline T emu_atomic_add(T* address, T value)
{
    return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}

// Floats have no fetch_add builtin: compare-and-swap until no one raced.
template <typename T>
inline T emu_atomic_add_float(T* address, T value)
{
    T old;
    __atomic_load(address, &old, __ATOMIC_RELAXED);
    T sum = old + value;
    while (!__atomic_compare_exchange(address, &old, &sum, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        sum = old + value;
    }
    return old;
}

inline int atomicAdd(int* a, int v) { return emu_atomic_add(a, v); }
inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { return emu_atomic_add(a, v); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v)
{
    return emu_atomic_add(a, v);
}
// The high 64 bits of a 64 x 64-bit product (a CUDA integer intrinsic).
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

inline float atomicAdd(float* a, float v) { return emu_atomic_add_float(a, v); }
inline double atomicAdd(double* a, double v) { return emu_atomic_add_float(a, v); }

// Runs kernel() once for every (block, thread) of a 1-D launch; worker w of
// `workers` OS threads takes blocks w, w + workers, ...
template <typename Kernel>
void emu_launch(unsigned grid, unsigned block, unsigned workers, Kernel kernel)
{
    if (workers > grid) {
        workers = grid;
    }
    auto run = [=](unsigned first) {
        gridDim = dim3{grid, 1, 1};
        blockDim = dim3{block, 1, 1};
        for (unsigned b = first; b < grid; b += workers) {
            blockIdx = uint3{b, 0, 0};
            for (unsigned t = 0; t < block; ++t) {
                threadIdx = uint3{t, 0, 0};
                kernel();
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) {
        pool.emplace_back(run, w);
    }
    run(0);
    for (auto& thread : pool) {
        thread.join();
    }
}
