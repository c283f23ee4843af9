/* Scratch buffers that belong to a thread: allocated on the thread's first use and freed when the thread
 * ends, for kernels that run inside OpenMP teams (the gemms' packing buffers). */
#ifndef LC_CORE_THREAD_BUFFER_H
#define LC_CORE_THREAD_BUFFER_H

#include <stddef.h>

typedef enum {
    LC_THREAD_BUFFER_GEMM,      /* lc_gemm_builtin's packing of A and B (src/kernels/gemm.c) */
    LC_THREAD_BUFFER_GEMM_BF16, /* lc_gemm_bf16's packing (src/kernels/gemm_bf16.c) */
    LC_THREAD_BUFFER_KINDS
} lc_thread_buffer_kind;

/* The calling thread's buffer of this kind, at least `bytes` long and 64-byte aligned (zeroed when
 * allocated; its contents are the caller's between calls). The same buffer for the thread's lifetime
 * unless a call asks for more than it holds (the builds of one kernel for two CPU paths pack different
 * sizes): then it is replaced by a larger one. Freed when the thread ends: OpenMP retires threads when
 * a team shrinks, and a thread-local pointer alone would lose the buffer. NULL when it cannot be
 * allocated; the next call tries again. */
void *lc_thread_buffer(lc_thread_buffer_kind kind, size_t bytes);

#endif
