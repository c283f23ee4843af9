/* A checkpoint without its optimizer state (lc_checkpoint_export): every tensor but the AdamW moments
 * (optim.m.<name>, optim.v.<name>), in the file's order, with its metadata unchanged. Works for every kind
 * of longctx checkpoint (language model, classifier, HIBERT, seq2seq), whose loaders read a file without moments as
 * one with zero moments (docs/reference/checkpoint.md, "Exporting the weights"). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "longctx.h"
#include "train/checkpoint_meta.h"
#include "train/safetensors.h"

static long long file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

lc_status lc_checkpoint_export(const char *in, const char *out, lc_export_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!in || !out) return lc_fail(LC_ERR_ARG, "checkpoint export: an input and an output path are required");
    lc_status st = lc_st_check_path(out);
    if (st) return st;
    lc_st_file *f = NULL;
    if ((st = lc_st_open(in, &f))) return st;
    const long long bytes_in = file_bytes(in); /* before the write: out may be in */
    const char *format = lc_st_get_meta(f, "format");
    if (!format || strcmp(format, LC_CKPT_FORMAT) != 0) {
        lc_st_close(f);
        return lc_fail(LC_ERR_FORMAT, "%s: not a longctx checkpoint (its metadata has no \"format\": \"%s\")", in,
                       LC_CKPT_FORMAT);
    }
    const int n = lc_st_count(f), n_meta = lc_st_meta_count(f);
    lc_st_tensor *keep = malloc(sizeof *keep * (size_t)(n > 0 ? n : 1));
    lc_st_meta *meta = malloc(sizeof *meta * (size_t)(n_meta > 0 ? n_meta : 1));
    if (!keep || !meta) {
        free(keep), free(meta), lc_st_close(f);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", in);
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const lc_st_tensor *t = lc_st_at(f, i);
        if (strncmp(t->name, "optim.", 6) != 0) keep[kept++] = *t;
    }
    for (int i = 0; i < n_meta; i++) meta[i] = *lc_st_meta_at(f, i);
    st = lc_st_write(out, keep, kept, meta, n_meta);
    if (!st && info) {
        info->tensors = kept, info->dropped = n - kept;
        info->bytes_in = bytes_in, info->bytes_out = file_bytes(out);
    }
    free(keep), free(meta), lc_st_close(f);
    return st;
}
