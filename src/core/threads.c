/* The thread counts of OpenMP loops; OpenBLAS is kept serial (lc_gemm splits products between the OpenMP
 * threads), so one pool of threads serves the whole program. Works (single-threaded) without OpenMP.
 * A model keeps its own count in its compute plan and binds it to the calling thread at every pass
 * (lc_threads_use; src/models/lm/lm.c): OpenMP keeps that count per thread, so no pass sees another's.
 * The default is the cores the process may actually use: its CPU affinity mask, and no more than a
 * cgroup CPU limit allows (a container limited to 2 CPUs on a 64-core host would otherwise start 64
 * threads that the limit throttles in turn, the collapse of issue 13). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef LC_USE_OPENBLAS
void openblas_set_num_threads(int n);
#endif

static int lc_threads_for_new_models; /* 0: lc_threads_available() (atomic: any thread may set it) */

int lc_threads_from_cpu_max(const char *text) {
    long long quota, period;
    if (!text || sscanf(text, "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return 0;
    const long long n = (quota + period - 1) / period;
    return n < (1 << 20) ? (int)n : 0;
}

#ifdef _OPENMP
/* The cgroup CPU limit of this process, in whole cores: v2's /sys/fs/cgroup/PATH/cpu.max (PATH from
 * /proc/self/cgroup's "0::PATH"), else v1's cpu.cfs_quota_us / cpu.cfs_period_us; 0 when there is none
 * or it cannot be read. */
static int cgroup_cpu_limit(void) {
    char line[512], path[640] = "/sys/fs/cgroup/cpu.max", text[128];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "0::", 3) == 0) {
                line[strcspn(line, "\n")] = 0;
                snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", strcmp(line + 3, "/") ? line + 3 : "");
                break;
            }
        fclose(f);
    }
    f = fopen(path, "r");
    if (f) {
        const int n = fgets(text, sizeof text, f) ? lc_threads_from_cpu_max(text) : 0;
        fclose(f);
        return n;
    }
    /* cgroup v1 (as a container sees its own): cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us */
    long long quota = -1, period = 0;
    FILE *q = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r"), *p = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
    const int ok = q && p && fscanf(q, "%lld", &quota) == 1 && fscanf(p, "%lld", &period) == 1;
    if (q) fclose(q);
    if (p) fclose(p);
    if (!ok) return 0;
    snprintf(text, sizeof text, "%lld %lld", quota, period);
    return lc_threads_from_cpu_max(text);
}
#endif

int lc_threads_available(void) {
#ifdef _OPENMP
    int n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) {
        const long p = sysconf(_SC_NPROCESSORS_ONLN);
        n = p > 0 ? (int)p : 1;
    }
    /* the cgroup files are read once (models ask at every pass); -1: not read yet. Threads that race here
     * read the same files and store the same value. */
    static int limit_cached = -1;
    int limit = __atomic_load_n(&limit_cached, __ATOMIC_RELAXED);
    if (limit < 0) __atomic_store_n(&limit_cached, limit = cgroup_cpu_limit(), __ATOMIC_RELAXED);
    return limit > 0 && limit < n ? limit : n;
#else
    return 1;
#endif
}

void lc_threads_set_default(int n) { __atomic_store_n(&lc_threads_for_new_models, n > 0 ? n : 0, __ATOMIC_RELAXED); }

int lc_threads_default(void) {
    const int avail = lc_threads_available(), n = __atomic_load_n(&lc_threads_for_new_models, __ATOMIC_RELAXED);
    return n <= 0 || n > avail ? avail : n;
}

void lc_threads_use(int n) {
#ifdef _OPENMP
    if (omp_in_parallel()) return; /* a region's own count is its opener's */
    omp_set_num_threads(n > 0 ? n : lc_threads_available());
#else
    (void)n;
#endif
    lc_threads_blas_serial();
}

#ifdef LC_USE_OPENBLAS
static void blas_serial_once(void) { openblas_set_num_threads(1); }
#endif

void lc_threads_blas_serial(void) {
#ifdef LC_USE_OPENBLAS
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* callers wait until it is done */
    pthread_once(&once, blas_serial_once);
#endif
}

int lc_threads_current(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int lc_thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
