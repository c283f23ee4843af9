/* Parsing of the attention spec string (spec.h) into per-layer head groups, each with a kind and its
 * options, and the per-layer checks and workspace sizes built from the kinds' own functions. */
#include "attn/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy s[0, n) into a bounded, terminated buffer. */
static void copy_span(char *dst, size_t cap, const char *s, size_t n) {
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static int parse_group(const char *text, int H, lc_attn_group *g, int *explicit_heads, char *err, size_t errlen) {
    char buf[LC_ATTN_SPEC_MAX];
    copy_span(buf, sizeof buf, text, strlen(text));
    memset(g, 0, sizeof *g);
    char *kind = buf, *opts = strchr(buf, ':');
    if (opts) *opts++ = 0;
    /* optional head count "Nx" */
    *explicit_heads = 0;
    char *x = strchr(kind, 'x');
    if (x && x > kind && strspn(kind, "0123456789") == (size_t)(x - kind)) {
        *x = 0;
        long n = strtol(kind, NULL, 10);
        if (n < 1 || n > H) {
            snprintf(err, errlen, "attention spec '%s': head count %s is not in 1..%d", text, kind, H);
            return -1;
        }
        g->heads = (int)n;
        *explicit_heads = 1;
        kind = x + 1;
    }
    g->kind = lc_attn_kind_by_name(kind);
    if (!g->kind) {
        char names[256] = "";
        for (int i = 0; i < lc_attn_kind_count(); i++) {
            size_t at = strlen(names);
            snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", lc_attn_kind_at(i)->name);
        }
        snprintf(err, errlen, "attention spec '%s': unknown kind '%s' (kinds: %s)", text, kind, names);
        return -1;
    }
    if (g->kind->opts_size > LC_ATTN_OPTS_BYTES) {
        snprintf(err, errlen, "attention kind %s: options exceed %d bytes", g->kind->name, LC_ATTN_OPTS_BYTES);
        return -1;
    }
    if (g->kind->opts_init) g->kind->opts_init(g->opts, H);
    for (char *opt = opts, *next; opt && *opt; opt = next) {
        next = strchr(opt, ',');
        if (next) *next++ = 0;
        char *eq = strchr(opt, '=');
        if (!eq || eq == opt || !eq[1]) {
            snprintf(err, errlen, "attention spec '%s': option '%s' is not key=value", text, opt);
            return -1;
        }
        *eq = 0;
        char msg[384];
        int rc;
        if (strcmp(opt, "global") == 0 && strchr(eq + 1, '/')) { /* listed positions */
            rc = lc_attn_opt_int_list(opt, eq + 1, 0, (1 << 24) - 1, g->global_pos, LC_ATTN_MAX_GLOBAL, msg, sizeof msg);
            g->n_global = rc < 0 ? 0 : rc;
            g->global_listed = 1;
            for (int i = 1; rc >= 0 && i < g->n_global; i++)
                if (g->global_pos[i] <= g->global_pos[i - 1]) {
                    snprintf(msg, sizeof msg, "option global=%s: positions must increase", eq + 1);
                    rc = -1;
                }
            rc = rc < 0 ? -1 : 0;
        } else if (strcmp(opt, "global") == 0)
            rc = lc_attn_opt_int(opt, eq + 1, 0, 1 << 24, &g->n_global, msg, sizeof msg);
        else if (g->kind->opts_set)
            rc = g->kind->opts_set(g->opts, H, opt, eq + 1, msg, sizeof msg);
        else
            rc = lc_attn_opt_unknown(g->kind, opt, msg, sizeof msg);
        if (rc) {
            snprintf(err, errlen, "attention spec '%s': %s", text, msg);
            return -1;
        }
    }
    return 0;
}

static int parse_layer(const char *text, int H, lc_attn_layer *layer, char *err, size_t errlen) {
    memset(layer, 0, sizeof *layer);
    int open_group = -1, used = 0;
    const char *p = text;
    for (;;) {
        const char *plus = strchr(p, '+');
        size_t n = plus ? (size_t)(plus - p) : strlen(p);
        if (n == 0) {
            snprintf(err, errlen, "attention spec '%s': empty head group", text);
            return -1;
        }
        if (layer->n_groups == LC_ATTN_MAX_GROUPS) {
            snprintf(err, errlen, "attention spec '%s': more than %d head groups", text, LC_ATTN_MAX_GROUPS);
            return -1;
        }
        char part[LC_ATTN_SPEC_MAX];
        copy_span(part, sizeof part, p, n);
        lc_attn_group *g = &layer->group[layer->n_groups];
        int explicit_heads;
        if (parse_group(part, H, g, &explicit_heads, err, errlen)) return -1;
        if (!explicit_heads) {
            if (open_group >= 0) {
                snprintf(err, errlen, "attention spec '%s': only one head group may leave out its head count",
                         text);
                return -1;
            }
            open_group = layer->n_groups;
        }
        used += g->heads;
        layer->n_groups++;
        if (!plus) break;
        p = plus + 1;
    }
    if (open_group >= 0) {
        if (used >= H) {
            snprintf(err, errlen, "attention spec '%s': no heads left for '%s' (the model has %d heads)", text,
                     layer->group[open_group].kind->name, H);
            return -1;
        }
        layer->group[open_group].heads = H - used;
        used = H;
    }
    if (used != H) {
        snprintf(err, errlen, "attention spec '%s': head groups cover %d heads, the model has %d", text, used, H);
        return -1;
    }
    for (int i = 0, h0 = 0; i < layer->n_groups; i++) {
        layer->group[i].h0 = h0;
        h0 += layer->group[i].heads;
    }
    return 0;
}

int lc_attn_spec_parse(const char *spec, int n_layer, int H, lc_attn_layer *layers, char *err, size_t errlen) {
    if (!spec || !*spec) spec = "full";
    if (strlen(spec) >= LC_ATTN_SPEC_MAX) {
        snprintf(err, errlen, "attention spec is longer than %d characters", LC_ATTN_SPEC_MAX - 1);
        return -1;
    }
    if (H < 1 || H > LC_ATTN_MAX_HEADS) {
        snprintf(err, errlen, "attention: %d heads (1..%d supported)", H, LC_ATTN_MAX_HEADS);
        return -1;
    }
    int n_specs = 1;
    for (const char *c = spec; *c; c++) n_specs += *c == ';';
    if (n_specs != 1 && n_specs != n_layer) {
        snprintf(err, errlen, "attention spec '%s' has %d layer specs; give 1 (all layers) or %d (one per layer)",
                 spec, n_specs, n_layer);
        return -1;
    }
    const char *p = spec;
    for (int l = 0; l < n_specs; l++) {
        const char *semi = strchr(p, ';');
        size_t n = semi ? (size_t)(semi - p) : strlen(p);
        char part[LC_ATTN_SPEC_MAX];
        copy_span(part, sizeof part, p, n);
        if (!*part) {
            snprintf(err, errlen, "attention spec '%s': layer %d is empty", spec, l);
            return -1;
        }
        if (parse_layer(part, H, &layers[l], err, errlen)) return -1;
        p = semi ? semi + 1 : p + n;
    }
    for (int l = n_specs; l < n_layer; l++) layers[l] = layers[0];
    return 0;
}

lc_attn_shape lc_attn_group_shape(const lc_attn_shape *s, const lc_attn_group *g) {
    lc_attn_shape r = *s;
    r.H = g->heads;
    return r;
}

int lc_attn_group_global_count(const lc_attn_group *g, int T) {
    if (!g->global_listed) return g->n_global < T ? g->n_global : T;
    int n = g->n_global;
    while (n > 0 && g->global_pos[n - 1] >= T) n--;
    return n;
}

int lc_attn_layer_check(const lc_attn_layer *layer, const lc_attn_shape *s, char *err, size_t errlen) {
    for (int i = 0; i < layer->n_groups; i++) {
        const lc_attn_group *g = &layer->group[i];
        const lc_attn_shape gs = lc_attn_group_shape(s, g);
        /* A stand-in for the global tensors: the count of positions that exist at this length, and any
         * listed positions. A group with global tokens passes it even when none exist at this length, so
         * a kind without global tokens is refused at every length. */
        lc_attn_global probe;
        memset(&probe, 0, sizeof probe);
        probe.n = lc_attn_group_global_count(g, s->T);
        probe.pos = g->global_listed ? g->global_pos : NULL;
        char msg[384];
        if (lc_attn_kind_check(g->kind, &gs, g->opts, g->n_global ? &probe : NULL, msg, sizeof msg)) {
            snprintf(err, errlen, "attention: %s", msg);
            return -1;
        }
    }
    return 0;
}

int lc_attn_layer_check_globals(const lc_attn_layer *layer, int max_T, char *err, size_t errlen) {
    for (int i = 0; i < layer->n_groups; i++) {
        const lc_attn_group *g = &layer->group[i];
        if (!g->global_listed && g->n_global > max_T) {
            snprintf(err, errlen, "attention %s: global=%d is more than the %d positions of a sequence",
                     g->kind->name, g->n_global, max_T);
            return -1;
        }
        if (g->global_listed && g->n_global > 0 && g->global_pos[g->n_global - 1] >= max_T) {
            snprintf(err, errlen, "attention %s: global position %d is outside the %d positions of a sequence",
                     g->kind->name, g->global_pos[g->n_global - 1], max_T);
            return -1;
        }
    }
    return 0;
}

size_t lc_attn_layer_workspace(const lc_attn_layer *layer, const lc_attn_shape *s) {
    size_t most = 0;
    for (int i = 0; i < layer->n_groups; i++) {
        const lc_attn_shape gs = lc_attn_group_shape(s, &layer->group[i]);
        const size_t n = layer->group[i].kind->workspace_floats(&gs, layer->group[i].opts);
        most = n > most ? n : most;
    }
    return most;
}

int lc_attn_layer_has_global(const lc_attn_layer *layer) {
    for (int i = 0; i < layer->n_groups; i++)
        if (layer->group[i].n_global) return 1;
    return 0;
}

void lc_attn_spec_plan(lc_attn_layer *layers, int n_layer, int D, int max_len) {
    for (int l = 0; l < n_layer; l++)
        for (int i = 0; i < layers[l].n_groups; i++) {
            lc_attn_group *g = &layers[l].group[i];
            if (g->kind->opts_plan) g->kind->opts_plan(g->opts, g->heads, D, max_len);
        }
}

int lc_attn_spec_build(const char *spec, int n_layer, int H, int D, int max_len, lc_attn_layer *layers, char *err,
                       size_t errlen) {
    if (lc_attn_spec_parse(spec, n_layer, H, layers, err, errlen)) return -1;
    lc_attn_spec_plan(layers, n_layer, D, max_len);
    return 0;
}
