/* `longctx sample`: generate text from a checkpoint. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/threads.h"

static void emit_byte(uint8_t b, void *user) {
    (void)user;
    putchar(b);
    fflush(stdout);
}

int lc_cmd_sample(int argc, char **argv) {
    const char *ckpt = NULL, *prompt = "";
    int tokens = 500, top_k = 0, threads = 0, seg_len = 0, mem_len = -1, clamp_len = -1, same_length = 0;
    float temperature = 0.8f;
    uint64_t seed = 1;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "checkpoint to sample from (required)", 0},
        {"--prompt", OPT_STR, &prompt, 0, 0, "text to continue (default: a newline)", 0},
        {"--tokens", OPT_INT, &tokens, 0, 1 << 24, "bytes to generate (default 500)", 0},
        {"--temperature", OPT_FLOAT, &temperature, 0, 100, "softmax temperature; 0 = greedy (default 0.8)", 0},
        {"--top-k", OPT_INT, &top_k, 0, 256, "sample among the k most likely bytes (0: all)", 0},
        {"--seed", OPT_U64, &seed, 0, 0, "random seed, 0..2^64-1 (default 1)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--seg-len", OPT_INT, &seg_len, 1, 1 << 24, "segment for reading the prompt (vanilla: the context window)", 0},
        {"--mem-len", OPT_INT, &mem_len, 0, 1 << 24, "xl: memory rows per layer (default: as trained)", 0},
        {"--clamp-len", OPT_INT, &clamp_len, 0, 1 << 24, "xl: clamp relative distances (default: as trained)", 0},
        {"--same-length", OPT_FLAG, &same_length, 0, 0, "xl: every query sees exactly mem-len keys", 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = lc_parse_opts("sample", "--ckpt CKPT [options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt) { lc_cli_error("sample: --ckpt is required (see longctx sample --help)"); return LC_EXIT_USAGE; }
    lc_set_threads(threads);
    lc_model *m;
    lc_status st = lc_checkpoint_load(ckpt, 1, &m, NULL);
    if (st) return lc_cli_fail(st);
    if ((rc = lc_apply_runtime_lengths(m, "sample", 1, &seg_len, mem_len, clamp_len, same_length)) >= 0) {
        lc_model_free(m);
        return rc;
    }
    fputs(prompt, stdout);
    st = lc_sample(m, (const uint8_t *)prompt, strlen(prompt), tokens, temperature, top_k, seed, emit_byte,
                   NULL);
    putchar('\n');
    lc_model_free(m);
    return st ? lc_cli_fail(st) : LC_EXIT_OK;
}
