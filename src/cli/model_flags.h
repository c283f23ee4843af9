/* Model-shape flags shared by the train and bench commands. */
#ifndef LC_CLI_MODEL_FLAGS_H
#define LC_CLI_MODEL_FLAGS_H

#include "cli/cli.h"

#define LC_MODEL_FLAG_COUNT 22

typedef struct {
    const char *preset, *norm, *activation, *model, *attn, *objective;
    int layers, dim, heads, ffn, seg_len, untied, share_qk, share_attn, reversible, ffn_chunk, extra_tokens;
    int mem_len, clamp_len, same_length, shared_uv;
    float dropout;
} lc_model_flags;

void lc_model_flags_init(lc_model_flags *f);
/* Appends the flags to opts[n..]; returns the new count (n + LC_MODEL_FLAG_COUNT). */
int lc_model_flags_add(lc_model_flags *f, lc_opt *opts, int n);
/* Builds cfg from the preset and the flags given; -1 on success, else an exit code (error printed). */
int lc_model_flags_apply(const lc_model_flags *f, lc_opt *opts, int n, const char *cmd, lc_config *cfg);
/* 1 when any model flag was given (its name in *which). */
int lc_model_flags_any(lc_opt *opts, int n, const char **which);

#endif
