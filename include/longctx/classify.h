/* longctx public API, part of longctx.h (include that one): sequence classification on the bidirectional encoder (Long Range Arena's ListOps and Text), its training step and checkpoints. */
#ifndef LONGCTX_CLASSIFY_H
#define LONGCTX_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/lra.h"
#include "longctx/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================
 * Sequence classification (docs/guides/classify.md): a [CLS] symbol in front of the tokens, a bidirectional encoder
 * of any attention spec, and LRA's head: the [CLS] row's final hidden state (or the mean over every row,
 * [CLS] included) -> dense -> ReLU -> dense to the classes, softmax cross-entropy. [CLS] is position 0:
 * for every head group whose kind has global tokens (LC_ATTN_CAP_GLOBAL: window) it is a global token
 * (added to the group's global positions), for every other kind an ordinary position. The examples of a
 * batch are packed end to end, not padded: cost follows their real lengths.
 * ================================================================================================ */

typedef enum { LC_POOL_CLS = 0, LC_POOL_MEAN = 1, LC_POOL_MAX = 2 } lc_pool;
/* The most rows of a bracket-depth embedding (lc_classify_config.bracket_depth). */
#define LC_BRACKET_DEPTH_LIMIT 4096
/* What a classifier trains on: its labels (the default), or a masked-token objective over its own tokens
 * (self-pretraining: the encoder predicts masked tokens; `--init` of another classifier then reads it). */
typedef enum { LC_CLASSIFY_LABELS = 0, LC_CLASSIFY_MLM = 1 } lc_classify_objective;

typedef struct {
    int n_layer, d_model, n_head, d_ff; /* the encoder's shape */
    lc_norm norm;
    lc_activation activation;
    float dropout;                  /* embeddings and sublayer outputs, training only */
    char attn[LC_ATTN_SPEC_CHARS];  /* attention spec (docs/guides/attention.md; "": full) */
    int attn_share;                 /* consecutive layers sharing one attention module (0, 1: none) */
    int max_len;                    /* tokens read per example; longer ones are truncated. Positions: max_len + 1 */
    lc_tokens tokens;               /* bytes or words */
    int vocab;                      /* token ids 0..vocab-1: 256 for bytes, lc_word_vocab_size() for words */
    int n_classes;                  /* >= 2 */
    int d_hidden;                   /* the head's hidden width (0: d_model) */
    lc_pool pool;
    lc_precision precision;         /* the encoder's linear layers' products (a run setting: changes no tensor) */
    lc_classify_objective objective; /* labels, or masked tokens (lc_classifier_step then masks; the head idles) */
    int bracket_depth;              /* rows of the bracket-depth embedding (0: none; lc_classify_tokens) */
    int drop_parens;                /* words: the words "(" and ")" are not read (LRA's ListOps input pipeline) */
} lc_classify_config;

/* The defaults: 2 layers of width 128, 4 heads, d_ff 512, pre-LN, GELU, no dropout, full attention,
 * bytes (vocab 256), max_len LC_LRA_TEXT_MAX_LEN, 2 classes, d_hidden = d_model, [CLS] pooling. */
void lc_classify_config_default(lc_classify_config *c);
/* LC_ERR_ARG naming the offending field (the attention spec parsed and checked for max_len + 1 keys). */
lc_status lc_classify_config_validate(const lc_classify_config *c);
/* "cls" / "mean"; LC_ERR_ARG naming --pool otherwise. */
lc_status lc_pool_parse(const char *name, lc_pool *out);
const char *lc_pool_name(lc_pool p);
/* The embedding row of [CLS]: 257 for bytes (rows 0..255 bytes, 256 the masked-LM mask symbol, as the
 * masked-LM encoder's), LC_WORD_CLS for words. */
int lc_classify_cls_token(const lc_classify_config *c);

typedef struct lc_classifier lc_classifier;

/* A batch: n examples, example i the token ids ids[i][0 .. len[i]) (no [CLS]; ids beyond max_len are not
 * read). An empty example (len 0) is its [CLS] alone. A model with a bracket-depth embedding (bracket_depth
 * > 0) also reads each token's depth, depth[i][0 .. len[i]) (lc_classify_tokens writes them; values past
 * bracket_depth - 1 read as bracket_depth - 1, negative ones as 0); others ignore depth (may be NULL). */
typedef struct {
    int n;
    const int *const *ids;
    const int *len;
    const int *const *depth;
} lc_classify_batch;

/* The tokens of a text as classifier c reads them (c->tokens with `words`, the vocabulary of a words model,
 * NULL for bytes; the words "(" and ")" skipped when c->drop_parens): their number, of which the first
 * max_len go into ids[max_len] and, with depth (may be NULL), each one's bracket depth into depth[max_len].
 * The depth counts square brackets: a token that opens one (a word starting with '[', the byte '[') is one
 * deeper than the tokens before it, as are the tokens after it up to and including the token that closes
 * it (a word starting with ']', the byte ']'); the first token's depth is 0 unless it opens. A ListOps tree
 * [MAX 2 [MIN 3 4 ] ] reads as depths 1 1 2 2 2 2 1. */
long lc_classify_tokens(const lc_classify_config *c, const lc_word_vocab *words, const uint8_t *text, size_t len,
                        int max_len, int *ids, int *depth);

/* Build a classifier whose activations are planned for batches of up to max_batch examples and up to
 * max_rows packed rows ([CLS] included; 0: max_batch * (max_len + 1)). Parameters from `seed`. */
lc_status lc_classifier_create(const lc_classify_config *c, int max_batch, long max_rows, uint64_t seed,
                               lc_classifier **out);
void lc_classifier_free(lc_classifier *m);
const lc_classify_config *lc_classifier_config(const lc_classifier *m);
/* The precision of the encoder's linear layers' products from now on (cfg.precision, recorded by a later
 * save), as lc_model_set_precision; the classification head's two small products stay fp32. */
lc_status lc_classifier_set_precision(lc_classifier *m, lc_precision p);
size_t lc_classifier_num_params(const lc_classifier *m);
size_t lc_classifier_param_bytes(const lc_classifier *m);      /* parameters, gradients, AdamW moments */
size_t lc_classifier_activation_bytes(const lc_classifier *m); /* activations and attention workspace */
lc_status lc_classifier_set_threads(lc_classifier *m, int threads);
long lc_classifier_steps_done(const lc_classifier *m);
/* Rows a batch takes once packed: sum over examples of min(len, max_len) + 1. */
long lc_classifier_batch_rows(const lc_classifier *m, const lc_classify_batch *b);

/* Forward pass: the logits [n, n_classes] of every example (batch order). With labels (0..n_classes-1; may
 * be NULL) the summed cross-entropy in nats (loss_sum) and the number of examples whose largest logit is
 * their label (correct). `train` enables dropout (keyed by the step). */
lc_status lc_classifier_forward(lc_classifier *m, const lc_classify_batch *b, const int *labels, int train,
                                double *loss_sum, long *correct);
const float *lc_classifier_logits(const lc_classifier *m);
/* Backward of the last forward (it needs labels) for loss_sum * loss_scale; gradients ACCUMULATE. */
lc_status lc_classifier_backward(lc_classifier *m, float loss_scale);
void lc_classifier_zero_grad(lc_classifier *m);
/* One optimisation step: zero the gradients, forward with dropout, backward of the mean loss, clipping,
 * AdamW at lc_learning_rate(o, step) (weight decay on matrices and embeddings). *loss: the mean before the
 * step. LC_ERR_NUMERIC (nothing changed) when the loss or the gradient is not finite. */
lc_status lc_classifier_step(lc_classifier *m, const lc_train_options *o, const lc_classify_batch *b,
                             const int *labels, double *loss);

/* The predicted class of each of n texts (text[i][0 .. len[i]), tokenized as the model's cfg.tokens with
 * `words`, the vocabulary of a words model, NULL for bytes) into pred[n] (may be NULL), and with probs
 * (n x n_classes; may be NULL) each text's class probabilities, the softmax of its logits. The texts run in
 * batches of up to `batch` examples (at most the model's max_batch) in order of length, so that a batch's
 * examples are alike in cost; the results are in the texts' order. */
lc_status lc_classifier_classify_texts(lc_classifier *m, const lc_word_vocab *words, long n, const uint8_t *const *text,
                                       const size_t *len, int batch, int *pred, double *probs);

/* What a checkpoint records besides the model: the training options (train.*) and the run. */
typedef struct {
    lc_train_options opts;
    float valid_accuracy; /* validation accuracy of the saved weights (-1: not measured) */
    long examples;        /* training examples seen when they were saved */
    float best_accuracy;  /* the best validation accuracy of the run so far (-1: none yet) */
    long best_step;       /* the step it was measured at (0: none) */
    long train_examples;  /* examples in the training file (0: not recorded); --resume checks it */
} lc_classify_run;
void lc_classify_run_default(lc_classify_run *r);

/* The masked-token objective (objective mlm; models/classify/classify_mlm.c): BERT's rule over the token rows of the
 * packed batch ([CLS] never): each is chosen with probability 0.15 (at least one per batch that has a token),
 * and a chosen one becomes the mask symbol (80%: 256 for bytes, LC_WORD_MASK for words), a random token
 * (10%: a byte, or a word id >= LC_WORD_FIRST) or stays (10%); all deterministic in seed. The encoder's
 * final state of each chosen row is scored against every embedding row (the tied embedding as output
 * projection). loss_sum: the summed cross-entropy in nats, *masked the chosen rows, *correct those whose
 * largest logit is the original token (each may be NULL). Works for a classifier of either objective. */
lc_status lc_classifier_mlm_forward(lc_classifier *m, const lc_classify_batch *b, uint64_t seed, int train,
                                    double *loss_sum, long *masked, long *correct);
/* Backward of the last masked-token forward for loss_sum * loss_scale; gradients ACCUMULATE. */
lc_status lc_classifier_mlm_backward(lc_classifier *m, float loss_scale);
/* One optimisation step of the masked-token objective (masks from the seed and the step), as
 * lc_classifier_step: the mean loss over the chosen rows in *loss. lc_classifier_step of a classifier whose
 * objective is mlm is this step (its labels are not read). */
lc_status lc_classifier_mlm_step(lc_classifier *m, const lc_train_options *o, const lc_classify_batch *b, double *loss);

/* Checkpoints (docs/reference/checkpoint.md, "Classification models"): every tensor with its AdamW moments, metadata
 * model = classify with the configuration, the step, the seed, the run, the label set (classify.labels,
 * lc_label_set_save's text) and, for words, the vocabulary (classify.words, lc_word_vocab_save's text).
 * Written atomically like lc_checkpoint_save. labels->n must be the model's n_classes; words is required
 * for (and only for) a words model. */
lc_status lc_classifier_save(const lc_classifier *m, const lc_classify_run *run, const lc_label_set *labels,
                             const lc_word_vocab *words, const char *path);
/* Build a classifier from a checkpoint (max_batch examples, max_rows rows as in create; 0: the saved training
 * batch) and restore its parameters, moments and step; *labels receives the label set, *words (may be NULL
 * to skip it) the vocabulary of a words model (NULL for bytes), run (may be NULL) the run. A checkpoint of
 * another model (language model, HIBERT) or any fault is LC_ERR_FORMAT naming the file. */
lc_status lc_classifier_load(const char *path, int max_batch, long max_rows, lc_classifier **out, lc_classify_run *run,
                             lc_label_set *labels, lc_word_vocab **words);
/* Start the encoder from a language model's checkpoint (lc_checkpoint_save of a model vanilla, objective mlm or
 * clm): every block tensor and ln_f must match in name and shape; wpe rows are copied up to the shorter
 * of the two; the wte rows the checkpoint has of 0..256 (bytes; 256, the mask symbol, a masked LM's only) are
 * copied for bytes (a words model keeps its own embedding); [CLS], global
 * projections the checkpoint lacks (they start as a copy of the layer's qkv projection) and the head keep
 * their initialisation. LC_ERR_FORMAT naming the file and the tensor otherwise. */
lc_status lc_classifier_init_from(lc_classifier *m, const char *lm_path);
/* The same from either a masked-LM checkpoint (as above) or a classifier checkpoint (model classify, of
 * either objective: a masked-token pre-training, or a classifier trained on labels, e.g. on shorter
 * inputs): its encoder's shape (layers, width, heads, ffn, norm, activation, --share-attn) and tokens must be
 * m's, and for words its vocabulary must equal `words` (m's vocabulary; required for a words model); then
 * wte (every row), the position rows both have, the blocks and ln_f are copied by name, global projections it
 * lacks start as the layer's qkv. The head keeps its initialisation, except from a classifier trained on labels
 * with as many classes and the same head width (an earlier stage of a curriculum on the same task, whose class
 * order is the same sorted label set): its head is copied too. LC_ERR_FORMAT naming the file. */
lc_status lc_classifier_init_from_any(lc_classifier *m, const lc_word_vocab *words, const char *path);

#ifdef __cplusplus
}
#endif
#endif
