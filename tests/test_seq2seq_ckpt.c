/* Tests of seq2seq checkpoints and training runs (lc_seq2seq_save / lc_seq2seq_load, lc_seq2seq_fit, the
 * TSV reader of pairs, lc_seq2seq_evaluate): a round trip is bit-exact (weights, moments, step, record,
 * greedy outputs); a run of lc_fit stopped and resumed from its last state ends bit-identical to an
 * uninterrupted one; lying or damaged metadata and checkpoints of another family are refused with one line
 * naming the file before anything is allocated; the measures on outputs made by hand; the reader of pairs
 * (default and named columns, empty targets). The gradients of the model are checked in test_seq2seq.c. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/threads.h"
#include "harness.h"
#include "longctx.h"
#include "models/seq2seq/seq2seq.h"
#include "test_files.h"
#include "pairs_kit.h"
#include "ckpt_kit.h"
#include "train/checkpoint_meta.h"
#include "models/seq2seq/seq2seq_fit.h"

static void config(lc_seq2seq_config *c, int tied) {
    lc_seq2seq_config_default(c);
    c->enc = (lc_seq2seq_stack){1, 16, 2, 32, "window:w=2"};
    c->dec = (lc_seq2seq_stack){1, tied ? 16 : 12, 2, 24, ""};
    c->max_src_len = 6, c->max_tgt_len = 6, c->tied = tied, c->norm = tied ? LC_NORM_PRE : LC_NORM_POST;
}

static lc_seq2seq *make(int tied, int pairs) {
    lc_seq2seq_config c;
    config(&c, tied);
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, pairs, 5, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

TEST(pairs_reader) {
    write_text(tmp_path("p.tsv"), "Id\tTarget\tSource\n1\tcba\tabc\n2\t\tx\n");
    lc_pair_data d;
    CHECK(lc_pairs_read(tmp_path("p.tsv"), NULL, NULL, NULL, &d) == LC_OK, "%s", lc_last_error());
    CHECK(d.n == 2 && d.src_len[0] == 3 && !memcmp(d.src[0], "abc", 3) && d.tgt_len[0] == 3 &&
              !memcmp(d.tgt[0], "cba", 3) && d.tgt_len[1] == 0 && d.src_len[1] == 1 && d.line[1] == 3,
          "columns by name, an empty target kept");
    lc_pairs_free(&d);
    CHECK(lc_pairs_read(tmp_path("p.tsv"), "1", "3", NULL, &d) == LC_OK && d.n == 2 && d.src[0][0] == '1' &&
              d.tgt[0][0] == 'a', "columns by number");
    lc_pairs_free(&d);
    CHECK(lc_pairs_read(tmp_path("p.tsv"), "Text", NULL, NULL, &d) == LC_ERR_FORMAT &&
              strstr(lc_last_error(), "no column named 'Text' for the source") && d.n == 0, "%s", lc_last_error());
    const lc_tsv_limits one = {1, 0};
    CHECK(lc_pairs_read(tmp_path("p.tsv"), NULL, NULL, &one, &d) == LC_ERR_FORMAT &&
              strstr(lc_last_error(), "p.tsv:3: more than 1 examples"), "%s", lc_last_error());
}

TEST(measures) {
    lc_seq2seq *m = make(1, 4);
    if (!m) return;
    /* outputs of an untrained model, scored against themselves and against edits of themselves */
    const char *src[3] = {"abc", "", "dd"};
    const size_t sl[3] = {3, 0, 2};
    uint8_t out[3 * 6];
    int len[3];
    CHECK(lc_seq2seq_generate_set(m, 3, (const uint8_t *const *)src, sl, out, len) == LC_OK, "%s", lc_last_error());
    uint8_t tgt[3][8];
    size_t tl[3];
    for (int i = 0; i < 3; i++) memcpy(tgt[i], out + 6 * i, (size_t)len[i]), tl[i] = (size_t)len[i];
    const uint8_t *tp[3] = {tgt[0], tgt[1], tgt[2]};
    lc_pair_data d = {3, (const uint8_t **)src, (const uint8_t **)tp, (size_t *)sl, tl, NULL, NULL};
    double em, ca;
    CHECK(lc_seq2seq_evaluate(m, &d, &em, &ca) == LC_OK && em == 1 && ca == 1, "itself: %g %g", em, ca);
    /* pair 0: one more byte than generated (one position of len+2 lost twice: the byte and the EOS);
     * pair 1: its first byte changed */
    tgt[0][len[0]] = 'z', tl[0] = (size_t)len[0] + 1;
    tgt[1][0] = (uint8_t)(len[1] ? tgt[1][0] ^ 1 : 'q'), tl[1] = len[1] ? (size_t)len[1] : 1;
    const long all = (len[0] + 2) + (len[1] ? len[1] + 1 : 2) + (len[2] + 1);
    const long right = (len[0]) + (len[1] ? len[1] : 0) + (len[2] + 1);
    CHECK(lc_seq2seq_evaluate(m, &d, &em, &ca) == LC_OK && fabs(em - 1.0 / 3) < 1e-12 &&
              fabs(ca - (double)right / (double)all) < 1e-12, "edited: %g %g (want %g)", em, ca, (double)right / all);
    const char *one = "abcdefg";
    uint8_t o1[6];
    int n1;
    CHECK(lc_seq2seq_generate_one(m, (const uint8_t *)one, 7, o1, &n1) == LC_ERR_ARG &&
              strstr(lc_last_error(), "source 1 has 7 bytes, the model reads at most 6"), "%s", lc_last_error());
    CHECK(lc_seq2seq_generate_one(m, (const uint8_t *)one, 3, o1, &n1) == LC_OK && n1 == len[0] &&
              !memcmp(o1, out, (size_t)n1), "one source as in a set");
    lc_seq2seq_free(m);
}

static void options(lc_train_options *o, long steps) {
    lc_train_options_default(o);
    o->steps = steps, o->batch = 4, o->warmup = 2, o->lr = 3e-3f, o->eval_every = 3;
}

/* A run of lc_seq2seq_fit over train/valid, saving best and last. */
static lc_status fit(lc_seq2seq *m, const lc_pair_data *tr, const lc_pair_data *va, lc_seq2seq_run *run,
                     const lc_train_options *o, const char *best, const char *last) {
    lc_fit_options fo;
    memset(&fo, 0, sizeof fo);
    fo.o = o, fo.best_path = best, fo.last_path = last;
    return lc_seq2seq_fit(m, tr, va, run, &fo, NULL);
}

TEST(round_trip_and_resume) {
    lc_pair_data tr, va;
    pairs_file("train.tsv", 40, 1, &tr);
    pairs_file("valid.tsv", 8, 2, &va);
    lc_seq2seq *a = make(0, 4), *b = make(0, 4), *c = NULL, *r = NULL;
    if (!a || !b) return;
    lc_train_options o;
    options(&o, 10);
    lc_seq2seq_run ra, rb;
    lc_seq2seq_run_default(&ra), lc_seq2seq_run_default(&rb);
    ra.train_pairs = rb.train_pairs = tr.n;
    CHECK(fit(a, &tr, &va, &ra, &o, tmp_path("a.ckpt"), tmp_path("a.last")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_seq2seq_steps_done(a) == 10 && ra.best_step >= 3 && ra.best_score >= 0, "best at step %ld", ra.best_step);
    /* the last state loads bit-exact, moments and record included, and decodes the same */
    lc_seq2seq_run got;
    CHECK(lc_seq2seq_load(tmp_path("a.last"), 0, &c, &got) == LC_OK, "%s", lc_last_error());
    if (!c) return;
    CHECK(same(a->params, c->params, a->ptab.total) && same(a->adam_m, c->adam_m, a->ptab.total) &&
              same(a->adam_v, c->adam_v, a->ptab.total) && c->step == 10 && c->max_pairs == 4,
          "weights, moments, step, planned pairs");
    CHECK(got.best_step == ra.best_step && got.best_score == ra.best_score && got.train_pairs == 40 &&
              got.best_exact_match == ra.best_exact_match && got.best_exact_match >= 0 &&
              got.opts.steps == 10 && got.opts.lr == o.lr && got.exact_match >= 0 && got.char_accuracy > 0,
          "record: best %ld %g, scores %g %g", got.best_step, got.best_score, got.exact_match, got.char_accuracy);
    double e1, c1, e2, c2;
    CHECK(lc_seq2seq_evaluate(a, &va, &e1, &c1) == LC_OK && lc_seq2seq_evaluate(c, &va, &e2, &c2) == LC_OK &&
              e1 == e2 && c1 == c2 && (float)c1 == got.char_accuracy, "the same outputs: %g %g, %g %g", e1, c1, e2, c2);
    /* stopped after 4 steps and resumed from the last state: the files of the uninterrupted run */
    o.stop_after = 4;
    lc_seq2seq_run_default(&rb), rb.train_pairs = tr.n;
    CHECK(fit(b, &tr, &va, &rb, &o, tmp_path("b.ckpt"), tmp_path("b.last")) == LC_OK && lc_seq2seq_steps_done(b) == 4,
          "%s", lc_last_error());
    lc_seq2seq_run rr;
    CHECK(lc_seq2seq_load(tmp_path("b.last"), 0, &r, &rr) == LC_OK, "%s", lc_last_error());
    if (!r) return;
    o.stop_after = 0;
    CHECK(fit(r, &tr, &va, &rr, &o, tmp_path("b.ckpt"), tmp_path("b.last")) == LC_OK, "%s", lc_last_error());
    CHECK(same(a->params, r->params, a->ptab.total) && same(a->adam_v, r->adam_v, a->ptab.total),
          "resumed weights are the uninterrupted run's");
    long n1, n2;
    char *f1 = slurp_file(tmp_path("a.last"), &n1), *f2 = slurp_file(tmp_path("b.last"), &n2);
    CHECK(f1 && f2 && n1 == n2 && !memcmp(f1, f2, (size_t)n1), "OUT.last files differ");
    free(f1), free(f2);
    f1 = slurp_file(tmp_path("a.ckpt"), &n1), f2 = slurp_file(tmp_path("b.ckpt"), &n2);
    CHECK(f1 && f2 && n1 == n2 && !memcmp(f1, f2, (size_t)n1), "best files differ");
    free(f1), free(f2);
    lc_seq2seq_free(a), lc_seq2seq_free(b), lc_seq2seq_free(c), lc_seq2seq_free(r);
    lc_pairs_free(&tr), lc_pairs_free(&va);
}

static lc_status load(const char *path, int *built) {
    lc_seq2seq *m = NULL;
    const lc_status st = lc_seq2seq_load(path, 0, &m, NULL);
    *built = m != NULL;
    lc_seq2seq_free(m);
    return st;
}

TEST(hostile_and_other_families_are_refused) {
    lc_seq2seq *m = make(1, 2);
    if (!m) return;
    lc_seq2seq_run run;
    lc_seq2seq_run_default(&run);
    char good[300];
    snprintf(good, sizeof good, "%s", tmp_path("good.ckpt"));
    CHECK(lc_seq2seq_save(m, &run, good) == LC_OK, "%s", lc_last_error());
    lc_seq2seq_free(m);
    /* metadata that describes a model the tensors do not back: refused before the model is built
     * (tests/cli_seq2seq_test.sh rewrites it to models of gigabytes) */
    static const ckpt_damage damages[] = {
        {"cut.ckpt", NULL, NULL, "cut.ckpt"},
        {"layers.ckpt", "\"enc.n_layer\":\"1\"", "\"enc.n_layer\":\"4\"", "layers.ckpt: "},
        {"wide.ckpt", "\"dec.d_ff\":\"24\"", "\"dec.d_ff\":\"96\"", "wide.ckpt: "},
        {"ff.ckpt", "\"dec.d_ff\":\"24\"", "\"dec.d_ff\":\"2x\"", "ff.ckpt: metadata 'dec.d_ff'"},
        {"len.ckpt", "\"max_src_len\":\"6\"", "\"max_src_len\":\"9\"", "len.ckpt: "},
        {"untied.ckpt", "\"tied\":\"1\"", "\"tied\":\"0\"", "untied.ckpt: "},
        {"heads.ckpt", "\"enc.n_head\":\"2\"", "\"enc.n_head\":\"3\"", "heads.ckpt: bad model config: "},
        {"model.ckpt", "\"model\":\"seq2seq\"", "\"model\":\"seq3seq\"",
         "model.ckpt: a checkpoint of model 'seq3seq', not a seq2seq model"},
    };
    ckpt_damages_refused(load, good, damages, (int)(sizeof damages / sizeof damages[0]));
    /* a language model's checkpoint, and this one read as a language model and as a classifier */
    lc_train_options o;
    lc_train_options_default(&o);
    ckpt_write_tiny_lm(tmp_path("lm.ckpt"), &o);
    ckpt_expect_refusal(load, tmp_path("lm.ckpt"), "lm.ckpt: a language model checkpoint (model = xl), not a seq2seq "
                                                   "model: use it with longctx eval, sample");
    ckpt_lm_refuses(good, "good.ckpt: a seq2seq checkpoint (model = seq2seq), not a language model: use it with "
                          "longctx predict, eval --task seq2seq or train --task seq2seq --resume");
    CHECK(lc_ckpt_is_model(good, "seq2seq") && !lc_ckpt_is_model(tmp_path("lm.ckpt"), "seq2seq") &&
              !lc_ckpt_is_model(tmp_path("none.ckpt"), "seq2seq"), "lc_ckpt_is_model");
}

TEST(docs_list_every_key) {
    long n;
    char *doc = slurp_file("docs/guides/seq2seq.md", &n);
    if (!doc) doc = slurp_file("docs/seq2seq.md", &n);
    if (!doc) { CHECK(0, "cannot read docs/seq2seq.md"); return; }
    const char *key;
    char want[128];
    int count = 0;
    for (int i = 0; (key = lc_seq2seq_meta_key(i)); i++, count++) {
        snprintf(want, sizeof want, "`%s`", key);
        CHECK(strstr(doc, want), "docs/seq2seq.md lacks seq2seq metadata key %s", want);
    }
    CHECK(count > 30 && count <= LC_CKPT_META_MAX, "%d keys", count);
    free(doc);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_seq2seq_ckpt_XXXXXX")) return 1;
    lc_threads_set_default(1);
    RUN(pairs_reader);
    RUN(measures);
    RUN(round_trip_and_resume);
    RUN(hostile_and_other_families_are_refused);
    RUN(docs_list_every_key);
    tmpdir_remove();
    return test_summary("test_seq2seq_ckpt");
}
