/* The binding API (include/longctx/flat.h): configuration and training options by name, tensor
 * enumeration and pointers, logits into the caller's buffer, the byte-at-a-time generator against
 * lc_sample, evaluation of a file against lc_evaluate, training on a file with the progress callback, and
 * the HIBERT summarizer against the model it holds. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/threads.h"
#include "harness.h"
#include "longctx.h"
#include "longctx/flat.h"
#include "nn/lm_fields.h"
#include "test_files.h"

static lc_config tiny(lc_model_kind kind) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.n_layer = 2, c.d_model = 32, c.n_head = 2, c.d_ff = 64, c.seq_len = 16;
    c.model = kind;
    c.mem_len = kind == LC_MODEL_XL ? 16 : 0;
    return c;
}

TEST(config_keys_round_trip_and_aliases) {
    lc_config *c = lc_config_new();
    CHECK(c && c->n_layer == 4 && c->seq_len == 128, "new config holds the small preset");
    char buf[LC_ATTN_SPEC_CHARS];
    int n = 0;
    lc_value_kind kind;
    for (const char *key; (key = lc_config_key(n, &kind)); n++) {
        CHECK(lc_config_get_str(c, key, buf, sizeof buf) == LC_OK, "get %s: %s", key, lc_last_error());
        CHECK(lc_config_set_str(c, key, buf) == LC_OK, "set %s back to '%s': %s", key, buf, lc_last_error());
        CHECK(strcmp(lc_last_error(), "") == 0, "a success clears the message");
    }
    CHECK(n == LC_LM_FIELD_COUNT, "%d config fields listed (one per row of nn/lm_fields.h), got %d", LC_LM_FIELD_COUNT, n);
    lc_config_default(c);
    lc_config d;
    lc_config_default(&d);
    CHECK(lc_config_set_str(c, "--layers", "3") == LC_OK && c->n_layer == 3, "CLI flag name sets n_layer");
    CHECK(lc_config_set_str(c, "seg-len", "40") == LC_OK && c->seq_len == 40, "seg-len sets seq_len");
    CHECK(lc_config_set_str(c, "seq_len", "41") == LC_OK && c->seq_len == 41, "field name");
    CHECK(lc_config_set_str(c, "share_qk", "2") == LC_OK && c->qk_share == 2, "share_qk alias");
    CHECK(lc_config_set_str(c, "untied", "true") == LC_OK && c->tied == 0, "untied inverts tied");
    CHECK(lc_config_get_str(c, "untied", buf, sizeof buf) == LC_OK && strcmp(buf, "1") == 0, "untied reads 1");
    CHECK(lc_config_set_str(c, "norm", "post") == LC_OK && c->norm == LC_NORM_POST, "enum by name");
    CHECK(lc_config_set_str(c, "model", "vanilla") == LC_OK && c->model == LC_MODEL_VANILLA, "model by name");
    CHECK(lc_config_set_str(c, "dropout", "0.25") == LC_OK && c->dropout == 0.25f, "float");
    CHECK(lc_config_set_str(c, "attn", "window:w=8") == LC_OK && strcmp(c->attn, "window:w=8") == 0, "spec");
    CHECK(lc_config_get_str(c, "dropout", buf, sizeof buf) == LC_OK && strcmp(buf, "0.25") == 0, "float reads back");
    CHECK(lc_config_get_str(c, "model", buf, sizeof buf) == LC_OK && strcmp(buf, "vanilla") == 0, "enum reads name");
    CHECK(lc_config_set_str(c, "precision", "bf16") == LC_OK && c->precision == LC_PRECISION_BF16, "precision");
    CHECK(lc_config_get_str(c, "precision", buf, sizeof buf) == LC_OK && strcmp(buf, "bf16") == 0, "precision reads");
    /* refusals name the key and change nothing */
    lc_config before = *c;
    CHECK(lc_config_set_str(c, "bogus", "1") == LC_ERR_ARG && strstr(lc_last_error(), "bogus") &&
              strstr(lc_last_error(), "n_layer"),
          "unknown key lists the known ones: %s", lc_last_error());
    CHECK(lc_config_set_str(c, "layers", "3x") == LC_ERR_ARG && strstr(lc_last_error(), "layers"), "bad int");
    CHECK(lc_config_set_str(c, "layers", "99999999999") == LC_ERR_ARG, "int overflow");
    CHECK(lc_config_set_str(c, "dropout", "") == LC_ERR_ARG, "empty float");
    CHECK(lc_config_set_str(c, "tied", "maybe") == LC_ERR_ARG, "bad bool");
    CHECK(lc_config_set_str(c, "norm", "mid") == LC_ERR_ARG && strstr(lc_last_error(), "pre or post"), "bad enum");
    CHECK(lc_config_set_str(c, "precision", "fp16") == LC_ERR_ARG && strstr(lc_last_error(), "fp32 or bf16"),
          "bad precision");
    CHECK(lc_config_set_str(c, "layers", NULL) == LC_ERR_ARG, "no value");
    char big[LC_ATTN_SPEC_CHARS + 8];
    memset(big, 'a', sizeof big - 1), big[sizeof big - 1] = 0;
    CHECK(lc_config_set_str(c, "attn", big) == LC_ERR_ARG, "spec too long");
    CHECK(memcmp(&before, c, sizeof before) == 0, "failed sets change nothing");
    CHECK(lc_config_get_str(c, "attn", buf, 4) == LC_ERR_ARG, "small buffer refused");
    CHECK(lc_config_get_str(c, "nope", buf, sizeof buf) == LC_ERR_ARG, "get unknown key");
    CHECK(lc_config_key(-1, NULL) == NULL && lc_config_key(LC_LM_FIELD_COUNT, NULL) == NULL, "past the end");
    lc_config_free(c);
}

TEST(train_options_by_name) {
    lc_train_options *o = lc_train_options_new();
    lc_train_options d;
    lc_train_options_default(&d);
    CHECK(o && o->steps == d.steps && o->lr == d.lr && o->seed == d.seed, "defaults");
    char buf[64];
    int n = 0;
    for (const char *key; (key = lc_train_options_key(n, NULL)); n++) {
        CHECK(lc_train_options_get_str(o, key, buf, sizeof buf) == LC_OK, "get %s", key);
        CHECK(lc_train_options_set_str(o, key, buf) == LC_OK, "set %s back: %s", key, lc_last_error());
    }
    CHECK(n == 16, "16 options, got %d", n);
    CHECK(memcmp(o, &d, sizeof d) == 0, "reading and writing every option back changes nothing");
    CHECK(lc_train_options_set_str(o, "--min-lr", "1e-5") == LC_OK && o->min_lr == 1e-5f, "CLI spelling");
    CHECK(lc_train_options_set_str(o, "seed", "18446744073709551615") == LC_OK && o->seed == UINT64_MAX, "u64 seed");
    CHECK(lc_train_options_set_str(o, "seed", "-1") == LC_ERR_ARG, "negative seed");
    CHECK(lc_train_options_set_str(o, "lr-scale", "sent.=0@10,head.=2") == LC_OK && !strcmp(o->lr_scale, "sent.=0@10,head.=2"),
          "lr_scale: %s", lc_last_error());
    CHECK(lc_train_options_set_str(o, "lr_scale", "sent.=-1") == LC_ERR_ARG && strstr(lc_last_error(), "lr_scale") &&
              !strcmp(o->lr_scale, "sent.=0@10,head.=2"), "a bad lr_scale is refused and leaves the field: %s", lc_last_error());
    CHECK(lc_train_options_set_str(o, "steps", "100000000000") == LC_OK && o->steps == 100000000000L, "long");
    CHECK(lc_train_options_set_str(o, "hook", "1") == LC_ERR_ARG && strstr(lc_last_error(), "warmup"),
          "unknown option lists the known: %s", lc_last_error());
    lc_train_options_free(o);
}

TEST(tensors_enumerate_the_parameters) {
    lc_config c = tiny(LC_MODEL_VANILLA);
    strcpy(c.attn, "1xfull+1xrouting:clusters=2");
    lc_model *m;
    CHECK(lc_model_create(&c, 2, 7, &m) == LC_OK, "create: %s", lc_last_error());
    if (harness_current_failed) return;
    size_t trained = 0;
    int n = lc_model_tensor_count(m), states = 0;
    for (int i = 0; i < n; i++) {
        const char *name;
        int nd, tr;
        long shape[2];
        CHECK(lc_model_tensor_info(m, i, &name, &nd, shape, &tr) == LC_OK, "info %d", i);
        CHECK(nd == 1 || nd == 2, "ndim");
        CHECK(lc_model_tensor_data(m, i, LC_TENSOR_VALUE) != NULL, "%s has values", name);
        CHECK((lc_model_tensor_data(m, i, LC_TENSOR_GRAD) != NULL) == tr, "%s: a gradient iff trained", name);
        CHECK((lc_model_tensor_data(m, i, LC_TENSOR_ADAM_V) != NULL) == tr, "%s: moments iff trained", name);
        if (tr) trained += (size_t)shape[0] * (size_t)shape[1];
        else states++;
        for (int j = 0; j < i; j++) {
            const char *other;
            lc_model_tensor_info(m, j, &other, NULL, NULL, NULL);
            CHECK(strcmp(other, name) != 0, "names unique: %s", name);
        }
    }
    CHECK(trained == lc_model_num_params(m), "trained tensors hold every parameter: %zu vs %zu", trained,
          lc_model_num_params(m));
    CHECK(states > 0, "routing centroids listed as untrained state");
    CHECK(lc_model_tensor_info(m, n, NULL, NULL, NULL, NULL) == LC_ERR_ARG && lc_model_tensor_data(m, -1, 0) == NULL,
          "out of range");
    lc_model_free(m);
}

/* Writing through a tensor's pointer changes the next forward; the logits copy equals lc_model_logits. */
TEST(logits_copy_and_writes_through_pointers) {
    lc_config c = tiny(LC_MODEL_XL);
    lc_model *m;
    CHECK(lc_model_create(&c, 2, 3, &m) == LC_OK, "create");
    if (harness_current_failed) return;
    int tok[2 * 16];
    for (int i = 0; i < 32; i++) tok[i] = (i * 37 + 11) % 256;
    static float a[2 * 16 * 256], b[2 * 16 * 256];
    CHECK(lc_model_forward_logits(m, tok, 2, 16, a) == LC_OK, "forward");
    CHECK(memcmp(a, lc_model_logits(m), sizeof a) == 0, "the copy is the model's logits");
    lc_model_reset_memory(m);
    const char *name;
    lc_model_tensor_info(m, 0, &name, NULL, NULL, NULL);
    CHECK(strcmp(name, "wte") == 0, "first tensor is wte, got %s", name);
    float *wte = lc_model_tensor_data(m, 0, LC_TENSOR_VALUE);
    wte[tok[0] * 32] += 1.0f;
    CHECK(lc_model_forward_logits(m, tok, 2, 16, b) == LC_OK, "forward again");
    CHECK(memcmp(a, b, sizeof a) != 0, "a write through the pointer changes the logits");
    CHECK(lc_model_forward_logits(m, tok, 3, 16, b) == LC_ERR_ARG && strstr(lc_last_error(), "batch"), "B > cap");
    int mb, sl, ml;
    lc_model_capacity(m, &mb, &sl, &ml);
    CHECK(mb == 2 && sl == 16 && ml == 16, "capacity %d %d %d", mb, sl, ml);
    CHECK(lc_model_resize(m, 3, 20, 24) == LC_OK, "resize");
    lc_model_capacity(m, &mb, &sl, &ml);
    CHECK(mb == 3 && sl == 20 && ml == 24, "capacity after resize %d %d %d", mb, sl, ml);
    lc_model_free(m);
}

typedef struct {
    uint8_t buf[512];
    int n;
} sink;
static void collect(uint8_t b, void *user) {
    sink *s = user;
    s->buf[s->n++] = b;
}

/* The generator yields lc_sample's bytes: both model kinds, greedy and sampled, top-k, empty and long prompts. */
TEST(generator_matches_lc_sample) {
    const char *long_prompt = "A prompt longer than one segment of sixteen bytes, read in pieces.";
    for (int kind = 0; kind < 2; kind++)
        for (int v = 0; v < 4; v++) {
            lc_config c = tiny(kind ? LC_MODEL_XL : LC_MODEL_VANILLA);
            lc_model *m;
            CHECK(lc_model_create(&c, 1, 11 + (uint64_t)v, &m) == LC_OK, "create");
            if (harness_current_failed) return;
            const float temp = v == 0 ? 0.0f : 0.9f;
            const int top_k = v == 2 ? 5 : 0, n = 40;
            const char *prompt = v == 3 ? "" : long_prompt;
            sink s = {.n = 0};
            CHECK(lc_sample(m, (const uint8_t *)prompt, strlen(prompt), n, temp, top_k, 99, collect, &s) == LC_OK,
                  "lc_sample: %s", lc_last_error());
            lc_generator *g;
            CHECK(lc_generator_new(m, (const uint8_t *)prompt, strlen(prompt), temp, top_k, 99, &g) == LC_OK, "new");
            int same = 1;
            for (int i = 0; i < n; i++) {
                int byte = -1;
                CHECK(lc_generator_next(g, &byte) == LC_OK, "next: %s", lc_last_error());
                same &= byte == s.buf[i];
            }
            CHECK(same, "model %d variant %d: the generator's bytes are lc_sample's", kind, v);
            lc_generator_free(g);
            CHECK(lc_generator_new(m, NULL, 0, -1.0f, 0, 1, &g) == LC_ERR_ARG && g == NULL, "negative temperature");
            CHECK(lc_generator_new(m, NULL, 0, 1.0f, 257, 1, &g) == LC_ERR_ARG, "top-k > 256");
            lc_model_free(m);
        }
}

TEST(evaluate_file_is_lc_evaluate_on_the_part) {
    char text[3000];
    for (int i = 0; i < (int)sizeof text; i++) text[i] = "abcde fghij\n"[(i * 7 + i / 13) % 12];
    const char *path = tmp_path("corpus.txt");
    write_file(path, text, sizeof text);
    lc_config c = tiny(LC_MODEL_XL);
    lc_model *m;
    CHECK(lc_model_create(&c, 1, 5, &m) == LC_OK, "create");
    if (harness_current_failed) return;
    lc_corpus corp;
    CHECK(lc_corpus_load(path, LC_SPLIT_ENWIK8, &corp) == LC_OK, "load");
    double want, got, acc;
    long wn, gn;
    size_t b = corp.begin[LC_PART_VALID], e = corp.end[LC_PART_VALID];
    CHECK(lc_evaluate(m, corp.bytes + b, e - b, 16, 1, &want, &wn) == LC_OK, "lc_evaluate");
    CHECK(lc_evaluate_file(m, path, LC_SPLIT_ENWIK8, LC_PART_VALID, 0, 0, &got, &acc, &gn) == LC_OK, "file: %s",
          lc_last_error());
    CHECK(got == want && gn == wn && isnan(acc), "same bpc %.9g vs %.9g, %ld vs %ld bytes", got, want, gn, wn);
    CHECK(lc_evaluate(m, corp.bytes, corp.size, 16, 1, &want, &wn) == LC_OK, "all");
    CHECK(lc_evaluate_file(m, path, LC_SPLIT_ENWIK8, LC_PART_ALL, 16, 1, &got, NULL, NULL) == LC_OK && got == want,
          "whole file");
    lc_corpus_free(&corp);
    CHECK(lc_evaluate_file(m, tmp_path("missing"), LC_SPLIT_AUTO, LC_PART_ALL, 0, 0, &got, NULL, NULL) == LC_ERR_IO &&
              strstr(lc_last_error(), "missing"),
          "missing file: %s", lc_last_error());
    CHECK(lc_evaluate_file(m, path, LC_SPLIT_AUTO, (lc_part)9, 0, 0, &got, NULL, NULL) == LC_ERR_ARG, "bad part");
    lc_model_free(m);
}

typedef struct {
    int calls, stop_at;
    double last_step, steps, loss;
} progress_seen;

static int on_progress(const double *v, int n, void *user) {
    progress_seen *p = user;
    p->calls++;
    p->last_step = v[0], p->steps = v[1], p->loss = v[3];
    return n == LC_PROGRESS_VALUES && p->calls == p->stop_at;
}

#define VERSE_BYTES 4000
/* A file of VERSE_BYTES bytes under the test's folder; returns its path. */
static const char *write_verse(const char *name) {
    char text[VERSE_BYTES];
    for (int i = 0; i < (int)sizeof text; i++) text[i] = "to be or not to be\n"[i % 19];
    const char *path = tmp_path(name);
    write_file(path, text, sizeof text);
    return path;
}

TEST(train_file_reports_and_stops) {
    const char *path = write_verse("train.txt");
    lc_config c = tiny(LC_MODEL_XL);
    lc_model *m;
    CHECK(lc_model_create(&c, 2, 5, &m) == LC_OK, "create");
    if (harness_current_failed) return;
    lc_train_options *o = lc_train_options_new();
    o->steps = 6, o->batch = 2, o->warmup = 0, o->eval_every = 0, o->eval_bytes = 64;
    progress_seen p = {.stop_at = 4};
    CHECK(lc_train_file(m, path, LC_SPLIT_AUTO, o, on_progress, &p) == LC_OK, "train: %s", lc_last_error());
    CHECK(p.calls == 4 && p.last_step == 4 && p.steps == 6 && isfinite(p.loss), "stopped at 4 of 6: %d calls, step %g",
          p.calls, p.last_step);
    CHECK(lc_model_step(m) == 4, "model at step 4");
    CHECK(o->hook == NULL && o->data.size == VERSE_BYTES && o->data.path[0] == '/', "hook restored, data recorded");
    for (int i = 0; i < LC_PROGRESS_VALUES; i++) CHECK(lc_progress_key(i) != NULL, "key %d", i);
    CHECK(lc_progress_key(LC_PROGRESS_VALUES) == NULL && strcmp(lc_progress_key(3), "loss") == 0, "keys");
    p.stop_at = 0;
    CHECK(lc_train_file(m, path, LC_SPLIT_AUTO, o, NULL, NULL) == LC_OK && lc_model_step(m) == 6, "no callback");
    CHECK(lc_train_file(m, tmp_path("nothing"), LC_SPLIT_AUTO, o, NULL, NULL) == LC_ERR_IO, "missing data");
    lc_train_options_free(o);
    lc_model_free(m);
}

/* lc_train_file checks the data against the batch before it re-plans the model for it: a batch the file
 * cannot feed fails at once with the model as it was; one that fits is planned for and trained. */
TEST(train_file_checks_the_batch_before_planning_it) {
    const char *path = write_verse("batch.txt");
    lc_config c = tiny(LC_MODEL_XL);
    lc_model *m;
    CHECK(lc_model_create(&c, 2, 5, &m) == LC_OK, "create");
    if (harness_current_failed) return;
    lc_train_options *o = lc_train_options_new();
    o->steps = 1, o->warmup = 0, o->eval_every = 0, o->eval_bytes = 64;
    int B, T, M;
    for (int k = 0; k < 2; k++) {
        o->batch = k ? 1 << 20 : 4096;
        lc_status st = lc_train_file(m, path, LC_SPLIT_AUTO, o, NULL, NULL);
        char want[64];
        snprintf(want, sizeof want, "too few for %d streams", o->batch);
        CHECK(st == LC_ERR_ARG && strstr(lc_last_error(), want), "batch %d: %d %s", o->batch, st, lc_last_error());
        lc_model_capacity(m, &B, &T, &M);
        CHECK(B == 2 && lc_model_step(m) == 0, "batch %d: not planned for (capacity %d)", o->batch, B);
    }
    lc_corpus corpus;
    CHECK(lc_corpus_load(path, LC_SPLIT_AUTO, &corpus) == LC_OK, "load");
    CHECK(lc_train_check_data(&corpus, 4, c.seq_len) == LC_OK && lc_train_check_data(&corpus, 4096, c.seq_len) == LC_ERR_ARG,
          "lc_train_check_data");
    lc_corpus_free(&corpus);
    o->batch = 4; /* more than planned (2), fed by the data: re-planned and trained */
    CHECK(lc_train_file(m, path, LC_SPLIT_AUTO, o, NULL, NULL) == LC_OK, "batch 4: %s", lc_last_error());
    lc_model_capacity(m, &B, &T, &M);
    CHECK(B == 4 && T == c.seq_len && lc_model_step(m) == 1, "planned for 4 streams: %d, step %ld", B, lc_model_step(m));
    lc_train_options_free(o);
    lc_model_free(m);
}

/* A tiny HIBERT checkpoint of `stage` (max 4 sentences a chunk) at path. */
static void save_tiny_hibert(const char *path, lc_hibert_stage stage) {
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    lc_hibert_stack *st[3] = {&c.sent, &c.doc, &c.dec};
    for (int i = 0; i < 3; i++) st[i]->n_layer = 1, st[i]->d_model = 16, st[i]->n_head = 2, st[i]->d_ff = 32;
    c.max_sent_len = 32, c.max_sents = 4;
    const lc_hibert_limits lim = {.max_docs = 1, .max_sents = 4, .max_bytes = 128, .no_decoder = 1};
    lc_hibert *m = NULL;
    lc_hibert_run run;
    lc_hibert_run_default(&run);
    run.stage = stage, run.limits = lim;
    CHECK(lc_hibert_create(&c, &lim, 3, &m) == LC_OK && lc_hibert_save(m, &run, path) == LC_OK, "%s", lc_last_error());
    lc_hibert_free(m);
}

TEST(hibert_summarizer_scores_as_the_model_does) {
    const char *path = tmp_path("hibert.st");
    save_tiny_hibert(path, LC_HIBERT_STAGE_FINETUNE);
    lc_hibert_summarizer *s = NULL;
    CHECK(lc_hibert_summarizer_load(path, &s) == LC_OK, "load: %s", lc_last_error());
    if (harness_current_failed) return;
    uint8_t pick[6];
    CHECK(lc_hibert_summarizer_pick(s, 1, pick) == LC_ERR_ARG && lc_hibert_summarizer_sentences(s) == 0, "pick first");
    /* a title line, then 6 sentences: two chunks (4 + 2) */
    const char *text = "A title\n\nAlpha one. Beta two is here. Gamma three.\nDelta four! Epsilon five? Zeta six.";
    const char *want[6] = {"Alpha one.", "Beta two is here.", "Gamma three.", "Delta four!", "Epsilon five?", "Zeta six."};
    int n = 0;
    CHECK(lc_hibert_summarizer_score(s, text, -1, &n) == LC_OK && n == 6, "score: %d, %s", n, lc_last_error());
    if (harness_current_failed) { lc_hibert_summarizer_free(s); return; }
    for (int i = 0; i < 6; i++) CHECK(!strcmp(lc_hibert_summarizer_sentence(s, i), want[i]), "sentence %d", i);
    CHECK(!lc_hibert_summarizer_sentence(s, 6) && !lc_hibert_summarizer_sentence(s, -1), "outside");
    float got[6];
    memcpy(got, lc_hibert_summarizer_scores(s), sizeof got);
    /* the same scores from the model itself, chunk by chunk */
    lc_hibert *m = lc_hibert_summarizer_model(s);
    const uint8_t *sent[6];
    int len[6];
    for (int i = 0; i < 6; i++) sent[i] = (const uint8_t *)want[i], len[i] = (int)strlen(want[i]);
    for (int c = 0; c < 2; c++) {
        const int first = 4 * c, k = c ? 2 : 4;
        const lc_hibert_batch b = {1, &k, sent + first, len + first, NULL};
        CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "forward");
        for (int i = 0; i < k; i++)
            CHECK(lc_hibert_scores(m)[i] == got[first + i], "score %d: %g vs %g", first + i,
                  (double)lc_hibert_scores(m)[i], (double)got[first + i]);
    }
    CHECK(lc_hibert_summarizer_pick(s, 2, pick) == LC_OK, "pick");
    int best = 0, picked = 0;
    for (int i = 1; i < 6; i++) best = got[i] > got[best] ? i : best;
    for (int i = 0; i < 6; i++) picked += pick[i];
    CHECK(picked == 2 && pick[best], "picks 2 with the best (%d)", best);
    CHECK(lc_hibert_summarizer_score(s, text, 0, &n) == LC_OK && n == 6 &&
          !strcmp(lc_hibert_summarizer_sentence(s, 0), "A title Alpha one."), "title 0 keeps line 1: %d", n);
    CHECK(lc_hibert_summarizer_score(s, "Only one.", -1, &n) == LC_ERR_FORMAT && n == 0 &&
          strstr(lc_last_error(), "at least 2 sentences") && lc_hibert_summarizer_sentences(s) == 0, "one sentence");
    CHECK(lc_hibert_summarizer_score(s, text, 2, &n) == LC_ERR_ARG, "title 2");
    CHECK(lc_hibert_summarizer_pick(s, 1, pick) == LC_ERR_ARG, "pick after a failed score");
    lc_hibert_summarizer_free(s);
    /* a pre-training checkpoint without intruders: no trained head */
    const char *pre = tmp_path("hibert_pre.st");
    save_tiny_hibert(pre, LC_HIBERT_STAGE_PRETRAIN);
    s = NULL;
    CHECK(lc_hibert_summarizer_load(pre, &s) == LC_ERR_ARG && !s && strstr(lc_last_error(), pre) &&
          strstr(lc_last_error(), "pre-training checkpoint"), "pre-training: %s", lc_last_error());
    CHECK(lc_hibert_summarizer_load(tmp_path("absent.st"), &s) == LC_ERR_IO && !s, "absent: %s", lc_last_error());
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_flat_XXXXXX")) return 1;
    lc_threads_set_default(1);
    RUN(config_keys_round_trip_and_aliases);
    RUN(train_options_by_name);
    RUN(tensors_enumerate_the_parameters);
    RUN(logits_copy_and_writes_through_pointers);
    RUN(generator_matches_lc_sample);
    RUN(evaluate_file_is_lc_evaluate_on_the_part);
    RUN(train_file_reports_and_stops);
    RUN(train_file_checks_the_batch_before_planning_it);
    RUN(hibert_summarizer_scores_as_the_model_does);
    tmpdir_remove();
    return test_summary("test_flat");
}
