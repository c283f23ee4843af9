/* longctx public API, part of longctx.h (include that one): the vanilla encoder-decoder Transformer over
 * bytes (Vaswani et al. 2017), the model HIBERT's sentence decoder is built from (docs/guides/seq2seq.md). */
#ifndef LONGCTX_SEQ2SEQ_H
#define LONGCTX_SEQ2SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/hibert.h"
#include "longctx/lra.h"
#include "longctx/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================
 * An encoder (bidirectional blocks over the source bytes then EOS, learned positions) and a decoder
 * (causal self-attention, cross-attention to its source's encoder rows, feed-forward) that reads BOS +
 * the target bytes and predicts the target bytes + EOS. Pairs of a batch are packed, not padded.
 * ================================================================================================ */

/* Symbols after the 256 bytes: */
#define LC_SEQ2SEQ_EOS 256 /* ends a source (encoder input) and a target (the last prediction) */
#define LC_SEQ2SEQ_BOS 257 /* the decoder's first input */

/* One stack: layers, width, heads, feed-forward width and attention spec (docs/guides/attention.md; "": full;
 * the decoder's self-attention is causal). */
typedef lc_hibert_stack lc_seq2seq_stack;

typedef struct {
    lc_seq2seq_stack enc, dec; /* widths may differ unless tied */
    int max_src_len;           /* source bytes (the encoder reads max_src_len + 1 rows with EOS) */
    int max_tgt_len;           /* target bytes (the decoder reads max_tgt_len + 1 rows with BOS) */
    lc_norm norm;              /* pre-LN (with a final LayerNorm per stack) or post-LN, both stacks */
    lc_activation activation;
    float dropout;             /* embeddings and sublayer outputs (training only) */
    int tied;                  /* 1: one byte embedding `wte` [258, C] for the source, the decoder input and
                                  the output projection (enc.d_model == dec.d_model); 0: enc.wte, dec.wte
                                  and dec.head.weight of their own */
} lc_seq2seq_config;

/* Both stacks 2 layers of width 128, 4 heads, d_ff 512, full attention; 64-byte sources and targets;
 * pre-LN, GELU, no dropout, tied. */
void lc_seq2seq_config_default(lc_seq2seq_config *c);
/* LC_ERR_ARG with a message naming the offending field (the attention specs are parsed). */
lc_status lc_seq2seq_config_validate(const lc_seq2seq_config *c);

/* n >= 1 pairs: source i is src[i][0 .. src_len[i]), target i is tgt[i][0 .. tgt_len[i]) (either may
 * be empty; longer than the config's maximum is refused). tgt and tgt_len are not read by generate. */
typedef struct {
    int n;
    const uint8_t *const *src;
    const int *src_len;
    const uint8_t *const *tgt;
    const int *tgt_len;
} lc_seq2seq_batch;

typedef struct lc_seq2seq lc_seq2seq;

/* Build a model for batches of at most max_pairs pairs (activations planned once for it); parameters from
 * seed. */
lc_status lc_seq2seq_create(const lc_seq2seq_config *cfg, int max_pairs, uint64_t seed, lc_seq2seq **out);
void lc_seq2seq_free(lc_seq2seq *m);
const lc_seq2seq_config *lc_seq2seq_get_config(const lc_seq2seq *m);
size_t lc_seq2seq_num_params(const lc_seq2seq *m);
lc_status lc_seq2seq_set_threads(lc_seq2seq *m, int threads);
long lc_seq2seq_steps_done(const lc_seq2seq *m);

/* Teacher-forced forward: loss_sum = the summed NLL (nats) of every target byte and each target's EOS,
 * count = their number (either may be NULL). `train` enables dropout. */
lc_status lc_seq2seq_forward(lc_seq2seq *m, const lc_seq2seq_batch *b, int train, double *loss_sum, long *count);
/* Backward of loss_scale * the last forward's loss_sum; gradients ACCUMULATE. LC_ERR_ARG without a
 * forward to go back through. */
lc_status lc_seq2seq_backward(lc_seq2seq *m, float loss_scale);
void lc_seq2seq_zero_grad(lc_seq2seq *m);
/* One optimisation step, as lc_hibert_step: zero the gradients, forward with dropout, backward of the
 * mean NLL per target symbol, clipping, AdamW. *loss (may be NULL): that mean before the step. */
lc_status lc_seq2seq_step(lc_seq2seq *m, const lc_train_options *o, const lc_seq2seq_batch *b, double *loss);

/* Greedy decoding of every source of b (its targets are ignored): from BOS, the most likely next symbol
 * (the lowest on a tie) until EOS or max_len bytes (1 .. max_tgt_len). Writes pair i's bytes to
 * out + i * max_len and their number to out_len[i] (EOS is not written). */
lc_status lc_seq2seq_generate(lc_seq2seq *m, const lc_seq2seq_batch *b, int max_len, uint8_t *out, int *out_len);

/* ================================================================================================
 * Checkpoints, scoring and generation over sets of pairs (docs/seq2seq.md; training runs: `longctx train
 * --task seq2seq`, src/models/seq2seq/seq2seq_fit.h).
 * ================================================================================================ */

/* What a checkpoint records beside the weights, the AdamW moments, the step and the seed. */
typedef struct {
    lc_train_options opts;          /* the schedule and optimizer of the run */
    float exact_match, char_accuracy; /* validation scores of the saved state (-1: not measured at its step) */
    float best_score;               /* the best validation score of the run so far, exact_match +
                                       char_accuracy / (pairs + 1) (-1: none yet) */
    long best_step;                 /* its step */
    float best_exact_match;         /* the exact match of that validation (-1: none yet) */
    long train_pairs;               /* pairs of the training file (a resume checks it) */
} lc_seq2seq_run;
void lc_seq2seq_run_default(lc_seq2seq_run *r);

/* A safetensors checkpoint (metadata model = seq2seq, docs/checkpoint.md): weights, AdamW moments, kind
 * state, the config, step, seed and run. Written atomically; weights holding NaN are refused. */
lc_status lc_seq2seq_save(const lc_seq2seq *m, const lc_seq2seq_run *run, const char *path);
/* The model of a seq2seq checkpoint, planned for batches of max_pairs pairs (0: the saved training batch);
 * *run (may be NULL) its record. A file without moments (longctx export) loads with zero moments. A
 * checkpoint of another family is refused with one line naming it; metadata is checked against the
 * file's tensor table before anything is allocated. */
lc_status lc_seq2seq_load(const char *path, int max_pairs, lc_seq2seq **out, lc_seq2seq_run *run);

/* Greedy outputs of n sources (src[i], src_len[i] bytes; at most max_src_len each) in batches of up to the
 * model's max_pairs: output i is out[i * max_tgt_len ..], out_len[i] bytes (max_tgt_len at most). */
lc_status lc_seq2seq_generate_set(lc_seq2seq *m, long n, const uint8_t *const *src, const size_t *src_len,
                                  uint8_t *out, int *out_len);
/* The greedy outputs of d's sources against its targets: exact_match = the share of pairs generated
 * exactly; char_accuracy = over every pair, the positions of target + EOS whose symbol the output has at
 * the same position, out of the longer of output + EOS and target + EOS (an output that stops early or
 * runs on loses the positions it lacks or adds). Either pointer may be NULL. */
lc_status lc_seq2seq_evaluate(lc_seq2seq *m, const lc_pair_data *d, double *exact_match, double *char_accuracy);

/* Flat calls for bindings (no struct; python/longctx/seq2seq.py): */
/* The model's longest source and target in bytes (either pointer may be NULL). */
void lc_seq2seq_max_lengths(const lc_seq2seq *m, int *max_src_len, int *max_tgt_len);
/* Greedy generation from one source of src_len bytes: out[max_tgt_len] receives *out_len bytes. */
lc_status lc_seq2seq_generate_one(lc_seq2seq *m, const uint8_t *src, int src_len, uint8_t *out, int *out_len);

#ifdef __cplusplus
}
#endif
#endif
