/* The default thread count (src/core/threads.c): the cgroup v2 cpu.max parser, and the available count
 * against the process's CPU affinity mask; the chunked loops' results do not depend on the thread count
 * (tests/test_kernels.c and the attention tests check the kernels at 1 and 2 threads). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>

#include "core/threads.h"
#include "harness.h"

TEST(cpu_max_lines_parse_to_whole_cores) {
    CHECK(lc_threads_from_cpu_max("max 100000\n") == 0, "max: no limit");
    CHECK(lc_threads_from_cpu_max("200000 100000\n") == 2, "2 cores");
    CHECK(lc_threads_from_cpu_max("150000 100000") == 2, "1.5 cores round up to 2");
    CHECK(lc_threads_from_cpu_max("50000 100000") == 1, "half a core is 1");
    CHECK(lc_threads_from_cpu_max("") == 0 && lc_threads_from_cpu_max(NULL) == 0, "empty");
    CHECK(lc_threads_from_cpu_max("garbage") == 0 && lc_threads_from_cpu_max("100 0") == 0, "bad lines");
    CHECK(lc_threads_from_cpu_max("-1 100000") == 0, "negative quota");
}

TEST(available_threads_stay_within_the_affinity_mask) {
    const int n = lc_threads_available();
    CHECK(n >= 1, "%d threads available", n);
#ifdef _OPENMP
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) CHECK(n <= CPU_COUNT(&set), "%d > %d cores", n, CPU_COUNT(&set));
#endif
    lc_threads_set_default(0);
    CHECK(lc_threads_default() == n, "default %d, available %d", lc_threads_default(), n);
    lc_threads_set_default(n + 5);
    CHECK(lc_threads_default() == n, "default capped: %d, available %d", lc_threads_default(), n);
    lc_threads_set_default(0);
}

int main(void) {
    RUN(cpu_max_lines_parse_to_whole_cores);
    RUN(available_threads_stay_within_the_affinity_mask);
    return test_summary("test_threads");
}
