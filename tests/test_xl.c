/* Transformer-XL tests: parity of the relative attention and of a 2-layer model over two consecutive
 * segments with the PyTorch reference (tests/reference/make_xl_fixture.py); exactness of the
 * recurrence (segments + memory == one long segment); incremental generation == segment evaluation;
 * memory carried across training batches; checkpoints keep the memory. */
#include <math.h>
#include <string.h>

#include "attn/attn.h"
#include "core/rng.h"
#include "harness.h"
#include "models/lm/lm.h"
#include "train/safetensors.h"

#define FIX "tests/fixtures/"

static int meta_int(const lc_st_file *f, const char *key) {
    const char *v = lc_st_get_meta(f, key);
    return v ? atoi(v) : -1;
}

/* Reads tensor `name` (any shape) into a new buffer. */
static float *grab(const lc_st_file *f, const char *name) {
    const lc_st_tensor *t = lc_st_find(f, name);
    CHECK(t != NULL, "fixture lacks %s", name);
    if (!t) return NULL;
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    float *x = malloc(sizeof(float) * (n ? n : 1));
    CHECK(lc_st_read(f, name, t->dtype, t->ndim, t->shape, x) == LC_OK, "%s", lc_last_error());
    return x;
}

static void attn_case(const lc_st_file *f, const char *c) {
    char k[64];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", c, s), k)
    int B = meta_int(f, KEY("batch")), H = meta_int(f, KEY("n_head")), T = meta_int(f, KEY("seq_len"));
    int M = meta_int(f, KEY("mem")), D = meta_int(f, KEY("head_dim")), W = meta_int(f, KEY("window"));
    int S = M + T;
    float *q = grab(f, KEY("q")), *kk = grab(f, KEY("k")), *v = grab(f, KEY("v")), *r = grab(f, KEY("r"));
    float *u = grab(f, KEY("u")), *vb = grab(f, KEY("vb")), *dout = grab(f, KEY("dout")), *scale = grab(f, KEY("scale"));
    float *want_out = grab(f, KEY("out")), *want_lse = grab(f, KEY("lse"));
    float *want_dq = grab(f, KEY("dq")), *want_dk = grab(f, KEY("dk")), *want_dv = grab(f, KEY("dv"));
    float *want_dr = grab(f, KEY("dr")), *want_du = grab(f, KEY("du")), *want_dvb = grab(f, KEY("dvb"));
    long HD = (long)H * D;
    float *out = calloc((size_t)(B * T * HD), 4), *lse = calloc((size_t)(B * H * T), 4);
    float *dq = calloc((size_t)(B * T * HD), 4), *dk = calloc((size_t)(B * S * HD), 4), *dv = calloc((size_t)(B * S * HD), 4);
    float *dr = calloc((size_t)(S * HD), 4), *du = calloc((size_t)HD, 4), *dvb = calloc((size_t)HD, 4);
    lc_attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.B = B, sh.H = H, sh.T = T, sh.M = M, sh.D = D, sh.causal = 1, sh.scale = scale[0], sh.window = W, sh.relpos = 1, sh.threads = 2;
    float *work = calloc(lc_attn_full.workspace_floats(&sh, NULL) + 1, 4);
    lc_attn_relpos rel = {r, u, vb, dr, du, dvb};
    lc_attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){q, T * HD, HD}, t.k = (lc_view){kk, S * HD, HD}, t.v = (lc_view){v, S * HD, HD};
    t.out = (lc_view){out, T * HD, HD}, t.dout = (lc_view){dout, T * HD, HD};
    t.dq = (lc_view){dq, T * HD, HD}, t.dk = (lc_view){dk, S * HD, HD}, t.dv = (lc_view){dv, S * HD, HD};
    t.lse = lse;
    t.rel = &rel;
    lc_attn_full.forward(&sh, NULL, &t, work);
    lc_attn_full.backward(&sh, NULL, &t, work);
    char label[64];
#define CMP(name, got, want, n) snprintf(label, sizeof label, "xl_attn %s %s", c, name); CHECK_CLOSE(label, got, want, n, 1e-4, 1e-5)
    CMP("out", out, want_out, B * T * HD);
    CMP("lse", lse, want_lse, B * H * T);
    CMP("dq", dq, want_dq, B * T * HD);
    CMP("dk", dk, want_dk, B * S * HD);
    CMP("dv", dv, want_dv, B * S * HD);
    CMP("dr", dr, want_dr, S * HD);
    CMP("du", du, want_du, HD);
    CMP("dv_bias", dvb, want_dvb, HD);
#undef CMP
#undef KEY
    float *all[] = {q, kk, v, r, u, vb, dout, scale, want_out, want_lse, want_dq, want_dk, want_dv, want_dr, want_du,
                    want_dvb, out, lse, dq, dk, dv, dr, du, dvb, work};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

TEST(relative_attention_matches_pytorch) {
    lc_st_file *f;
    if (lc_st_open(FIX "xl_attn.safetensors", &f)) { CHECK(0, "%s", lc_last_error()); return; }
    attn_case(f, "a");
    attn_case(f, "b");
    lc_st_close(f);
}

/* Builds the fixture's model and checks two consecutive segments against PyTorch. */
static void model_case(const char *name) {
    char path[128];
    snprintf(path, sizeof path, FIX "xl_%s.safetensors", name);
    lc_st_file *f;
    if (lc_st_open(path, &f)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 256, c.model = LC_MODEL_XL;
    c.n_layer = meta_int(f, "n_layer"), c.d_model = meta_int(f, "d_model"), c.n_head = meta_int(f, "n_head");
    c.d_ff = meta_int(f, "d_ff"), c.seq_len = meta_int(f, "seq_len"), c.tied = meta_int(f, "tied");
    c.mem_len = meta_int(f, "mem_len"), c.clamp_len = meta_int(f, "clamp_len");
    c.same_length = meta_int(f, "same_length"), c.shared_uv = meta_int(f, "shared_uv");
    c.norm = strcmp(lc_st_get_meta(f, "norm"), "pre") == 0 ? LC_NORM_PRE : LC_NORM_POST;
    c.activation = strcmp(lc_st_get_meta(f, "activation"), "gelu") == 0 ? LC_ACT_GELU : LC_ACT_RELU;
    int B = meta_int(f, "batch"), T = c.seq_len, N = B * T;
    lc_model *m;
    if (lc_model_create(&c, B, 1, &m)) { CHECK(0, "%s", lc_last_error()); lc_st_close(f); return; }
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        CHECK(lc_st_read(f, s->name, LC_DT_F32, s->ndim, s->shape, m->params + s->offset) == LC_OK, "%s",
              lc_last_error());
    }
    char label[128], key[96];
    for (int seg = 1; seg <= 2; seg++) {
        int *tok = malloc(sizeof(int) * (size_t)N), *tgt = malloc(sizeof(int) * (size_t)N);
        long bt[2] = {B, T};
        snprintf(key, sizeof key, "tokens%d", seg);
        CHECK(lc_st_read(f, key, LC_DT_I32, 2, bt, tok) == LC_OK, "%s", lc_last_error());
        snprintf(key, sizeof key, "targets%d", seg);
        CHECK(lc_st_read(f, key, LC_DT_I32, 2, bt, tgt) == LC_OK, "%s", lc_last_error());
        double sum;
        long count;
        CHECK(lc_model_forward(m, tok, tgt, B, T, 1, &sum, &count) == LC_OK, "%s", lc_last_error());
        snprintf(key, sizeof key, "expected.logits%d", seg);
        float *want = grab(f, key);
        snprintf(label, sizeof label, "%s segment %d logits", name, seg);
        CHECK_CLOSE(label, m->logits, want, (long)N * 256, 1e-4, 2e-5);
        free(want);
        snprintf(key, sizeof key, "expected.loss%d", seg);
        want = grab(f, key);
        double loss = sum / (double)count;
        snprintf(label, sizeof label, "%s segment %d loss", name, seg);
        CHECK_CLOSE(label, &loss, want, 1, 1e-5, 0);
        free(want);
        lc_model_zero_grad(m);
        lc_model_backward(m, 1.0f / (float)count);
        for (int i = 0; i < m->ptab.n; i++) {
            const lc_slot *s = &m->ptab.slots[i];
            snprintf(key, sizeof key, "grad%d.%s", seg, s->name);
            want = grab(f, key);
            snprintf(label, sizeof label, "%s seg %d d%s", name, seg, s->name);
            if (want) CHECK_CLOSE(label, m->grads + s->offset, want, (long)s->count, 1e-4, 1e-6);
            free(want);
        }
        if (seg == 1) { /* the memory after segment 1 */
            int rows = T < c.mem_len ? T : c.mem_len;
            CHECK(lc_model_memory_rows(m) == rows, "memory rows %d, want %d", lc_model_memory_rows(m), rows);
            for (int l = 0; l < c.n_layer; l++) {
                snprintf(key, sizeof key, "mem1.%d", l);
                want = grab(f, key);
                float *got = malloc(sizeof(float) * (size_t)(B * rows * c.d_model));
                for (int b = 0; b < B; b++)
                    memcpy(got + (size_t)b * rows * c.d_model, m->mem[l] + (size_t)b * m->cap_M * c.d_model,
                           sizeof(float) * (size_t)(rows * c.d_model));
                snprintf(label, sizeof label, "%s memory of layer %d", name, l);
                if (want) CHECK_CLOSE(label, got, want, (long)B * rows * c.d_model, 1e-5, 1e-6);
                free(got);
                free(want);
            }
        }
        free(tok);
        free(tgt);
    }
    lc_model_free(m);
    lc_st_close(f);
}

TEST(model_pre_gelu_tied_matches_pytorch) { model_case("pre_gelu_tied"); }
TEST(model_post_relu_untied_matches_pytorch) { model_case("post_relu_untied"); }

static lc_model *small_xl(int same_length, int clamp) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.seq_len = 16, c.mem_len = 16, c.same_length = same_length, c.clamp_len = clamp;
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 1, 11, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static const char *text = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n";

TEST(segments_with_memory_equal_one_long_segment) {
    lc_model *m = small_xl(0, 0);
    if (!m) return;
    size_t n = strlen(text);
    double whole, pieces;
    long nw, np;
    CHECK(lc_model_resize(m, 1, (int)n, (int)n) == LC_OK, "%s", lc_last_error());
    CHECK(lc_evaluate(m, (const uint8_t *)text, n, (int)n, 1, &whole, &nw) == LC_OK, "%s", lc_last_error());
    CHECK(lc_model_resize(m, 1, 16, (int)n) == LC_OK, "%s", lc_last_error());
    CHECK(lc_evaluate(m, (const uint8_t *)text, n, 16, 1, &pieces, &np) == LC_OK, "%s", lc_last_error());
    CHECK(nw == np && nw == (long)n - 1, "both score every byte after the first");
    CHECK_CLOSE("bpc: segments of 16 + memory vs one segment", &pieces, &whole, 1, 1e-5, 0);
    /* the comparison can fail: without enough memory the result differs */
    double short_mem;
    CHECK(lc_model_resize(m, 1, 16, 4) == LC_OK, "%s", lc_last_error());
    CHECK(lc_evaluate(m, (const uint8_t *)text, n, 16, 1, &short_mem, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(fabs(short_mem - whole) > 1e-4, "a 4-row memory must change the result (%g vs %g)", short_mem, whole);
    lc_model_free(m);
}

/* Feeding one byte at a time against the memory gives the logits of the one-segment evaluation. */
static void incremental_case(int same_length, int clamp) {
    lc_model *m = small_xl(same_length, clamp);
    if (!m) return;
    int n = 40, tok[40];
    for (int i = 0; i < n; i++) tok[i] = (uint8_t)text[i];
    int mem = same_length ? 12 : n;
    CHECK(lc_model_resize(m, 1, n, mem) == LC_OK, "%s", lc_last_error());
    CHECK(lc_model_forward(m, tok, NULL, 1, n, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    float *whole = malloc(sizeof(float) * (size_t)n * 256), *step = malloc(sizeof(float) * (size_t)n * 256);
    memcpy(whole, lc_model_logits(m), sizeof(float) * (size_t)n * 256);
    lc_model_reset_memory(m);
    for (int i = 0; i < n; i++) {
        CHECK(lc_model_forward(m, tok + i, NULL, 1, 1, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
        memcpy(step + (size_t)i * 256, lc_model_logits(m), sizeof(float) * 256);
    }
    char label[96];
    snprintf(label, sizeof label, "incremental logits (same_length %d, clamp %d)", same_length, clamp);
    CHECK_CLOSE(label, step, whole, (long)n * 256, 1e-4, 1e-5);
    lc_model_reset_memory(m); /* control: the last byte alone, without memory, must differ */
    CHECK(lc_model_forward(m, tok + n - 1, NULL, 1, 1, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    float diff = 0;
    for (int j = 0; j < 256; j++) diff += fabsf(lc_model_logits(m)[j] - whole[(size_t)(n - 1) * 256 + j]);
    CHECK(diff > 1e-3, "without memory the logits must change (sum |diff| = %g)", diff);
    free(whole);
    free(step);
    lc_model_free(m);
}

TEST(incremental_generation_equals_segment_evaluation) {
    incremental_case(0, 0);
    incremental_case(0, 5);
    incremental_case(1, 0);
}

/* Inference keeps keys and values instead of recomputing them from the hidden-state memory: both must
 * give the same logits (dropout is 0, so train = 1 differs only in the memory's form), including a
 * switch from hidden-state memory to the cache in the middle of a stream. */
TEST(cached_inference_equals_recomputation) {
    lc_model *m = small_xl(0, 0);
    if (!m) return;
    int tok[48];
    for (int i = 0; i < 48; i++) tok[i] = (uint8_t)text[i];
    float *want = malloc(sizeof(float) * 16 * 256), *got = malloc(sizeof(float) * 16 * 256);
    for (int s = 0; s < 3; s++) lc_model_forward(m, tok + 16 * s, NULL, 1, 16, 1, NULL, NULL);
    memcpy(want, lc_model_logits(m), sizeof(float) * 16 * 256);
    lc_model_reset_memory(m);
    for (int s = 0; s < 3; s++) lc_model_forward(m, tok + 16 * s, NULL, 1, 16, 0, NULL, NULL);
    memcpy(got, lc_model_logits(m), sizeof(float) * 16 * 256);
    CHECK_CLOSE("cached vs recomputed keys/values", got, want, 16 * 256, 1e-4, 1e-5);
    lc_model_reset_memory(m);
    for (int s = 0; s < 2; s++) lc_model_forward(m, tok + 16 * s, NULL, 1, 16, 1, NULL, NULL);
    lc_model_forward(m, tok + 32, NULL, 1, 16, 0, NULL, NULL);
    CHECK_CLOSE("hidden-state memory converted to the cache", lc_model_logits(m), want, 16 * 256, 1e-4, 1e-5);
    CHECK(lc_model_forward(m, tok, tok, 1, 16, 1, NULL, NULL) == LC_ERR_ARG, "training on inference state is refused");
    free(want);
    free(got);
    lc_model_free(m);
}

/* With a memory at least 4 times the segment, evaluation takes the dense path, and the model keeps its
 * cached keys, values and r a second time in the layouts that path and generation read (key panels,
 * value rows: src/kernels/panel.c). Over enough segments for the cache to compact several times, the
 * cached pass (train = 0) gives the logits of the recomputed one (train = 1, dropout 0: the hidden-state
 * memory) of a twin model, segment by segment, for segments of 8 and for one byte at a time. */
TEST(cached_stores_through_compactions_equal_recomputation) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.seq_len = 8, c.mem_len = 40, c.dropout = 0;
    const int lens[2] = {8, 1};
    for (int li = 0; li < 2; li++) {
        lc_model *cached = NULL, *recomputed = NULL;
        CHECK(lc_model_create(&c, 1, 11, &cached) == LC_OK && lc_model_create(&c, 1, 11, &recomputed) == LC_OK, "%s",
              lc_last_error());
        if (!cached || !recomputed) {
            lc_model_free(cached), lc_model_free(recomputed);
            return;
        }
        const int T = lens[li], n = T == 8 ? 240 : 120; /* 6 and 3 compactions (every mem_len bytes) */
        double worst = 0;
        for (int at = 0; at + T <= n; at += T) {
            int tok[8];
            for (int i = 0; i < T; i++) tok[i] = (uint8_t)text[(at + i) % strlen(text)] ^ ((at + i) / 64);
            CHECK(lc_model_forward(cached, tok, NULL, 1, T, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
            CHECK(lc_model_forward(recomputed, tok, NULL, 1, T, 1, NULL, NULL) == LC_OK, "%s", lc_last_error());
            const float *a = lc_model_logits(cached), *b = lc_model_logits(recomputed);
            for (int i = 0; i < T * 256; i++) {
                const double err = fabs((double)a[i] - b[i]) / (1e-5 + 1e-4 * fabs((double)b[i]));
                worst = err > worst ? err : worst;
            }
        }
        CHECK(worst <= 1.0, "segments of %d: cached logits differ from recomputed by %g of the tolerance", T, worst);
        printf("  segments of %d, memory 40, %d bytes: worst difference %.3g of the tolerance\n", T, n, worst);
        lc_model_free(cached), lc_model_free(recomputed);
    }
}

TEST(memory_carries_across_training_batches) {
    lc_corpus corpus;
    if (lc_corpus_load("data/tinyshakespeare.txt", LC_SPLIT_AUTO, &corpus)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 4, o.batch = 2, o.warmup = 1, o.eval_every = 0;
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.seq_len = 16, c.mem_len = 16;
    lc_model *a, *b;
    if (lc_model_create(&c, 2, 5, &a) || lc_model_create(&c, 2, 5, &b)) { CHECK(0, "%s", lc_last_error()); return; }
    /* a: 4 steps in one run; b: 4 single-step runs; c2: the same, with the memory reset before the last */
    CHECK(lc_train(a, &corpus, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_model_memory_rows(a) == 16, "memory holds %d rows after training", lc_model_memory_rows(a));
    o.stop_after = 1;
    for (int i = 0; i < 3; i++) CHECK(lc_train(b, &corpus, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    lc_model *c2;
    CHECK(lc_model_create(&c, 2, 5, &c2) == LC_OK, "%s", lc_last_error());
    for (int i = 0; i < 3; i++) lc_train(c2, &corpus, &o, NULL, NULL);
    lc_model_reset_memory(c2);
    lc_train(b, &corpus, &o, NULL, NULL);
    lc_train(c2, &corpus, &o, NULL, NULL);
    size_t bytes = a->ptab.total * sizeof(float);
    CHECK(memcmp(a->params, b->params, bytes) == 0, "memory persists across separate training calls");
    CHECK(memcmp(a->params, c2->params, bytes) != 0, "resetting the memory changes the result");
    lc_model_free(a);
    lc_model_free(b);
    lc_model_free(c2);
    lc_corpus_free(&corpus);
}

int main(void) {
    RUN(relative_attention_matches_pytorch);
    RUN(model_pre_gelu_tied_matches_pytorch);
    RUN(model_post_relu_untied_matches_pytorch);
    RUN(segments_with_memory_equal_one_long_segment);
    RUN(incremental_generation_equals_segment_evaluation);
    RUN(cached_inference_equals_recomputation);
    RUN(cached_stores_through_compactions_equal_recomputation);
    RUN(memory_carries_across_training_batches);
    return test_summary("test_xl");
}
