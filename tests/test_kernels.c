/* Tests of the non-gemm kernels. For each op: the double _ref backward against central finite differences
 * (tiny shapes, random inputs never zero), then the fast fp32 forward/backward against the _ref, with
 * gradient buffers pre-filled to check the "accumulates (+=)" contract. Plus dropout's mask properties,
 * AdamW against a hand-computed double step, and determinism of the reductions. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "core/table.h"
#include "core/threads.h"
#include "harness.h"
#include "kernels/kernels.h"

#define FD_STEP 1e-6
#define FD_RTOL 1e-6
#define FD_ATOL 1e-7

static lc_rng rng;

/* ---- helpers ---- */

/* Uniform in +-[lo, hi): random sign, never zero for lo > 0. */
static double signed_uniform(double lo, double hi) {
    double u = lo + (hi - lo) * lc_rng_uniform(&rng);
    return lc_rng_uniform(&rng) < 0.5f ? -u : u;
}

static double *dalloc(size_t n) {
    double *p = lc_alloc_aligned(n * sizeof(double));
    if (!p) abort();
    return p;
}

static float *falloc(size_t n) {
    float *p = lc_alloc_aligned(n * sizeof(float));
    if (!p) abort();
    return p;
}

/* x (float) and xd (its exact double copy) filled with signed_uniform(lo, hi) + offset. */
static void fill_pair(float *x, double *xd, size_t n, double lo, double hi, double offset) {
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(signed_uniform(lo, hi) + offset);
        if (xd) xd[i] = x[i];
    }
}

static void fill_random(double *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = signed_uniform(lo, hi);
}

/* Double copy of a float array (for pre-filled gradient buffers). */
static double *to_double(const float *x, size_t n) {
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static double dot(const double *a, const double *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Central finite differences of loss(ctx) with respect to every element of x. */
typedef double (*loss_fn)(void *ctx);

static void fd_gradient(loss_fn loss, void *ctx, double *x, size_t n, double *grad) {
    for (size_t i = 0; i < n; i++) {
        double saved = x[i];
        x[i] = saved + FD_STEP;
        double plus = loss(ctx);
        x[i] = saved - FD_STEP;
        double minus = loss(ctx);
        x[i] = saved;
        grad[i] = (plus - minus) / (2 * FD_STEP);
    }
}

/* Checks that acc - prefill (what a += backward added) matches the finite-difference gradient of x. */
static void check_fd(const char *label, loss_fn loss, void *ctx, double *x, const double *acc,
                     const double *prefill, size_t n) {
    double *fd = dalloc(n), *added = dalloc(n);
    fd_gradient(loss, ctx, x, n, fd);
    for (size_t i = 0; i < n; i++) added[i] = acc[i] - prefill[i];
    CHECK_CLOSE(label, added, fd, n, FD_RTOL, FD_ATOL);
    lc_free(fd), lc_free(added);
}

/* ---- linear ---- */

typedef struct {
    double *inp, *w, *b, *g, *out;
    int n, in, out_dim;
} linear_ctx;

static double linear_loss(void *p) {
    linear_ctx *c = p;
    lc_linear_forward_ref(c->out, c->inp, c->w, c->b, c->n, c->in, c->out_dim);
    return dot(c->out, c->g, (size_t)c->n * c->out_dim);
}

TEST(linear_ref_backward_matches_finite_differences) {
    linear_ctx c = {.n = 3, .in = 4, .out_dim = 5};
    size_t ni = 12, nw = 20, no = 15;
    c.inp = dalloc(ni), c.w = dalloc(nw), c.b = dalloc(5), c.g = dalloc(no), c.out = dalloc(no);
    fill_random(c.inp, ni, 0.1, 1), fill_random(c.w, nw, 0.1, 1), fill_random(c.b, 5, 0.1, 1);
    fill_random(c.g, no, 0.1, 1);
    double *pre_i = dalloc(ni), *pre_w = dalloc(nw), *pre_b = dalloc(5);
    fill_random(pre_i, ni, 0.1, 1), fill_random(pre_w, nw, 0.1, 1), fill_random(pre_b, 5, 0.1, 1);
    double *di = dalloc(ni), *dw = dalloc(nw), *db = dalloc(5);
    memcpy(di, pre_i, ni * 8), memcpy(dw, pre_w, nw * 8), memcpy(db, pre_b, 5 * 8);
    lc_linear_backward_ref(di, dw, db, c.g, c.inp, c.w, c.n, c.in, c.out_dim);
    check_fd("linear_ref dinp vs fd", linear_loss, &c, c.inp, di, pre_i, ni);
    check_fd("linear_ref dw vs fd", linear_loss, &c, c.w, dw, pre_w, nw);
    check_fd("linear_ref db vs fd", linear_loss, &c, c.b, db, pre_b, 5);
    lc_free(c.inp), lc_free(c.w), lc_free(c.b), lc_free(c.g), lc_free(c.out);
    lc_free(pre_i), lc_free(pre_w), lc_free(pre_b), lc_free(di), lc_free(dw), lc_free(db);
}

/* Fast forward/backward against the reference; backward split over two calls with NULL gradients to
 * check both the NULL skipping and the accumulation. */
static void check_linear_fast(int n, int in, int out, int with_bias) {
    size_t ni = (size_t)n * in, nw = (size_t)out * in, no = (size_t)n * out;
    float *x = falloc(ni), *w = falloc(nw), *b = falloc(out), *y = falloc(no), *g = falloc(no);
    double *xd = dalloc(ni), *wd = dalloc(nw), *bd = dalloc(out), *yd = dalloc(no), *gd = dalloc(no);
    fill_pair(x, xd, ni, 0.1, 1, 0), fill_pair(w, wd, nw, 0.1, 1, 0), fill_pair(b, bd, out, 0.1, 1, 0);
    fill_pair(g, gd, no, 0.1, 1, 0);
    lc_linear_forward(y, x, w, with_bias ? b : NULL, n, in, out);
    lc_linear_forward_ref(yd, xd, wd, with_bias ? bd : NULL, n, in, out);
    CHECK_CLOSE("linear forward", y, yd, no, 1e-4, 1e-5);
    float *di = falloc(ni), *dw = falloc(nw), *db = falloc(out);
    fill_pair(di, NULL, ni, 0.1, 1, 0), fill_pair(dw, NULL, nw, 0.1, 1, 0), fill_pair(db, NULL, out, 0.1, 1, 0);
    double *did = to_double(di, ni), *dwd = to_double(dw, nw), *dbd = to_double(db, out);
    lc_linear_backward(di, NULL, NULL, g, x, w, n, in, out);
    lc_linear_backward(NULL, dw, db, g, x, w, n, in, out);
    lc_linear_backward_ref(did, dwd, dbd, gd, xd, wd, n, in, out);
    CHECK_CLOSE("linear backward dinp (+=)", di, did, ni, 1e-4, 1e-5);
    CHECK_CLOSE("linear backward dw (+=)", dw, dwd, nw, 1e-4, 1e-5);
    CHECK_CLOSE("linear backward db (+=)", db, dbd, out, 1e-4, 1e-5);
    lc_free(x), lc_free(w), lc_free(b), lc_free(y), lc_free(g), lc_free(xd), lc_free(wd), lc_free(bd);
    lc_free(yd), lc_free(gd), lc_free(di), lc_free(dw), lc_free(db), lc_free(did), lc_free(dwd), lc_free(dbd);
}

TEST(linear_fast_matches_ref) {
    check_linear_fast(37, 19, 23, 1);
    check_linear_fast(130, 40, 150, 1); /* large enough for the parallel bias paths */
    check_linear_fast(5, 8, 3, 0);
}

/* ---- layernorm ---- */

typedef struct {
    double *inp, *w, *b, *g, *out, *mean, *rstd;
    int n, c;
} layernorm_ctx;

static double layernorm_loss(void *p) {
    layernorm_ctx *c = p;
    lc_layernorm_forward_ref(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->n, c->c, 1e-5);
    return dot(c->out, c->g, (size_t)c->n * c->c);
}

TEST(layernorm_ref_backward_matches_finite_differences) {
    layernorm_ctx c = {.n = 3, .c = 7};
    size_t nx = 21;
    c.inp = dalloc(nx), c.w = dalloc(7), c.b = dalloc(7), c.g = dalloc(nx), c.out = dalloc(nx);
    c.mean = dalloc(3), c.rstd = dalloc(3);
    fill_random(c.inp, nx, 0.1, 1), fill_random(c.w, 7, 0.1, 1), fill_random(c.b, 7, 0.1, 1);
    fill_random(c.g, nx, 0.1, 1);
    double *pre_x = dalloc(nx), *pre_w = dalloc(7), *pre_b = dalloc(7);
    fill_random(pre_x, nx, 0.1, 1), fill_random(pre_w, 7, 0.1, 1), fill_random(pre_b, 7, 0.1, 1);
    double *dx = dalloc(nx), *dw = dalloc(7), *db = dalloc(7);
    memcpy(dx, pre_x, nx * 8), memcpy(dw, pre_w, 7 * 8), memcpy(db, pre_b, 7 * 8);
    layernorm_loss(&c); /* mean and rstd at the unperturbed point */
    lc_layernorm_backward_ref(dx, dw, db, c.g, c.inp, c.w, c.mean, c.rstd, c.n, c.c);
    check_fd("layernorm_ref dinp vs fd", layernorm_loss, &c, c.inp, dx, pre_x, nx);
    check_fd("layernorm_ref dw vs fd", layernorm_loss, &c, c.w, dw, pre_w, 7);
    check_fd("layernorm_ref db vs fd", layernorm_loss, &c, c.b, db, pre_b, 7);
    lc_free(c.inp), lc_free(c.w), lc_free(c.b), lc_free(c.g), lc_free(c.out), lc_free(c.mean), lc_free(c.rstd);
    lc_free(pre_x), lc_free(pre_w), lc_free(pre_b), lc_free(dx), lc_free(dw), lc_free(db);
}

static void check_layernorm_fast(int n, int c, double offset) {
    size_t nx = (size_t)n * c;
    float *x = falloc(nx), *w = falloc(c), *b = falloc(c), *y = falloc(nx), *g = falloc(nx);
    float *mean = falloc(n), *rstd = falloc(n);
    double *xd = dalloc(nx), *wd = dalloc(c), *bd = dalloc(c), *yd = dalloc(nx), *gd = dalloc(nx);
    double *meand = dalloc(n), *rstdd = dalloc(n);
    fill_pair(x, xd, nx, 0.1, 1, offset), fill_pair(w, wd, c, 0.1, 1, 0), fill_pair(b, bd, c, 0.1, 1, 0);
    fill_pair(g, gd, nx, 0.1, 1, 0);
    lc_layernorm_forward(y, mean, rstd, x, w, b, n, c, 1e-5f);
    lc_layernorm_forward_ref(yd, meand, rstdd, xd, wd, bd, n, c, 1e-5);
    CHECK_CLOSE("layernorm forward out", y, yd, nx, 1e-4, 1e-5);
    CHECK_CLOSE("layernorm forward mean", mean, meand, n, 1e-5, 1e-6);
    CHECK_CLOSE("layernorm forward rstd", rstd, rstdd, n, 1e-5, 1e-6);
    float *dx = falloc(nx), *dw = falloc(c), *db = falloc(c);
    fill_pair(dx, NULL, nx, 0.1, 1, 0), fill_pair(dw, NULL, c, 0.1, 1, 0), fill_pair(db, NULL, c, 0.1, 1, 0);
    double *dxd = to_double(dx, nx), *dwd = to_double(dw, c), *dbd = to_double(db, c);
    lc_layernorm_backward(dx, dw, db, g, x, w, mean, rstd, n, c);
    lc_layernorm_backward_ref(dxd, dwd, dbd, gd, xd, wd, meand, rstdd, n, c);
    CHECK_CLOSE("layernorm backward dinp (+=)", dx, dxd, nx, 1e-4, 1e-5);
    CHECK_CLOSE("layernorm backward dw (+=)", dw, dwd, c, 1e-4, 1e-5);
    CHECK_CLOSE("layernorm backward db (+=)", db, dbd, c, 1e-4, 1e-5);
    lc_free(x), lc_free(w), lc_free(b), lc_free(y), lc_free(g), lc_free(mean), lc_free(rstd), lc_free(xd);
    lc_free(wd), lc_free(bd), lc_free(yd), lc_free(gd), lc_free(meand), lc_free(rstdd), lc_free(dx), lc_free(dw);
    lc_free(db), lc_free(dxd), lc_free(dwd), lc_free(dbd);
}

TEST(layernorm_fast_matches_ref) {
    check_layernorm_fast(5, 13, 0.0);
    check_layernorm_fast(70, 300, 3.0); /* parallel paths; a mean far from zero */
}

/* dw/db are reduced over rows; two runs with the same thread count must agree bit for bit. */
TEST(layernorm_param_grads_repeatable) {
    int n = 200, c = 96;
    size_t nx = (size_t)n * c;
    float *x = falloc(nx), *w = falloc(c), *g = falloc(nx), *mean = falloc(n), *rstd = falloc(n), *y = falloc(nx);
    float *dw1 = falloc(c), *db1 = falloc(c), *dw2 = falloc(c), *db2 = falloc(c);
    fill_pair(x, NULL, nx, 0.1, 1, 0), fill_pair(w, NULL, c, 0.1, 1, 0), fill_pair(g, NULL, nx, 0.1, 1, 0);
    lc_layernorm_forward(y, mean, rstd, x, w, w, n, c, 1e-5f);
    lc_layernorm_backward(NULL, dw1, db1, g, x, w, mean, rstd, n, c);
    lc_layernorm_backward(NULL, dw2, db2, g, x, w, mean, rstd, n, c);
    CHECK(memcmp(dw1, dw2, c * sizeof(float)) == 0 && memcmp(db1, db2, c * sizeof(float)) == 0,
          "dw/db differ between two identical runs");
    lc_free(x), lc_free(w), lc_free(g), lc_free(mean), lc_free(rstd), lc_free(y);
    lc_free(dw1), lc_free(db1), lc_free(dw2), lc_free(db2);
}

/* ---- activations ---- */

typedef void (*act_fwd_ref)(double *, const double *, size_t);
typedef void (*act_bwd_ref)(double *, const double *, const double *, size_t);
typedef void (*act_fwd)(float *, const float *, size_t);
typedef void (*act_bwd)(float *, const float *, const float *, size_t);

typedef struct {
    act_fwd_ref forward;
    double *inp, *g, *out;
    size_t n;
} act_ctx;

static double act_loss(void *p) {
    act_ctx *c = p;
    c->forward(c->out, c->inp, c->n);
    return dot(c->out, c->g, c->n);
}

static void check_activation_fd(const char *label, act_fwd_ref fwd, act_bwd_ref bwd) {
    size_t n = 16;
    act_ctx c = {fwd, dalloc(n), dalloc(n), dalloc(n), n};
    fill_random(c.inp, n, 0.1, 3), fill_random(c.g, n, 0.1, 1);
    double *pre = dalloc(n), *dx = dalloc(n);
    fill_random(pre, n, 0.1, 1);
    memcpy(dx, pre, n * 8);
    bwd(dx, c.inp, c.g, n);
    check_fd(label, act_loss, &c, c.inp, dx, pre, n);
    lc_free(c.inp), lc_free(c.g), lc_free(c.out), lc_free(pre), lc_free(dx);
}

TEST(activations_ref_backward_match_finite_differences) {
    check_activation_fd("gelu_ref dinp vs fd", lc_gelu_forward_ref, lc_gelu_backward_ref);
    check_activation_fd("relu_ref dinp vs fd", lc_relu_forward_ref, lc_relu_backward_ref);
}

static void check_activation_fast(const char *name, act_fwd fwd, act_bwd bwd, act_fwd_ref fwd_ref,
                                  act_bwd_ref bwd_ref) {
    size_t n = 50000; /* above the parallel threshold */
    float *x = falloc(n), *y = falloc(n), *g = falloc(n), *dx = falloc(n);
    double *xd = dalloc(n), *yd = dalloc(n), *gd = dalloc(n);
    fill_pair(x, xd, n, 0.1, 3, 0), fill_pair(g, gd, n, 0.1, 1, 0), fill_pair(dx, NULL, n, 0.1, 1, 0);
    double *dxd = to_double(dx, n);
    char label[64];
    fwd(y, x, n);
    fwd_ref(yd, xd, n);
    snprintf(label, sizeof label, "%s forward", name);
    CHECK_CLOSE(label, y, yd, n, 1e-4, 1e-6);
    bwd(dx, x, g, n);
    bwd_ref(dxd, xd, gd, n);
    snprintf(label, sizeof label, "%s backward dinp (+=)", name);
    CHECK_CLOSE(label, dx, dxd, n, 1e-4, 1e-6);
    lc_free(x), lc_free(y), lc_free(g), lc_free(dx), lc_free(xd), lc_free(yd), lc_free(gd), lc_free(dxd);
}

TEST(activations_fast_match_ref) {
    check_activation_fast("gelu", lc_gelu_forward, lc_gelu_backward, lc_gelu_forward_ref, lc_gelu_backward_ref);
    check_activation_fast("relu", lc_relu_forward, lc_relu_backward, lc_relu_forward_ref, lc_relu_backward_ref);
}

/* ---- cross-entropy ---- */

typedef struct {
    double *logits, *losses, scale;
    const int *targets;
    int n, V;
} xent_ctx;

static double xent_loss(void *p) {
    xent_ctx *c = p;
    return c->scale * lc_xent_forward_ref(c->losses, c->logits, c->targets, c->n, c->V);
}

TEST(xent_ref_backward_matches_finite_differences) {
    static const int targets[4] = {2, -1, 0, 4};
    xent_ctx c = {dalloc(20), dalloc(4), 0.5, targets, 4, 5};
    fill_random(c.logits, 20, 0.1, 2);
    double *d = dalloc(20), *zero = dalloc(20);
    for (int i = 0; i < 20; i++) d[i] = NAN; /* backward writes: old contents must not matter */
    lc_xent_backward_ref(d, c.logits, targets, c.n, c.V, c.scale);
    check_fd("xent_ref dlogits vs fd (scale 0.5)", xent_loss, &c, c.logits, d, zero, 20);
    lc_free(c.logits), lc_free(c.losses), lc_free(d), lc_free(zero);
}

/* Reference log-sum-exp of one row, for checking the saved lse. */
static double row_lse(const double *x, int V) {
    double max = x[0], sum = 0;
    for (int j = 1; j < V; j++) max = fmax(max, x[j]);
    for (int j = 0; j < V; j++) sum += exp(x[j] - max);
    return max + log(sum);
}

TEST(xent_fast_matches_ref) {
    int n = 40, V = 500;
    size_t nl = (size_t)n * V;
    float *x = falloc(nl), *losses = falloc(n), *lse = falloc(n), *d = falloc(nl);
    double *xd = dalloc(nl), *lossesd = dalloc(n), *lsed = dalloc(n), *dd = dalloc(nl);
    int *targets = malloc(n * sizeof *targets);
    fill_pair(x, xd, nl, 0.1, 5, 0);
    for (int j = 0; j < V; j++) x[3 * V + j] += 80.0f, xd[3 * V + j] = x[3 * V + j]; /* exp would overflow */
    for (int r = 0; r < n; r++) targets[r] = r % 7 == 5 ? -1 : (int)lc_rng_below(&rng, (uint32_t)V);
    for (int r = 0; r < n; r++) lsed[r] = row_lse(xd + (size_t)r * V, V);
    double total = lc_xent_forward(losses, lse, x, targets, n, V);
    double totald = lc_xent_forward_ref(lossesd, xd, targets, n, V);
    CHECK_CLOSE("xent forward losses", losses, lossesd, n, 1e-5, 1e-5);
    CHECK_CLOSE("xent forward lse", lse, lsed, n, 1e-6, 1e-6);
    CHECK_CLOSE("xent forward total", &total, &totald, 1, 1e-5, 0);
    for (size_t i = 0; i < nl; i++) d[i] = NAN; /* backward writes */
    lc_xent_backward(d, x, lse, targets, n, V, 0.25f);
    lc_xent_backward_ref(dd, xd, targets, n, V, 0.25);
    CHECK_CLOSE("xent backward dlogits", d, dd, nl, 1e-4, 1e-7);
    lc_free(x), lc_free(losses), lc_free(lse), lc_free(d), lc_free(xd), lc_free(lossesd), lc_free(lsed);
    lc_free(dd), free(targets);
}

/* ---- dropout ---- */

TEST(dropout_mask_scale_and_replay) {
    size_t n = 100000;
    float p = 0.25f, scale = 1.0f / (1.0f - p);
    float *x = falloc(n), *y = falloc(n), *g = falloc(n), *dx = falloc(n);
    fill_pair(x, NULL, n, 0.1, 1, 0), fill_pair(g, NULL, n, 0.1, 1, 0);
    lc_dropout_forward(y, x, n, p, 42);
    lc_dropout_backward(dx, g, n, p, 42);
    size_t kept = 0, bad_mask = 0, bad_scale = 0, bad_replay = 0;
    for (size_t i = 0; i < n; i++) {
        int keep = y[i] != 0;
        kept += keep;
        bad_mask += keep != (lc_hash_uniform(42, i) >= p); /* the contract's definition of the mask */
        bad_scale += keep ? y[i] != x[i] * scale : 0;
        bad_replay += keep ? dx[i] != g[i] * scale : dx[i] != 0;
    }
    double frac = (double)kept / n;
    CHECK(fabs(frac - (1 - p)) < 0.01, "kept fraction %.4f, want %.2f", frac, 1 - p);
    CHECK(bad_mask == 0, "%zu elements disagree with lc_hash_uniform(seed, i) >= p", bad_mask);
    CHECK(bad_scale == 0, "%zu kept values not scaled by 1/(1-p)", bad_scale);
    CHECK(bad_replay == 0, "%zu backward values disagree with the forward mask", bad_replay);
    lc_free(x), lc_free(y), lc_free(g), lc_free(dx);
}

TEST(dropout_independent_of_threads_and_in_place) {
    size_t n = 100000;
    float *x = falloc(n), *y1 = falloc(n), *y2 = falloc(n), *copy = falloc(n);
    fill_pair(x, NULL, n, 0.1, 1, 0);
    lc_threads_use(1);
    lc_dropout_forward(y1, x, n, 0.1f, 7);
    lc_threads_use(2);
    lc_dropout_forward(y2, x, n, 0.1f, 7);
    lc_threads_use(0);
    CHECK(memcmp(y1, y2, n * sizeof(float)) == 0, "mask differs between 1 and 2 threads");
    memcpy(copy, x, n * sizeof(float));
    lc_dropout_forward(copy, copy, n, 0.1f, 7);
    CHECK(memcmp(copy, y1, n * sizeof(float)) == 0, "in-place forward differs");
    lc_dropout_forward(y1, x, n, 0.0f, 7);
    CHECK(memcmp(y1, x, n * sizeof(float)) == 0, "p = 0 must copy");
    lc_free(x), lc_free(y1), lc_free(y2), lc_free(copy);
}

/* ---- optimizer and reductions ---- */

/* One step of torch.optim.AdamW written out in double. */
static void adamw_step_double(double *p, double g, double *m, double *v, double lr, double b1, double b2,
                              double eps, double wd, int t) {
    *p *= 1 - lr * wd;
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    double step_size = lr / (1 - pow(b1, t));
    double denom = sqrt(*v) / sqrt(1 - pow(b2, t)) + eps;
    *p -= step_size * *m / denom;
}

TEST(adamw_matches_hand_computed_steps) {
    size_t n = 40000; /* above the parallel threshold */
    float *p = falloc(n), *g = falloc(n), *m = falloc(n), *v = falloc(n);
    double *pd = dalloc(n), *md = dalloc(n), *vd = dalloc(n);
    fill_pair(p, pd, n, 0.1, 1, 0);
    for (int t = 1; t <= 3; t++) {
        fill_pair(g, NULL, n, 0.01, 1, 0);
        lc_adamw_update(p, g, m, v, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, t);
        for (size_t i = 0; i < n; i++)
            adamw_step_double(&pd[i], g[i], &md[i], &vd[i], 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, t);
    }
    CHECK_CLOSE("adamw params after 3 steps", p, pd, n, 1e-6, 1e-7);
    CHECK_CLOSE("adamw first moment", m, md, n, 1e-5, 1e-7);
    CHECK_CLOSE("adamw second moment", v, vd, n, 1e-5, 1e-9);
    /* A single element by hand: p=1, g=0.5, fresh moments, t=1: mhat = g, vhat = g^2, so
     * p = 1*(1 - 0.01*0.1) - 0.01 * 0.5 / (0.5 + 1e-8). */
    float p1 = 1, g1 = 0.5f, m1 = 0, v1 = 0;
    lc_adamw_update(&p1, &g1, &m1, &v1, 1, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 1);
    double want = 0.999 - 0.01 * 0.5 / (0.5 + 1e-8);
    CHECK_CLOSE("adamw single hand step", &p1, &want, 1, 1e-6, 0);
    lc_free(p), lc_free(g), lc_free(m), lc_free(v), lc_free(pd), lc_free(md), lc_free(vd);
}

TEST(sum_squares_deterministic_and_accurate) {
    size_t n = 1000003;
    float *x = falloc(n);
    fill_pair(x, NULL, n, 0.1, 1, 0);
    double want = 0;
    for (size_t i = 0; i < n; i++) want += (double)x[i] * x[i];
    double first = lc_sum_squares(x, n), again = lc_sum_squares(x, n);
    CHECK(first == again, "repeated calls differ: %.17g vs %.17g", first, again);
    CHECK_CLOSE("sum_squares vs sequential double", &first, &want, 1, 1e-12, 0);
    lc_threads_use(1);
    double one_thread = lc_sum_squares(x, n);
    lc_threads_use(0);
    CHECK(one_thread == first, "1 thread gives %.17g, all threads %.17g", one_thread, first);
    float small[3] = {1, 2, 3};
    CHECK(lc_sum_squares(small, 3) == 14.0, "sum of squares of 1,2,3");
    lc_scale(small, 3, -2.0f);
    CHECK(small[0] == -2 && small[1] == -4 && small[2] == -6, "lc_scale");
    lc_free(x);
}

int main(void) {
    lc_rng_seed(&rng, 2024);
    lc_threads_use(0);
    RUN(linear_ref_backward_matches_finite_differences);
    RUN(linear_fast_matches_ref);
    RUN(layernorm_ref_backward_matches_finite_differences);
    RUN(layernorm_fast_matches_ref);
    RUN(layernorm_param_grads_repeatable);
    RUN(activations_ref_backward_match_finite_differences);
    RUN(activations_fast_match_ref);
    RUN(xent_ref_backward_matches_finite_differences);
    RUN(xent_fast_matches_ref);
    RUN(dropout_mask_scale_and_replay);
    RUN(dropout_independent_of_threads_and_in_place);
    RUN(adamw_matches_hand_computed_steps);
    RUN(sum_squares_deterministic_and_accurate);
    return test_summary("test_kernels");
}
