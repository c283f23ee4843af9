/* Internal view of the vanilla encoder-decoder model (struct lc_seq2seq, include/longctx/seq2seq.h): an
 * encoder stack and a decoder stack from nn/stacks.h, the byte embeddings, the parameter table laid out
 * from one tensor list (nn/tensors.h) and the activations planned once for max_pairs pairs. */
#ifndef LC_MODELS_SEQ2SEQ_H
#define LC_MODELS_SEQ2SEQ_H

#include "longctx.h"
#include "nn/stacks.h"
#include "nn/tensors.h"

/* lc_tensor.stack: the encoder's tensors, the decoder's, and the one embedding of a tied model. */
enum { LC_S2S_ENC = 0, LC_S2S_DEC = 1, LC_S2S_SHARED = 2 };

/* Random streams: each stack's dropout (block stream + layer), the kinds' fixed seeds, the embeddings'
 * dropout (mixed with the step's seed). */
#define LC_S2S_ATTN_STREAM 0x7365713273657100ULL
enum { LC_S2S_BLOCK_STREAM = 1000, LC_S2S_DEC_BLOCK_STREAM = 3000, LC_S2S_ENC_EMBED_STREAM = 1,
       LC_S2S_DEC_EMBED_STREAM = 3 };

struct lc_seq2seq {
    lc_seq2seq_config cfg;
    int max_pairs;
    uint64_t seed;
    long step;
    int threads;
    lc_enc_stack enc;
    lc_dec_stack dec;       /* its wte and out_w are src_wte when tied */

    lc_tensor_list tensors;
    lc_table ptab, stab;
    float *params, *grads, *adam_m, *adam_v, *state;
    float *src_wte, *g_src_wte; /* the encoder's byte embedding: `wte` (tied) or `enc.wte` */

    lc_pass_work w;         /* activations, attention workspace, global positions */
    int *tok, *pos;         /* [encoder rows] symbol and position of every packed source row */
    int *src_row;           /* [max_pairs] first encoder row of pair i */
    long *keys;             /* [max_pairs] sorting scratch */
    const float *enc_out;   /* the encoder's final hidden state of the last forward */
    int n, cur_train, have_loss;
};

/* The tensor list of the model cfg describes, built without allocating the model (a checkpoint's metadata
 * is checked against the file's tensors with it before anything is allocated); free with lc_tensors_free. */
lc_status lc_seq2seq_tensor_list(const lc_seq2seq_config *cfg, lc_tensor_list *out);

/* The greedy outputs of the pairs i of d with i % ranks == rank against their targets (the share of one
 * process of a validation; lc_seq2seq_evaluate's measures): t[0] pairs, t[1] generated exactly, t[2]
 * positions right, t[3] positions compared. */
lc_status lc_seq2seq_tally(lc_seq2seq *m, const lc_pair_data *d, int rank, int ranks, double t[4]);

#endif
