/*
 * file_util.c - helpers shared by inspect, verify and diff: open a
 * checkpoint with a clear message, name a section and a state format.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rngsnap/backend.h>

#include "cli.h"

/* The last failure of cli_file_open, for --json error objects. */
static char last_err[1024];
static int last_rc;

const char *cli_file_error(int *rc)
{
    if (rc)
        *rc = last_rc;
    return last_err;
}

void cli_set_file_error(int rc, const char *msg)
{
    last_rc = rc;
    snprintf(last_err, sizeof last_err, "%s", msg);
}

const char *cli_iso_time(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm))
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
        snprintf(buf, len, "?");
    return buf;
}

int cli_file_open(const char *cmd, const char *path, rngsnap_file **out,
                  int corrupt_is_check)
{
    char err[1024] = "";
    int rc = rngsnap_file_open(path, out, err, sizeof err);
    if (rc == RNGSNAP_OK)
        return CLI_OK;
    last_rc = rc;
    snprintf(last_err, sizeof last_err, "%s", err[0] ? err
             : rngsnap_strerror(rc));
    /* The library's message usually starts with the path already. */
    size_t pl = strlen(path);
    int named = strncmp(err, path, pl) == 0 && err[pl] == ':';
    cli_err(cmd, "%s%s%s (%s)", named ? "" : path, named ? "" : ": ",
            err[0] ? err : rngsnap_strerror(rc), rngsnap_error_name(rc));
    return rc == RNGSNAP_E_CORRUPT && corrupt_is_check ? CLI_FAIL : CLI_USAGE;
}

const char *cli_format_name(uint32_t format, char *buf, size_t len)
{
    if (format == RNGSNAP_STATE_PHILOX4X32_10) {
        snprintf(buf, len, "philox4x32-10");
        return buf;
    }
    /* Formats are usually four ASCII characters, little-endian. */
    char c[5];
    int printable = 1;
    for (int i = 0; i < 4; i++) {
        c[i] = (char)((format >> (8 * i)) & 0xff);
        if (!isprint((unsigned char)c[i]))
            printable = 0;
    }
    c[4] = '\0';
    if (printable)
        snprintf(buf, len, "%s", c);
    else
        snprintf(buf, len, "0x%08x", (unsigned)format);
    return buf;
}

const char *cli_section_label(const rngsnap_file_section *s, char *buf,
                              size_t len)
{
    if (s->kind == RNGSNAP_SECTION_STREAM)
        snprintf(buf, len, "%s:%d/%s", s->backend ? s->backend : "?",
                 s->device, s->name ? s->name : "?");
    else
        snprintf(buf, len, "app:%s", s->name ? s->name : "?");
    return buf;
}
