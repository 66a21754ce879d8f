// gather / batch_gather and their scatter-add gradients.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The Gather primitive of OneFlow's gather-primitive article: x is viewed as
// [batch, outer, local_size, inner], index as [batch, n_index], out as
// [batch, outer, n_index, inner]. The host has checked and wrapped the index
// into [0, gather size); x holds the slice [offset, offset + local_size) of
// the gathered axis, and an index outside it gives 0 (forward) or
// contributes nothing (gradient), as a split gather axis needs. Forward
// kernels move raw words (u8..u64).

// Splits output offset i into the x offset it reads (or -1 when the index
// falls outside the local slice).
template <typename TI>
__device__ __forceinline__ i64 gather_source(
    const TI* index, i64 i, i64 outer, i64 n_index, i64 inner,
    i64 local_size, i64 offset)
{
    const i64 c = i % inner;
    i64 rest = i / inner;
    const i64 p = rest % n_index;
    rest /= n_index;
    const i64 o = rest % outer;
    const i64 b = rest / outer;
    const i64 g = (i64)index[b * n_index + p] - offset;
    if (g < 0 || g >= local_size) {
        return -1;
    }
    return ((b * outer + o) * local_size + g) * inner + c;
}

#define GATHER(NAME, T, TI)                                                 \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ x, const TI* __restrict__ index,                  \
    T* __restrict__ out, i64 n, i64 outer, i64 n_index, i64 inner,          \
    i64 local_size, i64 offset)                                             \
{                                                                           \
    GRID_STRIDE_LOOP(i, n) {                                                \
        const i64 src = gather_source(index, i, outer, n_index, inner,      \
                                      local_size, offset);                  \
        out[i] = src < 0 ? (T)0 : x[src];                                   \
    }                                                                       \
}

// x_grad [batch, outer, local_size, inner] is zeroed by the host.
#define GATHER_GRAD(NAME, T, TI)                                            \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ out_grad, const TI* __restrict__ index,           \
    T* __restrict__ x_grad, i64 n, i64 outer, i64 n_index, i64 inner,       \
    i64 local_size, i64 offset)                                             \
{                                                                           \
    GRID_STRIDE_LOOP(i, n) {                                                \
        const i64 dst = gather_source(index, i, outer, n_index, inner,      \
                                      local_size, offset);                  \
        if (dst >= 0) {                                                     \
            atomicAdd(x_grad + dst, out_grad[i]);                           \
        }                                                                   \
    }                                                                       \
}

GATHER(gather_u8_i32, u8, i32)
GATHER(gather_u8_i64, u8, i64)
GATHER(gather_u16_i32, u16, i32)
GATHER(gather_u16_i64, u16, i64)
GATHER(gather_u32_i32, u32, i32)
GATHER(gather_u32_i64, u32, i64)
GATHER(gather_u64_i32, u64, i32)
GATHER(gather_u64_i64, u64, i64)
GATHER_GRAD(gather_grad_f32_i32, float, i32)
GATHER_GRAD(gather_grad_f32_i64, float, i64)
GATHER_GRAD(gather_grad_f64_i32, double, i32)
GATHER_GRAD(gather_grad_f64_i64, double, i64)
