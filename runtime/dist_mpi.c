/* runtime/dist_mpi.c - the communicator over MPI (see runtime/dist.h): the
 * world, the gradient buckets and the collectives, on top of the
 * communication thread of dist_mpi_comm.c (runtime/dist_mpi.h).
 *
 * Gradient buckets. Gradients are copied into buckets in the order they
 * become final; the first step decides the layout (a bucket closes when the
 * next gradient would take it over bucket_bytes) and every step then starts
 * a bucket's allreduce as soon as its last gradient arrives. An update waits
 * for its own bucket only, and reads the sum (scaled by 1/N) from it. */
#include "runtime/dist_mpi.h"

#include "core/error.h"

#include <slim/train.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BUCKET_BYTES (8u << 20)

static bool mpi_started, mpi_broken;

/* ---- gradient buckets (training thread, from the program's steps) ------------- */

static void bucket_start(slim__dist *d, int k)
{
    bucket *bk = d->b[k];
    if (bk->started)
        return;
    bk->started = true;
    bk->waited = false;
    memset(&bk->op, 0, sizeof bk->op);
    bk->op.kind = OP_BUCKET;
    bk->op.buf = bk->buf;
    bk->op.count = (int)bk->n;
    bk->op.type = MPI_FLOAT;
    bk->op.op = MPI_SUM;
    bk->op.bucket = k;
    bk->op.what = "the gradient allreduce";
    slim__dist_enqueue(d, &bk->op);
}

/* First step: a place for param's n gradients in the open bucket, or a new one. */
static bool place(slim__dist *d, int param, int64_t n)
{
    if (param >= d->n_pmap) {
        int cap = param + 64;
        int *pb = realloc(d->p_bucket, (size_t)cap * sizeof *pb);
        if (pb)
            d->p_bucket = pb;
        int64_t *po = realloc(d->p_off, (size_t)cap * sizeof *po);
        if (po)
            d->p_off = po;
        if (!pb || !po)
            return false;
        for (int i = d->n_pmap; i < cap; i++)
            d->p_bucket[i] = -1;
        d->n_pmap = cap;
    }
    bucket *ob = d->open >= 0 ? d->b[d->open] : NULL;
    if (!ob || (ob->n > 0 && (size_t)(ob->n + n) * sizeof(float) > d->o.bucket_bytes)) {
        if (ob && !d->o.no_overlap)
            bucket_start(d, d->open);
        if (d->nb == d->cap_b) {
            int cap = d->cap_b ? 2 * d->cap_b : 16;
            bucket **nbk = realloc(d->b, (size_t)cap * sizeof *nbk);
            if (!nbk)
                return false;
            d->b = nbk;
            d->cap_b = cap;
        }
        ob = calloc(1, sizeof *ob);
        if (!ob)
            return false;
        d->b[d->nb] = ob;
        d->open = d->nb++;
    }
    if (ob->n + n > ob->cap) {
        int64_t cap = ob->n + n + (ob->cap > n ? ob->cap : n);
        float *nb = realloc(ob->buf, (size_t)cap * sizeof(float));
        if (!nb)
            return false;
        ob->buf = nb;
        ob->cap = cap;
    }
    d->p_bucket[param] = d->open;
    d->p_off[param] = ob->n;
    ob->n += n;
    ob->members++;
    return true;
}

static void grad_ready(void *user, int param, const float *grad, int64_t n)
{
    slim__dist *d = user;
    if (__atomic_load_n(&d->failed, __ATOMIC_RELAXED))
        return;
    if (d->in_wait_phase) { /* a new step */
        d->in_wait_phase = false;
        for (int k = 0; k < d->nb; k++) {
            d->b[k]->arrived = 0;
            d->b[k]->started = false;
        }
    }
    if (!d->layout_done && (param >= d->n_pmap || d->p_bucket[param] < 0) && !place(d, param, n)) {
        pthread_mutex_lock(&d->mu);
        slim__dist_fail(d, "out of memory for the gradient buckets");
        pthread_mutex_unlock(&d->mu);
        return;
    }
    if (param >= d->n_pmap || d->p_bucket[param] < 0)
        return; /* not in the layout of the first step: cannot happen */
    bucket *bk = d->b[d->p_bucket[param]];
    memcpy(bk->buf + d->p_off[param], grad, (size_t)n * sizeof(float));
    bk->arrived++;
    if (d->layout_done && !d->o.no_overlap && bk->arrived == bk->members)
        bucket_start(d, d->p_bucket[param]);
}

static const float *grad_wait(void *user, int param, float *scale)
{
    slim__dist *d = user;
    if (!d->in_wait_phase) { /* backward is over: whatever has not started, starts */
        d->in_wait_phase = true;
        d->layout_done = true;
        d->open = -1;
        d->last_done = 0;
        for (int k = 0; k < d->nb; k++)
            bucket_start(d, k);
    }
    if (param >= d->n_pmap || d->p_bucket[param] < 0)
        return NULL;
    bucket *bk = d->b[d->p_bucket[param]];
    if (!bk->waited) {
        if (slim__dist_wait_op(d, &bk->op, NULL))
            return NULL;
        bk->waited = true;
        slim__dist_add_span(d, bk->op.t_start, bk->op.t_done, 0, bk->op.bucket,
                            (double)bk->n * sizeof(float));
        d->wire_total += fmax(0, bk->op.t_done - fmax(bk->op.t_start, d->last_done));
        d->last_done = fmax(d->last_done, bk->op.t_done);
    }
    *scale = 1.0f / (float)d->size;
    return bk->buf + d->p_off[param];
}

static void stats_allreduce(void *user, double *data, int64_t n)
{
    slim__dist *d = user;
    dop o = {.kind = OP_ALLREDUCE,
             .buf = data,
             .count = (int)n,
             .type = MPI_DOUBLE,
             .op = MPI_SUM,
             .what = "the batch-norm statistics allreduce (--sync_batch_norm)"};
    slim__dist_run_op(d, &o, NULL);
}

void slim__dist_collective(slim__dist *d, slim_collective *out)
{
    memset(out, 0, sizeof *out);
    out->replica = d->rank;
    out->replicas = d->size;
    out->grad_ready = grad_ready;
    out->grad_wait = grad_wait;
    out->allreduce = d->o.sync_batch_norm ? stats_allreduce : NULL;
    out->user = d;
}

slim_status slim__dist_check(slim__dist *d, slim_error *err)
{
    pthread_mutex_lock(&d->mu);
    slim_status st = d->failed ? SLIM_EIO : SLIM_OK;
    if (st && err)
        *err = d->failure;
    pthread_mutex_unlock(&d->mu);
    return st;
}

/* ---- the loop's collectives ----------------------------------------------------- */

slim_status slim__dist_allreduce(slim__dist *d, double *v, int n, slim__dist_reduce op,
                                 const char *what, slim_error *err)
{
    dop o = {.kind = OP_ALLREDUCE,
             .buf = v,
             .count = n,
             .type = MPI_DOUBLE,
             .op = op == SLIM__DIST_MAX   ? MPI_MAX
                   : op == SLIM__DIST_MIN ? MPI_MIN
                                          : MPI_SUM,
             .what = what};
    return slim__dist_run_op(d, &o, err);
}

slim_status slim__dist_bcast(slim__dist *d, void *buf, size_t bytes, const char *what,
                             slim_error *err)
{
    for (size_t at = 0; at < bytes || (at == 0 && bytes == 0);) {
        size_t n = bytes - at < (size_t)INT_MAX ? bytes - at : (size_t)INT_MAX;
        dop o = {.kind = OP_BCAST,
                 .buf = (char *)buf + at,
                 .count = (int)n,
                 .type = MPI_BYTE,
                 .what = what};
        slim_status st = slim__dist_run_op(d, &o, err);
        if (st || bytes == 0)
            return st;
        at += n;
    }
    return SLIM_OK;
}

slim_status slim__dist_allgather(slim__dist *d, uint64_t mine, uint64_t *all, const char *what,
                                 slim_error *err)
{
    uint64_t m = mine;
    dop o = {.kind = OP_ALLGATHER,
             .buf = &m,
             .count = 1,
             .type = MPI_UINT64_T,
             .rbuf = all,
             .what = what};
    return slim__dist_run_op(d, &o, err);
}

slim_status slim__dist_gather(slim__dist *d, const void *mine, size_t n, void **all, size_t *sizes,
                              const char *what, slim_error *err)
{
    *all = NULL;
    if (n > (size_t)INT_MAX)
        return slim__error(err, SLIM_EINVAL, "%s: %zu bytes is more than one gather takes", what,
                           n);
    uint64_t *ns = malloc((size_t)d->size * sizeof *ns);
    int *counts = malloc((size_t)d->size * sizeof *counts);
    int *displs = malloc((size_t)d->size * sizeof *displs);
    if (!ns || !counts || !displs) {
        free(ns), free(counts), free(displs);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    slim_status st = slim__dist_allgather(d, n, ns, what, err);
    size_t total = 0;
    for (int r = 0; !st && r < d->size; r++) {
        if (total + ns[r] > (size_t)INT_MAX) {
            st = slim__error(err, SLIM_EINVAL, "%s: more than a gather takes", what);
            break;
        }
        counts[r] = (int)ns[r];
        displs[r] = (int)total;
        total += ns[r];
        if (sizes && d->rank == 0)
            sizes[r] = ns[r];
    }
    void *buf = NULL;
    if (!st && d->rank == 0 && !(buf = malloc(total ? total : 1)))
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (!st) {
        dop o = {.kind = OP_GATHERV,
                 .buf = (void *)mine,
                 .count = (int)n,
                 .type = MPI_BYTE,
                 .rbuf = buf,
                 .rcounts = counts,
                 .displs = displs,
                 .what = what};
        st = slim__dist_run_op(d, &o, err);
    }
    free(ns), free(counts), free(displs);
    if (st)
        free(buf);
    else
        *all = buf;
    return st;
}

slim_status slim__dist_barrier(slim__dist *d, const char *what, slim_error *err)
{
    dop o = {.kind = OP_BARRIER, .what = what};
    return slim__dist_run_op(d, &o, err);
}

double slim__dist_take_wait(slim__dist *d)
{
    double w = d->wait_total;
    d->wait_total = 0;
    return w;
}

double slim__dist_take_wire(slim__dist *d)
{
    double w = d->wire_total;
    d->wire_total = 0;
    return w;
}

void slim__dist_take_comm(slim__dist *d, double *cpu_seconds, double *polls)
{
    *cpu_seconds = *polls = 0;
    if (!d->th_started)
        return;
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(d->th, &id) == 0 && clock_gettime(id, &ts) == 0) {
        double c = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        *cpu_seconds = c - d->comm_cpu_last;
        d->comm_cpu_last = c;
    }
    int64_t n = __atomic_load_n(&d->polls, __ATOMIC_RELAXED);
    *polls = (double)(n - d->polls_last);
    d->polls_last = n;
}

void slim__dist_set_trace(slim__dist *d, bool on)
{
    d->o.trace = on;
}

int slim__dist_take_spans(slim__dist *d, slim__dist_span **spans)
{
    *spans = d->spans;
    int n = d->n_spans;
    d->spans = NULL;
    d->n_spans = d->cap_spans = 0;
    return n;
}

void slim__dist_bucket_info(const slim__dist *d, double *bytes, int *n_buckets)
{
    *bytes = 0;
    for (int k = 0; k < d->nb; k++)
        *bytes += (double)d->b[k]->n * sizeof(float);
    *n_buckets = d->nb;
}

/* ---- the world ------------------------------------------------------------------ */

int slim__dist_rank(const slim__dist *d)
{
    return d->rank;
}

int slim__dist_size(const slim__dist *d)
{
    return d->size;
}

const char *slim__dist_name(const slim__dist *d)
{
    return d->name;
}

void slim__dist_set_step(slim__dist *d, int64_t step)
{
    __atomic_store_n(&d->step, step, __ATOMIC_RELAXED);
}

void slim__dist_set_alone(slim__dist *d, bool alone)
{
    __atomic_store_n(&d->alone, alone ? 1 : 0, __ATOMIC_RELAXED);
}

bool slim_dist_available(void)
{
    return true;
}

void slim_dist_finalize(void)
{
    int fin = 0;
    if (mpi_started && !mpi_broken && MPI_Finalized(&fin) == MPI_SUCCESS && !fin)
        MPI_Finalize();
}

static void free_dist(slim__dist *d)
{
    for (int k = 0; k < d->nb; k++) {
        free(d->b[k]->buf);
        free(d->b[k]);
    }
    free(d->b);
    free(d->p_bucket);
    free(d->p_off);
    free(d->peers);
    free(d->hosts);
    free(d->spans);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv_work);
    pthread_cond_destroy(&d->cv_done);
    free(d);
}

/* Open MPI's non-blocking allreduce (coll/libnbc), left to itself, reduces
 * an in-place buffer to rank 0 and broadcasts it back down a binomial tree:
 * 2 log2(N) x the bucket over the slowest link, where a ring or Rabenseifner's
 * reduce-scatter + allgather send 2(N-1)/N x the bucket (measured on a 1
 * Gbit/s link between two hosts, 102 MB: 2.3-2.7 s against 1.0-1.2 s).
 * Rabenseifner's for a power-of-two world (log2(N) rounds of latency), the
 * ring otherwise (Rabenseifner's folds the extra processes in with another
 * pass over the data). Unless the user chose one (the environment or
 * mpirun --mca, which sets the same variable); read at MPI_Init. */
static void choose_allreduce(int n)
{
    const char *var = "OMPI_MCA_coll_libnbc_iallreduce_algorithm";
    if (!getenv(var))
        setenv(var, (n & (n - 1)) == 0 ? "3" : "1", 0);
}

slim_status slim__dist_open(const slim__dist_opts *o, slim__dist **out, slim_error *err)
{
    *out = NULL;
    slim__dist *d = calloc(1, sizeof *d);
    if (!d)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv_work, NULL);
    pthread_cond_init(&d->cv_done, NULL);
    d->o = *o;
    if (!d->o.bucket_bytes)
        d->o.bucket_bytes = DEFAULT_BUCKET_BYTES;
    d->timeout = o->timeout > 0 ? o->timeout : 300;
    d->hb_interval = fmin(fmax(d->timeout / 10, 0.2), 5.0);
    d->open = -1;
    d->size = 1;
    snprintf(d->name, sizeof d->name, "rank 0 of 1");
    if (mpi_broken) {
        free_dist(d);
        return slim__error(err, SLIM_ESTATE,
                           "an earlier run of this process lost its MPI peers: start again");
    }
    int lrank, n = slim__dist_launcher_size(&lrank, NULL);
    if (n <= 1) { /* alone: no MPI at all */
        *out = d;
        return SLIM_OK;
    }
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (fin) {
        free_dist(d);
        return slim__error(err, SLIM_ESTATE, "MPI was finalized already in this process");
    }
    if (!inited) {
        choose_allreduce(n);
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
            free_dist(d);
            return slim__error(err, SLIM_EIO, "MPI_Init_thread failed");
        }
        mpi_started = true;
        if (provided < MPI_THREAD_SERIALIZED) {
            free_dist(d);
            return slim__error(err, SLIM_EUNSUPPORTED,
                               "this MPI library gives thread level %d; slim needs "
                               "MPI_THREAD_SERIALIZED (%d)",
                               provided, MPI_THREAD_SERIALIZED);
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &d->comm) != MPI_SUCCESS ||
        MPI_Comm_dup(MPI_COMM_WORLD, &d->hb_comm) != MPI_SUCCESS) {
        free_dist(d);
        return slim__error(err, SLIM_EIO, "MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(d->hb_comm, MPI_ERRORS_RETURN);
    d->hosts = calloc((size_t)d->size, sizeof *d->hosts);
    d->peers = calloc((size_t)d->size, sizeof *d->peers);
    if (!d->hosts || !d->peers) {
        free_dist(d);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    /* every process is here at start-up: the one blocking call */
    if (MPI_Allgather(host, 64, MPI_CHAR, d->hosts, 64, MPI_CHAR, d->comm) != MPI_SUCCESS) {
        free_dist(d);
        return slim__error(err, SLIM_EIO, "MPI_Allgather of the host names failed");
    }
    snprintf(d->name, sizeof d->name, "rank %d of %d (host %s)", d->rank, d->size,
             d->hosts[d->rank]);
    double t = slim__dist_now();
    for (int r = 0; r < d->size; r++) {
        d->peers[r].heard = t;
        d->peers[r].sreq = MPI_REQUEST_NULL;
        d->peers[r].hb.suspect = -1;
    }
    d->rreq = MPI_REQUEST_NULL;
    if (pthread_create(&d->th, NULL, slim__dist_comm_main, d) != 0) {
        free_dist(d);
        return slim__error(err, SLIM_ENOMEM, "cannot start the communication thread");
    }
    d->th_started = true;
    *out = d;
    return SLIM_OK;
}

void slim__dist_close(slim__dist *d, bool failed)
{
    if (!d)
        return;
    if (d->th_started) {
        pthread_mutex_lock(&d->mu);
        d->quit = true;
        failed |= d->failed;
        d->failed |= failed; /* the thread leaves MPI alone then */
        pthread_cond_broadcast(&d->cv_work);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->th, NULL);
        if (failed)
            mpi_broken = true; /* no MPI_Finalize: it would wait for the lost peers */
    }
    free_dist(d);
}
