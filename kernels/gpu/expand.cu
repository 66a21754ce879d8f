// expand: broadcast a contiguous input to a larger contiguous output.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The stride-0 mapping of OneFlow's expand/repeat article: in_strides[d] is
// the input's stride for output dim d, 0 on broadcast and new leading dims,
// so output element i with coordinates c reads in[sum(c_d * in_strides[d])].
// Kernels work on raw words (u8/u16/u32/u64); wider dtypes get a trailing
// word dim.

#define EXPAND(NAME, T)                                                     \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ in, T* __restrict__ out, i64 n, i32 ndim,         \
    const i64* __restrict__ out_shape, const i64* __restrict__ in_strides)  \
{                                                                           \
    GRID_STRIDE_LOOP(i, n) {                                                \
        i64 rest = i;                                                       \
        i64 src = 0;                                                        \
        for (i32 d = ndim - 1; d >= 0; --d) {                               \
            const i64 size = out_shape[d];                                  \
            src += (rest % size) * in_strides[d];                           \
            rest /= size;                                                   \
        }                                                                   \
        out[i] = in[src];                                                   \
    }                                                                       \
}

EXPAND(expand_u8, u8)
EXPAND(expand_u16, u16)
EXPAND(expand_u32, u32)
EXPAND(expand_u64, u64)
