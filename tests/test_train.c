/* Training-level tests: data splits and contiguous streams, the learning-rate schedule, loss going
 * down on the bundled corpus, bit-identical resume, checkpoint round trips and damaged checkpoints,
 * evaluation with a final partial segment, one optimisation step on a given batch (lc_train_step);
 * non-finite values (a diverged run stops, NaN weights are never saved or sampled from), corpora that
 * are not regular files, backward without targets and the clearing of the last error; the step hook and
 * the per-process stream layout of data parallelism. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"
#include "models/lm/lm.h"
#include "train/safetensors.h"
#include "test_files.h"

#define CORPUS "data/tinyshakespeare.txt"


TEST(splits) {
    lc_corpus c;
    CHECK(lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c) == LC_OK, "%s", lc_last_error());
    CHECK(c.size == 1115394, "size %zu", c.size);
    CHECK(c.mode == LC_SPLIT_NANOGPT, "tinyshakespeare uses the nanoGPT split");
    CHECK(c.end[LC_PART_TRAIN] == 1003854 && c.begin[LC_PART_VALID] == 1003854 && c.end[LC_PART_VALID] == 1115394,
          "nanoGPT split 1003854/111540, got %zu..%zu", c.begin[LC_PART_VALID], c.end[LC_PART_VALID]);
    CHECK(c.begin[LC_PART_TEST] == c.begin[LC_PART_VALID], "test = valid");
    lc_corpus_free(&c);
    CHECK(lc_corpus_load(CORPUS, LC_SPLIT_ENWIK8, &c) == LC_OK, "%s", lc_last_error());
    CHECK(c.end[LC_PART_TRAIN] == 1003854 && c.end[LC_PART_VALID] == 1003854 + 55770 && c.end[LC_PART_TEST] == c.size,
          "enwik8 split 90/5/5");
    lc_corpus_free(&c);
    CHECK(lc_corpus_load("/nonexistent/file", LC_SPLIT_AUTO, &c) == LC_ERR_IO, "missing file");
    CHECK(strstr(lc_last_error(), "/nonexistent/file") != NULL, "message names the file: %s", lc_last_error());
    CHECK(lc_corpus_load("/tmp", LC_SPLIT_AUTO, &c) == LC_ERR_IO, "directory");
    FILE *f = fopen(tmp_path("empty"), "w");
    fclose(f);
    CHECK(lc_corpus_load(tmp_path("empty"), LC_SPLIT_AUTO, &c) == LC_ERR_FORMAT, "empty file");
}

TEST(streams_are_contiguous) {
    uint8_t data[1000];
    for (int i = 0; i < 1000; i++) data[i] = (uint8_t)(i * 7);
    int t0[4 * 10], y0[4 * 10], t1[4 * 10], y1[4 * 10];
    CHECK(lc_stream_batch(data, 1000, 4, 10, 3, t0, y0) == LC_OK, "%s", lc_last_error());
    CHECK(lc_stream_batch(data, 1000, 4, 10, 4, t1, y1) == LC_OK, "%s", lc_last_error());
    for (int b = 0; b < 4; b++) {
        CHECK(t0[b * 10] == data[b * 250 + 30], "stream %d starts its segment 3 at offset 30 of its slice", b);
        CHECK(t1[b * 10] == y0[b * 10 + 9], "stream %d: batch k+1 continues batch k", b);
        for (int t = 0; t < 9; t++) CHECK(y0[b * 10 + t] == t0[b * 10 + t + 1], "targets are the next bytes");
    }
    CHECK(lc_stream_batch(data, 1000, 100, 10, 0, t0, y0) == LC_ERR_ARG, "slices shorter than T+1 are refused");
}

TEST(schedule) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 100, o.warmup = 10, o.lr = 1e-3f, o.min_lr = 1e-4f;
    CHECK(fabs(lc_learning_rate(&o, 0) - 1e-4) < 1e-9, "warm-up starts at lr/warmup");
    CHECK(fabs(lc_learning_rate(&o, 9) - 1e-3) < 1e-9, "warm-up ends at lr");
    CHECK(fabs(lc_learning_rate(&o, 55) - 5.5e-4) < 1e-7, "cosine midpoint: %g", lc_learning_rate(&o, 55));
    CHECK(fabs(lc_learning_rate(&o, 100) - 1e-4) < 1e-9, "ends at min_lr");
}

static lc_model *tiny(uint64_t seed, lc_model_kind kind) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = kind;
    c.seq_len = 32;
    c.dropout = 0.1f;
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 4, seed, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static lc_train_options tiny_options(long steps) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.batch = 4, o.warmup = 5, o.lr = 3e-3f, o.eval_every = 0, o.seed = 42;
    return o;
}

/* lc_train_options.lr_scale: the rules' syntax, the longest prefix in force deciding, @STEPS expiring. */
TEST(lr_scale_rules) {
    static const char *bad[] = {"a", "a=", "=1", "a=1,", ",a=1", "a=1,,b=2", "a=-1", "a=1001", "a=1@0", "a=1@",
                                "a=1@x", "a@b=1", "a=1x", "a=nan", "a=inf", "a=1@2@3", "a=1 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(lc_lr_scale_check(bad[i]) == LC_ERR_ARG && strstr(lc_last_error(), "lr-scale"), "'%s' accepted", bad[i]);
    CHECK(lc_lr_scale_check("") == LC_OK && lc_lr_scale_check("blocks.=0.5") == LC_OK &&
              lc_lr_scale_check("sent.=0@200,sent.wte=0.1,head.=10") == LC_OK && lc_lr_scale_check("x=1e-2") == LC_OK,
          "good specs refused: %s", lc_last_error());
    char long_spec[LC_LR_SCALE_CHARS + 8];
    memset(long_spec, 'a', sizeof long_spec - 3);
    memcpy(long_spec + sizeof long_spec - 3, "=1", 3);
    CHECK(lc_lr_scale_check(long_spec) == LC_ERR_ARG, "a spec longer than the options field was accepted");
    const char *spec = "sent.=0@200,sent.wte=0.1,head.=10";
    CHECK(lc_lr_scale_factor(spec, "doc.proj.weight", 0) == 1, "no rule: factor 1");
    CHECK(lc_lr_scale_factor(spec, "sent.blocks.0.ln1.weight", 199) == 0, "sent. frozen before step 200");
    CHECK(lc_lr_scale_factor(spec, "sent.blocks.0.ln1.weight", 200) == 1, "sent. free from step 200");
    CHECK(fabs(lc_lr_scale_factor(spec, "sent.wte", 5) - 0.1) < 1e-12, "the longest prefix decides");
    CHECK(fabs(lc_lr_scale_factor(spec, "sent.wte", 500) - 0.1) < 1e-12, "a rule without @ holds at every step");
    CHECK(lc_lr_scale_factor(spec, "head.weight", 3) == 10 && lc_lr_scale_factor("", "head.weight", 3) == 1, "head");
    CHECK(lc_lr_scale_factor(spec, "sent", 3) == 1, "a name shorter than the prefix does not match");
    CHECK(lc_lr_scale_factor("doc.=0@20,doc.=0.5", "doc.proj.weight", 19) == 0 &&
              lc_lr_scale_factor("doc.=0@20,doc.=0.5", "doc.proj.weight", 20) == 0.5, "equal prefixes: the first in force");
}

TEST(loss_goes_down) {
    lc_corpus c;
    if (lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_model *m = tiny(1, LC_MODEL_XL);
    lc_train_options o = tiny_options(80);
    double before, after;
    size_t vb = c.begin[LC_PART_VALID];
    CHECK(lc_evaluate(m, c.bytes + vb, 8192, 32, 4, &before, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_train(m, &c, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_evaluate(m, c.bytes + vb, 8192, 32, 4, &after, NULL) == LC_OK, "%s", lc_last_error());
    printf("  valid bpc before %.3f after 80 steps %.3f\n", before, after);
    CHECK(before > 7.5 && after < before - 3.0, "valid bpc must fall by > 3 (%.3f -> %.3f)", before, after);
    lc_model_free(m);
    lc_corpus_free(&c);
}

static int same_state(const lc_model *a, const lc_model *b) {
    size_t bytes = a->ptab.total * sizeof(float);
    return a->step == b->step && memcmp(a->params, b->params, bytes) == 0 &&
           memcmp(a->adam_m, b->adam_m, bytes) == 0 && memcmp(a->adam_v, b->adam_v, bytes) == 0;
}

TEST(resume_is_bit_identical) {
    lc_corpus c;
    if (lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_train_options o = tiny_options(12);
    lc_model *full = tiny(7, LC_MODEL_XL), *half = tiny(7, LC_MODEL_XL), *resumed = NULL;
    CHECK(lc_train(full, &c, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    o.stop_after = 6;
    CHECK(lc_train(half, &c, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(half->step == 6, "stop_after stops at step 6, got %ld", half->step);
    CHECK(lc_checkpoint_save(half, &o, tmp_path("half.ckpt")) == LC_OK, "%s", lc_last_error());
    lc_train_options saved;
    CHECK(lc_checkpoint_load(tmp_path("half.ckpt"), 0, &resumed, &saved) == LC_OK, "%s", lc_last_error());
    if (resumed) {
        CHECK(saved.steps == 12 && saved.batch == 4 && saved.lr == o.lr, "options round-trip");
        saved.stop_after = 0;
        CHECK(lc_train(resumed, &c, &saved, NULL, NULL) == LC_OK, "%s", lc_last_error());
        CHECK(same_state(full, resumed), "12 steps == 6 + resume + 6, bit for bit");
        CHECK(!same_state(full, half), "the comparison can fail (half-trained differs)");
    }
    lc_model_free(full);
    lc_model_free(half);
    lc_model_free(resumed);
    lc_corpus_free(&c);
}

/* The hook sees every step after the update, with the model in its saved state: a checkpoint written
 * from the hook at step 5 equals a run stopped there; a nonzero return stops lc_train (LC_OK) at that
 * step; validation passes are timed apart (valid_s on their steps only, valid_total_s their sum); each
 * process of several reads its own streams of the global layout (lc_stream_batch_part). */
typedef struct {
    long calls, last_step, stop_at;
    int in_order;
    const char *save_at_5;
    const lc_train_options *o;
    int valid_timed, passes;
    double valid_sum;
} hook_log;

static int log_hook(const lc_model *m, const lc_progress *p, void *user) {
    hook_log *h = user;
    h->in_order &= p->step == h->last_step + 1 && lc_model_step(m) == p->step && p->loss > 0;
    h->last_step = p->step;
    h->calls++;
    const int has_valid = !isnan(p->valid_bpc);
    h->passes += has_valid;
    h->valid_sum += p->valid_s;
    h->valid_timed &= (has_valid ? p->valid_s > 0 : p->valid_s == 0) && fabs(p->valid_total_s - h->valid_sum) < 1e-12 &&
                      p->elapsed_s > p->valid_total_s - p->valid_s;
    if (p->step == 5 && h->save_at_5 && lc_checkpoint_save(m, h->o, h->save_at_5)) CHECK(0, "%s", lc_last_error());
    return p->step == h->stop_at;
}

TEST(train_hook_sees_every_step_and_stops) {
    lc_corpus c;
    if (lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_train_options o = tiny_options(10);
    hook_log h = {0, 0, 7, 1, tmp_path("hook5.ckpt"), &o, 1, 0, 0};
    o.hook = log_hook, o.hook_user = &h, o.eval_every = 3, o.eval_bytes = 4096;
    lc_model *a = tiny(3, LC_MODEL_XL), *b = tiny(3, LC_MODEL_XL), *saved = NULL;
    CHECK(lc_train(a, &c, &o, NULL, NULL) == LC_OK, "a stop asked by the hook is not an error: %s", lc_last_error());
    CHECK(a->step == 7 && h.calls == 7 && h.in_order, "stopped at step %ld after %ld calls (in order: %d)", a->step,
          h.calls, h.in_order);
    CHECK(h.passes == 2 && h.valid_timed, "validation at steps 3 and 6 (%d passes), timed apart (%d)", h.passes,
          h.valid_timed);
    lc_train_options plain = tiny_options(10);
    plain.stop_after = 5;
    CHECK(lc_train(b, &c, &plain, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_load(tmp_path("hook5.ckpt"), 0, &saved, NULL) == LC_OK, "%s", lc_last_error());
    if (saved) CHECK(same_state(saved, b), "the hook's save at step 5 is the model of a run stopped at 5");
    lc_model_free(a);
    lc_model_free(b);
    lc_model_free(saved);
    uint8_t data[1000];
    for (int i = 0; i < 1000; i++) data[i] = (uint8_t)(i * 13 + 5);
    int all_t[6 * 10], all_y[6 * 10], t[2 * 10], y[2 * 10];
    CHECK(lc_stream_batch(data, 1000, 6, 10, 9, all_t, all_y) == LC_OK, "%s", lc_last_error());
    for (int r = 0; r < 3; r++) {
        CHECK(lc_stream_batch_part(data, 1000, 6, 2 * r, 2, 10, 9, t, y) == LC_OK, "%s", lc_last_error());
        CHECK(!memcmp(t, all_t + 20 * r, sizeof t) && !memcmp(y, all_y + 20 * r, sizeof y),
              "process %d of 3 reads streams %d..%d of the 6", r, 2 * r, 2 * r + 1);
    }
    CHECK(lc_stream_batch_part(data, 1000, 6, 5, 2, 10, 0, t, y) == LC_ERR_ARG, "streams past the layout are refused");
    lc_corpus_free(&c);
}

/* lc_train_step on lc_train's own batches (grad_accum 1) is lc_train, bit for bit; a batch with no
 * scored target is refused without touching the model. */
TEST(train_step_matches_train) {
    lc_corpus c;
    if (lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_train_options o = tiny_options(8);
    lc_model *a = tiny(11, LC_MODEL_VANILLA), *b = tiny(11, LC_MODEL_VANILLA);
    CHECK(lc_train(a, &c, &o, NULL, NULL) == LC_OK, "%s", lc_last_error());
    const uint8_t *train = c.bytes + c.begin[LC_PART_TRAIN];
    size_t n = c.end[LC_PART_TRAIN] - c.begin[LC_PART_TRAIN];
    int tok[4 * 32], tgt[4 * 32];
    double first = 0, last = 0;
    for (long k = 0; k < o.steps; k++) {
        CHECK(lc_stream_batch(train, n, 4, 32, k, tok, tgt) == LC_OK, "%s", lc_last_error());
        double loss = -1;
        CHECK(lc_train_step(b, &o, tok, tgt, 4, 32, &loss) == LC_OK, "%s", lc_last_error());
        CHECK(loss > 0 && isfinite(loss), "step %ld loss %g", k, loss);
        if (k == 0) first = loss;
        last = loss;
    }
    CHECK(b->step == o.steps, "step advanced to %ld", b->step);
    CHECK(same_state(a, b), "8 x lc_train_step == lc_train(8 steps), bit for bit");
    CHECK(last < first, "loss falls: %.3f -> %.3f", first, last);
    for (int i = 0; i < 4 * 32; i++) tgt[i] = -1;
    float before = b->params[0];
    CHECK(lc_train_step(b, &o, tok, tgt, 4, 32, NULL) == LC_ERR_ARG, "no scored target is refused");
    CHECK(b->step == o.steps && b->params[0] == before, "a refused step changes nothing");
    tgt[5] = 1;
    snprintf(o.lr_scale, sizeof o.lr_scale, "wte=0");
    lc_model_zero_grad(a); /* a: b's state before a frozen-embedding step */
    memcpy(a->params, b->params, sizeof(float) * b->ptab.total);
    CHECK(lc_train_step(b, &o, tok, tgt, 4, 32, NULL) == LC_OK, "%s", lc_last_error());
    int wte_same = 0, others_moved = 0;
    for (int i = 0; i < b->tensors.n; i++) {
        const lc_tensor *t = &b->tensors.t[i];
        if (!lc_tensor_is_param(t)) continue;
        const lc_slot *sl = &b->ptab.slots[t->slot];
        const int same = !memcmp(a->params + sl->offset, b->params + sl->offset, sizeof(float) * sl->count);
        if (strcmp(t->name, "wte") == 0) wte_same = same;
        else others_moved |= !same;
    }
    CHECK(wte_same && others_moved, "lr-scale wte=0: the embedding %s, the rest %s", wte_same ? "held" : "moved",
          others_moved ? "trained" : "did not train");
    snprintf(o.lr_scale, sizeof o.lr_scale, "wte");
    CHECK(lc_train_step(b, &o, tok, tgt, 4, 32, NULL) == LC_ERR_ARG, "a bad lr-scale is refused");
    o.lr_scale[0] = 0;
    o.lr = 0;
    CHECK(lc_train_step(b, &o, tok, tgt, 4, 32, NULL) == LC_ERR_ARG, "lr 0 is refused");
    lc_model_free(a);
    lc_model_free(b);
    lc_corpus_free(&c);
}

TEST(checkpoint_round_trip_and_damage) {
    lc_model *m = tiny(3, LC_MODEL_XL), *back = NULL;
    lc_train_options o = tiny_options(10);
    m->step = 5;
    const char *p = tmp_path("rt.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_load(p, 2, &back, NULL) == LC_OK, "%s", lc_last_error());
    if (back) {
        CHECK(same_state(m, back), "round trip restores parameters, moments and step");
        CHECK(memcmp(&m->cfg, &back->cfg, sizeof m->cfg) == 0, "config round-trips");
    }
    lc_model_free(back);
    /* truncations at several lengths: an error, never a crash */
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    CHECK(fread(buf, 1, (size_t)size, f) == (size_t)size, "read back");
    fclose(f);
    long cuts[] = {0, 4, 8, 100, size / 2, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *q = tmp_path("cut.ckpt");
        f = fopen(q, "wb");
        fwrite(buf, 1, (size_t)cuts[i], f);
        fclose(f);
        back = NULL;
        lc_status st = lc_checkpoint_load(q, 2, &back, NULL);
        CHECK(st == LC_ERR_FORMAT && back == NULL, "truncated at %ld: status %d", cuts[i], st);
    }
    /* corrupted header byte */
    buf[12] = '#';
    f = fopen(tmp_path("bad.ckpt"), "wb");
    fwrite(buf, 1, (size_t)size, f);
    fclose(f);
    CHECK(lc_checkpoint_load(tmp_path("bad.ckpt"), 2, &back, NULL) == LC_ERR_FORMAT, "corrupted header");
    free(buf);
    /* a valid safetensors file that is not a longctx checkpoint */
    float x[2] = {1, 2};
    lc_st_tensor t = {"x", LC_DT_F32, 1, {2}, x};
    CHECK(lc_st_write(tmp_path("other.st"), &t, 1, NULL, 0) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_load(tmp_path("other.st"), 2, &back, NULL) == LC_ERR_FORMAT &&
              strstr(lc_last_error(), "not a longctx checkpoint"),
          "foreign file: %s", lc_last_error());
    lc_model_free(m);
}

TEST(checkpoint_wrong_shape_is_named) {
    lc_model *m = tiny(3, LC_MODEL_XL), *back = NULL;
    lc_train_options o = tiny_options(10);
    const char *p = tmp_path("shape.ckpt");
    m->cfg.d_ff = 128; /* metadata now disagrees with the saved tensors */
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    m->cfg.d_ff = 256;
    CHECK(lc_checkpoint_load(p, 2, &back, NULL) == LC_ERR_FORMAT, "shape mismatch must be refused");
    CHECK(strstr(lc_last_error(), "fc1") != NULL && strstr(lc_last_error(), "shape.ckpt") != NULL,
          "message names file and tensor: %s", lc_last_error());
    lc_model_free(m);
}

TEST(evaluation_handles_partial_segment) {
    lc_model *m = tiny(5, LC_MODEL_VANILLA);
    uint8_t text[100];
    for (int i = 0; i < 100; i++) text[i] = (uint8_t)("to be or not to be "[i % 19]);
    double bpc;
    long n;
    CHECK(lc_evaluate(m, text, 100, 32, 4, &bpc, &n) == LC_OK, "%s", lc_last_error());
    CHECK(n == 99, "every byte after the first is predicted: %ld", n);
    /* the same sum by hand: 3 segments of 32 and one of 3 */
    double total = 0;
    int tok[32], tgt[32];
    for (int s = 0; s < 99; s += 32) {
        int T = 99 - s < 32 ? 99 - s : 32;
        for (int t = 0; t < T; t++) tok[t] = text[s + t], tgt[t] = text[s + t + 1];
        double part;
        lc_model_forward(m, tok, tgt, 1, T, 0, &part, NULL);
        total += part;
    }
    double want = total / 99 / log(2.0);
    CHECK_CLOSE("bpc with a final partial segment", &bpc, &want, 1, 1e-6, 0);
    lc_model_free(m);
}

/* ---- non-finite values, sizes, errors (issue 9: bugs 5, 7, 8) ---- */

/* The fast exp is defined for every float (UBSan used to flag a shift of a negative value on NaN). */
TEST(fast_exp_of_any_float) {
    const float nan = NAN, inf = INFINITY;
    CHECK(isnan(lc_expf(nan)) && isnan(lc_expf(-nan)), "exp(NaN) is NaN");
    CHECK(lc_expf(-inf) == 0.0f && lc_expf(-1e30f) == 0.0f && lc_expf(-100.0f) == 0.0f, "large negatives give 0");
    CHECK(isfinite(lc_expf(inf)) && lc_expf(inf) > 1e38f && lc_expf(1e30f) == lc_expf(inf), "saturates");
    CHECK(fabsf(lc_expf(1.0f) - 2.7182818f) < 1e-6f, "exp(1) = %.9g", lc_expf(1.0f));
    CHECK(isnan(lc_tanhf(nan)) && lc_tanhf(inf) == 1.0f && lc_tanhf(-inf) == -1.0f, "tanh at the ends");
    float x[37];
    for (int i = 0; i < 37; i++) x[i] = (float)i - 18.5f;
    CHECK(lc_all_finite(x, 37), "finite array");
    x[33] = nan;
    CHECK(!lc_all_finite(x, 37), "NaN found");
    x[33] = -inf;
    CHECK(!lc_all_finite(x, 37) && lc_all_finite(x, 33), "-inf found, and only inside n");
}

static lc_model *small_vanilla(void) {
    lc_config c;
    lc_config_default(&c);
    c.model = LC_MODEL_VANILLA, c.n_layer = 1, c.d_model = 32, c.n_head = 2, c.d_ff = 64, c.seq_len = 32;
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 2, 1337, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

/* A run that diverges (lr 10, weight decay 10) stops with LC_ERR_NUMERIC naming the step, before the
 * update that would write NaN; the weights stay finite, and a checkpoint is never written from NaN
 * weights (the file already there is left as it was). It used to finish with LC_OK and NaN weights. */
TEST(diverged_training_stops) {
    lc_corpus c;
    if (lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_model *m = small_vanilla();
    if (!m) { lc_corpus_free(&c); return; }
    lc_train_options o = tiny_options(60);
    o.batch = 2, o.lr = 10, o.weight_decay = 10, o.warmup = 0;
    lc_status st = lc_train(m, &c, &o, NULL, NULL);
    CHECK(st == LC_ERR_NUMERIC, "status %d: %s", st, lc_last_error());
    CHECK(strstr(lc_last_error(), "training diverged at step ") && strstr(lc_last_error(), "--lr"), "message: %s",
          lc_last_error());
    CHECK(m->step < 60 && lc_all_finite(m->params, m->ptab.total), "stopped at step %ld with finite weights",
          m->step);
    const char *p = tmp_path("good.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    FILE *f = fopen(p, "rb");
    long size = -1;
    if (f) { fseek(f, 0, SEEK_END); size = ftell(f); fclose(f); }
    m->params[m->ptab.total / 2] = NAN;
    CHECK(lc_checkpoint_save(m, &o, p) == LC_ERR_NUMERIC && strstr(lc_last_error(), "good.ckpt"),
          "NaN weights are not saved: %s", lc_last_error());
    f = fopen(p, "rb");
    long after = -2;
    if (f) { fseek(f, 0, SEEK_END); after = ftell(f); fclose(f); }
    CHECK(size > 0 && after == size, "the good checkpoint is intact (%ld -> %ld bytes)", size, after);
    /* lc_train_step: a NaN weight makes the loss NaN; the step is refused and nothing moves */
    int tok[2 * 32], tgt[2 * 32];
    for (int i = 0; i < 64; i++) tok[i] = 'a' + i % 7, tgt[i] = 'a' + (i + 1) % 7;
    long step = m->step;
    float w0 = m->params[0];
    double loss = 0;
    st = lc_train_step(m, &o, tok, tgt, 2, 32, &loss);
    CHECK(st == LC_ERR_NUMERIC && isnan(loss) && strstr(lc_last_error(), "loss is nan"), "status %d: %s", st,
          lc_last_error());
    CHECK(m->step == step && m->params[0] == w0, "a refused step changes nothing");
    lc_model_free(m);
    lc_corpus_free(&c);
}

static void count_byte(uint8_t b, void *user) {
    (void)b;
    ++*(int *)user;
}

/* Sampling from a model with non-finite weights fails clearly instead of printing NUL bytes. */
TEST(sample_refuses_nonfinite_logits) {
    lc_model *m = small_vanilla();
    if (!m) return;
    int emitted = 0;
    CHECK(lc_sample(m, (const uint8_t *)"ab", 2, 5, 0.8f, 0, 1, count_byte, &emitted) == LC_OK, "%s",
          lc_last_error());
    CHECK(emitted == 5 && lc_last_error()[0] == '\0', "5 bytes from a good model, no message");
    for (size_t i = 0; i < m->ptab.total; i += 3) m->params[i] = NAN;
    emitted = 0;
    lc_status st = lc_sample(m, (const uint8_t *)"ab", 2, 5, 0.8f, 0, 1, count_byte, &emitted);
    CHECK(st == LC_ERR_NUMERIC && emitted == 0 && strstr(lc_last_error(), "NaN"), "status %d, %d bytes: %s", st,
          emitted, lc_last_error());
    lc_model_free(m);
}

/* lc_model_backward after a forward without targets (or before any forward) is an error, not a silent
 * no-op; and a successful call leaves lc_last_error() empty. */
TEST(backward_without_targets_and_last_error) {
    lc_model *m = small_vanilla();
    if (!m) return;
    CHECK(lc_model_backward(m, 1.0f) == LC_ERR_ARG && strstr(lc_last_error(), "no targets"), "before any forward: %s",
          lc_last_error());
    int tok[32], tgt[32];
    for (int i = 0; i < 32; i++) tok[i] = 'x', tgt[i] = 'y';
    CHECK(lc_model_forward(m, tok, NULL, 1, 32, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_last_error()[0] == '\0', "a successful forward clears the message, got '%s'", lc_last_error());
    lc_model_zero_grad(m);
    CHECK(lc_model_backward(m, 1.0f) == LC_ERR_ARG && strstr(lc_last_error(), "no targets"), "%s", lc_last_error());
    CHECK(lc_sum_squares(m->grads, m->ptab.total) == 0, "nothing was accumulated");
    double sum;
    long count;
    CHECK(lc_model_forward(m, tok, tgt, 1, 32, 0, &sum, &count) == LC_OK, "%s", lc_last_error());
    CHECK(lc_model_backward(m, 1.0f) == LC_OK && lc_last_error()[0] == '\0', "backward with targets: '%s'",
          lc_last_error());
    CHECK(lc_sum_squares(m->grads, m->ptab.total) > 0, "gradients accumulated");
    lc_corpus c;
    CHECK(lc_corpus_load("/nonexistent/x", LC_SPLIT_AUTO, &c) == LC_ERR_IO && lc_last_error()[0], "a failure sets it");
    CHECK(lc_corpus_load(CORPUS, LC_SPLIT_AUTO, &c) == LC_OK && lc_last_error()[0] == '\0',
          "the next successful call clears it: '%s'", lc_last_error());
    lc_corpus_free(&c);
    lc_model_free(m);
}

/* Only regular files are corpora: a device would be read until memory ran out, a FIFO would block. */
TEST(corpus_refuses_devices_and_fifos) {
    lc_corpus c;
    lc_status st = lc_corpus_load("/dev/zero", LC_SPLIT_AUTO, &c);
    CHECK(st == LC_ERR_IO && strstr(lc_last_error(), "/dev/zero") && strstr(lc_last_error(), "character device"),
          "status %d: %s", st, lc_last_error());
    const char *fifo = tmp_path("fifo");
    if (mkfifo(fifo, 0600) == 0) {
        st = lc_corpus_load(fifo, LC_SPLIT_AUTO, &c); /* no writer: must not block */
        CHECK(st == LC_ERR_IO && strstr(lc_last_error(), "FIFO"), "status %d: %s", st, lc_last_error());
    }
    /* lc_train checks the data against the batch before it allocates anything */
    lc_model *m = small_vanilla();
    if (!m) return;
    uint8_t bytes[100] = {0};
    lc_corpus tiny_c = {bytes, 100, {0, 50, 75, 0}, {50, 75, 100, 100}, LC_SPLIT_ENWIK8}; /* 25 bytes a stream */
    lc_train_options o = tiny_options(5);
    o.batch = 2;
    st = lc_train(m, &tiny_c, &o, NULL, NULL);
    CHECK(st == LC_ERR_ARG && strstr(lc_last_error(), "too few") && m->step == 0, "status %d: %s", st,
          lc_last_error());
    lc_model_free(m);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_train_XXXXXX")) return 1;
    RUN(splits);
    RUN(streams_are_contiguous);
    RUN(schedule);
    RUN(lr_scale_rules);
    RUN(loss_goes_down);
    RUN(resume_is_bit_identical);
    RUN(train_step_matches_train);
    RUN(train_hook_sees_every_step_and_stops);
    RUN(checkpoint_round_trip_and_damage);
    RUN(checkpoint_wrong_shape_is_named);
    RUN(evaluation_handles_partial_segment);
    RUN(fast_exp_of_any_float);
    RUN(diverged_training_stops);
    RUN(sample_refuses_nonfinite_logits);
    RUN(backward_without_targets_and_last_error);
    RUN(corpus_refuses_devices_and_fifos);
    tmpdir_remove();
    return test_summary("test_train");
}
