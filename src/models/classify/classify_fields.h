/* The classifier's configuration fields (lc_classify_config), one row each, with the columns of the language
 * model's table (nn/lm_fields.h; the families' conventions: nn/stack_fields.h). Every place that knows a
 * field by name derives from this list: the checkpoint's metadata keys, their ranges and presence
 * (models/classify/checkpoint_classify.c) and `train --task classify`'s flags and their --help lines
 * (cli/cmd_classify.c). Adding a field is one row here, beside the member in lc_classify_config (a default
 * other than 0 goes in lc_classify_config_default). Rows are in the order the checkpoint writes them. */
#ifndef LC_MODELS_CLASSIFY_FIELDS_H
#define LC_MODELS_CLASSIFY_FIELDS_H

#include "longctx.h"
#include "nn/stack_fields.h"

/* The encoder's flags are the language model's (--layers ...), with its help lines. */
#define LC_CLASSIFY_HELP_layers "Transformer blocks"
#define LC_CLASSIFY_HELP_dim "model width (d_model)"
#define LC_CLASSIFY_HELP_heads "attention heads (must divide --dim)"
#define LC_CLASSIFY_HELP_ffn "feed-forward width"
#define LC_CLASSIFY_HELP_attn "attention kinds per layer/head group, e.g. window:w=128 (docs/guides/attention.md)"
#define LC_CLASSIFY_HELP(name) LC_CLASSIFY_HELP_##name

#define LC_CLASSIFY_FIELDS(X)                                                                                      \
    LC_STACK_SHAPE_FIELDS(X, LC_FIELD_TOP, LC_FLAG_PLAIN, LC_CLASSIFY_HELP)                                        \
    LC_BLOCK_FIELDS(X)                                                                                             \
    LC_STACK_ATTN_FIELD(X, LC_FIELD_TOP, LC_FLAG_PLAIN, LC_CLASSIFY_HELP)                                          \
    X(attn_share, INT, "--share-attn", 1, 1024, 4096, 0, NULL, "consecutive layers sharing one attention module")  \
    X(max_len, INT, "--max-len", 1, LC_MAX_LEN_LIMIT, LC_MAX_LEN_LIMIT, LC_F_REQUIRED, NULL,                       \
      "tokens read per example (default 4000 bytes, 2000 words)")                                                 \
    X(tokens, CHOICE, "--tokens", 0, 0, 0, LC_F_REQUIRED, "bytes|words", "bytes (default) or words (vocabulary from --data)") \
    X(vocab, INT, NULL, 1, 0, LC_WORD_VOCAB_LIMIT, LC_F_REQUIRED, NULL, "")                                        \
    X(n_classes, INT, NULL, 2, 0, LC_MAX_LABELS, LC_F_REQUIRED, NULL, "")                                          \
    X(d_hidden, INT, "--hidden", 0, 65536, 65536, LC_F_REQUIRED, NULL, "the head's hidden width (default: --dim)") \
    X(pool, CHOICE, "--pool", 0, 0, 0, LC_F_REQUIRED, "cls|mean|max",                                              \
      "cls (default: the [CLS] state), mean or max (each feature over every position)")                           \
    LC_PRECISION_FIELD(X, "linear layers' products: fp32 (default) or bf16 (AVX512_BF16 CPUs)")                    \
    X(objective, CHOICE, "--objective", 0, 0, 0, 0, "labels|mlm",                                                  \
      "mlm: pre-train the encoder on masked tokens of --data (default: the labels)")                              \
    X(bracket_depth, INT, "--bracket-depth", 0, LC_BRACKET_DEPTH_LIMIT, LC_BRACKET_DEPTH_LIMIT, 0, NULL,          \
      "rows of a learned embedding of each token's [ ] nesting depth, deeper ones clipped (default 0: none)")     \
    X(drop_parens, CHOICE, "--parens", 0, 0, 0, 0, "keep|drop",                                                    \
      "words: drop skips the words ( and ), as LRA's ListOps input pipeline does (default keep)")

#endif
