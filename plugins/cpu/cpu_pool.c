/*
 * cpu_pool.c - persistent worker threads, woken by a generation counter.
 * Workers block every signal, so the host program's signal handling is
 * not disturbed by threads it did not create.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu_pool.h"

typedef struct cpu_worker {
    struct cpu_pool *pool;
    unsigned index; /* 1..n-1: the task index this worker runs */
    pthread_t tid;
} cpu_worker;

struct cpu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_mutex_t run_lock; /* one run at a time          */
    unsigned n;               /* ways, caller included      */
    unsigned started;         /* workers created            */
    unsigned long generation; /* bumped per run             */
    unsigned pending;         /* workers still on this run  */
    int quit;
    cpu_task_fn fn;
    void *arg;
    cpu_worker *workers;
    pid_t owner; /* process that started the workers */
};

static void *cpu_worker_main(void *w_)
{
    cpu_worker *w = w_;
    cpu_pool *p = w->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit)
            break;
        seen = p->generation;
        cpu_task_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->lock);
        fn(arg, w->index);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int cpu_pool_new(unsigned n, cpu_pool **out)
{
    *out = NULL;
    if (n == 0)
        return EINVAL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return ENOMEM;
    p->n = n;
    p->owner = getpid();
    p->workers = calloc(n, sizeof *p->workers);
    if (p->workers == NULL) {
        free(p);
        return ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by workers */
    int rc = 0;
    for (unsigned i = 1; i < n; i++) {
        p->workers[i].pool = p;
        p->workers[i].index = i;
        rc = pthread_create(&p->workers[i].tid, NULL, cpu_worker_main,
                            &p->workers[i]);
        if (rc != 0)
            break;
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        cpu_pool_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

unsigned cpu_pool_size(const cpu_pool *p)
{
    return p ? p->n : 1;
}

int cpu_pool_usable(const cpu_pool *p)
{
    return p != NULL && p->owner == getpid();
}

void cpu_pool_run(cpu_pool *p, cpu_task_fn fn, void *arg)
{
    pthread_mutex_lock(&p->run_lock);
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    fn(arg, 0);

    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}

void cpu_pool_free(cpu_pool *p)
{
    if (p == NULL)
        return;
    if (p->owner != getpid()) {
        /* a fork child: the workers (and possibly the locks' owners) are
         * not here; leave the memory rather than join or destroy */
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 1; i <= p->started; i++)
        pthread_join(p->workers[i].tid, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p->workers);
    free(p);
}
