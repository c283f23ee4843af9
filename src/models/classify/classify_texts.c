/* A classifier over texts (models/classify/classify.h, longctx/classify.h): examples ordered by length, tokenized into
 * batches, and the predicted class, the accuracy and the class probabilities of a set of texts; what the
 * training run (models/classify/classify_fit.c), `eval --task classify`, `predict` and the bindings share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "lra/lra.h"
#include "models/classify/classify.h"

void lc_classify_sort_by_length(long *keys, const long *idx, long n, const size_t *len) {
    for (long i = 0; i < n; i++) {
        const long k = idx ? idx[i] : i;
        keys[i] = ((long)(len[k] < (1u << 30) ? len[k] : (1u << 30)) << 32) | k;
    }
    lc_sort_keys(keys, (int)n);
    for (long i = 0; i < n; i++) keys[i] &= 0xffffffffL;
}

/* The bracket a token opens (+1), closes (-1) or neither (0): its first byte. */
static int bracket_of(const uint8_t *s, size_t n) { return n == 0 ? 0 : s[0] == '[' ? 1 : s[0] == ']' ? -1 : 0; }

static int is_paren(const uint8_t *s, size_t n) { return n == 1 && (s[0] == '(' || s[0] == ')'); }

long lc_classify_tokens(const lc_classify_config *c, const lc_word_vocab *v, const uint8_t *text, size_t len, int max_len,
                        int *ids, int *depth) {
    if (!c->drop_parens && !depth) return lc_tokenize(c->tokens, v, text, len, max_len, ids);
    const int words = c->tokens == LC_TOKENS_WORDS;
    long n = 0;
    int d = 0;
    size_t at = 0, start = 0, wl = 1;
    for (;;) {
        if (words && (wl = lc_lra_next_word(text, len, &at, &start)) == 0) break;
        if (!words && (start = at++) >= len) break;
        const uint8_t *tok = text + start;
        if (words && c->drop_parens && is_paren(tok, wl)) continue;
        const int b = bracket_of(tok, wl);
        d += b > 0;
        if (n < max_len) {
            if (ids) ids[n] = words ? (v ? lc_word_vocab_id(v, tok, wl) : LC_WORD_UNK) : tok[0];
            if (depth) depth[n] = d;
        }
        d -= b < 0 && d > 0;
        n++;
    }
    return n;
}

lc_classify_batch lc_classify_tokenize(const lc_classifier *m, const lc_word_vocab *v, const lc_classify_texts *t,
                                       const long *idx, int n, lc_classify_buffers *b) {
    const lc_classify_config *c = &m->cfg;
    for (int i = 0; i < n; i++) {
        const size_t at = (size_t)i * c->max_len;
        int *depth = b->depth ? b->depth + at : NULL;   /* rows exist only for a model that reads depths */
        b->ptr[i] = b->ids + at;
        if (depth) b->dptr[i] = depth;
        const long all = lc_classify_tokens(c, v, t->text[idx[i]], t->len[idx[i]], c->max_len, b->ids + at, depth);
        b->len[i] = (int)(all < c->max_len ? all : c->max_len);
    }
    return (lc_classify_batch){n, b->ptr, b->len, b->depth ? b->dptr : NULL};
}

lc_status lc_classify_buffers_alloc(lc_classify_buffers *b, int batch, const lc_classify_config *c) {
    const size_t cells = (size_t)batch * (size_t)c->max_len;
    const int depth = c->bracket_depth > 0;
    b->ids = malloc(sizeof(int) * cells), b->len = malloc(sizeof(int) * (size_t)batch);
    b->ptr = malloc(sizeof(*b->ptr) * (size_t)batch);
    b->depth = depth ? malloc(sizeof(int) * cells) : NULL;
    b->dptr = depth ? malloc(sizeof(*b->dptr) * (size_t)batch) : NULL;
    if (b->ids && b->len && b->ptr && (!depth || (b->depth && b->dptr))) return LC_OK;
    lc_classify_buffers_free(b);
    return lc_fail(LC_ERR_NOMEM, "out of memory for a batch of %d examples", batch);
}

void lc_classify_buffers_free(lc_classify_buffers *b) {
    free(b->ids), free(b->depth), free(b->len), free(b->ptr), free(b->dptr);
    b->ids = b->depth = b->len = NULL, b->ptr = b->dptr = NULL;
}

/* The predictions of the batch just run (examples idx[0 .. n)) from the logits. */
static long predict_batch(const lc_classifier *m, const long *idx, int n, int *pred, const int *labels, double *probs) {
    const int K = m->cfg.n_classes;
    const float *z = lc_classifier_logits(m);
    long right = 0;
    for (int i = 0; i < n; i++) {
        const float *zi = z + (size_t)i * K;
        int best = 0;
        for (int k = 1; k < K; k++)
            if (zi[k] > zi[best]) best = k;
        if (pred) pred[idx[i]] = best;
        if (labels) right += labels[idx[i]] == best;
        if (probs) { /* the softmax, from the largest logit */
            double *p = probs + (size_t)idx[i] * K, sum = 0;
            for (int k = 0; k < K; k++) sum += p[k] = exp((double)zi[k] - (double)zi[best]);
            for (int k = 0; k < K; k++) p[k] /= sum;
        }
    }
    return right;
}

lc_status lc_classify_texts_run(lc_classifier *m, const lc_word_vocab *v, const lc_classify_texts *t, int batch,
                                int part, int parts, int *pred, const int *labels, long *correct, double *probs) {
    long *keys = malloc(sizeof(long) * (size_t)(t->n > 0 ? t->n : 1));
    lc_classify_buffers b = {0};
    lc_status st = keys ? lc_classify_buffers_alloc(&b, batch, &m->cfg)
                        : lc_fail(LC_ERR_NOMEM, "out of memory classifying");
    if (!st) lc_classify_sort_by_length(keys, NULL, t->n, t->len);
    long right = 0;
    for (long s = (long)part * batch; s < t->n && !st; s += (long)parts * batch) {
        const int n = (int)(t->n - s < batch ? t->n - s : batch);
        const lc_classify_batch cb = lc_classify_tokenize(m, v, t, keys + s, n, &b);
        if ((st = lc_classifier_forward(m, &cb, NULL, 0, NULL, NULL))) break;
        right += predict_batch(m, keys + s, n, pred, labels, probs);
    }
    if (correct) *correct = right;
    free(keys);
    lc_classify_buffers_free(&b);
    return st;
}

lc_status lc_classifier_classify_texts(lc_classifier *m, const lc_word_vocab *words, long n, const uint8_t *const *text,
                                       const size_t *len, int batch, int *pred, double *probs) {
    lc_clear_error();
    if (!m || n < 0 || (n > 0 && (!text || !len)) || batch < 1)
        return lc_fail(LC_ERR_ARG, "classify texts: a model, texts with their lengths and a batch >= 1 are required");
    if ((m->cfg.tokens == LC_TOKENS_WORDS) != (words != NULL))
        return lc_fail(LC_ERR_ARG, "classify texts: a words model needs its vocabulary (and only it)");
    if (batch > m->max_batch) batch = m->max_batch;
    const lc_classify_texts t = {n, text, len};
    return lc_classify_texts_run(m, words, &t, batch, 0, 1, pred, NULL, NULL, probs);
}
