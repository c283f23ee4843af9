/* Tests of lc_model_attention_map (longctx attn-map): for every attention kind the map is the weights the
 * layer really used, since the weights times the layer's own values give back its attention output (the
 * map is read off the kind's forward, so this holds for learned buckets and clusters too); rows sum to 1
 * for softmax kinds; a window shows nothing outside the window and something at every key inside it;
 * causal kinds never look ahead; bad layers and heads are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "harness.h"
#include "longctx.h"
#include "models/lm/lm.h"

enum { T = 32 };

static lc_model *make(const char *spec, lc_model_kind kind, lc_objective obj, int extra) {
    lc_config c;
    lc_config_preset(&c, "tiny"); /* 2 layers, width 64, 4 heads */
    c.model = kind;
    c.seq_len = T;
    c.mem_len = kind == LC_MODEL_XL ? T : 0;
    c.dropout = 0;
    c.objective = obj;
    c.extra_tokens = extra;
    snprintf(c.attn, sizeof c.attn, "%s", spec);
    lc_model *m = NULL;
    CHECK(lc_model_create(&c, 1, 7, &m) == LC_OK, "%s: %s", spec, lc_last_error());
    return m;
}

static void tokens_of(int *tok, uint64_t seed) {
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int i = 0; i < T; i++) tok[i] = (int)(lc_rng_next(&r) % 256);
}

/* The map of (layer, head) and the checks every kind passes; returns the map (TT x TT) for more checks. */
static float *map_and_check(lc_model *m, const char *spec, int layer, int head, int softmax, int causal) {
    int tok[T];
    tokens_of(tok, 3);
    const int G = m->cfg.extra_tokens, TT = T + G, C = m->cfg.d_model, D = C / m->cfg.n_head;
    float *p = malloc(sizeof(float) * TT * TT);
    CHECK(lc_model_attention_map(m, tok, T, layer, head, p) == LC_OK, "%s: %s", spec, lc_last_error());
    /* the forward it ran left the layer's real values and output in the activations */
    const lc_block_acts *a = &m->bact[layer];
    double worst = 0, worst_sum = 0, ahead = 0;
    for (int t = 0; t < TT; t++) {
        int global_row = 0;
        for (int i = 0; i < m->layers[layer].n_groups; i++) {
            const lc_attn_group *g = &m->layers[layer].group[i];
            if (head >= g->h0 && head < g->h0 + g->heads && g->n_global && t < lc_attn_group_global_count(g, TT))
                global_row = 1;
        }
        const float *vsrc = global_row ? a->qkvg : a->qkv; /* global rows use their own values */
        for (int j = 0; j < D; j++) {
            double o = 0;
            for (int s = 0; s < TT; s++) o += (double)p[t * TT + s] * vsrc[(long)s * 3 * C + 2 * C + head * D + j];
            const double d = fabs(o - a->att[(long)t * C + head * D + j]);
            worst = d > worst ? d : worst;
        }
        double sum = 0;
        for (int s = 0; s < TT; s++) sum += p[t * TT + s];
        if (softmax) worst_sum = fabs(sum - 1) > worst_sum ? fabs(sum - 1) : worst_sum;
        for (int s = t + 1; causal && s < TT; s++) ahead += fabs(p[t * TT + s]);
    }
    CHECK(worst < 1e-4, "%s layer %d head %d: weights x values differ from the layer's output by %g", spec, layer, head,
          worst);
    CHECK(worst_sum < 1e-4, "%s: a row sums to 1 +- %g", spec, worst_sum);
    CHECK(ahead == 0, "%s: causal, yet %g weight on later keys", spec, ahead);
    return p;
}

TEST(every_kind_gives_the_weights_it_used) {
    static const struct {
        const char *spec;
        lc_model_kind kind;
        lc_objective obj;
        int extra, softmax;
    } cases[] = {
        {"full", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"full", LC_MODEL_XL, LC_OBJECTIVE_CLM, 0, 1},
        {"window:w=5", LC_MODEL_XL, LC_OBJECTIVE_CLM, 0, 1},
        {"window:w=3,dil=2", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"window:w=4,global=2", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"window:w=4,global=2", LC_MODEL_VANILLA, LC_OBJECTIVE_MLM, 0, 1},
        {"block:b=8", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"strided:s=4", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"bigbird:b=4,r=2", LC_MODEL_VANILLA, LC_OBJECTIVE_MLM, 0, 1},
        {"bigbird:b=4,r=1", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 2, 1},
        {"compressed:w=4,s=4", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"lsh:buckets=4,chunk=8", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"routing:clusters=4", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0, 1},
        {"2xlinformer:k=8+2xfull", LC_MODEL_VANILLA, LC_OBJECTIVE_MLM, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lc_model *m = make(cases[i].spec, cases[i].kind, cases[i].obj, cases[i].extra);
        if (!m) continue;
        for (int layer = 0; layer < 2; layer++)
            for (int head = 0; head < 4; head += 3) {
                const int softmax = cases[i].softmax || head >= 2; /* the linformer case's full heads */
                free(map_and_check(m, cases[i].spec, layer, head, softmax, cases[i].obj == LC_OBJECTIVE_CLM));
            }
        lc_model_free(m);
    }
}

TEST(window_weights_only_inside_the_window) {
    for (int xl = 0; xl < 2; xl++) {
        lc_model *m = make("window:w=5", xl ? LC_MODEL_XL : LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0);
        float *p = map_and_check(m, "window:w=5", 1, 2, 1, 1);
        int bad = 0;
        for (int t = 0; t < T; t++)
            for (int s = 0; s < T; s++) bad += (p[t * T + s] > 0) != (s <= t && s >= t - 5); /* keys t - w .. t */
        CHECK(bad == 0, "%s window w=5: %d cells where weight > 0 is not keys t-5..t", xl ? "xl" : "vanilla", bad);
        free(p);
        lc_model_free(m);
    }
}

TEST(strided_and_global_patterns) {
    lc_model *m = make("strided:s=4", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0);
    float *p = map_and_check(m, "strided:s=4", 0, 1, 1, 1);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int s = 0; s < T; s++) bad += (p[t * T + s] > 0) != (s <= t && (t - s) % 4 == 0);
    CHECK(bad == 0, "strided s=4: %d cells where weight > 0 is not t - s = 0 mod 4", bad);
    free(p);
    lc_model_free(m);
    m = make("window:w=3,global=2", LC_MODEL_VANILLA, LC_OBJECTIVE_MLM, 0);
    p = map_and_check(m, "window:w=3,global=2", 0, 0, 1, 0);
    int missing = 0;
    for (int t = 0; t < T; t++)
        for (int s = 0; s < 2; s++) missing += !(p[t * T + s] > 0) + !(p[s * T + t] > 0); /* global columns and rows */
    CHECK(missing == 0, "global tokens: %d cells of the global rows and columns without weight", missing);
    free(p);
    lc_model_free(m);
}

TEST(bad_layer_and_head_are_refused) {
    lc_model *m = make("full", LC_MODEL_VANILLA, LC_OBJECTIVE_CLM, 0);
    int tok[T];
    tokens_of(tok, 1);
    float *p = malloc(sizeof(float) * T * T);
    CHECK(lc_model_attention_map(m, tok, T, 2, 0, p) == LC_ERR_ARG && strstr(lc_last_error(), "layers 0..1"), "%s",
          lc_last_error());
    CHECK(lc_model_attention_map(m, tok, T, 0, 4, p) == LC_ERR_ARG && strstr(lc_last_error(), "heads 0..3"), "%s",
          lc_last_error());
    CHECK(lc_model_attention_map(m, tok, T + 1, 0, 0, p) != LC_OK, "a sequence longer than planned is refused");
    free(p);
    lc_model_free(m);
}

int main(void) {
    RUN(every_kind_gives_the_weights_it_used);
    RUN(window_weights_only_inside_the_window);
    RUN(strided_and_global_patterns);
    RUN(bad_layer_and_head_are_refused);
    return test_summary("test_attn_map");
}
