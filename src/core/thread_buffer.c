/* Per-thread scratch buffers (thread_buffer.h): a thread-local pointer per kind for the fast path, and a
 * pthread key per kind whose destructor frees the buffer when its thread exits. The main thread's buffers
 * stay reachable through its thread-local pointers until the process ends. */
#include "core/thread_buffer.h"

#include <pthread.h>

#include "core/table.h"

static pthread_key_t lc_buffer_keys[LC_THREAD_BUFFER_KINDS];
static pthread_once_t lc_buffer_keys_once = PTHREAD_ONCE_INIT;
static int lc_buffer_keys_made;

static void lc_make_buffer_keys(void) {
    int made = 1;
    for (int k = 0; k < LC_THREAD_BUFFER_KINDS; k++) made &= pthread_key_create(&lc_buffer_keys[k], lc_free) == 0;
    lc_buffer_keys_made = made;
}

void *lc_thread_buffer(lc_thread_buffer_kind kind, size_t bytes) {
    static _Thread_local void *buffers[LC_THREAD_BUFFER_KINDS];
    static _Thread_local size_t sizes[LC_THREAD_BUFFER_KINDS];
    if (buffers[kind] && sizes[kind] >= bytes) return buffers[kind];
    pthread_once(&lc_buffer_keys_once, lc_make_buffer_keys);
    lc_free(buffers[kind]);
    buffers[kind] = lc_alloc_aligned(bytes);
    sizes[kind] = buffers[kind] ? bytes : 0;
    if (lc_buffer_keys_made) pthread_setspecific(lc_buffer_keys[kind], buffers[kind]);
    return buffers[kind];
}
