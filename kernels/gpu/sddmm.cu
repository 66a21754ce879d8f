// SDDMM: the entries of a dense product x @ yt^T at given coordinates,
// out[e] = sum_j x[rows[e], j] * yt[cols[e], j], for x [M, K] and yt [N, K]
// row-major.
//
// Loaded by cupy.RawModule (NVRTC) after kernels/gpu/preamble.cuh (i64, i32,
// GRID_STRIDE_LOOP): no #include, extern "C" kernels only.
// One thread per entry sums its K products in order j = 0, 1, ..., with no
// atomics, so a result never depends on the launch geometry or the run.
// Complex values are interleaved (re, im) pairs of their real type.

#define SDDMM_SIGNATURE(NAME, T, TI)                                        \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ rows, const TI* __restrict__ cols,               \
    const T* __restrict__ x, const T* __restrict__ yt, T* __restrict__ out, \
    i64 nnz, i64 k)

#define SDDMM_REAL(NAME, T, TI)                                             \
SDDMM_SIGNATURE(NAME, T, TI)                                                \
{                                                                           \
    GRID_STRIDE_LOOP(e, nnz) {                                              \
        const T* a = x + (i64)rows[e] * k;                                  \
        const T* b = yt + (i64)cols[e] * k;                                 \
        T acc = 0;                                                          \
        for (i64 j = 0; j < k; ++j) {                                       \
            acc += a[j] * b[j];                                             \
        }                                                                   \
        out[e] = acc;                                                       \
    }                                                                       \
}

#define SDDMM_COMPLEX(NAME, T, TI)                                          \
SDDMM_SIGNATURE(NAME, T, TI)                                                \
{                                                                           \
    GRID_STRIDE_LOOP(e, nnz) {                                              \
        const T* a = x + 2 * (i64)rows[e] * k;                              \
        const T* b = yt + 2 * (i64)cols[e] * k;                             \
        T re = 0;                                                           \
        T im = 0;                                                           \
        for (i64 j = 0; j < k; ++j) {                                       \
            re += a[2 * j] * b[2 * j] - a[2 * j + 1] * b[2 * j + 1];        \
            im += a[2 * j] * b[2 * j + 1] + a[2 * j + 1] * b[2 * j];        \
        }                                                                   \
        out[2 * e] = re;                                                    \
        out[2 * e + 1] = im;                                                \
    }                                                                       \
}

SDDMM_REAL(sddmm_f32_i32, float, i32)
SDDMM_REAL(sddmm_f32_i64, float, i64)
SDDMM_REAL(sddmm_f64_i32, double, i32)
SDDMM_REAL(sddmm_f64_i64, double, i64)
SDDMM_COMPLEX(sddmm_c64_i32, float, i32)
SDDMM_COMPLEX(sddmm_c64_i64, float, i64)
SDDMM_COMPLEX(sddmm_c128_i32, double, i32)
SDDMM_COMPLEX(sddmm_c128_i64, double, i64)
