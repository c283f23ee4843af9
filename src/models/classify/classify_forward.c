/* The classifier's passes: the batch check and packing (examples longest first, each its [CLS] row then its
 * tokens, so equal lengths are adjacent as lc_block_ctx's packing wants), the encoder (token + position
 * embedding, plus the bracket-depth one where the model has it; bidirectional blocks, final LayerNorm),
 * pooling ([CLS] row, mean or max of the rows), LRA's head (dense, ReLU, dense) with softmax cross-entropy,
 * the backward of all of it and one training step. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/classify/classify.h"
#include "train/optimizer.h"

enum { SEED_EMBED = 1 };

lc_pass_env lc_classify_env(const lc_classifier *m) {
    return (lc_pass_env){lc_seed_mix(m->seed, (uint64_t)m->step), m->global_pos, m->attn_work, m->attn_work_floats,
                         m->threads};
}

static int clipped(const lc_classifier *m, int len) { return len < m->cfg.max_len ? len : m->cfg.max_len; }

long lc_classifier_batch_rows(const lc_classifier *m, const lc_classify_batch *b) {
    long rows = 0;
    for (int i = 0; i < b->n; i++) rows += clipped(m, b->len[i] > 0 ? b->len[i] : 0) + 1;
    return rows;
}

static lc_status check_batch(const lc_classifier *m, const lc_classify_batch *b, const int *labels) {
    if (!b || b->n < 1 || b->n > m->max_batch || !b->len)
        return lc_fail(LC_ERR_ARG, "classify: a batch of %d examples, the model is planned for 1..%d", b ? b->n : 0,
                       m->max_batch);
    for (int i = 0; i < b->n; i++) {
        if (b->len[i] < 0 || (b->len[i] > 0 && (!b->ids || !b->ids[i])))
            return lc_fail(LC_ERR_ARG, "classify: example %d has length %d and %s", i, b->len[i],
                           b->len[i] < 0 ? "a negative length" : "no tokens");
        for (int t = 0, n = clipped(m, b->len[i]); t < n; t++)
            if (b->ids[i][t] < 0 || b->ids[i][t] >= m->cfg.vocab)
                return lc_fail(LC_ERR_ARG, "classify: example %d, token %d: id %d outside 0..%d", i, t, b->ids[i][t],
                               m->cfg.vocab - 1);
        if (m->cfg.bracket_depth > 0 && b->len[i] > 0 && (!b->depth || !b->depth[i]))
            return lc_fail(LC_ERR_ARG,
                           "classify: example %d has no bracket depths; the model reads them (bracket_depth %d)", i,
                           m->cfg.bracket_depth);
        if (labels && (labels[i] < 0 || labels[i] >= m->cfg.n_classes))
            return lc_fail(LC_ERR_ARG, "classify: example %d has label %d, outside 0..%d", i, labels[i],
                           m->cfg.n_classes - 1);
    }
    const long rows = lc_classifier_batch_rows(m, b);
    if (rows > m->st.max_rows)
        return lc_fail(LC_ERR_ARG, "classify: the batch packs into %ld rows, the model is planned for %d", rows,
                       m->st.max_rows);
    return LC_OK;
}

/* The packing order of examples of lengths len[n] into keys[n]: longest first (ties by batch index); the
 * example of key k is keys[k] & 0xffffffff. */
static void packing_order(const lc_classifier *m, const int *len, int n, long *keys) {
    for (int i = 0; i < n; i++) keys[i] = ((long)(m->cfg.max_len - clipped(m, len[i])) << 32) | i;
    lc_sort_keys(keys, n);
}

void lc_classify_row_keys(const lc_classifier *m, const int *len, int n, long *scratch, long *key0) {
    packing_order(m, len, n, scratch);
    long r = 0;
    for (int k = 0; k < n; k++) {
        const int i = (int)(scratch[k] & 0xffffffffL);
        key0[i] = r;
        r += clipped(m, len[i]) + 1;
    }
}

/* Rows of the packed batch: examples longest first (ties by batch index), [CLS] at position 0. */
static lc_status pack(lc_classifier *m, const lc_classify_batch *b) {
    long *keys = malloc(sizeof(long) * (size_t)b->n);
    if (!keys) return lc_fail(LC_ERR_NOMEM, "out of memory packing a batch");
    packing_order(m, b->len, b->n, keys);
    const int cls = lc_classify_cls_token(&m->cfg);
    int r = 0;
    for (int k = 0; k < b->n; k++) {
        const int i = (int)(keys[k] & 0xffffffffL), len = clipped(m, b->len[i]);
        m->order[k] = i, m->row0[i] = r, m->st.seq_len[k] = len + 1;
        m->tok[r] = cls, m->pos[r] = 0, m->depth[r] = 0;
        for (int t = 0; t < len; t++) m->tok[r + 1 + t] = b->ids[i][t], m->pos[r + 1 + t] = t + 1;
        const int top = m->cfg.bracket_depth - 1;
        for (int t = 0; t < len && top >= 0; t++) {
            const int d = b->depth[i][t];
            m->depth[r + 1 + t] = d < 0 ? 0 : d > top ? top : d;
        }
        r += len + 1;
    }
    free(keys);
    m->st.n_seq = b->n, m->st.rows = r, m->n = b->n;
    return LC_OK;
}

lc_status lc_classify_pack_batch(lc_classifier *m, const lc_classify_batch *b) {
    m->have_labels = 0;
    lc_status s = check_batch(m, b, NULL);
    return s ? s : pack(m, b);
}

/* Example i's rows: from row0[i], its sequence length. */
static int rows_of(const lc_classifier *m, int i) {
    for (int k = 0; k < m->n; k++)
        if (m->order[k] == i) return m->st.seq_len[k];
    return 0;
}

/* Pooling of each example's rows (its [CLS] row and its tokens): the [CLS] row, the mean of every row, or
 * each feature's maximum over every row (its row kept in pool_arg for the backward; the first on ties). */
static void pool_forward(lc_classifier *m, const float *h) {
    const int C = m->st.cfg.d_model;
    for (int i = 0; i < m->n; i++) {
        float *p = m->pooled + (size_t)i * C;
        const float *src = h + (size_t)m->row0[i] * C;
        if (m->cfg.pool == LC_POOL_CLS) {
            memcpy(p, src, sizeof(float) * (size_t)C);
            continue;
        }
        const int n = rows_of(m, i);
        if (m->cfg.pool == LC_POOL_MAX) {
            int *arg = m->pool_arg + (size_t)i * C;
            for (int k = 0; k < C; k++) p[k] = src[k], arg[k] = 0;
            for (int r = 1; r < n; r++)
                for (int k = 0; k < C; k++)
                    if (src[(size_t)r * C + k] > p[k]) p[k] = src[(size_t)r * C + k], arg[k] = r;
            continue;
        }
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int r = 0; r < n; r++) s += src[(size_t)r * C + k];
            p[k] = (float)(s / n);
        }
    }
}

static void pool_backward(lc_classifier *m, float *dh) {
    const int C = m->st.cfg.d_model;
    memset(dh, 0, sizeof(float) * (size_t)m->st.rows * C);
    for (int i = 0; i < m->n; i++) {
        const float *d = m->d_pooled + (size_t)i * C;
        float *dst = dh + (size_t)m->row0[i] * C;
        if (m->cfg.pool == LC_POOL_MAX) {
            const int *arg = m->pool_arg + (size_t)i * C;
            for (int k = 0; k < C; k++) dst[(size_t)arg[k] * C + k] = d[k];
            continue;
        }
        const int n = m->cfg.pool == LC_POOL_CLS ? 1 : rows_of(m, i);
        const float w = m->cfg.pool == LC_POOL_CLS ? 1.0f : 1.0f / (float)n;
        for (int r = 0; r < n; r++)
            for (int k = 0; k < C; k++) dst[(size_t)r * C + k] = w * d[k];
    }
}

const float *lc_classify_encode(lc_classifier *m, const lc_pass_env *e, int train) {
    lc_enc_stack *st = &m->st;
    const int C = st->cfg.d_model;
    lc_embed_rows(st->res[0], m->wte, st->wpe, m->tok, m->pos, st->rows, C);
    if (m->wde) lc_embed_add_rows(st->res[0], m->wde, m->depth, st->rows, C);
    lc_dropout_forward(st->res[0], st->res[0], (size_t)st->rows * C, train ? st->cfg.dropout : 0.0f,
                       lc_seed_mix(e->step_seed, SEED_EMBED));
    return lc_enc_stack_forward(st, e, train);
}

/* From d loss / d final hidden state (st->dh) to every encoder parameter. */
void lc_classify_encode_backward(lc_classifier *m, const lc_pass_env *e) {
    lc_enc_stack *st = &m->st;
    const int C = st->cfg.d_model;
    lc_enc_stack_backward(st, e, m->cur_train);
    lc_dropout_backward(st->dres, st->dres, (size_t)st->rows * C, m->cur_train ? st->cfg.dropout : 0.0f,
                        lc_seed_mix(e->step_seed, SEED_EMBED));
    lc_embed_rows_backward(m->g_wte, st->g_wpe, st->dres, m->tok, m->pos, st->rows, C);
    if (m->wde) lc_embed_add_rows_backward(m->g_wde, st->dres, m->depth, st->rows, C);
}

static int head_width(const lc_classifier *m) { return m->cfg.d_hidden ? m->cfg.d_hidden : m->st.cfg.d_model; }

lc_status lc_classifier_forward(lc_classifier *m, const lc_classify_batch *b, const int *labels, int train,
                                double *loss_sum, long *correct) {
    lc_clear_error();
    m->have_labels = 0;
    lc_status s = check_batch(m, b, labels);
    if (s || (s = pack(m, b))) return s;
    const lc_pass_env e = lc_classify_env(m);
    if ((s = lc_enc_stack_check(&m->st, &e))) return s;
    lc_threads_use(m->threads);
    m->cur_train = train;
    const int n = b->n, C = m->st.cfg.d_model, Dh = head_width(m), K = m->cfg.n_classes;
    pool_forward(m, lc_classify_encode(m, &e, train));
    lc_linear_forward(m->hpre, m->pooled, m->w1, m->b1, n, C, Dh);
    memset(m->hid, 0, sizeof(float) * (size_t)n * Dh);
    lc_relu_forward(m->hid, m->hpre, (size_t)n * Dh);
    lc_linear_forward(m->logits, m->hid, m->w2, m->b2, n, Dh, K);
    if (!labels) return LC_OK;
    memcpy(m->labels, labels, sizeof(int) * (size_t)n);
    const double sum = lc_xent_forward(m->losses, m->lse, m->logits, labels, n, K);
    long right = 0;
    for (int i = 0; i < n; i++) {
        const float *z = m->logits + (size_t)i * K;
        int best = 0;
        for (int k = 1; k < K; k++)
            if (z[k] > z[best]) best = k;
        right += best == labels[i];
    }
    m->have_labels = 1;
    if (loss_sum) *loss_sum = sum;
    if (correct) *correct = right;
    return LC_OK;
}

lc_status lc_classifier_backward(lc_classifier *m, float loss_scale) {
    lc_clear_error();
    if (!m->have_labels) return lc_fail(LC_ERR_ARG, "classify backward: the last forward had no labels (or there was none)");
    const int n = m->n, C = m->st.cfg.d_model, Dh = head_width(m), K = m->cfg.n_classes;
    lc_threads_use(m->threads);
    lc_xent_backward(m->d_logits, m->logits, m->lse, m->labels, n, K, loss_scale);
    memset(m->d_hid, 0, sizeof(float) * (size_t)n * Dh);
    lc_linear_backward(m->d_hid, m->g_w2, m->g_b2, m->d_logits, m->hid, m->w2, n, Dh, K);
    memset(m->d_hpre, 0, sizeof(float) * (size_t)n * Dh);
    lc_relu_backward(m->d_hpre, m->hpre, m->d_hid, (size_t)n * Dh);
    memset(m->d_pooled, 0, sizeof(float) * (size_t)n * C);
    lc_linear_backward(m->d_pooled, m->g_w1, m->g_b1, m->d_hpre, m->pooled, m->w1, n, C, Dh);
    pool_backward(m, m->st.dh);
    const lc_pass_env e = lc_classify_env(m);
    lc_classify_encode_backward(m, &e);
    return LC_OK;
}

lc_status lc_classifier_step(lc_classifier *m, const lc_train_options *o, const lc_classify_batch *b,
                             const int *labels, double *loss) {
    lc_clear_error();
    lc_status s = lc_adamw_options_check(o);
    if (s) return s;
    if (m->cfg.objective == LC_CLASSIFY_MLM) return lc_classifier_mlm_step(m, o, b, loss);
    if (!labels) return lc_fail(LC_ERR_ARG, "classify step: labels are required");
    lc_classifier_zero_grad(m);
    double sum;
    if ((s = lc_classifier_forward(m, b, labels, 1, &sum, NULL))) return s;
    if ((s = lc_classifier_backward(m, 1.0f / (float)b->n))) return s;
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    return lc_tensors_update(&m->tensors, &buf, o, &m->step, sum, b->n, loss);
}
