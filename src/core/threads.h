/* Thread counts: the cores a process may use, the count a new model takes, and the count of the parallel
 * regions a thread opens (the BLAS library is kept serial: see src/kernels/gemm.c). There is no process-wide
 * count that passes read: each model keeps its own (its compute plan) and binds it to the calling thread at
 * the start of every pass, so two models with different counts run side by side in two threads. */
#ifndef LC_CORE_THREADS_H
#define LC_CORE_THREADS_H

/* The cores this process may run on: its CPU affinity mask, at most its cgroup CPU limit (v2 cpu.max or
 * v1 cfs quota / period, rounded up to whole cores); 1 without OpenMP. */
int lc_threads_available(void);
/* Whole cores a cgroup v2 cpu.max line allows ("QUOTA PERIOD", rounded up); 0 for "max" (no limit) or a
 * line that does not parse. */
int lc_threads_from_cpu_max(const char *text);
/* The count a model created from now on takes for its compute plan (the CLI's --threads; a model changes
 * its own with lc_model_set_threads and the families' set_threads): n <= 0 means lc_threads_available()
 * (the start value). Only constructors read it, never a pass. Safe to call from any thread. */
void lc_threads_set_default(int n);
/* That default, capped at lc_threads_available(). */
int lc_threads_default(void);
/* The parallel regions the calling thread opens from now on (outside a region) run with n threads (n <= 0:
 * lc_threads_available()): OpenMP's nthreads-var, which belongs to the calling thread; the BLAS library stays serial. Other
 * threads keep their own counts. Every pass of a model starts with lc_threads_use(its count). */
void lc_threads_use(int n);
/* The BLAS library (OpenBLAS) runs single-threaded from the first call on, in every thread (lc_gemm gives
 * each OpenMP thread its own serial BLAS call); every call returns after that is done. */
void lc_threads_blas_serial(void);
/* The count the calling thread's next parallel region runs with (1 without OpenMP). */
int lc_threads_current(void);
/* Index of the calling thread inside a parallel region (0 outside one). */
int lc_thread_id(void);

/* Chunk sizes of the dynamic schedules of the elementwise and per-row loops: on a shared machine the
 * scheduler pauses a thread for milliseconds at a time, and with a static split its half of the loop waits
 * for it while the other thread idles at the barrier; with chunks handed out one at a time the running
 * thread takes the rest. Small enough that a paused thread holds up one chunk (~10 us of work), large
 * enough that taking one (an atomic add) costs nothing. The values never depend on the split. */
#define LC_CHUNK_FLOATS 8192 /* elements of a flat elementwise loop */
#define LC_CHUNK_ROWS 16     /* rows of a per-row loop (layer norm, softmax, embedding rows) */

#endif
