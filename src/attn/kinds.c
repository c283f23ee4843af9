/* The table of attention kinds, found by name: the built-in rows below and the rows registered at run
 * time, and the one check of a shape against a kind (its caps, its length rule, then its own check of
 * the options). Adding a kind is its own source file and one row here, or lc_attn_kind_register. */
#include <pthread.h>
#include <stdio.h>
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
#include "core/status.h"

static const lc_attn_kind *const lc_attn_builtin[] = {
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
enum { N_BUILTIN = (int)(sizeof lc_attn_builtin / sizeof lc_attn_builtin[0]) };

#ifdef LC_DISPATCH
/* A portable build (core/cpu.h) also holds the rows compiled for AVX-512 (the kinds' files built a second
 * time, their names prefixed lcisa_avx512_); the rows of the path chosen at startup are the ones found. */
#include "core/cpu.h"
extern const lc_attn_kind lcisa_avx512_lc_attn_full, lcisa_avx512_lc_attn_bigbird, lcisa_avx512_lc_attn_block,
    lcisa_avx512_lc_attn_strided, lcisa_avx512_lc_attn_window, lcisa_avx512_lc_attn_compressed,
    lcisa_avx512_lc_attn_linformer, lcisa_avx512_lc_attn_routing, lcisa_avx512_lc_attn_lsh;
static const lc_attn_kind *const lc_attn_builtin_avx512[] = {
    &lcisa_avx512_lc_attn_full,     &lcisa_avx512_lc_attn_bigbird,   &lcisa_avx512_lc_attn_block,
    &lcisa_avx512_lc_attn_strided,  &lcisa_avx512_lc_attn_window,    &lcisa_avx512_lc_attn_compressed,
    &lcisa_avx512_lc_attn_linformer, &lcisa_avx512_lc_attn_routing, &lcisa_avx512_lc_attn_lsh,
};
_Static_assert(sizeof lc_attn_builtin_avx512 == sizeof lc_attn_builtin, "one AVX-512 row per built-in kind");
#define BUILTIN_ROW(i) (lc_cpu_level == LC_CPU_AVX512 ? lc_attn_builtin_avx512[i] : lc_attn_builtin[i])
#else
#define BUILTIN_ROW(i) lc_attn_builtin[i]
#endif

/* Rows registered at run time, append-only: a registration fills the next slot, then publishes the new
 * count (release); readers take the count (acquire) and read only slots below it, which never change
 * again. Registrations take the lock, so a name is checked and added in one step. */
static const lc_attn_kind *lc_attn_registered[LC_ATTN_MAX_REGISTERED];
static int n_registered;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

int lc_attn_kind_count(void) { return N_BUILTIN + __atomic_load_n(&n_registered, __ATOMIC_ACQUIRE); }

/* Row i of the first n (n from lc_attn_kind_count). */
static const lc_attn_kind *row_at(int i) { return i < N_BUILTIN ? BUILTIN_ROW(i) : lc_attn_registered[i - N_BUILTIN]; }

const lc_attn_kind *lc_attn_kind_at(int i) { return i < 0 || i >= lc_attn_kind_count() ? NULL : row_at(i); }

const lc_attn_kind *lc_attn_kind_by_name(const char *name) {
    for (int i = 0, n = lc_attn_kind_count(); i < n; i++)
        if (strcmp(row_at(i)->name, name) == 0) return row_at(i);
    return NULL;
}

/* A name the spec string can carry: a letter, then letters, digits, '_' or '-' (no ':', ',', '+', ';',
 * '=' or '/', and no leading digits that would read as a head count). */
static int good_name(const char *name) {
    if (!name || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return 0;
    return strlen(name) < 64;
}

int lc_attn_kind_register(const lc_attn_kind *k) {
    if (!k) return lc_fail(LC_ERR_ARG, "attention kind registration: no row given"), -1;
    if (!good_name(k->name))
        return lc_fail(LC_ERR_ARG, "attention kind '%s': a name is a letter, then letters, digits, '_' or '-' "
                                   "(at most 63)", k->name ? k->name : "(null)"), -1;
    const char *n = k->name;
    if (!k->forward || !k->backward || !k->workspace_floats)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': forward, backward and workspace_floats are required", n), -1;
    if (!k->options_help) return lc_fail(LC_ERR_ARG, "attention kind '%s': options_help is required (\"\" when none)", n), -1;
    if (k->opts_size > LC_ATTN_OPTS_BYTES)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': options of %zu bytes exceed %d", n, k->opts_size,
                       LC_ATTN_OPTS_BYTES), -1;
    if (k->opts_set && !k->opts_size)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': opts_set without an options struct (opts_size 0)", n), -1;
    if (k->caps & ~(unsigned)LC_ATTN_CAP_ALL)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': unknown caps bits 0x%x", n, k->caps & ~(unsigned)LC_ATTN_CAP_ALL),
               -1;
    if (!(k->caps & (LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL)))
        return lc_fail(LC_ERR_ARG, "attention kind '%s': caps name neither LC_ATTN_CAP_CAUSAL nor "
                                   "LC_ATTN_CAP_BIDIRECTIONAL", n), -1;
    if (k->min_T < 0 || k->T_multiple < 0)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': min_T %d and T_multiple %d must be >= 0", n, k->min_T,
                       k->T_multiple), -1;
    if (!k->param_floats != !k->param_init || !k->state_floats != !k->state_init)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': param_floats/param_init and state_floats/state_init come "
                                   "in pairs", n), -1;
    pthread_mutex_lock(&register_lock);
    const int taken = lc_attn_kind_by_name(n) != NULL, full = !taken && n_registered == LC_ATTN_MAX_REGISTERED;
    if (!taken && !full) {
        lc_attn_registered[n_registered] = k;
        __atomic_store_n(&n_registered, n_registered + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&register_lock);
    if (taken) return lc_fail(LC_ERR_ARG, "attention kind '%s' is already registered", n), -1;
    if (full)
        return lc_fail(LC_ERR_ARG, "attention kind '%s': %d kinds are registered already (the most)", n,
                       LC_ATTN_MAX_REGISTERED), -1;
    return 0;
}

/* One message format for every refusal: "<kind>: <what> ...". */
#define REFUSE(...) return snprintf(err, errlen, __VA_ARGS__), -1

int lc_attn_kind_check(const lc_attn_kind *k, const lc_attn_shape *s, const void *opts, const lc_attn_global *global,
                       char *err, size_t errlen) {
    const char *n = k->name;
    const unsigned caps = k->caps;
    if (s->B < 0 || s->H < 0 || s->T < 0 || s->M < 0 || s->D < 1 || s->window < 0)
        REFUSE("%s: bad shape B=%d H=%d T=%d M=%d D=%d window=%d", n, s->B, s->H, s->T, s->M, s->D, s->window);
    /* the interface's own rules: window and distances M + t - s are defined for causal attention */
    if (s->window && !s->causal) REFUSE("%s: a same_length window needs causal attention", n);
    if (s->relpos && !s->causal) REFUSE("%s: relative positions need causal attention (distances M + t - s >= 0)", n);
    if (s->causal && !(caps & LC_ATTN_CAP_CAUSAL))
        REFUSE("%s: causal attention is not supported (%s is bidirectional only; use --objective mlm)", n, n);
    if (!s->causal && !(caps & LC_ATTN_CAP_BIDIRECTIONAL))
        REFUSE("%s: bidirectional attention is not supported (%s is causal only)", n, n);
    if (s->M > 0 && !(caps & LC_ATTN_CAP_MEMORY))
        REFUSE("%s: memory rows are not supported (M=%d; use --model vanilla)", n, s->M);
    if (s->relpos && !(caps & LC_ATTN_CAP_RELPOS))
        REFUSE("%s: relative positions are not supported (--model xl; use --model vanilla)", n);
    if (s->window && !(caps & LC_ATTN_CAP_WINDOW))
        REFUSE("%s: same_length windows are not supported (window=%d)", n, s->window);
    if (global) {
        if (!(caps & LC_ATTN_CAP_GLOBAL)) REFUSE("%s: global tokens are not supported (global=%d)", n, global->n);
        if (s->relpos) REFUSE("%s: global tokens need a model without relative positions (--model vanilla)", n);
        if (global->n < 0) REFUSE("%s: global token count %d is negative", n, global->n);
        for (int i = 0; global->pos && i < global->n; i++) {
            if (global->pos[i] < 0) REFUSE("%s: global position %d is negative", n, global->pos[i]);
            if (i > 0 && global->pos[i] <= global->pos[i - 1])
                REFUSE("%s: global positions must be increasing (%d after %d)", n, global->pos[i], global->pos[i - 1]);
        }
    }
    if (s->T < k->min_T) REFUSE("%s: sequences of T=%d positions; the kind needs T >= %d", n, s->T, k->min_T);
    if (k->T_multiple > 1 && s->T % k->T_multiple)
        REFUSE("%s: sequences of T=%d positions; the kind needs T a multiple of %d", n, s->T, k->T_multiple);
    return k->check ? k->check(s, opts, global, err, errlen) : 0;
}
