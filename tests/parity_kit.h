/* PyTorch parity fixtures of models laid out by a parameter table (tests/reference/make_*_fixture.py):
 * load every parameter by its table name, compare every gradient with the fixture's "<prefix><name>".
 * Include after harness.h. */
#ifndef LC_TESTS_PARITY_KIT_H
#define LC_TESTS_PARITY_KIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/table.h"
#include "train/safetensors.h"

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

/* The fixture's integer metadata `key` (-1 when absent). */
static inline int parity_meta_int(const lc_st_file *f, const char *key) {
    const char *v = lc_st_get_meta(f, key);
    return v ? atoi(v) : -1;
}

/* Reads every parameter of the table from the file; 0 on success. */
static inline int parity_load_params(const lc_st_file *f, const lc_table *ptab, float *params) {
    int bad = 0;
    for (int i = 0; i < ptab->n; i++) {
        const lc_slot *s = &ptab->slots[i];
        const lc_status st = lc_st_read(f, s->name, LC_DT_F32, s->ndim, s->shape, params + s->offset);
        CHECK(st == LC_OK, "%s", lc_last_error());
        bad |= st != LC_OK;
    }
    return bad;
}

/* Compares every gradient of the table with the file's <prefix><name> (prefix "grad." for example). */
static inline void parity_check_grads(const lc_st_file *f, const lc_table *ptab, const float *grads, const char *prefix,
                                      const char *what, double rtol, double atol) {
    float *want = malloc(sizeof(float) * ptab->total);
    for (int i = 0; i < ptab->n; i++) {
        const lc_slot *s = &ptab->slots[i];
        char name[LC_NAME_MAX + 32], label[LC_NAME_MAX + 64];
        snprintf(name, sizeof name, "%s%s", prefix, s->name);
        CHECK(lc_st_read(f, name, LC_DT_F32, s->ndim, s->shape, want) == LC_OK, "%s", lc_last_error());
        snprintf(label, sizeof label, "%s d%s", what, s->name);
        CHECK_CLOSE(label, grads + s->offset, want, (long)s->count, rtol, atol);
    }
    free(want);
}

#endif
