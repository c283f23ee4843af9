/* How long the CLI's idle OpenMP threads spin before they sleep (issue 13: training on a busy machine).
 *
 * GNU libgomp lets a thread that waits at a barrier, or for the next parallel region, spin for
 * GOMP_SPINCOUNT iterations (300,000 by default: milliseconds on these CPUs) before it sleeps on a futex.
 * On an idle machine that saves the wake-up latency; on a busy one the spinning thread burns the time
 * slice its descheduled partner needs, and a 2-thread step took longer than a 1-thread one. A short spin
 * (LC_GOMP_SPINCOUNT) keeps the idle-machine speed and lets waiting threads give their core away
 * (experiments/busy-machine/README.md).
 *
 * libgomp reads the setting once, in its constructor, before main() runs, and the C library rebuilds the
 * environment after an executable's .preinit_array, so the only way in is the environment the process
 * starts with: when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (a user's own setting wins), the CLI
 * sets GOMP_SPINCOUNT and executes itself again, once (the variable is then set). If that exec fails, the
 * command runs on with libgomp's default. The library itself never does this (a library must not change
 * its host's environment); docs/results/speed.md gives library users the setting. Tools that follow a process
 * but not its exec (valgrind without --trace-children=yes) need the variable set beforehand. */
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

#ifndef LC_GOMP_SPINCOUNT
#define LC_GOMP_SPINCOUNT "10000"
#endif

void lc_cli_wait_policy(char **argv) {
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", LC_GOMP_SPINCOUNT, 0) != 0) return;
    /* The executable's own path, not /proc/self/exe: the process name (comm, what ps -c, pgrep and top
     * show) is the name exec was given, so the link would rename every run "exe". */
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        execv(self, argv);
    }
    execv("/proc/self/exe", argv); /* returns only on failure: run on as we are */
#else
    (void)argv; /* not libgomp: nothing to set */
#endif
}
