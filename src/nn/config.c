/* Model configuration: presets, defaults and validation. */
#include <stdlib.h>
#include <string.h>

#include "attn/spec.h"
#include "core/status.h"
#include "longctx.h"
#include "nn/lm_fields.h"
#include "nn/stacks.h"

LC_FIELD_TABLE(lc_lm_field_table, lc_config, LC_LM_FIELDS)

typedef struct {
    const char *name;
    int n_layer, d_model, n_head, d_ff, seq_len;
    float dropout;
} lc_preset;

/* Presets give the shape; every preset is a Transformer-XL model with mem_len = seq_len unless the
 * caller changes `model`. "small" is the default model of the main job: it reaches well under 2.5 valid bpc on Tiny
 * Shakespeare within its default training budget on a 2-core machine (docs/results/language-model.md). */
static const lc_preset lc_presets[] = {
    {"tiny", 2, 64, 4, 256, 64, 0.0f},
    {"small", 4, 128, 4, 512, 128, 0.0f},
    {"base", 6, 256, 8, 1024, 256, 0.1f},
};

static void apply(lc_config *cfg, const lc_preset *p) {
    memset(cfg, 0, sizeof *cfg);
    cfg->vocab = 256;
    cfg->n_layer = p->n_layer;
    cfg->d_model = p->d_model;
    cfg->n_head = p->n_head;
    cfg->d_ff = p->d_ff;
    cfg->seq_len = p->seq_len;
    cfg->norm = LC_NORM_PRE;
    cfg->activation = LC_ACT_GELU;
    cfg->tied = 1;
    cfg->dropout = p->dropout;
    cfg->model = LC_MODEL_XL;
    cfg->mem_len = p->seq_len;
}

void lc_config_default(lc_config *cfg) { apply(cfg, &lc_presets[1]); }

lc_status lc_config_preset(lc_config *cfg, const char *name) {
    lc_clear_error();
    for (size_t i = 0; i < sizeof lc_presets / sizeof lc_presets[0]; i++)
        if (strcmp(lc_presets[i].name, name) == 0) {
            apply(cfg, &lc_presets[i]);
            return LC_OK;
        }
    return lc_fail(LC_ERR_ARG, "unknown preset '%s' (known: tiny, small, base)", name);
}

lc_status lc_precision_check(lc_precision p) {
    if (p != LC_PRECISION_FP32 && p != LC_PRECISION_BF16) return lc_fail(LC_ERR_ARG, "precision must be fp32 or bf16");
    return LC_OK;
}

lc_status lc_config_validate(const lc_config *c) {
    lc_clear_error();
    if (c->vocab != 256) return lc_fail(LC_ERR_ARG, "vocab must be 256 (bytes), got %d", c->vocab);
    if (c->n_layer < 1 || c->n_layer > 1024) return lc_fail(LC_ERR_ARG, "layers must be 1..1024, got %d", c->n_layer);
    if (c->d_model < 1 || c->d_model > 65536) return lc_fail(LC_ERR_ARG, "dim must be 1..65536, got %d", c->d_model);
    if (c->n_head < 1) return lc_fail(LC_ERR_ARG, "heads must be at least 1, got %d", c->n_head);
    if (c->d_model % c->n_head)
        return lc_fail(LC_ERR_ARG, "dim %d is not divisible by heads %d", c->d_model, c->n_head);
    if (c->d_ff < 1 || c->d_ff > 1 << 20) return lc_fail(LC_ERR_ARG, "ffn must be 1..1048576, got %d", c->d_ff);
    if (c->seq_len < 1 || c->seq_len > 1 << 24)
        return lc_fail(LC_ERR_ARG, "seg-len must be 1..16777216, got %d", c->seq_len);
    if (c->norm != LC_NORM_PRE && c->norm != LC_NORM_POST) return lc_fail(LC_ERR_ARG, "norm must be pre or post");
    if (c->activation != LC_ACT_GELU && c->activation != LC_ACT_RELU)
        return lc_fail(LC_ERR_ARG, "activation must be gelu or relu");
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return lc_fail(LC_ERR_ARG, "dropout must be in [0, 1), got %g", (double)c->dropout);
    if (c->model != LC_MODEL_VANILLA && c->model != LC_MODEL_XL) return lc_fail(LC_ERR_ARG, "model must be xl or vanilla");
    if (c->model == LC_MODEL_XL) {
        if (c->d_model % 2) return lc_fail(LC_ERR_ARG, "xl needs an even dim (sin/cos halves), got %d", c->d_model);
        if (c->mem_len < 0 || c->mem_len > 1 << 24) return lc_fail(LC_ERR_ARG, "mem-len must be 0..16777216, got %d", c->mem_len);
        if (c->clamp_len < 0) return lc_fail(LC_ERR_ARG, "clamp-len must be >= 0, got %d", c->clamp_len);
        if (c->same_length && c->mem_len < 1) return lc_fail(LC_ERR_ARG, "same-length needs mem-len >= 1");
    }
    if (c->objective != LC_OBJECTIVE_CLM && c->objective != LC_OBJECTIVE_MLM)
        return lc_fail(LC_ERR_ARG, "objective must be clm or mlm");
    if (c->objective == LC_OBJECTIVE_MLM && c->model != LC_MODEL_VANILLA)
        return lc_fail(LC_ERR_ARG, "objective mlm is a bidirectional encoder: it needs --model vanilla");
    if (c->qk_share < 0 || (c->qk_share > 1 && c->n_head % c->qk_share))
        return lc_fail(LC_ERR_ARG, "share-qk %d must divide heads %d", c->qk_share, c->n_head);
    if (c->attn_share < 0 || c->attn_share > c->n_layer)
        return lc_fail(LC_ERR_ARG, "share-attn must be 0..%d (layers), got %d", c->n_layer, c->attn_share);
    if (c->reversible && (c->norm != LC_NORM_PRE || c->model != LC_MODEL_VANILLA))
        return lc_fail(LC_ERR_ARG, "reversible layers need --norm pre and --model vanilla (no memory)");
    if (c->extra_tokens < 0 || c->extra_tokens > 65536)
        return lc_fail(LC_ERR_ARG, "extra-tokens must be 0..65536, got %d", c->extra_tokens);
    if (c->extra_tokens && c->model != LC_MODEL_VANILLA)
        return lc_fail(LC_ERR_ARG, "extra-tokens need --model vanilla (no memory)");
    if (lc_precision_check(c->precision)) return LC_ERR_ARG;
    if (c->ffn_chunk < 0) return lc_fail(LC_ERR_ARG, "ffn-chunk must be >= 0, got %d", c->ffn_chunk);
    if (!memchr(c->attn, 0, sizeof c->attn)) return lc_fail(LC_ERR_ARG, "attn spec is not terminated");
    lc_attn_layer *layers = malloc(sizeof *layers * (size_t)c->n_layer);
    if (!layers) return lc_fail(LC_ERR_NOMEM, "out of memory parsing the attention spec");
    char err[512];
    int rc = lc_attn_spec_parse(c->attn, c->n_layer, c->n_head, layers, err, sizeof err);
    free(layers);
    if (rc) return lc_fail(LC_ERR_ARG, "%s", err);
    return LC_OK;
}

/* Whether a field holds its zero value (a TEXT field: ""). */
#define IS_ZERO_INT(v) ((v) == 0)
#define IS_ZERO_BOOL(v) ((v) == 0)
#define IS_ZERO_BOOL_OFF(v) ((v) == 0)
#define IS_ZERO_CHOICE(v) ((v) == 0)
#define IS_ZERO_FLOAT(v) ((v) == 0.0f)
#define IS_ZERO_TEXT(v) ((v)[0] == 0)

int lc_config_derive_rows(lc_config *cfg, uint64_t given) {
    if (cfg->objective == LC_OBJECTIVE_MLM && !(given >> LC_LM_F_model & 1))
        cfg->model = LC_MODEL_VANILLA; /* an encoder: absolute positions, no memory */
    if (cfg->model != LC_MODEL_XL) {
#define XL_GIVEN(field, kind, flag, lo, hi, file_hi, need, ...)                                                      \
    if (((need) & LC_F_XL_ONLY) && (given >> LC_LM_F_##field & 1) && !IS_ZERO_##kind(cfg->field)) return LC_LM_F_##field;
        LC_LM_FIELDS(XL_GIVEN)
#undef XL_GIVEN
        cfg->mem_len = 0;
    } else if (!(given >> LC_LM_F_mem_len & 1)) {
        cfg->mem_len = cfg->seq_len;
    }
    return -1;
}
