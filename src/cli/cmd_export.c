/* `longctx export --ckpt IN --out OUT [--json]`: a copy of a checkpoint of any kind without its AdamW
 * moments (lc_checkpoint_export), for sharing and inference; reports what it wrote. */
#include <stdio.h>

#include "cli/cli.h"
#include "core/files.h"

int lc_cmd_export(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int json = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &in, 0, 0, "required: the checkpoint to export (language model, classifier, HIBERT or seq2seq)", 0},
        {"--out", OPT_STR, &out, 0, 0, "required: the file to write (may be --ckpt itself: replaced atomically)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print a JSON line of what was written on stdout", 0},
    };
    const int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("export", "--ckpt IN --out OUT [--json]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!in || !out) {
        lc_cli_error("export: %s is required (usage: longctx export --ckpt IN --out OUT)", in ? "--out" : "--ckpt");
        return LC_EXIT_USAGE;
    }
    lc_export_info info;
    lc_file_clean_up_on_signals(); /* SIGTERM mid-write: no temporary file left behind */
    lc_status st = lc_checkpoint_export(in, out, &info);
    if (st) return lc_cli_fail(st);
    if (json)
        printf("{\"tensors\":%d,\"dropped\":%d,\"bytes_in\":%lld,\"bytes_out\":%lld}\n", info.tensors, info.dropped,
               info.bytes_in, info.bytes_out);
    else
        printf("%s: %d tensors, %.1f MB (from %s: %.1f MB; %d optimizer tensors left out)\n", out, info.tensors,
               (double)info.bytes_out / 1e6, in, (double)info.bytes_in / 1e6, info.dropped);
    return LC_EXIT_OK;
}
