/* `longctx summarize [--ckpt CKPT] [--method M] [--sentences K] [--scores] FILE...`: each file's extractive
 * summary by a fine-tuned HIBERT checkpoint or a baseline of eval --task summarize (LexRank over the file's
 * own sentences, lead-K, lead-3): the K best-scored sentences in document order; with --scores every sentence
 * with its score and whether it was picked. A BBC article's title line is detected (lc_summary_body). And
 * `eval --task summarize --ckpt`:
 * the checkpoint's ROUGE on a BBC split with k = the number of contained reference sentences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hibert_cli.h"
#include "core/status.h"
#include "core/threads.h"

/* A checkpoint's model planned for the documents of d (lc_hdocs_load_scorer), with a note when it is a
 * pre-training checkpoint scoring with its intruder head. */
static lc_status load_for(const char *ckpt, lc_hdocs *d, int batch, lc_hibert **m) {
    int intruder_head = 0;
    const lc_status st = lc_hdocs_load_scorer(ckpt, d, batch, m, &intruder_head);
    if (!st && intruder_head)
        fprintf(stderr, "%s: a pre-training checkpoint: sentences are scored by its intruder head (how well each "
                        "belongs to its document; not fine-tuned)\n", ckpt);
    return st;
}

int lc_cmd_summarize(int argc, char **argv) {
    const char *ckpt = NULL, *encoding = NULL, *method_name = NULL;
    int k = 3, threads = 0, title = 0, no_title = 0, show_scores = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "a fine-tuned HIBERT checkpoint (--method hibert)", 0},
        {"--method", OPT_STR, &method_name, 0, 0, "hibert (the default with --ckpt), lexrank (the default without), leadk (the first K) or lead3", 0},
        {"--sentences", OPT_INT, &k, 1, 1 << 20, "K, sentences per summary (default 3; eval --task summarize takes as many as the reference has)", 0},
        {"--title", OPT_FLAG, &title, 0, 0, "line 1 of each file is a title, not part of the text", 0},
        {"--no-title", OPT_FLAG, &no_title, 0, 0, "line 1 is text even in the BBC layout (default: a first line without a sentence end, then a blank line, is a title)", 0},
        {"--encoding", OPT_STR, &encoding, 0, 0, "utf8 (default: refuse other files) or latin1", 0},
        {"--scores", OPT_FLAG, &show_scores, 0, 0, "hibert, lexrank: print every sentence as SCORE<tab>PICKED (1/0)<tab>SENTENCE instead", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
    };
    const int n = (int)(sizeof opts / sizeof opts[0]);
    char **files = malloc(sizeof(char *) * (size_t)(argc + 1));
    int nf = 0;
    int rc = files ? lc_parse_opts_args("summarize", "[--ckpt CKPT] [--method M] [--sentences K] [--title] [--scores] FILE...",
                                        opts, n, argc, argv, files, argc, &nf)
                   : (lc_cli_error("summarize: out of memory"), LC_EXIT_RUNTIME);
    lc_summ_method how = ckpt ? LC_SUMM_HIBERT : LC_SUMM_LEXRANK;
    if (rc < 0 && method_name && (lc_summ_method_parse(method_name, &how) || how == LC_SUMM_ORACLE))
        lc_cli_error("summarize: --method must be hibert, lexrank, leadk or lead3, got '%s'", method_name), rc = LC_EXIT_USAGE;
    if (rc < 0 && how == LC_SUMM_HIBERT && !ckpt)
        lc_cli_error("summarize: --method hibert needs --ckpt (a fine-tuned HIBERT checkpoint)"), rc = LC_EXIT_USAGE;
    if (rc < 0 && how != LC_SUMM_HIBERT && ckpt)
        lc_cli_error("summarize: --ckpt is for --method hibert, not %s", method_name), rc = LC_EXIT_USAGE;
    if (rc < 0 && show_scores && (how == LC_SUMM_LEAD3 || how == LC_SUMM_LEADK))
        lc_cli_error("summarize: --scores needs --method hibert or lexrank (%s scores nothing)", method_name), rc = LC_EXIT_USAGE;
    if (rc < 0 && title && no_title) lc_cli_error("summarize: give --title or --no-title, not both"), rc = LC_EXIT_USAGE;
    if (rc < 0 && nf == 0) lc_cli_error("summarize: no FILE given"), rc = LC_EXIT_USAGE;
    if (rc < 0 && encoding && strcmp(encoding, "utf8") && strcmp(encoding, "latin1"))
        lc_cli_error("summarize: --encoding must be utf8 or latin1, got '%s'", encoding), rc = LC_EXIT_USAGE;
    lc_hibert_config cfg;
    cfg.max_sents = 1 << 20; /* the baselines see each document whole */
    lc_status st = LC_OK;
    if (rc < 0 && ckpt && (st = lc_hibert_checkpoint_info(ckpt, &cfg, NULL))) rc = lc_cli_fail(st);
    lc_hdocs d;
    lc_hdocs_init(&d, rc < 0 ? cfg.max_sents : 1);
    for (int i = 0; i < nf && rc < 0; i++) {
        char *text = NULL;
        if ((st = lc_text_read_user(files[i], encoding && !strcmp(encoding, "latin1"), &text, NULL))) { rc = lc_cli_fail(st); break; }
        if ((st = lc_hdocs_add_summary_text(&d, text, files[i], title, no_title))) rc = lc_cli_fail(st);
        free(text);
    }
    lc_threads_set_default(threads);
    lc_hibert *m = NULL;
    if (rc < 0 && ckpt && (st = load_for(ckpt, &d, 1, &m))) rc = lc_cli_fail(st);
    float *scores = rc < 0 ? malloc(sizeof(float) * (size_t)(d.n_sents ? d.n_sents : 1)) : NULL;
    uint8_t *pick = rc < 0 ? malloc((size_t)(d.n_sents ? d.n_sents : 1)) : NULL;
    if (rc < 0 && (!scores || !pick)) lc_cli_error("summarize: out of memory"), rc = LC_EXIT_RUNTIME;
    if (rc < 0 && m && (st = lc_hdocs_scores(m, &d, 1, scores))) rc = lc_cli_fail(st);
    for (int j = 0; j < d.n_docs && rc < 0; j++) {
        const int f = d.doc_first[j], c = d.doc_first[j + 1] - f;
        if (m) lc_top_k(scores + f, c, k, pick);
        else if ((st = lc_summ_pick(how, d.sent + f, c, k, NULL, scores + f, pick))) { rc = lc_cli_fail(st); break; }
        if (nf > 1) printf("==> %s <==\n", d.name[j]);
        if (show_scores) { /* the score as %.9g: a float read back exactly */
            for (int i = 0; i < c; i++) printf("%.9g\t%d\t%s\n", (double)scores[f + i], pick[i], d.sent[f + i]);
            continue;
        }
        char *summary = NULL;
        if ((st = lc_sentences_join(d.sent + f, c, pick, &summary))) { rc = lc_cli_fail(st); break; }
        printf("%s\n", summary);
        free(summary);
    }
    free(scores), free(pick), free(files);
    lc_hibert_free(m);
    lc_hdocs_free(&d);
    return rc < 0 ? LC_EXIT_OK : rc;
}

int lc_eval_summary_ckpt(const char *ckpt, const char *data, lc_part part, const char *split, int json, int stem) {
    lc_hdocs d;
    lc_hibert_config cfg;
    lc_status st = lc_hibert_checkpoint_info(ckpt, &cfg, NULL);
    if (st) return lc_cli_fail(st);
    lc_hdocs_init(&d, cfg.max_sents);
    lc_hibert *m = NULL;
    double r[6];
    int rc = LC_EXIT_OK;
    if ((st = lc_hdocs_add(&d, data, part, 0, 0)) || (st = load_for(ckpt, &d, 8, &m)) || (st = lc_hdocs_rouge(m, &d, 8, r)))
        rc = lc_cli_fail(st);
    if (!rc) {
        printf("%s: %s ROUGE-1 %.2f ROUGE-2 %.2f ROUGE-L %.2f (F1 %%, mean of %d documents, k = contained sentences, of %s)\n",
               split, ckpt, r[0], r[1], r[2], d.n_docs, data);
        lc_print_summary_scores(split, ckpt, r, d.n_docs, stem, json);
    }
    lc_hibert_free(m);
    lc_hdocs_free(&d);
    return rc;
}
