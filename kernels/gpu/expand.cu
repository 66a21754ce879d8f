// expand: broadcast a contiguous input to a larger contiguous output.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The stride-0 mapping of OneFlow's expand/repeat article, by rows: the
// launcher folds the output's trailing dims that x holds contiguously into
// one row of row_words words (as wide as the row's bytes and x's alignment
// allow), so the output is [n_rows, row_words] and row r, with outer
// coordinates c, copies the row at x + sum(c_d * outer_strides[d]); strides
// are 0 on broadcast and new leading dims.  A team of 2**team_shift
// consecutive threads copies one row, so a warp's stores are contiguous and
// the row's offset costs one set of divisions per team member, not per word.

#define EXPAND(NAME, T)                                                     \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ in, T* __restrict__ out, i64 n_rows,              \
    i64 row_words, i32 team_shift, i32 ndim,                                \
    const i64* __restrict__ outer_shape,                                    \
    const i64* __restrict__ outer_strides)                                  \
{                                                                           \
    const i64 team = (i64)1 << team_shift;                                  \
    GRID_STRIDE_LOOP(t, n_rows << team_shift) {                             \
        const i64 r = t >> team_shift;                                      \
        i64 rest = r;                                                       \
        i64 src = 0;                                                        \
        for (i32 d = ndim - 1; d >= 0; --d) {                               \
            const i64 size = outer_shape[d];                                \
            src += (rest % size) * outer_strides[d];                        \
            rest /= size;                                                   \
        }                                                                   \
        const T* row = in + src;                                            \
        T* dst = out + r * row_words;                                       \
        for (i64 j = t & (team - 1); j < row_words; j += team) {            \
            dst[j] = row[j];                                                \
        }                                                                   \
    }                                                                       \
}

EXPAND(expand_u8, u8)
EXPAND(expand_u16, u16)
EXPAND(expand_u32, u32)
EXPAND(expand_u64, u64)
