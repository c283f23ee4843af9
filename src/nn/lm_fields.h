/* The language model's configuration fields (lc_config), one row each. Every place that knows a field by
 * name derives from this list: the CLI's flags and their --help lines (cli/model_flags.c), the checkpoint
 * metadata's keys, ranges and presence (train/checkpoint_meta.c), the flat API's get and set by name and
 * its description of each field (models/lm/flat_lm.c), which the Python package reads. Adding a field is
 * one row here, beside the member in lc_config (a default other than 0 goes in nn/config.c, a rule between
 * fields in lc_config_validate or lc_config_derive_rows). Rows are in the order the checkpoint writes them.
 * It sits in src/nn beside nn/config.c (the presets and lc_config_validate), below the layers that read it.
 *
 * X(field, kind, flag, lo, hi, file_hi, need, text, help)
 *   field    lc_config's member: the flat API's name and the checkpoint's key
 *   kind     INT (int), FLOAT (float), BOOL (int 0 or 1; the flag sets 1), BOOL_OFF (int 0 or 1; the flag
 *            sets 0), CHOICE (an enum stored as int, values 0, 1, ... named by text), TEXT (a char array)
 *   flag     the CLI flag, "--layers" (NULL: none); the flat API takes its name too ("layers", "seg_len")
 *   lo, hi   the numbers the flag accepts
 *   file_hi  the largest value a checkpoint may hold: INT 0..file_hi, FLOAT [0, file_hi)
 *   need     LC_F_* bits
 *   text     CHOICE: the value names in enum order, "pre|post"; TEXT: what an empty value is written as
 *            ("full"); else NULL
 *   help     the flag's --help line */
#ifndef LC_MODEL_LM_FIELDS_H
#define LC_MODEL_LM_FIELDS_H

#include <stdint.h>

#include "longctx.h"
#include "longctx/fields.h"

/* need: REQUIRED in every checkpoint (else absent in older files: 0 or ""); XL_ONLY: Transformer-XL models only
 * (a vanilla model's checkpoint leaves the key out; setting it non-zero for one is an error); RUN: a run
 * setting, not the model's shape (a resumed or loaded model takes it too). */
enum { LC_F_REQUIRED = LC_FIELD_REQUIRED, LC_F_XL_ONLY = LC_FIELD_XL_ONLY, LC_F_RUN = LC_FIELD_RUN };

/* The value names of the choices the families share. */
#define LC_NORM_CHOICES "pre|post"
#define LC_ACT_CHOICES "gelu|relu"
#define LC_PRECISION_CHOICES "fp32|bf16"

#define LC_LM_FIELDS(X)                                                                                              \
    X(model, CHOICE, "--model", 0, 0, 0, LC_F_REQUIRED, "vanilla|xl", "xl (default: Transformer-XL) or vanilla")    \
    X(vocab, INT, NULL, 0, 0, 1 << 30, LC_F_REQUIRED, NULL, "")                                                     \
    X(n_layer, INT, "--layers", 1, 1024, 1 << 30, LC_F_REQUIRED, NULL, "Transformer blocks")                        \
    X(d_model, INT, "--dim", 1, 65536, 1 << 30, LC_F_REQUIRED, NULL, "model width (d_model)")                       \
    X(n_head, INT, "--heads", 1, 4096, 1 << 30, LC_F_REQUIRED, NULL, "attention heads (must divide --dim)")         \
    X(d_ff, INT, "--ffn", 1, 1 << 20, 1 << 30, LC_F_REQUIRED, NULL, "feed-forward width")                           \
    X(seq_len, INT, "--seg-len", 1, 1 << 24, 1 << 30, LC_F_REQUIRED, NULL, "tokens per training segment")          \
    X(norm, CHOICE, "--norm", 0, 0, 0, LC_F_REQUIRED, LC_NORM_CHOICES, "pre (default) or post LayerNorm")           \
    X(activation, CHOICE, "--activation", 0, 0, 0, LC_F_REQUIRED, LC_ACT_CHOICES, "gelu (default) or relu")        \
    X(tied, BOOL_OFF, "--untied", 0, 0, 1, LC_F_REQUIRED, NULL,                                                     \
      "separate output projection instead of the tied embedding")                                                  \
    X(dropout, FLOAT, "--dropout", 0, 0.99, 1, LC_F_REQUIRED, NULL, "dropout probability")                          \
    X(attn, TEXT, "--attn", 0, 0, 0, 0, "full",                                                                     \
      "attention kinds per layer/head group, e.g. window:w=128 (docs/guides/attention.md)")                        \
    X(qk_share, INT, "--share-qk", 1, 4096, 1 << 20, 0, NULL, "heads per group sharing one query and one key projection") \
    X(attn_share, INT, "--share-attn", 1, 1024, 1 << 20, 0, NULL, "consecutive layers sharing one attention module") \
    X(objective, CHOICE, "--objective", 0, 0, 0, 0, "clm|mlm",                                                      \
      "clm (default: causal LM) or mlm (bidirectional encoder, masked LM)")                                        \
    X(reversible, BOOL, "--reversible", 0, 0, 1, 0, NULL,                                                           \
      "reversible residual layers (activations do not grow with depth)")                                           \
    X(ffn_chunk, INT, "--ffn-chunk", 0, 1 << 30, 1 << 30, 0, NULL, "feed-forward over chunks of N rows (0: all at once)") \
    X(extra_tokens, INT, "--extra-tokens", 0, 65536, 65536, 0, NULL,                                                \
      "learned tokens in front of every sequence (ETC globals)")                                                   \
    X(precision, CHOICE, "--precision", 0, 0, 0, LC_F_RUN, LC_PRECISION_CHOICES,                                    \
      "linear layers' products: fp32 (default) or bf16 (AVX512_BF16 CPUs)")                                       \
    X(mem_len, INT, "--mem-len", 0, 1 << 24, 1 << 24, LC_F_REQUIRED | LC_F_XL_ONLY, NULL,                           \
      "xl: memory rows per layer (default: seg-len)")                                                              \
    X(clamp_len, INT, "--clamp-len", 0, 1 << 24, 1 << 24, LC_F_REQUIRED | LC_F_XL_ONLY, NULL,                       \
      "xl: clamp relative distances (0: off)")                                                                     \
    X(same_length, BOOL, "--same-length", 0, 0, 1, LC_F_REQUIRED | LC_F_XL_ONLY, NULL,                              \
      "xl: every query sees exactly mem-len keys")                                                                 \
    X(shared_uv, BOOL, "--shared-uv", 0, 0, 1, LC_F_REQUIRED | LC_F_XL_ONLY, NULL,                                  \
      "xl: one pair of position biases for all layers")

/* The rows' count and each row's index: LC_LM_F_n_layer, ... */
enum {
#define LC_LM_F_INDEX(field, ...) LC_LM_F_##field,
    LC_LM_FIELDS(LC_LM_F_INDEX)
#undef LC_LM_F_INDEX
    LC_LM_FIELD_COUNT
};
_Static_assert(LC_LM_FIELD_COUNT <= 64, "lc_config_derive's `given` holds one bit per field");

/* The rows as a generic field table (longctx/fields.h) over lc_config: what the family registry
 * (longctx/family.h) and the binding API's family calls read. */
const lc_field *lc_lm_field_table(int *n);

/* The rules between fields that `longctx train` applies to the flags given, and longctx.Model.create to the
 * keys given (bit i of `given`: row i was set): objective mlm makes the model vanilla unless `model` was
 * given; an XL-only field given non-zero for a vanilla model is refused (-1 on success, else its row); an
 * xl model's mem_len is seq_len unless given; a vanilla model's is 0. */
int lc_config_derive_rows(lc_config *cfg, uint64_t given);

#endif
