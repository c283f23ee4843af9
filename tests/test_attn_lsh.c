/* Tests of the lsh attention kind (Reformer's shared-QK LSH attention, src/attn/lsh.h) on the test kit
 * (tests/attn_kit.h):
 *  - a plain double reference of the whole kind written here (per round: stable sort by bucket, chunks
 *    with the wrap-around, dense scores with the causal and self masks, softmax; rounds combined by
 *    log-sum-exp) with its analytic backward (normalisation included), which the kit checks against
 *    central finite differences;
 *  - the fast fp32 forward/backward against that reference over causal and bidirectional shapes, short
 *    last chunks, a single chunk, odd D, large inputs, strided fused views (the k columns hold NaN: never
 *    read; dk written as zeros; k, dk as NULL views);
 *  - one bucket (zero rotations) with c >= T against the shared masked dense reference of attn.h on
 *    k = normalised q with the self mask;
 *  - buckets against a double argmax; the rotations' statistics; determinism given the seed (repeats,
 *    thread counts), different seeds giving different buckets;
 *  - options and the checks: defaults, the spec string, rejections (odd buckets, chunk 0, M > 0, ...);
 *  - the workspace bound; an empty segment;
 *  - parity with the PyTorch fixture tests/fixtures/lsh_attn.safetensors (tests/reference/make_lsh_fixture.py). */
#include "attn/lsh.h"
#include "attn/spec.h"
#include "attn_kit.h"

/* Cases: p = {buckets, hashes, chunk}, M = 0. */
static void lsh_opts(const kit_case *c, void *opts) {
    const lc_attn_lsh_opts o = {c->p[0], c->p[1], c->p[2], 0};
    memcpy(opts, &o, sizeof o);
}

/* The inputs these cases have always had, and rotations drawn from a seed that follows them. */
static uint64_t lsh_seed(const kit_case *c) { return (uint64_t)(7 + c->T + 3 * c->D + c->causal); }

static void lsh_prepare(kit_problem *p) { p->t.seed = 0x5eed0000ULL + lsh_seed(&p->c); }

/* The rotations the kind draws for p (tensors.seed), and the buckets forward uses [B][H][hashes][T]. */
static float *rotations_of(const kit_problem *p) {
    const lc_attn_lsh_opts *o = (const void *)p->opts;
    float *rot = kit_calloc(lc_attn_lsh_rotation_floats(o, p->s.H, p->s.D), sizeof(float));
    lc_attn_lsh_rotations(o, p->s.H, p->s.D, p->t.seed, rot);
    return rot;
}

static int *buckets_of(kit_problem *p, const float *rot) {
    const lc_attn_lsh_opts *o = (const void *)p->opts;
    int *bk = kit_calloc((size_t)p->s.B * p->s.H * o->hashes * p->s.T, sizeof(int));
    lc_attn_lsh_buckets(&p->s, o, &p->t, rot, p->work, bk);
    return bk;
}

/* The reference's context: the buckets of the problem's run. */
static void *lsh_ctx_new(const kit_problem *p) {
    float *rot = rotations_of(p);
    int *bk = buckets_of((kit_problem *)p, rot);
    free(rot);
    return bk;
}

/* ---------------------------------------------------------------- the double reference */

/* The case of a reference: B, H, T, D, causal, buckets, hashes, chunk. */
typedef struct {
    int B, H, T, D, causal, buckets, hashes, chunk;
} lsh_case;

static lsh_case lsh_case_get(const kit_ref *r) {
    const kit_case *c = &r->p->c;
    const lsh_case l = {c->B, c->H, c->T, c->D, c->causal, c->p[0], c->p[1], c->p[2]};
    return l;
}

/* Contiguous [B, T, H, D]: row t of head h in batch b. */
static size_t at(const lsh_case *c, int b, int t, int h) { return (((size_t)b * c->T + t) * c->H + h) * c->D; }

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
static void ref_keys(const kit_ref *r, int b, int h, double *k, double *n) {
    const lsh_case cc = lsh_case_get(r), *c = &cc;
    for (int t = 0; t < c->T; t++) {
        const double *q = r->q + at(c, b, t, h);
        double sq = 0;
        for (int d = 0; d < c->D; d++) sq += q[d] * q[d];
        n[t] = 1.0 / sqrt(sq + c->D * (double)LC_ATTN_LSH_NORM_EPS);
        for (int d = 0; d < c->D; d++) k[(size_t)t * c->D + d] = q[d] * n[t];
    }
}

/* Logit of query p on key pk (pk visible). */
static double ref_logit(const kit_ref *r, int b, int h, int p, int pk, const double *k) {
    if (p == pk) return LC_ATTN_LSH_SELF_LOGIT;
    const lsh_case cc = lsh_case_get(r);
    const double *q = r->q + at(&cc, b, p, h);
    double dot = 0;
    for (int d = 0; d < r->s.D; d++) dot += q[d] * k[(size_t)pk * r->s.D + d];
    return (double)r->s.scale * dot;
}

/* out and lse: each round's softmax kept apart, combined at the end. */
static void ref_forward(kit_ref *r, const int *buckets) {
    const lsh_case cc = lsh_case_get(r), *c = &cc;
    const int T = c->T, D = c->D, nh = c->hashes;
    double *k = kit_calloc((size_t)T * D, sizeof(double)), *n = kit_calloc((size_t)T, sizeof(double));
    double *out_r = kit_calloc((size_t)nh * T * D, sizeof(double)), *lse_r = kit_calloc((size_t)nh * T, sizeof(double));
    double *z = kit_calloc((size_t)T, sizeof(double));
    int *perm = kit_calloc((size_t)T, sizeof(int)), *list = kit_calloc((size_t)T, sizeof(int)), *kp = kit_calloc((size_t)T, sizeof(int));
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            ref_keys(r, b, h, k, n);
            for (int rd = 0; rd < nh; rd++) {
                ref_sort(buckets + (((size_t)b * c->H + h) * nh + rd) * T, T, perm);
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
static void ref_backward(kit_ref *r, const int *buckets) {
    ref_forward(r, buckets);
    const lsh_case cc = lsh_case_get(r), *c = &cc;
    const int T = c->T, D = c->D, nh = c->hashes;
    double *k = kit_calloc((size_t)T * D, sizeof(double)), *n = kit_calloc((size_t)T, sizeof(double));
    double *dk = kit_calloc((size_t)T * D, sizeof(double)), *delta = kit_calloc((size_t)T, sizeof(double));
    int *perm = kit_calloc((size_t)T, sizeof(int)), *list = kit_calloc((size_t)T, sizeof(int));
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
                ref_sort(buckets + (((size_t)b * c->H + h) * nh + rd) * T, T, perm);
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
                            r->dq[at(c, b, p, h) + d] += (double)r->s.scale * dz * k[(size_t)pk * D + d];
                            dk[(size_t)pk * D + d] += (double)r->s.scale * dz * q[d];
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

static void lsh_reference(kit_ref *r, const void *ctx, int backward) {
    if (backward) ref_backward(r, ctx);
    else ref_forward(r, ctx);
}

static const kit_kind lsh = {.kind = &lc_attn_lsh, .opts = lsh_opts, .ctx_new = lsh_ctx_new, .ctx_free = free,
                             .reference = lsh_reference, .prepare = lsh_prepare, .shared_qk = 1, .seed_of = lsh_seed};

/* B, H, T, M, D, causal, {buckets, hashes, chunk} */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {1, 2, 11, 0, 3, 1, {4, 3, 3}}, {1, 2, 11, 0, 3, 0, {4, 3, 3}}, {2, 1, 7, 0, 2, 1, {2, 2, 2}},
        {1, 2, 8, 0, 4, 0, {6, 2, 2}},  {1, 1, 5, 0, 3, 1, {2, 2, 8}},  {1, 1, 6, 0, 3, 0, {8, 1, 4}},
    };
    kit_check_reference_cases(&lsh, cases, sizeof cases / sizeof cases[0]);
}

/* lse absolutely: rows that see only themselves hold about -1e5 */
static const kit_tol tol = {1e-4, 2e-6, 1e-5, 1e-5, .lse_abs = 1};

TEST(fast_matches_reference_causal) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 16, 1, {2, 1, 4}},    {2, 3, 13, 0, 3, 1, {4, 2, 4}, .null_k = 1}, {1, 2, 130, 0, 16, 1, {8, 2, 16}},
        {1, 2, 200, 0, 64, 1, {8, 3, 32}}, {2, 2, 67, 0, 17, 1, {2, 1, 8}},   {1, 3, 40, 0, 5, 1, {6, 4, 64}},
        {1, 1, 64, 0, 32, 1, {4, 8, 16}},  {1, 2, 33, 0, 8, 1, {32, 2, 1}},
    };
    kit_check_fast_cases(&lsh, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(fast_matches_reference_bidirectional) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 3, 0, {2, 2, 4}},     {2, 3, 13, 0, 3, 0, {4, 2, 4}},  {1, 2, 130, 0, 16, 0, {8, 2, 16}, .null_k = 1},
        {1, 2, 200, 0, 64, 0, {8, 3, 32}}, {2, 2, 67, 0, 17, 0, {2, 1, 8}}, {1, 3, 40, 0, 5, 0, {6, 4, 64}},
        {1, 2, 33, 0, 8, 0, {32, 2, 1}},   {1, 1, 2, 0, 4, 0, {2, 2, 1}},
    };
    kit_check_fast_cases(&lsh, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(fast_is_stable_for_large_inputs) {
    const kit_case cases[] = {{1, 2, 130, 0, 16, 1, {8, 2, 16}, .input_mul = 30},
                              {1, 2, 130, 0, 16, 0, {4, 3, 32}, .input_mul = 30}};
    kit_check_fast_cases(&lsh, cases, 2, (kit_tol){1e-3, 3e-5, 1e-4, 1e-5, .lse_abs = 1});
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

/* The kind's passes on given rotations, inside the kit's workspace checks. */
static void run_with(kit_problem *p, const float *rot) {
    kit_pass_begin(p);
    lc_attn_lsh_forward_with(&p->s, (const void *)p->opts, &p->t, rot, p->work);
    kit_pass_end(p, "forward");
    kit_pass_begin(p);
    lc_attn_lsh_backward_with(&p->s, (const void *)p->opts, &p->t, rot, p->work);
    kit_pass_end(p, "backward");
}

TEST(one_bucket_and_one_chunk_is_dense_shared_qk_attention) {
    const kit_case cases[] = {
        {2, 2, 37, 0, 16, 1, {2, 1, 64}}, {1, 3, 20, 0, 5, 0, {2, 1, 20}}, {1, 2, 50, 0, 24, 1, {8, 3, 50}},
        {1, 1, 9, 0, 3, 0, {4, 2, 100}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        kit_problem *p = kit_problem_new(&lsh, &cases[ci], 2);
        const kit_case c = p->c;
        const int D = c.D, hashes = c.p[1];
        /* zero rotations: every projection is 0 and the argmax takes bucket 0 */
        float *rot = kit_calloc(lc_attn_lsh_rotation_floats((const void *)p->opts, c.H, D), sizeof(float));
        run_with(p, rot);
        int *bk = buckets_of(p, rot), zero = 1;
        for (size_t i = 0; i < p->nl * hashes; i++) zero &= bk[i] == 0;
        CHECK(zero, "zero rotations must put every position into bucket 0");

        /* the dense reference on k = q / sqrt(|q|^2 + D eps) */
        kit_ref *r = kit_ref_new(p);
        const size_t n = p->nq;
        double *norm = kit_calloc(n, sizeof(double)), *got = kit_calloc(n, sizeof(double));
        for (size_t i = 0; i < n; i += D) {
            double sq = 0;
            for (int d = 0; d < D; d++) sq += r->q[i + d] * r->q[i + d];
            norm[i] = 1.0 / sqrt(sq + D * (double)LC_ATTN_LSH_NORM_EPS);
            for (int d = 0; d < D; d++) r->k[i + d] = r->q[i + d] * norm[i];
        }
        const self_mask m = {c.T, c.causal};
        lc_attn_masked_forward_ref(&r->s, shared_qk_visible, &m, &r->t);
        lc_attn_masked_backward_ref(&r->s, shared_qk_visible, &m, &r->t);
        for (size_t i = 0; i < n; i += D) { /* dq += n (dk - k (k . dk)) */
            double kd = 0;
            for (int d = 0; d < D; d++) kd += r->k[i + d] * r->dk[i + d];
            for (int d = 0; d < D; d++) r->dq[i + d] += norm[i] * (r->dk[i + d] - r->k[i + d] * kd);
        }
        /* lse: the dense one (-1e5 where a query sees only itself) plus log(hashes) for identical rounds */
        const size_t HD = (size_t)c.H * D;
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
                                for (int d = 0; d < D; d++)
                                    z += r->q[((size_t)b * c.T + t) * HD + h * D + d] * r->k[((size_t)b * c.T + j) * HD + h * D + d];
                                z *= p->s.scale;
                            }
                            if (pass == 0) max = fmax(max, z);
                            else sum += exp(z - max);
                        }
                    r->lse[((size_t)b * c.H + h) * c.T + t] = max + log(sum) + log((double)hashes);
                }
        char label[96];
        snprintf(label, sizeof label, "vs dense shared-QK T%d D%d causal%d nh%d", c.T, D, c.causal, hashes);
        kit_view_to_d(&p->t.out, c.T, &p->s, got);
        kit_compare("out", label, got, r->out, n, 1e-4, 2e-6, 0, 1);
        kit_floats_to_d(p->lse, p->nl, got);
        kit_compare("lse", label, got, r->lse, p->nl, 1e-5, 1e-5, 1, 1);
        kit_view_to_d(&p->t.dq, c.T, &p->s, got);
        kit_compare("dq", label, got, r->dq, n, 1e-4, 2e-6, 0, 1);
        kit_view_to_d(&p->t.dv, c.T, &p->s, got);
        kit_compare("dv", label, got, r->dv, n, 1e-4, 2e-6, 0, 1);
        free(norm), free(got), free(rot), free(bk);
        kit_ref_free(r);
        kit_problem_free(p);
    }
}

/* ---------------------------------------------------------------- hashing */

TEST(buckets_are_the_argmax_of_the_rotated_query) {
    kit_problem *p = kit_problem_new(&lsh, &(kit_case){2, 3, 97, 0, 24, 1, {16, 3, 16}}, 2);
    const kit_case c = p->c;
    const int buckets = c.p[0], hashes = c.p[1], half = buckets / 2;
    float *rot = rotations_of(p);
    int *bk = buckets_of(p, rot);
    int bad = 0, close_calls = 0, in_range = 1;
    int hist[16] = {0};
    for (int b = 0; b < c.B; b++)
        for (int h = 0; h < c.H; h++)
            for (int r = 0; r < hashes; r++)
                for (int t = 0; t < c.T; t++) {
                    const float *q = p->t.q.p + (long)b * p->t.q.sb + (long)t * p->t.q.st + h * c.D;
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
                    const int got = bk[(((size_t)b * c.H + h) * hashes + r) * c.T + t];
                    in_range &= got >= 0 && got < buckets;
                    if (got >= 0 && got < 16) hist[got]++;
                    if (best - second < 1e-4 * fabs(best)) close_calls++;
                    else bad += got != arg;
                }
    CHECK(in_range, "bucket out of range");
    CHECK(bad == 0, "%d buckets differ from the double argmax (%d near-ties skipped)", bad, close_calls);
    int used = 0;
    for (int j = 0; j < buckets; j++) used += hist[j] > 0;
    CHECK(used == buckets, "only %d of %d buckets used", used, buckets);
    free(rot), free(bk);
    kit_problem_free(p);
}

TEST(rotations_are_standard_normal_and_seeded) {
    const lc_attn_lsh_opts o = {32, 8, 64, 0}, o2 = {32, 8, 64, 1};
    const int H = 4, D = 64;
    const size_t n = lc_attn_lsh_rotation_floats(&o, H, D);
    CHECK(n == (size_t)8 * 4 * 64 * 16, "rotation floats %zu", n);
    float *a = kit_calloc(n, sizeof(float)), *b = kit_calloc(n, sizeof(float)), *c2 = kit_calloc(n, sizeof(float));
    float *d2 = kit_calloc(n, sizeof(float));
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
    const kit_case cs[2] = {{2, 3, 130, 0, 24, 1, {8, 3, 16}}, {1, 3, 200, 0, 16, 0, {16, 2, 32}}};
    for (int ci = 0; ci < 2; ci++) {
        kit_check_determinism(&lsh, cs[ci]);
        kit_problem *w = kit_problem_new(&lsh, &cs[ci], 2), *k = kit_problem_new(&lsh, &cs[ci], 2);
        kit_run(k);
        /* the kind's forward is forward_with on the rotations drawn from tensors.seed */
        float *rot = rotations_of(w);
        run_with(w, rot);
        CHECK(memcmp(k->out, w->out, w->out_n * sizeof(float)) == 0 &&
                  memcmp(k->grad, w->grad, w->qkv_n * sizeof(float)) == 0,
              "kind forward/backward differ from the _with variants on the same rotations");
        /* another tensors seed, another opts seed: other buckets, other outputs */
        int *bk0 = buckets_of(w, rot);
        const size_t nb = w->nl * cs[ci].p[1];
        for (int variant = 0; variant < 2; variant++) {
            kit_problem *d = kit_problem_new(&lsh, &cs[ci], 2);
            if (variant == 0) d->t.seed += 1;
            else ((lc_attn_lsh_opts *)(void *)d->opts)->seed = 7;
            kit_run(d);
            float *rot_d = rotations_of(d);
            int *bk = buckets_of(d, rot_d);
            size_t differ = 0;
            for (size_t i = 0; i < nb; i++) differ += bk[i] != bk0[i];
            CHECK(differ > nb / 2, "%s seed changed only %zu of %zu buckets", variant ? "opts" : "tensors", differ, nb);
            CHECK(memcmp(k->out, d->out, d->out_n * sizeof(float)) != 0, "another seed, the same output");
            free(rot_d), free(bk);
            kit_problem_free(d);
        }
        free(rot), free(bk0);
        kit_problem_free(w), kit_problem_free(k);
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
    CHECK(kit_kind_check(&lc_attn_lsh, &s, &o, NULL, err, sizeof err) == 0, "defaults rejected: %s", err);
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
    CHECK(kit_kind_check(&lc_attn_lsh, &s, &bad, NULL, err, sizeof err) != 0 && strstr(err, "buckets"), "odd buckets: %s", err);
    bad = o, bad.chunk = 0;
    CHECK(kit_kind_check(&lc_attn_lsh, &s, &bad, NULL, err, sizeof err) != 0 && strstr(err, "chunk"), "chunk 0: %s", err);
    bad = o, bad.hashes = 0;
    CHECK(kit_kind_check(&lc_attn_lsh, &s, &bad, NULL, err, sizeof err) != 0, "hashes 0 accepted");
    lc_attn_shape sm = s;
    sm.M = 3;
    CHECK(kit_kind_check(&lc_attn_lsh, &sm, &o, NULL, err, sizeof err) != 0 && strstr(err, "memory"), "M > 0: %s", err);
    sm = s, sm.relpos = 1;
    CHECK(kit_kind_check(&lc_attn_lsh, &sm, &o, NULL, err, sizeof err) != 0, "relpos accepted");
    sm = s, sm.window = 8;
    CHECK(kit_kind_check(&lc_attn_lsh, &sm, &o, NULL, err, sizeof err) != 0, "same_length window accepted");
    const int pos[1] = {0};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.pos = pos;
    CHECK(kit_kind_check(&lc_attn_lsh, &s, &o, &g, err, sizeof err) != 0 && strstr(err, "global"), "global: %s", err);
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
    lc_attn_shape small = {1, 8, 1024, 0, 64, 1, 0.125f, 0, 0, 2}, large = small;
    large.T = 65536;
    const size_t a = lc_attn_lsh_workspace(&small, &o), b = lc_attn_lsh_workspace(&large, &o);
    /* inverse norms, row statistics, buckets and sorted order: (2 + 2 hashes) floats per token and head */
    CHECK(b >= a && b - a <= (size_t)8 * (2 + 2 * 4) * (65536 - 1024) + 64, "workspace %zu -> %zu floats", a, b);
    /* per-thread tiles of a few chunks, rotations: far below one H x T x T score matrix (8M floats) */
    CHECK(a < (size_t)512 * 1024, "workspace %zu floats at T = 1024", a);
}

TEST(empty_segment_writes_nothing) {
    kit_check_empty_segment(&lsh, (kit_case){2, 2, 0, 0, 8, 1, {4, 2, 4}, .scale = 0.3f});
}

/* ---------------------------------------------------------------- PyTorch fixture */

static void check_fixture_case(lc_st_file *f, const char *prefix) {
    int cfg[8] = {0}; /* B, H, T, D, causal, buckets, hashes, chunk */
    float scale = 0;
    const long s8[1] = {8}, s1[1] = {1};
    if (!kit_st_read(f, prefix, "config", LC_DT_I32, 1, s8, cfg) || !kit_st_read(f, prefix, "scale", LC_DT_F32, 1, s1, &scale))
        return;
    kit_problem *p = kit_problem_new(&lsh, &(kit_case){cfg[0], cfg[1], cfg[2], 0, cfg[3], cfg[4], {cfg[5], cfg[6], cfg[7]},
                                                       .scale = scale}, 2);
    const kit_case c = p->c;
    const int buckets = c.p[0], hashes = c.p[1];
    const size_t n = p->nq, nl = p->nl, nb = nl * hashes, nr = (size_t)hashes * c.H * c.D * (buckets / 2);
    const long sq[4] = {c.B, c.T, c.H, c.D}, sl[3] = {c.B, c.H, c.T}, sbk[4] = {c.B, c.H, hashes, c.T},
               sr[4] = {hashes, c.H, c.D, buckets / 2};
    float *buf = kit_calloc(n, sizeof(float)), *rot = kit_calloc(nr, sizeof(float));
    int *bk_want = kit_calloc(nb, sizeof(int));
    double *want = kit_calloc(n, sizeof(double)), *got = kit_calloc(n, sizeof(double));
    if (!kit_st_read(f, prefix, "rotations", LC_DT_F32, 4, sr, rot) || !kit_st_read(f, prefix, "buckets", LC_DT_I32, 4, sbk, bk_want))
        goto done;
    const char *in_names[3] = {"q", "v", "dout"};
    const lc_view *in_views[3] = {&p->t.q, &p->t.v, &p->t.dout};
    for (int i = 0; i < 3; i++) {
        if (!kit_st_read(f, prefix, in_names[i], LC_DT_F32, 4, sq, buf)) goto done;
        kit_floats_to_view(buf, in_views[i], c.T, &p->s);
    }
    run_with(p, rot);
    int *bk = buckets_of(p, rot);
    size_t differ = 0;
    for (size_t i = 0; i < nb; i++) differ += bk[i] != bk_want[i];
    CHECK(differ == 0, "%s: %zu of %zu buckets differ from PyTorch's", prefix, differ, nb);
    kit_ref *r = kit_ref_new(p);
    lsh_reference(r, bk_want, 1);
    char label[96];
    const struct {
        const char *name;
        const long *shape;
        size_t count;
        const lc_view *view;
        const float *flat;
        const double *ref;
    } outs[4] = {
        {"out", sq, n, &p->t.out, NULL, r->out},
        {"lse", sl, nl, NULL, p->lse, r->lse},
        {"dq", sq, n, &p->t.dq, NULL, r->dq},
        {"dv", sq, n, &p->t.dv, NULL, r->dv},
    };
    for (int i = 0; i < 4; i++) {
        if (!kit_st_read(f, prefix, outs[i].name, LC_DT_F32, i == 1 ? 3 : 4, outs[i].shape, buf)) continue;
        kit_floats_to_d(buf, outs[i].count, want);
        if (outs[i].view) kit_view_to_d(outs[i].view, c.T, &p->s, got);
        else kit_floats_to_d(outs[i].flat, outs[i].count, got);
        /* lse absolutely (rows that see only themselves hold about -1e5), the rest relative to its size;
         * the double reference against PyTorch's float64 rounded to float32 */
        snprintf(label, sizeof label, "fixture %s%s", prefix, outs[i].name);
        kit_compare("fast", label, got, want, outs[i].count, i == 1 ? 1e-5 : 1e-4, i == 1 ? 1e-5 : 2e-6, i == 1, 1);
        kit_compare("reference", label, outs[i].ref, want, outs[i].count, 2e-7, i == 1 ? 1e-7 : 1e-8, i == 1, 1);
    }
    free(bk);
    kit_ref_free(r);
done:
    free(buf), free(rot), free(bk_want), free(want), free(got);
    kit_problem_free(p);
}

TEST(matches_pytorch_fixture) { kit_fixture_cases("lsh_attn.safetensors", NULL, check_fixture_case); }

int main(void) {
    lc_threads_use(2);
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
