/* Tests of the attention layout of the model: kinds per layer and per head group from the spec string,
 * Q/K tied across heads, attention shared across layers, global tokens, the masked-LM encoder, and the
 * checkpoint of all of it. Gradients of the whole model are checked by directional finite differences
 * per attention tensor; sharing is checked against an unshared model holding the same weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "harness.h"
#include "longctx.h"
#include "models/lm/lm.h"

enum { B = 2, T = 32 };

static char tmpdir[] = "/tmp/lc_model_attn_XXXXXX";

typedef struct {
    const char *spec;
    lc_model_kind kind;
    int qk_share, attn_share;
    lc_objective objective;
    int extra; /* extra (global) tokens in front */
} layout;

static lc_model *make(layout l, uint64_t seed) {
    lc_config c;
    lc_config_preset(&c, "tiny"); /* 2 layers, width 64, 4 heads */
    c.model = l.kind;
    c.seq_len = T;
    c.mem_len = l.kind == LC_MODEL_XL ? T : 0;
    c.dropout = 0;
    snprintf(c.attn, sizeof c.attn, "%s", l.spec);
    c.qk_share = l.qk_share, c.attn_share = l.attn_share, c.objective = l.objective;
    c.extra_tokens = l.extra;
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, B, seed, &m) == LC_OK, "%s: %s", l.spec, lc_last_error());
    return m;
}

typedef struct {
    int tok[B * T], tgt[B * T];
} batch;

static batch make_batch(uint64_t seed, int mlm) {
    batch b;
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    for (int i = 0; i < B * T; i++) b.tok[i] = (int)(lc_rng_next(&rng) % 256), b.tgt[i] = (int)(lc_rng_next(&rng) % 256);
    if (mlm) lc_mlm_mask(b.tok, b.tgt, B * T, seed);
    return b;
}

/* Mean loss of one forward from an empty memory. */
static double loss_of(lc_model *m, const batch *x) {
    double sum = 0;
    long n = 0;
    lc_model_reset_memory(m);
    CHECK(lc_model_forward(m, x->tok, x->tgt, B, T, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    return n ? sum / (double)n : NAN;
}

/* Loss and gradients (into m->grads). */
static double loss_and_grad(lc_model *m, const batch *x) {
    double sum = 0;
    long n = 0;
    lc_model_reset_memory(m);
    lc_model_zero_grad(m);
    CHECK(lc_model_forward(m, x->tok, x->tgt, B, T, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    lc_model_backward(m, 1.0f / (float)n);
    return sum / (double)n;
}

/* For every parameter tensor whose name contains `part`: the directional derivative along a random unit
 * direction, by central differences, against the backward's gradient. */
static void check_gradients_eps(layout l, const char *part, double eps);
static void check_gradients(layout l, const char *part) { check_gradients_eps(l, part, 1e-3); }

static void check_gradients_eps(layout l, const char *part, double eps) {
    lc_model *m = make(l, 11);
    if (!m) return;
    /* Sharper attention than at initialisation, so query/key gradients are large enough to check. */
    for (int i = 0; i < m->ptab.n; i++)
        if (strstr(m->ptab.slots[i].name, "attn.qk"))
            for (size_t j = 0; j < m->ptab.slots[i].count; j++) m->params[m->ptab.slots[i].offset + j] *= 10.0f;
    const batch x = make_batch(5, l.objective == LC_OBJECTIVE_MLM);
    loss_and_grad(m, &x);
    float *g = malloc(sizeof(float) * m->ptab.total), *d = malloc(sizeof(float) * m->ptab.total);
    memcpy(g, m->grads, sizeof(float) * m->ptab.total);
    lc_rng rng;
    lc_rng_seed(&rng, 99);
    int checked = 0;
    for (int i = 0; i < m->ptab.n; i++) {
        const lc_slot *s = &m->ptab.slots[i];
        if (!strstr(s->name, part)) continue;
        /* direction: the gradient's own direction (the largest derivative, well above the rounding noise
         * of the loss) plus a random unit vector (so a gradient that is wrong in another direction shows) */
        double norm = 0, gnorm = 0, gd = 0;
        for (size_t j = 0; j < s->count; j++) gnorm += (double)g[s->offset + j] * g[s->offset + j];
        gnorm = gnorm > 0 ? sqrt(gnorm) : 1;
        for (size_t j = 0; j < s->count; j++) d[j] = lc_rng_normal(&rng), norm += (double)d[j] * d[j];
        for (size_t j = 0; j < s->count; j++) d[j] = (float)(d[j] / sqrt(norm) + g[s->offset + j] / gnorm);
        norm = 0;
        for (size_t j = 0; j < s->count; j++) norm += (double)d[j] * d[j];
        for (size_t j = 0; j < s->count; j++) d[j] = (float)(d[j] / sqrt(norm)), gd += (double)g[s->offset + j] * d[j];
        float *p = m->params + s->offset;
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        const double up = loss_of(m, &x);
        for (size_t j = 0; j < s->count; j++) p[j] -= 2 * (float)eps * d[j];
        const double down = loss_of(m, &x);
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        const double fd = (up - down) / (2 * eps);
        char label[96];
        snprintf(label, sizeof label, "%s %s", l.spec, s->name);
        CHECK_CLOSE(label, &gd, &fd, 1, 2e-2, 1e-4);
        checked++;
    }
    CHECK(checked > 0, "no parameter named *%s* in %s", part, l.spec);
    free(g);
    free(d);
    lc_model_free(m);
}

/* Copy every parameter of `from` into `to` by name; names of `to` missing from `from` are mapped by
 * `rename` (may be NULL). */
static void copy_params(lc_model *to, const lc_model *from, void (*rename)(const char *name, char *out, size_t n)) {
    for (int i = 0; i < to->ptab.n; i++) {
        const lc_slot *s = &to->ptab.slots[i];
        char name[LC_NAME_MAX];
        snprintf(name, sizeof name, "%s", s->name);
        int k = lc_table_find(&from->ptab, name);
        if (k < 0 && rename) {
            rename(s->name, name, sizeof name);
            k = lc_table_find(&from->ptab, name);
        }
        if (k < 0) continue; /* filled by the caller */
        CHECK(from->ptab.slots[k].count == s->count, "%s: sizes differ", s->name);
        memcpy(to->params + s->offset, from->params + from->ptab.slots[k].offset, sizeof(float) * s->count);
    }
}

static const float *grad_of(const lc_model *m, const char *name) {
    const int k = lc_table_find(&m->ptab, name);
    return k < 0 ? NULL : m->grads + m->ptab.slots[k].offset;
}

static size_t count_of(const lc_model *m, const char *name) {
    const int k = lc_table_find(&m->ptab, name);
    return k < 0 ? 0 : m->ptab.slots[k].count;
}

TEST(spelled_out_full_equals_default) {
    const batch x = make_batch(1, 0);
    const layout base = {"", LC_MODEL_XL, 0, 0, LC_OBJECTIVE_CLM};
    lc_model *a = make(base, 3);
    const char *same[] = {"full", "full;full", "2xfull+full", "1xfull+1xfull+2xfull"};
    const double want = loss_and_grad(a, &x);
    for (int i = 0; i < 4; i++) {
        layout l = base;
        l.spec = same[i];
        lc_model *b = make(l, 3);
        if (!b) continue;
        const double got = loss_and_grad(b, &x);
        char label[64];
        snprintf(label, sizeof label, "loss %s", same[i]);
        CHECK_CLOSE(label, &got, &want, 1, 1e-6, 0);
        snprintf(label, sizeof label, "grads %s", same[i]);
        CHECK_CLOSE(label, b->grads, a->grads, (long)b->ptab.total, 1e-5, 1e-8);
        lc_model_free(b);
    }
    lc_model_free(a);
}

TEST(kinds_reach_the_model) {
    /* A window wider than the segment is full attention; a narrow one is not. Per head group too. */
    const batch x = make_batch(2, 0);
    for (int xl = 0; xl <= 1; xl++) {
        const lc_model_kind kind = xl ? LC_MODEL_XL : LC_MODEL_VANILLA;
        lc_model *full = make((layout){"full", kind, 0, 0, 0}, 4), *wide = make((layout){"window:w=1000", kind, 0, 0, 0}, 4);
        lc_model *narrow = make((layout){"window:w=2", kind, 0, 0, 0}, 4);
        if (!full || !wide || !narrow) return;
        const double f = loss_of(full, &x), w = loss_of(wide, &x), n = loss_of(narrow, &x);
        CHECK_CLOSE(xl ? "xl: window w=1000 == full" : "vanilla: window w=1000 == full", &w, &f, 1, 1e-6, 0);
        CHECK(fabs(n - f) > 1e-4, "a narrow window must change the loss (%g vs %g)", n, f);
        lc_model_free(full);
        lc_model_free(wide);
        lc_model_free(narrow);
    }
    lc_model *full = make((layout){"full", LC_MODEL_VANILLA, 0, 0, 0}, 4);
    lc_model *mixed = make((layout){"2xwindow:w=1000+block:b=64", LC_MODEL_VANILLA, 0, 0, 0}, 4);
    lc_model *local = make((layout){"2xfull+block:b=4", LC_MODEL_VANILLA, 0, 0, 0}, 4);
    const double f = loss_of(full, &x), m = loss_of(mixed, &x), l = loss_of(local, &x);
    CHECK_CLOSE("groups window w=1000 + block b=64 == full", &m, &f, 1, 1e-6, 0);
    CHECK(fabs(l - f) > 1e-4, "2 local heads must change the loss (%g vs %g)", l, f);
    lc_model_free(full);
    lc_model_free(mixed);
    lc_model_free(local);
}

TEST(gradients_of_mixed_layers) {
    check_gradients((layout){"2xfull+window:w=3,dil=1/2", LC_MODEL_VANILLA, 0, 0, 0}, "attn");
    check_gradients((layout){"block:b=8;strided:s=4", LC_MODEL_VANILLA, 0, 0, 0}, "attn");
    check_gradients((layout){"window:w=5", LC_MODEL_XL, 0, 0, 0}, "attn");
    check_gradients((layout){"2xwindow:w=5,dil=2+block:b=8", LC_MODEL_XL, 0, 0, 0}, "attn");
    check_gradients((layout){"2xwindow:w=5,global=2+2xfull", LC_MODEL_VANILLA, 0, 0, 0}, "attn");
    check_gradients((layout){"2xwindow:w=3,global=0/9/20+2xfull", LC_MODEL_VANILLA, 0, 0, LC_OBJECTIVE_MLM}, "global");
    /* LSH buckets and routing clusters are piecewise constant in the inputs, so differences across a
     * boundary jump: one chunk holding every position (lsh) and one cluster (routing) keep the loss
     * smooth while the wiring is the same (the kinds' own tests cover their patterns).
     * Sorting by bucket still reorders the sums, so the loss carries rounding noise of ~1e-7 that a wider
     * step keeps small against the difference. */
    check_gradients_eps((layout){"window:w=3,global=1;lsh:buckets=4,chunk=64", LC_MODEL_VANILLA, 0, 0, LC_OBJECTIVE_MLM},
                        "attn", 4e-3);
    check_gradients_eps((layout){"2xlinformer:k=8+routing:clusters=1,window=64", LC_MODEL_VANILLA, 0, 0, LC_OBJECTIVE_MLM},
                        "attn", 4e-3);
    /* extra tokens in front (ETC-style globals): their embeddings and positions train too */
    check_gradients((layout){"window:w=4,global=3", LC_MODEL_VANILLA, 0, 0, LC_OBJECTIVE_MLM, 3}, "attn");
    check_gradients((layout){"window:w=4,global=3", LC_MODEL_VANILLA, 0, 0, 0, 3}, "w");
    check_gradients((layout){"2xwindow:w=4+2xstrided:s=3", LC_MODEL_VANILLA, 2, 2, LC_OBJECTIVE_MLM}, "attn");
}

static void untie_name(const char *name, char *out, size_t n) { snprintf(out, n, "%s", name); }

TEST(tied_qk_equals_duplicated_weights) {
    const batch x = make_batch(3, 0);
    lc_model *tied = make((layout){"full", LC_MODEL_VANILLA, 2, 0, 0}, 8);
    lc_model *plain = make((layout){"full", LC_MODEL_VANILLA, 0, 0, 0}, 9);
    if (!tied || !plain) return;
    const long C = 64, D = 16;
    /* parameters: per layer the query and key projections of 4 heads shrink to 2 (weights and biases) */
    const size_t saved = lc_model_num_params(plain) - lc_model_num_params(tied);
    CHECK(saved == (size_t)(2 * 2 * (2 * D * C + 2 * D)), "tying saves %zu parameters", saved);
    copy_params(plain, tied, untie_name);
    lc_model_expand_shared(tied);
    for (int l = 0; l < 2; l++) { /* the plain model's qkv = the tied model's expanded projection */
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d.attn.qkv.weight", l);
        memcpy(plain->params + plain->ptab.slots[lc_table_find(&plain->ptab, nm)].offset, tied->blk[l].qkv_w,
               sizeof(float) * 3 * C * C);
        snprintf(nm, sizeof nm, "blocks.%d.attn.qkv.bias", l);
        memcpy(plain->params + plain->ptab.slots[lc_table_find(&plain->ptab, nm)].offset, tied->blk[l].qkv_b,
               sizeof(float) * 3 * C);
    }
    const double lt = loss_and_grad(tied, &x), lp = loss_and_grad(plain, &x);
    CHECK_CLOSE("loss tied == duplicated", &lt, &lp, 1, 1e-6, 0);
    /* the tied gradient of query group j is the sum over its heads 2j, 2j+1 of the plain gradients */
    for (int l = 0; l < 2; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d.attn.qk.weight", l);
        const float *gt = grad_of(tied, nm);
        snprintf(nm, sizeof nm, "blocks.%d.attn.qkv.weight", l);
        const float *gp = grad_of(plain, nm);
        if (!gt || !gp) { CHECK(0, "missing tensors"); return; }
        float *want = calloc((size_t)(4 * D * C), sizeof(float));
        for (int part = 0; part < 2; part++) /* query rows, key rows */
            for (int h = 0; h < 4; h++)
                for (long i = 0; i < D * C; i++)
                    want[(part * 2 + h / 2) * D * C + i] += gp[(part * C + h * D) * C + i];
        CHECK_CLOSE("grad qk = sum over tied heads", gt, want, 4 * D * C, 1e-4, 1e-7);
        snprintf(nm, sizeof nm, "blocks.%d.attn.v.weight", l);
        CHECK_CLOSE("grad v", grad_of(tied, nm), gp + 2 * C * C, C * C, 1e-4, 1e-7);
        free(want);
    }
    lc_model_free(tied);
    lc_model_free(plain);
}

static void owner_name(const char *name, char *out, size_t n) { /* blocks.1.attn.* / ln1.* -> blocks.0.* */
    snprintf(out, n, "%s", name);
    if (strncmp(name, "blocks.1.", 9) == 0 && (strstr(name, ".attn.") || strstr(name, ".ln1."))) out[7] = '0';
}

TEST(shared_attention_equals_copied_layers) {
    const batch x = make_batch(4, 0);
    for (int xl = 0; xl <= 1; xl++) {
        const lc_model_kind kind = xl ? LC_MODEL_XL : LC_MODEL_VANILLA;
        lc_model *shared = make((layout){"window:w=6", kind, 0, 2, 0}, 12);
        lc_model *plain = make((layout){"window:w=6", kind, 0, 0, 0}, 13);
        if (!shared || !plain) return;
        size_t module = 0;
        for (int i = 0; i < plain->ptab.n; i++)
            if (strncmp(plain->ptab.slots[i].name, "blocks.1.", 9) == 0 &&
                (strstr(plain->ptab.slots[i].name, ".attn.") || strstr(plain->ptab.slots[i].name, ".ln1.")))
                module += plain->ptab.slots[i].count;
        CHECK(lc_model_num_params(plain) - lc_model_num_params(shared) == module,
              "sharing saves one attention module (%zu parameters)", module);
        copy_params(plain, shared, owner_name);
        const double ls = loss_and_grad(shared, &x), lp = loss_and_grad(plain, &x);
        CHECK_CLOSE(xl ? "xl: loss shared == copied" : "loss shared == copied", &ls, &lp, 1, 1e-6, 0);
        const char *parts[] = {"attn.qkv.weight", "attn.proj.weight", "ln1.weight"};
        for (int p = 0; p < 3; p++) {
            char n0[64], n1[64];
            snprintf(n0, sizeof n0, "blocks.0.%s", parts[p]);
            snprintf(n1, sizeof n1, "blocks.1.%s", parts[p]);
            const size_t n = count_of(plain, n0);
            float *want = malloc(sizeof(float) * n);
            for (size_t i = 0; i < n; i++) want[i] = grad_of(plain, n0)[i] + grad_of(plain, n1)[i];
            CHECK_CLOSE(parts[p], grad_of(shared, n0), want, (long)n, 1e-4, 1e-7);
            free(want);
        }
        lc_model_free(shared);
        lc_model_free(plain);
    }
}

TEST(xl_window_cache_equals_recomputation) {
    /* Inference keeps keys and values of the memory (train = 0); training recomputes them from the
     * hidden-state memory (train = 1, no dropout here): the windowed XL model must agree over segments. */
    const layout l = {"window:w=9", LC_MODEL_XL, 0, 0, 0};
    lc_model *a = make(l, 31), *b = make(l, 31);
    if (!a || !b) return;
    for (int seg = 0; seg < 3; seg++) {
        const batch x = make_batch(40 + seg, 0);
        CHECK(lc_model_forward(a, x.tok, NULL, B, T, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
        CHECK(lc_model_forward(b, x.tok, NULL, B, T, 1, NULL, NULL) == LC_OK, "%s", lc_last_error());
        char label[64];
        snprintf(label, sizeof label, "logits, segment %d", seg);
        CHECK_CLOSE(label, lc_model_logits(a), lc_model_logits(b), B * T * 256, 1e-4, 1e-5);
    }
    lc_model_free(a);
    lc_model_free(b);
}

TEST(extra_tokens_are_seen_not_scored) {
    /* Extra tokens add embedding and position rows; they are attended to but never scored. (In the last
     * layer their own rows feed nothing scored, so that layer's global projection gets no gradient.) */
    lc_model *plain = make((layout){"full", LC_MODEL_VANILLA, 0, 0, 0, 0}, 50);
    lc_model *extra = make((layout){"full", LC_MODEL_VANILLA, 0, 0, 0, 4}, 50);
    if (!plain || !extra) return;
    CHECK(lc_model_num_params(extra) - lc_model_num_params(plain) == 2 * 4 * 64, "4 extra rows of wte and wpe");
    const batch x = make_batch(60, 0);
    double sum;
    long n;
    CHECK(lc_model_forward(extra, x.tok, x.tgt, B, T, 0, &sum, &n) == LC_OK, "%s", lc_last_error());
    CHECK(n == B * T, "only the given positions are scored (%ld)", n);
    lc_model_free(plain);
    lc_model_free(extra);
}

TEST(encoder_is_bidirectional) {
    for (int mlm = 0; mlm <= 1; mlm++) {
        lc_model *m = make((layout){"window:w=40", LC_MODEL_VANILLA, 0, 0, mlm ? LC_OBJECTIVE_MLM : LC_OBJECTIVE_CLM}, 5);
        if (!m) return;
        batch x = make_batch(6, 0);
        float first[256];
        lc_model_forward(m, x.tok, NULL, 1, T, 0, NULL, NULL);
        memcpy(first, lc_model_logits(m), sizeof first);
        x.tok[T - 1] ^= 1; /* change the last byte */
        lc_model_forward(m, x.tok, NULL, 1, T, 0, NULL, NULL);
        const int changed = memcmp(first, lc_model_logits(m), sizeof first) != 0;
        CHECK(changed == mlm, "%s: the first position %s see the last", mlm ? "mlm" : "clm", mlm ? "must" : "must not");
        lc_model_free(m);
    }
}

TEST(mlm_masking_rule) {
    enum { N = 200000 };
    int *tok = malloc(sizeof(int) * N), *tgt = malloc(sizeof(int) * N), *again = malloc(sizeof(int) * N);
    long chosen = 0, masked = 0, same = 0, ok = 1;
    for (int i = 0; i < N; i++) tok[i] = 'a' + i % 26;
    lc_mlm_mask(tok, tgt, N, 77);
    for (int i = 0; i < N; i++) {
        const int orig = 'a' + i % 26;
        if (tgt[i] < 0) { ok &= tok[i] == orig; continue; }
        ok &= tgt[i] == orig;
        chosen++;
        masked += tok[i] == LC_MASK_TOKEN;
        same += tok[i] == orig;
    }
    printf("  chosen %.4f, of them masked %.4f, unchanged %.4f\n", (double)chosen / N, (double)masked / chosen,
           (double)same / chosen);
    CHECK(ok, "targets are the original bytes; unchosen tokens stay");
    CHECK(fabs((double)chosen / N - 0.15) < 0.005, "15%% chosen");
    CHECK(fabs((double)masked / chosen - 0.8) < 0.01, "80%% of them masked");
    /* unchanged: 10% kept plus the random bytes that happen to equal the original (1/256 of 10%) */
    CHECK(fabs((double)same / chosen - 0.1004) < 0.01, "10%% unchanged");
    for (int i = 0; i < N; i++) again[i] = 'a' + i % 26;
    int *tgt2 = malloc(sizeof(int) * N);
    lc_mlm_mask(again, tgt2, N, 77);
    CHECK(memcmp(again, tok, sizeof(int) * N) == 0 && memcmp(tgt, tgt2, sizeof(int) * N) == 0, "deterministic");
    free(tok), free(tgt), free(again), free(tgt2);
}

TEST(checkpoint_keeps_the_layout) {
    /* a long spec: metadata values must hold it whole */
    const layout l = {"1xwindow:w=3,dil=2+1xwindow:w=4,dil=1+block:b=8;1xstrided:s=5+1xstrided:s=6+1xblock:b=4+window:w=9",
                      LC_MODEL_VANILLA, 2, 0, LC_OBJECTIVE_MLM};
    lc_model *m = make(l, 21), *back = NULL;
    if (!m) return;
    const batch x = make_batch(8, 1);
    const double want = loss_of(m, &x);
    lc_train_options o;
    lc_train_options_default(&o);
    char path[256];
    snprintf(path, sizeof path, "%s/layout.ckpt", tmpdir);
    CHECK(lc_checkpoint_save(m, &o, path) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_load(path, B, &back, NULL) == LC_OK, "%s", lc_last_error());
    if (back) {
        CHECK(strcmp(back->cfg.attn, l.spec) == 0 && back->cfg.qk_share == 2 && back->cfg.objective == LC_OBJECTIVE_MLM,
              "layout round-trips (attn '%s')", back->cfg.attn);
        const double got = loss_of(back, &x);
        CHECK_CLOSE("loss after reload", &got, &want, 1, 1e-12, 1e-12);
    }
    lc_model_free(m);
    lc_model_free(back);
}

TEST(bad_layouts_are_named) {
    const struct {
        layout l;
        const char *message;
    } bad[] = {
        {{"window:w=0", LC_MODEL_VANILLA, 0, 0, 0}, "w=0"},
        {{"sparse", LC_MODEL_VANILLA, 0, 0, 0}, "unknown kind 'sparse'"},
        {{"3xfull", LC_MODEL_VANILLA, 0, 0, 0}, "cover 3 heads"},
        {{"full;full;full", LC_MODEL_VANILLA, 0, 0, 0}, "3 layer specs"},
        {{"window:w=4,width=3", LC_MODEL_VANILLA, 0, 0, 0}, "no option 'width'"},
        {{"block:b", LC_MODEL_VANILLA, 0, 0, 0}, "not key=value"},
        {{"full+full", LC_MODEL_VANILLA, 0, 0, 0}, "only one head group"},
        {{"full", LC_MODEL_VANILLA, 3, 0, 0}, "share-qk 3"},
        {{"full", LC_MODEL_XL, 0, 0, LC_OBJECTIVE_MLM}, "needs --model vanilla"},
        {{"2xlinformer:k=4+full", LC_MODEL_VANILLA, 0, 0, 0}, "bidirectional only"},
        {{"window:w=4,global=100", LC_MODEL_VANILLA, 0, 0, 0}, "global=100"},
        {{"window:w=4,global=5/3", LC_MODEL_VANILLA, 0, 0, 0}, "positions must increase"},
        {{"window:w=4,global=0/64", LC_MODEL_VANILLA, 0, 0, 0}, "global position 64 is outside"},
        {{"window:w=4,global=2", LC_MODEL_XL, 0, 0, 0}, "global tokens need"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lc_config c;
        lc_config_preset(&c, "tiny");
        c.model = bad[i].l.kind;
        c.mem_len = c.model == LC_MODEL_XL ? c.seq_len : 0;
        snprintf(c.attn, sizeof c.attn, "%s", bad[i].l.spec);
        c.qk_share = bad[i].l.qk_share, c.objective = bad[i].l.objective;
        lc_model *m = NULL;
        const lc_status st = lc_model_create(&c, 1, 1, &m);
        CHECK(st == LC_ERR_ARG && !m && strstr(lc_last_error(), bad[i].message), "'%s': got %d '%s', want '%s'",
              bad[i].l.spec, st, lc_last_error(), bad[i].message);
        lc_model_free(m);
    }
}

int main(void) {
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    RUN(spelled_out_full_equals_default);
    RUN(kinds_reach_the_model);
    RUN(gradients_of_mixed_layers);
    RUN(tied_qk_equals_duplicated_weights);
    RUN(shared_attention_equals_copied_layers);
    RUN(xl_window_cache_equals_recomputation);
    RUN(extra_tokens_are_seen_not_scored);
    RUN(encoder_is_bidirectional);
    RUN(mlm_masking_rule);
    RUN(checkpoint_keeps_the_layout);
    RUN(bad_layouts_are_named);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) printf("could not remove %s\n", tmpdir);
    return test_summary("test_model_attn");
}
