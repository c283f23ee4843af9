/* Shared by tests/test_packed.c and tests/test_decoder_block.c: the parameters of one Transformer block or
 * decoder block in one array (named as in the checkpoint, so failures name the tensor), filled with seeded
 * random values, and the activations, scratch and workspace of one call, allocated by hand as the model's
 * planner would. */
#ifndef LC_TESTS_NN_KIT_H
#define LC_TESTS_NN_KIT_H

#include <stdlib.h>
#include <string.h>

#include "attn/spec.h"
#include "core/rng.h"
#include "nn/nn.h"

enum { KIT_MATRIX, KIT_NORM, KIT_BIAS };

typedef struct {
    const char *name;
    size_t off, n;
    int kind, fan_in;
    float **w, **g; /* the struct members bound to p + off and g + off */
} kit_slot;

typedef struct {
    int C, H, F, C_enc; /* C_enc > 0: a decoder block */
    int global;         /* global-token projections */
    int n;
    kit_slot slot[32];
    size_t total;
    float *p, *g;
    lc_decoder_weights w, gw; /* a plain block uses w.self, gw.self */
} kit_params;

static void kit_slot_add(kit_params *k, const char *name, size_t n, int kind, int fan_in, float **w, float **g) {
    k->slot[k->n++] = (kit_slot){name, k->total, n, kind, fan_in, w, g};
    k->total += n;
}

/* Lay out, allocate and fill the parameters (seeded; LayerNorm weights near 1, the rest uniform). */
static void kit_params_init(kit_params *k, int C, int H, int F, int C_enc, int global, uint64_t seed) {
    memset(k, 0, sizeof *k);
    k->C = C, k->H = H, k->F = F, k->C_enc = C_enc, k->global = global;
    lc_block_weights *w = &k->w.self, *g = &k->gw.self;
    const size_t c = (size_t)C, f = (size_t)F;
#define KIT_ADD(name, n, kind, fan, member) kit_slot_add(k, name, n, kind, fan, &w->member, &g->member)
#define KIT_ADD_D(name, n, kind, fan, member) kit_slot_add(k, name, n, kind, fan, &k->w.member, &k->gw.member)
    KIT_ADD("ln1.weight", c, KIT_NORM, 1, ln1_w);
    KIT_ADD("ln1.bias", c, KIT_BIAS, 1, ln1_b);
    KIT_ADD("attn.qkv.weight", 3 * c * c, KIT_MATRIX, C, qkv_w);
    KIT_ADD("attn.qkv.bias", 3 * c, KIT_BIAS, 1, qkv_b);
    KIT_ADD("attn.proj.weight", c * c, KIT_MATRIX, C, proj_w);
    KIT_ADD("attn.proj.bias", c, KIT_BIAS, 1, proj_b);
    if (global) {
        KIT_ADD("attn.global.qkv.weight", 3 * c * c, KIT_MATRIX, C, qkvg_w);
        KIT_ADD("attn.global.qkv.bias", 3 * c, KIT_BIAS, 1, qkvg_b);
    }
    if (C_enc > 0) {
        KIT_ADD_D("ln_cross.weight", c, KIT_NORM, 1, lnc_w);
        KIT_ADD_D("ln_cross.bias", c, KIT_BIAS, 1, lnc_b);
        KIT_ADD_D("cross.q.weight", c * c, KIT_MATRIX, C, cq_w);
        KIT_ADD_D("cross.q.bias", c, KIT_BIAS, 1, cq_b);
        KIT_ADD_D("cross.kv.weight", 2 * c * (size_t)C_enc, KIT_MATRIX, C_enc, ckv_w);
        KIT_ADD_D("cross.kv.bias", 2 * c, KIT_BIAS, 1, ckv_b);
        KIT_ADD_D("cross.proj.weight", c * c, KIT_MATRIX, C, cproj_w);
        KIT_ADD_D("cross.proj.bias", c, KIT_BIAS, 1, cproj_b);
    }
    KIT_ADD("ln2.weight", c, KIT_NORM, 1, ln2_w);
    KIT_ADD("ln2.bias", c, KIT_BIAS, 1, ln2_b);
    KIT_ADD("ffn.fc1.weight", f * c, KIT_MATRIX, C, fc1_w);
    KIT_ADD("ffn.fc1.bias", f, KIT_BIAS, 1, fc1_b);
    KIT_ADD("ffn.fc2.weight", c * f, KIT_MATRIX, F, fc2_w);
    KIT_ADD("ffn.fc2.bias", c, KIT_BIAS, 1, fc2_b);
#undef KIT_ADD
#undef KIT_ADD_D
    k->p = malloc(sizeof(float) * k->total);
    k->g = calloc(k->total, sizeof(float));
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int i = 0; i < k->n; i++) {
        kit_slot *s = &k->slot[i];
        *s->w = k->p + s->off, *s->g = k->g + s->off;
        /* matrices a little sharper than the usual init, so attention is far from uniform */
        const float a = s->kind == KIT_MATRIX ? 2.0f / sqrtf((float)s->fan_in) : 0.2f;
        for (size_t j = 0; j < s->n; j++)
            k->p[s->off + j] = (s->kind == KIT_NORM ? 1.0f : 0.0f) + a * (2.0f * lc_rng_uniform(&r) - 1.0f);
    }
}

static void kit_params_free(kit_params *k) {
    free(k->p);
    free(k->g);
}

static void kit_fill(float *x, size_t n, lc_rng *r, float a) {
    for (size_t i = 0; i < n; i++) x[i] = a * (2.0f * lc_rng_uniform(r) - 1.0f);
}

/* Every buffer of one call, for N decoder (or block) rows and N_enc encoder rows; freed by kit_bufs_free. */
typedef struct {
    lc_decoder_acts a;   /* a plain block uses a.self */
    lc_decoder_scratch s;
    float *tmp, *work, *cross_work;
    void *mem[64];
    int n_mem;
} kit_bufs;

static float *kit_alloc(kit_bufs *b, size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    b->mem[b->n_mem++] = p;
    return p;
}

static void kit_bufs_init(kit_bufs *b, int N, int N_enc, int C, int H, int F, size_t work, size_t cross_work) {
    memset(b, 0, sizeof *b);
    const size_t n = (size_t)N, c = (size_t)C, f = (size_t)F;
    lc_block_acts *a = &b->a.self;
    a->norm1 = kit_alloc(b, n * c), a->mean1 = kit_alloc(b, n), a->rstd1 = kit_alloc(b, n);
    a->qkv = kit_alloc(b, 3 * n * c), a->att = kit_alloc(b, n * c), a->lse = kit_alloc(b, n * (size_t)H);
    a->qkvg = kit_alloc(b, 3 * n * c), a->lse_g = kit_alloc(b, n * (size_t)H);
    a->s1 = kit_alloc(b, n * c), a->norm2 = kit_alloc(b, n * c), a->mean2 = kit_alloc(b, n);
    a->rstd2 = kit_alloc(b, n), a->fc1 = kit_alloc(b, n * f), a->act = kit_alloc(b, n * f), a->s2 = kit_alloc(b, n * c);
    lc_block_scratch *s = &b->s.self;
    s->d_a = kit_alloc(b, n * c), s->d_b = kit_alloc(b, n * c), s->d_tmp = kit_alloc(b, n * c);
    s->d_att = kit_alloc(b, n * c), s->d_norm = kit_alloc(b, n * c), s->d_qkv = kit_alloc(b, 3 * n * c);
    s->d_fc1 = kit_alloc(b, n * f), s->d_act = kit_alloc(b, n * f), s->d_qkvg = kit_alloc(b, 3 * n * c);
    if (N_enc > 0) {
        b->a.normc = kit_alloc(b, n * c), b->a.meanc = kit_alloc(b, n), b->a.rstdc = kit_alloc(b, n);
        b->a.cq = kit_alloc(b, n * c), b->a.ckv = kit_alloc(b, 2 * (size_t)N_enc * c), b->a.catt = kit_alloc(b, n * c);
        b->a.clse = kit_alloc(b, n * (size_t)H), b->a.sc = kit_alloc(b, n * c);
        b->s.d_cq = kit_alloc(b, n * c), b->s.d_ckv = kit_alloc(b, 2 * (size_t)N_enc * c);
    }
    b->tmp = kit_alloc(b, n * c);
    b->work = kit_alloc(b, work);              /* exactly the size planned: ASan sees an overrun */
    b->cross_work = kit_alloc(b, cross_work);
}

static void kit_bufs_free(kit_bufs *b) {
    for (int i = 0; i < b->n_mem; i++) free(b->mem[i]);
}

/* Global positions 0, 1, 2, ... as the model passes them. */
static const int kit_global_pos[LC_ATTN_MAX_GLOBAL] = {0, 1, 2, 3, 4, 5, 6, 7};

/* A vanilla block context over B*T rows (packed when n_seq > 0), dropout off. */
static lc_block_ctx kit_ctx(const kit_params *k, const lc_attn_layer *layer, int causal, lc_norm norm, int B, int T,
                            int n_seq, const int *seq_len) {
    lc_block_ctx c;
    memset(&c, 0, sizeof c);
    c.B = B, c.T = T, c.C = k->C, c.H = k->H, c.F = k->F;
    c.norm = norm, c.activation = LC_ACT_GELU, c.dropout = 0.0f, c.train = 1, c.seed = 5;
    c.layer = layer, c.causal = causal, c.attn_seed = 77, c.global_pos = kit_global_pos, c.threads = 2;
    c.n_seq = n_seq, c.seq_len = seq_len;
    return c;
}

#endif
