/*
 * plugin_files.c - see plugin_files.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "plugin_files.h"

const char *pf_path(const char *rel)
{
    static char buf[4][4096 + 512];
    static unsigned next;
    static char real[4096];
    if (!real[0] && !realpath(th_tmpdir(), real))
        fail_msg("realpath %s failed", th_tmpdir());
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", real, rel);
    return p;
}

const char *pf_mkdir(const char *rel, mode_t mode)
{
    const char *p = pf_path(rel);
    if (mkdir(p, 0700) != 0 || chmod(p, mode) != 0)
        fail_msg("mkdir/chmod %s failed", p);
    return p;
}

const char *pf_copy_plugin(const char *variant, const char *dir,
                           mode_t mode)
{
    char src[4096 + 64], rel[512];
    snprintf(src, sizeof src, "%s/rngsnap_%s.so", th_plugin_dir(), variant);
    snprintf(rel, sizeof rel, "%s/rngsnap_%s.so", dir, variant);
    const char *dst = pf_path(rel);
    FILE *in = fopen(src, "rb");
    FILE *out = fopen(dst, "wb");
    if (!in || !out)
        fail_msg("cannot copy %s to %s", src, dst);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            fail_msg("write %s failed", dst);
    fclose(in);
    if (fclose(out) != 0 || chmod(dst, mode) != 0)
        fail_msg("close/chmod %s failed", dst);
    return dst;
}

void pf_chmod(const char *rel, mode_t mode)
{
    if (chmod(pf_path(rel), mode) != 0)
        fail_msg("chmod %s failed", pf_path(rel));
}

void pf_chown(const char *rel, uid_t uid)
{
    if (chown(pf_path(rel), uid, (gid_t)-1) != 0)
        fail_msg("chown %s failed", pf_path(rel));
}

const char *pf_owner(uid_t uid)
{
    static char buf[300];
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(buf, sizeof buf, "%u (%s)", (unsigned)uid, pw->pw_name);
    else
        snprintf(buf, sizeof buf, "%u", (unsigned)uid);
    return buf;
}

void pf_marker_reset(void)
{
    const char *p = pf_path("ctor-marker");
    unlink(p);
    setenv("RNGSNAP_TEST_CTOR_MARKER", p, 1);
}

int pf_marker_lines(void)
{
    FILE *f = fopen(pf_path("ctor-marker"), "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int pf_saved_stderr = -1;

void pf_stderr_begin(void)
{
    fflush(stderr);
    int fd = open(pf_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC,
                  0600);
    pf_saved_stderr = dup(2);
    if (fd < 0 || pf_saved_stderr < 0 || dup2(fd, 2) < 0)
        fail_msg("cannot redirect stderr");
    close(fd);
}

const char *pf_stderr_end(void)
{
    static char text[16384];
    fflush(stderr);
    dup2(pf_saved_stderr, 2);
    close(pf_saved_stderr);
    pf_saved_stderr = -1;
    FILE *f = fopen(pf_path("stderr.txt"), "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    return text;
}
