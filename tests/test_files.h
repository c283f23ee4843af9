/* Temporary files for the tests/test_*.c programs that read and write files: one fresh directory per
 * program (tmpdir_create in main, tmpdir_remove before test_summary), paths inside it and whole-file
 * writes. Include after harness.h. */
#ifndef LC_TESTS_TEST_FILES_H
#define LC_TESTS_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

/* Creates tmpdir from a mkdtemp template ("/tmp/lc_test_x_XXXXXX"); 0 on success, else prints why. */
static inline int tmpdir_create(const char *template_) {
    snprintf(tmpdir, sizeof tmpdir, "%s", template_);
    if (mkdtemp(tmpdir)) return 0;
    perror(template_);
    return -1;
}

/* Removes tmpdir and everything the tests left in it. */
static inline void tmpdir_remove(void) {
    char cmd[sizeof tmpdir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("  note: could not remove %s\n", tmpdir);
}

/* tmpdir/name, in one of 8 rotating static buffers (so a few paths can be alive at once). */
static inline const char *tmp_path(const char *name) {
    static char paths[8][sizeof tmpdir + 256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    return p;
}

/* Writes n bytes to path; a file the test cannot write ends the program (nothing after it would mean much). */
static inline void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        printf("cannot write %s\n", path);
        exit(1);
    }
}

static inline void write_text(const char *path, const char *s) { write_file(path, s, strlen(s)); }

#endif
