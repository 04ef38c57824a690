/*
 * tests/dsl/test_fastpath.c - whole models, fast kernels against the
 * reference kernels: one training step (forward, loss, backward) of zoo
 * models that together use every fast path the big models take (3x3, 1x1,
 * strided and 7x7 convolutions, depthwise, asymmetric 1x7/7x1 kernels,
 * pooling, batch norm, concat, residual adds, fully connected), compiled
 * twice from the same graph: once with the fast kernels on 2 threads, once
 * with SLIM_KERNELS=ref on 1 thread. The loss, the logits and the gradient of
 * every parameter must agree to float rounding.
 *
 * What "float rounding" means for a deep network is measured, not guessed:
 * a third run, the reference kernels on an input perturbed by 1e-5
 * (relative, about 170 units in the last place), shows how sensitive each
 * result is. Through 50 layers of batch norm at batch 2 that is a lot: a
 * pre-activation within 1e-4 of zero changes sides, one ReLU flips, and
 * gradients move by a percent; different summation orders do the same. The
 * fast path may differ from the reference by twice what the perturbation
 * does, plus 1e-5 (relative); a wrong kernel is off by far more (a workspace
 * overrun on 2x2 maps was off by 0.36 in the forward pass).
 *
 * Inference is checked the same way, where the compiler fuses: the fast
 * program (2 threads) folds each batch norm, residual add, relu and relu6
 * into the conv2d before it, and runs the MobileNets' depthwise-separable
 * blocks as conv2d_chain steps; the reference runs the graph unfused with
 * the reference kernels. Batch-norm parameters and statistics are first set to random
 * values (the initial ones, mean 0 and variance 1, would hide a wrong fold).
 *
 * Each op is checked alone in tests/ops; this catches what only a whole
 * network shows: a fast path chosen for a shape the op tests do not have,
 * layouts or workspaces that disagree between ops, accumulation across the
 * graph.
 */
#include "tests/dsl/tap.h"

#include <slim/model.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fp_case {
    const char *name;
    int image_size;
    const char *define; /* NULL or one model var */
    const char *yaml;   /* a model file's text instead of the zoo's model name */
    int gates;          /* conv2d steps that take in a hard_swish node */
} fp_case;

/* Convolutions with batch norms followed by MobileNet v3's hard_swish, plain,
 * depthwise, pointwise and strided, and one with a residual add: in inference
 * each conv2d takes its batch norm and hard_swish in (ops/act.h): stem, c3,
 * and c4 with the add and hard_swish after it; dw + pw become a conv2d_chain;
 * silu and gelu stay their own steps. */
static const char gates_yaml[] =
    "name: gates\n"
    "num_classes: 10\n"
    "image_size: 32\n"
    "defaults:\n"
    "  conv2d: {normalizer: batch_norm, padding: SAME}\n"
    "layers:\n"
    "  - conv2d: {name: stem, num_outputs: 16, kernel_size: 3, stride: 2, activation: hard_swish}\n"
    "  - conv2d: {name: dw, num_outputs: 16, kernel_size: 3, groups: 16, activation: hard_swish}\n"
    "  - conv2d: {name: pw, num_outputs: 24, kernel_size: 1, activation: silu}\n"
    "  - conv2d: {name: c3, num_outputs: 24, kernel_size: 3, activation: hard_swish}\n"
    "  - conv2d: {name: c4, num_outputs: 24, kernel_size: 3, activation: none}\n"
    "  - add: {name: res, inputs: [c3, c4]}\n"
    "  - hard_swish: {name: res_act}\n"
    "  - gelu: {name: head_act}\n"
    "  - global_avg_pool: {name: pool, keep_dims: false}\n"
    "  - fully_connected: {name: logits, num_outputs: $num_classes, activation: none}\n";

static const fp_case cases[] = {
    {"lenet", 28, NULL, NULL, 0},
    {"cifarnet", 32, NULL, NULL, 0},
    {"vgg_a", 32, "fc_conv_padding=SAME", NULL, 0},
    {"resnet_v1_50", 64, NULL, NULL, 0},
    {"resnet_v2_50", 64, NULL, NULL, 0},
    {"inception_v3", 107, NULL, NULL, 0},
    {"mobilenet_v1", 64, "depth_multiplier=0.25", NULL, 0},
    {"mobilenet_v2", 64, "depth_multiplier=0.35", NULL, 0},
    {"gates", 32, NULL, gates_yaml, 3},
};

enum { BATCH = 2, CLASSES = 10 };

/* What one program computed: the loss, the logits, every gradient. */
typedef struct result {
    float loss;
    float logits[BATCH * CLASSES];
    int n;
    float **grad;
    int64_t *len;
} result;

static void result_free(result *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->grad[i]);
    free(r->grad);
    free(r->len);
}

/* A program compiled as co says (with the reference kernels when ref),
 * its images and labels written (the images perturbed when perturb); NULL
 * on error. */
static slim_program *compile_fed(slim_graph *g, const slim_compile_opts *co, bool ref, bool perturb,
                                 slim_error *err)
{
    if (ref)
        setenv("SLIM_KERNELS", "ref", 1);
    else
        unsetenv("SLIM_KERNELS");
    slim_program *p;
    slim_status st = slim_graph_compile(g, co, &p, err);
    unsetenv("SLIM_KERNELS");
    if (st != SLIM_OK)
        return NULL;
    slim_tensor x, y;
    slim_program_input(p, "images", &x, err);
    slim_program_input(p, "labels", &y, err);
    float *xd = x.data;
    for (int64_t i = 0; i < slim_shape_numel(&x.shape); i++) {
        xd[i] = (float)((i * 7919) % 255) / 255.0f - 0.5f;
        if (perturb) /* +-1e-5, a sign per element */
            xd[i] *= ((i * 2654435761u) >> 7) % 2 ? 1.00001f : 0.99999f;
    }
    for (int b = 0; b < BATCH; b++)
        ((int32_t *)y.data)[b] = (3 + 5 * b) % CLASSES;
    return p;
}

static bool run(slim_graph *g, int threads, bool ref, bool perturb, result *r, slim_error *err)
{
    slim_compile_opts co = {.training = true, .num_threads = threads};
    slim_program *p = compile_fed(g, &co, ref, perturb, err);
    if (!p)
        return false;
    slim_run_opts ro = {.learning_rate = 0.0f, .step = 0, .seed = 1};
    slim_tensor lg, loss;
    bool ok = slim_program_run(p, &ro, err) == SLIM_OK &&
              slim_program_output(p, "logits", &lg, err) == SLIM_OK &&
              slim_program_output(p, "total_loss", &loss, err) == SLIM_OK &&
              slim_shape_numel(&lg.shape) == BATCH * CLASSES;
    int np = slim_graph_param_count(g);
    *r = (result){.grad = calloc((size_t)np, sizeof *r->grad),
                  .len = calloc((size_t)np, sizeof *r->len)};
    if (ok) {
        r->loss = *(float *)loss.data;
        memcpy(r->logits, lg.data, sizeof r->logits);
        for (int i = 0; i < np && r->grad; i++) {
            const char *name;
            unsigned flags;
            slim_tensor gv;
            slim_graph_param_at(g, i, &name, NULL, &flags);
            slim_error ge = {0};
            if (!(flags & SLIM_PARAM_TRAINABLE) || slim_program_grad(p, name, &gv, &ge) != SLIM_OK)
                continue; /* state (batch-norm moving statistics), constants */
            int64_t n = slim_shape_numel(&gv.shape);
            r->grad[i] = malloc((size_t)n * sizeof(float));
            if (r->grad[i])
                memcpy(r->grad[i], gv.data, (size_t)n * sizeof(float));
            r->len[i] = n;
        }
        r->n = np;
    }
    slim_program_free(p);
    return ok;
}

/* Inference: the logits of a program compiled with or without fusion; the
 * number of fused conv2d steps in *fused, of conv2d_chain steps in *chains. */
static bool run_inference(slim_graph *g, int threads, bool ref, bool fuse, bool perturb,
                          float *logits, int *fused, int *chains, int *gates, slim_error *err)
{
    slim_compile_opts co = {.training = false, .num_threads = threads, .no_fusion = !fuse};
    slim_program *p = compile_fed(g, &co, ref, perturb, err);
    if (!p)
        return false;
    slim_tensor lg;
    slim_run_opts ro = {.step = 0, .seed = 1};
    bool ok = slim_program_run(p, &ro, err) == SLIM_OK &&
              slim_program_output(p, "logits", &lg, err) == SLIM_OK &&
              slim_shape_numel(&lg.shape) == BATCH * CLASSES;
    if (ok)
        memcpy(logits, lg.data, BATCH * CLASSES * sizeof(float));
    const slim_node_time *t;
    int n = slim_program_times(p, &t);
    *fused = *chains = *gates = 0;
    for (int i = 0; i < n; i++) {
        *fused += t[i].op && strncmp(t[i].op, "conv2d+", 7) == 0;
        *gates += t[i].op && strncmp(t[i].op, "conv2d+", 7) == 0 && strstr(t[i].op, "+hard_swish");
        *chains += t[i].op && strcmp(t[i].op, "conv2d_chain") == 0;
    }
    slim_program_free(p);
    return ok;
}

/* Batch-norm parameters and moving statistics to random values of their
 * kind (variance in [0.5, 2), gamma in [0.5, 1.5), mean and beta in
 * [-0.2, 0.2)). */
static void randomize_bn(slim_graph *g)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < slim_graph_param_count(g); i++) {
        const char *name;
        slim_tensor v;
        slim_graph_param_at(g, i, &name, &v, NULL);
        size_t len = strlen(name);
        double lo, hi;
#define ENDS(suffix) (len >= strlen(suffix) && !strcmp(name + len - strlen(suffix), suffix))
        if (ENDS("moving_variance"))
            lo = 0.5, hi = 2;
        else if (ENDS("gamma"))
            lo = 0.5, hi = 1.5;
        else if (ENDS("moving_mean") || ENDS("beta"))
            lo = -0.2, hi = 0.2;
        else
            continue;
#undef ENDS
        float *d = v.data;
        for (int64_t k = 0; k < slim_shape_numel(&v.shape); k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            d[k] = (float)(lo + (hi - lo) * (double)(s >> 11) / 9007199254740992.0);
        }
    }
}

static double rel_err(const float *a, const float *b, int64_t n);

/* The fused inference program against the unfused reference. */
static void check_inference(slim_graph *g, const fp_case *c)
{
    slim_error err = {0};
    float fast[BATCH * CLASSES], ref[BATCH * CLASSES], base[BATCH * CLASSES];
    int n_fused = 0, n_ref = 0, n_base = 0, n_chain = 0, n_chain_ref = 0, n_chain_base = 0;
    int gates = 0, unused;
    randomize_bn(g);
    bool ok = run_inference(g, 2, false, true, false, fast, &n_fused, &n_chain, &gates, &err) &&
              run_inference(g, 1, true, false, false, ref, &n_ref, &n_chain_ref, &unused, &err) &&
              run_inference(g, 1, true, false, true, base, &n_base, &n_chain_base, &unused, &err);
    if (!tap_ok(ok, "%s: inference runs fused (fast kernels) and unfused (reference)", c->name)) {
        tap_diag("%s", err.msg);
        return;
    }
    double eo = rel_err(fast, ref, BATCH * CLASSES), bo = rel_err(base, ref, BATCH * CLASSES);
    /* MobileNets' depthwise-separable blocks run as conv2d_chain steps (and
     * the gates' dw + pw) */
    const bool separable = strncmp(c->name, "mobilenet", 9) == 0 || c->gates;
    tap_ok(n_fused + n_chain > 0 && n_ref + n_chain_ref == 0 && (n_chain > 0) == separable &&
               eo <= 2 * bo + 1e-5,
           "%s inference: %d fused conv2d steps and %d conv2d_chain steps, logits rel %.1e from "
           "the unfused reference (the perturbation moves them %.1e)",
           c->name, n_fused, n_chain, eo, bo);
    if (c->gates)
        tap_ok(gates == c->gates, "%s inference: %d conv2d steps take in their gate (%d expected)",
               c->name, gates, c->gates);
}

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * (double)b[i];
    return s;
}

/* ||a - b|| */
static double diff_norm(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        d += e * e;
    }
    return sqrt(d);
}

/* ||a - b|| / ||b|| */
static double rel_err(const float *a, const float *b, int64_t n)
{
    return diff_norm(a, b, n) / fmax(sqrt(dot(b, b, n)), 1e-30);
}

static void check(slim_registry *reg, const fp_case *c)
{
    char path[1024];
    slim_error err = {0};
    const char *defs[1] = {c->define};
    slim_model_opts o = {.batch_size = BATCH,
                         .num_classes = CLASSES,
                         .image_size = c->image_size,
                         .training = true,
                         .weight_decay = -1,
                         .defines = defs,
                         .n_defines = c->define ? 1 : 0};
    slim_model *m;
    if (c->yaml ? slim_model_load_string(reg, c->name, c->yaml, strlen(c->yaml), &o, &m, &err)
                : (slim_model_find(c->name, path, sizeof path, &err) != SLIM_OK ||
                   slim_model_load(reg, path, &o, &m, &err))) {
        tap_ok(false, "%s: builds", c->name);
        tap_diag("%s", err.msg);
        return;
    }
    slim_graph *g = slim_model_graph(m);
    slim_graph_init_params(g, 7, &err);
    result fast, ref, base;
    bool ok = run(g, 2, false, false, &fast, &err);
    if (!ok)
        tap_diag("%s (fast): %s", c->name, err.msg);
    bool ok_ref = ok && run(g, 1, true, false, &ref, &err);
    if (ok && !ok_ref)
        tap_diag("%s (ref): %s", c->name, err.msg);
    bool ok_base = ok_ref && run(g, 1, true, true, &base, &err);
    if (ok_ref && !ok_base)
        tap_diag("%s (ref, perturbed): %s", c->name, err.msg);
    if (!tap_ok(ok_base, "%s: a training step runs with the fast and the reference kernels",
                c->name)) {
        if (ok)
            result_free(&fast);
        if (ok_ref)
            result_free(&ref);
        slim_model_free(m);
        return;
    }
    /* the loss and the logits */
    double el = fabs((double)fast.loss - ref.loss) / fmax(fabs((double)ref.loss), 1e-30);
    double bl = fabs((double)base.loss - ref.loss) / fmax(fabs((double)ref.loss), 1e-30);
    double eo = rel_err(fast.logits, ref.logits, BATCH * CLASSES);
    double bo = rel_err(base.logits, ref.logits, BATCH * CLASSES);
    tap_ok(el <= 2 * bl + 1e-5 && eo <= 2 * bo + 1e-5,
           "%s %dx%d: loss rel %.1e, logits rel %.1e from the reference (the perturbation moves "
           "them %.1e, %.1e)",
           c->name, c->image_size, c->image_size, el, eo, bl, bo);
    /* every gradient; one that is zero in exact arithmetic (a bias before a
       batch norm) is judged against the largest gradient of the model */
    double gmax = 0;
    for (int i = 0; i < ref.n; i++)
        if (ref.grad[i])
            gmax = fmax(gmax, sqrt(dot(ref.grad[i], ref.grad[i], ref.len[i])));
    double worst = 0, worst_e = 0, worst_b = 0;
    int worst_i = -1, n_grads = 0;
    for (int i = 0; i < fast.n; i++) {
        if (!fast.grad[i] || !ref.grad[i] || !base.grad[i] || fast.len[i] != ref.len[i])
            continue;
        n_grads++;
        double scale = fmax(sqrt(dot(ref.grad[i], ref.grad[i], ref.len[i])), 1e-6 * gmax);
        double e = diff_norm(fast.grad[i], ref.grad[i], fast.len[i]) / scale;
        double b = diff_norm(base.grad[i], ref.grad[i], fast.len[i]) / scale;
        double ratio = e / (2 * b + 1e-5);
        if (!(ratio <= worst)) {
            worst = ratio;
            worst_e = e;
            worst_b = b;
            worst_i = i;
        }
    }
    const char *wname = "-";
    if (worst_i >= 0)
        slim_graph_param_at(g, worst_i, &wname, NULL, NULL);
    tap_ok(n_grads > 0 && worst <= 1,
           "%s: %d parameter gradients agree; the worst, %s, is %.1e from the reference "
           "(the perturbation moves it %.1e)",
           c->name, n_grads, wname, worst_e, worst_b);
    result_free(&base);
    result_free(&fast);
    result_free(&ref);
    check_inference(g, c);
    slim_model_free(m);
}

int main(int argc, char **argv)
{
    slim_registry *reg;
    slim_error err;
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (tap_selected(argc, argv, cases[i].name))
            check(reg, &cases[i]);
    slim_registry_free(reg);
    return tap_done();
}
