/* Safetensors files (see safetensors.h): the header is built and parsed with core/json; writes go through
 * the atomic writer of core/files.h (a temporary file fsynced and renamed over the target); reads load the header and the data
 * section (64-byte aligned) and validate every field before anything is handed out. */
#include "train/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/json.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes tensor data as it lies in memory, so it needs a little-endian machine"
#endif

#define LC_ST_MAX_HEADER 100000000ull    /* the reference implementation's limit */
#define LC_ST_MAX_DATA (1ull << 56)      /* keeps byte and bit counts far from overflow */
#define LC_ST_METADATA_KEY "__metadata__"

/* Every dtype of the reference format, so files holding ones we do not convert still open. */
typedef struct {
    const char *name;
    int bits;
    lc_dtype dtype;
} lc_st_dtype_info;

static const lc_st_dtype_info lc_st_dtypes[] = {
    {"F32", 32, LC_DT_F32},       {"I32", 32, LC_DT_I32},       {"BOOL", 8, LC_DT_OTHER},
    {"U8", 8, LC_DT_OTHER},       {"I8", 8, LC_DT_OTHER},       {"F8_E5M2", 8, LC_DT_OTHER},
    {"F8_E4M3", 8, LC_DT_OTHER},  {"F8_E8M0", 8, LC_DT_OTHER},  {"I16", 16, LC_DT_OTHER},
    {"U16", 16, LC_DT_OTHER},     {"F16", 16, LC_DT_OTHER},     {"BF16", 16, LC_DT_OTHER},
    {"U32", 32, LC_DT_OTHER},     {"F64", 64, LC_DT_OTHER},     {"I64", 64, LC_DT_OTHER},
    {"U64", 64, LC_DT_OTHER},     {"C64", 64, LC_DT_OTHER},     {"F4", 4, LC_DT_OTHER},
    {"F6_E2M3", 6, LC_DT_OTHER},  {"F6_E3M2", 6, LC_DT_OTHER},
};
#define LC_ST_N_DTYPES (int)(sizeof lc_st_dtypes / sizeof *lc_st_dtypes)

static const lc_st_dtype_info *lc_st_dtype_by_name(const char *name) {
    for (int i = 0; i < LC_ST_N_DTYPES; i++)
        if (strcmp(lc_st_dtypes[i].name, name) == 0) return &lc_st_dtypes[i];
    return NULL;
}

static const char *lc_st_dtype_string(lc_dtype dtype) {
    return dtype == LC_DT_F32 ? "F32" : dtype == LC_DT_I32 ? "I32" : "unsupported";
}

/* "[2, 3]" into buf (large enough for LC_ST_MAX_DIMS dimensions). */
static const char *lc_st_format_shape(int ndim, const long *shape, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%ld", i ? ", " : "", shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static int lc_st_compare_strings(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name that occurs twice in names[0..n), or NULL. Sorts a copy: O(n log n). */
static const char *lc_st_first_duplicate(const char **names, int n, int *nomem) {
    *nomem = 0;
    if (n < 2) return NULL;
    const char **sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return *nomem = 1, NULL;
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, lc_st_compare_strings);
    const char *dup = NULL;
    for (int i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    free(sorted);
    return dup;
}

/* =============================== writing =============================== */

/* Bytes of a tensor to be written, or -1 (with lc_fail set) when its description is invalid. */
static long long lc_st_tensor_bytes(const char *path, const lc_st_tensor *t) {
    if (!t->name) return lc_fail(LC_ERR_ARG, "%s: a tensor has no name", path), -1;
    if (!lc_utf8_valid(t->name, strlen(t->name)) || strcmp(t->name, LC_ST_METADATA_KEY) == 0)
        return lc_fail(LC_ERR_ARG, "%s: invalid tensor name \"%.100s\"", path, t->name), -1;
    if (t->dtype != LC_DT_F32 && t->dtype != LC_DT_I32)
        return lc_fail(LC_ERR_ARG, "%s: tensor %.100s: only F32 and I32 can be written", path, t->name), -1;
    if (t->ndim < 0 || t->ndim > LC_ST_MAX_DIMS)
        return lc_fail(LC_ERR_ARG, "%s: tensor %.100s: rank %d is outside [0, %d]", path, t->name, t->ndim,
                       LC_ST_MAX_DIMS), -1;
    long long count = 1;
    for (int d = 0; d < t->ndim; d++) {
        long dim = t->shape[d];
        if (dim < 0 || (dim > 0 && count > (long long)(LC_ST_MAX_DATA / 4) / dim))
            return lc_fail(LC_ERR_ARG, "%s: tensor %.100s: bad dimension %ld", path, t->name, dim), -1;
        count *= dim;
    }
    if (count > 0 && !t->data) return lc_fail(LC_ERR_ARG, "%s: tensor %.100s has no data", path, t->name), -1;
    return count * 4;
}

static lc_status lc_st_check_names(const char *path, const lc_st_tensor *tensors, int n_tensors,
                                   const lc_st_meta *meta, int n_meta) {
    const char **names = malloc((size_t)(n_tensors > n_meta ? n_tensors : n_meta) * sizeof *names + 1);
    if (!names) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    int nomem;
    for (int i = 0; i < n_tensors; i++) names[i] = tensors[i].name;
    const char *dup_tensor = lc_st_first_duplicate(names, n_tensors, &nomem);
    for (int i = 0; i < n_meta && !dup_tensor && !nomem; i++) names[i] = meta[i].key;
    const char *dup_key = dup_tensor || nomem ? NULL : lc_st_first_duplicate(names, n_meta, &nomem);
    free(names);
    if (nomem) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (dup_tensor) return lc_fail(LC_ERR_ARG, "%s: two tensors are named %.100s", path, dup_tensor);
    if (dup_key) return lc_fail(LC_ERR_ARG, "%s: metadata key %.100s appears twice", path, dup_key);
    return LC_OK;
}

static lc_status lc_st_check_meta(const char *path, const lc_st_meta *meta, int n_meta) {
    if (n_meta < 0 || (n_meta > 0 && !meta)) return lc_fail(LC_ERR_ARG, "%s: bad metadata list", path);
    for (int i = 0; i < n_meta; i++) {
        const char *k = meta[i].key, *v = meta[i].value;
        if (!k || !v) return lc_fail(LC_ERR_ARG, "%s: metadata entry %d has a NULL key or value", path, i);
        if (!lc_utf8_valid(k, strlen(k)) || !lc_utf8_valid(v, strlen(v)))
            return lc_fail(LC_ERR_ARG, "%s: metadata entry %.100s is not valid UTF-8", path, k);
    }
    return LC_OK;
}

/* Validate the arguments of lc_st_write and fill bytes[i] with each tensor's size. */
static lc_status lc_st_check_write(const char *path, const lc_st_tensor *tensors, int n_tensors,
                                   const lc_st_meta *meta, int n_meta, long long *bytes) {
    if (n_tensors < 0 || (n_tensors > 0 && !tensors)) return lc_fail(LC_ERR_ARG, "%s: bad tensor list", path);
    lc_status s = lc_st_check_meta(path, meta, n_meta);
    if (s) return s;
    long long total = 0;
    for (int i = 0; i < n_tensors; i++) {
        if ((bytes[i] = lc_st_tensor_bytes(path, &tensors[i])) < 0) return LC_ERR_ARG;
        if ((total += bytes[i]) > (long long)LC_ST_MAX_DATA) return lc_fail(LC_ERR_ARG, "%s: too much data", path);
    }
    return lc_st_check_names(path, tensors, n_tensors, meta, n_meta);
}

/* The header JSON, padded with spaces to a multiple of 8 bytes so that the data starts aligned. */
static void lc_st_build_header(lc_strbuf *b, const lc_st_tensor *tensors, int n_tensors, const long long *bytes,
                               const lc_st_meta *meta, int n_meta) {
    lc_strbuf_puts(b, "{");
    if (n_meta > 0) {
        lc_strbuf_puts(b, "\"" LC_ST_METADATA_KEY "\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) lc_strbuf_puts(b, ",");
            lc_strbuf_json_string(b, meta[i].key);
            lc_strbuf_puts(b, ":");
            lc_strbuf_json_string(b, meta[i].value);
        }
        lc_strbuf_puts(b, n_tensors ? "}," : "}");
    }
    long long offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        const lc_st_tensor *t = &tensors[i];
        if (i) lc_strbuf_puts(b, ",");
        lc_strbuf_json_string(b, t->name);
        lc_strbuf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", lc_st_dtype_string(t->dtype));
        for (int d = 0; d < t->ndim; d++) lc_strbuf_printf(b, "%s%ld", d ? "," : "", t->shape[d]);
        lc_strbuf_printf(b, "],\"data_offsets\":[%lld,%lld]}", offset, offset + bytes[i]);
        offset += bytes[i];
    }
    lc_strbuf_puts(b, "}");
    while (!b->failed && b->length % 8) lc_strbuf_puts(b, " ");
}

/* Write the whole file to an open stream; returns 0 or an errno value. */
static int lc_st_write_stream(FILE *fp, const lc_strbuf *header, const lc_st_tensor *tensors, int n_tensors,
                              const long long *bytes) {
    unsigned char size_le[8];
    for (int i = 0; i < 8; i++) size_le[i] = (unsigned char)((unsigned long long)header->length >> (8 * i));
    errno = 0;
    if (fwrite(size_le, 1, 8, fp) != 8 || fwrite(header->data, 1, header->length, fp) != header->length)
        return errno ? errno : EIO;
    for (int i = 0; i < n_tensors; i++)
        if (bytes[i] && fwrite(tensors[i].data, 1, (size_t)bytes[i], fp) != (size_t)bytes[i])
            return errno ? errno : EIO;
    return 0;
}

lc_status lc_st_check_path(const char *path) { return lc_file_check_output(path, "a checkpoint"); }

typedef struct {
    const lc_strbuf *header;
    const lc_st_tensor *tensors;
    int n_tensors;
    const long long *bytes;
} lc_st_parts;

static int lc_st_write_parts(FILE *fp, void *user) {
    const lc_st_parts *p = user;
    return lc_st_write_stream(fp, p->header, p->tensors, p->n_tensors, p->bytes);
}

lc_status lc_st_write(const char *path, const lc_st_tensor *tensors, int n_tensors, const lc_st_meta *meta,
                      int n_meta) {
    if (!path || !*path) return lc_fail(LC_ERR_ARG, "safetensors: empty path");
    long long *bytes = malloc((size_t)(n_tensors > 0 ? n_tensors : 1) * sizeof *bytes);
    if (!bytes) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    lc_status s = lc_st_check_write(path, tensors, n_tensors, meta, n_meta, bytes);
    lc_strbuf header;
    lc_strbuf_init(&header);
    if (!s) {
        lc_st_build_header(&header, tensors, n_tensors, bytes, meta, n_meta);
        s = header.failed ? lc_fail(LC_ERR_NOMEM, "%s: out of memory building the header", path)
                          : lc_file_write_atomic(path, "a checkpoint", lc_st_write_parts,
                                                 &(lc_st_parts){&header, tensors, n_tensors, bytes});
    }
    lc_strbuf_free(&header);
    free(bytes);
    return s;
}

/* =============================== reading =============================== */

struct lc_st_file {
    char *path;
    lc_json *header;
    unsigned char *data; /* the data section, 64-byte aligned */
    size_t data_size;
    int n_tensors, n_meta;
    lc_st_tensor *tensors;          /* in header order */
    const char **dtype_names;       /* as spelled in the file, parallel to tensors */
    size_t *begin, *end;            /* data_offsets, parallel to tensors */
    const lc_st_tensor **by_name;   /* sorted by name for lc_st_find */
    lc_st_meta *meta;
};

/* A one-line refusal of anything but a regular file, or LC_OK. */
static lc_status lc_st_check_kind(const char *path, const struct stat *st) {
    if (S_ISREG(st->st_mode)) return LC_OK;
    if (S_ISDIR(st->st_mode)) return lc_fail(LC_ERR_IO, "%s: is a directory", path);
    if (S_ISFIFO(st->st_mode)) return lc_fail(LC_ERR_IO, "%s: is a FIFO (named pipe), not a regular file", path);
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
        return lc_fail(LC_ERR_IO, "%s: is a device, not a regular file", path);
    return lc_fail(LC_ERR_IO, "%s: not a regular file", path);
}

/* The kind of file is checked before it is opened (opening a FIFO for reading waits for a writer;
 * opening a device may have effects) and again on the open descriptor, which is opened non-blocking
 * so that a FIFO swapped in between cannot block either. */
static lc_status lc_st_open_regular_file(const char *path, FILE **out, size_t *size) {
    struct stat st;
    if (stat(path, &st) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    lc_status s = lc_st_check_kind(path, &st);
    if (s) return s;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) s = lc_fail(LC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!s) s = lc_st_check_kind(path, &st);
    const int flags = s ? 0 : fcntl(fd, F_GETFL);
    if (!s && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0))
        s = lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    FILE *fp = s ? NULL : fdopen(fd, "rb");
    if (!s && !fp) s = lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (s) {
        close(fd);
        return s;
    }
    *out = fp;
    *size = (size_t)st.st_size;
    return LC_OK;
}

static lc_status lc_st_read_exact(const char *path, FILE *fp, void *dst, size_t n, const char *what) {
    errno = 0;
    if (n && fread(dst, 1, n, fp) != n) {
        if (ferror(fp)) return lc_fail(LC_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(errno ? errno : EIO));
        return lc_fail(LC_ERR_IO, "%s: file ended while reading %s (changed while being read?)", path, what);
    }
    return LC_OK;
}

/* Read the 8-byte size and check it against the file size; *header_size gets N. */
static lc_status lc_st_read_header_size(const char *path, FILE *fp, size_t file_size, size_t *header_size) {
    if (file_size == 0) return lc_fail(LC_ERR_FORMAT, "%s: file is empty", path);
    if (file_size < 8)
        return lc_fail(LC_ERR_FORMAT, "%s: file has %zu bytes, fewer than the 8-byte header size", path, file_size);
    unsigned char le[8];
    lc_status s = lc_st_read_exact(path, fp, le, 8, "the header size");
    if (s) return s;
    unsigned long long n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | le[i];
    if (n == 0) return lc_fail(LC_ERR_FORMAT, "%s: header size is 0", path);
    /* a text or other file: its first 8 bytes read as a little-endian size are far larger than the file */
    if (n > LC_ST_MAX_HEADER)
        return lc_fail(LC_ERR_FORMAT, "%s: not a safetensors checkpoint (its first 8 bytes give a header size of %llu, "
                       "absurd: over %llu bytes)", path, n, LC_ST_MAX_HEADER);
    if (n > file_size - 8)
        return lc_fail(LC_ERR_FORMAT, "%s: not a safetensors checkpoint, or a truncated one (header size %llu exceeds "
                       "the %zu bytes after it)", path, n, file_size - 8);
    if (file_size - 8 - n > LC_ST_MAX_DATA) return lc_fail(LC_ERR_FORMAT, "%s: file is too large", path);
    *header_size = (size_t)n;
    return LC_OK;
}

static lc_status lc_st_parse_header(lc_st_file *f, FILE *fp, size_t header_size) {
    char *text = malloc(header_size);
    if (!text) return lc_fail(LC_ERR_NOMEM, "%s: out of memory for a %zu-byte header", f->path, header_size);
    lc_status s = lc_st_read_exact(f->path, fp, text, header_size, "the header");
    char what[300];
    snprintf(what, sizeof what, "%s: header", f->path);
    if (!s) s = lc_json_parse(text, header_size, what, &f->header);
    free(text);
    if (!s && f->header->type != LC_JSON_OBJECT)
        s = lc_fail(LC_ERR_FORMAT, "%s: header is a JSON %s, not an object", f->path,
                    lc_json_type_name(f->header->type));
    return s;
}

static lc_status lc_st_load_metadata(lc_st_file *f, const lc_json *value) {
    if (value->type != LC_JSON_OBJECT)
        return lc_fail(LC_ERR_FORMAT, "%s: " LC_ST_METADATA_KEY " must be an object of strings, found %s", f->path,
                       lc_json_type_name(value->type));
    f->meta = malloc((value->count ? value->count : 1) * sizeof *f->meta);
    if (!f->meta) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", f->path);
    for (size_t i = 0; i < value->count; i++) {
        char what[300];
        snprintf(what, sizeof what, "%s: metadata value for key \"%.100s\"", f->path, value->keys[i]);
        lc_status s = lc_json_get_string(&value->items[i], what, &f->meta[i].value);
        if (s) return s;
        f->meta[i].key = value->keys[i];
        f->n_meta++;
    }
    return LC_OK;
}

/* Fill t->ndim and t->shape from the "shape" array; *count gets the number of elements, at most max_count. */
static lc_status lc_st_load_shape(const lc_st_file *f, const char *name, const lc_json *shape, lc_st_tensor *t,
                                  unsigned long long max_count, unsigned long long *count) {
    if (!shape || shape->type != LC_JSON_ARRAY)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: \"shape\" must be an array of integers, found %s", f->path,
                       name, shape ? lc_json_type_name(shape->type) : "nothing");
    if (shape->count > LC_ST_MAX_DIMS)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s has %zu dimensions; at most %d are supported", f->path,
                       name, shape->count, LC_ST_MAX_DIMS);
    *count = 1;
    for (size_t d = 0; d < shape->count; d++) {
        char what[300];
        long long dim;
        snprintf(what, sizeof what, "%s: tensor %.100s: shape[%zu]", f->path, name, d);
        lc_status s = lc_json_get_int(&shape->items[d], what, 0, (long long)LC_ST_MAX_DATA * 8, &dim);
        if (s) return s;
        t->shape[d] = (long)dim;
        if (dim && *count > max_count / (unsigned long long)dim)
            return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: shape needs more bytes than the data section holds",
                           f->path, name);
        *count *= (unsigned long long)dim;
    }
    t->ndim = (int)shape->count;
    return LC_OK;
}

static lc_status lc_st_load_offsets(lc_st_file *f, int i, const lc_json *offsets) {
    const char *name = f->tensors[i].name;
    if (!offsets || offsets->type != LC_JSON_ARRAY || offsets->count != 2)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: \"data_offsets\" must be an array [begin, end]", f->path,
                       name);
    char what[300];
    long long begin, end;
    snprintf(what, sizeof what, "%s: tensor %.100s: data_offsets", f->path, name);
    lc_status s = lc_json_get_int(&offsets->items[0], what, 0, (long long)f->data_size, &begin);
    if (s || (s = lc_json_get_int(&offsets->items[1], what, 0, (long long)f->data_size, &end))) return s;
    if (begin > end)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: data_offsets [%lld, %lld] end before they begin", f->path,
                       name, begin, end);
    f->begin[i] = (size_t)begin;
    f->end[i] = (size_t)end;
    return LC_OK;
}

/* Validate one header entry {"dtype", "shape", "data_offsets"} and fill tensor i from it. */
static lc_status lc_st_load_tensor(lc_st_file *f, int i, const char *name, const lc_json *entry) {
    lc_st_tensor *t = &f->tensors[i];
    t->name = name;
    if (entry->type != LC_JSON_OBJECT)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: header entry must be an object, found %s", f->path, name,
                       lc_json_type_name(entry->type));
    char what[300];
    snprintf(what, sizeof what, "%s: tensor %.100s: dtype", f->path, name);
    lc_status s = lc_json_get_string(lc_json_member(entry, "dtype"), what, &f->dtype_names[i]);
    if (s) return s;
    const lc_st_dtype_info *info = lc_st_dtype_by_name(f->dtype_names[i]);
    if (!info) return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s has unknown dtype \"%.40s\"", f->path, name,
                              f->dtype_names[i]);
    t->dtype = info->dtype;
    unsigned long long count = 0, max_count = f->data_size * 8 / (unsigned)info->bits;
    if ((s = lc_st_load_shape(f, name, lc_json_member(entry, "shape"), t, max_count, &count))) return s;
    if ((s = lc_st_load_offsets(f, i, lc_json_member(entry, "data_offsets")))) return s;
    unsigned long long bits = count * (unsigned)info->bits, span = f->end[i] - f->begin[i];
    if (bits % 8 || bits / 8 != span) {
        char shape_text[200];
        lc_st_format_shape(t->ndim, t->shape, shape_text, sizeof shape_text);
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s: data_offsets span %llu bytes but shape %s of %s needs %llu%s",
                       f->path, name, span, shape_text, info->name, bits / 8, bits % 8 ? " and a fraction" : "");
    }
    return LC_OK;
}

static lc_status lc_st_load_entries(lc_st_file *f) {
    const lc_json *root = f->header;
    size_t n = root->count;
    f->tensors = calloc(n + 1, sizeof *f->tensors);
    f->dtype_names = calloc(n + 1, sizeof *f->dtype_names);
    f->begin = calloc(n + 1, sizeof *f->begin);
    f->end = calloc(n + 1, sizeof *f->end);
    if (!f->tensors || !f->dtype_names || !f->begin || !f->end)
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", f->path);
    for (size_t i = 0; i < n; i++) {
        lc_status s = strcmp(root->keys[i], LC_ST_METADATA_KEY) == 0
                          ? lc_st_load_metadata(f, &root->items[i])
                          : lc_st_load_tensor(f, f->n_tensors++, root->keys[i], &root->items[i]);
        if (s) return s;
    }
    return LC_OK;
}

typedef struct {
    size_t begin, end;
    int index;
} lc_st_span;

static int lc_st_compare_spans(const void *a, const void *b) {
    const lc_st_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Like the reference reader: the tensors, ordered by offset, must tile the data section exactly. */
static lc_status lc_st_check_tiling(const lc_st_file *f, const lc_st_span *spans) {
    size_t covered = 0;
    for (int k = 0; k < f->n_tensors; k++) {
        const lc_st_span *s = &spans[k];
        if (s->begin < covered)
            return lc_fail(LC_ERR_FORMAT, "%s: tensors %.100s and %.100s overlap in the data section", f->path,
                           f->tensors[spans[k - 1].index].name, f->tensors[s->index].name);
        if (s->begin > covered)
            return lc_fail(LC_ERR_FORMAT, "%s: unused bytes [%zu, %zu) in the data section before tensor %.100s",
                           f->path, covered, s->begin, f->tensors[s->index].name);
        covered = s->end;
    }
    if (covered != f->data_size)
        return lc_fail(LC_ERR_FORMAT, "%s: the data section has %zu bytes but the tensors cover %zu", f->path,
                       f->data_size, covered);
    return LC_OK;
}

static lc_status lc_st_check_layout(const lc_st_file *f) {
    lc_st_span *spans = malloc((size_t)(f->n_tensors + 1) * sizeof *spans);
    if (!spans) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", f->path);
    for (int i = 0; i < f->n_tensors; i++) spans[i] = (lc_st_span){f->begin[i], f->end[i], i};
    qsort(spans, (size_t)f->n_tensors, sizeof *spans, lc_st_compare_spans);
    lc_status s = lc_st_check_tiling(f, spans);
    free(spans);
    return s;
}

static int lc_st_compare_tensor_names(const void *a, const void *b) {
    return strcmp((*(const lc_st_tensor *const *)a)->name, (*(const lc_st_tensor *const *)b)->name);
}

/* Read the data section into aligned memory, point every tensor at its bytes, index names. */
static lc_status lc_st_load_data(lc_st_file *f, FILE *fp) {
    f->data = aligned_alloc(64, (f->data_size + 63) / 64 * 64 + 64);
    f->by_name = malloc((size_t)(f->n_tensors + 1) * sizeof *f->by_name);
    if (!f->data || !f->by_name)
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory for %zu bytes of tensor data", f->path, f->data_size);
    lc_status s = lc_st_read_exact(f->path, fp, f->data, f->data_size, "the tensor data");
    if (s) return s;
    for (int i = 0; i < f->n_tensors; i++) {
        f->tensors[i].data = f->data + f->begin[i];
        f->by_name[i] = &f->tensors[i];
    }
    qsort(f->by_name, (size_t)f->n_tensors, sizeof *f->by_name, lc_st_compare_tensor_names);
    return LC_OK;
}

lc_status lc_st_open(const char *path, lc_st_file **out) {
    if (!out) return lc_fail(LC_ERR_ARG, "lc_st_open: no output pointer");
    *out = NULL;
    if (!path || !*path) return lc_fail(LC_ERR_ARG, "safetensors: empty path");
    lc_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    }
    FILE *fp = NULL;
    size_t file_size = 0, header_size = 0;
    lc_status s = lc_st_open_regular_file(path, &fp, &file_size);
    if (!s) s = lc_st_read_header_size(path, fp, file_size, &header_size);
    if (!s) {
        f->data_size = file_size - 8 - header_size;
        s = lc_st_parse_header(f, fp, header_size);
    }
    if (!s) s = lc_st_load_entries(f);
    if (!s) s = lc_st_check_layout(f);
    if (!s) s = lc_st_load_data(f, fp);
    if (fp) fclose(fp);
    if (s) {
        lc_st_close(f);
        return s;
    }
    *out = f;
    return LC_OK;
}

void lc_st_close(lc_st_file *f) {
    if (!f) return;
    lc_json_free(f->header);
    free(f->data);
    free(f->tensors);
    free(f->dtype_names);
    free(f->begin);
    free(f->end);
    free(f->by_name);
    free(f->meta);
    free(f->path);
    free(f);
}

const char *lc_st_get_meta(const lc_st_file *f, const char *key) {
    for (int i = 0; f && key && i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

int lc_st_meta_count(const lc_st_file *f) { return f ? f->n_meta : 0; }

const lc_st_meta *lc_st_meta_at(const lc_st_file *f, int i) {
    return f && i >= 0 && i < f->n_meta ? &f->meta[i] : NULL;
}

int lc_st_count(const lc_st_file *f) { return f ? f->n_tensors : 0; }

const lc_st_tensor *lc_st_at(const lc_st_file *f, int i) {
    return f && i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const lc_st_tensor *lc_st_find(const lc_st_file *f, const char *name) {
    if (!f || !name || f->n_tensors == 0) return NULL;
    lc_st_tensor key = {.name = name};
    const lc_st_tensor *key_ptr = &key;
    const lc_st_tensor *const *hit =
        bsearch(&key_ptr, f->by_name, (size_t)f->n_tensors, sizeof *f->by_name, lc_st_compare_tensor_names);
    return hit ? *hit : NULL;
}

const char *lc_st_path(const lc_st_file *f) { return f ? f->path : NULL; }

lc_status lc_st_expect(const lc_st_file *f, const char *name, lc_dtype dtype, int ndim, const long *shape) {
    if (!f || !name || ndim < 0 || ndim > LC_ST_MAX_DIMS || (ndim > 0 && !shape))
        return lc_fail(LC_ERR_ARG, "lc_st_expect: bad arguments");
    if (dtype != LC_DT_F32 && dtype != LC_DT_I32) return lc_fail(LC_ERR_ARG, "lc_st_expect: only F32 and I32");
    const lc_st_tensor *t = lc_st_find(f, name);
    if (!t) return lc_fail(LC_ERR_FORMAT, "%s: no tensor named %.100s", f->path, name);
    const char *file_dtype = f->dtype_names[t - f->tensors];
    if (t->dtype == LC_DT_OTHER)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s has dtype %s, which longctx cannot read (only F32 and I32)",
                       f->path, name, file_dtype);
    if (t->dtype != dtype)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s has dtype %s but %s was expected", f->path, name, file_dtype,
                       lc_st_dtype_string(dtype));
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[200], want[200];
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %.100s has shape %s but the model expects %s", f->path, name,
                       lc_st_format_shape(t->ndim, t->shape, have, sizeof have),
                       lc_st_format_shape(ndim, shape, want, sizeof want));
    }
    return LC_OK;
}

lc_status lc_st_read(const lc_st_file *f, const char *name, lc_dtype dtype, int ndim, const long *shape, void *dst) {
    if (!dst) return lc_fail(LC_ERR_ARG, "lc_st_read: bad arguments");
    lc_status s = lc_st_expect(f, name, dtype, ndim, shape);
    if (s) return s;
    const lc_st_tensor *t = lc_st_find(f, name);
    size_t bytes = f->end[t - f->tensors] - f->begin[t - f->tensors];
    if (bytes) memcpy(dst, t->data, bytes);
    return LC_OK;
}
