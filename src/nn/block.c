/* The Transformer block: causal self-attention and feed-forward sublayers with residual connections,
 * in pre-LN (x + f(LN(x))) or post-LN (LN(x + f(x))) arrangement; forward and backward. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "nn/nn.h"

#define LC_LN_EPS 1e-5f

enum { SITE_ATTN_OUT = 1, SITE_FFN_OUT = 2 };

static void add_into(float *out, const float *a, const float *b, long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static float drop_p(const lc_block_ctx *c) { return c->train ? c->dropout : 0.0f; }

static uint64_t site_seed(const lc_block_ctx *c, int site) { return lc_seed_mix(c->seed, (uint64_t)site); }

static lc_attn_tensors attn_views(const lc_block_ctx *c, float *qkv, float *att) {
    long T = c->T, C = c->C;
    lc_attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){qkv, T * 3 * C, 3 * C};
    t.k = (lc_view){qkv + C, T * 3 * C, 3 * C};
    t.v = (lc_view){qkv + 2 * C, T * 3 * C, 3 * C};
    t.out = (lc_view){att, T * C, C};
    return t;
}

static lc_attn_shape attn_shape(const lc_block_ctx *c) {
    lc_attn_shape s = {c->B, c->H, c->T, 0, c->C / c->H, 1, 0.0f};
    s.scale = 1.0f / sqrtf((float)s.D);
    return s;
}

/* tmp = drop(proj(attention(qkv(in)))) */
static void attention_sublayer(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a,
                               const float *in) {
    int N = c->B * c->T, C = c->C;
    lc_linear_forward(a->qkv, in, w->qkv_w, w->qkv_b, N, C, 3 * C);
    lc_attn_shape s = attn_shape(c);
    lc_attn_tensors t = attn_views(c, a->qkv, a->att);
    t.lse = a->lse;
    c->attn->forward(&s, c->attn_opts, &t, c->attn_work);
    lc_linear_forward(c->tmp, a->att, w->proj_w, w->proj_b, N, C, C);
    lc_dropout_forward(c->tmp, c->tmp, (size_t)N * C, drop_p(c), site_seed(c, SITE_ATTN_OUT));
}

/* tmp = drop(fc2(act(fc1(in)))) */
static void ffn_sublayer(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *in) {
    int N = c->B * c->T, C = c->C, F = c->F;
    lc_linear_forward(a->fc1, in, w->fc1_w, w->fc1_b, N, C, F);
    if (c->activation == LC_ACT_GELU)
        lc_gelu_forward(a->act, a->fc1, (size_t)N * F);
    else
        lc_relu_forward(a->act, a->fc1, (size_t)N * F);
    lc_linear_forward(c->tmp, a->act, w->fc2_w, w->fc2_b, N, F, C);
    lc_dropout_forward(c->tmp, c->tmp, (size_t)N * C, drop_p(c), site_seed(c, SITE_FFN_OUT));
}

void lc_block_forward(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *x,
                      float *out) {
    int N = c->B * c->T, C = c->C;
    long NC = (long)N * C;
    if (c->norm == LC_NORM_PRE) {
        lc_layernorm_forward(a->norm1, a->mean1, a->rstd1, x, w->ln1_w, w->ln1_b, N, C, LC_LN_EPS);
        attention_sublayer(c, w, a, a->norm1);
        add_into(a->s1, x, c->tmp, NC);
        lc_layernorm_forward(a->norm2, a->mean2, a->rstd2, a->s1, w->ln2_w, w->ln2_b, N, C, LC_LN_EPS);
        ffn_sublayer(c, w, a, a->norm2);
        add_into(out, a->s1, c->tmp, NC);
    } else {
        attention_sublayer(c, w, a, x);
        add_into(a->s1, x, c->tmp, NC);
        lc_layernorm_forward(a->norm1, a->mean1, a->rstd1, a->s1, w->ln1_w, w->ln1_b, N, C, LC_LN_EPS);
        ffn_sublayer(c, w, a, a->norm1);
        add_into(a->s2, a->norm1, c->tmp, NC);
        lc_layernorm_forward(out, a->mean2, a->rstd2, a->s2, w->ln2_w, w->ln2_b, N, C, LC_LN_EPS);
    }
}

/* Given dsum = d loss / d (residual + drop(ffn(in))), accumulate d loss / d in into din. */
static void ffn_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                         const lc_block_acts *a, const float *in, const float *dsum, float *din,
                         const lc_block_scratch *s) {
    int N = c->B * c->T, C = c->C, F = c->F;
    lc_dropout_backward(s->d_tmp, dsum, (size_t)N * C, drop_p(c), site_seed(c, SITE_FFN_OUT));
    memset(s->d_act, 0, sizeof(float) * (size_t)N * F);
    lc_linear_backward(s->d_act, g->fc2_w, g->fc2_b, s->d_tmp, a->act, w->fc2_w, N, F, C);
    memset(s->d_fc1, 0, sizeof(float) * (size_t)N * F);
    if (c->activation == LC_ACT_GELU)
        lc_gelu_backward(s->d_fc1, a->fc1, s->d_act, (size_t)N * F);
    else
        lc_relu_backward(s->d_fc1, a->fc1, s->d_act, (size_t)N * F);
    lc_linear_backward(din, g->fc1_w, g->fc1_b, s->d_fc1, in, w->fc1_w, N, C, F);
}

/* Given dsum = d loss / d (residual + drop(attn(in))), accumulate d loss / d in into din. */
static void attention_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                               const lc_block_acts *a, const float *in, const float *dsum, float *din,
                               const lc_block_scratch *s) {
    int N = c->B * c->T, C = c->C;
    lc_dropout_backward(s->d_tmp, dsum, (size_t)N * C, drop_p(c), site_seed(c, SITE_ATTN_OUT));
    memset(s->d_att, 0, sizeof(float) * (size_t)N * C);
    lc_linear_backward(s->d_att, g->proj_w, g->proj_b, s->d_tmp, a->att, w->proj_w, N, C, C);
    lc_attn_shape sh = attn_shape(c);
    lc_attn_tensors t = attn_views(c, a->qkv, a->att);
    t.lse = a->lse;
    t.dout = (lc_view){s->d_att, (long)c->T * C, C};
    t.dq = (lc_view){s->d_qkv, (long)c->T * 3 * C, 3 * C};
    t.dk = (lc_view){s->d_qkv + C, (long)c->T * 3 * C, 3 * C};
    t.dv = (lc_view){s->d_qkv + 2 * C, (long)c->T * 3 * C, 3 * C};
    c->attn->backward(&sh, c->attn_opts, &t, c->attn_work);
    lc_linear_backward(din, g->qkv_w, g->qkv_b, s->d_qkv, in, w->qkv_w, N, C, 3 * C);
}

void lc_block_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                       const lc_block_acts *a, const float *x, float *dx, const lc_block_scratch *s) {
    int N = c->B * c->T, C = c->C;
    size_t NC = (size_t)N * C;
    if (c->norm == LC_NORM_PRE) {
        /* out = s1 + drop(ffn(LN2(s1))); s1 = x + drop(attn(LN1(x))); dx carries d out -> d s1 -> d x */
        memset(s->d_norm, 0, sizeof(float) * NC);
        ffn_backward(c, w, g, a, a->norm2, dx, s->d_norm, s);
        lc_layernorm_backward(dx, g->ln2_w, g->ln2_b, s->d_norm, a->s1, w->ln2_w, a->mean2, a->rstd2, N, C);
        memset(s->d_norm, 0, sizeof(float) * NC);
        attention_backward(c, w, g, a, a->norm1, dx, s->d_norm, s);
        lc_layernorm_backward(dx, g->ln1_w, g->ln1_b, s->d_norm, x, w->ln1_w, a->mean1, a->rstd1, N, C);
    } else {
        /* out = LN2(s2); s2 = h1 + drop(ffn(h1)); h1 = LN1(s1); s1 = x + drop(attn(x)) */
        float *d_s2 = s->d_a, *d_s1 = s->d_b;
        memset(d_s2, 0, sizeof(float) * NC);
        lc_layernorm_backward(d_s2, g->ln2_w, g->ln2_b, dx, a->s2, w->ln2_w, a->mean2, a->rstd2, N, C);
        ffn_backward(c, w, g, a, a->norm1, d_s2, d_s2, s); /* d_s2 becomes d h1 */
        memset(d_s1, 0, sizeof(float) * NC);
        lc_layernorm_backward(d_s1, g->ln1_w, g->ln1_b, d_s2, a->s1, w->ln1_w, a->mean1, a->rstd1, N, C);
        attention_backward(c, w, g, a, x, d_s1, d_s1, s); /* d_s1 becomes d x */
        memcpy(dx, d_s1, sizeof(float) * NC);
    }
}
