/* The table of attention kinds: every kind is one row, found by name. Adding a kind is one line here
 * and its own source file; no other kind changes. */
#include <string.h>

#include "attn/attn.h"
#include "attn/bigbird.h"
#include "attn/block.h"
#include "attn/compressed.h"
#include "attn/linformer.h"
#include "attn/routing.h"
#include "attn/lsh.h"
#include "attn/strided.h"
#include "attn/window.h"

static const lc_attn_kind *const lc_attn_kinds[] = {
    &lc_attn_full,
    &lc_attn_bigbird,
    &lc_attn_block,
    &lc_attn_strided,
    &lc_attn_window,
    &lc_attn_compressed,
    &lc_attn_linformer,
    &lc_attn_routing,
    &lc_attn_lsh,
};

const lc_attn_kind *lc_attn_kind_by_name(const char *name) {
    for (size_t i = 0; i < sizeof lc_attn_kinds / sizeof lc_attn_kinds[0]; i++)
        if (strcmp(lc_attn_kinds[i]->name, name) == 0) return lc_attn_kinds[i];
    return NULL;
}

int lc_attn_kind_count(void) { return (int)(sizeof lc_attn_kinds / sizeof lc_attn_kinds[0]); }

const lc_attn_kind *lc_attn_kind_at(int i) {
    return i >= 0 && i < lc_attn_kind_count() ? lc_attn_kinds[i] : NULL;
}
