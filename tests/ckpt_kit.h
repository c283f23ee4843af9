/* Refusal tests shared by the checkpoint tests of the model families (tests/test_*_ckpt.c): damaged copies of a
 * good checkpoint (cut in half, or one metadata or tensor-table string edited) that a family's loader must refuse
 * with LC_ERR_FORMAT, no model and one line; a tiny language model's checkpoint that another family must refuse,
 * and a family's checkpoint that the language model's loader must refuse. Include after harness.h and
 * test_files.h. */
#ifndef LC_TESTS_CKPT_KIT_H
#define LC_TESTS_CKPT_KIT_H

#include "longctx.h"

/* A family's loader for refusal tests: loads path, sets *built when a model came back, frees it (a failed load
 * leaves lc_last_error() as the loader set it); returns the loader's status. */
typedef lc_status (*ckpt_loader)(const char *path, int *built);

/* One damaged copy of the good checkpoint, written as tmp_path(name): the first `from` after the header length
 * replaced by `to` (from NULL: the first half of the file); the loader's one-line error must contain want. */
typedef struct {
    const char *name, *from, *to, *want;
} ckpt_damage;

/* load(path) fails with LC_ERR_FORMAT, builds no model and says one line that contains want. */
static inline void ckpt_expect_refusal(ckpt_loader load, const char *path, const char *want) {
    int built = 0;
    const lc_status st = load(path, &built);
    CHECK(st == LC_ERR_FORMAT && !built && strstr(lc_last_error(), want) && !strchr(lc_last_error(), '\n'),
          "%s: status %d, '%s' (want '%s')", path, st, lc_last_error(), want);
}

/* Writes each damaged copy of good and expects load to refuse it. */
static inline void ckpt_damages_refused(ckpt_loader load, const char *good, const ckpt_damage *d, int n) {
    for (int i = 0; i < n; i++) {
        const char *path = tmp_path(d[i].name);
        if (d[i].from) {
            file_edit(good, path, d[i].from, d[i].to);
        } else {
            long size;
            char *s = slurp_file(good, &size);
            CHECK(s != NULL, "cannot read %s", good);
            if (s) write_file(path, s, (size_t)size / 2);
            free(s);
        }
        ckpt_expect_refusal(load, path, d[i].want);
    }
}

/* Saves the "tiny" preset language model (seed 1, 1 stream) with options o at path. */
static inline void ckpt_write_tiny_lm(const char *path, const lc_train_options *o) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    lc_model *lm = NULL;
    CHECK(lc_model_create(&c, 1, 1, &lm) == LC_OK, "%s", lc_last_error());
    CHECK(lm && lc_checkpoint_save(lm, o, path) == LC_OK, "%s", lc_last_error());
    lc_model_free(lm);
}

/* The language model's loader refuses path (another family's checkpoint) with no model and a message that
 * contains want. */
static inline void ckpt_lm_refuses(const char *path, const char *want) {
    lc_model *lm = NULL;
    CHECK(lc_checkpoint_load(path, 0, &lm, NULL) == LC_ERR_FORMAT && !lm && strstr(lc_last_error(), want),
          "the LM reader on %s: %s", path, lc_last_error());
    lc_model_free(lm);
}

#endif
