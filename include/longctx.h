/* longctx public API: status codes, model configuration, model lifetime, training, evaluation,
 * sampling and checkpoint I/O. This is the only header a program using the library includes. */
#ifndef LONGCTX_H
#define LONGCTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible call returns one of these; lc_last_error() holds a one-line message. */
typedef enum {
    LC_OK = 0,
    LC_ERR_ARG,    /* invalid argument or configuration (a usage error at the CLI) */
    LC_ERR_IO,     /* a file could not be opened, read, written or renamed */
    LC_ERR_FORMAT, /* a file exists but its contents are not what was expected */
    LC_ERR_NOMEM,  /* an allocation failed */
    LC_ERR_NUMERIC /* a value became NaN or infinite (training diverged; a model with such weights) */
} lc_status;

/* The one-line message of the failed call that returned a status other than LC_OK, on this thread.
 * Every call that returns an lc_status clears it first, so after a successful call it is "". */
const char *lc_last_error(void);
/* A short name for a status code. */
const char *lc_status_name(lc_status s);

/* ---------------------------------------------------------------- configuration */
typedef enum { LC_NORM_PRE = 0, LC_NORM_POST = 1 } lc_norm;
typedef enum { LC_ACT_GELU = 0, LC_ACT_RELU = 1 } lc_activation;
typedef enum {
    LC_MODEL_VANILLA = 0, /* learned absolute positions, each segment on its own */
    LC_MODEL_XL = 1       /* Transformer-XL: segment recurrence + relative positions */
} lc_model_kind;

typedef enum {
    LC_OBJECTIVE_CLM = 0, /* causal language model (decoder): predict the next byte */
    LC_OBJECTIVE_MLM = 1  /* masked language model (bidirectional encoder): BERT-style byte masking */
} lc_objective;

/* Characters of an attention spec string, terminator included. */
#define LC_ATTN_SPEC_CHARS 512
/* The masked-LM mask symbol: the byte embedding has one extra row for it (tokens 0..256). */
#define LC_MASK_TOKEN 256

/* Shape and behaviour of a byte-level language model (a decoder, or an encoder with the MLM objective). */
typedef struct {
    int vocab;          /* always 256: bytes */
    int n_layer;        /* Transformer blocks */
    int d_model;        /* residual width C */
    int n_head;         /* attention heads; d_model % n_head == 0 */
    int d_ff;           /* feed-forward inner width */
    int seq_len;        /* tokens per segment (and learned positions) */
    lc_norm norm;       /* pre-LN or post-LN blocks */
    lc_activation activation;
    int tied;           /* output projection shares the byte embedding */
    float dropout;      /* on embeddings, attention and feed-forward outputs (training only) */
    lc_model_kind model;
    /* Transformer-XL only: */
    int mem_len;        /* hidden states kept per layer from earlier segments (0: none) */
    int clamp_len;      /* relative distances beyond this use this one (0: no clamp) */
    int same_length;    /* every query sees exactly mem_len keys (needs mem_len > 0) */
    int shared_uv;      /* one pair of position biases u, v for all layers (else one per layer) */
    /* Attention (docs/attention.md): */
    char attn[LC_ATTN_SPEC_CHARS]; /* kind per layer and head group, e.g. "window:w=128" ("": full) */
    int qk_share;       /* consecutive heads sharing one query and one key projection (0 or 1: none) */
    int attn_share;     /* consecutive layers sharing one attention module (0 or 1: none) */
    lc_objective objective; /* MLM needs model vanilla: bidirectional, absolute positions */
    /* Memory savers (Reformer): */
    int reversible;     /* reversible residual layers: backward rebuilds each layer's inputs from its outputs,
                           so activations do not grow with depth (needs pre-LN, model vanilla) */
    int ffn_chunk;      /* feed-forward over chunks of this many rows (0: all at once) */
    int extra_tokens;   /* learned tokens put in front of every sequence (BigBird ETC's global tokens; with
                           global=G or bigbird:variant=etc,g=G they are the global positions); never scored.
                           Needs model vanilla */
} lc_config;

/* The defaults of the "small" preset. */
void lc_config_default(lc_config *cfg);
/* Fill cfg from a named preset ("tiny", "small", "base"); LC_ERR_ARG for an unknown name. */
lc_status lc_config_preset(lc_config *cfg, const char *name);
/* LC_ERR_ARG with a message naming the offending field when cfg is not buildable. */
lc_status lc_config_validate(const lc_config *cfg);

/* ---------------------------------------------------------------- model */
typedef struct lc_model lc_model;

/* Build a model whose parameters, gradients, optimizer state and activations are planned and
 * allocated once, for batches of up to max_batch sequences of up to cfg->seq_len tokens.
 * Parameters start at the training initialisation drawn from `seed`. */
lc_status lc_model_create(const lc_config *cfg, int max_batch, uint64_t seed, lc_model **out);
void lc_model_free(lc_model *m);
const lc_config *lc_model_config(const lc_model *m);
size_t lc_model_num_params(const lc_model *m);
/* The compute plan's thread count: every pass of the model runs with this many threads, and its
 * attention workspace is sized for them. A new model takes the count the process was given (the CLI's
 * --threads) or else the cores it may run on (its CPU affinity). threads <= 0 means those cores; more
 * than those is capped to them. Re-plans the workspace (the XL memory is kept). Results do not depend
 * on the thread count: every sum is taken in one fixed order. */
lc_status lc_model_set_threads(lc_model *m, int threads);
int lc_model_threads(const lc_model *m);
/* Bytes held by parameters+gradients+optimizer state, and by activations and workspaces. */
size_t lc_model_param_bytes(const lc_model *m);
size_t lc_model_activation_bytes(const lc_model *m);

/* Forward pass over tokens[B*T] (row-major [B][T]). A Transformer-XL model attends to its memory of
 * earlier segments of the same B streams and then appends this segment's hidden states to it (so
 * consecutive calls must continue the same streams; a different B needs lc_model_reset_memory). With targets (may be NULL) it returns the summed
 * cross-entropy in nats through loss_sum and the number of scored positions (targets >= 0) through
 * count. `train` enables dropout (seeded by lc_model_set_step). Logits are kept for lc_model_logits. */
lc_status lc_model_forward(lc_model *m, const int *tokens, const int *targets, int B, int T, int train,
                           double *loss_sum, long *count);
/* Backward of the last forward, for the loss sum(losses) * loss_scale; gradients ACCUMULATE into the
 * model's gradient buffer. LC_ERR_ARG (nothing changes) when there is nothing to differentiate: no
 * forward yet, or the last forward had no targets. */
lc_status lc_model_backward(lc_model *m, float loss_scale);
void lc_model_zero_grad(lc_model *m);
/* Re-plan the activation buffers for batches of up to max_batch segments of up to seq_len tokens and,
 * for Transformer-XL, memories of mem_len rows (evaluation and generation may use other lengths than
 * training). Vanilla models need seq_len <= their trained length. Resets the XL memory. */
lc_status lc_model_resize(lc_model *m, int max_batch, int seq_len, int mem_len);
/* Transformer-XL evaluation options: clamp_len (0: off) and same_length. */
lc_status lc_model_set_xl_options(lc_model *m, int clamp_len, int same_length);
/* Forget the XL memory (the next segment starts without context). No-op for vanilla models. */
void lc_model_reset_memory(lc_model *m);
/* Rows currently held in each layer's XL memory. */
int lc_model_memory_rows(const lc_model *m);
/* Logits [B*T][256] of the last forward. */
const float *lc_model_logits(const lc_model *m);
/* Keys the dropout masks of the next forward/backward pair: masks are a pure function of the model's
 * seed and this counter (the trainer sets it to the micro-batch number). */
void lc_model_set_noise_key(lc_model *m, long key);

/* ---------------------------------------------------------------- training */
/* Characters of a recorded data path, terminator included. */
#define LC_DATA_PATH_CHARS 4096
/* The training data a checkpoint was trained on (recorded in it; docs/checkpoint.md, data.*): path "" =
 * not recorded (checkpoints from before the record, or a path that is not UTF-8). */
typedef struct {
    char path[LC_DATA_PATH_CHARS]; /* absolute path of the file */
    long size;                     /* its bytes */
    uint64_t hash;                 /* FNV-1a 64 of its bytes (lc_data_hash) */
    int split;                     /* its lc_split_mode, resolved (LC_SPLIT_ENWIK8 or LC_SPLIT_NANOGPT) */
} lc_data_record;

struct lc_progress_s;
/* A hook lc_train calls after every step (after the progress callback and any validation), with the
 * model in the state lc_checkpoint_save writes (so it may save it). It returns 0 to go on, nonzero to
 * stop: lc_train then returns LC_OK at that step. This is how a caller saves periodically and stops on a
 * signal; the library itself never installs signal handlers. */
typedef int (*lc_train_hook_fn)(const lc_model *m, const struct lc_progress_s *p, void *user);

typedef struct {
    long steps;           /* optimizer steps of the whole schedule */
    long stop_after;      /* stop this run after this many steps (0: run to `steps`) */
    int batch;            /* sequences per micro-batch (= contiguous streams) */
    int grad_accum;       /* micro-batches per optimizer step */
    float lr, min_lr;     /* peak and final learning rate */
    long warmup;          /* linear warm-up steps, then cosine decay to min_lr */
    float weight_decay;   /* AdamW decoupled decay on matrices */
    float beta1, beta2, eps;
    float clip;           /* global gradient-norm clip (0: off) */
    long eval_every;      /* steps between validation passes (0: only at the end) */
    long eval_bytes;      /* bytes of the validation split used by periodic passes (0: all) */
    uint64_t seed;
    lc_data_record data;  /* the training data, saved in checkpoints (set it with lc_data_record_set) */
    lc_train_hook_fn hook; /* called after every step; NULL: none. Not saved */
    void *hook_user;
} lc_train_options;

void lc_train_options_default(lc_train_options *o);

/* ---------------------------------------------------------------- data */
typedef enum {
    LC_SPLIT_AUTO = 0,   /* nanogpt for files named tinyshakespeare*, else enwik8 */
    LC_SPLIT_ENWIK8,     /* 90% train / 5% valid / 5% test */
    LC_SPLIT_NANOGPT     /* 90% train / 10% valid, test = valid */
} lc_split_mode;

typedef enum { LC_PART_TRAIN = 0, LC_PART_VALID, LC_PART_TEST, LC_PART_ALL } lc_part;

/* A file read whole as bytes, with the train / valid / test ranges of its split. */
typedef struct {
    uint8_t *bytes;
    size_t size;
    size_t begin[4], end[4]; /* indexed by lc_part */
    lc_split_mode mode;      /* the resolved mode (never AUTO) */
} lc_corpus;

/* Read `path`; LC_ERR_IO when it is missing, unreadable or a directory, LC_ERR_FORMAT when empty. */
lc_status lc_corpus_load(const char *path, lc_split_mode mode, lc_corpus *out);
void lc_corpus_free(lc_corpus *c);
/* FNV-1a 64 of bytes[0, n) (offset basis 14695981039346656037, prime 1099511628211). */
uint64_t lc_data_hash(const uint8_t *bytes, size_t n);
/* Record the corpus loaded from path in *r: absolute path (left "" when it cannot be resolved or is
 * not UTF-8), size, hash and split. */
void lc_data_record_set(lc_data_record *r, const char *path, const lc_corpus *c);

/* Batch number k of B contiguous streams over data[0, n): stream b owns the b-th of B equal slices and
 * reads segment k of it, so batch k+1 continues where batch k stopped (wrapping at the slice's end).
 * Writes tokens[B*T] and targets[B*T] (the next bytes). LC_ERR_ARG when a slice is shorter than T+1. */
lc_status lc_stream_batch(const uint8_t *data, size_t n, int B, int T, long k, int *tokens, int *targets);

/* Average bits per byte of the model on data[0, n), predicting every byte after the first, in
 * consecutive segments of seg_len (the last one shorter), `batch` segments at a time. */
lc_status lc_evaluate(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                      long *tokens);

/* Masked-LM evaluation (models with the MLM objective) on data[0, n) in segments of seg_len: 15% of the
 * positions masked by the BERT rule from `seed` (the same positions on every call), reporting bits per
 * masked byte, the accuracy of the most likely byte there, and the number of masked positions. */
lc_status lc_evaluate_mlm(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, uint64_t seed,
                          double *bpc, double *accuracy, long *masked);

/* BERT's masking of tokens[n] (bytes) for the MLM objective: each position is chosen with probability
 * 15% (at least one per call); a chosen position's target is its byte and its token becomes
 * LC_MASK_TOKEN (80%), a random byte (10%) or stays (10%); other targets are -1. Deterministic in seed. */
void lc_mlm_mask(int *tokens, int *targets, long n, uint64_t seed);
/* The masking seed of every validation pass (training's and `longctx eval`'s): the same positions. */
#define LC_MLM_EVAL_SEED 0x6d6c6d2d6576616cULL

/* ---------------------------------------------------------------- training */
typedef struct lc_progress_s {
    long step, steps;      /* steps done, schedule length */
    long start_step;       /* step this run started from (after a resume) */
    double loss;           /* training loss of this step, nats per byte */
    double lr;
    double tokens_per_s;   /* training throughput of this run so far */
    double elapsed_s;      /* wall time of this run so far */
    double valid_bpc;      /* after a validation pass; NaN otherwise (MLM: bits per masked byte) */
    double valid_accuracy; /* MLM: masked-byte accuracy of that pass; NaN otherwise */
} lc_progress;

typedef void (*lc_progress_fn)(const lc_progress *p, void *user);

/* Learning rate at step (0-based): linear warm-up to lr over o->warmup steps, cosine decay to
 * min_lr at o->steps. */
double lc_learning_rate(const lc_train_options *o, long step);

/* Train from the model's current step (0 for a new model, the saved step after lc_checkpoint_load)
 * to o->steps (or stop_after steps from here), reporting every step to fn. Periodic validation uses
 * the corpus's valid part. */
lc_status lc_train(lc_model *m, const lc_corpus *corpus, const lc_train_options *o, lc_progress_fn fn, void *user);
/* One optimisation step on a given batch, for training on data of one's own (synthetic tasks):
 * tokens[B*T] and targets[B*T] (row-major [B][T]; targets < 0 are not scored). Zeroes the gradients,
 * runs forward with dropout keyed by the model's step (as lc_train with grad_accum 1) and backward of
 * the mean loss over the scored positions, clips, applies AdamW at lc_learning_rate(o, step) and
 * advances the step. Reads only the optimizer fields of o (steps, lr, min_lr, warmup, weight_decay,
 * betas, eps, clip). loss (may be NULL): mean nats per scored position before the update. LC_ERR_ARG
 * when no target is >= 0 (nothing is updated then). */
lc_status lc_train_step(lc_model *m, const lc_train_options *o, const int *tokens, const int *targets, int B, int T,
                        double *loss);
long lc_model_step(const lc_model *m);

/* ---------------------------------------------------------------- checkpoints (safetensors) */
/* Save parameters, AdamW moments, the step, the config, the training options and the data record
 * atomically: to PATH.tmp.PID.XXXXXX beside it (created O_EXCL, never through a symlink, with the mode of
 * the file it replaces, or 0666 & ~umask), fsync, rename, fsync the directory. Temporary files of PATH
 * left by processes that no longer run (killed runs) are removed first. A PATH that exists and is not a
 * regular file (a device, a FIFO, a directory) is refused (LC_ERR_ARG). */
lc_status lc_checkpoint_save(const lc_model *m, const lc_train_options *o, const char *path);
/* Check, before any work, that a checkpoint can be saved at path: its directory exists and is writable,
 * the name fits with the temporary suffix (NAME_MAX, PATH_MAX), and path is absent or a regular file.
 * LC_ERR_ARG (bad name or kind of file) or LC_ERR_IO (directory), with a message naming path. */
lc_status lc_checkpoint_check_path(const char *path);
/* Build a model from a checkpoint (batches of up to max_batch; 0: the saved training batch) and restore its state; when opts is
 * not NULL the saved training options are written there. Any mismatch is LC_ERR_FORMAT naming the file. */
lc_status lc_checkpoint_load(const char *path, int max_batch, lc_model **out, lc_train_options *opts);

/* ---------------------------------------------------------------- sampling */
typedef void (*lc_emit_fn)(uint8_t byte, void *user);
/* Continue `prompt` by n_tokens bytes: temperature (0 = greedy), top_k (0 = all), seeded. */
lc_status lc_sample(lc_model *m, const uint8_t *prompt, size_t prompt_len, int n_tokens, float temperature,
                    int top_k, uint64_t seed, lc_emit_fn emit, void *user);

/* ================================================================ documents, sentences and ROUGE
 * The data and evaluation side of extractive summarization (src/summ; docs/hibert.md): text files, the
 * sentence rule, the BBC News Summary layout and its split, sentence labels and ROUGE. None of it needs
 * a model. */

/* Largest text file lc_text_read accepts (64 MiB). */
#define LC_TEXT_MAX_BYTES (64u << 20)

/* Read a text file whole as NUL-terminated UTF-8 into *text (free() it) of *len bytes (len may be NULL).
 * Valid UTF-8 is kept as it is, without a leading byte-order mark; a file that is not valid UTF-8 is
 * decoded as Latin-1 (ISO 8859-1: each byte one character) and *latin1 (may be NULL) is set to 1.
 * LC_ERR_IO: missing, unreadable, a directory or not a regular file; LC_ERR_FORMAT: a control byte other
 * than \t \n \v \f \r (a binary file) or larger than LC_TEXT_MAX_BYTES. Messages name the file. */
lc_status lc_text_read(const char *path, char **text, size_t *len, int *latin1);

/* n sentences sent[0..n), NUL-terminated strings in one buffer. */
typedef struct {
    int n;
    char **sent;
    char *buf;
} lc_sentences;

/* The sentence rule: every run of whitespace (space, \t, \n, \v, \f, \r) becomes one space and none is
 * kept at either end; then a sentence ends after '.', '!' or '?' when a space and then an upper-case
 * ASCII letter or a quote (" or ') follow, and that space is dropped. Nothing else ends a sentence:
 * "Mr. Smith" is two sentences, 'said "no." Then' is one. Text without such a boundary is one sentence;
 * empty or all-whitespace text has none (n = 0). */
lc_status lc_sentences_split(const char *text, lc_sentences *out);
void lc_sentences_free(lc_sentences *s);
/* The sentences with pick[i] != 0 (all when pick is NULL), in order, joined by one space, into *out
 * (free() it). */
lc_status lc_sentences_join(const char *const *sent, int n, const uint8_t *pick, char **out);

/* Documents in the BBC News Summary layout: ROOT/articles/<topic>/<name>.txt (or ROOT/articles/<name>.txt),
 * each with its reference summary at the same path under ROOT/summaries/. All documents are sorted by
 * their path under articles/ (byte order; articles/business/001.txt first in the BBC corpus), and
 * document i (0-based) of that order is test when i % 10 == 0, valid when i % 10 == 5, train otherwise. */
typedef struct {
    int n;          /* documents of the requested part */
    char **article; /* ROOT/articles/... */
    char **summary; /* ROOT/summaries/..., same relative path */
    int *index;     /* position in the sorted order of all documents */
    int total;      /* documents in the corpus */
} lc_doc_list;

/* List the documents of one part (LC_PART_ALL: every one). Errors name the path: ROOT missing or not a
 * directory, no articles/ or summaries/ directory, no .txt article, an article without its summary. */
lc_status lc_doc_list_open(const char *root, lc_part part, lc_doc_list *out);
void lc_doc_list_free(lc_doc_list *l);

/* One article: line 1 is the title, the rest the body, which is split into sentences. */
typedef struct {
    char *title;        /* line 1, whitespace collapsed */
    lc_sentences sents; /* sentences of the body (at least one) */
    char *reference;    /* the summary file's text as read (NULL when no summary path was given) */
    int latin1;         /* bit 0: the article, bit 1: the summary was decoded as Latin-1 */
} lc_document;

/* Read an article and (when summary_path is not NULL) its reference summary with lc_text_read.
 * LC_ERR_FORMAT naming the file for an empty document (no text after the title line) or an empty or
 * all-whitespace summary. */
lc_status lc_document_read(const char *article_path, const char *summary_path, lc_document *out);
void lc_document_free(lc_document *d);

typedef enum {
    LC_LABELS_CONTAINED = 0, /* 1 when the sentence occurs verbatim (byte for byte) in the reference */
    LC_LABELS_GREEDY         /* the greedy ROUGE oracle */
} lc_label_rule;

/* 0/1 labels[0..n) of sentences against a reference summary, and their sum in *count (may be NULL).
 * GREEDY starts from no sentence and repeatedly adds the sentence that most increases ROUGE-1 F1 +
 * ROUGE-2 F1 of the chosen sentences (joined in document order by a space) against the reference, the
 * earliest on a tie, until no sentence increases it by more than 1e-12. */
lc_status lc_summary_labels(const char *const *sent, int n, const char *reference, lc_label_rule rule,
                            uint8_t *labels, int *count);

typedef struct {
    double precision, recall, f1; /* fractions in [0, 1] */
} lc_rouge_prf;

typedef struct {
    lc_rouge_prf r1, r2, rl; /* ROUGE-1, ROUGE-2, ROUGE-L */
} lc_rouge;

/* ROUGE of a candidate summary against a reference. Tokens are the runs of [a-z0-9] after A-Z is mapped
 * to a-z (every other byte, non-ASCII included, separates tokens; no stemming, no stop words). ROUGE-N:
 * overlap = sum over n-grams of min(count in candidate, count in reference), precision = overlap /
 * candidate n-grams, recall = overlap / reference n-grams. ROUGE-L: the same with the length of the
 * longest common subsequence of the two whole token sequences (no sentence-level union LCS).
 * F1 = 2 overlap / (candidate + reference) = 2PR / (P + R), 0 when the overlap is 0. ROUGE-L takes
 * time (candidate tokens) x (reference tokens). Corpus scores average the per-document F1. */
lc_status lc_rouge_score(const char *candidate, const char *reference, lc_rouge *out);

/* ================================================================================================
 * Long-range classification data (Long Range Arena, docs/lra.md): the ListOps generator and its
 * independent evaluator, labelled TSV files (plain or gzip), the label set, byte and word tokenization.
 * ================================================================================================ */

/* ListOps operators, in this order wherever they are counted: MIN, MAX, MED (the median; for an even count
 * the integer part of the mean of the two middle values), SM (sum modulo 10). Values are 0..9. */
enum { LC_LISTOPS_MIN = 0, LC_LISTOPS_MAX, LC_LISTOPS_MED, LC_LISTOPS_SM, LC_LISTOPS_OPS };
#define LC_LISTOPS_DEPTH_LIMIT 32        /* largest max_depth, and the deepest nesting the evaluator reads */
#define LC_LISTOPS_ARGS_LIMIT 64         /* largest max_args */
#define LC_LISTOPS_LENGTH_LIMIT (1 << 20) /* largest max_length */
#define LC_LISTOPS_MAX_EXAMPLES 100000000L /* most sequences one lc_listops_write call writes */

/* The generator's parameters; lc_listops_options_default gives LRA's. */
typedef struct {
    int max_depth;  /* 10: the root is at depth 1, a node at max_depth is always a value */
    int max_args;   /* 10: an operator has 2..max_args arguments (uniform) */
    int min_length; /* 500: a sequence is kept when min_length < length < max_length, */
    int max_length; /* 2000: length = operators + values + closing brackets (parentheses not counted) */
} lc_listops_options;
void lc_listops_options_default(lc_listops_options *o);

/* What one sequence is made of. */
typedef struct {
    int value;                 /* the expression's value 0..9 (the TSV's Target) */
    int length;                /* operators + values + closing brackets: LRA's length */
    int depth;                 /* depth of the deepest node, the root at 1 */
    int values;                /* value tokens */
    int min_args, max_args;    /* fewest and most arguments of an operator (0 without operators) */
    int ops[LC_LISTOPS_OPS];   /* operators of each kind */
    int parens;                /* '(' tokens (as many as ')') */
} lc_listops_info;

/* Evaluates a printed sequence text[0..len): tokens separated by whitespace, each '(', ')', ']', a value
 * 0..9 or an operator [MIN [MAX [MED [SM, in exactly LRA's folded form, where an operator with arguments
 * a1..ak reads "( " x (k+1), the operator, " a_i )" for each argument, then " ] )"; MAX(2, 9) is
 * "( ( ( [MAX 2 ) 9 ) ] )". A lone value is a one-node expression. Fills *info (may be NULL).
 * LC_ERR_FORMAT with the token number for anything else (an unknown token, wrong parentheses, an operator
 * without arguments, text after the end, nesting deeper than LC_LISTOPS_DEPTH_LIMIT). */
lc_status lc_listops_eval(const char *text, size_t len, lc_listops_info *info);

/* The generator: LRA's sampling (docs/lra.md), sequences outside the length range and duplicates (the
 * same sequence as an earlier one of this generator) dropped. Deterministic in the seed. */
typedef struct lc_listops_gen lc_listops_gen;
lc_status lc_listops_gen_create(const lc_listops_options *o /* NULL: LRA's */, uint64_t seed, lc_listops_gen **out);
/* The next kept sequence: *source (NUL-terminated, *len bytes; valid until the next call) as LRA prints
 * it, and what it is made of (info may be NULL). */
lc_status lc_listops_gen_next(lc_listops_gen *g, const char **source, size_t *len, lc_listops_info *info);
typedef struct {
    long kept;       /* sequences returned */
    long trees;      /* trees drawn */
    long too_short;  /* rejected: length <= min_length */
    long too_long;   /* rejected: length >= max_length (abandoned as soon as it got there) */
    long duplicates; /* rejected: seen before */
} lc_listops_counts;
void lc_listops_gen_counts(const lc_listops_gen *g, lc_listops_counts *c);
void lc_listops_gen_free(lc_listops_gen *g);

typedef struct {
    lc_listops_counts counts;
    long length_min, length_max;
    double length_mean;
    int depth_max;
    long labels[10];            /* sequences of each value */
    long ops[LC_LISTOPS_OPS];   /* operators of each kind, all sequences */
    long bytes;                 /* bytes written */
} lc_listops_summary;
/* Writes n sequences of the generator seeded with `seed` as LRA's TSV: the header "Source\tTarget", then
 * one "SOURCE\tVALUE\n" line per sequence. Written to a temporary file beside `path` and renamed into
 * place ("-": standard output), so a failure leaves no partial file. *sum (may be NULL) on success. */
lc_status lc_listops_write(const char *path, long n, uint64_t seed, const lc_listops_options *o,
                           lc_listops_summary *sum);

/* A set of class labels: distinct non-empty strings without control bytes, in class-index order. */
#define LC_MAX_LABELS 65536
typedef struct {
    int n;
    char **name;
} lc_label_set;
/* The index of `label`, -1 when it is not in the set. */
int lc_label_set_find(const lc_label_set *s, const char *label);
/* The set as printable ASCII text for a checkpoint (metadata string or uint8 tensor): the line
 * "longctx-labels 1 N", then one label per line, bytes outside '!'..'~' and '\' written \xHH. *out: free(). */
lc_status lc_label_set_save(const lc_label_set *s, char **out);
/* The inverse of lc_label_set_save (order kept: it is the class order). LC_ERR_FORMAT for anything else. */
lc_status lc_label_set_load(const char *text, lc_label_set *out);
void lc_label_set_free(lc_label_set *s);

#define LC_TSV_MAX_BYTES (1u << 30) /* largest TSV file, once decompressed */
#define LC_TSV_MAX_COLUMNS 4096
/* A labelled TSV file: a header line naming the columns, then one example per line; fields separated by
 * tabs, taken literally (no quoting); a '\r' before a '\n' is dropped; empty lines at the end ignored. */
typedef struct {
    long n;                /* examples */
    const uint8_t **text;  /* example i's text field: text_len[i] bytes (NUL-terminated too) */
    size_t *text_len;
    int *label;            /* example i's label: an index into labels */
    long *line;            /* example i's line in the file (the header is line 1) */
    lc_label_set labels;   /* the file's distinct labels, sorted: by value when all are integers written
                              the canonical way ("0", "-3", "17"), else bytewise */
    int n_cols, label_col, text_col; /* columns of the file, and the two used (0-based) */
    int gzip;              /* the file was gzip-compressed */
    char *buf_;            /* internal: the file's bytes */
} lc_labelled_data;
/* Reads a labelled TSV file, gzip-compressed or not (recognised by its first two bytes, 1f 8b, not its
 * name; gzip needs a build with zlib: without it, LC_ERR_ARG saying to install zlib1g-dev and rebuild).
 * label_col and text_col name a column of the header, or give its number from 1; NULL: the column named
 * "Target" (label) or "Source" (text) when the header has one (LRA's ListOps files), else the first (label)
 * and the last (text). Errors name the file, and the line for a bad row: missing, not a regular file,
 * empty, an unknown column, a header with an empty or repeated name, a row with another number of columns
 * than the header, an empty label or one with a control byte, no examples, or a header that looks like an
 * example (its label column's name is one of the labels: the header line is missing). */
lc_status lc_labelled_read(const char *path, const char *label_col, const char *text_col, lc_labelled_data *out);
void lc_labelled_free(lc_labelled_data *d);
/* ids[i] (d->n entries) = the index in `s` (a checkpoint's label set) of example i's label, or -1 when `s`
 * lacks it; *unseen (may be NULL) counts the -1s. */
lc_status lc_labelled_map(const lc_labelled_data *d, const lc_label_set *s, int *ids, long *unseen);
/* 1 when this build reads gzip files (compiled with zlib), else 0. */
int lc_have_zlib(void);

/* Tokenizations: bytes (id = the byte, 0..255, as everywhere in longctx) or words (whitespace-separated
 * tokens, whitespace = space \t \n \v \f \r, looked up in a word vocabulary). */
typedef enum { LC_TOKENS_BYTES = 0, LC_TOKENS_WORDS = 1 } lc_tokens;
/* "bytes" or "words"; LC_ERR_ARG naming --tokens otherwise. */
lc_status lc_tokens_parse(const char *name, lc_tokens *out);
const char *lc_tokens_name(lc_tokens t);

/* Word ids: 0..3 are reserved, words start at LC_WORD_FIRST. */
#define LC_WORD_PAD 0   /* padding (never produced by lc_tokenize) */
#define LC_WORD_CLS 1   /* the [CLS] symbol in front of a sequence */
#define LC_WORD_UNK 2   /* every word the vocabulary lacks */
#define LC_WORD_MASK 3  /* a masked-LM mask symbol (reserved) */
#define LC_WORD_FIRST 4
#define LC_WORD_VOCAB_LIMIT (1 << 24)
typedef struct lc_word_vocab lc_word_vocab;
/* Builds a vocabulary from texts text[i][0..len[i]) (the training file's): the words seen at least
 * min_count times, most frequent first (ties bytewise), at most max_words of them (0: all). */
lc_status lc_word_vocab_build(const uint8_t *const *text, const size_t *len, long n, long min_count, int max_words,
                              lc_word_vocab **out);
/* Ids in use: LC_WORD_FIRST + the number of words. */
int lc_word_vocab_size(const lc_word_vocab *v);
/* The id of word[0..len), LC_WORD_UNK when absent. */
int lc_word_vocab_id(const lc_word_vocab *v, const uint8_t *word, size_t len);
/* The word of an id (*len bytes, not NUL-terminated), NULL for a reserved or out-of-range id. */
const uint8_t *lc_word_vocab_word(const lc_word_vocab *v, int id, size_t *len);
/* How often the word of `id` occurred in the texts the vocabulary was built from (0 after a load). */
long lc_word_vocab_count(const lc_word_vocab *v, int id);
/* The vocabulary as printable ASCII text (a checkpoint's metadata string or a uint8 tensor): the line
 * "longctx-words 1 4 N" (format version, reserved ids, words), then word LC_WORD_FIRST + i on line i + 2,
 * bytes outside '!'..'~' and '\' written \xHH. *out (free() it) has *len bytes (len may be NULL). */
lc_status lc_word_vocab_save(const lc_word_vocab *v, char **out, size_t *len);
/* The inverse of lc_word_vocab_save: the same ids. LC_ERR_FORMAT for anything else. */
lc_status lc_word_vocab_load(const char *text, size_t len, lc_word_vocab **out);
void lc_word_vocab_free(lc_word_vocab *v);

/* The token ids of text[0..len): the first max_len of them written to ids (when not NULL); returns how many
 * the whole text has (truncation = a return value above max_len). words needs a vocabulary (v NULL: every
 * word LC_WORD_UNK). No [CLS] is added. LRA truncates ListOps at 2000 tokens and Text at 4000 bytes: */
#define LC_LRA_LISTOPS_MAX_LEN 2000
#define LC_LRA_TEXT_MAX_LEN 4000
long lc_tokenize(lc_tokens kind, const lc_word_vocab *v, const uint8_t *text, size_t len, long max_len, int *ids);
/* Validates a maximum length for the command line: LC_ERR_ARG "WHAT must be in 1..LC_MAX_LEN_LIMIT, got N"
 * (what NULL: "--max-len"). */
#define LC_MAX_LEN_LIMIT (1 << 20)
lc_status lc_check_max_len(long max_len, const char *what);

/* ================================================================================================
 * HIBERT (docs/hibert.md): a hierarchical document model. A sentence encoder (a bidirectional
 * Transformer over each sentence's bytes and an end-of-sentence symbol) turns every sentence into the
 * final hidden state of its EOS row; a document encoder (a bidirectional Transformer over those vectors
 * plus sentence positions) reads each document's sentences; an extraction head scores every sentence.
 * Sentences and documents of a batch are packed, not padded: cost follows the real byte count.
 * ================================================================================================ */

/* The sentence encoder's byte embedding has two rows after the 256 bytes: */
#define LC_HIBERT_EOS 256  /* end of sentence: the sentence's vector is read at this row */
#define LC_HIBERT_MASK 257 /* the masked-sentence byte of pre-training */

/* One stack of Transformer blocks: its shape and its attention spec (docs/attention.md; "": full). */
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
    lc_norm norm;         /* pre-LN (with a final LayerNorm per stack) or post-LN, both stacks */
    lc_activation activation;
    float dropout;        /* on the embeddings and the sublayer outputs of both stacks (training only) */
} lc_hibert_config;

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
    long max_bytes; /* sentence bytes per batch after truncation, EOS not counted (0: max_sents * max_sent_len) */
} lc_hibert_limits;

/* A batch: n_docs documents, document j made of n_sents[j] >= 1 sentences; the sentences of all
 * documents one after another (document 0's first): sentence i is sent[i][0 .. sent_len[i]) (any bytes;
 * a sentence may be empty: it is then its EOS alone). "Batch order" below is this order. */
typedef struct {
    int n_docs;
    const int *n_sents;
    const uint8_t *const *sent;
    const int *sent_len;
} lc_hibert_batch;

typedef struct lc_hibert lc_hibert;

/* Build a model (parameters from `seed`; activations planned once for `limits`, checked against the
 * machine's memory before anything is allocated). */
lc_status lc_hibert_create(const lc_hibert_config *cfg, const lc_hibert_limits *limits, uint64_t seed,
                           lc_hibert **out);
void lc_hibert_free(lc_hibert *m);
const lc_hibert_config *lc_hibert_get_config(const lc_hibert *m);
size_t lc_hibert_num_params(const lc_hibert *m);
size_t lc_hibert_param_bytes(const lc_hibert *m);      /* parameters, gradients, AdamW moments */
size_t lc_hibert_activation_bytes(const lc_hibert *m); /* activations, scratch and attention workspace */
/* The compute plan's threads (as lc_model_set_threads; results do not depend on it). */
lc_status lc_hibert_set_threads(lc_hibert *m, int threads);
/* Optimizer steps done (lc_hibert_step). */
long lc_hibert_steps_done(const lc_hibert *m);

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

#ifdef __cplusplus
}
#endif
#endif
