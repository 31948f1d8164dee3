/*
 * config.c - rng.ini, read with inih (Debian release 55).
 *
 * inih does not give line numbers to the handler (INI_HANDLER_LINENO is a
 * compile-time switch of the library, off in Debian), cuts long lines
 * silently, turns an indented line into the continuation of the previous
 * value, and never reports a section header with no key under it.  So we
 * read the file ourselves and feed inih one line at a time through
 * ini_parse_stream with our own reader, which
 *   - counts lines (the handler reads the count: inih reads one line per
 *     reader call and handles it before the next call),
 *   - refuses a line longer than the buffer inih hands it (file + line),
 *   - strips leading blanks (so an indented "key = value" is a key, never
 *     a hidden multi-line continuation), a BOM and a trailing CR,
 *   - notices "[section]" headers, so that an empty section counts.
 * Parsing stops at the first error; every message starts "<file>:<line>:".
 *
 * A missing or unreadable rng.ini is RNGSNAP_E_CONFIG (not E_IO): the
 * configuration the caller named cannot be used; the message names the
 * path and the system's reason.
 */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "rngsnap_build_config.h"
#include "context.h"
#include "internal.h"
#include "near_miss.h"

#define RS_INI_MAX_BYTES (1u << 20)  /* a config file, not a data file */
#define RS_INIH_MAX_NAME 50          /* inih 55 MAX_NAME / MAX_SECTION */

/* Per-backend lines of the reserved keys (duplicate detection). */
typedef struct rs_seen {
    int plugin, required, streams;
} rs_seen;

/* Names seen so far, keyed by (scope, name): scope 0 holds the backend
 * names, 2i+1 the option keys of backend i, 2i+2 its stream names.  An
 * open-addressing hash set, so that duplicate checks stay linear in the
 * file (a 1 MiB file holds 73,195 sections).  The strings belong to the
 * context (b->name, option keys, stream names) and outlive the set. */
typedef struct rs_name_slot {
    const char *name; /* NULL: empty slot */
    size_t hash;      /* name_hash(scope, name) */
    size_t scope;
    int line;         /* where it was first seen */
} rs_name_slot;

typedef struct rs_nameset {
    rs_name_slot *slot;
    size_t cap, count; /* cap is 0 or a power of two */
} rs_nameset;

typedef struct rs_parse {
    struct rngsnap *ctx;
    rs_config *cfg;
    const char *data;      /* whole file */
    size_t len, pos;
    int line;              /* number of the line last handed to inih */
    int continuation;      /* that line continues the stream list */
    int list_open;         /* the line before was a streams line (or a
                            * continuation of one): an indented line
                            * without '=' or ':' continues the list */
    int list_empty_line;   /* line of a 'streams =' with no value yet */
    const char *cur;       /* that line, stripped, for messages */
    size_t cur_len;
    int err;               /* first error code (0: none) */
    int err_line;
    int stop;              /* reader returns EOF from now on */
    int section;           /* 0 none yet, 1 [rngsnap], 2 [backend.X] */
    int seen_global;       /* line of the [rngsnap] header */
    int log_line;
    rs_seen *seen;         /* parallel to ctx->backends */
    size_t backends_cap;   /* allocated slots of ctx->backends */
    size_t seen_cap;       /* ... of seen */
    size_t options_cap;    /* ... of the current backend's options */
    size_t streams_cap;    /* ... of the current backend's streams */
    rs_nameset names;
} rs_parse;

/* ---- small helpers ------------------------------------------------------ */

char *rs_plugin_dir_item(const char *base, const char *item)
{
    if (strcmp(item, RS_BUILTIN_TOKEN) == 0)
        return rs_strdup(RNGSNAP_PLUGIN_DIR);
    return rs_path_join(base, item);
}

char *rs_path_join(const char *dir, const char *rel)
{
    if (rel[0] == '/')
        return rs_strdup(rel);
    size_t a = strlen(dir), b = strlen(rel);
    char *s = malloc(a + 1 + b + 1);
    if (!s)
        return NULL;
    memcpy(s, dir, a);
    s[a] = '/';
    memcpy(s + a + 1, rel, b + 1);
    return s;
}

int rs_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > RS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* ---- the set of names seen ------------------------------------------- */

static size_t name_hash(size_t scope, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull ^ scope; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 0x100000001b3ull;
    return (size_t)(h ^ (h >> 32));
}

/* The slot holding (scope, name) with that hash, or the empty slot
 * where it belongs. */
static rs_name_slot *nameset_slot(const rs_nameset *set, size_t hash,
                                  size_t scope, const char *name)
{
    size_t mask = set->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        rs_name_slot *e = &set->slot[i];
        if (!e->name || (e->hash == hash && e->scope == scope
                         && strcmp(e->name, name) == 0))
            return e;
    }
}

static int nameset_grow(rs_nameset *set)
{
    size_t cap = set->cap ? 2 * set->cap : 64;
    rs_nameset big = {calloc(cap, sizeof *big.slot), cap, set->count};
    if (!big.slot)
        return 0;
    for (size_t i = 0; i < set->cap; i++) {
        const rs_name_slot *e = &set->slot[i];
        if (e->name) /* all names differ: the first free slot is it */
            *nameset_slot(&big, e->hash, e->scope, e->name) = *e;
    }
    free(set->slot);
    *set = big;
    return 1;
}

/* Add name (first seen at line) to scope.  Returns 0 when added, the line
 * of the earlier one when it was there, -1 when out of memory. */
static int nameset_add(rs_nameset *set, size_t scope, const char *name,
                       int line)
{
    if (2 * (set->count + 1) > set->cap && !nameset_grow(set))
        return -1;
    size_t hash = name_hash(scope, name);
    rs_name_slot *e = nameset_slot(set, hash, scope, name);
    if (e->name)
        return e->line;
    *e = (rs_name_slot){name, hash, scope, line};
    set->count++;
    return 0;
}

/* Scopes of nameset entries for backend i. */
static size_t scope_options(size_t i) { return 2 * i + 1; }
static size_t scope_streams(size_t i) { return 2 * i + 2; }

/* arr (n items of size bytes, room for *cap) with room for one more:
 * doubled when full, so that adding n items costs O(n).  NULL: out of
 * memory, arr and *cap unchanged. */
static void *grow(void *arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return arr;
    size_t ncap = *cap ? 2 * *cap : 8;
    void *na = realloc(arr, ncap * size);
    if (na)
        *cap = ncap;
    return na;
}

static int perr_at(rs_parse *p, int line, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Record the first error as "<file>:<line>: <text>" and stop reading. */
static int vperr(rs_parse *p, int line, int code, const char *fmt,
                 va_list ap)
{
    if (p->err)
        return 0;
    char text[RS_ERRMSG_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    rs_error(p->ctx, code, "%s:%d: %s", p->ctx->ini_path, line, text);
    p->err = code;
    p->err_line = line;
    p->stop = 1;
    return 0; /* inih: handler failed */
}

static int perr_at(rs_parse *p, int line, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vperr(p, line, code, fmt, ap);
    va_end(ap);
    return 0;
}

/* An error on the line being read. */
#define perr(p, code, ...) perr_at((p), (p)->line, (code), __VA_ARGS__)

static rs_backend *cur_backend(rs_parse *p)
{
    return p->section == 2 ? &p->ctx->backends[p->ctx->nbackends - 1] : NULL;
}

/* ---- section headers (seen by the reader, before inih) ---------------- */

/* A new backend slot named bname[0..blen) (a valid name).  1: added;
 * 0: error recorded (duplicate section, no memory). */
static int add_backend(rs_parse *p, const char *bname, size_t blen)
{
    struct rngsnap *ctx = p->ctx;
    rs_backend *nb = grow(ctx->backends, ctx->nbackends, &p->backends_cap,
                          sizeof *nb);
    if (nb)
        ctx->backends = nb;
    rs_seen *ns = grow(p->seen, ctx->nbackends, &p->seen_cap, sizeof *ns);
    if (ns)
        p->seen = ns;
    char *name = nb && ns ? malloc(blen + 1) : NULL;
    if (!name)
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    memcpy(name, bname, blen);
    name[blen] = '\0';
    int first = nameset_add(&p->names, 0, name, p->line);
    if (first != 0) {
        if (first < 0)
            perr(p, RNGSNAP_E_NOMEM, "out of memory");
        else
            perr(p, RNGSNAP_E_CONFIG, "duplicate section [backend.%s] "
                 "(first at line %d)", name, first);
        free(name);
        return 0;
    }
    rs_backend *b = &ctx->backends[ctx->nbackends++];
    memset(b, 0, sizeof *b);
    memset(&p->seen[ctx->nbackends - 1], 0, sizeof *p->seen);
    b->ctx = ctx;
    b->name = name;
    b->required = 1;
    b->section_line = p->line;
    p->options_cap = p->streams_cap = 0;
    return 1;
}

static void on_header(rs_parse *p, const char *s, size_t n)
{
    /* Same rule as inih: the name runs to the first ']' (an inline
     * comment ends the search); inih reports a missing ']' itself. */
    const char *end = memchr(s, ']', n);
    if (!end)
        return;
    const char *name = s + 1;
    size_t len = (size_t)(end - name);
    if (len >= RS_INIH_MAX_NAME) {
        perr(p, RNGSNAP_E_CONFIG,
             "section name '[%.*s]' is too long (the parser keeps %d "
             "characters)", (int)len, name, RS_INIH_MAX_NAME - 1);
        return;
    }
    if (len == 7 && memcmp(name, "rngsnap", 7) == 0) {
        if (p->seen_global) {
            perr(p, RNGSNAP_E_CONFIG,
                 "duplicate section [rngsnap] (first at line %d)",
                 p->seen_global);
            return;
        }
        p->seen_global = p->line;
        p->section = 1;
        return;
    }
    if (len < 8 || memcmp(name, "backend.", 8) != 0) {
        perr(p, RNGSNAP_E_CONFIG,
             "unknown section [%.*s] (expected [rngsnap] or [backend.NAME])",
             (int)len, name);
        return;
    }
    const char *bname = name + 8;
    size_t blen = len - 8;
    if (!rs_name_ok(bname, blen)) {
        perr(p, RNGSNAP_E_CONFIG,
             "invalid backend name '%.*s' in section [%.*s] (use "
             "letters, digits, '_', '.', '-')", (int)blen, bname, (int)len,
             name);
        return;
    }
    if (add_backend(p, bname, blen))
        p->section = 2;
}

/* ---- the reader: one line per call ------------------------------------ */

/* 1 when the line s[0..n) (leading blanks stripped) can continue a stream
 * list: not empty, no comment or header, no '=' or ':' (a stream name
 * holds neither, a key line always one), so no valid key line changes
 * meaning. */
static int is_list_line(const char *s, size_t n)
{
    return n && !strchr(";#[", s[0]) && !memchr(s, '=', n)
           && !memchr(s, ':', n);
}

/* Length of s[0..n) before an inline comment (';' after a blank, inih's
 * rule), trailing blanks dropped. */
static size_t before_comment(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && !(s[k] == ';' && k && isspace((unsigned char)s[k - 1])))
        k++;
    while (k && isspace((unsigned char)s[k - 1]))
        k--;
    return k;
}

/* For the hint of a line too long: a "streams =" line or its sequel. */
static int is_streams_line(const rs_parse *p, const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    if (p->list_open && is_list_line(s, n))
        return 1;
    return n > 7 && memcmp(s, "streams", 7) == 0 && strchr(" \t=:", s[7]);
}

/* Track the stream list across lines: the line being read continues it
 * (cont) or ends it, and a list left empty ('streams =' and no indented
 * line after it) is an error on its own line.  0: error recorded. */
static int next_line_of_list(rs_parse *p, int cont)
{
    p->continuation = cont && p->list_open;
    if (p->continuation) {
        p->list_empty_line = 0;
        return 1;
    }
    p->list_open = 0;
    if (!p->list_empty_line)
        return 1;
    return perr_at(p, p->list_empty_line, RNGSNAP_E_CONFIG,
                   "key 'streams' of [backend.%s]: empty stream list",
                   cur_backend(p)->name);
}

static char *reader(char *str, int num, void *stream)
{
    rs_parse *p = stream;
    if (p->stop)
        return NULL;
    if (p->pos >= p->len) {
        next_line_of_list(p, 0); /* the file ends the list */
        return NULL;
    }
    const char *s = p->data + p->pos;
    size_t avail = p->len - p->pos;
    const char *nl = memchr(s, '\n', avail);
    size_t n = nl ? (size_t)(nl - s) : avail;
    p->pos += n + (nl ? 1 : 0);
    p->line++;
    if (n && s[n - 1] == '\r')
        n--;
    if (p->line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
        s += 3;
        n -= 3;
    }
    p->cur = s;
    p->cur_len = n;
    if (memchr(s, '\0', n)) {
        perr(p, RNGSNAP_E_CONFIG, "line contains a NUL byte");
        return NULL;
    }
    /* inih's buffer holds num-1 characters including our '\n'. */
    if (num < 2 || n > (size_t)num - 2) {
        perr(p, RNGSNAP_E_CONFIG,
             "line is %zu characters long; the ini parser (inih) reads at "
             "most %d%s", n, num - 2, is_streams_line(p, s, n)
             ? " (continue a long stream list on indented lines)" : "");
        return NULL;
    }
    int indented = n && isspace((unsigned char)*s);
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    p->cur = s;
    p->cur_len = n;
    size_t list_n = before_comment(s, n);
    if (!next_line_of_list(p, indented && is_list_line(s, list_n)))
        return NULL;
    /* One blank before a continuation: inih hands it to the handler as
     * the next value of the previous key ("streams").  inih 55 keeps an
     * inline comment in such a value: cut it here. */
    size_t lead = p->continuation ? 1 : 0;
    if (p->continuation)
        n = list_n;
    str[0] = ' ';
    memcpy(str + lead, s, n);
    str[lead + n] = '\n';
    str[lead + n + 1] = '\0';
    if (n && s[0] == '[')
        on_header(p, s, n);
    return p->stop ? NULL : str;
}

/* ---- values ----------------------------------------------------------- */

static int parse_bool(const char *v, int *out)
{
    static const struct {
        const char *word;
        int value;
    } words[] = {{"true", 1}, {"yes", 1}, {"on", 1},  {"1", 1},
                 {"false", 0}, {"no", 0}, {"off", 0}, {"0", 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strcasecmp(v, words[i].word) == 0) {
            *out = words[i].value;
            return 1;
        }
    }
    return 0;
}

/* Split "a, b ,c" into trimmed pieces; sep is ',' or ':'.  Empty pieces
 * are kept (as "") so the caller can name them. */
static int split_list(const char *v, char sep, char ***out, size_t *count)
{
    size_t cap = 1;
    for (const char *c = v; *c; c++)
        cap += (*c == sep);
    char **items = calloc(cap, sizeof *items);
    if (!items)
        return 0;
    size_t k = 0;
    const char *start = v;
    for (;;) {
        const char *end = strchr(start, sep);
        if (!end)
            end = start + strlen(start);
        const char *a = start, *b = end;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        items[k] = malloc((size_t)(b - a) + 1);
        if (!items[k]) {
            for (size_t i = 0; i < k; i++)
                free(items[i]);
            free(items);
            return 0;
        }
        memcpy(items[k], a, (size_t)(b - a));
        items[k][b - a] = '\0';
        k++;
        if (!*end)
            break;
        start = end + 1;
    }
    *out = items;
    *count = k;
    return 1;
}

static void free_list(char **items, size_t n)
{
    for (size_t i = 0; items && i < n; i++)
        free(items[i]);
    free(items);
}

/* Append one stream name (taking it) to b; item is its place in value,
 * the list on this line, for messages.  0: error recorded, name kept by
 * the caller. */
static int add_stream(rs_parse *p, rs_backend *b, char *name,
                      const char *value, size_t item)
{
    if (!name[0])
        return perr(p, RNGSNAP_E_CONFIG,
                    "key 'streams' of [backend.%s]: empty stream name "
                    "(item %zu of '%s')", b->name, item + 1, value);
    if (!rs_name_ok(name, strlen(name)))
        return perr(p, RNGSNAP_E_CONFIG,
                    "key 'streams' of [backend.%s]: invalid stream name '%s' "
                    "(use letters, digits, '_', '.', '-')", b->name, name);
    char **ns = grow(b->streams, b->nstreams, &p->streams_cap, sizeof *ns);
    if (!ns)
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    b->streams = ns;
    int first = nameset_add(&p->names, scope_streams(p->ctx->nbackends - 1),
                            name, p->line);
    if (first < 0)
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    if (first == p->line)
        return perr(p, RNGSNAP_E_CONFIG, "key 'streams' of [backend.%s]: "
                    "duplicate stream name '%s'", b->name, name);
    if (first)
        return perr(p, RNGSNAP_E_CONFIG, "key 'streams' of [backend.%s]: "
                    "duplicate stream name '%s' (first at line %d)",
                    b->name, name, first);
    b->streams[b->nstreams++] = name;
    return 1;
}

/* One line of the stream list: "streams = a, b" or an indented "c, d"
 * after it.  Each line is a whole comma-separated list. */
static int add_streams(rs_parse *p, rs_backend *b, const char *value)
{
    char **items;
    size_t n;
    if (!split_list(value, ',', &items, &n))
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++) {
        ok = add_stream(p, b, items[i], value, i);
        if (ok)
            items[i] = NULL; /* now b's */
    }
    free_list(items, n);
    return ok;
}

/* "streams = ..." itself: the list may go on over indented lines, and
 * may start on the next one ("streams =" alone). */
static int set_streams(rs_parse *p, rs_backend *b, const char *value)
{
    p->list_open = 1;
    if (!*value) {
        p->list_empty_line = p->line;
        return 1;
    }
    return add_streams(p, b, value);
}

static int set_plugin_dir(rs_parse *p, const char *value)
{
    rs_config *cfg = p->cfg;
    if (cfg->plugin_dir_line)
        return perr(p, RNGSNAP_E_CONFIG,
                    "duplicate key 'plugin_dir' in [rngsnap] (first at "
                    "line %d)", cfg->plugin_dir_line);
    char **items;
    size_t n;
    if (!*value)
        return perr(p, RNGSNAP_E_CONFIG,
                    "key 'plugin_dir' of [rngsnap] is empty");
    if (!split_list(value, ':', &items, &n))
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!items[i][0]) {
            free_list(items, n);
            return perr(p, RNGSNAP_E_CONFIG,
                        "key 'plugin_dir' of [rngsnap]: empty folder in "
                        "'%s'", value);
        }
        char *abs = rs_plugin_dir_item(cfg->ini_dir, items[i]);
        if (!abs) {
            free_list(items, n);
            return perr(p, RNGSNAP_E_NOMEM, "out of memory");
        }
        free(items[i]);
        items[i] = abs;
    }
    cfg->plugin_dirs = items;
    cfg->nplugin_dirs = n;
    cfg->plugin_dir_line = p->line;
    return 1;
}

/* ---- unknown keys and the did-you-mean -------------------------------- */

/* The keys the core reads itself in every [backend.X] and in [rngsnap]. */
static const char *const rs_core_keys[] = {"plugin", "required", "streams",
                                           NULL};
static const char *const rs_global_keys[] = {"plugin_dir", "log", NULL};

static int key_in(const char *const *keys, const char *key)
{
    for (; keys && *keys; keys++)
        if (strcmp(*keys, key) == 0)
            return 1;
    return 0;
}

/* The key of a or b (NULL-terminated lists, b may be NULL) closest to
 * key, when it is close enough to be a typo of it (rs_near_miss). */
static const char *closest_key(const char *key, const char *const *a,
                               const char *const *b)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    const char *const *lists[] = {a, b};
    for (size_t l = 0; l < 2; l++) {
        for (const char *const *k = lists[l]; k && *k; k++) {
            size_t d;
            if (rs_near_miss(key, *k, &d) && d < best_d) {
                best = *k;
                best_d = d;
            }
        }
    }
    return best;
}

/* "; did you mean 'x'?" or "", for a message. */
static void did_you_mean(char *buf, size_t len, const char *key,
                         const char *const *a, const char *const *b)
{
    const char *best = closest_key(key, a, b);
    if (best)
        snprintf(buf, len, "; did you mean '%s'?", best);
    else
        buf[0] = '\0';
}

/* "plugin, required, streams, threads" (the keys of a then b). */
static void list_keys(char *buf, size_t len, const char *const *a,
                      const char *const *b)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *const *lists[] = {a, b};
    for (size_t l = 0; l < 2; l++)
        for (const char *const *k = lists[l]; k && *k && used < len; k++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                     used ? ", " : "", *k);
}

/* A key of [rngsnap] that is not one of rs_global_keys. */
static int unknown_global_key(rs_parse *p, const char *name)
{
    char hint[RS_NEAR_MAX + 32], keys[128];
    did_you_mean(hint, sizeof hint, name, rs_global_keys, NULL);
    list_keys(keys, sizeof keys, rs_global_keys, NULL);
    return perr(p, RNGSNAP_E_CONFIG, "unknown key '%s' in [rngsnap]%s "
                "(this section takes %s)", name, hint, keys);
}

/* Keys of b's section the plugin will not know.  With its option_keys,
 * any key outside core + plugin keys; without, a near miss of a core key
 * (the plugin would take "requried" for one of its options). */
static int check_option(struct rngsnap *ctx, const rs_backend *b,
                        const rs_option *o, const char *const *own)
{
    char hint[RS_NEAR_MAX + 32];
    if (own) {
        if (key_in(own, o->key))
            return RNGSNAP_OK;
        char keys[1024];
        did_you_mean(hint, sizeof hint, o->key, rs_core_keys, own);
        list_keys(keys, sizeof keys, rs_core_keys, own);
        return rs_error(ctx, RNGSNAP_E_CONFIG, "%s:%d: unknown key '%s' in "
                        "[backend.%s]%s (this section takes %s)",
                        ctx->ini_path, o->line, o->key, b->name, hint, keys);
    }
    const char *core = closest_key(o->key, rs_core_keys, NULL);
    if (!core)
        return RNGSNAP_OK; /* the plugin's to judge */
    return rs_error(ctx, RNGSNAP_E_CONFIG, "%s:%d: unknown key '%s' in "
                    "[backend.%s]; did you mean '%s'? (the core reads plugin, "
                    "required and streams; plugin %s does not list its own "
                    "keys)", ctx->ini_path, o->line, o->key, b->name, core,
                    b->plugin);
}

int rs_config_check_keys(struct rngsnap *ctx, const rs_backend *b)
{
    const char *const *own = RNGSNAP_BACKEND_HAS(b->vt, option_keys)
                             ? b->vt->option_keys : NULL;
    for (size_t i = 0; i < b->noptions; i++) {
        int rc = check_option(ctx, b, &b->options[i], own);
        if (rc)
            return rc;
    }
    return RNGSNAP_OK;
}

/* ---- the inih handler ---------------------------------------------- */

/* A key of [backend.X] other than the core's: kept for the plugin (and
 * checked against its keys once it is loaded, rs_config_check_keys). */
static int add_option(rs_parse *p, rs_backend *b, const char *name,
                      const char *value)
{
    rs_option *no = grow(b->options, b->noptions, &p->options_cap,
                         sizeof *no);
    if (!no)
        return perr(p, RNGSNAP_E_NOMEM, "out of memory");
    b->options = no;
    rs_option *o = &b->options[b->noptions];
    o->key = rs_strdup(name);
    o->value = rs_strdup(value);
    o->line = p->line;
    int first = o->key && o->value
                ? nameset_add(&p->names, scope_options(p->ctx->nbackends - 1),
                              o->key, p->line)
                : -1;
    if (first != 0) {
        if (first < 0)
            perr(p, RNGSNAP_E_NOMEM, "out of memory");
        else
            perr(p, RNGSNAP_E_CONFIG, "duplicate key '%s' in [backend.%s] "
                 "(first at line %d)", name, b->name, first);
        free(o->key);
        free(o->value);
        return 0;
    }
    b->noptions++;
    return 1;
}

/* Keys that [backend.X] reads itself; every other key is a plugin option. */
static int backend_key(rs_parse *p, rs_backend *b, const char *name,
                       const char *value)
{
    rs_seen *seen = &p->seen[p->ctx->nbackends - 1];
    int *line = NULL;
    if (strcmp(name, "plugin") == 0)
        line = &seen->plugin;
    else if (strcmp(name, "required") == 0)
        line = &seen->required;
    else if (strcmp(name, "streams") == 0)
        line = &seen->streams;
    if (line) {
        if (*line)
            return perr(p, RNGSNAP_E_CONFIG,
                        "duplicate key '%s' in [backend.%s] (first at "
                        "line %d)", name, b->name, *line);
        *line = p->line;
    }
    if (strcmp(name, "plugin") == 0) {
        if (!*value)
            return perr(p, RNGSNAP_E_CONFIG,
                        "key 'plugin' of [backend.%s] is empty", b->name);
        b->plugin = rs_strdup(value);
        return b->plugin ? 1 : perr(p, RNGSNAP_E_NOMEM, "out of memory");
    }
    if (strcmp(name, "required") == 0) {
        if (!parse_bool(value, &b->required))
            return perr(p, RNGSNAP_E_CONFIG,
                        "key 'required' of [backend.%s]: '%s' is not a "
                        "boolean (true/false, yes/no, on/off, 1/0)",
                        b->name, value);
        return 1;
    }
    if (strcmp(name, "streams") == 0)
        return set_streams(p, b, value);

    return add_option(p, b, name, value);
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    rs_parse *p = user;
    (void)section; /* we track the section ourselves (see on_header) */
    if (p->err)
        return 0;
    if (p->continuation) /* inih: name is the previous key, "streams" */
        return add_streams(p, cur_backend(p), value);
    /* Guard: some inih builds copy keys into MAX_NAME bytes (release 55
     * points into the line); compare with the line. */
    size_t klen = 0; /* bounded by the line: data need not end in NUL */
    while (klen < p->cur_len && p->cur[klen] != '=' && p->cur[klen] != ':')
        klen++;
    while (klen && isspace((unsigned char)p->cur[klen - 1]))
        klen--;
    if (klen != strlen(name))
        return perr(p, RNGSNAP_E_CONFIG,
                    "key '%.*s' is too long (the parser keeps %d "
                    "characters)", (int)klen, p->cur, RS_INIH_MAX_NAME - 1);
    if (!*name)
        return perr(p, RNGSNAP_E_CONFIG, "empty key name before '%s'",
                    value);
    if (p->section == 0)
        return perr(p, RNGSNAP_E_CONFIG,
                    "key '%s' is outside any section (put it under "
                    "[rngsnap] or [backend.NAME])", name);
    if (p->section == 2)
        return backend_key(p, cur_backend(p), name, value);

    if (strcmp(name, "plugin_dir") == 0)
        return set_plugin_dir(p, value);
    if (strcmp(name, "log") == 0) {
        if (p->log_line)
            return perr(p, RNGSNAP_E_CONFIG,
                        "duplicate key 'log' in [rngsnap] (first at line "
                        "%d)", p->log_line);
        int lv = rs_log_level_parse(value);
        if (lv == -2)
            return perr(p, RNGSNAP_E_CONFIG,
                        "key 'log' of [rngsnap]: '%s' is not a log level "
                        "(none, error, warn, info, debug or 0-3)", value);
        p->log_line = p->line;
        p->ctx->log_level = lv;
        return 1;
    }
    return unknown_global_key(p, name);
}

/* ---- whole file ------------------------------------------------------- */

/* What a file that is not a regular file is, for the message. */
static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* Open path without blocking: open() of a FIFO with no writer waits
 * forever, O_NONBLOCK makes it return at once so that fstat can refuse
 * it.  Sets *fd and returns RNGSNAP_OK, or an error with ctx's message. */
static int open_regular(struct rngsnap *ctx, const char *path,
                        struct stat *st, int *fd)
{
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return rs_error(ctx, RNGSNAP_E_CONFIG, "cannot open config file "
                        "%s: %s", path, strerror(errno));
    int rc = RNGSNAP_OK;
    if (fstat(*fd, st) != 0)
        rc = rs_error(ctx, RNGSNAP_E_CONFIG, "cannot stat config file %s: "
                      "%s", path, strerror(errno));
    else if (!S_ISREG(st->st_mode))
        rc = rs_error(ctx, RNGSNAP_E_CONFIG, "config file %s is %s, not a "
                      "regular file", path, file_kind(st->st_mode));
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

static int read_file(struct rngsnap *ctx, const char *path, char **data,
                     size_t *len)
{
    struct stat st;
    int fd;
    int rc = open_regular(ctx, path, &st, &fd);
    if (rc)
        return rc;
    if ((uintmax_t)st.st_size > RS_INI_MAX_BYTES) {
        close(fd);
        return rs_error(ctx, RNGSNAP_E_CONFIG, "config file %s is larger "
                        "than %u bytes", path, RS_INI_MAX_BYTES);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return rs_error(ctx, RNGSNAP_E_CONFIG, "cannot read config file "
                        "%s: %s", path, strerror(e));
    }
    /* One byte more than the size, to notice a file that grew. */
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    }
    size_t n = fread(buf, 1, cap, f);
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad || n == cap) {
        free(buf);
        return rs_error(ctx, RNGSNAP_E_CONFIG, "cannot read config file %s: "
                        "%s", path, bad ? strerror(e) : "it changed while "
                        "being read");
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return RNGSNAP_OK;
}

/* Text of line `line` (1-based) of the file, for a syntax error. */
static void line_text(const rs_parse *p, int line, const char **s,
                      size_t *n)
{
    const char *c = p->data, *end = p->data + p->len;
    for (int l = 1; l < line && c < end; l++) {
        const char *nl = memchr(c, '\n', (size_t)(end - c));
        c = nl ? nl + 1 : end;
    }
    const char *nl = memchr(c, '\n', (size_t)(end - c));
    size_t len = nl ? (size_t)(nl - c) : (size_t)(end - c);
    if (len && c[len - 1] == '\r')
        len--;
    *s = c;
    *n = len > 80 ? 80 : len;
}

int rs_config_load(struct rngsnap *ctx, const char *ini_path, rs_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    ctx->log_level = RS_LOG_UNSET;
    char *abs = realpath(ini_path, NULL);
    if (!abs)
        return rs_error(ctx, RNGSNAP_E_CONFIG, "cannot open config file "
                        "%s: %s", ini_path, strerror(errno));
    ctx->ini_path = abs;
    cfg->ini_dir = rs_strdup(abs);
    if (!cfg->ini_dir)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    char *slash = strrchr(cfg->ini_dir, '/');
    if (slash == cfg->ini_dir)
        slash[1] = '\0'; /* the file is in "/" */
    else
        *slash = '\0';

    char *data = NULL;
    size_t len = 0;
    int rc = read_file(ctx, abs, &data, &len);
    if (rc)
        return rc;
    rc = rs_config_parse(ctx, data, len, cfg);
    free(data);
    return rc;
}

int rs_config_parse(struct rngsnap *ctx, const char *data, size_t len,
                    rs_config *cfg)
{
    rs_parse p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.cfg = cfg;
    p.data = data;
    p.len = len;
    int ret = ini_parse_stream(reader, &p, handler, &p);
    if (ret > 0 && (!p.err || ret < p.err_line)) {
        /* A line inih could not parse (no '=' or ':', no ']'). */
        const char *s;
        size_t n;
        line_text(&p, ret, &s, &n);
        rs_error(ctx, RNGSNAP_E_CONFIG,
                 "%s:%d: syntax error: expected '[section]', 'key = value' "
                 "or a comment, got '%.*s'", ctx->ini_path, ret, (int)n, s);
        p.err = RNGSNAP_E_CONFIG;
    } else if (ret == -2 && !p.err) {
        p.err = rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory in inih");
    }
    free(p.seen);
    free(p.names.slot);
    if (p.err)
        return p.err;

    if (ctx->nbackends == 0)
        return rs_error(ctx, RNGSNAP_E_CONFIG,
                        "%s: no [backend.NAME] section: nothing to "
                        "checkpoint", ctx->ini_path);
    /* Defaults: plugin rngsnap_X, one stream "default". */
    for (size_t i = 0; i < ctx->nbackends; i++) {
        rs_backend *b = &ctx->backends[i];
        if (!b->plugin) {
            size_t n = strlen(b->name) + sizeof "rngsnap_";
            b->plugin = malloc(n);
            if (!b->plugin)
                return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
            snprintf(b->plugin, n, "rngsnap_%s", b->name);
        }
        if (!b->streams) {
            b->streams = calloc(1, sizeof *b->streams);
            if (b->streams)
                b->streams[0] = rs_strdup("default");
            if (!b->streams || !b->streams[0])
                return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
            b->nstreams = 1;
        }
    }
    return RNGSNAP_OK;
}

void rs_config_free(rs_config *cfg)
{
    free(cfg->ini_dir);
    free_list(cfg->plugin_dirs, cfg->nplugin_dirs);
    memset(cfg, 0, sizeof *cfg);
}

void rs_backend_free_config(rs_backend *b)
{
    free(b->name);
    free(b->plugin);
    free_list(b->streams, b->nstreams);
    for (size_t i = 0; i < b->noptions; i++) {
        free(b->options[i].key);
        free(b->options[i].value);
    }
    free(b->options);
    free(b->plugin_path);
    free(b->reason);
    free(b->near_path);
    b->name = b->plugin = b->plugin_path = b->reason = b->near_path = NULL;
    b->streams = NULL;
    b->options = NULL;
    b->nstreams = b->noptions = 0;
}
