// SpMM: out = A @ y for a CSR matrix A [M, K] (crows, cols, vals) and a
// row-major dense y [K, N], into a row-major out [M, N] of zeros.
//
// Loaded by cupy.RawModule (NVRTC) after kernels/gpu/preamble.cuh (i64, i32,
// GRID_STRIDE_LOOP, UNROLL4): no #include, extern "C" kernels only.
// A warp-sized team of 2^(cs + es) threads takes each row (the "CSR vector"
// kernel of Bell and Garland, "Implementing Sparse Matrix-Vector
// Multiplication on Throughput-Oriented Processors", SC 2009, widened to
// N columns): 2^cs column lanes, so that consecutive threads read
// consecutive elements of a row of y, times 2^es entry lanes, each of which
// sums every 2^es-th entry of the row.  With one entry lane (N >= 32) a
// thread's sum is the whole dot product, stored in entry order, so the
// result is the same on every run; with more (narrow y, SpMV) the lanes'
// partial sums meet by atomicAdd, in an order that can change the last
// bits from run to run.  Nothing needs sorted or unique column indices:
// a duplicate adds its product like any other entry.
// Complex values are interleaved (re, im) pairs of their real type, added
// by one atomic per component.

#define SPMM_SIGNATURE(NAME, T, TI)                                         \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ crows, const TI* __restrict__ cols,              \
    const T* __restrict__ vals, const T* __restrict__ y,                    \
    T* __restrict__ out, i64 rows, i64 n, i32 cs, i32 es)

// The row r, first column c0 and first entry e0 of team thread i.
#define SPMM_LANES                                                          \
    const i64 r = i >> (cs + es);                                           \
    const i64 c0 = i & ((1 << cs) - 1);                                     \
    const i64 e0 = crows[r] + ((i >> cs) & ((1 << es) - 1));                \
    const i64 end = crows[r + 1];                                           \
    const i64 step = (i64)1 << es

#define SPMM_REAL(NAME, T, TI)                                              \
SPMM_SIGNATURE(NAME, T, TI)                                                 \
{                                                                           \
    GRID_STRIDE_LOOP(i, rows << (cs + es)) {                                \
        SPMM_LANES;                                                         \
        for (i64 c = c0; c < n; c += (i64)1 << cs) {                        \
            T acc = 0;                                                      \
            UNROLL4                                                         \
            for (i64 e = e0; e < end; e += step) {                          \
                acc += vals[e] * y[(i64)cols[e] * n + c];                   \
            }                                                               \
            if (es == 0) {                                                  \
                out[r * n + c] = acc;                                       \
            } else {                                                        \
                atomicAdd(out + r * n + c, acc);                            \
            }                                                               \
        }                                                                   \
    }                                                                       \
}

#define SPMM_COMPLEX(NAME, T, TI)                                           \
SPMM_SIGNATURE(NAME, T, TI)                                                 \
{                                                                           \
    GRID_STRIDE_LOOP(i, rows << (cs + es)) {                                \
        SPMM_LANES;                                                         \
        for (i64 c = c0; c < n; c += (i64)1 << cs) {                        \
            T re = 0;                                                       \
            T im = 0;                                                       \
            UNROLL4                                                         \
            for (i64 e = e0; e < end; e += step) {                          \
                const T* b = y + 2 * ((i64)cols[e] * n + c);                \
                re += vals[2 * e] * b[0] - vals[2 * e + 1] * b[1];          \
                im += vals[2 * e] * b[1] + vals[2 * e + 1] * b[0];          \
            }                                                               \
            T* o = out + 2 * (r * n + c);                                   \
            if (es == 0) {                                                  \
                o[0] = re;                                                  \
                o[1] = im;                                                  \
            } else {                                                        \
                atomicAdd(o, re);                                           \
                atomicAdd(o + 1, im);                                       \
            }                                                               \
        }                                                                   \
    }                                                                       \
}

SPMM_REAL(spmm_f32_i32, float, i32)
SPMM_REAL(spmm_f32_i64, float, i64)
SPMM_REAL(spmm_f64_i32, double, i32)
SPMM_REAL(spmm_f64_i64, double, i64)
SPMM_COMPLEX(spmm_c64_i32, float, i32)
SPMM_COMPLEX(spmm_c64_i64, float, i64)
SPMM_COMPLEX(spmm_c128_i32, double, i32)
SPMM_COMPLEX(spmm_c128_i64, double, i64)
