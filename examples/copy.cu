// dst = src, a vectorised grid-stride copy for sweeper's `cuda` kernel
// (spaces/cuda-copy.yaml).  Every swept meta-parameter arrives as a -D define:
//   VEC     elements per load and store (1, 2 or 4: a float, float2 or float4 access;
//           4-byte dtypes only)
//   UNROLL  vector loads in flight per thread per step
// and sweeper defines DTYPE (the problem's C type) and block_size_x (blockDim.x).
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

template <int N> struct Vec;
template <> struct Vec<1> { typedef float type; };
template <> struct Vec<2> { typedef float2 type; };
template <> struct Vec<4> { typedef float4 type; };

extern "C" __global__ void copy(DTYPE *__restrict__ dst, const DTYPE *__restrict__ src,
                                long long n) {
    static_assert(sizeof(DTYPE) == sizeof(float), "a copy of 4-byte elements (float32)");
    typedef typename Vec<VEC>::type V;
    const long long vectors = n / VEC;                  // whole vectors; the tail below
    const long long step = (long long)gridDim.x * block_size_x * UNROLL;
    const V *s = reinterpret_cast<const V *>(src);
    V *d = reinterpret_cast<V *>(dst);
    for (long long base = (long long)blockIdx.x * block_size_x * UNROLL + threadIdx.x;
         base < vectors; base += step) {
        V held[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            long long i = base + (long long)u * block_size_x;
            if (i < vectors) held[u] = s[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            long long i = base + (long long)u * block_size_x;
            if (i < vectors) d[i] = held[u];
        }
    }
    for (long long i = vectors * VEC + (long long)blockIdx.x * block_size_x + threadIdx.x;
         i < n; i += (long long)gridDim.x * block_size_x) {
        dst[i] = src[i];                                // the n % VEC tail
    }
}
