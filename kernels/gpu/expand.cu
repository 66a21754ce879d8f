// expand: broadcast a contiguous input to a larger contiguous output.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The stride-0 mapping of OneFlow's expand/repeat article, by rows: the
// launcher folds the output's trailing dims that x holds contiguously into
// one row of row_words words W (as wide as the row's bytes and x's
// alignment allow; T is W's parameter type, u64 for 16-byte words), so the
// output is [n_rows, row_words] and row r, with outer coordinates c, copies
// the row at x + sum(c_d * outer_strides[d]); strides are 0 on broadcast
// and new leading dims.  A team of 2**team_shift consecutive threads copies
// one row, so a warp's stores are contiguous and the row's offset costs one
// set of divisions per team member, not per word; the divisions are
// div_u64's multiply and shifts by the outer dims' divisors.

#define EXPAND(NAME, T, W)                                                  \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ in, T* __restrict__ out, i64 n_rows,              \
    i64 row_words, i32 team_shift, i32 ndim,                                \
    const i64* __restrict__ outer_divisors,                                 \
    const i64* __restrict__ outer_strides)                                  \
{                                                                           \
    const W* words = (const W*)in;                                          \
    const i64 team = (i64)1 << team_shift;                                  \
    GRID_STRIDE_LOOP(t, n_rows << team_shift) {                             \
        const i64 r = t >> team_shift;                                      \
        u64 rest = (u64)r;                                                  \
        i64 src = 0;                                                        \
        for (i32 d = ndim - 1; d >= 0; --d) {                               \
            const u64 q = div_u64(rest, outer_divisors + 3 * d);            \
            src += (i64)(rest - q * (u64)outer_divisors[3 * d])             \
                   * outer_strides[d];                                      \
            rest = q;                                                       \
        }                                                                   \
        copy_row((W*)out + r * row_words, words + src, t & (team - 1),      \
                 team, row_words);                                          \
    }                                                                       \
}

EXPAND(expand_u8, u8, u8)
EXPAND(expand_u16, u16, u16)
EXPAND(expand_u32, u32, u32)
EXPAND(expand_u64, u64, u64)
EXPAND(expand_u128, u64, u128)
