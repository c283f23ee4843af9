/* The thread count of OpenMP loops; OpenBLAS is kept serial (lc_gemm splits products between the OpenMP
 * threads), so one pool of threads serves the whole program. Works (single-threaded) without OpenMP. */
#include "core/threads.h"

#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef LC_USE_OPENBLAS
void openblas_set_num_threads(int n);
#endif

static int lc_threads = 1;

void lc_set_threads(int n) {
    if (n <= 0) {
        long p = sysconf(_SC_NPROCESSORS_ONLN);
        n = p > 0 ? (int)p : 1;
    }
#ifdef _OPENMP
    omp_set_num_threads(n);
    lc_threads = n;
#else
    lc_threads = 1;
#endif
#ifdef LC_USE_OPENBLAS
    openblas_set_num_threads(1); /* lc_gemm gives each OpenMP thread its own serial BLAS call */
#endif
}

int lc_get_threads(void) { return lc_threads; }

int lc_thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
