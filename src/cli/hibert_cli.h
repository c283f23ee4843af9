/* Shared pieces of the HIBERT commands (hibert pretrain|finetune, summarize, eval --task summarize --ckpt):
 * the document sets (models/hibert/hibert_data.h), the summary scores' lines and the extractive baselines. */
#ifndef LC_CLI_HIBERT_CLI_H
#define LC_CLI_HIBERT_CLI_H

#include "cli/cli.h"
#include "models/hibert/hibert_data.h"

/* `eval --task summarize`'s last lines: with stem, "SPLIT: NAME stemmed ROUGE-1 .." of r[3..6); with json,
 * {"rouge1":..,"rouge2":..,"rougeL":..[,"rouge1_stem":..,"rouge2_stem":..,"rougeL_stem":..],"docs":..}. */
void lc_print_summary_scores(const char *split, const char *name, const double r[6], int docs, int stem, int json);
/* The extractive baselines of eval --task summarize and summarize --method (cmd_eval_summary.c). */
typedef enum { LC_SUMM_LEAD3, LC_SUMM_LEADK, LC_SUMM_LEXRANK, LC_SUMM_ORACLE, LC_SUMM_HIBERT } lc_summ_method;
/* "lead3", "leadk", "lexrank", "oracle" or "hibert" into *out; -1 for another name. */
int lc_summ_method_parse(const char *name, lc_summ_method *out);
/* pick[0..n) of a baseline over sentences sent[0..n): lead3 the first 3, leadk the first k, lexrank the k
 * highest LexRank scores (threshold 0.1, damping 0.85, the ties of float scores to the earlier sentence) with
 * the collection's idf (NULL: the document's own sentences are the collection); score[n] (may be NULL)
 * gets lexrank's scores. */
lc_status lc_summ_pick(lc_summ_method how, const char *const *sent, int n, int k, const lc_idf *idf, float *score,
                       uint8_t *pick);

#endif
