/* runtime/session.c - input, models, thread budget, moving averages and
 * evaluation, shared by training, evaluation and profiling. */
#include "runtime/session.h"

#include "core/error.h"
#include "runtime/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- synthetic data ----------------------------------------------------------------
 * Example i: label = hash(seed, i) mod K; pixels = uniform noise in [0, 0.5)
 * plus 0.5 on a band of rows that depends on the label, so the data is
 * learnable and a loss that falls shows the loop works. */

static void synth_example(const slim__rt_input *in, int64_t i, float *x, int32_t *y)
{
    int32_t label = (int32_t)(slim_rand_u64(in->seed, 0x5e1f, (uint64_t)i) % (uint64_t)in->classes);
    *y = label;
    int band = in->h / (in->classes < in->h ? in->classes : in->h);
    if (band < 1)
        band = 1;
    int r0 = (label * band) % in->h;
    for (int r = 0; r < in->h; r++)
        for (int col = 0; col < in->w; col++)
            for (int ch = 0; ch < in->c; ch++) {
                uint64_t k = ((uint64_t)r * (uint64_t)in->w + (uint64_t)col) * (uint64_t)in->c +
                             (uint64_t)ch;
                float v = 0.5f * slim_rand_uniform(in->seed ^ (uint64_t)i, 0x5e1f1, k);
                if (r >= r0 && r < r0 + band)
                    v += 0.5f;
                x[k] = v;
            }
}

slim_status slim__rt_input_open(const slim__rt_input_opts *o, slim__rt_input *in, slim_error *err)
{
    memset(in, 0, sizeof *in);
    in->n = o->batch_size;
    if (o->synthetic) {
        in->synthetic = true;
        in->h = in->w = o->image_size > 0 ? o->image_size : 28;
        in->c = o->channels > 0 ? o->channels : 1;
        in->classes = o->num_classes > 0 ? o->num_classes : 10;
        in->seed = o->seed;
        in->epoch_examples = o->synthetic_examples > 0 ? o->synthetic_examples : 1024;
        in->num_epochs = o->num_epochs;
        in->replica = o->replicas > 1 ? o->replica : 0;
        in->replicas = o->replicas > 1 ? o->replicas : 1;
        size_t px = (size_t)in->h * (size_t)in->w * (size_t)in->c;
        /* bindable as program inputs, as the pipeline's batches (slim__rt_feed) */
        size_t xb = ((size_t)in->n * px * sizeof(float) + 63) / 64 * 64;
        size_t yb = ((size_t)in->n * sizeof(int32_t) + 63) / 64 * 64;
        in->x = aligned_alloc(SLIM_BIND_ALIGN, xb + SLIM_BIND_SLACK);
        in->y = aligned_alloc(SLIM_BIND_ALIGN, yb + SLIM_BIND_SLACK);
        if (!in->x || !in->y) {
            slim__rt_input_close(in);
            return slim__error(err, SLIM_ENOMEM, "out of memory for a synthetic batch");
        }
        memset((char *)in->x + xb - 64, 0, 64 + SLIM_BIND_SLACK); /* what BLIS may over-read */
        memset(in->y, 0, yb + SLIM_BIND_SLACK);
        return SLIM_OK;
    }
    slim_pipeline_opts po = {0};
    po.file_pattern = o->file_pattern;
    po.dataset_name = o->dataset_name;
    po.dataset_dir = o->dataset_dir;
    po.split = o->split;
    po.recipe = o->recipe;
    po.is_training = o->is_training;
    po.batch_size = o->batch_size;
    po.image_size = o->image_size;
    po.channels = o->channels;
    po.grayscale = o->grayscale;
    po.num_threads = o->num_threads;
    po.num_readers = o->num_readers;
    po.shuffle_buffer = o->shuffle_buffer;
    po.seed = o->seed;
    po.num_epochs = o->num_epochs;
    po.labels_offset = o->labels_offset;
    po.on_error = o->skip_damaged ? SLIM_ON_ERROR_SKIP : SLIM_ON_ERROR_FAIL;
    po.trace = o->trace;
    po.trace_user = o->trace_user;
    po.replica = o->replica;
    po.replicas = o->replicas;
    po.replica_by_file = o->replica_by_file;
    slim_status st = slim_pipeline_new(&po, &in->pipe, err);
    if (st)
        return st;
    int n, h, w, c;
    slim_pipeline_shape(in->pipe, &n, &h, &w, &c);
    in->n = n;
    in->h = h;
    in->w = w;
    in->c = c;
    return SLIM_OK;
}

slim_status slim__rt_input_next(slim__rt_input *in, const float **x, const int32_t **y,
                                slim_batch_info *bi, slim_error *err)
{
    memset(bi, 0, sizeof *bi);
    if (in->pipe) {
        slim_status st = slim_pipeline_next_view(in->pipe, x, y, bi, err);
        if (!st)
            in->wait_total += bi->wait_seconds;
        return st;
    }
    int64_t total = in->num_epochs > 0 ? in->num_epochs * in->epoch_examples : INT64_MAX;
    if (in->consumed >= total) {
        bi->end_of_data = true;
        return SLIM_OK;
    }
    size_t px = (size_t)in->h * (size_t)in->w * (size_t)in->c;
    /* across processes, this one's rows of the global batch */
    int64_t first = in->consumed + (int64_t)in->replica * in->n;
    bi->epoch = first / in->epoch_examples;
    bi->index = first % in->epoch_examples;
    bi->consumed = in->consumed;
    int valid = 0;
    for (int b = 0; b < in->n; b++) {
        int64_t g = first + b;
        if (g < total) {
            synth_example(in, g % in->epoch_examples, in->x + (size_t)b * px, &in->y[b]);
            valid++;
        } else {
            memset(in->x + (size_t)b * px, 0, px * sizeof(float));
            in->y[b] = 0;
        }
    }
    int64_t step = (int64_t)in->n * in->replicas;
    in->consumed = in->consumed + step < total ? in->consumed + step : total;
    bi->n_valid = valid;
    *x = in->x;
    *y = in->y;
    return SLIM_OK;
}

void slim__rt_input_position(const slim__rt_input *in, slim_pipeline_position *pos)
{
    memset(pos, 0, sizeof *pos);
    if (in->pipe) {
        slim_pipeline_position_get(in->pipe, pos);
        return;
    }
    pos->consumed = in->consumed;
    pos->epoch = in->consumed / in->epoch_examples;
    pos->index = in->consumed % in->epoch_examples;
}

slim_status slim__rt_input_restore(slim__rt_input *in, const slim_pipeline_position *pos,
                                   slim_error *err)
{
    if (in->pipe)
        return slim_pipeline_restore(in->pipe, pos, err);
    in->consumed = pos->consumed;
    return SLIM_OK;
}

int64_t slim__rt_input_epoch_examples(const slim__rt_input *in)
{
    if (in->synthetic)
        return in->epoch_examples;
    const slim_dataset_info *d = in->pipe ? slim_pipeline_dataset(in->pipe) : NULL;
    if (d && d->num_examples > 0)
        return d->num_examples;
    slim_pipeline_stats st;
    if (in->pipe) {
        slim_pipeline_get_stats(in->pipe, &st);
        return st.epoch_size;
    }
    return 0;
}

void slim__rt_input_close(slim__rt_input *in)
{
    slim_pipeline_free(in->pipe);
    free(in->x);
    free(in->y);
    memset(in, 0, sizeof *in);
}

slim_status slim__rt_data_describe(const char *name, const char *dir, const char *split,
                                   slim__rt_data_desc *d, slim_error *err)
{
    memset(d, 0, sizeof *d);
    slim_status st = slim_dataset_open(name, dir, split, &d->ds, err);
    if (st)
        return st;
    const slim_dataset_info *i = slim_dataset_get_info(d->ds);
    d->num_classes = i->num_classes;
    d->num_examples = i->num_examples;
    d->image_height = i->image_height;
    d->image_width = i->image_width;
    d->channels = i->channels;
    d->label_names = i->label_names;
    d->default_recipe = i->default_recipe;
    return SLIM_OK;
}

void slim__rt_data_desc_fini(slim__rt_data_desc *d)
{
    slim_dataset_free(d->ds);
    memset(d, 0, sizeof *d);
}

/* ---- threads ----------------------------------------------------------------------- */

int slim__rt_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/*
 * One budget: the model's pool threads (BLIS included) plus the input
 * workers never exceed `total`. Light input (small fixed-size images such as
 * MNIST or CIFAR, or synthetic data) needs a fraction of one core, so the
 * model keeps every thread and one worker shares with it: the worker sleeps on
 * the full prefetch queue most of the time. JPEG pipelines get a quarter of
 * the budget (at least one), which keeps ResNet-class models fed at
 * ~1000 decoded images/s per worker; `slimrun profile` says when to change it.
 */
void slim__rt_thread_split(int total, int requested_input, bool light_input, int *model, int *input)
{
    if (total <= 0)
        total = slim__rt_cores();
    if (requested_input > 0) {
        *input = requested_input;
        *model = total - requested_input >= 1 ? total - requested_input : 1;
        return;
    }
    if (light_input) {
        *input = 1;
        *model = total;
        return;
    }
    *input = total / 4 >= 1 ? total / 4 : 1;
    *model = total - *input >= 1 ? total - *input : 1;
}

/* ---- models -------------------------------------------------------------------------- */

slim_status slim__rt_model_open(slim_registry *reg, const slim__rt_model_req *r, slim_model **out,
                                slim_error *err)
{
    *out = NULL;
    char path[1024];
    const char *name = r->model_path ? r->model_path : r->model_name;
    if (!name)
        return slim__error(err, SLIM_EINVAL,
                           "no model: give --model_name=NAME (a zoo model) or "
                           "--model=FILE.yaml");
    slim_status st = slim_model_find(name, path, sizeof path, err);
    if (st)
        return st;
    slim_model_opts mo = {0};
    mo.batch_size = r->batch_size;
    mo.num_classes = r->num_classes;
    mo.image_size = r->image_size;
    mo.training = r->training;
    mo.label_smoothing = (float)r->label_smoothing;
    mo.weight_decay = (float)r->weight_decay;
    mo.set_aux_weight = r->aux_loss_weight >= 0;
    mo.aux_weight = (float)r->aux_loss_weight;
    mo.plugins = r->plugins;
    mo.n_plugins = r->n_plugins;
    mo.defines = r->defines;
    mo.n_defines = r->n_defines;
    return slim_model_load(reg, path, &mo, out, err);
}

int slim__rt_split_lines(char *s, char **out, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, "\n", &save); t && n < max;
         t = strtok_r(NULL, "\n", &save))
        out[n++] = t;
    return n;
}

/* ---- moving averages ---------------------------------------------------------------- */

slim_status slim__rt_ema_init(slim__rt_ema *e, slim_graph *g, double decay, slim_error *err)
{
    memset(e, 0, sizeof *e);
    e->decay = decay;
    e->n = slim_graph_param_count(g);
    e->avg = calloc((size_t)e->n + 1, sizeof *e->avg);
    if (!e->avg)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < e->n; i++) {
        const char *name;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &name, &v, &fl);
        size_t bytes = (size_t)slim_shape_numel(&v.shape) * sizeof(float);
        e->avg[i] = malloc(bytes + 64);
        if (!e->avg[i]) {
            slim__rt_ema_fini(e);
            return slim__error(err, SLIM_ENOMEM, "out of memory for moving averages");
        }
        memcpy(e->avg[i], v.data, bytes);
    }
    return SLIM_OK;
}

void slim__rt_ema_update(slim__rt_ema *e, slim_graph *g, int64_t step)
{
    /* TF: decay = min(decay, (1 + num_updates) / (10 + num_updates)), where
     * num_updates is the global step after the update; shadow -= (1 - decay)(shadow - var) */
    double n = (double)step + 1;
    float d = (float)fmin(e->decay, (1 + n) / (10 + n)), omd = 1.0f - d;
    for (int i = 0; i < e->n; i++) {
        const char *name;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &name, &v, &fl);
        const float *x = v.data;
        float *a = e->avg[i];
        int64_t m = slim_shape_numel(&v.shape);
        for (int64_t j = 0; j < m; j++)
            a[j] -= omd * (a[j] - x[j]);
    }
}

void slim__rt_ema_swap(slim__rt_ema *e, slim_graph *g)
{
    for (int i = 0; i < e->n; i++) {
        const char *name;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &name, &v, &fl);
        float *x = v.data, *a = e->avg[i];
        int64_t m = slim_shape_numel(&v.shape);
        for (int64_t j = 0; j < m; j++) {
            float t = x[j];
            x[j] = a[j];
            a[j] = t;
        }
    }
}

void slim__rt_ema_fini(slim__rt_ema *e)
{
    for (int i = 0; e->avg && i < e->n; i++)
        free(e->avg[i]);
    free(e->avg);
    memset(e, 0, sizeof *e);
}

/* ---- feeding and evaluation ----------------------------------------------------------- */

/* Bind data as input v of p (zero-copy; data has SLIM_BIND_SLACK bytes after it,
 * see slim__rt_input_next), or copy it where binding is refused. */
static void feed_one(slim_program *p, const char *name, slim_tensor *v, const void *data,
                     size_t bytes)
{
    slim_tensor_desc d = {v->dtype, v->shape};
    if (slim_program_bind_input(p, name, &d, data, bytes + SLIM_BIND_SLACK, NULL) == SLIM_OK)
        return;
    slim_program_bind_input(p, name, NULL, NULL, 0, NULL); /* back to its own buffer */
    slim_program_input(p, name, v, NULL);
    memcpy(v->data, data, bytes);
}

slim_status slim__rt_feed(slim_program *p, const float *x, const int32_t *y, size_t x_count,
                          int batch, slim_error *err)
{
    slim_tensor xv, yv;
    slim_status st = slim_program_input(p, "images", &xv, err);
    if (st)
        return st;
    if ((size_t)slim_shape_numel(&xv.shape) != x_count)
        return slim__error(err, SLIM_ESHAPE,
                           "the input gives %zu values per batch but the model's \"images\" "
                           "takes %lld: check --train_image_size / the model's image size",
                           x_count, (long long)slim_shape_numel(&xv.shape));
    feed_one(p, "images", &xv, x, x_count * sizeof(float));
    if (slim_program_input(p, "labels", &yv, NULL) == SLIM_OK)
        feed_one(p, "labels", &yv, y, (size_t)batch * sizeof(int32_t));
    return SLIM_OK;
}

void slim_eval_result_fini(slim_eval_result *r)
{
    if (!r)
        return;
    free(r->class_total);
    free(r->class_correct);
    free(r->confusion);
    r->class_total = r->class_correct = r->confusion = NULL;
}

slim_status slim__rt_evaluate(slim_program *p, slim__rt_input *in, int num_classes,
                              int64_t max_batches, const volatile int *stop, slim_eval_result *r,
                              slim_error *err)
{
    double t0 = slim__rt_now();
    int K = num_classes;
    memset(r, 0, sizeof *r);
    r->global_step = -1;
    r->num_classes = K;
    r->class_total = calloc((size_t)K, sizeof(int64_t));
    r->class_correct = calloc((size_t)K, sizeof(int64_t));
    r->confusion = calloc((size_t)K * (size_t)K, sizeof(int64_t));
    if (!r->class_total || !r->class_correct || !r->confusion) {
        slim_eval_result_fini(r);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    double loss_sum = 0;
    int64_t top1 = 0, top5 = 0, n = 0;
    size_t px = (size_t)in->h * (size_t)in->w * (size_t)in->c;
    slim_status st = SLIM_OK;
    for (int64_t b = 0; !max_batches || b < max_batches; b++) {
        if (stop && *stop)
            break;
        const float *x;
        const int32_t *y;
        slim_batch_info bi;
        st = slim__rt_input_next(in, &x, &y, &bi, err);
        if (st || bi.end_of_data)
            break;
        st = slim__rt_feed(p, x, y, px * (size_t)in->n, in->n, err);
        if (st)
            break;
        st = slim_program_run(p, &(slim_run_opts){0}, err);
        if (st)
            break;
        slim_tensor lg;
        st = slim_program_output(p, "logits", &lg, err);
        if (st)
            break;
        if (lg.shape.rank != 2 || lg.shape.dim[1] != K) {
            st = slim__error(err, SLIM_ESHAPE, "the model's logits have %lld classes, expected %d",
                             (long long)(lg.shape.rank == 2 ? lg.shape.dim[1] : -1), K);
            break;
        }
        const float *l = lg.data;
        for (int i = 0; i < bi.n_valid; i++) {
            const float *row = l + (size_t)i * (size_t)K;
            int32_t label = y[i];
            if (label < 0 || label >= K) {
                st = slim__error(err, SLIM_EINVAL,
                                 "label %d is outside the model's %d classes (check "
                                 "--labels_offset and --num_classes)",
                                 label, K);
                break;
            }
            int best = 0, above = 0;
            float mx = row[0];
            for (int k = 1; k < K; k++)
                if (row[k] > row[best])
                    best = k;
            mx = row[best];
            double se = 0;
            for (int k = 0; k < K; k++) {
                se += exp((double)row[k] - mx);
                above += row[k] > row[label];
            }
            loss_sum += log(se) - ((double)row[label] - mx);
            top1 += best == label;
            top5 += above < 5;
            r->class_total[label]++;
            r->class_correct[label] += best == label;
            r->confusion[(size_t)label * (size_t)K + (size_t)best]++;
            n++;
        }
        if (st)
            break;
    }
    if (st) {
        slim_eval_result_fini(r);
        return st;
    }
    r->n_examples = n;
    r->top1 = n ? (double)top1 / (double)n : 0;
    r->top5 = n ? (double)top5 / (double)n : 0;
    r->loss = n ? loss_sum / (double)n : 0;
    r->seconds = slim__rt_now() - t0;
    return SLIM_OK;
}
