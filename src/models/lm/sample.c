/* Text generation: temperature and top-k sampling from the model's next-byte distribution, one byte per
 * lc_generator_next (include/longctx/flat.h: bindings pull bytes) and lc_sample on top of it (pushes them to
 * a callback). The vanilla model re-reads a window of its last seq_len bytes for every new byte;
 * Transformer-XL feeds one byte at a time against its cached memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "kernels/fastmath.h"
#include "longctx/flat.h"
#include "models/lm/lm.h"

/* The text so far (prompt and drawn bytes), how much of it the XL memory has seen, and the sampler. */
struct lc_generator {
    lc_model *m;
    int *ctx;
    size_t len, cap, fed;
    float temperature;
    int top_k;
    lc_rng rng;
};

/* A byte from logits[256] at the temperature among the top_k most likely (0: all): lc_sample's rule. */
static int draw(const float *logits, float temperature, int top_k, lc_rng *rng) {
    int V = 256, best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0.0f) return best;
    float cutoff = -INFINITY;
    if (top_k > 0 && top_k < V) {
        float sorted[256];
        memcpy(sorted, logits, sizeof sorted);
        for (int i = 0; i < top_k; i++) {
            int arg = i;
            for (int j = i + 1; j < V; j++)
                if (sorted[j] > sorted[arg]) arg = j;
            float t = sorted[i];
            sorted[i] = sorted[arg];
            sorted[arg] = t;
        }
        cutoff = sorted[top_k - 1];
    }
    double p[256], total = 0;
    for (int i = 0; i < V; i++) {
        p[i] = logits[i] >= cutoff ? exp((double)(logits[i] - logits[best]) / temperature) : 0.0;
        total += p[i];
    }
    double u = (double)lc_rng_uniform(rng) * total;
    for (int i = 0; i < V; i++) {
        u -= p[i];
        if (u < 0 && p[i] > 0) return i;
    }
    return best;
}

lc_status lc_generator_new(lc_model *m, const uint8_t *prompt, size_t prompt_len, float temperature, int top_k,
                           uint64_t seed, lc_generator **out) {
    lc_clear_error();
    *out = NULL;
    if (m->cfg.objective == LC_OBJECTIVE_MLM)
        return lc_fail(LC_ERR_ARG, "sampling needs a causal model; this one is a masked-LM encoder (objective mlm)");
    if (!(temperature >= 0.0f)) return lc_fail(LC_ERR_ARG, "temperature must be >= 0");
    if (top_k < 0 || top_k > 256) return lc_fail(LC_ERR_ARG, "top-k must be 0..256, got %d", top_k);
    lc_generator *g = calloc(1, sizeof *g);
    if (!g) return lc_fail(LC_ERR_NOMEM, "out of memory in sampling");
    g->cap = prompt_len + 256;
    g->ctx = malloc(sizeof(int) * g->cap);
    if (!g->ctx) { free(g); return lc_fail(LC_ERR_NOMEM, "out of memory in sampling"); }
    if (prompt_len == 0) g->ctx[g->len++] = '\n';
    for (size_t i = 0; i < prompt_len; i++) g->ctx[g->len++] = prompt[i];
    g->m = m, g->temperature = temperature, g->top_k = top_k;
    lc_rng_seed(&g->rng, seed);
    if (m->cfg.model == LC_MODEL_XL) lc_model_reset_memory(m);
    *out = g;
    return LC_OK;
}

lc_status lc_generator_next(lc_generator *g, int *byte) {
    lc_clear_error();
    lc_model *m = g->m;
    lc_status st = LC_OK;
    const float *logits = NULL;
    if (m->cfg.model == LC_MODEL_XL) { /* feed what the memory has not seen, a segment at a time */
        int T = 0;
        while (g->fed < g->len && !st) {
            size_t left = g->len - g->fed;
            T = left < (size_t)m->cap_T ? (int)left : m->cap_T;
            st = lc_model_forward(m, g->ctx + g->fed, NULL, 1, T, 0, NULL, NULL);
            g->fed += (size_t)T;
        }
        if (!st && T == 0) return lc_fail(LC_ERR_ARG, "the generator's model was used for something else");
        logits = m->logits + (size_t)(T - 1) * 256;
    } else { /* the last cap_T bytes as one window */
        int T = g->len < (size_t)m->cap_T ? (int)g->len : m->cap_T;
        st = lc_model_forward(m, g->ctx + g->len - (size_t)T, NULL, 1, T, 0, NULL, NULL);
        logits = m->logits + (size_t)(T - 1) * 256;
    }
    if (st) return st;
    if (!lc_all_finite(logits, 256))
        return lc_fail(LC_ERR_NUMERIC, "sampling: the model's next-byte scores are NaN or infinite (its weights "
                                       "diverged); nothing was generated from them");
    int next = draw(logits, g->temperature, g->top_k, &g->rng);
    if (g->len == g->cap) {
        size_t cap = g->cap * 2;
        int *ctx = realloc(g->ctx, sizeof(int) * cap);
        if (!ctx) return lc_fail(LC_ERR_NOMEM, "out of memory in sampling");
        g->ctx = ctx, g->cap = cap;
    }
    g->ctx[g->len++] = next;
    *byte = next;
    return LC_OK;
}

void lc_generator_free(lc_generator *g) {
    if (!g) return;
    free(g->ctx);
    free(g);
}

lc_status lc_sample(lc_model *m, const uint8_t *prompt, size_t prompt_len, int n_tokens, float temperature,
                    int top_k, uint64_t seed, lc_emit_fn emit, void *user) {
    lc_clear_error();
    if (n_tokens < 0) return lc_fail(LC_ERR_ARG, "tokens must be >= 0, got %d", n_tokens);
    lc_generator *g;
    lc_status st = lc_generator_new(m, prompt, prompt_len, temperature, top_k, seed, &g);
    for (int i = 0; i < n_tokens && !st; i++) {
        int next;
        if (!(st = lc_generator_next(g, &next))) emit((uint8_t)next, user);
    }
    lc_generator_free(g);
    return st;
}
