/* The decoder stack of the encoder-decoder models (nn/stacks.h): decoder blocks over packed target
 * sequences, each cross-attending to its range of encoder rows; the input embedding (+ an owner's vector
 * per sequence), the final LayerNorm, the output projection and the NLL of the targets; the backward of
 * it all into the weights, the embedding tables and the encoder rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "nn/stacks.h"

lc_status lc_dec_stack_init(lc_dec_stack *d, const lc_config *c, const char *what, int n_out, int max_len,
                            int max_rows, int max_seqs, int max_enc_rows) {
    d->cfg = *c, d->what = what, d->n_out = n_out;
    d->max_len = max_len, d->max_rows = max_rows, d->max_seqs = max_seqs, d->max_enc_rows = max_enc_rows;
    const int L = c->n_layer;
    const size_t R = (size_t)(max_rows > 0 ? max_rows : 1), S = (size_t)(max_seqs > 0 ? max_seqs : 1);
    d->layers = calloc((size_t)L, sizeof *d->layers);
    d->dact = calloc((size_t)L, sizeof *d->dact);
    d->res = calloc((size_t)L + 1, sizeof *d->res);
    d->blk = calloc((size_t)L, sizeof *d->blk);
    d->gblk = calloc((size_t)L, sizeof *d->gblk);
    d->group_state = calloc((size_t)L * LC_ATTN_MAX_GROUPS, sizeof *d->group_state);
    int bad = !d->layers || !d->dact || !d->res || !d->blk || !d->gblk || !d->group_state;
    int **rows[] = {&d->tok, &d->pos, &d->target, &d->row_seq};
    int **seqs[] = {&d->item, &d->q_start, &d->q_len, &d->kv_start, &d->kv_len, &d->seq_len};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) bad |= !(*rows[i] = malloc(sizeof(int) * R));
    for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++) bad |= !(*seqs[i] = malloc(sizeof(int) * S));
    if (bad) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    return lc_stack_layers(c, what, max_len, d->layers);
}

void lc_dec_stack_free(lc_dec_stack *d) {
    lc_free(d->cross_work);
    free(d->layers), free(d->dact), free(d->res), free(d->blk), free(d->gblk), free(d->group_state);
    free(d->tok), free(d->pos), free(d->target), free(d->row_seq);
    free(d->item), free(d->q_start), free(d->q_len), free(d->kv_start), free(d->kv_len), free(d->seq_len);
}

static float drop_p(const lc_dec_stack *d, int train) { return train ? d->cfg.dropout : 0.0f; }

static lc_decoder_ctx dec_ctx(const lc_dec_stack *d, const lc_pass_env *e, int l, int train) {
    const lc_stack_view v = {&d->cfg, d->layers, d->group_state, d->tmp, d->rows, d->n_seq, d->seq_len,
                             d->block_stream, d->attn_stream, 1};
    lc_decoder_ctx x;
    memset(&x, 0, sizeof x);
    x.self = lc_stack_block_ctx(&v, e, l, train);
    x.enc = d->enc, x.N_enc = d->N_enc, x.C_enc = d->C_enc;
    x.n_pairs = d->n_seq, x.q_start = d->q_start, x.q_len = d->q_len, x.kv_start = d->kv_start, x.kv_len = d->kv_len;
    x.cross_work = d->cross_work, x.cross_work_floats = d->cross_work_floats;
    return x;
}

size_t lc_dec_stack_workspace(const lc_dec_stack *d, int threads) {
    return lc_stack_workspace(&d->cfg, d->layers, d->max_rows, d->max_len, d->max_seqs, 1, threads);
}

lc_status lc_dec_stack_plan_cross(lc_dec_stack *d, int max_kv_len, int threads) {
    return lc_workspace_ensure(&d->cross_work, &d->cross_work_floats, lc_decoder_cross_workspace(max_kv_len, threads),
                               "the cross-attention workspace");
}

lc_status lc_dec_stack_check(const lc_dec_stack *d, const lc_pass_env *e) {
    char err[512];
    for (int l = 0; l < d->cfg.n_layer; l++) {
        const lc_decoder_ctx x = dec_ctx(d, e, l, 0);
        if (lc_decoder_check(&x, err, sizeof err)) return lc_fail(LC_ERR_ARG, "%s layer %d: %s", d->what, l, err);
    }
    return LC_OK;
}

void lc_dec_stack_embed(lc_dec_stack *d, const lc_pass_env *e, const float *seq_vec, int train) {
    const int C = d->cfg.d_model, N = d->rows;
    lc_embed_rows(d->res[0], d->wte, d->wpe, d->tok, d->pos, N, C);
    for (int r = 0; seq_vec && r < N; r++) {
        const float *v = seq_vec + (size_t)d->row_seq[r] * C;
        float *x = d->res[0] + (size_t)r * C;
        for (int k = 0; k < C; k++) x[k] += v[k];
    }
    lc_dropout_forward(d->res[0], d->res[0], (size_t)N * C, drop_p(d, train), lc_seed_mix(e->step_seed, d->embed_stream));
}

const float *lc_dec_stack_hidden(const lc_dec_stack *d) {
    return d->cfg.norm == LC_NORM_PRE ? d->lnf : d->res[d->cfg.n_layer];
}

static double row_lse(const float *z, int n) {
    float mx = z[0];
    for (int v = 1; v < n; v++) mx = z[v] > mx ? z[v] : mx;
    double s = 0;
    for (int v = 0; v < n; v++) s += exp((double)z[v] - mx);
    return mx + log(s);
}

double lc_dec_stack_forward(lc_dec_stack *d, const lc_pass_env *e, int train) {
    const int N = d->rows, C = d->cfg.d_model, V = d->n_out;
    for (int l = 0; l < d->cfg.n_layer; l++) {
        const lc_decoder_ctx x = dec_ctx(d, e, l, train);
        lc_decoder_forward(&x, &d->blk[l], &d->dact[l], d->res[l], d->res[l + 1]);
    }
    if (d->cfg.norm == LC_NORM_PRE)
        lc_layernorm_forward(d->lnf, d->lnf_mean, d->lnf_rstd, d->res[d->cfg.n_layer], d->lnf_w, d->lnf_b, N, C,
                             LC_LN_EPS);
    lc_linear_forward(d->logits, lc_dec_stack_hidden(d), d->out_w, NULL, N, C, V);
    double sum = 0;
    for (int r = 0; r < N; r++) {
        const float *z = d->logits + (size_t)r * V;
        if (d->target[r] >= 0) sum += row_lse(z, V) - z[d->target[r]];
    }
    return sum;
}

void lc_dec_stack_backward(lc_dec_stack *d, const lc_pass_env *e, float loss_scale, int train, float *d_seq_vec) {
    const int C = d->cfg.d_model, N = d->rows, L = d->cfg.n_layer, V = d->n_out;
    /* d loss / d logits = scale (softmax - one-hot), in place */
    for (int r = 0; r < N; r++) {
        float *z = d->logits + (size_t)r * V;
        if (d->target[r] < 0) { memset(z, 0, sizeof(float) * (size_t)V); continue; }
        const double lse = row_lse(z, V);
        for (int v = 0; v < V; v++) z[v] = (float)(loss_scale * exp((double)z[v] - lse));
        z[d->target[r]] -= loss_scale;
    }
    memset(d->dh, 0, sizeof(float) * (size_t)N * C);
    lc_linear_backward(d->dh, d->g_out_w, NULL, d->logits, lc_dec_stack_hidden(d), d->out_w, N, C, V);
    if (d->cfg.norm == LC_NORM_PRE) {
        memset(d->dres, 0, sizeof(float) * (size_t)N * C);
        lc_layernorm_backward(d->dres, d->g_lnf_w, d->g_lnf_b, d->dh, d->res[L], d->lnf_w, d->lnf_mean, d->lnf_rstd, N,
                              C);
    } else {
        memcpy(d->dres, d->dh, sizeof(float) * (size_t)N * C);
    }
    memset(d->d_enc, 0, sizeof(float) * (size_t)d->N_enc * d->C_enc);
    for (int l = L - 1; l >= 0; l--) {
        const lc_decoder_ctx x = dec_ctx(d, e, l, train);
        lc_decoder_backward(&x, &d->blk[l], &d->gblk[l], &d->dact[l], d->res[l], d->dres, d->d_enc, &d->scratch);
    }
    lc_dropout_backward(d->dres, d->dres, (size_t)N * C, drop_p(d, train), lc_seed_mix(e->step_seed, d->embed_stream));
    lc_embed_rows_backward(d->g_wte, d->g_wpe, d->dres, d->tok, d->pos, N, C);
    if (!d_seq_vec) return;
    memset(d_seq_vec, 0, sizeof(float) * (size_t)d->n_seq * C);
    for (int r = 0; r < N; r++) { /* serial: a fixed order */
        const float *g = d->dres + (size_t)r * C;
        float *gv = d_seq_vec + (size_t)d->row_seq[r] * C;
        for (int k = 0; k < C; k++) gv[k] += g[k];
    }
}

float **lc_dec_stack_site(lc_dec_stack *d, const lc_tensor *t, int l, int grad) {
    switch (t->site) {
    case LC_SITE_WTE: return grad ? &d->g_wte : &d->wte;
    case LC_SITE_WPE: return grad ? &d->g_wpe : &d->wpe;
    case LC_SITE_HEAD: return grad ? &d->g_out_w : &d->out_w;
    case LC_SITE_LNF_W: return grad ? &d->g_lnf_w : &d->lnf_w;
    case LC_SITE_LNF_B: return grad ? &d->g_lnf_b : &d->lnf_b;
    case LC_SITE_KIND_STATE: return grad ? NULL : &d->group_state[l * LC_ATTN_MAX_GROUPS + t->group];
    default: return lc_tensor_decoder_field(grad ? &d->gblk[l] : &d->blk[l], t);
    }
}
