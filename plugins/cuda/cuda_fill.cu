/*
 * cuda_fill.cu - the cuda backend's GPU generation: one thread per Philox
 * block, writing the values of rngsnap_generate straight into device
 * memory.  The block function and every conversion come from
 * plugins/common/philox_convert.h, the same header the cpu backend runs,
 * so the output is the cpu backend's bit for bit.
 *
 * A "unit" is the group of W consecutive stream words that makes V values
 * (U32/F32: 1 word -> 1; U64/F64: 2 -> 1; NORMAL_F32: 2 -> 2; NORMAL_F64:
 * 4 -> 2; the CURAND_* dists 1, 1, 2 -> 2 and 4 -> 2), counted from the stream position, so a start in the middle of a
 * block or at an odd word works.  Thread t owns Philox block B and makes
 * every unit whose first word lies in B; a unit that runs into block B+1
 * takes those words from the next lane (warp shuffle), the last lane
 * computes B+1 itself.  No allocation: the kernel writes to out only.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_fill_kernel.cuh"

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

#define FILL_DISTS 10 /* RNGSNAP_DIST_COUNT */
static const int unit_w[FILL_DISTS] = {1, 2, 1, 2, 2, 4, 1, 1, 2, 4};
static const int unit_v[FILL_DISTS] = {1, 1, 1, 1, 2, 2, 1, 1, 2, 2};

/* Called by cuda.c (C).  Returns 0, or -1 with err filled. */
extern "C" int rs_cuda_fill(int device, uint64_t seed, uint64_t subsequence,
                            uint64_t offset, int dist, void *out, size_t n,
                            uint64_t words, char *err, size_t errlen)
{
    if (dist < 0 || dist >= FILL_DISTS) {
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
    case 5: e = launch<5>(a, out); break;
    case 6: e = launch<6>(a, out); break;
    case 7: e = launch<7>(a, out); break;
    case 8: e = launch<8>(a, out); break;
    default: e = launch<9>(a, out); break;
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "fill kernel launch on device %d: %s",
                 device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
