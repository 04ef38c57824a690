/* runtime/train_loop.c - slim_train: the loop around slim__rt_trainer_step with
 * reports (progress, JSON lines, TensorBoard), checkpoints (by steps, by
 * time, at the end and when stopped) and evaluation during training. */
#include "runtime/checkpoint.h"
#include "runtime/train_internal.h"

#include "core/error.h"
#include "core/names.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* rpos (n values): every process's input position when they share it by file. */
static slim_status save(slim__rt_trainer *t, slim_train_result *res, const int64_t *rpos, int n,
                        slim_error *err)
{
    const slim_train_config *c = t->c;
    char path[1024], model[PATH_MAX];
    bool tf = c->save_format && !strcmp(c->save_format, "tf");
    if (tf)
        slim__rt_ckpt_tf_prefix(c->train_dir, t->step, path, sizeof path);
    else
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
        .replicas = t->size,
        .has_pos = true,
        .by_file = t->by_file,
        .n_rpos = n,
        .rpos = (int64_t *)rpos,
    };
    slim__rt_input_position(&t->in, &s.pos);
    double t0 = slim__rt_now();
    if (t->dist) /* the others wait at the next collective: their deadlines allow for it */
        slim__dist_set_alone(t->dist, true);
    slim_status st = tf ? slim__rt_ckpt_save_tf(path, &s, err) : slim__rt_ckpt_save(path, &s, err);
    if (t->dist)
        slim__dist_set_alone(t->dist, false);
    if (st)
        return st;
    slim__rt_ckpt_prune(c->train_dir, c->max_checkpoints_to_keep);
    if (tf && (st = slim__rt_ckpt_write_state_file(c->train_dir, err)))
        return st;
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
        .grayscale = c->use_grayscale,
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
    if (t->dist)
        slim__dist_set_alone(t->dist, true);
    st = slim__rt_evaluate(t->eval, &in, t->num_classes, 0, c->stop, &r, err);
    if (t->dist)
        slim__dist_set_alone(t->dist, false);
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
    char len[64], batch[160];
    if (t->max_steps)
        snprintf(len, sizeof len, "%lld steps", (long long)t->max_steps);
    else
        snprintf(len, sizeof len, "no step limit");
    if (t->size > 1)
        snprintf(batch, sizeof batch,
                 "batch %d per process x %d processes = global batch %lld (gradients averaged; "
                 "batch norm statistics %s)",
                 c->batch_size, t->size, (long long)t->global_batch,
                 c->sync_batch_norm ? "over the global batch" : "per process");
    else
        snprintf(batch, sizeof batch, "batch %d", c->batch_size);
    /* what is trained: the trainable parameters within --trainable_scopes */
    bool scoped = c->trainable_scopes && c->trainable_scopes[0];
    int64_t trained = 0;
    for (int i = 0, np = slim_graph_param_count(t->g); i < np; i++) {
        const char *name;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(t->g, i, &name, &v, &fl);
        if ((fl & SLIM_PARAM_TRAINABLE) && (!scoped || slim__in_scopes(name, c->trainable_scopes)))
            trained += slim_shape_numel(&v.shape);
    }
    /* the input has a worker of its own even when the budget is one thread */
    int budget = c->num_threads > 0 ? c->num_threads : slim__rt_cores();
    char over[160] = "";
    if (t->model_threads + t->input_threads > budget)
        snprintf(over, sizeof over,
                 " (%d threads on --num_threads=%d cores: the input worker shares them)",
                 t->model_threads + t->input_threads, budget);
    slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                 "%s: %lld parameters (%lld %s), %dx%dx%d input, %d classes; %s; "
                 "%d model thread%s + %d input worker%s%s; optimizer %s; learning rate %g (%s); %s",
                 mi->name, (long long)mi->n_params, (long long)trained,
                 scoped ? "trained: --trainable_scopes" : "trainable", mi->image_size,
                 mi->image_size, mi->channels, t->num_classes, batch, t->model_threads,
                 t->model_threads > 1 ? "s" : "", t->input_threads, t->input_threads > 1 ? "s" : "",
                 over, t->opt.name, c->learning_rate,
                 c->learning_rate_decay_type ? c->learning_rate_decay_type : "exponential", len);
    if (t->n_frozen)
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                     "frozen: %d batch-norm statistics tensor%s outside --trainable_scopes keep "
                     "their values; their layers normalize with them (moving statistics, as in "
                     "inference), so a backbone trained little stays as it is%s",
                     t->n_frozen, t->n_frozen == 1 ? "" : "s",
                     c->train_frozen_batch_norm ? ""
                                                : " (--train_frozen_batch_norm: TF-Slim's "
                                                  "batch statistics, moving averages updated)");
    slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                 "memory: %.1f MiB activations+gradients (planned; %.1f without reuse), %.1f MiB "
                 "parameters, %.1f MiB optimizer slots",
                 ps.arena_bytes / 1048576.0, ps.naive_bytes / 1048576.0, ps.param_bytes / 1048576.0,
                 ps.slot_bytes / 1048576.0);
}

/* ---- across processes ------------------------------------------------------------ */

/* A checksum of what must be the same on every process: the trained
 * parameters and their optimizer slots, and the batch-norm statistics when
 * they are synchronized. Four 64-bit lanes over the words. */
static uint64_t replica_checksum(slim__rt_trainer *t)
{
    uint64_t lane[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                        0x27D4EB2F165667C5ull};
    int np = slim_graph_param_count(t->g);
    for (int i = 0; i < np; i++) {
        const char *name;
        slim_tensor v, sv;
        unsigned fl;
        slim_graph_param_at(t->g, i, &name, &v, &fl);
        if (!(fl & SLIM_PARAM_TRAINABLE) && !t->c->sync_batch_norm)
            continue;
        size_t bytes = (size_t)slim_shape_numel(&v.shape) * slim_dtype_size(v.dtype);
        for (int k = -1; k < t->opt.n_slots; k++) {
            const uint8_t *d = v.data;
            if (k >= 0) {
                if (slim_program_slot(t->train, name, k, &sv, NULL) != SLIM_OK)
                    continue;
                d = sv.data;
            }
            size_t j = 0;
            for (; j + 32 <= bytes; j += 32)
                for (int l = 0; l < 4; l++) {
                    uint64_t w;
                    memcpy(&w, d + j + 8 * l, 8);
                    lane[l] = (lane[l] ^ w) * 0x100000001B3ull;
                    lane[l] ^= lane[l] >> 29;
                }
            for (; j < bytes; j++)
                lane[j & 3] = (lane[j & 3] ^ d[j]) * 0x100000001B3ull;
        }
    }
    return lane[0] ^ (lane[1] * 3) ^ (lane[2] * 5) ^ (lane[3] * 7);
}

static slim_status check_replicas(slim__rt_trainer *t, slim_error *err)
{
    uint64_t mine = replica_checksum(t), *all = malloc((size_t)t->size * sizeof *all);
    if (!all)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim_status st = slim__dist_allgather(t->dist, mine, all, "the weight checksum allgather", err);
    char bad[512] = "";
    size_t at = 0;
    int n_bad = 0;
    for (int r = 1; !st && r < t->size; r++)
        if (all[r] != all[0]) {
            n_bad++;
            if (at < sizeof bad - 40)
                at += (size_t)snprintf(bad + at, sizeof bad - at, "%s%d (%016llx)", at ? ", " : "",
                                       r, (unsigned long long)all[r]);
        }
    if (n_bad)
        st = slim__error(err, SLIM_ESTATE,
                         "step %lld: the weights of rank%s %s differ from rank 0's (checksum "
                         "%016llx): the processes diverged (different builds, data or flags "
                         "on some machines, or a bug); the last checkpoint was written before",
                         (long long)t->step, n_bad > 1 ? "s" : "", bad, (unsigned long long)all[0]);
    free(all);
    return st;
}

/* This process's CPU time, every thread (kernels, input, communication). */
static double cpu_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every rank's allreduce spans into rank 0's trace, on two tracks per rank
 * (the bucket on the wire, the training thread waiting). Times are made
 * relative to the barrier every rank left at t0 (their clocks differ). */
static slim_status trace_allreduces(slim__rt_trainer *t, double t0, slim_error *err)
{
    slim__dist_span *sp;
    int n = slim__dist_take_spans(t->dist, &sp);
    for (int i = 0; i < n; i++)
        sp[i].t0 -= t0, sp[i].t1 -= t0;
    void *all = NULL;
    size_t *sizes = calloc((size_t)t->size, sizeof *sizes);
    slim_status st = sizes ? slim__dist_gather(t->dist, sp, (size_t)n * sizeof *sp, &all, sizes,
                                               "gathering the allreduce trace", err)
                           : slim__error(err, SLIM_ENOMEM, "out of memory");
    free(sp);
    if (!st && t->rank == 0 && t->trace) {
        const slim__dist_span *s = all;
        for (int r = 0; r < t->size; r++) {
            char nm[96];
            snprintf(nm, sizeof nm, "rank %d: gradient allreduce on the wire", r);
            slim__rt_trace_thread(t->trace, 1000 + 2 * r, nm, 1000 + 2 * r);
            snprintf(nm, sizeof nm, "rank %d: training thread waiting", r);
            slim__rt_trace_thread(t->trace, 1001 + 2 * r, nm, 1001 + 2 * r);
            for (size_t k = 0; k < sizes[r] / sizeof *s; k++, s++) {
                char name[64], args[160];
                if (s->kind == 0)
                    snprintf(name, sizeof name, "allreduce bucket %d", s->bucket + 1);
                else
                    snprintf(name, sizeof name, "%s",
                             s->bucket >= 0 ? "wait for a bucket" : "wait for a collective");
                snprintf(args, sizeof args, "{\"step\": %lld, \"rank\": %d, \"MB\": %.3f}",
                         (long long)s->step, r, s->bytes / 1e6);
                slim__rt_trace_span(t->trace, 1000 + 2 * r + (s->kind != 0), name, "allreduce",
                                    t0 + s->t0, t0 + s->t1, args);
            }
        }
    }
    free(all);
    free(sizes);
    return st;
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
        t.failed = true;
        slim__rt_trainer_fini(&t);
        return st;
    }
    const bool multi = t.size > 1, root = t.rank == 0;
    if (root) {
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
            t.failed = true;
            slim__rt_trainer_fini(&t);
            return t.metrics ? slim__error(err, SLIM_ENOMEM, "out of memory") : SLIM_EIO;
        }
    }
    describe(&t);
    res->start_step = t.step;
    if (t.max_steps && t.step >= t.max_steps)
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                     "already at step %lld of %lld: nothing to train", (long long)t.step,
                     (long long)t.max_steps);

    double trace_t0 = 0; /* across processes: the common time origin of the trace */
    if (multi && c->trace_path &&
        !(st = slim__dist_barrier(t.dist, "the barrier before tracing", err))) {
        trace_t0 = slim__rt_now();
        slim__dist_span *before; /* set-up's collectives: not traced */
        slim__dist_take_spans(t.dist, &before);
        free(before);
    }
    double run_start = slim__rt_now(), last_save = run_start, last_report = run_start;
    int64_t last_saved_step = t.step, period_steps = 0, period_images = 0;
    double loss_sum = 0, acc_sum = 0, wait_sum = 0, norm_sum = 0, comm_sum = 0, wire_sum = 0;
    double cpu_sum = 0, cpu_last = cpu_now(), ccpu_sum = 0, polls_sum = 0, ccpu = 0, polls = 0;
    if (multi) /* from here */
        slim__dist_take_comm(t.dist, &ccpu, &polls);
    double last_loss = NAN;
    const bool clipping = c->clip_gradient_norm > 0;
    int64_t log_every = c->log_every_n_steps > 0 ? c->log_every_n_steps : 10;
    bool trace_written = false, agreed_stop = false;
    while (!st && (!t.max_steps || t.step < t.max_steps)) {
        /* alone, a signal stops here; across processes, only when all agreed
         * after the last step (below) */
        if (multi ? agreed_stop : c->stop && *c->stop) {
            res->interrupted = true;
            break;
        }
        slim__rt_step_stats ss;
        st = slim__rt_trainer_step(&t, &ss, err);
        if (st)
            break;
        if (multi && root && t.step == res->start_step + 1) { /* the layout is known now */
            double bytes;
            int nb;
            slim__dist_bucket_info(t.dist, &bytes, &nb);
            if (nb > 0)
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                             "gradient allreduce: %.1f MB per step in %d bucket%s "
                             "(--allreduce_bucket_mb)",
                             bytes / 1e6, nb, nb == 1 ? "" : "s");
        }
        double comm = multi ? slim__dist_take_wait(t.dist) : 0, wire = 0;
        double cpu_t = cpu_now(), cpu = cpu_t - cpu_last;
        cpu_last = cpu_t;
        /* a checkpoint is due by time by rank 0's clock: across processes it
         * tells the others (they give their input positions) */
        bool time_due = c->save_interval_secs > 0 &&
                        slim__rt_now() - last_save >= c->save_interval_secs && root;
        if (multi) { /* the stop request, and the step's figures over every process */
            slim__dist_take_comm(t.dist, &ccpu, &polls);
            double v[10] = {c->stop && *c->stop ? 1 : 0,  ss.loss,  ss.accuracy, ss.n_valid, comm,
                            slim__dist_take_wire(t.dist), time_due, cpu,         ccpu,       polls};
            st = slim__dist_allreduce(t.dist, v, 10, SLIM__DIST_SUM, "the end-of-step allreduce",
                                      err);
            time_due = v[6] > 0;
            if (st)
                break;
            agreed_stop = v[0] > 0;
            ss.loss = v[1] / t.size;
            ss.accuracy = v[2] / t.size;
            ss.n_valid = (int)v[3];
            comm = v[4] / t.size + slim__dist_take_wait(t.dist);
            wire = v[5] / t.size;
            cpu = v[7] / t.size;
            ccpu_sum += v[8] / t.size;
            polls_sum += v[9] / t.size;
        }
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
        comm_sum += comm;
        wire_sum += wire;
        cpu_sum += cpu;
        period_steps++;
        period_images += ss.n_valid;
        slim__rt_trainer_trace_step(&t, &ss);
        if (c->trace_path && !trace_written &&
            t.step - res->start_step >= (c->trace_steps > 0 ? c->trace_steps : 50)) {
            if (multi) {
                st = trace_allreduces(&t, trace_t0, err);
                if (st)
                    break;
                slim__dist_set_trace(t.dist, false);
            }
            if (t.trace) {
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
            }
            trace_written = true;
        }
        bool last = t.max_steps && t.step >= t.max_steps;
        if (multi && c->replica_check_steps > 0 && (t.step % c->replica_check_steps == 0 || last) &&
            (st = check_replicas(&t, err)))
            break;
        if (root && (t.step % log_every == 0 || last)) {
            double now = slim__rt_now(), dt = now - last_report;
            slim_train_progress p = {
                .step = t.step,
                .max_steps = t.max_steps,
                .epoch = t.epoch_examples
                             ? (double)t.step * (double)t.global_batch / (double)t.epoch_examples
                             : 0,
                .loss = loss_sum / (double)period_steps,
                .accuracy = acc_sum / (double)period_steps,
                .grad_norm = clipping ? norm_sum / (double)period_steps : NAN,
                .learning_rate = ss.lr,
                .images_per_sec = dt > 0 ? (double)period_images / dt : 0,
                .input_wait = dt > 0 ? fmin(1, wait_sum / dt) : 0,
                .elapsed = now - run_start,
                .processes = t.size,
                .comm_wait = dt > 0 ? fmin(1, comm_sum / dt) : 0,
                .comm_wait_seconds = comm_sum / (double)period_steps,
                .allreduce_seconds = wire_sum / (double)period_steps,
                .cpu_seconds = cpu_sum / (double)period_steps,
            };
            double per_step = (now - run_start) / (double)(t.step - res->start_step);
            p.eta_seconds = t.max_steps ? per_step * (double)(t.max_steps - t.step) : -1;
            last_loss = p.loss;
            if (c->on_progress)
                c->on_progress(&p, c->user);
            const char *keys[] = {"step",
                                  "epoch",
                                  "loss",
                                  "accuracy",
                                  "learning_rate",
                                  "images_per_sec",
                                  "input_wait",
                                  "elapsed",
                                  "cpu_seconds",
                                  "processes",
                                  "comm_wait",
                                  "comm_wait_seconds",
                                  "allreduce_seconds",
                                  "comm_cpu_seconds",
                                  "comm_polls",
                                  "grad_norm"};
            double vals[] = {(double)p.step,
                             p.epoch,
                             p.loss,
                             p.accuracy,
                             p.learning_rate,
                             p.images_per_sec,
                             p.input_wait,
                             p.elapsed,
                             p.cpu_seconds,
                             (double)p.processes,
                             p.comm_wait,
                             p.comm_wait_seconds,
                             p.allreduce_seconds,
                             ccpu_sum / (double)period_steps,
                             polls_sum / (double)period_steps,
                             p.grad_norm};
            int nk = multi ? 15 : 9;
            if (clipping) /* grad_norm last */
                keys[nk] = keys[15], vals[nk] = vals[15], nk++;
            slim_error e2 = {0};
            slim_status ws = slim__rt_jsonl_write(t.metrics, keys, vals, nk, NULL, NULL, &e2);
            slim__rt_report_write(c->on_message, c->user, &t.metrics_failing, ws, &e2);
            const char *tags[] = {
                "losses/total_loss",   "accuracy", "learning_rate",      "images_per_sec",
                "input_wait_fraction", "epoch",    "comm_wait_fraction", "gradient_global_norm"};
            double tv[] = {p.loss,       p.accuracy, p.learning_rate, p.images_per_sec,
                           p.input_wait, p.epoch,    p.comm_wait,     p.grad_norm};
            int nt = multi ? 7 : 6;
            if (clipping)
                tags[nt] = tags[7], tv[nt] = tv[7], nt++;
            ws = slim__rt_events_scalars(t.events, t.step, tags, tv, nt, &e2);
            slim__rt_report_write(c->on_message, c->user, &t.events_failing, ws, &e2);
            last_report = now;
            loss_sum = acc_sum = wait_sum = norm_sum = comm_sum = wire_sum = cpu_sum = 0;
            ccpu_sum = polls_sum = 0;
            period_steps = period_images = 0;
        } else if (!root) {
            last_loss = ss.loss;
        }
        bool stopping = multi ? agreed_stop : c->stop && *c->stop;
        bool due = (c->save_interval_steps > 0 && t.step % c->save_interval_steps == 0) || time_due;
        int64_t *rpos = NULL;
        if (t.by_file && (due || stopping || last)) { /* rank 0 keeps everyone's position */
            slim_pipeline_position me;
            slim__rt_input_position(&t.in, &me);
            int64_t mine[3] = {me.epoch, me.index, me.consumed};
            size_t *sizes = calloc((size_t)t.size, sizeof *sizes);
            st = sizes ? slim__dist_gather(t.dist, mine, sizeof mine, (void **)&rpos, sizes,
                                           "gathering the input positions", err)
                       : slim__error(err, SLIM_ENOMEM, "out of memory");
            free(sizes);
            if (st)
                break;
        }
        if (root && (due || stopping || last)) {
            slim_error e2 = {0};
            slim_status ss2 = save(&t, res, rpos, t.by_file ? 3 * t.size : 0, &e2);
            free(rpos);
            if (ss2 == SLIM_OK) {
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
        } else if (stopping || last) {
            last_saved_step = t.step; /* rank 0 saves it */
        }
        if (root && t.eval && c->eval_every_n_steps > 0 &&
            (t.step % c->eval_every_n_steps == 0 || last)) {
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
    if (!st && res->interrupted && last_saved_step != t.step && !multi)
        st = save(&t, res, NULL, 0, err);
    if (t.trace && !trace_written) {
        slim_error e2 = {0};
        if (slim__rt_trace_write(t.trace, c->trace_path, &e2))
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "%s", e2.msg);
        else
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO, "wrote the trace to %s",
                         c->trace_path);
    }
    /* everyone stays until rank 0 has saved: the launcher may end the job
     * as soon as one process leaves */
    if (!st && multi)
        st = slim__dist_barrier(t.dist, "the barrier at the end of training", err);
    if (st && multi && strncmp(err ? err->msg : "", "rank ", 5))
        slim__error_prefix(err, "%s: ", slim__dist_name(t.dist));
    res->global_step = t.step;
    res->final_loss = last_loss;
    res->seconds = slim__rt_now() - run_start;
    int64_t done = t.step - res->start_step;
    res->images_per_sec =
        res->seconds > 0 ? (double)done * (double)t.global_batch / res->seconds : 0;
    if (t.in.pipe) { /* damaged records skipped (skip_damaged), as convert reports them */
        slim_pipeline_stats ps;
        slim_pipeline_get_stats(t.in.pipe, &ps);
        res->skipped = ps.skipped;
        const char *first = slim_pipeline_skip_message(t.in.pipe, 0);
        snprintf(res->first_skip, sizeof res->first_skip, "%s", first ? first : "");
    }
    t.failed = st != SLIM_OK;
    slim__rt_trainer_fini(&t);
    return st;
}
