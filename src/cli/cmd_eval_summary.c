/* `longctx eval --task summarize`: ROUGE-1/2/L of extractive baseline summaries (lead-3, lead-k, LexRank,
 * the label oracle) on a split of a BBC News Summary style corpus, averaged over documents, in percent.
 * The protocol (sentence rule, split, labels, ROUGE) is in docs/results/summarization-protocol.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hibert_cli.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"

int lc_cmd_eval_summary(int argc, char **argv);
int lc_eval_summary_ckpt(const char *ckpt, const char *data, lc_part part, const char *split, int json, int stem); /* cmd_summarize.c */

/* The idf of the training split of ROOT (LexRank's collection): each document's sentences joined. */
static lc_status train_idf(const char *root, lc_idf *idf) {
    lc_doc_list train;
    lc_status st = lc_doc_list_open(root, LC_PART_TRAIN, &train);
    if (st) return st;
    char **texts = calloc((size_t)(train.n ? train.n : 1), sizeof *texts);
    if (!texts) st = lc_fail(LC_ERR_NOMEM, "eval --task summarize: out of memory");
    for (int i = 0; i < train.n && !st; i++) {
        lc_document d;
        if ((st = lc_document_read(train.article[i], NULL, &d))) break;
        st = lc_sentences_join((const char *const *)d.sents.sent, d.sents.n, NULL, &texts[i]);
        lc_document_free(&d);
    }
    if (!st) st = lc_idf_build((const char *const *)texts, train.n, idf);
    for (int i = 0; texts && i < train.n; i++) free(texts[i]);
    free(texts);
    lc_doc_list_free(&train);
    return st;
}

/* Scores one document: picks the method's sentences, joins them and adds its F1 scores to sum[0..3), and
 * with stem its stemmed ones to sum[3..6). */
static lc_status score_document(const lc_document *d, lc_summ_method how, lc_label_rule rule, const lc_idf *idf,
                                int stem, uint8_t *pick, double sum[6]) {
    const char *const *sent = (const char *const *)d->sents.sent;
    int n = d->sents.n, k;
    lc_status st = lc_summary_labels(sent, n, d->reference, LC_LABELS_CONTAINED, pick, &k);
    if (st) return st;
    if (how == LC_SUMM_ORACLE && rule == LC_LABELS_GREEDY &&
        (st = lc_summary_labels(sent, n, d->reference, LC_LABELS_GREEDY, pick, NULL)))
        return st;
    if (how != LC_SUMM_ORACLE && (st = lc_summ_pick(how, sent, n, k, idf, NULL, pick))) return st;
    char *summary;
    if ((st = lc_sentences_join(sent, n, pick, &summary))) return st;
    lc_rouge r, s = {0};
    if (!(st = lc_rouge_score(summary, d->reference, &r)) && stem) st = lc_rouge_score_stem(summary, d->reference, &s);
    free(summary);
    if (st) return st;
    const double f[6] = {r.r1.f1, r.r2.f1, r.rl.f1, s.r1.f1, s.r2.f1, s.rl.f1};
    for (int i = 0; i < 6; i++) sum[i] += f[i];
    return LC_OK;
}

int lc_cmd_eval_summary(int argc, char **argv) {
    const char *task = NULL, *data = "data/bbc-news-summary", *split = "valid", *method_name = NULL;
    const char *labels = "contained", *ckpt = NULL, *rouge = "plain";
    int json = 0, threads = 0;
    lc_opt opts[] = {
        {"--task", OPT_STR, &task, 0, 0, "summarize: ROUGE of extractive summaries (this command)", 0},
        {"--data", OPT_STR, &data, 0, 0, "ROOT with articles/ and summaries/ (default data/bbc-news-summary)", 0},
        {"--split", OPT_STR, &split, 0, 0, "valid (default), test, train or all (docs/results/summarization-protocol.md)", 0},
        {"--method", OPT_STR, &method_name, 0, 0, "lead3, leadk (k = sentences in the reference), lexrank (top k) or oracle", 0},
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "or a fine-tuned HIBERT checkpoint: its top k sentences (k as leadk)", 0},
        {"--labels", OPT_STR, &labels, 0, 0, "oracle's sentences: contained (default) or greedy (ROUGE oracle)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "--ckpt: threads of the model (0: all cores)", 0},
        {"--rouge", OPT_STR, &rouge, 0, 0, "plain (default) or stem: also ROUGE with Porter stems, as ROUGE-1.5.5 -m", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print {\"rouge1\":..,\"rouge2\":..,\"rougeL\":..,\"docs\":..} last", 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("eval --task summarize", "(--method M | --ckpt CKPT) [--data ROOT] [--split S] [--labels L] [--threads N] [--rouge stem] [--json]",
                           opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!task || strcmp(task, "summarize") != 0) {
        lc_cli_error("eval: --task must be summarize, classify or seq2seq, got '%s' (without --task, eval scores a language model)",
                     task ? task : "");
        return LC_EXIT_USAGE;
    }
    if (ckpt && method_name) {
        lc_cli_error("eval --task summarize: give --ckpt or --method, not both");
        return LC_EXIT_USAGE;
    }
    lc_summ_method how = LC_SUMM_HIBERT;
    if (!method_name && !ckpt) {
        lc_cli_error("eval --task summarize: --method or --ckpt is required (lead3, leadk, lexrank or oracle)");
        return LC_EXIT_USAGE;
    } else if (method_name && (lc_summ_method_parse(method_name, &how) || how == LC_SUMM_HIBERT)) {
        lc_cli_error("eval --task summarize: --method must be lead3, leadk, lexrank or oracle, got '%s'", method_name);
        return LC_EXIT_USAGE;
    }
    lc_label_rule rule;
    if (strcmp(labels, "contained") == 0) rule = LC_LABELS_CONTAINED;
    else if (strcmp(labels, "greedy") == 0) rule = LC_LABELS_GREEDY;
    else {
        lc_cli_error("eval --task summarize: --labels must be contained or greedy, got '%s'", labels);
        return LC_EXIT_USAGE;
    }
    if (lc_opt_get(opts, n, "--labels")->seen && (ckpt || how != LC_SUMM_ORACLE)) {
        lc_cli_error("eval --task summarize: --labels applies to --method oracle only");
        return LC_EXIT_USAGE;
    }
    const int stem = strcmp(rouge, "stem") == 0;
    if (!stem && strcmp(rouge, "plain") != 0) {
        lc_cli_error("eval --task summarize: --rouge must be plain or stem, got '%s'", rouge);
        return LC_EXIT_USAGE;
    }
    lc_part part;
    if (strcmp(split, "valid") == 0) part = LC_PART_VALID;
    else if (strcmp(split, "test") == 0) part = LC_PART_TEST;
    else if (strcmp(split, "train") == 0) part = LC_PART_TRAIN;
    else if (strcmp(split, "all") == 0) part = LC_PART_ALL;
    else {
        lc_cli_error("eval --task summarize: --split must be valid, test, train or all, got '%s'", split);
        return LC_EXIT_USAGE;
    }

    if (ckpt) {
        lc_threads_set_default(threads);
        return lc_eval_summary_ckpt(ckpt, data, part, split, json, stem);
    }
    double t0 = lc_now_seconds();
    lc_doc_list docs;
    lc_status st = lc_doc_list_open(data, part, &docs);
    if (st) return lc_cli_fail(st);
    if (docs.n == 0) {
        lc_cli_error("eval --task summarize: --data %s: the %s split is empty (%d documents in all)", data, split,
                     docs.total);
        lc_doc_list_free(&docs);
        return LC_EXIT_RUNTIME;
    }
    lc_idf idf = {0};
    if (how == LC_SUMM_LEXRANK && (st = train_idf(data, &idf))) {
        lc_doc_list_free(&docs);
        return lc_cli_fail(st);
    }
    double sum[6] = {0, 0, 0, 0, 0, 0};
    long sentences = 0;
    int latin1 = 0;
    for (int i = 0; i < docs.n && !st; i++) {
        lc_document d;
        if ((st = lc_document_read(docs.article[i], docs.summary[i], &d))) break;
        uint8_t *pick = malloc((size_t)d.sents.n);
        if (!pick) {
            lc_cli_error("eval --task summarize: out of memory");
            lc_document_free(&d);
            lc_doc_list_free(&docs);
            return LC_EXIT_RUNTIME;
        }
        st = score_document(&d, how, rule, &idf, stem, pick, sum);
        sentences += d.sents.n;
        latin1 += d.latin1 != 0;
        free(pick);
        lc_document_free(&d);
    }
    lc_idf_free(&idf);
    if (st) {
        rc = lc_cli_fail(st);
        lc_doc_list_free(&docs);
        return rc;
    }
    double r[6];
    for (int i = 0; i < 6; i++) r[i] = 100 * sum[i] / docs.n;
    char name[64];
    snprintf(name, sizeof name, "%s%s", method_name,
             how == LC_SUMM_ORACLE ? (rule == LC_LABELS_GREEDY ? " (greedy)" : " (contained)") : "");
    printf("%s: %s ROUGE-1 %.2f ROUGE-2 %.2f ROUGE-L %.2f (F1 %%, mean of %d documents, %ld sentences, of %s; "
           "%.2f s)\n", split, name, r[0], r[1], r[2], docs.n, sentences, data, lc_now_seconds() - t0);
    if (latin1)
        printf("%d of the files %s not UTF-8 and %s read as Latin-1\n", latin1, latin1 == 1 ? "was" : "were",
               latin1 == 1 ? "was" : "were");
    lc_print_summary_scores(split, name, r, docs.n, stem, json);
    lc_doc_list_free(&docs);
    return LC_EXIT_OK;
}
