/* runtime/schedule.h - learning-rate schedules (TF-Slim's _configure_learning_rate)
 * and the optimizer table (TF-Slim's _configure_optimizer). */
#ifndef SLIM_RUNTIME_SCHEDULE_H
#define SLIM_RUNTIME_SCHEDULE_H

#include <slim/train.h>

typedef enum slim__rt_lr_kind {
    SLIM__LR_FIXED = 0,
    SLIM__LR_EXPONENTIAL,
    SLIM__LR_POLYNOMIAL,
    SLIM__LR_COSINE,
} slim__rt_lr_kind;

typedef struct slim__rt_lr_schedule {
    slim__rt_lr_kind kind;
    double lr, end_lr, factor;
    double decay_steps;  /* exponential/polynomial: one decay period; cosine: the whole run */
    double warmup_steps; /* 0 = none */
    bool staircase;
} slim__rt_lr_schedule;

/* From the config, the epoch size (examples) and the run's total steps (0 = unknown). */
slim_status slim__rt_lr_schedule_init(slim__rt_lr_schedule *s, const slim_train_config *c,
                                      int64_t epoch_examples, int64_t total_steps, slim_error *err);
/* The learning rate of the update made at global step `step` (0-based). */
double slim__rt_lr_at(const slim__rt_lr_schedule *s, int64_t step);

/* An optimizer: its update op, attributes, and its slots' names (from the op's
 * descriptor, which also declares their initial values: the compiler writes them). */
#define SLIM__RT_MAX_SLOTS 8
typedef struct slim__rt_optimizer {
    const char *name; /* TF-Slim's --optimizer value */
    const char *op;   /* update op kind */
    int n_slots;
    const char *slot_names[SLIM__RT_MAX_SLOTS];
    slim_attrs *attrs; /* owned */
} slim__rt_optimizer;

/* From the config's flags; reg holds the update ops. */
slim_status slim__rt_optimizer_init(slim__rt_optimizer *o, const slim_train_config *c,
                                    const slim_registry *reg, slim_error *err);
void slim__rt_optimizer_fini(slim__rt_optimizer *o);

#endif
