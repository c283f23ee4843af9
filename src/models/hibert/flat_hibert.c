/* The binding API's HIBERT summarizer (include/longctx/flat.h): a checkpoint's model with the last text's
 * sentences and scores in one handle; thin over the pieces `longctx summarize` uses (models/hibert/hibert_data.h:
 * lc_hdocs_load_scorer, lc_hdocs_add_summary_text, lc_hdocs_scores, lc_top_k). */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "longctx/flat.h"
#include "models/hibert/hibert_data.h"

struct lc_hibert_summarizer {
    lc_hibert *m;
    int intruder_head;
    lc_hdocs d;    /* the last text's document (empty before the first) */
    float *scores; /* [d.n_sents] */
    char path[256]; /* for messages (cut) */
};

lc_status lc_hibert_summarizer_load(const char *path, lc_hibert_summarizer **out) {
    lc_clear_error();
    if (!out) return lc_fail(LC_ERR_ARG, "hibert summarizer: out is required");
    *out = NULL;
    if (!path) return lc_fail(LC_ERR_ARG, "hibert summarizer: a path is required");
    lc_hibert_summarizer *s = calloc(1, sizeof *s);
    if (!s) return lc_fail(LC_ERR_NOMEM, "out of memory loading %s", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    lc_hdocs_init(&s->d, 1);
    const lc_status st = lc_hdocs_load_scorer(path, NULL, 1, &s->m, &s->intruder_head);
    if (st) lc_hibert_summarizer_free(s);
    else *out = s;
    return st;
}

void lc_hibert_summarizer_free(lc_hibert_summarizer *s) {
    if (!s) return;
    lc_hibert_free(s->m);
    lc_hdocs_free(&s->d);
    free(s->scores);
    free(s);
}

lc_hibert *lc_hibert_summarizer_model(lc_hibert_summarizer *s) { return s ? s->m : NULL; }
int lc_hibert_summarizer_intruder_head(const lc_hibert_summarizer *s) { return s ? s->intruder_head : 0; }

lc_status lc_hibert_summarizer_score(lc_hibert_summarizer *s, const char *text, int title, int *n) {
    lc_clear_error();
    if (n) *n = 0;
    if (!s || !text) return lc_fail(LC_ERR_ARG, "hibert summarizer: a summarizer and a text are required");
    if (title < -1 || title > 1) return lc_fail(LC_ERR_ARG, "hibert summarizer: title must be -1, 0 or 1, got %d", title);
    lc_hdocs_free(&s->d);
    free(s->scores);
    s->scores = NULL;
    lc_hdocs_init(&s->d, lc_hibert_get_config(s->m)->max_sents);
    lc_status st = lc_hdocs_add_summary_text(&s->d, text, "text", title == 1, title == 0);
    if (!st && !(s->scores = malloc(sizeof(float) * (size_t)s->d.n_sents))) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st) st = lc_hdocs_scores(s->m, &s->d, 1, s->scores);
    if (st) { /* nothing half-scored stays */
        lc_hdocs_free(&s->d);
        lc_hdocs_init(&s->d, 1);
        free(s->scores);
        s->scores = NULL;
        return st;
    }
    if (n) *n = s->d.n_sents;
    return LC_OK;
}

int lc_hibert_summarizer_sentences(const lc_hibert_summarizer *s) { return s && s->scores ? s->d.n_sents : 0; }

const char *lc_hibert_summarizer_sentence(const lc_hibert_summarizer *s, int i) {
    return i >= 0 && i < lc_hibert_summarizer_sentences(s) ? s->d.sent[i] : NULL;
}

const float *lc_hibert_summarizer_scores(const lc_hibert_summarizer *s) { return s ? s->scores : NULL; }

lc_status lc_hibert_summarizer_pick(const lc_hibert_summarizer *s, int k, uint8_t *pick) {
    lc_clear_error();
    if (!s || !pick) return lc_fail(LC_ERR_ARG, "hibert summarizer: a summarizer and pick are required");
    if (!s->scores) return lc_fail(LC_ERR_ARG, "hibert summarizer: no text scored yet");
    if (k < 1) return lc_fail(LC_ERR_ARG, "sentences must be at least 1, got %d", k);
    lc_top_k(s->scores, s->d.n_sents, k, pick);
    return LC_OK;
}
