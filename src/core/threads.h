/* Thread count for OpenMP loops (the BLAS library is kept serial: see src/kernels/gemm.c). */
#ifndef LC_CORE_THREADS_H
#define LC_CORE_THREADS_H

/* n <= 0 means: the number of online processors. */
void lc_set_threads(int n);
int lc_get_threads(void);
/* Index of the calling thread inside a parallel region (0 outside one). */
int lc_thread_id(void);

#endif
