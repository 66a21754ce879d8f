// gather / batch_gather and their scatter-add gradients.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The Gather primitive of OneFlow's gather-primitive article, by rows: x is
// viewed as [batch, outer, local_size, row_words], index as [batch, n_index],
// out as [batch, outer, n_index, row_words]; output row r = (b, o, p) is x's
// row (b, o, index[b, p] - offset).  The host has checked and wrapped the
// index into [0, gather size); x holds the slice [offset, offset +
// local_size) of the gathered axis, and an index outside it gives a row of
// fill words (forward: the dtype's additive identity, -0.0 for floats, as
// the host packs it) or contributes nothing (gradient), as a split gather
// axis needs.
// A team of 2**team_shift consecutive threads moves one row, so a row's
// source costs one index load and one set of divisions (div_u64's multiply
// and shifts) per team member.  Forward kernels move raw words W (u8..u128,
// as wide as a row allows; T is W's parameter type, u64 for u128).

// x's row for output row r, or -1 when its index falls outside the local slice.
// divs holds div_u64's triples for n_index, then outer.
template <typename TI>
__device__ __forceinline__ i64 gather_row(
    const TI* index, i64 r, const i64* divs, i64 local_size, i64 offset)
{
    const u64 rest = div_u64((u64)r, divs);
    const i64 p = r - (i64)rest * divs[0];
    const i64 b = (i64)div_u64(rest, divs + 3);
    const i64 g = (i64)index[b * divs[0] + p] - offset;
    if (g < 0 || g >= local_size) {
        return -1;
    }
    return (i64)rest * local_size + g;
}

#define GATHER(NAME, T, TI, W)                                              \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ x, const TI* __restrict__ index,                  \
    T* __restrict__ out, i64 n_rows, i64 row_words, i32 team_shift,         \
    const i64* __restrict__ divs, i64 local_size, i64 offset,               \
    u64 fill_lo, u64 fill_hi)                                               \
{                                                                           \
    const i64 team = (i64)1 << team_shift;                                  \
    const W zero = make_word<W>(fill_lo, fill_hi);                          \
    GRID_STRIDE_LOOP(t, n_rows << team_shift) {                             \
        const i64 r = t >> team_shift;                                      \
        const i64 src = gather_row(index, r, divs, local_size, offset);     \
        const W* row = src < 0 ? nullptr : (const W*)x + src * row_words;   \
        copy_row((W*)out + r * row_words, row, t & (team - 1), team,        \
                 row_words, zero);                                          \
    }                                                                       \
}

// x_grad [batch, outer, local_size, row_words] is zeroed by the host.
#define GATHER_GRAD(NAME, T, TI)                                            \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ out_grad, const TI* __restrict__ index,           \
    T* __restrict__ x_grad, i64 n_rows, i64 row_words, i32 team_shift,      \
    const i64* __restrict__ divs, i64 local_size, i64 offset)               \
{                                                                           \
    const i64 team = (i64)1 << team_shift;                                  \
    GRID_STRIDE_LOOP(t, n_rows << team_shift) {                             \
        const i64 r = t >> team_shift;                                      \
        const i64 dst = gather_row(index, r, divs, local_size, offset);     \
        if (dst >= 0) {                                                     \
            const T* g = out_grad + r * row_words;                          \
            T* row = x_grad + dst * row_words;                              \
            UNROLL4                                                         \
            for (i64 j = t & (team - 1); j < row_words; j += team) {        \
                atomicAdd(row + j, g[j]);                                   \
            }                                                               \
        }                                                                   \
    }                                                                       \
}

GATHER(gather_u8_i32, u8, i32, u8)
GATHER(gather_u8_i64, u8, i64, u8)
GATHER(gather_u16_i32, u16, i32, u16)
GATHER(gather_u16_i64, u16, i64, u16)
GATHER(gather_u32_i32, u32, i32, u32)
GATHER(gather_u32_i64, u32, i64, u32)
GATHER(gather_u64_i32, u64, i32, u64)
GATHER(gather_u64_i64, u64, i64, u64)
GATHER(gather_u128_i32, u64, i32, u128)
GATHER(gather_u128_i64, u64, i64, u128)
GATHER_GRAD(gather_grad_f32_i32, float, i32)
GATHER_GRAD(gather_grad_f32_i64, float, i64)
GATHER_GRAD(gather_grad_f64_i32, double, i32)
GATHER_GRAD(gather_grad_f64_i64, double, i64)
