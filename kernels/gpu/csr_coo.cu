// CSR <-> COO index conversion for 2-D [rows, cols] and batched 3-D
// [batch, rows, cols] tensors.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// Batched crows hold batch * (rows + 1) entries and restart from 0 in every
// batch; cols (and COO nonzeros) run over all batches in order.

// How many of the ascending a[0], ..., a[n-1] are <= key.
template <typename T>
__device__ __forceinline__ i64 count_le(const T* a, i64 n, i64 key)
{
    i64 lo = 0;
    i64 hi = n;
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if ((i64)a[mid] <= key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Sort key of nonzero j of a C-sorted COO index block: batch * rows + row.
template <typename T>
__device__ __forceinline__ i64 coo_key(const T* idx, i64 nnz, i32 batched,
                                       i64 n_rows, i64 j)
{
    const i64 row = idx[batched * nnz + j];
    return batched ? (i64)idx[j] * n_rows + row : row;
}

// How many nonzeros have a sort key < key (the keys ascend).
template <typename T>
__device__ __forceinline__ i64 count_key_lt(const T* idx, i64 nnz,
                                            i32 batched, i64 n_rows, i64 key)
{
    i64 lo = 0;
    i64 hi = nnz;
    while (lo < hi) {
        const i64 mid = lo + (hi - lo) / 2;
        if (coo_key(idx, nnz, batched, n_rows, mid) < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// out: [2 + batched, nnz] COO indices ([batch,] row, col). batch_offsets
// [n_batch + 1] is the running nonzero count at the start of each batch.
#define CSR_COO_INDICES(NAME, TI)                                           \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ crows, const TI* __restrict__ cols,              \
    const i64* __restrict__ batch_offsets, TI* __restrict__ out, i64 nnz,   \
    i64 n_batch, i64 n_rows, i32 batched)                                   \
{                                                                           \
    GRID_STRIDE_LOOP(j, nnz) {                                              \
        const i64 b = count_le(batch_offsets + 1, n_batch, j);              \
        const i64 k = j - batch_offsets[b];                                 \
        const i64 r = count_le(crows + b * (n_rows + 1) + 1, n_rows, k);    \
        if (batched) {                                                      \
            out[j] = (TI)b;                                                 \
        }                                                                   \
        out[batched * nnz + j] = (TI)r;                                     \
        out[(batched + 1) * nnz + j] = cols[j];                             \
    }                                                                       \
}

// crows[b * (n_rows + 1) + r] = nonzeros of batch b in rows < r, for COO
// indices idx [2 + batched, nnz] sorted by (batch, row).
#define COO_CROWS(NAME, TI)                                                 \
extern "C" __global__ void NAME(                                            \
    const TI* __restrict__ idx, TI* __restrict__ crows, i64 nnz,            \
    i64 n_batch, i64 n_rows, i32 batched)                                   \
{                                                                           \
    GRID_STRIDE_LOOP(t, n_batch * (n_rows + 1)) {                           \
        const i64 b = t / (n_rows + 1);                                     \
        const i64 r = t % (n_rows + 1);                                     \
        const i64 first = count_key_lt(idx, nnz, batched, n_rows,           \
                                       b * n_rows);                         \
        const i64 end = count_key_lt(idx, nnz, batched, n_rows,             \
                                     b * n_rows + r);                       \
        crows[t] = (TI)(end - first);                                       \
    }                                                                       \
}

CSR_COO_INDICES(csr_coo_indices_i32, i32)
CSR_COO_INDICES(csr_coo_indices_i64, i64)
COO_CROWS(coo_crows_i32, i32)
COO_CROWS(coo_crows_i64, i64)
