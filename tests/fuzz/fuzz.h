/*
 * fuzz.h - what the fuzz targets of tests/fuzz share: the libFuzzer entry
 * point each target defines, the checksum repair that lets mutated
 * checkpoints past their checksums, and a check that aborts (so that
 * libFuzzer and the replay test both see a broken invariant as a crash).
 *
 * Each target is built two ways: with clang's -fsanitize=fuzzer (a
 * fuzzer; only when the compiler is clang), and with replay.c's main
 * (any compiler; runs the target over the committed corpus as a test).
 */
#ifndef RNGSNAP_FUZZ_H
#define RNGSNAP_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of the library is broken: say which, then crash. */
#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__,      \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* A copy of data (free()) whose header, section and trailer checksums,
 * and trailer file size, are made right wherever the structure lets them
 * be found (docs/format.md).  Everything else is left as the fuzzer
 * wrote it, so that mutations reach the checks behind the checksums. */
uint8_t *fuzz_fix_checksums(const uint8_t *data, size_t size);

#endif
