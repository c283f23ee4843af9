/* lc_dist (train/dist.h) for a build without MPI: one process, every reduction the identity. */
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

int lc_dist_init(int *argc, char ***argv) { return 1; }
void lc_dist_finalize(void) {}
void lc_dist_abort(int code) { exit(code); }
int lc_dist_rank(void) { return 0; }
int lc_dist_size(void) { return 1; }
const char *lc_dist_backend(void) { return "none"; }
void lc_dist_sum_floats(float *x, size_t n) {}
void lc_dist_sum_doubles(double *x, int n) {}
void lc_dist_max_longs(long *v, int n) {}
int lc_dist_same_u64(uint64_t v) { return 1; }
void lc_dist_barrier(void) {}
int lc_dist_first_difference(const uint64_t *v, int n) { return -1; }
int lc_dist_gather_floats(const float *mine, size_t n, float *all) {
    memmove(all, mine, n * sizeof *all);
    return 0;
}
