/* longctx public API, part of longctx.h (include that one): Training, data (byte corpora and streams), evaluation, checkpoints and sampling of the byte-level language model. */
#ifndef LONGCTX_TRAIN_H
#define LONGCTX_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- training */
/* Characters of a recorded data path, terminator included. */
#define LC_DATA_PATH_CHARS 4096
#define LC_LR_SCALE_CHARS 256 /* lc_train_options.lr_scale, with its terminating NUL */
/* The training data a checkpoint was trained on (recorded in it; docs/reference/checkpoint.md, data.*): path "" =
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
    char lr_scale[LC_LR_SCALE_CHARS]; /* per-tensor learning-rate factors, "PREFIX=F[@STEPS],..." ("": none):
                                       * parameters whose checkpoint names start with PREFIX train at F times
                                       * the schedule's rate (for the first STEPS steps only, if given); the
                                       * longest matching prefix in force decides (the first of equal ones);
                                       * F = 0 freezes them */
    long eval_every;      /* steps between validation passes (0: only at the end) */
    long eval_bytes;      /* bytes of the validation split used by periodic passes (0: all) */
    uint64_t seed;
    int ranks;            /* processes training together (lc_train reads lc_dist; the CLI sets this to
                           * their number for the checkpoint): the global batch is batch x ranks */
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
/* The same layout of `streams` streams, writing only streams first .. first+count-1 (rows 0..count-1 of
 * tokens[count*T] and targets): how each of several processes training together (lc_dist) reads its own
 * part of one global batch. lc_stream_batch(B) is lc_stream_batch_part(B, 0, B). */
lc_status lc_stream_batch_part(const uint8_t *data, size_t n, long streams, long first, int count, int T, long k,
                               int *tokens, int *targets);

/* Average bits per byte of the model on data[0, n), predicting every byte after the first, in
 * consecutive segments of seg_len (the last one shorter), `batch` segments at a time. */
lc_status lc_evaluate(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                      long *tokens);

/* The validation score of lc_train and `longctx train` on data[0, n): bits per byte (CLM), or per masked
 * byte and the accuracy (MLM; accuracy may be NULL), over *tokens scored bytes (may be NULL). With one
 * process it is lc_evaluate / lc_evaluate_mlm (seed LC_MLM_EVAL_SEED). Processes training together
 * (data parallelism, docs/guides/distributed.md) each score a contiguous part cut on segment boundaries and the
 * sums are reduced: XL memory and the numbering of MLM masks then restart at each part. */
lc_status lc_evaluate_dist(lc_model *m, const uint8_t *data, size_t n, int seg_len, int batch, double *bpc,
                           double *accuracy, long *tokens);

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
    double tokens_per_s;   /* training throughput of this run so far, validation time left out */
    double elapsed_s;      /* wall time of this run so far, up to this step's validation */
    double valid_bpc;      /* after a validation pass; NaN otherwise (MLM: bits per masked byte) */
    double valid_accuracy; /* MLM: masked-byte accuracy of that pass; NaN otherwise */
    double comm_s;         /* time this run spent summing gradients across processes (0 with one) */
    int processes;         /* processes training together (tokens_per_s counts all of them) */
    double valid_s;        /* seconds of this step's validation pass (0 without one; after elapsed_s) */
    double valid_total_s;  /* seconds of this run's validation passes so far, this step's included */
} lc_progress;

typedef void (*lc_progress_fn)(const lc_progress *p, void *user);

/* Learning rate at step (0-based): linear warm-up to lr over o->warmup steps, cosine decay to
 * min_lr at o->steps. */
double lc_learning_rate(const lc_train_options *o, long step);
/* The factor o->lr_scale gives the parameter tensor `name` at step (0-based): F of the longest prefix of
 * name among its rules whose STEPS have not passed, else 1. The spec must have passed
 * lc_lr_scale_check (lc_train and the models' update steps check it). */
double lc_lr_scale_factor(const char *spec, const char *name, long step);
/* LC_OK when spec is "" or rules "PREFIX=F[@STEPS]" joined by commas: PREFIX non-empty, without '=', ','
 * or '@'; F a number in [0, 1000]; STEPS an integer >= 1; else LC_ERR_ARG naming the rule at fault. */
lc_status lc_lr_scale_check(const char *spec);

/* Whether corpus c feeds `batch` streams (per process; the processes of lc_dist together) of seq_len + 1
 * bytes each from its training split: LC_OK, else LC_ERR_ARG saying it is too short. lc_train and
 * lc_train_file check it before they allocate anything for the batch. */
lc_status lc_train_check_data(const lc_corpus *c, int batch, int seq_len);

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
 * atomically: to PATH.tmp.PID.RANDOM beside it (created O_EXCL, never through a symlink, with the mode of
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

/* A copy of any longctx checkpoint (language model, classifier, HIBERT) without its AdamW moments, a
 * third of its size: for sharing and inference, or --init of a next stage (docs/reference/checkpoint.md, "Exporting
 * the weights"). The metadata and every other tensor are kept as they are, so the copy loads wherever the
 * checkpoint does; a run resumed from it starts its moments at zero. Written atomically like
 * lc_checkpoint_save; out may be in. LC_ERR_FORMAT for a file that is not a longctx checkpoint. */
typedef struct {
    int tensors, dropped;          /* tensors written; optimizer tensors left out */
    long long bytes_in, bytes_out; /* the two files' sizes */
} lc_export_info;
lc_status lc_checkpoint_export(const char *in, const char *out, lc_export_info *info);

/* ---------------------------------------------------------------- sampling */
typedef void (*lc_emit_fn)(uint8_t byte, void *user);
/* Continue `prompt` by n_tokens bytes: temperature (0 = greedy), top_k (0 = all), seeded. */
lc_status lc_sample(lc_model *m, const uint8_t *prompt, size_t prompt_len, int n_tokens, float temperature,
                    int top_k, uint64_t seed, lc_emit_fn emit, void *user);

#ifdef __cplusplus
}
#endif
#endif
