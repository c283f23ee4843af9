/* `longctx summarize --ckpt CKPT [--sentences K] [--scores] FILE...`: each file's extractive summary by a
 * fine-tuned HIBERT checkpoint (the K best-scored sentences in document order; with --scores every sentence
 * with its score and whether it was picked), and `eval --task summarize --ckpt`:
 * the checkpoint's ROUGE on a BBC split with k = the number of contained reference sentences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hibert_cli.h"
#include "core/status.h"
#include "core/threads.h"

/* A checkpoint's model planned for the documents of d (batches of up to `batch` chunks). A pre-training
 * checkpoint scores with its intruder head (docs/hibert.md, "Sentence intruders"); one pre-trained without
 * intruders has a head that was never trained, and is refused. */
static lc_status load_for(const char *ckpt, lc_hdocs *d, int batch, lc_hibert **m) {
    lc_hibert_config cfg;
    lc_hibert_run run;
    lc_status st = lc_hibert_checkpoint_info(ckpt, &cfg, &run);
    if (st) return st;
    if (run.stage == LC_HIBERT_STAGE_PRETRAIN && !(run.intruders > 0))
        return lc_fail(LC_ERR_ARG, "%s: a pre-training checkpoint without --intruders: its head was never trained "
                                   "(fine-tune it with hibert finetune --init)", ckpt);
    const lc_hibert_limits lim = lc_hdocs_limits(NULL, d, batch, &cfg, 0);
    if ((st = lc_hibert_load(ckpt, &lim, m, NULL))) return st;
    if (run.stage == LC_HIBERT_STAGE_PRETRAIN)
        fprintf(stderr, "%s: a pre-training checkpoint: sentences are scored by its intruder head (how well each "
                        "belongs to its document; not fine-tuned)\n", ckpt);
    return LC_OK;
}

int lc_cmd_summarize(int argc, char **argv) {
    const char *ckpt = NULL, *encoding = NULL;
    int k = 3, threads = 0, title = 0, show_scores = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "a fine-tuned HIBERT checkpoint (required)", 0},
        {"--sentences", OPT_INT, &k, 1, 1 << 20, "sentences per summary (default 3)", 0},
        {"--title", OPT_FLAG, &title, 0, 0, "line 1 of each file is a title, not part of the text (as in BBC articles)", 0},
        {"--encoding", OPT_STR, &encoding, 0, 0, "utf8 (default: refuse other files) or latin1", 0},
        {"--scores", OPT_FLAG, &show_scores, 0, 0, "print every sentence as SCORE<tab>PICKED (1/0)<tab>SENTENCE instead", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
    };
    const int n = (int)(sizeof opts / sizeof opts[0]);
    char **files = malloc(sizeof(char *) * (size_t)(argc + 1)), **rest = malloc(sizeof(char *) * (size_t)(argc + 1));
    int nf = 0, nr = 0;
    for (int i = 0; i < argc; i++) {
        const int flag_with_value = !strcmp(argv[i], "--ckpt") || !strcmp(argv[i], "--sentences") ||
                                    !strcmp(argv[i], "--encoding") || !strcmp(argv[i], "--threads");
        if (strncmp(argv[i], "--", 2) != 0 && strcmp(argv[i], "-h") != 0) files[nf++] = argv[i];
        else {
            rest[nr++] = argv[i];
            if (flag_with_value && i + 1 < argc) rest[nr++] = argv[++i];
        }
    }
    int rc = lc_parse_opts("summarize", "--ckpt CKPT [--sentences K] [--title] [--scores] FILE...", opts, n, nr, rest);
    if (rc < 0 && !ckpt) lc_cli_error("summarize: --ckpt is required"), rc = LC_EXIT_USAGE;
    if (rc < 0 && nf == 0) lc_cli_error("summarize: no FILE given"), rc = LC_EXIT_USAGE;
    if (rc < 0 && encoding && strcmp(encoding, "utf8") && strcmp(encoding, "latin1"))
        lc_cli_error("summarize: --encoding must be utf8 or latin1, got '%s'", encoding), rc = LC_EXIT_USAGE;
    lc_hibert_config cfg;
    lc_status st = LC_OK;
    if (rc < 0 && (st = lc_hibert_checkpoint_info(ckpt, &cfg, NULL))) rc = lc_cli_fail(st);
    lc_hdocs d;
    lc_hdocs_init(&d, rc < 0 ? cfg.max_sents : 1);
    for (int i = 0; i < nf && rc < 0; i++) {
        char *text = NULL;
        if ((st = lc_text_read_user(files[i], encoding && !strcmp(encoding, "latin1"), &text, NULL))) { rc = lc_cli_fail(st); break; }
        char *body = text;
        if (title) body = strchr(text, '\n') ? strchr(text, '\n') + 1 : text + strlen(text);
        lc_sentences s;
        if (!(st = lc_sentences_split(body, &s)) && s.n < 2) {
            lc_cli_error("%s: %s: a summary needs at least 2 sentences (the sentence rule: docs/hibert.md)", files[i],
                         s.n ? "one sentence, no sentence boundary" : "empty document");
            rc = LC_EXIT_RUNTIME;
        }
        lc_sentences_free(&s);
        if (rc < 0 && (st || (st = lc_hdocs_add_text(&d, body, files[i], NULL)))) rc = lc_cli_fail(st);
        free(text);
    }
    lc_set_threads(threads);
    lc_hibert *m = NULL;
    if (rc < 0 && (st = load_for(ckpt, &d, 1, &m))) rc = lc_cli_fail(st);
    float *scores = rc < 0 ? malloc(sizeof(float) * (size_t)d.n_sents) : NULL;
    uint8_t *pick = rc < 0 ? malloc((size_t)d.n_sents) : NULL;
    if (rc < 0 && (!scores || !pick)) lc_cli_error("summarize: out of memory"), rc = LC_EXIT_RUNTIME;
    if (rc < 0 && (st = lc_hdocs_scores(m, &d, 1, scores))) rc = lc_cli_fail(st);
    for (int j = 0; j < d.n_docs && rc < 0; j++) {
        const int f = d.doc_first[j], c = d.doc_first[j + 1] - f;
        lc_top_k(scores + f, c, k, pick);
        if (nf > 1) printf("==> %s <==\n", d.name[j]);
        if (show_scores) { /* the logit as %.9g: a float read back exactly */
            for (int i = 0; i < c; i++) printf("%.9g\t%d\t%s\n", (double)scores[f + i], pick[i], d.sent[f + i]);
            continue;
        }
        char *summary = NULL;
        if ((st = lc_sentences_join(d.sent + f, c, pick, &summary))) { rc = lc_cli_fail(st); break; }
        printf("%s\n", summary);
        free(summary);
    }
    free(scores), free(pick), free(files), free(rest);
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
