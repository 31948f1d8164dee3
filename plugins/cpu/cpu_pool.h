/*
 * cpu_pool.h - a small persistent pool of worker threads for large fills.
 * run() calls fn(arg, i) for every i in 0..n-1 (i = 0 on the calling
 * thread) and returns when all are done.
 */
#ifndef RNGSNAP_CPU_POOL_H
#define RNGSNAP_CPU_POOL_H

typedef struct cpu_pool cpu_pool;
typedef void (*cpu_task_fn)(void *arg, unsigned i);

/* A pool for n-way runs (n - 1 workers).  0 on success, else an errno. */
int cpu_pool_new(unsigned n, cpu_pool **out);
void cpu_pool_run(cpu_pool *p, cpu_task_fn fn, void *arg);
unsigned cpu_pool_size(const cpu_pool *p);
/* Nonzero when run() can be used from this process: a child of fork()
 * has no workers (only the forking thread survives), so it must not. */
int cpu_pool_usable(const cpu_pool *p);
void cpu_pool_free(cpu_pool *p); /* NULL accepted */

#endif
