/* Thread count for OpenMP loops (the BLAS library is kept serial: see src/kernels/gemm.c). */
#ifndef LC_CORE_THREADS_H
#define LC_CORE_THREADS_H

/* The cores this process may run on: its CPU affinity mask, at most its cgroup CPU limit (v2 cpu.max or
 * v1 cfs quota / period, rounded up to whole cores); 1 without OpenMP. */
int lc_threads_available(void);
/* Whole cores a cgroup v2 cpu.max line allows ("QUOTA PERIOD", rounded up); 0 for "max" (no limit) or a
 * line that does not parse. */
int lc_threads_from_cpu_max(const char *text);
/* Sets the thread count of the following parallel regions; n <= 0 means lc_threads_available(). */
void lc_set_threads(int n);
/* The count last set (lc_threads_available() before any lc_set_threads). */
int lc_get_threads(void);
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
