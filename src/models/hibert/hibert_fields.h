/* HIBERT's configuration fields (lc_hibert_config), one row each, with the columns of the language model's
 * table (nn/lm_fields.h; the families' conventions: nn/stack_fields.h). Every place that knows a field by
 * name derives from this list: the checkpoint's metadata keys, their ranges and presence
 * (models/hibert/checkpoint_hibert.c) and `hibert pretrain|finetune`'s flags and their --help lines
 * (cli/cmd_hibert.c). Adding a field is one row here, beside the member in lc_hibert_config (a default other
 * than 0 goes in lc_hibert_config_default). Rows are in the order the checkpoint writes them. */
#ifndef LC_MODELS_HIBERT_FIELDS_H
#define LC_MODELS_HIBERT_FIELDS_H

#include "longctx.h"
#include "nn/stack_fields.h"

#define LC_HIBERT_SENT(member) sent.member
#define LC_HIBERT_DOC(member) doc.member
#define LC_HIBERT_DEC(member) dec.member
#define LC_HIBERT_SENT_FLAG(name) "--sent-" #name
#define LC_HIBERT_DOC_FLAG(name) "--doc-" #name
#define LC_HIBERT_DEC_FLAG(name) "--dec-" #name
/* A stack's help lines: what it is, its default layers, a note on its attention. */
#define LC_HIBERT_HELP_layers(what, layers, note) what " layers (default " layers ")"
#define LC_HIBERT_HELP_dim(what, layers, note) what " width (default 128)"
#define LC_HIBERT_HELP_heads(what, layers, note) what " heads (default 4)"
#define LC_HIBERT_HELP_ffn(what, layers, note) what " feed-forward width (default 512)"
#define LC_HIBERT_HELP_attn(what, layers, note) what " attention spec (" note "default full)"
#define LC_HIBERT_SENT_HELP(name) LC_HIBERT_HELP_##name("sentence encoder", "2", "")
#define LC_HIBERT_DOC_HELP(name) LC_HIBERT_HELP_##name("document encoder", "2", "")
#define LC_HIBERT_DEC_HELP(name) LC_HIBERT_HELP_##name("sentence decoder", "1", "causal; ")

#define LC_HIBERT_FIELDS(X)                                                                                        \
    LC_STACK_FIELDS(X, LC_HIBERT_SENT, LC_HIBERT_SENT_FLAG, LC_HIBERT_SENT_HELP)                                   \
    LC_STACK_FIELDS(X, LC_HIBERT_DOC, LC_HIBERT_DOC_FLAG, LC_HIBERT_DOC_HELP)                                      \
    LC_STACK_FIELDS(X, LC_HIBERT_DEC, LC_HIBERT_DEC_FLAG, LC_HIBERT_DEC_HELP)                                      \
    X(max_sent_len, INT, "--max-sent-len", 1, 1 << 20, 1 << 20, LC_F_REQUIRED, NULL,                               \
      "bytes read of a sentence (default 256)")                                                                   \
    X(max_sents, INT, "--max-sents", 1, 1 << 20, 1 << 20, LC_F_REQUIRED, NULL,                                     \
      "sentences per document; longer ones are cut into chunks (default 128)")                                    \
    X(sent_words, INT, "--sent-words", 0, 1 << 22, 1 << 22, 0, "sent.words",                                       \
      "hashed word vectors added to each sentence vector, this many buckets; the EOS part then starts at 0 "      \
      "(longctx's, not the paper's; default 0: off)")                                                             \
    X(head_features, INT, "--head-features", 0, LC_SUMMARY_FEATURES, LC_HIBERT_MAX_FEATURES, 0, "head.features",   \
      "finetune: the head also reads this many of each sentence's position, length, LexRank centrality and word " \
      "frequency (longctx's extension; 3: the first three, 4: all; default 0: the paper's head; with --init of a " \
      "checkpoint without them, they start at 0)")                                                                \
    LC_BLOCK_FIELDS(X)                                                                                             \
    LC_PRECISION_FIELD(X, "linear layers' products: fp32 or bf16 (AVX512_BF16 CPUs; default fp32, with --init or "  \
                          "--resume the checkpoint's)")

#endif
