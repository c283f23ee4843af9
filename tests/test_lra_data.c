/* Tests of the Long Range Arena data module (src/lra): the ListOps evaluator on hand examples and on the
 * Python reference's fixture, the generator's statistics against LRA's specification and against the
 * independent evaluator, duplicates and determinism; labelled TSV files (plain and gzip, columns, bad
 * rows, limits on lines and examples, a gzip bomb); the label set (65,536 labels in linear time) and the word
 * vocabulary through their text forms; tokenization. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef LC_USE_ZLIB
#include <zlib.h>
#endif

#include "core/timer.h"
#include "harness.h"
#include "longctx.h"
#include "test_files.h"

static int contains(const char *s, const char *part) { return strstr(s, part) != NULL; }

/* ------------------------------------------------------------------------------------------ evaluator */

TEST(listops_eval_hand) {
    struct {
        const char *s;
        int value;
    } ok[] = {
        {"( ( ( [MAX 2 ) 9 ) ] )", 9},
        {"( ( ( [MIN 2 ) 9 ) ] )", 2},
        {"( ( ( ( ( [MED 1 ) 2 ) 3 ) 4 ) ] )", 2}, /* (2 + 3) / 2 = 2.5 -> 2 */
        {"( ( ( [MED 0 ) 9 ) ] )", 4},             /* 4.5 -> 4 */
        {"( ( ( [MED 8 ) 7 ) ] )", 7},             /* 7.5 -> 7 */
        {"( ( ( ( ( [MED 3 ) 8 ) 8 ) 3 ) ] )", 5}, /* 5.5 -> 5, unsorted with repeats */
        {"( ( ( ( [MED 9 ) 1 ) 5 ) ] )", 5},       /* odd count */
        {"( ( ( ( [SM 9 ) 9 ) 9 ) ] )", 7},        /* 27 % 10 */
        {"( ( ( [SM 5 ) 5 ) ] )", 0},
        {"( ( ( [MAX ( ( ( [MIN 4 ) 6 ) ] ) ) 3 ) ] )", 4},
        {"4", 4},
        {"  ( ( ( [MAX\t2 )\n9 ) ] )\r\n", 9}, /* any whitespace separates tokens */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        lc_listops_info in;
        lc_status st = lc_listops_eval(ok[i].s, strlen(ok[i].s), &in);
        CHECK(st == LC_OK, "'%s': %s", ok[i].s, lc_last_error());
        CHECK(st || in.value == ok[i].value, "'%s' = %d, want %d", ok[i].s, in.value, ok[i].value);
    }
    lc_listops_info in;
    const char *s = "( ( ( [MAX ( ( ( [MIN 4 ) 6 ) ] ) ) 3 ) ] )";
    CHECK(lc_listops_eval(s, strlen(s), &in) == LC_OK, "%s", lc_last_error());
    CHECK(in.length == 7 && in.depth == 3 && in.values == 3 && in.min_args == 2 && in.max_args == 2 &&
              in.ops[LC_LISTOPS_MIN] == 1 && in.ops[LC_LISTOPS_MAX] == 1 && in.parens == 6,
          "info: length %d depth %d values %d args %d..%d parens %d", in.length, in.depth, in.values, in.min_args,
          in.max_args, in.parens);
    const char *bad[] = {
        "",                            /* empty */
        "( ( ( [MAX 2 ) 9 ) ]",        /* ends early */
        "( ( [MAX 2 ) 9 ) ] )",        /* one '(' too few */
        "( ( ( ( [MAX 2 ) 9 ) ] )",    /* one '(' too many */
        "( ( ( [MAX 2 ) 9 ) ] ) 3",    /* text after the end */
        "( ( ( [FOO 2 ) 9 ) ] )",      /* unknown operator */
        "( ( ( [MAX 2 9 ) ) ] )",      /* argument without its ')' */
        "( ( [MAX ] )",                /* no argument */
        "( ( ( [MAX 12 ) 9 ) ] )",     /* not a value */
        "] )",
        ")",
        "( 3 )",
        "[MAX 2 9 ]",                  /* the bracket form without LRA's parentheses */
        "( ( ( [max 2 ) 9 ) ] )",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lc_status st = lc_listops_eval(bad[i], strlen(bad[i]), NULL);
        CHECK(st == LC_ERR_FORMAT, "'%s' accepted (%d)", bad[i], (int)st);
        CHECK(contains(lc_last_error(), "listops: "), "message '%s'", lc_last_error());
    }
    /* nesting deeper than the evaluator's limit: an error, not an overflow */
    char deep[4096];
    size_t n = 0;
    for (int d = 0; d < LC_LISTOPS_DEPTH_LIMIT + 2; d++) n += (size_t)sprintf(deep + n, "( ( [SM ");
    CHECK(lc_listops_eval(deep, n, NULL) == LC_ERR_FORMAT && contains(lc_last_error(), "deeper"), "%s",
          lc_last_error());
}

/* Every (Source, Target) pair written by tests/reference/listops_ref.py: hand-made cases and trees drawn
 * by the Python generator, evaluated by the Python evaluator. The file is read with the TSV reader's
 * defaults, which pick LRA's Source and Target columns by name. */
TEST(listops_eval_python_fixture) {
    lc_labelled_data d;
    lc_status st = lc_labelled_read("tests/fixtures/listops_ref.tsv", NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (st) return;
    CHECK(d.n == 56 && d.label_col == 1 && d.text_col == 0, "%ld rows, label column %d, text column %d", d.n,
          d.label_col, d.text_col);
    int big = 0;
    for (long i = 0; i < d.n; i++) {
        lc_listops_info in;
        st = lc_listops_eval((const char *)d.text[i], d.text_len[i], &in);
        CHECK(st == LC_OK, "line %ld: %s", d.line[i], lc_last_error());
        int want = atoi(d.labels.name[d.label[i]]);
        CHECK(st || in.value == want, "line %ld: %d, the Python reference says %d", d.line[i], in.value, want);
        big += in.length > 500;
    }
    CHECK(big == 4, "%d sequences of LRA's lengths, want 4", big);
    lc_labelled_free(&d);
}

/* ------------------------------------------------------------------------------------------ generator */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

TEST(listops_generator_stats) {
    enum { N = 300 };
    lc_listops_gen *g;
    CHECK(lc_listops_gen_create(NULL, 7, &g) == LC_OK, "%s", lc_last_error());
    char **seqs = calloc(N, sizeof *seqs);
    long ops[LC_LISTOPS_OPS] = {0}, labels[10] = {0}, total_ops = 0;
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        const char *src;
        size_t len;
        lc_listops_info gi, ei;
        lc_status st = lc_listops_gen_next(g, &src, &len, &gi);
        CHECK(st == LC_OK, "%s", lc_last_error());
        if (st) { ok = 0; break; }
        CHECK(strlen(src) == len, "length %zu vs %zu", strlen(src), len);
        CHECK(gi.length > 500 && gi.length < 2000, "sequence %d: length %d", i, gi.length);
        CHECK(gi.depth <= 10, "sequence %d: depth %d", i, gi.depth);
        CHECK(gi.min_args >= 2 && gi.max_args <= 10, "sequence %d: arguments %d..%d", i, gi.min_args, gi.max_args);
        st = lc_listops_eval(src, len, &ei);
        CHECK(st == LC_OK, "sequence %d does not evaluate: %s", i, lc_last_error());
        if (st) { ok = 0; break; }
        /* the generator's own account of the tree and the evaluator's reading of the string agree */
        CHECK(ei.value == gi.value && ei.length == gi.length && ei.depth == gi.depth && ei.values == gi.values &&
                  ei.min_args == gi.min_args && ei.max_args == gi.max_args && ei.parens == gi.parens &&
                  memcmp(ei.ops, gi.ops, sizeof ei.ops) == 0,
              "sequence %d: generator value %d length %d depth %d, evaluator %d %d %d", i, gi.value, gi.length,
              gi.depth, ei.value, ei.length, ei.depth);
        /* the length is the operators, values and closing brackets */
        int nops = 0;
        for (int k = 0; k < LC_LISTOPS_OPS; k++) nops += ei.ops[k];
        CHECK(ei.length == 2 * nops + ei.values, "length %d, operators %d, values %d", ei.length, nops, ei.values);
        for (int k = 0; k < LC_LISTOPS_OPS; k++) ops[k] += ei.ops[k];
        total_ops += nops;
        labels[ei.value]++;
        seqs[i] = strdup(src);
    }
    lc_listops_counts c;
    lc_listops_gen_counts(g, &c);
    lc_listops_gen_free(g);
    CHECK(c.kept == N && c.trees == c.kept + c.too_short + c.too_long + c.duplicates, "counts %ld %ld %ld %ld %ld",
          c.kept, c.trees, c.too_short, c.too_long, c.duplicates);
    /* four operators drawn uniformly: each about 25% of some 45,000 */
    for (int k = 0; ok && k < LC_LISTOPS_OPS; k++)
        CHECK(ops[k] > 0.235 * total_ops && ops[k] < 0.265 * total_ops, "operator %d: %ld of %ld", k, ops[k],
              total_ops);
    for (int v = 0; ok && v < 10; v++) CHECK(labels[v] > 0, "no sequence has the value %d", v);
    printf("  %d sequences from %ld trees (%ld too short, %ld too long); values 0..9:", N, c.trees, c.too_short,
           c.too_long);
    for (int v = 0; v < 10; v++) printf(" %ld", labels[v]);
    printf("\n");
    /* no duplicates */
    if (ok) {
        qsort(seqs, N, sizeof *seqs, cmp_str);
        int dups = 0;
        for (int i = 1; i < N; i++) dups += strcmp(seqs[i - 1], seqs[i]) == 0;
        CHECK(dups == 0, "%d duplicate sequences", dups);
    }
    for (int i = 0; i < N; i++) free(seqs[i]);
    free(seqs);
}

/* Hash of the first n sequences of a seed: the same seed gives the same sequences. */
static uint64_t stream_hash(uint64_t seed, int n, const lc_listops_options *o) {
    lc_listops_gen *g;
    if (lc_listops_gen_create(o, seed, &g)) return 0;
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        const char *src;
        size_t len;
        if (lc_listops_gen_next(g, &src, &len, NULL)) break;
        for (size_t k = 0; k < len; k++) h = (h ^ (uint8_t)src[k]) * 1099511628211ULL;
        h = (h ^ '\n') * 1099511628211ULL;
    }
    lc_listops_gen_free(g);
    return h;
}

TEST(listops_generator_determinism) {
    uint64_t a = stream_hash(11, 40, NULL), b = stream_hash(11, 40, NULL), c = stream_hash(12, 40, NULL);
    CHECK(a == b, "seed 11 twice: %llx vs %llx", (unsigned long long)a, (unsigned long long)b);
    CHECK(a != c, "seeds 11 and 12 give the same sequences");
}

/* With max_depth 2 and max_args 2 the sequences are the ten lone values and the 4 x 10 x 10 operators of
 * two values: exactly 410 distinct ones. All of them come out once, then the generator stops with an error
 * instead of looping. */
TEST(listops_generator_duplicates) {
    lc_listops_options o = {.max_depth = 2, .max_args = 2, .min_length = 0, .max_length = 5};
    lc_listops_gen *g;
    CHECK(lc_listops_gen_create(&o, 5, &g) == LC_OK, "%s", lc_last_error());
    char **seqs = calloc(411, sizeof *seqs);
    int n = 0;
    lc_status st = LC_OK;
    while (n < 411) {
        const char *src;
        size_t len;
        if ((st = lc_listops_gen_next(g, &src, &len, NULL))) break;
        seqs[n++] = strdup(src);
    }
    CHECK(n == 410 && st == LC_ERR_ARG && contains(lc_last_error(), "too few sequences"), "%d sequences, then %d: %s",
          n, (int)st, lc_last_error());
    lc_listops_counts c;
    lc_listops_gen_counts(g, &c);
    CHECK(c.duplicates > 0, "no duplicate was drawn in %ld trees", c.trees);
    lc_listops_gen_free(g);
    qsort(seqs, (size_t)n, sizeof *seqs, cmp_str);
    int dups = 0;
    for (int i = 1; i < n; i++) dups += strcmp(seqs[i - 1], seqs[i]) == 0;
    CHECK(dups == 0, "%d duplicates returned", dups);
    for (int i = 0; i < n; i++) free(seqs[i]);
    free(seqs);
}

TEST(listops_options_checked) {
    lc_listops_gen *g = NULL;
    lc_listops_options o;
    lc_listops_options_default(&o);
    CHECK(o.max_depth == 10 && o.max_args == 10 && o.min_length == 500 && o.max_length == 2000, "defaults");
    o.max_args = 1;
    CHECK(lc_listops_gen_create(&o, 1, &g) == LC_ERR_ARG && !g, "max_args 1 accepted");
    lc_listops_options_default(&o);
    o.max_depth = 2; /* nothing longer than 2 + 10 = 12 */
    CHECK(lc_listops_gen_create(&o, 1, &g) == LC_ERR_ARG && contains(lc_last_error(), "no sequence is longer"),
          "%s", lc_last_error());
    CHECK(lc_listops_write(tmp_path("x.tsv"), 0, 1, NULL, NULL) == LC_ERR_ARG, "n = 0 accepted");
}

TEST(listops_write_file) {
    const char *path = tmp_path("lo.tsv");
    lc_listops_summary s;
    lc_status st = lc_listops_write(path, 50, 3, NULL, &s);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (st) return;
    CHECK(s.counts.kept == 50 && s.length_min > 500 && s.length_max < 2000 && s.depth_max <= 10, "summary");
    lc_labelled_data d;
    st = lc_labelled_read(path, NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (st) return;
    CHECK(d.n == 50 && d.n_cols == 2 && d.labels.n <= 10, "%ld rows, %d columns, %d labels", d.n, d.n_cols,
          d.labels.n);
    long bytes = 14, count[10] = {0};
    for (long i = 0; i < d.n; i++) {
        lc_listops_info in;
        st = lc_listops_eval((const char *)d.text[i], d.text_len[i], &in);
        CHECK(st == LC_OK && in.value == atoi(d.labels.name[d.label[i]]), "line %ld", d.line[i]);
        bytes += (long)d.text_len[i] + 3;
        count[in.value]++;
    }
    CHECK(bytes == s.bytes && memcmp(count, s.labels, sizeof count) == 0, "bytes %ld vs %ld", bytes, s.bytes);
    /* the numeric labels sort by value */
    for (int i = 1; i < d.labels.n; i++)
        CHECK(atoi(d.labels.name[i - 1]) < atoi(d.labels.name[i]), "labels out of order");
    lc_labelled_free(&d);
    /* the same seed writes the same bytes */
    const char *again = tmp_path("lo2.tsv");
    CHECK(lc_listops_write(again, 50, 3, NULL, NULL) == LC_OK, "%s", lc_last_error());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", path, again);
    CHECK(system(cmd) == 0, "two writes with seed 3 differ");
    /* a directory that does not exist: an error naming the file, nothing left behind */
    const char *nowhere = tmp_path("missing/lo.tsv");
    CHECK(lc_listops_write(nowhere, 5, 3, NULL, NULL) == LC_ERR_IO && contains(lc_last_error(), nowhere), "%s",
          lc_last_error());
}

/* ------------------------------------------------------------------------------------------ TSV */

TEST(tsv_columns) {
    const char *p = tmp_path("a.tsv");
    write_text(p, "label\trating\tid\ttext\n"
                  "pos\t9\t1\tgreat film, great cast\n"
                  "neg\t2\t2\tdull\r\n" /* a CRLF line */
                  "pos\t10\t3\t\n"      /* an empty text */
                  "neg\t1\t4\tnot  good\n\n\n");
    lc_labelled_data d;
    lc_status st = lc_labelled_read(p, NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.n == 4 && d.n_cols == 4 && d.label_col == 0 && d.text_col == 3 && !d.gzip, "shape");
        CHECK(d.labels.n == 2 && strcmp(d.labels.name[0], "neg") == 0 && strcmp(d.labels.name[1], "pos") == 0,
              "labels");
        CHECK(d.label[0] == 1 && d.label[1] == 0 && d.label[2] == 1 && d.label[3] == 0, "label ids");
        CHECK(d.text_len[0] == 22 && memcmp(d.text[0], "great film, great cast", 22) == 0, "text 0");
        CHECK(d.text_len[1] == 4 && memcmp(d.text[1], "dull", 5) == 0, "CR dropped, NUL-terminated");
        CHECK(d.text_len[2] == 0 && d.line[3] == 5, "empty text, lines");
        lc_labelled_free(&d);
    }
    /* by name and by number; numeric labels sort by value (2 < 9 < 10), not bytewise */
    st = lc_labelled_read(p, "rating", "1", &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.label_col == 1 && d.text_col == 0 && d.labels.n == 4, "columns %d %d", d.label_col, d.text_col);
        CHECK(strcmp(d.labels.name[0], "1") == 0 && strcmp(d.labels.name[1], "2") == 0 &&
                  strcmp(d.labels.name[2], "9") == 0 && strcmp(d.labels.name[3], "10") == 0,
              "order %s %s %s %s", d.labels.name[0], d.labels.name[1], d.labels.name[2], d.labels.name[3]);
        CHECK(d.label[0] == 2 && memcmp(d.text[0], "pos", 4) == 0, "row 0");
        /* a checkpoint's label set: map the file's labels onto it */
        lc_label_set s = {2, (char *[]){"10", "9"}};
        int ids[4];
        long unseen;
        CHECK(lc_labelled_map(&d, &s, ids, &unseen) == LC_OK && unseen == 2 && ids[0] == 1 && ids[1] == -1 &&
                  ids[2] == 0 && ids[3] == -1,
              "map: %d %d %d %d, %ld unseen", ids[0], ids[1], ids[2], ids[3], unseen);
        lc_labelled_free(&d);
    }
    /* mixed labels sort bytewise */
    const char *q = tmp_path("b.tsv");
    write_text(q, "y\tx\n10\ta\n9\tb\nten\tc\n");
    st = lc_labelled_read(q, NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.labels.n == 3 && strcmp(d.labels.name[0], "10") == 0 && strcmp(d.labels.name[1], "9") == 0 &&
                  strcmp(d.labels.name[2], "ten") == 0,
              "bytewise order");
        lc_labelled_free(&d);
    }
}

/* A bad file: the status, and a message that contains `want`. */
static void expect_bad(const char *name, const char *content, const char *label_col, const char *text_col,
                       lc_status want_st, const char *want) {
    const char *p = tmp_path(name);
    if (content) write_text(p, content);
    lc_labelled_data d;
    lc_status st = lc_labelled_read(p, label_col, text_col, &d);
    CHECK(st == want_st && contains(lc_last_error(), want), "%s: status %d, message '%s', want '%s'", name, (int)st,
          lc_last_error(), want);
    CHECK(!st || (d.n == 0 && d.text == NULL && d.labels.name == NULL), "%s: output not cleared", name);
    if (!st) lc_labelled_free(&d);
}

TEST(tsv_errors) {
    char want[256];
    snprintf(want, sizeof want, "%s: cannot open", tmp_path("missing.tsv"));
    expect_bad("missing.tsv", NULL, NULL, NULL, LC_ERR_IO, want);
    mkdir(tmp_path("dir.tsv"), 0700);
    expect_bad("dir.tsv", NULL, NULL, NULL, LC_ERR_IO, "is a directory");
    /* content, label and text column (NULL: the defaults), and what the message contains */
    static const struct {
        const char *name, *content, *label_col, *text_col, *want;
    } bad[] = {
        {"empty.tsv", "", NULL, NULL, "empty.tsv: file is empty"},
        {"header.tsv", "label\ttext\n", NULL, NULL, "header.tsv: no examples after the header"},
        {"cols.tsv", "label\ttext\n1\tok\n0\ttoo\tmany\n", NULL, NULL, "cols.tsv:3: 3 columns, the header has 2"},
        {"cols2.tsv", "label\tid\ttext\n1\t1\tok\n1\t2\tok\n0\tshort\n", NULL, NULL,
         "cols2.tsv:4: 2 columns, the header has 3"},
        {"blank.tsv", "label\ttext\n1\tok\n\n0\tno\n", NULL, NULL, "blank.tsv:3: empty line"},
        {"name.tsv", "label\ttext\n1\tok\n", "sentiment", NULL,
         "name.tsv: no column named 'sentiment' for the label (the header has: label, text)"},
        {"index.tsv", "label\ttext\n1\tok\n", NULL, "3", "index.tsv: no column 3 for the text"},
        {"index0.tsv", "label\ttext\n1\tok\n", "0", NULL, "no column 0 for the label"},
        {"same.tsv", "label\ttext\n1\tok\n", "text", NULL, "would both be column 2"},
        {"one.tsv", "text\nhello\n", NULL, NULL, "needs two columns"},
        {"nohead.tsv", "1\tgreat\n0\tbad\n1\tfine\n", NULL, NULL,
         "nohead.tsv:1: the label column's name '1' is also the label of line 3: is the header line missing?"},
        {"nohead2.tsv", "0\t3\t0\tStory of a man\n1\t8\t1\tGood\n", NULL, NULL,
         "nohead2.tsv:1: the header names two columns '0': is the header line missing?"},
        {"emptyname.tsv", "label\t\ttext\n1\tx\tok\n", NULL, NULL, "column 2 of the header has no name"},
        {"emptylabel.tsv", "label\ttext\n1\tok\n\tno label\n", NULL, NULL, "emptylabel.tsv:3: empty label"},
        {"ctrl.tsv", "label\ttext\n1\x01\tok\n", NULL, NULL, "ctrl.tsv:2: control byte 0x01"},
        {"magic1.tsv", "\x1f", NULL, NULL, "needs two columns"}, /* starts like gzip: still read as plain text */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad(bad[i].name, bad[i].content, bad[i].label_col, bad[i].text_col, LC_ERR_FORMAT, bad[i].want);
    /* NUL bytes: in a label an error, in the header an error, in a text kept (see tsv_nul_text) */
    const char *p = tmp_path("nul.tsv");
    write_file(p, "label\ttext\n1\0x\tok\n", 18);
    expect_bad("nul.tsv", NULL, NULL, NULL, LC_ERR_FORMAT, "nul.tsv:2: control byte 0x00 in the label");
    write_file(tmp_path("nulh.tsv"), "la\0bel\ttext\n1\tok\n", 17);
    expect_bad("nulh.tsv", NULL, NULL, NULL, LC_ERR_FORMAT, "nulh.tsv:1: a NUL byte in the header");
}

TEST(tsv_nul_text) {
    const char *p = tmp_path("nult.tsv");
    write_file(p, "label\ttext\n1\ta\0b\tc\n", 19); /* fields are split past a NUL: 3 columns */
    lc_labelled_data d;
    CHECK(lc_labelled_read(p, NULL, NULL, &d) == LC_ERR_FORMAT && contains(lc_last_error(), "nult.tsv:2: 3 columns"),
          "%s", lc_last_error());
    write_file(p, "label\ttext\n1\ta\0b c\n", 19);
    lc_status st = lc_labelled_read(p, NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.n == 1 && d.text_len[0] == 5 && memcmp(d.text[0], "a\0b c", 6) == 0, "text with a NUL byte");
        lc_labelled_free(&d);
    }
}

/* The same rows plain and gzipped (in one member or two, with names that say the opposite), a damaged gzip
 * file, and data/imdb/val.tsv.gz. Without zlib: the one-line error, and the test says it skipped. */
TEST(tsv_gzip) {
    const char *plain = "label\ttext\n1\tgood \xc3\xa9\n0\tbad\n";
    const char *gz_as_tsv = tmp_path("gz.tsv"), *fake = tmp_path("fake.tsv.gz");
    write_text(fake, plain); /* plain bytes under a .gz name */
    lc_labelled_data d;
    lc_status st = lc_labelled_read(fake, NULL, NULL, &d);
    CHECK(st == LC_OK && !d.gzip && d.n == 2, "plain file named .gz: %s", lc_last_error());
    if (!st) lc_labelled_free(&d);
#ifdef LC_USE_ZLIB
    CHECK(lc_have_zlib() == 1, "built with zlib");
    size_t half = 14; /* inside the first row: two gzip members make one stream */
    gzFile z = gzopen(gz_as_tsv, "wb");
    gzwrite(z, plain, (unsigned)half);
    gzclose(z);
    z = gzopen(gz_as_tsv, "ab"); /* appends a second member */
    gzwrite(z, plain + half, (unsigned)(strlen(plain) - half));
    gzclose(z);
    st = lc_labelled_read(gz_as_tsv, NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.gzip && d.n == 2 && d.text_len[0] == 7 && memcmp(d.text[0], "good \xc3\xa9", 7) == 0 &&
                  strcmp(d.labels.name[d.label[0]], "1") == 0,
              "gzip content");
        lc_labelled_free(&d);
    }
    /* cut short: an error naming the file, not a silently shorter file */
    struct stat sb;
    stat(gz_as_tsv, &sb);
    CHECK(truncate(gz_as_tsv, sb.st_size - 6) == 0, "truncate");
    st = lc_labelled_read(gz_as_tsv, NULL, NULL, &d);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "gz.tsv: damaged gzip data"), "%d %s", (int)st,
          lc_last_error());
    if (!st) lc_labelled_free(&d);
    /* the IMDB validation split as shipped */
    st = lc_labelled_read("data/imdb/val.tsv.gz", NULL, NULL, &d);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(d.gzip && d.n == 5000 && d.n_cols == 4 && d.label_col == 0 && d.text_col == 3 && d.labels.n == 2 &&
                  strcmp(d.labels.name[0], "0") == 0 && strcmp(d.labels.name[1], "1") == 0,
              "imdb val: %ld rows, %d columns, %d labels", d.n, d.n_cols, d.labels.n);
        long pos = 0;
        for (long i = 0; i < d.n; i++) pos += d.label[i];
        CHECK(pos == 2500, "%ld positive reviews of 5000", pos);
        lc_labelled_free(&d);
    }
#else
    CHECK(lc_have_zlib() == 0, "built without zlib");
    printf("  note: built without zlib (no zlib.h): gzip reading not tested, only its error\n");
    write_file(gz_as_tsv, "\x1f\x8b\x08\x00", 4);
    st = lc_labelled_read(gz_as_tsv, NULL, NULL, &d);
    CHECK(st == LC_ERR_ARG && contains(lc_last_error(), "gz.tsv: gzip-compressed") &&
              contains(lc_last_error(), "install zlib1g-dev and rebuild"),
          "%s", lc_last_error());
#endif
}

#ifdef LC_USE_ZLIB
/* The peak resident memory of this process so far, in MB (the gzip bomb's bound). */
static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}
#endif

/* A file is read as a stream within limits: a line longer than max_line and more examples than max_examples
 * are refused naming the line. The default limit on examples holds a gzip bomb of short lines (4.5 M
 * 'a<tab>b' lines: 18 MB decompressed from 27 KB) to about 40 bytes an example: it once cost 60 bytes a line
 * and the whole decompressed file more (3.15 GB for 256 MB of such lines). */
TEST(tsv_limits) {
    const char *p = tmp_path("limits.tsv");
    FILE *f = fopen(p, "w");
    fputs("label\ttext\n", f);
    for (int i = 0; i < 1500; i++) fprintf(f, "%d\t%s\n", i % 3, i == 1200 ? "a longer line of text" : "ab");
    fclose(f);
    lc_labelled_data d;
    lc_tsv_limits lim = {1000, 0};
    lc_status st = lc_labelled_read_limited(p, NULL, NULL, &lim, &d);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "limits.tsv:1002: more than 1000 examples"), "%s",
          lc_last_error());
    if (!st) lc_labelled_free(&d);
    lim = (lc_tsv_limits){0, 20};
    st = lc_labelled_read_limited(p, NULL, NULL, &lim, &d);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "limits.tsv:1202: a line longer than 20 bytes"), "%s",
          lc_last_error());
    if (!st) lc_labelled_free(&d);
    lim = (lc_tsv_limits){1500, 24};
    st = lc_labelled_read_limited(p, NULL, NULL, &lim, &d);
    CHECK(st == LC_OK && d.n == 1500 && d.labels.n == 3 && d.text_len[1200] == 21, "%s", lc_last_error());
    if (!st) lc_labelled_free(&d);
#ifdef LC_USE_ZLIB
    const char *bomb = tmp_path("bomb.tsv.gz");
    gzFile z = gzopen(bomb, "wb9");
    gzwrite(z, "label\ttext\n", 11);
    static char block[1 << 16];
    for (size_t i = 0; i < sizeof block; i += 4) memcpy(block + i, "a\tb\n", 4);
    for (int i = 0; i < 275; i++) gzwrite(z, block, sizeof block); /* 4,505,600 lines */
    gzclose(z);
    const double before = peak_rss_mb();
    st = lc_labelled_read(bomb, NULL, NULL, &d);
    const double grew = peak_rss_mb() - before;
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "bomb.tsv.gz:4194306: more than 4194304 examples"), "%s",
          lc_last_error());
    if (!st) lc_labelled_free(&d);
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer keeps freed blocks (the arrays' old sizes) in quarantine */
    CHECK(grew < 250, "reading the bomb grew the peak RSS by %.0f MB", grew);
#else
    (void)grew;
#endif
    /* a single line longer than the default limit (16 MiB), from a 16 KB file */
    const char *wide = tmp_path("wide.tsv.gz");
    z = gzopen(wide, "wb9");
    gzwrite(z, "label\ttext\nx\t", 13);
    memset(block, 'a', sizeof block);
    for (int i = 0; i < 257; i++) gzwrite(z, block, sizeof block);
    gzclose(z);
    st = lc_labelled_read(wide, NULL, NULL, &d);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "wide.tsv.gz:2: a line longer than 16777216 bytes"), "%s",
          lc_last_error());
    if (!st) lc_labelled_free(&d);
#endif
}

/* 65,536 distinct labels (the most a set may have) are read in linear time: a saved set, a TSV file, and the
 * mapping of one onto the other take well under a second (the duplicate check and the renumbering once took
 * 5 to 8.5 s); one more label is refused with one line. */
TEST(label_set_large) {
    const int n = LC_MAX_LABELS;
    size_t cap = (size_t)n * 16 + 64;
    char *text = malloc(cap);
    size_t k = (size_t)snprintf(text, cap, "longctx-labels 1 %d\n", n);
    for (int i = 0; i < n; i++) k += (size_t)snprintf(text + k, cap - k, "label%05d\n", i);
    const char *p = tmp_path("many.tsv");
    FILE *f = fopen(p, "w");
    fputs("label\ttext\n", f);
    for (int i = 0; i < n; i++) fprintf(f, "label%05d\tt\n", (i * 7919) % n); /* every label, shuffled */
    fclose(f);
    lc_label_set s;
    lc_labelled_data d;
    double t0 = lc_now_seconds();
    lc_status st = lc_label_set_load(text, &s);
    CHECK(st == LC_OK && s.n == n, "%s", lc_last_error());
    lc_status st2 = lc_labelled_read(p, NULL, NULL, &d);
    CHECK(st2 == LC_OK && d.n == n && d.labels.n == n, "%s", lc_last_error());
    int *ids = malloc(sizeof(int) * (size_t)n);
    long unseen = -1;
    if (!st && !st2) {
        CHECK(lc_labelled_map(&d, &s, ids, &unseen) == LC_OK && unseen == 0, "map");
        CHECK(ids[1] == 7919 && d.label[1] == 7919 && strcmp(s.name[ids[1]], "label07919") == 0, "ids");
    }
    const double took = lc_now_seconds() - t0;
#ifdef __SANITIZE_ADDRESS__
    const double budget = 5.0; /* about 4x slower under AddressSanitizer */
#else
    const double budget = 1.0;
#endif
    CHECK(took < budget, "65,536 labels took %.2f s", took);
    printf("  65,536 labels: load, read and map in %.3f s\n", took);
    if (!st) lc_label_set_free(&s);
    if (!st2) lc_labelled_free(&d);
    free(ids);
    /* a duplicate at the end is still found */
    snprintf(strstr(text, "label65535"), 11, "label00000");
    st = lc_label_set_load(text, &s);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "label 65536 ('label00000') appears twice"), "%s",
          lc_last_error());
    if (!st) lc_label_set_free(&s);
    snprintf(text, cap, "longctx-labels 1 %d\n", n + 1);
    st = lc_label_set_load(text, &s);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "1 <= N <= 65536"), "%s", lc_last_error());
    if (!st) lc_label_set_free(&s);
    f = fopen(p, "a");
    fputs("one_more\tt\n", f);
    fclose(f);
    st = lc_labelled_read(p, NULL, NULL, &d);
    CHECK(st == LC_ERR_FORMAT && contains(lc_last_error(), "many.tsv:65538: more than 65536 distinct labels"), "%s",
          lc_last_error());
    if (!st) lc_labelled_free(&d);
    free(text);
}

/* ------------------------------------------------------------------------------------------ text forms */

TEST(label_set_round_trip) {
    char *names[] = {"neg", "pos itive", "caf\xc3\xa9", "a\\b", "~!"};
    lc_label_set s = {5, names}, back;
    char *text;
    CHECK(lc_label_set_save(&s, &text) == LC_OK, "%s", lc_last_error());
    CHECK(strcmp(text, "longctx-labels 1 5\nneg\npos\\x20itive\ncaf\\xc3\\xa9\na\\x5cb\n~!\n") == 0, "text '%s'", text);
    lc_status st = lc_label_set_load(text, &back);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(back.n == 5, "%d labels", back.n);
        for (int i = 0; i < back.n && i < 5; i++) CHECK(strcmp(back.name[i], names[i]) == 0, "label %d", i);
        CHECK(lc_label_set_find(&back, "a\\b") == 3 && lc_label_set_find(&back, "x") == -1, "find");
        lc_label_set_free(&back);
    }
    free(text);
    const char *bad[] = {"", "longctx-labels 1 2\na\n", "longctx-labels 1 1\na\nb\n", "longctx-labels 1 2\na\na\n",
                         "longctx-labels 1 1\na b\n", "longctx-labels 1 1\n\\x61\n", "longctx-labels 1 1\n\\x0a\n",
                         "longctx-labels 1 1\n\n", "longctx-labels 2 1\na\n", "longctx-labels 1 0\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = lc_label_set_load(bad[i], &back);
        CHECK(st == LC_ERR_FORMAT && back.n == 0 && back.name == NULL, "bad set %zu accepted", i);
    }
}

TEST(word_vocab_round_trip) {
    const char *texts[] = {"the cat  sat\ton the mat", "the end\n", "caf\xc3\xa9 a\\b \x01odd the", ""};
    const uint8_t *t[4];
    size_t len[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (const uint8_t *)texts[i];
        len[i] = strlen(texts[i]);
    }
    lc_word_vocab *v, *w;
    CHECK(lc_word_vocab_build(t, len, 4, 1, 0, &v) == LC_OK, "%s", lc_last_error());
    /* "the" 4 times first, then the words seen once in byte order */
    CHECK(lc_word_vocab_size(v) == LC_WORD_FIRST + 9, "size %d", lc_word_vocab_size(v));
    CHECK(lc_word_vocab_id(v, (const uint8_t *)"the", 3) == LC_WORD_FIRST &&
              lc_word_vocab_count(v, LC_WORD_FIRST) == 4,
          "'the' first");
    CHECK(lc_word_vocab_id(v, (const uint8_t *)"\x01odd", 4) == LC_WORD_FIRST + 1, "byte order among ties");
    CHECK(lc_word_vocab_id(v, (const uint8_t *)"dog", 3) == LC_WORD_UNK, "unknown word");
    int ids[16];
    const char *s = " the dog sat ";
    long n = lc_tokenize(LC_TOKENS_WORDS, v, (const uint8_t *)s, strlen(s), 16, ids);
    CHECK(n == 3 && ids[0] == LC_WORD_FIRST && ids[1] == LC_WORD_UNK &&
              ids[2] == lc_word_vocab_id(v, (const uint8_t *)"sat", 3),
          "words %ld: %d %d %d", n, ids[0], ids[1], ids[2]);
    ids[1] = -7;
    n = lc_tokenize(LC_TOKENS_WORDS, v, (const uint8_t *)s, strlen(s), 1, ids);
    CHECK(n == 3 && ids[1] == -7, "truncation at 1 word writes 1 id and counts 3");
    ids[2] = -9;
    n = lc_tokenize(LC_TOKENS_BYTES, NULL, (const uint8_t *)"\xff" "ab", 3, 2, ids);
    CHECK(n == 3 && ids[0] == 255 && ids[1] == 'a' && ids[2] == -9, "bytes, truncated at 2");
    CHECK(lc_tokenize(LC_TOKENS_WORDS, v, (const uint8_t *)" \n\t", 3, 5, ids) == 0, "blank text has no word");

    char *text;
    size_t tl;
    CHECK(lc_word_vocab_save(v, &text, &tl) == LC_OK && strlen(text) == tl, "%s", lc_last_error());
    CHECK(strncmp(text, "longctx-words 1 4 9\nthe\n\\x01odd\n", 32) == 0, "text '%.40s'", text);
    for (size_t i = 0; i < tl; i++)
        CHECK(text[i] == '\n' || (text[i] >= ' ' && text[i] <= '~'), "byte %zu of the text form is 0x%02x", i,
              (unsigned char)text[i]);
    lc_status st = lc_word_vocab_load(text, tl, &w);
    CHECK(st == LC_OK, "%s", lc_last_error());
    if (!st) {
        CHECK(lc_word_vocab_size(w) == lc_word_vocab_size(v), "size");
        for (int id = 0; id < lc_word_vocab_size(v); id++) {
            size_t a = 0, b = 0;
            const uint8_t *x = lc_word_vocab_word(v, id, &a), *y = lc_word_vocab_word(w, id, &b);
            CHECK((id < LC_WORD_FIRST) == (x == NULL) && (x == NULL) == (y == NULL), "id %d", id);
            if (x && y) {
                CHECK(a == b && memcmp(x, y, a) == 0, "word %d differs", id);
                CHECK(lc_word_vocab_id(w, x, a) == id, "id of word %d", id);
            }
        }
        char *text2;
        CHECK(lc_word_vocab_save(w, &text2, NULL) == LC_OK && strcmp(text, text2) == 0, "saved twice differently");
        free(text2);
        lc_word_vocab_free(w);
    }
    free(text);
    lc_word_vocab_free(v);

    /* limits: the most frequent word only; min_count 2 keeps only "the" */
    CHECK(lc_word_vocab_build(t, len, 4, 1, 1, &v) == LC_OK && lc_word_vocab_size(v) == LC_WORD_FIRST + 1, "max_words");
    lc_word_vocab_free(v);
    CHECK(lc_word_vocab_build(t, len, 4, 2, 0, &v) == LC_OK && lc_word_vocab_size(v) == LC_WORD_FIRST + 1, "min_count");
    lc_word_vocab_free(v);
    CHECK(lc_word_vocab_build(t, len, 0, 1, 0, &v) == LC_OK && lc_word_vocab_size(v) == LC_WORD_FIRST, "empty");
    lc_word_vocab_free(v);

    const char *bad[] = {"", "longctx-words 1 4 1\n", "longctx-words 1 3 0\n", "longctx-words 1 4 1\na\nb\n",
                         "longctx-words 1 4 2\na\na\n", "longctx-words 1 4 1\n\\x20\n", "longctx-words 1 4 1\n\n",
                         "longctx-words 1 4 1 x\na\n", "longctx-words 1 4 -1\n", "longctx-words 1 4 1\n\\x6\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        w = (lc_word_vocab *)1;
        st = lc_word_vocab_load(bad[i], strlen(bad[i]), &w);
        CHECK(st == LC_ERR_FORMAT && w == NULL, "bad vocabulary %zu accepted", i);
    }
}

TEST(tokens_and_max_len) {
    lc_tokens k;
    CHECK(lc_tokens_parse("words", &k) == LC_OK && k == LC_TOKENS_WORDS, "words");
    CHECK(lc_tokens_parse("bytes", &k) == LC_OK && k == LC_TOKENS_BYTES && strcmp(lc_tokens_name(k), "bytes") == 0,
          "bytes");
    CHECK(lc_tokens_parse("chars", &k) == LC_ERR_ARG && contains(lc_last_error(), "--tokens must be bytes or words"),
          "%s", lc_last_error());
    CHECK(lc_check_max_len(0, NULL) == LC_ERR_ARG && contains(lc_last_error(), "--max-len must be in 1..") &&
              contains(lc_last_error(), "got 0"),
          "%s", lc_last_error());
    CHECK(lc_check_max_len(-5, "--len") == LC_ERR_ARG && contains(lc_last_error(), "--len must"), "named");
    CHECK(lc_check_max_len(LC_LRA_LISTOPS_MAX_LEN, NULL) == LC_OK &&
              lc_check_max_len(LC_LRA_TEXT_MAX_LEN, NULL) == LC_OK && lc_check_max_len(LC_MAX_LEN_LIMIT + 1L, NULL),
          "limits");
}

int main(void) {
    if (tmpdir_create("/tmp/lc_lra_test.XXXXXX")) return 1;
    RUN(listops_eval_hand);
    RUN(listops_eval_python_fixture);
    RUN(listops_generator_stats);
    RUN(listops_generator_determinism);
    RUN(listops_generator_duplicates);
    RUN(listops_options_checked);
    RUN(listops_write_file);
    RUN(tsv_columns);
    RUN(tsv_errors);
    RUN(tsv_nul_text);
    RUN(tsv_gzip);
    RUN(tsv_limits);
    RUN(label_set_large);
    RUN(label_set_round_trip);
    RUN(word_vocab_round_trip);
    RUN(tokens_and_max_len);
    tmpdir_remove();
    return test_summary("test_lra_data");
}
