/* The one output check of every command that writes: an output (--out, its .last, --log, --loss-log) may
 * be neither an input file (compared by device and inode, so links and other names of it count) nor lie
 * inside an input directory tree (a document folder, a BBC root). Made before any work. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* Whether the directory holding path (resolved) is dir or lies below it. */
static int inside(const char *path, const struct stat *dir) {
    char *copy = strdup(path);
    if (!copy) return 0;
    char *slash = strrchr(copy, '/');
    if (!slash) strcpy(copy, ".");
    else if (slash == copy) slash[1] = 0;
    else *slash = 0;
    char *real = realpath(copy, NULL);
    free(copy);
    if (!real) return 0;
    int found = 0;
    for (;;) {
        struct stat st;
        if (stat(real, &st) == 0 && st.st_dev == dir->st_dev && st.st_ino == dir->st_ino) { found = 1; break; }
        char *up = strrchr(real, '/');
        if (!up || (up == real && !real[1])) break;
        if (up == real) up[1] = 0;
        else *up = 0;
    }
    free(real);
    return found;
}

int lc_cli_check_outputs(const char *cmd, const lc_cli_path *outs, int n_out, const lc_cli_path *ins, int n_in) {
    for (int o = 0; o < n_out; o++) {
        const char *out = outs[o].path;
        if (!out || !*out || strcmp(out, "-") == 0) continue;
        struct stat so;
        const int exists = stat(out, &so) == 0;
        for (int i = 0; i < n_in; i++) {
            struct stat si;
            if (!ins[i].path || stat(ins[i].path, &si) != 0) continue;
            if (exists && so.st_dev == si.st_dev && so.st_ino == si.st_ino) {
                lc_cli_error("%s: %s %s is the %s file %s: refusing to replace it", cmd, outs[o].flag, out, ins[i].flag,
                             ins[i].path);
                return LC_EXIT_USAGE;
            }
            if (S_ISDIR(si.st_mode) && inside(out, &si)) {
                lc_cli_error("%s: %s %s lies inside the %s directory %s: refusing to write into an input", cmd,
                             outs[o].flag, out, ins[i].flag, ins[i].path);
                return LC_EXIT_USAGE;
            }
        }
    }
    return -1;
}
