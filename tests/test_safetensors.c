/* Tests for train/safetensors: round trips of F32/I32 tensors with metadata, the exact bytes of a tiny
 * file, atomic writes that leave an existing file alone on failure, every validation error on reading,
 * truncation and corruption fuzzing (never a crash), lc_st_read's checks, and a fixture written by an
 * independent Python writer (tests/reference/make_st_fixture.py). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "harness.h"
#include "train/safetensors.h"

static char scratch_dir[64];

/* A path inside the scratch directory (one static buffer per call site is enough for these tests). */
static const char *scratch(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", scratch_dir, name);
    return buf;
}

static unsigned char *read_whole(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    *size = fread(buf, 1, (size_t)n, fp);
    fclose(fp);
    return buf;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return;
    if (n) fwrite(bytes, 1, n, fp);
    fclose(fp);
}

/* A file with the given 8-byte size field, header text and data bytes. */
static void write_raw(const char *path, unsigned long long header_size, const char *header, const void *data,
                      size_t data_size) {
    size_t h = strlen(header), n = 8 + h + data_size;
    unsigned char *buf = malloc(n);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(header_size >> (8 * i));
    memcpy(buf + 8, header, h);
    if (data_size) memcpy(buf + 8 + h, data, data_size);
    write_bytes(path, buf, n);
    free(buf);
}

static void write_header(const char *path, const char *header, size_t data_size) {
    unsigned char data[64] = {0};
    write_raw(path, strlen(header), header, data, data_size);
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Whether a temporary file of path's writer (path.tmp.<pid>.<random>) is left in its directory. */
static int temp_file_left(const char *path) {
    char dir[256], prefix[160];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return found;
}

TEST(test_st_round_trip) {
    float scalar = 3.25f, vec[5] = {1, -2, 3.5f, 1e-30f, -0.0f}, cube[24], empty_dummy = 0;
    int32_t table[6] = {0, -1, 2147483647, -2147483647 - 1, 42, 7}, rank8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 24; i++) cube[i] = (float)i * 0.25f - 3;
    lc_st_tensor in[] = {
        {"scalar", LC_DT_F32, 0, {0}, &scalar},
        {"layers.0.vec", LC_DT_F32, 1, {5}, vec},
        {"cube", LC_DT_F32, 3, {2, 3, 4}, cube},
        {"tokens \"quoted\" \xc3\xa9", LC_DT_I32, 2, {3, 2}, table},
        {"empty", LC_DT_F32, 2, {0, 3}, &empty_dummy},
        {"rank8", LC_DT_I32, 8, {1, 2, 1, 2, 1, 1, 1, 2}, rank8},
    };
    lc_st_meta meta[] = {{"format", "pt"}, {"config", "{\"d\": 32}\n\ttab \xe2\x9c\x93"}};
    char path[128];
    scratch("round_trip.safetensors", path, sizeof path);
    CHECK(lc_st_write(path, in, 6, meta, 2) == LC_OK, "write: %s", lc_last_error());
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK, "open: %s", lc_last_error());
    if (!f) return;
    CHECK(strcmp(lc_st_path(f), path) == 0, "path");
    CHECK(lc_st_count(f) == 6, "count %d", lc_st_count(f));
    CHECK(lc_st_at(f, 6) == NULL && lc_st_at(f, -1) == NULL, "out-of-range index");
    for (int i = 0; i < 6 && i < lc_st_count(f); i++) {
        const lc_st_tensor *t = lc_st_at(f, i);
        CHECK(strcmp(t->name, in[i].name) == 0, "tensor %d is %s", i, t->name);
        CHECK(t->dtype == in[i].dtype && t->ndim == in[i].ndim, "%s dtype/rank", t->name);
        CHECK(memcmp(t->shape, in[i].shape, (size_t)t->ndim * sizeof(long)) == 0, "%s shape", t->name);
        CHECK(lc_st_find(f, in[i].name) == t, "find %s", in[i].name);
        CHECK(((uintptr_t)t->data & 3) == 0, "%s data aligned", t->name);
    }
    CHECK(lc_st_find(f, "nope") == NULL, "find absent");
    float got_vec[5], got_cube[24], got_scalar = 0;
    int32_t got_table[6], got_rank8[8];
    CHECK(lc_st_read(f, "scalar", LC_DT_F32, 0, NULL, &got_scalar) == LC_OK && got_scalar == scalar, "scalar");
    CHECK(lc_st_read(f, "layers.0.vec", LC_DT_F32, 1, in[1].shape, got_vec) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(got_vec, vec, sizeof vec) == 0, "vec bits (incl. -0 and denormal-range values)");
    CHECK(lc_st_read(f, "cube", LC_DT_F32, 3, in[2].shape, got_cube) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(got_cube, cube, sizeof cube) == 0, "cube values");
    CHECK(lc_st_read(f, in[3].name, LC_DT_I32, 2, in[3].shape, got_table) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(got_table, table, sizeof table) == 0, "i32 table");
    CHECK(lc_st_read(f, "empty", LC_DT_F32, 2, in[4].shape, &empty_dummy) == LC_OK, "%s", lc_last_error());
    CHECK(lc_st_read(f, "rank8", LC_DT_I32, 8, in[5].shape, got_rank8) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(got_rank8, rank8, sizeof rank8) == 0, "rank 8");
    CHECK(lc_st_get_meta(f, "format") && strcmp(lc_st_get_meta(f, "format"), "pt") == 0, "meta format");
    CHECK(lc_st_get_meta(f, "config") && strcmp(lc_st_get_meta(f, "config"), meta[1].value) == 0, "meta config");
    CHECK(lc_st_get_meta(f, "absent") == NULL, "meta absent");
    lc_st_close(f);
    CHECK(!temp_file_left(path), "no temporary file left");
}

TEST(test_st_tiny_file_bytes) {
    float values[2] = {1.0f, -2.0f};
    lc_st_tensor t = {"t", LC_DT_F32, 1, {2}, values};
    char path[128];
    scratch("tiny.safetensors", path, sizeof path);
    CHECK(lc_st_write(path, &t, 1, NULL, 0) == LC_OK, "write: %s", lc_last_error());
    size_t size = 0;
    unsigned char *b = read_whole(path, &size);
    if (!b) return;
    unsigned long long n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    const char *json = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t json_len = strlen(json), padded = (json_len + 7) / 8 * 8;
    CHECK(n == padded && (8 + n) % 8 == 0, "header size %llu, want %zu (data 8-aligned)", n, padded);
    CHECK(size == 8 + padded + 8, "file size %zu", size);
    CHECK(b[8] == '{' && memcmp(b + 8, json, json_len) == 0, "header text: %.*s", (int)n, (char *)b + 8);
    for (size_t i = 8 + json_len; i < 8 + padded && i < size; i++) CHECK(b[i] == ' ', "padding byte %zu", i);
    unsigned char want[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* 1.0f, -2.0f little-endian */
    CHECK(size >= 8 + padded + 8 && memcmp(b + 8 + padded, want, 8) == 0, "data bytes");
    lc_json *root = NULL;
    CHECK(lc_json_parse((char *)b + 8, (size_t)n, "tiny", &root) == LC_OK, "header parses: %s", lc_last_error());
    const lc_json *offsets = lc_json_member(lc_json_member(root, "t"), "data_offsets");
    CHECK(offsets && offsets->count == 2 && offsets->items[0].integer == 0 && offsets->items[1].integer == 8,
          "data_offsets [0, 8]");
    lc_json_free(root);
    free(b);
}

TEST(test_st_metadata_only_and_empty) {
    char path[128];
    scratch("empty.safetensors", path, sizeof path);
    CHECK(lc_st_write(path, NULL, 0, NULL, 0) == LC_OK, "write nothing: %s", lc_last_error());
    size_t size = 0;
    unsigned char *b = read_whole(path, &size);
    CHECK(b && size == 16 && memcmp(b + 8, "{}      ", 8) == 0 && b[0] == 8, "empty file layout");
    free(b);
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK && lc_st_count(f) == 0, "open empty: %s", lc_last_error());
    lc_st_close(f);
    lc_st_meta meta = {"only", "metadata"};
    CHECK(lc_st_write(path, NULL, 0, &meta, 1) == LC_OK, "write metadata only: %s", lc_last_error());
    CHECK(lc_st_open(path, &f) == LC_OK && strcmp(lc_st_get_meta(f, "only"), "metadata") == 0, "%s", lc_last_error());
    lc_st_close(f);
}

/* A file that must survive failed writes over it. */
static unsigned char *write_old_file(const char *path, size_t *size) {
    float v[3] = {7, 8, 9};
    lc_st_tensor t = {"old", LC_DT_F32, 1, {3}, v};
    lc_st_write(path, &t, 1, NULL, 0);
    return read_whole(path, size);
}

static int same_contents(const char *path, const unsigned char *want, size_t want_size) {
    size_t size = 0;
    unsigned char *b = read_whole(path, &size);
    int same = b && size == want_size && memcmp(b, want, size) == 0;
    free(b);
    return same;
}

TEST(test_st_atomic_write_failures) {
    static float big[4096];
    lc_st_tensor t = {"big", LC_DT_F32, 1, {4096}, big};
    char path[128];
    scratch("no/such/dir/x.safetensors", path, sizeof path);
    CHECK(lc_st_write(path, &t, 1, NULL, 0) == LC_ERR_IO, "missing directory");
    CHECK(strstr(lc_last_error(), path) && strstr(lc_last_error(), strerror(ENOENT)), "msg: %s", lc_last_error());

    scratch("a_directory", path, sizeof path);
    mkdir(path, 0755);
    CHECK(lc_st_write(path, &t, 1, NULL, 0) == LC_ERR_ARG, "path is a directory"); /* refused before writing */
    CHECK(strstr(lc_last_error(), path) && strstr(lc_last_error(), "a directory"), "msg: %s", lc_last_error());
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "directory untouched");
    CHECK(!temp_file_left(path), "temporary file removed");

    size_t old_size = 0;
    scratch("kept.safetensors", path, sizeof path);
    unsigned char *old = write_old_file(path, &old_size);

    /* A write that fails half-way: the file-size limit makes write() fail with EFBIG. */
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 1000;
    void (*previous)(int) = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &small) == 0) {
        lc_status s = lc_st_write(path, &t, 1, NULL, 0);
        setrlimit(RLIMIT_FSIZE, &saved);
        CHECK(s == LC_ERR_IO, "write past the size limit: status %d", (int)s);
        CHECK(strstr(lc_last_error(), path) && strstr(lc_last_error(), strerror(EFBIG)), "msg: %s", lc_last_error());
        CHECK(same_contents(path, old, old_size), "old file intact after a failed write");
        CHECK(!temp_file_left(path), "temporary file removed after a failed write");
    }
    signal(SIGXFSZ, previous);
    CHECK(lc_st_write(path, &t, 1, NULL, 0) == LC_OK, "then a write succeeds: %s", lc_last_error());
    free(old);
}

TEST(test_st_write_bad_arguments) {
    float v[2] = {1, 2};
    char path[128];
    scratch("bad_args.safetensors", path, sizeof path);
    lc_st_tensor dup[2] = {{"a", LC_DT_F32, 1, {2}, v}, {"a", LC_DT_F32, 1, {2}, v}};
    CHECK(lc_st_write(path, dup, 2, NULL, 0) == LC_ERR_ARG && strstr(lc_last_error(), "named a"), "%s",
          lc_last_error());
    lc_st_tensor reserved = {"__metadata__", LC_DT_F32, 1, {2}, v};
    CHECK(lc_st_write(path, &reserved, 1, NULL, 0) == LC_ERR_ARG, "reserved name");
    lc_st_tensor negative = {"n", LC_DT_F32, 1, {-2}, v};
    CHECK(lc_st_write(path, &negative, 1, NULL, 0) == LC_ERR_ARG, "negative dimension");
    lc_st_tensor other = {"o", LC_DT_OTHER, 1, {2}, v};
    CHECK(lc_st_write(path, &other, 1, NULL, 0) == LC_ERR_ARG, "unsupported dtype");
    lc_st_tensor no_data = {"d", LC_DT_F32, 1, {2}, NULL};
    CHECK(lc_st_write(path, &no_data, 1, NULL, 0) == LC_ERR_ARG, "no data");
    lc_st_tensor rank9 = {"r", LC_DT_F32, 9, {1}, v};
    CHECK(lc_st_write(path, &rank9, 1, NULL, 0) == LC_ERR_ARG, "rank 9");
    lc_st_tensor bad_utf8 = {"\xff", LC_DT_F32, 1, {2}, v};
    CHECK(lc_st_write(path, &bad_utf8, 1, NULL, 0) == LC_ERR_ARG, "invalid UTF-8 name");
    lc_st_meta meta_dup[2] = {{"k", "1"}, {"k", "2"}};
    CHECK(lc_st_write(path, NULL, 0, meta_dup, 2) == LC_ERR_ARG, "duplicate metadata key");
    lc_st_meta meta_null = {"k", NULL};
    CHECK(lc_st_write(path, NULL, 0, &meta_null, 1) == LC_ERR_ARG, "NULL metadata value");
    CHECK(!file_exists(path), "nothing written");
}

/* Opening `path` fails with `code` and a message that names the file and contains `needle`. */
static void expect_open_error(const char *path, lc_status code, const char *needle, const char *label) {
    lc_st_file *f = (lc_st_file *)1;
    lc_status s = lc_st_open(path, &f);
    CHECK(s == code && f == NULL, "%s: status %d (%s), want %d", label, (int)s, lc_last_error(), (int)code);
    CHECK(strstr(lc_last_error(), path) == lc_last_error(), "%s: message does not start with the path: %s", label,
          lc_last_error());
    CHECK(strstr(lc_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", label, lc_last_error(), needle);
    CHECK(strchr(lc_last_error(), '\n') == NULL, "%s: message is one line", label);
}

TEST(test_st_open_file_errors) {
    char path[128];
    expect_open_error(scratch("missing.safetensors", path, sizeof path), LC_ERR_IO, strerror(ENOENT), "missing");
    scratch("dir.safetensors", path, sizeof path);
    mkdir(path, 0755);
    expect_open_error(path, LC_ERR_IO, "is a directory", "directory");
    scratch("bad.safetensors", path, sizeof path);
    write_bytes(path, "", 0);
    expect_open_error(path, LC_ERR_FORMAT, "empty", "empty file");
    write_bytes(path, "\x02\0\0\0\0", 5);
    expect_open_error(path, LC_ERR_FORMAT, "fewer than the 8-byte", "5 bytes");
    write_raw(path, 0, "{}", NULL, 0);
    expect_open_error(path, LC_ERR_FORMAT, "header size is 0", "zero header size");
    write_raw(path, 1ull << 40, "{}", NULL, 0);
    expect_open_error(path, LC_ERR_FORMAT, "not a safetensors checkpoint (its first 8 bytes give a header size of", "absurd header size");
    write_raw(path, 100000001, "{}", NULL, 0);
    expect_open_error(path, LC_ERR_FORMAT, "absurd", "header size just over the limit");
    write_raw(path, 3, "{}", NULL, 0);
    expect_open_error(path, LC_ERR_FORMAT, "not a safetensors checkpoint, or a truncated one (header size 3 exceeds", "header size past the end");
    write_raw(path, ~0ull, "{}", NULL, 0);
    expect_open_error(path, LC_ERR_FORMAT, "absurd", "header size 2^64-1");
}

/* Each header (with data_size zero bytes of data) must fail to open with a message containing needle. */
TEST(test_st_open_header_errors) {
    struct { const char *header; size_t data_size; const char *needle; } cases[] = {
        {"{\"a\":", 0, "JSON error at byte 5"},
        {"[1]", 0, "not an object"},
        {"\"x\"", 0, "not an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "JSON error"},
        {"{\"\xff\":1}", 0, "invalid UTF-8"},
        {"{\"a\":[]}", 0, "header entry must be an object, found array"},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype: missing"},
        {"{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype: expected a string"},
        {"{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype \"Q7\""},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}",
         4, "\"shape\" must be an array of integers, found nothing"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}",
         4, "\"shape\" must be an array of integers, found number"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}",
         4, "shape[0]: expected an integer, found string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "shape[0]: expected an integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape[0]: -1 is outside"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,99999999999999999999],\"data_offsets\":[0,4]}}", 4,
         "shape[1]: expected an integer in [0, 576460752303423488], found 1e+20"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1152921504606846976],\"data_offsets\":[0,4]}}", 4, "outside"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, "more bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "9 dimensions"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "\"data_offsets\" must be"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "\"data_offsets\" must be"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4, "\"data_offsets\" must be"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "end before they begin"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4, "data_offsets: 8 is outside [0, 4]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "outside"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
         8, "span 4 bytes but shape [2] of F32 needs 8"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}}", 4, "span 0 bytes"},
        {"{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 2, "fraction"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "unused bytes [4, 8)"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "has 8 bytes but the tensors cover 4"},
        {"{}", 4, "has 4 bytes but the tensors cover 0"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate key \"a\""},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata value for key \"k\": expected a string, found number"},
        {"{\"__metadata__\":{\"k\":null}}", 0, "expected a string, found null"},
        {"{\"__metadata__\":[\"k\"]}", 0, "__metadata__ must be an object of strings, found array"},
        {"{\"__metadata__\":\"k\"}", 0, "found string"},
    };
    char path[128];
    scratch("header_case.safetensors", path, sizeof path);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_header(path, cases[i].header, cases[i].data_size);
        char label[32];
        snprintf(label, sizeof label, "header case %zu", i);
        expect_open_error(path, LC_ERR_FORMAT, cases[i].needle, label);
    }
}

TEST(test_st_valid_handmade_headers) {
    /* Whitespace, unknown extra fields, a zero-size tensor sharing an offset, out-of-order offsets. */
    const char *header = " { \"b\" : {\"dtype\":\"I32\", \"shape\":[1], \"data_offsets\":[4,8], \"extra\":[1]},\n"
                         "\"z\":{\"dtype\":\"F32\",\"shape\":[0,7],\"data_offsets\":[4,4]},"
                         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\t";
    unsigned char data[8] = {0, 0, 0x80, 0x3f, 5, 0, 0, 0};
    char path[128];
    scratch("handmade.safetensors", path, sizeof path);
    write_raw(path, strlen(header), header, data, 8);
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK, "open: %s", lc_last_error());
    if (!f) return;
    float a = 0;
    int32_t b = 0;
    long one = 1;
    CHECK(lc_st_read(f, "a", LC_DT_F32, 1, &one, &a) == LC_OK && a == 1.0f, "a = %g", a);
    CHECK(lc_st_read(f, "b", LC_DT_I32, 1, &one, &b) == LC_OK && b == 5, "b = %d", b);
    CHECK(strcmp(lc_st_at(f, 0)->name, "b") == 0 && strcmp(lc_st_at(f, 2)->name, "a") == 0, "header order");
    lc_st_close(f);
}

TEST(test_st_read_checks) {
    float w[16] = {0};
    lc_st_tensor t = {"blocks.0.ln1.weight", LC_DT_F32, 1, {16}, w};
    char path[128];
    scratch("ckpt.safetensors", path, sizeof path);
    CHECK(lc_st_write(path, &t, 1, NULL, 0) == LC_OK, "write: %s", lc_last_error());
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK, "open: %s", lc_last_error());
    if (!f) return;
    float dst[64];
    char want[256];
    long expect32 = 32, expect_2d[2] = {4, 4};
    CHECK(lc_st_read(f, "blocks.0.ln1.weight", LC_DT_F32, 1, &expect32, dst) == LC_ERR_FORMAT, "shape mismatch");
    snprintf(want, sizeof want, "%s: tensor blocks.0.ln1.weight has shape [16] but the model expects [32]", path);
    CHECK(strcmp(lc_last_error(), want) == 0, "message \"%s\"", lc_last_error());
    CHECK(lc_st_read(f, "blocks.0.ln1.weight", LC_DT_F32, 2, expect_2d, dst) == LC_ERR_FORMAT, "rank mismatch");
    CHECK(strstr(lc_last_error(), "has shape [16] but the model expects [4, 4]"), "msg: %s", lc_last_error());
    CHECK(lc_st_read(f, "blocks.0.ln1.weight", LC_DT_I32, 1, t.shape, dst) == LC_ERR_FORMAT, "dtype mismatch");
    CHECK(strstr(lc_last_error(), "has dtype F32 but I32 was expected"), "msg: %s", lc_last_error());
    CHECK(lc_st_read(f, "blocks.1.ln1.weight", LC_DT_F32, 1, t.shape, dst) == LC_ERR_FORMAT, "missing tensor");
    snprintf(want, sizeof want, "%s: no tensor named blocks.1.ln1.weight", path);
    CHECK(strcmp(lc_last_error(), want) == 0, "message \"%s\"", lc_last_error());
    CHECK(lc_st_read(f, "blocks.0.ln1.weight", LC_DT_F32, 9, t.shape, dst) == LC_ERR_ARG, "bad rank argument");
    lc_st_close(f);
}

TEST(test_st_unsupported_dtype_opens) {
    const char *header = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                         "\"bf\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]},"
                         "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
    unsigned char data[12] = {0, 0x3c, 0, 0xc0, 0x80, 0x3f, 0, 0, 0, 0, 0x20, 0x41};
    char path[128];
    scratch("f16.safetensors", path, sizeof path);
    write_raw(path, strlen(header), header, data, 12);
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK, "open: %s", lc_last_error());
    if (!f) return;
    const lc_st_tensor *h = lc_st_find(f, "h");
    CHECK(h && h->dtype == LC_DT_OTHER && h->ndim == 1 && h->shape[0] == 2, "F16 tensor listed");
    CHECK(h && memcmp(h->data, data, 4) == 0, "F16 raw bytes");
    float dst[2], x = 0;
    long two = 2, one = 1;
    CHECK(lc_st_read(f, "h", LC_DT_F32, 1, &two, dst) == LC_ERR_FORMAT, "reading F16 fails");
    CHECK(strstr(lc_last_error(), path) && strstr(lc_last_error(), "tensor h has dtype F16"), "msg: %s",
          lc_last_error());
    CHECK(lc_st_read(f, "bf", LC_DT_F32, 1, &two, dst) == LC_ERR_FORMAT && strstr(lc_last_error(), "BF16"), "bf16");
    CHECK(lc_st_read(f, "f", LC_DT_F32, 1, &one, &x) == LC_OK && x == 10.0f, "the F32 tensor reads: %g", x);
    lc_st_close(f);
}

/* A small valid file whose bytes the fuzz tests mangle. */
static unsigned char *fuzz_seed_file(const char *path, size_t *size) {
    float a[6] = {1, 2, 3, 4, 5, 6};
    int32_t b[3] = {-1, 0, 1};
    lc_st_tensor t[2] = {{"w", LC_DT_F32, 2, {2, 3}, a}, {"ids", LC_DT_I32, 1, {3}, b}};
    lc_st_meta meta = {"k", "v"};
    lc_st_write(path, t, 2, &meta, 1);
    return read_whole(path, size);
}

/* Open path; if it opens, touch everything it offers. Returns the status. */
static lc_status open_and_walk(const char *path) {
    lc_st_file *f = NULL;
    lc_status s = lc_st_open(path, &f);
    CHECK((s == LC_OK) == (f != NULL), "file iff ok");
    CHECK(s == LC_OK || s == LC_ERR_FORMAT, "status %d: %s", (int)s, lc_last_error());
    static unsigned char sink[1 << 16];
    for (int i = 0; f && i < lc_st_count(f); i++) {
        const lc_st_tensor *t = lc_st_at(f, i);
        if (t->dtype != LC_DT_OTHER && lc_st_read(f, t->name, t->dtype, t->ndim, t->shape, sink) != LC_OK)
            CHECK(0, "tensor %s of an opened file does not read: %s", t->name, lc_last_error());
        lc_st_get_meta(f, "k");
    }
    lc_st_close(f);
    return s;
}

TEST(test_st_truncation_fuzz) {
    char path[128], cut[128];
    scratch("seed.safetensors", path, sizeof path);
    scratch("cut.safetensors", cut, sizeof cut);
    size_t size = 0;
    unsigned char *seed = fuzz_seed_file(path, &size);
    if (!seed) return;
    CHECK(open_and_walk(path) == LC_OK, "seed opens: %s", lc_last_error());
    int opened = 0;
    for (size_t len = 0; len < size; len++) {
        write_bytes(cut, seed, len);
        if (open_and_walk(cut) == LC_OK) opened++;
    }
    CHECK(opened == 0, "%d truncations of %zu opened", opened, size);
    free(seed);
}

static unsigned long long rng_state = 0x2545f4914f6cdd1dull;
static unsigned rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state >> 32);
}

TEST(test_st_corruption_fuzz) {
    char path[128], bad[128];
    scratch("seed2.safetensors", path, sizeof path);
    scratch("corrupt.safetensors", bad, sizeof bad);
    size_t size = 0;
    unsigned char *seed = fuzz_seed_file(path, &size);
    if (!seed) return;
    unsigned char *buf = malloc(size);
    const char interesting[] = "0123456789{}[]\",:-e. \xff";
    int opened = 0;
    for (int iter = 0; iter < 400; iter++) {
        memcpy(buf, seed, size);
        int edits = 1 + (int)(rng_next() % 3);
        for (int e = 0; e < edits; e++) {
            unsigned r = rng_next();
            size_t at = (r & 1) ? r % size : (r >> 1) % 16; /* half the edits hit the size field/start */
            buf[at] = (r >> 20) & 1 ? (unsigned char)(r >> 8) : (unsigned char)interesting[(r >> 8) % 22];
        }
        write_bytes(bad, buf, size);
        if (open_and_walk(bad) == LC_OK) opened++;
    }
    printf("  corruption fuzz: %d of 400 corrupted files still opened (edits that left the file valid)\n", opened);
    free(buf);
    free(seed);
}

TEST(test_st_interop_fixture) {
    const char *path = "tests/fixtures/st_interop.safetensors";
    lc_st_file *f = NULL;
    CHECK(lc_st_open(path, &f) == LC_OK, "open: %s", lc_last_error());
    if (!f) return;
    CHECK(lc_st_count(f) == 7, "count %d", lc_st_count(f));
    CHECK(lc_st_get_meta(f, "format") && strcmp(lc_st_get_meta(f, "format"), "pt") == 0, "meta format");
    const char *note = lc_st_get_meta(f, "note");
    CHECK(note && strcmp(note, "h\xc3\xa9llo \"quoted\"\n\xe2\x9c\x93") == 0, "meta note: %s", note ? note : "NULL");
    float embed[12], want_embed[12], ln[4], scalar = 0;
    for (int i = 0; i < 12; i++) want_embed[i] = (float)i * 0.5f - 1.0f;
    long shape_embed[2] = {3, 4}, shape_ln[1] = {4}, shape_tokens[2] = {2, 3};
    CHECK(lc_st_read(f, "embed.weight", LC_DT_F32, 2, shape_embed, embed) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(embed, want_embed, sizeof embed) == 0, "embed.weight values");
    CHECK(lc_st_read(f, "blocks.0.ln1.weight", LC_DT_F32, 1, shape_ln, ln) == LC_OK, "%s", lc_last_error());
    float want_ln[4] = {1.0f, -2.5f, 3.25f, 1e-3f};
    CHECK(memcmp(ln, want_ln, sizeof ln) == 0, "blocks.0.ln1.weight values");
    int32_t tokens[6], want_tokens[6] = {-1, 0, 1, 2147483647, -2147483647 - 1, 7};
    CHECK(lc_st_read(f, "tokens", LC_DT_I32, 2, shape_tokens, tokens) == LC_OK, "%s", lc_last_error());
    CHECK(memcmp(tokens, want_tokens, sizeof tokens) == 0, "tokens");
    CHECK(lc_st_read(f, "scalar", LC_DT_F32, 0, NULL, &scalar) == LC_OK && scalar == 3.5f, "scalar %g", scalar);
    const lc_st_tensor *half = lc_st_find(f, "half"), *step = lc_st_find(f, "step"), *e = lc_st_find(f, "empty");
    CHECK(half && half->dtype == LC_DT_OTHER && half->shape[0] == 3, "F16 tensor listed");
    CHECK(step && step->dtype == LC_DT_OTHER && step->ndim == 0, "I64 scalar listed");
    int64_t step_value = 0;
    if (step) memcpy(&step_value, step->data, 8);
    CHECK(step_value == 123456789012LL, "I64 raw bytes %lld", (long long)step_value);
    CHECK(e && e->ndim == 2 && e->shape[0] == 0 && e->shape[1] == 5, "empty tensor");
    lc_st_close(f);
}

static void remove_scratch(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch_dir);
    if (system(cmd) != 0) printf("  could not remove %s\n", scratch_dir);
}

int main(void) {
    snprintf(scratch_dir, sizeof scratch_dir, "/tmp/lc_test_st_XXXXXX");
    if (!mkdtemp(scratch_dir)) {
        printf("cannot create a scratch directory: %s\n", strerror(errno));
        return 1;
    }
    RUN(test_st_round_trip);
    RUN(test_st_tiny_file_bytes);
    RUN(test_st_metadata_only_and_empty);
    RUN(test_st_atomic_write_failures);
    RUN(test_st_write_bad_arguments);
    RUN(test_st_open_file_errors);
    RUN(test_st_open_header_errors);
    RUN(test_st_valid_handmade_headers);
    RUN(test_st_read_checks);
    RUN(test_st_unsupported_dtype_opens);
    RUN(test_st_truncation_fuzz);
    RUN(test_st_corruption_fuzz);
    RUN(test_st_interop_fixture);
    remove_scratch();
    return test_summary("test_safetensors");
}
