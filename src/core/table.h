/* Size tables: a list of named, shaped float tensors laid out in one aligned allocation.
 * Parameters, gradients, optimizer moments and activations are each planned as a table first,
 * then allocated once; every tensor is a slice (base + offset). Offsets are rounded up to 16 floats
 * (64 bytes) so every slice is cache-line aligned. */
#ifndef LC_CORE_TABLE_H
#define LC_CORE_TABLE_H

#include <stddef.h>

#include "core/status.h"

#define LC_MAX_DIMS 4
#define LC_NAME_MAX 64

typedef struct {
    char name[LC_NAME_MAX];
    int ndim;
    long shape[LC_MAX_DIMS];
    size_t count;  /* number of floats: product of shape */
    size_t offset; /* in floats from the table's base */
} lc_slot;

typedef struct {
    lc_slot *slots;
    int n, cap;
    size_t total; /* floats, including alignment padding */
} lc_table;

void lc_table_init(lc_table *t);
void lc_table_free(lc_table *t);
/* Append a tensor; returns its index, or -1 (with lc_fail set) on bad shape or no memory. */
int lc_table_add(lc_table *t, const char *name, int ndim, const long *shape);
/* Index of a named slot, or -1. */
int lc_table_find(const lc_table *t, const char *name);
/* One zeroed, 64-byte aligned allocation of t->total floats; NULL (lc_fail set) on failure. Free with lc_free. */
float *lc_table_alloc(const lc_table *t);
/* LC_ERR_NOMEM with a message naming `what` (e.g. "the activations") when `bytes` exceed the machine's
 * physical memory: checked before allocating, so a huge plan fails at once instead of after zeroing
 * gigabytes. */
lc_status lc_check_fits(size_t bytes, const char *what);

void *lc_alloc_aligned(size_t bytes); /* zeroed, 64-byte aligned; NULL on failure */
void lc_free(void *p);

#endif
