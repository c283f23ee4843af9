/* What `longctx summarize` and `eval --task summarize` share (cli/hibert_cli.h): the extractive methods by
 * name, a baseline's picks (lead-3, lead-k, LexRank) and the ROUGE scores' last lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hibert_cli.h"
#include "core/status.h"

int lc_summ_method_parse(const char *name, lc_summ_method *out) {
    static const char *names[] = {"lead3", "leadk", "lexrank", "oracle", "hibert"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(name, names[i]) == 0) return *out = (lc_summ_method)i, 0;
    return -1;
}

lc_status lc_summ_pick(lc_summ_method how, const char *const *sent, int n, int k, const lc_idf *idf, float *score,
                       uint8_t *pick) {
    if (how != LC_SUMM_LEXRANK) {
        const int lead = how == LC_SUMM_LEAD3 ? 3 : k;
        for (int i = 0; i < n; i++) pick[i] = i < lead;
        return LC_OK;
    }
    /* compared as floats, as HIBERT's scores are (lc_top_k): sentences in the same place of the graph get the
     * same score up to the last bits of its double sums, and float makes those ties exact */
    lc_idf own = {0};
    double *s64 = malloc(sizeof *s64 * (size_t)(n ? n : 1));
    float *s32 = score ? score : malloc(sizeof *s32 * (size_t)(n ? n : 1));
    lc_status st = s64 && s32 ? LC_OK : lc_fail(LC_ERR_NOMEM, "lexrank: out of memory");
    if (!st && !idf && !(st = lc_idf_build(sent, n, &own))) idf = &own;
    if (!st && !(st = lc_lexrank_scores(sent, n, idf, 0.1, 0.85, s64))) {
        for (int i = 0; i < n; i++) s32[i] = (float)s64[i];
        lc_top_k(s32, n, k, pick);
    }
    lc_idf_free(&own);
    free(s64);
    if (s32 != score) free(s32);
    return st;
}

void lc_print_summary_scores(const char *split, const char *name, const double r[6], int docs, int stem, int json) {
    if (stem)
        printf("%s: %s stemmed ROUGE-1 %.2f ROUGE-2 %.2f ROUGE-L %.2f (Porter stems of tokens longer than 3 "
               "characters, as rouge-score)\n", split, name, r[3], r[4], r[5]);
    if (!json) return;
    printf("{\"rouge1\":%s,\"rouge2\":%s,\"rougeL\":%s", lc_json_number(r[0]), lc_json_number(r[1]), lc_json_number(r[2]));
    if (stem)
        printf(",\"rouge1_stem\":%s,\"rouge2_stem\":%s,\"rougeL_stem\":%s", lc_json_number(r[3]), lc_json_number(r[4]),
               lc_json_number(r[5]));
    printf(",\"docs\":%d}\n", docs);
}
