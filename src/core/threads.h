/* Thread count for OpenMP loops (the BLAS library is kept serial: see src/kernels/gemm.c). */
#ifndef LC_CORE_THREADS_H
#define LC_CORE_THREADS_H

/* The cores this process may run on (its CPU affinity mask); 1 without OpenMP. */
int lc_threads_available(void);
/* Sets the thread count of the following parallel regions; n <= 0 means lc_threads_available(). */
void lc_set_threads(int n);
/* The count last set (lc_threads_available() before any lc_set_threads). */
int lc_get_threads(void);
/* Index of the calling thread inside a parallel region (0 outside one). */
int lc_thread_id(void);

#endif
