/* Stopping a training command on SIGINT / SIGTERM / SIGHUP / SIGUSR1 (train, hibert): the handler only sets a flag, which the
 * command reads after each step (then saves and exits 128 + N); a second signal ends the process at once
 * (the last saved checkpoint is whole: saves are atomic). Also when a periodic save is due. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/timer.h"
#include "train/dist.h"

static volatile sig_atomic_t stop_signal;
static int stop_says; /* whether this process prints the line (process 0 of several under mpirun) */

static void on_stop_signal(int sig) {
    if (stop_signal) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
    static const char msg[] = "\nlongctx: stopping after this step and saving (signal again to stop at once)\n";
    ssize_t ignored = stop_says ? write(2, msg, sizeof msg - 1) : 0;
    (void)ignored;
}

void lc_cli_catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    stop_says = lc_dist_rank() == 0;
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);  /* a closed terminal or ssh session: save as for SIGTERM */
    sigaction(SIGUSR1, &sa, NULL); /* what mpirun forwards to every process (docs/guides/distributed.md) */
}

int lc_cli_stop_signal(void) { return stop_signal; }

const char *lc_cli_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : sig == SIGUSR1 ? "SIGUSR1"
                                                                                                  : "a signal";
}

int lc_cli_save_due(long save_every, float save_every_min, long step, double last_save_s) {
    return (save_every > 0 && step % save_every == 0) ||
           (save_every_min > 0 && lc_now_seconds() - last_save_s >= 60.0 * save_every_min);
}
