/* The attention spec string: which kind (with which options) each layer and each group of heads uses.
 *
 *   spec   := layer (';' layer)*        one layer: every layer; otherwise exactly one per layer
 *   layer  := group ('+' group)*        groups take consecutive heads, in order
 *   group  := [N 'x'] kind [':' opt (',' opt)*]
 *   opt    := key '=' value             the kind's options; global=G for kinds with LC_ATTN_CAP_GLOBAL
 *
 * N is the group's head count; at most one group of a layer may leave it out and takes the remaining
 * heads. global=G makes the first G positions of every sequence global tokens (Longformer) for the
 * group, with the layer's own global projections; global=p0/p1/... (two or more positions, increasing)
 * marks those positions instead. A sequence shorter than a position simply lacks that global token. Examples (docs/guides/attention.md has more):
 *   full                               dense attention everywhere (the default)
 *   window:w=128                       sliding window of 128 keys per side in every layer
 *   2xfull+window:w=32,dil=1/2         per layer 2 full heads, the rest windowed with dilations 1, 2, 1, 2...
 *   window:w=32;window:w=64;full       layer 0, layer 1, layer 2
 */
#ifndef LC_ATTN_SPEC_H
#define LC_ATTN_SPEC_H

#include <stddef.h>

#include "attn/attn.h"

#define LC_ATTN_MAX_GROUPS 8
#define LC_ATTN_SPEC_MAX 512
#define LC_ATTN_MAX_GLOBAL 64 /* positions a global=p0/p1/... list may name */ /* characters of a spec string, terminator included */

typedef struct {
    const lc_attn_kind *kind;
    int h0, heads;   /* first head and number of heads */
    int n_global;    /* global tokens (0: none): the first n_global positions, or global_pos[] */
    int global_listed; /* 1: the positions are global_pos[0 .. n_global) */
    int global_pos[LC_ATTN_MAX_GLOBAL];
    _Alignas(16) unsigned char opts[LC_ATTN_OPTS_BYTES]; /* the kind's options struct */
} lc_attn_group;

typedef struct {
    int n_groups;
    lc_attn_group group[LC_ATTN_MAX_GROUPS];
} lc_attn_layer;

/* Parse `spec` for n_layer layers of H heads into layers[0..n_layer). Returns 0, or -1 with a one-line
 * message in err naming the offending part. Options are checked by syntax here; lc_attn_layer_check
 * checks them against a shape. */
int lc_attn_spec_parse(const char *spec, int n_layer, int H, lc_attn_layer *layers, char *err, size_t errlen);

/* The shape of group g of a layer whose full shape is s (the group's heads only). */
lc_attn_shape lc_attn_group_shape(const lc_attn_shape *s, const lc_attn_group *g);

/* The number of group g's global positions that exist in a sequence of T positions (Longformer: the
 * configured positions >= T are not global there): global=G gives min(G, T), a list those below T. */
int lc_attn_group_global_count(const lc_attn_group *g, int T);

/* Check every group of a layer against the layer's shape with lc_attn_kind_check (caps, length rule,
 * options), the group's global positions cut to those < s->T; 0 or -1 with a message in err. The model
 * runs it when planning and before every forward, with the shape of that call. */
int lc_attn_layer_check(const lc_attn_layer *layer, const lc_attn_shape *s, char *err, size_t errlen);

/* A configuration check: every configured global position exists in the longest sequence the model
 * takes (max_T positions), so none is configured in vain; 0 or -1 with a message in err. */
int lc_attn_layer_check_globals(const lc_attn_layer *layer, int max_T, char *err, size_t errlen);

/* Workspace floats for running the layer's groups one after another (with s->threads threads). */
size_t lc_attn_layer_workspace(const lc_attn_layer *layer, const lc_attn_shape *s);

/* Whether any group of the layer has global tokens (the layer then needs global projections). */
int lc_attn_layer_has_global(const lc_attn_layer *layer);

/* Fixes every group's length-dependent options (the kinds' opts_plan) for max_len keys per sequence and
 * heads of dimension D. Call once after lc_attn_spec_parse, before sizing parameters, state or
 * workspaces. */
void lc_attn_spec_plan(lc_attn_layer *layers, int n_layer, int D, int max_len);
/* The two together, as a model turns its spec into layers: lc_attn_spec_parse, then lc_attn_spec_plan for
 * heads of dimension D and max_len keys per sequence. 0, or -1 with the parse error in err. */
int lc_attn_spec_build(const char *spec, int n_layer, int H, int D, int max_len, lc_attn_layer *layers, char *err,
                       size_t errlen);

#endif
