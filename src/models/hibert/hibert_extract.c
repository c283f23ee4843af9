/* Extractive summarization with the hierarchical model: a linear head on the document encoder's outputs
 * gives one logit per sentence, trained with binary cross-entropy against 0/1 labels; and one
 * optimisation step (clipping + AdamW per tensor, weight decay where the tensor list says). */
#include <math.h>
#include <string.h>

#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/hibert/hibert.h"
#include "train/optimizer.h"

/* Binary cross-entropy of logit z against label y, stable for any z: log(1 + e^z) - y z. */
static double bce(double z, int y) { return (z > 0 ? z : 0) - y * z + log1p(exp(-fabs(z))); }

lc_status lc_hibert_head_forward(lc_hibert *m, const uint8_t *labels, int with_feats, double *loss_sum) {
    const int Cd = m->st[LC_HIBERT_DOC].cfg.d_model, rows = m->st[LC_HIBERT_DOC].rows, F = m->cfg.head_features;
    lc_linear_forward(m->logit_rows, m->doc_out, m->head_w, m->head_b, rows, Cd, 1);
    m->head_feats = with_feats && F > 0;
    for (int i = 0; i < m->n_sents; i++) {
        double z = m->logit_rows[m->d_row[i]];
        for (int f = 0; m->head_feats && f < F; f++) z += (double)m->feat_w[f] * m->feats[(size_t)i * F + f];
        m->scores[i] = (float)z;
    }
    if (!labels) return LC_OK;
    double sum = 0;
    for (int i = 0; i < m->n_sents; i++) {
        if (labels[i] > 1) return lc_fail(LC_ERR_ARG, "hibert: label %d of sentence %d is not 0 or 1", labels[i], i);
        sum += bce(m->scores[i], labels[i]);
    }
    if (labels != m->labels) memcpy(m->labels, labels, (size_t)m->n_sents);
    if (loss_sum) *loss_sum = sum;
    return LC_OK;
}

void lc_hibert_head_backward(lc_hibert *m, float loss_scale) {
    lc_enc_stack *ds = &m->st[LC_HIBERT_DOC];
    const int Cd = ds->cfg.d_model;
    /* d loss / d logit = scale (sigmoid(z) - y), at each sentence's document row */
    for (int i = 0; i < m->n_sents; i++) {
        const double z = m->scores[i];
        m->dlogit_rows[m->d_row[i]] = (float)(loss_scale * (1.0 / (1.0 + exp(-z)) - m->labels[i]));
    }
    const int F = m->cfg.head_features;
    for (int i = 0; m->head_feats && i < m->n_sents; i++) /* d loss / d head.features = sum of d logit x features */
        for (int f = 0; f < F; f++) m->g_feat_w[f] += m->dlogit_rows[m->d_row[i]] * m->feats[(size_t)i * F + f];
    lc_threads_use(m->threads);
    memset(ds->dh, 0, sizeof(float) * (size_t)ds->rows * Cd);
    lc_linear_backward(ds->dh, m->g_head_w, m->g_head_b, m->dlogit_rows, m->doc_out, m->head_w, ds->rows, Cd, 1);
}

lc_status lc_hibert_extract_forward(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *labels, int train,
                                    double *loss_sum, long *count) {
    lc_clear_error();
    m->have_labels = 0, m->pretrained = 0, m->intruder_grads = 0;
    const int F = m->cfg.head_features;
    if (F && b && !b->features)
        return lc_fail(LC_ERR_ARG, "hibert: the model's head reads %d features a sentence; the batch has none", F);
    lc_status st = lc_hibert_encode(m, b, train);
    if (!st && F) {
        for (long i = 0; i < (long)m->n_sents * F; i++)
            if (!isfinite(b->features[i]))
                return lc_fail(LC_ERR_ARG, "hibert: feature %ld of sentence %ld is not finite", i % F, i / F);
        memcpy(m->feats, b->features, sizeof(float) * (size_t)m->n_sents * F);
    }
    double sum = 0;
    if (st || (st = lc_hibert_head_forward(m, labels, F > 0, &sum)) || !labels) return st;
    m->have_labels = 1;
    if (loss_sum) *loss_sum = sum;
    if (count) *count = m->n_sents;
    return LC_OK;
}

lc_status lc_hibert_backward(lc_hibert *m, float loss_scale) {
    lc_clear_error();
    if (m->pretrained) {
        lc_hibert_pretrain_backward(m, loss_scale);
        return LC_OK;
    }
    if (!m->have_labels)
        return lc_fail(LC_ERR_ARG, "hibert backward: the last forward had no labels (or there was none)");
    lc_hibert_head_backward(m, loss_scale);
    lc_hibert_encode_backward(m);
    return LC_OK;
}

lc_status lc_hibert_step(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b, const uint8_t *labels,
                         double *loss) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    if (!labels) return lc_fail(LC_ERR_ARG, "hibert step: labels are required");
    lc_hibert_zero_grad(m);
    double sum;
    long n;
    if ((st = lc_hibert_extract_forward(m, b, labels, 1, &sum, &n))) return st;
    if ((st = lc_hibert_backward(m, 1.0f / (float)n))) return st;
    return lc_hibert_update(m, o, sum, n, loss);
}

lc_status lc_hibert_update(lc_hibert *m, const lc_train_options *o, double sum, long n, double *loss) {
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    lc_threads_use(m->threads); /* callers may update apart from the passes (the trainers' accumulation) */
    return lc_tensors_update(&m->tensors, &buf, o, &m->step, sum, n, loss);
}
