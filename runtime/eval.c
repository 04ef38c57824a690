/* runtime/eval.c - slim_eval: TF-Slim's eval_image_classifier.py. Restores a
 * checkpoint (its moving averages when present, unless told otherwise) into a
 * forward-only program and runs it over a split with the eval
 * preprocessing: top-1, top-5, loss, per-class accuracy, confusion matrix.
 * Once, or watching a train_dir for new checkpoints. */
#include "runtime/checkpoint.h"
#include "runtime/report.h"
#include "runtime/session.h"
#include "runtime/train_internal.h"

#include "core/error.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void slim_eval_config_init(slim_eval_config *c)
{
    memset(c, 0, sizeof *c);
    c->batch_size = 100;
    c->use_ema = -1;
    c->eval_interval_secs = 60;
    c->synthetic_examples = 256;
}

typedef struct evaluator {
    const slim_eval_config *c;
    slim_registry *reg;
    slim_model *model;
    const slim_model_info *mi;
    slim_program *p;
    slim__rt_data_desc desc;
    int num_classes, model_threads, input_threads;
    slim__rt_jsonl *metrics;
    slim__rt_events *events;
    bool metrics_failing, events_failing;
    char *ckpt_defines[SLIM__RT_MAX_DEFINES]; /* the checkpoint's --set, split (into info) */
    slim_checkpoint_info info;
} evaluator;

static void ev_fini(evaluator *e)
{
    slim_program_free(e->p);
    slim_model_free(e->model);
    slim_registry_free(e->reg);
    slim__rt_data_desc_fini(&e->desc);
    slim__rt_jsonl_close(e->metrics);
    slim__rt_events_close(e->events);
    memset(e, 0, sizeof *e);
}

static bool is_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d)
        closedir(d);
    return d != NULL;
}

static slim_status ev_setup(evaluator *e, const slim_eval_config *c, const char *ckpt,
                            slim_error *err)
{
    memset(e, 0, sizeof *e);
    e->c = c;
    slim_status st;
    if (c->batch_size <= 0)
        return slim__error(err, SLIM_EINVAL, "--batch_size must be > 0");
    if (!c->synthetic && !c->file_pattern && !c->dataset_dir)
        return slim__error(err, SLIM_EINVAL,
                           "no data: give --dataset_dir (with --dataset_name) "
                           "or --file_pattern");
    if (!c->synthetic && !c->file_pattern) {
        st = slim__rt_data_describe(c->dataset_name, c->dataset_dir, c->dataset_split_name,
                                    &e->desc, err);
        if (st)
            return st;
    }
    slim_checkpoint_info *info = &e->info;
    st = slim_checkpoint_verify(ckpt, info, err);
    if (st)
        return st;
    int classes = c->num_classes;
    if (!classes && e->desc.num_classes)
        classes = e->desc.num_classes - c->labels_offset;
    if (!classes)
        classes = info->num_classes;
    if (classes <= 0)
        return slim__error(err, SLIM_EINVAL,
                           "the number of classes is unknown: give "
                           "--num_classes");
    e->num_classes = classes;
    st = slim_registry_new(&e->reg, err);
    if (st)
        return st;
    const char *name = c->model_name;
    if (!name && !c->model_path && info->model_name[0])
        name = info->model_name; /* the checkpoint says which zoo model it is */
    /* the model as trained: its --set overrides and image size, unless given */
    const char *const *defines = c->defines;
    int n_defines = c->n_defines;
    char real[4096];
    bool same_model =
        (!c->model_name && !c->model_path) ||
        (c->model_name && !strcmp(c->model_name, info->model_name)) ||
        (c->model_path && realpath(c->model_path, real) && !strcmp(real, info->model_name));
    if (!n_defines && info->defines[0] && same_model) {
        n_defines = slim__rt_split_lines(info->defines, e->ckpt_defines, SLIM__RT_MAX_DEFINES);
        defines = (const char *const *)e->ckpt_defines;
    }
    slim__rt_model_req mr = {.model_name = name,
                             .model_path = c->model_path,
                             .plugins = c->plugins,
                             .n_plugins = c->n_plugins,
                             .batch_size = c->batch_size,
                             .num_classes = classes,
                             .image_size =
                                 c->eval_image_size ? c->eval_image_size : info->image_size,
                             .training = false,
                             .weight_decay = 0,
                             .aux_loss_weight = -1,
                             .defines = defines,
                             .n_defines = n_defines};
    st = slim__rt_model_open(e->reg, &mr, &e->model, err);
    if (st)
        return st;
    e->mi = slim_model_get_info(e->model);
    bool light = c->synthetic || (e->desc.image_height > 0 && e->desc.image_height <= 64);
    slim__rt_thread_split(c->num_threads, c->num_preprocessing_threads, light, &e->model_threads,
                          &e->input_threads);
    slim_compile_opts co = {.training = false, .num_threads = e->model_threads};
    st = slim_graph_compile(slim_model_graph(e->model), &co, &e->p, err);
    if (st) {
        slim__error_prefix(err, "compiling %s for evaluation: ", e->mi->name);
        return st;
    }
    if (c->eval_dir) {
        char path[1200];
        if ((st = slim__rt_mkdirs(c->eval_dir, err)))
            return st;
        snprintf(path, sizeof path, "%s/eval.jsonl", c->eval_dir);
        e->metrics = slim__rt_jsonl_open(path, err);
        if (!e->metrics)
            return SLIM_EIO;
        if (!(e->events = slim__rt_events_new(c->eval_dir)))
            return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    return SLIM_OK;
}

/* A parameter of another shape than the checkpoint's: the advice that follows
 * the restore's message ("; to fine-tune with a new head ...") is training's;
 * for evaluation it is the class count or, failing that, the image size. */
static slim_status shape_advice(const evaluator *e, const slim_checkpoint_info *info,
                                slim_error *err)
{
    char *cut = strstr(err->msg, "; to fine-tune");
    if (cut)
        *cut = 0;
    const slim_eval_config *c = e->c;
    size_t l = strlen(err->msg);
    if (info->num_classes > 0 && info->num_classes != e->num_classes)
        snprintf(err->msg + l, sizeof err->msg - l,
                 "; the checkpoint has %d classes, this evaluation %d: give --num_classes=%d (or "
                 "the --labels_offset it was trained with)",
                 info->num_classes, e->num_classes, info->num_classes);
    else if (info->image_size > 0 && info->image_size != e->mi->image_size)
        snprintf(err->msg + l, sizeof err->msg - l,
                 "; the checkpoint was trained at image size %d, this evaluation is at %d%s: "
                 "give --eval_image_size=%d",
                 info->image_size, e->mi->image_size,
                 c->eval_image_size ? " (--eval_image_size)" : " (the model's default)",
                 info->image_size);
    else {
        char d[512];
        snprintf(d, sizeof d, "%s", info->defines);
        for (char *p = d; *p; p++)
            if (*p == '\n')
                *p = p[1] ? ' ' : 0;
        snprintf(err->msg + l, sizeof err->msg - l,
                 "; the model evaluated (image size %d) is not the one trained: its vars differ "
                 "(--set; the checkpoint's run had %s%s) or the model file changed",
                 e->mi->image_size, d[0] ? "--set " : "none", d);
    }
    return SLIM_ESHAPE;
}

static slim_status ev_run(evaluator *e, const char *ckpt, slim_eval_result *r, slim_error *err)
{
    const slim_eval_config *c = e->c;
    slim_restore_opts ro = {.use_ema = c->use_ema, .assignment_map = c->checkpoint_assignment_map};
    slim__rt_ckpt_state s = {.g = slim_model_graph(e->model)};
    slim_checkpoint_info info;
    slim_status st = slim_checkpoint_verify(ckpt, &info, err);
    if (!st)
        st = slim__rt_ckpt_restore(ckpt, &s, false, &ro, err);
    if (st == SLIM_ESHAPE) /* not a new head here (that advice is train's): say what differs */
        return shape_advice(e, &info, err);
    if (st)
        return st;
    slim__rt_input_opts io = {
        .grayscale = c->use_grayscale,
        .dataset_name = c->dataset_name,
        .dataset_dir = c->dataset_dir,
        .split = c->dataset_split_name,
        .file_pattern = c->file_pattern,
        .recipe = c->preprocessing_name ? c->preprocessing_name
                                        : slim_recipe_for_model(e->mi->name ? e->mi->name : ""),
        .is_training = false,
        .batch_size = c->batch_size,
        .image_size = e->mi->image_size,
        .channels = e->mi->channels,
        .num_threads = e->input_threads,
        .num_readers = 1,
        .labels_offset = c->labels_offset,
        .seed = info.seed + 1,
        .num_epochs = 1,
        .synthetic = c->synthetic,
        .synthetic_examples = c->synthetic_examples,
        .num_classes = e->num_classes,
    };
    slim__rt_input in;
    st = slim__rt_input_open(&io, &in, err);
    if (st)
        return st;
    st = slim__rt_evaluate(e->p, &in, e->num_classes, c->max_num_batches, c->stop, r, err);
    slim__rt_input_close(&in);
    if (st)
        return st;
    r->global_step = info.global_step;
    r->used_ema = c->use_ema != 0 && info.has_ema;
    r->label_names = e->desc.label_names;
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", ckpt);
    const char *keys[] = {"step", "top1", "top5", "loss", "examples", "seconds"};
    double vals[] = {(double)r->global_step, r->top1,   r->top5, r->loss,
                     (double)r->n_examples,  r->seconds};
    slim_error e2 = {0};
    st = slim__rt_jsonl_write(e->metrics, keys, vals, 6, "checkpoint", ckpt, &e2);
    slim__rt_report_write(c->on_message, c->user, &e->metrics_failing, st, &e2);
    const char *tags[] = {"eval/Accuracy", "eval/Recall_5", "eval/loss"};
    double tv[] = {r->top1, r->top5, r->loss};
    st = slim__rt_events_scalars(e->events, r->global_step, tags, tv, 3, &e2);
    slim__rt_report_write(c->on_message, c->user, &e->events_failing, st, &e2);
    return SLIM_OK;
}

static slim_status resolve(const char *path, char *file, size_t n, slim_error *err)
{
    if (!path)
        return slim__error(err, SLIM_EINVAL,
                           "--checkpoint_path is required (a checkpoint file "
                           "or a train_dir)");
    if (is_dir(path))
        return slim_checkpoint_latest(path, file, n, NULL, 0, err);
    snprintf(file, n, "%s", path);
    return SLIM_OK;
}

static void sleep_for(double secs, const volatile int *stop)
{
    double end = slim__rt_now() + secs;
    while (slim__rt_now() < end && !(stop && *stop)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

slim_status slim_eval(const slim_eval_config *c, slim_eval_result *r, slim_error *err)
{
    slim_eval_result dummy;
    if (!r)
        r = &dummy;
    memset(r, 0, sizeof *r);
    char file[1024];
    slim_status st = SLIM_OK;
    evaluator e;
    memset(&e, 0, sizeof e);
    if (!c->watch) {
        st = resolve(c->checkpoint_path, file, sizeof file, err);
        if (!st)
            st = ev_setup(&e, c, file, err);
        if (!st)
            st = ev_run(&e, file, r, err);
        if (!st && c->on_eval)
            c->on_eval(r, c->user);
        ev_fini(&e);
        if (r == &dummy)
            slim_eval_result_fini(r);
        return st;
    }
    /* watch: evaluate each new checkpoint as it appears */
    if (!c->checkpoint_path || !is_dir(c->checkpoint_path))
        return slim__error(err, SLIM_EINVAL, "--watch needs --checkpoint_path to be a train_dir");
    char last_file[1024] = "";
    double last_new = slim__rt_now();
    bool ready = false;
    for (;;) {
        if (c->stop && *c->stop)
            break;
        slim_error e2 = {0};
        int64_t steps[1];
        int k = slim__rt_ckpt_list(c->checkpoint_path, steps, NULL, 1);
        if (k == 1 &&
            slim_checkpoint_latest(c->checkpoint_path, file, sizeof file, NULL, 0, &e2) ==
                SLIM_OK &&
            strcmp(file, last_file) != 0) {
            if (!ready) {
                if ((st = ev_setup(&e, c, file, err)))
                    break;
                ready = true;
            }
            slim_eval_result one;
            st = ev_run(&e, file, &one, err);
            if (st)
                break;
            snprintf(last_file, sizeof last_file, "%s", file);
            last_new = slim__rt_now();
            if (c->on_eval)
                c->on_eval(&one, c->user);
            slim_eval_result_fini(r);
            *r = one;
            continue;
        }
        if (c->timeout_secs > 0 && slim__rt_now() - last_new > c->timeout_secs) {
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_INFO,
                         "no new checkpoint for %.0f s: stopping", c->timeout_secs);
            break;
        }
        sleep_for(c->eval_interval_secs > 0 ? c->eval_interval_secs : 60, c->stop);
    }
    ev_fini(&e);
    if (r == &dummy)
        slim_eval_result_fini(r);
    return st;
}
