/* Cross-attention (src/attn/cross.c): the fast op against the double reference, the reference's
 * backward against central finite differences, bit-identical results for 1, 2 and 3 threads, key rows
 * that no pair reads left untouched, an exact-size workspace (ASan sees overruns) and the checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/cross.h"
#include "core/rng.h"
#include "harness.h"

enum { H = 3, D = 20, NQ = 30, NK = 10, LDQ = H * D + 3, LDK = H * D + 5, PAIRS = 5 };

static const int q_start[PAIRS] = {0, 5, 12, 12, 25}, q_len[PAIRS] = {5, 7, 0, 13, 5};
static const int kv_start[PAIRS] = {0, 2, 0, 3, 1}, kv_len[PAIRS] = {4, 7, 1, 6, 1}; /* overlapping; row 9 unread */

typedef struct {
    float q[NQ * LDQ], out[NQ * LDQ], dout[NQ * LDQ], dq[NQ * LDQ], lse[NQ * H];
    float k[NK * LDK], v[NK * LDK], dk[NK * LDK], dv[NK * LDK];
} problem;

static lc_cross_shape shape(int threads) {
    lc_cross_shape s = {H, D, 1.0f / sqrtf((float)D), PAIRS, q_start, q_len, kv_start, kv_len, threads};
    return s;
}

static void fill(float *x, size_t n, lc_rng *r, float mul) {
    for (size_t i = 0; i < n; i++) x[i] = mul * (2.0f * lc_rng_uniform(r) - 1.0f);
}

static problem *problem_new(uint64_t seed) {
    problem *p = calloc(1, sizeof *p);
    lc_rng r;
    lc_rng_seed(&r, seed);
    fill(p->q, NQ * LDQ, &r, 2.0f), fill(p->k, NK * LDK, &r, 2.0f), fill(p->v, NK * LDK, &r, 1.0f);
    fill(p->dout, NQ * LDQ, &r, 1.0f);
    for (int i = 0; i < NK * LDK; i++) p->dk[i] = p->dv[i] = 777.0f; /* sentinels: untouched unless written */
    return p;
}

static lc_cross_tensors views(problem *p) {
    lc_cross_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){p->q, 0, LDQ}, t.out = (lc_view){p->out, 0, LDQ}, t.dout = (lc_view){p->dout, 0, LDQ};
    t.dq = (lc_view){p->dq, 0, LDQ};
    t.k = (lc_view){p->k, 0, LDK}, t.v = (lc_view){p->v, 0, LDK}, t.dk = (lc_view){p->dk, 0, LDK};
    t.dv = (lc_view){p->dv, 0, LDK};
    t.lse = p->lse;
    return t;
}

static void run(problem *p, int threads) {
    const lc_cross_shape s = shape(threads);
    const size_t n = lc_cross_workspace(&s);
    float *work = malloc(n * sizeof(float)); /* exactly the size asked for */
    const lc_cross_tensors t = views(p);
    lc_cross_forward(&s, &t, work);
    lc_cross_backward(&s, &t, work);
    free(work);
}

typedef struct {
    double q[NQ * LDQ], out[NQ * LDQ], dout[NQ * LDQ], dq[NQ * LDQ];
    double k[NK * LDK], v[NK * LDK], dk[NK * LDK], dv[NK * LDK];
} problem_d;

static lc_cross_tensors_d views_d(problem_d *p) {
    lc_cross_tensors_d t;
    t.q = (lc_view_d){p->q, 0, LDQ}, t.out = (lc_view_d){p->out, 0, LDQ}, t.dout = (lc_view_d){p->dout, 0, LDQ};
    t.dq = (lc_view_d){p->dq, 0, LDQ};
    t.k = (lc_view_d){p->k, 0, LDK}, t.v = (lc_view_d){p->v, 0, LDK}, t.dk = (lc_view_d){p->dk, 0, LDK};
    t.dv = (lc_view_d){p->dv, 0, LDK};
    return t;
}

static problem_d *to_double(const problem *p) {
    problem_d *d = calloc(1, sizeof *d);
    for (int i = 0; i < NQ * LDQ; i++) d->q[i] = p->q[i], d->dout[i] = p->dout[i];
    for (int i = 0; i < NK * LDK; i++) d->k[i] = p->k[i], d->v[i] = p->v[i];
    return d;
}

/* The rows and columns the op defines: query rows of non-empty pairs, key rows some pair reads. */
static int query_row_used(int r) {
    for (int i = 0; i < PAIRS; i++)
        if (r >= q_start[i] && r < q_start[i] + q_len[i]) return 1;
    return 0;
}
static int key_row_used(int r) {
    for (int i = 0; i < PAIRS; i++)
        if (q_len[i] > 0 && r >= kv_start[i] && r < kv_start[i] + kv_len[i]) return 1;
    return 0;
}

/* Gathers the defined elements of a [rows][ld] tensor (float or double) into a dense double array. */
#define GATHER(dst, src, rows, ld, used)                                                                         \
    do {                                                                                                         \
        size_t n_ = 0;                                                                                           \
        for (int r_ = 0; r_ < (rows); r_++)                                                                      \
            if (used(r_))                                                                                        \
                for (int c_ = 0; c_ < H * D; c_++) (dst)[n_++] = (double)(src)[(size_t)r_ * (ld) + c_];          \
        (dst##_n) = n_;                                                                                          \
    } while (0)

TEST(fast_matches_double_reference) {
    problem *p = problem_new(11);
    run(p, 2);
    problem_d *d = to_double(p);
    const lc_cross_shape s = shape(1);
    const lc_cross_tensors_d t = views_d(d);
    lc_cross_forward_ref(&s, &t);
    lc_cross_backward_ref(&s, &t);
    static double got[NQ * LDQ], want[NQ * LDQ];
    size_t got_n, want_n;
    GATHER(got, p->out, NQ, LDQ, query_row_used);
    GATHER(want, d->out, NQ, LDQ, query_row_used);
    CHECK(got_n == want_n && got_n > 0, "rows");
    CHECK_CLOSE("out", got, want, got_n, 1e-5, 1e-6);
    GATHER(got, p->dq, NQ, LDQ, query_row_used);
    GATHER(want, d->dq, NQ, LDQ, query_row_used);
    CHECK_CLOSE("dq", got, want, got_n, 1e-4, 1e-6);
    GATHER(got, p->dk, NK, LDK, key_row_used);
    GATHER(want, d->dk, NK, LDK, key_row_used);
    CHECK_CLOSE("dk", got, want, got_n, 1e-4, 1e-6);
    GATHER(got, p->dv, NK, LDK, key_row_used);
    GATHER(want, d->dv, NK, LDK, key_row_used);
    CHECK_CLOSE("dv", got, want, got_n, 1e-5, 1e-6);
    /* lse against the reference's probabilities: log sum exp of the scores */
    double worst = 0;
    for (int i = 0; i < PAIRS; i++)
        for (int h = 0; h < H; h++)
            for (int r = q_start[i]; r < q_start[i] + q_len[i]; r++) {
                double m = -INFINITY, sum = 0, sc[NK];
                for (int j = 0; j < kv_len[i]; j++) {
                    double dot = 0;
                    for (int e = 0; e < D; e++) dot += d->q[r * LDQ + h * D + e] * d->k[(kv_start[i] + j) * LDK + h * D + e];
                    sc[j] = dot / sqrt((double)D);
                    m = sc[j] > m ? sc[j] : m;
                }
                for (int j = 0; j < kv_len[i]; j++) sum += exp(sc[j] - m);
                const double err = fabs(m + log(sum) - p->lse[r * H + h]);
                worst = err > worst ? err : worst;
            }
    CHECK(worst < 1e-5, "lse off by %g", worst);
    /* key row 9 is read by no pair, and the empty pair's key (row 0) is read by others anyway */
    for (int c = 0; c < LDK; c++) CHECK(p->dk[9 * LDK + c] == 777.0f && p->dv[9 * LDK + c] == 777.0f, "row 9 written");
    free(p), free(d);
}

/* Loss = sum over defined output elements of out * dout; its gradients are the backward's. */
static double loss_of(problem_d *d) {
    const lc_cross_shape s = shape(1);
    const lc_cross_tensors_d t = views_d(d);
    lc_cross_forward_ref(&s, &t);
    double l = 0;
    for (int r = 0; r < NQ; r++)
        if (query_row_used(r))
            for (int c = 0; c < H * D; c++) l += d->out[r * LDQ + c] * d->dout[r * LDQ + c];
    return l;
}

TEST(reference_backward_matches_finite_differences) {
    problem *p = problem_new(5);
    problem_d *d = to_double(p);
    const lc_cross_shape s = shape(1);
    const lc_cross_tensors_d t = views_d(d);
    lc_cross_forward_ref(&s, &t);
    lc_cross_backward_ref(&s, &t);
    const double eps = 1e-6;
    double worst = 0;
    int checked = 0;
    struct {
        double *x, *g;
        int rows, ld;
        int (*used)(int);
    } inputs[3] = {{d->q, d->dq, NQ, LDQ, query_row_used}, {d->k, d->dk, NK, LDK, key_row_used},
                   {d->v, d->dv, NK, LDK, key_row_used}};
    for (int which = 0; which < 3; which++)
        for (int r = 0; r < inputs[which].rows; r++) {
            if (!inputs[which].used(r)) continue;
            for (int c = r % 7; c < H * D; c += 7) {
                double *x = &inputs[which].x[r * inputs[which].ld + c];
                const double keep = *x;
                *x = keep + eps;
                const double up = loss_of(d);
                *x = keep - eps;
                const double down = loss_of(d);
                *x = keep;
                const double fd = (up - down) / (2 * eps), g = inputs[which].g[r * inputs[which].ld + c];
                const double err = fabs(fd - g) / (1e-6 + fabs(fd));
                worst = err > worst ? err : worst;
                checked++;
            }
        }
    CHECK(checked > 100 && worst < 1e-5, "%d checked, worst relative error %g", checked, worst);
    free(p), free(d);
}

TEST(bit_identical_for_every_thread_count) {
    problem *a = problem_new(3), *b = problem_new(3);
    run(a, 1);
    for (int threads = 2; threads <= 3; threads++) {
        memcpy(b, a, sizeof *b);
        memset(b->out, 0, sizeof b->out), memset(b->dq, 0, sizeof b->dq), memset(b->lse, 0, sizeof b->lse);
        for (int i = 0; i < NK * LDK; i++) b->dk[i] = b->dv[i] = 777.0f;
        run(b, threads);
        CHECK(memcmp(a->out, b->out, sizeof a->out) == 0 && memcmp(a->lse, b->lse, sizeof a->lse) == 0,
              "forward differs with %d threads", threads);
        CHECK(memcmp(a->dq, b->dq, sizeof a->dq) == 0 && memcmp(a->dk, b->dk, sizeof a->dk) == 0 &&
                  memcmp(a->dv, b->dv, sizeof a->dv) == 0,
              "backward differs with %d threads", threads);
    }
    free(a), free(b);
}

TEST(check_rejects_bad_pairs) {
    char err[256];
    lc_cross_shape s = shape(1);
    CHECK(lc_cross_check(&s, err, sizeof err) == 0, "%s", err);
    const int overlap_start[2] = {0, 3}, len[2] = {4, 4}, kvs[2] = {0, 0}, kvl[2] = {2, 2}, none[2] = {2, 0};
    lc_cross_shape o = {H, D, 1, 2, overlap_start, len, kvs, kvl, 1};
    CHECK(lc_cross_check(&o, err, sizeof err) == -1 && strstr(err, "overlap"), "overlap: %s", err);
    const int apart[2] = {0, 4};
    lc_cross_shape e = {H, D, 1, 2, apart, len, kvs, none, 1};
    CHECK(lc_cross_check(&e, err, sizeof err) == -1 && strstr(err, "pair 1"), "no keys: %s", err);
    lc_cross_shape z = {0, D, 1, 0, NULL, NULL, NULL, NULL, 1};
    CHECK(lc_cross_check(&z, err, sizeof err) == -1, "zero heads accepted");
}

int main(void) {
    RUN(fast_matches_double_reference);
    RUN(reference_backward_matches_finite_differences);
    RUN(bit_identical_for_every_thread_count);
    RUN(check_rejects_bad_pairs);
    return test_summary("test_cross_attn");
}
