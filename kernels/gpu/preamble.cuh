// Shared preamble of every kernels/gpu/*.cu file: the loader
// (kernels.gpu.read_source) puts it in front of each source, so the files
// themselves hold only their kernels.
//
// NVRTC has no standard headers, so nothing here or in a .cu file may
// #include. Every kernel loops grid-stride with a 64-bit index, so any
// launch geometry covers any number of items.

typedef long long i64;
typedef int i32;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define GRID_STRIDE_LOOP(i, n)                                              \
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < (n);       \
         i += (i64)blockDim.x * gridDim.x)
