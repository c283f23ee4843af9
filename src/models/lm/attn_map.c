/* lc_model_attention_map: one head's attention weights over a text (longctx attn-map), read off the
 * layer's own attention kinds by nn's lc_block_attention_weights after an ordinary forward. */
#include <stdio.h>

#include "models/lm/lm.h"

lc_status lc_model_attention_map(lc_model *m, const int *tokens, int T, int layer, int head, float *weights) {
    lc_clear_error();
    const lc_config *c = &m->cfg;
    if (layer < 0 || layer >= c->n_layer)
        return lc_fail(LC_ERR_ARG, "attention map: layer %d does not exist (the model has layers 0..%d)", layer,
                       c->n_layer - 1);
    if (head < 0 || head >= c->n_head)
        return lc_fail(LC_ERR_ARG, "attention map: head %d does not exist (the model has heads 0..%d)", head,
                       c->n_head - 1);
    if (c->reversible)
        return lc_fail(LC_ERR_ARG, "attention map: reversible layers keep no layer inputs to read the weights from");
    if (!weights) return lc_fail(LC_ERR_ARG, "attention map: no output buffer");
    lc_model_reset_memory(m);
    lc_status st = lc_model_forward(m, tokens, NULL, 1, T, 0, NULL, NULL);
    if (!st) {
        lc_block_ctx ctx = lc_model_block_ctx(m, layer, 0, 0);
        ctx.B = 1, ctx.T = m->T; /* the extra tokens too */
        st = lc_block_attention_weights(&ctx, &m->blk[layer], m->res[layer], head, weights);
    }
    lc_model_reset_memory(m);
    return st;
}
