/* runtime/dist_mpi.c - the communicator over MPI (see runtime/dist.h).
 *
 * One communication thread makes every MPI call of a run (MPI_THREAD_SERIALIZED:
 * MPI_Init and MPI_Finalize come from the caller's thread while it is not
 * running). The training thread queues operations and waits for them; the
 * communication thread starts them in queue order (MPI's non-blocking
 * collectives, so every rank starts the same collectives in the same order)
 * and polls them with MPI_Test: a short sleep between polls while something
 * is in flight, so that it neither spins a core away from the kernels nor
 * leaves a transfer waiting long for its next round.
 *
 * Watchdog. Nothing ever blocks inside MPI, so the communication thread can
 * always act. It exchanges heartbeats with rank 0 (each rank to rank 0, rank
 * 0 to each rank: O(N) messages per period) carrying the step, whether the
 * rank is waiting in a collective, and rank 0's suspect. An operation not
 * done within the timeout, or a peer silent for longer than the timeout,
 * fails every waiting operation with a message that names this rank, the
 * step and the rank that stopped answering (no heartbeat) or lags (alive,
 * not yet at the collective). While rank 0 works alone (a checkpoint, an
 * evaluation) and keeps sending heartbeats, the others' deadlines wait. The
 * training loop returns the error; slimrun exits non-zero, and mpirun ends
 * the other processes.
 *
 * Gradient buckets. Gradients are copied into buckets in the order they
 * become final; the first step decides the layout (a bucket closes when the
 * next gradient would take it over bucket_bytes) and every step then starts
 * a bucket's allreduce as soon as its last gradient arrives. An update waits
 * for its own bucket only, and reads the sum (scaled by 1/N) from it. */
#include "runtime/dist.h"

#include "engine/error.h"

#include <slim/train.h>

#include <mpi.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HB_TAG 17
#define DEFAULT_BUCKET_BYTES (8u << 20)
/* Between tests while something is in flight: from 10 us, doubling while
 * nothing moves, up to 1 ms (a peer still computing costs ~1000 wake-ups a
 * second, not 50000); back to 10 us as soon as something completes or
 * starts, and a new operation wakes the thread at once. */
#define POLL_MIN 10e-6
#define POLL_MAX 1e-3

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

static bool mpi_started, mpi_broken;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *mpi_msg(int rc, char *buf)
{
    int len = 0;
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
        snprintf(buf, MPI_MAX_ERROR_STRING, "MPI error %d", rc);
    return buf;
}

/* ---- the watchdog's words (comm thread, mu held) ----------------------------- */

/* Rank 0's suspect: the peer silent longest (beyond three heartbeat periods),
 * else the one at the lowest step that is not waiting in a collective. */
static void find_suspect(slim__dist *d, double t, hb_msg *m)
{
    m->suspect = -1;
    double worst = 3 * d->hb_interval;
    for (int r = 1; r < d->size; r++)
        if (t - d->peers[r].heard > worst) {
            worst = t - d->peers[r].heard;
            m->suspect = r;
            m->suspect_silent = 1;
        }
    if (m->suspect < 0)
        for (int r = 1; r < d->size; r++) {
            const hb_msg *h = &d->peers[r].hb;
            if (!h->waiting && (m->suspect < 0 || h->step < m->suspect_step)) {
                m->suspect = r;
                m->suspect_silent = 0;
                m->suspect_step = h->step;
            }
        }
    if (m->suspect >= 0) {
        m->suspect_age = t - d->peers[m->suspect].heard;
        m->suspect_step = d->peers[m->suspect].hb.step;
    }
}

static void describe_suspect(slim__dist *d, double t, char *buf, size_t n)
{
    hb_msg m;
    if (d->rank == 0) {
        find_suspect(d, t, &m);
    } else if (t - d->peers[0].heard > 3 * d->hb_interval) {
        m.suspect = 0;
        m.suspect_silent = 1;
        m.suspect_age = t - d->peers[0].heard;
        m.suspect_step = d->peers[0].hb.step;
    } else {
        m = d->peers[0].hb;
    }
    if (m.suspect < 0 || m.suspect >= d->size)
        snprintf(buf, n, "every rank %s alive and waiting (collectives out of order: a bug)",
                 d->rank == 0 ? "is" : "rank 0 hears is");
    else if (m.suspect_silent)
        snprintf(buf, n,
                 "rank %d (host %s) has not been heard from for %.0f s (its last heartbeat came "
                 "from step %lld): it died or hangs",
                 m.suspect, d->hosts[m.suspect], m.suspect_age, (long long)m.suspect_step);
    else
        snprintf(buf, n, "rank %d (host %s) is alive but has not joined: it is at step %lld",
                 m.suspect, d->hosts[m.suspect], (long long)m.suspect_step);
}

/* Every waiting operation fails with this message; no MPI call after it. */
static void fail_all(slim__dist *d, const char *fmt, ...) SLIM_PRINTF(2, 3);
static void fail_all(slim__dist *d, const char *fmt, ...)
{
    if (d->failed)
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    slim__error(&d->failure, SLIM_EIO, "%s, step %lld: %s", d->name,
                (long long)__atomic_load_n(&d->step, __ATOMIC_RELAXED), msg);
    d->failed = true;
    for (dop *o = d->active; o; o = o->next)
        o->state = ST_FAILED;
    for (dop *o = d->q_head; o; o = o->next)
        o->state = ST_FAILED;
    d->active = d->q_head = d->q_tail = NULL;
    pthread_cond_broadcast(&d->cv_done);
}

static void describe_op(const slim__dist *d, const dop *o, char *buf, size_t n)
{
    double kb = (double)o->count * sizeof(float) / 1e3;
    if (o->kind == OP_BUCKET)
        snprintf(buf, n, "the gradient allreduce (bucket %d of %d, %.*f %s)", o->bucket + 1, d->nb,
                 1, kb < 100 ? kb : kb / 1e3, kb < 100 ? "kB" : "MB");
    else
        snprintf(buf, n, "%s", o->what ? o->what : "a collective");
}

static void check_deadlines(slim__dist *d, double t)
{
    char who[300], what[120];
    /* a silent peer (rank 0 watches everyone, the others watch rank 0) */
    for (int r = 0; r < d->size; r++) {
        if (r == d->rank || (d->rank != 0 && r != 0))
            continue;
        if (t - d->peers[r].heard > d->timeout) {
            fail_all(d,
                     "rank %d (host %s) has not been heard from for %.0f s (--collective_timeout="
                     "%g; its last heartbeat came from step %lld): it died or hangs",
                     r, d->hosts[r], t - d->peers[r].heard, d->timeout,
                     (long long)d->peers[r].hb.step);
            return;
        }
    }
    /* rank 0 working alone (saving, evaluating) and still heard from: the
     * others wait for it, up to ten timeouts, and a wait counts from then */
    const peer *p0 = &d->peers[0];
    bool excused = d->rank != 0 && p0->hb.alone && t - p0->heard < d->timeout &&
                   t - p0->alone_since < 10 * d->timeout;
    double alone = d->rank != 0 ? p0->alone_seen : 0;
    for (dop *o = d->active; o && !excused; o = o->next)
        if (t - fmax(o->t_start, alone) > d->timeout) {
            describe_suspect(d, t, who, sizeof who);
            describe_op(d, o, what, sizeof what);
            fail_all(d, "%s did not finish within %g s (--collective_timeout): %s", what,
                     d->timeout, who);
            return;
        }
}

/* ---- heartbeats (comm thread) ------------------------------------------------- */

static void hb_post(slim__dist *d)
{
    int rc = MPI_Irecv(&d->in, (int)sizeof d->in, MPI_BYTE, d->rank == 0 ? MPI_ANY_SOURCE : 0,
                       HB_TAG, d->hb_comm, &d->rreq);
    if (rc != MPI_SUCCESS)
        d->rreq = MPI_REQUEST_NULL;
}

static void hb_poll(slim__dist *d, double t)
{
    for (int k = 0; k < 64 && d->rreq != MPI_REQUEST_NULL; k++) {
        int flag = 0;
        MPI_Status s;
        if (MPI_Test(&d->rreq, &flag, &s) != MPI_SUCCESS || !flag)
            return;
        int from = s.MPI_SOURCE;
        if (from >= 0 && from < d->size) {
            if (d->in.alone && !d->peers[from].hb.alone)
                d->peers[from].alone_since = t;
            if (d->in.alone)
                d->peers[from].alone_seen = t;
            d->peers[from].hb = d->in;
            d->peers[from].heard = t;
        }
        hb_post(d);
    }
}

static void hb_send(slim__dist *d, double t)
{
    hb_msg m = {.step = __atomic_load_n(&d->step, __ATOMIC_RELAXED),
                .alone = __atomic_load_n(&d->alone, __ATOMIC_RELAXED),
                .waiting = __atomic_load_n(&d->waiting, __ATOMIC_RELAXED),
                .suspect = -1};
    if (d->rank == 0)
        find_suspect(d, t, &m);
    for (int r = 0; r < d->size; r++) {
        if (r == d->rank || (d->rank != 0 && r != 0))
            continue;
        peer *p = &d->peers[r];
        if (p->sreq != MPI_REQUEST_NULL) { /* the last one is still on its way */
            int flag = 0;
            MPI_Test(&p->sreq, &flag, MPI_STATUS_IGNORE);
            if (!flag)
                continue;
        }
        p->out = m;
        if (MPI_Isend(&p->out, (int)sizeof p->out, MPI_BYTE, r, HB_TAG, d->hb_comm, &p->sreq) !=
            MPI_SUCCESS)
            p->sreq = MPI_REQUEST_NULL;
    }
}

/* ---- the communication thread ------------------------------------------------- */

static int start_op(slim__dist *d, dop *o)
{
    switch (o->kind) {
    case OP_BUCKET:
    case OP_ALLREDUCE:
        return MPI_Iallreduce(MPI_IN_PLACE, o->buf, o->count, o->type, o->op, d->comm, &o->req);
    case OP_BCAST: return MPI_Ibcast(o->buf, o->count, o->type, 0, d->comm, &o->req);
    case OP_ALLGATHER:
        return MPI_Iallgather(o->buf, o->count, o->type, o->rbuf, o->count, o->type, d->comm,
                              &o->req);
    case OP_GATHERV:
        return MPI_Igatherv(o->buf, o->count, o->type, o->rbuf, o->rcounts, o->displs, o->type, 0,
                            d->comm, &o->req);
    default: return MPI_Ibarrier(d->comm, &o->req);
    }
}

/* Wait on cv_work (mu held) for at most `seconds`. */
static void timed_wait(slim__dist *d, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&d->cv_work, &d->mu, &ts);
}

static void *comm_main(void *arg)
{
    slim__dist *d = arg;
    double next_hb = 0, poll = POLL_MIN;
    pthread_setname_np(pthread_self(), "slim-comm"); /* top -H, /proc/PID/task */
    pthread_mutex_lock(&d->mu);
    hb_post(d);
    while (!d->quit) {
        __atomic_add_fetch(&d->polls, 1, __ATOMIC_RELAXED);
        if (d->failed) { /* no more MPI: wait to be closed */
            pthread_cond_wait(&d->cv_work, &d->mu);
            continue;
        }
        if (d->q_head)
            poll = POLL_MIN;
        while (d->q_head && !d->failed) {
            dop *o = d->q_head;
            d->q_head = o->next;
            if (!d->q_head)
                d->q_tail = NULL;
            pthread_mutex_unlock(&d->mu);
            o->t_start = now();
            int rc = start_op(d, o);
            pthread_mutex_lock(&d->mu);
            if (rc != MPI_SUCCESS) {
                char m[MPI_MAX_ERROR_STRING];
                fail_all(d, "starting %s: %s", o->what ? o->what : "a collective", mpi_msg(rc, m));
                break;
            }
            o->state = ST_ACTIVE;
            o->next = d->active;
            d->active = o;
        }
        if (d->failed)
            continue;
        dop *act = d->active;
        pthread_mutex_unlock(&d->mu);

        bool progressed = false;
        int rc = MPI_SUCCESS;
        const char *failed_what = NULL;
        for (dop *o = act; o && rc == MPI_SUCCESS; o = o->next) {
            int flag = 0;
            rc = MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                failed_what = o->what;
            else if (flag) {
                o->t_done = now();
                o->tested = true; /* published under mu below */
                progressed = true;
            }
        }
        double t = now();
        hb_poll(d, t);
        if (t >= next_hb) {
            hb_send(d, t);
            next_hb = t + d->hb_interval;
        }

        pthread_mutex_lock(&d->mu);
        if (rc != MPI_SUCCESS) {
            char m[MPI_MAX_ERROR_STRING];
            fail_all(d, "%s: %s", failed_what ? failed_what : "a collective", mpi_msg(rc, m));
            continue;
        }
        if (progressed) {
            dop **pp = &d->active;
            while (*pp) {
                dop *o = *pp;
                if (o->tested) {
                    *pp = o->next;
                    o->state = ST_DONE; /* the waiter may reuse it from now on */
                } else {
                    pp = &o->next;
                }
            }
            pthread_cond_broadcast(&d->cv_done);
        }
        check_deadlines(d, t);
        if (progressed)
            poll = POLL_MIN;
        if (d->failed || d->q_head || progressed)
            continue;
        if (d->active) {
            timed_wait(d, poll);
            poll = fmin(2 * poll, POLL_MAX);
        } else if (next_hb > t) {
            timed_wait(d, fmin(next_hb - t, 0.01));
        }
    }
    bool ok = !d->failed;
    pthread_mutex_unlock(&d->mu);
    if (ok) { /* leave nothing pending behind us */
        if (d->rreq != MPI_REQUEST_NULL) {
            MPI_Cancel(&d->rreq);
            MPI_Request_free(&d->rreq);
        }
        for (int r = 0; r < d->size; r++)
            if (d->peers[r].sreq != MPI_REQUEST_NULL)
                MPI_Request_free(&d->peers[r].sreq);
    }
    return NULL;
}

/* ---- the training thread's side ----------------------------------------------- */

static void add_span(slim__dist *d, double t0, double t1, int kind, int bk, double bytes)
{
    if (!d->o.trace)
        return;
    if (d->n_spans == d->cap_spans) {
        int cap = d->cap_spans ? 2 * d->cap_spans : 256;
        slim__dist_span *s = realloc(d->spans, (size_t)cap * sizeof *s);
        if (!s)
            return;
        d->spans = s;
        d->cap_spans = cap;
    }
    d->spans[d->n_spans++] = (slim__dist_span){t0, t1, kind, bk, d->step, bytes};
}

static void enqueue(slim__dist *d, dop *o)
{
    o->state = ST_QUEUED;
    o->tested = false;
    o->next = NULL;
    o->step = d->step;
    pthread_mutex_lock(&d->mu);
    if (d->failed) {
        o->state = ST_FAILED;
    } else {
        if (d->q_tail)
            d->q_tail->next = o;
        else
            d->q_head = o;
        d->q_tail = o;
        pthread_cond_signal(&d->cv_work);
    }
    pthread_mutex_unlock(&d->mu);
}

/* Until o is done or failed. The communication thread enforces the deadline;
 * this one only guards against that thread itself being stuck. */
static slim_status wait_op(slim__dist *d, dop *o, slim_error *err)
{
    double t0 = now();
    __atomic_store_n(&d->waiting, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&d->mu);
    while (o->state != ST_DONE && o->state != ST_FAILED && !d->failed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&d->cv_done, &d->mu, &ts);
        if (now() - t0 > 2 * d->timeout + 30)
            fail_all(d, "the communication thread is stuck in MPI");
    }
    slim_status st = o->state == ST_DONE ? SLIM_OK : SLIM_EIO;
    if (st && err)
        *err = d->failure;
    pthread_mutex_unlock(&d->mu);
    __atomic_store_n(&d->waiting, 0, __ATOMIC_RELAXED);
    double t1 = now();
    d->wait_total += t1 - t0;
    add_span(d, t0, t1, 1, o->kind == OP_BUCKET ? o->bucket : -1, 0);
    return st;
}

static slim_status run_op(slim__dist *d, dop *o, slim_error *err)
{
    enqueue(d, o);
    return wait_op(d, o, err);
}

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
    enqueue(d, &bk->op);
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
        fail_all(d, "out of memory for the gradient buckets");
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
        if (wait_op(d, &bk->op, NULL))
            return NULL;
        bk->waited = true;
        add_span(d, bk->op.t_start, bk->op.t_done, 0, bk->op.bucket, (double)bk->n * sizeof(float));
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
    run_op(d, &o, NULL);
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
    return run_op(d, &o, err);
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
        slim_status st = run_op(d, &o, err);
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
    return run_op(d, &o, err);
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
        st = run_op(d, &o, err);
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
    return run_op(d, &o, err);
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
    double t = now();
    for (int r = 0; r < d->size; r++) {
        d->peers[r].heard = t;
        d->peers[r].sreq = MPI_REQUEST_NULL;
        d->peers[r].hb.suspect = -1;
    }
    d->rreq = MPI_REQUEST_NULL;
    if (pthread_create(&d->th, NULL, comm_main, d) != 0) {
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
