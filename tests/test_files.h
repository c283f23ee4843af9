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

/* The whole file (NUL-terminated; free() it) and its size in *n; NULL when it cannot be opened. */
static inline char *slurp_file(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)*n + 1);
    if (s && fread(s, 1, (size_t)*n, f) != (size_t)*n) *n = 0;
    fclose(f);
    if (s) s[*n] = 0;
    return s;
}

/* A copy of src at dst with the first `from` after its first 8 bytes (a safetensors header: its length)
 * replaced by `to` of the same length; a CHECK fails when there is none. */
static inline void file_edit(const char *src, const char *dst, const char *from, const char *to) {
    long n;
    char *s = slurp_file(src, &n);
    char *at = s ? strstr(s + 8, from) : NULL;
    CHECK(at && strlen(from) == strlen(to), "edit %s", from);
    if (at) memcpy(at, to, strlen(to));
    if (s) write_file(dst, s, (size_t)n);
    free(s);
}

#endif
