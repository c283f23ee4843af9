/* `longctx bench hibert`: HIBERT's sentence-encoder throughput next to the language model's, same shape.
 * Both train side by side in one process, steps interleaved (one HIBERT step, one LM step, ...), so a
 * busy machine slows both alike; medians of the timed steps. HIBERT trains extractive summarization on
 * real BBC training documents (packed sentences of their real lengths, each plus its EOS row); the LM
 * trains on fixed-length segments of the same documents' bytes, with as many rows per step as the
 * HIBERT batch has on average. Both stacks of HIBERT take the model-shape flags (the document encoder
 * reads one row per sentence, so it costs about 1/100 of the sentence encoder on BBC). A one-row table, or
 * one JSON line with --json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_flags.h"
#include "core/status.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/kernels.h"

typedef struct {
    lc_document *docs;
    int n;
} doc_set;

static void docs_free(doc_set *d) {
    for (int i = 0; i < d->n; i++) lc_document_free(&d->docs[i]);
    free(d->docs);
}

static lc_status docs_read(const char *root, int want, doc_set *out) {
    lc_doc_list l;
    lc_status st = lc_doc_list_open(root, LC_PART_TRAIN, &l);
    if (st) return st;
    out->n = 0;
    out->docs = calloc((size_t)(want < l.n ? want : l.n), sizeof *out->docs);
    if (!out->docs) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < l.n && out->n < want; i++) {
        st = lc_document_read(l.article[i], NULL, &out->docs[out->n]);
        if (!st) out->n++;
    }
    lc_doc_list_free(&l);
    return st;
}

/* Batch `b` of `per` consecutive documents (wrapping) as an lc_hibert_batch; returns its rows (bytes
 * truncated to max_len, plus one EOS row per sentence). The arrays must hold per * max_sents entries. */
static long make_batch(const doc_set *d, int b, int per, int max_len, lc_hibert_batch *hb, int *n_sents,
                       const uint8_t **sent, int *sent_len) {
    long rows = 0;
    int s = 0;
    for (int j = 0; j < per; j++) {
        const lc_sentences *ss = &d->docs[(b * per + j) % d->n].sents;
        n_sents[j] = ss->n;
        for (int i = 0; i < ss->n; i++, s++) {
            int len = (int)strlen(ss->sent[i]);
            sent[s] = (const uint8_t *)ss->sent[i];
            sent_len[s] = len;
            rows += (len < max_len ? len : max_len) + 1;
        }
    }
    *hb = (lc_hibert_batch){per, n_sents, sent, sent_len};
    return rows;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    lc_hibert *h;
    lc_model *lm;
    lc_corpus corpus; /* the documents' sentences joined, the LM's training bytes */
    int lm_batch;
} bench_models;

/* Builds both models; HIBERT's activations are planned for `lim`, the largest batch the bench forms, with no
 * sentence decoder (only the extractive step runs). */
static lc_status build_models(const lc_config *shape, const doc_set *d, lc_hibert_limits lim, long rows_per_step,
                              bench_models *bm) {
    lc_hibert_config hc;
    lc_hibert_config_default(&hc);
    lc_hibert_stack s = {shape->n_layer, shape->d_model, shape->n_head, shape->d_ff, ""};
    snprintf(s.attn, sizeof s.attn, "%s", shape->attn);
    hc.sent = hc.doc = s;
    hc.norm = shape->norm, hc.activation = shape->activation, hc.precision = shape->precision;
    int max_sents = 1;
    long total = 0;
    for (int i = 0; i < d->n; i++) {
        if (d->docs[i].sents.n > max_sents) max_sents = d->docs[i].sents.n;
        for (int k = 0; k < d->docs[i].sents.n; k++) total += (long)strlen(d->docs[i].sents.sent[k]) + 1;
    }
    hc.max_sents = max_sents;
    lc_status st = lc_hibert_create(&hc, &lim, 1, &bm->h);
    if (st) return st;
    bm->lm_batch = (int)((rows_per_step + shape->seq_len / 2) / shape->seq_len);
    if (bm->lm_batch < 1) bm->lm_batch = 1;
    if ((st = lc_model_create(shape, bm->lm_batch, 1, &bm->lm))) return st;
    memset(&bm->corpus, 0, sizeof bm->corpus);
    bm->corpus.bytes = malloc((size_t)total + 1);
    if (!bm->corpus.bytes) return lc_fail(LC_ERR_NOMEM, "out of memory");
    size_t at = 0;
    for (int i = 0; i < d->n; i++)
        for (int k = 0; k < d->docs[i].sents.n; k++) {
            size_t len = strlen(d->docs[i].sents.sent[k]);
            memcpy(bm->corpus.bytes + at, d->docs[i].sents.sent[k], len);
            at += len;
            bm->corpus.bytes[at++] = ' ';
        }
    bm->corpus.size = at;
    bm->corpus.end[LC_PART_TRAIN] = bm->corpus.end[LC_PART_ALL] = at;
    return LC_OK;
}

static void free_models(bench_models *bm) {
    lc_hibert_free(bm->h);
    lc_model_free(bm->lm);
    free(bm->corpus.bytes);
}

int lc_cmd_bench_hibert(int argc, char **argv) {
    const char *data = "data/bbc-news-summary";
    int per = 8, steps = 20, warmup = 2, threads = 0, json = 0;
    lc_model_flags mf;
    lc_model_flags_init(&mf);
    lc_opt opts[24 + LC_MODEL_FLAG_COUNT] = {
        {"--data", OPT_STR, &data, 0, 0, "BBC News Summary root (default data/bbc-news-summary; train split)", 0},
        {"--docs", OPT_INT, &per, 1, 4096, "documents per HIBERT step (default 8)", 0},
        {"--steps", OPT_INT, &steps, 1, 100000, "timed steps of each model (default 20)", 0},
        {"--warmup", OPT_INT, &warmup, 0, 100000, "untimed steps of each first (default 2)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "one JSON line instead of the table", 0},
    };
    int n = lc_model_flags_add(&mf, opts, 6);
    int rc = lc_parse_opts("bench hibert", "[options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    lc_config cfg;
    if ((rc = lc_model_flags_apply(&mf, opts, n, "bench hibert", &cfg)) >= 0) return rc;
    lc_threads_set_default(threads);
    doc_set d = {NULL, 0};
    lc_status st = docs_read(data, per * (warmup + steps), &d);
    if (st) return lc_cli_fail(st);
    int max_sents = 0;
    for (int i = 0; i < d.n; i++) max_sents = d.docs[i].sents.n > max_sents ? d.docs[i].sents.n : max_sents;
    int *n_sents = calloc((size_t)per, sizeof *n_sents), *sent_len = calloc((size_t)per * max_sents, sizeof *sent_len);
    const uint8_t **sent = calloc((size_t)per * max_sents, sizeof *sent);
    uint8_t *labels = calloc((size_t)per * max_sents, 1);
    double *h_ms = calloc((size_t)steps, sizeof *h_ms), *l_ms = calloc((size_t)steps, sizeof *l_ms);
    lc_hibert_config dflt;
    lc_hibert_config_default(&dflt);
    long rows_all = 0; /* rows of the timed HIBERT steps: sentence bytes plus one EOS per sentence */
    lc_hibert_limits lim = {.max_docs = per, .max_sents = 1, .max_bytes = 1, .no_decoder = 1}; /* largest batch */
    for (int b = 0; n_sents && sent_len && sent && b < warmup + steps; b++) {
        lc_hibert_batch hb;
        const long rows = make_batch(&d, b, per, dflt.max_sent_len, &hb, n_sents, sent, sent_len);
        int sents = 0;
        for (int j = 0; j < per; j++) sents += n_sents[j];
        if (sents > lim.max_sents) lim.max_sents = sents;
        if (rows - sents > lim.max_bytes) lim.max_bytes = rows - sents; /* EOS rows are not bytes */
        if (b >= warmup) rows_all += rows;
    }
    long rows_per_step = rows_all / steps;
    bench_models bm = {0};
    if (!n_sents || !sent_len || !sent || !labels || !h_ms || !l_ms) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st) st = build_models(&cfg, &d, lim, rows_per_step, &bm);
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = warmup + steps, o.warmup = 1, o.eval_every = 0, o.batch = bm.lm_batch;
    long eos_all = 0;
    for (int b = 0; !st && b < warmup + steps; b++) {
        lc_hibert_batch hb;
        make_batch(&d, b, per, dflt.max_sent_len, &hb, n_sents, sent, sent_len);
        int total = 0;
        for (int j = 0; j < per; j++) total += n_sents[j];
        for (int i = 0; i < total; i++) labels[i] = (uint8_t)(i % 3 == 0);
        if (b >= warmup) eos_all += total;
        double t0 = lc_now_seconds();
        st = lc_hibert_step(bm.h, &o, &hb, labels, NULL);
        double t1 = lc_now_seconds();
        o.stop_after = 1;
        if (!st) st = lc_train(bm.lm, &bm.corpus, &o, NULL, NULL);
        double t2 = lc_now_seconds();
        if (b >= warmup) h_ms[b - warmup] = 1e3 * (t1 - t0), l_ms[b - warmup] = 1e3 * (t2 - t1);
    }
    if (!st) {
        qsort(h_ms, (size_t)steps, sizeof *h_ms, cmp_double);
        qsort(l_ms, (size_t)steps, sizeof *l_ms, cmp_double);
        double hm = h_ms[steps / 2], lm = l_ms[steps / 2];
        double rows_s = rows_per_step / (hm / 1e3), bytes_s = (double)(rows_all - eos_all) / steps / (hm / 1e3);
        double lm_tok_s = (double)bm.lm_batch * cfg.seq_len / (lm / 1e3);
        if (!json) {
            printf("bench hibert: %d layers, dim %d, %d heads, ffn %d | HIBERT %d documents (%ld rows) per step, LM batch "
                   "%d x %d | %d thread%s%s | medians of %d interleaved steps\n", cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff,
                   per, rows_per_step, bm.lm_batch, cfg.seq_len, lc_threads_default(), lc_plural(lc_threads_default()),
                   lc_precision_note(cfg.precision), steps);
            printf("%15s %16s %15s %11s %13s %17s\n", "HIBERT ms/step", "HIBERT bytes/s", "HIBERT rows/s", "LM ms/step",
                   "LM tokens/s", "LM / HIBERT rows");
            printf("%15.2f %16.0f %15.0f %11.2f %13.0f %17.3f\n", hm, bytes_s, rows_s, lm, lm_tok_s, lm_tok_s / rows_s);
        } else {
            printf("{\"bench\":\"hibert\",\"precision\":\"%s\",\"threads\":%d,\"layers\":%d,\"dim\":%d,\"heads\":%d,\"ffn\":%d,"
               "\"docs_per_step\":%d,\"rows_per_step\":%ld,\"hibert_ms_median\":%.3f,\"hibert_bytes_per_s\":%.1f,"
               "\"hibert_rows_per_s\":%.1f,\"lm_seg_len\":%d,\"lm_batch\":%d,\"lm_ms_median\":%.3f,"
               "\"lm_tokens_per_s\":%.1f,\"lm_over_hibert_rows\":%.3f}\n",
               lc_precision_path(cfg.precision), lc_threads_default(), cfg.n_layer, cfg.d_model, cfg.n_head, cfg.d_ff, per,
               rows_per_step, hm, bytes_s,
               rows_s, cfg.seq_len, bm.lm_batch, lm, lm_tok_s, lm_tok_s / rows_s);
        }
    }
    free_models(&bm);
    docs_free(&d);
    free(n_sents), free(sent_len), free(sent), free(labels), free(h_ms), free(l_ms);
    return st ? lc_cli_fail(st) : LC_EXIT_OK;
}
