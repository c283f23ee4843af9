/* The test kit of the attention kinds (in the spirit of ggml's test-backend-ops). A kind's test declares
 * only what is specific to it, in a kit_kind: its row and how a case's parameters become its options,
 * the visibility rule for the shared dense-mask reference (lc_attn_masked_*_ref), or its own double
 * reference when the kind is not a mask (pooled keys, low-rank projections, LSH rounds); then cases
 * (kit_case: B, H, T, M, D, causal, parameters, relative positions, same_length window, global tokens,
 * parameters' length, seed, training flag) and tolerances (kit_tol). The kit builds every problem the
 * same way and runs the standard checks:
 *  - kit_check_fast: the fp32 kind against the double reference (out, lse, dq, dk, dv; the global
 *    projections' gradients and lse; dr, du, dv of relative positions; the accumulated parameter
 *    gradients), through strided views into fused buffers whose padding and memory-row dq columns hold
 *    sentinels that must survive, while every other gradient element must be written;
 *  - kit_check_reference_gradients: the reference's backward against central finite differences of its
 *    forward, for every input (q, k, v, qg, kg, vg, r, u, v(bias), the kind's parameters);
 *  - kit_check_determinism: bit-identical results across a repeat and thread counts 1, 2, 3 (the thread
 *    count is lc_attn_shape.threads; the process count is set higher meanwhile, so a kind that ran more
 *    threads than its shape allows would overrun its workspace);
 *  - kit_check_empty_segment, kit_check_same (two kinds, or one kind and full, on the same data).
 * Every run gets an exactly sized workspace (ASan sees overruns) followed, outside ASan, by sentinels that
 * must survive; the workspace is filled with NaN before forward and again before backward, so a kind that
 * reads scratch it did not write in the same pass (uninitialised memory, or state kept from forward)
 * shows NaN in its results; inputs must come back bit for bit unchanged. */
#ifndef LC_TESTS_ATTN_KIT_H
#define LC_TESTS_ATTN_KIT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "harness.h"
#include "train/safetensors.h"

#define KIT_FN static __attribute__((unused))
#define KIT_SENTINEL 12345.0f
#define KIT_MAX_GLOBAL 96
#define KIT_THREADS 2 /* the shape's thread count in the checks that do not vary it */
/* Sentinel floats after the workspace; none under ASan, which reports any access past the exact size. */
#ifdef __SANITIZE_ADDRESS__
static const size_t kit_guard __attribute__((unused)) = 0;
#else
static const size_t kit_guard __attribute__((unused)) = 64;
#endif
#ifndef LC_FIXTURES
#define LC_FIXTURES "tests/fixtures"
#endif

/* ---------------------------------------------------------------- cases, kinds, tolerances */

typedef struct {
    int B, H, T, M, D, causal;
    int p[4];       /* the kind's parameters (their meaning: the kind's kit_kind.opts) */
    int rel;        /* Transformer-XL relative positions (shape.relpos, tensors.rel) */
    int window;     /* shape.window (the same_length band) */
    int global;     /* 1: tensors.global with n_global positions pos[] (n_global < 0: every -n-th) */
    int n_global, pos[KIT_MAX_GLOBAL];
    int max_len;    /* kinds with parameters: param_floats' max_len (0: T) */
    uint64_t seed;  /* tensors.seed */
    int train;      /* tensors.train */
    int null_k;     /* k and dk are NULL views (kinds that read q only) */
    float scale;    /* 0: 1/sqrt(D) */
    float input_mul; /* q, k, v (and r, u, v(bias), qg, kg, vg) are N(0, 1) times this (0: 1) */
} kit_case;

typedef struct kit_kind kit_kind;
typedef struct kit_problem kit_problem;
typedef struct kit_ref kit_ref;

struct kit_kind {
    const lc_attn_kind *kind;
    /* The options of a case (NULL: opts_init's defaults, or none). */
    void (*opts)(const kit_case *c, void *opts);
    /* Mask kinds: what query t of head h sees; ctx is ctx_new's result, or the kit_problem itself. */
    lc_attn_visible_fn visible;
    /* What the visibility or reference needs from a problem after its fast run (a plan, the routing,
     * the buckets); NULL: the problem itself. */
    void *(*ctx_new)(const kit_problem *p);
    void (*ctx_free)(void *ctx);
    /* Kinds that are not a mask: writes r->out, r->lse (and with backward the gradients: dq, dk, dv,
     * dparams written, not accumulated). NULL: the masked reference with `visible`. */
    void (*reference)(kit_ref *r, const void *ctx, int backward);
    /* Called once the kit has filled a new problem (e.g. to rescale the parameters). */
    void (*prepare)(kit_problem *p);
    /* Checks of the kind's own after each kit_check_fast run (their CHECKs count toward the case). */
    void (*extra_check)(const kit_problem *p, const char *label);
    /* Shared query/key (lsh): the k columns hold NaN and are never read, dk comes back exactly 0. */
    int shared_qk;
    /* The seed of a case's random inputs (NULL: 77 + T + 13 M + 101 D + causal + 7 p0 + 3 p1 + 11 n). */
    uint64_t (*seed_of)(const kit_case *c);
};

/* kit_check_fast: |got - want| <= rtol |want| + atol * max(1, max |want|) per tensor;
 * kit_check_same: |a - b| <= rtol |b| + atol (plain). */
typedef struct {
    double rtol, atol;          /* out, dq, dk, dv (and the global rows' tensors) */
    double lse_rtol, lse_atol;  /* 0: rtol / 10 (kit_check_fast), atol */
    double rel_atol;            /* dr, du, dv(bias); 0: atol */
    double param_atol;          /* dparams; 0: atol */
    int lse_abs;                /* kit_check_fast: lse_atol is absolute (lse near -1e5 exists) */
    int rel_noise;              /* kit_check_fast: rel_atol times max(1, sqrt(B T) max|dq| / max|dr|): those
                                 * sums over B T rows carry fp32 noise adding up like a random walk */
} kit_tol;

/* A fp32 problem in fused buffers: q, k, v are column slices of one [B, S, 3HD + 7] buffer (q: its last T
 * rows), dq, dk, dv the same slices of another; out, dout [B, T, HD + 5]; global tokens get two more such
 * buffers; r, u, v(bias), their gradients, lse, parameters and state are exactly sized. Heap-allocated:
 * t points into it. */
struct kit_problem {
    const kit_kind *kk;
    kit_case c;
    lc_attn_shape s;
    _Alignas(16) unsigned char opts[LC_ATTN_OPTS_BYTES];
    long row, out_row;
    size_t qkv_n, out_n, nq, nk, nl, ng, nr, nu;
    int n_T; /* global positions < T: the global rows of this call (a longer list serves shorter calls) */
    float *qkv, *grad, *out, *dout, *lse;
    float *gqkv, *ggrad, *glse;
    float *r, *u, *vb, *dr, *du, *dvb;
    float *params, *dparams, *dparams0, *state; /* dparams0: dparams before the last backward */
    size_t params_n, state_n;
    float *work;
    size_t work_n;
    lc_attn_relpos rel;
    lc_attn_global global;
    lc_attn_tensors t;
};

/* The double reference of a problem: contiguous [B, rows, H, D] copies of its inputs and the outputs. */
struct kit_ref {
    const kit_problem *p;
    lc_attn_shape s; /* the problem's (the finite differences change its scale) */
    size_t np;
    double *q, *k, *v, *dout, *qg, *kg, *vg, *r, *u, *vb, *params;
    double *out, *lse, *dq, *dk, *dv, *dqg, *dkg, *dvg, *glse, *dr, *du, *dvb, *dparams;
    double *out_o, *out_g, *dout_o, *dout_g; /* global tokens: the two paths */
    double *block;
    lc_attn_relpos_d rel;
    lc_attn_tensors_d t;
};

KIT_FN void *kit_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

KIT_FN float *kit_floats(size_t n, float value) {
    float *p = kit_calloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = value;
    return p;
}

/* ---------------------------------------------------------------- small helpers */

/* dst[b][t][h*D + d] = element (b, t, h, d) of v, for t < rows */
KIT_FN void kit_view_to_d(const lc_view *v, int rows, const lc_attn_shape *s, double *dst) {
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < rows; t++)
            for (int i = 0; i < s->H * s->D; i++) *dst++ = v->p[(long)b * v->sb + (long)t * v->st + i];
}

/* The reverse, from contiguous floats [B, rows, H*D] (fixtures). */
KIT_FN void kit_floats_to_view(const float *src, const lc_view *v, int rows, const lc_attn_shape *s) {
    const int HD = s->H * s->D;
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < rows; t++)
            memcpy(v->p + (long)b * v->sb + (long)t * v->st, src + ((size_t)b * rows + t) * HD, sizeof(float) * HD);
}

KIT_FN void kit_floats_to_d(const float *src, size_t n, double *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* max |x|, at least 1: the natural scale of outputs and gradients for O(1) inputs */
KIT_FN double kit_scale_of(const double *x, size_t n) {
    double m = 1;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* Compares n values; atol is a fraction of max(1, max |want|) unless absolute. Prints the line (with the
 * worst error / scale) when verbose or failing; returns 1 when all are close. */
KIT_FN int kit_compare(const char *what, const char *label, const double *got, const double *want, size_t n,
                       double rtol, double atol, int absolute, int verbose) {
    const double scale = kit_scale_of(want, n), lim = absolute ? atol : atol * scale;
    double worst = 0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(got[i] - want[i]);
        ok &= e <= lim + rtol * fabs(want[i]);
        worst = e > worst || e != e ? e : worst;
    }
    if (verbose || !ok) {
        char line[320];
        snprintf(line, sizeof line, "%s %s err/scale %.1e", what, label, worst / scale);
        const int failed_before = harness_current_failed;
        harness_current_failed = 0;
        CHECK_CLOSE(line, got, want, n, rtol, lim);
        /* CHECK_CLOSE keeps the worst ratio with !(r <= worst), so a NaN followed by finite values is lost */
        CHECK(ok || harness_current_failed, "%s: NaN among the values", line);
        harness_current_failed |= failed_before;
    }
    return ok;
}

/* 1 when no value is NaN (CHECK_CLOSE alone can miss them). */
KIT_FN int kit_no_nan(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (x[i] != x[i]) return 0;
    return 1;
}

/* One line naming a case, for labels. */
KIT_FN void kit_label(const kit_problem *p, char *buf, size_t size) {
    const kit_case *c = &p->c;
    int n = snprintf(buf, size, "%s B%d H%d T%d M%d D%d c%d", p->kk->kind->name, c->B, c->H, c->T, c->M, c->D,
                     c->causal);
    if (c->p[0] || c->p[1] || c->p[2] || c->p[3])
        n += snprintf(buf + n, size - n, " p%d/%d/%d/%d", c->p[0], c->p[1], c->p[2], c->p[3]);
    if (c->window) n += snprintf(buf + n, size - n, " W%d", c->window);
    if (c->global) n += snprintf(buf + n, size - n, " n%d", c->n_global);
    snprintf(buf + n, size - n, "%s%s", c->rel ? " rel" : "", c->train ? " train" : "");
}

/* Whether a kind accepts a shape: lc_attn_kind_check, the library's one check (caps, length rule, the
 * kind's own check of its options). */
KIT_FN int kit_kind_check(const lc_attn_kind *kind, const lc_attn_shape *s, const void *opts,
                          const lc_attn_global *global, char *err, size_t errlen) {
    return lc_attn_kind_check(kind, s, opts, global, err, errlen);
}

KIT_FN int kit_is_global_row(const kit_case *c, int t) {
    for (int i = 0; c->global && i < c->n_global; i++)
        if (c->pos[i] == t) return 1;
    return 0;
}

/* ---------------------------------------------------------------- fp32 problems */

KIT_FN lc_view kit_view(float *p, long sb, long st) {
    lc_view v = {p, sb, st};
    return v;
}

/* q, k, v: column slices of `in` (q: its last T rows); dq, dk, dv: the same slices of `grad`. */
KIT_FN void kit_fused_views(const kit_problem *p, float *in, float *grad, lc_view *q, lc_view *k, lc_view *v, lc_view *dq,
                            lc_view *dk, lc_view *dv) {
    const long sb = (long)(p->c.M + p->c.T) * p->row, HD = (long)p->c.H * p->c.D, first = (long)p->c.M * p->row;
    *q = kit_view(in + first, sb, p->row), *k = kit_view(in + HD, sb, p->row), *v = kit_view(in + 2 * HD, sb, p->row);
    *dq = kit_view(grad + first, sb, p->row), *dk = kit_view(grad + HD, sb, p->row);
    *dv = kit_view(grad + 2 * HD, sb, p->row);
}

/* A shape's thread count is part of the shape: the workspace is sized for exactly `threads`. */
KIT_FN kit_problem *kit_problem_new(const kit_kind *kk, const kit_case *cin, int threads) {
    kit_problem *p = kit_calloc(1, sizeof *p);
    p->kk = kk, p->c = *cin;
    kit_case *c = &p->c;
    if (c->global && c->n_global < 0) { /* every -n-th position */
        const int every = -c->n_global;
        c->n_global = 0;
        for (int t = 0; t < c->T && c->n_global < KIT_MAX_GLOBAL; t += every) c->pos[c->n_global++] = t;
    }
    const lc_attn_shape s = {c->B, c->H, c->T, c->M, c->D, c->causal,
                             c->scale > 0 ? c->scale : (float)(1.0 / sqrt((double)c->D)), c->window, c->rel, threads};
    p->s = s;
    if (kk->opts) kk->opts(c, p->opts);
    else if (kk->kind->opts_init) kk->kind->opts_init(p->opts, c->H);
    const int S = c->M + c->T, HD = c->H * c->D, n = c->global ? c->n_global : 0;
    const float mul = c->input_mul > 0 ? c->input_mul : 1.0f;
    p->row = 3L * HD + 7, p->out_row = HD + 5;
    p->qkv_n = (size_t)c->B * S * p->row, p->out_n = (size_t)c->B * c->T * p->out_row;
    p->nq = (size_t)c->B * c->T * HD, p->nk = (size_t)c->B * S * HD, p->nl = (size_t)c->B * c->H * c->T;
    while (p->n_T < n && c->pos[p->n_T] < c->T) p->n_T++;
    p->ng = (size_t)c->B * c->H * p->n_T, p->nr = (size_t)S * HD, p->nu = (size_t)HD;
    lc_rng rng;
    lc_rng_seed(&rng, kk->seed_of ? kk->seed_of(c)
                                  : (uint64_t)(77 + c->T + 13 * c->M + 101 * c->D + c->causal + 7 * c->p[0] + 3 * c->p[1] + 11 * n));
    p->qkv = kit_calloc(p->qkv_n, sizeof(float)), p->grad = kit_floats(p->qkv_n, KIT_SENTINEL);
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row;
        p->qkv[i] = col >= 3 * (size_t)HD                                   ? KIT_SENTINEL
                    : kk->shared_qk && col >= (size_t)HD && col < 2 * (size_t)HD ? NAN
                                                                               : mul * lc_rng_normal(&rng);
    }
    p->out = kit_floats(p->out_n, KIT_SENTINEL), p->dout = kit_calloc(p->out_n, sizeof(float));
    for (size_t i = 0; i < p->out_n; i++) p->dout[i] = lc_rng_normal(&rng);
    p->lse = kit_floats(p->nl, NAN);
    const long out_sb = (long)c->T * p->out_row;
    kit_fused_views(p, p->qkv, p->grad, &p->t.q, &p->t.k, &p->t.v, &p->t.dq, &p->t.dk, &p->t.dv);
    p->t.out = kit_view(p->out, out_sb, p->out_row);
    p->t.dout = kit_view(p->dout, out_sb, p->out_row);
    p->t.lse = p->lse;
    if (c->null_k) p->t.k = kit_view(NULL, 0, 0), p->t.dk = kit_view(NULL, 0, 0);
    if (c->rel) {
        p->r = kit_calloc(p->nr, sizeof(float)), p->dr = kit_floats(p->nr, KIT_SENTINEL);
        p->u = kit_calloc(p->nu, sizeof(float)), p->vb = kit_calloc(p->nu, sizeof(float));
        p->du = kit_floats(p->nu, KIT_SENTINEL), p->dvb = kit_floats(p->nu, KIT_SENTINEL);
        for (size_t i = 0; i < p->nr; i++) p->r[i] = mul * lc_rng_normal(&rng);
        for (size_t i = 0; i < p->nu; i++) p->u[i] = 0.5f * mul * lc_rng_normal(&rng), p->vb[i] = 0.5f * mul * lc_rng_normal(&rng);
        p->rel = (lc_attn_relpos){p->r, p->u, p->vb, p->dr, p->du, p->dvb};
        p->t.rel = &p->rel;
    }
    if (c->global) {
        p->gqkv = kit_calloc(p->qkv_n, sizeof(float)), p->ggrad = kit_floats(p->qkv_n, KIT_SENTINEL);
        for (size_t i = 0; i < p->qkv_n; i++)
            p->gqkv[i] = i % p->row < 3 * (size_t)HD ? mul * lc_rng_normal(&rng) : KIT_SENTINEL;
        p->glse = kit_floats(p->ng, NAN);
        p->global.n = n, p->global.pos = c->pos;
        kit_fused_views(p, p->gqkv, p->ggrad, &p->global.qg, &p->global.kg, &p->global.vg, &p->global.dqg, &p->global.dkg, &p->global.dvg);
        p->global.lse = p->glse;
        p->t.global = &p->global;
    }
    const lc_attn_kind *k = kk->kind;
    if (k->param_floats) {
        const int max_len = c->max_len > 0 ? c->max_len : c->T;
        p->params_n = k->param_floats(p->opts, c->H, c->D, max_len);
        p->params = kit_calloc(p->params_n, sizeof(float)), p->dparams = kit_calloc(p->params_n, sizeof(float));
        p->dparams0 = kit_calloc(p->params_n, sizeof(float));
        k->param_init(p->params, p->opts, c->H, c->D, max_len, c->seed + 1);
        for (size_t i = 0; i < p->params_n; i++) p->dparams[i] = 0.25f * lc_rng_normal(&rng); /* accumulated onto */
        p->t.params = p->params, p->t.dparams = p->dparams;
    }
    if (k->state_floats) {
        p->state_n = k->state_floats(p->opts, c->H, c->D);
        p->state = kit_calloc(p->state_n, sizeof(float));
        k->state_init(p->state, p->opts, c->H, c->D, c->seed + 17);
        p->t.state = p->state;
    }
    p->t.seed = c->seed, p->t.train = c->train;
    p->work_n = k->workspace_floats(&p->s, p->opts);
    /* exactly the size asked for (and the guard; one float when both are 0, as malloc(0) may be NULL) */
    p->work = malloc((p->work_n + kit_guard ? p->work_n + kit_guard : 1) * sizeof(float));
    if (kk->prepare) kk->prepare(p);
    return p;
}

KIT_FN void kit_problem_free(kit_problem *p) {
    float *all[] = {p->qkv, p->grad, p->out, p->dout, p->lse, p->gqkv, p->ggrad, p->glse, p->r, p->u, p->vb,
                    p->dr, p->du, p->dvb, p->params, p->dparams, p->dparams0, p->state, p->work};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    free(p);
}

/* The workspace is NaN before every pass (a pass reads only scratch it wrote) and the guard holds
 * sentinels; kit_pass_end checks the guard. */
KIT_FN void kit_pass_begin(kit_problem *p) {
    for (size_t i = 0; i < p->work_n; i++) p->work[i] = NAN;
    for (size_t i = 0; i < kit_guard; i++) p->work[p->work_n + i] = KIT_SENTINEL;
}

KIT_FN void kit_pass_end(const kit_problem *p, const char *pass) {
    int ok = 1;
    for (size_t i = 0; i < kit_guard; i++) ok &= p->work[p->work_n + i] == KIT_SENTINEL;
    CHECK(ok, "%s %s wrote past its workspace of %zu floats", p->kk->kind->name, pass, p->work_n);
}

KIT_FN void kit_forward(kit_problem *p) {
    kit_pass_begin(p);
    p->kk->kind->forward(&p->s, p->opts, &p->t, p->work);
    kit_pass_end(p, "forward");
}

KIT_FN void kit_backward(kit_problem *p) {
    if (p->dparams) memcpy(p->dparams0, p->dparams, p->params_n * sizeof(float));
    kit_pass_begin(p);
    p->kk->kind->backward(&p->s, p->opts, &p->t, p->work);
    kit_pass_end(p, "backward");
}

/* Forward and backward; the inputs (q, k, v, dout, qg, kg, vg, r, u, v(bias), parameters) must come
 * back bit for bit. */
KIT_FN void kit_run(kit_problem *p) {
    const size_t n_in[5] = {p->qkv_n, p->out_n, p->gqkv ? p->qkv_n : 0, p->rel.r ? p->nr + 2 * p->nu : 0, p->params_n};
    const float *in[7] = {p->qkv, p->dout, p->gqkv, p->r, p->u, p->vb, p->params};
    float *copy = kit_calloc(n_in[0] + n_in[1] + n_in[2] + n_in[3] + n_in[4], sizeof(float)), *at = copy;
    const size_t sizes[7] = {n_in[0], n_in[1], n_in[2], p->rel.r ? p->nr : 0, p->rel.r ? p->nu : 0,
                             p->rel.r ? p->nu : 0, n_in[4]};
    for (int i = 0; i < 7; i++) memcpy(at, in[i] ? in[i] : copy, sizes[i] * sizeof(float)), at += sizes[i];
    kit_forward(p);
    kit_backward(p);
    int same = 1;
    at = copy;
    for (int i = 0; i < 7; i++) same &= memcmp(at, in[i] ? in[i] : copy, sizes[i] * sizeof(float)) == 0, at += sizes[i];
    CHECK(same, "%s changed its inputs", p->kk->kind->name);
    free(copy);
}

/* Padding columns and the dq (dqg) columns of memory rows hold sentinels; every other gradient element
 * and every output element must have been written (dk: only when k is a view). */
KIT_FN int kit_writes_ok(const kit_problem *p) {
    const size_t HD = (size_t)p->s.H * p->s.D, S = (size_t)p->s.M + p->s.T;
    const float *grads[2] = {p->grad, p->ggrad};
    for (int g = 0; g < 2 && grads[g]; g++)
        for (size_t i = 0; i < p->qkv_n; i++) {
            const size_t col = i % p->row, row = i / p->row % S;
            const int kept = col >= 3 * HD || (col < HD && row < (size_t)p->s.M) ||
                             (g == 0 && p->c.null_k && col >= HD && col < 2 * HD);
            if (kept != (grads[g][i] == KIT_SENTINEL)) return 0;
        }
    for (size_t i = 0; i < p->out_n; i++)
        if ((i % p->out_row >= HD) != (p->out[i] == KIT_SENTINEL)) return 0;
    for (size_t i = 0; p->rel.r && i < p->nr; i++)
        if (p->dr[i] == KIT_SENTINEL) return 0;
    for (size_t i = 0; p->rel.r && i < p->nu; i++)
        if (p->du[i] == KIT_SENTINEL || p->dvb[i] == KIT_SENTINEL) return 0;
    return 1;
}

/* ---------------------------------------------------------------- the double reference */

KIT_FN lc_view_d kit_view_d(double *p, int rows, const lc_attn_shape *s) {
    lc_view_d v = {p, (long)rows * s->H * s->D, (long)s->H * s->D};
    return v;
}

/* The double tensors of one path: (q, k, v) or, global, (qg, kg, vg). */
KIT_FN lc_attn_tensors_d kit_tensors_d(const kit_ref *r, int global, double *out, double *dout) {
    const lc_attn_shape *s = &r->s;
    const int S = s->M + s->T;
    lc_attn_tensors_d t;
    memset(&t, 0, sizeof t);
    t.q = kit_view_d(global ? r->qg : r->q, s->T, s), t.k = kit_view_d(global ? r->kg : r->k, S, s);
    t.v = kit_view_d(global ? r->vg : r->v, S, s);
    t.out = kit_view_d(out, s->T, s), t.dout = kit_view_d(dout, s->T, s);
    t.dq = kit_view_d(global ? r->dqg : r->dq, s->T, s), t.dk = kit_view_d(global ? r->dkg : r->dk, S, s);
    t.dv = kit_view_d(global ? r->dvg : r->dv, S, s);
    return t;
}

/* The double copy of a problem's inputs, with zeroed outputs. */
KIT_FN kit_ref *kit_ref_new(const kit_problem *p) {
    kit_ref *r = kit_calloc(1, sizeof *r);
    r->p = p, r->s = p->s, r->np = p->params_n;
    const size_t nq = p->nq, nk = p->nk, nl = p->nl, ng = p->ng, nr = p->rel.r ? p->nr : 0, nu = p->rel.r ? p->nu : 0;
    const size_t gq = p->c.global ? nq : 0, gk = p->c.global ? nk : 0;
    double **arrays[] = {&r->q,  &r->k,   &r->v,   &r->dout, &r->qg,  &r->kg,    &r->vg,     &r->r,      &r->u,
                         &r->vb, &r->params, &r->out, &r->lse, &r->dq, &r->dk,    &r->dv,     &r->dqg,    &r->dkg,
                         &r->dvg, &r->glse, &r->dr, &r->du,  &r->dvb, &r->dparams, &r->out_o, &r->out_g, &r->dout_o,
                         &r->dout_g};
    const size_t sizes[] = {nq, nk, nk, nq, gq, gk, gk, nr, nu, nu, r->np, nq, nl, nq, nk, nk, gq, gk, gk, ng, nr, nu,
                            nu, r->np, gq, gq, gq, gq};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    r->block = kit_calloc(total, sizeof(double));
    double *at = r->block;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) *arrays[i] = at, at += sizes[i];
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T;
    kit_view_to_d(&p->t.q, s->T, s, r->q), kit_view_to_d(&p->t.v, S, s, r->v), kit_view_to_d(&p->t.dout, s->T, s, r->dout);
    if (!p->kk->shared_qk) kit_view_to_d(&p->t.k, S, s, r->k);
    if (p->c.global) {
        kit_view_to_d(&p->global.qg, s->T, s, r->qg), kit_view_to_d(&p->global.kg, S, s, r->kg);
        kit_view_to_d(&p->global.vg, S, s, r->vg);
    }
    kit_floats_to_d(p->r, nr, r->r), kit_floats_to_d(p->u, nu, r->u), kit_floats_to_d(p->vb, nu, r->vb);
    kit_floats_to_d(p->params, r->np, r->params);
    r->t = kit_tensors_d(r, 0, r->out, r->dout);
    if (p->rel.r) {
        r->rel = (lc_attn_relpos_d){r->r, r->u, r->vb, r->dr, r->du, r->dvb};
        r->t.rel = &r->rel;
    }
    return r;
}

KIT_FN void kit_ref_free(kit_ref *r) {
    free(r->block);
    free(r);
}

/* Log-sum-exp of one row over the keys `visible` allows, from the definition (with the position terms
 * when rel is set). */
KIT_FN double kit_row_lse(const kit_ref *r, const double *q, const double *k, const lc_attn_relpos_d *rel,
                          lc_attn_visible_fn visible, const void *ctx, int b, int h, int t) {
    const lc_attn_shape *s = &r->s;
    const int S = s->M + s->T, HD = s->H * s->D, D = s->D;
    double max = -INFINITY, sum = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < S; j++) {
            if (!visible(ctx, b, h, t, j)) continue;
            double dot = 0;
            for (int d = 0; d < D; d++) {
                const double qd = q[((size_t)b * s->T + t) * HD + h * D + d], kd = k[((size_t)b * S + j) * HD + h * D + d];
                if (rel) /* distance M + t - j >= 0 for visible keys */
                    dot += (qd + rel->u[h * D + d]) * kd + (qd + rel->v[h * D + d]) * rel->r[(size_t)(s->M + t - j) * HD + h * D + d];
                else
                    dot += qd * kd;
            }
            if (pass == 0) max = fmax(max, s->scale * dot);
            else sum += exp(s->scale * dot - max);
        }
    return max + log(sum);
}

/* r->lse over the keys `visible` allows. */
KIT_FN void kit_masked_lse(kit_ref *r, lc_attn_visible_fn visible, const void *ctx) {
    const lc_attn_shape *s = &r->s;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < s->T; t++)
                r->lse[((size_t)b * s->H + h) * s->T + t] = kit_row_lse(r, r->q, r->k, r->t.rel, visible, ctx, b, h, t);
}

/* Global tokens (attn.h), composed from the masked reference: ordinary rows see their pattern plus the
 * global keys (causal: not after the query) through (q, k, v); global rows see every key (causal: up to
 * themselves) through (qg, kg, vg) and overwrite out there; each path gets dout on its own rows only. */
typedef struct {
    const kit_case *c;
    lc_attn_visible_fn visible;
    const void *ctx;
} kit_global_mask;

static int kit_ordinary_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_global_mask *m = ctx;
    if (m->c->causal && s > m->c->M + t) return 0;
    if (s >= m->c->M && kit_is_global_row(m->c, s - m->c->M)) return 1;
    return m->visible(m->ctx, b, h, t, s);
}

static int kit_global_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_global_mask *m = ctx;
    (void)b, (void)h;
    return !m->c->causal || s <= m->c->M + t;
}

KIT_FN void kit_global_reference(kit_ref *r, const void *ctx, int backward) {
    const kit_case *c = &r->p->c;
    const kit_global_mask m = {c, r->p->kk->visible, ctx};
    lc_attn_tensors_d to = kit_tensors_d(r, 0, r->out_o, r->dout), tg = kit_tensors_d(r, 1, r->out_g, r->dout);
    lc_attn_masked_forward_ref(&r->s, kit_ordinary_visible, &m, &to);
    lc_attn_masked_forward_ref(&r->s, kit_global_visible, &m, &tg);
    const int HD = c->H * c->D;
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++) {
            const size_t at = ((size_t)b * c->T + t) * HD;
            const int g = kit_is_global_row(c, t);
            memcpy(r->out + at, (g ? r->out_g : r->out_o) + at, sizeof(double) * HD);
            for (int i = 0; i < HD; i++) r->dout_o[at + i] = g ? 0 : r->dout[at + i], r->dout_g[at + i] = g ? r->dout[at + i] : 0;
        }
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            for (int t = 0; t < c->T; t++)
                r->lse[((size_t)b * c->H + h) * c->T + t] =
                    kit_is_global_row(c, t) ? INFINITY : kit_row_lse(r, r->q, r->k, NULL, kit_ordinary_visible, &m, b, h, t);
            for (int i = 0; i < r->p->n_T; i++)
                r->glse[((size_t)b * c->H + h) * r->p->n_T + i] =
                    kit_row_lse(r, r->qg, r->kg, NULL, kit_global_visible, &m, b, h, c->pos[i]);
        }
    if (!backward) return;
    to = kit_tensors_d(r, 0, r->out_o, r->dout_o), tg = kit_tensors_d(r, 1, r->out_g, r->dout_g);
    lc_attn_masked_backward_ref(&r->s, kit_ordinary_visible, &m, &to);
    lc_attn_masked_backward_ref(&r->s, kit_global_visible, &m, &tg);
}

/* The kind's reference: its own, or the masked one with its visibility (and global tokens). */
KIT_FN void kit_reference(kit_ref *r, const void *ctx, int backward) {
    const kit_kind *kk = r->p->kk;
    if (kk->reference) kk->reference(r, ctx, backward);
    else if (r->p->c.global) kit_global_reference(r, ctx, backward);
    else {
        lc_attn_masked_forward_ref(&r->s, kk->visible, ctx, &r->t);
        if (backward) lc_attn_masked_backward_ref(&r->s, kk->visible, ctx, &r->t);
        kit_masked_lse(r, kk->visible, ctx);
    }
}

KIT_FN const void *kit_ctx_new(const kit_problem *p) { return p->kk->ctx_new ? p->kk->ctx_new(p) : (const void *)p; }

KIT_FN void kit_ctx_free(const kit_problem *p, const void *ctx) {
    if (p->kk->ctx_new && p->kk->ctx_free) p->kk->ctx_free((void *)ctx);
}

/* ---------------------------------------------------------------- the full kind (the common yardstick) */

static int kit_full_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_problem *p = ctx;
    const int q = p->s.M + t;
    (void)b, (void)h;
    if (p->s.causal && s > q) return 0;
    return p->s.window <= 0 || s >= q - p->s.window + 1;
}

static void kit_full_reference(kit_ref *r, const void *ctx, int backward) {
    lc_attn_full_forward_ref(&r->s, &r->t);
    if (backward) lc_attn_full_backward_ref(&r->s, &r->t);
    kit_masked_lse(r, kit_full_visible, ctx);
}

static const kit_kind kit_full __attribute__((unused)) = {
    .kind = &lc_attn_full, .visible = kit_full_visible, .reference = kit_full_reference};

/* ---------------------------------------------------------------- the window kind (window and global tests) */

#include "attn/window.h"

/* p[0] = w keys per side; p[1] = 1: per-head dilations 1, 2, 3, 1, 2, 3, ... */
static void kit_window_opts(const kit_case *c, void *opts) {
    static const int dilations[8] = {1, 2, 3, 1, 2, 3, 1, 2};
    lc_attn_window_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->w = c->p[0];
    for (int h = 0; h < LC_ATTN_MAX_HEADS; h++) o->dilation[h] = c->p[1] ? dilations[h % 8] : 1;
}

/* The band straight from the definition: keys p - k d (bidirectional: also p + k d), k = 0..w. */
static int kit_window_visible(const void *ctx, int b, int h, int t, int s) {
    const kit_problem *p = ctx;
    const lc_attn_window_opts *o = (const void *)p->opts;
    const int d = lc_attn_window_dilation(o, h), diff = s - (p->s.M + t);
    (void)b;
    if (p->s.causal && diff > 0) return 0;
    return diff % d == 0 && abs(diff) / d <= o->w;
}

static const kit_kind kit_window __attribute__((unused)) = {
    .kind = &lc_attn_window, .opts = kit_window_opts, .visible = kit_window_visible};

/* ---------------------------------------------------------------- the standard checks */

/* The fast kind against the double reference on one case; quiet unless verbose or failing. Returns 1
 * when everything matched. */
KIT_FN int kit_check_fast(const kit_kind *kk, kit_case c, kit_tol tol, int verbose) {
    const int failed_before = harness_current_failed;
    harness_current_failed = 0;
    kit_problem *p = kit_problem_new(kk, &c, KIT_THREADS);
    char label[200], err[256] = "";
    kit_label(p, label, sizeof label);
    CHECK(kit_kind_check(kk->kind, &p->s, p->opts, p->t.global, err, sizeof err) == 0, "%s refused: %s", label, err);
    kit_run(p);
    const void *ctx = kit_ctx_new(p);
    kit_ref *r = kit_ref_new(p);
    kit_reference(r, ctx, 1);
    const lc_attn_shape *s = &p->s;
    const int S = s->M + s->T;
    size_t most = p->nk > p->nl ? p->nk : p->nl;
    most = most > p->params_n ? most : p->params_n;
    double *got = kit_calloc(most, sizeof(double)), *want = kit_calloc(most, sizeof(double));
    const double lse_rtol = tol.lse_rtol > 0 ? tol.lse_rtol : tol.rtol / 10, lse_atol = tol.lse_atol > 0 ? tol.lse_atol : tol.atol;
    kit_view_to_d(&p->t.out, s->T, s, got);
    kit_compare("out", label, got, r->out, p->nq, tol.rtol, tol.atol, 0, verbose);
    int inf_ok = 1; /* global rows: lse is +inf in both */
    for (size_t i = 0; i < p->nl; i++) {
        got[i] = p->lse[i], want[i] = r->lse[i];
        if (isinf(want[i]) && want[i] > 0) inf_ok &= isinf(got[i]) && got[i] > 0, got[i] = want[i] = 0;
    }
    CHECK(inf_ok, "%s: lse of global rows must be +inf", label);
    kit_compare("lse", label, got, want, p->nl, lse_rtol, lse_atol, tol.lse_abs, verbose);
    const struct {
        const char *name;
        const lc_view *v;
        int rows;
        const double *want;
    } grads[6] = {{"dq", &p->t.dq, s->T, r->dq},           {"dk", &p->t.dk, S, r->dk},
                  {"dv", &p->t.dv, S, r->dv},              {"dqg", &p->global.dqg, s->T, r->dqg},
                  {"dkg", &p->global.dkg, S, r->dkg},      {"dvg", &p->global.dvg, S, r->dvg}};
    for (int i = 0; i < (c.global ? 6 : 3); i++) {
        if (i == 1 && (kk->shared_qk || c.null_k)) { /* dk: exactly 0 (a NULL view: untouched, below) */
            int zero = 1;
            if (!c.null_k) kit_view_to_d(grads[i].v, S, s, got);
            for (size_t j = 0; !c.null_k && j < p->nk; j++) zero &= got[j] == 0;
            CHECK(zero, "%s: dk must be 0", label);
            continue;
        }
        kit_view_to_d(grads[i].v, grads[i].rows, s, got);
        kit_compare(grads[i].name, label, got, grads[i].want, grads[i].rows == S ? p->nk : p->nq, tol.rtol, tol.atol, 0,
                    verbose);
    }
    if (c.global) {
        kit_floats_to_d(p->glse, p->ng, got);
        kit_compare("global lse", label, got, r->glse, p->ng, lse_rtol, lse_atol, tol.lse_abs, verbose);
    }
    if (c.rel) {
        const double noise = tol.rel_noise ? fmax(1.0, sqrt((double)c.B * c.T) * kit_scale_of(r->dq, p->nq) /
                                                             kit_scale_of(r->dr, p->nr))
                                           : 1.0,
                     atol = (tol.rel_atol > 0 ? tol.rel_atol : tol.atol) * noise;
        kit_floats_to_d(p->dr, p->nr, got);
        kit_compare("dr", label, got, r->dr, p->nr, tol.rtol, atol, 0, verbose);
        kit_floats_to_d(p->du, p->nu, got);
        kit_compare("du", label, got, r->du, p->nu, tol.rtol, atol, 0, verbose);
        kit_floats_to_d(p->dvb, p->nu, got);
        kit_compare("dv(bias)", label, got, r->dvb, p->nu, tol.rtol, atol, 0, verbose);
    }
    if (p->params_n) { /* backward accumulates: what it added */
        for (size_t i = 0; i < p->params_n; i++) got[i] = (double)p->dparams[i] - p->dparams0[i];
        kit_compare("dparams (accumulated)", label, got, r->dparams, p->params_n, tol.rtol,
                    tol.param_atol > 0 ? tol.param_atol : tol.atol, 0, verbose);
    }
    CHECK(kit_writes_ok(p), "%s: a write landed in padding or memory-row dq columns, or an output element was not "
                            "written", label);
    if (kk->extra_check) kk->extra_check(p, label);
    const int ok = !harness_current_failed;
    harness_current_failed |= failed_before;
    free(got), free(want);
    kit_ref_free(r);
    kit_ctx_free(p, ctx);
    kit_problem_free(p);
    return ok;
}

KIT_FN double kit_ref_loss(kit_ref *r, const void *ctx) { /* L = sum(out * dout) */
    kit_reference(r, ctx, 0);
    double L = 0;
    for (size_t i = 0; i < r->p->nq; i++) L += r->out[i] * r->dout[i];
    return L;
}

/* The reference's backward against central finite differences of its forward (scale 0.7, not
 * 1/sqrt(D), so a misplaced scale shows), for every input it has. */
KIT_FN void kit_check_reference_gradients(const kit_kind *kk, kit_case c) {
    kit_problem *p = kit_problem_new(kk, &c, KIT_THREADS);
    kit_run(p); /* what the context is made from (routing, plans, buckets) */
    const void *ctx = kit_ctx_new(p);
    kit_ref *r = kit_ref_new(p);
    r->s.scale = 0.7f;
    kit_reference(r, ctx, 1);
    char label[220];
    kit_label(p, label, sizeof label);
    strcat(label, " vs finite diff");
    const int g = c.global, rel = c.rel;
    const struct {
        const char *name;
        double *x, *grad;
        size_t n;
    } in[10] = {{"dq", r->q, r->dq, p->nq},
                {"dk", r->k, r->dk, kk->shared_qk ? 0 : p->nk},
                {"dv", r->v, r->dv, p->nk},
                {"dqg", r->qg, r->dqg, g ? p->nq : 0},
                {"dkg", r->kg, r->dkg, g ? p->nk : 0},
                {"dvg", r->vg, r->dvg, g ? p->nk : 0},
                {"dr", r->r, r->dr, rel ? p->nr : 0},
                {"du", r->u, r->du, rel ? p->nu : 0},
                {"dv(bias)", r->vb, r->dvb, rel ? p->nu : 0},
                {"dparams", r->params, r->dparams, p->params_n}};
    const double step = 1e-6;
    for (int w = 0; w < 10; w++) {
        if (!in[w].n) continue;
        double *analytic = kit_calloc(in[w].n, sizeof(double)), *numeric = kit_calloc(in[w].n, sizeof(double));
        memcpy(analytic, in[w].grad, in[w].n * sizeof(double));
        for (size_t i = 0; i < in[w].n; i++) {
            const double saved = in[w].x[i];
            in[w].x[i] = saved + step;
            const double up = kit_ref_loss(r, ctx);
            in[w].x[i] = saved - step;
            const double down = kit_ref_loss(r, ctx);
            in[w].x[i] = saved;
            numeric[i] = (up - down) / (2 * step);
        }
        kit_compare(in[w].name, label, analytic, numeric, in[w].n, 1e-6, 1e-8, 1, 1);
        free(analytic), free(numeric);
    }
    kit_ref_free(r);
    kit_ctx_free(p, ctx);
    kit_problem_free(p);
}

/* Two runs' results are the same bits (outputs, gradients, parameter gradients, state). */
KIT_FN void kit_check_same_bits(const kit_problem *a, const kit_problem *b, const char *what) {
    char label[200];
    kit_label(a, label, sizeof label);
    const struct {
        const char *name;
        const float *x, *y;
        size_t n;
    } parts[10] = {{"out", a->out, b->out, a->out_n},         {"lse", a->lse, b->lse, a->nl},
                   {"dq/dk/dv", a->grad, b->grad, a->qkv_n},  {"global lse", a->glse, b->glse, a->ng},
                   {"dqg/dkg/dvg", a->ggrad, b->ggrad, a->ggrad ? a->qkv_n : 0},
                   {"dr", a->dr, b->dr, a->dr ? a->nr : 0},   {"du", a->du, b->du, a->du ? a->nu : 0},
                   {"dv(bias)", a->dvb, b->dvb, a->dvb ? a->nu : 0},
                   {"dparams", a->dparams, b->dparams, a->params_n},
                   {"state", a->state, b->state, a->state_n}};
    for (int i = 0; i < 10; i++)
        if (parts[i].n) CHECK(memcmp(parts[i].x, parts[i].y, parts[i].n * sizeof(float)) == 0, "%s: %s differs (%s)", label,
                              parts[i].name, what);
}

/* Runs with shape.threads 2, 2 (a repeat), 1 and 3 give the same bits. The calling thread's own count is
 * 4 meanwhile: a kind must use only the threads of its shape (more would overrun the workspace). */
KIT_FN void kit_check_determinism(const kit_kind *kk, kit_case c) {
    const int threads[4] = {2, 2, 1, 3}, ambient = lc_threads_current();
    kit_problem *runs[4];
    lc_threads_use(4);
    for (int i = 0; i < 4; i++) {
        runs[i] = kit_problem_new(kk, &c, threads[i]);
        kit_run(runs[i]);
    }
    lc_threads_use(ambient);
    for (int i = 1; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof what, "threads %d vs %d, run %d", threads[0], threads[i], i);
        kit_check_same_bits(runs[0], runs[i], what);
    }
    for (int i = 0; i < 4; i++) kit_problem_free(runs[i]);
}

/* T = 0: nothing flows back, but every memory row of dk and dv (and dr, du, dv) is written as 0, and
 * nothing else is written. */
KIT_FN void kit_check_empty_segment(const kit_kind *kk, kit_case c) {
    kit_problem *p = kit_problem_new(kk, &c, KIT_THREADS);
    kit_run(p);
    const size_t HD = (size_t)c.H * c.D;
    int ok = 1;
    for (size_t i = 0; i < p->qkv_n; i++) {
        const size_t col = i % p->row;
        ok &= col >= HD && col < 3 * HD ? p->grad[i] == 0.0f : p->grad[i] == KIT_SENTINEL;
    }
    for (size_t i = 0; p->dr && i < p->nr; i++) ok &= p->dr[i] == 0.0f;
    for (size_t i = 0; p->du && i < p->nu; i++) ok &= p->du[i] == 0.0f && p->dvb[i] == 0.0f;
    for (size_t i = 0; i < p->out_n; i++) ok &= p->out[i] == KIT_SENTINEL;
    CHECK(ok, "%s T = 0: dk, dv of the memory rows (and dr, du, dv) must be 0, nothing else written", kk->kind->name);
    kit_problem_free(p);
}

/* Compares the results of two runs on the same data (plain tolerances: kit_tol's atol are absolute). */
KIT_FN void kit_compare_runs(const kit_problem *a, const kit_problem *b, kit_tol tol, int backward, const char *what) {
    char label[320], base[200];
    kit_label(a, base, sizeof base);
    CHECK(kit_no_nan(a->out, a->out_n) && kit_no_nan(a->lse, a->nl) && kit_no_nan(a->grad, backward ? a->qkv_n : 0) &&
              kit_no_nan(b->out, b->out_n) && kit_no_nan(b->lse, b->nl) && kit_no_nan(b->grad, backward ? b->qkv_n : 0),
          "%s %s: NaN in the results", what, base);
    snprintf(label, sizeof label, "out %s %s", what, base);
    CHECK_CLOSE(label, a->out, b->out, a->out_n, tol.rtol, tol.atol);
    snprintf(label, sizeof label, "lse %s", what);
    CHECK_CLOSE(label, a->lse, b->lse, a->nl, tol.lse_rtol, tol.lse_atol);
    if (!backward) return;
    snprintf(label, sizeof label, "dq dk dv %s", what);
    CHECK_CLOSE(label, a->grad, b->grad, a->qkv_n, tol.rtol, tol.atol);
    if (!a->dr) return;
    const double atol = tol.rel_atol > 0 ? tol.rel_atol : tol.atol;
    snprintf(label, sizeof label, "dr %s", what);
    CHECK_CLOSE(label, a->dr, b->dr, a->nr, tol.rtol, atol);
    snprintf(label, sizeof label, "du %s", what);
    CHECK_CLOSE(label, a->du, b->du, a->nu, tol.rtol, atol);
    snprintf(label, sizeof label, "dv(bias) %s", what);
    CHECK_CLOSE(label, a->dvb, b->dvb, a->nu, tol.rtol, atol);
}

/* Kind a equals kind b (usually full) on this case: the same data through both (b gets a's inputs). */
KIT_FN void kit_check_same(const kit_kind *a, const kit_kind *b, kit_case c, kit_tol tol, int backward) {
    kit_problem *pa = kit_problem_new(a, &c, KIT_THREADS), *pb = kit_problem_new(b, &c, KIT_THREADS);
    memcpy(pb->qkv, pa->qkv, pa->qkv_n * sizeof(float)), memcpy(pb->dout, pa->dout, pa->out_n * sizeof(float));
    if (pa->rel.r) {
        memcpy(pb->r, pa->r, pa->nr * sizeof(float));
        memcpy(pb->u, pa->u, pa->nu * sizeof(float)), memcpy(pb->vb, pa->vb, pa->nu * sizeof(float));
    }
    char what[64];
    snprintf(what, sizeof what, "vs %s", b->kind->name);
    if (backward) kit_run(pa), kit_run(pb);
    else kit_forward(pa), kit_forward(pb);
    kit_compare_runs(pa, pb, tol, backward, what);
    kit_problem_free(pa), kit_problem_free(pb);
}

/* Every case of a list through kit_check_fast, verbose. */
KIT_FN void kit_check_fast_cases(const kit_kind *kk, const kit_case *cases, size_t n, kit_tol tol) {
    for (size_t i = 0; i < n; i++) kit_check_fast(kk, cases[i], tol, 1);
}

KIT_FN void kit_check_reference_cases(const kit_kind *kk, const kit_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) kit_check_reference_gradients(kk, cases[i]);
}

/* A sweep over a kind's first parameter x T x M (x causal, or causal with relative positions), D and
 * (B, H) cycling (B H = 1 is below the 2 threads); quiet but for a summary line. */
KIT_FN void kit_sweep(const kit_kind *kk, const int *params, int n_params, int rel, kit_tol tol) {
    const int Ts[] = {1, 5, 65, 130}, Ms[] = {0, 7, 70}, Ds[] = {3, 16, 64}, BH[][2] = {{1, 1}, {2, 1}, {1, 3}, {2, 2}};
    int n = 0, passed = 0;
    for (int ip = 0; ip < n_params; ip++)
        for (int it = 0; it < 4; it++)
            for (int im = 0; im < 3; im++)
                for (int causal = rel; causal < 2; causal++, n++) {
                    const kit_case c = {BH[n % 4][0], BH[n % 4][1], Ts[it], Ms[im], Ds[(rel ? n / 3 : n / 2) % 3], causal,
                                        {params[ip]}, rel};
                    passed += kit_check_fast(kk, c, tol, 0);
                }
    printf("  %d of %d %scases match the reference (rtol %.0e, atol %.0e x tensor scale)\n", passed, n, rel ? "rel " : "",
           tol.rtol, tol.atol);
}

/* ---------------------------------------------------------------- the suite of one-parameter kinds */

/* block and strided: one integer parameter (p[0]), both directions, memory, and with causal heads
 * Transformer-XL relative positions; the row engine of block.h. kit_run_param_suite runs these tests
 * under their usual names for kit_suite. */
static const kit_kind *kit_suite __attribute__((unused));

KIT_FN void kit_suite_reference(void) {
    const kit_case cases[] = {{1, 2, 5, 2, 3, 1, {2}}, {2, 1, 5, 2, 3, 0, {3}}, {2, 1, 5, 2, 3, 1, {2}, 1},
                              {1, 2, 4, 0, 2, 1, {3}, 1}};
    kit_check_reference_cases(kit_suite, cases, sizeof cases / sizeof cases[0]);
}

static const int kit_suite_params[5] = {1, 3, 16, 64, 100};

KIT_FN void kit_suite_sweep(void) {
    const kit_tol tol = {1e-4, 2e-6};
    kit_sweep(kit_suite, kit_suite_params, 5, 0, tol);
    /* two cases in full, so the log shows the margins */
    kit_check_fast(kit_suite, (kit_case){1, 2, 130, 70, 64, 1, {16}}, tol, 1);
    kit_check_fast(kit_suite, (kit_case){2, 1, 65, 7, 3, 0, {3}}, tol, 1);
}

/* Relative positions to 1e-5 relative. The absolute floor is for entries whose exact value is 0 by
 * cancellation (a query that sees one key has dS = P (dP - Delta) = 0): there the fp32 rounding of dP, a
 * D-term dot, shows, times |k + r| in dq and |q + u| in dk. */
KIT_FN void kit_suite_sweep_rel(void) {
    const kit_tol tol = {1e-5, 5e-6, .rel_noise = 1};
    kit_sweep(kit_suite, kit_suite_params, 5, 1, tol);
    const kit_case cases[] = {{1, 2, 130, 70, 64, 1, {16}, 1}, {2, 1, 130, 0, 24, 1, {100}, 1},
                              {1, 3, 65, 0, 64, 1, {1000}, 1}, {2, 2, 300, 50, 16, 1, {7}, 1}};
    kit_check_fast_cases(kit_suite, cases, 4, tol);
}

KIT_FN void kit_suite_determinism(void) {
    for (int run = 0; run < 6; run++) { /* runs 4, 5: relative positions */
        const int causal = run >= 4 || run % 2, param = run < 2 || run == 4 ? 16 : 3;
        kit_check_determinism(kit_suite, (kit_case){2, 3, 130, 70, 24, causal, {param}, run >= 4});
    }
}

KIT_FN void kit_suite_empty(void) { kit_check_empty_segment(kit_suite, (kit_case){2, 2, 0, 5, 24, 1, {3}}); }

KIT_FN void kit_suite_empty_rel(void) { kit_check_empty_segment(kit_suite, (kit_case){2, 2, 0, 5, 24, 1, {3}, 1}); }

KIT_FN void kit_suite_rel_only_causal(void) {
    char err[256] = "";
    kit_problem *p = kit_problem_new(kit_suite, &(kit_case){1, 2, 130, 7, 16, 1, {16}, 1}, 2);
    const lc_attn_kind *k = kit_suite->kind;
    CHECK(kit_kind_check(k, &p->s, p->opts, NULL, err, sizeof err) == 0, "causal + rel rejected: %s", err);
    p->s.causal = 0;
    err[0] = 0;
    CHECK(kit_kind_check(k, &p->s, p->opts, NULL, err, sizeof err) == -1 && strstr(err, "causal") != NULL,
          "bidirectional + rel: want an error naming causal, got '%s'", err);
    p->s.causal = 1, p->s.relpos = 0, p->s.window = 32;
    CHECK(kit_kind_check(k, &p->s, p->opts, NULL, err, sizeof err) == -1, "a window must stay rejected");
    kit_problem_free(p);
}

/* O(B H T + threads x tile): never a T x S matrix, whatever the parameter or the memory. The tile part
 * includes, per thread, up to one head's dq for the one-pass backward of the full and block kinds:
 * at most 65,536 + 4 x 64 floats (FULL_ONE_PASS_MAX_FLOATS, src/attn/full_tile.h). */
KIT_FN void kit_suite_workspace(void) {
    const int params[] = {1, 3, 64, 256, 100000}, Ts[] = {1024, 16384}, Ms[] = {0, 100000};
    unsigned char opts[LC_ATTN_OPTS_BYTES];
    for (int ip = 0; ip < 5; ip++)
        for (int it = 0; it < 2; it++)
            for (int im = 0; im < 2; im++) {
                const kit_case c = {1, 8, Ts[it], Ms[im], 64, 1, {params[ip]}};
                kit_suite->opts(&c, opts);
                lc_attn_shape s = {1, 8, Ts[it], Ms[im], 64, 1, 0.125f, 0, 0, 2};
                const size_t floats = kit_suite->kind->workspace_floats(&s, opts);
                const size_t bound = (size_t)s.B * s.H * s.T + 2 * (size_t)s.T + 2 * 64 * 1024 + 2 * (65536 + 4 * 64 + 16);
                CHECK(floats <= bound, "T %d M %d param %d: %zu floats > %zu", c.T, c.M, c.p[0], floats, bound);
                /* relative positions add per thread a few tiles and one head's dr, dk, dv (S rows each), and
                 * may gather the r rows a pattern needs: O(B H T + (threads + H) S D) */
                s.relpos = 1;
                const size_t rel_floats = kit_suite->kind->workspace_floats(&s, opts), S = (size_t)s.M + s.T;
                const size_t rel_bound = 2 * (size_t)s.B * s.H * s.T + 2 * (size_t)s.T + 2 * 64 * 1024 +
                                         (2 * 3 + 2 * (size_t)s.H + 2) * (S + 256) * 64 + 2 * 64 * 1024;
                CHECK(rel_floats >= floats && rel_floats <= rel_bound, "rel T %d M %d param %d: %zu floats > %zu",
                      c.T, c.M, c.p[0], rel_floats, rel_bound);
            }
}

/* Runs the suite for kk, each test under its name. */
KIT_FN void kit_run_param_suite(const kit_kind *kk) {
    kit_suite = kk;
    void (*reference_backward_matches_finite_differences)(void) = kit_suite_reference;
    void (*fast_matches_reference_across_shapes)(void) = kit_suite_sweep;
    void (*fast_matches_reference_with_relative_positions)(void) = kit_suite_sweep_rel;
    void (*runs_are_bit_identical_across_repeats_and_thread_counts)(void) = kit_suite_determinism;
    void (*empty_segment_writes_zero_memory_gradients)(void) = kit_suite_empty;
    void (*empty_segment_with_relative_positions_writes_zero_gradients)(void) = kit_suite_empty_rel;
    void (*check_accepts_relative_positions_only_when_causal)(void) = kit_suite_rel_only_causal;
    void (*workspace_stays_within_row_statistics_and_per_thread_tiles)(void) = kit_suite_workspace;
    RUN(reference_backward_matches_finite_differences);
    RUN(fast_matches_reference_across_shapes);
    RUN(fast_matches_reference_with_relative_positions);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(empty_segment_writes_zero_memory_gradients);
    RUN(empty_segment_with_relative_positions_writes_zero_gradients);
    RUN(check_accepts_relative_positions_only_when_causal);
    RUN(workspace_stays_within_row_statistics_and_per_thread_tiles);
}

/* ---------------------------------------------------------------- fixtures */

/* Reads tensor prefix+name of a fixture (a failed read is a failed check). */
KIT_FN int kit_st_read(lc_st_file *f, const char *prefix, const char *name, lc_dtype dt, int ndim, const long *shape,
                       void *dst) {
    char key[64];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const lc_status st = lc_st_read(f, key, dt, ndim, shape, dst);
    CHECK(st == LC_OK, "%s", lc_last_error());
    return st == LC_OK;
}

/* Opens LC_FIXTURES/name and calls each_case for every prefix "x." of the comma-separated metadata
 * `cases` (or of `fixed`, when given). */
KIT_FN void kit_fixture_cases(const char *name, const char *fixed, void (*each_case)(lc_st_file *f, const char *prefix)) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", LC_FIXTURES, name);
    lc_st_file *f;
    const lc_status st = lc_st_open(path, &f);
    CHECK(st == LC_OK, "open %s: %s", path, lc_last_error());
    if (st) return;
    const char *cases = fixed ? fixed : lc_st_get_meta(f, "cases");
    CHECK(cases && *cases, "%s: no cases", path);
    for (const char *c = cases; c && *c; c++) {
        if (*c == ',') continue;
        char prefix[64];
        size_t n = 0;
        while (c[n] && c[n] != ',' && n < sizeof prefix - 2) n++;
        memcpy(prefix, c, n);
        prefix[n] = 0;
        if (n == 1) strcat(prefix, ".");
        each_case(f, prefix);
        c += n - 1;
    }
    lc_st_close(f);
}

#endif
