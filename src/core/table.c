/* Size tables and aligned allocation; see table.h. */
#include "core/table.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lc_table_init(lc_table *t) { memset(t, 0, sizeof *t); }

void lc_table_free(lc_table *t) {
    free(t->slots);
    memset(t, 0, sizeof *t);
}

int lc_table_add(lc_table *t, const char *name, int ndim, const long *shape) {
    if (ndim < 1 || ndim > LC_MAX_DIMS) return lc_fail(LC_ERR_ARG, "tensor %s: bad rank %d", name, ndim), -1;
    if (strlen(name) >= LC_NAME_MAX) return lc_fail(LC_ERR_ARG, "tensor name too long: %s", name), -1;
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0) return lc_fail(LC_ERR_ARG, "tensor %s: bad dimension %ld", name, shape[i]), -1;
        count *= (size_t)shape[i];
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        lc_slot *s = realloc(t->slots, (size_t)cap * sizeof *s);
        if (!s) return lc_fail(LC_ERR_NOMEM, "out of memory planning tensor %s", name), -1;
        t->slots = s;
        t->cap = cap;
    }
    lc_slot *s = &t->slots[t->n];
    memset(s, 0, sizeof *s);
    strcpy(s->name, name);
    s->ndim = ndim;
    memcpy(s->shape, shape, (size_t)ndim * sizeof *shape);
    s->count = count;
    s->offset = t->total;
    t->total += (count + 15) & ~(size_t)15;
    return t->n++;
}

int lc_table_find(const lc_table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->slots[i].name, name) == 0) return i;
    return -1;
}

void *lc_alloc_aligned(size_t bytes) {
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded == 0) rounded = 64;
    void *p = aligned_alloc(64, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

void lc_free(void *p) { free(p); }

lc_status lc_check_fits(size_t bytes, const char *what) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return LC_OK; /* unknown: let the allocation decide */
    const double have = (double)pages * (double)page;
    if ((double)bytes <= have) return LC_OK;
    return lc_fail(LC_ERR_NOMEM, "%s need %.1f GB, more than this machine's %.1f GB of memory", what, (double)bytes / 1e9,
                   have / 1e9);
}

float *lc_table_alloc(const lc_table *t) {
    float *p = lc_alloc_aligned(t->total * sizeof(float));
    if (!p) lc_fail(LC_ERR_NOMEM, "out of memory allocating %zu bytes", t->total * sizeof(float));
    return p;
}
