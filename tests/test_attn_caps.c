/* Tests of what attention kinds declare and of the one check (lc_attn_kind_check): every built-in kind's
 * caps against shapes asking for each feature, with the one message format; the interface's own rules;
 * the length rule; check = NULL; run-time registration (lc_attn_kind_register) of a kind defined here,
 * which the spec string and the model then find, and whose refusal of a run-time shape comes back from
 * lc_model_forward as LC_ERR_ARG; an XL model whose kind lacks LC_ATTN_CAP_DECODE recomputes keys at
 * inference instead of using the cache, with the same logits. Global tokens on short sequences (Longformer: positions >= T are not
 * global in that call): the window kind with listed positions beyond T equals the call with only the
 * existing ones (forward and backward, bit for bit), bigbird ETC with g >= T is full attention, and a
 * model with global tokens runs a segment shorter than its global positions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/bigbird.h"
#include "attn/spec.h"
#include "attn/window.h"
#include "core/rng.h"
#include "core/status.h"
#include "harness.h"
#include "longctx.h"

static const unsigned feature[] = {LC_ATTN_CAP_MEMORY, LC_ATTN_CAP_RELPOS, LC_ATTN_CAP_WINDOW, LC_ATTN_CAP_GLOBAL};
static const char *const feature_word[] = {"memory rows", "relative positions", "same_length windows",
                                           "global tokens"};

static lc_attn_shape shape(int B, int H, int T, int M, int D, int causal) {
    lc_attn_shape s;
    memset(&s, 0, sizeof s);
    s.B = B, s.H = H, s.T = T, s.M = M, s.D = D, s.causal = causal, s.scale = 1.0f / sqrtf((float)D);
    s.threads = 2;
    return s;
}

/* Every built-in kind: a shape asking for one feature is accepted exactly when the caps name it, and a
 * refusal is one line "<kind>: <feature> are not supported (...)". */
TEST(caps_decide_what_every_kind_accepts) {
    char err[512];
    const int pos0[1] = {0};
    for (int i = 0; i < lc_attn_kind_count(); i++) {
        const lc_attn_kind *k = lc_attn_kind_at(i);
        _Alignas(16) unsigned char opts[LC_ATTN_OPTS_BYTES];
        memset(opts, 0, sizeof opts);
        if (k->opts_init) k->opts_init(opts, 2);
        if (k->opts_plan) k->opts_plan(opts, 2, 8, 96); /* length-dependent options, as a model plans them */
        CHECK(k->caps & (LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL), "%s: no direction in its caps", k->name);
        for (int causal = 0; causal <= 1; causal++) {
            const lc_attn_shape s = shape(1, 2, 96, 0, 8, causal);
            const int want = (k->caps & (causal ? LC_ATTN_CAP_CAUSAL : LC_ATTN_CAP_BIDIRECTIONAL)) != 0;
            err[0] = 0;
            const int rc = lc_attn_kind_check(k, &s, opts, NULL, err, sizeof err);
            CHECK((rc == 0) == want, "%s causal=%d: rc %d (%s)", k->name, causal, rc, err);
            if (!want) {
                CHECK(strncmp(err, k->name, strlen(k->name)) == 0 && strstr(err, "attention is not supported"),
                      "%s: message '%s'", k->name, err);
                printf("  %s\n", err);
            }
        }
        const int causal = (k->caps & LC_ATTN_CAP_CAUSAL) != 0;
        for (int f = 0; f < 4; f++) {
            lc_attn_shape s = shape(1, 2, 96, 0, 8, causal);
            lc_attn_global probe;
            memset(&probe, 0, sizeof probe);
            probe.n = 1, probe.pos = pos0;
            if (feature[f] == LC_ATTN_CAP_MEMORY) s.M = 16;
            if (feature[f] == LC_ATTN_CAP_RELPOS) s.relpos = 1;
            if (feature[f] == LC_ATTN_CAP_WINDOW) s.window = 16;
            const lc_attn_global *g = feature[f] == LC_ATTN_CAP_GLOBAL ? &probe : NULL;
            /* relative positions and windows are defined for causal attention only */
            const int needs_causal = feature[f] == LC_ATTN_CAP_RELPOS || feature[f] == LC_ATTN_CAP_WINDOW;
            const int want = (k->caps & feature[f]) && (causal || !needs_causal);
            err[0] = 0;
            const int rc = lc_attn_kind_check(k, &s, opts, g, err, sizeof err);
            CHECK((rc == 0) == want, "%s with %s: rc %d (%s)", k->name, feature_word[f], rc, err);
            if (!want && causal) {
                char prefix[128];
                snprintf(prefix, sizeof prefix, "%s: %s are not supported (", k->name, feature_word[f]);
                CHECK(strncmp(err, prefix, strlen(prefix)) == 0 && !strchr(err, '\n'), "message '%s', want '%s...'",
                      err, prefix);
                printf("  %s\n", err);
            }
        }
    }
}

/* The interface's own rules hold for every kind, whatever its caps: window and relative positions need
 * causal attention; global tokens never come with relative positions and are increasing and >= 0. */
TEST(interface_rules_hold_for_every_kind) {
    char err[512];
    const lc_attn_kind *full = lc_attn_kind_by_name("full"), *window = lc_attn_kind_by_name("window");
    CHECK(full && window, "full and window are in the table");
    if (!full || !window) return;
    lc_attn_shape s = shape(1, 2, 32, 0, 8, 0);
    s.relpos = 1;
    CHECK(lc_attn_kind_check(full, &s, NULL, NULL, err, sizeof err) && strstr(err, "full: relative positions need causal"),
          "bidirectional relpos: %s", err);
    s.relpos = 0, s.window = 4;
    CHECK(lc_attn_kind_check(full, &s, NULL, NULL, err, sizeof err) && strstr(err, "full: a same_length window needs"),
          "bidirectional window: %s", err);
    _Alignas(16) unsigned char wo[LC_ATTN_OPTS_BYTES];
    window->opts_init(wo, 2);
    s = shape(1, 2, 32, 0, 8, 1);
    s.relpos = 1;
    const int good[2] = {0, 5}, unsorted[2] = {5, 2}, repeated[2] = {4, 4}, negative[2] = {-1, 3};
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = 2, g.pos = good;
    CHECK(lc_attn_kind_check(window, &s, wo, &g, err, sizeof err) && strstr(err, "window: global tokens need"),
          "globals with relpos: %s", err);
    s.relpos = 0;
    CHECK(lc_attn_kind_check(window, &s, wo, &g, err, sizeof err) == 0, "good positions: %s", err);
    const int *bad[3] = {unsorted, repeated, negative};
    for (int i = 0; i < 3; i++) {
        g.pos = bad[i];
        err[0] = 0;
        CHECK(lc_attn_kind_check(window, &s, wo, &g, err, sizeof err) && strstr(err, "window: global position"),
              "positions %d, %d: '%s'", bad[i][0], bad[i][1], err);
    }
    /* Longformer: positions at or beyond T are simply not global in a call, and global=G > T is all of them */
    const int beyond[3] = {0, 31, 40};
    g.n = 3, g.pos = beyond;
    CHECK(lc_attn_kind_check(window, &s, wo, &g, err, sizeof err) == 0, "a position beyond T refused: %s", err);
    CHECK(lc_attn_global_count(&g, 32) == 2 && lc_attn_global_count(&g, 31) == 1 && lc_attn_global_count(&g, 1) == 1,
          "count of existing positions");
    g.n = 50, g.pos = NULL;
    CHECK(lc_attn_kind_check(window, &s, wo, &g, err, sizeof err) == 0, "global=50 at T=32 refused: %s", err);
    CHECK(lc_attn_global_count(&g, 32) == 32 && lc_attn_global_count(&g, 64) == 50, "count of the first n");
}

/* ---------------------------------------------------------------- a kind defined here */

/* "selfonly": each query sees only its own key (key position M + t). out_t = v_{M+t}, lse_t = scale
 * q_t . k_{M+t}; backward: dv of the query's key is dout, dq and dk are 0 (a softmax over one key). */
static size_t self_workspace(const lc_attn_shape *s, const void *opts) { return 0; }

static void self_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int i = 0; i < s->T; i++) {
                const float *q = lc_view_row(&t->q, b, i, h, s->D), *k = lc_view_row(&t->k, b, s->M + i, h, s->D);
                float dot = 0;
                for (int e = 0; e < s->D; e++) dot += q[e] * k[e];
                memcpy(lc_view_row(&t->out, b, i, h, s->D), lc_view_row(&t->v, b, s->M + i, h, s->D),
                       sizeof(float) * (size_t)s->D);
                t->lse[((long)b * s->H + h) * s->T + i] = s->scale * dot;
            }
}

static void self_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const size_t row = sizeof(float) * (size_t)s->D;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++) {
            for (int i = 0; i < s->T; i++) memset(lc_view_row(&t->dq, b, i, h, s->D), 0, row);
            for (int j = 0; j < s->M + s->T; j++) {
                memset(lc_view_row(&t->dk, b, j, h, s->D), 0, row);
                if (j < s->M) memset(lc_view_row(&t->dv, b, j, h, s->D), 0, row);
                else memcpy(lc_view_row(&t->dv, b, j, h, s->D), lc_view_row(&t->dout, b, j - s->M, h, s->D), row);
            }
        }
}

/* a length rule as data: at least 4 queries, an even number of them */
static const lc_attn_kind self_kind = {
    .name = "selfonly",
    .options_help = "",
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL,
    .min_T = 4,
    .T_multiple = 2,
    .workspace_floats = self_workspace,
    .forward = self_forward,
    .backward = self_backward,
};

TEST(length_rule_and_null_check) {
    char err[512];
    lc_attn_shape s = shape(1, 2, 6, 0, 8, 1);
    CHECK(lc_attn_kind_check(&self_kind, &s, NULL, NULL, err, sizeof err) == 0, "T=6 with check = NULL: %s", err);
    s.T = 2;
    CHECK(lc_attn_kind_check(&self_kind, &s, NULL, NULL, err, sizeof err) &&
              strcmp(err, "selfonly: sequences of T=2 positions; the kind needs T >= 4") == 0,
          "T=2: '%s'", err);
    s.T = 7;
    CHECK(lc_attn_kind_check(&self_kind, &s, NULL, NULL, err, sizeof err) &&
              strcmp(err, "selfonly: sequences of T=7 positions; the kind needs T a multiple of 2") == 0,
          "T=7: '%s'", err);
    s.T = 8, s.M = 3;
    CHECK(lc_attn_kind_check(&self_kind, &s, NULL, NULL, err, sizeof err) && strstr(err, "selfonly: memory rows"),
          "memory: '%s'", err);
}

TEST(registration_checks_rows_and_names) {
    CHECK(lc_attn_kind_by_name("selfonly") == NULL, "not there before registration");
    const int before = lc_attn_kind_count();
    CHECK(lc_attn_kind_register(&self_kind) == 0, "register: %s", lc_last_error());
    CHECK(lc_attn_kind_by_name("selfonly") == &self_kind && lc_attn_kind_count() == before + 1 &&
              lc_attn_kind_at(before) == &self_kind,
          "found by name and enumerated");
    CHECK(lc_attn_kind_register(&self_kind) == -1 && strstr(lc_last_error(), "'selfonly' is already registered"),
          "duplicate: %s", lc_last_error());
    lc_attn_kind bad = self_kind;
    bad.name = "window"; /* a built-in's name */
    CHECK(lc_attn_kind_register(&bad) == -1 && strstr(lc_last_error(), "already"), "built-in name: %s",
          lc_last_error());
    const char *names[] = {"", "2x", "a:b", "a+b", "a,b", "a;b", "a=b", "a/b", "a b", NULL};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        bad = self_kind, bad.name = names[i];
        CHECK(lc_attn_kind_register(&bad) == -1 && strstr(lc_last_error(), "a name is a letter"), "name '%s': %s",
              names[i] ? names[i] : "(null)", lc_last_error());
    }
    struct {
        const char *why, *message;
        lc_attn_kind row;
    } rows[] = {
        {"no forward", "forward, backward and workspace_floats", self_kind},
        {"options too big", "exceed", self_kind},
        {"no direction", "neither", self_kind},
        {"unknown bits", "unknown caps", self_kind},
        {"negative min_T", "must be >= 0", self_kind},
        {"no options_help", "options_help", self_kind},
    };
    rows[0].row.forward = NULL;
    rows[1].row.opts_size = LC_ATTN_OPTS_BYTES + 1;
    rows[2].row.caps = LC_ATTN_CAP_MEMORY;
    rows[3].row.caps |= 1u << 20;
    rows[4].row.min_T = -1;
    rows[5].row.options_help = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rows[i].row.name = "another";
        CHECK(lc_attn_kind_register(&rows[i].row) == -1 && strstr(lc_last_error(), rows[i].message) &&
                  strstr(lc_last_error(), "'another'"),
              "%s: %s", rows[i].why, lc_last_error());
    }
    CHECK(lc_attn_kind_by_name("another") == NULL, "a refused row is not in the table");
    /* the spec string finds the registered kind, and the layer check runs its caps and length rule */
    lc_attn_layer layer;
    char err[512];
    CHECK(lc_attn_spec_parse("2xselfonly+full", 1, 4, &layer, err, sizeof err) == 0 && layer.group[0].kind == &self_kind,
          "spec: %s", err);
    lc_attn_shape s = shape(1, 4, 8, 0, 8, 1);
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) == 0, "layer check: %s", err);
    s.T = 3;
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) && strstr(err, "attention: selfonly: sequences of T=3"),
          "layer check T=3: %s", err);
    CHECK(lc_attn_spec_parse("selfonly:global=1", 1, 4, &layer, err, sizeof err) == 0, "spec with global: %s", err);
    s.T = 8;
    CHECK(lc_attn_layer_check(&layer, &s, err, sizeof err) && strstr(err, "selfonly: global tokens are not supported"),
          "global on a kind without them: %s", err);
}

/* The registered kind inside a model: trains a step, and a run-time shape it refuses (a segment shorter
 * than its min_T) comes back from lc_model_forward as LC_ERR_ARG with one line, leaving the model usable. */
TEST(model_returns_the_run_time_refusal) {
    if (!lc_attn_kind_by_name("selfonly") && lc_attn_kind_register(&self_kind)) return;
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = LC_MODEL_VANILLA, c.mem_len = 0, c.n_layer = 1, c.d_model = 32, c.n_head = 2, c.d_ff = 64;
    c.seq_len = 8;
    snprintf(c.attn, sizeof c.attn, "1xselfonly+full");
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 2, 7, &m) == LC_OK, "create: %s", lc_last_error());
    if (!m) return;
    int tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 37) % 256, tgt[i] = (i * 11 + 3) % 256;
    double loss;
    long n;
    CHECK(lc_model_forward(m, tok, tgt, 2, 8, 1, &loss, &n) == LC_OK && isfinite(loss), "forward T=8: %s",
          lc_last_error());
    CHECK(lc_model_backward(m, 1.0f) == LC_OK, "backward: %s", lc_last_error());
    CHECK(lc_model_forward(m, tok, tgt, 1, 3, 0, &loss, &n) == LC_ERR_ARG &&
              strcmp(lc_last_error(), "attn layer 0: selfonly: sequences of T=3 positions; the kind needs T >= 4") == 0,
          "T=3: '%s'", lc_last_error());
    CHECK(lc_model_forward(m, tok, tgt, 1, 6, 0, &loss, &n) == LC_OK, "T=6 after the refusal: %s", lc_last_error());
    lc_model_free(m);
}

/* The full kind's functions under another name, without LC_ATTN_CAP_DECODE: an XL model built on it
 * recomputes the memory's keys and values at inference instead of keeping a cache, with the same logits. */
static const lc_attn_kind full_nocache = {
    .name = "full_nocache",
    .options_help = "",
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL | LC_ATTN_CAP_MEMORY | LC_ATTN_CAP_RELPOS |
            LC_ATTN_CAP_WINDOW,
    .workspace_floats = lc_attn_full_workspace,
    .forward = lc_attn_full_forward,
    .backward = lc_attn_full_backward,
};

TEST(xl_inference_without_decode_recomputes) {
    if (!lc_attn_kind_by_name("full_nocache")) CHECK(lc_attn_kind_register(&full_nocache) == 0, "%s", lc_last_error());
    lc_model *m[2] = {NULL, NULL};
    const char *spec[2] = {"full", "full_nocache"};
    for (int i = 0; i < 2; i++) {
        lc_config c;
        lc_config_preset(&c, "tiny");
        c.model = LC_MODEL_XL, c.n_layer = 2, c.d_model = 32, c.n_head = 2, c.d_ff = 64, c.seq_len = 8, c.mem_len = 8;
        c.dropout = 0;
        snprintf(c.attn, sizeof c.attn, "%s", spec[i]);
        CHECK(lc_model_create(&c, 1, 11, &m[i]) == LC_OK, "%s: %s", spec[i], lc_last_error());
    }
    if (!m[0] || !m[1]) goto done;
    for (int seg = 0; seg < 4; seg++) {
        int tok[8];
        const int T = seg == 3 ? 1 : 8; /* then one byte against the memory, as generation does */
        for (int t = 0; t < T; t++) tok[t] = (seg * 71 + t * 13) % 256;
        for (int i = 0; i < 2; i++)
            CHECK(lc_model_forward(m[i], tok, NULL, 1, T, 0, NULL, NULL) == LC_OK, "%s: %s", spec[i], lc_last_error());
        char label[64];
        snprintf(label, sizeof label, "logits, segment %d", seg);
        CHECK_CLOSE(label, lc_model_logits(m[1]), lc_model_logits(m[0]), (size_t)T * 256, 1e-4, 1e-5);
    }
done:
    lc_model_free(m[0]);
    lc_model_free(m[1]);
}

/* ---------------------------------------------------------------- global tokens on short sequences */

typedef struct {
    int B, H, T, D;
    float *q, *k, *v, *qg, *kg, *vg, *dout;                        /* inputs [B*T*H*D] */
    float *out, *lse, *glse, *dq, *dk, *dv, *dqg, *dkg, *dvg, *work; /* outputs */
} gprob;

static float *gfill(size_t n, lc_rng *r) {
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) p[i] = lc_rng_normal(r);
    return p;
}

static void gprob_init(gprob *p, int B, int H, int T, int D, uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->B = B, p->H = H, p->T = T, p->D = D;
    const size_t n = (size_t)B * T * H * D;
    lc_rng r;
    lc_rng_seed(&r, seed);
    p->q = gfill(n, &r), p->k = gfill(n, &r), p->v = gfill(n, &r);
    p->qg = gfill(n, &r), p->kg = gfill(n, &r), p->vg = gfill(n, &r), p->dout = gfill(n, &r);
}

static void gprob_free(gprob *p) {
    float *all[] = {p->q, p->k, p->v, p->qg, p->kg, p->vg, p->dout, p->out, p->lse, p->glse,
                    p->dq, p->dk, p->dv, p->dqg, p->dkg, p->dvg, p->work};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* Run `kind` forward and backward on p with global positions pos[0..n) (n = 0, pos = NULL: no global
 * tensors at all); outputs are freshly allocated (global lse room for n rows). */
static void grun(gprob *p, const lc_attn_kind *kind, const void *opts, int causal, const int *pos, int n, int global) {
    const int B = p->B, H = p->H, T = p->T, D = p->D;
    const size_t nn = (size_t)B * T * H * D;
    const long sb = (long)T * H * D, st = (long)H * D;
    float **outs[] = {&p->out, &p->dq, &p->dk, &p->dv, &p->dqg, &p->dkg, &p->dvg};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        free(*outs[i]);
        *outs[i] = calloc(nn, sizeof(float));
    }
    free(p->lse), free(p->glse), free(p->work);
    p->lse = calloc((size_t)B * H * T, sizeof(float));
    p->glse = calloc((size_t)B * H * (n > 0 ? n : 1), sizeof(float));
    lc_attn_shape s = shape(B, H, T, 0, D, causal);
    const size_t w = kind->workspace_floats(&s, opts);
    p->work = calloc(w + 16, sizeof(float));
    lc_attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){p->q, sb, st}, t.k = (lc_view){p->k, sb, st}, t.v = (lc_view){p->v, sb, st};
    t.out = (lc_view){p->out, sb, st}, t.dout = (lc_view){p->dout, sb, st};
    t.dq = (lc_view){p->dq, sb, st}, t.dk = (lc_view){p->dk, sb, st}, t.dv = (lc_view){p->dv, sb, st};
    t.lse = p->lse;
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.n = n, g.pos = pos;
    g.qg = (lc_view){p->qg, sb, st}, g.kg = (lc_view){p->kg, sb, st}, g.vg = (lc_view){p->vg, sb, st};
    g.dqg = (lc_view){p->dqg, sb, st}, g.dkg = (lc_view){p->dkg, sb, st}, g.dvg = (lc_view){p->dvg, sb, st};
    g.lse = p->glse;
    if (global) t.global = &g;
    char err[512];
    CHECK(lc_attn_kind_check(kind, &s, opts, t.global, err, sizeof err) == 0, "check: %s", err);
    kind->forward(&s, opts, &t, p->work);
    kind->backward(&s, opts, &t, p->work);
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, sizeof(float) * n) == 0; }

/* The window kind given global positions beyond a short T (a list longer than the sequence, or global=G
 * with G > T) computes exactly what it computes given only the positions that exist. */
TEST(window_globals_beyond_a_short_t_are_not_global) {
    const lc_attn_kind *window = &lc_attn_window;
    lc_attn_window_opts o;
    window->opts_init(&o, 2);
    o.w = 2;
    const int B = 2, H = 2, T = 5, D = 8;
    const size_t nn = (size_t)B * T * H * D;
    const int listed[4] = {0, 3, 7, 9}, existing[2] = {0, 3}, first[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int causal = 0; causal <= 1; causal++) {
        struct {
            const char *what;
            const int *pos;
            int n;
            const int *want_pos;
            int want_n;
        } cases[] = {{"listed 0/3/7/9 at T=5", listed, 4, existing, 2}, {"global=8 at T=5", first, 8, first, 5}};
        for (int c = 0; c < 2; c++) {
            gprob a, b;
            gprob_init(&a, B, H, T, D, 91 + (uint64_t)c);
            gprob_init(&b, B, H, T, D, 91 + (uint64_t)c);
            grun(&a, window, &o, causal, cases[c].pos, cases[c].n, 1);
            grun(&b, window, &o, causal, cases[c].want_pos, cases[c].want_n, 1);
            const size_t ng = (size_t)B * H * cases[c].want_n;
            const int same = same_bits(a.out, b.out, nn) && same_bits(a.lse, b.lse, (size_t)B * H * T) &&
                             same_bits(a.glse, b.glse, ng) && same_bits(a.dq, b.dq, nn) && same_bits(a.dk, b.dk, nn) &&
                             same_bits(a.dv, b.dv, nn) && same_bits(a.dqg, b.dqg, nn) && same_bits(a.dkg, b.dkg, nn) &&
                             same_bits(a.dvg, b.dvg, nn);
            CHECK(same, "%s, causal=%d: differs from the call with the existing positions only", cases[c].what, causal);
            gprob_free(&a);
            gprob_free(&b);
        }
        /* a list with no position below T: no global row, but the global gradients are still written (zero) */
        const int none[2] = {6, 8};
        gprob a, b;
        gprob_init(&a, B, H, T, D, 5);
        gprob_init(&b, B, H, T, D, 5);
        grun(&a, window, &o, causal, none, 2, 1);
        grun(&b, window, &o, causal, NULL, 0, 0);
        float *zero = calloc(nn, sizeof(float));
        CHECK(same_bits(a.out, b.out, nn) && same_bits(a.dq, b.dq, nn) && same_bits(a.dk, b.dk, nn) &&
                  same_bits(a.dv, b.dv, nn),
              "causal=%d: positions all beyond T change the band", causal);
        CHECK(same_bits(a.dqg, zero, nn) && same_bits(a.dkg, zero, nn) && same_bits(a.dvg, zero, nn),
              "causal=%d: the global gradients are not zero", causal);
        free(zero);
        gprob_free(&a);
        gprob_free(&b);
    }
}

/* BigBird ETC with at least as many global tokens as positions (a short last segment) makes every
 * position global: full attention. */
TEST(bigbird_etc_with_g_beyond_t_is_full_attention) {
    lc_attn_bigbird_opts o;
    lc_attn_bigbird.opts_init(&o, 2);
    o.variant = LC_BIGBIRD_ETC, o.g = 8, o.b = 4;
    const int B = 1, H = 2, T = 5, D = 8;
    const size_t nn = (size_t)B * T * H * D;
    for (int causal = 0; causal <= 1; causal++) {
        gprob a, b;
        gprob_init(&a, B, H, T, D, 17);
        gprob_init(&b, B, H, T, D, 17);
        grun(&a, &lc_attn_bigbird, &o, causal, NULL, 0, 0);
        grun(&b, &lc_attn_full, NULL, causal, NULL, 0, 0);
        CHECK_CLOSE("out", a.out, b.out, nn, 1e-5, 1e-6);
        CHECK_CLOSE("lse", a.lse, b.lse, (size_t)B * H * T, 1e-5, 1e-6);
        CHECK_CLOSE("dq", a.dq, b.dq, nn, 1e-5, 1e-6);
        CHECK_CLOSE("dk", a.dk, b.dk, nn, 1e-5, 1e-6);
        CHECK_CLOSE("dv", a.dv, b.dv, nn, 1e-5, 1e-6);
        gprob_free(&a);
        gprob_free(&b);
    }
}

/* A causal model with global tokens runs segments shorter than its global positions (the last evaluation
 * segment, a one-byte prompt): a prefix gets the logits of the same rows of the full segment (causal:
 * rows never see later positions, global or not), and backward runs. */
TEST(model_with_globals_runs_short_segments) {
    const char *specs[] = {"window:w=2,global=3", "window:w=2,global=1/6", "1xwindow:w=2+window:w=3,global=0/2/5"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        lc_config c;
        lc_config_preset(&c, "tiny");
        c.model = LC_MODEL_VANILLA, c.mem_len = 0, c.n_layer = 2, c.d_model = 32, c.n_head = 2, c.d_ff = 64;
        c.seq_len = 8;
        snprintf(c.attn, sizeof c.attn, "%s", specs[i]);
        lc_model *m = NULL;
        CHECK(lc_model_create(&c, 1, 3, &m) == LC_OK, "%s: create: %s", specs[i], lc_last_error());
        if (!m) continue;
        int tok[8], tgt[8];
        for (int t = 0; t < 8; t++) tok[t] = (t * 53 + 7) % 256, tgt[t] = (t * 29 + 1) % 256;
        CHECK(lc_model_forward(m, tok, NULL, 1, 8, 0, NULL, NULL) == LC_OK, "%s: T=8: %s", specs[i], lc_last_error());
        float *whole = malloc(sizeof(float) * 8 * 256);
        memcpy(whole, lc_model_logits(m), sizeof(float) * 8 * 256);
        for (int T = 1; T <= 7; T += 3) {
            CHECK(lc_model_forward(m, tok, NULL, 1, T, 0, NULL, NULL) == LC_OK, "%s: T=%d: %s", specs[i], T,
                  lc_last_error());
            char label[96];
            snprintf(label, sizeof label, "%s T=%d", specs[i], T);
            CHECK_CLOSE(label, lc_model_logits(m), whole, (size_t)T * 256, 1e-5, 1e-5);
        }
        double loss;
        long n;
        CHECK(lc_model_forward(m, tok, tgt, 1, 2, 1, &loss, &n) == LC_OK && isfinite(loss), "%s: train T=2: %s",
              specs[i], lc_last_error());
        CHECK(lc_model_backward(m, 1.0f) == LC_OK, "%s: backward T=2: %s", specs[i], lc_last_error());
        free(whole);
        lc_model_free(m);
    }
}

int main(void) {
    RUN(caps_decide_what_every_kind_accepts);
    RUN(interface_rules_hold_for_every_kind);
    RUN(length_rule_and_null_check);
    RUN(registration_checks_rows_and_names);
    RUN(model_returns_the_run_time_refusal);
    RUN(xl_inference_without_decode_recomputes);
    RUN(window_globals_beyond_a_short_t_are_not_global);
    RUN(bigbird_etc_with_g_beyond_t_is_full_attention);
    RUN(model_with_globals_runs_short_segments);
    return test_summary("test_attn_caps");
}
