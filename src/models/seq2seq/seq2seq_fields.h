/* The seq2seq model's configuration fields (lc_seq2seq_config), one row each, with the columns of the
 * language model's table (nn/lm_fields.h; the families' conventions: nn/stack_fields.h). Every place that
 * knows a field by name derives from this list: the checkpoint's metadata keys, their ranges and presence
 * (models/seq2seq/checkpoint_seq2seq.c) and `train --task seq2seq`'s flags and their --help lines
 * (cli/cmd_seq2seq.c: the encoder's flags shape both stacks, so the decoder's rows have none). Adding a
 * field is one row here, beside the member in lc_seq2seq_config (a default other than 0 goes in
 * lc_seq2seq_config_default). Rows are in the order the checkpoint writes them. */
#ifndef LC_MODELS_SEQ2SEQ_FIELDS_H
#define LC_MODELS_SEQ2SEQ_FIELDS_H

#include "longctx.h"
#include "nn/stack_fields.h"

#define LC_SEQ2SEQ_ENC(member) enc.member
#define LC_SEQ2SEQ_DEC(member) dec.member
#define LC_SEQ2SEQ_HELP_layers "blocks of the encoder and of the decoder (default 2)"
#define LC_SEQ2SEQ_HELP_dim "model width of both stacks (default 128)"
#define LC_SEQ2SEQ_HELP_heads "attention heads (default 4; must divide --dim)"
#define LC_SEQ2SEQ_HELP_ffn "feed-forward width (default 512)"
#define LC_SEQ2SEQ_HELP_attn "attention kinds per layer/head group, e.g. window:w=128 (docs/guides/attention.md)"
#define LC_SEQ2SEQ_HELP(name) LC_SEQ2SEQ_HELP_##name

#define LC_SEQ2SEQ_FIELDS(X)                                                                                       \
    LC_STACK_FIELDS(X, LC_SEQ2SEQ_ENC, LC_FLAG_PLAIN, LC_SEQ2SEQ_HELP)                                             \
    LC_STACK_FIELDS(X, LC_SEQ2SEQ_DEC, LC_FLAG_NONE, LC_HELP_NONE)                                                 \
    X(max_src_len, INT, "--max-src-len", 0, 1 << 20, 1 << 20, LC_F_REQUIRED, NULL, "longest source in bytes (default: the files' longest)") \
    X(max_tgt_len, INT, "--max-tgt-len", 1, 1 << 20, 1 << 20, LC_F_REQUIRED, NULL, "longest target in bytes (default: the files' longest)") \
    LC_BLOCK_FIELDS(X)                                                                                             \
    X(tied, BOOL_OFF, "--untied", 0, 0, 1, LC_F_REQUIRED, NULL,                                                    \
      "own source, decoder-input and output embeddings (default: one shared)")

#endif
