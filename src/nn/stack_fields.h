/* The field-table rows that the classifier, HIBERT and seq2seq share (models/classify/classify_fields.h,
 * models/hibert/hibert_fields.h, models/seq2seq/seq2seq_fields.h): one stack's shape and attention spec, and
 * the blocks' norm, activation and dropout. The rows have the columns of the language model's table
 * (nn/lm_fields.h): X(field, kind, flag, lo, hi, file_hi, need, text, help).
 *
 * In the families' tables:
 *   field    the member's path in the family's config ("enc.n_layer"): the checkpoint's key, unless `text`
 *            names another (below)
 *   lo, hi   the numbers the flag accepts
 *   file_hi  the largest value a checkpoint may hold: a required INT lo..file_hi, an optional one
 *            0..file_hi (absent: 0); FLOAT [0, file_hi)
 *   text     CHOICE: the value names; TEXT: what an empty value is written as; INT, FLOAT, BOOL: the
 *            checkpoint's key where it is not the field's path (HIBERT's sent_words is "sent.words"), else NULL
 *   need     LC_F_REQUIRED: in every checkpoint; LC_F_RUN: a run setting (precision)
 *
 * A stack's rows take three function-like macros: P(member), the member's path (sent.n_layer); F(name), the
 * flag ("--sent-layers", or NULL: none); H(name), the help line. name is one of layers, dim, heads, ffn, attn. */
#ifndef LC_NN_STACK_FIELDS_H
#define LC_NN_STACK_FIELDS_H

#include "nn/lm_fields.h"

/* X applied to a row whose arguments are expanded first (a path P(n_layer) becomes sent.n_layer). */
#define LC_FIELD_ROW(X, ...) X(__VA_ARGS__)

/* A stack's shape: layers, width, heads, feed-forward width. */
#define LC_STACK_SHAPE_FIELDS(X, P, F, H)                                                                          \
    LC_FIELD_ROW(X, P(n_layer), INT, F(layers), 1, 4096, 4096, LC_F_REQUIRED, NULL, H(layers))                     \
    LC_FIELD_ROW(X, P(d_model), INT, F(dim), 1, 1 << 20, 1 << 20, LC_F_REQUIRED, NULL, H(dim))                     \
    LC_FIELD_ROW(X, P(n_head), INT, F(heads), 1, 1 << 16, 1 << 16, LC_F_REQUIRED, NULL, H(heads))                  \
    LC_FIELD_ROW(X, P(d_ff), INT, F(ffn), 1, 1 << 24, 1 << 24, LC_F_REQUIRED, NULL, H(ffn))

/* A stack's attention spec (docs/guides/attention.md; "": full). */
#define LC_STACK_ATTN_FIELD(X, P, F, H) LC_FIELD_ROW(X, P(attn), TEXT, F(attn), 0, 0, 0, LC_F_REQUIRED, "full", H(attn))

/* A whole stack: its shape, then its attention spec. */
#define LC_STACK_FIELDS(X, P, F, H) LC_STACK_SHAPE_FIELDS(X, P, F, H) LC_STACK_ATTN_FIELD(X, P, F, H)

/* The blocks of every stack of the model: LayerNorm placement, activation, dropout. */
#define LC_BLOCK_FIELDS(X)                                                                                         \
    X(norm, CHOICE, "--norm", 0, 0, 0, LC_F_REQUIRED, LC_NORM_CHOICES, "pre (default) or post LayerNorm")          \
    X(activation, CHOICE, "--activation", 0, 0, 0, LC_F_REQUIRED, LC_ACT_CHOICES, "gelu (default) or relu")         \
    X(dropout, FLOAT, "--dropout", 0, 0.99, 1, LC_F_REQUIRED, NULL, "dropout probability")

/* The products' precision of the linear layers (a run setting: changes no tensor; absent in older files). */
#define LC_PRECISION_FIELD(X, help) X(precision, CHOICE, "--precision", 0, 0, 0, LC_F_RUN, LC_PRECISION_CHOICES, help)

/* Paths and flags of a stack with no prefix (the classifier's encoder: n_layer, --layers). */
#define LC_FIELD_TOP(member) member
#define LC_FLAG_PLAIN(name) "--" #name
#define LC_FLAG_NONE(name) NULL
#define LC_HELP_NONE(name) ""

#endif
