/* Tests of the summarization data and evaluation module (src/summ): reading text (UTF-8, Latin-1,
 * binary refused), the sentence rule and its edge cases, documents and the BBC split on the bundled
 * corpus, contained labels, the greedy ROUGE oracle, and ROUGE-1/2/L against hand-computed values and
 * against the fixtures of the independent Python reference (tests/reference/rouge_ref.py). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "longctx.h"
#include "summ/summ.h"
#include "test_files.h"

#define BBC "data/bbc-news-summary"

static int error_has(const char *part) { return strstr(lc_last_error(), part) != NULL; }

/* Splits text and compares with the expected sentences (NULL-terminated). */
static int split_is(const char *text, const char *const *want) {
    lc_sentences s;
    if (lc_sentences_split(text, &s)) return 0;
    int n = 0;
    while (want[n]) n++;
    int ok = s.n == n;
    for (int i = 0; ok && i < n; i++) ok = strcmp(s.sent[i], want[i]) == 0;
    if (!ok) {
        printf("  split of '%s': got %d sentences:", text, s.n);
        for (int i = 0; i < s.n; i++) printf(" [%s]", s.sent[i]);
        printf("\n");
    }
    lc_sentences_free(&s);
    return ok;
}

#define SPLIT_IS(text, ...)                                                                              \
    do {                                                                                                 \
        const char *const want_[] = {__VA_ARGS__, NULL};                                                 \
        CHECK(split_is(text, want_), "sentence split");                                                  \
    } while (0)

TEST(sentence_rule_edge_cases) {
    /* the rule splits after abbreviations: it does not know them */
    SPLIT_IS("Mr. Smith went to Washington. He left.", "Mr.", "Smith went to Washington.", "He left.");
    /* the character after the full stop is a quote, not whitespace: no boundary */
    SPLIT_IS("He said \"no.\" Then he left.", "He said \"no.\" Then he left.");
    /* a quote after the space starts a sentence, double or single */
    SPLIT_IS("He left. \"Why?\" she asked. 'Fine,' he said.", "He left.", "\"Why?\" she asked.", "'Fine,' he said.");
    /* no boundary: one sentence (lower case, a digit, no space, non-ASCII upper case) */
    SPLIT_IS("no boundary here at all", "no boundary here at all");
    SPLIT_IS("It cost $1.5m. the end", "It cost $1.5m. the end");
    SPLIT_IS("In 2004. 2005 was better.", "In 2004. 2005 was better.");
    SPLIT_IS("Version 2.0 is out.Next one", "Version 2.0 is out.Next one");
    SPLIT_IS("Il est parti. \xc3\x89lodie aussi.", "Il est parti. \xc3\x89lodie aussi.");
    /* whitespace: runs collapse to one space, none kept at the ends; any run is a boundary space */
    SPLIT_IS("  \n First  one.\t\n\n  Second\t\tone!  \r\n", "First one.", "Second one!");
    SPLIT_IS("End. ", "End.");
    SPLIT_IS("Really?! Yes. Really? Yes!", "Really?!", "Yes.", "Really?", "Yes!");
    SPLIT_IS("A. B. C.", "A.", "B.", "C.");
    /* empty and all-whitespace text: no sentence */
    lc_sentences s;
    CHECK(lc_sentences_split("", &s) == LC_OK && s.n == 0, "empty text has %d sentences", s.n);
    lc_sentences_free(&s);
    CHECK(lc_sentences_split(" \n\t\r ", &s) == LC_OK && s.n == 0, "blank text has %d sentences", s.n);
    lc_sentences_free(&s);
}

TEST(join_picks_in_order) {
    const char *sent[] = {"One.", "Two.", "Three."};
    uint8_t pick[] = {1, 0, 1};
    char *out;
    CHECK(lc_sentences_join(sent, 3, pick, &out) == LC_OK && strcmp(out, "One. Three.") == 0, "join: %s", out);
    free(out);
    CHECK(lc_sentences_join(sent, 3, NULL, &out) == LC_OK && strcmp(out, "One. Two. Three.") == 0, "all: %s", out);
    free(out);
    uint8_t none[] = {0, 0, 0};
    CHECK(lc_sentences_join(sent, 3, none, &out) == LC_OK && strcmp(out, "") == 0, "none: %s", out);
    free(out);
}

TEST(text_read_utf8_latin1_binary) {
    char *t;
    size_t n;
    int l1;
    /* Latin-1: e-acute (0xe9) and pound (0xa3) become two UTF-8 bytes each */
    write_file(tmp_path("latin1.txt"), "Caf\xe9 \xa3" "15m.", 10);
    CHECK(lc_text_read(tmp_path("latin1.txt"), &t, &n, &l1) == LC_OK && l1 == 1 &&
              strcmp(t, "Caf\xc3\xa9 \xc2\xa3" "15m.") == 0 && n == 12, "latin1: %s", lc_last_error());
    free(t);
    /* an overlong form and a sequence cut at the end are not UTF-8 either */
    write_file(tmp_path("overlong.txt"), "a\xc0\xaf", 3);
    CHECK(lc_text_read(tmp_path("overlong.txt"), &t, &n, &l1) == LC_OK && l1 == 1 && n == 5, "overlong");
    free(t);
    write_file(tmp_path("cut.txt"), "abc\xe2\x82", 5);
    CHECK(lc_text_read(tmp_path("cut.txt"), &t, &n, &l1) == LC_OK && l1 == 1, "cut sequence");
    free(t);
    /* valid UTF-8 (a 4-byte emoji) is kept; a byte-order mark is dropped */
    write_file(tmp_path("utf8.txt"), "\xef\xbb\xbfHi \xf0\x9f\x98\x80.", 11);
    CHECK(lc_text_read(tmp_path("utf8.txt"), &t, &n, &l1) == LC_OK && l1 == 0 && strcmp(t, "Hi \xf0\x9f\x98\x80.") == 0,
          "utf8: %s", lc_last_error());
    free(t);
    /* binary, missing, a directory, a FIFO: one message naming the file */
    write_file(tmp_path("bin.txt"), "abc\0def", 7);
    CHECK(lc_text_read(tmp_path("bin.txt"), &t, &n, &l1) == LC_ERR_FORMAT && error_has("bin.txt") &&
              error_has("not a text file") && t == NULL, "binary: %s", lc_last_error());
    CHECK(lc_text_read(tmp_path("missing.txt"), &t, &n, &l1) == LC_ERR_IO && error_has("missing.txt: cannot open"),
          "missing: %s", lc_last_error());
    CHECK(lc_text_read(tmpdir, &t, &n, &l1) == LC_ERR_IO && error_has("is a directory"), "dir: %s", lc_last_error());
    CHECK(mkfifo(tmp_path("fifo.txt"), 0600) == 0, "mkfifo");
    CHECK(lc_text_read(tmp_path("fifo.txt"), &t, &n, &l1) == LC_ERR_IO && error_has("not a regular file"),
          "fifo: %s", lc_last_error());
}

TEST(document_title_body_and_bad_documents) {
    lc_document d;
    write_file(tmp_path("a.txt"), "Title  here\r\n\r\nFirst one. Second\r\none.\r\n", 40);
    write_file(tmp_path("s.txt"), "Second one.First one.", 21);
    CHECK(lc_document_read(tmp_path("a.txt"), tmp_path("s.txt"), &d) == LC_OK, "read: %s", lc_last_error());
    CHECK(strcmp(d.title, "Title here") == 0, "title '%s'", d.title);
    CHECK(d.sents.n == 2 && strcmp(d.sents.sent[1], "Second one.") == 0, "%d sentences", d.sents.n);
    CHECK(strcmp(d.reference, "Second one.First one.") == 0 && d.latin1 == 0, "reference");
    lc_document_free(&d);
    CHECK(lc_document_read(tmp_path("a.txt"), NULL, &d) == LC_OK && d.reference == NULL, "no summary");
    lc_document_free(&d);
    /* empty documents: no line after the title, no newline at all, an empty file, a blank body */
    const char *empty[] = {"Just a title\n", "Only a title", "", "Title\n\n \n\t\n"};
    for (int i = 0; i < 4; i++) {
        write_file(tmp_path("e.txt"), empty[i], strlen(empty[i]));
        CHECK(lc_document_read(tmp_path("e.txt"), NULL, &d) == LC_ERR_FORMAT && error_has("e.txt: empty document"),
              "empty %d: %s", i, lc_last_error());
    }
    write_file(tmp_path("blank.txt"), " \n", 2);
    CHECK(lc_document_read(tmp_path("a.txt"), tmp_path("blank.txt"), &d) == LC_ERR_FORMAT &&
              error_has("blank.txt: empty summary"), "empty summary: %s", lc_last_error());
    /* a body without a boundary is one sentence */
    write_file(tmp_path("one.txt"), "T\nno boundary at all", 19);
    CHECK(lc_document_read(tmp_path("one.txt"), NULL, &d) == LC_OK && d.sents.n == 1, "one sentence");
    lc_document_free(&d);
}

/* The split rule on the bundled corpus: 2,225 documents, every 10th from the first is test (223), every
 * 10th from the sixth valid (222), the rest train (1,780). Sentence and label totals over the corpus are
 * from `python3 tests/reference/rouge_ref.py bbc data/bbc-news-summary`. */
TEST(bbc_split_and_corpus_totals) {
    lc_doc_list all, test, valid, train;
    CHECK(lc_doc_list_open(BBC, LC_PART_ALL, &all) == LC_OK, "%s", lc_last_error());
    CHECK(lc_doc_list_open(BBC, LC_PART_TEST, &test) == LC_OK, "%s", lc_last_error());
    CHECK(lc_doc_list_open(BBC, LC_PART_VALID, &valid) == LC_OK, "%s", lc_last_error());
    CHECK(lc_doc_list_open(BBC, LC_PART_TRAIN, &train) == LC_OK, "%s", lc_last_error());
    CHECK(all.n == 2225 && all.total == 2225, "all %d", all.n);
    CHECK(test.n == 223 && valid.n == 222 && train.n == 1780, "test %d valid %d train %d", test.n, valid.n, train.n);
    CHECK(strcmp(test.article[0], BBC "/articles/business/001.txt") == 0, "first test %s", test.article[0]);
    CHECK(strcmp(test.summary[0], BBC "/summaries/business/001.txt") == 0, "first summary %s", test.summary[0]);
    CHECK(strcmp(test.article[1], BBC "/articles/business/011.txt") == 0, "second test %s", test.article[1]);
    CHECK(strcmp(valid.article[0], BBC "/articles/business/006.txt") == 0, "first valid %s", valid.article[0]);
    CHECK(strcmp(train.article[0], BBC "/articles/business/002.txt") == 0, "first train %s", train.article[0]);
    /* business has 510 articles, so entertainment/001 is document 510: test */
    CHECK(strcmp(all.article[510], BBC "/articles/entertainment/001.txt") == 0 && test.index[51] == 510,
          "%s", all.article[510]);
    long sentences = 0, contained = 0;
    int latin1 = 0;
    for (int i = 0; i < all.n; i++) {
        lc_document d;
        if (lc_document_read(all.article[i], all.summary[i], &d)) {
            CHECK(0, "%s", lc_last_error());
            break;
        }
        uint8_t *lab = malloc((size_t)d.sents.n);
        int k = 0;
        CHECK(lc_summary_labels((const char *const *)d.sents.sent, d.sents.n, d.reference, LC_LABELS_CONTAINED, lab,
                                &k) == LC_OK, "labels");
        sentences += d.sents.n;
        contained += k;
        if (d.latin1) {
            latin1++;
            /* the Latin-1 pound sign of articles/sport/199.txt reads as U+00A3 */
            CHECK(strstr(all.article[i], "sport/199.txt") && d.latin1 == 1, "latin1 file %s", all.article[i]);
            int found = 0;
            for (int j = 0; j < d.sents.n; j++) found |= strstr(d.sents.sent[j], "\xc2\xa3" "15.8m signing") != NULL;
            CHECK(found, "decoded pound sign");
        }
        free(lab);
        lc_document_free(&d);
    }
    CHECK(sentences == 38549 && contained == 15336, "sentences %ld contained %ld", sentences, contained);
    CHECK(latin1 == 1, "latin1 files %d", latin1);
    lc_doc_list_free(&all);
    lc_doc_list_free(&test);
    lc_doc_list_free(&valid);
    lc_doc_list_free(&train);
}

TEST(corpus_layout_errors) {
    lc_doc_list l;
    CHECK(lc_doc_list_open(tmp_path("nope"), LC_PART_ALL, &l) == LC_ERR_IO && error_has("nope: cannot open"), "%s",
          lc_last_error());
    CHECK(mkdir(tmp_path("c"), 0700) == 0, "mkdir");
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_ALL, &l) == LC_ERR_FORMAT && error_has("no articles/ directory"),
          "empty dir: %s", lc_last_error());
    CHECK(mkdir(tmp_path("c/articles"), 0700) == 0, "mkdir");
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_ALL, &l) == LC_ERR_FORMAT && error_has("no summaries/ directory"),
          "no summaries: %s", lc_last_error());
    CHECK(mkdir(tmp_path("c/summaries"), 0700) == 0, "mkdir");
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_ALL, &l) == LC_ERR_FORMAT && error_has("no .txt documents"),
          "no documents: %s", lc_last_error());
    /* a flat layout (articles/<name>.txt) works; a missing summary is named */
    write_file(tmp_path("c/articles/x.txt"), "T\nBody.", 7);
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_TEST, &l) == LC_ERR_IO && error_has("summaries/x.txt: cannot open"),
          "missing summary: %s", lc_last_error());
    write_file(tmp_path("c/summaries/x.txt"), "Body.", 5);
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_TEST, &l) == LC_OK && l.n == 1 && l.total == 1, "flat layout");
    lc_doc_list_free(&l);
    CHECK(lc_doc_list_open(tmp_path("c"), LC_PART_VALID, &l) == LC_OK && l.n == 0, "valid part of one document");
    lc_doc_list_free(&l);
}

TEST(contained_labels_hand_example) {
    lc_sentences s;
    CHECK(lc_sentences_split("Mr. Smith left. He said \"no.\" Then he ran. Nothing else.", &s) == LC_OK && s.n == 4,
          "split");
    /* the reference joins article sentences with no separator, in another order */
    const char *ref = "He said \"no.\" Then he ran.Smith left.";
    uint8_t lab[4];
    int k;
    CHECK(lc_summary_labels((const char *const *)s.sent, s.n, ref, LC_LABELS_CONTAINED, lab, &k) == LC_OK, "labels");
    /* "Mr." is not in the reference; "Smith left." and the quoted sentence are; "Nothing else." is not */
    CHECK(lab[0] == 0 && lab[1] == 1 && lab[2] == 1 && lab[3] == 0 && k == 2, "%d%d%d%d", lab[0], lab[1], lab[2],
          lab[3]);
    lc_sentences_free(&s);
}

TEST(greedy_oracle_hand_example) {
    /* reference tokens a b c d e (5 unigrams, 4 bigrams ab bc cd de); F1 = 2 overlap / (cand + ref).
     * round 1:  S0 "A b."   R1 2*2/(2+5) = 0.571, R2 (ab) 2*1/(1+4) = 0.4        -> 0.971
     *           S1 "C d e." R1 2*3/(3+5) = 0.75,  R2 (cd de) 2*2/(2+4) = 0.667  -> 1.417  chosen
     *           S2 "X y."   0
     * round 2:  S0+S1 = a b c d e: R1 1, R2 1                                    -> 2      chosen
     *           S1+S2 = c d e x y: R1 2*3/(5+5) = 0.6, R2 2*2/(4+4) = 0.5        -> 1.1
     * round 3:  all: R1 2*5/(7+5) = 0.833, R2 2*4/(6+4) = 0.8 -> 1.633 < 2: stop.
     * No sentence occurs verbatim in the reference ("A b c d e."), so contained labels are all 0. */
    const char *sent[] = {"A b.", "C d e.", "X y."};
    const char *ref = "A b c d e.";
    uint8_t lab[3];
    int k;
    CHECK(lc_summary_labels(sent, 3, ref, LC_LABELS_GREEDY, lab, &k) == LC_OK, "greedy");
    CHECK(lab[0] == 1 && lab[1] == 1 && lab[2] == 0 && k == 2, "greedy %d%d%d", lab[0], lab[1], lab[2]);
    CHECK(lc_summary_labels(sent, 3, ref, LC_LABELS_CONTAINED, lab, &k) == LC_OK && k == 0, "contained %d", k);
    /* ties go to the earliest sentence: two identical sentences, only the first is chosen */
    const char *twins[] = {"Same words.", "Same words."};
    CHECK(lc_summary_labels(twins, 2, "same words", LC_LABELS_GREEDY, lab, &k) == LC_OK && lab[0] == 1 && lab[1] == 0,
          "tie %d%d", lab[0], lab[1]);
    /* nothing overlaps: nothing chosen; no sentences: fine */
    CHECK(lc_summary_labels(sent, 3, "zzz", LC_LABELS_GREEDY, lab, &k) == LC_OK && k == 0, "no overlap");
    CHECK(lc_summary_labels(NULL, 0, "zzz", LC_LABELS_GREEDY, NULL, &k) == LC_OK && k == 0, "no sentences");
    CHECK(lc_summary_labels(sent, 3, ref, (lc_label_rule)7, lab, &k) == LC_ERR_ARG, "bad rule");
}

/* Checks one ROUGE result (of lc_rouge_score or lc_rouge_score_stem) against expected precision/recall/F1 triples. */
typedef lc_status (*rouge_fn)(const char *, const char *, lc_rouge *);
static void check_rouge_with(rouge_fn fn, const char *cand, const char *ref, const double want[9]) {
    lc_rouge r;
    CHECK(fn(cand, ref, &r) == LC_OK, "rouge: %s", lc_last_error());
    const double got[9] = {r.r1.precision, r.r1.recall, r.r1.f1, r.r2.precision, r.r2.recall,
                           r.r2.f1,        r.rl.precision, r.rl.recall, r.rl.f1};
    for (int i = 0; i < 9; i++)
        CHECK(fabs(got[i] - want[i]) <= 1e-12, "'%s' vs '%s': value %d (%s-%c) got %.15g want %.15g", cand, ref, i,
              i < 3 ? "R1" : i < 6 ? "R2" : "RL", "PRF"[i % 3], got[i], want[i]);
}
static void check_rouge(const char *cand, const char *ref, const double want[9]) { check_rouge_with(lc_rouge_score, cand, ref, want); }

TEST(rouge_hand_values) {
    /* identical texts: every score 1 */
    check_rouge("the cat sat on the mat", "the cat sat on the mat", (double[9]){1, 1, 1, 1, 1, 1, 1, 1, 1});
    /* clipping: candidate the x4, reference the x2 cat x1. R1 overlap min(4,2) = 2: P 2/4, R 2/3,
     * F 2*2/(4+3) = 4/7. Bigrams (the the) x3 vs (the cat) (cat the): 0. LCS(the the the the, the cat
     * the) = 2: as R1. */
    check_rouge("the the the the", "the cat the", (double[9]){0.5, 2.0 / 3, 4.0 / 7, 0, 0, 0, 0.5, 2.0 / 3, 4.0 / 7});
    /* reversed: all unigrams match (1), no bigram does (ab bc cd de vs ed dc cb ba), LCS 1: 1/5 */
    check_rouge("a b c d e", "e d c b a", (double[9]){1, 1, 1, 0, 0, 0, 0.2, 0.2, 0.2});
    /* Lin (2004)'s example, no stemming: killed != kill. R1 3/4 each way. Bigrams (police killed)
     * (killed the) (the gunman) vs (police kill) (kill the) (the gunman): 1 of 3. LCS police the gunman 3. */
    check_rouge("police killed the gunman", "police kill the gunman",
                (double[9]){0.75, 0.75, 0.75, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0.75, 0.75, 0.75});
    /* same words, other order: R1 1; bigrams: only (the gunman) of 3; LCS "the gunman" = 2 of 4 */
    check_rouge("the gunman kill police", "police kill the gunman",
                (double[9]){1, 1, 1, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0.5, 0.5, 0.5});
    /* tokens: case folded, punctuation and non-ASCII bytes (the pound sign) separate tokens.
     * candidate: profits rose 3 5 to 1 13bn 600m (8); reference: profits rose to 1 13bn 600m (6).
     * R1 overlap 6: P 6/8, R 6/6, F 12/14. Bigrams: 7 vs 5, shared (profits rose) (to 1) (1 13bn)
     * (13bn 600m) = 4: P 4/7, R 4/5, F 8/12. LCS = 6, as R1. */
    check_rouge("Profits rose 3.5% to $1.13bn (\xc2\xa3" "600m).", "profits rose to 1.13bn, 600m",
                (double[9]){0.75, 1, 6.0 / 7, 4.0 / 7, 0.8, 2.0 / 3, 0.75, 1, 6.0 / 7});
    /* repeated tokens across case: the cat the cat vs the cat the dog. R1: the min(2,2) + cat min(2,1)
     * = 3 of 4 and 4. Bigrams (the cat) x2 (cat the) vs (the cat) (cat the) (the dog): 1 + 1 = 2 of 3.
     * LCS the cat the = 3 of 4. */
    check_rouge("The CAT, the cat.", "the cat the dog",
                (double[9]){0.75, 0.75, 0.75, 2.0 / 3, 2.0 / 3, 2.0 / 3, 0.75, 0.75, 0.75});
    /* "caf\xc3\xa9" is the token caf: candidate caf society, reference cafe society caf. R1: 2 of 2
     * and 3, F 4/5. Bigrams (caf society) vs (cafe society) (society caf): 0. LCS 1: P 1/2, R 1/3, F 2/5. */
    check_rouge("caf\xc3\xa9 society", "cafe society caf", (double[9]){1, 2.0 / 3, 0.8, 0, 0, 0, 0.5, 1.0 / 3, 0.4});
    /* empty candidate, empty reference, no tokens at all: 0, no division by zero */
    check_rouge("", "the cat", (double[9]){0});
    check_rouge("the cat", "", (double[9]){0});
    check_rouge("...!!", "?", (double[9]){0});
    /* one token: no bigram on either side, R2 0; R1 and RL 1 */
    check_rouge("Word", "word.", (double[9]){1, 1, 1, 0, 0, 0, 1, 1, 1});
}

/* Splits a line at tabs in place into at most max fields; returns the count. */
static int tsv_fields(char *line, char **f, int max) {
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

/* The lines of a fixture file (NULL-terminated, in one allocation with the text *buf). */
static char **fixture_lines(const char *path, char **buf) {
    size_t len;
    if (lc_text_read(path, buf, &len, NULL)) {
        printf("  %s\n", lc_last_error());
        return NULL;
    }
    size_t n = 1;
    for (size_t i = 0; i < len; i++) n += (*buf)[i] == '\n';
    char **lines = calloc(n + 1, sizeof *lines);
    size_t k = 0;
    for (char *p = *buf; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (*p != '#') lines[k++] = p;
        p = nl ? nl + 1 : NULL;
    }
    return lines;
}

/* idf = ln(N / df) over the texts, ln N for a token in none; the key of a token is its ROUGE token hash. */
TEST(idf_hand_values) {
    const char *texts[] = {"A a b", "b C", "b!"};
    lc_idf idf;
    CHECK(lc_idf_build(texts, 3, &idf) == LC_OK && idf.n == 3 && idf.n_texts == 3, "build: %d tokens", idf.n);
    uint64_t key[3];
    CHECK(lc_rouge_token_hashes("a b c", key) == 3, "three tokens");
    CHECK(fabs(lc_idf_of(&idf, key[0]) - log(3.0)) < 1e-12, "idf(a) = ln 3");
    CHECK(fabs(lc_idf_of(&idf, key[1])) < 1e-12, "idf(b) = 0: in every text");
    CHECK(fabs(lc_idf_of(&idf, key[2]) - log(3.0)) < 1e-12, "idf(c) = ln 3");
    uint64_t unseen;
    CHECK(lc_rouge_token_hashes("zebra", &unseen) == 1 && fabs(lc_idf_of(&idf, unseen) - log(3.0)) < 1e-12,
          "an unseen token gets ln N");
    lc_idf_free(&idf);
}

/* LexRank on a star: S0 shares one word with S1 and one with S2 (cosine 1/sqrt(3) > 0.1), S1 and S2 share
 * none, S3 stands alone. Edges (self included): S0 {0,1,2}, S1 {0,1}, S2 {0,2}, S3 {3}; with damping
 * 0.85 the stationary distribution solves p3 = 1/4, p1 = p2 = (0.0375 + 0.85 p0 / 3) / 0.575 and
 * p0 + 2 p1 = 3/4: p = (171, 120, 120, 137) / 548. Every token has idf ln 3 here (one text each). */
TEST(lexrank_hand_example) {
    const char *texts[] = {"a b c", "d", "x"};
    const char *sent[] = {"A b c.", "a.", "B!", "d d."};
    lc_idf idf;
    CHECK(lc_idf_build(texts, 3, &idf) == LC_OK, "idf");
    double p[4];
    CHECK(lc_lexrank_scores(sent, 4, &idf, 0.1, 0.85, p) == LC_OK, "%s", lc_last_error());
    const double want[4] = {171.0 / 548, 120.0 / 548, 120.0 / 548, 137.0 / 548};
    for (int i = 0; i < 4; i++) CHECK(fabs(p[i] - want[i]) < 1e-7, "p[%d] = %.9f, want %.9f", i, p[i], want[i]);
    /* above the edges' cosine (0.577) every sentence only links to itself: the uniform distribution */
    CHECK(lc_lexrank_scores(sent, 4, &idf, 0.6, 0.85, p) == LC_OK && fabs(p[0] - 0.25) < 1e-9 && fabs(p[1] - 0.25) < 1e-9,
          "threshold 0.6: %.9f %.9f", p[0], p[1]);
    /* a sentence without tokens has no edge, not even to itself, and jumps uniformly: p2 = 0.0375 + 0.85 p2 / 4
     * = 1/21, and the other three share the rest equally (S0-S1 a symmetric pair, S3 alone): 20/63 each */
    const char *with_empty[] = {"A b c.", "a.", "--", "d d."};
    CHECK(lc_lexrank_scores(with_empty, 4, &idf, 0.1, 0.85, p) == LC_OK, "empty sentence");
    const double want_empty[4] = {20.0 / 63, 20.0 / 63, 1.0 / 21, 20.0 / 63};
    for (int i = 0; i < 4; i++)
        CHECK(fabs(p[i] - want_empty[i]) < 1e-7, "with an empty sentence p[%d] = %.9f, want %.9f", i, p[i], want_empty[i]);
    lc_idf_free(&idf);
}

/* Word frequency: "cat" twice, "sat", "dog" once, "dogs" and "run" twice (the stop words the, a, and, it, is not
 * counted); the most frequent count is 2. Sentence scores: (2 + 1) / 2 / 2, (2 + 1) / 2 / 2, (2 + 2 + 2 + 2) / 4 / 2,
 * and 0 for the sentence of stop words only. The features: the first three are the same whatever the count
 * asked; the fourth is the score over the mean score (0.625). */
TEST(frequency_and_features_hand_example) {
    const char *sent[] = {"The cat sat.", "A cat and a dog.", "Dogs run, dogs run.", "It is."};
    double f[4];
    CHECK(lc_frequency_scores(sent, 4, f) == LC_OK, "%s", lc_last_error());
    const double want[4] = {0.75, 0.75, 1.0, 0.0};
    for (int i = 0; i < 4; i++) CHECK(fabs(f[i] - want[i]) < 1e-12, "frequency[%d] = %.9f, want %.9f", i, f[i], want[i]);
    float four[16], three[12];
    CHECK(lc_summary_features(sent, 4, 4, four) == LC_OK && lc_summary_features(sent, 4, 3, three) == LC_OK, "%s",
          lc_last_error());
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3; k++) CHECK(four[4 * i + k] == three[3 * i + k], "sentence %d feature %d", i, k);
        CHECK(fabs(four[4 * i] - 1.0 / (1 + i)) < 1e-7, "position of %d", i);
        CHECK(fabs(four[4 * i + 3] - want[i] / 0.625) < 1e-6, "frequency feature of %d: %g", i, four[4 * i + 3]);
    }
    const char *stops[] = {"It is.", "The."};
    CHECK(lc_summary_features(stops, 2, 4, four) == LC_OK && four[3] == 0 && four[7] == 0, "no counted token: 0");
    CHECK(lc_summary_features(sent, 4, 0, four) == LC_ERR_ARG && lc_summary_features(sent, 4, 5, four) == LC_ERR_ARG,
          "0 or more than LC_SUMMARY_FEATURES features are refused");
}

/* The cases of a ROUGE fixture (candidate, reference, 9 values a line) checked with fn; how many there were. */
static int rouge_fixture(const char *path, rouge_fn fn) {
    char *buf;
    char **lines = fixture_lines(path, &buf);
    CHECK(lines != NULL, "fixture %s", path);
    if (!lines) return 0;
    int cases = 0;
    for (char **l = lines; *l; l++) {
        char *f[11];
        CHECK(tsv_fields(*l, f, 11) == 11, "line %d: fields", cases + 1);
        double want[9];
        for (int i = 0; i < 9; i++) want[i] = strtod(f[2 + i], NULL);
        check_rouge_with(fn, f[0], f[1], want);
        cases++;
    }
    free(lines);
    free(buf);
    return cases;
}

TEST(rouge_matches_python_fixture) {
    const int cases = rouge_fixture("tests/fixtures/rouge_cases.tsv", lc_rouge_score);
    CHECK(cases >= 50, "only %d cases", cases);
    printf("  %d ROUGE cases from rouge_ref.py\n", cases);
}

/* lc_porter_stem against NLTK's PorterStemmer().stem (default mode, NLTK_EXTENSIONS) on every distinct token
 * of the BBC test split and Porter's own examples (tests/fixtures/porter_words.tsv, rouge_stem_ref.py). */
TEST(porter_matches_nltk) {
    char *buf;
    char **lines = fixture_lines("tests/fixtures/porter_words.tsv", &buf);
    CHECK(lines != NULL, "fixture");
    if (!lines) return;
    int words = 0, wrong = 0;
    for (char **l = lines; *l; l++) {
        char *f[2] = {NULL, NULL}, out[256];
        if (tsv_fields(*l, f, 2) != 2 || strlen(f[0]) >= sizeof out) {
            CHECK(0, "line %d: fields", words + 1);
            break;
        }
        const int n = lc_porter_stem(f[0], (int)strlen(f[0]), out);
        if (n < 0 || n > (int)strlen(f[0]) || (size_t)n != strlen(f[1]) || memcmp(out, f[1], (size_t)n) != 0)
            if (++wrong <= 10) CHECK(0, "%s: got '%.*s', NLTK '%s'", f[0], n, out, f[1]);
        words++;
    }
    CHECK(words >= 10000 && wrong == 0, "%d of %d words differ", wrong, words);
    printf("  %d words stemmed as NLTK's PorterStemmer\n", words);
    free(lines);
    free(buf);
}

/* Stemmed ROUGE: by hand, then the fixture of rouge_stem_ref.py (rouge-score's tokens, NLTK's stems). */
TEST(rouge_stem_matches_python_fixture) {
    lc_rouge r;
    /* cats -> cat, running -> run, runs -> run; "cat" (3 characters) is not stemmed: both are "cat run" */
    CHECK(lc_rouge_score_stem("Cats, running!", "cat runs", &r) == LC_OK && r.r1.f1 == 1 && r.r2.f1 == 1 && r.rl.f1 == 1,
          "hand case: %g %g %g", r.r1.f1, r.r2.f1, r.rl.f1);
    CHECK(lc_rouge_score("Cats, running!", "cat runs", &r) == LC_OK && r.r1.f1 == 0, "unstemmed: no overlap");
    CHECK(lc_rouge_score_stem(NULL, "x", &r) == LC_ERR_ARG, "NULL candidate");
    const int cases = rouge_fixture("tests/fixtures/rouge_stem_cases.tsv", lc_rouge_score_stem);
    CHECK(cases >= 26, "only %d cases", cases);
    printf("  %d stemmed ROUGE cases from rouge_stem_ref.py\n", cases);
}

TEST(oracle_matches_python_fixture) {
    char *buf;
    char **lines = fixture_lines("tests/fixtures/rouge_oracle.tsv", &buf);
    CHECK(lines != NULL, "fixture");
    if (!lines) return;
    int cases = 0, differ = 0;
    for (char **l = lines; *l; l++) {
        char *f[4];
        CHECK(tsv_fields(*l, f, 4) == 4, "line %d: fields", cases + 1);
        int n = (int)strlen(f[2]);
        const char **sent = calloc((size_t)n + 1, sizeof *sent);
        int k = 0;
        for (char *p = f[1]; p && k < n;) {
            char *sep = strstr(p, " || ");
            if (sep) *sep = '\0';
            sent[k++] = p;
            p = sep ? sep + 4 : NULL;
        }
        CHECK(k == n && (int)strlen(f[3]) == n, "case %d: %d sentences, %d labels", cases, k, n);
        uint8_t *lab = malloc((size_t)n + 1);
        char got[2][4096] = {{0}};
        for (int rule = 0; rule < 2; rule++) {
            CHECK(lc_summary_labels(sent, n, f[0], rule ? LC_LABELS_CONTAINED : LC_LABELS_GREEDY, lab, NULL) == LC_OK,
                  "labels");
            for (int i = 0; i < n && i < 4095; i++) got[rule][i] = (char)('0' + lab[i]);
        }
        CHECK(strcmp(got[0], f[2]) == 0, "case %d greedy: got %s want %s", cases, got[0], f[2]);
        CHECK(strcmp(got[1], f[3]) == 0, "case %d contained: got %s want %s", cases, got[1], f[3]);
        differ += strcmp(f[2], f[3]) != 0;
        free(lab);
        free(sent);
        cases++;
    }
    CHECK(cases >= 40 && differ > 0, "%d cases, %d where greedy and contained differ", cases, differ);
    printf("  %d oracle cases from rouge_ref.py (%d where greedy != contained)\n", cases, differ);
    free(lines);
    free(buf);
}

int main(void) {
    if (tmpdir_create("/tmp/lc_test_summary_XXXXXX")) return 1;
    RUN(sentence_rule_edge_cases);
    RUN(join_picks_in_order);
    RUN(text_read_utf8_latin1_binary);
    RUN(document_title_body_and_bad_documents);
    RUN(bbc_split_and_corpus_totals);
    RUN(corpus_layout_errors);
    RUN(contained_labels_hand_example);
    RUN(greedy_oracle_hand_example);
    RUN(rouge_hand_values);
    RUN(idf_hand_values);
    RUN(lexrank_hand_example);
    RUN(frequency_and_features_hand_example);
    RUN(rouge_matches_python_fixture);
    RUN(oracle_matches_python_fixture);
    RUN(porter_matches_nltk);
    RUN(rouge_stem_matches_python_fixture);
    tmpdir_remove();
    return test_summary("test_summary");
}
