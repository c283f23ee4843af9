/* The C library guide's whole program (docs/guides/c-library.md, "The whole program"): build a tiny
 * byte-level Transformer, run one forward pass over a sentence and print the loss. CI compiles it against an installed prefix with
 * `pkg-config --cflags --libs longctx` (tests/check_all.sh). */
#include <stdio.h>
#include <string.h>

#include <longctx.h>

int main(void) {
    lc_config cfg;
    lc_config_preset(&cfg, "tiny"); /* 2 layers, width 64, 64-byte segments */
    lc_model *m;
    if (lc_model_create(&cfg, 1, 42, &m) != LC_OK) {
        fprintf(stderr, "hello: %s\n", lc_last_error());
        return 1;
    }
    const char *text = "Long contexts, small machines: a Transformer trained on the CPU.";
    int n = (int)strlen(text), tokens[64], targets[64];
    for (int i = 0; i < n; i++) {
        tokens[i] = (unsigned char)text[i];                        /* bytes are the tokens */
        targets[i] = i + 1 < n ? (unsigned char)text[i + 1] : -1; /* predict the next byte */
    }
    double loss;
    long count;
    if (lc_model_forward(m, tokens, targets, 1, n, 0, &loss, &count) != LC_OK) {
        fprintf(stderr, "hello: %s\n", lc_last_error());
        lc_model_free(m);
        return 1;
    }
    printf("longctx %s (%s kernels): %zu parameters, loss %.3f nats/byte over %ld bytes (untrained: ~ln 256 = 5.545)\n",
           lc_version(), lc_cpu_path(), lc_model_num_params(m), loss / count, count);
    lc_model_free(m);
    return 0;
}
