/*
 * bench/train_step.c - training-step and inference throughput of TF-Slim's
 * LeNet and CifarNet built with the public C API, on synthetic input.
 *
 * A training step is what slimrun train runs per batch: forward, softmax
 * cross-entropy, backward and the momentum update (momentum 0.9, learning
 * rate 0.01), dropout on. Inference is a program compiled without training
 * (dropout off, no backward). Both are timed as the median of repeated runs
 * after a warm-up, as ../shared/anchors/torch_bench.py times PyTorch's, and
 * reported as images/s. --profile adds where a step's time goes (per node and
 * per op kind, from slim_program_set_profiling).
 *
 * LeNet (nets/lenet.py): conv 5x5x32 SAME + relu, max_pool 2x2/2, conv 5x5x64
 * + relu, max_pool 2x2/2, flatten, fc 1024 + relu, dropout 0.5, fc 10; 28x28x1,
 * batch 64.
 * CifarNet (nets/cifarnet.py): conv1 5x5x64 + relu, max_pool, lrn(4, 1.0,
 * 0.001/9, 0.75), conv2 5x5x64 + relu, lrn, max_pool, flatten, fc3 384 +
 * relu, dropout 0.5, fc4 192 + relu, logits 10; 32x32x3, batch 128. The pools
 * are 3x3/2 SAME by default, as in the PyTorch anchor this is compared with
 * (torch_bench.py: max_pool2d(3, 2, padding=1)); TF-Slim's file has 2x2/2
 * VALID pools (--cifarnet_pool=2). Both give 32 -> 16 -> 8.
 */
#include <slim/slim.h>

#include "bench/benchutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    char models[256];
    int threads[4], n_threads;
    double budget;
    int min_reps;
    int cifarnet_pool;
    bool profile;
    const char *json;
} opts;

typedef struct result {
    const char *model;
    int batch, threads;
    double train_ms, infer_ms, train_ips, infer_ips;
    int train_reps, infer_reps;
    double other;
    slim_program_stats train_st, infer_st;
} result;

static void die(const char *what, const slim_error *err)
{
    fprintf(stderr, "train_step: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static slim_tid param(slim_graph *g, const char *name, int rank, const int64_t *dim, slim_init init)
{
    slim_error err = {0};
    slim_shape s = slim_shape_make(rank, dim);
    slim_tid t;
    if (slim_graph_param(g, name, &s, &init, NULL, &t, &err) != SLIM_OK)
        die("build", &err);
    return t;
}

static slim_init tnormal(double stddev)
{
    return (slim_init){.kind = SLIM_INIT_TRUNCATED_NORMAL, .stddev = stddev};
}

static slim_init constant(double v)
{
    return (slim_init){.kind = SLIM_INIT_CONSTANT, .value = v};
}

/* conv or fc with its weights and biases: scope/weights, scope/biases. */
static slim_tid dense(slim_graph *g, const char *op, const char *scope, slim_tid x, int rank,
                      const int64_t *wdim, slim_init wi, slim_init bi, const char *attrs)
{
    char wn[128], bn[128];
    snprintf(wn, sizeof wn, "%s/weights", scope);
    snprintf(bn, sizeof bn, "%s/biases", scope);
    slim_tid in[3] = {x, param(g, wn, rank, wdim, wi), param(g, bn, 1, &wdim[rank - 1], bi)};
    return bench_layer("train_step", g, op, scope, in, 3, attrs);
}

static slim_tid relu(slim_graph *g, const char *scope, slim_tid x)
{
    char n[128];
    snprintf(n, sizeof n, "%s/Relu", scope);
    return bench_layer("train_step", g, "relu", n, &x, 1, NULL);
}

/* Inputs "images" (N,H,W,C) and "labels" (N); loss and logits outputs. */
static slim_graph *new_graph(slim_registry *reg, int batch, int h, int w, int ch, slim_tid *x,
                             slim_tid *y)
{
    slim_error err = {0};
    slim_graph *g;
    if (slim_graph_new(reg, &g, &err) != SLIM_OK)
        die("graph", &err);
    slim_shape xs = {4, {batch, h, w, ch}}, ys = {1, {batch}};
    if (slim_graph_input(g, "images", SLIM_F32, &xs, x, &err) ||
        slim_graph_input(g, "labels", SLIM_I32, &ys, y, &err))
        die("inputs", &err);
    return g;
}

static void finish(slim_graph *g, slim_tid logits, slim_tid y)
{
    slim_error err = {0};
    slim_tid loss = bench_layer("train_step", g, "softmax_cross_entropy", "loss",
                                (slim_tid[]){logits, y}, 2, NULL);
    if (slim_graph_set_loss(g, loss, &err) || slim_graph_mark_output(g, logits, &err))
        die("build", &err);
}

/* TF-Slim nets/lenet.py with lenet_arg_scope (weights stddev 0.1, biases 0). */
static slim_graph *lenet(slim_registry *reg, int batch, const opts *o)
{
    (void)o;
    slim_tid x, y, h;
    slim_graph *g = new_graph(reg, batch, 28, 28, 1, &x, &y);
    slim_init wi = tnormal(0.1), bi = constant(0);
    h = dense(g, "conv2d", "LeNet/conv1", x, 4, (int64_t[]){5, 5, 1, 32}, wi, bi, "padding=SAME");
    h = relu(g, "LeNet/conv1", h);
    h = bench_layer("train_step", g, "max_pool", "LeNet/pool1", &h, 1,
                    "ksize=[2,2]; strides=[2,2]; padding=VALID");
    h = dense(g, "conv2d", "LeNet/conv2", h, 4, (int64_t[]){5, 5, 32, 64}, wi, bi, "padding=SAME");
    h = relu(g, "LeNet/conv2", h);
    h = bench_layer("train_step", g, "max_pool", "LeNet/pool2", &h, 1,
                    "ksize=[2,2]; strides=[2,2]; padding=VALID");
    h = bench_layer("train_step", g, "flatten", "LeNet/Flatten", &h, 1, NULL);
    h = dense(g, "fully_connected", "LeNet/fc3", h, 2, (int64_t[]){7 * 7 * 64, 1024}, wi, bi, NULL);
    h = relu(g, "LeNet/fc3", h);
    h = bench_layer("train_step", g, "dropout", "LeNet/dropout3", &h, 1, "keep_prob=0.5");
    h = dense(g, "fully_connected", "LeNet/fc4", h, 2, (int64_t[]){1024, 10}, wi, bi, NULL);
    finish(g, h, y);
    return g;
}

/* TF-Slim nets/cifarnet.py with cifarnet_arg_scope (conv weights stddev 5e-2,
 * fc weights 0.04 and biases 0.1, logits 1/192 and 0). */
static slim_graph *cifarnet(slim_registry *reg, int batch, const opts *o)
{
    slim_tid x, y, h;
    slim_graph *g = new_graph(reg, batch, 32, 32, 3, &x, &y);
    const char *pool = o->cifarnet_pool == 2 ? "ksize=[2,2]; strides=[2,2]; padding=VALID"
                                             : "ksize=[3,3]; strides=[2,2]; padding=SAME";
    const char *lrn = "depth_radius=4; bias=1.0; alpha=0.000111111111; beta=0.75";
    slim_init cw = tnormal(5e-2), cb = constant(0), fw = tnormal(0.04), fb = constant(0.1);
    h = dense(g, "conv2d", "CifarNet/conv1", x, 4, (int64_t[]){5, 5, 3, 64}, cw, cb,
              "padding=SAME");
    h = relu(g, "CifarNet/conv1", h);
    h = bench_layer("train_step", g, "max_pool", "CifarNet/pool1", &h, 1, pool);
    h = bench_layer("train_step", g, "lrn", "CifarNet/norm1", &h, 1, lrn);
    h = dense(g, "conv2d", "CifarNet/conv2", h, 4, (int64_t[]){5, 5, 64, 64}, cw, cb,
              "padding=SAME");
    h = relu(g, "CifarNet/conv2", h);
    h = bench_layer("train_step", g, "lrn", "CifarNet/norm2", &h, 1, lrn);
    h = bench_layer("train_step", g, "max_pool", "CifarNet/pool2", &h, 1, pool);
    h = bench_layer("train_step", g, "flatten", "CifarNet/Flatten", &h, 1, NULL);
    h = dense(g, "fully_connected", "CifarNet/fc3", h, 2, (int64_t[]){8 * 8 * 64, 384}, fw, fb,
              NULL);
    h = relu(g, "CifarNet/fc3", h);
    h = bench_layer("train_step", g, "dropout", "CifarNet/dropout3", &h, 1, "keep_prob=0.5");
    h = dense(g, "fully_connected", "CifarNet/fc4", h, 2, (int64_t[]){384, 192}, fw, fb, NULL);
    h = relu(g, "CifarNet/fc4", h);
    h = dense(g, "fully_connected", "CifarNet/logits", h, 2, (int64_t[]){192, 10},
              tnormal(1 / 192.0), constant(0), NULL);
    finish(g, h, y);
    return g;
}

typedef struct model {
    const char *name;
    int batch;
    slim_graph *(*build)(slim_registry *reg, int batch, const opts *o);
} model;

static const model MODELS[] = {
    {"lenet", 64, lenet},
    {"cifarnet", 128, cifarnet},
};

/* Random images in [0, 1) and labels in [0, 10). */
static void feed(slim_program *p, uint64_t seed)
{
    slim_error err = {0};
    slim_tensor x, y;
    if (slim_program_input(p, "images", &x, &err) || slim_program_input(p, "labels", &y, &err))
        die("inputs", &err);
    float *xd = x.data;
    int32_t *yd = y.data;
    for (int64_t i = 0; i < slim_shape_numel(&x.shape); i++)
        xd[i] = slim_rand_uniform(seed, 1, (uint64_t)i);
    for (int64_t i = 0; i < slim_shape_numel(&y.shape); i++)
        yd[i] = (int32_t)(slim_rand_u64(seed, 2, (uint64_t)i) % 10);
}

/* Median seconds per run after a warm-up (>= 2 runs and 1 s). */
static double time_runs(slim_program *p, const opts *o, int64_t *step, int *reps, double *other)
{
    slim_error err = {0};
    int cap = 2000, n = 0;
    double *t = malloc((size_t)cap * sizeof *t);
    double t0 = bench_now();
    for (int w = 0; w < 2 || bench_now() - t0 < 1.0; w++) {
        slim_run_opts ro = {.learning_rate = 0.01f, .step = (*step)++, .seed = 1};
        if (slim_program_run(p, &ro, &err))
            die("run", &err);
    }
    bench_cpu c0 = bench_cpu_snapshot();
    t0 = bench_now();
    while (n < cap && (n < o->min_reps || bench_now() - t0 < o->budget)) {
        slim_run_opts ro = {.learning_rate = 0.01f, .step = (*step)++, .seed = 1};
        double s = bench_now();
        if (slim_program_run(p, &ro, &err))
            die("run", &err);
        t[n++] = bench_now() - s;
    }
    double o2 = bench_other_cores(c0, bench_cpu_snapshot());
    *other = o2 > *other ? o2 : *other;
    *reps = n;
    double med = bench_median(t, n);
    free(t);
    return med;
}

typedef struct prof_row {
    const char *name, *op;
    int phase;
    double s;
} prof_row;

static int cmp_prof(const void *a, const void *b)
{
    double x = ((const prof_row *)a)->s, y = ((const prof_row *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Mean per-node time over steps, then the top nodes and the totals per op kind. */
static void profile(slim_program *p, const char *label, int steps, int64_t *step)
{
    slim_error err = {0};
    slim_program_set_profiling(p, true);
    const slim_node_time *tm;
    int n = 0;
    prof_row *rows = NULL;
    for (int s = 0; s < steps + 2; s++) {
        slim_run_opts ro = {.learning_rate = 0.01f, .step = (*step)++, .seed = 1};
        if (slim_program_run(p, &ro, &err))
            die("run", &err);
        n = slim_program_times(p, &tm);
        if (!rows)
            rows = calloc((size_t)n, sizeof *rows);
        for (int i = 0; i < n && s >= 2; i++) /* two more warm-up steps */
            rows[i] = (prof_row){tm[i].name, tm[i].op, tm[i].phase, rows[i].s + tm[i].seconds};
    }
    slim_program_set_profiling(p, false);
    double total = 0;
    for (int i = 0; i < n; i++)
        total += rows[i].s /= steps;
    static const char *const phase[] = {"fwd", "bwd", "update", "grad-sum"};
    /* per op kind and phase */
    prof_row kinds[64];
    int nk = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < nk && (strcmp(kinds[k].op, rows[i].op) || kinds[k].phase != rows[i].phase))
            k++;
        if (k == nk && nk < 64)
            kinds[nk++] = (prof_row){rows[i].op, rows[i].op, rows[i].phase, 0};
        if (k < nk)
            kinds[k].s += rows[i].s;
    }
    qsort(kinds, (size_t)nk, sizeof *kinds, cmp_prof);
    qsort(rows, (size_t)n, sizeof *rows, cmp_prof);
    printf("\n%s: %.2f ms per step profiled (%d steps)\n\n| op (phase) | ms | share |\n"
           "|---|---:|---:|\n",
           label, total * 1e3, steps);
    for (int i = 0; i < nk && i < 10; i++)
        printf("| %s (%s) | %.2f | %.0f%% |\n", kinds[i].op, phase[kinds[i].phase & 3],
               kinds[i].s * 1e3, 100 * kinds[i].s / total);
    printf("\n| node (phase) | ms | share |\n|---|---:|---:|\n");
    for (int i = 0; i < n && i < 8; i++)
        printf("| %s %s (%s) | %.2f | %.0f%% |\n", rows[i].name, rows[i].op,
               phase[rows[i].phase & 3], rows[i].s * 1e3, 100 * rows[i].s / total);
    free(rows);
}

static result run_model(slim_registry *reg, const model *m, int nth, const opts *o)
{
    slim_error err = {0};
    slim_graph *g = m->build(reg, m->batch, o);
    if (slim_graph_init_params(g, 0, &err))
        die("init", &err);
    slim_attrs *oa = slim_attrs_new();
    slim_attrs_set_float(oa, "momentum", 0.9);
    slim_compile_opts co = {.training = true,
                            .num_threads = nth,
                            .optimizer = "momentum_update",
                            .optimizer_attrs = oa};
    slim_program *train, *infer;
    if (slim_graph_compile(g, &co, &train, &err))
        die("compile (train)", &err);
    co.training = false;
    co.optimizer = NULL;
    if (slim_graph_compile(g, &co, &infer, &err))
        die("compile (inference)", &err);
    slim_attrs_free(oa);
    result r = {.model = m->name, .batch = m->batch, .threads = nth};
    slim_program_get_stats(train, &r.train_st);
    slim_program_get_stats(infer, &r.infer_st);
    feed(train, 7);
    feed(infer, 7);
    int64_t step = 0;
    r.train_ms = 1e3 * time_runs(train, o, &step, &r.train_reps, &r.other);
    r.infer_ms = 1e3 * time_runs(infer, o, &step, &r.infer_reps, &r.other);
    r.train_ips = m->batch / (r.train_ms * 1e-3);
    r.infer_ips = m->batch / (r.infer_ms * 1e-3);
    fprintf(stderr,
            "%s %dt: train %.2f ms/step (%.0f images/s, %d reps), inference %.2f ms (%.0f "
            "images/s, %d reps), other load %.2f\n",
            m->name, nth, r.train_ms, r.train_ips, r.train_reps, r.infer_ms, r.infer_ips,
            r.infer_reps, r.other);
    if (o->profile) {
        char label[96];
        snprintf(label, sizeof label, "%s training step, %d thread%s", m->name, nth,
                 nth > 1 ? "s" : "");
        profile(train, label, 20, &step);
        snprintf(label, sizeof label, "%s inference, %d thread%s", m->name, nth,
                 nth > 1 ? "s" : "");
        profile(infer, label, 20, &step);
    }
    slim_program_free(train);
    slim_program_free(infer);
    slim_graph_free(g);
    return r;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: train_step [--models=lenet,cifarnet] [--threads=1,2] [--budget=SECONDS]\n"
            "                  [--min_reps=N] [--cifarnet_pool=3|2] [--profile] "
            "[--json=FILE]\n");
    exit(2);
}

static double mib(size_t b)
{
    return (double)b / 1048576.0;
}

int main(int argc, char **argv)
{
    opts o = {.models = "lenet,cifarnet",
              .threads = {1, 2},
              .n_threads = 2,
              .budget = 5,
              .min_reps = 10,
              .cifarnet_pool = 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = strchr(a, '=');
        if (!strcmp(a, "--profile")) {
            o.profile = true;
            continue;
        }
        if (!v)
            usage();
        v++;
        if (!strncmp(a, "--models=", 9))
            snprintf(o.models, sizeof o.models, "%s", v);
        else if (!strncmp(a, "--threads=", 10)) {
            o.n_threads = 0;
            for (char *e; *v && o.n_threads < 4; v = *e ? e + 1 : e) {
                o.threads[o.n_threads++] = (int)strtol(v, &e, 10);
                if (e == v)
                    usage();
            }
        } else if (!strncmp(a, "--budget=", 9))
            o.budget = atof(v);
        else if (!strncmp(a, "--min_reps=", 11))
            o.min_reps = atoi(v);
        else if (!strncmp(a, "--cifarnet_pool=", 16))
            o.cifarnet_pool = atoi(v);
        else if (!strncmp(a, "--json=", 7))
            o.json = v;
        else
            usage();
    }
    if (o.min_reps < 1 || (o.cifarnet_pool != 2 && o.cifarnet_pool != 3))
        usage();

    slim_error err = {0};
    slim_registry *reg;
    if (slim_registry_new(&reg, &err))
        die("registry", &err);
    result res[8];
    int nres = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", o.models);
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const model *m = NULL;
        for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
            if (!strcmp(MODELS[i].name, name))
                m = &MODELS[i];
        if (!m) {
            fprintf(stderr, "train_step: unknown model '%s' (lenet, cifarnet)\n", name);
            return 2;
        }
        for (int t = 0; t < o.n_threads && nres < 8; t++)
            res[nres++] = run_model(reg, m, o.threads[t], &o);
    }

    printf("\n| model | batch | threads | train images/s | train ms/step | inference images/s | "
           "inference ms | planned training memory MiB (no reuse) | params + slots MiB |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double max_other = 0;
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        printf("| %s | %d | %d | %.0f | %.2f | %.0f | %.2f | %.1f (%.1f) | %.1f + %.1f |\n",
               r->model, r->batch, r->threads, r->train_ips, r->train_ms, r->infer_ips, r->infer_ms,
               mib(r->train_st.arena_bytes), mib(r->train_st.naive_bytes),
               mib(r->train_st.param_bytes), mib(r->train_st.slot_bytes));
        max_other = r->other > max_other ? r->other : max_other;
    }
    printf("\nMedian step after warm-up; synthetic input. Planned memory: the arena of "
           "activations, gradients and workspaces (slim_program_get_stats). Other processes "
           "used up to %.2f cores while timing.\n",
           max_other);
    if (o.json) {
        FILE *f = fopen(o.json, "w");
        if (!f)
            die(o.json, NULL);
        fprintf(f, "[\n");
        for (int i = 0; i < nres; i++) {
            const result *r = &res[i];
            fprintf(f,
                    "  {\"model\": \"%s\", \"batch\": %d, \"threads\": %d, \"train_ms_median\": "
                    "%.3f, \"train_img_s\": %.1f, \"train_reps\": %d, \"infer_ms_median\": %.3f, "
                    "\"infer_img_s\": %.1f, \"infer_reps\": %d, \"train_arena_bytes\": %zu, "
                    "\"train_naive_bytes\": %zu, \"infer_arena_bytes\": %zu, \"param_bytes\": %zu, "
                    "\"slot_bytes\": %zu, \"other_cores\": %.2f}%s\n",
                    r->model, r->batch, r->threads, r->train_ms, r->train_ips, r->train_reps,
                    r->infer_ms, r->infer_ips, r->infer_reps, r->train_st.arena_bytes,
                    r->train_st.naive_bytes, r->infer_st.arena_bytes, r->train_st.param_bytes,
                    r->train_st.slot_bytes, r->other, i + 1 < nres ? "," : "");
        }
        fprintf(f, "]\n");
        fclose(f);
    }
    slim_registry_free(reg);
    return 0;
}
