// sum_axis: out[a, c] = sum over b of in[a, b, c], for x viewed as [A, B, C].
//
// Loaded by cupy.RawModule (NVRTC) after preamble.cuh: extern "C" kernels only.
// The GPU half of sum_to_shape (broadcast gradients: expand_grad,
// repeat_grad, every broadcasting op's backward): the host coalesces the
// dims into alternating summed and kept runs and sums one run at a time.
// One thread per output element adds its B terms in order, in double, and
// rounds once; consecutive threads read consecutive c, so every load of a
// warp is contiguous (the host sends a short C to cupy's own reduction).
// complex dtypes are interleaved pairs of reals: C counts both parts.

#define SUM_AXIS(NAME, T)                                                   \
extern "C" __global__ void NAME(                                            \
    const T* __restrict__ in, T* __restrict__ out, i64 A, i64 B, i64 C)     \
{                                                                           \
    GRID_STRIDE_LOOP(i, A * C) {                                            \
        const i64 a = i / C;                                                \
        const T* p = in + a * B * C + (i - a * C);                          \
        double acc = 0.0;                                                   \
        for (i64 b = 0; b < B; ++b) {                                       \
            acc += (double)p[b * C];                                        \
        }                                                                   \
        out[i] = (T)acc;                                                    \
    }                                                                       \
}

SUM_AXIS(sum_axis_f32, float)
SUM_AXIS(sum_axis_f64, double)
