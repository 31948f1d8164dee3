/*
 * cuda_fill_kernel.cuh - the fill kernel of the cuda backend: one thread
 * per Philox block (see cuda_fill.cu for the unit scheme).  A header so
 * that tests/gpu/kernel_logic.cu can run the very same per-thread code on
 * the host, over every block, and compare it with the cpu engine without
 * a GPU.  Needs nvcc (CUDA C++).
 */
#ifndef RNGSNAP_CUDA_FILL_KERNEL_CUH
#define RNGSNAP_CUDA_FILL_KERNEL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "philox_convert.h"

#define FILL_THREADS 256
#define FILL_MAX_GRID (1u << 22) /* blocks per launch: 2^30 Philox blocks */

struct fill_args {
    uint32_t key[2];
    uint64_t subsequence;
    uint64_t start;     /* first stream word                           */
    uint64_t nunits;    /* units to make                               */
    uint64_t n;         /* values to write (last unit may be cut)      */
    uint64_t base;      /* Philox block of thread 0 of this launch     */
    uint64_t last;      /* last Philox block that holds a needed word  */
};

template <int DIST> struct unit_shape;
template <> struct unit_shape<0> { enum { W = 1, V = 1 }; typedef uint32_t T; };
template <> struct unit_shape<1> { enum { W = 2, V = 1 }; typedef uint64_t T; };
template <> struct unit_shape<2> { enum { W = 1, V = 1 }; typedef float T; };
template <> struct unit_shape<3> { enum { W = 2, V = 1 }; typedef double T; };
template <> struct unit_shape<4> { enum { W = 2, V = 2 }; typedef float T; };
template <> struct unit_shape<5> { enum { W = 4, V = 2 }; typedef double T; };
template <> struct unit_shape<6> { enum { W = 1, V = 1 }; typedef float T; };
template <> struct unit_shape<7> { enum { W = 1, V = 1 }; typedef double T; };
template <> struct unit_shape<8> { enum { W = 2, V = 2 }; typedef float T; };
template <> struct unit_shape<9> { enum { W = 4, V = 2 }; typedef double T; };

template <int DIST>
__host__ __device__ __forceinline__ void make_unit(const uint32_t *w,
                                          typename unit_shape<DIST>::T *v);
template <> __host__ __device__ __forceinline__ void make_unit<0>(const uint32_t *w, uint32_t *v)
{ v[0] = w[0]; }
template <> __host__ __device__ __forceinline__ void make_unit<1>(const uint32_t *w, uint64_t *v)
{ v[0] = px_words_to_u64(w[0], w[1]); }
template <> __host__ __device__ __forceinline__ void make_unit<2>(const uint32_t *w, float *v)
{ v[0] = px_u32_to_f32(w[0]); }
template <> __host__ __device__ __forceinline__ void make_unit<3>(const uint32_t *w, double *v)
{ v[0] = px_u64_to_f64(px_words_to_u64(w[0], w[1])); }
template <> __host__ __device__ __forceinline__ void make_unit<4>(const uint32_t *w, float *v)
{ px_normal_f32(w[0], w[1], &v[0], &v[1]); }
template <> __host__ __device__ __forceinline__ void make_unit<5>(const uint32_t *w, double *v)
{ px_normal_f64(w[0], w[1], w[2], w[3], &v[0], &v[1]); }
template <> __host__ __device__ __forceinline__ void make_unit<6>(const uint32_t *w, float *v)
{ v[0] = px_curand_uniform(w[0]); }
template <> __host__ __device__ __forceinline__ void make_unit<7>(const uint32_t *w, double *v)
{ v[0] = px_curand_uniform_double(w[0]); }
template <> __host__ __device__ __forceinline__ void make_unit<8>(const uint32_t *w, float *v)
{ px_curand_normal_f32(w[0], w[1], &v[0], &v[1]); }
template <> __host__ __device__ __forceinline__ void make_unit<9>(const uint32_t *w, double *v)
{ px_curand_normal_f64(w[0], w[1], w[2], w[3], &v[0], &v[1]); }

__host__ __device__ __forceinline__ void block_words(const fill_args &a, uint64_t b,
                                            uint32_t out[4])
{
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32),
                             (uint32_t)a.subsequence,
                             (uint32_t)(a.subsequence >> 32)};
    px_block(ctr, a.key, out);
}

/* The work of the thread that owns Philox block b (lane: its lane in the
 * warp).  On the device the next block's words come from the next lane;
 * compiled for the host (tests/gpu/kernel_logic) they are computed, which
 * is what that lane holds. */
template <int DIST>
__host__ __device__ __forceinline__ void
fill_thread(const fill_args &a, typename unit_shape<DIST>::T *out,
            uint64_t b, unsigned lane)
{
    typedef typename unit_shape<DIST>::T T;
    const int W = unit_shape<DIST>::W, V = unit_shape<DIST>::V;
    uint32_t win[8];
    block_words(a, b, win);
    /* Units straddle blocks only when the start is not a multiple of W;
     * the branch is uniform over the launch. */
    if (W > 1 && a.start % W != 0) {
#if defined(__CUDA_ARCH__)
        for (int j = 0; j < 4; j++)
            win[4 + j] = __shfl_down_sync(0xffffffffu, win[j], 1);
        if (lane == 31u)
            block_words(a, b + 1, win + 4);
#else
        (void)lane;
        block_words(a, b + 1, win + 4);
#endif
    }
    if (b > a.last)
        return;
    const uint64_t lo = 4 * b; /* first word of this block */
    uint64_t u = lo > a.start ? (lo - a.start + W - 1) / W : 0;
    /* Fast path: a whole aligned block makes exactly 16 bytes at
     * out + 16 * (b - first block); store them at once. */
    if (a.start % 4 == 0 && (4 / W) * V * sizeof(T) == 16
        && (u + 4 / W) * V <= a.n
        && ((uintptr_t)(out + u * V) & 15u) == 0) {
        union { T v[16 / sizeof(T)]; uint4 q; } pack;
        for (int k = 0; k < 4 / W; k++)
            make_unit<DIST>(win + k * W, pack.v + k * V);
        *(uint4 *)(out + u * V) = pack.q;
        return;
    }
    for (; u < a.nunits; u++) {
        const uint64_t fw = a.start + u * W;
        if (fw >= lo + 4)
            break;
        T v[V];
        make_unit<DIST>(win + (fw - lo), v);
        for (int k = 0; k < V; k++)
            if (u * V + k < a.n)
                out[u * V + k] = v[k];
    }
}

/* One thread per Philox block; the launch covers whole warps, and threads
 * past a.last still take part in the shuffle. */
template <int DIST>
__global__ void __launch_bounds__(FILL_THREADS)
fill_kernel(fill_args a, typename unit_shape<DIST>::T *out)
{
    const uint64_t b = a.base + (uint64_t)blockIdx.x * blockDim.x
                       + threadIdx.x;
    fill_thread<DIST>(a, out, b, threadIdx.x & 31u);
}

#endif
