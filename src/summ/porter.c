/* The Porter stemmer (Porter 1980, "An algorithm for suffix stripping") in the variant of NLTK's
 * PorterStemmer in its default mode (NLTK_EXTENSIONS), which Google's rouge-score uses for ROUGE with
 * stemming, and stemmed ROUGE on top of it (docs/results/summarization-protocol.md, "ROUGE"). Written from the paper's rules and
 * the list of NLTK's departures from them, each marked "NLTK:" below; a suffix rule list applies the rule
 * of the first suffix the word ends with and stops there, whether its condition holds or not. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "summ/summ.h"

/* b[i] is a consonant: not a, e, i, o, u, and not a y after a consonant (a first y is a consonant).
 * Iterative over a run of y's, so a long run costs its length, not a recursion. */
static int cons(const char *b, int i) {
    int j = i;
    while (j > 0 && b[j] == 'y') j--;
    int c;
    switch (b[j]) {
    case 'a': case 'e': case 'i': case 'o': case 'u': c = 0; break;
    default: c = 1; /* a consonant, or a y at 0 */
    }
    return (i - j) % 2 ? !c : c;
}

/* m of b[0..n): the number of vowel-consonant transitions, [C](VC)^m[V]. */
static int measure(const char *b, int n) {
    int m = 0, prev = n > 0 ? cons(b, 0) : 1;
    for (int i = 1; i < n; i++) {
        const int c = cons(b, i);
        m += !prev && c;
        prev = c;
    }
    return m;
}

static int has_vowel(const char *b, int n) {
    for (int i = 0; i < n; i++)
        if (!cons(b, i)) return 1;
    return 0;
}

static int ends(const char *b, int k, const char *s) {
    const int n = (int)strlen(s);
    return k >= n && memcmp(b + k - n, s, (size_t)n) == 0;
}

/* *o: b[0..k) ends consonant-vowel-consonant, the last not w, x or y; NLTK: or is a vowel and a consonant. */
static int ends_cvc(const char *b, int k) {
    if (k >= 3)
        return cons(b, k - 3) && !cons(b, k - 2) && cons(b, k - 1) && !strchr("wxy", b[k - 1]);
    return k == 2 && !cons(b, 0) && cons(b, 1);
}

static int ends_double_cons(const char *b, int k) { return k >= 2 && b[k - 1] == b[k - 2] && cons(b, k - 1); }

typedef enum { ANY, M_GT0, M_GT1, ION, LOGI } cond;
typedef struct {
    const char *suffix, *repl;
    cond c;
} rule;

static int holds(cond c, const char *b, int stem) {
    switch (c) {
    case ANY: return 1;
    case M_GT0: return measure(b, stem) > 0;
    case M_GT1: return measure(b, stem) > 1;
    case ION: return measure(b, stem) > 1 && stem > 0 && (b[stem - 1] == 's' || b[stem - 1] == 't');
    case LOGI: return measure(b, stem + 1) > 0; /* NLTK: the l of -logi stays with the stem */
    }
    return 0;
}

/* The first rule whose suffix ends b[0..*k): its replacement when its condition holds; then stop. */
static void apply(char *b, int *k, const rule *r, int n) {
    for (int i = 0; i < n; i++) {
        if (!ends(b, *k, r[i].suffix)) continue;
        const int stem = *k - (int)strlen(r[i].suffix);
        if (holds(r[i].c, b, stem)) {
            const int add = (int)strlen(r[i].repl);
            memcpy(b + stem, r[i].repl, (size_t)add);
            *k = stem + add;
        }
        return;
    }
}

#define RULES(r) r, (int)(sizeof r / sizeof r[0])

static void step1a(char *b, int *k) {
    if (*k == 4 && ends(b, *k, "ies")) { /* NLTK: dies -> die (flies -> fli as the paper) */
        *k = 3;
        return;
    }
    static const rule r[] = {{"sses", "ss", ANY}, {"ies", "i", ANY}, {"ss", "ss", ANY}, {"s", "", ANY}};
    apply(b, k, RULES(r));
}

static void step1b(char *b, int *k) {
    if (ends(b, *k, "ied")) { /* NLTK: died -> die, spied -> spi */
        if (*k == 4) *k = 3;
        else b[*k - 3] = 'i', *k -= 2;
        return;
    }
    if (ends(b, *k, "eed")) {
        if (measure(b, *k - 3) > 0) *k -= 1;
        return;
    }
    if (ends(b, *k, "ed") && has_vowel(b, *k - 2)) *k -= 2;
    else if (ends(b, *k, "ing") && has_vowel(b, *k - 3)) *k -= 3;
    else return;
    if (ends(b, *k, "at") || ends(b, *k, "bl") || ends(b, *k, "iz")) b[(*k)++] = 'e';
    else if (ends_double_cons(b, *k)) {
        if (!strchr("lsz", b[*k - 1])) *k -= 1;
    } else if (measure(b, *k) == 1 && ends_cvc(b, *k)) b[(*k)++] = 'e';
}

/* NLTK: y -> i after a consonant that is not the word's first letter (the paper: when the stem has a vowel). */
static void step1c(char *b, int *k) {
    if (ends(b, *k, "y") && *k - 1 > 1 && cons(b, *k - 2)) b[*k - 1] = 'i';
}

static void step2(char *b, int *k) {
    if (ends(b, *k, "alli") && measure(b, *k - 4) > 0) { /* NLTK: -alli -> -al first, then step 2 again */
        *k -= 2;
        step2(b, k);
        return;
    }
    static const rule r[] = {
        {"ational", "ate", M_GT0}, {"tional", "tion", M_GT0}, {"enci", "ence", M_GT0}, {"anci", "ance", M_GT0},
        {"izer", "ize", M_GT0},    {"bli", "ble", M_GT0} /* the paper: abli -> able */,
        {"alli", "al", M_GT0},     {"entli", "ent", M_GT0}, {"eli", "e", M_GT0},       {"ousli", "ous", M_GT0},
        {"ization", "ize", M_GT0}, {"ation", "ate", M_GT0}, {"ator", "ate", M_GT0},    {"alism", "al", M_GT0},
        {"iveness", "ive", M_GT0}, {"fulness", "ful", M_GT0}, {"ousness", "ous", M_GT0}, {"aliti", "al", M_GT0},
        {"iviti", "ive", M_GT0},   {"biliti", "ble", M_GT0},
        {"fulli", "ful", M_GT0},   {"logi", "log", LOGI}, /* NLTK's additions */
    };
    apply(b, k, RULES(r));
}

static void step3(char *b, int *k) {
    static const rule r[] = {{"icate", "ic", M_GT0}, {"ative", "", M_GT0}, {"alize", "al", M_GT0},
                             {"iciti", "ic", M_GT0}, {"ical", "ic", M_GT0}, {"ful", "", M_GT0},
                             {"ness", "", M_GT0}};
    apply(b, k, RULES(r));
}

static void step4(char *b, int *k) {
    static const rule r[] = {{"al", "", M_GT1},   {"ance", "", M_GT1}, {"ence", "", M_GT1}, {"er", "", M_GT1},
                             {"ic", "", M_GT1},   {"able", "", M_GT1}, {"ible", "", M_GT1}, {"ant", "", M_GT1},
                             {"ement", "", M_GT1}, {"ment", "", M_GT1}, {"ent", "", M_GT1}, {"ion", "", ION},
                             {"ou", "", M_GT1},   {"ism", "", M_GT1},  {"ate", "", M_GT1},  {"iti", "", M_GT1},
                             {"ous", "", M_GT1},  {"ive", "", M_GT1},  {"ize", "", M_GT1}};
    apply(b, k, RULES(r));
}

static void step5(char *b, int *k) {
    if (ends(b, *k, "e")) { /* (m > 1) E ->, and (m = 1 and not *o) E -> */
        const int m = measure(b, *k - 1);
        if (m > 1 || (m == 1 && !ends_cvc(b, *k - 1))) *k -= 1;
    }
    if (ends(b, *k, "ll") && measure(b, *k - 1) > 1) *k -= 1;
}

int lc_porter_stem(const char *word, int len, char *out) {
    /* NLTK: irregular forms, mapped whole */
    static const char *const irregular[][2] = {
        {"sky", "sky"},         {"skies", "sky"},     {"dying", "die"},       {"lying", "lie"},
        {"tying", "tie"},       {"news", "news"},     {"innings", "inning"},  {"inning", "inning"},
        {"outings", "outing"},  {"outing", "outing"}, {"cannings", "canning"}, {"canning", "canning"},
        {"howe", "howe"},       {"proceed", "proceed"}, {"exceed", "exceed"}, {"succeed", "succeed"},
    };
    for (size_t i = 0; i < sizeof irregular / sizeof irregular[0]; i++)
        if ((int)strlen(irregular[i][0]) == len && memcmp(word, irregular[i][0], (size_t)len) == 0) {
            const int n = (int)strlen(irregular[i][1]);
            memcpy(out, irregular[i][1], (size_t)n);
            return n;
        }
    if (len > 0) memmove(out, word, (size_t)len);
    if (len <= 2) return len; /* NLTK: one or two letters stay */
    int k = len;
    step1a(out, &k);
    step1b(out, &k);
    step1c(out, &k);
    step2(out, &k);
    step3(out, &k);
    step4(out, &k);
    step5(out, &k);
    return k;
}

char *lc_rouge_stem_text(const char *text) {
    const int n = lc_rouge_token_hashes(text, NULL);
    char *out = malloc(strlen(text) + (size_t)n + 1), *o = out; /* each token's stem is no longer than it */
    if (!out) return NULL;
    for (const char *p = text; *p;) {
        const unsigned char c = (unsigned char)*p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) { p++; continue; }
        const char *s = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) p++;
        const int len = (int)(p - s);
        for (int i = 0; i < len; i++) o[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
        o += len > 3 ? lc_porter_stem(o, len, o) : len; /* rouge-score: tokens of more than 3 characters */
        *o++ = ' ';
    }
    *o = '\0';
    return out;
}

lc_status lc_rouge_score_stem(const char *candidate, const char *reference, lc_rouge *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    if (!candidate || !reference) return lc_fail(LC_ERR_ARG, "rouge: candidate and reference must not be NULL");
    char *c = lc_rouge_stem_text(candidate), *r = c ? lc_rouge_stem_text(reference) : NULL;
    lc_status st = c && r ? lc_rouge_score(c, r, out) : lc_fail(LC_ERR_NOMEM, "rouge: out of memory for the stems");
    free(c);
    free(r);
    return st;
}
