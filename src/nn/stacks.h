/* The stacks of blocks the encoder-decoder models share (HIBERT's models/hibert/hibert*.c, the vanilla
 * encoder-decoder's models/seq2seq/seq2seq*.c): a bidirectional encoder stack over packed sequences, a decoder stack
 * (causal decoder blocks over packed target sequences cross-attending to encoder rows, final LayerNorm,
 * output projection, NLL of the targets), the activation planner that lays both out in one table, the
 * packed embedding rows and the longest-first sort (the update is train/optimizer.h's lc_tensors_update).
 * Owners fill the packing (rows, seq_len, tokens, pairs) and call the passes with the step's environment. */
#ifndef LC_NN_STACKS_H
#define LC_NN_STACKS_H

#include "core/table.h"
#include "longctx.h"
#include "nn/tensors.h"
#include "nn/nn.h"

/* What a pass needs from its model: the step's seed (dropout streams derive from it), the global
 * positions 0, 1, 2, ..., the attention workspace and the threads. */
typedef struct {
    uint64_t step_seed; /* lc_seed_mix(model seed, optimizer steps done) */
    const int *global_pos;
    float *attn_work;
    size_t attn_work_floats;
    int threads;
} lc_pass_env;

/* LC_OK for fp32 and bf16, else LC_ERR_ARG "precision must be fp32 or bf16" (nn/config.c): the one check of
 * every config's precision and of the models' set_precision. */
lc_status lc_precision_check(lc_precision p);
/* A stack's shape (lc_hibert_stack: layers, width, heads, feed-forward, attention spec; "" is full) as a
 * vanilla config over sequences of up to max_len rows: LC_OBJECTIVE_MLM bidirectional, CLM causal. */
lc_config lc_stack_config(const lc_hibert_stack *s, lc_norm norm, lc_activation activation, float dropout,
                          int max_len, lc_objective objective);
/* That config's lc_config_validate (the spec's termination first), the message prefixed with `what`. */
lc_status lc_stack_validate(const lc_hibert_stack *s, const char *what, lc_norm norm, lc_activation activation,
                            float dropout, int max_len, lc_objective objective);

/* The layers of config c's attention spec for sequences of up to max_len rows (lc_attn_spec_build, then
 * each layer's global positions checked); LC_ERR_ARG with a message naming `what`. */
lc_status lc_stack_layers(const lc_config *c, const char *what, int max_len, lc_attn_layer *layers);

/* What a stack's block contexts are made of (both stacks below have these fields). */
typedef struct {
    const lc_config *cfg;
    const lc_attn_layer *layers;
    float *const *group_state;
    float *tmp;
    int rows, n_seq;
    const int *seq_len;
    uint64_t block_stream, attn_stream;
    int causal;
} lc_stack_view;
/* Layer l's block context for a pass over the view's packed rows. */
lc_block_ctx lc_stack_block_ctx(const lc_stack_view *v, const lc_pass_env *e, int l, int train);

/* One bidirectional stack of blocks over packed sequences. */
typedef struct {
    lc_config cfg;         /* its shape as a vanilla MLM config (tensor list; seq_len = the longest sequence) */
    const char *what;      /* its name in messages ("sentence encoder") */
    uint64_t block_stream; /* layer l's dropout stream: lc_seed_mix(step_seed, block_stream + l) */
    uint64_t attn_stream;  /* layer l's kinds' fixed seed: lc_seed_mix(attn_stream, l) */
    lc_attn_layer *layers; /* [n_layer] head groups, parsed from the stack's spec */
    lc_block_weights *blk, *gblk;
    float **group_state;   /* [n_layer * LC_ATTN_MAX_GROUPS] kinds' state */
    float *wpe, *g_wpe;    /* positions inside a sequence */
    float *lnf_w, *lnf_b, *g_lnf_w, *g_lnf_b; /* final LayerNorm (pre-LN) */
    int max_rows, max_len, max_seqs; /* planned: rows of a batch, rows of one sequence, sequences */
    /* activations */
    float **res; /* [n_layer + 1][max_rows, C]: res[0] the input, res[l+1] block l's output */
    lc_block_acts *bact;
    lc_block_scratch scratch;
    float *lnf, *lnf_mean, *lnf_rstd; /* pre-LN: the final LayerNorm */
    float *dres, *dh, *tmp;           /* [max_rows, C] */
    /* the last forward's packing: n_seq sequences (equal lengths adjacent), rows in all */
    int n_seq, rows;
    int *seq_len; /* [max_seqs] */
} lc_enc_stack;

/* Sets up st for config c (shape, norm, activation, dropout, attn spec) over at most max_rows rows in
 * at most max_seqs sequences of at most max_len rows: parses the spec and allocates the per-layer
 * arrays (weights are bound later from the tensor list, activations by lc_act_plan_enc). */
lc_status lc_enc_stack_init(lc_enc_stack *st, const lc_config *c, const char *what, int max_len, int max_rows,
                            int max_seqs);
void lc_enc_stack_free(lc_enc_stack *st);
/* Attention workspace floats that layers[0 .. c->n_layer) need for any packing of at most max_rows rows in
 * at most max_seqs sequences (0: no limit) of at most max_len rows (causal or not) with `threads` threads;
 * the stack's own below. */
size_t lc_stack_workspace(const lc_config *c, const lc_attn_layer *layers, int max_rows, int max_len, int max_seqs,
                          int causal, int threads);
size_t lc_enc_stack_workspace(const lc_enc_stack *st, int threads);
/* The run-time checks of every layer against the current packing (message names st->what). */
lc_status lc_enc_stack_check(const lc_enc_stack *st, const lc_pass_env *e);
/* The blocks over st->rows rows (input in res[0]); returns the final hidden state. Backward: from
 * d loss / d final hidden state in dh to d loss / d input in dres, weight gradients accumulated. */
const float *lc_enc_stack_forward(lc_enc_stack *st, const lc_pass_env *e, int train);
void lc_enc_stack_backward(lc_enc_stack *st, const lc_pass_env *e, int train);
/* The stack's pointer for tensor t at layer l (value, or gradient when grad): positions, final norm, kind
 * state, block fields; NULL for a site that is not the stack's. */
float **lc_enc_stack_site(lc_enc_stack *st, const lc_tensor *t, int l, int grad);

/* The decoder stack: decoder blocks (nn/decoder.c) over packed target sequences, each cross-attending
 * to a range of encoder rows; input row = wte[tok] + wpe[pos] (+ a caller's vector per sequence); final
 * LayerNorm (pre-LN); logits = hidden out_w[0 .. n_out)^T; the NLL of the targets. */
typedef struct {
    lc_config cfg;         /* its shape as a vanilla CLM config (seq_len = the longest sequence) */
    const char *what;
    uint64_t block_stream, attn_stream, embed_stream; /* as lc_enc_stack's; embed: the input dropout */
    lc_attn_layer *layers;
    lc_decoder_weights *blk, *gblk;
    float **group_state;
    float *wte, *g_wte;       /* input embedding [n_in, C] */
    float *wpe, *g_wpe;       /* [max_len, C] */
    float *out_w, *g_out_w;   /* output projection [>= n_out, C] (may be wte: tied) */
    float *lnf_w, *lnf_b, *g_lnf_w, *g_lnf_b;
    int n_out;                /* output symbols */
    int max_rows, max_len, max_seqs, max_enc_rows;
    /* activations */
    float **res;
    lc_decoder_acts *dact;
    lc_decoder_scratch scratch;
    float *lnf, *lnf_mean, *lnf_rstd, *dres, *dh, *tmp;
    float *logits;            /* [max_rows, n_out]; after backward: their gradient */
    float *d_enc;             /* [max_enc_rows, C_enc] d loss / d encoder rows */
    float *cross_work;
    size_t cross_work_floats;
    /* this pass: the encoder rows and the packing (filled by the owner) */
    const float *enc;
    int N_enc, C_enc;
    int *tok, *pos, *target, *row_seq; /* [max_rows] */
    int *item;                /* [max_seqs] the owner's index of each packed sequence */
    int *q_start, *q_len, *kv_start, *kv_len, *seq_len; /* [max_seqs] */
    int n_seq, rows;
} lc_dec_stack;

lc_status lc_dec_stack_init(lc_dec_stack *d, const lc_config *c, const char *what, int n_out, int max_len,
                            int max_rows, int max_seqs, int max_enc_rows);
void lc_dec_stack_free(lc_dec_stack *d);
size_t lc_dec_stack_workspace(const lc_dec_stack *d, int threads);
/* (Re)allocates the cross-attention workspace for pairs of at most max_kv_len encoder rows. */
lc_status lc_dec_stack_plan_cross(lc_dec_stack *d, int max_kv_len, int threads);
lc_status lc_dec_stack_check(const lc_dec_stack *d, const lc_pass_env *e);
/* res[0] = dropout(wte[tok] + wpe[pos] + seq_vec[row_seq] (seq_vec [n_seq, C] may be NULL)). */
void lc_dec_stack_embed(lc_dec_stack *d, const lc_pass_env *e, const float *seq_vec, int train);
/* Blocks, final norm, logits; returns the summed NLL (nats) of the rows' targets. */
double lc_dec_stack_forward(lc_dec_stack *d, const lc_pass_env *e, int train);
/* The final hidden state of the last forward. */
const float *lc_dec_stack_hidden(const lc_dec_stack *d);
/* Backward of loss_scale * the NLL: weight gradients, d_enc (zeroed first, N_enc rows), and into the
 * embedding: g_wte, g_wpe and d_seq_vec ([n_seq, C], zeroed first; may be NULL). */
void lc_dec_stack_backward(lc_dec_stack *d, const lc_pass_env *e, float loss_scale, int train, float *d_seq_vec);
/* As lc_enc_stack_site, plus the embedding, output and cross-attention sites. */
float **lc_dec_stack_site(lc_dec_stack *d, const lc_tensor *t, int l, int grad);

/* Activations of the stacks laid out in one table: entries are planned with the pointer they fill,
 * then bound once the table is allocated. */
typedef struct {
    float **dst;
    int slot;
} lc_act_fixup;
typedef struct {
    lc_table tab;
    lc_act_fixup *fix;
    int n, cap, failed;
} lc_act_plan;
void lc_act_plan_init(lc_act_plan *p);
void lc_act_plan_add(lc_act_plan *p, float **dst, const char *name, long rows, long cols);
void lc_act_plan_enc(lc_act_plan *p, lc_enc_stack *st, const char *prefix);
void lc_act_plan_dec(lc_act_plan *p, lc_dec_stack *d, long C_enc, const char *prefix);
/* Points every planned pointer into acts (allocated from p->tab); frees the fixups. */
void lc_act_plan_bind(lc_act_plan *p, float *acts);
/* Frees the fixups and the table (planning failed or was abandoned). */
void lc_act_plan_discard(lc_act_plan *p);

/* What an encoder-decoder model's passes run in, planned once for its largest batch: the activations (laid
 * out by atab), the attention workspace and the positions 0, 1, 2, ... that name global tokens. */
typedef struct {
    lc_table atab;
    float *acts;
    float *attn_work;
    size_t attn_work_floats;
    int *global_pos;
} lc_pass_work;
void lc_pass_work_free(lc_pass_work *w);

/* out[r] = wte[tok[r]] + wpe[pos[r]] for rows r < rows of width C; backward accumulates d into both
 * tables (serially: a fixed order). */
void lc_embed_rows(float *out, const float *wte, const float *wpe, const int *tok, const int *pos, int rows, int C);
void lc_embed_rows_backward(float *g_wte, float *g_wpe, const float *d, const int *tok, const int *pos, int rows,
                            int C);
/* out[r] += table[idx[r]] for rows r (an extra embedding, as the classifier's bracket depth), and its
 * backward: g_table[idx[r]] += d[r]. */
void lc_embed_add_rows(float *out, const float *table, const int *idx, int rows, int C);
void lc_embed_add_rows_backward(float *g_table, const float *d, const int *idx, int rows, int C);
/* Initialises every tensor of list l laid out in b, as the LM's: one normal stream seeded by seed in list
 * order, kinds from their own streams keyed by (stack, layer, head group); stack_of names the config and
 * layers of the tensor's stack (NULL for a tensor of no stack of blocks). */
typedef const lc_config *(*lc_stack_of_fn)(void *user, const lc_tensor *t, const lc_attn_layer **layers);
void lc_tensors_init_stacks(const lc_tensor_list *l, const lc_tensor_buffers *b, uint64_t seed, lc_stack_of_fn stack_of,
                            void *user);
/* A workspace of at least `need` floats in *work (its size in *floats): kept when big enough, else
 * replaced after checking that it fits in memory (messages name `what`). */
lc_status lc_workspace_ensure(float **work, size_t *floats, size_t need, const char *what);
/* An owner's set_threads: *threads = want (<= 0 or more than the machine has: all), then plan(owner)
 * re-plans the workspaces; on failure the old count is restored. */
lc_status lc_replan_threads(int *threads, int want, lc_status (*plan)(void *), void *owner);
/* The elements of every slot of a table (a parameter count, padding excluded). */
size_t lc_slots_count(const lc_table *t);
/* Sorts keys ((longest first) << 32 | index) ascending. */
void lc_sort_keys(long *keys, int n);

#endif
