/* HIBERT's document sets (hibert_data.h): reading directories of .txt files, the BBC layout
 * and TSV files into sentences cut into model-sized chunks, batches of chunks, sentence scores, and the
 * top-k extractive summaries' ROUGE. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/hibert/hibert_data.h"
#include "core/status.h"

void lc_hdocs_init(lc_hdocs *d, int max_sents) {
    memset(d, 0, sizeof *d);
    d->max_sents = max_sents;
    d->hash = 14695981039346656037ULL;
}

void lc_hdocs_free(lc_hdocs *d) {
    for (int i = 0; i < d->n_docs; i++) free(d->name[i]), free(d->reference ? d->reference[i] : NULL);
    for (int i = 0; i < d->n_bufs; i++) free(d->bufs[i]);
    free(d->name), free(d->reference), free(d->doc_first), free(d->chunk_first), free(d->chunk_doc);
    free(d->sent), free(d->len), free(d->label), free(d->bufs);
    memset(d, 0, sizeof *d);
}

/* The capacity (64, doubled) that holds `need` items when `cap` does not; `cap` when it does. */
static int capacity_for(int cap, int need) {
    int c = cap ? cap : 64;
    while (c < need) c *= 2;
    return c;
}

/* Reallocate *p to hold `count` items of `size` bytes (0 on success; *p is kept on failure). */
static int resize(void **p, int count, size_t size) {
    void *q = realloc(*p, (size_t)count * size);
    if (!q) return -1;
    *p = q;
    return 0;
}

lc_status lc_hdocs_add_text(lc_hdocs *d, const char *text, const char *name, const char *reference) {
    lc_sentences s;
    lc_status st = lc_sentences_split(text, &s);
    if (st) return st;
    if (s.n == 0) return lc_fail(LC_ERR_FORMAT, "%s: empty document: no text", name);
    const int chunks = (s.n + d->max_sents - 1) / d->max_sents;
    int bad = 0;
    /* Each group of arrays shares one capacity, and the arrays of a group grow together. */
    const int cap_docs = capacity_for(d->cap_docs, d->n_docs + 2);
    if (cap_docs != d->cap_docs) {
        bad |= resize((void **)&d->name, cap_docs, sizeof *d->name);
        bad |= resize((void **)&d->reference, cap_docs, sizeof *d->reference);
        bad |= resize((void **)&d->doc_first, cap_docs, sizeof *d->doc_first);
        if (!bad) d->cap_docs = cap_docs;
    }
    const int cap_sents = capacity_for(d->cap_sents, d->n_sents + s.n);
    if (cap_sents != d->cap_sents) {
        bad |= resize((void **)&d->sent, cap_sents, sizeof *d->sent);
        bad |= resize((void **)&d->len, cap_sents, sizeof *d->len);
        if (!bad) d->cap_sents = cap_sents;
    }
    const int cap_bufs = capacity_for(d->cap_bufs, d->n_bufs + 1);
    if (cap_bufs != d->cap_bufs) {
        bad |= resize((void **)&d->bufs, cap_bufs, sizeof *d->bufs);
        if (!bad) d->cap_bufs = cap_bufs;
    }
    /* chunks grow exactly: few documents have many */
    bad |= resize((void **)&d->chunk_first, d->n_chunks + chunks + 1, sizeof *d->chunk_first);
    bad |= resize((void **)&d->chunk_doc, d->n_chunks + chunks + 1, sizeof *d->chunk_doc);
    char *nm = strdup(name), *ref = reference ? strdup(reference) : NULL;
    if (bad || !nm || (reference && !ref)) {
        free(nm), free(ref), lc_sentences_free(&s);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", name);
    }
    d->doc_first[d->n_docs] = d->n_sents;
    d->name[d->n_docs] = nm, d->reference[d->n_docs] = ref;
    for (int c = 0; c < chunks; c++) {
        d->chunk_first[d->n_chunks] = d->n_sents + c * d->max_sents;
        d->chunk_doc[d->n_chunks++] = d->n_docs;
    }
    for (int i = 0; i < s.n; i++) {
        d->sent[d->n_sents] = s.sent[i];
        d->len[d->n_sents++] = (int)strlen(s.sent[i]);
        d->bytes += (long)strlen(s.sent[i]);
        for (const unsigned char *p = (const unsigned char *)s.sent[i]; *p; p++) d->hash = (d->hash ^ *p) * 1099511628211ULL;
        d->hash = (d->hash ^ '\n') * 1099511628211ULL;
    }
    d->n_docs++;
    d->doc_first[d->n_docs] = d->n_sents;
    d->chunk_first[d->n_chunks] = d->n_sents;
    d->bufs[d->n_bufs++] = s.buf;
    free(s.sent);
    return LC_OK;
}

int lc_hdocs_is_bbc(const char *path) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/articles", path);
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static lc_status add_bbc(lc_hdocs *d, const char *root, lc_part part) {
    lc_doc_list l;
    lc_status st = lc_doc_list_open(root, part, &l);
    for (int i = 0; i < l.n && !st; i++) {
        lc_document doc;
        if ((st = lc_document_read(l.article[i], l.summary[i], &doc))) break;
        char *body = NULL;
        st = lc_sentences_join((const char *const *)doc.sents.sent, doc.sents.n, NULL, &body);
        if (!st) st = lc_hdocs_add_text(d, body, l.article[i], doc.reference);
        d->latin1 += doc.latin1 != 0;
        free(body);
        lc_document_free(&doc);
    }
    if (!st && l.n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: no documents in that split", root);
    lc_doc_list_free(&l);
    return st;
}

static lc_status add_dir(lc_hdocs *d, const char *dir, int held_out, int latin1) {
    DIR *dp = opendir(dir);
    if (!dp) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    lc_status st = LC_OK;
    while ((e = readdir(dp))) {
        const size_t k = strlen(e->d_name);
        if (e->d_name[0] == '.' || k < 5 || strcmp(e->d_name + k - 4, ".txt") != 0) continue;
        const int c = capacity_for(cap, n + 1);
        if ((c != cap && resize((void **)&names, c, sizeof *names)) || !(names[n] = strdup(e->d_name))) {
            st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", dir);
            break;
        }
        cap = c, n++;
    }
    closedir(dp);
    if (!st && n == 0) st = lc_fail(LC_ERR_FORMAT, "%s: no .txt documents", dir);
    if (names) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n && !st; i++) {
        if ((i % 20 == 19) != held_out) continue;
        char path[4400], *text = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!(st = lc_text_read_user(path, latin1, &text, NULL))) st = lc_hdocs_add_text(d, text, path, NULL);
        free(text);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

static lc_status add_tsv(lc_hdocs *d, const char *path, int held_out, int latin1) {
    lc_labelled_data t;
    lc_status st = lc_labelled_read(path, NULL, NULL, &t);
    if (st) return st;
    for (long i = 0; i < t.n && !st; i++) {
        if ((i % 20 == 19) != held_out) continue;
        char *text = malloc(t.text_len[i] + 1), name[4200];
        snprintf(name, sizeof name, "%s:%ld", path, t.line[i]);
        if (!text) { st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", name); break; }
        memcpy(text, t.text[i], t.text_len[i] + 1);
        for (char *p = text; (p = strstr(p, "<br")) != NULL;) { /* <br />, <br/>, <br> */
            char *end = strchr(p, '>');
            if (!end || end - p > 6) { p += 3; continue; }
            memset(p, ' ', (size_t)(end - p + 1));
        }
        const size_t bad = lc_utf8_invalid_at(text, t.text_len[i]);
        if (bad < t.text_len[i] && !latin1)
            st = lc_fail(LC_ERR_FORMAT, "%s: not UTF-8 (byte offset %zu of the text); give --encoding latin1 to read it "
                                        "as Latin-1", name, bad);
        else if (bad < t.text_len[i])
            st = lc_fail(LC_ERR_ARG, "%s: --encoding latin1 is not supported for TSV files", name);
        else
            st = lc_hdocs_add_text(d, text, name, NULL);
        free(text);
    }
    lc_labelled_free(&t);
    return st;
}

lc_status lc_hdocs_add(lc_hdocs *d, const char *path, lc_part part, int held_out, int latin1) {
    struct stat sb;
    if (stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return lc_hdocs_is_bbc(path) ? add_bbc(d, path, part) : add_dir(d, path, held_out, latin1);
    return add_tsv(d, path, held_out, latin1);
}

lc_status lc_hdocs_label(lc_hdocs *d, int rule) {
    free(d->label);
    if (!(d->label = calloc((size_t)d->n_sents + 1, 1))) return lc_fail(LC_ERR_NOMEM, "labels: out of memory");
    for (int j = 0; j < d->n_docs; j++) {
        if (!d->reference[j]) return lc_fail(LC_ERR_ARG, "%s: no reference summary to label it", d->name[j]);
        const int f = d->doc_first[j];
        lc_status st = lc_summary_labels(d->sent + f, d->doc_first[j + 1] - f, d->reference[j], (lc_label_rule)rule,
                                         d->label + f, NULL);
        if (st) return st;
    }
    return LC_OK;
}

/* The largest `k` values seen, each value entered `times` times (a multiset kept sorted, largest first). */
typedef struct {
    long v[64];
    int k;
} top_k;

static void top_add(top_k *t, long v, int times) {
    for (int r = 0; r < times; r++) {
        long x = v;
        for (int i = 0; i < t->k; i++)
            if (x > t->v[i]) { const long s = t->v[i]; t->v[i] = x, x = s; }
    }
}

/* The sum of the top values, scaled up when the batch is larger than the values kept. */
static long top_sum(const top_k *t, int batch) {
    long s = 0;
    for (int i = 0; i < t->k; i++) s += t->v[i];
    if (batch > t->k) s = s * batch / t->k + 1;
    return s > 0 ? s : 1;
}

static int cmp_int_desc(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

lc_hibert_limits lc_hdocs_limits(const lc_hdocs *train, const lc_hdocs *held, int batch, const lc_hibert_config *cfg,
                                 int pretrain) {
    /* A batch holds `batch` chunks: the largest chunks by sentences, by bytes and by decoder rows bound any
     * batch. Training batches are windows over epochs each shuffled, so a chunk can come twice in one
     * (an epoch boundary) or more when the set is smaller than a batch; held-out batches take each chunk once
     * (windows over one fixed shuffled order). */
    top_k top[3];
    const int k = batch < 64 ? batch : 64;
    for (int t = 0; t < 3; t++) memset(&top[t], 0, sizeof top[t]), top[t].k = k;
    const lc_hdocs *sets[2] = {train, held};
    int *len = malloc(sizeof(int) * (size_t)(cfg->max_sents > 0 ? cfg->max_sents : 1));
    for (int w = 0; w < 2 && len; w++) {
        const lc_hdocs *x = sets[w];
        if (!x || !x->n_chunks) continue;
        int times = w == 0 ? (batch + x->n_chunks - 1) / x->n_chunks + 1 : 1;
        if (times > batch) times = batch;
        for (int c = 0; c < x->n_chunks; c++) {
            const int f = x->chunk_first[c], n = x->chunk_first[c + 1] - f;
            long bytes = 0, dec = 0;
            for (int i = 0; i < n; i++) {
                len[i] = x->len[f + i] < cfg->max_sent_len ? x->len[f + i] : cfg->max_sent_len;
                bytes += len[i];
            }
            if (pretrain) { /* the selected sentences: regenerated (decoder), replaced at worst by the longest */
                qsort(len, (size_t)n, sizeof *len, cmp_int_desc);
                const int sel = lc_hibert_mask_count(n);
                for (int i = 0; i < sel; i++) dec += len[i] + 1, bytes += len[0] - len[n - 1 - i];
            }
            top_add(&top[0], n, times), top_add(&top[1], bytes, times), top_add(&top[2], dec, times);
        }
    }
    lc_hibert_limits l = {batch, (int)top_sum(&top[0], batch), top_sum(&top[1], batch),
                          pretrain ? top_sum(&top[2], batch) : 0, !pretrain};
    if (!len) l.max_sents = 0, l.max_bytes = 0, l.max_dec_rows = 0; /* out of memory: the model's own bounds */
    free(len);
    return l;
}

lc_status lc_hbatch_make(lc_hbatch *h, const lc_hdocs *d, const int *idx, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += d->chunk_first[idx[i] + 1] - d->chunk_first[idx[i]];
    if (total > h->cap || !h->n_sents) {
        lc_hbatch_free(h);
        h->cap = total > 64 ? total : 64;
        h->n_sents = malloc(sizeof(int) * (size_t)(n > h->cap ? n : h->cap));
        h->len = malloc(sizeof(int) * (size_t)h->cap);
        h->sent = malloc(sizeof *h->sent * (size_t)h->cap);
        h->labels = malloc((size_t)h->cap);
        h->feat = malloc(sizeof(float) * LC_SUMMARY_FEATURES * (size_t)h->cap);
        if (!h->n_sents || !h->len || !h->sent || !h->labels || !h->feat)
            return lc_fail(LC_ERR_NOMEM, "batch: out of memory");
    }
    if (h->features < 0 || h->features > LC_SUMMARY_FEATURES)
        return lc_fail(LC_ERR_ARG, "the model's head reads %d features a sentence; the CLI makes at most %d (position, "
                                   "length, LexRank centrality, word frequency)", h->features, LC_SUMMARY_FEATURES);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const int f = d->chunk_first[idx[i]], c = d->chunk_first[idx[i] + 1] - f;
        h->n_sents[i] = c;
        lc_status st;
        if (h->features && (st = lc_summary_features(d->sent + f, c, h->features, h->feat + (size_t)k * h->features)))
            return st;
        for (int j = f; j < f + c; j++, k++) {
            h->sent[k] = (const uint8_t *)d->sent[j], h->len[k] = d->len[j];
            h->labels[k] = d->label ? d->label[j] : 0;
        }
    }
    h->b = (lc_hibert_batch){n, h->n_sents, h->sent, h->len, h->features ? h->feat : NULL};
    return LC_OK;
}

void lc_hbatch_free(lc_hbatch *h) {
    const int features = h->features;
    free(h->n_sents), free(h->len), free(h->sent), free(h->labels), free(h->feat);
    memset(h, 0, sizeof *h);
    h->features = features;
}

lc_status lc_hdocs_scores(lc_hibert *m, const lc_hdocs *d, int batch, float *scores) {
    lc_hbatch h = {0};
    h.features = lc_hibert_get_config(m)->head_features;
    int *idx = malloc(sizeof(int) * (size_t)batch);
    lc_status st = idx ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory");
    for (int c0 = 0; c0 < d->n_chunks && !st; c0 += batch) {
        const int n = d->n_chunks - c0 < batch ? d->n_chunks - c0 : batch;
        for (int i = 0; i < n; i++) idx[i] = c0 + i;
        if ((st = lc_hbatch_make(&h, d, idx, n)) || (st = lc_hibert_extract_forward(m, &h.b, NULL, 0, NULL, NULL))) break;
        const int f = d->chunk_first[c0];
        memcpy(scores + f, lc_hibert_scores(m), sizeof(float) * (size_t)(d->chunk_first[c0 + n] - f));
    }
    free(idx);
    lc_hbatch_free(&h);
    return st;
}

void lc_top_k(const float *scores, int n, int k, uint8_t *pick) {
    memset(pick, 0, (size_t)n);
    for (int t = 0; t < k && t < n; t++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!pick[i] && (best < 0 || scores[i] > scores[best])) best = i;
        if (best < 0) break;
        pick[best] = 1;
    }
}

lc_status lc_hdocs_rouge(lc_hibert *m, const lc_hdocs *d, int batch, double r[6]) {
    float *scores = malloc(sizeof(float) * (size_t)(d->n_sents + 1));
    uint8_t *pick = malloc((size_t)d->n_sents + 1), *gold = malloc((size_t)d->n_sents + 1);
    for (int i = 0; i < 6; i++) r[i] = 0;
    lc_status st = LC_OK;
    if (!scores || !pick || !gold) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    else st = lc_hdocs_scores(m, d, batch, scores);
    for (int j = 0; j < d->n_docs && !st; j++) {
        const int f = d->doc_first[j], n = d->doc_first[j + 1] - f;
        int k = 0;
        if ((st = lc_summary_labels(d->sent + f, n, d->reference[j], LC_LABELS_CONTAINED, gold, &k))) break;
        lc_top_k(scores + f, n, k, pick);
        char *summary = NULL;
        lc_rouge x, y;
        if (!(st = lc_sentences_join(d->sent + f, n, pick, &summary)) && !(st = lc_rouge_score(summary, d->reference[j], &x)))
            st = lc_rouge_score_stem(summary, d->reference[j], &y);
        free(summary);
        if (!st) r[0] += x.r1.f1, r[1] += x.r2.f1, r[2] += x.rl.f1, r[3] += y.r1.f1, r[4] += y.r2.f1, r[5] += y.rl.f1;
    }
    for (int i = 0; i < 6; i++) r[i] = d->n_docs ? 100 * r[i] / d->n_docs : 0;
    free(scores), free(pick), free(gold);
    return st;
}

lc_status lc_hdocs_load_sources(lc_hdocs *train, lc_hdocs *valid, const char *sources, int max_sents, int latin1,
                                int labels) {
    lc_hdocs_init(train, max_sents), lc_hdocs_init(valid, max_sents);
    char *copy = strdup(sources);
    lc_status st = copy ? LC_OK : lc_fail(LC_ERR_NOMEM, "out of memory");
    for (char *p = copy, *nl; p && *p && !st; p = nl ? nl + 1 : NULL) {
        if ((nl = strchr(p, '\n'))) *nl = 0;
        if (!(st = lc_hdocs_add(train, p, LC_PART_TRAIN, 0, latin1))) st = lc_hdocs_add(valid, p, LC_PART_VALID, 1, latin1);
    }
    free(copy);
    if (!st && labels >= 0 && !(st = lc_hdocs_label(train, labels))) st = lc_hdocs_label(valid, labels);
    return st;
}

const char *lc_summary_body(const char *text, int title, int no_title) {
    /* the BBC layout without --title: a first line that is followed by a blank line and does not end a sentence
     * ('.', '!' or '?', a closing quote allowed after it) is a title, not part of the text */
    const char *nl = strchr(text, '\n');
    if (title) return nl ? nl + 1 : text + strlen(text);
    if (no_title || !nl) return text;
    const char *end = nl, *next = nl + 1;
    while (end > text && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
    while (*next == ' ' || *next == '\t' || *next == '\r') next++;
    if (*next != '\n' || end == text) return text; /* no blank line after it, or line 1 is blank */
    while (end > text && (end[-1] == '"' || end[-1] == '\'')) end--;
    return end[-1] == '.' || end[-1] == '!' || end[-1] == '?' ? text : nl + 1;
}

lc_status lc_hdocs_add_summary_text(lc_hdocs *d, const char *text, const char *name, int title, int no_title) {
    const char *body = lc_summary_body(text, title, no_title);
    lc_sentences s;
    lc_status st = lc_sentences_split(body, &s);
    if (!st && s.n < 2)
        st = lc_fail(LC_ERR_FORMAT, "%s: %s: a summary needs at least 2 sentences (the sentence rule: "
                                    "docs/results/summarization-protocol.md)",
                     name, s.n ? "one sentence, no sentence boundary" : "empty document");
    lc_sentences_free(&s);
    return st ? st : lc_hdocs_add_text(d, body, name, NULL);
}

lc_status lc_hdocs_load_scorer(const char *ckpt, const lc_hdocs *d, int batch, lc_hibert **m, int *intruder_head) {
    lc_hibert_config cfg;
    lc_hibert_run run;
    lc_status st = lc_hibert_checkpoint_info(ckpt, &cfg, &run);
    if (st) return st;
    if (run.stage == LC_HIBERT_STAGE_PRETRAIN && !(run.intruders > 0))
        return lc_fail(LC_ERR_ARG, "%s: a pre-training checkpoint without --intruders: its head was never trained "
                                   "(fine-tune it with hibert finetune --init)", ckpt);
    /* without documents: any `batch` chunks (0: the model's bounds, cfg.max_sents sentences of max_sent_len) */
    const lc_hibert_limits any = {.max_docs = batch, .no_decoder = 1};
    const lc_hibert_limits lim = d ? lc_hdocs_limits(NULL, d, batch, &cfg, 0) : any;
    if ((st = lc_hibert_load(ckpt, &lim, m, NULL))) return st;
    if (intruder_head) *intruder_head = run.stage == LC_HIBERT_STAGE_PRETRAIN;
    return LC_OK;
}
