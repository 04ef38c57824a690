/* core/threadpool.c - workers sleep on a condition variable between jobs and
 * meet at a spinning barrier inside a job (nodes are short: a futex round trip
 * per node would cost more than small kernels). The spin yields after a
 * while so an oversubscribed machine still makes progress. */
#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

struct slim__pool {
    int nth;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv_start, cv_done;
    uint64_t generation; /* bumped per job */
    int done;            /* workers finished with the current job */
    bool quit;
    slim__pool_fn fn;
    void *arg;
    /* barrier */
    atomic_int bar_count;
    atomic_uint bar_phase;
};

typedef struct worker_arg {
    slim__pool *p;
    int ith;
} worker_arg;

static void *worker(void *v)
{
    worker_arg *wa = v;
    slim__pool *p = wa->p;
    int ith = wa->ith;
    free(wa);
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->cv_start, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        slim__pool_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        fn(arg, ith, p->nth);
        pthread_mutex_lock(&p->mu);
        if (++p->done == p->nth - 1)
            pthread_cond_signal(&p->cv_done);
        pthread_mutex_unlock(&p->mu);
    }
}

slim_status slim__pool_new(int nth, slim__pool **out)
{
    *out = NULL;
    if (nth < 1)
        nth = 1;
    slim__pool *p = calloc(1, sizeof *p);
    if (!p)
        return SLIM_ENOMEM;
    p->nth = nth;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_start, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    atomic_init(&p->bar_count, 0);
    atomic_init(&p->bar_phase, 0);
    p->threads = calloc((size_t)nth, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return SLIM_ENOMEM;
    }
    for (int i = 1; i < nth; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) {
            wa->p = p;
            wa->ith = i;
        }
        if (!wa || pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
            free(wa);
            p->nth = i; /* stop the ones started */
            slim__pool_free(p);
            return SLIM_ENOMEM;
        }
    }
    *out = p;
    return SLIM_OK;
}

void slim__pool_free(slim__pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->nth; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_start);
    pthread_cond_destroy(&p->cv_done);
    free(p->threads);
    free(p);
}

int slim__pool_size(const slim__pool *p)
{
    return p ? p->nth : 1;
}

void slim__pool_run(slim__pool *p, slim__pool_fn fn, void *arg)
{
    if (p->nth == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->done = 0;
    p->generation++;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->nth);
    pthread_mutex_lock(&p->mu);
    while (p->done < p->nth - 1)
        pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void slim__pool_barrier(slim__pool *p)
{
    if (p->nth == 1)
        return;
    unsigned phase = atomic_load_explicit(&p->bar_phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == p->nth - 1) {
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->bar_phase, 1, memory_order_acq_rel);
        return;
    }
    for (unsigned spins = 0; atomic_load_explicit(&p->bar_phase, memory_order_acquire) == phase;
         spins++) {
        if (spins > 2000)
            sched_yield();
    }
}
