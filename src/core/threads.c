/* The thread count of OpenMP loops; OpenBLAS is kept serial (lc_gemm splits products between the OpenMP
 * threads), so one pool of threads serves the whole program. Works (single-threaded) without OpenMP.
 * A model keeps its own count in its compute plan and applies it at every pass (src/models/lm/lm.c).
 * The default is the cores the process may actually use: its CPU affinity mask, and no more than a
 * cgroup CPU limit allows (a container limited to 2 CPUs on a 64-core host would otherwise start 64
 * threads that the limit throttles in turn, the collapse of issue 13). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/threads.h"

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

static int lc_threads; /* 0: not set yet (lc_get_threads answers lc_threads_available()) */

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
