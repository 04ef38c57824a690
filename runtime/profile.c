/* runtime/profile.c - slim_profile: where a training step's time goes, and
 * whether the model waits for its input.
 *
 * Runs the training set-up for warmup + steps steps with the engine's per-node
 * timing on, and reads the pipeline's per-stage timings over the same steps.
 * The model is input-bound when it waits for batches more than a tenth of
 * the step; the pipeline's own capacity (examples per second of worker time,
 * times the workers) tells how much headroom the input has either way.
 */
#include "runtime/train_internal.h"

#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void slim_profile_report_fini(slim_profile_report *r)
{
    if (!r)
        return;
    free(r->ops);
    free(r->strings);
    r->ops = NULL;
    r->strings = NULL;
    r->n_ops = 0;
}

static int by_ms_desc(const void *a, const void *b)
{
    const slim_profile_op *x = a, *y = b;
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : 0;
}

slim_status slim_profile(const slim_train_config *c, int warmup, int steps, slim_profile_report *r,
                         slim_error *err)
{
    memset(r, 0, sizeof *r);
    if (steps <= 0)
        steps = 20;
    if (warmup < 0)
        warmup = 0;
    slim__rt_trainer t;
    slim_status st = slim__rt_trainer_setup(&t, c, true, err);
    if (st) {
        slim__rt_trainer_fini(&t);
        return st;
    }
    slim_program_set_profiling(t.train, true);
    slim__rt_step_stats ss;
    for (int i = 0; i < warmup && !st; i++)
        st = slim__rt_trainer_step(&t, &ss, err);
    slim_pipeline_stats p0 = {0}, p1 = {0};
    if (t.in.pipe)
        slim_pipeline_get_stats(t.in.pipe, &p0);
    const slim_node_time *times;
    int n = slim_program_times(t.train, &times);
    double *acc = calloc((size_t)n + 1, sizeof *acc);
    if (!acc)
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    double wall = 0, wait = 0, run = 0;
    double t_start = slim__rt_now();
    for (int i = 0; i < steps && !st; i++) {
        if (c->stop && *c->stop) {
            steps = i;
            break;
        }
        st = slim__rt_trainer_step(&t, &ss, err);
        if (st)
            break;
        n = slim_program_times(t.train, &times);
        for (int k = 0; k < n; k++)
            acc[k] += times[k].seconds;
        wall += ss.total;
        wait += ss.wait;
        run += ss.run;
        slim__rt_trainer_trace_step(&t, &ss);
    }
    double elapsed = slim__rt_now() - t_start;
    if (t.trace && c->trace_path) {
        slim_error e2 = {0};
        if (slim__rt_trace_write(t.trace, c->trace_path, &e2))
            slim__rt_msg(c->on_message, c->user, SLIM_LOG_WARN, "%s", e2.msg);
    }
    if (t.in.pipe)
        slim_pipeline_get_stats(t.in.pipe, &p1);
    if (st || steps == 0) {
        free(acc);
        slim__rt_trainer_fini(&t);
        return st ? st : slim__error(err, SLIM_ESTATE, "interrupted before any step was timed");
    }
    r->steps = steps;
    r->batch_size = c->batch_size;
    r->model_threads = t.model_threads;
    r->input_threads = t.input_threads;
    r->step_ms = 1e3 * wall / steps;
    r->compute_ms = 1e3 * run / steps;
    r->wait_ms = 1e3 * wait / steps;
    r->wait_fraction = wall > 0 ? wait / wall : 0;
    r->images_per_sec = elapsed > 0 ? (double)steps * c->batch_size / elapsed : 0;
    size_t pool = 0;
    for (int k = 0; k < n; k++)
        pool += strlen(times[k].name ? times[k].name : "?") +
                strlen(times[k].op ? times[k].op : "?") + 2;
    r->ops = calloc((size_t)n + 1, sizeof *r->ops);
    r->strings = malloc(pool + 1);
    if (!r->ops || !r->strings) {
        slim_profile_report_fini(r);
        free(acc);
        slim__rt_trainer_fini(&t);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    /* names point into the program: copy them, it is freed below */
    char *sp = r->strings;
    for (int k = 0; k < n; k++) {
        slim_profile_op *o = &r->ops[r->n_ops++];
        const char *nm = times[k].name ? times[k].name : "?", *op = times[k].op ? times[k].op : "?";
        o->name = strcpy(sp, nm);
        sp += strlen(nm) + 1;
        o->op = strcpy(sp, op);
        sp += strlen(op) + 1;
        o->phase = times[k].phase;
        o->ms = 1e3 * acc[k] / steps;
        if (o->phase >= 0 && o->phase < 4)
            r->phase_ms[o->phase] += o->ms;
        int64_t madds = slim_model_step_madds(t.model, o->name);
        /* forward: 2 flops per multiply-add; backward: the data and the filter
         * gradients, twice that */
        double flop = madds * 2.0 * c->batch_size * (o->phase == 1 ? 2 : 1);
        if (madds && (o->phase == 0 || o->phase == 1) && o->ms > 0)
            o->gflops = flop / (o->ms * 1e-3) * 1e-9;
    }
    qsort(r->ops, (size_t)r->n_ops, sizeof *r->ops, by_ms_desc);
    /* the input's capacity */
    int64_t ex = p1.examples - p0.examples;
    double busy = 0;
    for (int s = 0; s < SLIM_STAGE_COUNT && s < 8; s++) {
        double d = p1.stage_seconds[s] - p0.stage_seconds[s];
        r->stage_ms[s] = ex > 0 ? 1e3 * d / (double)ex : 0;
        if (s != SLIM_STAGE_WAIT && s != SLIM_STAGE_BATCH)
            busy += d;
    }
    r->input_images_per_sec = ex > 0 && busy > 0 ? (double)ex / busy * t.input_threads : 0;
    double model_ips = r->compute_ms > 0 ? c->batch_size / (r->compute_ms * 1e-3) : 0;
    r->input_bound = r->wait_fraction > 0.10;
    char *v = r->verdict;
    size_t vn = sizeof r->verdict;
    if (r->input_bound) {
        int slowest = SLIM_STAGE_READ;
        for (int s = 0; s < SLIM_STAGE_BATCH; s++)
            if (r->stage_ms[s] > r->stage_ms[slowest])
                slowest = s;
        int want = model_ips > 0 && r->input_images_per_sec > 0
                       ? (int)ceil(model_ips / (r->input_images_per_sec / t.input_threads))
                       : t.input_threads * 2;
        /* Cropped JPEG decodes that could have been cuts of restart-indexed files. */
        int64_t roi = p1.roi_decodes - p0.roi_decodes,
                cut = p1.indexed_decodes - p0.indexed_decodes;
        const char *source = "convert loose images to TFRecord shards (slimrun convert)";
        if (slowest == SLIM_STAGE_DECODE && roi > 0 && 2 * cut < roi)
            source = "store the JPEGs restart-indexed so crops decode only their MCUs (slimrun "
                     "convert writes them from image folders; --input_records rewrites existing "
                     "shards)";
        else if (roi > 0 && cut > 0)
            source = "train at a smaller --train_image_size or with fewer augmentations (the JPEG "
                     "crops already "
                     "decode from restart-indexed cuts)";
        snprintf(v, vn,
                 "input-bound: the model waits for data %.0f%% of each step. The input delivers "
                 "~%.0f images/s with %d worker%s, the model could take ~%.0f. Slowest input "
                 "stage: %s (%.3f ms per image). Give the input more threads "
                 "(--num_preprocessing_threads=%d)%s, %s, and keep ROI/scaled JPEG decoding on.",
                 100 * r->wait_fraction, r->input_images_per_sec, t.input_threads,
                 t.input_threads > 1 ? "s" : "", model_ips, slim_stage_name(slowest),
                 r->stage_ms[slowest], want > t.input_threads ? want : t.input_threads + 1,
                 want > t.input_threads ? "" : " or a larger prefetch queue", source);
    } else {
        const slim_profile_op *top = r->n_ops ? &r->ops[0] : NULL;
        snprintf(v, vn,
                 "compute-bound: the model waits for data %.1f%% of each step; forward %.1f ms, "
                 "backward %.1f ms, updates %.1f ms. The slowest op is %s (%s, %s, %.2f ms). "
                 "%s",
                 100 * r->wait_fraction, r->phase_ms[0], r->phase_ms[1], r->phase_ms[2],
                 top ? top->name : "-", top ? top->op : "-",
                 top ? (top->phase == 0   ? "forward"
                        : top->phase == 1 ? "backward"
                                          : "update")
                     : "-",
                 top ? top->ms : 0,
                 r->input_images_per_sec > 3 * model_ips && t.input_threads > 1
                     ? "The input has spare capacity: fewer input workers would leave their "
                       "threads to the model (--num_preprocessing_threads)."
                     : "More threads for the model (--num_threads) or a larger batch use the "
                       "cores better.");
    }
    free(acc);
    slim__rt_trainer_fini(&t);
    return SLIM_OK;
}
