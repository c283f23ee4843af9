/* The gradient sum of data-parallel training (lc_dist_sum_floats, MPI_Allreduce in place): median time
 * over repeated calls for a range of buffer sizes, the default model's gradient among them, run under
 * `mpirun -np N` (one process without it). Prints one JSON object per size (process 0): seconds,
 * algorithm bandwidth (bytes / time) and bus bandwidth (x 2(N-1)/N, what a ring moves per process), the
 * numbers of docs/guides/distributed.md's scaling model.
 * usage: mpirun -np N bench_allreduce [--reps R] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"
#include "longctx.h"
#include "train/dist.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of reps sums of n floats; every process starts each call together (barrier). */
static double time_sum(float *x, size_t n, int reps) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t) lc_dist_abort(1);
    lc_dist_sum_floats(x, n); /* warm-up: connections, pages */
    for (int r = 0; r < reps; r++) {
        lc_dist_barrier();
        const double t0 = lc_now_seconds();
        lc_dist_sum_floats(x, n);
        t[r] = lc_now_seconds() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    long ns = (long)(t[reps / 2] * 1e9); /* the slowest process's median is the step's cost */
    lc_dist_max_longs(&ns, 1);
    free(t);
    return (double)ns * 1e-9;
}

int main(int argc, char **argv) {
    lc_dist_init(&argc, &argv);
    int reps = 30;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    if (reps < 1) reps = 1;
    lc_config cfg;
    lc_config_default(&cfg);
    lc_model *m = NULL;
    if (lc_model_create(&cfg, 1, 1, &m)) {
        fprintf(stderr, "bench_allreduce: %s\n", lc_last_error());
        lc_dist_abort(1);
    }
    const size_t grad = lc_model_num_params(m);
    lc_model_free(m);
    const size_t sizes[] = {256, 4096, 65536, 262144, grad, 4u << 20, 16u << 20};
    const int P = lc_dist_size();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const size_t n = sizes[i];
        float *x = malloc(sizeof(float) * n);
        if (!x) lc_dist_abort(1);
        for (size_t j = 0; j < n; j++) x[j] = (float)(j % 1000) * 1e-3f;
        const double s = time_sum(x, n, n > (4u << 20) ? (reps + 2) / 3 : reps);
        const double bytes = 4.0 * (double)n, alg = s > 0 ? bytes / s / 1e9 : 0;
        if (lc_dist_rank() == 0)
            printf("{\"bench\":\"allreduce\",\"backend\":\"%s\",\"processes\":%d,\"floats\":%zu,\"bytes\":%.0f,"
                   "\"default_model_gradient\":%s,\"median_s\":%.9f,\"algbw_GBps\":%.3f,\"busbw_GBps\":%.3f}\n",
                   lc_dist_backend(), P, n, bytes, n == grad ? "true" : "false", s, alg,
                   P > 1 ? alg * 2.0 * (P - 1) / P : 0.0);
        free(x);
    }
    lc_dist_finalize();
    return 0;
}
