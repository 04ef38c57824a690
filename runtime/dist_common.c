/* runtime/dist_common.c - what both communicators share (dist_mpi.c over MPI,
 * dist_local.c alone): how a launcher announces a world in the environment. */
#include "runtime/dist.h"

#include <slim/train.h>

#include <stdlib.h>

/* Open MPI's mpirun, MPICH/Hydra's mpiexec and srun with PMI, MVAPICH. */
static const char *const size_vars[][2] = {
    {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
    {"PMI_SIZE", "PMI_RANK"},
    {"PMIX_SIZE", "PMIX_RANK"},
    {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"},
};

int slim__dist_launcher_size(int *rank, const char **what)
{
    for (size_t i = 0; i < sizeof size_vars / sizeof size_vars[0]; i++) {
        const char *v = getenv(size_vars[i][0]);
        if (!v || !*v)
            continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1 << 20)
            continue;
        const char *r = getenv(size_vars[i][1]);
        if (rank)
            *rank = r ? atoi(r) : 0;
        if (what)
            *what = size_vars[i][0];
        return (int)n;
    }
    if (rank)
        *rank = 0;
    if (what)
        *what = NULL;
    return 0;
}

int slim_dist_launcher_rank(int *size)
{
    int rank, n = slim__dist_launcher_size(&rank, NULL);
    *size = n > 0 ? n : 1;
    return n > 0 ? rank : -1;
}
