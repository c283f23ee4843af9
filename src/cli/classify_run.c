/* What the classification commands share (classify_cli.h): `--task` detection, the refusal of an untrained
 * head; and `longctx eval --task classify` (docs/guides/classify.md): a checkpoint's accuracy on a labelled file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "core/status.h"
#include "core/threads.h"

int lc_cli_task_is(int argc, char **argv, const char *name) {
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--task") == 0 && i + 1 < argc && strcmp(argv[i + 1], name) == 0) return 1;
        if (strncmp(argv[i], "--task=", 7) == 0 && strcmp(argv[i] + 7, name) == 0) return 1;
    }
    return 0;
}

lc_status lc_cli_check_trained_head(const lc_classifier *m, const char *ckpt) {
    if (lc_classifier_config(m)->objective != LC_CLASSIFY_MLM) return LC_OK;
    return lc_fail(LC_ERR_FORMAT, "--ckpt %s is a masked-token pre-training (objective mlm): its head is untrained; "
                                  "fine-tune it with train --task classify --init %s", ckpt, ckpt);
}

/* ---------------------------------------------------------------- eval --task classify */


int lc_cmd_eval_classify(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL, *task = NULL, *label_col = NULL, *text_col = NULL;
    int batch = 16, threads = 0, json = 0;
    long max_examples = 0;
    lc_opt opts[] = {
        {"--ckpt", OPT_STR, &ckpt, 0, 0, "classifier checkpoint (required)", 0},
        {"--task", OPT_STR, &task, 0, 0, "classify", 0},
        {"--data", OPT_STR, &data, 0, 0, "labelled TSV file, plain or gzip (required)", 0},
        {"--label-col", OPT_STR, &label_col, 0, 0, "label column (default Target, else the first)", 0},
        {"--text-col", OPT_STR, &text_col, 0, 0, "text column (default Source, else the last)", 0},
        {"--max-examples", OPT_LONG, &max_examples, 1, 1e12, "the most examples read from the file (default 4194304)", 0},
        {"--batch", OPT_INT, &batch, 1, 4096, "examples per forward pass (default 16)", 0},
        {"--threads", OPT_INT, &threads, 0, 1024, "threads (0: all cores)", 0},
        {"--json", OPT_FLAG, &json, 0, 0, "print {\"accuracy\":..,\"examples\":..} as the last stdout line", 0},
    };
    const int n = (int)(sizeof opts / sizeof *opts);
    int rc = lc_parse_opts("eval", "--ckpt CKPT --task classify --data FILE [options]", opts, n, argc, argv);
    if (rc >= 0) return rc;
    if (!ckpt || !data) { lc_cli_error("eval --task classify: --ckpt and --data are required"); return LC_EXIT_USAGE; }
    lc_threads_set_default(threads);
    lc_classifier *m = NULL;
    lc_label_set labels = {0, NULL};
    lc_word_vocab *v = NULL;
    lc_labelled_data d;
    memset(&d, 0, sizeof d);
    lc_status st = lc_classifier_load(ckpt, batch, 0, &m, NULL, &labels, &v);
    if (!st) st = lc_cli_check_trained_head(m, ckpt);
    const lc_tsv_limits lim = {max_examples, 0};
    if (!st) st = lc_labelled_read_limited(data, label_col, text_col, &lim, &d);
    int *ids = st ? NULL : malloc(sizeof(int) * (size_t)d.n), *pred = st ? NULL : malloc(sizeof(int) * (size_t)d.n);
    long unseen = 0, right = 0;
    if (!st && (!ids || !pred)) st = lc_fail(LC_ERR_NOMEM, "out of memory");
    if (!st) st = lc_labelled_map(&d, &labels, ids, &unseen);
    if (!st) st = lc_classifier_classify_texts(m, v, d.n, d.text, d.text_len, batch, pred, NULL);
    for (long i = 0; !st && i < d.n; i++) right += pred[i] == ids[i]; /* -1: a label the model lacks, wrong */
    if (st) {
        rc = lc_cli_fail(st);
    } else {
        if (unseen)
            fprintf(stderr, "longctx: warning: --data %s: %ld examples have a label the checkpoint was not trained on: "
                            "counted wrong\n", data, unseen);
        printf("accuracy %.4f over %ld examples of %s (%ld correct)\n", (double)right / (double)d.n, d.n, data, right);
        if (json) printf("{\"accuracy\":%s,\"examples\":%ld}\n", lc_json_number((double)right / (double)d.n), d.n);
        rc = LC_EXIT_OK;
    }
    free(ids), free(pred);
    lc_labelled_free(&d);
    lc_label_set_free(&labels);
    lc_word_vocab_free(v);
    lc_classifier_free(m);
    return rc;
}
_Static_assert(LC_TSV_MAX_EXAMPLES == 4194304, "--max-examples's help gives the default");
