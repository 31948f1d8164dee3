/*
 * bench.h - shared pieces of rngsnap-bench: timing (median of runs),
 * result rows (a human table and one JSON line each), and the parts that
 * live in their own files.
 */
#ifndef RNGSNAP_BENCH_H
#define RNGSNAP_BENCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_cfg {
    int quick;      /* --quick: few sizes, short runs              */
    int runs;       /* runs per measurement (median reported)      */
    double min_s;   /* each run repeats the operation this long    */
    int json_only;  /* --json: JSON lines only                     */
    int cpu_clock;  /* --cpu-time: time runs on the thread's CPU
                       clock (fill and paths sections only)        */
} bench_cfg;

extern bench_cfg B;

/* Figures the closing "targets" section compares with issue 5's goals
 * (0: not measured). */
typedef struct bench_summary {
    size_t fill_bytes; /* size the fill figures below are from */
    double u32, f32, f64, memset_, ref, ref_native, curand; /* GB/s */
    double threads2;   /* two threads / one thread, U32 64 MiB */
    double threads2_memset; /* two threads U32 / memset (one core), 64 MiB */
    double u32_memset_big;  /* u32 / memset at the largest size (256 MiB) */
    size_t big_bytes;
    double draw_ns, open_us;
    double save3_us, load3_us, save160_us, load160_us; /* tmpfs, fsync */
    double floor_save3_us, floor_load3_us; /* bare system calls, same file */
    long long file160;
} bench_summary;

extern bench_summary S;

double bench_now(void);
/* This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID). */
double bench_cpu_now(void);
/* Median seconds per call of fn(arg) over B.runs runs, each run
 * repeating fn until B.min_s has passed (or at least once). */
double bench_time(void (*fn)(void *), void *arg);
/* The same for n <= 16 functions, their runs interleaved; t[i] for fn[i]. */
void bench_time_n(void (*const *fn)(void *), void *const *arg, int n,
                  double *t);
/* The same, also giving best[i]: the fastest run of fn[i] (on a shared
 * machine, the figure nearest to what the code does undisturbed). */
void bench_time_n_best(void (*const *fn)(void *), void *const *arg, int n,
                       double *t, double *best);

/* Print a section header (table only). */
void bench_section(const char *title);
/* One result: a table row and a JSON line.  fields is a JSON fragment
 * ("\"dist\":\"u32\",...") without braces; text is the table row. */
void bench_row(const char *bench, const char *fields, const char *text);
void bench_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The system calls alone of a save (with and without the fsyncs) and a
 * load of a bytes-long file in dir (bench_floor.c): a job made once, and
 * three functions to time with bench_time or bench_time_n. */
typedef struct floor_job floor_job;
floor_job *bench_floor_job(const char *dir, size_t bytes);
void bench_floor_save_sync(void *job);
void bench_floor_save_nosync(void *job);
void bench_floor_load(void *job);
void bench_floor_done(floor_job *job);

/* The straightforward Philox4x32-10 loop (bench_ref.c), built twice. */
void bench_ref_fill_project(uint64_t seed, uint64_t sub, uint64_t block,
                            uint32_t *out, size_t nblocks);
void bench_ref_fill_native(uint64_t seed, uint64_t sub, uint64_t block,
                           uint32_t *out, size_t nblocks);

/* cuRAND's host generator through dlopen (bench_curand.c). */
int bench_curand_load(char *why, size_t len);
/* 0 on success; dist 0 = curandGenerate (u32), 1 = GenerateUniform (f32),
 * 2 = GenerateUniformDouble, 3 = GenerateNormal (f32),
 * 4 = GenerateNormalDouble. */
int bench_curand_fill(int what, void *out, size_t n);

/* Parts through the public API (bench_api.c). */
void bench_api(void);
/* rngsnap_generate against the engine path, warm and cold buffers
 * (bench_api_fill.c; bench_api_fills writes the cpu-only rng.ini). */
void bench_api_fills(void);
void bench_api_fill(const char *ini);

/* Each SIMD path against the native loop, and large fills each way
 * (bench_paths.c); buf holds cap bytes. */
void bench_paths(void *buf, size_t cap);

#endif
