/* The activation planner of the encoder-decoder models (nn/stacks.h): every saved activation and
 * scratch buffer of an encoder stack or a decoder stack, by name and shape, in one table that the owner
 * allocates once for its largest batch; each entry remembers the pointer it fills. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/stacks.h"

void lc_act_plan_init(lc_act_plan *p) {
    memset(p, 0, sizeof *p);
    lc_table_init(&p->tab);
}

void lc_act_plan_add(lc_act_plan *p, float **dst, const char *name, long rows, long cols) {
    const long shape[2] = {rows > 0 ? rows : 1, cols};
    if (p->failed) return;
    const int slot = lc_table_add(&p->tab, name, 2, shape);
    if (slot < 0) { p->failed = 1; return; }
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 128;
        lc_act_fixup *f = realloc(p->fix, (size_t)p->cap * sizeof *f);
        if (!f) { p->failed = 1; return; }
        p->fix = f;
    }
    p->fix[p->n++] = (lc_act_fixup){dst, slot};
}

void lc_act_plan_bind(lc_act_plan *p, float *acts) {
    for (int i = 0; i < p->n; i++)
        if (p->fix[i].dst) *p->fix[i].dst = acts + p->tab.slots[p->fix[i].slot].offset;
    free(p->fix);
    p->fix = NULL;
}

void lc_pass_work_free(lc_pass_work *w) {
    lc_free(w->acts);
    lc_free(w->attn_work);
    lc_table_free(&w->atab);
    free(w->global_pos);
}

void lc_act_plan_discard(lc_act_plan *p) {
    free(p->fix);
    p->fix = NULL;
    lc_table_free(&p->tab);
}

#define P(dst, rows, cols, ...) (snprintf(nm, sizeof nm, __VA_ARGS__), lc_act_plan_add(p, dst, nm, rows, cols))

/* A block's saved activations (pre-LN keeps norm2, post-LN s2; the decoder block keeps both). */
static int plan_block(lc_act_plan *p, lc_block_acts *a, const lc_block_weights *w, const lc_config *c, long N,
                      const char *pre, int l, int both) {
    const long C = c->d_model, F = c->d_ff, H = c->n_head;
    const int ln_pre = c->norm == LC_NORM_PRE;
    char nm[LC_NAME_MAX];
    P(&a->norm1, N, C, "%sblocks.%d.norm1", pre, l);
    P(&a->mean1, N, 1, "%sblocks.%d.mean1", pre, l);
    P(&a->rstd1, N, 1, "%sblocks.%d.rstd1", pre, l);
    P(&a->qkv, N, 3 * C, "%sblocks.%d.qkv", pre, l);
    P(&a->att, N, C, "%sblocks.%d.att", pre, l);
    P(&a->lse, N * H, 1, "%sblocks.%d.lse", pre, l);
    if (w->qkvg_w) {
        P(&a->qkvg, N, 3 * C, "%sblocks.%d.qkvg", pre, l);
        P(&a->lse_g, N * H, 1, "%sblocks.%d.lse_g", pre, l);
    }
    P(&a->s1, N, C, "%sblocks.%d.s1", pre, l);
    if (ln_pre || both) P(&a->norm2, N, C, "%sblocks.%d.norm2", pre, l);
    if (!ln_pre || both) P(&a->s2, N, C, "%sblocks.%d.s2", pre, l);
    P(&a->mean2, N, 1, "%sblocks.%d.mean2", pre, l);
    P(&a->rstd2, N, 1, "%sblocks.%d.rstd2", pre, l);
    P(&a->fc1, N, F, "%sblocks.%d.fc1", pre, l);
    P(&a->act, N, F, "%sblocks.%d.act", pre, l);
    return w->qkvg_w != NULL;
}

/* The final norm, the gradient and scratch rows and the block scratch of a stack of N rows. */
static void plan_common(lc_act_plan *p, const lc_config *c, long N, float **lnf, float **mean, float **rstd,
                        float **dres, float **dh, float **tmp, lc_block_scratch *s, int any_global, const char *pre,
                        int ln_f) {
    const long C = c->d_model, F = c->d_ff;
    char nm[LC_NAME_MAX];
    if (ln_f) {
        P(lnf, N, C, "%sln_f.out", pre);
        P(mean, N, 1, "%sln_f.mean", pre);
        P(rstd, N, 1, "%sln_f.rstd", pre);
    }
    P(dres, N, C, "%sd.res", pre);
    P(dh, N, C, "%sd.h", pre);
    P(tmp, N, C, "%stmp", pre);
    P(&s->d_a, N, C, "%sd.a", pre);
    P(&s->d_b, N, C, "%sd.b", pre);
    P(&s->d_tmp, N, C, "%sd.tmp", pre);
    P(&s->d_att, N, C, "%sd.att", pre);
    P(&s->d_norm, N, C, "%sd.norm", pre);
    P(&s->d_qkv, N, 3 * C, "%sd.qkv", pre);
    if (any_global) P(&s->d_qkvg, N, 3 * C, "%sd.qkvg", pre);
    P(&s->d_fc1, N, F, "%sd.fc1", pre);
    P(&s->d_act, N, F, "%sd.act", pre);
}

void lc_act_plan_enc(lc_act_plan *p, lc_enc_stack *st, const char *pre) {
    const lc_config *c = &st->cfg;
    const long N = st->max_rows, C = c->d_model;
    char nm[LC_NAME_MAX];
    for (int l = 0; l <= c->n_layer; l++) P(&st->res[l], N, C, "%sres.%d", pre, l);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) any_global |= plan_block(p, &st->bact[l], &st->blk[l], c, N, pre, l, 0);
    plan_common(p, c, N, &st->lnf, &st->lnf_mean, &st->lnf_rstd, &st->dres, &st->dh, &st->tmp, &st->scratch,
                any_global, pre, c->norm == LC_NORM_PRE);
}

void lc_act_plan_dec(lc_act_plan *p, lc_dec_stack *d, long C_enc, const char *pre) {
    const lc_config *c = &d->cfg;
    const long N = d->max_rows, C = c->d_model, H = c->n_head, N_enc = d->max_enc_rows;
    char nm[LC_NAME_MAX];
    for (int l = 0; l <= c->n_layer; l++) P(&d->res[l], N, C, "%sres.%d", pre, l);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) {
        lc_decoder_acts *a = &d->dact[l];
        any_global |= plan_block(p, &a->self, &d->blk[l].self, c, N, pre, l, 1);
        P(&a->normc, N, C, "%sblocks.%d.normc", pre, l);
        P(&a->meanc, N, 1, "%sblocks.%d.meanc", pre, l);
        P(&a->rstdc, N, 1, "%sblocks.%d.rstdc", pre, l);
        P(&a->cq, N, C, "%sblocks.%d.cq", pre, l);
        P(&a->ckv, N_enc, 2 * C, "%sblocks.%d.ckv", pre, l);
        P(&a->catt, N, C, "%sblocks.%d.catt", pre, l);
        P(&a->clse, N * H, 1, "%sblocks.%d.clse", pre, l);
        P(&a->sc, N, C, "%sblocks.%d.sc", pre, l);
    }
    plan_common(p, c, N, &d->lnf, &d->lnf_mean, &d->lnf_rstd, &d->dres, &d->dh, &d->tmp, &d->scratch.self, any_global,
                pre, 1);
    P(&d->logits, N, d->n_out, "%slogits", pre);
    P(&d->d_enc, N_enc, C_enc, "%sd.enc", pre);
    P(&d->scratch.d_cq, N, C, "%sd.cq", pre);
    P(&d->scratch.d_ckv, N_enc, 2 * C, "%sd.ckv", pre);
}
#undef P
