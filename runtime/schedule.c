/* runtime/schedule.c - learning-rate schedules and optimizer set-up, after
 * TF-Slim's train_image_classifier.py:
 *
 *   decay_steps = int(examples_per_epoch * num_epochs_per_decay / batch_size)
 *   fixed:        lr
 *   exponential:  lr * factor^(step / decay_steps)   (floor'ed: staircase, TF-Slim's choice)
 *   polynomial:   (lr - end) * (1 - min(step, decay_steps) / decay_steps) + end   (power 1)
 *   cosine:       tf.train.cosine_decay over the whole run, alpha = end / lr:
 *                 lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, T) / T)) + alpha)
 * plus an optional linear warm-up (Goyal et al. 2017, "Accurate, Large
 * Minibatch SGD"): the schedule's rate times (step + 1) / warmup_steps for
 * the first warmup_steps steps.
 */
#include "runtime/schedule.h"

#include "core/error.h"

#include <math.h>
#include <string.h>

slim_status slim__rt_lr_schedule_init(slim__rt_lr_schedule *s, const slim_train_config *c,
                                      int64_t epoch_examples, int64_t total_steps, slim_error *err)
{
    memset(s, 0, sizeof *s);
    const char *t = c->learning_rate_decay_type ? c->learning_rate_decay_type : "exponential";
    if (!strcmp(t, "fixed"))
        s->kind = SLIM__LR_FIXED;
    else if (!strcmp(t, "exponential"))
        s->kind = SLIM__LR_EXPONENTIAL;
    else if (!strcmp(t, "polynomial"))
        s->kind = SLIM__LR_POLYNOMIAL;
    else if (!strcmp(t, "cosine"))
        s->kind = SLIM__LR_COSINE;
    else
        return slim__error(err, SLIM_EINVAL,
                           "--learning_rate_decay_type=%s: expected fixed, exponential, "
                           "polynomial or cosine",
                           t);
    if (!(c->learning_rate > 0))
        return slim__error(err, SLIM_EINVAL, "--learning_rate must be > 0 (got %g)",
                           c->learning_rate);
    s->lr = c->learning_rate;
    s->end_lr = c->end_learning_rate;
    s->factor = c->learning_rate_decay_factor;
    s->staircase = c->staircase;
    int bs = c->batch_size > 0 ? c->batch_size : 1;
    if (s->kind == SLIM__LR_EXPONENTIAL || s->kind == SLIM__LR_POLYNOMIAL) {
        if (epoch_examples <= 0)
            return slim__error(err, SLIM_EINVAL,
                               "--learning_rate_decay_type=%s needs the epoch size, which this "
                               "dataset does not give: use fixed or cosine",
                               t);
        s->decay_steps = floor((double)epoch_examples * c->num_epochs_per_decay / bs);
        if (s->decay_steps < 1)
            return slim__error(err, SLIM_EINVAL,
                               "--num_epochs_per_decay=%g gives less than one step per decay "
                               "period (%lld examples per epoch, batch %d)",
                               c->num_epochs_per_decay, (long long)epoch_examples, bs);
    }
    if (s->kind == SLIM__LR_COSINE) {
        if (total_steps <= 0)
            return slim__error(err, SLIM_EINVAL,
                               "--learning_rate_decay_type=cosine needs the run's length: set "
                               "--max_number_of_steps or --num_epochs");
        s->decay_steps = (double)total_steps;
    }
    if (c->warmup_epochs > 0) {
        if (epoch_examples <= 0)
            return slim__error(err, SLIM_EINVAL,
                               "--warmup_epochs needs the epoch size, which this dataset does "
                               "not give");
        s->warmup_steps = ceil((double)epoch_examples * c->warmup_epochs / bs);
    }
    return SLIM_OK;
}

double slim__rt_lr_at(const slim__rt_lr_schedule *s, int64_t step)
{
    double g = (double)(step < 0 ? 0 : step), lr = s->lr;
    switch (s->kind) {
    case SLIM__LR_FIXED: break;
    case SLIM__LR_EXPONENTIAL: {
        double p = g / s->decay_steps;
        lr = s->lr * pow(s->factor, s->staircase ? floor(p) : p);
        break;
    }
    case SLIM__LR_POLYNOMIAL: {
        double x = fmin(g, s->decay_steps) / s->decay_steps;
        lr = (s->lr - s->end_lr) * (1 - x) + s->end_lr;
        break;
    }
    case SLIM__LR_COSINE: {
        double alpha = s->end_lr / s->lr;
        double x = fmin(g, s->decay_steps) / s->decay_steps;
        lr = s->lr * ((1 - alpha) * 0.5 * (1 + cos(M_PI * x)) + alpha);
        break;
    }
    }
    if (s->warmup_steps > 0 && g < s->warmup_steps)
        lr *= (g + 1) / s->warmup_steps;
    return lr;
}

/* ---- optimizers ---------------------------------------------------------------- */

static void set(slim_attrs *a, const char *k, double v)
{
    slim_attrs_set_float(a, k, v);
}

slim_status slim__rt_optimizer_init(slim__rt_optimizer *o, const slim_train_config *c,
                                    const slim_registry *reg, slim_error *err)
{
    memset(o, 0, sizeof *o);
    const char *n = c->optimizer ? c->optimizer : "rmsprop";
    o->name = n;
    o->attrs = slim_attrs_new();
    if (!o->attrs)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim_attrs *a = o->attrs;
    if (!strcmp(n, "sgd")) {
        o->op = "sgd_update";
    } else if (!strcmp(n, "momentum")) {
        o->op = "momentum_update";
        set(a, "momentum", c->momentum);
        slim_attrs_set_bool(a, "use_nesterov", c->use_nesterov);
    } else if (!strcmp(n, "rmsprop")) {
        o->op = "rmsprop_update";
        set(a, "decay", c->rmsprop_decay);
        set(a, "momentum", c->rmsprop_momentum);
        set(a, "epsilon", c->opt_epsilon);
    } else if (!strcmp(n, "adam")) {
        o->op = "adam_update";
        set(a, "beta1", c->adam_beta1);
        set(a, "beta2", c->adam_beta2);
        set(a, "epsilon", c->opt_epsilon);
    } else if (!strcmp(n, "adagrad")) {
        o->op = "adagrad_update";
        if (!(c->adagrad_initial_accumulator_value > 0))
            goto bad_acc;
        set(a, "initial_accumulator_value", c->adagrad_initial_accumulator_value);
    } else if (!strcmp(n, "adadelta")) {
        o->op = "adadelta_update";
        set(a, "rho", c->adadelta_rho);
        set(a, "epsilon", c->opt_epsilon);
    } else if (!strcmp(n, "ftrl")) {
        o->op = "ftrl_update";
        if (!(c->ftrl_initial_accumulator_value > 0))
            goto bad_acc;
        set(a, "initial_accumulator_value", c->ftrl_initial_accumulator_value);
        set(a, "learning_rate_power", c->ftrl_learning_rate_power);
        set(a, "l1", c->ftrl_l1);
        set(a, "l2", c->ftrl_l2);
    } else {
        slim__rt_optimizer_fini(o);
        return slim__error(err, SLIM_EINVAL,
                           "--optimizer=%s: expected adadelta, adagrad, adam, ftrl, momentum, "
                           "rmsprop or sgd",
                           n);
    }
    if (!(c->clip_gradient_norm >= 0)) {
        slim__rt_optimizer_fini(o);
        return slim__error(err, SLIM_EINVAL,
                           "--clip_gradient_norm=%g: expected a norm > 0, or 0 for no clipping",
                           c->clip_gradient_norm);
    }
    /* the slots as the update op declares them */
    const slim_op_desc *d = slim_registry_find(reg, o->op);
    if (!d || d->n_slots > SLIM__RT_MAX_SLOTS || d->min_inputs != 2 + d->n_slots) {
        slim__rt_optimizer_fini(o);
        return slim__error(err, SLIM_EINTERNAL,
                           "update op %s is missing or does not declare its slots", o->op);
    }
    o->n_slots = d->n_slots;
    for (int k = 0; k < d->n_slots; k++)
        o->slot_names[k] = d->slots[k].name;
    return SLIM_OK;
bad_acc:
    slim__rt_optimizer_fini(o);
    return slim__error(err, SLIM_EINVAL,
                       "--optimizer=%s: the initial accumulator value must be > 0", n);
}

void slim__rt_optimizer_fini(slim__rt_optimizer *o)
{
    slim_attrs_free(o->attrs);
    o->attrs = NULL;
}
