// Shared preamble of every kernels/gpu/*.cu file: the loader
// (kernels.gpu.read_source) puts it in front of each source, so the files
// themselves hold only their kernels.
//
// NVRTC has no standard headers, so nothing here or in a .cu file may
// #include. Every kernel loops grid-stride with a 64-bit index, so any
// launch geometry covers any number of items.

typedef long long i64;
typedef int i32;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define GRID_STRIDE_LOOP(i, n)                                              \
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < (n);       \
         i += (i64)blockDim.x * gridDim.x)

// Unroll the next loop four times, so a thread has four loads in flight
// (NVRTC only: the CPU emulator's compiler knows no such pragma).
#ifdef __CUDACC_RTC__
#define UNROLL4 _Pragma("unroll 4")
#else
#define UNROLL4
#endif

// n / d for an invariant divisor d >= 1 and any 64-bit n, by one high
// multiply and two shifts (Granlund and Montgomery, "Division by Invariant
// Integers using Multiplication", PLDI 1994, figure 4.1), where a plain
// 64-bit divide is a long software routine on the GPU.  div is the triple
// {d, m, sh1 + 256 * sh2} that kernels.gpu.launch.divisors computes.
__device__ __forceinline__ u64 div_u64(u64 n, const i64* div)
{
    const u64 t = __umul64hi(n, (u64)div[1]);
    const i32 s = (i32)div[2];
    return (t + ((n - t) >> (s & 255))) >> (s >> 8);
}

// 16 bytes moved as one load and one store: rows whose bytes and address
// are multiples of 16 travel in these (the pointer parameters stay u64).
struct alignas(16) u128 {
    u64 lo, hi;
};

// A word of the given bits: the low 8 bytes (truncated to W), and for u128 the
// high 8 as well.
template <typename W>
__device__ __forceinline__ W make_word(u64 lo, u64 /* hi */)
{
    return (W)lo;
}

template <>
__device__ __forceinline__ u128 make_word<u128>(u64 lo, u64 hi)
{
    return u128{lo, hi};
}

// dst[j] = src[j] (or fill where src is null) for j = lane, lane + team, ...
// below n: one team member's share of a row, four loads issued before their
// stores so that each thread keeps four in flight.
template <typename W>
__device__ __forceinline__ void copy_row(
    W* dst, const W* src, i64 lane, i64 team, i64 n, const W fill = W{})
{
    i64 j = lane;
    if (src == nullptr) {
        for (; j < n; j += team) {
            dst[j] = fill;
        }
        return;
    }
    for (; j + 3 * team < n; j += 4 * team) {
        const W a = src[j], b = src[j + team];
        const W c = src[j + 2 * team], d = src[j + 3 * team];
        dst[j] = a;
        dst[j + team] = b;
        dst[j + 2 * team] = c;
        dst[j + 3 * team] = d;
    }
    for (; j < n; j += team) {
        dst[j] = src[j];
    }
}
