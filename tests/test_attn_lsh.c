/* Tests of the lsh attention kind (Reformer's shared-QK LSH attention, src/attn/lsh.h):
 *  - a plain double reference of the whole kind written here (per round: stable sort by bucket, chunks
 *    with the wrap-around, dense scores with the causal and self masks, softmax; rounds combined by
 *    log-sum-exp) with its analytic backward (normalisation included) against central finite
 *    differences;
 *  - the fast fp32 forward/backward against that reference over causal and bidirectional shapes, short
 *    last chunks, a single chunk, odd D, strided fused views (the k columns hold NaN: never read;
 *    dk written as zeros; k, dk as NULL views);
 *  - one bucket (zero rotations) with c >= T against the shared masked dense reference of attn.h on
 *    k = normalised q with the self mask;
 *  - buckets against a double argmax; the rotations' statistics; determinism given the seed (repeats,
 *    thread counts), different seeds giving different buckets;
 *  - options and check(): defaults, the spec string, rejections (odd buckets, chunk 0, M > 0, ...);
 *  - the workspace bound; an empty segment;
 *  - parity with the PyTorch fixture tests/fixtures/lsh_attn.safetensors (tests/reference/make_lsh_fixture.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/lsh.h"
#include "attn/spec.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "attn_workspace.h"
#include "harness.h"
#include "train/safetensors.h"

#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

#define SENTINEL 12345.0f

typedef struct {
    int B, H, T, D, causal, buckets, hashes, chunk;
} case_shape;

static lc_attn_shape shape_of(case_shape c) {
    lc_attn_shape s = {c.B, c.H, c.T, 0, c.D, c.causal, (float)(1.0 / sqrt((double)c.D)), 0, 0};
    return s;
}

static lc_attn_lsh_opts opts_of(case_shape c) {
    lc_attn_lsh_opts o = {c.buckets, c.hashes, c.chunk, 0};
    return o;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* ---------------------------------------------------------------- the double reference */

/* Contiguous [B, T, H, D] doubles; buckets [B][H][hashes][T]. */
typedef struct {
    case_shape c;
    double scale;
    const int *buckets;
    double *q, *v, *dout, *out, *lse, *dq, *dv;
} ref_problem;

static ref_problem ref_new(case_shape c, double scale, const int *buckets) {
    ref_problem r;
    memset(&r, 0, sizeof r);
    r.c = c, r.scale = scale, r.buckets = buckets;
    const size_t n = (size_t)c.B * c.T * c.H * c.D;
    r.q = xcalloc(n, sizeof(double)), r.v = xcalloc(n, sizeof(double)), r.dout = xcalloc(n, sizeof(double));
    r.out = xcalloc(n, sizeof(double)), r.dq = xcalloc(n, sizeof(double)), r.dv = xcalloc(n, sizeof(double));
    r.lse = xcalloc((size_t)c.B * c.H * c.T, sizeof(double));
    return r;
}

static void ref_free(ref_problem *r) {
    free(r->q), free(r->v), free(r->dout), free(r->out), free(r->lse), free(r->dq), free(r->dv);
}

static size_t at(const case_shape *c, int b, int t, int h) { return (((size_t)b * c->T + t) * c->H + h) * c->D; }

/* perm: positions sorted by (bucket, position), by insertion sort. */
static void ref_sort(const int *bk, int T, int *perm) {
    for (int i = 0; i < T; i++) {
        int j = i;
        while (j > 0 && bk[perm[j - 1]] > bk[i]) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = i;
    }
}

/* Sorted indices of the keys of sorted row s: the previous chunk (wrapping; none with one chunk), then
 * the own chunk. Returns the count. */
static int ref_key_list(int T, int c, int s, int *list) {
    const int nc = (T + c - 1) / c, k = s / c;
    int n = 0;
    if (nc > 1) {
        const int kp = (k + nc - 1) % nc;
        for (int j = kp * c; j < (kp + 1) * c && j < T; j++) list[n++] = j;
    }
    for (int j = k * c; j < (k + 1) * c && j < T; j++) list[n++] = j;
    return n;
}

/* The normalised keys of one (b, h): k [T][D], n [T]. */
static void ref_keys(const ref_problem *r, int b, int h, double *k, double *n) {
    const case_shape *c = &r->c;
    for (int t = 0; t < c->T; t++) {
        const double *q = r->q + at(c, b, t, h);
        double sq = 0;
        for (int d = 0; d < c->D; d++) sq += q[d] * q[d];
        n[t] = 1.0 / sqrt(sq + c->D * (double)LC_ATTN_LSH_NORM_EPS);
        for (int d = 0; d < c->D; d++) k[(size_t)t * c->D + d] = q[d] * n[t];
    }
}

/* Logit of query p on key pk (pk visible). */
static double ref_logit(const ref_problem *r, int b, int h, int p, int pk, const double *k) {
    if (p == pk) return LC_ATTN_LSH_SELF_LOGIT;
    const double *q = r->q + at(&r->c, b, p, h);
    double dot = 0;
    for (int d = 0; d < r->c.D; d++) dot += q[d] * k[(size_t)pk * r->c.D + d];
    return r->scale * dot;
}

/* out and lse: each round's softmax kept apart, combined at the end. */
static void ref_forward(ref_problem *r) {
    const case_shape *c = &r->c;
    const int T = c->T, D = c->D, nh = c->hashes;
    double *k = xcalloc((size_t)T * D, sizeof(double)), *n = xcalloc((size_t)T, sizeof(double));
    double *out_r = xcalloc((size_t)nh * T * D, sizeof(double)), *lse_r = xcalloc((size_t)nh * T, sizeof(double));
    double *z = xcalloc((size_t)T, sizeof(double));
    int *perm = xcalloc((size_t)T, sizeof(int)), *list = xcalloc((size_t)T, sizeof(int)), *kp = xcalloc((size_t)T, sizeof(int));
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            ref_keys(r, b, h, k, n);
            for (int rd = 0; rd < nh; rd++) {
                ref_sort(r->buckets + (((size_t)b * c->H + h) * nh + rd) * T, T, perm);
                for (int s = 0; s < T; s++) {
                    const int p = perm[s], nl = ref_key_list(T, c->chunk, s, list);
                    int m = 0;
                    double max = -INFINITY;
                    for (int j = 0; j < nl; j++) {
                        const int pk = perm[list[j]];
                        if (c->causal && pk > p) continue;
                        z[m] = ref_logit(r, b, h, p, pk, k), kp[m] = pk;
                        max = fmax(max, z[m++]);
                    }
                    double sum = 0;
                    for (int j = 0; j < m; j++) sum += exp(z[j] - max);
                    double *o = out_r + ((size_t)rd * T + p) * D;
                    for (int d = 0; d < D; d++) o[d] = 0;
                    for (int j = 0; j < m; j++) {
                        const double w = exp(z[j] - max) / sum;
                        for (int d = 0; d < D; d++) o[d] += w * r->v[at(c, b, kp[j], h) + d];
                    }
                    lse_r[(size_t)rd * T + p] = max + log(sum);
                }
            }
            for (int t = 0; t < T; t++) {
                double max = -INFINITY, sum = 0;
                for (int rd = 0; rd < nh; rd++) max = fmax(max, lse_r[(size_t)rd * T + t]);
                for (int rd = 0; rd < nh; rd++) sum += exp(lse_r[(size_t)rd * T + t] - max);
                const double L = max + log(sum);
                r->lse[((size_t)b * c->H + h) * T + t] = L;
                double *o = r->out + at(c, b, t, h);
                for (int d = 0; d < D; d++) o[d] = 0;
                for (int rd = 0; rd < nh; rd++) {
                    const double w = exp(lse_r[(size_t)rd * T + t] - L);
                    for (int d = 0; d < D; d++) o[d] += w * out_r[((size_t)rd * T + t) * D + d];
                }
            }
        }
    free(k), free(n), free(out_r), free(lse_r), free(z), free(perm), free(list), free(kp);
}

/* dq, dv of L = sum(out * dout): query by query over every round's key list (P = exp(z - L) of the
 * combined softmax), key gradients collected in dk and taken through k = n q at the end. */
static void ref_backward(ref_problem *r) {
    ref_forward(r);
    const case_shape *c = &r->c;
    const int T = c->T, D = c->D, nh = c->hashes;
    double *k = xcalloc((size_t)T * D, sizeof(double)), *n = xcalloc((size_t)T, sizeof(double));
    double *dk = xcalloc((size_t)T * D, sizeof(double)), *delta = xcalloc((size_t)T, sizeof(double));
    int *perm = xcalloc((size_t)T, sizeof(int)), *list = xcalloc((size_t)T, sizeof(int));
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            ref_keys(r, b, h, k, n);
            memset(dk, 0, sizeof(double) * (size_t)T * D);
            for (int t = 0; t < T; t++) {
                delta[t] = 0;
                for (int d = 0; d < D; d++) {
                    delta[t] += r->dout[at(c, b, t, h) + d] * r->out[at(c, b, t, h) + d];
                    r->dq[at(c, b, t, h) + d] = 0, r->dv[at(c, b, t, h) + d] = 0;
                }
            }
            for (int rd = 0; rd < nh; rd++) {
                ref_sort(r->buckets + (((size_t)b * c->H + h) * nh + rd) * T, T, perm);
                for (int s = 0; s < T; s++) {
                    const int p = perm[s], nl = ref_key_list(T, c->chunk, s, list);
                    const double L = r->lse[((size_t)b * c->H + h) * T + p];
                    const double *dout = r->dout + at(c, b, p, h), *q = r->q + at(c, b, p, h);
                    for (int j = 0; j < nl; j++) {
                        const int pk = perm[list[j]];
                        if (c->causal && pk > p) continue;
                        const double prob = exp(ref_logit(r, b, h, p, pk, k) - L);
                        double dp = 0;
                        for (int d = 0; d < D; d++) {
                            r->dv[at(c, b, pk, h) + d] += prob * dout[d];
                            dp += dout[d] * r->v[at(c, b, pk, h) + d];
                        }
                        if (pk == p) continue; /* constant logit */
                        const double dz = prob * (dp - delta[p]);
                        for (int d = 0; d < D; d++) {
                            r->dq[at(c, b, p, h) + d] += r->scale * dz * k[(size_t)pk * D + d];
                            dk[(size_t)pk * D + d] += r->scale * dz * q[d];
                        }
                    }
                }
            }
            for (int t = 0; t < T; t++) { /* dq += n (dk - k (k . dk)) */
                double kd = 0;
                for (int d = 0; d < D; d++) kd += k[(size_t)t * D + d] * dk[(size_t)t * D + d];
                for (int d = 0; d < D; d++)
                    r->dq[at(c, b, t, h) + d] += n[t] * (dk[(size_t)t * D + d] - k[(size_t)t * D + d] * kd);
            }
        }
    free(k), free(n), free(dk), free(delta), free(perm), free(list);
}

static double ref_loss(ref_problem *r) {
    ref_forward(r);
    const size_t n = (size_t)r->c.B * r->c.T * r->c.H * r->c.D;
    double L = 0;
    for (size_t i = 0; i < n; i++) L += r->out[i] * r->dout[i];
    return L;
}

static void check_reference_gradients(case_shape c, uint64_t seed) {
    const size_t n = (size_t)c.B * c.T * c.H * c.D, nb = (size_t)c.B * c.H * c.hashes * c.T;
    int *buckets = xcalloc(nb, sizeof(int));
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < nb; i++) buckets[i] = (int)lc_rng_below(&rng, (uint32_t)c.buckets);
    ref_problem r = ref_new(c, 0.7, buckets);
    for (size_t i = 0; i < n; i++)
        r.q[i] = lc_rng_normal(&rng), r.v[i] = lc_rng_normal(&rng), r.dout[i] = lc_rng_normal(&rng);
    ref_backward(&r);
    double *inputs[2] = {r.q, r.v}, *grads[2] = {r.dq, r.dv};
    double *numeric = xcalloc(n, sizeof(double)), *analytic = xcalloc(n, sizeof(double));
    const char *names[2] = {"dq", "dv"};
    const double step = 1e-6;
    for (int which = 0; which < 2; which++) {
        memcpy(analytic, grads[which], n * sizeof(double));
        for (size_t i = 0; i < n; i++) {
            const double saved = inputs[which][i];
            inputs[which][i] = saved + step;
            const double up = ref_loss(&r);
            inputs[which][i] = saved - step;
            const double down = ref_loss(&r);
            inputs[which][i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        char label[96];
        snprintf(label, sizeof label, "%s T%d D%d c%d nh%d causal%d vs finite diff", names[which], c.T, c.D, c.chunk,
                 c.hashes, c.causal);
        CHECK_CLOSE(label, analytic, numeric, n, 1e-6, 1e-8);
    }
    free(numeric), free(analytic), free(buckets);
    ref_free(&r);
}

TEST(reference_backward_matches_finite_differences) {
    const case_shape cases[] = {
        /* B, H, T, D, causal, buckets, hashes, chunk */
        {1, 2, 11, 3, 1, 4, 3, 3}, {1, 2, 11, 3, 0, 4, 3, 3}, {2, 1, 7, 2, 1, 2, 2, 2},
        {1, 2, 8, 4, 0, 6, 2, 2},  {1, 1, 5, 3, 1, 2, 2, 8},  {1, 1, 6, 3, 0, 8, 1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference_gradients(cases[i], 100 + i);
}

/* ---------------------------------------------------------------- fp32 problems in fused buffers */

/* q, k, v are column slices of one [B, T, row] buffer, the k columns NaN (never read); dq, dk, dv the
 * same slices of one gradient buffer (dk must come back 0); out and dout are [B, T, H*D + 5]. Padding
 * columns hold SENTINEL and must survive. */
typedef struct {
    lc_attn_shape s;
    lc_attn_lsh_opts o;
    long row, out_row;
    float *qkv, *grad, *out, *dout, *lse, *work;
    size_t qkv_n, out_n, work_n;
    lc_attn_tensors t;
} problem;

static lc_view view_f(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

static problem problem_new(lc_attn_shape s, lc_attn_lsh_opts o, int nthreads, uint64_t seed, float input_mul) {
    problem p;
    memset(&p, 0, sizeof p);
    p.s = s, p.o = o;
    const int T = s.T, HD = s.H * s.D;
    p.row = 3L * HD + 7, p.out_row = HD + 5;
    p.qkv_n = (size_t)s.B * T * p.row, p.out_n = (size_t)s.B * T * p.out_row;
    p.qkv = xcalloc(p.qkv_n, sizeof(float)), p.grad = xcalloc(p.qkv_n, sizeof(float));
    p.out = xcalloc(p.out_n, sizeof(float)), p.dout = xcalloc(p.out_n, sizeof(float));
    p.lse = xcalloc((size_t)s.B * s.H * T, sizeof(float));
    p.work_n = LC_TEST_WORKSPACE(lc_attn_lsh.workspace_floats, &s, &p.o, nthreads);
    p.work = malloc(p.work_n * sizeof(float)); /* exactly the size asked for, so ASan sees overruns */
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (size_t i = 0; i < p.qkv_n; i++) {
        const size_t col = i % p.row;
        p.qkv[i] = col < (size_t)HD || (col >= 2 * (size_t)HD && col < 3 * (size_t)HD) ? input_mul * lc_rng_normal(&rng)
                   : col < 2 * (size_t)HD                                             ? NAN
                                                                                      : SENTINEL;
        p.grad[i] = SENTINEL;
    }
    for (size_t i = 0; i < p.out_n; i++) p.dout[i] = lc_rng_normal(&rng), p.out[i] = SENTINEL;
    const long sb = (long)T * p.row, out_sb = (long)T * p.out_row;
    p.t.q = view_f(p.qkv, sb, p.row), p.t.k = view_f(p.qkv + HD, sb, p.row), p.t.v = view_f(p.qkv + 2 * HD, sb, p.row);
    p.t.dq = view_f(p.grad, sb, p.row), p.t.dk = view_f(p.grad + HD, sb, p.row);
    p.t.dv = view_f(p.grad + 2 * HD, sb, p.row);
    p.t.out = view_f(p.out, out_sb, p.out_row), p.t.dout = view_f(p.dout, out_sb, p.out_row);
    p.t.lse = p.lse;
    p.t.seed = 0x5eed0000ULL + seed;
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv), free(p->grad), free(p->out), free(p->dout), free(p->lse), free(p->work);
}

static void run_fast(problem *p) {
    lc_attn_lsh.forward(&p->s, &p->o, &p->t, p->work);
    lc_attn_lsh.backward(&p->s, &p->o, &p->t, p->work);
}

/* The rotations the kind draws for p (tensors.seed), and the buckets forward uses. */
static float *rotations_of(const problem *p) {
    float *rot = xcalloc(lc_attn_lsh_rotation_floats(&p->o, p->s.H, p->s.D), sizeof(float));
    lc_attn_lsh_rotations(&p->o, p->s.H, p->s.D, p->t.seed, rot);
    return rot;
}

static int *buckets_of(problem *p, const float *rot) {
    int *bk = xcalloc((size_t)p->s.B * p->s.H * p->o.hashes * p->s.T, sizeof(int));
    lc_attn_lsh_buckets(&p->s, &p->o, &p->t, rot, p->work, bk);
    return bk;
}

static void view_to_d(const lc_view *v, const lc_attn_shape *s, double *dst) {
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            for (int e = 0; e < s->H * s->D; e++)
                dst[((size_t)b * s->T + t) * s->H * s->D + e] = v->p[(long)b * v->sb + (long)t * v->st + e];
}

static void view_from_f(float *dst_view_p, long sb, long st, const lc_attn_shape *s, const float *src) {
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++)
            memcpy(dst_view_p + (long)b * sb + (long)t * st, src + ((size_t)b * s->T + t) * s->H * s->D,
                   sizeof(float) * (size_t)s->H * s->D);
}

static ref_problem reference_of(const problem *p, case_shape c, const int *buckets) {
    ref_problem r = ref_new(c, p->s.scale, buckets);
    view_to_d(&p->t.q, &p->s, r.q);
    view_to_d(&p->t.v, &p->s, r.v);
    view_to_d(&p->t.dout, &p->s, r.dout);
    return r;
}

static int sentinels_intact(const problem *p) {
    const size_t HD = (size_t)p->s.H * p->s.D;
    for (size_t i = 0; i < p->qkv_n; i++)
        if (i % p->row >= 3 * HD && (p->grad[i] != SENTINEL || p->qkv[i] != SENTINEL)) return 0;
    for (size_t i = 0; i < p->out_n; i++)
        if (i % p->out_row >= HD && p->out[i] != SENTINEL) return 0;
    return 1;
}

static double scale_of(const double *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m > 0 ? m : 1;
}

#define COMPARE(label_, got, want, n, rtol, atol_frac)                                                      \
    do {                                                                                                   \
        const double scale_ = scale_of(want, n);                                                           \
        CHECK_CLOSE(label_, got, want, n, rtol, (atol_frac) * scale_);                                     \
    } while (0)

static void check_fast_against_reference(case_shape c, float input_mul, double rtol, double atol_frac, int null_k) {
    const lc_attn_shape s = shape_of(c);
    problem p = problem_new(s, opts_of(c), lc_get_threads(), 7 + c.T + 3 * c.D + c.causal, input_mul);
    if (null_k) p.t.k = view_f(NULL, 0, 0), p.t.dk = view_f(NULL, 0, 0);
    run_fast(&p);
    float *rot = rotations_of(&p);
    int *bk = buckets_of(&p, rot);
    ref_problem r = reference_of(&p, c, bk);
    ref_backward(&r);
    const size_t n = (size_t)c.B * c.T * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    double *got = xcalloc(n, sizeof(double)), *zero = xcalloc(n, sizeof(double));
    char label[128];
#define LABEL(what) (snprintf(label, sizeof label, "%s B%d H%d T%d D%d c%d nb%d nh%d ch%d", what, c.B, c.H, c.T, \
                              c.D, c.causal, c.buckets, c.hashes, c.chunk),                                   \
                     label)
    view_to_d(&p.t.out, &s, got);
    COMPARE(LABEL("out"), got, r.out, n, rtol, atol_frac);
    CHECK_CLOSE(LABEL("lse"), p.lse, r.lse, nl, rtol / 10, 1e-5); /* absolute: self-only rows hold -1e5 */
    view_to_d(&p.t.dq, &s, got);
    COMPARE(LABEL("dq"), got, r.dq, n, rtol, atol_frac);
    view_to_d(&p.t.dv, &s, got);
    COMPARE(LABEL("dv"), got, r.dv, n, rtol, atol_frac);
    if (!null_k) {
        view_to_d(&p.t.dk, &s, got);
        CHECK(memcmp(got, zero, n * sizeof(double)) == 0, "%s: dk must be 0", LABEL("dk"));
    } else {
        const size_t HD = (size_t)c.H * c.D;
        int ok = 1;
        for (size_t i = 0; i < p.qkv_n; i++)
            if (i % p.row >= HD && i % p.row < 2 * HD) ok &= p.grad[i] == SENTINEL;
        CHECK(ok, "dk written although its view is NULL");
    }
#undef LABEL
    CHECK(sentinels_intact(&p), "a write landed outside the q/k/v/out columns");
    free(got), free(zero), free(rot), free(bk);
    ref_free(&r);
    problem_free(&p);
}

TEST(fast_matches_reference_causal) {
    const case_shape cases[] = {
        /* B, H, T, D, causal, buckets, hashes, chunk */
        {1, 1, 1, 16, 1, 2, 1, 4},    {2, 3, 13, 3, 1, 4, 2, 4},    {1, 2, 130, 16, 1, 8, 2, 16},
        {1, 2, 200, 64, 1, 8, 3, 32}, {2, 2, 67, 17, 1, 2, 1, 8},   {1, 3, 40, 5, 1, 6, 4, 64},
        {1, 1, 64, 32, 1, 4, 8, 16},  {1, 2, 33, 8, 1, 32, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 1.0f, 1e-4, 2e-6, (int)(i == 1));
}

TEST(fast_matches_reference_bidirectional) {
    const case_shape cases[] = {
        {1, 1, 1, 3, 0, 2, 2, 4},     {2, 3, 13, 3, 0, 4, 2, 4},  {1, 2, 130, 16, 0, 8, 2, 16},
        {1, 2, 200, 64, 0, 8, 3, 32}, {2, 2, 67, 17, 0, 2, 1, 8}, {1, 3, 40, 5, 0, 6, 4, 64},
        {1, 2, 33, 8, 0, 32, 2, 1},   {1, 1, 2, 4, 0, 2, 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fast_against_reference(cases[i], 1.0f, 1e-4, 2e-6, (int)(i == 2));
}

TEST(fast_is_stable_for_large_inputs) {
    const case_shape cases[] = {{1, 2, 130, 16, 1, 8, 2, 16}, {1, 2, 130, 16, 0, 4, 3, 32}};
    for (size_t i = 0; i < 2; i++) check_fast_against_reference(cases[i], 30.0f, 1e-3, 3e-5, 0);
}

/* ---------------------------------------------------------------- one bucket = dense shared-QK attention */

typedef struct {
    int T, causal;
} self_mask;

/* Dense shared-QK visibility with the self mask: a query sees every (earlier, if causal) key but
 * itself, and itself only when there is nothing else. */
static int shared_qk_visible(const void *ctx, int b, int h, int t, int s) {
    const self_mask *m = ctx;
    (void)b, (void)h;
    if (m->causal && s > t) return 0;
    const int alone = m->causal ? t == 0 : m->T == 1;
    return s != t || alone;
}

TEST(one_bucket_and_one_chunk_is_dense_shared_qk_attention) {
    const case_shape cases[] = {
        {2, 2, 37, 16, 1, 2, 1, 64}, {1, 3, 20, 5, 0, 2, 1, 20}, {1, 2, 50, 24, 1, 8, 3, 50}, {1, 1, 9, 3, 0, 4, 2, 100},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const case_shape c = cases[ci];
        const lc_attn_shape s = shape_of(c);
        problem p = problem_new(s, opts_of(c), lc_get_threads(), 40 + ci, 1.0f);
        /* zero rotations: every projection is 0 and the argmax takes bucket 0 */
        float *rot = xcalloc(lc_attn_lsh_rotation_floats(&p.o, c.H, c.D), sizeof(float));
        lc_attn_lsh_forward_with(&s, &p.o, &p.t, rot, p.work);
        lc_attn_lsh_backward_with(&s, &p.o, &p.t, rot, p.work);
        int *bk = buckets_of(&p, rot);
        int zero = 1;
        for (size_t i = 0; i < (size_t)c.B * c.H * c.hashes * c.T; i++) zero &= bk[i] == 0;
        CHECK(zero, "zero rotations must put every position into bucket 0");

        /* the dense reference on k = q / sqrt(|q|^2 + D eps) */
        const size_t n = (size_t)c.B * c.T * c.H * c.D;
        double *q = xcalloc(n, sizeof(double)), *k = xcalloc(n, sizeof(double)), *v = xcalloc(n, sizeof(double));
        double *dout = xcalloc(n, sizeof(double)), *out = xcalloc(n, sizeof(double)), *dq = xcalloc(n, sizeof(double));
        double *dk = xcalloc(n, sizeof(double)), *dv = xcalloc(n, sizeof(double)), *norm = xcalloc(n, sizeof(double));
        double *got = xcalloc(n, sizeof(double));
        view_to_d(&p.t.q, &s, q), view_to_d(&p.t.v, &s, v), view_to_d(&p.t.dout, &s, dout);
        for (size_t i = 0; i < n; i += c.D) {
            double sq = 0;
            for (int d = 0; d < c.D; d++) sq += q[i + d] * q[i + d];
            norm[i] = 1.0 / sqrt(sq + c.D * (double)LC_ATTN_LSH_NORM_EPS);
            for (int d = 0; d < c.D; d++) k[i + d] = q[i + d] * norm[i];
        }
        const long st = (long)c.H * c.D, sb = (long)c.T * st;
        lc_attn_tensors_d td;
        memset(&td, 0, sizeof td);
        td.q = (lc_view_d){q, sb, st}, td.k = (lc_view_d){k, sb, st}, td.v = (lc_view_d){v, sb, st};
        td.out = (lc_view_d){out, sb, st}, td.dout = (lc_view_d){dout, sb, st};
        td.dq = (lc_view_d){dq, sb, st}, td.dk = (lc_view_d){dk, sb, st}, td.dv = (lc_view_d){dv, sb, st};
        const self_mask m = {c.T, c.causal};
        lc_attn_masked_forward_ref(&s, shared_qk_visible, &m, &td);
        lc_attn_masked_backward_ref(&s, shared_qk_visible, &m, &td);
        for (size_t i = 0; i < n; i += c.D) { /* dq += n (dk - k (k . dk)) */
            double kd = 0;
            for (int d = 0; d < c.D; d++) kd += k[i + d] * dk[i + d];
            for (int d = 0; d < c.D; d++) dq[i + d] += norm[i] * (dk[i + d] - k[i + d] * kd);
        }
        /* lse: the dense one (-1e5 where a query sees only itself) plus log(hashes) for identical rounds */
        const size_t nl = (size_t)c.B * c.H * c.T;
        double *lse = xcalloc(nl, sizeof(double));
        for (int b = 0; b < c.B; b++)
            for (int h = 0; h < c.H; h++)
                for (int t = 0; t < c.T; t++) {
                    double max = -INFINITY, sum = 0;
                    for (int pass = 0; pass < 2; pass++)
                        for (int j = 0; j < c.T; j++) {
                            if (!shared_qk_visible(&m, b, h, t, j)) continue;
                            double z = LC_ATTN_LSH_SELF_LOGIT;
                            if (j != t) {
                                z = 0;
                                for (int d = 0; d < c.D; d++)
                                    z += q[at(&c, b, t, h) + d] * k[at(&c, b, j, h) + d];
                                z *= s.scale;
                            }
                            if (pass == 0) max = fmax(max, z);
                            else sum += exp(z - max);
                        }
                    lse[((size_t)b * c.H + h) * c.T + t] = max + log(sum) + log((double)c.hashes);
                }
        char label[96];
        snprintf(label, sizeof label, "out vs dense shared-QK T%d D%d causal%d nh%d", c.T, c.D, c.causal, c.hashes);
        view_to_d(&p.t.out, &s, got);
        COMPARE(label, got, out, n, 1e-4, 2e-6);
        snprintf(label, sizeof label, "lse vs dense shared-QK T%d D%d causal%d nh%d", c.T, c.D, c.causal, c.hashes);
        CHECK_CLOSE(label, p.lse, lse, nl, 1e-5, 1e-5);
        snprintf(label, sizeof label, "dq vs dense shared-QK T%d D%d causal%d nh%d", c.T, c.D, c.causal, c.hashes);
        view_to_d(&p.t.dq, &s, got);
        COMPARE(label, got, dq, n, 1e-4, 2e-6);
        snprintf(label, sizeof label, "dv vs dense shared-QK T%d D%d causal%d nh%d", c.T, c.D, c.causal, c.hashes);
        view_to_d(&p.t.dv, &s, got);
        COMPARE(label, got, dv, n, 1e-4, 2e-6);
        free(q), free(k), free(v), free(dout), free(out), free(dq), free(dk), free(dv), free(norm), free(got), free(lse);
        free(rot), free(bk);
        problem_free(&p);
    }
}

/* ---------------------------------------------------------------- hashing */

TEST(buckets_are_the_argmax_of_the_rotated_query) {
    const case_shape c = {2, 3, 97, 24, 1, 16, 3, 16};
    const lc_attn_shape s = shape_of(c);
    problem p = problem_new(s, opts_of(c), lc_get_threads(), 77, 1.0f);
    float *rot = rotations_of(&p);
    int *bk = buckets_of(&p, rot);
    const int half = c.buckets / 2;
    int bad = 0, close_calls = 0, in_range = 1;
    int hist[16] = {0};
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++)
            for (int r = 0; r < c.hashes; r++)
                for (int t = 0; t < c.T; t++) {
                    const float *q = p.t.q.p + (long)b * p.t.q.sb + (long)t * p.t.q.st + h * c.D;
                    const float *R = rot + ((size_t)r * c.H + h) * c.D * half;
                    double proj[16], best = -INFINITY, second = -INFINITY;
                    int arg = -1;
                    for (int j = 0; j < half; j++) {
                        proj[j] = 0;
                        for (int d = 0; d < c.D; d++) proj[j] += (double)q[d] * R[d * half + j];
                        proj[j + half] = -proj[j];
                    }
                    for (int j = 0; j < 2 * half; j++) {
                        if (proj[j] > best) second = best, best = proj[j], arg = j;
                        else if (proj[j] > second) second = proj[j];
                    }
                    const int got = bk[(((size_t)b * c.H + h) * c.hashes + r) * c.T + t];
                    in_range &= got >= 0 && got < c.buckets;
                    if (got >= 0 && got < 16) hist[got]++;
                    if (best - second < 1e-4 * fabs(best)) close_calls++;
                    else bad += got != arg;
                }
    CHECK(in_range, "bucket out of range");
    CHECK(bad == 0, "%d buckets differ from the double argmax (%d near-ties skipped)", bad, close_calls);
    int used = 0;
    for (int j = 0; j < c.buckets; j++) used += hist[j] > 0;
    CHECK(used == c.buckets, "only %d of %d buckets used", used, c.buckets);
    free(rot), free(bk);
    problem_free(&p);
}

TEST(rotations_are_standard_normal_and_seeded) {
    const lc_attn_lsh_opts o = {32, 8, 64, 0}, o2 = {32, 8, 64, 1};
    const int H = 4, D = 64;
    const size_t n = lc_attn_lsh_rotation_floats(&o, H, D);
    CHECK(n == (size_t)8 * 4 * 64 * 16, "rotation floats %zu", n);
    float *a = xcalloc(n, sizeof(float)), *b = xcalloc(n, sizeof(float)), *c2 = xcalloc(n, sizeof(float));
    float *d2 = xcalloc(n, sizeof(float));
    lc_attn_lsh_rotations(&o, H, D, 1234, a);
    lc_attn_lsh_rotations(&o, H, D, 1234, b);
    lc_attn_lsh_rotations(&o2, H, D, 1234, c2);
    lc_attn_lsh_rotations(&o, H, D, 1235, d2);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++) mean += a[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) var += (a[i] - mean) * (a[i] - mean);
    var /= (double)n;
    CHECK(fabs(mean) < 0.02 && fabs(var - 1) < 0.03, "mean %g variance %g", mean, var);
    CHECK(memcmp(a, b, n * sizeof(float)) == 0, "same seed, different rotations");
    size_t same_o = 0, same_s = 0, same_block = 0;
    for (size_t i = 0; i < n; i++) same_o += a[i] == c2[i], same_s += a[i] == d2[i];
    /* blocks (round, head) must differ from each other */
    const size_t per = (size_t)D * 16;
    for (size_t i = 0; i < per; i++) same_block += a[i] == a[per + i];
    CHECK(same_o < n / 100 && same_s < n / 100 && same_block < per / 100,
          "rotations repeat: opts seed %zu, tensors seed %zu, next block %zu equal values", same_o, same_s, same_block);
    free(a), free(b), free(c2), free(d2);
}

TEST(runs_are_deterministic_given_the_seed) {
    const case_shape cs[2] = {{2, 3, 130, 24, 1, 8, 3, 16}, {1, 3, 200, 16, 0, 16, 2, 32}};
    const int threads_before = lc_get_threads();
    for (int ci = 0; ci < 2; ci++) {
        const lc_attn_shape s = shape_of(cs[ci]);
        problem runs[3];
        const int threads[3] = {2, 2, 1};
        for (int i = 0; i < 3; i++) {
            lc_set_threads(threads[i]);
            runs[i] = problem_new(s, opts_of(cs[ci]), 2, 5, 1.0f);
            run_fast(&runs[i]);
        }
        lc_set_threads(threads_before);
        const size_t nl = (size_t)s.B * s.H * s.T;
        for (int i = 1; i < 3; i++) {
            CHECK(memcmp(runs[0].out, runs[i].out, runs[0].out_n * sizeof(float)) == 0, "out differs (run %d)", i);
            CHECK(memcmp(runs[0].lse, runs[i].lse, nl * sizeof(float)) == 0, "lse differs (run %d)", i);
            CHECK(memcmp(runs[0].grad, runs[i].grad, runs[0].qkv_n * sizeof(float)) == 0, "gradients differ (run %d)", i);
        }
        /* the kind's forward is forward_with on the rotations drawn from tensors.seed */
        problem w = problem_new(s, opts_of(cs[ci]), 2, 5, 1.0f);
        float *rot = rotations_of(&w);
        lc_attn_lsh_forward_with(&s, &w.o, &w.t, rot, w.work);
        lc_attn_lsh_backward_with(&s, &w.o, &w.t, rot, w.work);
        CHECK(memcmp(runs[0].out, w.out, w.out_n * sizeof(float)) == 0 &&
                  memcmp(runs[0].grad, w.grad, w.qkv_n * sizeof(float)) == 0,
              "kind forward/backward differ from the _with variants on the same rotations");
        /* another tensors seed, another opts seed: other buckets, other outputs */
        int *bk0 = buckets_of(&w, rot);
        const size_t nb = (size_t)s.B * s.H * cs[ci].hashes * s.T;
        for (int variant = 0; variant < 2; variant++) {
            problem d = problem_new(s, opts_of(cs[ci]), 2, 5, 1.0f);
            if (variant == 0) d.t.seed += 1;
            else d.o.seed = 7;
            run_fast(&d);
            float *rot_d = rotations_of(&d);
            int *bk = buckets_of(&d, rot_d);
            size_t differ = 0;
            for (size_t i = 0; i < nb; i++) differ += bk[i] != bk0[i];
            CHECK(differ > nb / 2, "%s seed changed only %zu of %zu buckets", variant ? "opts" : "tensors", differ, nb);
            CHECK(memcmp(runs[0].out, d.out, d.out_n * sizeof(float)) != 0, "another seed, the same output");
            free(rot_d), free(bk);
            problem_free(&d);
        }
        free(rot), free(bk0);
        problem_free(&w);
        for (int i = 0; i < 3; i++) problem_free(&runs[i]);
    }
}

/* ---------------------------------------------------------------- options, check, workspace, edges */

TEST(options_defaults_spec_and_rejections) {
    const lc_attn_kind *k = lc_attn_kind_by_name("lsh");
    CHECK(k == &lc_attn_lsh, "kind lsh not in the table");
    CHECK(lc_attn_lsh.forward == lc_attn_lsh_forward && lc_attn_lsh.backward == lc_attn_lsh_backward &&
              lc_attn_lsh.workspace_floats == lc_attn_lsh_workspace,
          "table row points elsewhere");
    CHECK(lc_attn_lsh.opts_size <= LC_ATTN_OPTS_BYTES, "options too large");
    lc_attn_lsh_opts o;
    char err[256];
    lc_attn_lsh.opts_init(&o, 4);
    CHECK(o.buckets == 32 && o.hashes == 2 && o.chunk == 64 && o.seed == 0, "defaults %d %d %d %d", o.buckets,
          o.hashes, o.chunk, o.seed);
    const lc_attn_shape s = {2, 4, 100, 0, 16, 1, 0.25f, 0, 0};
    CHECK(lc_attn_lsh.check(&s, &o, NULL, err, sizeof err) == 0, "defaults rejected: %s", err);
    struct {
        const char *key, *value;
        int ok;
    } sets[] = {
        {"buckets", "8", 1},  {"buckets", "7", 0}, {"buckets", "0", 0}, {"buckets", "-2", 0}, {"buckets", "x", 0},
        {"hashes", "8", 1},   {"hashes", "0", 0},  {"hashes", "9", 0},  {"chunk", "1", 1},     {"chunk", "0", 0},
        {"seed", "12", 1},    {"seed", "-1", 0},   {"w", "3", 0},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        lc_attn_lsh_opts t;
        lc_attn_lsh.opts_init(&t, 4);
        err[0] = 0;
        const int rc = lc_attn_lsh.opts_set(&t, 4, sets[i].key, sets[i].value, err, sizeof err);
        CHECK((rc == 0) == sets[i].ok, "%s=%s: rc %d (%s)", sets[i].key, sets[i].value, rc, err);
        if (!sets[i].ok) CHECK(err[0] != 0, "%s=%s rejected without a message", sets[i].key, sets[i].value);
    }
    /* check() on options filled by hand and on shapes */
    lc_attn_lsh_opts bad = o;
    bad.buckets = 7;
    CHECK(lc_attn_lsh.check(&s, &bad, NULL, err, sizeof err) != 0 && strstr(err, "buckets"), "odd buckets: %s", err);
    bad = o, bad.chunk = 0;
    CHECK(lc_attn_lsh.check(&s, &bad, NULL, err, sizeof err) != 0 && strstr(err, "chunk"), "chunk 0: %s", err);
    bad = o, bad.hashes = 0;
    CHECK(lc_attn_lsh.check(&s, &bad, NULL, err, sizeof err) != 0, "hashes 0 accepted");
    lc_attn_shape sm = s;
    sm.M = 3;
    CHECK(lc_attn_lsh.check(&sm, &o, NULL, err, sizeof err) != 0 && strstr(err, "memory"), "M > 0: %s", err);
    sm = s, sm.relpos = 1;
    CHECK(lc_attn_lsh.check(&sm, &o, NULL, err, sizeof err) != 0, "relpos accepted");
    sm = s, sm.window = 8;
    CHECK(lc_attn_lsh.check(&sm, &o, NULL, err, sizeof err) != 0, "same_length window accepted");
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(lc_attn_lsh.check(&s, &o, &g, err, sizeof err) != 0 && strstr(err, "global"), "global: %s", err);
    /* through the spec string */
    lc_attn_layer layer;
    CHECK(lc_attn_spec_parse("lsh:buckets=8,hashes=4,chunk=16,seed=3", 1, 4, &layer, err, sizeof err) == 0, "%s", err);
    const lc_attn_lsh_opts *po = (const lc_attn_lsh_opts *)layer.group[0].opts;
    CHECK(layer.n_groups == 1 && layer.group[0].kind == &lc_attn_lsh && po->buckets == 8 && po->hashes == 4 &&
              po->chunk == 16 && po->seed == 3,
          "spec parsed wrong");
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == 0, "%s", err);
    CHECK(lc_attn_layer_check(&layer, &(lc_attn_shape){2, 4, 100, 5, 16, 1, 0.25f, 0, 0}, err, sizeof err) != 0,
          "memory accepted through the layer check");
    CHECK(lc_attn_spec_parse("lsh:buckets=9", 1, 4, &layer, err, sizeof err) != 0, "buckets=9 parsed");
    CHECK(lc_attn_spec_parse("2xfull+lsh:chunk=0", 1, 4, &layer, err, sizeof err) != 0, "chunk=0 parsed");
}

TEST(workspace_is_linear_in_t) {
    const lc_attn_lsh_opts o = {32, 4, 64, 0};
    lc_attn_shape small = {1, 8, 1024, 0, 64, 1, 0.125f, 0, 0}, large = small;
    large.T = 65536;
    const size_t a = LC_TEST_WORKSPACE(lc_attn_lsh_workspace, &small, &o, 2), b = LC_TEST_WORKSPACE(lc_attn_lsh_workspace, &large, &o, 2);
    /* inverse norms, row statistics, buckets and sorted order: (2 + 2 hashes) floats per token and head */
    CHECK(b >= a && b - a <= (size_t)8 * (2 + 2 * 4) * (65536 - 1024) + 64, "workspace %zu -> %zu floats", a, b);
    /* per-thread tiles of a few chunks, rotations: far below one H x T x T score matrix (8M floats) */
    CHECK(a < (size_t)512 * 1024, "workspace %zu floats at T = 1024", a);
}

TEST(empty_segment_writes_nothing) {
    const lc_attn_shape s = {2, 2, 0, 0, 8, 1, 0.3f, 0, 0};
    const lc_attn_lsh_opts o = {4, 2, 4, 0};
    problem p = problem_new(s, o, lc_get_threads(), 3, 1.0f);
    run_fast(&p);
    CHECK(sentinels_intact(&p), "wrote into an empty problem");
    problem_free(&p);
}

/* ---------------------------------------------------------------- PyTorch fixture */

static int read_tensor(lc_st_file *f, const char *prefix, const char *name, lc_dtype dt, int ndim, const long *shape,
                       void *dst) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const lc_status st = lc_st_read(f, key, dt, ndim, shape, dst);
    CHECK(st == LC_OK, "%s", lc_last_error());
    return st == LC_OK;
}

static void check_fixture_case(lc_st_file *f, const char *prefix) {
    int cfg[8] = {0}; /* B, H, T, D, causal, buckets, hashes, chunk */
    float scale = 0;
    const long s8[1] = {8}, s1[1] = {1};
    if (!read_tensor(f, prefix, "config", LC_DT_I32, 1, s8, cfg) ||
        !read_tensor(f, prefix, "scale", LC_DT_F32, 1, s1, &scale))
        return;
    const case_shape c = {cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6], cfg[7]};
    lc_attn_shape s = shape_of(c);
    s.scale = scale;
    const size_t n = (size_t)c.B * c.T * c.H * c.D, nl = (size_t)c.B * c.H * c.T;
    const size_t nb = nl * c.hashes, nr = (size_t)c.hashes * c.H * c.D * (c.buckets / 2);
    const long sq[4] = {c.B, c.T, c.H, c.D}, sl[3] = {c.B, c.H, c.T}, sbk[4] = {c.B, c.H, c.hashes, c.T},
               sr[4] = {c.hashes, c.H, c.D, c.buckets / 2};
    problem p = problem_new(s, opts_of(c), lc_get_threads(), 1, 1.0f);
    float *buf = xcalloc(n, sizeof(float)), *rot = xcalloc(nr, sizeof(float));
    int *bk_want = xcalloc(nb, sizeof(int));
    double *want = xcalloc(n, sizeof(double)), *got = xcalloc(n, sizeof(double));
    if (!read_tensor(f, prefix, "rotations", LC_DT_F32, 4, sr, rot) ||
        !read_tensor(f, prefix, "buckets", LC_DT_I32, 4, sbk, bk_want))
        goto done;
    const char *in_names[3] = {"q", "v", "dout"};
    const lc_view *in_views[3] = {&p.t.q, &p.t.v, &p.t.dout};
    for (int i = 0; i < 3; i++) {
        if (!read_tensor(f, prefix, in_names[i], LC_DT_F32, 4, sq, buf)) goto done;
        view_from_f(in_views[i]->p, in_views[i]->sb, in_views[i]->st, &s, buf);
    }
    lc_attn_lsh_forward_with(&s, &p.o, &p.t, rot, p.work);
    lc_attn_lsh_backward_with(&s, &p.o, &p.t, rot, p.work);
    int *bk = buckets_of(&p, rot);
    size_t differ = 0;
    for (size_t i = 0; i < nb; i++) differ += bk[i] != bk_want[i];
    CHECK(differ == 0, "%s: %zu of %zu buckets differ from PyTorch's", prefix, differ, nb);
    ref_problem r = reference_of(&p, c, bk_want);
    ref_backward(&r);
    char label[96];
    struct {
        const char *name;
        const long *shape;
        size_t count;
        const lc_view *view;
        const float *flat;
        const double *ref;
    } outs[4] = {
        {"out", sq, n, &p.t.out, NULL, r.out},
        {"lse", sl, nl, NULL, p.lse, r.lse},
        {"dq", sq, n, &p.t.dq, NULL, r.dq},
        {"dv", sq, n, &p.t.dv, NULL, r.dv},
    };
    for (int i = 0; i < 4; i++) {
        if (!read_tensor(f, prefix, outs[i].name, LC_DT_F32, i == 1 ? 3 : 4, outs[i].shape, buf)) continue;
        for (size_t j = 0; j < outs[i].count; j++) want[j] = buf[j];
        if (outs[i].view)
            view_to_d(outs[i].view, &s, got);
        else
            for (size_t j = 0; j < outs[i].count; j++) got[j] = outs[i].flat[j];
        /* lse absolutely (rows that see only themselves hold about -1e5), the rest relative to its size */
        snprintf(label, sizeof label, "fixture %s%s fast", prefix, outs[i].name);
        if (i == 1) CHECK_CLOSE(label, got, want, outs[i].count, 1e-5, 1e-5);
        else COMPARE(label, got, want, outs[i].count, 1e-4, 2e-6);
        /* the double reference against PyTorch's float64 rounded to float32 */
        snprintf(label, sizeof label, "fixture %s%s reference", prefix, outs[i].name);
        if (i == 1) CHECK_CLOSE(label, outs[i].ref, want, outs[i].count, 2e-7, 1e-7);
        else COMPARE(label, outs[i].ref, want, outs[i].count, 2e-7, 1e-8);
    }
    free(bk);
    ref_free(&r);
done:
    free(buf), free(rot), free(bk_want), free(want), free(got);
    problem_free(&p);
}

TEST(matches_pytorch_fixture) {
    const char *path = LC_FIXTURES "/lsh_attn.safetensors";
    lc_st_file *f;
    const lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    const char *cases = lc_st_get_meta(f, "cases");
    CHECK(cases && *cases, "fixture lacks the cases metadata");
    for (const char *c = cases; c && *c; c++) {
        if (*c == ',') continue;
        char prefix[8] = {*c, '.', 0};
        check_fixture_case(f, prefix);
    }
    lc_st_close(f);
}

int main(void) {
    lc_set_threads(2);
    RUN(options_defaults_spec_and_rejections);
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_causal);
    RUN(fast_matches_reference_bidirectional);
    RUN(fast_is_stable_for_large_inputs);
    RUN(one_bucket_and_one_chunk_is_dense_shared_qk_attention);
    RUN(buckets_are_the_argmax_of_the_rotated_query);
    RUN(rotations_are_standard_normal_and_seeded);
    RUN(runs_are_deterministic_given_the_seed);
    RUN(workspace_is_linear_in_t);
    RUN(empty_segment_writes_nothing);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_lsh");
}
