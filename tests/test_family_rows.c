/* Tests of the built-in families' rows (longctx/family.h, src/models/families.c): each family trains a few
 * steps through lc_family_fit on tiny data written here, and its checkpoint, loaded back through
 * lc_family_model_load, saves and evaluates through its row. Each is held to its own fit function on the same
 * seed and data: the same checkpoint bytes (weights, moments, record) and the same metrics, so that a row whose
 * hooks read other data, skip the validation or save another record fails. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "core/threads.h"
#include "harness.h"
#include "longctx.h"
#include "longctx/family.h"
#include "models/classify/classify.h"
#include "models/hibert/hibert.h"
#include "models/hibert/hibert_fit.h"
#include "models/lm/lm.h"
#include "models/classify/classify_fit.h"
#include "models/seq2seq/seq2seq.h"
#include "models/seq2seq/seq2seq_fit.h"
#include "test_files.h"
#include "pairs_kit.h"
#include "train/fit.h"

/* 1 when the files at a and b hold the same bytes. */
static int same_file(const char *a, const char *b) {
    long n1 = 0, n2 = 0;
    char *f1 = slurp_file(a, &n1), *f2 = slurp_file(b, &n2);
    const int same = f1 && f2 && n1 == n2 && !memcmp(f1, f2, (size_t)n1);
    free(f1), free(f2);
    return same;
}

/* The metrics of the checkpoint at path on data through the row (lc_family_model_evaluate), into v[n]; its
 * config field key read through the row's field table is want; saved again to resaved.ckpt. */
static int row_evaluate(const char *family, const char *path, const char *data, const char **names, double *v,
                        const char *key, const char *want) {
    lc_family_model *fm = NULL;
    int n = 0;
    CHECK(lc_family_model_load(path, &fm) == LC_OK, "%s", lc_last_error());
    if (!fm) return 0;
    CHECK(strcmp(lc_family_model_family(fm), family) == 0, "%s loaded as %s", family, lc_family_model_family(fm));
    CHECK(lc_family_model_evaluate(fm, data, names, v, 4, &n) == LC_OK, "%s", lc_last_error());
    char got[64] = "";
    CHECK(lc_family_model_get(fm, key, got, sizeof got) == LC_OK && !strcmp(got, want), "%s %s: '%s' (%s)", family,
          key, got, lc_last_error());
    CHECK(lc_family_model_save(fm, tmp_path("resaved.ckpt")) == LC_OK, "%s", lc_last_error());
    lc_family_model_free(fm);
    return n;
}

/* ---------------------------------------------------------------- lm */
/* n bytes of a repeating text with variations written to name. */
static void text_file(const char *name, int n, unsigned seed) {
    char *buf = malloc((size_t)n);
    for (int i = 0; buf && i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = "the cat sat on a mat. "[i % 22] ^ (char)((seed >> 20) % 7 == 0);
    }
    if (buf) write_file(tmp_path(name), buf, (size_t)n);
    free(buf);
}

TEST(lm_row_is_lc_train) {
    text_file("l_train.txt", 3000, 1);
    text_file("l_valid.txt", 600, 2);
    const lc_family *fam = lc_family_find("lm");
    CHECK(fam && fam->run_open && fam->evaluate && fam->save, "the lm row trains, evaluates and saves");
    lc_config c;
    lc_config_preset(&c, "tiny");
    lc_model *a = NULL, *b = NULL, *e = NULL;
    CHECK(lc_model_create(&c, 1, 3, &a) == LC_OK, "%s", lc_last_error());
    CHECK(fam && fam->create && fam->create(&c, 3, (void **)&b) == LC_OK, "%s", lc_last_error());
    if (!a || !b || !fam || !fam->run_open) goto done;
    lc_train_options o, own;
    lc_train_options_default(&o);
    o.steps = 4, o.batch = 2, o.warmup = 2, o.lr = 3e-3f, o.eval_every = 2, o.eval_bytes = 256;
    own = o;
    CHECK(lc_train_file(a, tmp_path("l_train.txt"), LC_SPLIT_AUTO, &own, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_save(a, &own, tmp_path("l_own.ckpt")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_fit(fam, b, &o, tmp_path("l_train.txt"), NULL, tmp_path("l_row.ckpt")) == LC_OK, "%s",
          lc_last_error());
    CHECK(same_file(tmp_path("l_own.ckpt"), tmp_path("l_row.ckpt")), "the row's checkpoint is lc_train_file's");
    double bpc, v[4];
    const char *names[4];
    CHECK(lc_checkpoint_load(tmp_path("l_own.ckpt"), 0, &e, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(e && lc_evaluate_file(e, tmp_path("l_valid.txt"), LC_SPLIT_AUTO, LC_PART_ALL, 0, 0, &bpc, NULL, NULL) == LC_OK,
          "%s", lc_last_error());
    char layers[16];
    snprintf(layers, sizeof layers, "%d", c.n_layer);
    const int n = row_evaluate("lm", tmp_path("l_row.ckpt"), tmp_path("l_valid.txt"), names, v, "--layers", layers);
    CHECK(n == 2 && !strcmp(names[0], "bpc") && v[0] == bpc && !strcmp(names[1], "tokens"), "row: %d metrics, %g; own %g",
          n, n > 0 ? v[0] : NAN, bpc);
    lc_model_free(e), e = NULL;
    CHECK(lc_checkpoint_load(tmp_path("resaved.ckpt"), 0, &e, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(e && lc_model_step(e) == 4 && !memcmp(e->params, a->params, sizeof(float) * a->ptab.total),
          "the row's save keeps the step and the weights");
    /* a validation file of its own: training reads the whole training file */
    CHECK(lc_family_fit(fam, b, &o, tmp_path("l_train.txt"), tmp_path("l_valid.txt"), NULL) == LC_OK, "%s",
          lc_last_error());
done:
    lc_model_free(a), lc_model_free(b), lc_model_free(e);
}

/* ---------------------------------------------------------------- seq2seq */
static lc_seq2seq *s2s_make(void) {
    lc_seq2seq_config c;
    lc_seq2seq_config_default(&c);
    c.enc = (lc_seq2seq_stack){1, 16, 2, 32, "window:w=2"};
    c.dec = (lc_seq2seq_stack){1, 16, 2, 24, ""};
    c.max_src_len = 6, c.max_tgt_len = 6;
    lc_seq2seq *m = NULL;
    CHECK(lc_seq2seq_create(&c, 4, 5, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

TEST(seq2seq_row_is_its_fit) {
    lc_pair_data tr, va;
    pairs_file("s_train.tsv", 24, 1, &tr);
    pairs_file("s_valid.tsv", 6, 2, &va);
    lc_seq2seq *a = s2s_make(), *b = s2s_make();
    const lc_family *fam = lc_family_find("seq2seq");
    CHECK(fam && fam->run_open && fam->evaluate && fam->save, "the seq2seq row trains, evaluates and saves");
    if (!a || !b || !fam || !fam->run_open) goto done;
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 4, o.batch = 4, o.warmup = 2, o.lr = 3e-3f, o.eval_every = 2;
    lc_seq2seq_run run;
    lc_seq2seq_run_default(&run);
    run.opts = o, run.opts.ranks = 1, run.train_pairs = tr.n;
    lc_fit_options fo;
    memset(&fo, 0, sizeof fo);
    fo.o = &o, fo.last_path = tmp_path("s_own.ckpt");
    CHECK(lc_seq2seq_fit(a, &tr, &va, &run, &fo, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_fit(fam, b, &o, tmp_path("s_train.tsv"), tmp_path("s_valid.tsv"), tmp_path("s_row.ckpt")) == LC_OK,
          "%s", lc_last_error());
    CHECK(lc_seq2seq_steps_done(b) == 4, "trained to step %ld", lc_seq2seq_steps_done(b));
    CHECK(same_file(tmp_path("s_own.ckpt"), tmp_path("s_row.ckpt")), "the row's checkpoint is lc_seq2seq_fit's");
    double exact, chars, v[4];
    const char *names[4];
    CHECK(lc_seq2seq_evaluate(a, &va, &exact, &chars) == LC_OK, "%s", lc_last_error());
    const int n = row_evaluate("seq2seq", tmp_path("s_row.ckpt"), tmp_path("s_valid.tsv"), names, v, "dec.d_ff", "24");
    CHECK(n == 2 && !strcmp(names[0], "exact_match") && v[0] == exact && !strcmp(names[1], "char_accuracy") &&
              v[1] == chars, "row: %d metrics, %g %g; own: %g %g", n, n > 0 ? v[0] : NAN, n > 1 ? v[1] : NAN, exact, chars);
    lc_seq2seq *r = NULL;
    CHECK(lc_seq2seq_load(tmp_path("resaved.ckpt"), 0, &r, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(r && lc_seq2seq_steps_done(r) == 4 && !memcmp(r->params, a->params, sizeof(float) * a->ptab.total),
          "the row's save keeps the step and the weights");
    lc_seq2seq_free(r);
done:
    lc_seq2seq_free(a), lc_seq2seq_free(b);
    lc_pairs_free(&tr), lc_pairs_free(&va);
}

/* ---------------------------------------------------------------- hibert */
static const char *words[] = {"markets", "rose", "after", "the", "bank", "cut", "rates", "while", "players",
                              "won", "a", "late", "match", "and", "voters", "chose", "new", "leaders"};

/* A BBC News root at tmp bbc/ of n business articles (a title, then 5 sentences), each summarized by its first two
 * sentences: its split makes articles 2..5, 7..10, ... training ones and 6, 16, ... held-out ones. */
static void bbc_root(int n) {
    mkdir(tmp_path("bbc"), 0700), mkdir(tmp_path("bbc/articles"), 0700), mkdir(tmp_path("bbc/summaries"), 0700);
    mkdir(tmp_path("bbc/articles/business"), 0700), mkdir(tmp_path("bbc/summaries/business"), 0700);
    for (int i = 0; i < n; i++) {
        char text[1024], ref[512] = "", name[64];
        int k = snprintf(text, sizeof text, "Title %d\n\n", i);
        for (int s = 0; s < 5; s++) {
            char sent[160];
            snprintf(sent, sizeof sent, "%s %s %s %s number %d. ", words[(i + s) % 18], words[(3 * i + s) % 18],
                     words[(i * s + 5) % 18], words[(7 * s + i) % 18], i * 5 + s);
            k += snprintf(text + k, sizeof text - (size_t)k, "%s", sent);
            if (s < 2) strcat(ref, sent);
        }
        snprintf(name, sizeof name, "bbc/articles/business/%03d.txt", i + 1);
        write_text(tmp_path(name), text);
        snprintf(name, sizeof name, "bbc/summaries/business/%03d.txt", i + 1);
        write_text(tmp_path(name), ref);
    }
}

TEST(hibert_row_is_its_fit) {
    bbc_root(30);
    char root[512];
    snprintf(root, sizeof root, "%s", tmp_path("bbc"));
    const lc_family *fam = lc_family_find("hibert");
    CHECK(fam && fam->run_open && fam->evaluate && fam->save, "the hibert row trains, evaluates and saves");
    lc_hibert_config c;
    lc_hibert_config_default(&c);
    c.sent = c.doc = c.dec = (lc_hibert_stack){1, 16, 2, 32, ""};
    c.max_sent_len = 48, c.max_sents = 8;
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 4, o.batch = 3, o.warmup = 1, o.eval_every = 2, o.lr = 3e-3f;
    /* the record `hibert finetune --data ROOT` makes */
    lc_hibert_run run;
    lc_hibert_run_default(&run);
    run.stage = LC_HIBERT_STAGE_FINETUNE, run.opts = o;
    snprintf(run.data, sizeof run.data, "%s", root);
    lc_hdocs tr, va;
    CHECK(lc_hdocs_load_sources(&tr, &va, root, c.max_sents, 0, 0) == LC_OK && tr.n_chunks > 3 && va.n_chunks > 0,
          "%s", lc_last_error());
    run.data_hash = tr.hash, run.data_docs = tr.n_chunks, run.data_bytes = tr.bytes;
    run.limits = lc_hdocs_limits(&tr, &va, o.batch, &c, 0);
    lc_hibert *a = NULL;
    lc_family_model *b = NULL;
    CHECK(lc_hibert_create(&c, &run.limits, 5, &a) == LC_OK, "%s", lc_last_error());
    CHECK(a && lc_hibert_save(a, &run, tmp_path("h_init.ckpt")) == LC_OK, "%s", lc_last_error());
    lc_hibert_free(a), a = NULL;
    CHECK(lc_hibert_load(tmp_path("h_init.ckpt"), NULL, &a, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_model_load(tmp_path("h_init.ckpt"), &b) == LC_OK, "%s", lc_last_error());
    if (!a || !b || !fam || !fam->run_open) goto done;
    const lc_hibert_fit_options fo = {a, &run, &tr, &va, 0, NULL, tmp_path("h_own.ckpt"), 0, 0, NULL, NULL, NULL, NULL};
    CHECK(lc_hibert_fit(&fo, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_fit(fam, lc_family_model_handle(b), &o, root, NULL, tmp_path("h_row.ckpt")) == LC_OK, "%s",
          lc_last_error());
    CHECK(same_file(tmp_path("h_own.ckpt"), tmp_path("h_row.ckpt")), "the row's checkpoint is lc_hibert_fit's");
    double r[6], v[6];
    const char *names[6];
    CHECK(lc_hdocs_rouge(a, &va, o.batch, r) == LC_OK, "%s", lc_last_error());
    const int n = row_evaluate("hibert", tmp_path("h_row.ckpt"), root, names, v, "--max-sents", "8");
    CHECK(n == 4 && !strcmp(names[0], "rouge1") && v[0] == r[0] && v[1] == r[1] && v[2] == r[2] && v[3] == r[3],
          "row: %d metrics, rouge1 %g; own %g", n, n > 0 ? v[0] : NAN, r[0]);
    lc_hibert *e = NULL;
    CHECK(lc_hibert_load(tmp_path("resaved.ckpt"), NULL, &e, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(e && lc_hibert_steps_done(e) == 4 && !memcmp(e->params, a->params, sizeof(float) * a->ptab.total),
          "the row's save keeps the step and the weights");
    lc_hibert_free(e);
    CHECK(lc_family_fit(fam, lc_family_model_handle(b), &o, root, root, NULL) == LC_ERR_ARG, "a validation file");
done:
    lc_hibert_free(a), lc_family_model_free(b);
    lc_hdocs_free(&tr), lc_hdocs_free(&va);
}

/* ---------------------------------------------------------------- classify */
/* n examples written as TSV to name: class i % 3 is a run of 'a', of 'b', or of "ca"; read back into *d. */
static void labelled_file(const char *name, int n, int shift, lc_labelled_data *d) {
    char buf[4096];
    size_t k = (size_t)snprintf(buf, sizeof buf, "Target\tSource\n");
    for (int i = 0; i < n; i++) {
        const int c = i % 3, l = 3 + (i * 7 + shift) % 20;
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%c\t", "abc"[c]);
        for (int t = 0; t < l; t++) buf[k++] = c == 0 ? 'a' : c == 1 ? 'b' : (t % 2 ? 'a' : 'c');
        buf[k++] = '\n';
    }
    write_file(tmp_path(name), buf, k);
    CHECK(lc_labelled_read(tmp_path(name), NULL, NULL, d) == LC_OK && d->n == n, "%s", lc_last_error());
}

TEST(classify_row_is_its_fit) {
    lc_labelled_data tr, va;
    labelled_file("c_train.tsv", 24, 0, &tr);
    labelled_file("c_valid.tsv", 9, 5, &va);
    const lc_family *fam = lc_family_find("classify");
    CHECK(fam && fam->run_open && fam->evaluate && fam->save, "the classify row trains, evaluates and saves");
    lc_classify_config c;
    lc_classify_config_default(&c);
    c.n_layer = 1, c.d_model = 16, c.n_head = 2, c.d_ff = 32, c.max_len = 32, c.n_classes = tr.labels.n;
    lc_classifier *a = NULL;
    lc_classify_run run;
    lc_classify_run_default(&run);
    CHECK(lc_classifier_create(&c, 16, 0, 7, &a) == LC_OK, "%s", lc_last_error());
    CHECK(a && lc_classifier_save(a, &run, &tr.labels, NULL, tmp_path("c_init.ckpt")) == LC_OK, "%s", lc_last_error());
    lc_classifier_free(a), a = NULL;
    lc_family_model *b = NULL;
    lc_label_set labels = {0, NULL};
    CHECK(lc_classifier_load(tmp_path("c_init.ckpt"), 16, 0, &a, NULL, &labels, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_model_load(tmp_path("c_init.ckpt"), &b) == LC_OK, "%s", lc_last_error());
    int *ids = malloc(sizeof(int) * (size_t)va.n), *pred = malloc(sizeof(int) * (size_t)va.n);
    if (!a || !b || !fam || !fam->run_open || !ids || !pred) goto done;
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 5, o.batch = 4, o.lr = 3e-3f, o.warmup = 2, o.eval_every = 2, o.ranks = 1;
    CHECK(lc_labelled_map(&va, &labels, ids, NULL) == LC_OK, "%s", lc_last_error());
    run.opts = o, run.train_examples = tr.n;
    const lc_classify_data d = {&tr, &va, ids, &labels, NULL};
    const lc_classify_fit_options fo = {&o, run, NULL, tmp_path("c_own.ckpt"), 0, 0, NULL, NULL, NULL};
    CHECK(lc_classify_fit(a, &d, &fo, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(lc_family_fit(fam, lc_family_model_handle(b), &o, tmp_path("c_train.tsv"), tmp_path("c_valid.tsv"),
                        tmp_path("c_row.ckpt")) == LC_OK, "%s", lc_last_error());
    CHECK(same_file(tmp_path("c_own.ckpt"), tmp_path("c_row.ckpt")), "the row's checkpoint is lc_classify_fit's");
    lc_train_options big = o;
    big.batch = 17; /* a model loaded through the table is planned for batches of 16 */
    CHECK(lc_family_fit(fam, lc_family_model_handle(b), &big, tmp_path("c_train.tsv"), NULL, NULL) == LC_ERR_ARG &&
              strstr(lc_last_error(), "1..16"), "%s", lc_last_error());
    long right = 0;
    CHECK(lc_classifier_classify_texts(a, NULL, va.n, va.text, va.text_len, 16, pred, NULL) == LC_OK, "%s",
          lc_last_error());
    for (long i = 0; i < va.n; i++) right += pred[i] == ids[i];
    double v[4];
    const char *names[4];
    const int n = row_evaluate("classify", tmp_path("c_row.ckpt"), tmp_path("c_valid.tsv"), names, v, "--ffn", "32");
    CHECK(n == 2 && !strcmp(names[0], "accuracy") && v[0] == (double)right / (double)va.n && v[1] == (double)va.n,
          "row: %d metrics, accuracy %g; own: %g", n, n > 0 ? v[0] : NAN, (double)right / (double)va.n);
    lc_classifier *r = NULL;
    lc_label_set saved = {0, NULL};
    CHECK(lc_classifier_load(tmp_path("resaved.ckpt"), 16, 0, &r, NULL, &saved, NULL) == LC_OK && saved.n == 3,
          "%s", lc_last_error());
    lc_label_set_free(&saved);
    CHECK(r && r->step == 5 && !memcmp(r->params, a->params, sizeof(float) * a->ptab.total),
          "the row's save keeps the step and the weights");
    lc_classifier_free(r);
done:
    free(ids), free(pred);
    lc_classifier_free(a), lc_family_model_free(b);
    lc_label_set_free(&labels);
    lc_labelled_free(&tr), lc_labelled_free(&va);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_family_rows_XXXXXX")) return 1;
    lc_threads_set_default(1);
    RUN(lm_row_is_lc_train);
    RUN(seq2seq_row_is_its_fit);
    RUN(classify_row_is_its_fit);
    RUN(hibert_row_is_its_fit);
    tmpdir_remove();
    return test_summary("test_family_rows");
}
