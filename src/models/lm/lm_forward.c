/* Forward and backward passes of the language model, and the Transformer-XL memory: each layer's
 * inputs of earlier segments, kept (without gradient) for the next segment to attend to. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "models/lm/lm.h"

enum { SEED_EMBED = 1, SEED_BLOCK = 1000 };

static int is_xl(const lc_model *m) { return m->cfg.model == LC_MODEL_XL; }

static lc_block_ctx block_ctx(const lc_model *m, int layer, int train, int M) {
    const lc_config *c = &m->cfg;
    lc_block_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.B = m->B, ctx.T = m->T, ctx.C = c->d_model, ctx.H = c->n_head, ctx.F = c->d_ff;
    ctx.norm = c->norm, ctx.activation = c->activation, ctx.dropout = c->dropout, ctx.train = train;
    ctx.seed = lc_model_step_seed(m, SEED_BLOCK + (uint64_t)layer);
    const int owner = c->attn_share > 1 ? layer - layer % c->attn_share : layer;
    ctx.layer = &m->layers[layer];
    ctx.causal = c->objective != LC_OBJECTIVE_MLM;
    ctx.attn_seed = lc_seed_mix(0x6c6f6e67637478ULL, (uint64_t)owner); /* fixed per layer, survives reloads */
    for (int i = 0; i < LC_ATTN_MAX_GROUPS; i++) ctx.attn_state[i] = m->group_state[layer * LC_ATTN_MAX_GROUPS + i];
    ctx.global_pos = m->global_pos;
    ctx.attn_work = m->attn_work, ctx.tmp = m->tmp;
    ctx.threads = m->threads;
    ctx.ffn_chunk = c->ffn_chunk;
    ctx.precision = c->precision;
    ctx.rel_scratch = m->rel_scratch;
    ctx.M = M;
    ctx.mem = M > 0 ? m->mem[layer] : NULL;
    ctx.mem_stride = (long)m->cap_M * c->d_model;
    ctx.relpos = is_xl(m);
    ctx.window = is_xl(m) && c->same_length ? c->mem_len : 0;
    ctx.sinus = m->sinus;
    ctx.r_rows = is_xl(m) ? M + m->T : 0;
    if (m->kv_mode) {
        ctx.kv = m->kv[layer];
        ctx.kv_stride = (long)m->kv_rows * 2 * c->d_model;
        ctx.kv_start = m->kv_start;
        ctx.mem = NULL;
        ctx.r_rows = m->r_ready ? 0 : m->cap_T + m->cap_M; /* every distance, once */
        ctx.k_panels = m->k_panels[layer], ctx.k_panel_floats = m->k_panel_floats;
        ctx.v_rows = m->v_rows[layer], ctx.kv_rows = m->kv_rows;
        ctx.r_panels = m->r_panels[layer], ctx.r_panel_floats = m->r_panel_floats;
    }
    return ctx;
}

/* The hidden state the output projection reads. */
lc_block_ctx lc_model_block_ctx(const lc_model *m, int layer, int train, int M) {
    return block_ctx(m, layer, train, M);
}

static const float *final_hidden(const lc_model *m) {
    return m->cfg.norm == LC_NORM_PRE ? m->lnf : m->res[m->cfg.n_layer];
}

/* The scored rows of the final hidden state: all of them, or (extra tokens) the rows after the extra
 * tokens of each sequence, gathered into head_in. */
static const float *head_input(lc_model *m) {
    const int G = m->cfg.extra_tokens, C = m->cfg.d_model, T = m->T - G;
    if (!G) return final_hidden(m);
    const float *h = final_hidden(m);
    for (int b = 0; b < m->B; b++)
        memcpy(m->head_in + (size_t)b * T * C, h + ((size_t)b * m->T + G) * C, sizeof(float) * (size_t)T * C);
    return m->head_in;
}

/* dh[B*T_model rows] = the gradient of head_input() (zero at the extra tokens' rows). */
static void scatter_head_grad(const lc_model *m, float *dh) {
    const int G = m->cfg.extra_tokens, C = m->cfg.d_model, T = m->T - G;
    memset(dh, 0, sizeof(float) * (size_t)m->B * m->T * C);
    for (int b = 0; b < m->B; b++)
        memcpy(dh + ((size_t)b * m->T + G) * C, m->d_head_in + (size_t)b * T * C, sizeof(float) * (size_t)T * C);
}

static void ensure_sinusoids(lc_model *m, int S) {
    if (m->sinus_rows >= S && m->sinus_clamp == m->cfg.clamp_len) return;
    lc_sinusoid_positions(m->sinus, m->cap_T + m->cap_M, m->cfg.d_model, m->cfg.clamp_len);
    m->sinus_rows = m->cap_T + m->cap_M;
    m->sinus_clamp = m->cfg.clamp_len;
}

/* After a forward: each layer's memory becomes the last mem_len rows of concat(memory, layer input). */
static void update_memory(lc_model *m, int M) {
    int B = m->B, T = m->T, C = m->cfg.d_model, S = M + T;
    int keep = S < m->cfg.mem_len ? S : m->cfg.mem_len;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const float *src = M > 0 ? m->bact[l].cat : m->res[l]; /* B rows of S (or T) rows each */
        int rows = M > 0 ? S : T;
        for (int b = 0; b < B; b++)
            memcpy(m->mem[l] + (size_t)b * m->cap_M * C, src + ((size_t)b * rows + (size_t)(rows - keep)) * C,
                   sizeof(float) * (size_t)keep * C);
    }
    m->mem_rows = keep;
    m->mem_B = B;
}

void lc_model_reset_memory(lc_model *m) {
    m->mem_rows = 0;
    m->kv_mode = 0;
    m->kv_start = 0;
    m->r_ready = 0;
}

/* Layer l's key panels and value rows (where it keeps them) from rows 0 .. rows - 1 of its cache, every
 * stream and head. */
static void pack_key_panels(lc_model *m, int l, int B, int rows) {
    if (!m->k_panels[l]) return;
    const long C = m->cfg.d_model, H = m->cfg.n_head, D = C / H;
#pragma omp parallel for schedule(dynamic, 1)
    for (long bh = 0; bh < B * H; bh++) {
        const float *k = m->kv[l] + (bh / H) * m->kv_rows * 2 * C + (bh % H) * D;
        lc_panel_pack(m->k_panels[l] + bh * m->k_panel_floats, (int)D, 0, rows, k, 2 * C);
        float *v = m->v_rows[l] + bh * m->kv_rows * D;
        for (long r = 0; r < rows; r++) memcpy(v + r * D, k + r * 2 * C + C, sizeof(float) * D);
    }
}

/* Switch an inference pass to the key/value cache: project the hidden-state memory of every layer to
 * keys and values once (LN1 first for pre-LN blocks), then later segments only project their own rows. */
static void enter_kv_mode(lc_model *m) {
    const lc_config *c = &m->cfg;
    int C = c->d_model, M = m->mem_rows, B = m->mem_rows ? m->mem_B : 0;
    lc_model_alloc_stores(m);
    for (int l = 0; l < c->n_layer && M > 0; l++) {
        lc_block_acts *a = &m->bact[l];
        const lc_block_weights *w = &m->blk[l];
        for (int b = 0; b < B; b++) /* gather the memory rows contiguously into cat */
            memcpy(a->cat + (size_t)b * M * C, m->mem[l] + (size_t)b * m->cap_M * C, sizeof(float) * (size_t)M * C);
        const float *in = a->cat;
        if (c->norm == LC_NORM_PRE) {
            lc_layernorm_forward(a->norm1, a->mean1, a->rstd1, a->cat, w->ln1_w, w->ln1_b, B * M, C, LC_LN_EPS);
            in = a->norm1;
        }
        lc_linear_forward_at(c->precision, a->qkv, in, w->qkv_w + (size_t)C * C, w->qkv_b ? w->qkv_b + C : NULL, B * M,
                             C, 2 * C);
        for (int b = 0; b < B; b++)
            memcpy(m->kv[l] + (size_t)b * m->kv_rows * 2 * C, a->qkv + (size_t)b * M * 2 * C,
                   sizeof(float) * (size_t)M * 2 * C);
        pack_key_panels(m, l, B, M);
    }
    m->kv_mode = 1;
    m->kv_start = 0;
    m->r_ready = 0;
}

/* After a cached forward: keep the last mem_len rows by moving the start; compact when the next
 * segment would not fit, so each byte costs O(1) copying on average. */
static void advance_kv(lc_model *m, int M) {
    int total = M + m->T, keep = total < m->cfg.mem_len ? total : m->cfg.mem_len, C = m->cfg.d_model;
    m->kv_start += total - keep;
    if (m->kv_start + keep + m->cap_T > m->kv_rows) {
        for (int l = 0; l < m->cfg.n_layer; l++) {
            for (int b = 0; b < m->B; b++) {
                float *base = m->kv[l] + (size_t)b * m->kv_rows * 2 * C;
                memmove(base, base + (size_t)m->kv_start * 2 * C, sizeof(float) * (size_t)keep * 2 * C);
            }
            pack_key_panels(m, l, m->B, keep);
        }
        m->kv_start = 0;
    }
    m->mem_rows = keep;
    m->mem_B = m->B;
    m->r_ready = 1;
}
int lc_model_memory_rows(const lc_model *m) { return m->mem_rows; }

/* ---------------------------------------------------------------- reversible layers (Reformer)
 * Two streams start as the embedding, x1 = x2 = e; layer l maps them to y1 = x1 + f_l(x2),
 * y2 = x2 + g_l(y1) (f: the attention half, g: the feed-forward half); the output is (y1 + y2) / 2.
 * Backward walks down from the outputs and rebuilds each layer's inputs from its outputs,
 * x2 = y2 - g_l(y1), x1 = y1 - f_l(x2), recomputing each half's activations (with the same dropout
 * masks) right before its backward, so activations are kept for one layer only. */

static void axpy(float *y, float a, const float *x, size_t n) {
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS)
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void reversible_forward(lc_model *m, int train) {
    const lc_config *c = &m->cfg;
    const size_t NC = (size_t)m->B * m->T * c->d_model;
    float *y1 = m->rev_y1, *y2 = m->rev_y2;
    memcpy(y1, m->res[0], sizeof(float) * NC);
    memcpy(y2, m->res[0], sizeof(float) * NC);
    for (int l = 0; l < c->n_layer; l++) {
        lc_block_ctx ctx = block_ctx(m, l, train, 0);
        if (m->rev_store) {
            memcpy(m->rev_x1[l], y1, sizeof(float) * NC);
            memcpy(m->rev_x2[l], y2, sizeof(float) * NC);
        }
        lc_block_half_forward(&ctx, &m->blk[l], &m->bact[l], LC_REV_ATTN, y2);
        axpy(y1, 1.0f, m->tmp, NC);
        lc_block_half_forward(&ctx, &m->blk[l], &m->bact[l], LC_REV_FFN, y1);
        axpy(y2, 1.0f, m->tmp, NC);
    }
    if (m->rev_store) {
        memcpy(m->rev_x1[c->n_layer], y1, sizeof(float) * NC);
        memcpy(m->rev_x2[c->n_layer], y2, sizeof(float) * NC);
    }
    float *out = m->res[c->n_layer];
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS)
    for (size_t i = 0; i < NC; i++) out[i] = 0.5f * (y1[i] + y2[i]);
}

/* On entry m->dres holds d loss / d output; on return d loss / d embedding. */
static void reversible_backward(lc_model *m) {
    const lc_config *c = &m->cfg;
    const size_t NC = (size_t)m->B * m->T * c->d_model;
    float *y1 = m->rev_y1, *y2 = m->rev_y2, *d1 = m->rev_d1, *d2 = m->rev_d2;
    for (size_t i = 0; i < NC; i++) d1[i] = d2[i] = 0.5f * m->dres[i];
    for (int l = c->n_layer - 1; l >= 0; l--) {
        lc_block_ctx ctx = block_ctx(m, l, m->cur_train, 0);
        const lc_block_weights *w = &m->blk[l];
        lc_block_weights *g = &m->gblk[l];
        const lc_block_acts *a = &m->bact[l];
        if (m->rev_store) { /* the reference: inputs and activations as the forward left them */
            lc_block_half_backward(&ctx, w, g, a, LC_REV_FFN, m->rev_x1[l + 1], d2, d1, &m->scratch);
            lc_block_half_backward(&ctx, w, g, a, LC_REV_ATTN, m->rev_x2[l], d1, d2, &m->scratch);
            continue;
        }
        lc_block_half_forward(&ctx, w, a, LC_REV_FFN, y1); /* g(y1) again: x2 = y2 - g(y1) */
        axpy(y2, -1.0f, m->tmp, NC);
        lc_block_half_backward(&ctx, w, g, a, LC_REV_FFN, y1, d2, d1, &m->scratch);
        lc_block_half_forward(&ctx, w, a, LC_REV_ATTN, y2); /* f(x2) again: x1 = y1 - f(x2) */
        axpy(y1, -1.0f, m->tmp, NC);
        lc_block_half_backward(&ctx, w, g, a, LC_REV_ATTN, y2, d1, d2, &m->scratch);
    }
    for (size_t i = 0; i < NC; i++) m->dres[i] = d1[i] + d2[i];
}

static lc_status check_inputs(const lc_model *m, const int *tokens, const int *targets, int B, int T) {
    int V = m->cfg.vocab, VT = V + (m->cfg.objective == LC_OBJECTIVE_MLM); /* MLM: the mask symbol too */
    if (B < 1 || B > m->max_B) return lc_fail(LC_ERR_ARG, "batch %d outside 1..%d", B, m->max_B);
    if (T < 1 || T > m->cap_T) return lc_fail(LC_ERR_ARG, "segment length %d outside 1..%d", T, m->cap_T);
    if (m->mem_rows > 0 && B != m->mem_B)
        return lc_fail(LC_ERR_ARG, "batch %d differs from the memory's %d streams (reset the memory first)", B,
                       m->mem_B);
    for (long i = 0; i < (long)B * T; i++) {
        if (tokens[i] < 0 || tokens[i] >= VT) return lc_fail(LC_ERR_ARG, "token %d outside 0..%d", tokens[i], VT - 1);
        if (targets && targets[i] >= V) return lc_fail(LC_ERR_ARG, "target %d outside 0..%d", targets[i], V - 1);
    }
    return LC_OK;
}

/* Whether every layer's kinds run against the key/value cache (LC_ATTN_CAP_DECODE); otherwise inference
 * recomputes the memory's keys and values from the hidden-state memory, as training does. */
static int kinds_decode(const lc_model *m) {
    for (int l = 0; l < m->cfg.n_layer; l++)
        for (int i = 0; i < m->layers[l].n_groups; i++)
            if (!(m->layers[l].group[i].kind->caps & LC_ATTN_CAP_DECODE)) return 0;
    return 1;
}

/* The run-time check: every layer's head groups against the attention shape of this call (a short last
 * segment, a one-byte prompt, the cached decode path), before any state changes. A few comparisons per
 * group: nothing next to the pass itself. */
static lc_status check_run(const lc_model *m, int B, int TT, int M, int train, int cached) {
    char err[512];
    for (int l = 0; l < m->cfg.n_layer; l++) {
        lc_block_ctx ctx = block_ctx(m, l, train, M);
        ctx.B = B, ctx.T = TT;
        ctx.kv = cached ? m->kv[l] : NULL;
        if (lc_block_check_attention(&ctx, err, sizeof err)) return lc_fail(LC_ERR_ARG, "attn layer %d: %s", l, err);
    }
    return LC_OK;
}

lc_status lc_model_forward(lc_model *m, const int *tokens, const int *targets, int B, int T, int train,
                           double *loss_sum, long *count) {
    lc_clear_error();
    const lc_config *c = &m->cfg;
    lc_status st = check_inputs(m, tokens, targets, B, T);
    if (st) return st;
    lc_threads_use(m->threads); /* the compute plan's count, for every parallel region of the pass */
    lc_model_expand_shared(m); /* tied Q/K: the projections the blocks (and the key/value cache) read */
    const int G = c->extra_tokens, TT = T + G; /* rows per sequence inside the model */
    long N = (long)B * T, NN = (long)B * TT;
    int C = c->d_model, V = c->vocab;
    /* inference: keys and values are kept */
    int cached = is_xl(m) && !train && m->cap_M > 0 && kinds_decode(m);
    if (is_xl(m) && train && m->kv_mode && m->mem_rows > 0)
        return lc_fail(LC_ERR_ARG, "the memory holds inference state; reset it before training");
    int M = is_xl(m) ? m->mem_rows : 0;
    if ((st = check_run(m, B, TT, M, train, cached))) return st;
    if (cached && !m->kv_mode) enter_kv_mode(m);
    if (!cached) m->kv_mode = 0, m->r_ready = 0;
    m->B = B;
    m->T = TT;
    m->last_M = M;
    m->have_targets = targets != NULL;
    const int extra_id = V + (c->objective == LC_OBJECTIVE_MLM); /* the extra tokens' embedding rows */
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < G; i++) m->tokens[(long)b * TT + i] = extra_id + i;
        memcpy(m->tokens + (long)b * TT + G, tokens + (long)b * T, (size_t)T * sizeof *tokens);
    }
    if (targets) memcpy(m->targets, targets, (size_t)N * sizeof *targets);

    lc_embedding_forward(m->res[0], m->tokens, m->wte, m->wpe, B, TT, C);
    if (is_xl(m)) {
        lc_scale(m->res[0], (size_t)N * C, sqrtf((float)C)); /* Transformer-XL's embedding scale */
        ensure_sinusoids(m, M + T);
    }
    lc_dropout_forward(m->res[0], m->res[0], (size_t)NN * C, train ? c->dropout : 0.0f,
                       lc_model_step_seed(m, SEED_EMBED));
    if (c->reversible) {
        reversible_forward(m, train);
    } else {
        for (int l = 0; l < c->n_layer; l++) {
            lc_block_ctx ctx = block_ctx(m, l, train, M);
            lc_block_forward(&ctx, &m->blk[l], &m->bact[l], m->res[l], m->res[l + 1]);
        }
    }
    if (cached) advance_kv(m, M);
    else if (is_xl(m) && c->mem_len > 0) update_memory(m, M);
    if (c->norm == LC_NORM_PRE)
        lc_layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->res[c->n_layer], m->lnf_w, m->lnf_b, (int)NN, C,
                             LC_LN_EPS);
    lc_linear_forward_at(m->cfg.precision, m->logits, head_input(m), m->head, NULL, (int)N, C, V);
    if (targets) {
        double sum = lc_xent_forward(m->losses, m->lse, m->logits, targets, (int)N, V);
        long n = 0;
        for (long i = 0; i < N; i++) n += targets[i] >= 0;
        if (loss_sum) *loss_sum = sum;
        if (count) *count = n;
    }
    m->cur_train = train;
    return LC_OK;
}

lc_status lc_model_backward(lc_model *m, float loss_scale) {
    lc_clear_error();
    if (!m->have_targets)
        return lc_fail(LC_ERR_ARG, "backward: the last forward had no targets (or there was none), so there is no "
                                   "loss to differentiate");
    const lc_config *c = &m->cfg;
    const int G = c->extra_tokens;
    int B = m->B, T = m->T, C = c->d_model, V = c->vocab, L = c->n_layer;
    int N = B * T, N_out = B * (T - G); /* model rows, scored rows */
    size_t NC = (size_t)N * C;
    lc_threads_use(m->threads);
    lc_xent_backward(m->dlogits, m->logits, m->lse, m->targets, N_out, V, loss_scale);
    /* d loss / d final hidden state, into dh (N rows) */
    float *dh = c->norm == LC_NORM_PRE ? m->scratch.d_norm : m->dres;
    if (G) {
        memset(m->d_head_in, 0, sizeof(float) * (size_t)N_out * C);
        lc_linear_backward_at(m->cfg.precision, m->d_head_in, m->g_head, NULL, m->dlogits, m->head_in, m->head, N_out,
                              C, V);
        scatter_head_grad(m, dh);
    } else {
        memset(dh, 0, NC * sizeof *dh);
        lc_linear_backward_at(m->cfg.precision, dh, m->g_head, NULL, m->dlogits, final_hidden(m), m->head, N, C, V);
    }
    if (c->norm == LC_NORM_PRE) {
        memset(m->dres, 0, NC * sizeof *m->dres);
        lc_layernorm_backward(m->dres, m->g_lnf_w, m->g_lnf_b, dh, m->res[L], m->lnf_w, m->lnf_mean, m->lnf_rstd, N,
                              C);
    }
    if (c->reversible) {
        reversible_backward(m);
    } else {
        for (int l = L - 1; l >= 0; l--) {
            lc_block_ctx ctx = block_ctx(m, l, m->cur_train, m->last_M);
            lc_block_backward(&ctx, &m->blk[l], &m->gblk[l], &m->bact[l], m->res[l], m->dres, &m->scratch);
        }
    }
    lc_dropout_backward(m->dres, m->dres, NC, m->cur_train ? c->dropout : 0.0f, lc_model_step_seed(m, SEED_EMBED));
    if (is_xl(m)) lc_scale(m->dres, NC, sqrtf((float)C));
    lc_embedding_backward(m->g_wte, m->g_wpe, m->dres, m->tokens, B, T, C);
    lc_model_fold_shared(m);
    return LC_OK;
}
