/* longctx binding API: a small, stable set of calls for language bindings (Python's ctypes, Rust, Julia)
 * that never need to mirror a C struct. Configurations and training options are opaque handles read and
 * written field by field, by name, with values as strings; a model's tensors are enumerated (name, shape,
 * pointer); logits are copied into the caller's buffer; text is generated one byte per call; training
 * reports progress as an array of doubles whose names are listed here. Every call that returns an
 * lc_status clears lc_last_error() first and sets it on failure, as the rest of the library does.
 * The Python package python/longctx is built on this header alone (docs/guides/python.md).
 * Include it after, or instead of, longctx.h: it includes the parts it needs. */
#ifndef LONGCTX_FLAT_H
#define LONGCTX_FLAT_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/classify.h"
#include "longctx/hibert.h"
#include "longctx/model.h"
#include "longctx/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of a named value, for a binding to convert the string it reads. */
typedef enum {
    LC_VALUE_INT = 0,   /* a decimal integer (int, long, or uint64_t for a seed) */
    LC_VALUE_FLOAT = 1, /* a decimal floating-point number */
    LC_VALUE_BOOL = 2,  /* "0" or "1" (set also takes true/false, yes/no, on/off) */
    LC_VALUE_STRING = 3 /* text: an attention spec, or the name of an enumerated value (norm "pre"/"post",
                           activation "gelu"/"relu", model "xl"/"vanilla", objective "clm"/"mlm") */
} lc_value_kind;

/* ---------------------------------------------------------------- configuration by name */
/* A new configuration holding the defaults (lc_config_default: preset "small"); NULL when out of memory.
 * Free it with lc_config_free. Any lc_config * may be passed to the calls below. */
lc_config *lc_config_new(void);
void lc_config_free(lc_config *cfg);
/* Name of the i-th field of lc_config (i = 0, 1, ...; the struct's field names: "vocab", "n_layer",
 * "d_model", ... "extra_tokens"), with its kind through *kind (may be NULL); NULL when i is past the end. */
const char *lc_config_key(int i, lc_value_kind *kind);
/* Set one field from text. key is a field name or the CLI flag that sets it, with or without the
 * leading "--" and with '-' or '_' ("layers", "--seg-len", "seq_len", "share_qk", ...); "untied" sets
 * tied to the opposite of its value. Nothing else changes (the CLI's derived defaults, e.g. mem_len =
 * seq_len for xl, are the caller's to apply). LC_ERR_ARG naming the key for an unknown key or a value
 * that does not parse; the result is not validated (lc_config_validate does that). */
lc_status lc_config_set_str(lc_config *cfg, const char *key, const char *value);
/* Write one field as text into buf[cap] (always terminated); LC_ERR_ARG for an unknown key or a buffer
 * too small (LC_ATTN_SPEC_CHARS always suffices). Same keys as lc_config_set_str. */
lc_status lc_config_get_str(const lc_config *cfg, const char *key, char *buf, size_t cap);
/* The number i of a config key (a field name or its CLI flag's name, as lc_config_set_str takes them), or -1. */
int lc_config_key_index(const char *key);
/* More about config key i: the CLI flag that sets it ("--layers"; NULL: none), its value names ("pre|post", in
 * the order of the enum; NULL: not a choice), the flag's one-line help (NULL: no flag), and whether it belongs
 * to Transformer-XL models only. Any output pointer may be NULL; LC_ERR_ARG past the end. */
lc_status lc_config_key_about(int i, const char **flag, const char **choices, const char **help, int *xl_only);
/* The values `longctx train` derives from the flags given, for the keys given (bit i: key i was set, as
 * lc_config_key_index numbers them): objective "mlm" makes the model vanilla unless "model" was given; an xl
 * model's mem_len is seq_len unless given, a vanilla model's 0; an XL-only key given non-zero for a vanilla
 * model is LC_ERR_ARG naming it. Validate afterwards (lc_config_validate). */
lc_status lc_config_derive(lc_config *cfg, uint64_t given);

/* ---------------------------------------------------------------- training options by name */
/* New options holding lc_train_options_default; NULL when out of memory. Free with lc_train_options_free. */
lc_train_options *lc_train_options_new(void);
void lc_train_options_free(lc_train_options *o);
/* The settable fields: "steps", "stop_after", "batch", "grad_accum", "lr", "min_lr", "warmup",
 * "weight_decay", "beta1", "beta2", "eps", "clip", "eval_every", "eval_bytes", "seed", "lr_scale" (a string:
 * lc_lr_scale_check); NULL past the end. */
const char *lc_train_options_key(int i, lc_value_kind *kind);
/* As lc_config_set_str / lc_config_get_str (CLI spellings like "--min-lr" accepted). Values are not
 * range-checked here: lc_train and lc_train_step refuse bad ones. */
lc_status lc_train_options_set_str(lc_train_options *o, const char *key, const char *value);
lc_status lc_train_options_get_str(const lc_train_options *o, const char *key, char *buf, size_t cap);

/* ---------------------------------------------------------------- a model's tensors */
/* Tensors of the model: every parameter (in checkpoint order) and then every attention kind's
 * non-learned state; names are the checkpoint's (docs/reference/checkpoint.md). */
int lc_model_tensor_count(const lc_model *m);
/* Name, dimensions (1 or 2) and shape of tensor i, and whether it is trained (has a gradient and AdamW
 * moments; kind state is not). Any output pointer may be NULL. LC_ERR_ARG when i is out of range. */
lc_status lc_model_tensor_info(const lc_model *m, int i, const char **name, int *ndim, long shape[2],
                               int *trained);
/* Which numbers of a tensor lc_model_tensor_data points at. */
typedef enum { LC_TENSOR_VALUE = 0, LC_TENSOR_GRAD = 1, LC_TENSOR_ADAM_M = 2, LC_TENSOR_ADAM_V = 3 } lc_tensor_part;
/* The model's own float32 buffer of tensor i (row-major, lc_model_tensor_info's shape), valid until the
 * model is freed: writing it changes the model (a forward reads the values as they are then; with XL
 * memory held in inference form, reset the memory after changing weights). NULL when i is out of range,
 * or for the gradient and moments of an untrained tensor. */
float *lc_model_tensor_data(lc_model *m, int i, lc_tensor_part part);

/* ---------------------------------------------------------------- inference */
/* The model's planned capacity: batch rows, tokens per segment, and (XL) memory rows; lc_model_resize
 * changes it. Any output pointer may be NULL. */
void lc_model_capacity(const lc_model *m, int *max_batch, int *seg_len, int *mem_len);
/* One inference forward (no dropout, no targets) over tokens[B*T] ([B][T], bytes 0..255, or 256 = the
 * mask symbol of an MLM model), copying the logits into out[B*T*256]. The XL memory is used and
 * advanced exactly as by lc_model_forward: call lc_model_reset_memory first for a fresh start. */
lc_status lc_model_forward_logits(lc_model *m, const int *tokens, int B, int T, float *out);

/* Text generation one byte at a time: the same bytes as lc_sample with the same arguments (the same
 * prompt feeding, sampler and random stream), pulled by the caller instead of pushed to a callback.
 * The generator uses the model (its XL memory and activations) until it is freed; the model must
 * outlive it and not be used for anything else meanwhile. */
typedef struct lc_generator lc_generator;
lc_status lc_generator_new(lc_model *m, const uint8_t *prompt, size_t prompt_len, float temperature, int top_k,
                           uint64_t seed, lc_generator **out);
/* The next byte (0..255) through *byte. */
lc_status lc_generator_next(lc_generator *g, int *byte);
void lc_generator_free(lc_generator *g);

/* Bits per byte of the model on one part of a file (`part`, split by `mode` as lc_corpus_load does;
 * LC_PART_ALL: the whole file), in segments of seg_len (0: the model's) and, for vanilla models, `batch`
 * segments per pass (0: its capacity). A CLM model is scored by lc_evaluate; an MLM model by
 * lc_evaluate_mlm with LC_MLM_EVAL_SEED, whose masked-byte accuracy goes to *accuracy (NaN for CLM).
 * bpc, accuracy and tokens (scored bytes) may be NULL. */
lc_status lc_evaluate_file(lc_model *m, const char *path, lc_split_mode mode, lc_part part, int seg_len, int batch,
                           double *bpc, double *accuracy, long *tokens);

/* ---------------------------------------------------------------- training on a file */
/* Progress of a training step as values[LC_PROGRESS_VALUES], in this order: */
#define LC_PROGRESS_VALUES 13
/* Name of progress value i ("step", "steps", "start_step", "loss", "lr", "tokens_per_s", "elapsed_s",
 * "valid_bpc", "valid_accuracy", "comm_s", "processes", "valid_s", "valid_total_s": the fields of
 * lc_progress); NULL past the end. */
const char *lc_progress_key(int i);
/* Called after every step with its progress (valid_bpc NaN unless a validation pass just ran): return 0
 * to go on, nonzero to stop (lc_train_file then returns LC_OK at that step). */
typedef int (*lc_train_callback)(const double *values, int n, void *user);
/* lc_train on the file at path (read by lc_corpus_load with `mode`; recorded in o->data so a checkpoint
 * saved with o names it), reporting every step to fn (may be NULL). o's hook is used for the callback
 * and restored afterwards. The data is checked against o->batch (lc_train_check_data) first; then, when
 * o->batch exceeds the planned batch or the planned segment is not the model's seq_len, the model is
 * re-planned for them (lc_model_resize, which resets the XL memory). */
lc_status lc_train_file(lc_model *m, const char *path, lc_split_mode mode, lc_train_options *o, lc_train_callback fn,
                        void *user);

/* ---------------------------------------------------------------- a sequence classifier's checkpoint */
/* A classifier (longctx/classify.h) with what its checkpoint holds besides the weights: the label names and,
 * for a words model, the vocabulary. For bindings that predict labels of texts. */
typedef struct lc_text_classifier lc_text_classifier;
/* Load a classifier checkpoint (metadata model = classify; lc_classifier_load) planned for batches of up to
 * max_batch texts (0: 16, as `longctx predict`). LC_ERR_FORMAT naming the file for another model's
 * checkpoint or a damaged one; LC_ERR_IO when it cannot be read. */
lc_status lc_text_classifier_load(const char *path, int max_batch, lc_text_classifier **out);
void lc_text_classifier_free(lc_text_classifier *c);
/* The underlying classifier (its config, step, threads: longctx/classify.h); owned by c. */
lc_classifier *lc_text_classifier_model(lc_text_classifier *c);
/* The number of classes, and the name of class i (0 .. classes-1; NULL outside): the sorted label set of
 * the training file, in the order of predict's probabilities. */
int lc_text_classifier_classes(const lc_text_classifier *c);
const char *lc_text_classifier_label(const lc_text_classifier *c, int i);
/* The predicted class of each of n texts (texts[i][0 .. lens[i]), any bytes) into pred[n] (may be NULL) and
 * their class probabilities into probs[n * classes] (may be NULL): lc_classifier_classify_texts in batches
 * of the planned size, the numbers `longctx predict --probs` prints. LC_ERR_ARG for a masked-token
 * pre-training (objective mlm), whose head is untrained. */
lc_status lc_text_classifier_predict(lc_text_classifier *c, long n, const char *const *texts, const size_t *lens,
                                     int *pred, double *probs);

/* ---------------------------------------------------------------- a HIBERT checkpoint's summarizer */
/* A HIBERT model (longctx/hibert.h) with the last text it scored: its sentences and their scores. For bindings
 * that summarize texts as `longctx summarize --method hibert` does. */
typedef struct lc_hibert_summarizer lc_hibert_summarizer;
/* Load a HIBERT checkpoint (metadata model = hibert) planned for any one chunk of a document (cfg.max_sents
 * sentences of up to cfg.max_sent_len bytes). A fine-tuned checkpoint scores with its extraction head; a
 * pre-training one with its intruder head (lc_hibert_summarizer_intruder_head 1); a pre-training one without
 * intruders is LC_ERR_ARG naming the file (its head was never trained); another model's checkpoint or a damaged
 * one is LC_ERR_FORMAT naming the file, LC_ERR_IO when it cannot be read. */
lc_status lc_hibert_summarizer_load(const char *path, lc_hibert_summarizer **out);
void lc_hibert_summarizer_free(lc_hibert_summarizer *s);
/* The underlying model (its config, step, threads: longctx/hibert.h); owned by s. */
lc_hibert *lc_hibert_summarizer_model(lc_hibert_summarizer *s);
/* 1 when s scores with a pre-training checkpoint's intruder head (not fine-tuned), else 0. */
int lc_hibert_summarizer_intruder_head(const lc_hibert_summarizer *s);
/* Score the sentences of text (NUL-terminated UTF-8) as `longctx summarize` does a file of it: title 1: line 1
 * is a title, 0: it is text, -1: the BBC layout's rule (a first line without a sentence end, then a blank
 * line, is a title); the rest split by the sentence rule (docs/results/summarization-protocol.md), LC_ERR_FORMAT
 * with fewer than 2 sentences; documents longer than cfg.max_sents sentences scored chunk by chunk. *n (may
 * be NULL): the number of sentences. The sentences and scores stay in s until the next call (a failed call
 * leaves none). */
lc_status lc_hibert_summarizer_score(lc_hibert_summarizer *s, const char *text, int title, int *n);
/* The last scored text's sentences (0 before one), sentence i (NULL outside), and their scores [sentences]
 * (logits: higher, more likely in the summary; the numbers `longctx summarize --scores` prints). */
int lc_hibert_summarizer_sentences(const lc_hibert_summarizer *s);
const char *lc_hibert_summarizer_sentence(const lc_hibert_summarizer *s, int i);
const float *lc_hibert_summarizer_scores(const lc_hibert_summarizer *s);
/* pick[sentences] = 1 for the k >= 1 best-scored sentences of the last text (ties: the earlier sentence), the
 * summary of `longctx summarize --sentences k` in document order. LC_ERR_ARG before a text was scored. */
lc_status lc_hibert_summarizer_pick(const lc_hibert_summarizer *s, int k, uint8_t *pick);

#ifdef __cplusplus
}
#endif
#endif
