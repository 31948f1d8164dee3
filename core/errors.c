/*
 * errors.c - return codes and messages: the table of codes, the messages
 * of each thread on each context (rs_error), the per-thread message of a
 * failed rngsnap_open, and the library version.
 *
 * A message belongs to the thread whose call failed: two threads failing
 * on one context at once each read their own with rngsnap_errmsg(ctx).
 * Each thread keeps the messages of its RS_THREAD_SLOTS most recently
 * failing contexts (a later one takes the slot written longest ago); the
 * block is allocated at the thread's first error and freed when the
 * thread exits.  A message stays until the next error of the same thread
 * on the same context: successful calls do not clear it.  Calls that have
 * no context to write to (a NULL ctx or stream) leave their message in
 * the per-thread slot that rngsnap_errmsg(NULL) reads, like a failed
 * rngsnap_open; a successful rngsnap_open clears that slot.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "internal.h"

/* One row per return code: the data that rngsnap_strerror and
 * rngsnap_error_name read.  Index = code. */
static const struct {
    const char *name;
    const char *text;
} rs_codes[] = {
    [RNGSNAP_OK] = {"RNGSNAP_OK", "success"},
    [RNGSNAP_E_CONFIG] = {"RNGSNAP_E_CONFIG", "bad configuration (rng.ini)"},
    [RNGSNAP_E_PLUGIN] = {"RNGSNAP_E_PLUGIN",
                          "backend plugin missing or unusable"},
    [RNGSNAP_E_UNAVAILABLE] = {"RNGSNAP_E_UNAVAILABLE",
                               "backend or feature not available"},
    [RNGSNAP_E_IO] = {"RNGSNAP_E_IO", "input/output error"},
    [RNGSNAP_E_EXISTS] = {"RNGSNAP_E_EXISTS", "file exists"},
    [RNGSNAP_E_CORRUPT] = {"RNGSNAP_E_CORRUPT", "checkpoint file is corrupt"},
    [RNGSNAP_E_MISMATCH] = {"RNGSNAP_E_MISMATCH",
                            "checkpoint does not match the configuration"},
    [RNGSNAP_E_ORDER] = {"RNGSNAP_E_ORDER",
                         "call out of order (resume gate)"},
    [RNGSNAP_E_INVALID] = {"RNGSNAP_E_INVALID", "invalid argument"},
    [RNGSNAP_E_NOMEM] = {"RNGSNAP_E_NOMEM", "out of memory"},
    [RNGSNAP_E_BACKEND] = {"RNGSNAP_E_BACKEND", "backend call failed"},
    [RNGSNAP_E_DURABILITY] = {"RNGSNAP_E_DURABILITY",
                              "checkpoint replaced, durability not confirmed"},
};
#define RS_NCODES (sizeof rs_codes / sizeof rs_codes[0])

/* ---- per-thread, per-context messages ---------------------------------- */

#define RS_THREAD_SLOTS 8

typedef struct rs_msg_slot {
    uint64_t ctx_id; /* 0: free (context ids start at 1) */
    char text[RS_ERRMSG_MAX];
} rs_msg_slot;

typedef struct rs_thread_msgs {
    unsigned next; /* slot to take when none is free or ours */
    rs_msg_slot slot[RS_THREAD_SLOTS];
    /* Message of the last failed rngsnap_open of this thread (no context
     * exists to hold it). */
    char open_errmsg[RS_ERRMSG_MAX];
} rs_thread_msgs;

/* The thread-local data stays a few bytes: rs_msg_count's initial-exec
 * model puts this file's whole TLS block in the static TLS, of which
 * glibc keeps only ~1.5 KiB for libraries opened later (Python's import,
 * ctypes, dlopen); 4 KiB of buffers here made such an open fail with
 * "cannot allocate memory in static TLS block". */
static _Thread_local rs_thread_msgs *rs_msgs;
/* Set when a message was lost because the block could not be allocated;
 * the message itself goes to rs_msg_sink, never read. */
static _Thread_local int rs_msg_lost;
static char rs_msg_sink[RS_ERRMSG_MAX];
_Thread_local unsigned long rs_msg_count RS_TLS_FAST;

static atomic_uint_fast64_t rs_next_ctx_id = 1;
static pthread_once_t rs_msgs_once = PTHREAD_ONCE_INIT;
static pthread_key_t rs_msgs_key;
static int rs_msgs_key_ok;

/* A thread's block, when the thread exits; a later error in another
 * exit handler of the thread starts a new block, which the destructor
 * round that glibc runs again then frees. */
static void rs_msgs_free(void *block)
{
    free(block);
    rs_msgs = NULL;
}

static void rs_msgs_key_create(void)
{
    /* The key exists only for its destructor. */
    rs_msgs_key_ok = pthread_key_create(&rs_msgs_key, rs_msgs_free) == 0;
}

uint64_t rs_new_ctx_id(void)
{
    return atomic_fetch_add_explicit(&rs_next_ctx_id, 1,
                                     memory_order_relaxed);
}

static rs_msg_slot *find_slot(const struct rngsnap *ctx)
{
    if (!rs_msgs)
        return NULL;
    for (unsigned i = 0; i < RS_THREAD_SLOTS; i++)
        if (rs_msgs->slot[i].ctx_id == ctx->id)
            return &rs_msgs->slot[i];
    return NULL;
}

/* This thread's block, allocated on first use; NULL when out of memory. */
static rs_thread_msgs *thread_msgs(void)
{
    if (!rs_msgs) {
        rs_msgs = calloc(1, sizeof *rs_msgs);
        if (!rs_msgs) {
            rs_msg_lost = 1;
            return NULL;
        }
        rs_msg_lost = 0;
        pthread_once(&rs_msgs_once, rs_msgs_key_create);
        if (rs_msgs_key_ok)
            pthread_setspecific(rs_msgs_key, rs_msgs);
    }
    return rs_msgs;
}

char *rs_errbuf(const struct rngsnap *ctx)
{
    if (!ctx)
        return thread_msgs() ? rs_msgs->open_errmsg : rs_msg_sink;
    rs_msg_slot *slot = find_slot(ctx);
    if (slot)
        return slot->text;
    if (!thread_msgs())
        return rs_msg_sink;
    slot = &rs_msgs->slot[rs_msgs->next];
    rs_msgs->next = (rs_msgs->next + 1) % RS_THREAD_SLOTS;
    slot->ctx_id = ctx->id;
    slot->text[0] = '\0';
    return slot->text;
}

void rs_error_clear(const struct rngsnap *ctx)
{
    rs_msg_slot *slot = find_slot(ctx);
    if (slot)
        slot->text[0] = '\0';
}

const char *rs_error_since(const struct rngsnap *ctx, unsigned long mark)
{
    if (rs_msg_count == mark)
        return NULL;
    const rs_msg_slot *slot = find_slot(ctx);
    return slot && slot->text[0] ? slot->text : NULL;
}

const char *rngsnap_strerror(int code)
{
    if (code < 0 || (size_t)code >= RS_NCODES || !rs_codes[code].text)
        return "unknown error code";
    return rs_codes[code].text;
}

const char *rngsnap_error_name(int code)
{
    if (code < 0 || (size_t)code >= RS_NCODES || !rs_codes[code].name)
        return "RNGSNAP_E_UNKNOWN";
    return rs_codes[code].name;
}

const char *rngsnap_errmsg(const rngsnap *ctx)
{
    if (!ctx && rs_msgs && rs_msgs->open_errmsg[0])
        return rs_msgs->open_errmsg;
    const rs_msg_slot *slot = ctx ? find_slot(ctx) : NULL;
    if (slot)
        return slot->text[0] ? slot->text : "no error";
    if (!rs_msgs && rs_msg_lost)
        return "out of memory: the message of this thread's last error "
               "could not be kept";
    return "no error";
}

const char *rngsnap_version(void)
{
    return RNGSNAP_VERSION_STRING;
}

void rs_set_open_error(const char *msg)
{
    snprintf(rs_errbuf(NULL), RS_ERRMSG_MAX, "%s", msg ? msg : "");
}

int rs_error(struct rngsnap *ctx, int code, const char *fmt, ...)
{
    /* Format aside first: an argument may point into the buffer itself
     * (a prefix added to the plugin's own message). */
    char tmp[RS_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(rs_errbuf(ctx), tmp, sizeof tmp);
    rs_msg_count++;
    return code;
}

char *rs_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

const char *rs_format_id(uint32_t id, char *buf, size_t len)
{
    char letters[5];
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(id >> (8 * i));
        if (c < 0x20 || c > 0x7e) {
            snprintf(buf, len, "0x%08x", (unsigned)id);
            return buf;
        }
        letters[i] = (char)c;
    }
    letters[4] = '\0';
    snprintf(buf, len, "\"%s\" (0x%08x)", letters, (unsigned)id);
    return buf;
}

const char *rs_stream_label(const struct rngsnap_stream *s, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s:%d/%s", s->backend->name, s->device, s->name);
    return buf;
}
