/* The classifier's masked-token objective (self-pretraining on a task's own inputs, with the classifier's
 * tokenization): BERT's masking over the token rows of a packed batch, the tied embedding as the output
 * projection of the masked rows, softmax cross-entropy, its backward into the encoder, and one step. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/classify/classify.h"
#include "train/optimizer.h"

#define MLM_RATE 0.15f

struct lc_classify_mlm {
    long cap_rows, cap_masked;
    int *target;          /* [cap_rows] the original token of a chosen row, -1 otherwise */
    int *rows;            /* [cap_masked] the chosen rows, in order */
    int *labels;          /* [cap_masked] their original tokens */
    float *h, *dh;        /* [cap_masked, C] their final states and the gradient there */
    float *logits, *dlogits, *lse, *losses; /* [cap_masked, V] x2, [cap_masked] x2 */
    long n;               /* chosen rows of the last forward */
    int ready;            /* the last forward can be backpropagated */
};

void lc_classify_mlm_free(lc_classifier *m) {
    struct lc_classify_mlm *s = m->mlm;
    if (!s) return;
    free(s->target), free(s->rows), free(s->labels), free(s->h), free(s->dh);
    free(s->logits), free(s->dlogits), free(s->lse), free(s->losses);
    free(s);
    m->mlm = NULL;
}

/* Buffers for the classifier's largest batch (every row could be chosen only in theory: plan for all). */
static lc_status ensure(lc_classifier *m) {
    if (m->mlm) return LC_OK;
    const long R = m->st.max_rows, C = m->st.cfg.d_model, V = lc_classify_emb_rows(&m->cfg);
    struct lc_classify_mlm *s = calloc(1, sizeof *s);
    if (!s) return lc_fail(LC_ERR_NOMEM, "out of memory for the masked-token objective");
    m->mlm = s;
    s->cap_rows = s->cap_masked = R;
    s->target = malloc(sizeof(int) * (size_t)R), s->rows = malloc(sizeof(int) * (size_t)R);
    s->labels = malloc(sizeof(int) * (size_t)R);
    s->h = malloc(sizeof(float) * (size_t)(R * C)), s->dh = malloc(sizeof(float) * (size_t)(R * C));
    s->logits = malloc(sizeof(float) * (size_t)(R * V)), s->dlogits = malloc(sizeof(float) * (size_t)(R * V));
    s->lse = malloc(sizeof(float) * (size_t)R), s->losses = malloc(sizeof(float) * (size_t)R);
    if (!s->target || !s->rows || !s->labels || !s->h || !s->dh || !s->logits || !s->dlogits || !s->lse || !s->losses) {
        lc_classify_mlm_free(m);
        return lc_fail(LC_ERR_NOMEM, "out of memory for the masked-token objective (%ld rows)", R);
    }
    return LC_OK;
}

/* BERT's rule on the packed rows m->tok (rows with pos 0 are [CLS] and never chosen); row r is drawn by its
 * key: key0[i] + its position for a row of example i, or r without key0. */
static void mask_rows(lc_classifier *m, struct lc_classify_mlm *s, uint64_t seed, const long *key0) {
    const int words = m->cfg.tokens == LC_TOKENS_WORDS;
    const int mask = words ? LC_WORD_MASK : LC_MASK_TOKEN, lo = words ? LC_WORD_FIRST : 0;
    const int span = words ? m->cfg.vocab - LC_WORD_FIRST : 256;
    const long R = m->st.rows;
    long chosen = 0, tokens = 0;
    int example = -1; /* the example of row r (packed order: m->order) */
    for (long r = 0, k = -1; r < R; r++) {
        s->target[r] = -1;
        if (m->pos[r] == 0) example = m->order[++k];
        if (m->pos[r] == 0) continue;
        tokens++;
        const uint64_t key = key0 ? (uint64_t)(key0[example] + m->pos[r]) : (uint64_t)r;
        if (lc_hash_uniform(seed, 4 * key) >= MLM_RATE) continue;
        s->target[r] = m->tok[r];
        chosen++;
        const float u = lc_hash_uniform(seed, 4 * key + 1);
        if (u < 0.8f) m->tok[r] = mask;
        else if (u < 0.9f) m->tok[r] = lo + (int)(lc_hash_uniform(seed, 4 * key + 2) * (float)span) % span;
    }
    if (chosen == 0 && tokens > 0) { /* a loss needs one chosen row: the k-th token row */
        long k = (long)(lc_hash_uniform(seed, 4 * (uint64_t)R + 3) * (float)tokens) % tokens;
        for (long r = 0; r < R; r++)
            if (m->pos[r] != 0 && k-- == 0) {
                s->target[r] = m->tok[r], m->tok[r] = mask;
                break;
            }
    }
    s->n = 0;
    for (long r = 0; r < R; r++)
        if (s->target[r] >= 0) s->rows[s->n] = (int)r, s->labels[s->n++] = s->target[r];
}

lc_status lc_classifier_mlm_forward(lc_classifier *m, const lc_classify_batch *b, uint64_t seed, int train,
                                    double *loss_sum, long *masked, long *correct) {
    return lc_classify_mlm_forward_keyed(m, b, seed, NULL, train, loss_sum, masked, correct);
}

lc_status lc_classify_mlm_forward_keyed(lc_classifier *m, const lc_classify_batch *b, uint64_t seed, const long *key0,
                                        int train, double *loss_sum, long *masked, long *correct) {
    lc_clear_error();
    if (m->mlm) m->mlm->ready = 0;
    lc_status st = ensure(m);
    if (st || (st = lc_classify_pack_batch(m, b))) return st;
    const lc_pass_env e = lc_classify_env(m);
    if ((st = lc_enc_stack_check(&m->st, &e))) return st;
    lc_threads_use(m->threads);
    struct lc_classify_mlm *s = m->mlm;
    mask_rows(m, s, seed, key0);
    m->cur_train = train;
    const float *h = lc_classify_encode(m, &e, train);
    const int C = m->st.cfg.d_model, V = lc_classify_emb_rows(&m->cfg), n = (int)s->n;
    for (int j = 0; j < n; j++) memcpy(s->h + (size_t)j * C, h + (size_t)s->rows[j] * C, sizeof(float) * (size_t)C);
    double sum = 0;
    long right = 0;
    if (n > 0) {
        lc_linear_forward(s->logits, s->h, m->wte, NULL, n, C, V);
        sum = lc_xent_forward(s->losses, s->lse, s->logits, s->labels, n, V);
        for (int j = 0; j < n; j++) {
            const float *z = s->logits + (size_t)j * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (z[v] > z[best]) best = v;
            right += best == s->labels[j];
        }
    }
    s->ready = 1;
    if (loss_sum) *loss_sum = sum;
    if (masked) *masked = n;
    if (correct) *correct = right;
    return LC_OK;
}

lc_status lc_classifier_mlm_backward(lc_classifier *m, float loss_scale) {
    lc_clear_error();
    struct lc_classify_mlm *s = m->mlm;
    if (!s || !s->ready) return lc_fail(LC_ERR_ARG, "classify mlm backward: no masked-token forward to go back through");
    const int C = m->st.cfg.d_model, V = lc_classify_emb_rows(&m->cfg), n = (int)s->n;
    lc_threads_use(m->threads);
    memset(m->st.dh, 0, sizeof(float) * (size_t)m->st.rows * C);
    if (n > 0) {
        lc_xent_backward(s->dlogits, s->logits, s->lse, s->labels, n, V, loss_scale);
        memset(s->dh, 0, sizeof(float) * (size_t)n * C);
        lc_linear_backward(s->dh, m->g_wte, NULL, s->dlogits, s->h, m->wte, n, C, V);
        for (int j = 0; j < n; j++)
            memcpy(m->st.dh + (size_t)s->rows[j] * C, s->dh + (size_t)j * C, sizeof(float) * (size_t)C);
    }
    const lc_pass_env e = lc_classify_env(m);
    lc_classify_encode_backward(m, &e);
    s->ready = 0;
    return LC_OK;
}

/* A training step's pass: the masked tokens of the step's mask, the backward of their mean loss. */
static lc_status mlm_step_pass(void *model, const void *batch, double *sum, long *n) {
    lc_classifier *m = model;
    lc_status st = lc_classifier_mlm_forward(m, batch, lc_seed_mix(m->seed ^ 0x6d6c6dULL, (uint64_t)m->step), 1, sum, n,
                                             NULL);
    if (!st) *n = *n > 0 ? *n : 1;
    return st ? st : lc_classifier_mlm_backward(m, 1.0f / (float)*n);
}

lc_status lc_classifier_mlm_step(lc_classifier *m, const lc_train_options *o, const lc_classify_batch *b, double *loss) {
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    return lc_tensors_step(&m->tensors, &buf, o, &m->step, mlm_step_pass, m, b, loss);
}
