// SpMM: out += A @ y for a CSR matrix A [M, K] (crows, cols, vals) and a
// row-major dense y [K, N], into a row-major out [M, N] of zeros.
//
// Loaded by cupy.RawModule (NVRTC) after kernels/gpu/preamble.cuh (i64, i32,
// GRID_STRIDE_LOOP, UNROLL4): no #include, extern "C" kernels only.
// The entries are cut into chunks of `chunk` consecutive entries, whatever
// rows they belong to (the nnz split of Merrill and Garland, "Merge-based
// Parallel Sparse Matrix-Vector Multiplication", SC 2016, without its merge
// path), so a row of a million entries is shared by many teams and no team
// waits on one long row.  A warp-sized team of 2^(cs + es) threads takes
// each chunk: 2^cs column lanes, so that consecutive threads read
// consecutive elements of a row of y, times 2^es entry lanes, each of which
// walks every 2^es-th entry of the chunk (the "CSR vector" split of Bell and
// Garland, SC 2009, for a narrow y, SpMV included).  A thread keeps up to
// COLS columns, 2^cs apart, in registers, sums each row's run of its entries
// in a tight loop, and writes the sums out at the run's end: by a plain
// store where it alone saw the whole row (one entry lane, the row inside the
// chunk), otherwise by atomicAdd, whose order can change the last bits from
// run to run.  Nothing needs sorted or unique column indices: a duplicate
// adds its product like any other entry.
// Complex values are interleaved (re, im) pairs of their real type, added
// by one atomic per component.

#define COLS 4

// The row holding entry e: the last r < rows with crows[r] <= e.
template <typename TI>
__device__ __forceinline__ i64 row_of(const TI* crows, i64 rows, i64 e)
{
    i64 lo = 0, hi = rows - 1;
    while (lo < hi) {
        const i64 mid = (lo + hi + 1) >> 1;
        if ((i64)crows[mid] <= e) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Adds (or, where this thread saw all of row r, stores) v at p.
template <typename T>
__device__ __forceinline__ void flush(T* p, T v, bool alone)
{
    if (alone) {
        *p = v;
    } else {
        atomicAdd(p, v);
    }
}

#define SPMM_SIGNATURE(NAME, T, TI)                                         \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ crows, const TI* __restrict__ cols,              \
    const T* __restrict__ vals, const T* __restrict__ y,                    \
    T* __restrict__ out, i64 rows, i64 nnz, i64 n, i64 chunk, i32 cs,       \
    i32 es)

// Thread i's chunk [first, last), first entry e0 and entry step, first
// column c0 and column step cstep.
#define SPMM_LANES                                                          \
    const i64 lanes = (i64)1 << (cs + es);                                  \
    const i64 first = (i / lanes) * chunk;                                  \
    const i64 last = first + chunk < nnz ? first + chunk : nnz;             \
    const i64 e0 = first + ((i >> cs) & (((i64)1 << es) - 1));              \
    const i64 step = (i64)1 << es;                                          \
    const i64 cstep = (i64)1 << cs;                                         \
    const i64 c0 = i & (cstep - 1)

// Walks this thread's entries for the columns c + j * cstep, j < nc, one
// row's run of them at a time in a tight loop: ACC(e) accumulates entry e,
// FLUSH(r, alone) writes row r out, RESET zeroes the sums (all written in
// terms of value_t, the kernel's T: a macro argument's expansion does not
// see the enclosing macro's parameters).
#define SPMM_WALK(ACC, FLUSH, RESET)                                        \
    for (i64 c = c0; c < n && e0 < last; c += COLS * cstep) {               \
        const i64 left = (n - c + cstep - 1) / cstep;                       \
        const int nc = left < COLS ? (int)left : COLS;                      \
        i64 r = row_of(crows, rows, e0);                                    \
        i64 e = e0;                                                         \
        while (e < last) {                                                  \
            const i64 row_end = crows[r + 1];                               \
            const i64 stop = row_end < last ? row_end : last;               \
            RESET;                                                          \
            UNROLL4                                                         \
            for (; e < stop; e += step) {                                   \
                ACC(e);                                                     \
            }                                                               \
            FLUSH(r, es == 0 && crows[r] >= first && row_end <= last);      \
            while (e < last && (i64)crows[r + 1] <= e) {                    \
                ++r;                                                        \
            }                                                               \
        }                                                                   \
    }

#define REAL_RESET                                                          \
    for (int j = 0; j < COLS; ++j) {                                        \
        acc[j] = 0;                                                         \
    }
#define REAL_ACC(e)                                                         \
    {                                                                       \
        const value_t v = vals[e];                                          \
        const value_t* b = y + (i64)cols[e] * n + c;                        \
        for (int j = 0; j < COLS; ++j) {                                    \
            if (j < nc) {                                                   \
                acc[j] += v * b[j * cstep];                                 \
            }                                                               \
        }                                                                   \
    }
#define REAL_FLUSH(r, alone)                                                \
    for (int j = 0; j < nc; ++j) {                                          \
        flush(out + (r) * n + c + j * cstep, acc[j], alone);                \
    }

#define SPMM_REAL(NAME, T, TI)                                              \
SPMM_SIGNATURE(NAME, T, TI)                                                 \
{                                                                           \
    GRID_STRIDE_LOOP(i, (nnz + chunk - 1) / chunk << (cs + es)) {           \
        typedef T value_t;                                                  \
        SPMM_LANES;                                                         \
        T acc[COLS];                                                        \
        SPMM_WALK(REAL_ACC, REAL_FLUSH, REAL_RESET)                         \
    }                                                                       \
}

#define COMPLEX_RESET                                                       \
    for (int j = 0; j < COLS; ++j) {                                        \
        re[j] = 0;                                                          \
        im[j] = 0;                                                          \
    }
#define COMPLEX_ACC(e)                                                      \
    {                                                                       \
        const value_t vr = vals[2 * e];                                     \
        const value_t vi = vals[2 * e + 1];                                 \
        const value_t* b = y + 2 * ((i64)cols[e] * n + c);                  \
        for (int j = 0; j < COLS; ++j) {                                    \
            if (j < nc) {                                                   \
                const value_t br = b[2 * j * cstep];                        \
                const value_t bi = b[2 * j * cstep + 1];                    \
                re[j] += vr * br - vi * bi;                                 \
                im[j] += vr * bi + vi * br;                                 \
            }                                                               \
        }                                                                   \
    }
#define COMPLEX_FLUSH(r, alone)                                             \
    for (int j = 0; j < nc; ++j) {                                          \
        value_t* o = out + 2 * ((r) * n + c + j * cstep);                   \
        flush(o, re[j], alone);                                             \
        flush(o + 1, im[j], alone);                                         \
    }

#define SPMM_COMPLEX(NAME, T, TI)                                           \
SPMM_SIGNATURE(NAME, T, TI)                                                 \
{                                                                           \
    GRID_STRIDE_LOOP(i, (nnz + chunk - 1) / chunk << (cs + es)) {           \
        typedef T value_t;                                                  \
        SPMM_LANES;                                                         \
        T re[COLS];                                                         \
        T im[COLS];                                                         \
        SPMM_WALK(COMPLEX_ACC, COMPLEX_FLUSH, COMPLEX_RESET)                 \
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
