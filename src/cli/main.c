/* longctx command-line entry point: dispatches to the commands (train, eval, sample, bench, listops, predict,
 * hibert, summarize, export, plot, attn-map). */
#include <stdio.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/cli.h"

int lc_cmd_listops(int argc, char **argv); /* cmd_listops.c */

static void usage(FILE *f) {
    fputs("usage: longctx COMMAND [options]\n\n"
          "Train and run long-context byte-level Transformers on a CPU.\n\n"
          "commands:\n"
          "  train    train a model on a byte corpus (default: data/tinyshakespeare.txt)\n"
          "  eval     bits per byte of a checkpoint on a corpus split; --task summarize: ROUGE of\n"
          "           extractive baselines (lead3, leadk, lexrank, oracle) on BBC News Summary\n"
          "  sample   generate text from a checkpoint\n"
          "  bench    benchmarks: train (training tokens/s), xl-eval (XL state reuse), attn (attention\n"
          "           kinds against length), hibert (HIBERT bytes/s), gemm (fp32 vs bf16 products)\n"
          "  listops  write a split of Long Range Arena's ListOps task (docs/guides/classify.md)\n"
          "  predict  the label a classifier (train --task classify) gives each input line\n"
          "  hibert   HIBERT (docs/guides/summarize.md): pretrain (masked sentences) or finetune (extractive summaries)\n"
          "  summarize  extractive summaries of text files: a fine-tuned HIBERT checkpoint, LexRank or lead-k\n"
          "  export   a checkpoint's weights without its optimizer state (a third of the size)\n"
          "  plot     training loss and validation curves of --log files, as an SVG\n"
          "  attn-map the attention weights of one layer and head of a model over a text, as an SVG\n\n"
          "`longctx COMMAND --help` lists a command's options; `longctx --version` prints the version.\n",
          f);
}

int main(int argc, char **argv) {
    lc_cli_wait_policy(argv);
    if (argc < 2) {
        usage(stderr);
        return LC_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return LC_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        /* the library's version and the kernels' code path (a portable build chooses it by CPUID) */
        printf("longctx %s (kernels: %s)\n", lc_version(), lc_cpu_path());
        return LC_EXIT_OK;
    }
    if (strcmp(cmd, "train") == 0) return lc_cmd_train(argc - 2, argv + 2);
    if (strcmp(cmd, "eval") == 0) return lc_cmd_eval(argc - 2, argv + 2);
    if (strcmp(cmd, "sample") == 0) return lc_cmd_sample(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0) return lc_cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "listops") == 0) return lc_cmd_listops(argc - 2, argv + 2);
    if (strcmp(cmd, "predict") == 0) return lc_cmd_predict(argc - 2, argv + 2);
    if (strcmp(cmd, "hibert") == 0) return lc_cmd_hibert(argc - 2, argv + 2);
    if (strcmp(cmd, "summarize") == 0) return lc_cmd_summarize(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0) return lc_cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "plot") == 0) return lc_cmd_plot(argc - 2, argv + 2);
    if (strcmp(cmd, "attn-map") == 0) return lc_cmd_attn_map(argc - 2, argv + 2);
    lc_cli_error("unknown command '%s' (commands: train, eval, sample, bench, listops, predict, hibert, summarize, export, plot, attn-map)",
                 cmd);
    return LC_EXIT_USAGE;
}
