/* runtime/dist_local.c - the communicator of a build without MPI: a world of
 * this process alone. Started by a launcher as one of several processes, it
 * refuses: each would train its own copy of the model on the whole data. */
#include "runtime/dist.h"

#include "core/error.h"

#include <slim/train.h>

#include <stdlib.h>
#include <string.h>

struct slim__dist {
    int unused;
};

slim_status slim__dist_open(const slim__dist_opts *o, slim__dist **out, slim_error *err)
{
    (void)o;
    *out = NULL;
    const char *var;
    int rank, n = slim__dist_launcher_size(&rank, &var);
    if (n > 1)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "this slimrun was built without MPI, but a launcher started it as "
                           "process %d of %d (%s=%d): each process would train its own copy of "
                           "the model on all the data. Install Open MPI (apt-get install "
                           "libopenmpi-dev openmpi-bin), run ./configure and make again (its "
                           "summary says \"MPI: yes\"), or run one process without mpirun",
                           rank, n, var, n);
    *out = calloc(1, sizeof **out);
    if (!*out)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    return SLIM_OK;
}

void slim__dist_close(slim__dist *d, bool failed)
{
    (void)failed;
    free(d);
}

int slim__dist_rank(const slim__dist *d)
{
    (void)d;
    return 0;
}

int slim__dist_size(const slim__dist *d)
{
    (void)d;
    return 1;
}

const char *slim__dist_name(const slim__dist *d)
{
    (void)d;
    return "rank 0 of 1";
}

void slim__dist_set_step(slim__dist *d, int64_t step)
{
    (void)d, (void)step;
}

void slim__dist_set_alone(slim__dist *d, bool alone)
{
    (void)d, (void)alone;
}

void slim__dist_collective(slim__dist *d, slim_collective *out)
{
    (void)d;
    memset(out, 0, sizeof *out);
    out->replicas = 1;
}

slim_status slim__dist_check(slim__dist *d, slim_error *err)
{
    (void)d, (void)err;
    return SLIM_OK;
}

/* One process: every reduction and broadcast leaves the values as they are. */
slim_status slim__dist_allreduce(slim__dist *d, double *v, int n, slim__dist_reduce op,
                                 const char *what, slim_error *err)
{
    (void)d, (void)v, (void)n, (void)op, (void)what, (void)err;
    return SLIM_OK;
}

slim_status slim__dist_bcast(slim__dist *d, void *buf, size_t bytes, const char *what,
                             slim_error *err)
{
    (void)d, (void)buf, (void)bytes, (void)what, (void)err;
    return SLIM_OK;
}

slim_status slim__dist_allgather(slim__dist *d, uint64_t mine, uint64_t *all, const char *what,
                                 slim_error *err)
{
    (void)d, (void)what, (void)err;
    all[0] = mine;
    return SLIM_OK;
}

slim_status slim__dist_gather(slim__dist *d, const void *mine, size_t n, void **all, size_t *sizes,
                              const char *what, slim_error *err)
{
    (void)d, (void)what;
    *all = malloc(n ? n : 1);
    if (!*all)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    if (n)
        memcpy(*all, mine, n);
    sizes[0] = n;
    return SLIM_OK;
}

slim_status slim__dist_barrier(slim__dist *d, const char *what, slim_error *err)
{
    (void)d, (void)what, (void)err;
    return SLIM_OK;
}

double slim__dist_take_wait(slim__dist *d)
{
    (void)d;
    return 0;
}

double slim__dist_take_wire(slim__dist *d)
{
    (void)d;
    return 0;
}

void slim__dist_take_comm(slim__dist *d, double *cpu_seconds, double *polls)
{
    (void)d;
    *cpu_seconds = *polls = 0;
}

void slim__dist_set_trace(slim__dist *d, bool on)
{
    (void)d, (void)on;
}

int slim__dist_take_spans(slim__dist *d, slim__dist_span **spans)
{
    (void)d;
    *spans = NULL;
    return 0;
}

void slim__dist_bucket_info(const slim__dist *d, double *bytes, int *n_buckets)
{
    (void)d;
    *bytes = 0;
    *n_buckets = 0;
}

bool slim_dist_available(void)
{
    return false;
}

void slim_dist_finalize(void)
{
}
