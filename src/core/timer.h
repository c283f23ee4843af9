/* Monotonic wall-clock time for progress reports and benchmarks. */
#ifndef LC_CORE_TIMER_H
#define LC_CORE_TIMER_H

#include <time.h>

static inline double lc_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
