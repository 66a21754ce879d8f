// repeat: tile a contiguous input into a contiguous output.
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// Output coordinate c_d reads input coordinate c_d % in_shape[d]; the host
// pads in_shape with leading 1s for new dims, so those collapse to 0.
// Kernels work on raw words (u8/u16/u32/u64); wider dtypes get a trailing
// word dim.

#define REPEAT(NAME, T)                                                     \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ in, T* __restrict__ out, i64 n, i32 ndim,         \
    const i64* __restrict__ out_shape, const i64* __restrict__ in_shape)    \
{                                                                           \
    GRID_STRIDE_LOOP(i, n) {                                                \
        i64 rest = i;                                                       \
        i64 src = 0;                                                        \
        i64 stride = 1;                                                     \
        for (i32 d = ndim - 1; d >= 0; --d) {                               \
            const i64 size = out_shape[d];                                  \
            src += (rest % size) % in_shape[d] * stride;                    \
            rest /= size;                                                   \
            stride *= in_shape[d];                                          \
        }                                                                   \
        out[i] = in[src];                                                   \
    }                                                                       \
}

REPEAT(repeat_u8, u8)
REPEAT(repeat_u16, u16)
REPEAT(repeat_u32, u32)
REPEAT(repeat_u64, u64)
