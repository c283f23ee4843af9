/* Internal view of the sequence classifier (struct lc_classifier): one bidirectional stack of blocks over
 * packed examples ([CLS] first in each), LRA's head, the parameter table laid out from one tensor list
 * (nn/tensors.h) and the activations planned once for the largest batch. */
#ifndef LC_MODELS_CLASSIFY_H
#define LC_MODELS_CLASSIFY_H

#include "longctx.h"
#include "nn/stacks.h"

struct lc_classifier {
    lc_classify_config cfg;
    int max_batch;
    uint64_t seed;
    long step;
    int threads;
    lc_enc_stack st;              /* the encoder: cfg as a vanilla MLM config, seq_len = max_len + 1 */

    lc_tensor_list tensors;
    lc_table ptab, stab;
    float *params, *grads, *adam_m, *adam_v, *state;
    float *wte, *g_wte;           /* [emb_rows, C] */
    float *w1, *b1, *g_w1, *g_b1; /* cls.dense [Dh, C], [Dh] */
    float *w2, *b2, *g_w2, *g_b2; /* cls.out [K, Dh], [K] */

    lc_table atab;
    float *acts;
    float *attn_work;
    size_t attn_work_floats;
    int *global_pos;              /* 0, 1, 2, ... */
    int *tok, *pos;               /* [max_rows] */
    int *depth;                   /* [max_rows] bracket depth of each row (cfg.bracket_depth > 0), [CLS] 0 */
    float *wde, *g_wde;           /* [bracket_depth, C] the bracket-depth embedding (NULL: none) */
    int *order;                   /* [max_batch] packed sequence k is example order[k] */
    int *row0;                    /* [max_batch] first row of example i (batch order) */
    int *labels;                  /* [max_batch] the last forward's labels */
    int *pool_arg;                /* [max_batch, C] max pooling: the row (from the example's first) of each maximum */
    float *pooled, *hpre, *hid, *logits, *lse, *losses; /* [B, C], [B, Dh] x2, [B, K], [B], [B] */
    float *d_pooled, *d_hpre, *d_hid, *d_logits;
    int n, have_labels, cur_train;
    struct lc_classify_mlm *mlm;  /* the masked-token objective's buffers (models/classify/classify_mlm.c; NULL until used) */
};

/* The environment of this step's passes (nn/stacks.h). */
lc_pass_env lc_classify_env(const lc_classifier *m);

/* models/classify/classify_forward.c, for the masked-token objective: check and pack a batch into m->tok / m->pos
 * (rows with pos 0 are [CLS]), the encoder's forward from m->tok (its final hidden state, [rows, C]) and its
 * backward from m->st.dh to every encoder parameter. */
lc_status lc_classify_pack_batch(lc_classifier *m, const lc_classify_batch *b);
const float *lc_classify_encode(lc_classifier *m, const lc_pass_env *e, int train);
void lc_classify_encode_backward(lc_classifier *m, const lc_pass_env *e);
/* models/classify/classify_mlm.c: lc_classifier_mlm_forward with the masks drawn by row keys: example i's row at
 * position t (0: [CLS]) has key key0[i] + t (key0 NULL: the packed row's index, as lc_classifier_mlm_forward).
 * Processes that share a batch pass each example's first row in the packing of the whole batch
 * (lc_classify_row_keys), so that their masks are those of one process running it all. */
lc_status lc_classify_mlm_forward_keyed(lc_classifier *m, const lc_classify_batch *b, uint64_t seed, const long *key0,
                                        int train, double *loss_sum, long *masked, long *correct);
/* The first packed row of each example of a batch of n examples of lengths len[n] (tokens, before clipping
 * to max_len) into key0[n]: the rows lc_classify_pack_batch gives them (longest first, ties by index);
 * scratch: n longs. */
void lc_classify_row_keys(const lc_classifier *m, const int *len, int n, long *scratch, long *key0);
/* models/classify/classify_mlm.c: frees m->mlm. */
void lc_classify_mlm_free(lc_classifier *m);

/* The embedding rows: 258 for bytes (bytes, mask symbol, [CLS]), vocab for words. */
int lc_classify_emb_rows(const lc_classify_config *c);
/* The encoder's shape as a vanilla MLM lc_config (tensor list, block contexts). */
lc_config lc_classify_encoder_config(const lc_classify_config *c);
/* The encoder's layers from its spec with the [CLS] rule applied (position 0 global for every group of a
 * kind with LC_ATTN_CAP_GLOBAL); 0 or -1 with a message in err. */
int lc_classify_layers(const lc_classify_config *c, lc_attn_layer *layers, char *err, size_t errlen);
/* The tensor list of config c (layers from lc_classify_layers). */
lc_status lc_classify_tensors(const lc_classify_config *c, const lc_attn_layer *layers, lc_tensor_list *out);

/* models/classify/classify_texts.c: examples as texts, text i is text[i][0 .. len[i]). */
typedef struct {
    long n;
    const uint8_t *const *text;
    const size_t *len;
} lc_classify_texts;
/* A batch's tokens: ids and depth [batch, max_len], len [batch], ptr and dptr [batch] (rows of ids, depth);
 * depth and dptr are NULL for a model without the bracket-depth embedding. */
typedef struct {
    int *ids, *depth, *len;
    const int **ptr, **dptr;
} lc_classify_buffers;
lc_status lc_classify_buffers_alloc(lc_classify_buffers *b, int batch, const lc_classify_config *c);
void lc_classify_buffers_free(lc_classify_buffers *b);
/* Indexes idx[0 .. n) (NULL: 0 .. n-1) into keys[n], ordered by len[index] (stable: ties by index). */
void lc_classify_sort_by_length(long *keys, const long *idx, long n, const size_t *len);
/* Texts idx[0 .. n) tokenized into b (n <= its batch; allocated for m's config, so it has depth rows exactly when m
 * reads bracket depths, and those are filled): the batch to run. */
lc_classify_batch lc_classify_tokenize(const lc_classifier *m, const lc_word_vocab *v, const lc_classify_texts *t,
                                       const long *idx, int n, lc_classify_buffers *b);
/* lc_classifier_classify_texts over the batches part, part + parts, ... of the texts in order of length
 * (parts processes share a set: each runs its batches; 0, 1 runs all), with labels (-1: a label the model
 * lacks, counted wrong) the number of correct predictions in *correct; pred and probs are written for the
 * batches run. */
lc_status lc_classify_texts_run(lc_classifier *m, const lc_word_vocab *v, const lc_classify_texts *t, int batch,
                                int part, int parts, int *pred, const int *labels, long *correct, double *probs);

/* models/classify/checkpoint_classify.c: metadata key i of a classifier checkpoint (NULL past the end), for the
 * documentation check. */
const char *lc_classify_meta_key(int i);

#endif
