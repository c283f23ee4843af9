/* Which data file a command reads when --data is not given: the bundled corpus (data/tinyshakespeare.txt
 * under the working directory, else the copy `make install` puts in LC_DATADIR, compiled in by the
 * Makefile), or the file a checkpoint records (eval, train --resume), checked against its record. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#ifndef LC_DATADIR
#define LC_DATADIR "/usr/local/share/longctx"
#endif

#define BUNDLED "tinyshakespeare.txt"

static int readable_file(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode) && access(path, R_OK) == 0;
}

const char *lc_cli_default_data(const char *cmd) {
    static const char here[] = "data/" BUNDLED, installed[] = LC_DATADIR "/" BUNDLED;
    if (readable_file(here)) return here;
    if (readable_file(installed)) return installed;
    lc_cli_error("%s: no --data given, and the bundled corpus is neither at ./%s nor at %s: pass --data FILE", cmd,
                 here, installed);
    return NULL;
}

int lc_cli_load_recorded(const char *cmd, const char *ckpt, const lc_data_record *rec, lc_corpus *c) {
    lc_status st = lc_corpus_load(rec->path, (lc_split_mode)rec->split, c);
    if (st) {
        const char *why = lc_last_error();
        const size_t n = strlen(rec->path);
        if (strncmp(why, rec->path, n) == 0 && strncmp(why + n, ": ", 2) == 0) why += n + 2; /* the path once */
        lc_cli_error("%s: %s, the data %s was trained on, cannot be read (%s): give --data FILE", cmd, rec->path, ckpt,
                     why);
        return LC_EXIT_RUNTIME;
    }
    if ((long)c->size == rec->size && lc_data_hash(c->bytes, c->size) == rec->hash) return -1;
    lc_cli_error("%s: %s, the data %s was trained on, has changed (%zu bytes now, %ld recorded, or other contents): "
                 "give --data FILE to use it anyway", cmd, rec->path, ckpt, c->size, rec->size);
    lc_corpus_free(c);
    return LC_EXIT_RUNTIME;
}
