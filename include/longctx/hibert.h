/* longctx public API, part of longctx.h (include that one): HIBERT: the hierarchical document model (sentence encoder, document encoder, decoder, extraction head). */
#ifndef LONGCTX_HIBERT_H
#define LONGCTX_HIBERT_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================
 * HIBERT (docs/reference/hibert.md): a hierarchical document model. A sentence encoder (a bidirectional
 * Transformer over each sentence's bytes and an end-of-sentence symbol) turns every sentence into the
 * final hidden state of its EOS row; a document encoder (a bidirectional Transformer over those vectors
 * plus sentence positions) reads each document's sentences; an extraction head scores every sentence.
 * Sentences and documents of a batch are packed, not padded: cost follows the real byte count.
 * ================================================================================================ */

/* The sentence encoder's byte embedding has two rows after the 256 bytes: */
#define LC_HIBERT_EOS 256  /* end of sentence: the sentence's vector is read at this row */
#define LC_HIBERT_MASK 257 /* the masked-sentence byte of pre-training */

/* One stack of Transformer blocks: its shape and its attention spec (docs/guides/attention.md; "": full). */
typedef struct {
    int n_layer, d_model, n_head, d_ff;
    char attn[LC_ATTN_SPEC_CHARS];
} lc_hibert_stack;

typedef struct {
    lc_hibert_stack sent; /* sentence encoder */
    lc_hibert_stack doc;  /* document encoder (d_model may differ: the sentence vectors are then projected) */
    lc_hibert_stack dec;  /* sentence decoder of pre-training (causal self-attention with this attn spec,
                             cross-attention to the document encoder; d_model may differ from the document's) */
    int max_sent_len;     /* bytes of a sentence read: a longer sentence is truncated to its first max_sent_len
                             bytes (then EOS), so a sentence is at most max_sent_len + 1 rows */
    int max_sents;        /* sentences of a document (sentence positions); a longer document is refused */
    int sent_words;       /* longctx's, not the paper's (0: off, the paper's model): this many hash buckets of
                             word vectors (sent.words, N(0, 1) at initialisation); each sentence's vector is
                             its EOS state minus its document's mean EOS state, plus the sum of its words'
                             vectors over sqrt(its word count). A word
                             is a run of [a-z0-9] after ASCII lower-casing (the ROUGE tokens); a masked sentence
                             has none. See lc_hibert_word_bucket. */
    lc_norm norm;         /* pre-LN (with a final LayerNorm per stack) or post-LN, both stacks */
    lc_activation activation;
    float dropout;        /* on the embeddings and the sublayer outputs of both stacks (training only) */
    lc_precision precision; /* the three stacks' linear layers' products (a run setting: changes no tensor) */
    int head_features;    /* longctx's extension, not the paper's (0: off, the paper's head): the extraction head
                             also reads this many features of each sentence (lc_hibert_batch.features, e.g. its
                             position, length and centrality in its document) through head.features [1, F], zeros at
                             initialisation: logit = head.weight . doc state + head.bias + head.features . x.
                             At most LC_HIBERT_MAX_FEATURES; used by fine-tuning and scoring (lc_hibert_extract_forward),
                             not by pre-training's intruder head. */
} lc_hibert_config;

#define LC_HIBERT_MAX_FEATURES 16

/* The defaults: both encoders 2 layers of width 128, 4 heads, d_ff 512, full attention; the decoder 1 layer
 * of width 128, 4 heads, d_ff 512, full (causal) attention; sentences of up to 256 bytes, documents of up to
 * 128 sentences, pre-LN, GELU, no dropout. */
void lc_hibert_config_default(lc_hibert_config *c);
/* LC_ERR_ARG with a message naming the offending field (and the attention specs are parsed). */
lc_status lc_hibert_config_validate(const lc_hibert_config *c);

/* What the activations are planned for: the largest batch the model will see. */
typedef struct {
    int max_docs;   /* documents per batch */
    int max_sents;  /* sentences per batch, all documents together (0: max_docs * cfg.max_sents) */
    long max_bytes; /* sentence bytes per batch after truncation, EOS not counted (0: max_sents * max_sent_len);
                       pre-training: both the original sentences and the encoders' view (replaced ones) */
    long max_dec_rows; /* pre-training: sentence-decoder rows per batch, every selected sentence's bytes + 1
                          together (0: max_bytes + max_sents, any selection); under the masking rule a document
                          of n sentences selects lc_hibert_mask_count(n) of them */
    int no_decoder;    /* 1: the model is never pre-trained (fine-tuning, inference): no decoder activations are
                          planned and lc_hibert_pretrain_forward is LC_ERR_ARG (its parameters stay) */
} lc_hibert_limits;

/* A batch: n_docs documents, document j made of n_sents[j] >= 1 sentences; the sentences of all
 * documents one after another (document 0's first): sentence i is sent[i][0 .. sent_len[i]) (any bytes;
 * a sentence may be empty: it is then its EOS alone). "Batch order" below is this order. */
typedef struct {
    int n_docs;
    const int *n_sents;
    const uint8_t *const *sent;
    const int *sent_len;
    const float *features; /* cfg.head_features > 0: [sentences, head_features] in batch order, finite (required by
                              lc_hibert_extract_forward and lc_hibert_step; ignored otherwise) */
} lc_hibert_batch;

typedef struct lc_hibert lc_hibert;

/* Build a model (parameters from `seed`; activations planned once for `limits`, checked against the
 * machine's memory before anything is allocated). */
lc_status lc_hibert_create(const lc_hibert_config *cfg, const lc_hibert_limits *limits, uint64_t seed,
                           lc_hibert **out);
void lc_hibert_free(lc_hibert *m);
const lc_hibert_config *lc_hibert_get_config(const lc_hibert *m);
/* The precision of the linear layers' products of the sentence encoder, document encoder and sentence
 * decoder from now on (cfg.precision, recorded by a later save), as lc_model_set_precision; the document
 * projection, the extraction head and the decoder's output projection stay fp32. */
lc_status lc_hibert_set_precision(lc_hibert *m, lc_precision p);
size_t lc_hibert_num_params(const lc_hibert *m);
size_t lc_hibert_param_bytes(const lc_hibert *m);      /* parameters, gradients, AdamW moments */
size_t lc_hibert_activation_bytes(const lc_hibert *m); /* activations, scratch and attention workspace */
/* The compute plan's threads (as lc_model_set_threads; results do not depend on it). */
lc_status lc_hibert_set_threads(lc_hibert *m, int threads);
/* Optimizer steps done (lc_hibert_step). */
long lc_hibert_steps_done(const lc_hibert *m);

/* The hash bucket of a word (cfg.sent_words): FNV-1a (32 bits) of its bytes, modulo buckets (>= 1). The
 * words of a sentence are its maximal runs of ASCII letters and digits, lower-cased, in the bytes the
 * sentence encoder reads (after truncation to max_sent_len). */
int lc_hibert_word_bucket(const uint8_t *word, int len, int buckets);

/* Forward pass of extractive summarization over a batch: one score (a logit) per sentence. With labels
 * (0 or 1 per sentence in batch order; may be NULL) it returns the summed binary cross-entropy in nats
 * through loss_sum and the number of sentences through count. `train` enables dropout. */
lc_status lc_hibert_extract_forward(lc_hibert *m, const lc_hibert_batch *b, const uint8_t *labels, int train,
                                    double *loss_sum, long *count);
/* The scores of the last forward, [sentences] in batch order (higher: more likely in the summary). */
const float *lc_hibert_scores(const lc_hibert *m);
/* Backward of the last forward (extraction with labels, or pre-training) for the loss loss_sum *
 * loss_scale; gradients ACCUMULATE. LC_ERR_ARG when the last forward had no loss (or there was none). */
lc_status lc_hibert_backward(lc_hibert *m, float loss_scale);
void lc_hibert_zero_grad(lc_hibert *m);
/* One optimisation step on one batch, as lc_train_step: zero the gradients, forward with dropout, backward
 * of the mean loss, global-norm clipping (o->clip), AdamW at lc_learning_rate(o, step) with weight decay
 * on matrices and embeddings only. *loss (may be NULL): the mean loss before the step. LC_ERR_NUMERIC
 * (nothing changed) when the loss or the gradient is not finite. */
lc_status lc_hibert_step(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b, const uint8_t *labels,
                         double *loss);

/* Masked-sentence pre-training: what happens to each sentence of a document. */
enum {
    LC_HIBERT_UNSELECTED = 0, /* not selected: seen as it is, not regenerated */
    LC_HIBERT_MASKED,         /* selected, seen as a sentence of the same length with every byte LC_HIBERT_MASK */
    LC_HIBERT_REPLACED,       /* selected, seen as sentence source[i] of the same document (its bytes and length) */
    LC_HIBERT_KEPT            /* selected, seen as it is */
};
/* HIBERT's rule for a document of n >= 1 sentences: round(15% of n) sentences (at least one) are selected
 * uniformly without replacement; each selected one is MASKED with probability 0.8, REPLACED by a uniformly
 * chosen other sentence of the document with 0.1 (MASKED when there is none: n = 1), KEPT with 0.1.
 * Writes action[n] and source[n] (source[i] = i except for REPLACED). Deterministic in seed. */
lc_status lc_hibert_mask_sentences(int n, uint64_t seed, uint8_t *action, int *source);
/* The number of sentences that rule selects in a document of n >= 1 sentences: max(1, round(0.15 n)). */
int lc_hibert_mask_count(int n);

/* The sentence decoder's byte embedding (dec.wte) has two rows after the 256 bytes: EOS (the last target
 * of every sentence; the output projection is tied to rows 0..256) and BOS (the first input). */
#define LC_HIBERT_DEC_BOS 257

/* Masked-sentence pre-training forward over a batch of whole documents (the original sentences): document
 * j is masked by lc_hibert_mask_sentences(n_sents[j], seed + j, ...); the encoders see masked sentences as
 * LC_HIBERT_MASK symbols (same length), replaced ones as their source sentence, kept and unselected ones
 * as they are; the sentence decoder regenerates every selected sentence from its ORIGINAL bytes (truncated
 * to max_sent_len): input BOS + bytes, target bytes + EOS, with the document encoder's output at that
 * sentence's position added to every input row and cross-attention to its document's encoder rows.
 * loss_sum: the summed NLL of the targets in nats; count: the number of target bytes (EOS included);
 * bits per byte = loss_sum / count / ln 2. Either may be NULL. `train` enables dropout. lc_hibert_backward
 * then back-propagates it (into the decoder and both encoders). */
lc_status lc_hibert_pretrain_forward(lc_hibert *m, const lc_hibert_batch *b, uint64_t seed, int train,
                                     double *loss_sum, long *count);
/* One pre-training step, as lc_hibert_step: the mean NLL per target byte (nats) in *loss. */
lc_status lc_hibert_pretrain_step(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b, uint64_t seed,
                                  double *loss);

/* Sentence intruders: longctx's auxiliary pre-training objective, not the paper's (experiments/hibert-intruders/README.md,
 * "Sentence intruders"). round(rate * S / 2) pairs of sentences of different documents (S: the batch's
 * sentences) swap places: each pair's first sentence uniform among those not yet swapped, its second uniform
 * among those of other documents (fewer pairs when one document holds nearly all sentences; none with one
 * document). Writes source[S] (the sentence, in batch order, seen at each place) and intruder[S] (1: it came
 * from another document). Deterministic in seed. Every document keeps its sentence count and the batch its
 * bytes. */
lc_status lc_hibert_swap_sentences(int n_docs, const int *n_sents, double rate, uint64_t seed, int *source,
                                   uint8_t *intruder);
/* The extraction forward (lc_hibert_extract_forward) of the batch with its sentences swapped by
 * lc_hibert_swap_sentences(rate, seed), against labels 1 for the sentences in their own document and 0 for
 * the intruders: the head learns to score how well a sentence belongs to its document, in the sense
 * extraction reads its scores (a pre-trained head is a summarizer before fine-tuning). loss_sum: summed BCE
 * in nats; count: sentences. */
lc_status lc_hibert_intruder_forward(lc_hibert *m, const lc_hibert_batch *b, double rate, uint64_t seed, int train,
                                     double *loss_sum, long *count);
/* One pre-training step on the masked-sentence NLL (mean per target byte) plus `weight` times the intruders'
 * mean BCE at `rate`: the objective of lc_hibert_pretrain_forward(seed) plus lc_hibert_intruder_forward(rate)
 * (its swaps from a stream of `seed` of their own) on the same batch, each with its own view of it, computed
 * with one pass of the sentence encoder (rate or weight 0: lc_hibert_pretrain_step exactly). The model must be planned for
 * pre-training. *loss: the masked-sentence loss; *intruder_bce (may be NULL): the intruders' mean BCE before
 * the step. */
lc_status lc_hibert_pretrain_step_intruders(lc_hibert *m, const lc_train_options *o, const lc_hibert_batch *b,
                                            uint64_t seed, double rate, float weight, double *loss,
                                            double *intruder_bce);

/* ---------------------------------------------------------------- checkpoints (docs/reference/checkpoint.md) */
typedef enum { LC_HIBERT_STAGE_PRETRAIN = 0, LC_HIBERT_STAGE_FINETUNE = 1 } lc_hibert_stage;
#define LC_HIBERT_DATA_CHARS 4096

/* What a training run records beside the model, so that --resume continues it exactly. */
typedef struct {
    lc_hibert_stage stage;
    lc_train_options opts;    /* steps, batch (documents per batch), lr, ..., seed, eval_every (data, hook: unused) */
    lc_hibert_limits limits;  /* the largest batch the run planned for */
    int labels;               /* fine-tuning: the lc_label_rule of the sentence labels */
    int latin1;               /* user files that are not UTF-8 were read as Latin-1 (--encoding latin1) */
    char data[LC_HIBERT_DATA_CHARS]; /* the data sources, absolute paths, one per line */
    long data_docs, data_bytes;      /* training documents (chunks) and their bytes */
    float intruders, intruder_weight; /* pre-training: the sentence intruders' rate and weight (0: none) */
    uint64_t data_hash;              /* FNV-1a 64 over the training documents' sentences */
    float best;               /* fine-tuning: the best validation score so far (-1: none) */
    long best_step;           /* the step it was reached at */
} lc_hibert_run;

void lc_hibert_run_default(lc_hibert_run *r);
/* Save the model (parameters, AdamW moments, kind state), its configuration, the step, the seed and the
 * run record atomically (as lc_checkpoint_save: a temporary file beside PATH, fsync, rename). */
lc_status lc_hibert_save(const lc_hibert *m, const lc_hibert_run *run, const char *path);
/* Read and check a HIBERT checkpoint's metadata only (cfg, run may be NULL). A language-model checkpoint or
 * any other file is LC_ERR_FORMAT with one line naming the file. */
lc_status lc_hibert_checkpoint_info(const char *path, lc_hibert_config *cfg, lc_hibert_run *run);
/* Build the model a checkpoint describes, planned for `limits` (NULL: the run's), and restore its parameters,
 * moments, kind state and step (a resume continues bit-identically). The file's whole tensor table is
 * checked against the configuration first. run (may be NULL) receives the run record. */
lc_status lc_hibert_load(const char *path, const lc_hibert_limits *limits, lc_hibert **out, lc_hibert_run *run);
/* Copy a checkpoint's parameters and kind state into m (weights only: no moments, the step stays), for
 * starting a stage from the previous one. The checkpoint's shape (the three stacks with their attention
 * specs, max_sent_len, max_sents, norm, activation) must be m's: LC_ERR_ARG naming the first difference. */
lc_status lc_hibert_init_from(lc_hibert *m, const char *path);

#ifdef __cplusplus
}
#endif
#endif
