/* Reading and writing the safetensors format (https://huggingface.co/docs/safetensors):
 *   8 bytes little-endian u64 N | N bytes JSON header | raw little-endian tensor data.
 * The header maps each tensor name to {"dtype": "F32"|"I32", "shape": [...], "data_offsets": [begin, end]}
 * (offsets relative to the data section) and may hold "__metadata__": {string: string}.
 * Writing is atomic: a temporary file in the same directory, fsync, rename; an existing file at the
 * path is never left half-written. Reading validates everything (header length against file size,
 * JSON syntax, dtypes, shapes against offsets, offsets within the data, no overlaps) and reports a
 * one-line error naming the file. Only regular files are read: a FIFO, a directory or a device is
 * refused before it is opened. */
#ifndef LC_TRAIN_SAFETENSORS_H
#define LC_TRAIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define LC_ST_MAX_DIMS 8

/* LC_DT_OTHER marks a tensor read from a file whose dtype (F16, BF16, I64, ...) this library does not
 * convert: it is listed by lc_st_count/lc_st_at/lc_st_find (data points at its raw bytes), but
 * lc_st_read refuses it and lc_st_write does not accept it. */
typedef enum { LC_DT_F32 = 0, LC_DT_I32 = 1, LC_DT_OTHER = 2 } lc_dtype;

typedef struct {
    const char *name;
    lc_dtype dtype;
    int ndim;
    long shape[LC_ST_MAX_DIMS];
    const void *data; /* ndim-product elements of dtype */
} lc_st_tensor;

typedef struct {
    const char *key, *value;
} lc_st_meta;

/* Write tensors (in the given order) and metadata atomically to path: to path.tmp.PID.RANDOM (mkstemp:
 * O_CREAT|O_EXCL, so never through a symlink), with the mode of the file it replaces (new files:
 * 0666 & ~umask), fsync, rename over path, fsync the directory. First removes path's temporary files
 * whose writer PID no longer runs. Refuses (LC_ERR_ARG) a path that exists and is not a regular file. */
lc_status lc_st_write(const char *path, const lc_st_tensor *tensors, int n_tensors, const lc_st_meta *meta,
                      int n_meta);

/* The checks lc_st_write makes before writing: the directory exists and is writable, the name fits with
 * the temporary suffix (NAME_MAX, PATH_MAX), path is absent or a regular file. */
lc_status lc_st_check_path(const char *path);

/* A file opened for reading: the whole file is read into memory and validated. */
typedef struct lc_st_file lc_st_file;

lc_status lc_st_open(const char *path, lc_st_file **out);
void lc_st_close(lc_st_file *f);
/* Metadata value for key, or NULL. */
const char *lc_st_get_meta(const lc_st_file *f, const char *key);
/* Number of metadata entries and access by index, in file order. */
int lc_st_meta_count(const lc_st_file *f);
const lc_st_meta *lc_st_meta_at(const lc_st_file *f, int i);
/* Number of tensors and access by index (name, dtype, shape; data points into the loaded file). */
int lc_st_count(const lc_st_file *f);
const lc_st_tensor *lc_st_at(const lc_st_file *f, int i);
/* Tensor by name, or NULL. */
const lc_st_tensor *lc_st_find(const lc_st_file *f, const char *name);
/* Check that tensor `name` exists, has dtype, and has exactly the given shape; otherwise LC_ERR_FORMAT
 * with a message naming the file, the tensor and both shapes. */
lc_status lc_st_expect(const lc_st_file *f, const char *name, lc_dtype dtype, int ndim, const long *shape);
/* lc_st_expect, then copy the tensor's bytes into dst. */
lc_status lc_st_read(const lc_st_file *f, const char *name, lc_dtype dtype, int ndim, const long *shape, void *dst);
/* Path the file was opened from (for messages). */
const char *lc_st_path(const lc_st_file *f);

#endif
