/* Training progress on stderr: a live bar on a terminal, one line per ~5% of the run otherwise; and the
 * --log FILE of the training commands, one JSON line per step. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

void lc_progress_init(lc_progress_printer *p, long steps) {
    p->tty = isatty(2);
    p->every = steps >= 20 ? steps / 20 : 1;
    p->last_printed = -1;
    p->tokens_per_s = 0;
    p->bits = 1;
}

static void format_eta(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 1e7) snprintf(buf, n, "?");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

void lc_progress_print(const lc_progress *pr, void *user) {
    lc_progress_printer *p = user;
    p->tokens_per_s = pr->tokens_per_s;
    int has_valid = !isnan(pr->valid_bpc);
    int last = pr->step == pr->steps;
    if (!p->tty && !has_valid && !last && pr->step % p->every) return;
    char eta[32];
    long done = pr->step - pr->start_step;
    format_eta(eta, sizeof eta, done > 0 ? pr->elapsed_s / (double)done * (double)(pr->steps - pr->step) : -1);
    int width = 24, filled = pr->steps ? (int)(width * pr->step / pr->steps) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "%s[%s] step %ld/%ld | loss %.4f", p->tty ? "\r" : "", bar, pr->step, pr->steps, pr->loss);
    if (p->bits) fprintf(stderr, " | bpc %.3f", pr->loss / log(2.0));
    fprintf(stderr, " | lr %.2e | %.0f tok/s | ETA %s", pr->lr, pr->tokens_per_s, eta);
    if (has_valid) fprintf(stderr, " | valid bpc %.4f", pr->valid_bpc);
    if (has_valid && !isnan(pr->valid_accuracy)) fprintf(stderr, " | masked acc %.3f", pr->valid_accuracy);
    if (!p->tty || has_valid) fputc('\n', stderr);
    fflush(stderr);
    p->last_printed = pr->step;
}

void lc_progress_done(lc_progress_printer *p) {
    if (p->tty && p->last_printed >= 0) fputc('\n', stderr);
}

int lc_train_log_open(lc_train_log *l, const char *cmd, const char *path, int append) {
    l->f = NULL, l->path = path;
    if (!path) return -1;
    if (!(l->f = fopen(path, append ? "a" : "w"))) {
        lc_cli_error("%s: --log %s: cannot open for writing: %s", cmd, path, strerror(errno));
        return LC_EXIT_RUNTIME;
    }
    return -1;
}

void lc_train_log_step(lc_train_log *l, const lc_progress *p, const char *extra) {
    if (!l->f) return;
    fprintf(l->f, "{\"step\":%ld,\"loss\":%s,\"lr\":%s,\"tokens_per_s\":%.1f,\"elapsed_s\":%.6f%s}\n", p->step,
            lc_json_g(p->loss), lc_json_g(p->lr), p->tokens_per_s, p->elapsed_s, extra);
    if (fflush(l->f) != 0 || ferror(l->f)) {
        fprintf(stderr, "longctx: warning: --log %s: write failed (%s): the log stops here (training goes on)\n",
                l->path, strerror(errno));
        fclose(l->f);
        l->f = NULL;
    }
}

void lc_train_log_close(lc_train_log *l) {
    if (l->f) fclose(l->f);
    l->f = NULL;
}
