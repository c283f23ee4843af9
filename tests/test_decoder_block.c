/* The decoder block (src/nn/decoder.c: causal self-attention, cross-attention to encoder rows, FFN), pre-LN
 * and post-LN: its forward against a plain double-precision reference of the whole block written here
 * (LayerNorm, linear, softmax attention, GELU); every gradient (each weight, the decoder input, the encoder
 * rows) against central differences of that reference, element by element, and against float central
 * differences along directions; packed decoder sequences (several reading one encoder sequence) against
 * separate runs; causality (an output row does not depend on later rows nor on other sequences); the checks. */
#include <stdio.h>
#include <string.h>

#include "attn/spec.h"
#include "harness.h"
#include "kernels/kernels.h"
#include "nn/nn.h"
#include "nn_kit.h"

enum { C = 8, H = 2, F = 12, CE = 6, MAXS = 8 };

/* Decoder sequences (packed in this order) and the encoder rows each reads. */
typedef struct {
    int n_seq, len[MAXS], N, N_enc;
    int n_pairs, q_start[MAXS], q_len[MAXS], kv_start[MAXS], kv_len[MAXS];
} layout;

/* 3 decoder sequences of 3, 3, 4 rows; 2 encoder sequences of 4 and 3 rows; sequences 0 and 2 read the first. */
static layout make_layout(void) {
    layout L = {3, {3, 3, 4}, 10, 7, 3, {0, 3, 6}, {3, 3, 4}, {0, 4, 0}, {4, 3, 4}};
    return L;
}

/* ------------------------------------------------------------ double reference of the whole block */

static const double *param(const kit_params *k, const double *p, const char *name) {
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->slot[i].name, name) == 0) return p + k->slot[i].off;
    return NULL;
}

static void ref_ln(double *out, const double *x, const double *w, const double *b, int n) {
    double mean[64], rstd[64];
    lc_layernorm_forward_ref(out, mean, rstd, x, w, b, n, C, LC_LN_EPS);
}

/* out[r] = sum_j softmax_j(q_r . k_j / sqrt(D)) v_j per head, keys j in [k0, k0 + nk) (causal: j <= k0 + t). */
static void ref_attend(double *out, const double *q, int ldq, const double *k, const double *v, int ldk, int nq,
                       int nk, int causal) {
    const int D = C / H;
    for (int t = 0; t < nq; t++)
        for (int h = 0; h < H; h++) {
            const int n = causal ? t + 1 : nk;
            double s[64], m = -1e300, sum = 0;
            for (int j = 0; j < n; j++) {
                s[j] = 0;
                for (int d = 0; d < D; d++) s[j] += q[t * ldq + h * D + d] * k[j * ldk + h * D + d];
                s[j] /= sqrt((double)D);
                m = s[j] > m ? s[j] : m;
            }
            for (int j = 0; j < n; j++) sum += s[j] = exp(s[j] - m);
            for (int d = 0; d < D; d++) {
                double o = 0;
                for (int j = 0; j < n; j++) o += s[j] / sum * v[j * ldk + h * D + d];
                out[t * C + h * D + d] = o;
            }
        }
}

/* proj(causal self-attention(in)) over each sequence */
static void ref_self(const kit_params *k, const double *p, const layout *L, const double *in, double *out) {
    double qkv[64 * 3 * C], att[64 * C];
    lc_linear_forward_ref(qkv, in, param(k, p, "attn.qkv.weight"), param(k, p, "attn.qkv.bias"), L->N, C, 3 * C);
    for (int i = 0, r0 = 0; i < L->n_seq; r0 += L->len[i++])
        ref_attend(att + r0 * C, qkv + r0 * 3 * C, 3 * C, qkv + r0 * 3 * C + C, qkv + r0 * 3 * C + 2 * C, 3 * C,
                   L->len[i], L->len[i], 1);
    lc_linear_forward_ref(out, att, param(k, p, "attn.proj.weight"), param(k, p, "attn.proj.bias"), L->N, C, C);
}

/* proj(cross-attention(q(in), kv(enc))) over each pair */
static void ref_cross(const kit_params *k, const double *p, const layout *L, const double *in, const double *enc,
                      double *out) {
    double q[64 * C], kv[64 * 2 * C], att[64 * C];
    lc_linear_forward_ref(q, in, param(k, p, "cross.q.weight"), param(k, p, "cross.q.bias"), L->N, C, C);
    lc_linear_forward_ref(kv, enc, param(k, p, "cross.kv.weight"), param(k, p, "cross.kv.bias"), L->N_enc, CE, 2 * C);
    for (int i = 0; i < L->n_pairs; i++)
        ref_attend(att + L->q_start[i] * C, q + L->q_start[i] * C, C, kv + L->kv_start[i] * 2 * C,
                   kv + L->kv_start[i] * 2 * C + C, 2 * C, L->q_len[i], L->kv_len[i], 0);
    lc_linear_forward_ref(out, att, param(k, p, "cross.proj.weight"), param(k, p, "cross.proj.bias"), L->N, C, C);
}

static void ref_ffn(const kit_params *k, const double *p, const layout *L, const double *in, double *out) {
    double h[64 * F], a[64 * F];
    lc_linear_forward_ref(h, in, param(k, p, "ffn.fc1.weight"), param(k, p, "ffn.fc1.bias"), L->N, C, F);
    lc_gelu_forward_ref(a, h, (size_t)L->N * F);
    lc_linear_forward_ref(out, a, param(k, p, "ffn.fc2.weight"), param(k, p, "ffn.fc2.bias"), L->N, F, C);
}

static void add(double *out, const double *a, const double *b, int n) {
    for (int i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static void ref_forward(const kit_params *k, const double *p, const layout *L, lc_norm norm, const double *x,
                        const double *enc, double *out) {
    const int n = L->N * C;
    double t[64 * C], u[64 * C], s1[64 * C], sc[64 * C];
    if (norm == LC_NORM_PRE) {
        ref_ln(t, x, param(k, p, "ln1.weight"), param(k, p, "ln1.bias"), L->N);
        ref_self(k, p, L, t, u), add(s1, x, u, n);
        ref_ln(t, s1, param(k, p, "ln_cross.weight"), param(k, p, "ln_cross.bias"), L->N);
        ref_cross(k, p, L, t, enc, u), add(sc, s1, u, n);
        ref_ln(t, sc, param(k, p, "ln2.weight"), param(k, p, "ln2.bias"), L->N);
        ref_ffn(k, p, L, t, u), add(out, sc, u, n);
    } else {
        ref_self(k, p, L, x, u), add(s1, x, u, n);
        ref_ln(t, s1, param(k, p, "ln1.weight"), param(k, p, "ln1.bias"), L->N);
        ref_cross(k, p, L, t, enc, u), add(sc, t, u, n);
        ref_ln(t, sc, param(k, p, "ln_cross.weight"), param(k, p, "ln_cross.bias"), L->N);
        ref_ffn(k, p, L, t, u), add(s1, t, u, n);
        ref_ln(out, s1, param(k, p, "ln2.weight"), param(k, p, "ln2.bias"), L->N);
    }
}

/* loss = sum out * dy */
static double ref_loss(const kit_params *k, const double *p, const layout *L, lc_norm norm, const double *x,
                       const double *enc, const double *dy) {
    double out[64 * C], l = 0;
    ref_forward(k, p, L, norm, x, enc, out);
    for (int i = 0; i < L->N * C; i++) l += out[i] * dy[i];
    return l;
}

/* ------------------------------------------------------------ the block under test */

typedef struct {
    float *out, *dx, *d_enc; /* [N C], [N C], [N_enc CE]; weight gradients in k->g */
} result;

/* Forward and backward (d out = dy) of the decoder rows of L (packed when L->n_seq > 1); d_enc accumulates.
 * Weight gradients accumulate into k->g. */
static int run(kit_params *k, const lc_attn_layer *layer, lc_norm norm, const layout *L, const float *x,
               const float *enc, const float *dy, result *r) {
    int max_len = 0, max_kv = 1;
    for (int i = 0; i < L->n_seq; i++) max_len = L->len[i] > max_len ? L->len[i] : max_len;
    for (int i = 0; i < L->n_pairs; i++) max_kv = L->kv_len[i] > max_kv ? L->kv_len[i] : max_kv;
    lc_decoder_ctx c;
    memset(&c, 0, sizeof c);
    const int packed = L->n_seq > 1;
    c.self = kit_ctx(k, layer, 1, norm, 1, L->N, packed ? L->n_seq : 0, L->len);
    c.self.attn_work_floats = lc_block_packed_workspace(&c.self, L->N, max_len, 0);
    c.enc = enc, c.N_enc = L->N_enc, c.C_enc = CE;
    c.n_pairs = L->n_pairs, c.q_start = L->q_start, c.q_len = L->q_len, c.kv_start = L->kv_start, c.kv_len = L->kv_len;
    c.cross_work_floats = lc_decoder_cross_workspace(max_kv, c.self.threads);
    kit_bufs b;
    kit_bufs_init(&b, L->N, L->N_enc, C, H, F, c.self.attn_work_floats, c.cross_work_floats);
    c.self.attn_work = b.work, c.self.tmp = b.tmp, c.cross_work = b.cross_work;
    char err[512];
    const int rc = lc_decoder_check(&c, err, sizeof err);
    CHECK(rc == 0, "decoder check: %s", err);
    if (rc == 0) {
        lc_decoder_forward(&c, &k->w, &b.a, x, r->out);
        if (r->dx) {
            memcpy(r->dx, dy, sizeof(float) * (size_t)L->N * C);
            lc_decoder_backward(&c, &k->w, &k->gw, &b.a, x, r->dx, r->d_enc, &b.s);
        }
    }
    kit_bufs_free(&b);
    return rc;
}

typedef struct {
    layout L;
    float x[64 * C], enc[64 * CE], dy[64 * C];
} problem;

static problem make_problem(uint64_t seed) {
    problem P;
    memset(&P, 0, sizeof P);
    P.L = make_layout();
    lc_rng r;
    lc_rng_seed(&r, seed);
    kit_fill(P.x, (size_t)P.L.N * C, &r, 1.0f), kit_fill(P.enc, (size_t)P.L.N_enc * CE, &r, 1.0f);
    kit_fill(P.dy, (size_t)P.L.N * C, &r, 1.0f);
    return P;
}

static int parse(const char *spec, lc_attn_layer *layer) {
    char err[512];
    const int rc = lc_attn_spec_parse(spec, 1, H, layer, err, sizeof err);
    CHECK(rc == 0, "spec %s: %s", spec, err);
    return rc;
}

/* A test's set-up: spec parsed into layer, parameters from param_seed (global projections where the spec has
 * global positions) and the problem of problem_seed. */
typedef struct {
    lc_attn_layer layer;
    kit_params k;
    problem P;
} fixture;

/* Fills *f; non-zero (a failed CHECK) where the spec does not parse. */
static int set_up(fixture *f, const char *spec, uint64_t param_seed, uint64_t problem_seed) {
    if (parse(spec, &f->layer)) return -1;
    kit_params_init(&f->k, C, H, F, CE, lc_attn_layer_has_global(&f->layer), param_seed);
    f->P = make_problem(problem_seed);
    return 0;
}

static float max_abs(const float *a, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(a[i]) > m ? fabsf(a[i]) : m;
    return m;
}

/* Every gradient element against central differences (h = 1e-6) of the double reference. */
static void against_reference(lc_norm norm) {
    fixture f;
    if (set_up(&f, "full", 31, 8)) return;
    const layout *L = &f.P.L;
    float out[64 * C], dx[64 * C], d_enc[64 * CE] = {0};
    result r = {out, dx, d_enc};
    if (run(&f.k, &f.layer, norm, L, f.P.x, f.P.enc, f.P.dy, &r)) return;
    double *p = malloc(sizeof(double) * f.k.total), xd[64 * C], ed[64 * CE], dyd[64 * C], want[64 * C];
    for (size_t i = 0; i < f.k.total; i++) p[i] = f.k.p[i];
    for (int i = 0; i < L->N * C; i++) xd[i] = f.P.x[i], dyd[i] = f.P.dy[i];
    for (int i = 0; i < L->N_enc * CE; i++) ed[i] = f.P.enc[i];
    ref_forward(&f.k, p, L, norm, xd, ed, want);
    const char *nn = norm == LC_NORM_PRE ? "pre" : "post";
    char label[128];
    snprintf(label, sizeof label, "%s out vs double reference", nn);
    CHECK_CLOSE(label, out, want, L->N * C, 1e-4, 1e-5);
    /* central differences of the reference, one element at a time */
    const double h = 1e-6;
    double *fd = malloc(sizeof(double) * (f.k.total + 64 * C + 64 * CE));
#define FD_OF(v, i)                                                                                      \
    do {                                                                                                 \
        const double keep = (v)[i];                                                                      \
        (v)[i] = keep + h;                                                                               \
        const double up = ref_loss(&f.k, p, L, norm, xd, ed, dyd);                                         \
        (v)[i] = keep - h;                                                                               \
        const double down = ref_loss(&f.k, p, L, norm, xd, ed, dyd);                                       \
        (v)[i] = keep;                                                                                   \
        fd[i] = (up - down) / (2 * h);                                                                   \
    } while (0)
    for (size_t i = 0; i < f.k.total; i++) FD_OF(p, i);
    for (int i = 0; i < f.k.n; i++) {
        const kit_slot *s = &f.k.slot[i];
        snprintf(label, sizeof label, "%s d dec.blocks.0.%s", nn, s->name);
        CHECK_CLOSE(label, f.k.g + s->off, fd + s->off, s->n, 2e-4, 1e-5 * max_abs(f.k.g + s->off, s->n) + 1e-6);
    }
    for (int i = 0; i < L->N * C; i++) FD_OF(xd, i);
    snprintf(label, sizeof label, "%s d x (decoder input)", nn);
    CHECK_CLOSE(label, dx, fd, L->N * C, 2e-4, 1e-5 * max_abs(dx, (size_t)L->N * C));
    for (int i = 0; i < L->N_enc * CE; i++) FD_OF(ed, i);
    snprintf(label, sizeof label, "%s d enc (encoder rows)", nn);
    CHECK_CLOSE(label, d_enc, fd, L->N_enc * CE, 2e-4, 1e-5 * max_abs(d_enc, (size_t)L->N_enc * CE));
#undef FD_OF
    free(fd);
    free(p);
    kit_params_free(&f.k);
}

TEST(decoder_pre_ln_against_double_reference) { against_reference(LC_NORM_PRE); }
TEST(decoder_post_ln_against_double_reference) { against_reference(LC_NORM_POST); }

/* loss = sum out * dy of the float block (forward only), in double */
static double float_loss(kit_params *k, const lc_attn_layer *layer, lc_norm norm, const problem *P) {
    float out[64 * C];
    result r = {out, NULL, NULL};
    run(k, layer, norm, &P->L, P->x, P->enc, P->dy, &r);
    double l = 0;
    for (int i = 0; i < P->L.N * C; i++) l += (double)out[i] * P->dy[i];
    return l;
}

/* Directional derivative of the float loss along d (unit; random plus the gradient's direction, as
 * tests/test_model_attn.c) by central differences with step eps, against g . d. */
static void directional(const char *label, float *v, const float *g, size_t n, kit_params *k,
                        const lc_attn_layer *layer, lc_norm norm, const problem *P, lc_rng *r) {
    const double eps = 1e-2;
    float *d = malloc(sizeof(float) * n);
    double norm_d = 0, gn = 0, gd = 0;
    for (size_t j = 0; j < n; j++) gn += (double)g[j] * g[j];
    gn = gn > 0 ? sqrt(gn) : 1;
    for (size_t j = 0; j < n; j++) d[j] = lc_rng_normal(r), norm_d += (double)d[j] * d[j];
    for (size_t j = 0; j < n; j++) d[j] = (float)(d[j] / sqrt(norm_d) + g[j] / gn);
    norm_d = 0;
    for (size_t j = 0; j < n; j++) norm_d += (double)d[j] * d[j];
    for (size_t j = 0; j < n; j++) d[j] = (float)(d[j] / sqrt(norm_d)), gd += (double)g[j] * d[j];
    for (size_t j = 0; j < n; j++) v[j] += (float)eps * d[j];
    const double up = float_loss(k, layer, norm, P);
    for (size_t j = 0; j < n; j++) v[j] -= 2 * (float)eps * d[j];
    const double down = float_loss(k, layer, norm, P);
    for (size_t j = 0; j < n; j++) v[j] += (float)eps * d[j];
    const double fd = (up - down) / (2 * eps);
    CHECK_CLOSE(label, &gd, &fd, 1, 2e-2, 1e-3);
    free(d);
}

/* Float central differences along directions, for every weight, the input and the encoder rows; also
 * with a windowed self-attention mix (no double reference for it). */
static void float_directions(const char *spec, lc_norm norm) {
    fixture f;
    if (set_up(&f, spec, 32, 10)) return;
    float out[64 * C], dx[64 * C], d_enc[64 * CE] = {0};
    result res = {out, dx, d_enc};
    if (run(&f.k, &f.layer, norm, &f.P.L, f.P.x, f.P.enc, f.P.dy, &res)) return;
    float *g = malloc(sizeof(float) * f.k.total);
    memcpy(g, f.k.g, sizeof(float) * f.k.total);
    lc_rng r;
    lc_rng_seed(&r, 4);
    char label[160];
    for (int i = 0; i < f.k.n; i++) {
        snprintf(label, sizeof label, "%s %s fd d %s", spec, norm == LC_NORM_PRE ? "pre" : "post", f.k.slot[i].name);
        directional(label, f.k.p + f.k.slot[i].off, g + f.k.slot[i].off, f.k.slot[i].n, &f.k, &f.layer, norm, &f.P,
                    &r);
    }
    snprintf(label, sizeof label, "%s fd d x", spec);
    directional(label, f.P.x, dx, (size_t)f.P.L.N * C, &f.k, &f.layer, norm, &f.P, &r);
    snprintf(label, sizeof label, "%s fd d enc", spec);
    directional(label, f.P.enc, d_enc, (size_t)f.P.L.N_enc * CE, &f.k, &f.layer, norm, &f.P, &r);
    free(g);
    kit_params_free(&f.k);
}

TEST(decoder_float_directional_derivatives) {
    float_directions("full", LC_NORM_PRE);
    float_directions("full", LC_NORM_POST);
    float_directions("1xfull+window:w=1,global=1", LC_NORM_PRE);
}

/* Packed decoder sequences against each alone (its own pair, the same encoder rows). */
static void packed_vs_separate(const char *spec, lc_norm norm) {
    fixture f;
    if (set_up(&f, spec, 33, 12)) return;
    const layout *L = &f.P.L;
    float out[64 * C], dx[64 * C], d_enc[64 * CE] = {0}, *g = calloc(f.k.total, sizeof(float));
    float out1[64 * C], dx1[64 * C], d_enc1[64 * CE] = {0};
    result packed = {out, dx, d_enc};
    run(&f.k, &f.layer, norm, L, f.P.x, f.P.enc, f.P.dy, &packed);
    memcpy(g, f.k.g, sizeof(float) * f.k.total);
    memset(f.k.g, 0, sizeof(float) * f.k.total);
    for (int i = 0; i < L->n_seq; i++) {
        const int r0 = L->q_start[i];
        layout one = {1, {L->len[i]}, L->len[i], L->N_enc, 1, {0}, {L->len[i]}, {L->kv_start[i]}, {L->kv_len[i]}};
        result r = {out1 + r0 * C, dx1 + r0 * C, d_enc1};
        run(&f.k, &f.layer, norm, &one, f.P.x + r0 * C, f.P.enc, f.P.dy + r0 * C, &r);
    }
    char label[160];
    snprintf(label, sizeof label, "%s packed out", spec);
    CHECK_CLOSE(label, out, out1, L->N * C, 1e-6, 1e-6);
    snprintf(label, sizeof label, "%s packed dx", spec);
    CHECK_CLOSE(label, dx, dx1, L->N * C, 1e-6, 1e-6 * max_abs(dx1, (size_t)L->N * C));
    snprintf(label, sizeof label, "%s packed d enc", spec);
    CHECK_CLOSE(label, d_enc, d_enc1, L->N_enc * CE, 1e-6, 1e-6 * max_abs(d_enc1, (size_t)L->N_enc * CE));
    for (int i = 0; i < f.k.n; i++) {
        const kit_slot *s = &f.k.slot[i];
        snprintf(label, sizeof label, "%s packed d %s", spec, s->name);
        CHECK_CLOSE(label, g + s->off, f.k.g + s->off, s->n, 1e-6, 1e-6 * max_abs(f.k.g + s->off, s->n) + 1e-9);
    }
    free(g);
    kit_params_free(&f.k);
}

TEST(decoder_packed_equals_separate) {
    packed_vs_separate("full", LC_NORM_PRE);
    packed_vs_separate("1xwindow:w=2+block:b=2", LC_NORM_POST);
}

/* Changing decoder rows t+1.. of a sequence changes no output row <= t, nor any row of another sequence. */
TEST(decoder_is_causal) {
    fixture f;
    if (set_up(&f, "full", 34, 13)) return;
    const layout *L = &f.P.L;
    float base[64 * C], out[64 * C];
    result r0 = {base, NULL, NULL}, r1 = {out, NULL, NULL};
    run(&f.k, &f.layer, LC_NORM_PRE, L, f.P.x, f.P.enc, f.P.dy, &r0);
    /* sequence 2 has rows 6..9: perturb rows 8 and 9 */
    for (int i = 8 * C; i < 10 * C; i++) f.P.x[i] += 0.5f;
    run(&f.k, &f.layer, LC_NORM_PRE, L, f.P.x, f.P.enc, f.P.dy, &r1);
    CHECK(memcmp(base, out, sizeof(float) * 8 * C) == 0, "rows 0..7 changed");
    CHECK(memcmp(base + 8 * C, out + 8 * C, sizeof(float) * 2 * C) != 0, "rows 8, 9 did not change");
    /* the first row of sequence 1 (row 3): only rows 3..5 may change */
    for (int i = 3 * C; i < 4 * C; i++) f.P.x[i] -= 0.25f;
    run(&f.k, &f.layer, LC_NORM_PRE, L, f.P.x, f.P.enc, f.P.dy, &r0);
    CHECK(memcmp(base, r0.out, sizeof(float) * 3 * C) == 0, "sequence 0 changed");
    CHECK(memcmp(out + 6 * C, r0.out + 6 * C, sizeof(float) * 4 * C) == 0, "sequence 2 changed");
    kit_params_free(&f.k);
}

TEST(decoder_checks) {
    fixture f;
    if (set_up(&f, "full", 35, 14)) return;
    const layout *L = &f.P.L;
    lc_decoder_ctx c;
    memset(&c, 0, sizeof c);
    c.self = kit_ctx(&f.k, &f.layer, 1, LC_NORM_PRE, 1, L->N, L->n_seq, L->len);
    c.self.attn_work_floats = lc_block_packed_workspace(&c.self, L->N, 4, 0);
    c.enc = f.P.enc, c.N_enc = L->N_enc, c.C_enc = CE;
    c.n_pairs = L->n_pairs, c.q_start = L->q_start, c.q_len = L->q_len, c.kv_start = L->kv_start, c.kv_len = L->kv_len;
    c.cross_work_floats = lc_decoder_cross_workspace(4, c.self.threads);
    char err[512];
    CHECK(lc_decoder_check(&c, err, sizeof err) == 0, "%s", err);
    struct {
        lc_decoder_ctx c;
        const char *want;
    } bad[6];
    for (int i = 0; i < 6; i++) bad[i].c = c;
    bad[0].c.self.causal = 0, bad[0].want = "causal";
    bad[1].c.n_pairs = 2, bad[1].want = "cover 6 of the 10";
    bad[2].c.N_enc = 5, bad[2].want = "outside";
    bad[3].c.cross_work_floats = 1, bad[3].want = "cross-attention workspace";
    bad[4].c.self.M = 1, bad[4].want = "vanilla";
    const int overlap[] = {0, 2, 6};
    bad[5].c.q_start = overlap, bad[5].want = "overlap";
    for (int i = 0; i < 6; i++) {
        err[0] = 0;
        const int rc = lc_decoder_check(&bad[i].c, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].want), "case %d: want '%s', got %d '%s'", i, bad[i].want, rc, err);
        printf("  refused: %s\n", err);
    }
    kit_params_free(&f.k);
}

int main(void) {
    RUN(decoder_pre_ln_against_double_reference);
    RUN(decoder_post_ln_against_double_reference);
    RUN(decoder_float_directional_derivatives);
    RUN(decoder_packed_equals_separate);
    RUN(decoder_is_causal);
    RUN(decoder_checks);
    return test_summary("test_decoder_block");
}
