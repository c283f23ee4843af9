/* ListOps (Long Range Arena): the generator, with LRA's sampling, length filter and duplicate removal,
 * the printer of LRA's folded-parentheses form, and the TSV writer. experiments/lra-data/README.md compares it with LRA's
 * generator line by line. The independent evaluator of printed strings is in listops_eval.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "core/rng.h"
#include "core/status.h"
#include "lra/lra.h"

/* Token codes of a tree in prefix order: 0..9 values, then the operators, then the closing bracket. */
enum { TOK_OP0 = 10, TOK_END = TOK_OP0 + LC_LISTOPS_OPS };

static const char *const op_name[LC_LISTOPS_OPS] = {"[MIN", "[MAX", "[MED", "[SM"};

/* LRA: a node below the maximum depth is an operator when random() <= VALUE_P = 0.25, else a value. */
#define OP_PROB 0.25
/* Consecutive rejected trees after which lc_listops_gen_next gives up. */
#define LISTOPS_MAX_DRAWS 1000000L

/* Duplicate detection: every kept tree's token sequence, packed two tokens a byte, in an arena, indexed
 * by an open-addressing table of (hash, offset, length). The token sequence determines the tree and
 * therefore the printed string, so equal sequences are exactly equal strings. */
typedef struct {
    uint64_t hash;
    size_t off;
    uint32_t len; /* packed bytes; 0: empty slot */
} seen_slot;

struct lc_listops_gen {
    lc_listops_options o;
    lc_rng rng;
    uint8_t *tok;  /* the current tree in prefix order (max_length entries) */
    uint8_t *nargs;/* arguments of the operator at the same position */
    int ntok, length;
    int aborted;   /* the tree reached max_length and was abandoned */
    lc_listops_info info;
    char *text;    /* the printed current tree */
    size_t text_len, text_cap;
    uint8_t *packed;
    seen_slot *slots;
    size_t nslots, nseen;
    uint8_t *arena;
    size_t arena_n, arena_cap;
    lc_listops_counts counts;
};

void lc_listops_options_default(lc_listops_options *o) {
    o->max_depth = 10;
    o->max_args = 10;
    o->min_length = 500;
    o->max_length = 2000;
}

/* Longest sequence the options allow (capped at 2^40), to refuse a length range that cannot be reached. */
static double longest(const lc_listops_options *o) {
    double len = 1;
    for (int d = o->max_depth - 1; d >= 1 && len < 1099511627776.0; d--) len = 2 + o->max_args * len;
    return len;
}

static lc_status check_options(const lc_listops_options *o) {
    if (o->max_depth < 1 || o->max_depth > LC_LISTOPS_DEPTH_LIMIT)
        return lc_fail(LC_ERR_ARG, "listops: max_depth must be in 1..%d, got %d", LC_LISTOPS_DEPTH_LIMIT, o->max_depth);
    if (o->max_args < 2 || o->max_args > LC_LISTOPS_ARGS_LIMIT)
        return lc_fail(LC_ERR_ARG, "listops: max_args must be in 2..%d, got %d", LC_LISTOPS_ARGS_LIMIT, o->max_args);
    if (o->min_length < 0 || o->max_length > LC_LISTOPS_LENGTH_LIMIT || o->max_length < o->min_length + 2)
        return lc_fail(LC_ERR_ARG,
                       "listops: lengths must satisfy 0 <= min_length, min_length + 2 <= max_length <= %d "
                       "(got %d and %d)",
                       LC_LISTOPS_LENGTH_LIMIT, o->min_length, o->max_length);
    if (longest(o) <= o->min_length)
        return lc_fail(LC_ERR_ARG, "listops: with max_depth %d and max_args %d no sequence is longer than %.0f, "
                       "so none has min_length %d < length", o->max_depth, o->max_args, longest(o), o->min_length);
    return LC_OK;
}

lc_status lc_listops_gen_create(const lc_listops_options *opts, uint64_t seed, lc_listops_gen **out) {
    lc_clear_error();
    *out = NULL;
    lc_listops_options o;
    if (opts) o = *opts;
    else lc_listops_options_default(&o);
    lc_status st = check_options(&o);
    if (st) return st;
    lc_listops_gen *g = calloc(1, sizeof *g);
    if (!g) return lc_fail(LC_ERR_NOMEM, "listops: out of memory");
    g->o = o;
    lc_rng_seed(&g->rng, seed);
    size_t maxtok = (size_t)o.max_length + 1;
    g->tok = malloc(maxtok);
    g->nargs = malloc(maxtok);
    g->packed = malloc(maxtok / 2 + 1);
    /* Printed size: at most 7.5 characters per counted token (see print_node), plus the terminator. */
    g->text_cap = 8 * (size_t)o.max_length + 64;
    g->text = malloc(g->text_cap);
    g->nslots = 1024;
    g->slots = calloc(g->nslots, sizeof *g->slots);
    if (!g->tok || !g->nargs || !g->packed || !g->text || !g->slots) {
        lc_listops_gen_free(g);
        return lc_fail(LC_ERR_NOMEM, "listops: out of memory");
    }
    *out = g;
    return LC_OK;
}

void lc_listops_gen_free(lc_listops_gen *g) {
    if (!g) return;
    free(g->tok);
    free(g->nargs);
    free(g->packed);
    free(g->text);
    free(g->slots);
    free(g->arena);
    free(g);
}

void lc_listops_gen_counts(const lc_listops_gen *g, lc_listops_counts *c) { *c = g->counts; }

/* Uniform double in [0, 1) with 53 random bits, as Python's random.random(). */
static double uniform53(lc_rng *r) { return (double)(lc_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

static int median_floor(int *v, int k) {
    for (int i = 1; i < k; i++) /* insertion sort: k <= LC_LISTOPS_ARGS_LIMIT */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static int apply_op(int op, int *v, int k) {
    int r = v[0];
    switch (op) {
    case LC_LISTOPS_MIN:
        for (int i = 1; i < k; i++) r = v[i] < r ? v[i] : r;
        return r;
    case LC_LISTOPS_MAX:
        for (int i = 1; i < k; i++) r = v[i] > r ? v[i] : r;
        return r;
    case LC_LISTOPS_MED: return median_floor(v, k);
    default:
        for (int i = 1; i < k; i++) r += v[i];
        return r % 10;
    }
}

/* LRA's generate_tree: at depth < max_depth draw r = random(), else r = 1; r > 0.25 makes a value
 * (uniform 0..9), otherwise an operator with randint(2, max_args) arguments generated first and the
 * operator drawn (uniformly of four) after them. Appends the node in prefix order and returns its value.
 * A tree stops growing once its length reaches max_length: every longer tree is rejected anyway and
 * lengths only grow, so the kept trees have the same distribution as when generated in full. */
static int gen_node(lc_listops_gen *g, int depth) {
    lc_listops_info *in = &g->info;
    if (depth > in->depth) in->depth = depth;
    double r = depth < g->o.max_depth ? uniform53(&g->rng) : 1.0;
    if (r > OP_PROB) {
        int v = (int)lc_rng_below(&g->rng, 10);
        g->tok[g->ntok++] = (uint8_t)v;
        g->length += 1;
        in->values++;
        if (g->length >= g->o.max_length) g->aborted = 1;
        return v;
    }
    int k = 2 + (int)lc_rng_below(&g->rng, (uint32_t)(g->o.max_args - 1));
    int at = g->ntok++;
    g->length += 2; /* the operator and its closing bracket */
    if (g->length >= g->o.max_length) {
        g->aborted = 1;
        return 0;
    }
    int vals[LC_LISTOPS_ARGS_LIMIT];
    for (int i = 0; i < k; i++) {
        vals[i] = gen_node(g, depth + 1);
        if (g->aborted) return 0;
    }
    int op = (int)lc_rng_below(&g->rng, LC_LISTOPS_OPS);
    g->tok[at] = (uint8_t)(TOK_OP0 + op);
    g->nargs[at] = (uint8_t)k;
    g->tok[g->ntok++] = TOK_END;
    in->ops[op]++;
    if (in->min_args == 0 || k < in->min_args) in->min_args = k;
    if (k > in->max_args) in->max_args = k;
    in->parens += k + 1;
    return apply_op(op, vals, k);
}

static void put(lc_listops_gen *g, const char *s, size_t n) {
    memcpy(g->text + g->text_len, s, n);
    g->text_len += n;
}

/* LRA's to_string of the folded pairs: an operator with arguments a1..ak is the nested pairs
 * ((((op, a1), a2) ... ak), ']') and a pair (x, y) prints as "( x y )", so it reads
 * "( " x (k+1), the operator, then " a_i )" for each argument, then " ] )". Per counted token this is at
 * most 7.5 characters: the buffer holds 8 * max_length + 64. Returns the position after the subtree. */
static int print_node(lc_listops_gen *g, int i) {
    int t = g->tok[i];
    if (t < 10) {
        char c = (char)('0' + t);
        put(g, &c, 1);
        return i + 1;
    }
    int k = g->nargs[i];
    for (int j = 0; j <= k; j++) put(g, "( ", 2);
    const char *name = op_name[t - TOK_OP0];
    put(g, name, strlen(name));
    int j = i + 1;
    for (int a = 0; a < k; a++) {
        put(g, " ", 1);
        j = print_node(g, j);
        put(g, " )", 2);
    }
    put(g, " ] )", 4);
    return j + 1; /* skip the closing bracket's token */
}

static size_t pack(lc_listops_gen *g) {
    size_t nb = ((size_t)g->ntok + 1) / 2;
    memset(g->packed, 0, nb);
    for (int i = 0; i < g->ntok; i++) g->packed[i / 2] |= (uint8_t)(g->tok[i] << (i % 2 ? 4 : 0));
    return nb;
}

/* 1 when the packed tree is new (it is then remembered), 0 when seen before, -1 when out of memory. */
static int remember(lc_listops_gen *g, size_t nb) {
    uint64_t h = lc_lra_hash(g->packed, nb);
    size_t mask = g->nslots - 1, i = (size_t)h & mask;
    for (; g->slots[i].len; i = (i + 1) & mask)
        if (g->slots[i].hash == h && g->slots[i].len == nb && memcmp(g->arena + g->slots[i].off, g->packed, nb) == 0)
            return 0;
    if (g->arena_n + nb > g->arena_cap) {
        size_t cap = g->arena_cap ? g->arena_cap * 2 : 1 << 16;
        while (cap < g->arena_n + nb) cap *= 2;
        uint8_t *a = realloc(g->arena, cap);
        if (!a) return -1;
        g->arena = a;
        g->arena_cap = cap;
    }
    memcpy(g->arena + g->arena_n, g->packed, nb);
    g->slots[i] = (seen_slot){h, g->arena_n, (uint32_t)nb};
    g->arena_n += nb;
    if (++g->nseen * 2 > g->nslots) { /* keep the load under one half */
        size_t n2 = g->nslots * 2;
        seen_slot *s2 = calloc(n2, sizeof *s2);
        if (!s2) return -1;
        for (size_t k = 0; k < g->nslots; k++) {
            if (!g->slots[k].len) continue;
            size_t j = (size_t)g->slots[k].hash & (n2 - 1);
            while (s2[j].len) j = (j + 1) & (n2 - 1);
            s2[j] = g->slots[k];
        }
        free(g->slots);
        g->slots = s2;
        g->nslots = n2;
    }
    return 1;
}

lc_status lc_listops_gen_next(lc_listops_gen *g, const char **source, size_t *len, lc_listops_info *info) {
    lc_clear_error();
    for (long draws = 0;; draws++) {
        /* LRA's settings keep about one tree in twelve; options that allow few distinct sequences could
         * otherwise loop forever once all of them have been returned */
        if (draws == LISTOPS_MAX_DRAWS)
            return lc_fail(LC_ERR_ARG, "listops: no new sequence in %ld trees (after %ld kept): the options leave too "
                           "few sequences in the length range", draws, g->counts.kept);
        g->ntok = g->length = g->aborted = 0;
        memset(&g->info, 0, sizeof g->info);
        g->counts.trees++;
        int value = gen_node(g, 1); /* LRA calls generate_tree(1, max_depth, max_args): the root is at depth 1 */
        if (g->aborted) { g->counts.too_long++; continue; }
        if (g->length <= g->o.min_length) { g->counts.too_short++; continue; }
        int fresh = remember(g, pack(g));
        if (fresh < 0) return lc_fail(LC_ERR_NOMEM, "listops: out of memory remembering %ld sequences", g->counts.kept);
        if (!fresh) { g->counts.duplicates++; continue; }
        g->text_len = 0;
        print_node(g, 0);
        g->text[g->text_len] = '\0';
        g->info.value = value;
        g->info.length = g->length;
        g->counts.kept++;
        *source = g->text;
        if (len) *len = g->text_len;
        if (info) *info = g->info;
        return LC_OK;
    }
}

/* What writing a split needs: the generator, how many, and the summary it fills. */
typedef struct {
    lc_listops_gen *g;
    long n;
    lc_listops_summary s;
} split_writer;

/* The whole TSV to f: 0, an errno value, or -st after lc_fail (core/files.h's filler contract). */
static int write_split(FILE *f, void *user) {
    split_writer *w = user;
    lc_listops_summary *s = &w->s;
    double len_sum = 0;
    errno = 0;
    if (fputs("Source\tTarget\n", f) < 0) return errno ? errno : EIO;
    for (long i = 0; i < w->n; i++) {
        const char *src;
        size_t len;
        lc_listops_info in;
        lc_status st = lc_listops_gen_next(w->g, &src, &len, &in);
        if (st) return -(int)st;
        if (fwrite(src, 1, len, f) != len || fprintf(f, "\t%d\n", in.value) < 0) return errno ? errno : EIO;
        s->bytes += (long)len + 3;
        len_sum += in.length;
        if (i == 0 || in.length < s->length_min) s->length_min = in.length;
        if (in.length > s->length_max) s->length_max = in.length;
        if (in.depth > s->depth_max) s->depth_max = in.depth;
        s->labels[in.value]++;
        for (int k = 0; k < LC_LISTOPS_OPS; k++) s->ops[k] += in.ops[k];
    }
    s->bytes += 14;
    lc_listops_gen_counts(w->g, &s->counts);
    s->length_mean = s->counts.kept ? len_sum / (double)s->counts.kept : 0;
    return fflush(f) != 0 ? (errno ? errno : EIO) : 0;
}

/* Through the one atomic writer (core/files.h), so a failure never leaves a half-written split and never
 * destroys an existing file. "-" writes to standard output. */
lc_status lc_listops_write(const char *path, long n, uint64_t seed, const lc_listops_options *o,
                           lc_listops_summary *sum) {
    lc_clear_error();
    if (n < 1 || n > LC_LISTOPS_MAX_EXAMPLES)
        return lc_fail(LC_ERR_ARG, "listops: the number of sequences must be in 1..%ld, got %ld",
                       (long)LC_LISTOPS_MAX_EXAMPLES, n);
    split_writer w;
    memset(&w, 0, sizeof w);
    w.n = n;
    lc_status st = strcmp(path, "-") == 0 ? LC_OK : lc_file_check_output(path, "a TSV file"); /* before any work */
    if (st || (st = lc_listops_gen_create(o, seed, &w.g))) return st;
    if (strcmp(path, "-") == 0) {
        const int e = write_split(stdout, &w);
        if (e > 0) st = lc_fail(LC_ERR_IO, "standard output: write error: %s", strerror(e));
        else st = (lc_status)-e;
    } else {
        st = lc_file_write_atomic(path, "a TSV file", write_split, &w);
    }
    lc_listops_gen_free(w.g);
    if (!st && sum) *sum = w.s;
    return st;
}
