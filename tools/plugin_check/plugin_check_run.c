/*
 * plugin_check_run.c - one check of `rngsnap plugin-check` in a forked
 * child: its findings come back through a pipe, and the plugin call in
 * flight sits in shared memory, so that a plugin that crashes (or hangs,
 * or calls exit) is reported by name and call instead of taking the
 * check down with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "plugin_check.h"

#define PC_SLOTS 64      /* threads that may be in plugin calls at once */
#define PC_TIMEOUT_S 120 /* a check that runs longer is a hung plugin   */
#define PC_LINE 2048

typedef struct pc_slot {
    volatile int active;
    char call[32];
    char where[224];
} pc_slot;

/* Written by the child, read by the parent after the child ended. */
typedef struct pc_shared {
    volatile int crashed; /* slot of the thread the signal hit; -1 none */
    volatile int last;    /* slot of the call entered last; -1 none     */
    char backend[128];
    char doing[256];
    pc_slot slot[PC_SLOTS];
} pc_shared;

static pc_shared *shm;
static int out_fd = -1;
static atomic_int next_slot;
static _Thread_local int my_slot = -1;

/* ---- the child's side ---------------------------------------------------- */

static void put_line(char kind, const char *fmt, va_list ap)
{
    char line[PC_LINE];
    line[0] = kind;
    line[1] = ' ';
    int n = vsnprintf(line + 2, sizeof line - 3, fmt, ap);
    size_t len = n < 0 ? 2 : (size_t)n + 2;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    for (size_t i = 2; i < len; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    line[len++] = '\n';
    /* One write of at most PIPE_BUF bytes: lines of threads never mix. */
    if (out_fd >= 0 && write(out_fd, line, len) < 0)
        _exit(3);
}

void pc_fail(pc *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line('F', fmt, ap);
    va_end(ap);
    p->failures++;
}

void pc_note(pc *p, const char *fmt, ...)
{
    (void)p;
    va_list ap;
    va_start(ap, fmt);
    put_line('N', fmt, ap);
    va_end(ap);
}

_Noreturn void pc_config_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line('E', fmt, ap);
    va_end(ap);
    _exit(2);
}

void pc_doing(const char *fmt, ...)
{
    if (!fmt) {
        shm->doing[0] = '\0';
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(shm->doing, sizeof shm->doing, fmt, ap);
    va_end(ap);
}

void pc_enter(const char *call, const char *where)
{
    if (my_slot < 0)
        my_slot = atomic_fetch_add(&next_slot, 1) % PC_SLOTS;
    pc_slot *s = &shm->slot[my_slot];
    snprintf(s->call, sizeof s->call, "%s", call);
    snprintf(s->where, sizeof s->where, "%s", where);
    s->active = 1;
    shm->last = my_slot;
}

void pc_leave(void)
{
    if (my_slot >= 0)
        shm->slot[my_slot].active = 0;
}

/* The thread that took the signal says which slot it was using, then the
 * signal's default action ends the child. */
static void on_fatal(int sig)
{
    shm->crashed = my_slot;
    signal(sig, SIG_DFL);
    raise(sig);
}

static _Noreturn void child(const pc_check *c, const char *ini,
                            const char *backend)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], on_fatal);
    alarm(PC_TIMEOUT_S); /* SIGALRM's default action ends a hung check */
    pc p = {.ini = ini, .backend = backend};
    snprintf(shm->backend, sizeof shm->backend, "%s", backend);
    c->run(&p);
    pc_close(&p);
    _exit(p.failures ? 1 : 0);
}

/* ---- the parent's side --------------------------------------------------- */

/* The crash (or hang, or exit) of a child, in words. */
static void report_death(const char *check, int status)
{
    int slot = shm->crashed >= 0 ? shm->crashed : -1;
    if (slot < 0 || !shm->slot[slot].active) /* a thread of the plugin's own */
        slot = shm->last >= 0 && shm->slot[shm->last].active ? shm->last : -1;
    char how[160];
    int crashed = 0;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        crashed = sig != SIGALRM;
        if (!crashed)
            snprintf(how, sizeof how, "did not return within %d s",
                     PC_TIMEOUT_S);
        else
            snprintf(how, sizeof how, "SIG%s, %s", abbrev ? abbrev : "?",
                     strsignal(sig));
    } else {
        snprintf(how, sizeof how, "ended the process (exit status %d)",
                 WEXITSTATUS(status));
    }
    if (slot >= 0 && crashed) {
        const pc_slot *s = &shm->slot[slot];
        printf("FAIL %s: plugin %s crashed in %s of %s (%s)\n", check,
               shm->backend, s->call, s->where, how);
    } else if (slot >= 0) {
        const pc_slot *s = &shm->slot[slot];
        printf("FAIL %s: plugin %s %s in %s of %s\n", check, shm->backend,
               how, s->call, s->where);
    } else {
        printf("FAIL %s: the check %s%s%s outside any plugin call\n", check,
               crashed ? "crashed (" : "", how, crashed ? ")" : "");
        if (shm->last >= 0)
            printf("     last plugin call: %s of %s\n",
                   shm->slot[shm->last].call, shm->slot[shm->last].where);
    }
    if (shm->doing[0])
        printf("     while %s\n", shm->doing);
}

int pc_run(const pc_check *c, const char *ini, const char *backend)
{
    if (!shm) {
        shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shm == MAP_FAILED) {
            shm = NULL;
            cli_err("plugin-check", "mmap: %s", strerror(errno));
            return 2;
        }
    }
    memset(shm, 0, sizeof *shm);
    shm->crashed = shm->last = -1;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        cli_err("plugin-check", "pipe: %s", strerror(errno));
        return 2;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        cli_err("plugin-check", "fork: %s", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        close(fds[0]);
        out_fd = fds[1];
        child(c, ini, backend);
    }
    close(fds[1]);

    /* Read every line until the child (and its threads) are gone. */
    FILE *in = fdopen(fds[0], "r");
    char line[PC_LINE + 8];
    int fails = 0, config = 0;
    char notes[4 * PC_LINE] = ""; /* held until the check's line is out */
    while (in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == 'F') {
            printf("FAIL %s: %s\n%s", c->name, line + 2, notes);
            notes[0] = '\0';
            fails++;
        } else if (line[0] == 'N') {
            if (fails)
                printf("     %s\n", line + 2);
            else
                snprintf(notes + strlen(notes), sizeof notes - strlen(notes),
                         "     %s\n", line + 2);
        } else if (line[0] == 'E') {
            cli_err("plugin-check", "%s", line + 2);
            config = 1;
        }
    }
    if (in)
        fclose(in);
    else
        close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            cli_err("plugin-check", "waitpid: %s", strerror(errno));
            return 2;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && config)
        return 2;
    if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) {
        if (WEXITSTATUS(status) == 0 && fails == 0) {
            printf("ok   %s: %s\n%s", c->name, c->what, notes);
            return 0;
        }
        return 1;
    }
    report_death(c->name, status);
    fputs(notes, stdout);
    return 1;
}
