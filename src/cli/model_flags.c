/* The model-shape flags shared by `train` and `bench`: a preset, then per-field overrides. */
#include <string.h>

#include "cli/model_flags.h"
#include "kernels/kernels.h"

void lc_model_flags_init(lc_model_flags *f) {
    memset(f, 0, sizeof *f);
    f->preset = "small";
}

int lc_model_flags_add(lc_model_flags *f, lc_opt *opts, int n) {
    lc_opt add[] = {
        {"--preset", OPT_STR, &f->preset, 0, 0, "model preset: tiny, small (default), base", 0},
        {"--layers", OPT_INT, &f->layers, 1, 1024, "Transformer blocks", 0},
        {"--dim", OPT_INT, &f->dim, 1, 65536, "model width (d_model)", 0},
        {"--heads", OPT_INT, &f->heads, 1, 4096, "attention heads (must divide --dim)", 0},
        {"--ffn", OPT_INT, &f->ffn, 1, 1 << 20, "feed-forward width", 0},
        {"--seg-len", OPT_INT, &f->seg_len, 1, 1 << 24, "tokens per training segment", 0},
        {"--norm", OPT_STR, &f->norm, 0, 0, "pre (default) or post LayerNorm", 0},
        {"--activation", OPT_STR, &f->activation, 0, 0, "gelu (default) or relu", 0},
        {"--untied", OPT_FLAG, &f->untied, 0, 0, "separate output projection instead of the tied embedding", 0},
        {"--dropout", OPT_FLOAT, &f->dropout, 0, 0.99, "dropout probability", 0},
        {"--model", OPT_STR, &f->model, 0, 0, "xl (default: Transformer-XL) or vanilla", 0},
        {"--mem-len", OPT_INT, &f->mem_len, 0, 1 << 24, "xl: memory rows per layer (default: seg-len)", 0},
        {"--clamp-len", OPT_INT, &f->clamp_len, 0, 1 << 24, "xl: clamp relative distances (0: off)", 0},
        {"--same-length", OPT_FLAG, &f->same_length, 0, 0, "xl: every query sees exactly mem-len keys", 0},
        {"--shared-uv", OPT_FLAG, &f->shared_uv, 0, 0, "xl: one pair of position biases for all layers", 0},
        {"--attn", OPT_STR, &f->attn, 0, 0, "attention kinds per layer/head group, e.g. window:w=128 (docs/guides/attention.md)", 0},
        {"--share-qk", OPT_INT, &f->share_qk, 1, 4096, "heads per group sharing one query and one key projection", 0},
        {"--share-attn", OPT_INT, &f->share_attn, 1, 1024, "consecutive layers sharing one attention module", 0},
        {"--reversible", OPT_FLAG, &f->reversible, 0, 0, "reversible residual layers (activations do not grow with depth)", 0},
        {"--ffn-chunk", OPT_INT, &f->ffn_chunk, 0, 1 << 30, "feed-forward over chunks of N rows (0: all at once)", 0},
        {"--extra-tokens", OPT_INT, &f->extra_tokens, 0, 65536, "learned tokens in front of every sequence (ETC globals)", 0},
        {"--objective", OPT_STR, &f->objective, 0, 0, "clm (default: causal LM) or mlm (bidirectional encoder, masked LM)", 0},
        {"--precision", OPT_STR, &f->precision, 0, 0, "linear layers' products: fp32 (default) or bf16 (AVX512_BF16 CPUs)", 0},
    };
    int k = (int)(sizeof add / sizeof add[0]);
    memcpy(opts + n, add, sizeof add);
    return n + k;
}

int lc_precision_flag(const char *cmd, const char *value, lc_precision *p) {
    if (!value) return -1;
    if (strcmp(value, "fp32") == 0) *p = LC_PRECISION_FP32;
    else if (strcmp(value, "bf16") == 0) *p = LC_PRECISION_BF16;
    else {
        lc_cli_error("%s: --precision must be fp32 or bf16, got '%s'", cmd, value);
        return LC_EXIT_USAGE;
    }
    return -1;
}

int lc_model_flags_precision(const lc_model_flags *f, const char *cmd, lc_precision *p) {
    return lc_precision_flag(cmd, f->precision, p);
}

int lc_apply_precision_flag(lc_model *m, const char *cmd, const char *value) {
    lc_precision p = lc_model_config(m)->precision;
    int rc = lc_precision_flag(cmd, value, &p);
    if (rc >= 0) return rc;
    lc_status st = lc_model_set_precision(m, p);
    return st ? lc_cli_fail(st) : -1;
}

const char *lc_precision_note(lc_precision p) {
    if (p != LC_PRECISION_BF16) return "";
    const char *path = lc_precision_path(p);
    if (!strcmp(path, "fp32")) return " | bf16 asked: fp32 products (no AVX512_BF16 here, or LC_BF16=off)";
    return !strcmp(path, "bf16/portable") ? " | bf16 products (portable: emulated, slow)" : " | bf16 products (avx512bf16)";
}

static int seen(lc_opt *opts, int n, const char *name) { return lc_opt_get(opts, n, name)->seen; }

int lc_model_flags_any(lc_opt *opts, int n, const char **which) {
    const char *names[] = {"--preset", "--layers", "--dim", "--heads", "--ffn", "--seg-len", "--norm",
                           "--activation", "--untied", "--dropout", "--model", "--mem-len", "--clamp-len",
                           "--same-length", "--shared-uv", "--attn", "--share-qk", "--share-attn", "--objective", "--reversible", "--ffn-chunk", "--extra-tokens"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (seen(opts, n, names[i])) { *which = names[i]; return 1; }
    return 0;
}

int lc_model_flags_apply(const lc_model_flags *f, lc_opt *opts, int n, const char *cmd, lc_config *cfg) {
    if (lc_config_preset(cfg, f->preset)) {
        lc_cli_error("%s: --preset: %s", cmd, lc_last_error());
        return LC_EXIT_USAGE;
    }
    int rc = lc_model_flags_precision(f, cmd, &cfg->precision);
    if (rc >= 0) return rc;
    if (seen(opts, n, "--layers")) cfg->n_layer = f->layers;
    if (seen(opts, n, "--dim")) cfg->d_model = f->dim;
    if (seen(opts, n, "--heads")) cfg->n_head = f->heads;
    if (seen(opts, n, "--ffn")) cfg->d_ff = f->ffn;
    if (seen(opts, n, "--seg-len")) cfg->seq_len = f->seg_len;
    if (seen(opts, n, "--dropout")) cfg->dropout = f->dropout;
    if (f->untied) cfg->tied = 0;
    if (f->norm) {
        if (strcmp(f->norm, "pre") == 0) cfg->norm = LC_NORM_PRE;
        else if (strcmp(f->norm, "post") == 0) cfg->norm = LC_NORM_POST;
        else { lc_cli_error("%s: --norm must be pre or post, got '%s'", cmd, f->norm); return LC_EXIT_USAGE; }
    }
    if (f->activation) {
        if (strcmp(f->activation, "gelu") == 0) cfg->activation = LC_ACT_GELU;
        else if (strcmp(f->activation, "relu") == 0) cfg->activation = LC_ACT_RELU;
        else {
            lc_cli_error("%s: --activation must be gelu or relu, got '%s'", cmd, f->activation);
            return LC_EXIT_USAGE;
        }
    }
    if (f->objective) {
        if (strcmp(f->objective, "clm") == 0) cfg->objective = LC_OBJECTIVE_CLM;
        else if (strcmp(f->objective, "mlm") == 0) {
            cfg->objective = LC_OBJECTIVE_MLM;
            if (!f->model) cfg->model = LC_MODEL_VANILLA; /* an encoder: absolute positions, no memory */
        } else {
            lc_cli_error("%s: --objective must be clm or mlm, got '%s'", cmd, f->objective);
            return LC_EXIT_USAGE;
        }
    }
    if (f->attn) {
        if (strlen(f->attn) >= sizeof cfg->attn) {
            lc_cli_error("%s: --attn is longer than %zu characters", cmd, sizeof cfg->attn - 1);
            return LC_EXIT_USAGE;
        }
        strcpy(cfg->attn, f->attn);
    }
    if (seen(opts, n, "--share-qk")) cfg->qk_share = f->share_qk;
    if (f->reversible) cfg->reversible = 1;
    if (seen(opts, n, "--extra-tokens")) cfg->extra_tokens = f->extra_tokens;
    if (seen(opts, n, "--ffn-chunk")) cfg->ffn_chunk = f->ffn_chunk;
    if (seen(opts, n, "--share-attn")) cfg->attn_share = f->share_attn;
    if (f->model) {
        if (strcmp(f->model, "xl") == 0) cfg->model = LC_MODEL_XL;
        else if (strcmp(f->model, "vanilla") == 0) cfg->model = LC_MODEL_VANILLA;
        else { lc_cli_error("%s: --model must be xl or vanilla, got '%s'", cmd, f->model); return LC_EXIT_USAGE; }
    }
    const char *xl_only[] = {"--mem-len", "--clamp-len", "--same-length", "--shared-uv"};
    for (int i = 0; i < 4; i++)
        if (cfg->model != LC_MODEL_XL && seen(opts, n, xl_only[i])) {
            lc_cli_error("%s: %s needs --model xl", cmd, xl_only[i]);
            return LC_EXIT_USAGE;
        }
    if (cfg->model == LC_MODEL_XL) {
        cfg->mem_len = seen(opts, n, "--mem-len") ? f->mem_len : cfg->seq_len;
        cfg->clamp_len = f->clamp_len;
        cfg->same_length = f->same_length;
        cfg->shared_uv = f->shared_uv;
    } else {
        cfg->mem_len = 0;
    }
    if (cfg->d_model % cfg->n_head) {
        lc_cli_error("%s: --dim %d is not divisible by --heads %d", cmd, cfg->d_model, cfg->n_head);
        return LC_EXIT_USAGE;
    }
    if (lc_config_validate(cfg)) {
        lc_cli_error("%s: %s", cmd, lc_last_error());
        return LC_EXIT_USAGE;
    }
    return -1;
}
