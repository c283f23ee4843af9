/* The `lsh` attention kind (lsh.h): Reformer's shared-QK attention over hashed, sorted, chunked rows.
 *
 * Both passes start with the same preparation (lsh_prepare, one function so that forward and backward
 * get bit-identical buckets): per row the inverse key norm n_p = 1/sqrt(|q_p|^2 + D eps) and per round
 * the bucket (projection on the round's rotation, argmax over [qR ; -qR]); then per (batch, head, round)
 * a counting sort of the positions by bucket (stable, so ties stay in position order) into perm.
 *
 * The work is done chunk by chunk: a task gathers the rows of one chunk of one round (and of its
 * neighbour chunks) into padded per-thread tiles, the keys as K_s = scale n_s q_s (the normalised keys
 * are never stored), and multiplies tiles with the register-blocked product of full_tile.h. Key lists
 * are ordered own chunk first, then the previous chunk.
 *
 * Forward: rounds one after another; within a round each chunk is a task: S = Q K^T over its (at most
 * 2c) keys, masks (causal: -inf; own key: -1e5), row softmax, O = P V, and an online log-sum-exp merge
 * of the round into out and lse of each position:
 *   L' = logaddexp(L, lse_r),  out' = out exp(L - L') + out_r exp(lse_r - L').
 * Each position occurs once per round, so no two tasks of a round write the same row.
 *
 * Backward: the combination is one softmax over the (round, key) lists with log-sum-exp L, so with
 * P = exp(z - L), Delta_t = dout_t . out_t and dS = P (dout_t . v_s - Delta_t):
 *   query path  dq_t += sum_s dS K_s
 *   key path    dk_s  = scale sum_t dS q_t,  dq_s += n_s dk_s - n_s^3 (q_s . dk_s) q_s   (normalisation)
 *   values      dv_s += sum_t P dout_t
 * Round by round, the task of chunk k takes (a) its queries against their keys (own and previous
 * chunk): dq of its rows, and dk, dv of its own keys from the own block; (b) the next chunk's queries
 * (the first after the last) against its own keys: the rest of dk, dv. It then adds dq and dv of its
 * rows. No atomics; the rounds are summed in order, so results do not depend on the thread count. A
 * query's own key has the constant logit -1e5: it takes no gradient, and its weight is 1/hashes exactly
 * for rows that saw only themselves in every round (recognised by lse < LC_ATTN_LSH_SELF_ONLY_BELOW). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/full_tile.h"
#include "attn/lsh.h"
#include "attn/vec.h"
#include "core/rng.h"
#include "core/threads.h"
#include "kernels/fastmath.h"

/* ---------------------------------------------------------------- options */

static void lsh_opts_init(void *opts, int H) {
    lc_attn_lsh_opts *o = opts;
    memset(o, 0, sizeof *o);
    o->buckets = 32, o->hashes = 2, o->chunk = 64, o->seed = 0;
    (void)H;
}

static int lsh_opts_set(void *opts, int H, const char *key, const char *value, char *err, size_t errlen) {
    lc_attn_lsh_opts *o = opts;
    (void)H;
    if (strcmp(key, "buckets") == 0) {
        if (lc_attn_opt_int(key, value, 2, 1 << 16, &o->buckets, err, errlen)) return -1;
        if (o->buckets % 2) return snprintf(err, errlen, "option buckets=%s: must be even", value), -1;
        return 0;
    }
    if (strcmp(key, "hashes") == 0) return lc_attn_opt_int(key, value, 1, LC_ATTN_LSH_MAX_HASHES, &o->hashes, err, errlen);
    if (strcmp(key, "chunk") == 0) return lc_attn_opt_int(key, value, 1, 1 << 24, &o->chunk, err, errlen);
    if (strcmp(key, "seed") == 0) return lc_attn_opt_int(key, value, 0, 2147483647L, &o->seed, err, errlen);
    return lc_attn_opt_unknown(&lc_attn_lsh, key, err, errlen);
}

static int lsh_check(const lc_attn_shape *s, const void *opts, const lc_attn_global *global, char *err,
                     size_t errlen) {
    const lc_attn_lsh_opts *o = opts;
    if (o->buckets < 2 || o->buckets % 2)
        return snprintf(err, errlen, "lsh: buckets=%d must be even and >= 2", o->buckets), -1;
    if (o->hashes < 1 || o->hashes > LC_ATTN_LSH_MAX_HASHES)
        return snprintf(err, errlen, "lsh: hashes=%d must be in [1, %d]", o->hashes, LC_ATTN_LSH_MAX_HASHES), -1;
    if (o->chunk < 1) return snprintf(err, errlen, "lsh: chunk=%d must be >= 1", o->chunk), -1;
    if (o->seed < 0) return snprintf(err, errlen, "lsh: seed=%d must be >= 0", o->seed), -1;
    return 0;
}

const lc_attn_kind lc_attn_lsh = {
    .name = "lsh",
    .options_help = "buckets=<even, default 32> hashes=<rounds 1..8, default 2> chunk=<rows, default 64> "
                    "seed=<offset, default 0>",
    /* no memory: shared-QK hashing has no recurrence */
    .caps = LC_ATTN_CAP_CAUSAL | LC_ATTN_CAP_BIDIRECTIONAL,
    .opts_size = sizeof(lc_attn_lsh_opts),
    .opts_init = lsh_opts_init,
    .opts_set = lsh_opts_set,
    .check = lsh_check,
    .workspace_floats = lc_attn_lsh_workspace,
    .forward = lc_attn_lsh_forward,
    .backward = lc_attn_lsh_backward,
};

/* ---------------------------------------------------------------- rotations */

size_t lc_attn_lsh_rotation_floats(const lc_attn_lsh_opts *o, int H, int D) {
    return (size_t)o->hashes * (size_t)H * (size_t)D * (size_t)(o->buckets / 2);
}

void lc_attn_lsh_rotations(const lc_attn_lsh_opts *o, int H, int D, uint64_t seed, float *rot) {
    const long per = (long)D * (o->buckets / 2), blocks = (long)o->hashes * H;
    const uint64_t base = lc_seed_mix(seed, 0x4c534800000000ULL + (uint64_t)(uint32_t)o->seed);
    for (long k = 0; k < blocks; k++) {
        const long r = k / H, h = k % H;
        const uint64_t stream = lc_seed_mix(base, ((uint64_t)r << 32) | (uint64_t)h);
        float *out = rot + k * per;
        for (long i = 0; i < per; i++) {
            const double u1 = lc_hash_uniform(stream, 2 * (uint64_t)i), u2 = lc_hash_uniform(stream, 2 * (uint64_t)i + 1);
            out[i] = (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2));
        }
    }
}


/* ---------------------------------------------------------------- plan and workspace */

static int round4(int n) { return (n + 3) / 4 * 4; }

/* Tile sizes of one thread: queries per chunk (c4 rows), keys per query (k16 columns), D16 columns. */
typedef struct {
    int c4, k16, D16;
    size_t qd, kd, dk, ck, stat, per_thread;
} lsh_sizes;

static lsh_sizes sizes_of(const lc_attn_shape *s, const lc_attn_lsh_opts *o) {
    lsh_sizes z;
    const int T = s->T > 1 ? s->T : 1;
    const int cq = o->chunk < T ? o->chunk : T;
    const long kk = 2L * o->chunk < T ? 2L * o->chunk : T;
    z.c4 = round4(cq), z.k16 = (int)lc_round16((size_t)kk), z.D16 = (int)lc_round16((size_t)s->D);
    z.qd = (size_t)z.c4 * z.D16;     /* a chunk's rows */
    z.kd = (size_t)z.k16 * z.D16;    /* key rows */
    z.dk = (size_t)s->D * z.k16;     /* transposed keys or values */
    z.ck = (size_t)z.c4 * z.k16;     /* scores */
    z.stat = lc_round16((size_t)z.c4);  /* one float or int per query row */
    /* 7 row tiles (own q, dout; next q, dout; three accumulators), key rows, two transposed tiles, two
     * score tiles, 4 row statistics, 2 query and 1 key position lists, projections, bucket counts */
    z.per_thread = 7 * z.qd + z.kd + 2 * z.dk + 2 * z.ck + 6 * z.stat + (size_t)z.k16 +
                   lc_round16((size_t)o->buckets / 2) + lc_round16((size_t)o->buckets);
    return z;
}

/* Offsets (floats) of the workspace parts; `total` is the size. */
typedef struct {
    size_t rot, inv, delta, bucket, perm, threads, total;
} lsh_layout;

static lsh_layout layout_of(const lc_attn_shape *s, const lc_attn_lsh_opts *o, int nthreads) {
    lsh_layout L;
    const size_t rows = (size_t)s->B * s->H * s->T;
    L.rot = 0;
    L.inv = L.rot + lc_round16(lc_attn_lsh_rotation_floats(o, s->H, s->D));
    L.delta = L.inv + lc_round16(rows);
    L.bucket = L.delta + lc_round16(rows);
    L.perm = L.bucket + lc_round16(rows * (size_t)o->hashes);
    L.threads = L.perm + lc_round16(rows * (size_t)o->hashes);
    L.total = L.threads + (size_t)(nthreads < 1 ? 1 : nthreads) * sizes_of(s, o).per_thread;
    return L;
}

size_t lc_attn_lsh_workspace(const lc_attn_shape *s, const void *opts) {
    const int nthreads = lc_attn_threads(s);
    return layout_of(s, opts, nthreads).total;
}

typedef struct {
    int B, H, T, D, causal, nb, half, nh, c, nc;
    int nthreads; /* of the shape: the per-thread scratch is laid out for this many */
    float scale;
    lsh_sizes z;
    float *inv_norm, *delta, *threads;
    int32_t *bucket, *perm;
} lsh_plan;

static lsh_plan plan_of(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t, float *work) {
    assert(o && o->buckets >= 2 && o->buckets % 2 == 0 && o->hashes >= 1 && o->chunk >= 1);
    assert(s->M == 0 && s->window == 0 && t->rel == NULL && t->global == NULL && s->D > 0);
    assert(s->B >= 0 && s->H >= 0 && s->T >= 0);
    lsh_plan g;
    memset(&g, 0, sizeof g);
    g.B = s->B, g.H = s->H, g.T = s->T, g.D = s->D, g.causal = s->causal;
    g.nb = o->buckets, g.half = o->buckets / 2, g.nh = o->hashes, g.c = o->chunk;
    g.nc = (int)(((long)s->T + o->chunk - 1) / o->chunk);
    g.scale = s->scale;
    g.nthreads = lc_attn_threads(s);
    g.z = sizes_of(s, o);
    const lsh_layout L = layout_of(s, o, lc_attn_threads(s));
    g.inv_norm = work + L.inv, g.delta = work + L.delta, g.threads = work + L.threads;
    g.bucket = (int32_t *)(void *)(work + L.bucket), g.perm = (int32_t *)(void *)(work + L.perm);
    return g;
}

/* One thread's tiles. */
typedef struct {
    float *q, *dout, *qn, *doutn, *acc_q, *acc_k, *acc_v; /* [c4][D16] */
    float *krows;                                          /* [k16][D16]: keys (backward) or values (forward) */
    float *kt, *vt;                                        /* [D][k16] */
    float *s, *ds;                                         /* [c4][k16] */
    float *lse, *delta, *lse_n, *delta_n;                  /* [c4] */
    int32_t *pos, *pos_n, *pos_k;                          /* [c4], [c4], [k16] */
    float *proj;
    int32_t *counts;
} lsh_tiles;

static lsh_tiles tiles_of(const lsh_plan *g) {
    const lsh_sizes *z = &g->z;
    float *p = g->threads + (size_t)lc_thread_id() * z->per_thread;
    lsh_tiles w;
    float **rowt[7] = {&w.q, &w.dout, &w.qn, &w.doutn, &w.acc_q, &w.acc_k, &w.acc_v};
    for (int i = 0; i < 7; i++) *rowt[i] = p, p += z->qd;
    w.krows = p, p += z->kd;
    w.kt = p, p += z->dk;
    w.vt = p, p += z->dk;
    w.s = p, p += z->ck;
    w.ds = p, p += z->ck;
    w.lse = p, p += z->stat;
    w.delta = p, p += z->stat;
    w.lse_n = p, p += z->stat;
    w.delta_n = p, p += z->stat;
    w.pos = (int32_t *)(void *)p, p += z->stat;
    w.pos_n = (int32_t *)(void *)p, p += z->stat;
    w.pos_k = (int32_t *)(void *)p, p += z->k16;
    w.proj = p, p += lc_round16((size_t)g->half);
    w.counts = (int32_t *)(void *)p;
    return w;
}

/* Row r of the (batch, head) pair bh = b H + h. */
static inline float *row_of(const lc_view *v, long bh, int H, int r, int D) {
    return lc_view_row(v, (int)(bh / H), r, (int)(bh % H), D);
}

/* ---------------------------------------------------------------- hashing and sorting */

/* Inverse norms, buckets and the sorted order of every (batch, head, round). Not inlined: forward,
 * backward and lc_attn_lsh_buckets run this very code, so they agree on every bucket bit for bit. */
static __attribute__((noinline)) void lsh_prepare(const lsh_plan *g, const lc_attn_tensors *t, const float *rot) {
    const long rows = (long)g->B * g->H * g->T, sorts = (long)g->B * g->H * g->nh;
    const int T = g->T, D = g->D, half = g->half, nh = g->nh;
    const int nthreads = g->nthreads;
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
#endif
    {
        const lsh_tiles w = tiles_of(g);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long i = 0; i < rows; i++) {
            const long bh = i / T;
            const int p = (int)(i % T), h = (int)(bh % g->H);
            const float *q = row_of(&t->q, bh, g->H, p, D);
            g->inv_norm[i] = 1.0f / sqrtf(lc_vdot(q, q, D) + (float)D * LC_ATTN_LSH_NORM_EPS);
            for (int r = 0; r < nh; r++) {
                const float *R = rot + ((size_t)r * g->H + h) * (size_t)D * half;
                /* proj[j] = sum over d in order of q[d] R[d][j], 16 columns at a time in a register */
                int j0 = 0;
                for (; j0 + 16 <= half; j0 += 16) {
                    lc_v16 acc = {0};
                    for (int d = 0; d < D; d++) acc += lc_vbroadcast(q[d]) * lc_vload(R + (size_t)d * half + j0);
                    lc_vstore(w.proj + j0, acc);
                }
                for (int j = j0; j < half; j++) {
                    float acc = 0;
                    for (int d = 0; d < D; d++) acc += q[d] * R[(size_t)d * half + j];
                    w.proj[j] = acc;
                }
                int best = 0;
                float top = w.proj[0];
                for (int j = 1; j < half; j++)
                    if (w.proj[j] > top) top = w.proj[j], best = j;
                for (int j = 0; j < half; j++)
                    if (-w.proj[j] > top) top = -w.proj[j], best = half + j;
                g->bucket[((size_t)bh * nh + r) * T + p] = best;
            }
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long k = 0; k < sorts; k++) {
            const int32_t *bk = g->bucket + (size_t)k * T;
            int32_t *perm = g->perm + (size_t)k * T;
            memset(w.counts, 0, sizeof(int32_t) * (size_t)g->nb);
            for (int p = 0; p < T; p++) w.counts[bk[p]]++;
            int32_t start = 0;
            for (int j = 0; j < g->nb; j++) {
                const int32_t n = w.counts[j];
                w.counts[j] = start;
                start += n;
            }
            for (int p = 0; p < T; p++) perm[w.counts[bk[p]]++] = p;
        }
    }
}

/* ---------------------------------------------------------------- gathering chunks into tiles */

/* Chunk k of a round: sorted indices [*lo, *lo + return value). */
static inline int chunk_rows(const lsh_plan *g, int k, int *lo) {
    *lo = k * g->c;
    return (*lo + g->c < g->T ? *lo + g->c : g->T) - *lo;
}

/* dst rows i < n: row perm[lo + i] of v (zero-padded to D16 columns); rows n .. n4 zero. */
static void gather(float *dst, const lsh_plan *g, const lc_view *v, long bh, const int32_t *perm, int lo, int n, int n4) {
    const int D = g->D, D16 = g->z.D16;
    for (int i = 0; i < n; i++) {
        memcpy(dst + (size_t)i * D16, row_of(v, bh, g->H, perm[lo + i], D), sizeof(float) * (size_t)D);
        memset(dst + (size_t)i * D16 + D, 0, sizeof(float) * (size_t)(D16 - D));
    }
    memset(dst + (size_t)n * D16, 0, sizeof(float) * (size_t)(n4 - n) * D16);
}

/* The key list of chunk k: own chunk, then the previous one (none with a single chunk). Fills pos_k
 * and returns the count; *n_own gets the own chunk's size. */
static int key_list(const lsh_plan *g, const int32_t *perm, int k, int32_t *pos_k, int *n_own) {
    int lo, n = chunk_rows(g, k, &lo);
    for (int i = 0; i < n; i++) pos_k[i] = perm[lo + i];
    *n_own = n;
    if (g->nc > 1) {
        int lo_p;
        const int np = chunk_rows(g, k == 0 ? g->nc - 1 : k - 1, &lo_p);
        for (int i = 0; i < np; i++) pos_k[n + i] = perm[lo_p + i];
        n += np;
    }
    return n;
}

/* kt[d][j] = K_j[d] = scale n_j q_j[d] for j < nk, zero up to n16; with krows, also the rows of K. */
static void gather_keys(const lsh_plan *g, const lc_attn_tensors *t, long bh, const int32_t *pos_k, int nk,
                        float *kt, float *krows) {
    const int D = g->D, D16 = g->z.D16, k16 = g->z.k16, n16 = (int)lc_round16((size_t)nk);
    const float *inv = g->inv_norm + (size_t)bh * g->T;
    for (int j = 0; j < nk; j++) {
        const float *q = row_of(&t->q, bh, g->H, pos_k[j], D);
        const float m = g->scale * inv[pos_k[j]];
        for (int d = 0; d < D; d++) kt[(size_t)d * k16 + j] = m * q[d];
        if (krows) {
            for (int d = 0; d < D; d++) krows[(size_t)j * D16 + d] = m * q[d];
            for (int d = D; d < D16; d++) krows[(size_t)j * D16 + d] = 0;
        }
    }
    for (int d = 0; d < D; d++)
        for (int j = nk; j < n16; j++) kt[(size_t)d * k16 + j] = 0;
}

/* vt[d][j] = v_j[d] for j < nk, zero up to n16. */
static void gather_values_t(const lsh_plan *g, const lc_attn_tensors *t, long bh, const int32_t *pos_k, int nk,
                            float *vt) {
    const int D = g->D, k16 = g->z.k16, n16 = (int)lc_round16((size_t)nk);
    for (int j = 0; j < nk; j++) {
        const float *v = row_of(&t->v, bh, g->H, pos_k[j], D);
        for (int d = 0; d < D; d++) vt[(size_t)d * k16 + j] = v[d];
    }
    for (int d = 0; d < D; d++)
        for (int j = nk; j < n16; j++) vt[(size_t)d * k16 + j] = 0;
}

/* Chunk k of round r of (batch x head) bh as both passes start it: the thread's tiles w, the round's sorted
 * order perm, the chunk's nq queries (from lo in perm; rows4 = nq rounded up to 4) gathered into w.q, and its
 * nk keys in w.pos_k (the own chunk's first: key i is query i for i < nq; n16 = nk rounded up to 16). */
typedef struct {
    lsh_tiles w;
    const int32_t *perm;
    int lo, nq, rows4, nk, n16;
} lsh_chunk;

static lsh_chunk chunk_begin(const lsh_plan *g, const lc_attn_tensors *t, long bh, int r, int k) {
    lsh_chunk c;
    int n_own;
    c.perm = g->perm + ((size_t)bh * g->nh + r) * g->T;
    c.w = tiles_of(g);
    c.nq = chunk_rows(g, k, &c.lo), c.rows4 = round4(c.nq);
    c.nk = key_list(g, c.perm, k, c.w.pos_k, &n_own), c.n16 = (int)lc_round16((size_t)c.nk);
    gather(c.w.q, g, &t->q, bh, c.perm, c.lo, c.nq, c.rows4);
    return c;
}

/* ---------------------------------------------------------------- forward */

static void forward_chunk(const lsh_plan *g, const lc_attn_tensors *t, long bh, int r, int k) {
    const int D = g->D, D16 = g->z.D16, k16 = g->z.k16;
    const lsh_chunk c = chunk_begin(g, t, bh, r, k);
    lsh_tiles w = c.w;
    const int nq = c.nq, rows4 = c.rows4, nk = c.nk, n16 = c.n16;
    gather(w.krows, g, &t->v, bh, w.pos_k, 0, nk, nk); /* the values, in key order */
    gather_keys(g, t, bh, w.pos_k, nk, w.kt, NULL);
    full_gemm(w.s, k16, w.q, D16, 1, w.kt, k16, rows4, D, n16, 0); /* S = Q K^T */
    for (int i = 0; i < nq; i++) {
        const int p = w.pos_k[i]; /* own keys come first: key i is query i */
        float *row = w.s + (size_t)i * k16;
        float max = -INFINITY;
        for (int j = 0; j < nk; j++) {
            const int pk = w.pos_k[j];
            const float z = g->causal && pk > p ? -INFINITY : pk == p ? LC_ATTN_LSH_SELF_LOGIT : row[j];
            row[j] = z;
            max = z > max ? z : max;
        }
        for (int j = 0; j < nk; j++) row[j] = lc_expf(row[j] - max);
        float sum = 0;
        for (int j = 0; j < nk; j++) sum += row[j];
        w.lse[i] = max + logf(sum); /* the own key is always there: sum >= 1 */
        w.delta[i] = 1.0f / sum;
    }
    for (int i = nq; i < rows4; i++) memset(w.s + (size_t)i * k16, 0, sizeof(float) * (size_t)nk);
    full_gemm(w.acc_q, D16, w.s, k16, 1, w.krows, D16, rows4, nk, D16, 0); /* O = P V */
    for (int i = 0; i < nq; i++) {
        const int p = w.pos_k[i];
        const size_t li = (size_t)bh * g->T + p;
        const float *o = w.acc_q + (size_t)i * D16, lse_r = w.lse[i];
        float *out = row_of(&t->out, bh, g->H, p, D);
        if (r == 0) {
            for (int e = 0; e < D; e++) out[e] = o[e] * w.delta[i];
            t->lse[li] = lse_r;
        } else {
            const float L = t->lse[li], m = L > lse_r ? L : lse_r;
            const float a = expf(L - m), b = expf(lse_r - m), tot = a + b;
            const float wa = a / tot, wb = b * w.delta[i] / tot;
            for (int e = 0; e < D; e++) out[e] = wa * out[e] + wb * o[e];
            t->lse[li] = m + logf(tot);
        }
    }
}

/* What forward, backward and the bucket query start with: the plan over work, then the buckets and their
 * sort (lsh_prepare). Returns 0 when there are no rows (nothing to do). */
static int lsh_begin(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t, const float *rot,
                     float *work, lsh_plan *g) {
    *g = plan_of(s, o, t, work);
    if ((long)g->B * g->H * g->T == 0) return 0;
    lsh_prepare(g, t, rot);
    return 1;
}

typedef void lsh_chunk_fn(const lsh_plan *g, const lc_attn_tensors *t, long bh, int r, int k);

/* Runs chunk() on every (batch x head, chunk) task of each round, the rounds in order (the tasks of a round
 * write disjoint rows; round r adds to what round r-1 wrote). Inlined, so the call is direct. */
static inline __attribute__((always_inline)) void lsh_rounds(const lsh_plan *g, const lc_attn_tensors *t,
                                                             int nthreads, lsh_chunk_fn *chunk) {
    const long tasks = (long)g->B * g->H * g->nc;
    (void)nthreads;
    for (int r = 0; r < g->nh; r++) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
#endif
        for (long i = 0; i < tasks; i++) chunk(g, t, i / g->nc, r, (int)(i % g->nc));
    }
}

void lc_attn_lsh_forward_with(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                              const float *rot, float *work) {
    lsh_plan g;
    if (!lsh_begin(s, o, t, rot, work, &g)) return;
    lsh_rounds(&g, t, lc_attn_threads(s), forward_chunk);
}

/* ---------------------------------------------------------------- backward */

/* Probabilities and score gradients of a score tile in place: s <- P, ds <- dS for rows i < nq (query
 * positions qpos, row statistics lse, delta) and key columns j < nk (positions kpos); columns nk .. n16
 * and rows nq .. rows4 zero. ds holds dout . v on entry. */
static void probs_and_dscores(const lsh_plan *g, float *s, float *ds, int nq, int rows4, const int32_t *qpos,
                              const float *lse, const float *delta, int nk, int n16, const int32_t *kpos) {
    const int k16 = g->z.k16;
    const float self_only = 1.0f / (float)g->nh;
    for (int i = 0; i < nq; i++) {
        const int p = qpos[i];
        const float L = lse[i], dl = delta[i];
        float *prow = s + (size_t)i * k16, *drow = ds + (size_t)i * k16;
        for (int j = 0; j < nk; j++) {
            const int pk = kpos[j];
            float prob, dz;
            if (g->causal && pk > p) {
                prob = 0, dz = 0;
            } else if (pk == p) { /* constant logit: no score gradient */
                prob = L < LC_ATTN_LSH_SELF_ONLY_BELOW ? self_only : lc_expf(LC_ATTN_LSH_SELF_LOGIT - L);
                dz = 0;
            } else {
                prob = lc_expf(prow[j] - L);
                dz = prob * (drow[j] - dl);
            }
            prow[j] = prob, drow[j] = dz;
        }
        for (int j = nk; j < n16; j++) prow[j] = 0, drow[j] = 0;
    }
    for (int i = nq; i < rows4; i++) {
        memset(s + (size_t)i * k16, 0, sizeof(float) * (size_t)n16);
        memset(ds + (size_t)i * k16, 0, sizeof(float) * (size_t)n16);
    }
}

static void gather_stats(const lsh_plan *g, const lc_attn_tensors *t, long bh, const int32_t *pos, int n, float *lse,
                         float *delta) {
    for (int i = 0; i < n; i++) {
        const size_t li = (size_t)bh * g->T + pos[i];
        lse[i] = t->lse[li], delta[i] = g->delta[li];
    }
}

static void backward_chunk(const lsh_plan *g, const lc_attn_tensors *t, long bh, int r, int k) {
    const int D = g->D, D16 = g->z.D16, k16 = g->z.k16;
    const lsh_chunk c = chunk_begin(g, t, bh, r, k);
    lsh_tiles w = c.w;
    const int32_t *perm = c.perm;
    const int nq = c.nq, rows4 = c.rows4, nk = c.nk, n16 = c.n16;
    const int *pos = w.pos_k; /* the own chunk's positions: the first nq keys */
    gather(w.dout, g, &t->dout, bh, perm, c.lo, nq, rows4);
    gather_stats(g, t, bh, pos, nq, w.lse, w.delta);
    gather_keys(g, t, bh, w.pos_k, nk, w.kt, w.krows);
    gather_values_t(g, t, bh, w.pos_k, nk, w.vt);

    /* (a) the chunk's queries against their keys */
    full_gemm(w.s, k16, w.q, D16, 1, w.kt, k16, rows4, D, n16, 0);     /* S = Q K^T */
    full_gemm(w.ds, k16, w.dout, D16, 1, w.vt, k16, rows4, D, n16, 0); /* dout V^T */
    probs_and_dscores(g, w.s, w.ds, nq, rows4, pos, w.lse, w.delta, nk, n16, w.pos_k);
    full_gemm(w.acc_q, D16, w.ds, k16, 1, w.krows, D16, rows4, nk, D16, 0); /* dq = dS K */
    /* own keys are columns 0 .. nq: dk = dS^T Q, dv = P^T dout (columns up to rows4 <= n16 are finite) */
    full_gemm(w.acc_k, D16, w.ds, 1, k16, w.q, D16, rows4, nq, D16, 0);
    full_gemm(w.acc_v, D16, w.s, 1, k16, w.dout, D16, rows4, nq, D16, 0);

    /* (b) the next chunk's queries against the own keys */
    if (g->nc > 1) {
        int lo_n;
        const int nn = chunk_rows(g, k == g->nc - 1 ? 0 : k + 1, &lo_n), nn4 = round4(nn), own16 = (int)lc_round16((size_t)nq);
        for (int i = 0; i < nn; i++) w.pos_n[i] = perm[lo_n + i];
        gather(w.qn, g, &t->q, bh, perm, lo_n, nn, nn4);
        gather(w.doutn, g, &t->dout, bh, perm, lo_n, nn, nn4);
        gather_stats(g, t, bh, w.pos_n, nn, w.lse_n, w.delta_n);
        full_gemm(w.s, k16, w.qn, D16, 1, w.kt, k16, nn4, D, own16, 0);
        full_gemm(w.ds, k16, w.doutn, D16, 1, w.vt, k16, nn4, D, own16, 0);
        probs_and_dscores(g, w.s, w.ds, nn, nn4, w.pos_n, w.lse_n, w.delta_n, nq, own16, pos);
        full_gemm(w.acc_k, D16, w.ds, 1, k16, w.qn, D16, rows4, nn, D16, 1);
        full_gemm(w.acc_v, D16, w.s, 1, k16, w.doutn, D16, rows4, nn, D16, 1);
    }

    /* write out: dq += dS K + J^T dk with dk = scale acc_k and J^T dk = n dk - n^3 (q . dk) q */
    const float *inv = g->inv_norm + (size_t)bh * g->T;
    for (int i = 0; i < nq; i++) {
        const int p = pos[i];
        const float *q = w.q + (size_t)i * D16, *aq = w.acc_q + (size_t)i * D16, *ak = w.acc_k + (size_t)i * D16;
        const float *av = w.acc_v + (size_t)i * D16;
        const float n = inv[p], kn = g->scale * n, qn = -n * n * n * g->scale * lc_vdot(q, ak, D);
        float *dq = row_of(&t->dq, bh, g->H, p, D), *dv = row_of(&t->dv, bh, g->H, p, D);
        if (r == 0) {
            for (int e = 0; e < D; e++) dq[e] = aq[e] + kn * ak[e] + qn * q[e], dv[e] = av[e];
        } else {
            for (int e = 0; e < D; e++) dq[e] += aq[e] + kn * ak[e] + qn * q[e], dv[e] += av[e];
        }
    }
}

void lc_attn_lsh_backward_with(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                               const float *rot, float *work) {
    lsh_plan g;
    if (!lsh_begin(s, o, t, rot, work, &g)) return;
    const long rows = (long)g.B * g.H * g.T;
    const int nthreads = lc_attn_threads(s);
    (void)nthreads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nthreads) schedule(static)
#endif
    for (long i = 0; i < rows; i++) {
        const long bh = i / g.T;
        const int p = (int)(i % g.T);
        const float *dout = row_of(&t->dout, bh, g.H, p, g.D), *out = row_of(&t->out, bh, g.H, p, g.D);
        double sum = 0;
        for (int e = 0; e < g.D; e++) sum += (double)dout[e] * out[e];
        g.delta[i] = (float)sum;
        if (t->dk.p) memset(row_of(&t->dk, bh, g.H, p, g.D), 0, sizeof(float) * (size_t)g.D);
    }
    lsh_rounds(&g, t, nthreads, backward_chunk);
}

/* ---------------------------------------------------------------- the kind's entry points */

void lc_attn_lsh_buckets(const lc_attn_shape *s, const lc_attn_lsh_opts *o, const lc_attn_tensors *t,
                         const float *rot, float *work, int *buckets) {
    lsh_plan g;
    if (!lsh_begin(s, o, t, rot, work, &g)) return;
    const size_t n = (size_t)g.B * g.H * g.nh * g.T;
    for (size_t i = 0; i < n; i++) buckets[i] = g.bucket[i];
}

void lc_attn_lsh_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_lsh_opts *o = opts;
    if ((long)s->B * s->H * s->T == 0) return;
    lc_attn_lsh_rotations(o, s->H, s->D, t->seed, work);
    lc_attn_lsh_forward_with(s, o, t, work, work);
}

void lc_attn_lsh_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    const lc_attn_lsh_opts *o = opts;
    if ((long)s->B * s->H * s->T == 0) return;
    lc_attn_lsh_rotations(o, s->H, s->D, t->seed, work);
    lc_attn_lsh_backward_with(s, o, t, work, work);
}
