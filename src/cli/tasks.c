/* `train --task NAME` and `eval --task NAME`: NAME is a model family of the registry (longctx/family.h), and
 * each built-in family's commands are its entries here (the CLI sits above the library, so the rows of
 * src/models/families.c cannot point at them). `train --task hibert` is `hibert finetune` (with
 * `--objective pretrain`: `hibert pretrain`), `eval --task hibert` is `eval --task summarize --ckpt`. */
#include <stdlib.h>
#include <string.h>

#include "cli/classify_cli.h"
#include "cli/cli.h"
#include "longctx/family.h"

/* The argv without the argument at i and, when `value`, the one after it; returns the new count. */
static int drop(int argc, char **argv, int i, int value) {
    const int k = value && i + 1 < argc ? 2 : 1;
    memmove(argv + i, argv + i + k, sizeof *argv * (size_t)(argc - i - k));
    return argc - k;
}

/* The index of the flag `name` ("--task" or "--task=..."), or -1. */
static int flag_at(int argc, char **argv, const char *name) {
    const size_t n = strlen(name);
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], name, n) == 0 && (argv[i][n] == 0 || argv[i][n] == '=')) return i;
    return -1;
}

/* hibert finetune (or pretrain, by --objective) with the rest of the arguments. */
static int train_hibert(int argc, char **argv) {
    char **args = malloc(sizeof *args * (size_t)(argc + 2));
    if (!args) return lc_cli_error("train --task hibert: out of memory"), LC_EXIT_RUNTIME;
    memcpy(args + 1, argv, sizeof *argv * (size_t)argc);
    int n = drop(argc, args + 1, flag_at(argc, args + 1, "--task"), 1);
    const char *stage = "finetune";
    const int at = flag_at(n, args + 1, "--objective");
    if (at >= 0) {
        const char *v = args[1 + at][11] == '=' ? args[1 + at] + 12 : at + 1 < n ? args[2 + at] : "";
        if (strcmp(v, "pretrain") && strcmp(v, "finetune")) {
            lc_cli_error("train --task hibert: --objective must be pretrain or finetune, got '%s'", v);
            free(args);
            return LC_EXIT_USAGE;
        }
        stage = v;
        n = drop(n, args + 1, at, args[1 + at][11] != '=');
    }
    args[0] = (char *)stage;
    const int rc = lc_cmd_hibert(n + 1, args);
    free(args);
    return rc;
}

/* eval --task summarize --ckpt CKPT: the summaries of a HIBERT checkpoint. */
static int eval_hibert(int argc, char **argv) {
    if (flag_at(argc, argv, "--method") >= 0) {
        lc_cli_error("eval --task hibert: scores a HIBERT checkpoint (--ckpt); --method is eval --task summarize's");
        return LC_EXIT_USAGE;
    }
    char **args = malloc(sizeof *args * (size_t)(argc + 1));
    if (!args) return lc_cli_error("eval --task hibert: out of memory"), LC_EXIT_RUNTIME;
    memcpy(args, argv, sizeof *argv * (size_t)argc);
    int n = drop(argc, args, flag_at(argc, args, "--task"), 1);
    args[n] = "--task=summarize";
    const int rc = lc_cmd_eval_summary(n + 1, args);
    free(args);
    return rc;
}

typedef struct {
    const char *family;
    int (*train)(int argc, char **argv);
    int (*eval)(int argc, char **argv);
} task_entry;

/* "lm": train's and eval's own code (NULL: the caller goes on). */
static const task_entry entries[] = {
    {"lm", NULL, NULL},
    {"classify", lc_cmd_train_classify, lc_cmd_eval_classify},
    {"hibert", train_hibert, eval_hibert},
    {"seq2seq", lc_cmd_train_seq2seq, lc_cmd_eval_seq2seq},
};

int lc_cli_task_run(const char *cmd, const char *also, int argc, char **argv) {
    const int at = flag_at(argc, argv, "--task");
    if (at < 0 || (argv[at][6] == 0 && at + 1 >= argc)) return -1; /* none, or no value: the parser says so */
    const char *name = argv[at][6] == '=' ? argv[at] + 7 : argv[at + 1];
    const lc_family *fam = lc_family_find(name);
    if (!fam) {
        char names[256];
        lc_family_names(names, sizeof names);
        lc_cli_error("%s: --task must be %s%s, got '%s'", cmd, also, names, name);
        return LC_EXIT_USAGE;
    }
    const int eval = strcmp(cmd, "eval") == 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].family, name) == 0) {
            int (*entry)(int, char **) = eval ? entries[i].eval : entries[i].train;
            return entry ? entry(argc, argv) : -1;
        }
    lc_cli_error("%s: family '%s' has no command (the library trains it: lc_family_fit)", cmd, name);
    return LC_EXIT_USAGE;
}
