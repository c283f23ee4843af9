/* The Transformer block: self-attention (causal or bidirectional; each head group with its own attention
 * kind, optional global tokens with their own projection) and feed-forward sublayers with residual
 * connections, in pre-LN (x + f(LN(x))) or post-LN (LN(x + f(x))) arrangement; forward and backward. With memory
 * (Transformer-XL) the attention reads keys and values from concat(memory, segment), LayerNorm (pre-LN)
 * covers the memory rows too, and no gradient flows into the memory. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/status.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "nn/nn.h"

enum { SITE_ATTN_OUT = 1, SITE_FFN_OUT = 2 };

static float drop_p(const lc_block_ctx *c) { return c->train ? c->dropout : 0.0f; }
static uint64_t site_seed(const lc_block_ctx *c, int site) { return lc_seed_mix(c->seed, (uint64_t)site); }
static int rows_s(const lc_block_ctx *c) { return c->M + c->T; }

/* cat[b] = [mem[b] ; x[b]] */
static void fill_cat(const lc_block_ctx *c, float *cat, const float *x) {
    long C = c->C, S = rows_s(c);
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < c->B; b++) {
        memcpy(cat + b * S * C, c->mem + b * c->mem_stride, sizeof(float) * (size_t)(c->M * C));
        memcpy(cat + (b * S + c->M) * C, x + b * c->T * C, sizeof(float) * (size_t)(c->T * C));
    }
}

/* dx[b, t] += dcat[b, M + t]: the segment rows' share of a gradient over concat(memory, segment). */
static void add_segment_rows(const lc_block_ctx *c, float *dx, const float *dcat) {
    long C = c->C, S = rows_s(c), T = c->T;
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < c->B; b++)
        for (long i = 0; i < T * C; i++) dx[b * T * C + i] += dcat[(b * S + c->M) * C + i];
}

static lc_attn_shape attn_shape(const lc_block_ctx *c) {
    lc_attn_shape s;
    memset(&s, 0, sizeof s);
    s.B = c->B, s.H = c->H, s.T = c->T, s.M = c->M, s.D = c->C / c->H, s.causal = c->causal;
    s.scale = 1.0f / sqrtf((float)s.D);
    s.window = c->window;
    s.relpos = c->relpos;
    s.threads = c->threads;
    return s;
}

/* Views into the fused [B, S, 3C] projection: queries are the last T rows of each batch row. */
static lc_attn_tensors attn_views(const lc_block_ctx *c, float *qkv, float *att) {
    long S = rows_s(c), C = c->C, M = c->M;
    lc_attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = (lc_view){qkv + M * 3 * C, S * 3 * C, 3 * C};
    t.k = (lc_view){qkv + C, S * 3 * C, 3 * C};
    t.v = (lc_view){qkv + 2 * C, S * 3 * C, 3 * C};
    t.out = (lc_view){att, c->T * C, C};
    return t;
}

static lc_view view_at(lc_view v, long off) {
    if (v.p) v.p += off;
    return v;
}

/* Global-token tensors over the fused [B, S, 3C] global projection (and its gradient). */
static lc_attn_global global_views(const lc_block_ctx *c, const lc_block_acts *a, const lc_block_scratch *sc) {
    long S = rows_s(c), C = c->C, M = c->M;
    lc_attn_global g;
    memset(&g, 0, sizeof g);
    g.pos = c->global_pos;
    g.qg = (lc_view){a->qkvg + M * 3 * C, S * 3 * C, 3 * C};
    g.kg = (lc_view){a->qkvg + C, S * 3 * C, 3 * C};
    g.vg = (lc_view){a->qkvg + 2 * C, S * 3 * C, 3 * C};
    if (sc) {
        g.dqg = (lc_view){sc->d_qkvg + M * 3 * C, S * 3 * C, 3 * C};
        g.dkg = (lc_view){sc->d_qkvg + C, S * 3 * C, 3 * C};
        g.dvg = (lc_view){sc->d_qkvg + 2 * C, S * 3 * C, 3 * C};
    }
    g.lse = a->lse_g;
    return g;
}

/* The global positions group grp has in this call: those of its configured ones that exist in the T
 * rows of the sequence (Longformer), its listed positions or the first ones of c->global_pos. */
static void group_globals(const lc_block_ctx *c, const lc_attn_group *grp, int T, lc_attn_global *gg) {
    gg->n = lc_attn_group_global_count(grp, T);
    gg->pos = grp->global_listed ? grp->global_pos : c->global_pos;
}

/* Packed sequences: the group of equal-length sequences starting at sequence *j (B_g of them, T_g rows
 * each); *j moves past it. */
static void next_seq_group(const lc_block_ctx *c, int *j, int *Bg, int *Tg) {
    const int len = c->seq_len[*j];
    int k = 1;
    while (*j + k < c->n_seq && c->seq_len[*j + k] == len) k++;
    *j += k, *Bg = k, *Tg = len;
}

/* The head groups' checks for B sequences of T rows (the context's own B, T unless packed). */
static int check_groups(const lc_block_ctx *c, int B, int T, char *err, size_t errlen) {
    lc_attn_shape s = attn_shape(c);
    s.B = B, s.T = T;
    for (int i = 0; i < c->layer->n_groups; i++) {
        const lc_attn_group *grp = &c->layer->group[i];
        const lc_attn_shape gs = lc_attn_group_shape(&s, grp);
        lc_attn_global gg;
        memset(&gg, 0, sizeof gg);
        group_globals(c, grp, T, &gg);
        if (lc_attn_kind_check(grp->kind, &gs, grp->opts, grp->n_global ? &gg : NULL, err, errlen)) return -1;
        if (c->kv && !(grp->kind->caps & LC_ATTN_CAP_DECODE)) {
            snprintf(err, errlen, "%s: running against the key/value cache is not supported", grp->kind->name);
            return -1;
        }
    }
    const size_t need = c->attn_work_floats ? lc_attn_layer_workspace(c->layer, &s) : 0;
    if (need > c->attn_work_floats) {
        snprintf(err, errlen, "attention workspace of %zu floats is too small for %d sequences of %d rows (%zu needed)",
                 c->attn_work_floats, B, T, need);
        return -1;
    }
    return 0;
}

/* The packing itself: a vanilla block, lengths >= 1 that cover the B*T rows, a workspace size to check. */
static int check_packing(const lc_block_ctx *c, char *err, size_t errlen) {
    if (c->M || c->mem || c->relpos || c->window || c->kv) {
        snprintf(err, errlen, "packed sequences need a vanilla block (no memory, relative positions, window or "
                              "key/value cache)");
        return -1;
    }
    long rows = 0;
    for (int i = 0; i < c->n_seq; i++) {
        if (!c->seq_len || c->seq_len[i] < 1) {
            snprintf(err, errlen, "packed sequence %d has %d rows (at least 1)", i, c->seq_len ? c->seq_len[i] : 0);
            return -1;
        }
        rows += c->seq_len[i];
    }
    if (rows != (long)c->B * c->T) {
        snprintf(err, errlen, "packed sequences cover %ld rows, the block has %ld", rows, (long)c->B * c->T);
        return -1;
    }
    if (!c->attn_work_floats) {
        snprintf(err, errlen, "packed sequences need attn_work_floats (size it with lc_block_packed_workspace)");
        return -1;
    }
    return 0;
}

int lc_block_check_attention(const lc_block_ctx *c, char *err, size_t errlen) {
    if (c->n_seq < 0) return snprintf(err, errlen, "n_seq %d < 0", c->n_seq), -1;
    if (!c->n_seq) return check_groups(c, c->B, c->T, err, errlen);
    if (check_packing(c, err, errlen)) return -1;
    for (int j = 0; j < c->n_seq;) {
        int Bg, Tg;
        next_seq_group(c, &j, &Bg, &Tg);
        char msg[384];
        if (check_groups(c, Bg, Tg, msg, sizeof msg)) {
            snprintf(err, errlen, "packed sequences of %d rows: %s", Tg, msg);
            return -1;
        }
    }
    return 0;
}

size_t lc_block_packed_workspace(const lc_block_ctx *c, int max_rows, int max_len, int max_seqs) {
    lc_attn_shape s = attn_shape(c);
    s.M = 0, s.window = 0, s.relpos = 0;
    size_t most = 0;
    /* Kinds' workspaces grow with B at a given T, so B = max_rows / T (at most max_seqs) is the largest at
     * that length. The cap matters: a kind that keeps a few k x D floats per sequence (linformer's dK', dV')
     * would otherwise be planned for max_rows one-row sequences (537 MB for 4 sequences of 1,025 rows). */
    for (int T = 1; T <= max_len && T <= max_rows; T++) {
        s.B = max_rows / T, s.T = T;
        if (max_seqs > 0 && s.B > max_seqs) s.B = max_seqs;
        char err[384];
        if (lc_attn_layer_check(c->layer, &s, err, sizeof err)) continue; /* refused: never runs */
        const size_t n = lc_attn_layer_workspace(c->layer, &s);
        most = n > most ? n : most;
    }
    return most;
}

/* Run the layer's head groups one after another: group i sees heads h0 .. h0 + heads - 1, i.e. the
 * views shifted by h0*D columns, its own slice of lse, its kind's parameters and state. g (the
 * gradients) is NULL for forward. The caller has checked the groups (lc_block_check_attention).
 * B sequences of T rows, the first at row r0 of the block's rows (packed: one sequence group; the views
 * are the group's); lse slices: head group from N*h0, sequence group from r0*heads in it. */
static void run_head_groups(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                            const lc_attn_tensors *t, const lc_attn_global *glob, int B, int T, long r0) {
    lc_attn_shape s = attn_shape(c);
    s.B = B, s.T = T;
    const long D = c->C / c->H, BT = (long)c->B * c->T;
    for (int i = 0; i < c->layer->n_groups; i++) {
        const lc_attn_group *grp = &c->layer->group[i];
        const long off = grp->h0 * D;
        const lc_attn_shape gs = lc_attn_group_shape(&s, grp);
        /* lc_block_check_attention refuses a workspace too small for this shape; this is the backstop */
        assert(!c->attn_work_floats || grp->kind->workspace_floats(&gs, grp->opts) <= c->attn_work_floats);
        lc_attn_tensors gt = *t;
        gt.q = view_at(t->q, off), gt.k = view_at(t->k, off), gt.v = view_at(t->v, off);
        if (t->k_panels.p) gt.k_panels.p += grp->h0 * t->k_panels.sh;
        if (t->v_rows.p) gt.v_rows.p += grp->h0 * t->v_rows.sh;
        gt.out = view_at(t->out, off), gt.dout = view_at(t->dout, off);
        gt.dq = view_at(t->dq, off), gt.dk = view_at(t->dk, off), gt.dv = view_at(t->dv, off);
        gt.lse = t->lse + BT * grp->h0 + r0 * grp->heads;
        lc_attn_global gg;
        gt.global = NULL;
        if (grp->n_global) { /* even when none exists at this length: backward then zeroes dqg, dkg, dvg */
            gg = *glob;
            group_globals(c, grp, T, &gg);
            gg.qg = view_at(glob->qg, off), gg.kg = view_at(glob->kg, off), gg.vg = view_at(glob->vg, off);
            gg.dqg = view_at(glob->dqg, off), gg.dkg = view_at(glob->dkg, off), gg.dvg = view_at(glob->dvg, off);
            gg.lse = glob->lse + BT * grp->h0 + r0 * grp->heads;
            gt.global = &gg;
        }
        gt.params = w->attn_params[i];
        gt.dparams = g ? g->attn_params[i] : NULL;
        gt.state = c->attn_state[i];
        gt.train = c->train;
        gt.seed = lc_seed_mix(c->attn_seed, (uint64_t)i);
        /* Relative positions: u, v (and du, dv) of the group's heads are contiguous; r and dr rows hold
         * every head, so with several groups the group's columns go through a contiguous copy. */
        lc_attn_relpos gr;
        const int split_r = t->rel && c->layer->n_groups > 1;
        const long S = rows_s(c), GD = grp->heads * D;
        if (t->rel) {
            gr = *t->rel;
            gr.u = t->rel->u + off, gr.v = t->rel->v + off;
            if (gr.r_panels.p) gr.r_panels.p += grp->h0 * gr.r_panels.sh;
            if (g) gr.du = t->rel->du + off, gr.dv = t->rel->dv + off;
            if (split_r) {
                float *r = c->rel_scratch;
                for (long d = 0; d < S; d++) memcpy(r + d * GD, t->rel->r + d * c->C + off, sizeof(float) * GD);
                gr.r = r;
                if (g) gr.dr = r + S * GD;
            }
            gt.rel = &gr;
        }
        if (g)
            grp->kind->backward(&gs, grp->opts, &gt, c->attn_work);
        else
            grp->kind->forward(&gs, grp->opts, &gt, c->attn_work);
        if (split_r && g)
            for (long d = 0; d < S; d++) memcpy(t->rel->dr + d * c->C + off, gr.dr + d * GD, sizeof(float) * GD);
    }
}

/* A view of the packed rows' sequence group that starts at row r0 and has sequences of T rows. */
static lc_view seq_view(lc_view v, long r0, int T) {
    if (v.p) v.p += r0 * v.st;
    v.sb = T * v.st;
    return v;
}

/* The head groups over the whole call: once, or (packed) once per sequence group on its rows' views. */
static void run_groups(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                       const lc_attn_tensors *t, const lc_attn_global *glob) {
    if (!c->n_seq) {
        run_head_groups(c, w, g, t, glob, c->B, c->T, 0);
        return;
    }
    long r0 = 0;
    for (int j = 0; j < c->n_seq;) {
        int Bg, Tg;
        next_seq_group(c, &j, &Bg, &Tg);
        lc_attn_tensors st = *t;
        st.q = seq_view(t->q, r0, Tg), st.k = seq_view(t->k, r0, Tg), st.v = seq_view(t->v, r0, Tg);
        st.out = seq_view(t->out, r0, Tg), st.dout = seq_view(t->dout, r0, Tg);
        st.dq = seq_view(t->dq, r0, Tg), st.dk = seq_view(t->dk, r0, Tg), st.dv = seq_view(t->dv, r0, Tg);
        lc_attn_global sg;
        if (glob) {
            sg = *glob;
            sg.qg = seq_view(glob->qg, r0, Tg), sg.kg = seq_view(glob->kg, r0, Tg), sg.vg = seq_view(glob->vg, r0, Tg);
            sg.dqg = seq_view(glob->dqg, r0, Tg), sg.dkg = seq_view(glob->dkg, r0, Tg);
            sg.dvg = seq_view(glob->dvg, r0, Tg);
        }
        run_head_groups(c, w, g, &st, glob ? &sg : NULL, Bg, Tg, r0);
        r0 += (long)Bg * Tg;
    }
}

/* tmp = drop(proj(attention(qkv(a)))), a holding B*S rows (B*T rows with a key/value cache). */
static void attention_sublayer(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a,
                               const float *in) {
    int N = c->B * c->T, BS = c->B * rows_s(c), C = c->C;
    lc_attn_tensors t;
    if (c->kv) {
        lc_linear_forward_at(c->precision, a->qkv, in, w->qkv_w, w->qkv_b, N, C, 3 * C);
        long T = c->T, row0 = c->kv_start + c->M;
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS)
        for (long bt = 0; bt < N; bt++) {
            long b = bt / T, tt = bt % T;
            memcpy(c->kv + b * c->kv_stride + (row0 + tt) * 2 * C, a->qkv + bt * 3 * C + C, sizeof(float) * 2 * C);
        }
        memset(&t, 0, sizeof t);
        t.q = (lc_view){a->qkv, T * 3 * C, 3 * C};
        t.k = (lc_view){c->kv + (long)c->kv_start * 2 * C, c->kv_stride, 2 * C};
        t.v = (lc_view){c->kv + (long)c->kv_start * 2 * C + C, c->kv_stride, 2 * C};
        t.out = (lc_view){a->att, T * C, C};
        if (c->k_panels) {
            const long H = c->H, D = C / H, v_floats = (long)c->kv_rows * D;
#pragma omp parallel for schedule(dynamic, 1)
            for (long bh = 0; bh < c->B * H; bh++) {
                const float *k = a->qkv + (bh / H) * T * 3 * C + C + (bh % H) * D;
                lc_panel_pack(c->k_panels + bh * c->k_panel_floats, (int)D, (int)row0, (int)T, k, 3 * C);
                for (long tt = 0; tt < T; tt++)
                    memcpy(c->v_rows + bh * v_floats + (row0 + tt) * D, k + tt * 3 * C + C, sizeof(float) * D);
            }
            t.k_panels = (lc_attn_store){c->k_panels, H * c->k_panel_floats, c->k_panel_floats, c->kv_start};
            t.v_rows = (lc_attn_store){c->v_rows, H * v_floats, v_floats, c->kv_start};
        }
    } else {
        lc_linear_forward_at(c->precision, a->qkv, in, w->qkv_w, w->qkv_b, BS, C, 3 * C);
        t = attn_views(c, a->qkv, a->att);
    }
    lc_attn_relpos rel;
    if (c->relpos) {
        if (c->r_rows) lc_linear_forward_at(c->precision, a->r, c->sinus, w->r_w, NULL, c->r_rows, C, C);
        memset(&rel, 0, sizeof rel);
        rel.r = a->r, rel.u = w->u, rel.v = w->v;
        if (c->kv && c->r_panels) {
            const int D = C / c->H;
            if (c->r_rows) {
#pragma omp parallel for schedule(dynamic, 1)
                for (int h = 0; h < c->H; h++)
                    lc_panel_pack(c->r_panels + h * c->r_panel_floats, D, 0, c->r_rows, a->r + (long)h * D, C);
            }
            rel.r_panels = (lc_attn_store){c->r_panels, 0, c->r_panel_floats, 0};
        }
        t.rel = &rel;
    }
    t.lse = a->lse;
    lc_attn_global glob;
    if (w->qkvg_w) { /* global tokens: their own projection of every row (no key/value cache here) */
        lc_linear_forward_at(c->precision, a->qkvg, in, w->qkvg_w, w->qkvg_b, BS, C, 3 * C);
        glob = global_views(c, a, NULL);
    }
    run_groups(c, w, NULL, &t, w->qkvg_w ? &glob : NULL);
    lc_linear_forward_at(c->precision, c->tmp, a->att, w->proj_w, w->proj_b, N, C, C);
    lc_dropout_forward(c->tmp, c->tmp, (size_t)N * C, drop_p(c), site_seed(c, SITE_ATTN_OUT));
}

/* Rows per feed-forward chunk: the [rows, F] intermediate exists for one chunk at a time. */
static int ffn_rows(const lc_block_ctx *c) {
    const int N = c->B * c->T;
    return c->ffn_chunk > 0 && c->ffn_chunk < N ? c->ffn_chunk : N;
}

static void activation_forward(const lc_block_ctx *c, float *act, const float *pre, size_t n) {
    if (c->activation == LC_ACT_GELU) lc_gelu_forward(act, pre, n);
    else lc_relu_forward(act, pre, n);
}

/* tmp = drop(fc2(act(fc1(in)))), chunk by chunk; a->fc1/a->act hold the last chunk's rows. */
static void ffn_sublayer(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *in) {
    int N = c->B * c->T, C = c->C, F = c->F, K = ffn_rows(c);
    for (int r0 = 0; r0 < N; r0 += K) {
        const int n = N - r0 < K ? N - r0 : K;
        lc_linear_forward_at(c->precision, a->fc1, in + (size_t)r0 * C, w->fc1_w, w->fc1_b, n, C, F);
        activation_forward(c, a->act, a->fc1, (size_t)n * F);
        lc_linear_forward_at(c->precision, c->tmp + (size_t)r0 * C, a->act, w->fc2_w, w->fc2_b, n, F, C);
    }
    lc_dropout_forward(c->tmp, c->tmp, (size_t)N * C, drop_p(c), site_seed(c, SITE_FFN_OUT));
}

void lc_block_forward_mid(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *x,
                          float *out, const lc_block_mid *mid) {
    int N = c->B * c->T, C = c->C;
    long NC = (long)N * C;
    const float *src = x; /* the attention's input rows: concat(memory, x) when there is memory */
    if (c->M > 0 && !c->kv) {
        fill_cat(c, a->cat, x);
        src = a->cat;
    }
    int BS = c->kv ? N : c->B * rows_s(c); /* rows the attention's input projection reads */
    if (c->norm == LC_NORM_PRE) {
        lc_layernorm_forward(a->norm1, a->mean1, a->rstd1, src, w->ln1_w, w->ln1_b, BS, C, LC_LN_EPS);
        attention_sublayer(c, w, a, a->norm1);
        lc_add(a->s1, x, c->tmp, NC);
        const float *h = a->s1; /* the feed-forward's residual stream */
        if (mid) {
            lc_layernorm_forward(mid->norm, mid->mean, mid->rstd, h, mid->ln_w, mid->ln_b, N, C, LC_LN_EPS);
            mid->forward(mid->user, mid->norm);
            lc_add(mid->sum, h, c->tmp, NC);
            h = mid->sum;
        }
        lc_layernorm_forward(a->norm2, a->mean2, a->rstd2, h, w->ln2_w, w->ln2_b, N, C, LC_LN_EPS);
        ffn_sublayer(c, w, a, a->norm2);
        lc_add(out, h, c->tmp, NC);
    } else {
        attention_sublayer(c, w, a, src);
        lc_add(a->s1, x, c->tmp, NC);
        lc_layernorm_forward(a->norm1, a->mean1, a->rstd1, a->s1, w->ln1_w, w->ln1_b, N, C, LC_LN_EPS);
        const float *h = a->norm1; /* the feed-forward's input */
        if (mid) {
            mid->forward(mid->user, h);
            lc_add(mid->sum, h, c->tmp, NC);
            lc_layernorm_forward(mid->norm, mid->mean, mid->rstd, mid->sum, mid->ln_w, mid->ln_b, N, C, LC_LN_EPS);
            h = mid->norm;
        }
        ffn_sublayer(c, w, a, h);
        lc_add(a->s2, h, c->tmp, NC);
        lc_layernorm_forward(out, a->mean2, a->rstd2, a->s2, w->ln2_w, w->ln2_b, N, C, LC_LN_EPS);
    }
}

void lc_block_forward(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, const float *x,
                      float *out) {
    lc_block_forward_mid(c, w, a, x, out, NULL);
}

/* Given dsum = d loss / d (residual + drop(ffn(in))), accumulate d loss / d in into din. Chunked: each
 * chunk's fc1 and activation are recomputed from in (unchunked: they are the forward's). */
static void ffn_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                         const lc_block_acts *a, const float *in, const float *dsum, float *din,
                         const lc_block_scratch *s) {
    int N = c->B * c->T, C = c->C, F = c->F, K = ffn_rows(c);
    lc_dropout_backward(s->d_tmp, dsum, (size_t)N * C, drop_p(c), site_seed(c, SITE_FFN_OUT));
    for (int r0 = 0; r0 < N; r0 += K) {
        const int n = N - r0 < K ? N - r0 : K;
        const float *x = in + (size_t)r0 * C;
        if (K < N) {
            lc_linear_forward_at(c->precision, a->fc1, x, w->fc1_w, w->fc1_b, n, C, F);
            activation_forward(c, a->act, a->fc1, (size_t)n * F);
        }
        memset(s->d_act, 0, sizeof(float) * (size_t)n * F);
        lc_linear_backward_at(c->precision, s->d_act, g->fc2_w, g->fc2_b, s->d_tmp + (size_t)r0 * C, a->act, w->fc2_w,
                              n, F, C);
        memset(s->d_fc1, 0, sizeof(float) * (size_t)n * F);
        if (c->activation == LC_ACT_GELU)
            lc_gelu_backward(s->d_fc1, a->fc1, s->d_act, (size_t)n * F);
        else
            lc_relu_backward(s->d_fc1, a->fc1, s->d_act, (size_t)n * F);
        lc_linear_backward_at(c->precision, din + (size_t)r0 * C, g->fc1_w, g->fc1_b, s->d_fc1, x, w->fc1_w, n, C, F);
    }
}

static void add_vec(float *dst, const float *src, long n) {
    for (long i = 0; i < n; i++) dst[i] += src[i];
}

/* Given dsum = d loss / d (residual + drop(attn(in))), accumulate d loss / d in into din, where in and
 * din hold the attention's B*S input rows. */
static void attention_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                               const lc_block_acts *a, const float *in, const float *dsum, float *din,
                               const lc_block_scratch *s) {
    int N = c->B * c->T, BS = c->B * rows_s(c), C = c->C;
    lc_dropout_backward(s->d_tmp, dsum, (size_t)N * C, drop_p(c), site_seed(c, SITE_ATTN_OUT));
    memset(s->d_att, 0, sizeof(float) * (size_t)N * C);
    lc_linear_backward_at(c->precision, s->d_att, g->proj_w, g->proj_b, s->d_tmp, a->att, w->proj_w, N, C, C);
    lc_attn_tensors t = attn_views(c, a->qkv, a->att);
    long S = rows_s(c);
    if (c->M > 0) memset(s->d_qkv, 0, sizeof(float) * (size_t)BS * 3 * C); /* memory rows get no dq */
    t.lse = a->lse;
    t.dout = (lc_view){s->d_att, (long)c->T * C, C};
    t.dq = (lc_view){s->d_qkv + c->M * 3L * C, S * 3 * C, 3 * C};
    t.dk = (lc_view){s->d_qkv + C, S * 3 * C, 3 * C};
    t.dv = (lc_view){s->d_qkv + 2 * C, S * 3 * C, 3 * C};
    lc_attn_relpos rel;
    if (c->relpos) {
        memset(&rel, 0, sizeof rel);
        rel.r = a->r, rel.u = w->u, rel.v = w->v;
        rel.dr = s->d_r, rel.du = s->d_u, rel.dv = s->d_v;
        t.rel = &rel;
    }
    lc_attn_global glob;
    if (w->qkvg_w) {
        memset(s->d_qkvg, 0, sizeof(float) * (size_t)BS * 3 * C);
        glob = global_views(c, a, s);
    }
    run_groups(c, w, g, &t, w->qkvg_w ? &glob : NULL);
    if (w->qkvg_w)
        lc_linear_backward_at(c->precision, din, g->qkvg_w, g->qkvg_b, s->d_qkvg, in, w->qkvg_w, BS, C, 3 * C);
    if (c->relpos) {
        add_vec(g->u, s->d_u, C);
        add_vec(g->v, s->d_v, C);
        lc_linear_backward_at(c->precision, NULL, g->r_w, NULL, s->d_r, c->sinus, w->r_w, (int)S, C, C);
    }
    lc_linear_backward_at(c->precision, din, g->qkv_w, g->qkv_b, s->d_qkv, in, w->qkv_w, BS, C, 3 * C);
}

void lc_block_backward_mid(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                           const lc_block_acts *a, const float *x, float *dx, const lc_block_scratch *s,
                           const lc_block_mid *mid) {
    int N = c->B * c->T, BS = c->B * rows_s(c), C = c->C;
    size_t NC = (size_t)N * C, BSC = (size_t)BS * C;
    const float *src = c->M > 0 ? a->cat : x;
    if (c->norm == LC_NORM_PRE) {
        /* out = h + drop(ffn(LN2(h))); h = s1 (mid: s1 + drop(mid(LNm(s1)))); s1 = x + drop(attn(LN1(cat)));
         * dx carries d out -> d h -> d s1 -> d x */
        memset(s->d_norm, 0, sizeof(float) * NC);
        ffn_backward(c, w, g, a, a->norm2, dx, s->d_norm, s);
        lc_layernorm_backward(dx, g->ln2_w, g->ln2_b, s->d_norm, mid ? mid->sum : a->s1, w->ln2_w, a->mean2, a->rstd2,
                              N, C);
        if (mid) {
            memset(s->d_norm, 0, sizeof(float) * NC);
            mid->backward(mid->user, mid->norm, dx, s->d_norm);
            lc_layernorm_backward(dx, mid->g_ln_w, mid->g_ln_b, s->d_norm, a->s1, mid->ln_w, mid->mean, mid->rstd, N, C);
        }
        memset(s->d_norm, 0, sizeof(float) * BSC);
        attention_backward(c, w, g, a, a->norm1, dx, s->d_norm, s);
        if (c->M == 0) {
            lc_layernorm_backward(dx, g->ln1_w, g->ln1_b, s->d_norm, x, w->ln1_w, a->mean1, a->rstd1, N, C);
        } else {
            memset(s->d_cat, 0, sizeof(float) * BSC);
            lc_layernorm_backward(s->d_cat, g->ln1_w, g->ln1_b, s->d_norm, src, w->ln1_w, a->mean1, a->rstd1, BS, C);
            add_segment_rows(c, dx, s->d_cat);
        }
    } else {
        /* out = LN2(s2); s2 = h + drop(ffn(h)); h = h1 (mid: LNm(h1 + drop(mid(h1)))); h1 = LN1(s1);
         * s1 = x + drop(attn(cat)); the gradients in d_a and d_b by turns */
        float *d_h = s->d_a, *d_s1 = s->d_b;
        memset(d_h, 0, sizeof(float) * NC);
        lc_layernorm_backward(d_h, g->ln2_w, g->ln2_b, dx, a->s2, w->ln2_w, a->mean2, a->rstd2, N, C);
        ffn_backward(c, w, g, a, mid ? mid->norm : a->norm1, d_h, d_h, s); /* d s2 becomes d h */
        if (mid) {
            memset(d_s1, 0, sizeof(float) * NC);
            lc_layernorm_backward(d_s1, mid->g_ln_w, mid->g_ln_b, d_h, mid->sum, mid->ln_w, mid->mean, mid->rstd, N, C);
            mid->backward(mid->user, a->norm1, d_s1, d_s1); /* d h1 */
            float *t = d_h;
            d_h = d_s1, d_s1 = t;
        }
        memset(d_s1, 0, sizeof(float) * NC);
        lc_layernorm_backward(d_s1, g->ln1_w, g->ln1_b, d_h, a->s1, w->ln1_w, a->mean1, a->rstd1, N, C);
        if (c->M == 0) {
            attention_backward(c, w, g, a, x, d_s1, d_s1, s); /* d_s1 becomes d x */
        } else {
            memset(s->d_cat, 0, sizeof(float) * BSC);
            attention_backward(c, w, g, a, src, d_s1, s->d_cat, s);
            add_segment_rows(c, d_s1, s->d_cat);
        }
        memcpy(dx, d_s1, sizeof(float) * NC);
    }
}

void lc_block_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                       const lc_block_acts *a, const float *x, float *dx, const lc_block_scratch *s) {
    lc_block_backward_mid(c, w, g, a, x, dx, s, NULL);
}

void lc_sinusoid_positions(float *out, int S, int C, int clamp_len) {
    int half = C / 2;
    for (int d = 0; d < S; d++) {
        double pos = clamp_len > 0 && d > clamp_len ? clamp_len : d;
        for (int k = 0; k < half; k++) {
            double inv_freq = pow(10000.0, -2.0 * k / C);
            out[(long)d * C + k] = (float)sin(pos * inv_freq);
            out[(long)d * C + half + k] = (float)cos(pos * inv_freq);
        }
    }
}

/* ---------------------------------------------------------------- reversible halves (Reformer)
 * f(x) = drop(attn(LN1(x))) and g(y) = drop(ffn(LN2(y))) of a pre-LN block, each into ctx->tmp; their
 * backward accumulates d loss / d input into dx given dy = d loss / d output. No memory rows (M = 0). */
/* The LayerNorm of one half: LN1 before the attention, LN2 before the feed-forward (g's only with g). */
typedef struct {
    const float *w, *b;
    float *gw, *gb, *norm, *mean, *rstd;
} half_norm;

static half_norm half_norm_of(lc_rev_half half, const lc_block_weights *w, lc_block_weights *g,
                              const lc_block_acts *a) {
    if (half == LC_REV_ATTN)
        return (half_norm){w->ln1_w, w->ln1_b, g ? g->ln1_w : NULL, g ? g->ln1_b : NULL, a->norm1, a->mean1, a->rstd1};
    return (half_norm){w->ln2_w, w->ln2_b, g ? g->ln2_w : NULL, g ? g->ln2_b : NULL, a->norm2, a->mean2, a->rstd2};
}

void lc_block_half_forward(const lc_block_ctx *c, const lc_block_weights *w, const lc_block_acts *a, lc_rev_half half,
                           const float *x) {
    const half_norm n = half_norm_of(half, w, NULL, a);
    lc_layernorm_forward(n.norm, n.mean, n.rstd, x, n.w, n.b, c->B * c->T, c->C, LC_LN_EPS);
    if (half == LC_REV_ATTN) attention_sublayer(c, w, a, n.norm);
    else ffn_sublayer(c, w, a, n.norm);
}

void lc_block_half_backward(const lc_block_ctx *c, const lc_block_weights *w, lc_block_weights *g,
                            const lc_block_acts *a, lc_rev_half half, const float *x, const float *dy, float *dx,
                            const lc_block_scratch *s) {
    const int N = c->B * c->T, C = c->C;
    const half_norm n = half_norm_of(half, w, g, a);
    memset(s->d_norm, 0, sizeof(float) * (size_t)N * C);
    if (half == LC_REV_ATTN) attention_backward(c, w, g, a, n.norm, dy, s->d_norm, s);
    else ffn_backward(c, w, g, a, n.norm, dy, s->d_norm, s);
    lc_layernorm_backward(dx, n.gw, n.gb, s->d_norm, x, n.w, n.mean, n.rstd, N, C);
}

/* The weights of one head, read off the layer's own attention: values set to one-hot rows (key s: e_s in
 * every head's D columns, a chunk of D keys per pass) make each output row the weights of that chunk. */
lc_status lc_block_attention_weights(const lc_block_ctx *c0, const lc_block_weights *w, const float *x, int head,
                                     float *p) {
    lc_block_ctx c = *c0;
    c.B = 1, c.M = 0, c.mem = NULL, c.kv = NULL, c.k_panels = c.v_rows = c.r_panels = NULL, c.n_seq = 0, c.train = 0;
    c.r_rows = c.relpos ? c.T : 0;
    const long T = c.T, C = c.C, H = c.H, D = C / H;
    const int glob_on = w->qkvg_w != NULL;
    float *buf = calloc((size_t)(T * C * (glob_on ? 10 : 7) + 2 * T + 2 * H * T), sizeof(float));
    if (!buf) return lc_fail(LC_ERR_NOMEM, "attention map: out of memory for %ld rows of width %ld", T, C);
    lc_block_acts a;
    memset(&a, 0, sizeof a);
    float *q = buf;
    a.norm1 = q, q += T * C;
    a.qkv = q, q += 3 * T * C;
    a.r = q, q += T * C;
    a.att = q, q += T * C;
    c.tmp = q, q += T * C;
    a.mean1 = q, q += T;
    a.rstd1 = q, q += T;
    a.lse = q, q += H * T;
    a.lse_g = q, q += H * T;
    if (glob_on) a.qkvg = q;
    const float *in = x;
    if (c.norm == LC_NORM_PRE) {
        lc_layernorm_forward(a.norm1, a.mean1, a.rstd1, x, w->ln1_w, w->ln1_b, (int)T, (int)C, LC_LN_EPS);
        in = a.norm1;
    }
    attention_sublayer(&c, w, &a, in); /* the projections (and one ordinary pass) */
    lc_attn_relpos rel;
    memset(&rel, 0, sizeof rel);
    rel.r = a.r, rel.u = w->u, rel.v = w->v;
    for (long s0 = 0; s0 < T; s0 += D) {
        for (long s = 0; s < T; s++)
            for (long h = 0; h < H; h++)
                for (long j = 0; j < D; j++) {
                    const float one = s == s0 + j;
                    a.qkv[s * 3 * C + 2 * C + h * D + j] = one;
                    if (glob_on) a.qkvg[s * 3 * C + 2 * C + h * D + j] = one;
                }
        lc_attn_tensors t = attn_views(&c, a.qkv, a.att);
        t.rel = c.relpos ? &rel : NULL;
        t.lse = a.lse;
        lc_attn_global glob;
        if (glob_on) glob = global_views(&c, &a, NULL);
        run_groups(&c, w, NULL, &t, glob_on ? &glob : NULL);
        for (long tq = 0; tq < T; tq++)
            for (long j = 0; j < D && s0 + j < T; j++) p[tq * T + s0 + j] = a.att[tq * C + head * D + j];
    }
    free(buf);
    return LC_OK;
}
