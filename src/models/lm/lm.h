/* Internal view of the decoder language model (struct lc_model): the parameter table and the
 * planned activation buffers. The checkpoint and training code read these fields directly. */
#ifndef LC_MODEL_LM_H
#define LC_MODEL_LM_H

#include "core/table.h"
#include "longctx.h"
#include "nn/tensors.h"
#include "nn/nn.h"

struct lc_model {
    lc_config cfg;
    int max_B;
    uint64_t seed;
    long step;      /* optimizer steps done */
    long noise_key; /* keys dropout masks (lc_model_set_noise_key) */

    /* Every parameter and kind state tensor, with its role, decay and initialisation (nn/tensors.h).
     * Parameters, gradients and AdamW moments: four allocations laid out by one table (ptab, in list
     * order); the pointers below and in blk/gblk are slices of them, filled from the list. */
    lc_tensor_list tensors;
    lc_table ptab;
    float *params, *grads, *adam_m, *adam_v;
    float *wte, *wpe, *lnf_w, *lnf_b, *head; /* head == wte when tied; wpe NULL for XL */
    float *g_wte, *g_wpe, *g_lnf_w, *g_lnf_b, *g_head;
    lc_block_weights *blk, *gblk;

    /* Activations and scratch: one allocation laid out by atab, for batches of up to max_B segments of
     * up to cap_T tokens after up to cap_M memory rows. */
    int cap_T, cap_M;
    lc_table atab;
    float *acts;
    float **res;           /* residual stream: res[0] embedding output, res[l+1] output of block l */
    lc_block_acts *bact;
    lc_block_scratch scratch;
    float *lnf, *lnf_mean, *lnf_rstd; /* final LayerNorm (pre-LN only) */
    float *logits, *dlogits, *losses, *lse, *dres, *tmp;
    /* The compute plan: the threads every pass runs with and the attention workspace sized for them,
     * decided together (lc_model_set_threads re-plans both). */
    int threads;
    float *attn_work;
    size_t attn_work_floats;
    float *rel_scratch; /* XL layers of several head groups: [2 S C] */
    float *head_in, *d_head_in; /* extra tokens: the scored rows of the final hidden state, gathered */
    int *tokens, *targets;  /* the last forward's tokens (extra tokens in front) and targets (as given) */
    int B, T, have_targets; /* shape of the last forward; T counts the extra tokens */
    int cur_train;          /* whether the last forward used dropout */
    lc_attn_layer *layers;  /* per layer: the head groups' kinds and options, parsed from cfg.attn */
    int *global_pos;        /* [cap_T]: 0, 1, 2, ... (global tokens are the first positions) */
    /* Q/K projections tied across groups of qk_share heads: the blocks' qkv_w/qkv_b point into these
     * expanded copies (and their gradients), refreshed from the parameters before every forward and
     * folded back into the parameters' gradients after every backward. */
    float *qk_exp, *g_qk_exp;
    float **qk_w, **qk_b, **v_w, **v_b; /* per owner layer: the parameters behind the expansion */
    /* Kinds' non-learned state (e.g. routing centroids): one allocation laid out by stab. */
    lc_table stab;
    float *state;
    float **group_state; /* [n_layer * LC_ATTN_MAX_GROUPS]: each head group's slice (or NULL) */

    /* Reversible layers: the two streams (y1, y2) and their gradients; with rev_store (a reference for
     * tests) every layer's inputs x1[l], x2[l] (l = 0..L, L: the outputs) and activations are kept. */
    float *rev_y1, *rev_y2, *rev_d1, *rev_d2;
    float **rev_x1, **rev_x2;
    int rev_store;

    /* Transformer-XL state. */
    float **mem;        /* per layer [max_B * cap_M, C]: memory rows of each stream (batch row) */
    int mem_rows;       /* rows currently in every layer's memory */
    int mem_B;          /* batch the memory belongs to */
    int last_M;         /* memory rows the last forward attended to (for backward) */
    float *sinus;       /* [cap_T + cap_M, C] sinusoid embeddings by distance */
    int sinus_rows, sinus_clamp; /* what sinus currently holds (-1: nothing) */
    /* Inference (forward without dropout or backward) keeps keys and values instead of hidden states:
     * kv[l] is [max_B][kv_rows][2C], the memory's rows start at kv_start; r is computed once. */
    int kv_mode;        /* 1: the memory lives in kv; 0: in mem (hidden states, training) */
    float **kv;
    int kv_rows, kv_start;
    /* Layers whose kinds read panels (LC_ATTN_CAP_PANELS; else NULL): the keys of kv[l] again as panels,
     * [max_B][H] stores of k_panel_floats (cache row r at store row r), its values as [max_B][H][kv_rows]
     * rows of D floats, and r as [H] stores of r_panel_floats; written as kv and r are (src/kernels/panel.c).
     * All in `stores`, allocated by the first inference pass (lc_model_alloc_stores), freed on resize. */
    float **k_panels, **v_rows, **r_panels;
    long k_panel_floats, r_panel_floats;
    float *stores;
    int r_ready;        /* blocks' r hold every distance for the current weights (kv mode) */
};

/* Allocates the key/value cache's second layouts (m->stores) if the model has none yet (models/lm/lm.c). */
void lc_model_alloc_stores(lc_model *m);

/* The parameter side of lc_model_create / lc_model_free (nn/params.c): list the tensors of m->cfg
 * (m->layers parsed), allocate and bind them, and initialise them from seed; release all of it. */
lc_status lc_model_build_params(lc_model *m, uint64_t seed);
void lc_model_free_params(lc_model *m);

/* Keys per sequence the attention is planned for: segment, extra tokens and (XL) memory rows. Options
 * that depend on the length (lc_attn_spec_plan) are fixed from it. */
int lc_config_attn_keys(const lc_config *c);

/* Q/K tying (cfg.qk_share): refresh the expanded projections from the parameters (before a forward) /
 * fold their gradients back into the parameters' gradients (after a backward). No-ops otherwise. */
void lc_model_expand_shared(lc_model *m);
void lc_model_fold_shared(lc_model *m);

/* Reversible models: keep every layer's activations instead of recomputing them (1), or not (0, the
 * default); re-plans the activations. */
lc_status lc_model_set_reversible_store(lc_model *m, int on);

/* The block context of `layer` for a pass of the model's current shape (models/lm/lm_forward.c). */
lc_block_ctx lc_model_block_ctx(const lc_model *m, int layer, int train, int M);

/* Seed of the randomness (dropout) used at the model's current step, for stream `what`. */
uint64_t lc_model_step_seed(const lc_model *m, uint64_t what);

#endif
