/* The decoder block of an encoder-decoder Transformer (HIBERT's sentence decoder): the Transformer block
 * (causal self-attention, feed-forward) with a middle sublayer (lc_block_forward_mid): a cross-attention that
 * reads the encoder's output rows through its own key/value projection (encoder width C_enc) and
 * src/attn/cross.h over packed (query range, key range) pairs. Pre-LN or post-LN as the block; forward and
 * backward, with gradients for the encoder rows. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/cross.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "nn/nn.h"

enum { SITE_CROSS_OUT = 3 }; /* dropout site of the cross-attention output (the block uses 1 and 2) */

static int rows_of(const lc_decoder_ctx *c) { return c->self.B * c->self.T; }
static float drop_p(const lc_decoder_ctx *c) { return c->self.train ? c->self.dropout : 0.0f; }
static uint64_t cross_seed(const lc_decoder_ctx *c) { return lc_seed_mix(c->self.seed, SITE_CROSS_OUT); }

static lc_cross_shape cross_shape(const lc_decoder_ctx *c) {
    const int D = c->self.C / c->self.H;
    lc_cross_shape s = {c->self.H, D, 1.0f / sqrtf((float)D), c->n_pairs, c->q_start, c->q_len,
                        c->kv_start, c->kv_len, c->self.threads};
    return s;
}

/* Views of the cross-attention: queries and output [N, C], keys and values the halves of ckv [N_enc, 2C]. */
static lc_cross_tensors cross_views(const lc_decoder_ctx *c, const lc_decoder_acts *a, const lc_decoder_scratch *s,
                                    float *dout) {
    const long C = c->self.C;
    lc_cross_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){a->cq, 0, C}, t.out = (lc_view){a->catt, 0, C};
    t.k = (lc_view){a->ckv, 0, 2 * C}, t.v = (lc_view){a->ckv + C, 0, 2 * C};
    t.lse = a->clse;
    if (s) {
        t.dout = (lc_view){dout, 0, C}, t.dq = (lc_view){s->d_cq, 0, C};
        t.dk = (lc_view){s->d_ckv, 0, 2 * C}, t.dv = (lc_view){s->d_ckv + C, 0, 2 * C};
    }
    return t;
}

size_t lc_decoder_cross_workspace(int max_kv_len, int threads) {
    const int zero = 0, len = max_kv_len > 1 ? max_kv_len : 1;
    const lc_cross_shape s = {1, 1, 1.0f, 1, &zero, &len, &zero, &len, threads};
    return lc_cross_workspace(&s);
}

int lc_decoder_check(const lc_decoder_ctx *c, char *err, size_t errlen) {
    const lc_block_ctx *b = &c->self;
    if (!b->causal) return snprintf(err, errlen, "decoder: the self-attention must be causal"), -1;
    if (b->M || b->relpos || b->window || b->kv)
        return snprintf(err, errlen, "decoder: vanilla blocks only (no memory, relative positions or cache)"), -1;
    if (c->N_enc < 1 || c->C_enc < 1 || !c->enc)
        return snprintf(err, errlen, "decoder: %d encoder rows of width %d", c->N_enc, c->C_enc), -1;
    char msg[384];
    if (lc_block_check_attention(b, msg, sizeof msg)) return snprintf(err, errlen, "decoder: %s", msg), -1;
    const lc_cross_shape s = cross_shape(c);
    if (lc_cross_check(&s, msg, sizeof msg)) return snprintf(err, errlen, "decoder: %s", msg), -1;
    long covered = 0;
    for (int i = 0; i < c->n_pairs; i++) {
        if ((long)c->q_start[i] + c->q_len[i] > rows_of(c) || (long)c->kv_start[i] + c->kv_len[i] > c->N_enc)
            return snprintf(err, errlen, "decoder: pair %d (query rows %d+%d, encoder rows %d+%d) is outside the %d "
                            "decoder and %d encoder rows", i, c->q_start[i], c->q_len[i], c->kv_start[i],
                            c->kv_len[i], rows_of(c), c->N_enc), -1;
        covered += c->q_len[i];
    }
    /* the ranges do not overlap (lc_cross_check), so covering N rows in all means covering each once */
    if (covered != rows_of(c))
        return snprintf(err, errlen, "decoder: the pairs' query ranges cover %ld of the %d decoder rows", covered,
                        rows_of(c)), -1;
    if (lc_cross_workspace(&s) > c->cross_work_floats)
        return snprintf(err, errlen, "decoder: cross-attention workspace of %zu floats, %zu needed",
                        c->cross_work_floats, lc_cross_workspace(&s)), -1;
    return 0;
}

/* tmp = drop(cproj(cross(cq(in), ckv(enc)))) */
static void cross_sublayer(const lc_decoder_ctx *c, const lc_decoder_weights *w, const lc_decoder_acts *a,
                           const float *in) {
    const int N = rows_of(c), C = c->self.C;
    lc_linear_forward_at(c->self.precision, a->cq, in, w->cq_w, w->cq_b, N, C, C);
    lc_linear_forward_at(c->self.precision, a->ckv, c->enc, w->ckv_w, w->ckv_b, c->N_enc, c->C_enc, 2 * C);
    const lc_cross_shape s = cross_shape(c);
    const lc_cross_tensors t = cross_views(c, a, NULL, NULL);
    lc_cross_forward(&s, &t, c->cross_work);
    lc_linear_forward_at(c->self.precision, c->self.tmp, a->catt, w->cproj_w, w->cproj_b, N, C, C);
    lc_dropout_forward(c->self.tmp, c->self.tmp, (size_t)N * C, drop_p(c), cross_seed(c));
}

/* Given dsum = d loss / d (residual + drop(cross(in))): din += d loss / d in (din may be dsum), d_enc +=
 * d loss / d enc (when not NULL), weight gradients into g. Uses the block scratch's d_tmp and d_att. */
static void cross_backward(const lc_decoder_ctx *c, const lc_decoder_weights *w, lc_decoder_weights *g,
                           const lc_decoder_acts *a, const float *in, const float *dsum, float *din, float *d_enc,
                           const lc_decoder_scratch *s) {
    const int N = rows_of(c), C = c->self.C;
    float *d_tmp = s->self.d_tmp, *d_catt = s->self.d_att;
    lc_dropout_backward(d_tmp, dsum, (size_t)N * C, drop_p(c), cross_seed(c));
    memset(d_catt, 0, sizeof(float) * (size_t)N * C);
    lc_linear_backward_at(c->self.precision, d_catt, g->cproj_w, g->cproj_b, d_tmp, a->catt, w->cproj_w, N, C, C);
    memset(s->d_ckv, 0, sizeof(float) * (size_t)c->N_enc * 2 * C); /* rows no pair reads stay 0 */
    const lc_cross_shape cs = cross_shape(c);
    const lc_cross_tensors t = cross_views(c, a, s, d_catt);
    lc_cross_backward(&cs, &t, c->cross_work);
    lc_linear_backward_at(c->self.precision, din, g->cq_w, g->cq_b, s->d_cq, in, w->cq_w, N, C, C);
    lc_linear_backward_at(c->self.precision, d_enc, g->ckv_w, g->ckv_b, s->d_ckv, c->enc, w->ckv_w, c->N_enc, c->C_enc,
                          2 * C);
}

/* The cross-attention as the block's middle sublayer (lc_block_mid): its calls and its LayerNorm. */
typedef struct {
    const lc_decoder_ctx *c;
    const lc_decoder_weights *w;
    lc_decoder_weights *g;
    const lc_decoder_acts *a;
    float *d_enc;
    const lc_decoder_scratch *s;
} cross_user;

static void cross_mid_forward(const void *user, const float *in) {
    const cross_user *u = user;
    cross_sublayer(u->c, u->w, u->a, in);
}

static void cross_mid_backward(const void *user, const float *in, const float *dsum, float *din) {
    const cross_user *u = user;
    cross_backward(u->c, u->w, u->g, u->a, in, dsum, din, u->d_enc, u->s);
}

static lc_block_mid cross_mid(const cross_user *u) {
    const lc_block_mid mid = {cross_mid_forward, cross_mid_backward, u, u->w->lnc_w, u->w->lnc_b,
                              u->g ? u->g->lnc_w : NULL, u->g ? u->g->lnc_b : NULL, u->a->normc, u->a->meanc,
                              u->a->rstdc, u->a->sc};
    return mid;
}

void lc_decoder_forward(const lc_decoder_ctx *c, const lc_decoder_weights *w, const lc_decoder_acts *a,
                        const float *x, float *out) {
    const cross_user u = {c, w, NULL, a, NULL, NULL};
    const lc_block_mid mid = cross_mid(&u);
    lc_block_forward_mid(&c->self, &w->self, &a->self, x, out, &mid);
}

void lc_decoder_backward(const lc_decoder_ctx *c, const lc_decoder_weights *w, lc_decoder_weights *g,
                         const lc_decoder_acts *a, const float *x, float *dx, float *d_enc,
                         const lc_decoder_scratch *s) {
    const cross_user u = {c, w, g, a, d_enc, s};
    const lc_block_mid mid = cross_mid(&u);
    lc_block_backward_mid(&c->self, &w->self, &g->self, &a->self, x, dx, &s->self, &mid);
}
