/* The vanilla encoder-decoder's passes (include/longctx/seq2seq.h): the batch check, the encoder over the
 * packed sources (bytes then EOS, longest first), the decoder over the packed targets (BOS + bytes,
 * predicting bytes + EOS) cross-attending to their sources' rows, the backward of the NLL into both stacks
 * and the embeddings, one AdamW step, and greedy decoding. */
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/seq2seq/seq2seq.h"
#include "train/optimizer.h"

static lc_pass_env env_of(const lc_seq2seq *m) {
    return (lc_pass_env){lc_seed_mix(m->seed, (uint64_t)m->step), m->w.global_pos, m->w.attn_work, m->w.attn_work_floats,
                         m->threads};
}

static lc_status check_side(const lc_seq2seq *m, const uint8_t *const *x, const int *len, int max, const char *what) {
    if (!len) return lc_fail(LC_ERR_ARG, "seq2seq: a batch needs %s lengths", what);
    for (int i = 0; i < m->n; i++) {
        if (len[i] < 0 || len[i] > max)
            return lc_fail(LC_ERR_ARG, "seq2seq: %s %d has %d bytes (0..%d)", what, i, len[i], max);
        if (len[i] > 0 && (!x || !x[i])) return lc_fail(LC_ERR_ARG, "seq2seq: %s %d has no bytes", what, i);
    }
    return LC_OK;
}

/* Checks b (its targets too when `targets`), then runs the encoder over its packed sources. */
static lc_status encode(lc_seq2seq *m, const lc_seq2seq_batch *b, int train, int targets) {
    if (!b || b->n < 1 || b->n > m->max_pairs)
        return lc_fail(LC_ERR_ARG, "seq2seq: %d pairs, the model is planned for 1..%d", b ? b->n : 0, m->max_pairs);
    m->n = b->n, m->have_loss = 0;
    lc_status st = check_side(m, b->src, b->src_len, m->cfg.max_src_len, "source");
    if (st || (targets && (st = check_side(m, b->tgt, b->tgt_len, m->cfg.max_tgt_len, "target")))) return st;
    lc_enc_stack *e = &m->enc;
    for (int i = 0; i < m->n; i++) m->keys[i] = ((long)(e->max_len - b->src_len[i]) << 32) | i;
    lc_sort_keys(m->keys, m->n);
    int r = 0;
    for (int k = 0; k < m->n; k++) {
        const int i = (int)(m->keys[k] & 0xffffffffL), L = b->src_len[i];
        for (int t = 0; t < L; t++) m->tok[r + t] = b->src[i][t], m->pos[r + t] = t;
        m->tok[r + L] = LC_SEQ2SEQ_EOS, m->pos[r + L] = L;
        e->seq_len[k] = L + 1, m->src_row[i] = r;
        r += L + 1;
    }
    e->n_seq = m->n, e->rows = r;
    const lc_pass_env env = env_of(m);
    if ((st = lc_enc_stack_check(e, &env))) return st;
    lc_threads_use(m->threads);
    m->cur_train = train;
    const int C = e->cfg.d_model;
    lc_embed_rows(e->res[0], m->src_wte, e->wpe, m->tok, m->pos, r, C);
    lc_dropout_forward(e->res[0], e->res[0], (size_t)r * C, train ? m->cfg.dropout : 0.0f,
                       lc_seed_mix(env.step_seed, LC_S2S_ENC_EMBED_STREAM));
    m->enc_out = lc_enc_stack_forward(e, &env, train);
    return LC_OK;
}

/* Decoder rows of the n sequences order[0 .. n): pair i reads BOS + x[i][0 .. len[i]) and predicts
 * x[i] + EOS (targets: 0 = none), cross-attending to its source's rows. */
static void pack_decoder(lc_seq2seq *m, const lc_seq2seq_batch *b, const int *order, int n,
                         const uint8_t *const *x, const int *len, int targets) {
    lc_dec_stack *d = &m->dec;
    int r = 0;
    for (int k = 0; k < n; k++) {
        const int i = order[k], L = len[i];
        d->item[k] = i, d->seq_len[k] = L + 1, d->q_start[k] = r, d->q_len[k] = L + 1;
        d->kv_start[k] = m->src_row[i], d->kv_len[k] = b->src_len[i] + 1;
        for (int t = 0; t <= L; t++) {
            d->tok[r + t] = t ? x[i][t - 1] : LC_SEQ2SEQ_BOS;
            d->target[r + t] = !targets ? -1 : t < L ? x[i][t] : LC_SEQ2SEQ_EOS;
            d->pos[r + t] = t, d->row_seq[r + t] = k;
        }
        r += L + 1;
    }
    d->n_seq = n, d->rows = r;
    d->enc = m->enc_out, d->N_enc = m->enc.rows, d->C_enc = m->enc.cfg.d_model;
}

/* The decoder over its packed rows; the summed NLL of the targets. */
static lc_status decode(lc_seq2seq *m, double *sum) {
    const lc_pass_env env = env_of(m);
    lc_status st = lc_dec_stack_check(&m->dec, &env);
    if (st) return st;
    lc_dec_stack_embed(&m->dec, &env, NULL, m->cur_train);
    *sum = lc_dec_stack_forward(&m->dec, &env, m->cur_train);
    return LC_OK;
}

lc_status lc_seq2seq_forward(lc_seq2seq *m, const lc_seq2seq_batch *b, int train, double *loss_sum, long *count) {
    lc_clear_error();
    lc_status st = encode(m, b, train, 1);
    if (st) return st;
    int *order = (int *)m->keys; /* the targets longest first, in the sort scratch */
    for (int i = 0; i < m->n; i++) m->keys[i] = ((long)(m->dec.max_len - b->tgt_len[i]) << 32) | i;
    lc_sort_keys(m->keys, m->n);
    for (int k = 0; k < m->n; k++) order[k] = (int)(m->keys[k] & 0xffffffffL);
    pack_decoder(m, b, order, m->n, b->tgt, b->tgt_len, 1);
    double sum;
    if ((st = decode(m, &sum))) return st;
    m->have_loss = 1;
    if (loss_sum) *loss_sum = sum;
    if (count) *count = m->dec.rows;
    return LC_OK;
}

lc_status lc_seq2seq_backward(lc_seq2seq *m, float loss_scale) {
    lc_clear_error();
    if (!m->have_loss) return lc_fail(LC_ERR_ARG, "seq2seq backward: no forward with a loss to go back through");
    lc_enc_stack *e = &m->enc;
    const lc_pass_env env = env_of(m);
    const int C = e->cfg.d_model;
    lc_threads_use(m->threads);
    lc_dec_stack_backward(&m->dec, &env, loss_scale, m->cur_train, NULL);
    memcpy(e->dh, m->dec.d_enc, sizeof(float) * (size_t)e->rows * C);
    lc_enc_stack_backward(e, &env, m->cur_train);
    lc_dropout_backward(e->dres, e->dres, (size_t)e->rows * C, m->cur_train ? m->cfg.dropout : 0.0f,
                        lc_seed_mix(env.step_seed, LC_S2S_ENC_EMBED_STREAM));
    lc_embed_rows_backward(m->g_src_wte, e->g_wpe, e->dres, m->tok, m->pos, e->rows, C);
    m->have_loss = 0; /* the logits now hold their gradient */
    return LC_OK;
}

/* A training step's pass: the teacher-forced forward with dropout, the backward of the mean NLL per symbol. */
static lc_status step_pass(void *model, const void *batch, double *sum, long *n) {
    lc_status st = lc_seq2seq_forward(model, batch, 1, sum, n);
    return st ? st : lc_seq2seq_backward(model, 1.0f / (float)*n);
}

lc_status lc_seq2seq_step(lc_seq2seq *m, const lc_train_options *o, const lc_seq2seq_batch *b, double *loss) {
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    return lc_tensors_step(&m->tensors, &buf, o, &m->step, step_pass, m, b, loss);
}

lc_status lc_seq2seq_generate(lc_seq2seq *m, const lc_seq2seq_batch *b, int max_len, uint8_t *out, int *out_len) {
    lc_clear_error();
    if (max_len < 1 || max_len > m->cfg.max_tgt_len || !out || !out_len)
        return lc_fail(LC_ERR_ARG, "seq2seq generate: max_len must be 1..%d (got %d) with out and out_len",
                       m->cfg.max_tgt_len, max_len);
    lc_status st = encode(m, b, 0, 0);
    if (st) return st;
    int *active = malloc(sizeof(int) * (size_t)m->n);
    const uint8_t **x = malloc(sizeof(*x) * (size_t)m->n);
    if (!active || !x) st = lc_fail(LC_ERR_NOMEM, "out of memory for greedy decoding");
    int n = m->n;
    for (int i = 0; !st && i < n; i++) active[i] = i, x[i] = out + (size_t)i * max_len, out_len[i] = 0;
    /* step t: every active pair has t bytes; the decoder reads BOS + them and picks symbol t */
    for (int t = 0; !st && t < max_len && n > 0; t++) {
        pack_decoder(m, b, active, n, x, out_len, 0);
        double unused;
        if ((st = decode(m, &unused))) break;
        int kept = 0;
        for (int k = 0; k < n; k++) {
            const int i = active[k];
            const float *z = m->dec.logits + (size_t)(m->dec.q_start[k] + t) * m->dec.n_out;
            int best = 0;
            for (int v = 1; v < m->dec.n_out; v++) best = z[v] > z[best] ? v : best;
            if (best == LC_SEQ2SEQ_EOS) continue;
            out[(size_t)i * max_len + t] = (uint8_t)best, out_len[i] = t + 1;
            active[kept++] = i;
        }
        n = kept;
    }
    free(active);
    free(x);
    return st;
}
