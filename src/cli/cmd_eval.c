/* `longctx eval`: bits per byte of a checkpoint on a split of a byte corpus: --data, else the file the
 * checkpoint records (said on stderr), else the bundled corpus. */
#include <stdio.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/cli.h"
#include "cli/model_flags.h"
#include "core/threads.h"

int lc_cmd_eval(int argc, char **argv) {
    if (lc_cli_task_is(argc, argv, "summarize")) return lc_cmd_eval_summary(argc, argv);
    int rc = lc_cli_task_run("eval", "summarize, ", argc, argv); /* another family's evaluation */
    if (rc >= 0) return rc;
    const char *ckpt = NULL, *data = NULL, *split = "valid", *splits = "auto", *precision = NULL, *task = NULL;
    int seg_len = 0, batch = 8, threads = 0, json = 0, mem_len = -1, clamp_len = -1, same_length = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "checkpoint to evaluate (required)", 0},
        {"--data", OPT_STR, &data, 0, 0, "text read as bytes (default: the file the checkpoint records, else data/tinyshakespeare.txt)", 0},
        {"--split", OPT_STR, &split, 0, 0, "valid (default), test, train or all (the whole file)", 0},
        {"--splits", OPT_STR, &splits, 0, 0, "auto (default), enwik8 (90/5/5) or nanogpt (90/10)", 0},
        {"--seg-len", OPT_INT, &seg_len, 1, 1 << 24, "evaluation segment length (default: the model's)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "vanilla: segments per forward pass", 0},
        LC_XL_RUNTIME_FLAGS(mem_len, clamp_len, same_length),
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--precision", OPT_STR, &precision, 0, 0, "linear layers' products: fp32 or bf16 (default: the checkpoint's)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print {\"bpc\":..,\"tokens\":..} as the last stdout line", 0},
        {"--task", OPT_STR, &task, 0, 0, "summarize, or a model family: lm (default), classify, hibert or seq2seq (eval --task summarize|classify|hibert|seq2seq --help)", 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    rc = lc_parse_opts("eval", "--ckpt CKPT [options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt) { lc_cli_error("eval: --ckpt is required (see longctx eval --help)"); return LC_EXIT_USAGE; }
    lc_part part;
    if (strcmp(split, "valid") == 0) part = LC_PART_VALID;
    else if (strcmp(split, "test") == 0) part = LC_PART_TEST;
    else if (strcmp(split, "train") == 0) part = LC_PART_TRAIN;
    else if (strcmp(split, "all") == 0) part = LC_PART_ALL;
    else { lc_cli_error("eval: --split must be valid, test, train or all, got '%s'", split); return LC_EXIT_USAGE; }
    lc_split_mode mode;
    if (strcmp(splits, "auto") == 0) mode = LC_SPLIT_AUTO;
    else if (strcmp(splits, "enwik8") == 0) mode = LC_SPLIT_ENWIK8;
    else if (strcmp(splits, "nanogpt") == 0) mode = LC_SPLIT_NANOGPT;
    else { lc_cli_error("eval: --splits must be auto, enwik8 or nanogpt, got '%s'", splits); return LC_EXIT_USAGE; }
    lc_threads_set_default(threads);
    lc_model *m;
    lc_train_options saved;
    lc_status st = lc_checkpoint_load(ckpt, batch, &m, &saved);
    if (st) return lc_cli_fail(st);
    if ((rc = lc_apply_precision_flag(m, "eval", precision)) >= 0 ||
        (rc = lc_apply_runtime_lengths(m, "eval", batch, &seg_len, mem_len, clamp_len, same_length)) >= 0) {
        lc_model_free(m);
        return rc;
    }
    int T = seg_len;
    lc_corpus c;
    const lc_data_record *rec = &saved.data;
    if (!data && rec->path[0]) { /* the checkpoint's own data, with its split unless --splits says otherwise */
        if (!lc_opt_get(opts, n, "--splits")->seen) mode = (lc_split_mode)rec->split;
        lc_data_record r = *rec;
        r.split = (int)mode;
        if ((rc = lc_cli_load_recorded("eval", ckpt, &r, &c)) >= 0) { lc_model_free(m); return rc; }
        data = rec->path;
        fprintf(stderr, "data: %s, the data %s was trained on (--data FILE to score another)\n", data, ckpt);
    } else {
        if (!data && !(data = lc_cli_default_data("eval"))) { lc_model_free(m); return LC_EXIT_USAGE; }
        if (!rec->path[0] && !lc_opt_get(opts, n, "--data")->seen)
            fprintf(stderr, "data: %s (%s does not record its training data; --data FILE to score another)\n", data,
                    ckpt);
        if ((st = lc_corpus_load(data, mode, &c))) { lc_model_free(m); return lc_cli_fail(st); }
    }
    size_t begin = c.begin[part], len = c.end[part] - begin;
    double bpc = 0;
    long tokens = 0;
    if (len < 2) {
        lc_cli_error("eval: --data %s: the %s split has %zu bytes; at least 2 are needed", data, split, len);
        rc = LC_EXIT_RUNTIME;
    } else if (lc_model_config(m)->objective == LC_OBJECTIVE_MLM) {
        double acc = 0;
        if ((st = lc_evaluate_mlm(m, c.bytes + begin, len, seg_len ? seg_len : T, batch, LC_MLM_EVAL_SEED, &bpc, &acc,
                                  &tokens))) {
            rc = lc_cli_fail(st);
        } else {
            printf("%s bpc %.4f and accuracy %.4f over %ld masked bytes of %s\n", split, bpc, acc, tokens, data);
            if (json)
                printf("{\"bpc\":%s,\"masked_accuracy\":%s,\"tokens\":%ld}\n", lc_json_number(bpc),
                       lc_json_number(acc), tokens);
            rc = LC_EXIT_OK;
        }
    } else if ((st = lc_evaluate(m, c.bytes + begin, len, seg_len ? seg_len : T, batch, &bpc, &tokens))) {
        rc = lc_cli_fail(st);
    } else {
        printf("%s bpc %.4f over %ld bytes of %s\n", split, bpc, tokens, data);
        if (json) printf("{\"bpc\":%s,\"tokens\":%ld}\n", lc_json_number(bpc), tokens);
        rc = LC_EXIT_OK;
    }
    lc_corpus_free(&c);
    lc_model_free(m);
    return rc;
}
