/* lc_dist (train/dist.h) on MPI: MPI_COMM_WORLD, MPI_Allreduce for every reduction. Open MPI picks its
 * allreduce algorithm from the process count and the message size alone (with default settings), and
 * each algorithm adds in a fixed order, so results repeat bit for bit for a given rank count. MPI is
 * started (MPI_THREAD_FUNNELED: only the main thread calls it; OpenMP threads compute) only when a
 * launcher set its environment, so the MPI build run without mpirun is a plain single process. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

static int dist_on, dist_rank, dist_size = 1;

/* Variables that Open MPI's mpirun, MPICH's Hydra and PMI/PMIx launchers (srun) set in each process. */
static int launched(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

int lc_dist_init(int *argc, char ***argv) {
    if (dist_on || !launched()) return dist_size;
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist_size);
    dist_on = 1;
    return dist_size;
}

void lc_dist_finalize(void) {
    if (!dist_on) return;
    MPI_Finalize();
    dist_on = 0, dist_rank = 0, dist_size = 1;
}

void lc_dist_abort(int code) {
    if (dist_on && dist_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int lc_dist_rank(void) { return dist_rank; }
int lc_dist_size(void) { return dist_size; }
const char *lc_dist_backend(void) { return "mpi"; }

/* MPI counts are int: long buffers go in pieces (each piece one allreduce, in order). */
static void sum_in_place(void *x, size_t n, MPI_Datatype type, size_t elem) {
    if (dist_size < 2) return;
    for (size_t done = 0; done < n;) {
        const size_t part = n - done < (size_t)INT_MAX ? n - done : (size_t)INT_MAX;
        MPI_Allreduce(MPI_IN_PLACE, (char *)x + done * elem, (int)part, type, MPI_SUM, MPI_COMM_WORLD);
        done += part;
    }
}

void lc_dist_sum_floats(float *x, size_t n) { sum_in_place(x, n, MPI_FLOAT, sizeof *x); }
void lc_dist_sum_doubles(double *x, int n) { sum_in_place(x, (size_t)n, MPI_DOUBLE, sizeof *x); }

void lc_dist_max_longs(long *v, int n) {
    if (dist_size > 1) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
}

int lc_dist_same_u64(uint64_t v) {
    if (dist_size < 2) return 1;
    uint64_t hi_lo[2] = {v, ~v}; /* max of v and of ~v: all equal iff both give v back */
    MPI_Allreduce(MPI_IN_PLACE, hi_lo, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return hi_lo[0] == v && ~hi_lo[1] == v;
}

int lc_dist_first_difference(const uint64_t *v, int n) {
    if (dist_size < 2 || n <= 0) return -1;
    uint64_t *both = malloc(sizeof *both * 2 * (size_t)n); /* the max of v[i] and of ~v[i], as lc_dist_same_u64 */
    if (!both) lc_dist_abort(1);
    for (int i = 0; i < n; i++) both[i] = v[i], both[n + i] = ~v[i];
    MPI_Allreduce(MPI_IN_PLACE, both, 2 * n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    int first = -1;
    for (int i = 0; i < n && first < 0; i++)
        if (both[i] != v[i] || ~both[n + i] != v[i]) first = i;
    free(both);
    return first;
}

void lc_dist_barrier(void) {
    if (dist_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

/* In pieces of at most INT_MAX / size floats (MPI counts are int), each gathered in rank order. Process 0
 * sizes its buffer and every piece by its own n: the counts are compared first, so a process that sends
 * more cannot write past it. */
int lc_dist_gather_floats(const float *mine, size_t n, float *all) {
    if (dist_size < 2) {
        memmove(all, mine, n * sizeof *all);
        return 0;
    }
    if (!lc_dist_same_u64((uint64_t)n)) return -1;
    const size_t most = (size_t)INT_MAX / (size_t)dist_size;
    float *piece = dist_rank == 0 && n > most ? malloc(sizeof(float) * most * (size_t)dist_size) : NULL;
    if (dist_rank == 0 && n > most && !piece) lc_dist_abort(1);
    for (size_t done = 0; done < n;) {
        const size_t part = n - done < most ? n - done : most;
        float *to = n > most ? piece : all;
        MPI_Gather(mine + done, (int)part, MPI_FLOAT, to, (int)part, MPI_FLOAT, 0, MPI_COMM_WORLD);
        for (int r = 0; piece && r < dist_size; r++)
            memcpy(all + (size_t)r * n + done, piece + (size_t)r * part, sizeof(float) * part);
        done += part;
    }
    free(piece);
    return 0;
}
