/* Starting a classifier's encoder from a vanilla language model's checkpoint, masked or causal
 * (lc_classifier_init_from; the self-pretraining of bench/lra_spt_*.sh): the blocks and the final LayerNorm by
 * name and shape, the position rows both have, the byte rows of the embedding; global
 * projections the checkpoint lacks start as a copy of their layer's qkv projection (as Hugging Face's
 * Longformer starts them from the local ones). lc_classifier_init_from_any also reads a classifier's own
 * checkpoint (a masked-token pre-training, or a shorter-input run): the same shape, tokens and vocabulary,
 * every embedding row, and the bracket-depth rows both have (a model without them keeps its own start). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fastmath.h"
#include "models/classify/classify.h"
#include "train/checkpoint_meta.h"
#include "train/safetensors.h"

/* The first rows (of `cols` floats) of a checkpoint's 2-D tensor `name` into dst: min(its rows, rows). */
static lc_status copy_rows(const lc_st_file *f, const char *name, float *dst, long rows, long cols) {
    const lc_st_tensor *t = lc_st_find(f, name);
    if (!t || t->dtype != LC_DT_F32 || t->ndim != 2 || t->shape[1] != cols)
        return lc_fail(LC_ERR_FORMAT, "%s: tensor %s is missing or not F32 [*, %ld]", lc_st_path(f), name, cols);
    const long n = (t->shape[0] < rows ? t->shape[0] : rows) * cols;
    if (!lc_all_finite(t->data, (size_t)n)) return lc_fail(LC_ERR_FORMAT, "%s: tensor %s holds NaN or infinity", lc_st_path(f), name);
    memcpy(dst, t->data, sizeof(float) * (size_t)n);
    return LC_OK;
}

/* A global projection the checkpoint lacks: the same layer's qkv tensor ("global." taken out of the name). */
static const char *local_twin(const char *name, char *buf, size_t cap) {
    const char *g = strstr(name, "attn.global.qkv.");
    if (!g) return NULL;
    snprintf(buf, cap, "%.*sattn.qkv.%s", (int)(g - name), name, g + strlen("attn.global.qkv."));
    return buf;
}

/* wte_rows: the embedding rows to copy (0: none); head: copy cls.* too. */
static lc_status copy_encoder(const lc_st_file *f, lc_classifier *m, long wte_rows, int head) {
    const lc_tensor_buffers buf = LC_TENSOR_BUFFERS_OF(m);
    char twin[LC_NAME_MAX + 8];
    lc_status st = LC_OK;
    for (int i = 0; i < m->tensors.n && !st; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        float *dst = lc_tensor_values(&m->tensors, &buf, i);
        if (!strcmp(t->name, "wpe")) st = copy_rows(f, "wpe", dst, t->shape[0], t->shape[1]);
        else if (!strcmp(t->name, "wte") && wte_rows > 0) st = copy_rows(f, "wte", dst, wte_rows, t->shape[1]);
        else if (!strcmp(t->name, "wde") && lc_st_find(f, "wde"))
            st = copy_rows(f, "wde", dst, t->shape[0], t->shape[1]);
        else if (!strncmp(t->name, "blocks.", 7) || !strncmp(t->name, "ln_f.", 5) || (head && !strncmp(t->name, "cls.", 4))) {
            const char *name = lc_st_find(f, t->name) ? t->name : local_twin(t->name, twin, sizeof twin);
            if (!name && !lc_tensor_is_param(t)) continue; /* kind state the checkpoint lacks: keep it */
            if (!name) return lc_fail(LC_ERR_FORMAT, "%s: the masked-LM checkpoint lacks tensor %s", lc_st_path(f), t->name);
            st = lc_st_read(f, name, LC_DT_F32, t->ndim, t->shape, dst);
            if (!st && !lc_all_finite(dst, lc_tensor_count(t)))
                st = lc_fail(LC_ERR_FORMAT, "%s: tensor %s holds NaN or infinity", lc_st_path(f), name);
        }
    }
    return st;
}

lc_status lc_classifier_init_from(lc_classifier *m, const char *path) {
    lc_clear_error();
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    lc_ckpt_meta *h = malloc(sizeof *h);
    if (!h) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    const char *model = lc_st_get_meta(f, "model");
    if (!st && model && strcmp(model, "vanilla") != 0)
        st = lc_fail(LC_ERR_FORMAT, "%s: --init needs a vanilla language model (masked or causal), not model '%.40s'",
                     path, model);
    if (!st) st = lc_ckpt_meta_parse(f, h);
    const lc_config *a = h ? &h->cfg : NULL;
    const lc_classify_config *b = &m->cfg;
    if (!st && (a->extra_tokens || a->qk_share > 1))
        st = lc_fail(LC_ERR_FORMAT, "%s: --init needs a vanilla language model's blocks (no extra tokens, no --share-qk)",
                     path);
    if (!st && (a->n_layer != b->n_layer || a->d_model != b->d_model || a->n_head != b->n_head || a->d_ff != b->d_ff ||
                a->norm != b->norm || a->activation != b->activation || (a->attn_share > 1 ? a->attn_share : 0) !=
                (b->attn_share > 1 ? b->attn_share : 0)))
        st = lc_fail(LC_ERR_FORMAT, "%s: its encoder (%d layers, dim %d, %d heads, ffn %d, %s-LN, %s) is not the "
                     "classifier's (%d, %d, %d, %d, %s-LN, %s)", path, a->n_layer, a->d_model, a->n_head, a->d_ff,
                     a->norm ? "post" : "pre", a->activation ? "relu" : "gelu", b->n_layer, b->d_model, b->n_head,
                     b->d_ff, b->norm ? "post" : "pre", b->activation ? "relu" : "gelu");
    if (!st) st = copy_encoder(f, m, m->cfg.tokens == LC_TOKENS_BYTES ? 257 : 0, 0);
    free(h);
    lc_st_close(f);
    return st;
}

/* A words model's vocabulary as its saved text (NULL on failure, with the error set). */
static char *vocab_text(const lc_word_vocab *v) {
    char *text = NULL;
    return lc_word_vocab_save(v, &text, NULL) ? NULL : text;
}

/* A classifier checkpoint's encoder into m: the same shape, tokens and vocabulary. */
static lc_status init_from_classifier(lc_classifier *m, const lc_word_vocab *words, const char *path) {
    lc_classifier *src = NULL;
    lc_label_set labels = {0, NULL};
    lc_word_vocab *sw = NULL;
    lc_status st = lc_classifier_load(path, 1, 0, &src, NULL, &labels, &sw);
    if (st) return st;
    const lc_classify_config *a = &src->cfg, *b = &m->cfg;
    if (a->n_layer != b->n_layer || a->d_model != b->d_model || a->n_head != b->n_head || a->d_ff != b->d_ff ||
        a->norm != b->norm || a->activation != b->activation ||
        (a->attn_share > 1 ? a->attn_share : 0) != (b->attn_share > 1 ? b->attn_share : 0))
        st = lc_fail(LC_ERR_FORMAT, "%s: its encoder (%d layers, dim %d, %d heads, ffn %d, %s-LN, %s) is not the "
                     "classifier's (%d, %d, %d, %d, %s-LN, %s)", path, a->n_layer, a->d_model, a->n_head, a->d_ff,
                     a->norm ? "post" : "pre", a->activation ? "relu" : "gelu", b->n_layer, b->d_model, b->n_head,
                     b->d_ff, b->norm ? "post" : "pre", b->activation ? "relu" : "gelu");
    else if (a->tokens != b->tokens)
        st = lc_fail(LC_ERR_FORMAT, "%s: a %s model; the classifier reads %s", path, lc_tokens_name(a->tokens),
                     lc_tokens_name(b->tokens));
    else if (b->tokens == LC_TOKENS_WORDS && !words)
        st = lc_fail(LC_ERR_ARG, "%s: starting a words model from a classifier needs the model's vocabulary", path);
    else if (b->tokens == LC_TOKENS_WORDS) {
        char *x = vocab_text(sw), *y = x ? vocab_text(words) : NULL;
        if (x && y && (a->vocab != b->vocab || strcmp(x, y) != 0))
            st = lc_fail(LC_ERR_FORMAT, "%s: its word vocabulary (%d ids) is not the classifier's (%d ids, built from "
                         "--data with --min-count and --max-words)", path, a->vocab, b->vocab);
        else if (!x || !y) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory comparing the vocabularies", path);
        free(x), free(y);
    }
    const long rows = lc_classify_emb_rows(b);
    /* a classifier trained on labels, as many classes as m's (a curriculum's earlier stage on the same task)
     * passes on its head too */
    int head = a->objective == LC_CLASSIFY_LABELS && b->objective == LC_CLASSIFY_LABELS && a->n_classes == b->n_classes &&
               (a->d_hidden ? a->d_hidden : a->d_model) == (b->d_hidden ? b->d_hidden : b->d_model);
    lc_classifier_free(src);
    lc_label_set_free(&labels);
    lc_word_vocab_free(sw);
    lc_st_file *f = NULL;
    if (!st) st = lc_st_open(path, &f);
    if (!st) st = copy_encoder(f, m, rows, head);
    lc_st_close(f);
    return st;
}

lc_status lc_classifier_init_from_any(lc_classifier *m, const lc_word_vocab *words, const char *path) {
    lc_clear_error();
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    const char *model = lc_st_get_meta(f, "model");
    const int classifier = model && strcmp(model, "classify") == 0;
    lc_st_close(f);
    return classifier ? init_from_classifier(m, words, path) : lc_classifier_init_from(m, path);
}
