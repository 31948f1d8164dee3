/*
 * state_ops_trace.c - prints every rngsnap_state_ops call of a save, a
 * load and a load whose second app state refuses its bytes, so that
 * test_docs.py can hold the trace in docs/user-guide.md to what the
 * library really does.
 *
 *   tools_state_ops_trace INI
 *
 * Two app states, "a" and "b", each one uint64 value.  The checkpoint
 * holds 1 for both; before each load the live values are 7, so a load()
 * that receives 1 got the checkpoint and one that receives 7 got the
 * library's backup of the live state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rngsnap.h>

typedef struct app {
    const char *name;
    uint64_t value;
    int refuse; /* load() returns -1 for the checkpoint's bytes */
} app;

static size_t t_size(void *user)
{
    printf("  size(%s)\n", ((app *)user)->name);
    return sizeof(uint64_t);
}

static int t_save(void *user, void *buf, size_t len)
{
    app *a = user;
    printf("  save(%s) -> %" PRIu64 "\n", a->name, a->value);
    if (len != sizeof a->value)
        return -1;
    memcpy(buf, &a->value, len);
    return 0;
}

static int t_load(void *user, const void *buf, size_t len)
{
    app *a = user;
    uint64_t v;
    if (len != sizeof v)
        return -1;
    memcpy(&v, buf, len);
    int refuse = a->refuse && v == 1;
    printf("  load(%s) <- %" PRIu64 " (%s)%s\n", a->name, v,
           v == 1 ? "checkpoint" : "backup", refuse ? " returns -1" : "");
    if (refuse)
        return -1;
    a->value = v;
    return 0;
}

static const rngsnap_state_ops ops = {t_size, t_save, t_load};

static void must(rngsnap *ctx, int rc, const char *what)
{
    if (rc != RNGSNAP_OK) {
        fprintf(stderr, "state_ops_trace: %s: %s\n", what,
                rngsnap_errmsg(ctx));
        exit(2);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tools_state_ops_trace INI\n");
        return 2;
    }
    char path[] = "/tmp/rngsnap-trace-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 2;
    close(fd);
    app a = {"a", 1, 0}, b = {"b", 1, 0};
    rngsnap *ctx;
    must(NULL, rngsnap_open(&ctx, argv[1], 0), "open");
    must(ctx, rngsnap_register_state(ctx, "a", &ops, &a), "register a");
    must(ctx, rngsnap_register_state(ctx, "b", &ops, &b), "register b");
    must(ctx, rngsnap_seed_all(ctx, 1), "seed");

    printf("rngsnap_save:\n");
    must(ctx, rngsnap_save(ctx, path, RNGSNAP_SAVE_REPLACE), "save");

    a.value = b.value = 7;
    printf("rngsnap_load:\n");
    must(ctx, rngsnap_load(ctx, path, 0), "load");

    a.value = b.value = 7;
    b.refuse = 1;
    printf("rngsnap_load, b's load() refuses the checkpoint:\n");
    int rc = rngsnap_load(ctx, path, 0);
    printf("  = %s; a = %" PRIu64 ", b = %" PRIu64 "\n",
           rngsnap_error_name(rc), a.value, b.value);

    rngsnap_close(ctx);
    remove(path);
    return rc == RNGSNAP_E_BACKEND ? 0 : 1;
}
