/* The thread count of OpenMP loops; OpenBLAS is kept serial (lc_gemm splits products between the OpenMP
 * threads), so one pool of threads serves the whole program. Works (single-threaded) without OpenMP.
 * A model keeps its own count in its compute plan and applies it at every pass (src/model/lm.c). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/threads.h"

#include <sched.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef LC_USE_OPENBLAS
void openblas_set_num_threads(int n);
#endif

static int lc_threads; /* 0: not set yet (lc_get_threads answers lc_threads_available()) */

int lc_threads_available(void) {
#ifdef _OPENMP
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const long p = sysconf(_SC_NPROCESSORS_ONLN);
    return p > 0 ? (int)p : 1;
#else
    return 1;
#endif
}

void lc_set_threads(int n) {
    if (n <= 0) n = lc_threads_available();
#ifndef _OPENMP
    n = 1;
#endif
    if (n == lc_threads) return;
    lc_threads = n;
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
#ifdef LC_USE_OPENBLAS
    openblas_set_num_threads(1); /* lc_gemm gives each OpenMP thread its own serial BLAS call */
#endif
}

int lc_get_threads(void) { return lc_threads > 0 ? lc_threads : lc_threads_available(); }

int lc_thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
