/* Thread plans: every model runs its passes with its own thread count, whatever other models (in other
 * threads, or before it on the same thread) run with; two models with different counts trained at once in
 * two threads give the bits each gives alone; attention kinds register safely from several threads at
 * once; gemm's benchmark accounting counts only the calling thread's products. */
#include <pthread.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attn/attn.h"
#include "core/threads.h"
#include "harness.h"
#include "kernels/kernels.h"
#include "longctx.h"
#include "longctx/flat.h"

/* ---------------------------------------------------------------- a probing kind */

/* "probe" is the full kind, recording the size of a team opened without a count (as the elementwise and
 * per-row loops of a pass open theirs) each time a model's forward reaches it, per calling thread. */
static _Thread_local int probe_min, probe_max;

static void probe_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work) {
    int team = 1;
#ifdef _OPENMP
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
#endif
    probe_min = probe_min && probe_min < team ? probe_min : team;
    probe_max = probe_max > team ? probe_max : team;
    lc_attn_full.forward(s, opts, t, work);
}

static lc_attn_kind probe_kind;

static void register_probe(void) {
    static int done;
    if (done) return;
    probe_kind = lc_attn_full;
    probe_kind.name = "probe";
    probe_kind.forward = probe_forward;
    probe_kind.caps &= ~(unsigned)(LC_ATTN_CAP_DECODE | LC_ATTN_CAP_PANELS); /* every forward through it */
    done = lc_attn_kind_register(&probe_kind) == 0;
}

/* ---------------------------------------------------------------- models and their runs */

enum { STEPS = 3, B = 2, T = 32 };

typedef struct {
    const char *attn;
    int model; /* LC_MODEL_XL or LC_MODEL_VANILLA */
    int threads;
    uint64_t seed;
    /* results */
    double loss[STEPS];
    float *params;
    size_t n_params;
    int planned, team_min, team_max;
    lc_status st;
} run;

static lc_status model_for(const run *r, lc_model **m) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.model = r->model, c.seq_len = T, c.n_head = 2, c.d_model = 32, c.d_ff = 64, c.n_layer = 2;
    if (r->model == LC_MODEL_XL) c.mem_len = T;
    snprintf(c.attn, sizeof c.attn, "%s", r->attn);
    lc_status st = lc_model_create(&c, B, r->seed, m);
    if (!st) st = lc_model_set_threads(*m, r->threads);
    return st;
}

/* STEPS training steps on fixed bytes; fills r's results. */
static void *train_run(void *arg) {
    run *r = arg;
    probe_min = probe_max = 0;
    lc_model *m = NULL;
    r->st = model_for(r, &m);
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 100, o.warmup = 0;
    int tok[B * T], tgt[B * T];
    for (int s = 0; !r->st && s < STEPS; s++) {
        for (int i = 0; i < B * T; i++)
            tok[i] = (int)((r->seed * 31 + (uint64_t)(s * 97 + i * 13)) % 256), tgt[i] = (i * 53 + s * 7 + 5) % 256;
        r->st = lc_train_step(m, &o, tok, tgt, B, T, &r->loss[s]);
    }
    if (!r->st) { /* every tensor's values, one after another */
        r->planned = lc_model_threads(m);
        for (int i = 0; i < lc_model_tensor_count(m); i++) {
            int ndim = 0;
            long shape[2] = {1, 1};
            lc_model_tensor_info(m, i, NULL, &ndim, shape, NULL);
            const size_t n = (size_t)shape[0] * (ndim == 2 ? (size_t)shape[1] : 1);
            float *grown = realloc(r->params, (r->n_params + n) * sizeof(float));
            if (!grown) break;
            r->params = grown;
            memcpy(r->params + r->n_params, lc_model_tensor_data(m, i, LC_TENSOR_VALUE), n * sizeof(float));
            r->n_params += n;
        }
    }
    r->team_min = probe_min, r->team_max = probe_max;
    lc_model_free(m);
    return NULL;
}

static void check_run(const run *r, const char *what) {
    CHECK(r->st == LC_OK, "%s (%s, %d threads): %s", what, r->attn, r->threads, lc_last_error());
    CHECK(r->planned == r->threads, "%s: planned for %d threads, asked %d", what, r->planned, r->threads);
    CHECK(r->team_min == r->threads && r->team_max == r->threads, "%s (%s): the pass ran teams of %d..%d threads, "
          "its model has %d", what, r->attn, r->team_min, r->team_max, r->threads);
}

static void check_same(const run *alone, const run *together, const char *what) {
    CHECK(memcmp(alone->loss, together->loss, sizeof alone->loss) == 0, "%s: losses %.17g %.17g %.17g alone, "
          "%.17g %.17g %.17g together", what, alone->loss[0], alone->loss[1], alone->loss[2], together->loss[0],
          together->loss[1], together->loss[2]);
    CHECK(alone->params && together->params && alone->n_params == together->n_params &&
              memcmp(alone->params, together->params, alone->n_params * sizeof(float)) == 0,
          "%s: parameters after %d steps differ", what, STEPS);
}

static int two_threads(void) { return lc_threads_available() >= 2 ? 2 : 1; }

/* A model's pass runs its loops with the model's count on any thread: after a 1-thread model ran on this
 * thread, a fresh thread runs a 1-thread model and a model with every core, alternately. (A process-wide
 * count skipped setting a thread's count when the last model anywhere had the same one, and that thread's
 * loops ran with all cores.) */
TEST(a_pass_runs_with_its_models_count_on_any_thread) {
    register_probe();
    run first = {"probe", LC_MODEL_VANILLA, 1, 5, {0}, NULL, 0, 0, 0, 0, 0};
    train_run(&first);
    check_run(&first, "first model");
    run later[4] = {{"probe", LC_MODEL_VANILLA, 1, 6, {0}, NULL, 0, 0, 0, 0, 0},
                    {"probe", LC_MODEL_XL, two_threads(), 7, {0}, NULL, 0, 0, 0, 0, 0},
                    {"probe", LC_MODEL_VANILLA, 1, 6, {0}, NULL, 0, 0, 0, 0, 0},
                    {"probe", LC_MODEL_XL, two_threads(), 7, {0}, NULL, 0, 0, 0, 0, 0}};
    for (int i = 0; i < 4; i++) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, train_run, &later[i]) == 0, "pthread_create");
        pthread_join(th, NULL);
        char what[48];
        snprintf(what, sizeof what, "model %d on a new thread", i);
        check_run(&later[i], what);
    }
    check_same(&later[0], &later[2], "the 1-thread model twice");
    check_same(&later[1], &later[3], "the many-thread model twice");
    free(first.params);
    for (int i = 0; i < 4; i++) free(later[i].params);
}

/* Two models with different thread counts (and kinds) train at once in two threads and give the bits each
 * gives alone; meanwhile the default for new models changes, which neither sees. */
TEST(two_models_at_once_match_their_runs_alone) {
    register_probe();
    const char *kinds[2][2] = {{"probe", "probe"}, {"window:w=8", "bigbird:b=8,r=1"}};
    for (int k = 0; k < 2; k++) {
        run alone[2] = {{kinds[k][0], LC_MODEL_VANILLA, 1, 11, {0}, NULL, 0, 0, 0, 0, 0},
                        {kinds[k][1], LC_MODEL_XL, two_threads(), 12, {0}, NULL, 0, 0, 0, 0, 0}};
        if (k == 1) alone[1].model = LC_MODEL_VANILLA; /* bigbird has no memory rows */
        run together[2] = {alone[0], alone[1]};
        for (int i = 0; i < 2; i++) {
            train_run(&alone[i]);
            if (strstr(alone[i].attn, "probe")) check_run(&alone[i], "alone");
        }
        pthread_t th[2];
        for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, train_run, &together[i]) == 0, "pthread_create");
        for (int i = 0; i < 8; i++) lc_threads_set_default(i % 3); /* behind both models' backs */
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        lc_threads_set_default(0);
        for (int i = 0; i < 2; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s with %d thread(s) together", together[i].attn, together[i].threads);
            if (strstr(together[i].attn, "probe")) check_run(&together[i], what);
            else CHECK(together[i].st == LC_OK, "%s: %s", what, lc_last_error());
            check_same(&alone[i], &together[i], what);
            free(alone[i].params), free(together[i].params);
        }
    }
}

/* ---------------------------------------------------------------- registration */

enum { REG_THREADS = 6, REG_ROUNDS = 4 };
static lc_attn_kind own_rows[REG_ROUNDS][REG_THREADS], shared_rows[REG_ROUNDS][REG_THREADS];
static char own_names[REG_ROUNDS][REG_THREADS][32], shared_names[REG_ROUNDS][32];
static pthread_barrier_t reg_barrier;

typedef struct {
    int id, own_ok[REG_ROUNDS], shared_ok[REG_ROUNDS], lookups_ok;
} reg_result;

/* Each round: every thread registers a kind of its own and tries the round's shared name (one row per
 * thread, all named alike), then finds every row registered so far. */
static void *register_many(void *arg) {
    reg_result *r = arg;
    r->lookups_ok = 1;
    for (int round = 0; round < REG_ROUNDS; round++) {
        pthread_barrier_wait(&reg_barrier);
        r->own_ok[round] = lc_attn_kind_register(&own_rows[round][r->id]) == 0;
        r->shared_ok[round] = lc_attn_kind_register(&shared_rows[round][r->id]) == 0;
        for (int i = 0; i < lc_attn_kind_count(); i++)
            if (!lc_attn_kind_at(i) || lc_attn_kind_by_name(lc_attn_kind_at(i)->name) != lc_attn_kind_at(i))
                r->lookups_ok = 0;
        if (lc_attn_kind_by_name(own_names[round][r->id]) != &own_rows[round][r->id]) r->lookups_ok = 0;
    }
    return NULL;
}

TEST(kinds_register_safely_from_many_threads) {
    const int before = lc_attn_kind_count();
    for (int round = 0; round < REG_ROUNDS; round++) {
        snprintf(shared_names[round], sizeof shared_names[round], "shared%d", round);
        for (int t = 0; t < REG_THREADS; t++) {
            snprintf(own_names[round][t], sizeof own_names[round][t], "own%d_%d", round, t);
            own_rows[round][t] = shared_rows[round][t] = lc_attn_full;
            own_rows[round][t].name = own_names[round][t];
            shared_rows[round][t].name = shared_names[round];
        }
    }
    pthread_barrier_init(&reg_barrier, NULL, REG_THREADS);
    pthread_t th[REG_THREADS];
    reg_result res[REG_THREADS];
    for (int t = 0; t < REG_THREADS; t++) {
        memset(&res[t], 0, sizeof res[t]);
        res[t].id = t;
        CHECK(pthread_create(&th[t], NULL, register_many, &res[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < REG_THREADS; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&reg_barrier);
    for (int round = 0; round < REG_ROUNDS; round++) {
        int winners = 0;
        for (int t = 0; t < REG_THREADS; t++) {
            winners += res[t].shared_ok[round];
            CHECK(res[t].own_ok[round], "round %d thread %d: its own kind was refused", round, t);
        }
        CHECK(winners == 1, "round %d: '%s' registered %d times", round, shared_names[round], winners);
    }
    for (int t = 0; t < REG_THREADS; t++) CHECK(res[t].lookups_ok, "thread %d saw a row it could not find", t);
    const int want = before + REG_ROUNDS * (REG_THREADS + 1);
    CHECK(lc_attn_kind_count() == want, "%d kinds, want %d", lc_attn_kind_count(), want);
    for (int round = 0; round < REG_ROUNDS; round++)
        for (int t = 0; t < REG_THREADS; t++)
            CHECK(lc_attn_kind_by_name(own_names[round][t]) == &own_rows[round][t], "%s is not found",
                  own_names[round][t]);
}

/* ---------------------------------------------------------------- gemm accounting */

enum { GM = 64, GN = 48, GK = 40 };

static void *gemms_elsewhere(void *arg) {
    float *buf = arg; /* A, B, C of one product */
    for (int i = 0; i < 50; i++)
        lc_gemm(LC_NO_TRANS, LC_TRANS, GM, GN, GK, 1.0f, buf, GK, buf + GM * GK, GK, 0.0f, buf + (GM + GN) * GK, GN);
    return NULL;
}

/* A benchmark's totals hold its own thread's products only: another thread's products at the same time
 * add nothing. */
TEST(gemm_accounting_counts_the_calling_threads_products) {
    const size_t floats = (size_t)(GM + GN) * GK + (size_t)GM * GN;
    float *mine = calloc(floats, sizeof(float)), *theirs = calloc(floats, sizeof(float));
    lc_gemm_profile(1);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, gemms_elsewhere, theirs) == 0, "pthread_create");
    for (int i = 0; i < 3; i++)
        lc_gemm(LC_NO_TRANS, LC_TRANS, GM, GN, GK, 1.0f, mine, GK, mine + GM * GK, GK, 0.0f, mine + (GM + GN) * GK, GN);
    pthread_join(th, NULL);
    double flops = 0, seconds = 0;
    lc_gemm_profile_totals(&flops, &seconds);
    lc_gemm_profile(0);
    CHECK(flops == 3 * 2.0 * GM * GN * GK, "%.0f flops counted, this thread's products are %.0f", flops,
          3 * 2.0 * GM * GN * GK);
    CHECK(seconds >= 0, "%g seconds", seconds);
    free(mine), free(theirs);
}

int main(void) {
    RUN(a_pass_runs_with_its_models_count_on_any_thread);
    RUN(two_models_at_once_match_their_runs_alone);
    RUN(kinds_register_safely_from_many_threads);
    RUN(gemm_accounting_counts_the_calling_threads_products);
    return test_summary("test_thread_plans");
}
