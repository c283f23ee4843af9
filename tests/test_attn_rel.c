/* Tests of the two extensions of the full attention kind on the test kit (tests/attn_kit.h): a window
 * (query t sees keys M+t-W+1 .. M+t) and Transformer-XL relative positions (score += scale (q + v) .
 * r[M + t - s], content term with q + u). The double reference against finite differences (q, k, v, r,
 * u, v); the fast fp32 passes against the reference over many shapes (the decode path included) and large
 * scores; equivalences (a window >= S is no window, zero r/u/v is plain attention, the paper's shift trick
 * gives the same scores); determinism across repeats and thread counts; the workspace size; an empty
 * segment; parity with the PyTorch fixture tests/fixtures/xl_attn.safetensors
 * (tests/reference/make_xl_fixture.py). */
#include "attn/full_eval.h"
#include "attn_kit.h"
#include "kernels/kernels.h"

/* The full kind with the inputs these cases have always had. */
static uint64_t xl_seed(const kit_case *c) { return 99 + c->T + 13 * c->M + 101 * c->D + 7 * c->window + c->rel; }

static const kit_kind xl = {.kind = &lc_attn_full, .visible = kit_full_visible, .reference = kit_full_reference,
                            .seed_of = xl_seed};

/* B, H, T, M, D, causal, {}, rel, window */
TEST(reference_backward_matches_finite_differences) {
    const kit_case cases[] = {
        {2, 2, 4, 0, 3, 1, {0}, 0, 2}, {1, 2, 5, 3, 2, 1, {0}, 0, 3}, {2, 2, 4, 0, 3, 1, {0}, 1, 0},
        {2, 2, 3, 2, 3, 1, {0}, 1, 0}, {1, 2, 5, 3, 2, 1, {0}, 1, 3}, {2, 1, 4, 4, 3, 1, {0}, 1, 2},
        {1, 1, 5, 0, 4, 1, {0}, 1, 1},
    };
    kit_check_reference_cases(&xl, cases, sizeof cases / sizeof cases[0]);
}

/* dr, du, dv are sums over up to B*T rows, each term carrying fp32 noise of about atol times dq's scale,
 * which adds up like a random walk: with window 1 every dS is 0 in exact arithmetic and these sums are
 * nothing but that noise. */
static const kit_tol tol = {1e-4, 2e-6, .rel_noise = 1};

TEST(fast_matches_reference_with_window) {
    const kit_case cases[] = {
        {1, 1, 130, 0, 16, 1, {0}, 0, 1}, {2, 2, 130, 7, 3, 1, {0}, 0, 5},   {1, 2, 130, 70, 64, 1, {0}, 0, 64},
        {1, 1, 200, 70, 16, 1, {0}, 0, 100}, {2, 3, 65, 7, 24, 1, {0}, 0, 64}, {1, 1, 129, 0, 64, 1, {0}, 0, 100},
        {1, 2, 63, 70, 3, 1, {0}, 0, 1},  {1, 1, 5, 70, 16, 1, {0}, 0, 5},  {1, 1, 90, 40, 16, 1, {0}, 0, 30},
        {2, 2, 2, 130, 16, 1, {0}, 0, 5}, {1, 1, 1, 70, 64, 1, {0}, 0, 100}, /* decode path */
    };
    kit_check_fast_cases(&xl, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(fast_matches_reference_with_relative_positions) {
    const kit_case cases[] = {
        {1, 1, 1, 0, 16, 1, {0}, 1},  {2, 3, 5, 7, 3, 1, {0}, 1},    {1, 2, 63, 0, 16, 1, {0}, 1},
        {1, 2, 65, 7, 64, 1, {0}, 1}, {2, 1, 130, 70, 16, 1, {0}, 1}, {1, 1, 130, 0, 64, 1, {0}, 1},
        {1, 2, 130, 7, 3, 1, {0}, 1}, {1, 1, 70, 3, 80, 1, {0}, 1},   {1, 1, 5, 70, 64, 1, {0}, 1},
        {1, 1, 192, 0, 16, 1, {0}, 1},
        {1, 2, 80, 80, 32, 1, {0}, 1}, {2, 1, 100, 9, 16, 1, {0}, 1}, /* last tiles of 16 and 36 queries */
        {2, 3, 2, 130, 32, 1, {0}, 1}, {1, 2, 1, 200, 3, 1, {0}, 1}, {1, 1, 2, 0, 64, 1, {0}, 1}, /* decode path */
    };
    kit_check_fast_cases(&xl, cases, sizeof cases / sizeof cases[0], tol);
}

TEST(fast_matches_reference_with_window_and_relative_positions) {
    const kit_case cases[] = {
        {1, 1, 130, 0, 16, 1, {0}, 1, 1},   {2, 2, 130, 7, 3, 1, {0}, 1, 5},     {1, 2, 130, 70, 64, 1, {0}, 1, 64},
        {1, 1, 200, 70, 16, 1, {0}, 1, 100}, {1, 3, 65, 70, 24, 1, {0}, 1, 5},   {2, 1, 140, 7, 64, 1, {0}, 1, 100},
        {1, 1, 64, 0, 3, 1, {0}, 1, 64},
        {2, 2, 2, 130, 16, 1, {0}, 1, 5}, {1, 1, 1, 70, 64, 1, {0}, 1, 64}, /* decode path */
    };
    kit_check_fast_cases(&xl, cases, sizeof cases / sizeof cases[0], tol);
}

/* Up to 256 queries against a memory of at least 3 T keys take the dense-product path (src/attn/full_eval.c,
 * XL evaluation); one more query, or a shorter memory, the tiles. Both against the reference, with and
 * without relative positions and windows, the backward (tiled) after the dense forward included. */
TEST(dense_eval_path_matches_reference) {
    const kit_case dense[] = {
        {1, 2, 80, 320, 32, 1, {0}, 1},      {2, 2, 128, 400, 16, 1, {0}, 1},    {1, 1, 256, 768, 8, 1, {0}, 1},
        {1, 2, 3, 9, 64, 1, {0}, 1},         {1, 2, 80, 300, 32, 1, {0}, 1, 100}, {1, 1, 3, 30, 16, 1, {0}, 1, 7},
        {1, 2, 64, 200, 16, 1, {0}, 0, 50},  {2, 1, 100, 300, 24, 1, {0}, 0},     {1, 3, 17, 60, 3, 1, {0}, 1, 77},
    };
    const int n = (int)(sizeof dense / sizeof dense[0]);
    for (int i = 0; i < n; i++) {
        const kit_case *c = &dense[i];
        const lc_attn_shape shape = {c->B, c->H, c->T, c->M, c->D, 1, 0.125f, c->window, c->rel, 1};
        CHECK(lc_attn_full_eval_floats(&shape, 1) > 0, "case %d (T %d, M %d) does not take the dense path", i, c->T,
              c->M);
    }
    kit_check_fast_cases(&xl, dense, n, tol);
    const lc_attn_shape tiled[] = {{1, 1, 257, 1000, 16, 1, 0.25f, 0, 1, 1}, {1, 1, 80, 239, 16, 1, 0.25f, 0, 1, 1},
                                   {1, 1, 2, 100, 16, 1, 0.25f, 0, 1, 1}, {1, 1, 80, 400, 16, 0, 0.25f, 0, 0, 1}};
    for (int i = 0; i < 4; i++)
        CHECK(lc_attn_full_eval_floats(&tiled[i], 1) == 0, "shape %d takes the dense path", i);
    kit_check_determinism(&xl, (kit_case){2, 3, 80, 320, 24, 1, {0}, 1, 0});
    kit_check_determinism(&xl, (kit_case){1, 2, 100, 350, 16, 1, {0}, 1, 120});
}

/* Packs every (batch, head)'s rows of view v (S rows) into panel stores whose row 0 is store row row0; the
 * stores' other rows hold NaN, so a product that used them in a result would show. */
static float *pack_view_panels(const lc_view *v, int B, int H, int S, int D, int row0, long *store_floats) {
    *store_floats = (long)lc_panel_floats(row0 + S, D);
    const size_t n = (size_t)B * H * *store_floats;
    float *store = malloc(n * sizeof(float));
    if (!store) abort();
    for (size_t i = 0; i < n; i++) store[i] = NAN;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            lc_panel_pack(store + ((size_t)b * H + h) * *store_floats, D, row0, S, lc_view_row(v, b, 0, h, D), v->st);
    return store;
}

/* The values of view v as rows of D floats per (batch, head), the view's row 0 at store row row0 (rows
 * outside the view's hold NaN). */
static float *copy_view_rows(const lc_view *v, int B, int H, int S, int D, int row0) {
    const size_t n = (size_t)B * H * (row0 + S) * D;
    float *store = malloc(n * sizeof(float));
    if (!store) abort();
    for (size_t i = 0; i < n; i++) store[i] = NAN;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < S; t++)
                memcpy(store + (((size_t)b * H + h) * (row0 + S) + row0 + t) * D, lc_view_row(v, b, t, h, D),
                       sizeof(float) * D);
    return store;
}

/* NaN in every element of a view's S rows (all heads). */
static void poison_view(const lc_view *v, int B, int S, int HD) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < S; t++)
            for (int d = 0; d < HD; d++) lc_view_row(v, b, t, 0, 1)[d] = NAN;
}

/* The dense and the decode paths with the keys and the position rows given as panels and the values as
 * rows (the model's key/value cache in evaluation and generation) give the results of the paths without
 * them (themselves checked against the reference above): with the view's keys, values and r overwritten
 * by NaN afterwards, so a path that still read them would fail, and stores whose first view row lies at
 * several offsets inside a panel (rows around the view's are NaN). The dense path keeps the values' view
 * for head widths its rows kernel cannot take (not a whole number of vectors). */
TEST(eval_and_decode_read_the_stores) {
    const kit_case cases[] = {
        {1, 2, 80, 320, 32, 1, {0}, 1},       {2, 2, 128, 400, 16, 1, {0}, 1},     {1, 2, 3, 9, 64, 1, {0}, 1},
        {1, 2, 80, 300, 32, 1, {0}, 1, 100}, {1, 1, 3, 30, 16, 1, {0}, 1, 7},      {1, 2, 64, 200, 16, 1, {0}, 0, 50},
        {2, 1, 100, 300, 24, 1, {0}, 0},      {1, 3, 17, 60, 3, 1, {0}, 1, 77},     {1, 2, 13, 250, 48, 1, {0}, 1},
        {1, 2, 80, 600, 64, 1, {0}, 1},       {1, 1, 7, 1000, 64, 1, {0}, 1, 300},  {2, 2, 40, 170, 8, 1, {0}, 1},
        /* the decode path (a query or two) */
        {1, 2, 1, 300, 64, 1, {0}, 1},        {2, 2, 2, 130, 16, 1, {0}, 1},        {1, 1, 1, 70, 64, 1, {0}, 1, 64},
        {2, 2, 2, 130, 16, 1, {0}, 0, 5},     {1, 2, 1, 200, 32, 0, {0}, 0},        {1, 3, 2, 45, 3, 1, {0}, 1, 20},
        {1, 1, 1, 0, 16, 1, {0}, 1},          {1, 2, 2, 1, 24, 1, {0}, 1},
    };
    const int row0s[] = {0, 5, 16, 31};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int j = 0; j < 4; j++) {
            const kit_case *c = &cases[i];
            const int S = c->M + c->T, row0 = row0s[j];
            kit_problem *plain = kit_problem_new(&xl, c, 2), *panels = kit_problem_new(&xl, c, 2);
            long k_floats, r_floats;
            float *k_store = pack_view_panels(&panels->t.k, c->B, c->H, S, c->D, row0, &k_floats), *r_store = NULL;
            panels->t.k_panels = (lc_attn_store){k_store, c->H * k_floats, k_floats, row0};
            poison_view(&panels->t.k, c->B, S, c->H * c->D);
            const long v_floats = (long)(row0 + S) * c->D;
            float *v_store = copy_view_rows(&panels->t.v, c->B, c->H, S, c->D, row0);
            panels->t.v_rows = (lc_attn_store){v_store, c->H * v_floats, v_floats, row0};
            if (lc_rows_gemm_fits(c->D) || c->T <= 2) poison_view(&panels->t.v, c->B, S, c->H * c->D);
            if (c->rel) {
                const lc_view r = {panels->r, 0, (long)c->H * c->D};
                r_store = pack_view_panels(&r, 1, c->H, S, c->D, 0, &r_floats);
                panels->rel.r_panels = (lc_attn_store){r_store, 0, r_floats, 0};
                for (size_t e = 0; e < panels->nr; e++) panels->r[e] = NAN;
            }
            kit_forward(plain), kit_forward(panels);
            char what[64];
            snprintf(what, sizeof what, "panels from row %d vs none", row0);
            kit_compare_runs(panels, plain, (kit_tol){1e-5, 1e-6, 1e-6, 1e-6}, 0, what);
            free(k_store), free(r_store), free(v_store);
            kit_problem_free(plain), kit_problem_free(panels);
        }
}

TEST(fast_is_stable_for_large_scores) {
    /* scores spread over hundreds; with a window some queries see nothing in their first key tile */
    const kit_case cases[] = {{1, 2, 130, 70, 16, 1, {0}, 1, 5, .scale = 1, .input_mul = 3},
                              {1, 2, 130, 7, 24, 1, {0}, 1, 0, .scale = 1, .input_mul = 3},
                              {1, 1, 130, 70, 16, 1, {0}, 0, 64, .scale = 1, .input_mul = 3}};
    kit_check_fast_cases(&xl, cases, 3, (kit_tol){1e-3, 3e-5, .rel_noise = 1});
}

/* ---------------------------------------------------------------- equivalences */

/* (kit_full's inputs do not depend on the window or on rel: the compared problems share them) */

TEST(window_of_at_least_S_is_no_window) {
    for (int rel = 0; rel <= 1; rel++) {
        const kit_case c = {2, 2, 130, 70, 24, 1, {0}, rel};
        kit_problem *plain = kit_problem_new(&kit_full, &c, 2);
        kit_run(plain);
        const int windows[2] = {c.M + c.T, c.M + c.T + 3};
        for (int w = 0; w < 2; w++) {
            kit_case cw = c;
            cw.window = windows[w];
            kit_problem *p = kit_problem_new(&kit_full, &cw, 2);
            kit_run(p);
            kit_check_same_bits(p, plain, "window S or more vs no window");
            kit_problem_free(p);
        }
        kit_problem_free(plain);
    }
    /* the reference agrees */
    kit_problem *a = kit_problem_new(&kit_full, &(kit_case){1, 2, 4, 3, 3, 1, {0}, 1}, 1);
    kit_ref *r = kit_ref_new(a);
    lc_attn_full_forward_ref(&r->s, &r->t);
    double out[24];
    memcpy(out, r->out, sizeof out);
    r->s.window = 7;
    lc_attn_full_forward_ref(&r->s, &r->t);
    CHECK(memcmp(out, r->out, sizeof out) == 0, "reference: window S differs from no window");
    kit_ref_free(r);
    kit_problem_free(a);
}

TEST(zero_relative_inputs_are_plain_attention) {
    const kit_case cases[] = {{2, 2, 130, 70, 24, 1, {0}, 1, 0}, {1, 3, 65, 7, 64, 1, {0}, 1, 5}};
    for (int i = 0; i < 2; i++) {
        kit_case c = cases[i];
        kit_problem *rel = kit_problem_new(&kit_full, &c, 2);
        memset(rel->r, 0, sizeof(float) * rel->nr);
        memset(rel->u, 0, sizeof(float) * rel->nu), memset(rel->vb, 0, sizeof(float) * rel->nu);
        c.rel = 0;
        kit_problem *plain = kit_problem_new(&kit_full, &c, 2);
        kit_run(rel);
        kit_run(plain);
        CHECK(memcmp(rel->out, plain->out, rel->out_n * sizeof(float)) == 0, "out differs (case %d)", i);
        CHECK(memcmp(rel->lse, plain->lse, rel->nl * sizeof(float)) == 0, "lse differs (case %d)", i);
        CHECK(memcmp(rel->grad, plain->grad, rel->qkv_n * sizeof(float)) == 0, "dq/dk/dv differ (case %d)", i);
        /* with r = 0 nothing flows to the position bias; du is the batch and time sum of dq */
        int zero = 1;
        for (size_t j = 0; j < rel->nu; j++) zero &= rel->dvb[j] == 0.0f;
        CHECK(zero, "dv(bias) must be 0 when r = 0");
        kit_problem_free(rel);
        kit_problem_free(plain);
    }
}

TEST(relative_scores_match_the_shift_trick) {
    /* Transformer-XL computes the position scores for all distances with the columns in the order
     * S-1, ..., 0, pads a zero column in front, reads the [T][S+1] buffer as [S+1][T], drops the first row
     * and reads the rest as [T][S]: entry (i, j) then holds distance M + i - j (junk above the mask). */
    enum { T = 3, M = 2, S = M + T, D = 2 };
    kit_problem *p = kit_problem_new(&xl, &(kit_case){1, 1, T, M, D, 1, {0}, 1}, 2);
    kit_forward(p);
    kit_ref *r = kit_ref_new(p);
    lc_attn_full_forward_ref(&r->s, &r->t);

    double by_column[T][S], padded[T * (S + 1)], bd[T][S];
    for (int i = 0; i < T; i++)
        for (int col = 0; col < S; col++) {
            double dot = 0;
            for (int d = 0; d < D; d++) dot += (r->q[i * D + d] + r->vb[d]) * r->r[(S - 1 - col) * D + d];
            by_column[i][col] = dot;
        }
    for (int i = 0; i < T; i++) {
        padded[i * (S + 1)] = 0;
        for (int col = 0; col < S; col++) padded[i * (S + 1) + 1 + col] = by_column[i][col];
    }
    const double *dropped = padded + T; /* as [S+1][T]: the first row holds T values */
    for (int i = 0; i < T; i++)
        for (int j = 0; j < S; j++) bd[i][j] = dropped[i * S + j];

    double out[T][D], lse[T];
    for (int i = 0; i < T; i++) {
        double scores[S], max = -INFINITY, sum = 0;
        for (int j = 0; j < S; j++) {
            if (j > M + i) {
                scores[j] = -INFINITY;
                continue;
            }
            double direct = 0, content = 0;
            for (int d = 0; d < D; d++) {
                direct += (r->q[i * D + d] + r->vb[d]) * r->r[(M + i - j) * D + d];
                content += (r->q[i * D + d] + r->u[d]) * r->k[j * D + d];
            }
            CHECK(bd[i][j] == direct, "shift trick (%d, %d): %.17g, by distance %.17g", i, j, bd[i][j], direct);
            scores[j] = p->s.scale * (content + bd[i][j]);
            max = fmax(max, scores[j]);
        }
        for (int j = 0; j < S; j++) sum += exp(scores[j] - max);
        lse[i] = max + log(sum);
        for (int d = 0; d < D; d++) {
            double acc = 0;
            for (int j = 0; j <= M + i; j++) acc += exp(scores[j] - lse[i]) * r->v[j * D + d];
            out[i][d] = acc;
        }
    }
    double got[T * D], lse_got[T];
    kit_view_to_d(&p->t.out, T, &p->s, got);
    kit_floats_to_d(p->lse, T, lse_got);
    kit_compare("reference out", "shift trick", r->out, &out[0][0], (size_t)T * D, 1e-12, 1e-14, 0, 1);
    kit_compare("fast out", "shift trick", got, &out[0][0], (size_t)T * D, 1e-5, 1e-7, 0, 1);
    kit_compare("fast lse", "shift trick", lse_got, lse, (size_t)T, 1e-6, 1e-7, 0, 1);
    kit_ref_free(r);
    kit_problem_free(p);
}

/* ---------------------------------------------------------------- determinism, workspace, edges */

TEST(runs_are_bit_identical_across_repeats_and_thread_counts) {
    kit_check_determinism(&xl, (kit_case){2, 3, 130, 70, 24, 1, {0}, 1, 0});
    kit_check_determinism(&xl, (kit_case){2, 3, 130, 70, 24, 1, {0}, 1, 100});
    kit_check_determinism(&xl, (kit_case){1, 2, 200, 7, 16, 1, {0}, 0, 64});
}

TEST(workspace_accounts_for_relative_positions) {
    lc_attn_shape small = {1, 8, 1024, 0, 64, 1, 0.125f, 0, 0, 2}, mid = small, large = small;
    mid.T = 4096, large.T = 16384;
    /* without relative positions, past the one-pass backward's bound (src/attn/full_tile.h), only the row
     * statistics grow with T */
    const size_t plain_a = lc_attn_full_workspace(&small, NULL), plain_mid = lc_attn_full_workspace(&mid, NULL),
                 plain_b = lc_attn_full_workspace(&large, NULL);
    CHECK(plain_b - plain_mid == (size_t)8 * (16384 - 4096), "plain workspace %zu -> %zu floats", plain_mid, plain_b);
    small.relpos = large.relpos = 1;
    const size_t rel_a = lc_attn_full_workspace(&small, NULL), rel_b = lc_attn_full_workspace(&large, NULL);
    /* beyond the row statistics, the rel part grows by one head's dr, dk, dv (S x D each) per thread */
    CHECK(rel_b - rel_a == (size_t)8 * (16384 - 1024) + 2 * 3 * (size_t)64 * (16384 - 1024),
          "rel workspace %zu -> %zu floats", rel_a, rel_b);
    CHECK(rel_a > plain_a && rel_a - plain_a < (size_t)2 * 64 * 4 * (1024 + 1024), "rel adds %zu floats at T = 1024",
          rel_a - plain_a);
    /* a window changes nothing */
    small.window = 256;
    CHECK(lc_attn_full_workspace(&small, NULL) == rel_a, "window changed the workspace");
}

TEST(empty_segment_writes_zero_gradients) {
    kit_check_empty_segment(&xl, (kit_case){2, 2, 0, 5, 24, 1, {0}, 1, 3});
}

/* ---------------------------------------------------------------- PyTorch fixture */

/* Case "a." or "b.": inputs into a fused fp32 problem, the fast path and the double reference against
 * PyTorch's float64 results (stored as F32). */
static void check_fixture_case(lc_st_file *f, const char *prefix) {
    char key[64];
    snprintf(key, sizeof key, "%sq", prefix);
    const lc_st_tensor *q = lc_st_find(f, key);
    CHECK(q && q->ndim == 4, "%s: no 4-d tensor %s", lc_st_path(f), key);
    if (!q || q->ndim != 4) return;
    kit_case c = {(int)q->shape[0], (int)q->shape[2], (int)q->shape[1], 0, (int)q->shape[3], 1, {0}, 1};
    const long one[1] = {1};
    if (!kit_st_read(f, prefix, "window", LC_DT_I32, 1, one, &c.window) ||
        !kit_st_read(f, prefix, "mem", LC_DT_I32, 1, one, &c.M) || !kit_st_read(f, prefix, "scale", LC_DT_F32, 1, one, &c.scale))
        return;
    kit_problem *p = kit_problem_new(&xl, &c, 2);
    const int S = c.M + c.T;
    const size_t nq = p->nq, nk = p->nk, nl = p->nl;
    const long sq[4] = {c.B, c.T, c.H, c.D}, sk[4] = {c.B, S, c.H, c.D}, sr[3] = {S, c.H, c.D}, su[2] = {c.H, c.D},
               sl[3] = {c.B, c.H, c.T};
    float *buf = kit_calloc(nk, sizeof(float));
    double *want = kit_calloc(nk, sizeof(double)), *got = kit_calloc(nk, sizeof(double));
    const lc_view *inputs[4] = {&p->t.q, &p->t.k, &p->t.v, &p->t.dout};
    const char *names[4] = {"q", "k", "v", "dout"};
    for (int i = 0; i < 4; i++) {
        const int rows = (i == 1 || i == 2) ? S : c.T;
        if (!kit_st_read(f, prefix, names[i], LC_DT_F32, 4, rows == S ? sk : sq, buf)) goto done;
        kit_floats_to_view(buf, inputs[i], rows, &p->s);
    }
    if (!kit_st_read(f, prefix, "r", LC_DT_F32, 3, sr, p->r) || !kit_st_read(f, prefix, "u", LC_DT_F32, 2, su, p->u) ||
        !kit_st_read(f, prefix, "vb", LC_DT_F32, 2, su, p->vb))
        goto done;
    kit_run(p);
    kit_ref *r = kit_ref_new(p);
    kit_reference(r, p, 1);
    char label[96];
    snprintf(label, sizeof label, "fixture %s B%d H%d T%d M%d D%d W%d", prefix, c.B, c.H, c.T, c.M, c.D, c.window);
    /* name, shape, count, fast result (as a view or a flat array), reference result */
    const struct {
        const char *name;
        const long *shape;
        int ndim;
        size_t n;
        const lc_view *view;
        int view_rows;
        const float *flat;
        const double *ref;
    } outputs[8] = {
        {"out", sq, 4, nq, &p->t.out, c.T, NULL, r->out}, {"lse", sl, 3, nl, NULL, 0, p->lse, r->lse},
        {"dq", sq, 4, nq, &p->t.dq, c.T, NULL, r->dq},    {"dk", sk, 4, nk, &p->t.dk, S, NULL, r->dk},
        {"dv", sk, 4, nk, &p->t.dv, S, NULL, r->dv},      {"dr", sr, 3, p->nr, NULL, 0, p->dr, r->dr},
        {"du", su, 2, p->nu, NULL, 0, p->du, r->du},      {"dvb", su, 2, p->nu, NULL, 0, p->dvb, r->dvb},
    };
    for (int i = 0; i < 8; i++) {
        if (!kit_st_read(f, prefix, outputs[i].name, LC_DT_F32, outputs[i].ndim, outputs[i].shape, buf)) continue;
        kit_floats_to_d(buf, outputs[i].n, want);
        if (outputs[i].view) kit_view_to_d(outputs[i].view, outputs[i].view_rows, &p->s, got);
        else kit_floats_to_d(outputs[i].flat, outputs[i].n, got);
        char what[64];
        snprintf(what, sizeof what, "%s fast", outputs[i].name);
        kit_compare(what, label, got, want, outputs[i].n, 1e-4, 2e-6, 0, 1);
        /* the double reference: PyTorch's float64 values rounded to float32, so about 6e-8 relative */
        snprintf(what, sizeof what, "%s reference", outputs[i].name);
        kit_compare(what, label, outputs[i].ref, want, outputs[i].n, 2e-7, 1e-8, 0, 1);
    }
    kit_ref_free(r);
done:
    free(buf), free(want), free(got);
    kit_problem_free(p);
}

TEST(matches_pytorch_fixture) { kit_fixture_cases("xl_attn.safetensors", "a.,b.", check_fixture_case); }

int main(void) {
    lc_threads_use(2);
    RUN(reference_backward_matches_finite_differences);
    RUN(relative_scores_match_the_shift_trick);
    RUN(fast_matches_reference_with_window);
    RUN(fast_matches_reference_with_relative_positions);
    RUN(fast_matches_reference_with_window_and_relative_positions);
    RUN(dense_eval_path_matches_reference);
    RUN(eval_and_decode_read_the_stores);
    RUN(fast_is_stable_for_large_scores);
    RUN(window_of_at_least_S_is_no_window);
    RUN(zero_relative_inputs_are_plain_attention);
    RUN(runs_are_bit_identical_across_repeats_and_thread_counts);
    RUN(workspace_accounts_for_relative_positions);
    RUN(empty_segment_writes_zero_gradients);
    RUN(matches_pytorch_fixture);
    return test_summary("test_attn_rel");
}
