/* runtime/train_internal.h - the trainer shared by slim_train (train_loop.c)
 * and slim_profile (profile.c). */
#ifndef SLIM_RUNTIME_TRAIN_INTERNAL_H
#define SLIM_RUNTIME_TRAIN_INTERNAL_H

#include "runtime/dist.h"
#include "runtime/report.h"
#include "runtime/schedule.h"
#include "runtime/session.h"

typedef struct slim__rt_trainer {
    const slim_train_config *c;
    slim_registry *reg;
    slim_model *model;
    const slim_model_info *model_info;
    slim_graph *g;
    slim_program *train, *eval;
    slim__rt_optimizer opt;
    slim__rt_lr_schedule lr;
    slim__rt_ema ema;
    bool has_ema;
    /* state outside --trainable_scopes (batch-norm moving statistics of
     * frozen layers): their values, put back after every step */
    int n_frozen;
    float **frozen_ptr, **frozen_copy;
    size_t *frozen_bytes;
    slim__rt_input in;
    slim__rt_data_desc desc;
    int num_classes, model_threads, input_threads;
    int64_t step, start_step, max_steps, epoch_examples;
    double start_time;
    slim__rt_jsonl *metrics;
    slim__rt_events *events;
    bool metrics_failing, events_failing; /* warned about, until a write succeeds */
    slim__rt_trace *trace;
    bool tracing; /* read by input workers (atomic loads) */
    /* across processes (runtime/dist.h): rank 0 alone writes and prints */
    slim__dist *dist; /* NULL when profiling */
    int rank, size;
    int64_t global_batch; /* batch_size x size */
    slim_collective coll;
    bool failed;  /* the run ended in an error: no goodbye to the other processes */
    bool by_file; /* the processes share the input by file, not by record */
    /* set-up: the resumed checkpoint's input sharing and positions (rank 0's, then everyone's) */
    bool ck_by_file;
    int ck_n_rpos;
    int64_t *ck_rpos;
} slim__rt_trainer;

typedef struct slim__rt_step_stats {
    double loss, accuracy, lr;
    double grad_norm; /* global gradient norm before clipping; NaN without clipping */
    double wait;      /* blocked waiting for the batch */
    double input;     /* getting and feeding the batch */
    double run;       /* the program (with its waits for the gradient allreduces) */
    double total;
    double t_begin, t_run, t_end;
    int n_valid;
} slim__rt_step_stats;

slim_status slim__rt_trainer_setup(slim__rt_trainer *t, const slim_train_config *c,
                                   bool for_profile, slim_error *err);
slim_status slim__rt_trainer_step(slim__rt_trainer *t, slim__rt_step_stats *ss, slim_error *err);
void slim__rt_trainer_trace_step(slim__rt_trainer *t, const slim__rt_step_stats *ss);
void slim__rt_trainer_fini(slim__rt_trainer *t);

void slim__rt_msg(slim_train_message_fn fn, void *user, int level, const char *fmt, ...)
    SLIM_PRINTF(4, 5);
/* After a write of metrics or events: a warning when it starts failing
 * (the rows are dropped until one succeeds), a note when it works again. */
void slim__rt_report_write(slim_train_message_fn fn, void *user, bool *failing, slim_status st,
                           const slim_error *e);
/* Across processes, rank > 0 passes on warnings and errors only, prefixed
 * with its name (rank 0 prints the run's notices). 0 = this process alone. */
void slim__rt_msg_rank(int rank, const char *name);
slim_status slim__rt_mkdirs(const char *path, slim_error *err);

#endif
