/* Data parallelism across processes: the one interface to MPI. dist_mpi.c implements it with MPI (builds
 * with MPI=1), dist_none.c for one process (builds without MPI), so callers need no #ifdef. MPI is
 * started only when a launcher (mpirun, srun) started the process; otherwise there is one process. Every
 * call below is collective once lc_dist_init found several processes: all of them make it, in the same
 * order. Sums of floats are in an order fixed by the rank count and the message size, so a repeated run
 * with the same number of processes is bit-identical (docs/guides/distributed.md). */
#ifndef LC_TRAIN_DIST_H
#define LC_TRAIN_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "longctx.h"

/* Start MPI when launched by mpirun/srun (not collective before that). Returns the number of processes. */
int lc_dist_init(int *argc, char ***argv);
/* Collective: end MPI (nothing without it). */
void lc_dist_finalize(void);
/* End every process at once with this exit code (a failure only some processes saw). */
void lc_dist_abort(int code);
int lc_dist_rank(void); /* 0 .. lc_dist_size()-1; 0 without MPI */
int lc_dist_size(void); /* 1 without MPI or without a launcher */
/* "mpi" or "none": what the build has. */
const char *lc_dist_backend(void);

/* x[0, n) = the element-wise sum over the processes (in place). */
void lc_dist_sum_floats(float *x, size_t n);
/* x[0, n) = the element-wise sum over the processes, in fp64 (counts, losses, bits). */
void lc_dist_sum_doubles(double *x, int n);
/* The largest v over the processes. */
/* v[0, n) = the element-wise largest over the processes. */
void lc_dist_max_longs(long *v, int n);
/* Whether every process holds the same v. */
int lc_dist_same_u64(uint64_t v);
/* The first i in [0, n) where the processes' v[i] differ, or -1 when every process holds the same v[0, n)
 * (n must be the same everywhere: a compile-time count, say). */
int lc_dist_first_difference(const uint64_t *v, int n);
void lc_dist_barrier(void);
/* Process 0 receives every process's mine[0, n) in rank order in all[0, n * size) (others pass NULL).
 * Returns 0, or -1 on every process (nothing gathered) when the processes passed different n. */
int lc_dist_gather_floats(const float *mine, size_t n, float *all);

/* ---- checkpoints of processes training together (models/lm/checkpoint_lm_dist.c); collective */
/* Process 0 writes the checkpoint, with the XL memory of every process's streams (state.memory holds
 * batch x processes streams) and train.ranks = the number of processes. Every process returns once the
 * file is written, with process 0's status. */
lc_status lc_checkpoint_save_dist(const lc_model *m, const lc_train_options *o, const char *path);
/* Every process loads the checkpoint for its share of the saved global batch (train.batch x train.ranks
 * streams, divided among the processes now: LC_ERR_ARG when they do not divide it), with the XL memory
 * of its own streams; opts->batch is then the per-process batch, opts->ranks the saved count. */
lc_status lc_checkpoint_load_dist(const char *path, lc_model **out, lc_train_options *opts);

#endif
