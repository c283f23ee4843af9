/* What the libFuzzer harnesses of tests/fuzz/ share: the loaders read paths, so each input is written to a
 * file of the harness's own temporary directory first. Built by `make fuzz` (clang, -fsanitize=fuzzer);
 * tests/fuzz/README.md. */
#ifndef LC_TESTS_FUZZ_KIT_H
#define LC_TESTS_FUZZ_KIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "longctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* $TMPDIR/longctx-fuzz-XXXXXX, made once, removed at exit with what is in it. */
static char fuzz_dir[512];
static char fuzz_paths[4][600];

static void fuzz_cleanup(void) {
    for (int i = 0; i < 4; i++)
        if (fuzz_paths[i][0]) unlink(fuzz_paths[i]);
    if (fuzz_dir[0]) rmdir(fuzz_dir);
}

/* The path of file `slot` (0..3) holding data[0..size), or NULL when it cannot be written. */
static const char *fuzz_file(int slot, const void *data, size_t size) {
    if (!fuzz_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/longctx-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fuzz_dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fuzz_cleanup);
    }
    snprintf(fuzz_paths[slot], sizeof fuzz_paths[slot], "%s/input%d", fuzz_dir, slot);
    FILE *f = fopen(fuzz_paths[slot], "wb");
    if (!f) return NULL;
    const int ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !ok) return NULL;
    return fuzz_paths[slot];
}

/* A failure must leave one message, naming what failed: an empty one is a bug the harness reports. Returns st. */
static lc_status fuzz_expect_message(lc_status st) {
    if (st && !lc_last_error()[0]) {
        fprintf(stderr, "fuzz: status %d without a message\n", (int)st);
        abort();
    }
    return st;
}

#endif
