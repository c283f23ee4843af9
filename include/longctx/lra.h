/* longctx public API, part of longctx.h (include that one): Long-range classification data (Long Range Arena): ListOps, labelled TSV files, tokenization. */
#ifndef LONGCTX_LRA_H
#define LONGCTX_LRA_H

#include <stddef.h>
#include <stdint.h>

#include "longctx/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================
 * Long-range classification data (Long Range Arena, docs/guides/classify.md): the ListOps generator and its
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

/* The generator: LRA's sampling (experiments/lra-data/README.md), sequences outside the length range and duplicates (the
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
/* What reading a TSV file may hold (0: the default): the file is read as a stream, and a line longer than
 * max_line bytes, or more than max_examples examples, is LC_ERR_FORMAT naming the file and the line, so that
 * a small gzip file of many short lines cannot drive memory (an example costs its text and about 40 bytes). */
#define LC_TSV_MAX_EXAMPLES (1L << 22)
#define LC_TSV_MAX_LINE (1u << 24)
typedef struct {
    long max_examples;
    size_t max_line;
} lc_tsv_limits;
/* lc_labelled_read within limits (NULL: the defaults, as lc_labelled_read). */
lc_status lc_labelled_read_limited(const char *path, const char *label_col, const char *text_col,
                                   const lc_tsv_limits *limits, lc_labelled_data *out);
void lc_labelled_free(lc_labelled_data *d);
/* A TSV file of source/target pairs (seq2seq, docs/seq2seq.md): the format of a labelled file, but both
 * columns are kept as bytes (either may be empty) and no label set is made. */
typedef struct {
    long n;                    /* pairs */
    const uint8_t **src, **tgt; /* pair i: src[i][0 .. src_len[i]) and tgt[i][0 .. tgt_len[i]) (NUL-terminated too) */
    size_t *src_len, *tgt_len;
    long *line;                /* pair i's line in the file (the header is line 1) */
    char *buf_;                /* internal: the file's bytes */
} lc_pair_data;
/* Reads a TSV file of pairs within limits (NULL: the defaults) as lc_labelled_read_limited reads a labelled
 * file: src_col and tgt_col name a column or give its number from 1; NULL: "Source" and "Target" when the
 * header has them, else the last and the first. Errors name the file, and the line for a bad row. */
lc_status lc_pairs_read(const char *path, const char *src_col, const char *tgt_col, const lc_tsv_limits *limits,
                        lc_pair_data *out);
void lc_pairs_free(lc_pair_data *d);
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

#ifdef __cplusplus
}
#endif
#endif
