/* Step-for-step comparison of longctx's intruder pre-training with PyTorch's (experiments/hibert-plateau/README.md, "The intruder
 * plateau is an onset time"): STEPS steps of lc_hibert_pretrain_step_intruders from CKPT on fixed batches
 * (BATCHES: one line of 8 train-split document indices per step, first 64 sentences of each), intruders
 * alone (rate 0.25, weight 10^6), constant lr 1e-3, clipping at CLIP (0: off), the sentence encoder frozen
 * as experiments/hibert-plateau/hibert_intruder_parity.py's `zero` checkpoint wants. It prints the mean training BCE every 125
 * steps and writes OUT_DIR/swaps.txt (per step: each place's source sentence and label, 1 = own document),
 * OUT_DIR/params.bin (the parameters after the last step, fp32) and OUT_DIR/params.txt (name, offset,
 * count of each tensor); `experiments/hibert-plateau/hibert_intruder_parity.py replay` trains the same steps in PyTorch and
 * compares.
 *   usage: build/release/experiments/hibert-plateau/hibert_intruder_replay CKPT BATCHES STEPS CLIP OUT_DIR [BBC_ROOT] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "longctx.h"
#include "models/hibert/hibert.h"

enum { DOCS = 8, MAX_SENTS = 64, BYTES = DOCS * MAX_SENTS * 257 };

static FILE *open_in(const char *dir, const char *name, const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, mode);
    if (!f) fprintf(stderr, "hibert_intruder_replay: cannot write %s\n", path);
    return f;
}

/* One step's batch from the next line of `batches`; 0 at its end or on a bad index. */
static int read_batch(FILE *batches, const lc_doc_list *list, lc_document *docs, int *n_sents, const uint8_t **sent,
                      int *len) {
    for (int j = 0, n = 0; j < DOCS; j++) {
        int k;
        if (fscanf(batches, "%d", &k) != 1 || k < 0 || k >= list->n) return 0;
        if (!docs[k].sents.n && lc_document_read(list->article[k], NULL, &docs[k])) {
            fprintf(stderr, "hibert_intruder_replay: %s\n", lc_last_error());
            return 0;
        }
        n_sents[j] = docs[k].sents.n < MAX_SENTS ? docs[k].sents.n : MAX_SENTS;
        for (int i = 0; i < n_sents[j]; i++, n++)
            sent[n] = (const uint8_t *)docs[k].sents.sent[i], len[n] = (int)strlen(docs[k].sents.sent[i]);
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 6 || argc > 7) {
        fprintf(stderr, "usage: %s CKPT BATCHES STEPS CLIP OUT_DIR [BBC_ROOT]\n", argv[0]);
        return 2;
    }
    const int steps = atoi(argv[3]);
    lc_doc_list list;
    lc_hibert *m = NULL;
    const lc_hibert_limits lim = {DOCS, DOCS * MAX_SENTS, BYTES, 0, 0};
    lc_status st = lc_doc_list_open(argc > 6 ? argv[6] : "data/bbc-news-summary", LC_PART_TRAIN, &list);
    if (!st) st = lc_hibert_load(argv[1], &lim, &m, NULL);
    if (!st) st = lc_hibert_set_threads(m, 1);
    FILE *batches = fopen(argv[2], "r"), *swaps = open_in(argv[5], "swaps.txt", "w");
    if (st || !batches || !swaps || steps < 1) {
        fprintf(stderr, "hibert_intruder_replay: %s\n", st ? lc_last_error() : !batches ? argv[2] : "STEPS must be >= 1");
        return 1;
    }
    lc_document *docs = calloc((size_t)list.n, sizeof *docs);
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = steps, o.lr = o.min_lr = 1e-3f, o.warmup = 0, o.clip = (float)atof(argv[4]);
    snprintf(o.lr_scale, sizeof o.lr_scale, "sent.blocks=0,sent.ln_f=0,sent.wte=0,sent.wpe=0");
    int n_sents[DOCS], len[DOCS * MAX_SENTS], source[DOCS * MAX_SENTS];
    const uint8_t *sent[DOCS * MAX_SENTS];
    uint8_t intruder[DOCS * MAX_SENTS];
    double window = 0;
    for (int s = 0; s < steps && !st; s++) {
        if (!read_batch(batches, &list, docs, n_sents, sent, len)) {
            fprintf(stderr, "hibert_intruder_replay: %s: no batch of %d valid document indices for step %d\n", argv[2],
                    DOCS, s + 1);
            return 1;
        }
        const lc_hibert_batch b = {DOCS, n_sents, sent, len};
        const uint64_t seed = 1000 + (uint64_t)s;
        double loss, bce;
        if ((st = lc_hibert_pretrain_step_intruders(m, &o, &b, seed, 0.25, 1e6f, &loss, &bce))) break;
        /* the step's swaps, drawn as step_passes draws them */
        lc_hibert_swap_sentences(DOCS, n_sents, 0.25, lc_seed_mix(seed, LC_HIBERT_INTRUDER_STREAM), source, intruder);
        int n = 0;
        for (int j = 0; j < DOCS; j++) n += n_sents[j];
        for (int i = 0; i < n; i++) fprintf(swaps, "%d %d%c", source[i], !intruder[i], i + 1 < n ? ' ' : '\n');
        window += bce;
        if ((s + 1) % 125 == 0) printf("longctx step %d BCE %.4f\n", s + 1, window / 125), fflush(stdout), window = 0;
    }
    if (st) {
        fprintf(stderr, "hibert_intruder_replay: %s\n", lc_last_error());
        return 1;
    }
    FILE *pb = open_in(argv[5], "params.bin", "wb"), *pt = open_in(argv[5], "params.txt", "w");
    if (!pb || !pt) return 1;
    fwrite(m->params, sizeof(float), m->ptab.total, pb);
    for (int i = 0; i < m->tensors.n; i++) {
        const lc_tensor *t = &m->tensors.t[i];
        if (lc_tensor_is_param(t))
            fprintf(pt, "%s %ld %ld\n", t->name, (long)m->ptab.slots[t->slot].offset, (long)m->ptab.slots[t->slot].count);
    }
    fclose(pb), fclose(pt), fclose(swaps), fclose(batches);
    for (int k = 0; k < list.n; k++)
        if (docs[k].sents.n) lc_document_free(&docs[k]);
    free(docs);
    lc_hibert_free(m);
    lc_doc_list_free(&list);
    return 0;
}
