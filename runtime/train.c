/* runtime/train.c - the training loop (TF-Slim's train_image_classifier.py).
 *
 * set-up: dataset description -> model (training graph) -> programs (train,
 * and eval sharing the parameters; compiling writes the optimizer slots'
 * initial values) -> parameters from the seed -> resume from train_dir's newest valid checkpoint,
 * or fine-tune from
 * --checkpoint_path -> input pipeline (at the saved position).
 *
 * step: next batch (timed: the input wait) -> learning rate of this global
 * step -> run (forward, backward, updates) -> moving averages -> report ->
 * checkpoint when due -> evaluation when due. Everything random is a function
 * of (seed, step, example index), so a resumed run matches an uninterrupted one.
 */
#include "runtime/checkpoint.h"
#include "runtime/report.h"
#include "runtime/schedule.h"
#include "runtime/session.h"
#include "runtime/train_internal.h"

#include "core/error.h"
#include "core/names.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void slim_train_config_init(slim_train_config *c)
{
    memset(c, 0, sizeof *c);
    c->dataset_split_name = "train";
    c->batch_size = 32;
    c->num_readers = 4;
    c->synthetic_examples = 1024;
    c->optimizer = "rmsprop";
    c->adadelta_rho = 0.95;
    c->adagrad_initial_accumulator_value = 0.1;
    c->adam_beta1 = 0.9;
    c->adam_beta2 = 0.999;
    c->opt_epsilon = 1.0;
    c->ftrl_learning_rate_power = -0.5;
    c->ftrl_initial_accumulator_value = 0.1;
    c->momentum = 0.9;
    c->rmsprop_momentum = 0.9;
    c->rmsprop_decay = 0.9;
    c->learning_rate_decay_type = "exponential";
    c->learning_rate = 0.01;
    c->end_learning_rate = 0.0001;
    c->learning_rate_decay_factor = 0.94;
    c->num_epochs_per_decay = 2.0;
    c->staircase = true;
    c->weight_decay = 0.00004;
    c->aux_loss_weight = -1;
    c->save_interval_secs = 600;
    c->max_checkpoints_to_keep = 5;
    c->log_every_n_steps = 10;
    c->save_summaries_secs = 600;
    c->trace_steps = 50;
    c->collective_timeout = 300;
    c->replica_check_steps = 100;
}

static int msg_rank;
static char msg_name[160];

void slim__rt_msg_rank(int rank, const char *name)
{
    msg_rank = rank;
    snprintf(msg_name, sizeof msg_name, "%s", name ? name : "");
}

void slim__rt_msg(slim_train_message_fn fn, void *user, int level, const char *fmt, ...)
{
    if (!fn || (msg_rank > 0 && level > SLIM_LOG_WARN))
        return;
    char buf[2048];
    int at = msg_rank > 0 ? snprintf(buf, sizeof buf, "%s: ", msg_name) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, sizeof buf - (size_t)at, fmt, ap);
    va_end(ap);
    fn(level, buf, user);
}

void slim__rt_report_write(slim_train_message_fn fn, void *user, bool *failing, slim_status st,
                           const slim_error *e)
{
    if (st && !*failing)
        slim__rt_msg(fn, user, SLIM_LOG_WARN,
                     "%s; the run goes on, its metrics are dropped until they can be written "
                     "(the file keeps whole lines and records)",
                     e->msg);
    else if (!st && *failing)
        slim__rt_msg(fn, user, SLIM_LOG_INFO, "metrics are written again");
    *failing = st != SLIM_OK;
}

slim_status slim__rt_mkdirs(const char *path, slim_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char ch = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return slim__error(err, SLIM_EIO, "cannot create directory %s: %s", buf,
                                   strerror(errno));
            *p = ch;
            if (!ch)
                break;
        }
    }
    return SLIM_OK;
}

/* ---- set-up ------------------------------------------------------------------- */

static void trace_input(const slim_pipeline_event *ev, void *user)
{
    slim__rt_trainer *t = user;
    if (!__atomic_load_n(&t->tracing, __ATOMIC_RELAXED))
        return;
    int tid = ev->thread >= 0 ? 10 + ev->thread : 2;
    char args[96];
    snprintf(args, sizeof args, "{\"epoch\": %lld, \"index\": %lld}", (long long)ev->epoch,
             (long long)ev->index);
    slim__rt_trace_span(t->trace, tid, slim_stage_name(ev->stage), "input", ev->t_begin, ev->t_end,
                        ev->index >= 0 ? args : NULL);
}

/* Non-trainable parameters (state: batch-norm moving statistics) outside the
 * trainable scopes belong to frozen layers: the ops still update them while
 * training, so their values are kept aside and restored after every step. */
static slim_status freeze_state(slim__rt_trainer *t, slim_error *err)
{
    int np = slim_graph_param_count(t->g);
    t->frozen_ptr = calloc((size_t)np + 1, sizeof *t->frozen_ptr);
    t->frozen_copy = calloc((size_t)np + 1, sizeof *t->frozen_copy);
    t->frozen_bytes = calloc((size_t)np + 1, sizeof *t->frozen_bytes);
    if (!t->frozen_ptr || !t->frozen_copy || !t->frozen_bytes)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < np; i++) {
        const char *name;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(t->g, i, &name, &v, &fl);
        if ((fl & SLIM_PARAM_TRAINABLE) || slim__in_scopes(name, t->c->trainable_scopes))
            continue;
        size_t bytes = (size_t)slim_shape_numel(&v.shape) * sizeof(float);
        float *copy = malloc(bytes + 64);
        if (!copy)
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        memcpy(copy, v.data, bytes);
        t->frozen_ptr[t->n_frozen] = v.data;
        t->frozen_copy[t->n_frozen] = copy;
        t->frozen_bytes[t->n_frozen++] = bytes;
    }
    return SLIM_OK;
}

/* Across processes, how they share the input (--input_sharding), and where
 * this process starts: a checkpoint shared the same way by as many processes
 * gives each its own position; otherwise by record the stream goes on from
 * the global position, and by file (or from a by-file checkpoint) the
 * oldest epoch among the saved positions starts over. */
static slim_status input_share(slim__rt_trainer *t, slim_pipeline_position *pos, bool *have_pos,
                               slim_error *err)
{
    const slim_train_config *c = t->c;
    const char *how = c->input_sharding ? c->input_sharding : "auto";
    int files = 0;
    if (t->desc.ds)
        files = slim_dataset_get_info(t->desc.ds)->n_files;
    if (!strcmp(how, "file"))
        t->by_file = true;
    else if (!strcmp(how, "auto"))
        t->by_file = !c->synthetic && files >= 8 * t->size;
    else if (strcmp(how, "record"))
        return slim__error(err, SLIM_EINVAL, "--input_sharding=%s: expected auto, record or file",
                           how);
    t->by_file &= t->size > 1; /* alone, there is nothing to share */
    if (t->by_file && c->synthetic)
        return slim__error(err, SLIM_EINVAL,
                           "--input_sharding=file: synthetic data has no files; share by record");
    if (t->size > 1)
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                     "input shared by %s across the %d processes%s", t->by_file ? "file" : "record",
                     t->size,
                     t->by_file ? " (each reads its own files, in its own order)"
                                : " (together they read the batches one process would)");
    if (!*have_pos)
        return SLIM_OK;
    bool own = t->by_file && t->ck_by_file && t->ck_n_rpos == 3 * t->size;
    if (own) {
        const int64_t *r = t->ck_rpos + 3 * t->rank;
        *pos = (slim_pipeline_position){.epoch = r[0], .index = r[1], .consumed = r[2]};
    } else if (t->by_file || t->ck_by_file) {
        int64_t epoch = pos->epoch;
        for (int k = 0; k < t->ck_n_rpos; k += 3)
            epoch = t->ck_rpos[k] < epoch ? t->ck_rpos[k] : epoch;
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN,
                     "the checkpoint's input was shared by %s across %d process%s, this run's "
                     "by %s across %d: epoch %lld of the input starts over",
                     t->ck_by_file ? "file" : "record", t->ck_by_file ? t->ck_n_rpos / 3 : 1,
                     t->ck_n_rpos / 3 > 1 ? "es" : "", t->by_file ? "file" : "record", t->size,
                     (long long)epoch);
        *pos = (slim_pipeline_position){.epoch = epoch,
                                        .consumed = t->by_file ? 0 : t->step * t->global_batch};
    }
    return SLIM_OK;
}

/* Across processes: rank 0's state after resuming or fine-tuning (the
 * parameters, optimizer slots, moving averages, the step and the input
 * position) goes to every rank, so that all start from the same weights
 * whatever file system each of them sees. */
static slim_status share_state(slim__rt_trainer *t, slim_pipeline_position *pos, bool *have_pos,
                               slim_error *err)
{
    int64_t h[7] = {t->step,   pos->epoch,    pos->index,  pos->consumed,
                    *have_pos, t->ck_by_file, t->ck_n_rpos};
    slim_status st = slim__dist_bcast(t->dist, h, sizeof h, "sharing the starting step", err);
    t->step = t->start_step = h[0];
    *pos = (slim_pipeline_position){.epoch = h[1], .index = h[2], .consumed = h[3]};
    *have_pos = h[4] != 0;
    t->ck_by_file = h[5] != 0;
    t->ck_n_rpos = (int)h[6];
    if (!st && t->ck_n_rpos > 0 && t->rank != 0 &&
        !(t->ck_rpos = malloc((size_t)t->ck_n_rpos * sizeof *t->ck_rpos)))
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (!st && t->ck_n_rpos > 0)
        st = slim__dist_bcast(t->dist, t->ck_rpos, (size_t)t->ck_n_rpos * sizeof *t->ck_rpos,
                              "sharing the input positions", err);
    int np = slim_graph_param_count(t->g);
    for (int i = 0; i < np && !st; i++) {
        const char *name;
        slim_tensor v, sv;
        unsigned fl;
        slim_graph_param_at(t->g, i, &name, &v, &fl);
        size_t bytes = (size_t)slim_shape_numel(&v.shape) * slim_dtype_size(v.dtype);
        st = slim__dist_bcast(t->dist, v.data, bytes, "sharing the initial weights", err);
        for (int k = 0; !st && k < t->opt.n_slots; k++)
            if (slim_program_slot(t->train, name, k, &sv, NULL) == SLIM_OK)
                st = slim__dist_bcast(t->dist, sv.data, bytes, "sharing the optimizer slots", err);
        if (!st && t->has_ema)
            st =
                slim__dist_bcast(t->dist, t->ema.avg[i], bytes, "sharing the moving averages", err);
    }
    return st;
}

slim_status slim__rt_trainer_setup(slim__rt_trainer *t, const slim_train_config *c,
                                   bool for_profile, slim_error *err)
{
    memset(t, 0, sizeof *t);
    t->c = c;
    t->start_time = slim__rt_now();
    slim_status st;
    if (c->batch_size <= 0)
        return slim__error(err, SLIM_EINVAL, "--batch_size must be > 0 (got %d)", c->batch_size);
    if (!for_profile && (!c->train_dir || !c->train_dir[0]))
        return slim__error(err, SLIM_EINVAL,
                           "--train_dir is required (checkpoints, metrics and "
                           "event files go there)");
    /* the other processes, when a launcher started several */
    t->size = 1;
    if (!for_profile) {
        slim__dist_opts dopt = {.timeout = c->collective_timeout,
                                .bucket_bytes = (size_t)(c->allreduce_bucket_mb * 1e6),
                                .no_overlap = c->no_overlap,
                                .sync_batch_norm = c->sync_batch_norm,
                                .trace = c->trace_path != NULL};
        if (c->allreduce_bucket_mb < 0)
            return slim__error(err, SLIM_EINVAL, "--allreduce_bucket_mb must be >= 0");
        if ((st = slim__dist_open(&dopt, &t->dist, err)))
            return st;
        t->rank = slim__dist_rank(t->dist);
        t->size = slim__dist_size(t->dist);
        if (t->size > 1)
            slim__rt_msg_rank(t->rank, slim__dist_name(t->dist));
    }
    t->global_batch = (int64_t)c->batch_size * t->size;
    if (!for_profile && t->rank == 0 && (st = slim__rt_mkdirs(c->train_dir, err)))
        return st;

    /* the data's description: classes and epoch size */
    bool synthetic = c->synthetic;
    if (!synthetic && !c->file_pattern && !c->dataset_dir)
        return slim__error(err, SLIM_EINVAL,
                           "no data: give --dataset_dir (with --dataset_name), or "
                           "--file_pattern, or --synthetic");
    if (!synthetic && !c->file_pattern) {
        st = slim__rt_data_describe(c->dataset_name, c->dataset_dir, c->dataset_split_name,
                                    &t->desc, err);
        if (st)
            return st;
    }
    int classes = c->num_classes;
    if (!classes && t->desc.num_classes)
        classes = t->desc.num_classes - c->labels_offset;
    if (!classes && synthetic)
        classes = 10;
    if (classes <= 0)
        return slim__error(err, SLIM_EINVAL,
                           "the number of classes is unknown: give "
                           "--num_classes");
    t->num_classes = classes;

    /* the model */
    st = slim_registry_new(&t->reg, err);
    if (st)
        return st;
    slim__rt_model_req mr = {
        .model_name = c->model_name,
        .model_path = c->model_path,
        .plugins = c->plugins,
        .n_plugins = c->n_plugins,
        .batch_size = c->batch_size,
        .num_classes = classes,
        .image_size = c->train_image_size,
        .training = true,
        .label_smoothing = c->label_smoothing,
        .weight_decay = c->weight_decay,
        .aux_loss_weight = c->aux_loss_weight,
        .defines = c->defines,
        .n_defines = c->n_defines,
    };
    st = slim__rt_model_open(t->reg, &mr, &t->model, err);
    if (st)
        return st;
    t->g = slim_model_graph(t->model);
    const slim_model_info *mi = slim_model_get_info(t->model);
    t->model_info = mi;
    if (c->aux_loss_weight >= 0 && !mi->has_aux)
        slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN,
                     "--aux_loss_weight: %s has no auxiliary head (head: aux_logits); ignored",
                     mi->name);

    /* threads */
    bool light = synthetic || (t->desc.image_height > 0 && t->desc.image_height <= 64);
    slim__rt_thread_split(c->num_threads, c->num_preprocessing_threads, light, &t->model_threads,
                          &t->input_threads);

    /* programs */
    st = slim__rt_optimizer_init(&t->opt, c, t->reg, err);
    if (st)
        return st;
    slim_compile_opts co = {
        .training = true,
        .num_threads = t->model_threads,
        .optimizer = t->opt.op,
        .optimizer_attrs = t->opt.attrs,
        .trainable_scopes = c->trainable_scopes,
        .clip_gradient_norm = (float)c->clip_gradient_norm,
        .train_frozen_batch_norm = c->train_frozen_batch_norm,
    };
    if (t->size > 1) {
        slim__dist_collective(t->dist, &t->coll);
        co.collective = &t->coll;
    }
    st = slim_graph_compile(t->g, &co, &t->train, err);
    if (st) {
        slim__error_prefix(err, "compiling %s for training: ", mi->name);
        return st;
    }
    if (c->eval_every_n_steps > 0 && !for_profile) {
        co.training = false;
        co.optimizer = NULL;
        co.optimizer_attrs = NULL;
        co.clip_gradient_norm = 0;
        co.collective = NULL;
        st = slim_graph_compile(t->g, &co, &t->eval, err);
        if (st) {
            slim__error_prefix(err, "compiling %s for evaluation: ", mi->name);
            return st;
        }
    }

    if (c->save_format && strcmp(c->save_format, "slim") && strcmp(c->save_format, "tf"))
        return slim__error(err, SLIM_EINVAL,
                           "--save_format=%s: expected slim (model.ckpt-N.slimckpt) or tf "
                           "(TensorFlow V2 checkpoints)",
                           c->save_format);

    /* initial state */
    st = slim_graph_init_params(t->g, c->seed, err);
    if (st)
        return st;
    if (c->moving_average_decay > 0) {
        if (c->moving_average_decay >= 1)
            return slim__error(err, SLIM_EINVAL, "--moving_average_decay must be in (0, 1)");
        st = slim__rt_ema_init(&t->ema, t->g, c->moving_average_decay, err);
        if (st)
            return st;
        t->has_ema = true;
    }

    /* resume, or fine-tune (rank 0, which then hands the state to the others) */
    slim_pipeline_position pos = {0};
    bool have_pos = false;
    if (!for_profile && t->rank == 0) {
        char latest[1024], skipped[2048];
        slim_error e2 = {0};
        st = slim_checkpoint_latest(c->train_dir, latest, sizeof latest, skipped, sizeof skipped,
                                    &e2);
        if (skipped[0])
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "skipping a damaged checkpoint: %s",
                         skipped);
        if (st == SLIM_OK) {
            slim__rt_ckpt_state s = {.g = t->g,
                                     .p = t->train,
                                     .n_slots = t->opt.n_slots,
                                     .slot_names = t->opt.slot_names,
                                     .optimizer = t->opt.op,
                                     .ema = t->has_ema ? t->ema.avg : NULL};
            st = slim__rt_ckpt_restore(latest, &s, true, NULL, err);
            if (st) {
                slim__error_prefix(err, "resuming from %s: ", latest);
                return st;
            }
            if (t->has_ema && !s.has_ema) /* averages start now */
                for (int i = 0; i < t->ema.n; i++) {
                    const char *nm;
                    slim_tensor v;
                    unsigned fl;
                    slim_graph_param_at(t->g, i, &nm, &v, &fl);
                    memcpy(t->ema.avg[i], v.data,
                           (size_t)slim_shape_numel(&v.shape) * sizeof(float));
                }
            t->step = s.global_step;
            t->start_step = s.global_step;
            pos = s.pos;
            have_pos = s.has_pos;
            t->ck_by_file = s.by_file;
            t->ck_n_rpos = s.n_rpos;
            t->ck_rpos = s.rpos;
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                         "resuming from %s (step %lld, %lld examples seen)", latest,
                         (long long)s.global_step, (long long)s.pos.consumed);
            if (s.seed != c->seed || s.num_threads != t->model_threads ||
                s.batch_size != c->batch_size || s.replicas != t->size)
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN,
                             "the checkpoint was written with seed %llu, %d model threads, batch "
                             "%d x %d process%s; this run uses seed %llu, %d, %d x %d: it will not "
                             "repeat the earlier run bit for bit",
                             (unsigned long long)s.seed, s.num_threads, s.batch_size, s.replicas,
                             s.replicas > 1 ? "es" : "", (unsigned long long)c->seed,
                             t->model_threads, c->batch_size, t->size);
            if (c->checkpoint_path)
                slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                             "ignoring --checkpoint_path because a checkpoint already exists in %s",
                             c->train_dir);
        } else if (st != SLIM_ENOTFOUND) {
            if (err)
                *err = e2;
            return st;
        } else if (skipped[0]) {
            /* starting over would bury them: let a person decide */
            return slim__error(err, SLIM_ECORRUPT,
                               "every checkpoint in %s is damaged (see above); move them away to "
                               "start over, or restore a good copy",
                               c->train_dir);
        } else if (c->checkpoint_path) {
            char rep[4096] = "";
            slim_restore_opts ro = {.exclude_scopes = c->checkpoint_exclude_scopes,
                                    .assignment_map = c->checkpoint_assignment_map,
                                    .ignore_missing_vars = c->ignore_missing_vars,
                                    .use_ema = 0,
                                    .report = rep,
                                    .report_size = sizeof rep};
            slim__rt_ckpt_state s = {.g = t->g};
            st = slim__rt_ckpt_restore(c->checkpoint_path, &s, false, &ro, err);
            if (st == SLIM_ENOTFOUND && err && strstr(err->msg, " has no '")) {
                size_t l = strnlen(err->msg, sizeof err->msg);
                snprintf(err->msg + l, sizeof err->msg - l,
                         "\nto fine-tune anyway, --checkpoint_exclude_scopes=SCOPE keeps a scope's "
                         "initial values, --ignore_missing_vars keeps initial values for "
                         "parameters the checkpoint lacks");
            }
            if (st) {
                slim__error_prefix(err, "fine-tuning from %s: ", c->checkpoint_path);
                return st;
            }
            size_t rl = strlen(rep);
            while (rl && rep[rl - 1] == '\n')
                rep[--rl] = 0;
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                         "fine-tuning from %s (its step %lld)%s%s", c->checkpoint_path,
                         (long long)s.global_step, rep[0] ? ":\n" : "", rep);
            if (t->has_ema)
                for (int i = 0; i < t->ema.n; i++) {
                    const char *nm;
                    slim_tensor v;
                    unsigned fl;
                    slim_graph_param_at(t->g, i, &nm, &v, &fl);
                    memcpy(t->ema.avg[i], v.data,
                           (size_t)slim_shape_numel(&v.shape) * sizeof(float));
                }
        }
    }

    if (t->size > 1 && (st = share_state(t, &pos, &have_pos, err)))
        return st;
    if (!for_profile && (st = input_share(t, &pos, &have_pos, err)))
        return st;

    /* frozen layers keep their batch-norm statistics */
    if (c->trainable_scopes && c->trainable_scopes[0] && !c->train_frozen_batch_norm &&
        (st = freeze_state(t, err)))
        return st;

    /* input */
    slim__rt_input_opts io = {
        .grayscale = c->use_grayscale,
        .dataset_name = c->dataset_name,
        .dataset_dir = c->dataset_dir,
        .split = c->dataset_split_name,
        .file_pattern = c->file_pattern,
        .recipe = c->preprocessing_name ? c->preprocessing_name
                                        : slim_recipe_for_model(mi->name ? mi->name : ""),
        .is_training = true,
        .batch_size = c->batch_size,
        .image_size = mi->image_size,
        .channels = mi->channels,
        .num_threads = t->input_threads,
        .num_readers = c->num_readers,
        .shuffle_buffer = c->shuffle_buffer,
        .labels_offset = c->labels_offset,
        .seed = c->seed,
        .synthetic = synthetic,
        .synthetic_examples = c->synthetic_examples,
        .num_classes = classes,
        .skip_damaged = c->skip_damaged,
        .trace = c->trace_path && t->rank == 0 ? trace_input : NULL,
        .trace_user = t,
        .replica = t->rank,
        .replicas = t->size,
        .replica_by_file = t->by_file,
    };
    if (c->trace_path && t->rank == 0) {
        t->trace = slim__rt_trace_new(2000000);
        t->tracing = true;
    }
    st = slim__rt_input_open(&io, &t->in, err);
    if (st)
        return st;
    if (have_pos && (st = slim__rt_input_restore(&t->in, &pos, err)))
        return st;
    t->epoch_examples = slim__rt_input_epoch_examples(&t->in);
    if (!t->epoch_examples && t->desc.num_examples)
        t->epoch_examples = t->desc.num_examples;

    /* labels.txt beside the checkpoints, for slimrun predict */
    if (!for_profile && t->rank == 0 && t->desc.label_names) {
        char lp[1200];
        snprintf(lp, sizeof lp, "%s/labels.txt", c->train_dir);
        FILE *lf = access(lp, F_OK) == 0 ? NULL : fopen(lp, "w");
        for (int k = 0; lf && k < t->desc.num_classes; k++)
            if (t->desc.label_names[k])
                fprintf(lf, "%d:%s\n", k, t->desc.label_names[k]);
        if (lf)
            fclose(lf);
    }

    /* length and schedule */
    if (c->max_number_of_steps > 0)
        t->max_steps = c->max_number_of_steps;
    else if (c->num_epochs > 0) {
        if (!t->epoch_examples)
            return slim__error(err, SLIM_EINVAL,
                               "--num_epochs needs the epoch size, which this data does not "
                               "give: use --max_number_of_steps");
        t->max_steps =
            (int64_t)ceil(c->num_epochs * (double)t->epoch_examples / (double)t->global_batch);
    }
    /* epochs count global steps of the global batch */
    slim_train_config cg = *c;
    cg.batch_size = (int)t->global_batch;
    st = slim__rt_lr_schedule_init(&t->lr, &cg, t->epoch_examples, t->max_steps, err);
    if (st)
        return st;
    if (t->trace) {
        char nm[128];
        slim__rt_trace_thread(t->trace, 0, "train loop (main thread)", 0);
        snprintf(nm, sizeof nm, "model: ops (%d thread%s)", t->model_threads,
                 t->model_threads > 1 ? "s" : "");
        slim__rt_trace_thread(t->trace, 1, nm, 1);
        slim__rt_trace_thread(t->trace, 2, "input: batch hand-off", 2);
        for (int i = 0; i < t->input_threads; i++) {
            snprintf(nm, sizeof nm, "input worker %d", i);
            slim__rt_trace_thread(t->trace, 10 + i, nm, 10 + i);
        }
        slim_program_set_profiling(t->train, true);
    }
    return SLIM_OK;
}

void slim__rt_trainer_fini(slim__rt_trainer *t)
{
    free(t->ck_rpos);
    if (t->size > 1)
        slim__rt_msg_rank(0, NULL);
    slim__dist_close(t->dist, t->failed);
    slim__rt_input_close(&t->in);
    slim_program_free(t->train);
    slim_program_free(t->eval);
    slim_model_free(t->model);
    slim__rt_optimizer_fini(&t->opt);
    slim__rt_ema_fini(&t->ema);
    slim_registry_free(t->reg);
    slim__rt_data_desc_fini(&t->desc);
    slim__rt_jsonl_close(t->metrics);
    slim__rt_events_close(t->events);
    slim__rt_trace_free(t->trace);
    for (int i = 0; i < t->n_frozen; i++)
        free(t->frozen_copy[i]);
    free(t->frozen_ptr);
    free(t->frozen_copy);
    free(t->frozen_bytes);
    memset(t, 0, sizeof *t);
}

/* One step: the next batch, the run, the moving averages. */
slim_status slim__rt_trainer_step(slim__rt_trainer *t, slim__rt_step_stats *ss, slim_error *err)
{
    const slim_train_config *c = t->c;
    double t0 = slim__rt_now();
    const float *x;
    const int32_t *y;
    slim_batch_info bi;
    slim_status st = slim__rt_input_next(&t->in, &x, &y, &bi, err);
    if (st)
        return st;
    if (bi.end_of_data)
        return slim__error(err, SLIM_ESTATE, "the training data ended (an empty dataset?)");
    size_t px = (size_t)t->in.h * (size_t)t->in.w * (size_t)t->in.c;
    st = slim__rt_feed(t->train, x, y, px * (size_t)t->in.n, t->in.n, err);
    if (st)
        return st;
    double t1 = slim__rt_now();
    double lr = slim__rt_lr_at(&t->lr, t->step);
    slim_run_opts ro = {.learning_rate = (float)lr, .step = t->step, .seed = c->seed};
    if (t->dist) /* the step it runs, as the progress lines count: 1 is the first */
        slim__dist_set_step(t->dist, t->step + 1);
    st = slim_program_run(t->train, &ro, err);
    if (!st && t->size > 1)
        st = slim__dist_check(t->dist, err); /* the program's allreduces */
    if (st)
        return st;
    double t2 = slim__rt_now();
    slim_tensor lv, av;
    ss->loss = NAN;
    ss->accuracy = NAN;
    if (slim_program_output(t->train, "total_loss", &lv, NULL) == SLIM_OK)
        ss->loss = ((const float *)lv.data)[0];
    if (slim_program_output(t->train, "accuracy", &av, NULL) == SLIM_OK)
        ss->accuracy = ((const float *)av.data)[0];
    float gn;
    ss->grad_norm = slim_program_global_norm(t->train, &gn, NULL) == SLIM_OK ? gn : NAN;
    for (int i = 0; i < t->n_frozen; i++)
        memcpy(t->frozen_ptr[i], t->frozen_copy[i], t->frozen_bytes[i]);
    if (t->has_ema)
        slim__rt_ema_update(&t->ema, t->g, t->step);
    double t3 = slim__rt_now();
    ss->lr = lr;
    ss->wait = t->in.pipe ? bi.wait_seconds : t1 - t0;
    ss->input = t1 - t0;
    ss->run = t2 - t1;
    ss->total = t3 - t0;
    ss->t_begin = t0;
    ss->t_run = t1;
    ss->t_end = t3;
    ss->n_valid = bi.n_valid;
    t->step++;
    return SLIM_OK;
}

/* Per-op spans of the last run from the profiler's per-step times. */
void slim__rt_trainer_trace_step(slim__rt_trainer *t, const slim__rt_step_stats *ss)
{
    if (!t->trace || !t->tracing)
        return;
    char nm[64];
    snprintf(nm, sizeof nm, "step %lld", (long long)t->step);
    slim__rt_trace_span(t->trace, 0, nm, "step", ss->t_begin, ss->t_end, NULL);
    slim__rt_trace_span(t->trace, 0, "wait for input", "input", ss->t_begin, ss->t_run, NULL);
    slim__rt_trace_span(t->trace, 0, "run", "compute", ss->t_run, ss->t_run + ss->run, NULL);
    const slim_node_time *times;
    int n = slim_program_times(t->train, &times);
    static const char *const cats[] = {"forward", "backward", "update", "gradient_sum"};
    double at = ss->t_run;
    for (int i = 0; i < n; i++) {
        char args[160];
        snprintf(args, sizeof args, "{\"op\": \"%s\"}", times[i].op ? times[i].op : "");
        int ph = times[i].phase >= 0 && times[i].phase < 4 ? times[i].phase : 0;
        slim__rt_trace_span(t->trace, 1, times[i].name ? times[i].name : "?", cats[ph], at,
                            at + times[i].seconds, args);
        at += times[i].seconds;
    }
    if (t->in.pipe) {
        slim_pipeline_stats ps;
        slim_pipeline_get_stats(t->in.pipe, &ps);
        slim__rt_trace_counter(t->trace, "prefetch queue (batches)", ss->t_end, ps.queue_depth);
    }
}
