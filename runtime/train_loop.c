/* runtime/train_loop.c - slim_train: the loop around slim__rt_trainer_step with
 * reports (progress, JSON lines, TensorBoard), checkpoints (by steps, by
 * time, at the end and when stopped) and evaluation during training. */
#include "runtime/checkpoint.h"
#include "runtime/train_internal.h"

#include "engine/error.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static slim_status save(slim__rt_trainer *t, slim_train_result *res, slim_error *err)
{
    const slim_train_config *c = t->c;
    char path[1024], model[PATH_MAX];
    slim__rt_ckpt_path(c->train_dir, t->step, path, sizeof path);
    /* --model as an absolute path: eval run from elsewhere finds it too */
    const char *model_name = c->model_name;
    if (c->model_path)
        model_name = realpath(c->model_path, model) ? model : c->model_path;
    slim__rt_ckpt_state s = {
        .g = t->g,
        .p = t->train,
        .n_slots = t->opt.n_slots,
        .slot_names = t->opt.slot_names,
        .ema = t->has_ema ? t->ema.avg : NULL,
        .global_step = t->step,
        .seed = c->seed,
        .model_name = model_name,
        .optimizer = t->opt.op,
        .run_config = c->run_config,
        .num_classes = t->num_classes,
        .num_threads = t->model_threads,
        .batch_size = c->batch_size,
        .has_pos = true,
    };
    slim__rt_input_position(&t->in, &s.pos);
    double t0 = slim__rt_now();
    slim_status st = slim__rt_ckpt_save(path, &s, err);
    if (st)
        return st;
    slim__rt_ckpt_prune(c->train_dir, c->max_checkpoints_to_keep);
    if (t->trace && t->tracing)
        slim__rt_trace_span(t->trace, 0, "checkpoint", "checkpoint", t0, slim__rt_now(), NULL);
    snprintf(res->last_checkpoint, sizeof res->last_checkpoint, "%s", path);
    slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO, "saved %s (%.2f s)", path,
                 slim__rt_now() - t0);
    return SLIM_OK;
}

static slim_status evaluate_now(slim__rt_trainer *t, slim_error *err)
{
    const slim_train_config *c = t->c;
    slim__rt_input_opts io = {
        .dataset_name = c->dataset_name,
        .dataset_dir = c->dataset_dir,
        .split = c->eval_split_name,
        .recipe = c->preprocessing_name
                      ? c->preprocessing_name
                      : slim_recipe_for_model(t->model_info->name ? t->model_info->name : ""),
        .is_training = false,
        .batch_size = c->batch_size,
        .image_size = t->model_info->image_size,
        .channels = t->model_info->channels,
        .num_threads = t->input_threads,
        .num_readers = 1,
        .labels_offset = c->labels_offset,
        .seed = c->seed + 1,
        .num_epochs = 1,
        .synthetic = c->synthetic,
        .synthetic_examples = c->synthetic_examples / 4 > 0 ? c->synthetic_examples / 4 : 256,
        .num_classes = t->num_classes,
    };
    if (!c->synthetic && !c->eval_split_name && c->file_pattern)
        return slim__error(err, SLIM_EINVAL,
                           "--eval_every_n_steps with --file_pattern needs "
                           "--eval_split_name and --dataset_dir");
    slim__rt_input in;
    double t0 = slim__rt_now();
    slim_status st = slim__rt_input_open(&io, &in, err);
    if (st)
        return st;
    if (t->has_ema)
        slim__rt_ema_swap(&t->ema, t->g);
    slim_eval_result r;
    st = slim__rt_evaluate(t->eval, &in, t->num_classes, 0, c->stop, &r, err);
    if (t->has_ema)
        slim__rt_ema_swap(&t->ema, t->g);
    slim__rt_input_close(&in);
    if (st)
        return st;
    r.global_step = t->step;
    r.used_ema = t->has_ema;
    r.label_names = t->desc.label_names;
    if (t->trace && t->tracing)
        slim__rt_trace_span(t->trace, 0, "evaluation", "eval", t0, slim__rt_now(), NULL);
    const char *keys[] = {"step",      "eval_top1",     "eval_top5",
                          "eval_loss", "eval_examples", "eval_seconds"};
    double vals[] = {(double)t->step, r.top1, r.top5, r.loss, (double)r.n_examples, r.seconds};
    slim_error e2 = {0};
    st = slim__rt_jsonl_write(t->metrics, keys, vals, 6, "eval_split",
                              c->eval_split_name ? c->eval_split_name : "default", &e2);
    slim__rt_report_write(c->on_message, c->user, &t->metrics_failing, st, &e2);
    const char *tags[] = {"eval/Accuracy", "eval/Recall_5", "eval/loss"};
    double tv[] = {r.top1, r.top5, r.loss};
    st = slim__rt_events_scalars(t->events, t->step, tags, tv, 3, &e2);
    slim__rt_report_write(c->on_message, c->user, &t->events_failing, st, &e2);
    if (c->on_eval)
        c->on_eval(&r, c->user);
    slim_eval_result_fini(&r);
    return SLIM_OK;
}

static void describe(slim__rt_trainer *t)
{
    const slim_train_config *c = t->c;
    const slim_model_info *mi = t->model_info;
    slim_program_stats ps;
    slim_program_get_stats(t->train, &ps);
    char len[64];
    if (t->max_steps)
        snprintf(len, sizeof len, "%lld steps", (long long)t->max_steps);
    else
        snprintf(len, sizeof len, "no step limit");
    slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                 "%s: %lld parameters (%lld trainable), %dx%dx%d input, %d classes; batch %d; "
                 "%d model thread%s + %d input worker%s; optimizer %s; learning rate %g (%s); %s",
                 mi->name, (long long)mi->n_params, (long long)mi->n_trainable, mi->image_size,
                 mi->image_size, mi->channels, t->num_classes, c->batch_size, t->model_threads,
                 t->model_threads > 1 ? "s" : "", t->input_threads, t->input_threads > 1 ? "s" : "",
                 t->opt.name, c->learning_rate,
                 c->learning_rate_decay_type ? c->learning_rate_decay_type : "exponential", len);
    slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                 "memory: %.1f MiB activations+gradients (planned; %.1f without reuse), %.1f MiB "
                 "parameters, %.1f MiB optimizer slots",
                 ps.arena_bytes / 1048576.0, ps.naive_bytes / 1048576.0, ps.param_bytes / 1048576.0,
                 ps.slot_bytes / 1048576.0);
}

slim_status slim_train(const slim_train_config *c, slim_train_result *res, slim_error *err)
{
    slim_train_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    slim__rt_trainer t;
    slim_status st = slim__rt_trainer_setup(&t, c, false, err);
    if (st) {
        slim__rt_trainer_fini(&t);
        return st;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c->train_dir);
    { /* the steps after the checkpoint (or all, with none) are logged again */
        int dropped;
        slim_error e2 = {0};
        if (slim__rt_jsonl_trim(path, t.step, &dropped, &e2))
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN,
                         "%s; metrics.jsonl may repeat the steps after %lld", e2.msg,
                         (long long)t.step);
    }
    t.metrics = slim__rt_jsonl_open(path, err);
    if (!t.metrics || !(t.events = slim__rt_events_new(c->train_dir))) {
        slim__rt_trainer_fini(&t);
        return t.metrics ? slim__error(err, SLIM_ENOMEM, "out of memory") : SLIM_EIO;
    }
    describe(&t);
    res->start_step = t.step;
    if (t.max_steps && t.step >= t.max_steps)
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                     "already at step %lld of %lld: nothing to train", (long long)t.step,
                     (long long)t.max_steps);

    double run_start = slim__rt_now(), last_save = run_start, last_report = run_start;
    int64_t last_saved_step = t.step, period_steps = 0, period_images = 0;
    double loss_sum = 0, acc_sum = 0, wait_sum = 0, norm_sum = 0, last_loss = NAN;
    const bool clipping = c->clip_gradient_norm > 0;
    int64_t log_every = c->log_every_n_steps > 0 ? c->log_every_n_steps : 10;
    bool trace_written = false;
    while (!t.max_steps || t.step < t.max_steps) {
        if (c->stop && *c->stop) {
            res->interrupted = true;
            break;
        }
        slim__rt_step_stats ss;
        st = slim__rt_trainer_step(&t, &ss, err);
        if (st)
            break;
        if (!isfinite(ss.loss)) {
            st = slim__error(err, SLIM_ESTATE,
                             "the loss is %g at step %lld: training diverged; lower "
                             "--learning_rate (the last checkpoint, step %lld, is kept)",
                             ss.loss, (long long)t.step, (long long)last_saved_step);
            break;
        }
        loss_sum += ss.loss;
        acc_sum += ss.accuracy;
        norm_sum += ss.grad_norm;
        wait_sum += ss.wait;
        period_steps++;
        period_images += ss.n_valid;
        slim__rt_trainer_trace_step(&t, &ss);
        if (t.trace && t.tracing &&
            t.step - res->start_step >= (c->trace_steps > 0 ? c->trace_steps : 50)) {
            __atomic_store_n(&t.tracing, false, __ATOMIC_RELAXED);
            slim_program_set_profiling(t.train, false);
            slim_error e2 = {0};
            if (slim__rt_trace_write(t.trace, c->trace_path, &e2))
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "%s", e2.msg);
            else
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                             "wrote the trace of steps %lld-%lld to %s (open it in "
                             "https://ui.perfetto.dev or chrome://tracing)",
                             (long long)res->start_step + 1, (long long)t.step, c->trace_path);
            trace_written = true;
        }
        bool last = t.max_steps && t.step >= t.max_steps;
        if (t.step % log_every == 0 || last) {
            double now = slim__rt_now(), dt = now - last_report;
            slim_train_progress p = {
                .step = t.step,
                .max_steps = t.max_steps,
                .epoch = t.epoch_examples
                             ? (double)t.step * c->batch_size / (double)t.epoch_examples
                             : 0,
                .loss = loss_sum / (double)period_steps,
                .accuracy = acc_sum / (double)period_steps,
                .grad_norm = clipping ? norm_sum / (double)period_steps : NAN,
                .learning_rate = ss.lr,
                .images_per_sec = dt > 0 ? (double)period_images / dt : 0,
                .input_wait = dt > 0 ? fmin(1, wait_sum / dt) : 0,
                .elapsed = now - run_start,
            };
            double per_step = (now - run_start) / (double)(t.step - res->start_step);
            p.eta_seconds = t.max_steps ? per_step * (double)(t.max_steps - t.step) : -1;
            last_loss = p.loss;
            if (c->on_progress)
                c->on_progress(&p, c->user);
            const char *keys[] = {"step",       "epoch",         "loss",
                                  "accuracy",   "learning_rate", "images_per_sec",
                                  "input_wait", "elapsed",       "grad_norm"};
            double vals[] = {(double)p.step,   p.epoch,      p.loss,    p.accuracy, p.learning_rate,
                             p.images_per_sec, p.input_wait, p.elapsed, p.grad_norm};
            slim_error e2 = {0};
            slim_status ws =
                slim__rt_jsonl_write(t.metrics, keys, vals, clipping ? 9 : 8, NULL, NULL, &e2);
            slim__rt_report_write(c->on_message, c->user, &t.metrics_failing, ws, &e2);
            const char *tags[] = {
                "losses/total_loss",   "accuracy", "learning_rate",       "images_per_sec",
                "input_wait_fraction", "epoch",    "gradient_global_norm"};
            double tv[] = {p.loss,       p.accuracy, p.learning_rate, p.images_per_sec,
                           p.input_wait, p.epoch,    p.grad_norm};
            ws = slim__rt_events_scalars(t.events, t.step, tags, tv, clipping ? 7 : 6, &e2);
            slim__rt_report_write(c->on_message, c->user, &t.events_failing, ws, &e2);
            last_report = now;
            loss_sum = acc_sum = wait_sum = norm_sum = 0;
            period_steps = period_images = 0;
        }
        bool stopping = c->stop && *c->stop;
        bool due =
            (c->save_interval_steps > 0 && t.step % c->save_interval_steps == 0) ||
            (c->save_interval_secs > 0 && slim__rt_now() - last_save >= c->save_interval_secs);
        if (due || stopping || last) {
            slim_error e2 = {0};
            if (save(&t, res, &e2) == SLIM_OK) {
                last_saved_step = t.step;
                last_save = slim__rt_now();
            } else if (stopping || last) {
                if (err)
                    *err = e2;
                st = e2.code;
                break;
            } else {
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "%s (training goes on)",
                             e2.msg);
                last_save = slim__rt_now(); /* retry at the next interval */
            }
        }
        if (t.eval && c->eval_every_n_steps > 0 && (t.step % c->eval_every_n_steps == 0 || last)) {
            st = evaluate_now(&t, err);
            if (st) {
                slim__error_prefix(err, "evaluating at step %lld: ", (long long)t.step);
                break;
            }
        }
        if (c->on_step)
            c->on_step(t.step, c->user);
        if (stopping) {
            res->interrupted = true;
            break;
        }
    }
    if (!st && res->interrupted && last_saved_step != t.step) {
        st = save(&t, res, err);
    }
    if (t.trace && !trace_written) {
        slim_error e2 = {0};
        if (slim__rt_trace_write(t.trace, c->trace_path, &e2))
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "%s", e2.msg);
        else
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO, "wrote the trace to %s",
                         c->trace_path);
    }
    res->global_step = t.step;
    res->final_loss = last_loss;
    res->seconds = slim__rt_now() - run_start;
    int64_t done = t.step - res->start_step;
    res->images_per_sec = res->seconds > 0 ? (double)done * c->batch_size / res->seconds : 0;
    if (t.in.pipe) { /* damaged records skipped (skip_damaged), as convert reports them */
        slim_pipeline_stats ps;
        slim_pipeline_get_stats(t.in.pipe, &ps);
        res->skipped = ps.skipped;
        const char *first = slim_pipeline_skip_message(t.in.pipe, 0);
        snprintf(res->first_skip, sizeof res->first_skip, "%s", first ? first : "");
    }
    slim__rt_trainer_fini(&t);
    return st;
}
