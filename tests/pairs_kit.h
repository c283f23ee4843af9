/* Tiny seq2seq data shared by the tests of seq2seq training (tests/test_seq2seq_ckpt.c, test_family_rows.c): a
 * TSV file of reversal pairs. Include after harness.h and test_files.h. */
#ifndef LC_TESTS_PAIRS_KIT_H
#define LC_TESTS_PAIRS_KIT_H

#include <stdio.h>

#include "longctx.h"

/* n reversal pairs (sources of 1 to 5 letters a..d, from seed) written as TSV to the tmp file name, read back
 * into *d. */
static inline void pairs_file(const char *name, int n, unsigned seed, lc_pair_data *d) {
    char buf[8192];
    size_t k = (size_t)snprintf(buf, sizeof buf, "Source\tTarget\n");
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        const int len = 1 + (int)(seed >> 16) % 5;
        char s[8], r[8];
        for (int j = 0; j < len; j++) s[j] = r[len - 1 - j] = (char)('a' + (seed >> (j * 3)) % 4);
        s[len] = r[len] = 0;
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s\t%s\n", s, r);
    }
    write_file(tmp_path(name), buf, k);
    CHECK(lc_pairs_read(tmp_path(name), NULL, NULL, NULL, d) == LC_OK && d->n == n, "%s", lc_last_error());
}

#endif
