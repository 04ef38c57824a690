/* core/threadpool.h - a fixed pool of threads that run one job together. */
#ifndef SLIM_CORE_THREADPOOL_H
#define SLIM_CORE_THREADPOOL_H

#include <slim/op.h>

typedef struct slim__pool slim__pool;

/* fn(arg, ith, nth) runs on every thread, ith = 0 on the caller. */
typedef void (*slim__pool_fn)(void *arg, int ith, int nth);

/* nth threads in all: the caller plus nth - 1 workers. */
slim_status slim__pool_new(int nth, slim__pool **out);
void slim__pool_free(slim__pool *p);
int slim__pool_size(const slim__pool *p);
/* Run fn on all threads and wait for all of them. */
void slim__pool_run(slim__pool *p, slim__pool_fn fn, void *arg);
/* A barrier across the pool's threads, for use inside fn. */
void slim__pool_barrier(slim__pool *p);

#endif
