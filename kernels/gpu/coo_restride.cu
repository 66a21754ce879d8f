// COO restride: the new coordinates of every nonzero after a reshape.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// indices are row-major [ndim, nnz] blocks. The host strips the dims that
// old and new shape share at the front (n_lead) and at the back (n_trail);
// those rows are copied. The middle rows go through a 64-bit flat offset:
// flat = sum(coord_d * old_strides[d]), then divmod by the new middle dims
// from the back, each by div_u64's multiply and shifts (new_divisors holds
// the triples of all but the first); what is left for the first dim is its
// coordinate, since flat < the product of the new middle dims. The flat offset is 64-bit
// even for int32 coordinates.

#define COO_RESTRIDE(NAME, TI, TO)                                          \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ in, TO* __restrict__ out, i64 nnz,               \
    i32 ndim_in, i32 ndim_out, i32 n_lead, i32 n_trail,                     \
    const i64* __restrict__ old_strides,                                    \
    const i64* __restrict__ new_divisors)                                   \
{                                                                           \
    const i32 mid_in = ndim_in - n_lead - n_trail;                          \
    const i32 mid_out = ndim_out - n_lead - n_trail;                        \
    GRID_STRIDE_LOOP(j, nnz) {                                              \
        for (i32 d = 0; d < n_lead; ++d) {                                  \
            out[d * nnz + j] = (TO)in[d * nnz + j];                         \
        }                                                                   \
        for (i32 d = 0; d < n_trail; ++d) {                                 \
            out[(ndim_out - n_trail + d) * nnz + j] =                       \
                (TO)in[(ndim_in - n_trail + d) * nnz + j];                  \
        }                                                                   \
        i64 flat = 0;                                                       \
        for (i32 d = 0; d < mid_in; ++d) {                                  \
            flat += (i64)in[(n_lead + d) * nnz + j] * old_strides[d];       \
        }                                                                   \
        for (i32 d = mid_out - 1; d > 0; --d) {                             \
            const i64* div = new_divisors + 3 * (d - 1);                    \
            const i64 q = (i64)div_u64((u64)flat, div);                     \
            out[(n_lead + d) * nnz + j] = (TO)(flat - q * div[0]);          \
            flat = q;                                                       \
        }                                                                   \
        if (mid_out > 0) {                                                  \
            out[n_lead * nnz + j] = (TO)flat;                               \
        }                                                                   \
    }                                                                       \
}

COO_RESTRIDE(coo_restride_i32_i32, i32, i32)
COO_RESTRIDE(coo_restride_i32_i64, i32, i64)
COO_RESTRIDE(coo_restride_i64_i64, i64, i64)
