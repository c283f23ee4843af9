/* The hierarchical model's parameters: its tensor list (sent.*, doc.*, head.*; docs/reference/checkpoint.md),
 * laid out in one parameter table (values, gradients, AdamW moments) and one kind-state table, bound to
 * the stacks' block pointers and initialised as the LM's tensors are (role defaults, one normal stream in
 * list order, kinds from their own streams). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "models/hibert/hibert.h"

/* The list: sent.wte, sent.words (cfg.sent_words), sent.wpe, sent.blocks, sent.ln_f; doc.proj (widths differ), doc.wpe, doc.blocks,
 * doc.ln_f; head (and head.features); then the kinds' state of both stacks. */
lc_status lc_hibert_list_tensors(lc_hibert *m) {
    lc_tensor_builder b;
    lc_tensor_builder_init(&b, &m->tensors);
    const int pre = m->cfg.norm == LC_NORM_PRE;
    const long Cs = m->cfg.sent.d_model, Cd = m->cfg.doc.d_model;
    const char *prefix[LC_HIBERT_STACKS] = {"sent.", "doc."};
    for (int s = 0; s < LC_HIBERT_STACKS; s++) {
        const lc_enc_stack *st = &m->st[s];
        const long C = st->cfg.d_model;
        b.stack = s;
        if (s == LC_HIBERT_SENT)
            lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, 258, C, "sent.wte"); /* bytes, EOS, MASK */
        if (s == LC_HIBERT_SENT && m->cfg.sent_words) { /* hashed word vectors (models/hibert/hibert_words.c) */
            lc_tensor *t = lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WORDS, -1, 0, m->cfg.sent_words, C, "sent.words");
            if (t) t->init = LC_INIT_UNIT;
        }
        if (s == LC_HIBERT_DOC && Cs != Cd) {
            lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_IN_W, -1, 0, Cd, Cs, "doc.proj.weight");
            lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_IN_B, -1, 0, Cd, 0, "doc.proj.bias");
        }
        lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, st->cfg.seq_len, C, "%swpe", prefix[s]);
        lc_tensors_add_blocks(&b, &st->cfg, st->layers, prefix[s]);
        if (pre) {
            lc_tensor *g = lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, C, 0, "%sln_f.weight", prefix[s]);
            /* with word vectors, the EOS part of a sentence vector starts at 0 and grows only as the gradient
             * asks: at gain 1 its byte-led differences hide the words' overlap (experiments/hibert-plateau/README.md, "The EOS part
             * starts at zero") */
            if (g && s == LC_HIBERT_SENT && m->cfg.sent_words) g->init = LC_INIT_ZEROS;
            lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, C, 0, "%sln_f.bias", prefix[s]);
        }
    }
    b.stack = LC_HIBERT_HEAD;
    lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD, -1, 0, 1, Cd, "head.weight");
    lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_HEAD_B, -1, 0, 1, 0, "head.bias");
    if (m->cfg.head_features) { /* longctx's sentence features (lc_hibert_config.head_features), from zero */
        lc_tensor *t = lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_HEAD_FEAT, -1, 0, 1, m->cfg.head_features, "head.features");
        if (t) t->init = LC_INIT_ZEROS;
    }
    /* the sentence decoder (pre-training): after every encoder tensor, so their draws do not move */
    const lc_dec_stack *d = &m->dec.s;
    const long Cx = d->cfg.d_model;
    b.stack = LC_HIBERT_DEC;
    lc_tensor_add(&b, LC_ROLE_EMBEDDING, LC_SITE_WTE, -1, 0, 258, Cx, "dec.wte"); /* bytes, EOS, BOS */
    lc_tensor_add(&b, LC_ROLE_POSITION, LC_SITE_WPE, -1, 0, d->cfg.seq_len, Cx, "dec.wpe");
    if (Cx != Cd) {
        lc_tensor_add(&b, LC_ROLE_MATRIX, LC_SITE_IN_W, -1, 0, Cx, Cd, "dec.proj.weight");
        lc_tensor_add(&b, LC_ROLE_BIAS, LC_SITE_IN_B, -1, 0, Cx, 0, "dec.proj.bias");
    }
    lc_tensors_add_blocks(&b, &d->cfg, d->layers, "dec.");
    lc_tensors_add_cross(&b, &d->cfg, Cd, "dec.");
    if (pre) {
        lc_tensor_add(&b, LC_ROLE_NORM_GAIN, LC_SITE_LNF_W, -1, 0, Cx, 0, "dec.ln_f.weight");
        lc_tensor_add(&b, LC_ROLE_NORM_BIAS, LC_SITE_LNF_B, -1, 0, Cx, 0, "dec.ln_f.bias");
    }
    for (int s = 0; s < LC_HIBERT_STACKS; s++) {
        b.stack = s;
        lc_tensors_add_kind_state(&b, &m->st[s].cfg, m->st[s].layers, prefix[s]);
    }
    b.stack = LC_HIBERT_DEC;
    lc_tensors_add_kind_state(&b, &d->cfg, d->layers, "dec.");
    return lc_tensor_list_finish(&b);
}

/* The model pointer of tensor t for layer l (value when grad == 0, else gradient; NULL: none). */
static float **site(void *user, const lc_tensor *t, int l, int grad) {
    lc_hibert *m = user;
    lc_hibert_dec *d = &m->dec;
    if (t->stack == LC_HIBERT_DEC && t->site == LC_SITE_IN_W) return grad ? &d->g_in_w : &d->in_w;
    if (t->stack == LC_HIBERT_DEC && t->site == LC_SITE_IN_B) return grad ? &d->g_in_b : &d->in_b;
    if (t->stack == LC_HIBERT_DEC) return lc_dec_stack_site(&d->s, t, l, grad);
    switch (t->site) {
    case LC_SITE_WTE: return grad ? &m->g_wte : &m->wte;
    case LC_SITE_WORDS: return grad ? &m->g_words : &m->words;
    case LC_SITE_IN_W: return grad ? &m->g_in_w : &m->in_w;
    case LC_SITE_IN_B: return grad ? &m->g_in_b : &m->in_b;
    case LC_SITE_HEAD: return grad ? &m->g_head_w : &m->head_w;
    case LC_SITE_HEAD_B: return grad ? &m->g_head_b : &m->head_b;
    case LC_SITE_HEAD_FEAT: return grad ? &m->g_feat_w : &m->feat_w;
    default: return t->stack < LC_HIBERT_STACKS ? lc_enc_stack_site(&m->st[t->stack], t, l, grad) : NULL;
    }
}

/* The config and layers of tensor t's stack (NULL: the head's tensors). */
static const lc_config *stack_of(void *user, const lc_tensor *t, const lc_attn_layer **layers) {
    lc_hibert *m = user;
    if (t->stack < LC_HIBERT_STACKS) return *layers = m->st[t->stack].layers, &m->st[t->stack].cfg;
    if (t->stack == LC_HIBERT_DEC) return *layers = m->dec.s.layers, &m->dec.s.cfg;
    return NULL;
}

lc_status lc_hibert_build_params(lc_hibert *m) {
    lc_status st = lc_hibert_list_tensors(m);
    if (st) return st;
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    if ((st = lc_tensors_allocate(&m->tensors, &buf))) return st;
    lc_tensors_bind(&m->tensors, &buf, site, m);
    m->dec.s.out_w = m->dec.s.wte, m->dec.s.g_out_w = m->dec.s.g_wte; /* the decoder's output is tied */
    lc_tensors_init_stacks(&m->tensors, &buf, m->seed, stack_of, m); /* residual projections by their stack's depth */
    return LC_OK;
}

void lc_hibert_free_params(lc_hibert *m) {
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    lc_tensors_release(&m->tensors, &buf);
}
