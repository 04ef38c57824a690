/* runtime/dist.h - data-parallel training across processes: the one module
 * that owns the communicator, the gradient buckets and their non-blocking
 * allreduces, the small collectives the training loop needs, and the
 * watchdog that ends a run when a process dies or stops answering.
 *
 * Two implementations, one compiled: dist_mpi.c over MPI when configure found
 * it, dist_local.c otherwise (a world of one process, which refuses to run as
 * one of several processes a launcher started: that would train N copies).
 * A process started by mpirun (or another launcher) joins the world of its
 * launcher; any other process is a world of one, without MPI.
 *
 * Every wait has a deadline (slim__dist_opts.timeout): a collective that does
 * not finish in time is an error naming this rank, the step and, when the
 * heartbeats tell, the rank that stopped answering or lags. Nothing blocks
 * inside MPI: one communication thread starts the operations and polls them
 * (MPI_Test), and the training thread waits on it with a deadline. */
#ifndef SLIM_RUNTIME_DIST_H
#define SLIM_RUNTIME_DIST_H

#include <slim/slim.h>

#include <stddef.h>

typedef struct slim__dist slim__dist;

typedef struct slim__dist_opts {
    double timeout;      /* seconds; <= 0 = 300 */
    size_t bucket_bytes; /* gradient bucket size; 0 = the default */
    bool no_overlap;     /* start the buckets only when backward is done (measurements) */
    bool sync_batch_norm;
    bool trace; /* keep the allreduce spans (slim__dist_spans) */
} slim__dist_opts;

/* Join the launcher's world (MPI_Init the first time in this process), or a
 * world of one. Errors: launched as one of several without MPI in this
 * build, MPI failing to start. */
slim_status slim__dist_open(const slim__dist_opts *o, slim__dist **out, slim_error *err);
/* failed: a collective failed, so no goodbye with the others (the launcher
 * ends them when this process exits). */
void slim__dist_close(slim__dist *d, bool failed);

int slim__dist_rank(const slim__dist *d);
int slim__dist_size(const slim__dist *d);
/* "rank 1 of 4 (host b)", for messages. */
const char *slim__dist_name(const slim__dist *d);
/* The world size a launcher announces in the environment (mpirun, mpiexec,
 * srun with PMI), and its rank; 0 when none did. *what: the variable. */
int slim__dist_launcher_size(int *rank, const char **what);

/* What the training loop does now, for the heartbeats and the messages: the
 * global step, and whether this rank works alone for a while (rank 0
 * saving a checkpoint or evaluating: the others' deadlines wait for it). */
void slim__dist_set_step(slim__dist *d, int64_t step);
void slim__dist_set_alone(slim__dist *d, bool alone);

/* The engine's hooks (slim_compile_opts.collective): gradients packed into
 * buckets as they become final, each bucket's allreduce started when it is
 * full; an update waits for its own bucket; batch-norm statistics summed
 * across the processes with sync_batch_norm. */
void slim__dist_collective(slim__dist *d, slim_collective *out);
/* After a program run: the first error of its collectives (a timeout), or OK. */
slim_status slim__dist_check(slim__dist *d, slim_error *err);

/* Blocking collectives (every rank calls them in the same order). */
typedef enum { SLIM__DIST_SUM, SLIM__DIST_MAX, SLIM__DIST_MIN } slim__dist_reduce;
slim_status slim__dist_allreduce(slim__dist *d, double *v, int n, slim__dist_reduce op,
                                 const char *what, slim_error *err);
/* bytes from rank 0 to every rank. */
slim_status slim__dist_bcast(slim__dist *d, void *buf, size_t bytes, const char *what,
                             slim_error *err);
/* all[r] = rank r's value (all has size entries). */
slim_status slim__dist_allgather(slim__dist *d, uint64_t mine, uint64_t *all, const char *what,
                                 slim_error *err);
/* Variable-size gather to rank 0: *all (malloc'ed, rank 0 only; NULL
 * elsewhere) holds every rank's bytes in rank order, sizes[r] their sizes
 * (sizes: size entries, rank 0 only). */
slim_status slim__dist_gather(slim__dist *d, const void *mine, size_t n, void **all, size_t *sizes,
                              const char *what, slim_error *err);
slim_status slim__dist_barrier(slim__dist *d, const char *what, slim_error *err);

/* Seconds the training thread spent waiting for communication since the
 * last call (gradient buckets, statistics, the collectives above). */
double slim__dist_take_wait(slim__dist *d);
/* Seconds the gradient buckets spent on the wire since the last call: per
 * step, the union of the [start, done] of its buckets' allreduces (what the
 * training thread waited of it is in slim__dist_take_wait; the rest hid
 * behind backward). */
double slim__dist_take_wire(slim__dist *d);
/* The communication thread since the last call: its CPU seconds (MPI's
 * progress: shared-memory copies, reductions, polling) and its passes (each
 * tests what is in flight once; between passes it sleeps or is woken). */
void slim__dist_take_comm(slim__dist *d, double *cpu_seconds, double *polls);
/* Recorded spans (opts.trace): kind 0 = a bucket's allreduce on the wire
 * (from its start to its completion), 1 = the training thread waiting. */
typedef struct slim__dist_span {
    double t0, t1;
    int kind;
    int bucket;
    int64_t step;
    double bytes;
} slim__dist_span;
/* Start or stop recording spans. */
void slim__dist_set_trace(slim__dist *d, bool on);
/* The spans since the last call (malloc'ed; caller frees). */
int slim__dist_take_spans(slim__dist *d, slim__dist_span **spans);
/* The gradient bytes per step and the number of buckets (after the first step). */
void slim__dist_bucket_info(const slim__dist *d, double *bytes, int *n_buckets);

#endif
