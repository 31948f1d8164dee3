/*
 * cuda_fill.cu - the cuda backend's GPU generation: one thread per Philox
 * block, writing the values of rngsnap_generate straight into device
 * memory.  The block function and every conversion come from
 * plugins/common/philox_convert.h, the same header the cpu backend runs,
 * so the output is the cpu backend's bit for bit.
 *
 * A "unit" is the group of W consecutive stream words that makes V values
 * (U32/F32: 1 word -> 1; U64/F64: 2 -> 1; NORMAL_F32: 2 -> 2; NORMAL_F64:
 * 4 -> 2), counted from the stream position, so a start in the middle of a
 * block or at an odd word works.  Thread t owns Philox block B and makes
 * every unit whose first word lies in B; a unit that runs into block B+1
 * takes those words from the next lane (warp shuffle), the last lane
 * computes B+1 itself.  No allocation: the kernel writes to out only.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

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

template <int DIST>
__device__ __forceinline__ void make_unit(const uint32_t *w,
                                          typename unit_shape<DIST>::T *v);
template <> __device__ __forceinline__ void make_unit<0>(const uint32_t *w, uint32_t *v)
{ v[0] = w[0]; }
template <> __device__ __forceinline__ void make_unit<1>(const uint32_t *w, uint64_t *v)
{ v[0] = px_words_to_u64(w[0], w[1]); }
template <> __device__ __forceinline__ void make_unit<2>(const uint32_t *w, float *v)
{ v[0] = px_u32_to_f32(w[0]); }
template <> __device__ __forceinline__ void make_unit<3>(const uint32_t *w, double *v)
{ v[0] = px_u64_to_f64(px_words_to_u64(w[0], w[1])); }
template <> __device__ __forceinline__ void make_unit<4>(const uint32_t *w, float *v)
{ px_normal_f32(w[0], w[1], &v[0], &v[1]); }
template <> __device__ __forceinline__ void make_unit<5>(const uint32_t *w, double *v)
{ px_normal_f64(w[0], w[1], w[2], w[3], &v[0], &v[1]); }

__device__ __forceinline__ void block_words(const fill_args &a, uint64_t b,
                                            uint32_t out[4])
{
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32),
                             (uint32_t)a.subsequence,
                             (uint32_t)(a.subsequence >> 32)};
    px_block(ctr, a.key, out);
}

template <int DIST>
__global__ void __launch_bounds__(FILL_THREADS)
fill_kernel(fill_args a, typename unit_shape<DIST>::T *out)
{
    typedef typename unit_shape<DIST>::T T;
    const int W = unit_shape<DIST>::W, V = unit_shape<DIST>::V;
    const uint64_t b = a.base + (uint64_t)blockIdx.x * blockDim.x
                       + threadIdx.x;
    uint32_t win[8];
    block_words(a, b, win);
    /* Units straddle blocks only when the start is not a multiple of W;
     * the branch is uniform over the launch. */
    if (W > 1 && a.start % W != 0) {
        const unsigned lane = threadIdx.x & 31u;
        for (int j = 0; j < 4; j++)
            win[4 + j] = __shfl_down_sync(0xffffffffu, win[j], 1);
        if (lane == 31u)
            block_words(a, b + 1, win + 4);
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

template <int DIST>
static cudaError_t launch(fill_args a, void *out)
{
    typedef typename unit_shape<DIST>::T T;
    const uint64_t first = a.start / 4;
    const uint64_t blocks = a.last - first + 1;
    const uint64_t per_launch = (uint64_t)FILL_MAX_GRID * FILL_THREADS;
    for (uint64_t done = 0; done < blocks; done += per_launch) {
        uint64_t todo = blocks - done < per_launch ? blocks - done
                                                   : per_launch;
        a.base = first + done;
        unsigned grid = (unsigned)((todo + FILL_THREADS - 1) / FILL_THREADS);
        fill_kernel<DIST><<<grid, FILL_THREADS>>>(a, (T *)out);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static const int unit_w[6] = {1, 2, 1, 2, 2, 4};
static const int unit_v[6] = {1, 1, 1, 1, 2, 2};

/* Called by cuda.c (C).  Returns 0, or -1 with err filled. */
extern "C" int rs_cuda_fill(int device, uint64_t seed, uint64_t subsequence,
                            uint64_t offset, int dist, void *out, size_t n,
                            uint64_t words, char *err, size_t errlen)
{
    if (dist < 0 || dist > 5) {
        snprintf(err, errlen, "unknown distribution %d", dist);
        return -1;
    }
    const uint64_t nunits = (n + unit_v[dist] - 1) / unit_v[dist];
    if (nunits * unit_w[dist] != words) {
        snprintf(err, errlen, "engine consumes %llu words for %zu values "
                 "of dist %d, the cuda kernel %llu: engine and kernel "
                 "disagree", (unsigned long long)words, n, dist,
                 (unsigned long long)(nunits * unit_w[dist]));
        return -1;
    }
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cudaSetDevice(%d): %s", device,
                 cudaGetErrorString(e));
        return -1;
    }
    cudaPointerAttributes pa;
    e = cudaPointerGetAttributes(&pa, out);
    if (e != cudaSuccess || pa.type == cudaMemoryTypeUnregistered) {
        cudaGetLastError();
        snprintf(err, errlen, "out %p is not CUDA memory: a cuda stream "
                 "writes device memory (rngsnap_stream_memory); allocate "
                 "it with cudaMalloc", out);
        return -1;
    }
    fill_args a;
    a.key[0] = (uint32_t)seed;
    a.key[1] = (uint32_t)(seed >> 32);
    a.subsequence = subsequence;
    a.start = offset;
    a.nunits = nunits;
    a.n = n;
    a.base = 0;
    a.last = (offset + words - 1) / 4;
    switch (dist) {
    case 0: e = launch<0>(a, out); break;
    case 1: e = launch<1>(a, out); break;
    case 2: e = launch<2>(a, out); break;
    case 3: e = launch<3>(a, out); break;
    case 4: e = launch<4>(a, out); break;
    default: e = launch<5>(a, out); break;
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "fill kernel launch on device %d: %s",
                 device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
