/* Monotonic wall-clock time for progress reports and benchmarks, and the process's CPU time (all threads)
 * for benchmarks that compare the CPU a step burns with the wall time it takes. */
#ifndef LC_CORE_TIMER_H
#define LC_CORE_TIMER_H

#include <time.h>

static inline double lc_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double lc_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
