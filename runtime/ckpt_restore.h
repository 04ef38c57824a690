/* runtime/ckpt_restore.h - matching a graph's parameters with a checkpoint's
 * tensors (any format: runtime/ckpt_reader.h) and restoring them. The match
 * is a plan first, so `slimrun ckpt diff` shows what restoring would do. */
#ifndef SLIM_RUNTIME_CKPT_RESTORE_H
#define SLIM_RUNTIME_CKPT_RESTORE_H

#include "runtime/checkpoint.h"
#include "runtime/ckpt_reader.h"

enum {
    SLIM__PLAN_LOAD = 1, /* from the tensor of its name */
    SLIM__PLAN_EMA,      /* from its moving average */
    SLIM__PLAN_EXCLUDED, /* under --checkpoint_exclude_scopes */
    SLIM__PLAN_MISSING,  /* the checkpoint has no tensor for it */
    SLIM__PLAN_SHAPE,    /* the tensor has another shape */
    SLIM__PLAN_DTYPE,    /* the tensor is not real numbers */
    SLIM__PLAN_CONST,    /* slim_const/...: the model's own constants, never restored */
};

typedef struct slim__ckpt_plan {
    int np;
    int *src;        /* per graph parameter: the entry it comes from, or -1 */
    uint8_t *status; /* per graph parameter: SLIM__PLAN_* */
    uint8_t *used;   /* per checkpoint entry: restores a parameter */
    int n_load, n_ema, n_excluded, n_missing, n_bad;
    int n_unused;          /* values of the checkpoint the model lacks */
    int n_unused_excluded; /* ... under the excluded scopes */
    int n_ema_unused, n_opt;
} slim__ckpt_plan;

/* Match every parameter of g (o: exclusions, assignment map; take_ema:
 * moving averages where the checkpoint has them). Names are TF-Slim's; a
 * parameter `.../weights` also matches tf.layers' `.../kernel` (biases: bias). */
slim_status slim__ckpt_plan_make(slim__ckpt *c, slim_graph *g, const slim_restore_opts *o,
                                 bool take_ema, slim__ckpt_plan *p, slim_error *err);
void slim__ckpt_plan_free(slim__ckpt_plan *p);
/* The checkpoint value nearest to a name (edit distance), or NULL. */
const char *slim__ckpt_nearest(const slim__ckpt *c, const slim__ckpt_plan *p, const char *name);

/* slim__rt_ckpt_restore on an open checkpoint. */
slim_status slim__ckpt_restore_from(slim__ckpt *c, slim__rt_ckpt_state *s, bool resume,
                                    const slim_restore_opts *o, slim_error *err);
/* info from c: its header, or for TensorFlow checkpoints the zoo model its
 * root scope names and the optimizer its slots name. */
void slim__ckpt_fill_info(const slim__ckpt *c, slim_checkpoint_info *info);

#endif
