/* A checkpoint's metadata: one table of keys (type, range, where the value lives, required or not)
 * that both the writer and the reader walk, so the two cannot drift apart. docs/reference/checkpoint.md lists
 * the keys; a test checks that it lists every one. */
#ifndef LC_TRAIN_CHECKPOINT_META_H
#define LC_TRAIN_CHECKPOINT_META_H

#include <stdint.h>

#include "longctx.h"
#include "train/safetensors.h"

#define LC_CKPT_FORMAT "longctx"
#define LC_CKPT_VERSION "1"

/* Everything the metadata records. */
typedef struct {
    lc_config cfg;
    lc_train_options opts;
    long step;
    uint64_t seed;
    int memory_rows, memory_batch; /* XL memory saved in the file (state.memory.*); 0: none */
} lc_ckpt_meta;

/* The metadata as key/value strings for lc_st_write (storage included). */
#define LC_CKPT_META_MAX 64
typedef struct {
    lc_st_meta items[LC_CKPT_META_MAX];
    char values[LC_CKPT_META_MAX][LC_DATA_PATH_CHARS > LC_ATTN_SPEC_CHARS ? LC_DATA_PATH_CHARS : LC_ATTN_SPEC_CHARS];
    int n;
} lc_ckpt_meta_strings;

void lc_ckpt_meta_format(const lc_ckpt_meta *h, lc_ckpt_meta_strings *out);
/* Read and check every key (presence, syntax, range) and the configuration as a whole; LC_ERR_FORMAT
 * with a message naming the file and the key otherwise. */
lc_status lc_ckpt_meta_parse(const lc_st_file *f, lc_ckpt_meta *h);

/* The families of longctx checkpoints (metadata "model"): language models (vanilla, xl), classifiers
 * (classify), HIBERT (hibert) and encoder-decoders (seq2seq). */
typedef enum { LC_FAMILY_LM, LC_FAMILY_CLASSIFY, LC_FAMILY_HIBERT, LC_FAMILY_SEQ2SEQ } lc_ckpt_family;
/* The one refusal of a longctx checkpoint of another family than `want`, naming its family and the commands
 * that take it ("X: a classifier checkpoint (model = classify), not a language model: use it with longctx
 * predict, eval --task classify or train --task classify --resume"). LC_OK for the wanted family, and for a
 * file whose "format" or "model" is not one of longctx's (the key table's reader then says what is wrong). */
lc_status lc_ckpt_check_family(const lc_st_file *f, lc_ckpt_family want);

/* Restore the XL memory saved in state.memory.* (shape [memory_batch, rows, C]) of streams first ..
 * first+count-1 into the model's streams 0 .. count-1, when it fits the model as built (a resume); an
 * evaluation or sampling model of another shape starts without memory instead. The file's tensor table
 * must have been checked. */
lc_status lc_ckpt_read_memory(const lc_st_file *f, const lc_ckpt_meta *h, lc_model *m, long first, int count);

/* The table, for documentation checks: key i (NULL past the end) and whether the model must be xl. */
const char *lc_ckpt_meta_key(int i, int *xl_only);
/* The same for HIBERT checkpoints (models/hibert/checkpoint_hibert.c). */
const char *lc_hibert_meta_key(int i);
/* A HIBERT checkpoint's metadata for the model and its run, as lc_hibert_save writes it. */
lc_status lc_hibert_meta_format(const lc_hibert *m, const lc_hibert_run *run, lc_ckpt_meta_strings *out);
/* The same for seq2seq checkpoints (models/seq2seq/checkpoint_seq2seq.c). */
const char *lc_seq2seq_meta_key(int i);
/* The metadata a seq2seq checkpoint of m with run would hold (the settings processes training together
 * compare). */
void lc_seq2seq_meta_strings(const lc_seq2seq *m, const lc_seq2seq_run *run, lc_ckpt_meta_strings *out);
/* 1 when path opens as a safetensors file whose metadata "model" is `model` (the commands that take
 * checkpoints of several families choose by it), else 0. */
int lc_ckpt_is_model(const char *path, const char *model);

#endif
