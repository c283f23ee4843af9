/* The `bigbird` attention kind (bigbird.h): options, the seeded plan of random blocks, the tiling of
 * a sequence, and the forward and backward passes.
 *
 * Tiles. The T positions are cut into tiles of at most 64 consecutive positions that never mix a
 * global row with a sparse one: the global front (etc: the G tokens; itc: block 0) and, itc, the global
 * last block in chunks of 64; then the sparse blocks, each in chunks of 64 when b >= 64, else 64 / b
 * whole blocks per tile. A query tile's keys are a sorted list of segments (runs of key positions):
 * for a global tile the one run of all keys; for a sparse tile the union over its blocks of their
 * window, global and random blocks, each segment carrying a 64-bit mask of the tile's blocks that see
 * it. The passes stream the segments 64 keys at a time, gather those rows into a contiguous tile and
 * use the full kind's tile products and online softmax (full_tile.h), masking per (query, key) by the
 * segment mask and, causal, by position. The key pass (dk, dv) is the same with the roles swapped: a key
 * tile gathers the queries that see it (the global rows, the window neighbours, and the query blocks
 * that drew its blocks at random, from an inverted plan built at the start of backward). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/bigbird.h"
#include "attn/full_tile.h"
#include "core/rng.h"
#include "core/threads.h"

enum { BB_TILE = 64 };
#define BB_ALL (~(uint64_t)0)

/* ---------------------------------------------------------------- options */

int lc_attn_bigbird_random(const lc_attn_bigbird_opts *o) {
    if (o->r >= 0) return o->r;
    return o->variant == LC_BIGBIRD_ETC ? 0 : 3;
}

int lc_attn_bigbird_globals(const lc_attn_bigbird_opts *o, int T) {
    if (o->variant != LC_BIGBIRD_ETC) return 0;
    const int g = o->g >= 0 ? o->g : o->b;
    return g < T ? g : T;
}

int lc_attn_bigbird_blocks(const lc_attn_bigbird_opts *o, int T) {
    const int rest = T - lc_attn_bigbird_globals(o, T);
    return rest > 0 ? (rest + o->b - 1) / o->b : 0;
}

static void bigbird_opts_init(void *opts, int H) {
    lc_attn_bigbird_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->b = 64, o->r = -1, o->variant = LC_BIGBIRD_ITC, o->g = -1, o->seed = 0;
    (void)H;
}

static int bigbird_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_bigbird_opts *o = opts;
    (void)H;
    if (strcmp(key, "b") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->b, err, errlen);
    if (strcmp(key, "r") == 0) return lc_attn_opt_int(key, value, 0, LC_BIGBIRD_MAX_RANDOM, &o->r, err, errlen);
    if (strcmp(key, "g") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->g, err, errlen);
    if (strcmp(key, "seed") == 0) return lc_attn_opt_int(key, value, 0, 2147483647L, &o->seed, err, errlen);
    if (strcmp(key, "variant") == 0) {
        if (strcmp(value, "itc") == 0) return o->variant = LC_BIGBIRD_ITC, 0;
        if (strcmp(value, "etc") == 0) return o->variant = LC_BIGBIRD_ETC, 0;
        snprintf(err, errlen, "option variant=%s: expected itc or etc", value);
        return -1;
    }
    return lc_attn_opt_unknown(&lc_attn_bigbird, key, err, errlen);
}

static int bigbird_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                         size_t errlen) {
    const lc_attn_bigbird_opts *o = opts;
    if (o->b < 1) return snprintf(err, errlen, "bigbird: b=%d must be >= 1", o->b), -1;
    if (o->r < -1 || o->r > LC_BIGBIRD_MAX_RANDOM)
        return snprintf(err, errlen, "bigbird: r=%d must be in [0, %d]", o->r, LC_BIGBIRD_MAX_RANDOM), -1;
    if (o->variant != LC_BIGBIRD_ITC && o->variant != LC_BIGBIRD_ETC)
        return snprintf(err, errlen, "bigbird: unknown variant %d (itc or etc)", o->variant), -1;
    if (o->variant == LC_BIGBIRD_ITC && o->g >= 0)
        return snprintf(err, errlen, "bigbird: g=%d needs variant=etc (itc's globals are its first and last block)",
                        o->g), -1;
    /* etc: g >= T (a short last segment) makes every position global, as Longformer's global=G does */
    if (o->variant == LC_BIGBIRD_ETC && o->g == 0) return snprintf(err, errlen, "bigbird: g=0 must be >= 1"), -1;
    return 0;
}

const lc_attn_kind lc_attn_bigbird = {
    .name = "bigbird",
    .options_help = "b=<block size, default 64> r=<random blocks, default 3 (itc) / 0 (etc)> variant=<itc|etc> "
                    "g=<etc global tokens, default b> seed=<extra seed, default 0>",
    /* Longformer's global=G is not supported: BigBird's globals use the ordinary q, k, v (variant=etc,g=G) */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL,
    .opts_size = sizeof(lc_attn_bigbird_opts),
    .opts_init = bigbird_opts_init,
    .opts_set = bigbird_opts_set,
    .check = bigbird_check,
    .workspace_floats = lc_attn_bigbird_workspace,
    .forward = lc_attn_bigbird_forward,
    .backward = lc_attn_bigbird_backward,
};

/* ---------------------------------------------------------------- layout and plan */

typedef struct {
    int T, b, G, n, itc, r, causal;
    int front_end;   /* rows [0, front_end) are global: etc's tokens, itc's block 0 */
    int back_begin;  /* rows [back_begin, T) are global: itc's last block when n >= 2; else T */
    int sb0, sb1;    /* sparse blocks [sb0, sb1) */
    int per_tile;    /* b < 64: whole blocks per sparse tile; else 1 */
    int per_block;   /* b >= 64: tiles per sparse block; else 1 */
    int n_front, n_sparse, n_back, tiles;
    uint64_t seed;   /* tensors.seed mixed with the option's seed */
    const int *plan; /* explicit [H][n][r] plan, or NULL */
} bb_layout;

typedef struct {
    int p0, p1;      /* positions [p0, p1) */
    int global;      /* 1: global rows (every key; seen by every query) */
    int blk0, blk1;  /* sparse tiles: blocks [blk0, blk1) */
} bb_tile;

typedef struct {
    int begin, end;  /* positions [begin, end) */
    uint64_t mask;   /* bit i: block blk0 + i of the tile sees (or is seen by) these positions */
} bb_segment;

static inline int bb_ceil(int a, int b) { return (a + b - 1) / b; }

static bb_layout bb_layout_of(const lc_attn_shape *s, const lc_attn_bigbird_opts *o, uint64_t seed, const int *plan) {
    bb_layout L;
    memset(&L, 0, sizeof L);
    L.T = s->T, L.b = o->b, L.causal = s->causal != 0, L.itc = o->variant != LC_BIGBIRD_ETC;
    L.r = lc_attn_bigbird_random(o);
    L.G = lc_attn_bigbird_globals(o, s->T);
    L.n = lc_attn_bigbird_blocks(o, s->T);
    if (L.itc) {
        L.front_end = L.T < L.b ? L.T : L.b;
        L.back_begin = L.n >= 2 ? (L.n - 1) * L.b : L.T;
        L.sb0 = 1, L.sb1 = L.n >= 2 ? L.n - 1 : 1;
    } else {
        L.front_end = L.G, L.back_begin = L.T;
        L.sb0 = 0, L.sb1 = L.n;
    }
    L.per_tile = L.b < BB_TILE ? BB_TILE / L.b : 1;
    /* no block is longer than T: a huge b on a short sequence makes no empty tiles */
    L.per_block = L.b >= BB_TILE ? bb_ceil(lc_imax(1, lc_imin(L.b, L.T)), BB_TILE) : 1;
    L.n_front = bb_ceil(L.front_end, BB_TILE);
    L.n_back = bb_ceil(L.T - L.back_begin, BB_TILE);
    const int sparse = L.sb1 - L.sb0;
    L.n_sparse = L.b >= BB_TILE ? sparse * L.per_block : bb_ceil(sparse, L.per_tile);
    L.tiles = L.n_front + L.n_sparse + L.n_back;
    L.seed = lc_seed_mix(lc_seed_mix(seed, 0x6269676269726400ULL /* "bigbird" */), (uint64_t)(uint32_t)o->seed);
    L.plan = plan;
    return L;
}

static inline int bb_block_begin(const bb_layout *L, int blk) { return L->G + blk * L->b; }
static inline int bb_block_end(const bb_layout *L, int blk) {
    const int e = L->G + (blk + 1) * L->b;
    return e < L->T ? e : L->T;
}
static inline int bb_block_of(const bb_layout *L, int pos) { return (pos - L->G) / L->b; }
static inline int bb_is_sparse(const bb_layout *L, int blk) { return blk >= L->sb0 && blk < L->sb1; }

static bb_tile bb_tile_at(const bb_layout *L, int i) {
    bb_tile t = {0, 0, 1, 0, 0};
    if (i < L->n_front) {
        t.p0 = i * BB_TILE, t.p1 = lc_imin(t.p0 + BB_TILE, L->front_end);
        return t;
    }
    i -= L->n_front;
    if (i < L->n_sparse) {
        t.global = 0;
        if (L->b >= BB_TILE) {
            const int blk = L->sb0 + i / L->per_block;
            t.blk0 = blk, t.blk1 = blk + 1;
            t.p0 = bb_block_begin(L, blk) + (i % L->per_block) * BB_TILE;
            t.p1 = lc_imin(t.p0 + BB_TILE, bb_block_end(L, blk)); /* may be empty: a short last block */
        } else {
            t.blk0 = L->sb0 + i * L->per_tile, t.blk1 = lc_imin(t.blk0 + L->per_tile, L->sb1);
            t.p0 = bb_block_begin(L, t.blk0), t.p1 = bb_block_end(L, t.blk1 - 1);
        }
        return t;
    }
    i -= L->n_sparse;
    t.p0 = L->back_begin + i * BB_TILE, t.p1 = lc_imin(t.p0 + BB_TILE, L->T);
    return t;
}

/* The random blocks of sparse query block qb of head h into out[0..r): sorted, -1 after the last.
 * Floyd's sampling: min(r, m) distinct candidate indices with exactly that many hash draws. */
static void bb_random_blocks(const bb_layout *L, int h, int qb, int *out) {
    const int r = L->r;
    if (L->plan) {
        memcpy(out, L->plan + ((size_t)h * L->n + qb) * r, sizeof(int) * (size_t)r);
        return;
    }
    /* candidates: [lo1, hi1] then [lo2, hi2] (inclusive) */
    const int lo1 = L->itc ? 1 : 0, hi1 = qb - 2, lo2 = qb + 2, hi2 = L->itc ? L->n - 2 : L->n - 1;
    const int len1 = hi1 >= lo1 ? hi1 - lo1 + 1 : 0, len2 = hi2 >= lo2 ? hi2 - lo2 + 1 : 0, m = len1 + len2;
    const int k = r < m ? r : m;
    const uint64_t stream = lc_seed_mix(lc_seed_mix(lc_seed_mix(L->seed, (uint64_t)L->n), (uint64_t)h), (uint64_t)qb);
    int count = 0;
    for (int j = m - k; j < m; j++) {
        const uint64_t x = lc_seed_mix(stream, (uint64_t)count);
        int pick = (int)(((x >> 32) * (uint64_t)(j + 1)) >> 32); /* uniform in [0, j] */
        for (int c = 0; c < count; c++)
            if (out[c] == pick) {
                pick = j;
                break;
            }
        out[count++] = pick;
    }
    for (int c = 0; c < count; c++) out[c] = out[c] < len1 ? lo1 + out[c] : lo2 + out[c] - len1;
    for (int c = 1; c < count; c++) /* insertion sort: r is small */
        for (int d = c; d > 0 && out[d - 1] > out[d]; d--) {
            const int tmp = out[d];
            out[d] = out[d - 1], out[d - 1] = tmp;
        }
    for (int c = count; c < r; c++) out[c] = -1;
}

void lc_attn_bigbird_plan(const lc_attn_bigbird_opts *o, int H, int T, uint64_t seed, int *plan) {
    const lc_attn_shape s = {1, H, T, 0, 1, 0, 1.0f, 0, 0};
    const bb_layout L = bb_layout_of(&s, o, seed, NULL);
    for (int h = 0; h < H; h++)
        for (int qb = 0; qb < L.n; qb++) {
            int *row = plan + ((size_t)h * L.n + qb) * L.r;
            if (bb_is_sparse(&L, qb))
                bb_random_blocks(&L, h, qb, row);
            else
                for (int j = 0; j < L.r; j++) row[j] = -1;
        }
}

/* ---------------------------------------------------------------- workspace */

/* One thread's scratch besides the full-kind tiles. */
typedef struct {
    int *slot_pos;        /* BB_TILE positions of the gathered rows */
    uint64_t *slot_mask;  /* their segment masks */
    uint64_t *entries;    /* (block << 6 | bit) pairs before sorting */
    bb_segment *seg;
    int *rnd;             /* r random blocks */
} bb_scratch;

/* Most (block, bit) entries of one tile: sparse query tile per_tile (3 + 2 + r), sparse key tile
 * per_tile (3 + 2) plus its share of the inverted plan (at most n r). */
static size_t bb_max_entries(const bb_layout *L) {
    return (size_t)L->per_tile * (5 + (size_t)L->r) + (size_t)L->n * L->r + 8;
}

static size_t bb_scratch_floats(const bb_layout *L) {
    const size_t e = bb_max_entries(L);
    return BB_TILE + 2 * BB_TILE + lc_round16(2 * e) + lc_round16(4 * (e + 1)) + lc_round16((size_t)L->r + 1);
}

static bb_scratch bb_scratch_at(float *p, const bb_layout *L) {
    const size_t e = bb_max_entries(L);
    bb_scratch sc;
    sc.slot_pos = (int *)(void *)p, p += BB_TILE;
    sc.slot_mask = (uint64_t *)(void *)p, p += 2 * BB_TILE;
    sc.entries = (uint64_t *)(void *)p, p += lc_round16(2 * e);
    sc.seg = (bb_segment *)(void *)p, p += lc_round16(4 * (e + 1));
    sc.rnd = (int *)(void *)p;
    return sc;
}

static full_geometry bb_geometry(const lc_attn_shape *s) {
    lc_attn_shape plain = *s;
    plain.window = 0, plain.relpos = 0;
    return full_geometry_of(&plain);
}

/* Inverted plan of one head: query blocks that drew key block kb are list[start[kb] .. start[kb+1]). */
static size_t bb_inverse_ints(const bb_layout *L, int H) {
    return lc_round16((size_t)H * (2 * (size_t)L->n + 1) + (size_t)H * L->n * L->r);
}

/* [16 slack][per thread: tiles, scratch][Delta: B*H*T][inverted plan: start H(n+1), cursor H n, list H n r] */
size_t lc_attn_bigbird_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    const bb_layout L = bb_layout_of(s, opts, 0, NULL);
    const full_geometry g = bb_geometry(s);
    return 16 + (size_t)nthreads * (g.thread_floats + bb_scratch_floats(&L)) + lc_round16((size_t)s->B * s->H * s->T) +
           bb_inverse_ints(&L, s->H);
}

/* ---------------------------------------------------------------- segment lists */

static int bb_cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorted (block << 6 | bit) entries into segments, after an optional leading all-mask run [0, lead). */
static int bb_merge(const bb_layout *L, uint64_t *entries, int n_entries, int lead, bb_segment *seg) {
    qsort(entries, (size_t)n_entries, sizeof *entries, bb_cmp_u64);
    int n = 0, last = -1;
    if (lead > 0) seg[n++] = (bb_segment){0, lead, BB_ALL};
    for (int i = 0; i < n_entries; i++) {
        const int blk = (int)(entries[i] >> 6);
        const uint64_t bit = (uint64_t)1 << (entries[i] & 63);
        if (blk == last) {
            seg[n - 1].mask |= bit;
        } else {
            seg[n++] = (bb_segment){bb_block_begin(L, blk), bb_block_end(L, blk), bit};
            last = blk;
        }
    }
    return n;
}

static inline void bb_push(uint64_t *entries, int *n, const bb_layout *L, int blk, int bit) {
    if (blk >= 0 && blk < L->n) entries[(*n)++] = (uint64_t)blk << 6 | (uint64_t)bit;
}

/* Keys seen by the queries of a tile, as segments; returns the count. */
static int bb_query_tile_keys(const bb_layout *L, int h, const bb_tile *tl, bb_scratch *sc) {
    const int key_end = L->causal ? tl->p1 : L->T;
    if (tl->global) {
        sc->seg[0] = (bb_segment){0, key_end, BB_ALL};
        return 1;
    }
    int n = 0;
    for (int qb = tl->blk0; qb < tl->blk1; qb++) {
        const int bit = qb - tl->blk0;
        for (int kb = qb - 1; kb <= qb + 1; kb++) bb_push(sc->entries, &n, L, kb, bit);
        if (L->itc) bb_push(sc->entries, &n, L, 0, bit), bb_push(sc->entries, &n, L, L->n - 1, bit);
        bb_random_blocks(L, h, qb, sc->rnd);
        for (int j = 0; j < L->r; j++) bb_push(sc->entries, &n, L, sc->rnd[j], bit);
    }
    int count = bb_merge(L, sc->entries, n, L->G, sc->seg), kept = 0;
    for (int i = 0; i < count; i++) { /* causal: no key after the tile's last query */
        bb_segment s = sc->seg[i];
        s.end = lc_imin(s.end, key_end);
        if (s.begin < s.end) sc->seg[kept++] = s;
    }
    return kept;
}

/* Queries that see the keys of a tile, as segments; inv_start/inv_list: the head's inverted plan. */
static int bb_key_tile_queries(const bb_layout *L, const int *inv_start, const int *inv_list, const bb_tile *tl,
                               bb_scratch *sc) {
    const int query_begin = L->causal ? tl->p0 : 0;
    if (tl->global) {
        sc->seg[0] = (bb_segment){query_begin, L->T, BB_ALL};
        return 1;
    }
    int n = 0;
    for (int kb = tl->blk0; kb < tl->blk1; kb++) {
        const int bit = kb - tl->blk0;
        for (int qb = kb - 1; qb <= kb + 1; qb++) bb_push(sc->entries, &n, L, qb, bit);
        if (L->itc) bb_push(sc->entries, &n, L, 0, bit), bb_push(sc->entries, &n, L, L->n - 1, bit);
        for (int i = inv_start[kb]; i < inv_start[kb + 1]; i++) bb_push(sc->entries, &n, L, inv_list[i], bit);
    }
    int count = bb_merge(L, sc->entries, n, L->G, sc->seg), kept = 0;
    for (int i = 0; i < count; i++) { /* causal: no query before the tile's first key */
        bb_segment s = sc->seg[i];
        s.begin = lc_imax(s.begin, query_begin);
        if (s.begin < s.end) sc->seg[kept++] = s;
    }
    return kept;
}

/* Walks the segments 64 rows at a time: fills slot_pos / slot_mask, returns how many (0 at the end). */
typedef struct {
    int seg, pos;
} bb_cursor;

static int bb_next_slots(const bb_scratch *sc, int n_seg, bb_cursor *c) {
    int n = 0;
    while (n < BB_TILE && c->seg < n_seg) {
        const bb_segment *s = &sc->seg[c->seg];
        if (c->pos < s->begin) c->pos = s->begin;
        const int take = lc_imin(BB_TILE - n, s->end - c->pos);
        for (int i = 0; i < take; i++) sc->slot_pos[n + i] = c->pos + i, sc->slot_mask[n + i] = s->mask;
        n += take, c->pos += take;
        if (c->pos >= s->end) c->seg++;
    }
    return n;
}

/* Asks for the rows of the chunk after cursor c (two views) to be brought into cache while the current
 * chunk is computed: random and global blocks lie far from the tile, where no hardware prefetcher looks. */
static void bb_prefetch_next(const bb_scratch *sc, int n_seg, bb_cursor c, const lc_view *x, const lc_view *y,
                             const full_geometry *g, int b, int h) {
    int n = 0;
    while (n < BB_TILE && c.seg < n_seg) {
        const bb_segment *s = &sc->seg[c.seg];
        if (c.pos < s->begin) c.pos = s->begin;
        const int take = lc_imin(BB_TILE - n, s->end - c.pos);
        full_prefetch_rows(x, g, b, h, c.pos, take);
        full_prefetch_rows(y, g, b, h, c.pos, take);
        n += take, c.pos += take;
        if (c.pos >= s->end) c.seg++;
    }
}

/* ---------------------------------------------------------------- lane masks */

/* The 64 positions of a tile along the vector lanes: position, validity, and which bit of a segment
 * mask (the block of the position within the tile) decides visibility. */
typedef struct {
    lc_vi16 pos[4], valid[4], shift[4], high[4];
    uint64_t all; /* the mask bits of every block of the tile */
} bb_lanes;

static void bb_lanes_of(const bb_layout *L, const bb_tile *tl, bb_lanes *ln) {
    const int n = tl->p1 - tl->p0;
    for (int l = 0; l < 4; l++)
        for (int i = 0; i < 16; i++) {
            const int lane = 16 * l + i, pos = tl->p0 + lane;
            const int bit = !tl->global && lane < n ? bb_block_of(L, pos) - tl->blk0 : 0;
            ln->pos[l][i] = pos, ln->valid[l][i] = lane < n ? -1 : 0;
            ln->shift[l][i] = bit & 31, ln->high[l][i] = bit >= 32 ? -1 : 0;
        }
    const int blocks = tl->blk1 - tl->blk0;
    ln->all = tl->global || blocks >= 64 ? BB_ALL : ((uint64_t)1 << blocks) - 1;
}

static inline lc_vi16 bb_vi_splat(int x) { return lc_vibroadcast(x); }

/* Lanes of chunk l that see (are seen by) a gathered row with segment mask m at position p:
 * the row's mask bit of the lane's block; causal: lanes_are_queries ? lane >= p : lane <= p. */
static inline lc_vi16 bb_lane_mask(const bb_lanes *ln, int l, uint64_t m, int p, int causal, int lanes_are_queries) {
    lc_vi16 v = ln->valid[l];
    if ((m & ln->all) != ln->all) {
        const lc_vi16 lo = bb_vi_splat((int32_t)(uint32_t)m), hi = bb_vi_splat((int32_t)(uint32_t)(m >> 32));
        const lc_vi16 word = (hi & ln->high[l]) | (lo & ~ln->high[l]);
        v &= lc_vine((word >> ln->shift[l]) & 1, (lc_vi16){0});
    }
    if (causal) v &= lanes_are_queries ? lc_vige(ln->pos[l], bb_vi_splat(p)) : lc_vile(ln->pos[l], bb_vi_splat(p));
    return v;
}

/* Rows pos[0..n) of a view times mul into a row-major tile (stride D_pad), zero-padded to a multiple of 4
 * rows and to D_pad columns. */
static void bb_gather_rows(float *tile, const lc_view *v, const full_geometry *g, int b, int h, const int *pos, int n,
                           float mul) {
    const int rows = lc_round_up(n, 4);
    for (int i = 0; i < rows; i++) {
        float *dst = tile + (size_t)i * g->D_pad;
        if (i < n) {
            const float *src = lc_view_row(v, b, pos[i], h, g->D);
            for (int d = 0; d < g->D; d++) dst[d] = mul * src[d];
            for (int d = g->D; d < g->D_pad; d++) dst[d] = 0;
        } else {
            memset(dst, 0, sizeof(float) * g->D_pad);
        }
    }
}

/* Rows pos[0..n) as the A operand of full_gemm (read once, by broadcasts): in place when they are 64
 * consecutive rows and D is a whole number of vectors (full_rows_operand), else gathered into tile. */
static const float *bb_rows_operand(float *tile, const lc_view *v, const full_geometry *g, int b, int h,
                                    const int *pos, int n, long *ld) {
    if (n == BB_TILE && g->D == g->D_pad && pos[n - 1] - pos[0] == n - 1) {
        *ld = v->st;
        return lc_view_row(v, b, pos[0], h, g->D);
    }
    bb_gather_rows(tile, v, g, b, h, pos, n, 1.0f);
    *ld = g->D_pad;
    return tile;
}

/* Whether every gathered row of a chunk pairs visibly with every valid lane, so that no mask is needed:
 * every segment mask covers the tile's blocks and, causal, every key precedes every query (the slots
 * are in increasing position order). */
static int bb_chunk_unmasked(const bb_layout *L, const bb_tile *tl, const bb_lanes *ln, const bb_scratch *sc, int n,
                             int lanes_are_queries) {
    for (int j = 0; j < n; j++)
        if ((sc->slot_mask[j] & ln->all) != ln->all) return 0;
    if (!L->causal) return 1;
    return lanes_are_queries ? sc->slot_pos[n - 1] <= tl->p0 : sc->slot_pos[0] >= tl->p1 - 1;
}

/* ---------------------------------------------------------------- forward */

static void bb_forward_tile(const bb_layout *L, const full_geometry *g, const lc_attn_tensors *t, int b, int h,
                            const bb_tile *tl, full_tiles *w, bb_scratch *sc) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    const int p0 = tl->p0, n_q = tl->p1 - tl->p0, rows = lc_round_up(n_q, 4), dp = g->D_pad;
    if (n_q <= 0) return;
    bb_lanes ln;
    bb_lanes_of(L, tl, &ln);
    float correction[FULL_TILE_Q];
    full_forward_begin(g, t, b, h, p0, n_q, w);
    const int n_seg = bb_query_tile_keys(L, h, tl, sc);
    bb_cursor cur = {0, 0};
    int n_k;
    while ((n_k = bb_next_slots(sc, n_seg, &cur)) > 0) {
        long k_ld;
        const float *k_rows = bb_rows_operand(w->key_a, &t->k, g, b, h, sc->slot_pos, n_k, &k_ld);
        bb_gather_rows(w->key_b, &t->v, g, b, h, sc->slot_pos, n_k, 1.0f);
        bb_prefetch_next(sc, n_seg, cur, &t->k, &t->v, g, b, h);
        /* scores^T = k (scale q)^T: one key per row, queries along the lanes */
        full_gemm(w->scores, FULL_TILE_Q, k_rows, k_ld, 1, w->q_tile, FULL_TILE_Q, lc_round_up(n_k, 4), g->D,
                  FULL_TILE_Q, 0);
        lc_v16 tile_max[CHUNKS];
        for (int l = 0; l < CHUNKS; l++) tile_max[l] = lc_vsplat(-INFINITY);
        if (bb_chunk_unmasked(L, tl, &ln, sc, n_k, 1)) { /* padding lanes hold finite scores of zero queries */
            for (int j = 0; j < n_k; j++)
                for (int l = 0; l < CHUNKS; l++)
                    tile_max[l] = lc_vmax(tile_max[l], lc_vload(w->scores + (size_t)j * FULL_TILE_Q + 16 * l));
        } else {
            for (int j = 0; j < n_k; j++)
                for (int l = 0; l < CHUNKS; l++) {
                    float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                    const lc_vi16 seen = bb_lane_mask(&ln, l, sc->slot_mask[j], sc->slot_pos[j], L->causal, 1);
                    const lc_v16 masked = lc_vselect(seen, lc_vload(p), lc_vsplat(-INFINITY));
                    lc_vstore(p, masked);
                    tile_max[l] = lc_vmax(tile_max[l], masked);
                }
        }
        full_softmax_update(w->scores, n_k, tile_max, w->row_a, w->row_b, correction);
        full_accumulate_pv(w, correction, rows, n_k, dp);
    }
    full_store_outputs(g, t, w, b, h, p0, n_q);
}

static void bb_check_args(const lc_attn_shape *s, const lc_attn_tensors *t, const void *opts) {
    const lc_attn_bigbird_opts *o = opts;
    assert(o && o->b >= 1 && lc_attn_bigbird_random(o) <= LC_BIGBIRD_MAX_RANDOM);
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0 && s->D > 0);
    assert(s->M == 0 && s->window == 0 && !s->relpos);
    assert(t->rel == NULL && t->global == NULL);
    (void)s, (void)t, (void)o;
}

static inline float *bb_thread_base(float *base, const full_geometry *g, const bb_layout *L, int thread) {
    return base + (size_t)thread * (g->thread_floats + bb_scratch_floats(L));
}

void lc_attn_bigbird_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    lc_attn_bigbird_forward_plan(s, opts, t, work, NULL);
}

/* ---------------------------------------------------------------- backward */

/* dq of a query tile: key-major tiles as in the forward pass, P recomputed from lse. */
static void bb_query_grads_tile(const bb_layout *L, const full_geometry *g, const lc_attn_tensors *t,
                                const float *delta, int b, int h, const bb_tile *tl, full_tiles *w, bb_scratch *sc) {
    enum { CHUNKS = FULL_TILE_Q / 16 };
    const int p0 = tl->p0, n_q = tl->p1 - tl->p0, rows = lc_round_up(n_q, 4), dp = g->D_pad;
    if (n_q <= 0) return;
    bb_lanes ln;
    bb_lanes_of(L, tl, &ln);
    full_load_transposed(w->q_tile, &t->q, g, b, h, p0, n_q, g->scale);
    full_load_transposed(w->dout_tile, &t->dout, g, b, h, p0, n_q, 1.0f);
    full_load_row_stats(g, t->lse, delta, b, h, p0, n_q, w);
    lc_v16 lse[CHUNKS], row_delta[CHUNKS];
    for (int l = 0; l < CHUNKS; l++)
        lse[l] = lc_vload(w->row_a + 16 * l), row_delta[l] = lc_vload(w->row_b + 16 * l);
    memset(w->q_acc, 0, sizeof(float) * (size_t)rows * dp);
    const int n_seg = bb_query_tile_keys(L, h, tl, sc);
    bb_cursor cur = {0, 0};
    int n_k;
    while ((n_k = bb_next_slots(sc, n_seg, &cur)) > 0) {
        const int key_rows = lc_round_up(n_k, 4);
        long v_ld;
        bb_gather_rows(w->key_a, &t->k, g, b, h, sc->slot_pos, n_k, 1.0f);
        const float *v_rows = bb_rows_operand(w->key_b, &t->v, g, b, h, sc->slot_pos, n_k, &v_ld);
        bb_prefetch_next(sc, n_seg, cur, &t->k, &t->v, g, b, h);
        full_gemm(w->scores, FULL_TILE_Q, w->key_a, dp, 1, w->q_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        full_gemm(w->dscores, FULL_TILE_Q, v_rows, v_ld, 1, w->dout_tile, FULL_TILE_Q, key_rows, g->D, FULL_TILE_Q, 0);
        /* dS^T = P^T (dP^T - Delta); padding rows (j >= n_k) and hidden pairs get 0. Padding lanes need no
         * mask: their dout and Delta are 0, so their dS is 0 */
        const int unmasked = bb_chunk_unmasked(L, tl, &ln, sc, n_k, 1);
        for (int j = 0; j < key_rows; j++)
            for (int l = 0; l < CHUNKS; l++) {
                const float *p = w->scores + (size_t)j * FULL_TILE_Q + 16 * l;
                float *ds = w->dscores + (size_t)j * FULL_TILE_Q + 16 * l;
                lc_v16 prob = lc_vexp(lc_vload(p) - lse[l]);
                if (j >= n_k)
                    prob = (lc_v16){0};
                else if (!unmasked)
                    prob = lc_vselect(bb_lane_mask(&ln, l, sc->slot_mask[j], sc->slot_pos[j], L->causal, 1), prob,
                                        (lc_v16){0});
                lc_vstore(ds, prob * (lc_vload(ds) - row_delta[l]));
            }
        full_gemm(w->q_acc, dp, w->dscores, 1, FULL_TILE_Q, w->key_a, dp, rows, key_rows, dp, 1); /* dq += dS k */
    }
    for (int i = 0; i < n_q; i++) {
        float *dq = lc_view_row(&t->dq, b, p0 + i, h, g->D);
        for (int d = 0; d < g->D; d++) dq[d] = g->scale * w->q_acc[(size_t)i * dp + d];
    }
}

/* dk, dv of a key tile: the queries that see it gathered 64 at a time (query-major tiles, keys along the
 * lanes), P and dS recomputed. */
static void bb_key_grads_tile(const bb_layout *L, const full_geometry *g, const lc_attn_tensors *t,
                              const float *delta, int b, int h, const bb_tile *tl, const int *inv_start,
                              const int *inv_list, full_tiles *w, bb_scratch *sc) {
    enum { CHUNKS = FULL_TILE_K / 16 };
    const int s0 = tl->p0, n_k = tl->p1 - tl->p0, key_rows = lc_round_up(n_k, 4), dp = g->D_pad;
    if (n_k <= 0) return;
    bb_lanes ln;
    bb_lanes_of(L, tl, &ln);
    full_load_transposed(w->key_a, &t->k, g, b, h, s0, n_k, 1.0f);
    full_load_transposed(w->key_b, &t->v, g, b, h, s0, n_k, 1.0f);
    memset(w->dk_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    memset(w->dv_acc, 0, sizeof(float) * (size_t)key_rows * dp);
    const size_t row0 = ((size_t)b * g->H + h) * g->T;
    const int n_seg = bb_key_tile_queries(L, inv_start, inv_list, tl, sc);
    bb_cursor cur = {0, 0};
    int n_q;
    while ((n_q = bb_next_slots(sc, n_seg, &cur)) > 0) {
        const int rows = lc_round_up(n_q, 4);
        bb_gather_rows(w->q_tile, &t->q, g, b, h, sc->slot_pos, n_q, g->scale);
        bb_gather_rows(w->dout_tile, &t->dout, g, b, h, sc->slot_pos, n_q, 1.0f);
        bb_prefetch_next(sc, n_seg, cur, &t->q, &t->dout, g, b, h);
        for (int i = 0; i < n_q; i++)
            w->row_a[i] = t->lse[row0 + sc->slot_pos[i]], w->row_b[i] = delta[row0 + sc->slot_pos[i]];
        full_gemm(w->scores, FULL_TILE_K, w->q_tile, dp, 1, w->key_a, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        full_gemm(w->dscores, FULL_TILE_K, w->dout_tile, dp, 1, w->key_b, FULL_TILE_K, rows, g->D, FULL_TILE_K, 0);
        /* P = exp(s - lse), dS = P (dP - Delta); padding rows, padding lanes and hidden pairs get 0 */
        const int unmasked = bb_chunk_unmasked(L, tl, &ln, sc, n_q, 0);
        for (int i = 0; i < rows; i++) {
            float *p = w->scores + (size_t)i * FULL_TILE_K, *ds = w->dscores + (size_t)i * FULL_TILE_K;
            const float row_lse = i < n_q ? w->row_a[i] : 0.0f, row_delta = i < n_q ? w->row_b[i] : 0.0f;
            for (int l = 0; l < CHUNKS; l++) {
                lc_v16 prob = lc_vexp(lc_vload(p + 16 * l) - lc_vbroadcast(row_lse));
                if (i >= n_q)
                    prob = (lc_v16){0};
                else if (!unmasked)
                    prob = lc_vselect(bb_lane_mask(&ln, l, sc->slot_mask[i], sc->slot_pos[i], L->causal, 0), prob,
                                        (lc_v16){0});
                else if (n_k < FULL_TILE_K) /* keep the never-stored padding lanes finite */
                    prob = lc_vselect(ln.valid[l], prob, (lc_v16){0});
                lc_vstore(p + 16 * l, prob);
                lc_vstore(ds + 16 * l, prob * (lc_vload(ds + 16 * l) - lc_vbroadcast(row_delta)));
            }
        }
        /* dv += P^T dout, dk += dS^T (scale q) */
        full_gemm(w->dv_acc, dp, w->scores, 1, FULL_TILE_K, w->dout_tile, dp, key_rows, rows, dp, 1);
        full_gemm(w->dk_acc, dp, w->dscores, 1, FULL_TILE_K, w->q_tile, dp, key_rows, rows, dp, 1);
    }
    full_store_key_grads(t, g, w, b, h, s0, n_k);
}

/* The inverted plan of head h: start[kb] .. start[kb+1] indexes list; cursor: n scratch ints. */
static void bb_invert_plan(const bb_layout *L, int h, int *start, int *cursor, int *list, int *rnd) {
    for (int kb = 0; kb <= L->n; kb++) start[kb] = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int qb = L->sb0; qb < L->sb1; qb++) {
            bb_random_blocks(L, h, qb, rnd);
            for (int j = 0; j < L->r; j++) {
                const int kb = rnd[j];
                if (kb < 0 || kb >= L->n) continue;
                if (pass == 0)
                    start[kb + 1]++;
                else
                    list[cursor[kb]++] = qb;
            }
        }
        if (pass == 0) {
            for (int kb = 0; kb < L->n; kb++) start[kb + 1] += start[kb];
            for (int kb = 0; kb < L->n; kb++) cursor[kb] = start[kb];
        }
    }
}

/* One task of a pass: its thread's tiles and scratch, its batch row, head and tile. Tasks go out tile by
 * tile, all heads of a tile together: the window and global blocks are the same for every head, so each
 * [H*D] row fetched from memory serves every head while it is in cache. Every output row is computed by
 * one task in a fixed order: the results do not depend on the order. */
typedef struct {
    full_tiles w;
    bb_scratch sc;
    int b, h;
    bb_tile tl;
} bb_task;

static bb_task bb_task_at(float *base, const full_geometry *g, const bb_layout *L, long task) {
    float *mine = bb_thread_base(base, g, L, lc_thread_id());
    const long heads = (long)g->B * g->H, head = task % heads;
    bb_task k;
    k.w = full_tiles_for_thread(mine, g, 0);
    k.sc = bb_scratch_at(mine + g->thread_floats, L);
    k.b = (int)(head / g->H), k.h = (int)(head % g->H);
    k.tl = bb_tile_at(L, (int)(task / heads));
    return k;
}

/* Forward, or backward: Delta, the inverted plans (which query blocks drew each key block, per head),
 * then pass 0 (dk, dv per key tile) and pass 1 (dq per query tile). */
static void bb_run(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work, const int *plan,
                   int backward) {
    bb_check_args(s, t, opts);
    if (s->B == 0 || s->H == 0 || s->T == 0) return;
    const bb_layout L = bb_layout_of(s, opts, t->seed, plan);
    const full_geometry g = bb_geometry(s);
    const int nthreads = lc_attn_threads(s);
    (void)nthreads;
    float *base = full_workspace_base(work);
    const long tasks = (long)s->B * s->H * L.tiles;
    if (!backward) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
        for (long task = 0; task < tasks; task++) {
            bb_task k = bb_task_at(base, &g, &L, task);
            bb_forward_tile(&L, &g, t, k.b, k.h, &k.tl, &k.w, &k.sc);
        }
        return;
    }
    float *delta = bb_thread_base(base, &g, &L, nthreads);
    int *inv = (int *)(void *)(delta + lc_round16((size_t)s->B * s->H * s->T));
    int *inv_start = inv, *inv_cursor = inv + (size_t)s->H * (L.n + 1), *inv_list = inv_cursor + (size_t)s->H * L.n;
    full_compute_delta(&g, t, delta, nthreads);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
    for (int h = 0; h < s->H; h++) {
        bb_scratch sc = bb_scratch_at(bb_thread_base(base, &g, &L, lc_thread_id()) + g.thread_floats, &L);
        bb_invert_plan(&L, h, inv_start + (size_t)h * (L.n + 1), inv_cursor + (size_t)h * L.n,
                       inv_list + (size_t)h * L.n * L.r, sc.rnd);
    }
    for (int pass = 0; pass < 2; pass++) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
        for (long task = 0; task < tasks; task++) {
            bb_task k = bb_task_at(base, &g, &L, task);
            if (pass == 0)
                bb_key_grads_tile(&L, &g, t, delta, k.b, k.h, &k.tl, inv_start + (size_t)k.h * (L.n + 1),
                                  inv_list + (size_t)k.h * L.n * L.r, &k.w, &k.sc);
            else
                bb_query_grads_tile(&L, &g, t, delta, k.b, k.h, &k.tl, &k.w, &k.sc);
        }
    }
}

void lc_attn_bigbird_forward_plan(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work,
                                  const int *plan) {
    bb_run(s, opts, t, work, plan, 0);
}

void lc_attn_bigbird_backward_plan(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work,
                                   const int *plan) {
    bb_run(s, opts, t, work, plan, 1);
}

void lc_attn_bigbird_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    lc_attn_bigbird_backward_plan(s, opts, t, work, NULL);
}
