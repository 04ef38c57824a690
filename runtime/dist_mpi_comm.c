/* runtime/dist_mpi_comm.c - the communication thread of the communicator over
 * MPI (runtime/dist_mpi.h), its heartbeats and its watchdog.
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
 * the other processes. */
#include "runtime/dist_mpi.h"

#include "core/error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HB_TAG 17
/* Between tests while something is in flight: from 10 us, doubling while
 * nothing moves, up to 1 ms (a peer still computing costs ~1000 wake-ups a
 * second, not 50000); back to 10 us as soon as something completes or
 * starts, and a new operation wakes the thread at once. */
#define POLL_MIN 10e-6
#define POLL_MAX 1e-3

double slim__dist_now(void)
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
void slim__dist_fail(slim__dist *d, const char *fmt, ...)
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
            slim__dist_fail(
                d,
                "rank %d (host %s) has not been heard from for %.0f s (--collective_timeout="
                "%g; its last heartbeat came from step %lld): it died or hangs",
                r, d->hosts[r], t - d->peers[r].heard, d->timeout, (long long)d->peers[r].hb.step);
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
            slim__dist_fail(d, "%s did not finish within %g s (--collective_timeout): %s", what,
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

void *slim__dist_comm_main(void *arg)
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
            o->t_start = slim__dist_now();
            int rc = start_op(d, o);
            pthread_mutex_lock(&d->mu);
            if (rc != MPI_SUCCESS) {
                char m[MPI_MAX_ERROR_STRING];
                slim__dist_fail(d, "starting %s: %s", o->what ? o->what : "a collective",
                                mpi_msg(rc, m));
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
                o->t_done = slim__dist_now();
                o->tested = true; /* published under mu below */
                progressed = true;
            }
        }
        double t = slim__dist_now();
        hb_poll(d, t);
        if (t >= next_hb) {
            hb_send(d, t);
            next_hb = t + d->hb_interval;
        }

        pthread_mutex_lock(&d->mu);
        if (rc != MPI_SUCCESS) {
            char m[MPI_MAX_ERROR_STRING];
            slim__dist_fail(d, "%s: %s", failed_what ? failed_what : "a collective",
                            mpi_msg(rc, m));
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

void slim__dist_add_span(slim__dist *d, double t0, double t1, int kind, int bk, double bytes)
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

void slim__dist_enqueue(slim__dist *d, dop *o)
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
slim_status slim__dist_wait_op(slim__dist *d, dop *o, slim_error *err)
{
    double t0 = slim__dist_now();
    __atomic_store_n(&d->waiting, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&d->mu);
    while (o->state != ST_DONE && o->state != ST_FAILED && !d->failed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&d->cv_done, &d->mu, &ts);
        if (slim__dist_now() - t0 > 2 * d->timeout + 30)
            slim__dist_fail(d, "the communication thread is stuck in MPI");
    }
    slim_status st = o->state == ST_DONE ? SLIM_OK : SLIM_EIO;
    if (st && err)
        *err = d->failure;
    pthread_mutex_unlock(&d->mu);
    __atomic_store_n(&d->waiting, 0, __ATOMIC_RELAXED);
    double t1 = slim__dist_now();
    d->wait_total += t1 - t0;
    slim__dist_add_span(d, t0, t1, 1, o->kind == OP_BUCKET ? o->bucket : -1, 0);
    return st;
}

slim_status slim__dist_run_op(slim__dist *d, dop *o, slim_error *err)
{
    slim__dist_enqueue(d, o);
    return slim__dist_wait_op(d, o, err);
}
