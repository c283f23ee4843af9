/* Tests of HIBERT checkpoints (lc_hibert_save / lc_hibert_load / lc_hibert_init_from): a round trip is
 * bit-exact (the same scores and pre-training loss), a resumed run continues bit-identically, init copies
 * the weights only and refuses another shape, and damaged files or checkpoints of the other model kind are
 * refused with one line naming the file; docs/reference/checkpoint.md lists every HIBERT metadata key. The models
 * have hashed word vectors (sent.words), so those travel too. */
#include <string.h>
#include <unistd.h>

#include "core/threads.h"
#include "harness.h"
#include "longctx.h"
#include "models/hibert/hibert.h"
#include "test_files.h"
#include "ckpt_kit.h"
#include "train/checkpoint_meta.h"

/* Two documents of 3 and 2 sentences. */
static const char *sents[5] = {"The cat sat.", "It was warm!", "Nobody came?", "A second text.", "It ends."};
static const int n_sents[2] = {3, 2};
static int lens[5];

static lc_hibert_batch batch(void) {
    for (int i = 0; i < 5; i++) lens[i] = (int)strlen(sents[i]);
    return (lc_hibert_batch){2, n_sents, (const uint8_t *const *)sents, lens};
}

static const uint8_t labels[5] = {1, 0, 1, 0, 1};

static void config(lc_hibert_config *c, int width) {
    lc_hibert_config_default(c);
    c->sent = (lc_hibert_stack){1, 16, 2, 32, "window:w=4"};
    c->doc = (lc_hibert_stack){1, width, 2, 24, ""};
    c->dec = (lc_hibert_stack){1, 8, 2, 16, ""};
    c->max_sent_len = 16, c->max_sents = 4, c->dropout = 0.1f;
    c->sent_words = 24; /* sent.words travels with the rest */
}

static lc_hibert *make_words(int width, int words) {
    lc_hibert_config c;
    config(&c, width);
    c.sent_words = words;
    const lc_hibert_limits lim = {2, 0, 0};
    lc_hibert *m = NULL;
    CHECK(lc_hibert_create(&c, &lim, 7, &m) == LC_OK, "%s", lc_last_error());
    return m;
}

static lc_hibert *make(int width) { return make_words(width, 24); }

static void options(lc_train_options *o) {
    lc_train_options_default(o);
    o->steps = 6, o->warmup = 2, o->lr = 3e-3f;
}

/* Steps from..to of alternating pre-training and extraction steps. */
static void train(lc_hibert *m, const lc_train_options *o, long to) {
    const lc_hibert_batch b = batch();
    for (long s = lc_hibert_steps_done(m); s < to; s++) {
        lc_status st = s % 2 ? lc_hibert_step(m, o, &b, labels, NULL) : lc_hibert_pretrain_step(m, o, &b, 99 + (uint64_t)s, NULL);
        CHECK(st == LC_OK, "step %ld: %s", s, lc_last_error());
    }
}

static int same_floats(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static lc_hibert_run run_record(const lc_train_options *o) {
    lc_hibert_run r;
    lc_hibert_run_default(&r);
    r.stage = LC_HIBERT_STAGE_FINETUNE, r.opts = *o, r.limits = (lc_hibert_limits){2, 8, 128};
    snprintf(r.data, sizeof r.data, "/data/a\n/data/b");
    r.data_docs = 5, r.data_bytes = 1234, r.data_hash = 0xfeedfacecafebeefULL, r.best = 61.25f, r.best_step = 4;
    return r;
}

TEST(round_trip_is_bit_exact) {
    lc_hibert *m = make(16);
    if (!m) return;
    lc_train_options o;
    options(&o);
    snprintf(o.lr_scale, sizeof o.lr_scale, "sent.=0.5@4,head.=2");
    train(m, &o, 3);
    const lc_hibert_run r = run_record(&o);
    char path[300];
    snprintf(path, sizeof path, "%s", tmp_path("a.safetensors"));
    CHECK(lc_hibert_save(m, &r, path) == LC_OK, "%s", lc_last_error());
    lc_hibert *l = NULL;
    lc_hibert_run back;
    CHECK(lc_hibert_load(path, NULL, &l, &back) == LC_OK, "%s", lc_last_error());
    if (!l) { lc_hibert_free(m); return; }
    const lc_hibert_config *x = lc_hibert_get_config(l), *y = lc_hibert_get_config(m);
    CHECK(x->sent.d_model == y->sent.d_model && !strcmp(x->sent.attn, y->sent.attn) && x->doc.d_ff == y->doc.d_ff &&
              x->dec.n_head == y->dec.n_head && x->max_sents == y->max_sents && x->dropout == y->dropout &&
              x->sent_words == 24, "config");
    CHECK(lc_hibert_steps_done(l) == 3, "step %ld", lc_hibert_steps_done(l));
    CHECK(back.stage == r.stage && back.limits.max_bytes == 128 && back.best == r.best && back.best_step == 4 &&
              back.data_hash == r.data_hash && strcmp(back.data, r.data) == 0 && back.opts.lr == o.lr &&
              strcmp(back.opts.lr_scale, o.lr_scale) == 0 && back.opts.steps == o.steps && back.opts.seed == o.seed, "run record");
    CHECK(same_floats(l->params, m->params, m->ptab.total) && same_floats(l->adam_m, m->adam_m, m->ptab.total) &&
              same_floats(l->adam_v, m->adam_v, m->ptab.total), "tensors");
    const lc_hibert_batch b = batch();
    double la = 0, lb = 0;
    long na = 0, nb = 0;
    CHECK(lc_hibert_extract_forward(m, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    float scores[5];
    memcpy(scores, lc_hibert_scores(m), sizeof scores);
    CHECK(lc_hibert_extract_forward(l, &b, NULL, 0, NULL, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(same_floats(scores, lc_hibert_scores(l), 5), "scores");
    CHECK(lc_hibert_pretrain_forward(m, &b, 5, 0, &la, &na) == LC_OK && lc_hibert_pretrain_forward(l, &b, 5, 0, &lb, &nb) == LC_OK,
          "%s", lc_last_error());
    CHECK(la == lb && na == nb, "pre-training loss %.17g vs %.17g", la, lb);
    lc_hibert_free(l);
    lc_hibert_free(m);
}

TEST(resume_continues_bit_identically) {
    lc_hibert *a = make(16), *b = make(16);
    if (!a || !b) { lc_hibert_free(a); lc_hibert_free(b); return; }
    lc_train_options o;
    options(&o);
    train(a, &o, 6);
    train(b, &o, 3);
    const lc_hibert_run r = run_record(&o);
    CHECK(lc_hibert_save(b, &r, tmp_path("b.safetensors")) == LC_OK, "%s", lc_last_error());
    lc_hibert_free(b);
    b = NULL;
    CHECK(lc_hibert_load(tmp_path("b.safetensors"), NULL, &b, NULL) == LC_OK, "%s", lc_last_error());
    if (!b) { lc_hibert_free(a); return; }
    train(b, &o, 6);
    CHECK(same_floats(a->params, b->params, a->ptab.total) && same_floats(a->adam_v, b->adam_v, a->ptab.total),
          "resumed parameters differ from the uninterrupted run's");
    lc_hibert_free(a);
    lc_hibert_free(b);
}

/* --lr-scale: a factor 0 freezes the tensors it names until its steps pass, the others train; a bad
 * spec is refused before anything changes. */
TEST(lr_scale_freezes_named_tensors) {
    lc_hibert *m = make(16), *ref = make(16);
    if (!m || !ref) { lc_hibert_free(m); lc_hibert_free(ref); return; }
    lc_train_options o;
    options(&o);
    snprintf(o.lr_scale, sizeof o.lr_scale, "sent.=0@2,sent.wte=0");
    train(m, &o, 2);
    int sent_same = 1, sent_n = 0, other_moved = 0;
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        if (!lc_tensor_is_param(t)) continue;
        const lc_slot *sl = &m->ptab.slots[t->slot];
        const int same = same_floats(m->params + sl->offset, ref->params + sl->offset, sl->count);
        if (strncmp(t->name, "sent.", 5) == 0) sent_same &= same, sent_n++;
        else other_moved |= !same;
    }
    CHECK(sent_n > 3 && sent_same, "the sentence encoder's %d tensors did not stay frozen for 2 steps", sent_n);
    CHECK(other_moved, "the document encoder and the head did not train");
    train(m, &o, 4);
    int wte = -1, moved_after = 0;
    for (int i = 0; i < m->tensors.n; i++)
        if (strcmp(m->tensors.t[i].name, "sent.wte") == 0) wte = i;
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        if (!lc_tensor_is_param(t) || strncmp(t->name, "sent.", 5) != 0) continue;
        const lc_slot *sl = &m->ptab.slots[t->slot];
        const int same = same_floats(m->params + sl->offset, ref->params + sl->offset, sl->count);
        if (i == wte) CHECK(same, "sent.wte (its own rule, no @STEPS) moved");
        else moved_after |= !same;
    }
    CHECK(wte >= 0 && moved_after, "the sentence encoder did not train after step 2");
    const long step = lc_hibert_steps_done(m);
    snprintf(o.lr_scale, sizeof o.lr_scale, "sent.=x");
    const lc_hibert_batch b = batch();
    CHECK(lc_hibert_step(m, &o, &b, labels, NULL) == LC_ERR_ARG && strstr(lc_last_error(), "'sent.=x'"),
          "a bad spec: %s", lc_last_error());
    CHECK(lc_hibert_steps_done(m) == step, "a refused step advanced the model");
    lc_hibert_free(m);
    lc_hibert_free(ref);
}

TEST(init_copies_weights_only) {
    lc_hibert *a = make(16), *b = make(16), *c = make(24);
    if (!a || !b || !c) { lc_hibert_free(a); lc_hibert_free(b); lc_hibert_free(c); return; }
    lc_train_options o;
    options(&o);
    train(a, &o, 2);
    const lc_hibert_run r = run_record(&o);
    CHECK(lc_hibert_save(a, &r, tmp_path("i.safetensors")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_init_from(b, tmp_path("i.safetensors")) == LC_OK, "%s", lc_last_error());
    CHECK(same_floats(a->params, b->params, a->ptab.total), "weights copied");
    CHECK(lc_hibert_steps_done(b) == 0, "the step stays");
    for (size_t i = 0; i < b->ptab.total; i++)
        if (b->adam_m[i] != 0) { CHECK(0, "moments stay zero"); break; }
    CHECK(lc_hibert_init_from(c, tmp_path("i.safetensors")) == LC_ERR_ARG, "another width");
    CHECK(strstr(lc_last_error(), "i.safetensors: its document encoder (1 layers, dim 16"), "%s", lc_last_error());
    lc_hibert *d = make_words(16, 0);
    CHECK(d && lc_hibert_init_from(d, tmp_path("i.safetensors")) == LC_ERR_ARG &&
              strstr(lc_last_error(), "sent-words 24: not the model's (16, 4, pre-LN, gelu, 0)"),
          "another word table: %s", lc_last_error());
    lc_hibert_free(a), lc_hibert_free(b), lc_hibert_free(c), lc_hibert_free(d);
}

static lc_status load(const char *path, int *built) {
    lc_hibert *m = NULL;
    const lc_status st = lc_hibert_load(path, NULL, &m, NULL);
    *built = m != NULL;
    lc_hibert_free(m);
    return st;
}

TEST(damaged_and_other_kinds_are_refused) {
    lc_hibert *m = make(16);
    if (!m) return;
    lc_train_options o;
    options(&o);
    snprintf(o.lr_scale, sizeof o.lr_scale, "head.=2");
    const lc_hibert_run r = run_record(&o);
    char good[300];
    snprintf(good, sizeof good, "%s", tmp_path("good.safetensors"));
    CHECK(lc_hibert_save(m, &r, good) == LC_OK, "%s", lc_last_error());
    lc_hibert_free(m);
    /* a bad --lr-scale spec (lrs) is refused at load, naming the file, not at the first training step */
    static const ckpt_damage damages[] = {
        {"cut.safetensors", NULL, NULL, "cut.safetensors"},
        {"shape.safetensors", "\"doc.d_model\":\"16\"", "\"doc.d_model\":\"32\"", "shape.safetensors: "},
        {"stage.safetensors", "\"stage\":\"finetune\"", "\"stage\":\"fine-tun\"",
         "metadata 'stage' = 'fine-tun' must be"},
        {"lrs.safetensors", "\"train.lr_scale\":\"head.=2\"", "\"train.lr_scale\":\"head.=x\"",
         "lrs.safetensors: metadata 'train.lr_scale': lr-scale: 'head.=x'"},
        {"name.safetensors", "\"head.bias\"", "\"head.bise\"", "name.safetensors: "},
    };
    ckpt_damages_refused(load, good, damages, (int)(sizeof damages / sizeof damages[0]));
    /* a language model's checkpoint, and this one read as a language model */
    ckpt_write_tiny_lm(tmp_path("lm.safetensors"), &o);
    ckpt_expect_refusal(load, tmp_path("lm.safetensors"), "lm.safetensors: a language model checkpoint (model = xl), "
                                                          "not a HIBERT model: use it with longctx eval, sample");
    ckpt_lm_refuses(good, "good.safetensors: a HIBERT checkpoint (model = hibert), not a language model: use it "
                          "with longctx summarize");
    lc_hibert_config cfg;
    CHECK(lc_hibert_checkpoint_info(tmp_path("lm.safetensors"), &cfg, NULL) == LC_ERR_FORMAT, "info of an LM");
    CHECK(lc_hibert_checkpoint_info(tmpdir, &cfg, NULL) != LC_OK && strstr(lc_last_error(), tmpdir), "a directory");
}

/* head.features (lc_hibert_config.head_features): saved and loaded with the rest; init from a checkpoint whose
 * head reads no features copies every other tensor and leaves head.features at zero; the reverse is refused. */
TEST(head_features_travel_and_init) {
    lc_hibert_config c;
    config(&c, 16);
    c.head_features = 2;
    const lc_hibert_limits lim = {2, 0, 0};
    lc_hibert *f = NULL, *g = NULL, *plain = make(16), *h = NULL;
    CHECK(lc_hibert_create(&c, &lim, 7, &f) == LC_OK && lc_hibert_create(&c, &lim, 8, &g) == LC_OK, "%s", lc_last_error());
    if (!f || !g || !plain) { lc_hibert_free(f), lc_hibert_free(g), lc_hibert_free(plain); return; }
    lc_hibert_batch b = batch();
    const float feats[10] = {1, 0, 0.5f, -1, 0, 2, 1, 1, -0.5f, 0};
    b.features = feats;
    lc_train_options o;
    options(&o);
    for (int s = 0; s < 3; s++) CHECK(lc_hibert_step(f, &o, &b, labels, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(f->feat_w[0] != 0 && f->feat_w[1] != 0, "head.features trained");
    const lc_hibert_run r = run_record(&o);
    CHECK(lc_hibert_save(f, &r, tmp_path("hf.safetensors")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_load(tmp_path("hf.safetensors"), NULL, &h, NULL) == LC_OK, "%s", lc_last_error());
    CHECK(h && lc_hibert_get_config(h)->head_features == 2 && same_floats(f->params, h->params, f->ptab.total),
          "round trip");
    train(plain, &o, 2);
    CHECK(lc_hibert_save(plain, &r, tmp_path("hp.safetensors")) == LC_OK, "%s", lc_last_error());
    CHECK(lc_hibert_init_from(g, tmp_path("hp.safetensors")) == LC_OK, "%s", lc_last_error());
    CHECK(same_floats(plain->head_w, g->head_w, 16) && same_floats(plain->wte, g->wte, 258 * 16) && g->feat_w[0] == 0 &&
              g->feat_w[1] == 0, "every tensor but head.features copied; it stays zero");
    CHECK(lc_hibert_init_from(plain, tmp_path("hf.safetensors")) == LC_ERR_ARG &&
              strstr(lc_last_error(), "head-features 2: not the model's (0)"), "%s", lc_last_error());
    lc_hibert_free(f), lc_hibert_free(g), lc_hibert_free(plain), lc_hibert_free(h);
}

TEST(docs_list_every_key) {
    long n;
    char *doc = slurp_file("docs/reference/checkpoint.md", &n);
    if (!doc) { CHECK(0, "cannot read docs/reference/checkpoint.md"); return; }
    const char *key;
    char want[128];
    int count = 0;
    for (int i = 0; (key = lc_hibert_meta_key(i)); i++, count++) {
        snprintf(want, sizeof want, "`%s`", key);
        CHECK(strstr(doc, want), "docs/reference/checkpoint.md lacks HIBERT metadata key %s", want);
    }
    CHECK(count > 40 && count <= LC_CKPT_META_MAX, "%d keys", count);
    free(doc);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_hibert_ckpt_XXXXXX")) return 1;
    lc_threads_set_default(1);
    RUN(round_trip_is_bit_exact);
    RUN(resume_continues_bit_identically);
    RUN(lr_scale_freezes_named_tensors);
    RUN(init_copies_weights_only);
    RUN(damaged_and_other_kinds_are_refused);
    RUN(head_features_travel_and_init);
    RUN(docs_list_every_key);
    tmpdir_remove();
    return test_summary("test_hibert_ckpt");
}
