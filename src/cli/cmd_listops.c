/* `longctx listops`: writes a split of Long Range Arena's ListOps task (LRA's generator, experiments/lra-data/README.md) as
 * the TSV LRA writes, deterministic in the seed, and reports what it generated on stderr (or as JSON).
 * The generator's parameters (depth, arguments, the length window) default to LRA's; other values write
 * the shorter or shallower trees of a curriculum. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/files.h"
#include "core/timer.h"

int lc_cmd_listops(int argc, char **argv);

int lc_cmd_listops(int argc, char **argv) {
    long n = 0;
    uint64_t seed = 0;
    const char *out = NULL;
    int json = 0;
    lc_listops_options o;
    lc_listops_options_default(&o);
    lc_opt opts[] = {
        {"--n", OPT_LONG, &n, 1, (double)LC_LISTOPS_MAX_EXAMPLES,
         "required: sequences to write (LRA's splits: 96000 train, 2000 val, 2000 test)", 0},
        {"--seed", OPT_U64, &seed, 0, 0, "required: the generator's seed (the same seed writes the same file)", 0},
        {"--out", OPT_STR, &out, 0, 0, "required: the TSV file to write (- for standard output)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print a JSON line of statistics on stdout (with --out FILE)", 0},
        {"--max-depth", OPT_INT, &o.max_depth, -1e9, 1e9, "deepest node, the root at 1 (default 10, LRA's)", 0},
        {"--max-args", OPT_INT, &o.max_args, -1e9, 1e9, "most arguments of an operator (default 10, LRA's)", 0},
        {"--min-length", OPT_INT, &o.min_length, -1e9, 1e9, "keep trees longer than this (default 500, LRA's)", 0},
        {"--max-length", OPT_INT, &o.max_length, -1e9, 1e9, "keep trees shorter than this (default 2000, LRA's)", 0},
    };
    int nopt = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("listops", "--n N --seed S --out FILE [--json] [--max-depth D --max-args A --min-length L "
                                      "--max-length L]", opts, nopt, argc, argv);
    if (rc >= 0) return rc;
    const char *missing = !lc_opt_get(opts, nopt, "--n")->seen      ? "--n"
                          : !lc_opt_get(opts, nopt, "--seed")->seen ? "--seed"
                          : !out                                    ? "--out"
                                                                    : NULL;
    if (missing) {
        lc_cli_error("listops: %s is required (usage: longctx listops --n N --seed S --out FILE)", missing);
        return LC_EXIT_USAGE;
    }
    if (!out[0]) {
        lc_cli_error("listops: --out needs a file name");
        return LC_EXIT_USAGE;
    }
    int to_stdout = strcmp(out, "-") == 0;
    if (json && to_stdout) {
        lc_cli_error("listops: --json prints on stdout, so it needs --out FILE, not -");
        return LC_EXIT_USAGE;
    }
    lc_listops_summary s;
    lc_file_clean_up_on_signals(); /* SIGTERM mid-write: no temporary file left behind */
    double t0 = lc_now_seconds();
    lc_status st = lc_listops_write(out, n, seed, &o, &s);
    if (st) return lc_cli_fail(st);
    double secs = lc_now_seconds() - t0;
    if (json) {
        printf("{\"examples\":%ld,\"seed\":%llu,\"trees\":%ld,\"too_short\":%ld,\"too_long\":%ld,"
               "\"duplicates\":%ld,\"length_min\":%ld,\"length_mean\":%s,\"length_max\":%ld,\"depth_max\":%d,"
               "\"labels\":[",
               s.counts.kept, (unsigned long long)seed, s.counts.trees, s.counts.too_short, s.counts.too_long,
               s.counts.duplicates, s.length_min, lc_json_number(s.length_mean), s.length_max, s.depth_max);
        for (int v = 0; v < 10; v++) printf("%s%ld", v ? "," : "", s.labels[v]);
        printf("],\"ops\":{\"MIN\":%ld,\"MAX\":%ld,\"MED\":%ld,\"SM\":%ld},\"bytes\":%ld,\"seconds\":%s}\n",
               s.ops[LC_LISTOPS_MIN], s.ops[LC_LISTOPS_MAX], s.ops[LC_LISTOPS_MED], s.ops[LC_LISTOPS_SM], s.bytes,
               lc_json_number(secs));
    } else {
        fprintf(stderr,
                "listops: wrote %ld sequences to %s in %.1f s (seed %llu; %ld trees drawn: %ld too short, %ld too "
                "long, %ld duplicates); length %ld..%ld, mean %.1f; depth <= %d\n",
                s.counts.kept, to_stdout ? "standard output" : out, secs, (unsigned long long)seed, s.counts.trees,
                s.counts.too_short, s.counts.too_long, s.counts.duplicates, s.length_min, s.length_max, s.length_mean,
                s.depth_max);
    }
    return LC_EXIT_OK;
}
