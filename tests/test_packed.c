/* Packed variable-length sequences in the Transformer block (lc_block_ctx.n_seq, seq_len): a block run on
 * packed sequences of mixed lengths gives the outputs, input gradients and weight gradients of running each
 * sequence alone, for several attention kinds, head-group mixes and global tokens, causal and bidirectional
 * (HIBERT's encoders), pre-LN and post-LN; equal lengths packed are bit-identical to the unpacked call; the
 * run-time checks refuse a bad packing, a group a kind refuses and a workspace too small. */
#include <stdio.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/spec.h"
#include "harness.h"
#include "nn/nn.h"
#include "nn_kit.h"

enum { C = 16, H = 4, F = 24 };

typedef struct {
    float *out, *dx, *g; /* [N C], [N C], [params] */
} result;

static void result_init(result *r, int N, size_t params) {
    r->out = calloc((size_t)N * C, sizeof(float));
    r->dx = calloc((size_t)N * C, sizeof(float));
    r->g = calloc(params, sizeof(float));
}

static void result_free(result *r) {
    free(r->out);
    free(r->dx);
    free(r->g);
}

/* One forward and backward of rows x[B*T] (packed when n_seq > 0) with d out = dy; the outputs, input
 * gradient and weight gradients go to r at row r0. The workspace is planned for at most N rows in at most
 * n_seq sequences of length max_len (packed) or for the call's own shape. Returns lc_block_check_attention's result. */
static int run(kit_params *k, const lc_attn_layer *layer, int causal, lc_norm norm, int B, int T, int n_seq,
               const int *seq_len, const float *x, const float *dy, result *r, long r0, int max_len) {
    lc_block_ctx c = kit_ctx(k, layer, causal, norm, B, T, n_seq, seq_len);
    const int N = B * T;
    if (n_seq) {
        c.attn_work_floats = lc_block_packed_workspace(&c, N, max_len, n_seq); /* planned for n_seq at most */
    } else {
        lc_attn_shape s = {B, H, T, 0, C / H, causal, 1.0f / sqrtf((float)(C / H)), 0, 0, c.threads};
        c.attn_work_floats = lc_attn_layer_workspace(layer, &s);
    }
    kit_bufs b;
    kit_bufs_init(&b, N, 0, C, H, F, c.attn_work_floats, 0);
    c.attn_work = b.work, c.tmp = b.tmp;
    char err[512];
    int rc = lc_block_check_attention(&c, err, sizeof err);
    CHECK(rc == 0, "check refused: %s", err);
    if (rc == 0) {
        memset(k->g, 0, sizeof(float) * k->total);
        lc_block_forward(&c, &k->w.self, &b.a.self, x, r->out + r0 * C);
        memcpy(r->dx + r0 * C, dy, sizeof(float) * (size_t)N * C);
        lc_block_backward(&c, &k->w.self, &k->gw.self, &b.a.self, x, r->dx + r0 * C, &b.s.self);
        for (size_t i = 0; i < k->total; i++) r->g[i] += k->g[i];
    }
    kit_bufs_free(&b);
    return rc;
}

/* Elements that differ at all: reported so the log shows where the arithmetic is the same. */
static long differing(const float *a, const float *b, size_t n) {
    long d = 0;
    for (size_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

static float max_abs(const float *a, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(a[i]) > m ? fabsf(a[i]) : m;
    return m;
}

/* Within 1e-6 of the largest magnitude (sums over rows in another order differ by rounding only). */
static void compare(const char *what, const char *spec, const float *got, const float *want, size_t n) {
    char label[160];
    snprintf(label, sizeof label, "%s %s (%ld differ)", spec, what, differing(got, want, n));
    CHECK_CLOSE(label, got, want, n, 1e-6, 1e-6 * max_abs(want, n));
}

static int parse(const char *spec, lc_attn_layer *layer) {
    char err[512];
    const int rc = lc_attn_spec_parse(spec, 1, H, layer, err, sizeof err);
    CHECK(rc == 0, "spec %s: %s", spec, err);
    return rc;
}

/* Packed (lengths in `len`, equal ones adjacent) against each sequence alone. */
static void packed_equals_separate(const char *spec, int causal, lc_norm norm, const int *len, int n_seq) {
    lc_attn_layer layer;
    if (parse(spec, &layer)) return;
    kit_params k;
    kit_params_init(&k, C, H, F, 0, lc_attn_layer_has_global(&layer), 1234);
    int N = 0, max_len = 0;
    for (int i = 0; i < n_seq; i++) N += len[i], max_len = len[i] > max_len ? len[i] : max_len;
    float *x = malloc(sizeof(float) * (size_t)N * C), *dy = malloc(sizeof(float) * (size_t)N * C);
    lc_rng r;
    lc_rng_seed(&r, 9);
    kit_fill(x, (size_t)N * C, &r, 1.0f), kit_fill(dy, (size_t)N * C, &r, 1.0f);
    result packed, alone;
    result_init(&packed, N, k.total), result_init(&alone, N, k.total);
    run(&k, &layer, causal, norm, 1, N, n_seq, len, x, dy, &packed, 0, max_len);
    long r0 = 0;
    for (int i = 0; i < n_seq; i++) {
        run(&k, &layer, causal, norm, 1, len[i], 0, NULL, x + r0 * C, dy + r0 * C, &alone, r0, len[i]);
        r0 += len[i];
    }
    char name[128];
    snprintf(name, sizeof name, "%s %s %s", spec, causal ? "causal" : "bidir", norm == LC_NORM_PRE ? "pre" : "post");
    compare("out", name, packed.out, alone.out, (size_t)N * C);
    compare("dx", name, packed.dx, alone.dx, (size_t)N * C);
    for (int i = 0; i < k.n; i++) {
        char what[96];
        snprintf(what, sizeof what, "d %s", k.slot[i].name);
        compare(what, name, packed.g + k.slot[i].off, alone.g + k.slot[i].off, k.slot[i].n);
    }
    result_free(&packed), result_free(&alone);
    free(x), free(dy);
    kit_params_free(&k);
}

/* Mixed lengths: groups of 3 x 6, 1 x 3, 2 x 9, 1 x 1, 3 x 4 rows (not sorted: only equal ones adjacent). */
static const int mixed[] = {6, 6, 6, 3, 9, 9, 1, 4, 4, 4};
static const int n_mixed = sizeof mixed / sizeof mixed[0];

/* The mixed lengths through spec, where its flag is set: causal pre-LN, bidirectional pre-LN, bidirectional
 * post-LN (in that order). */
static void packed_mixed(const char *spec, int causal_pre, int pre, int post) {
    if (causal_pre) packed_equals_separate(spec, 1, LC_NORM_PRE, mixed, n_mixed);
    if (pre) packed_equals_separate(spec, 0, LC_NORM_PRE, mixed, n_mixed);
    if (post) packed_equals_separate(spec, 0, LC_NORM_POST, mixed, n_mixed);
}

TEST(packed_full) { packed_mixed("full", 1, 1, 1); }
TEST(packed_window) { packed_mixed("window:w=3", 1, 1, 0); }
TEST(packed_block) { packed_mixed("block:b=4", 1, 0, 1); }

/* blocks of 2 with one random block: the random plan depends on the length, not on the batch row */
TEST(packed_bigbird) { packed_mixed("bigbird:b=2,r=1", 1, 1, 0); }

TEST(packed_head_groups_and_globals) {
    /* global positions are positions inside each sequence: the first row of every sequence is global */
    packed_mixed("2xfull+2xwindow:w=2,global=1", 1, 1, 0);
    packed_mixed("window:w=1,global=2+3xblock:b=2", 0, 0, 1);
}

/* The encoder case HIBERT runs: many short bidirectional sentences sorted by length. */
TEST(packed_encoder_sorted_sentences) {
    const int len[] = {2, 2, 3, 5, 5, 5, 5, 8, 11, 11, 17};
    packed_equals_separate("window:w=3,global=1", 0, LC_NORM_PRE, len, (int)(sizeof len / sizeof len[0]));
}

/* Equal lengths packed run the very calls of the unpacked (B, T) block: bit-identical. */
TEST(packed_equal_lengths_bit_identical) {
    lc_attn_layer layer;
    if (parse("2xfull+2xwindow:w=2,global=1", &layer)) return;
    kit_params k;
    kit_params_init(&k, C, H, F, 0, 1, 99);
    enum { B = 3, T = 7, N = B * T };
    const int len[B] = {T, T, T};
    float x[N * C], dy[N * C];
    lc_rng r;
    lc_rng_seed(&r, 3);
    kit_fill(x, N * C, &r, 1.0f), kit_fill(dy, N * C, &r, 1.0f);
    result p, u;
    result_init(&p, N, k.total), result_init(&u, N, k.total);
    run(&k, &layer, 0, LC_NORM_PRE, 1, N, B, len, x, dy, &p, 0, T);
    run(&k, &layer, 0, LC_NORM_PRE, B, T, 0, NULL, x, dy, &u, 0, T);
    CHECK(differing(p.out, u.out, N * C) == 0, "out differs");
    CHECK(differing(p.dx, u.dx, N * C) == 0, "dx differs");
    CHECK(differing(p.g, u.g, k.total) == 0, "weight gradients differ");
    result_free(&p), result_free(&u);
    kit_params_free(&k);
}

/* A kind with a length rule (full underneath): refuses sequences shorter than 3. */
static const lc_attn_kind min3 = {
    .name = "packtest-min3",
    .options_help = "",
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL,
    .min_T = 3,
    .workspace_floats = lc_attn_full_workspace,
    .forward = lc_attn_full_forward,
    .backward = lc_attn_full_backward,
};

static int refused(lc_block_ctx *c, const char *want) {
    char err[512] = "";
    const int rc = lc_block_check_attention(c, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want a refusal with '%s', got %d '%s'", want, rc, err);
    printf("  refused: %s\n", err);
    return rc;
}

/* A block context for the spec's layer over 16 rows packed as four sequences of 4, 4, 2 and 6 rows, with
 * k's weights (initialised here; the caller frees them). Returns the spec parse's result. */
static const int four_seqs[] = {4, 4, 2, 6};
static int four_sequence_ctx(const char *spec, int causal, lc_attn_layer *layer, kit_params *k, lc_block_ctx *c) {
    if (parse(spec, layer)) return -1;
    kit_params_init(k, C, H, F, 0, 0, 5);
    *c = kit_ctx(k, layer, causal, LC_NORM_PRE, 1, 16, 4, four_seqs);
    return 0;
}

TEST(packed_refusals) {
    lc_attn_layer layer;
    kit_params k;
    lc_block_ctx c;
    if (four_sequence_ctx("full", 1, &layer, &k, &c)) return;
    const size_t ws = lc_block_packed_workspace(&c, 16, 6, 0);
    c.attn_work_floats = ws;
    char err[512];
    CHECK(lc_block_check_attention(&c, err, sizeof err) == 0, "%s", err);
    lc_block_ctx bad = c;
    bad.M = 2;
    refused(&bad, "vanilla block");
    bad = c, bad.relpos = 1;
    refused(&bad, "vanilla block");
    bad = c, bad.T = 15;
    refused(&bad, "cover 16 rows, the block has 15");
    const int zero[] = {4, 4, 0, 8};
    bad = c, bad.seq_len = zero;
    refused(&bad, "sequence 2 has 0 rows");
    bad = c, bad.attn_work_floats = 0;
    refused(&bad, "attn_work_floats");
    /* the largest group (two sequences of 4) needs more than a workspace planned for one of 4 */
    bad = c, bad.attn_work_floats = lc_block_packed_workspace(&c, 4, 4, 0);
    refused(&bad, "too small for 2 sequences of 4 rows");
    /* a group the kind refuses: the 2-row sequence */
    if (lc_attn_kind_register(&min3) == 0) {
        lc_attn_layer l3;
        if (parse("packtest-min3", &l3) == 0) {
            bad = c, bad.layer = &l3;
            bad.attn_work_floats = lc_block_packed_workspace(&bad, 16, 6, 0);
            CHECK(bad.attn_work_floats > 0, "planned nothing");
            refused(&bad, "packed sequences of 2 rows: packtest-min3");
            const int ok[] = {4, 4, 8};
            bad.n_seq = 3, bad.seq_len = ok;
            CHECK(lc_block_check_attention(&bad, err, sizeof err) == 0, "%s", err);
        }
    } else {
        CHECK(0, "register: %s", lc_last_error());
    }
    kit_params_free(&k);
}

/* A kind that keeps floats per sequence (linformer: dK', dV' of every sequence and head) is planned for
 * the most sequences a batch can hold, not for max_rows one-row sequences. */
TEST(packed_workspace_is_planned_for_at_most_max_seqs) {
    lc_attn_layer layer;
    kit_params k;
    lc_block_ctx c;
    if (four_sequence_ctx("linformer:k=8", 0, &layer, &k, &c)) return;
    const size_t capped = lc_block_packed_workspace(&c, 16, 6, 4), open = lc_block_packed_workspace(&c, 16, 6, 0);
    CHECK(capped > 0 && capped < open, "planned %zu floats for 4 sequences, %zu for any count", capped, open);
    c.attn_work_floats = capped;
    char err[512];
    CHECK(lc_block_check_attention(&c, err, sizeof err) == 0, "4 sequences in a workspace planned for 4: %s", err);
    kit_params_free(&k);
}

int main(void) {
    RUN(packed_full);
    RUN(packed_window);
    RUN(packed_block);
    RUN(packed_bigbird);
    RUN(packed_head_groups_and_globals);
    RUN(packed_encoder_sorted_sentences);
    RUN(packed_equal_lengths_bit_identical);
    RUN(packed_refusals);
    RUN(packed_workspace_is_planned_for_at_most_max_seqs);
    return test_summary("test_packed");
}
