/* Text generation: temperature and top-k sampling from the model's next-byte distribution.
 * The vanilla model re-reads a window of its last seq_len bytes for every new byte; Transformer-XL feeds
 * one byte at a time against its cached memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "kernels/fastmath.h"
#include "model/lm.h"

/* Draw a byte from logits[256] at the given temperature, keeping the top_k most likely (0: all). */
static int draw(const float *logits, float temperature, int top_k, lc_rng *rng) {
    int V = 256, best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0.0f) return best;
    float cutoff = -INFINITY;
    if (top_k > 0 && top_k < V) { /* the k-th largest logit */
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

/* Transformer-XL: the prompt goes through in segments that fill the memory, then each new byte is one
 * forward of a single token against the memory, so a byte costs the same however long the text is. */
static lc_status next_logits_xl(lc_model *m, const int *ctx, size_t len, size_t *fed, const float **logits) {
    lc_status st = LC_OK;
    int T = 0;
    while (*fed < len && !st) {
        size_t left = len - *fed;
        T = left < (size_t)m->cap_T ? (int)left : m->cap_T;
        st = lc_model_forward(m, ctx + *fed, NULL, 1, T, 0, NULL, NULL);
        *fed += (size_t)T;
    }
    *logits = m->logits + (size_t)(T - 1) * 256;
    return st;
}

lc_status lc_sample(lc_model *m, const uint8_t *prompt, size_t prompt_len, int n_tokens, float temperature,
                    int top_k, uint64_t seed, lc_emit_fn emit, void *user) {
    lc_clear_error();
    if (m->cfg.objective == LC_OBJECTIVE_MLM)
        return lc_fail(LC_ERR_ARG, "sampling needs a causal model; this one is a masked-LM encoder (objective mlm)");
    if (n_tokens < 0) return lc_fail(LC_ERR_ARG, "tokens must be >= 0, got %d", n_tokens);
    if (!(temperature >= 0.0f)) return lc_fail(LC_ERR_ARG, "temperature must be >= 0");
    if (top_k < 0 || top_k > 256) return lc_fail(LC_ERR_ARG, "top-k must be 0..256, got %d", top_k);
    int W = m->cap_T;
    size_t cap = prompt_len + (size_t)n_tokens + 1;
    int *ctx = malloc(sizeof(int) * cap);
    if (!ctx) return lc_fail(LC_ERR_NOMEM, "out of memory in sampling");
    size_t len = 0;
    if (prompt_len == 0) ctx[len++] = '\n';
    for (size_t i = 0; i < prompt_len; i++) ctx[len++] = prompt[i];
    lc_rng rng;
    lc_rng_seed(&rng, seed);
    lc_status st = LC_OK;
    int xl = m->cfg.model == LC_MODEL_XL;
    size_t fed = 0;
    if (xl) lc_model_reset_memory(m);
    for (int i = 0; i < n_tokens && !st; i++) {
        const float *logits;
        if (xl) {
            st = next_logits_xl(m, ctx, len, &fed, &logits);
        } else {
            int T = len < (size_t)W ? (int)len : W;
            st = lc_model_forward(m, ctx + len - (size_t)T, NULL, 1, T, 0, NULL, NULL);
            logits = m->logits + (size_t)(T - 1) * 256;
        }
        if (st) break;
        if (!lc_all_finite(logits, 256)) { /* diverged weights: no distribution to draw from */
            st = lc_fail(LC_ERR_NUMERIC, "sampling: the model's next-byte scores are NaN or infinite (its weights "
                                         "diverged); nothing was generated from them");
            break;
        }
        int next = draw(logits, temperature, top_k, &rng);
        ctx[len++] = next;
        emit((uint8_t)next, user);
    }
    free(ctx);
    return st;
}
