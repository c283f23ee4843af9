/* libFuzzer harness: the classification data readers from arbitrary bytes. The input is read as a labelled
 * TSV file (plain, or gzip when it starts with 1f 8b), within small limits; a file that reads must map
 * onto its own label set, survive a save/load round trip of that set, and give a word vocabulary that
 * round-trips and tokenizes every text. The same bytes are also parsed as a saved label set and as a saved
 * word vocabulary (checkpoint metadata texts), and as a TSV file of source/target pairs (seq2seq), whose
 * pairs must lie within the file and its line limit. */
#include "fuzz_kit.h"

static void label_set_text(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return;
    memcpy(text, data, size);
    text[size] = '\0';
    lc_label_set s;
    lc_status st = lc_label_set_load(text, &s);
    fuzz_expect_message(st);
    if (!st) {
        char *again = NULL;
        lc_label_set back;
        if (lc_label_set_save(&s, &again) || lc_label_set_load(again, &back) || back.n != s.n) abort();
        for (int i = 0; i < s.n; i++)
            if (strcmp(s.name[i], back.name[i]) != 0 || lc_label_set_find(&back, s.name[i]) != i) abort();
        lc_label_set_free(&back);
        free(again);
        lc_label_set_free(&s);
    }
    lc_word_vocab *v = NULL;
    st = lc_word_vocab_load(text, size, &v);
    fuzz_expect_message(st);
    lc_word_vocab_free(v);
    free(text);
}

static void labelled(const lc_labelled_data *d) {
    int *ids = malloc(sizeof(int) * (size_t)d->n);
    long unseen = -1;
    if (!ids || lc_labelled_map(d, &d->labels, ids, &unseen) || unseen != 0) abort();
    for (long i = 0; i < d->n; i++)
        if (ids[i] != d->label[i]) abort();
    free(ids);
    char *text = NULL;
    lc_label_set back;
    if (lc_label_set_save(&d->labels, &text) || lc_label_set_load(text, &back) || back.n != d->labels.n) abort();
    lc_label_set_free(&back);
    free(text);
    lc_word_vocab *v = NULL;
    if (lc_word_vocab_build(d->text, d->text_len, d->n, 1, 0, &v)) return;
    size_t len = 0;
    lc_word_vocab *v2 = NULL;
    if (lc_word_vocab_save(v, &text, &len) || lc_word_vocab_load(text, len, &v2) ||
        lc_word_vocab_size(v2) != lc_word_vocab_size(v))
        abort();
    int ids2[64];
    for (long i = 0; i < d->n; i++) {
        const long k = lc_tokenize(LC_TOKENS_WORDS, v2, d->text[i], d->text_len[i], 64, ids2);
        for (long j = 0; j < k && j < 64; j++)
            if (ids2[j] < 0 || ids2[j] >= lc_word_vocab_size(v2)) abort();
    }
    free(text);
    lc_word_vocab_free(v2);
    lc_word_vocab_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    label_set_text(data, size);
    const char *path = fuzz_file(0, data, size);
    if (!path) return 0;
    const lc_tsv_limits lim = {4096, 1 << 16};
    lc_labelled_data d;
    lc_status st = lc_labelled_read_limited(path, NULL, NULL, &lim, &d);
    fuzz_expect_message(st);
    if (!st) {
        if (d.n < 1 || d.labels.n < 1) abort();
        labelled(&d);
        lc_labelled_free(&d);
    }
    lc_pair_data p;
    st = lc_pairs_read(path, NULL, NULL, &lim, &p);
    fuzz_expect_message(st);
    if (!st) {
        if (p.n < 1 || p.n > lim.max_examples) abort();
        for (long i = 0; i < p.n; i++)
            if (p.src_len[i] > lim.max_line || p.tgt_len[i] > lim.max_line || p.src[i][p.src_len[i]] != 0 ||
                p.tgt[i][p.tgt_len[i]] != 0 || p.line[i] < 2)
                abort();
        lc_pairs_free(&p);
    }
    return 0;
}
