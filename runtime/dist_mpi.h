/* runtime/dist_mpi.h - inside the communicator over MPI: its state and the
 * queue between the training thread and the communication thread. Private to
 * two files: dist_mpi_comm.c (the communication thread, the heartbeats and the
 * watchdog; the queue the training thread puts operations on and waits in)
 * and, on top of it, dist_mpi.c (the world, the gradient buckets and the
 * collectives of runtime/dist.h). */
#ifndef SLIM_RUNTIME_DIST_MPI_H
#define SLIM_RUNTIME_DIST_MPI_H

#include "runtime/dist.h"

#include <mpi.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum { OP_BUCKET, OP_ALLREDUCE, OP_BCAST, OP_ALLGATHER, OP_GATHERV, OP_BARRIER };
enum { ST_QUEUED, ST_ACTIVE, ST_DONE, ST_FAILED };

typedef struct dop {
    int kind;
    void *buf;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    void *rbuf;
    int *rcounts, *displs;
    MPI_Request req;
    int state;   /* read by the waiter under mu */
    bool tested; /* complete (comm thread only, until it publishes state under mu) */
    double t_start, t_done;
    const char *what;
    int bucket;
    int64_t step;
    struct dop *next;
} dop;

typedef struct bucket {
    float *buf;
    int64_t n, cap;
    int members, arrived;
    bool started, waited;
    dop op;
} bucket;

typedef struct hb_msg {
    int64_t step;
    int32_t alone, waiting;
    int32_t suspect, suspect_silent; /* rank 0's view; -1 = none */
    int64_t suspect_step;
    double suspect_age;
} hb_msg;

typedef struct peer {
    double heard;       /* when its last heartbeat came */
    double alone_since; /* when it began to work alone (rank 0) */
    double alone_seen;  /* the last heartbeat that said so */
    hb_msg hb;
    MPI_Request sreq; /* our heartbeat to it in flight */
    hb_msg out;
} peer;

struct slim__dist {
    int rank, size;
    char name[160];
    char (*hosts)[64];
    slim__dist_opts o;
    double timeout, hb_interval;
    MPI_Comm comm, hb_comm;

    pthread_t th;
    bool th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    dop *q_head, *q_tail; /* queued, not started */
    dop *active;          /* started (comm thread only) */
    bool quit, failed;
    slim_error failure;

    /* heartbeats (comm thread; step/alone/waiting written by the trainer) */
    int64_t step;
    int alone, waiting;
    peer *peers;
    hb_msg in;
    MPI_Request rreq;

    /* buckets (training thread) */
    bucket **b;
    int nb, cap_b, open;
    int *p_bucket;
    int64_t *p_off;
    int n_pmap;
    bool layout_done, in_wait_phase;

    double wait_total, wire_total, last_done; /* last_done: of this step's buckets */
    int64_t polls;                            /* passes of the comm thread (atomic) */
    double comm_cpu_last;
    int64_t polls_last;
    slim__dist_span *spans;
    int n_spans, cap_spans;
};

/* CLOCK_MONOTONIC seconds. */
double slim__dist_now(void);
/* The communication thread (pthread_create's start routine). */
void *slim__dist_comm_main(void *arg);
/* Every waiting operation fails with this message; no MPI call after it
 * (mu held). */
void slim__dist_fail(slim__dist *d, const char *fmt, ...) SLIM_PRINTF(2, 3);

/* The training thread's side: queue o for the communication thread, wait
 * until it is done or failed (the communication thread enforces the
 * deadline), or both. */
void slim__dist_enqueue(slim__dist *d, dop *o);
slim_status slim__dist_wait_op(slim__dist *d, dop *o, slim_error *err);
slim_status slim__dist_run_op(slim__dist *d, dop *o, slim_error *err);
/* Record a span when tracing (runtime/dist.h: slim__dist_span). */
void slim__dist_add_span(slim__dist *d, double t0, double t1, int kind, int bk, double bytes);

#endif
