/*
 * test_config.c - rng.ini: every bad-config case gives RNGSNAP_E_CONFIG
 * with a message naming file, line and key/section; the good forms
 * (defaults, booleans, comments, indentation, empty sections, plugin_dir
 * lists, RNGSNAP_PLUGIN_PATH) are accepted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

/* One bad config: body follows "[rngsnap]" (line 1) and "plugin_dir = .."
 * (line 2) unless full is set.  want: substrings of the message besides
 * the ini path, which is always checked. */
typedef struct bad_case {
    const char *what;
    int full;
    const char *text;
    const char *want[4];
} bad_case;

static const bad_case bad_cases[] = {
    {"unknown section", 0, "[backend.good]\n[foo]\nx = 1\n",
     {":4:", "unknown section [foo]"}},
    {"unknown global key", 0, "colour = red\n[backend.good]\n",
     {":3:", "unknown key 'colour'", "[rngsnap]"}},
    {"duplicate backend section", 0,
     "[backend.good]\nstreams = a\n[backend.good]\n",
     {":5:", "duplicate section [backend.good]", "line 3"}},
    {"duplicate empty backend section (no keys: inih never sees it)", 0,
     "[backend.good]\n[backend.good]\n",
     {":4:", "duplicate section [backend.good]"}},
    {"duplicate [rngsnap]", 0, "[backend.good]\n[rngsnap]\n",
     {":4:", "duplicate section [rngsnap]", "line 1"}},
    {"duplicate option key", 0,
     "[backend.good]\ndevices = 1\ndevices = 2\n",
     {":5:", "duplicate key 'devices'", "[backend.good]", "line 4"}},
    {"duplicate reserved key", 0,
     "[backend.good]\nstreams = a\nrequired = yes\nstreams = b\n",
     {":6:", "duplicate key 'streams'", "line 4"}},
    {"duplicate global key", 0, "plugin_dir = /x\n[backend.good]\n",
     {":3:", "duplicate key 'plugin_dir'"}},
    {"bad boolean", 0, "[backend.good]\nrequired = maybe\n",
     {":4:", "'required'", "'maybe' is not a boolean"}},
    {"empty stream list", 0, "[backend.good]\nstreams =\n",
     {":4:", "'streams'", "empty stream list"}},
    {"empty stream name", 0, "[backend.good]\nstreams = a,,b\n",
     {":4:", "'streams'", "empty stream name"}},
    {"trailing comma in stream list", 0, "[backend.good]\nstreams = a, b,\n",
     {":4:", "empty stream name"}},
    {"duplicate stream name", 0, "[backend.good]\nstreams = a, b, a\n",
     {":4:", "'streams'", "duplicate stream name 'a'"}},
    {"invalid stream name", 0, "[backend.good]\nstreams = a, b c\n",
     {":4:", "invalid stream name 'b c'"}},
    {"invalid backend name", 0, "[backend.go/od]\n",
     {":3:", "invalid backend name 'go/od'"}},
    {"empty backend name", 0, "[backend.]\n",
     {":3:", "invalid backend name ''"}},
    {"key outside any section", 1, "plugin_dir = /x\n[backend.good]\n",
     {":1:", "'plugin_dir'", "outside any section"}},
    {"syntax error", 0, "[backend.good]\nthis line has no equals sign\n",
     {":4:", "syntax error", "this line has no equals sign"}},
    {"unclosed section header", 0, "[backend.good\n",
     {":3:", "syntax error"}},
    {"empty plugin", 0, "[backend.good]\nplugin =\n",
     {":4:", "'plugin'", "empty"}},
    {"empty plugin_dir", 1, "[rngsnap]\nplugin_dir =\n[backend.good]\n",
     {":2:", "'plugin_dir'", "empty"}},
    {"empty folder in plugin_dir list", 1,
     "[rngsnap]\nplugin_dir = /a::/b\n[backend.good]\n",
     {":2:", "'plugin_dir'", "empty folder"}},
    {"empty key", 0, "[backend.good]\n = 3\n",
     {":4:", "empty key"}},
    {"bad log level", 0, "log = loud\n[backend.good]\n",
     {":3:", "'log'", "'loud'"}},
    {"no backend at all", 0, "; only a comment\n",
     {"no [backend.NAME] section"}},
    {"section name too long", 0,
     "[backend.abcdefghijabcdefghijabcdefghijabcdefghijabcd]\n",
     {":3:", "too long"}},
};

static void test_bad_configs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        const char *path = c->full ? th_write("rng.ini", "%s", c->text)
                                   : th_ini(c->text);
        char ini[4096];
        snprintf(ini, sizeof ini, "%s", path);
        print_message("case: %s\n", c->what);
        const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
        th_contains(msg, ini);
        for (size_t k = 0; k < 4 && c->want[k]; k++)
            th_contains(msg, c->want[k]);
    }
}

static void test_line_too_long(void **state)
{
    (void)state;
    char streams[400];
    memset(streams, 0, sizeof streams);
    /* "streams = s0, s1, ..." well past inih's 200-byte buffer */
    size_t o = (size_t)snprintf(streams, sizeof streams, "streams = s0");
    for (int i = 1; o < 300; i++)
        o += (size_t)snprintf(streams + o, sizeof streams - o, ", s%d", i);
    char body[600];
    snprintf(body, sizeof body, "[backend.good]\n; fine\n%s\ndevices = 1\n",
             streams);
    char ini[4096];
    snprintf(ini, sizeof ini, "%s", th_ini(body));
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    th_contains(msg, ini, ":5:", "characters long", "at most 198");

    /* The longest line the parser takes is accepted. */
    char val[199];
    memset(val, 'a', sizeof val);
    val[198 - strlen("reason = ")] = '\0';
    snprintf(body, sizeof body, "[backend.good]\nreason = %s\n", val);
    rngsnap *ctx = th_open_ok(th_ini(body), 0);
    rngsnap_close(ctx);
}

/* The real limits, at their boundaries: a line holds 198 characters, so
 * a stream name at most 188 after "streams = " and 197 alone on an
 * indented line; a backend name at most 41 ([backend.NAME] keeps 49). */
static void test_name_limits(void **state)
{
    (void)state;
    char name[300], body[1024], want[8192];
    memset(name, 'n', sizeof name);
    name[188] = '\0';
    snprintf(body, sizeof body, "[backend.good]\nstreams = %s\n", name);
    rngsnap *ctx = th_open_ok(th_ini(body), 0);
    assert_int_equal(strlen(rngsnap_backend_stream_name(ctx, 0, 0)), 188);
    rngsnap_close(ctx);
    name[188] = 'n';
    name[189] = '\0';
    snprintf(body, sizeof body, "[backend.good]\nstreams = %s\n", name);
    char ini[4096];
    snprintf(ini, sizeof ini, "%s", th_ini(body));
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    char *real = realpath(ini, NULL);
    snprintf(want, sizeof want, "%s:4: line is 199 characters long; the ini "
             "parser (inih) reads at most 198 (continue a long stream list "
             "on indented lines)", real);
    assert_string_equal(msg, want);

    memset(name, 'n', sizeof name);
    name[197] = '\0';
    snprintf(body, sizeof body, "[backend.good]\nstreams = a\n %s\n", name);
    ctx = th_open_ok(th_ini(body), 0);
    assert_int_equal(strlen(rngsnap_backend_stream_name(ctx, 0, 1)), 197);
    rngsnap_close(ctx);
    name[197] = 'n';
    name[198] = '\0';
    snprintf(body, sizeof body, "[backend.good]\nstreams = a\n %s\n", name);
    msg = th_open_fails(th_ini(body), 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "%s:5: line is 199 characters long; the ini "
             "parser (inih) reads at most 198 (continue a long stream list "
             "on indented lines)", real);
    assert_string_equal(msg, want);

    memset(name, 'n', sizeof name);
    name[41] = '\0';
    snprintf(body, sizeof body, "[backend.%s]\nplugin = rngsnap_good\n",
             name);
    msg = th_open_fails(th_ini(body), 0, RNGSNAP_E_PLUGIN); /* parsed */
    th_contains(msg, "[backend.nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn]");
    name[41] = 'n';
    name[42] = '\0';
    snprintf(body, sizeof body, "[backend.%s]\n", name);
    msg = th_open_fails(th_ini(body), 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "%s:3: section name '[backend.%s]' is too "
             "long (the parser keeps 49 characters)", real, name);
    assert_string_equal(msg, want);
    free(real);
}

/* A stream list goes on over indented lines without '=' or ':' right
 * after it, so a backend is not capped at the ~35 streams of one line. */
static void test_stream_list_lines(void **state)
{
    (void)state;
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof body,
                                "[backend.good]\nstreams =\n");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%ss%d%s",
                              i % 10 ? ", " : "    ", i,
                              i % 10 == 9 ? "  ; ten\n" : "");
    snprintf(body + o, sizeof body - o, "  devices = 2\n");
    rngsnap *ctx = th_open_ok(th_ini(body), 0);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    assert_int_equal(bi.stream_names, 100);
    assert_int_equal(bi.device_count, 2); /* an indented key is a key */
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 0), "s0");
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 99), "s99");
    rngsnap_close(ctx);

    char ini[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\nstreams = a, b\n  c\n  b\n"));
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    char *real = realpath(ini, NULL), want[8192];
    snprintf(want, sizeof want, "%s:6: key 'streams' of [backend.good]: "
             "duplicate stream name 'b' (first at line 4)", real);
    assert_string_equal(msg, want);
    /* A blank line or a comment ends the list (no hidden sequel). */
    msg = th_open_fails(th_ini("[backend.good]\nstreams = a\n\n  b\n"), 0,
                        RNGSNAP_E_CONFIG);
    th_contains(msg, ":6: syntax error");
    msg = th_open_fails(th_ini("[backend.good]\nstreams = a\n; x\n  b\n"), 0,
                        RNGSNAP_E_CONFIG);
    th_contains(msg, ":6: syntax error");
    /* "streams =" with nothing after it: empty, on its own line. */
    msg = th_open_fails(th_ini("[backend.good]\nstreams =\ndevices = 1\n"),
                        0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "%s:4: key 'streams' of [backend.good]: "
             "empty stream list", real);
    assert_string_equal(msg, want);
    free(real);
}

/* Write n bytes of text made of `unit` lines (printf with an int) after
 * head, padded with a comment line to exactly n bytes. */
static const char *write_sized(const char *head, const char *unit, size_t n,
                               int *units)
{
    char *buf = malloc(n + 1);
    assert_non_null(buf);
    size_t o = (size_t)snprintf(buf, n + 1, "%s", head);
    int i = 0;
    char line[64];
    for (;; i++) {
        int l = snprintf(line, sizeof line, unit, i);
        if (o + (size_t)l + 3 > n) /* room for the padding comment */
            break;
        memcpy(buf + o, line, (size_t)l);
        o += (size_t)l;
    }
    buf[o++] = ';';
    while (o < n - 1)
        buf[o++] = ' ';
    buf[o++] = '\n';
    char path[4096];
    snprintf(path, sizeof path, "%s/big.ini", th_tmpdir());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);
    *units = i;
    static char real[4096];
    char *r = realpath(path, NULL);
    snprintf(real, sizeof real, "%s", r);
    free(r);
    return real;
}

/* A file at the 1 MiB limit parses whole: every section and every stream
 * name is checked for duplicates (a hash set: once took 17-18 s). */
static void test_size_limit(void **state)
{
    (void)state;
    char head[4200], want[8192];
    snprintf(head, sizeof head, "[rngsnap]\nplugin_dir = %s\n"
             "[backend.good]\nstreams = s\n", th_plugin_dir());
    int n;
    const char *ini = write_sized(head, "  t%d\n", 1u << 20, &n);
    assert_true(n > 100000);
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_stream_count(ctx), (size_t)n + 1);
    rngsnap_close(ctx);

    /* Sections up to the limit, the last one a duplicate of the first:
     * found, so every one of them was compared. */
    snprintf(head, sizeof head, "[rngsnap]\nplugin_dir = %s\n"
             "[backend.a]\n", th_plugin_dir());
    ini = write_sized(head, "[backend.b%d]\n", (1u << 20) - 12, &n);
    FILE *f = fopen(ini, "a");
    fputs("[backend.a]\n", f);
    fclose(f);
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "%s:%d: duplicate section [backend.a] "
             "(first at line 3)", ini, n + 5);
    assert_string_equal(msg, want);

    f = fopen(ini, "a");
    fputc('\n', f);
    fclose(f);
    msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "config file %s is larger than 1048576 "
             "bytes", ini);
    assert_string_equal(msg, want);
}

static void test_nul_byte(void **state)
{
    (void)state;
    const char *p = th_ini("[backend.good]\n");
    FILE *f = fopen(p, "a");
    fwrite("x = a\0b\n", 1, 8, f);
    fclose(f);
    const char *msg = th_open_fails(p, 0, RNGSNAP_E_CONFIG);
    th_contains(msg, ":4:", "NUL");
}

static void test_missing_file(void **state)
{
    (void)state;
    char p[4096];
    snprintf(p, sizeof p, "%s/does-not-exist.ini", th_tmpdir());
    const char *msg = th_open_fails(p, 0, RNGSNAP_E_CONFIG);
    th_contains(msg, p, "No such file");
}

/* A FIFO, a folder or a device as rng.ini is refused at once, naming
 * what it is (a FIFO used to block rngsnap_open forever: the alarm turns
 * such a hang into a failure). */
static void test_not_regular(void **state)
{
    (void)state;
    char fifo[4096], want[4200];
    snprintf(fifo, sizeof fifo, "%s/fifo.ini", th_tmpdir());
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char *real = realpath(fifo, NULL); /* messages name the absolute path */
    assert_non_null(real);
    alarm(20);
    const char *msg = th_open_fails(fifo, 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "config file %s is a FIFO, not a regular "
             "file", real);
    assert_string_equal(msg, want);

    setenv("RNGSNAP_CONFIG", fifo, 1);
    msg = th_open_fails(NULL, 0, RNGSNAP_E_CONFIG);
    assert_string_equal(msg, want);
    unsetenv("RNGSNAP_CONFIG");
    alarm(0);
    unlink(fifo);
    free(real);

    real = realpath(th_tmpdir(), NULL);
    assert_non_null(real);
    msg = th_open_fails(th_tmpdir(), 0, RNGSNAP_E_CONFIG);
    snprintf(want, sizeof want, "config file %s is a directory, not a "
             "regular file", real);
    free(real);
    assert_string_equal(msg, want);
    msg = th_open_fails("/dev/null", 0, RNGSNAP_E_CONFIG);
    assert_string_equal(msg, "config file /dev/null is a character device, "
                        "not a regular file");
}

static void test_good_forms(void **state)
{
    (void)state;
    /* Defaults, indentation, inline comments, booleans, empty sections,
     * CRLF line ends and a BOM. */
    const char *p = th_write("rng.ini",
        "\xEF\xBB\xBF; comment\r\n"
        "# another comment\r\n"
        "[rngsnap]\r\n"
        "   plugin_dir = %s   ; inline comment\r\n"
        "log = error\r\n"
        "[backend.good]\r\n"
        "  required = YES\r\n"
        "  streams = x , y,z ; three streams\r\n"
        "  devices: 2\r\n"
        "[backend.good2]\r\n",
        th_plugin_dir());
    rngsnap *ctx = th_open_ok(p, 0);
    assert_int_equal(rngsnap_backend_count(ctx), 2);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "good");
    assert_int_equal(bi.required, 1);
    assert_int_equal(bi.device_count, 2);
    assert_int_equal(bi.stream_names, 3);
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 0), "x");
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 1), "y");
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 2), "z");
    /* The empty [backend.good2] counts, with the defaults. */
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "good2");
    assert_int_equal(bi.required, 1);
    assert_int_equal(bi.stream_names, 1);
    assert_string_equal(rngsnap_backend_stream_name(ctx, 1, 0), "default");
    th_contains(bi.plugin_path, "/rngsnap_good2.so");
    assert_int_equal(rngsnap_stream_count(ctx), 2 * 3 + 1);
    rngsnap_close(ctx);

    static const char *const truthy[] = {"true", "Yes", "on", "1"};
    static const char *const falsy[] = {"false", "NO", "off", "0"};
    char body[256];
    for (size_t i = 0; i < 4; i++) {
        snprintf(body, sizeof body,
                 "[backend.good]\nrequired = %s\n[backend.good2]\n"
                 "required = %s\n", truthy[i], falsy[i]);
        ctx = th_open_ok(th_ini(body), 0);
        assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
        assert_int_equal(bi.required, 1);
        assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
        assert_int_equal(bi.required, 0);
        rngsnap_close(ctx);
    }
}

/* plugin_dir relative to the ini's folder (not the cwd), and lists. */
static void test_plugin_dir_forms(void **state)
{
    (void)state;
    char link[4096];
    snprintf(link, sizeof link, "%s/plugs", th_tmpdir());
    unlink(link);
    assert_int_equal(symlink(th_plugin_dir(), link), 0);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/sub", th_tmpdir());
    mkdir(sub, 0700);
    const char *p = th_write("sub/rng.ini",
                             "[rngsnap]\nplugin_dir = ../nothing:../plugs\n"
                             "[backend.good]\n");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s", p);
    assert_int_equal(chdir("/"), 0);
    rngsnap *ctx = th_open_ok(ini, 0);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    th_contains(bi.plugin_path, "rngsnap_good.so");
    assert_true(bi.plugin_path[0] == '/');
    rngsnap_close(ctx);

    /* RNGSNAP_PLUGIN_PATH overrides plugin_dir. */
    p = th_write("rng.ini", "[rngsnap]\nplugin_dir = /nonexistent\n"
                            "[backend.good]\n");
    snprintf(ini, sizeof ini, "%s", p);
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    th_contains(msg, "/nonexistent/rngsnap_good.so");
    char env[8192];
    snprintf(env, sizeof env, "/also/nonexistent:%s", th_plugin_dir());
    setenv("RNGSNAP_PLUGIN_PATH", env, 1);
    ctx = th_open_ok(ini, 0);
    rngsnap_close(ctx);
    setenv("RNGSNAP_PLUGIN_PATH", "/also/nonexistent", 1);
    msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    th_contains(msg, "/also/nonexistent/rngsnap_good.so",
                "RNGSNAP_PLUGIN_PATH");
    unsetenv("RNGSNAP_PLUGIN_PATH");

    /* plugin = a path, relative to the ini's folder; .so not doubled. */
    p = th_write("rng.ini", "[rngsnap]\n[backend.good]\n"
                            "plugin = plugs/rngsnap_good.so\n"
                            "[backend.good2]\nplugin = rngsnap_good2.so\n");
    snprintf(ini, sizeof ini, "%s", p);
    setenv("RNGSNAP_PLUGIN_PATH", th_plugin_dir(), 1);
    ctx = th_open_ok(ini, 0);
    rngsnap_close(ctx);
    unsetenv("RNGSNAP_PLUGIN_PATH");
}

/* Without plugin_dir nor RNGSNAP_PLUGIN_PATH, the built-in folder is
 * searched, and the message says so. */
static void test_builtin_plugin_dir(void **state)
{
    (void)state;
    const char *p = th_write("rng.ini", "[backend.nosuchbackend]\n");
    const char *msg = th_open_fails(p, 0, RNGSNAP_E_PLUGIN);
    th_contains(msg, "rngsnap_nosuchbackend.so", "built-in plugin folder",
                "[backend.nosuchbackend]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_line_too_long),
        cmocka_unit_test(test_name_limits),
        cmocka_unit_test(test_stream_list_lines),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_good_forms),
        cmocka_unit_test(test_plugin_dir_forms),
        cmocka_unit_test(test_builtin_plugin_dir),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
