/* tests/engine/test_graph.c - the engine end to end through the public API:
 *  - whole-graph gradients against finite differences, including a tensor
 *    that feeds two consumers (accumulation) and a frozen parameter;
 *  - a small convnet trained on a synthetic task until its loss falls under a
 *    threshold, twice: bit-identical weights; and again on 2 threads;
 *  - the memory plan reuses buffers, and lets a fused conv2d write over its
 *    residual; errors name the node, op and shapes. */
#include "../ops/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        slim_status st_ = (call);                                                                  \
        if (st_ != SLIM_OK) {                                                                      \
            printf("Bail out! %s: %s\n", #call, err.msg);                                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static slim_error err;
static slim_registry *reg;

static slim_tid add1(slim_graph *g, const char *op, const char *name, const slim_tid *in, int n,
                     const char *attrs)
{
    slim_attrs *a = slim_attrs_new();
    CHECK(slim_attrs_set_list(a, attrs));
    slim_tid out;
    CHECK(slim_graph_add(g, op, name, in, n, a, &out, 1, NULL, &err));
    slim_attrs_free(a);
    return out;
}

static slim_tid param(slim_graph *g, const char *name, int rank, const int64_t *dim,
                      slim_init_kind kind, double sd, unsigned flags)
{
    slim_shape s = slim_shape_make(rank, dim);
    slim_init init = {.kind = kind, .stddev = sd, .value = 0.5};
    slim_param_opts po = {.flags = flags};
    slim_tid t;
    CHECK(slim_graph_param(g, name, &s, &init, &po, &t, &err));
    return t;
}

/* A small convnet: conv 3x3 (8) -> relu -> max_pool 2 -> conv 3x3 (8, residual
 * branch: the pool output feeds both the conv and the add) -> relu -> gap ->
 * fc -> cross entropy + l2; a frozen "scale" parameter multiplies the logits. */
static slim_graph *build_net(int batch, int hw)
{
    slim_graph *g;
    CHECK(slim_graph_new(reg, &g, &err));
    slim_tid x, y;
    slim_shape xs = {4, {batch, hw, hw, 1}}, ys = {1, {batch}};
    CHECK(slim_graph_input(g, "images", SLIM_F32, &xs, &x, &err));
    CHECK(slim_graph_input(g, "labels", SLIM_I32, &ys, &y, &err));
    slim_tid w1 = param(g, "net/conv1/weights", 4, (int64_t[]){3, 3, 1, 8},
                        SLIM_INIT_TRUNCATED_NORMAL, 0.3, SLIM_PARAM_TRAINABLE);
    slim_tid b1 =
        param(g, "net/conv1/biases", 1, (int64_t[]){8}, SLIM_INIT_ZEROS, 0, SLIM_PARAM_TRAINABLE);
    slim_tid h = add1(g, "conv2d", "net/conv1/conv", (slim_tid[]){x, w1, b1}, 3, NULL);
    h = add1(g, "relu", "net/conv1/relu", &h, 1, NULL);
    slim_tid pool =
        add1(g, "max_pool", "net/pool1", &h, 1, "ksize=[2,2]; strides=[2,2]; padding=VALID");
    slim_tid w2 = param(g, "net/conv2/weights", 4, (int64_t[]){3, 3, 8, 8},
                        SLIM_INIT_TRUNCATED_NORMAL, 0.2, SLIM_PARAM_TRAINABLE);
    slim_tid h2 = add1(g, "conv2d", "net/conv2/conv", (slim_tid[]){pool, w2}, 2, NULL);
    slim_tid r = add1(g, "add", "net/residual", (slim_tid[]){h2, pool}, 2, NULL);
    r = add1(g, "relu", "net/conv2/relu", &r, 1, NULL);
    slim_tid gap = add1(g, "global_avg_pool", "net/gap", &r, 1, "keep_dims=false");
    slim_tid wf = param(g, "net/logits/weights", 2, (int64_t[]){8, 2}, SLIM_INIT_XAVIER_UNIFORM, 0,
                        SLIM_PARAM_TRAINABLE);
    slim_tid bf =
        param(g, "net/logits/biases", 1, (int64_t[]){2}, SLIM_INIT_ZEROS, 0, SLIM_PARAM_TRAINABLE);
    slim_tid logits = add1(g, "fully_connected", "net/logits", (slim_tid[]){gap, wf, bf}, 3, NULL);
    slim_tid scale = param(g, "net/scale", 1, (int64_t[]){2}, SLIM_INIT_CONSTANT, 0, 0);
    logits = add1(g, "multiply", "net/scaled_logits", (slim_tid[]){logits, scale}, 2, NULL);
    slim_tid xent = add1(g, "softmax_cross_entropy", "loss/xent", (slim_tid[]){logits, y}, 2, NULL);
    slim_tid l2 = add1(g, "l2_loss", "loss/l2", &w2, 1, "scale=0.0004");
    slim_tid loss = add1(g, "add", "loss/total", (slim_tid[]){xent, l2}, 2, NULL);
    slim_tid acc = add1(g, "in_top_k", "accuracy", (slim_tid[]){logits, y}, 2, "k=1");
    CHECK(slim_graph_set_loss(g, loss, &err));
    CHECK(slim_graph_mark_output(g, acc, &err));
    return g;
}

/* Synthetic task: label 1 when the bright blob is in the left half. Example i of
 * step s is a pure function of (s, i). */
static void make_batch(slim_program *p, int batch, int hw, int64_t step)
{
    slim_tensor xi, yi;
    CHECK(slim_program_input(p, "images", &xi, &err));
    CHECK(slim_program_input(p, "labels", &yi, &err));
    float *x = xi.data;
    int32_t *y = yi.data;
    for (int n = 0; n < batch; n++) {
        uint64_t k = (uint64_t)step * 1000 + (uint64_t)n;
        int label = (int)(slim_rand_u64(42, 1, k) & 1);
        int cx = label ? (int)(slim_rand_u64(42, 2, k) % (uint64_t)(hw / 2 - 1))
                       : hw / 2 + 1 + (int)(slim_rand_u64(42, 2, k) % (uint64_t)(hw / 2 - 2));
        int cy = (int)(slim_rand_u64(42, 3, k) % (uint64_t)(hw - 1));
        for (int i = 0; i < hw; i++)
            for (int j = 0; j < hw; j++) {
                float noise =
                    0.2f * (slim_rand_uniform(42, 4, k * 4096 + (uint64_t)(i * hw + j)) - 0.5f);
                float blob = (abs(i - cy) <= 1 && abs(j - cx) <= 1) ? 1.0f : 0.0f;
                x[(n * hw + i) * hw + j] = blob + noise;
            }
        y[n] = label;
    }
}

static int train(int nth, float **weights_out, size_t *n_weights, double *final_loss,
                 double *final_acc, slim_program_stats *stats)
{
    const int batch = 16, hw = 12;
    slim_graph *g = build_net(batch, hw);
    CHECK(slim_graph_init_params(g, 7, &err));
    slim_attrs *oa = slim_attrs_new();
    slim_attrs_set_float(oa, "momentum", 0.9);
    slim_compile_opts co = {.training = true,
                            .num_threads = nth,
                            .optimizer = "momentum_update",
                            .optimizer_attrs = oa};
    slim_program *p;
    CHECK(slim_graph_compile(g, &co, &p, &err));
    slim_attrs_free(oa);
    slim_program_get_stats(p, stats);
    double ema = -1, acc_ema = 0;
    int steps = 0;
    for (int s = 0; s < 400; s++, steps++) {
        make_batch(p, batch, hw, s);
        CHECK(slim_program_run(p, &(slim_run_opts){.learning_rate = 0.05f, .step = s, .seed = 1},
                               &err));
        slim_tensor l, a;
        CHECK(slim_program_output(p, "loss/total", &l, &err));
        CHECK(slim_program_output(p, "accuracy", &a, &err));
        double lv = ((float *)l.data)[0];
        ema = ema < 0 ? lv : 0.9 * ema + 0.1 * lv;
        acc_ema = 0.9 * acc_ema + 0.1 * ((float *)a.data)[0];
        if (getenv("SLIM_TEST_VERBOSE") && s % 25 == 0)
            harness_diag("step %d loss %.4f acc %.3f", s, ema, acc_ema);
    }
    *final_loss = ema;
    *final_acc = acc_ema;
    size_t total = 0;
    for (int i = 0; i < slim_graph_param_count(g); i++) {
        slim_tensor v;
        slim_graph_param_at(g, i, NULL, &v, NULL);
        total += (size_t)slim_shape_numel(&v.shape);
    }
    float *w = malloc(total * sizeof *w);
    size_t off = 0;
    for (int i = 0; i < slim_graph_param_count(g); i++) {
        slim_tensor v;
        slim_graph_param_at(g, i, NULL, &v, NULL);
        memcpy(w + off, v.data, (size_t)slim_shape_numel(&v.shape) * sizeof(float));
        off += (size_t)slim_shape_numel(&v.shape);
    }
    slim_tensor sc;
    slim_graph_param_get(g, "net/scale", &sc, &err);
    harness_ok(((float *)sc.data)[0] == 0.5f && ((float *)sc.data)[1] == 0.5f,
               "the frozen parameter is unchanged by training (%d threads)", nth);
    *weights_out = w;
    *n_weights = total;
    slim_program_free(p);
    slim_graph_free(g);
    return steps;
}

/* d loss / d param from the program against central differences of the loss. */
static void gradcheck(void)
{
    const int batch = 3, hw = 8;
    slim_graph *g = build_net(batch, hw);
    CHECK(slim_graph_init_params(g, 3, &err));
    slim_compile_opts co = {.training = true, .num_threads = 2};
    slim_program *p;
    CHECK(slim_graph_compile(g, &co, &p, &err));
    make_batch(p, batch, hw, 0);
    slim_run_opts ro = {.seed = 1};
    CHECK(slim_program_run(p, &ro, &err));
    const char *names[] = {"net/conv1/weights", "net/conv1/biases", "net/conv2/weights",
                           "net/logits/weights", "net/logits/biases"};
    slim_tensor l;
    CHECK(slim_program_output(p, "loss/total", &l, &err));
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        slim_tensor gv, pv;
        CHECK(slim_program_grad(p, names[k], &gv, &err));
        CHECK(slim_graph_param_get(g, names[k], &pv, &err));
        int64_t n = slim_shape_numel(&pv.shape);
        float *grad = malloc((size_t)n * sizeof *grad);
        memcpy(grad, gv.data, (size_t)n * sizeof *grad);
        double worst = 0;
        for (int64_t e = 0; e < n; e += (n > 16 ? n / 16 : 1)) {
            float *w = pv.data, w0 = w[e];
            const float h = 1e-3f;
            w[e] = w0 + h;
            slim_program_run(p, &ro, &err);
            double lp = ((float *)l.data)[0];
            w[e] = w0 - h;
            slim_program_run(p, &ro, &err);
            double lm = ((float *)l.data)[0];
            w[e] = w0;
            double num = (lp - lm) / (2 * h);
            double er = fabs(num - grad[e]) / (1e-3 + fabs(num) + fabs(grad[e]));
            if (fabs(num - grad[e]) < 5e-4)
                er = 0;
            if (er > worst) {
                worst = er;
                if (getenv("SLIM_TEST_VERBOSE"))
                    harness_diag("%s[%lld]: analytic %g numeric %g", names[k], (long long)e,
                                 grad[e], num);
            }
        }
        harness_ok(worst < 0.05, "whole-graph gradient of %s vs finite differences (err %.3g)",
                   names[k], worst);
        free(grad);
    }
    slim_tensor gs;
    harness_ok(slim_program_grad(p, "net/scale", &gs, &err) == SLIM_ESTATE,
               "a frozen parameter has no gradient and no backward work");
    slim_program_free(p);
    /* trainable scopes: only the logits train; the convs get no gradient */
    co.trainable_scopes = "net/logits";
    CHECK(slim_graph_compile(g, &co, &p, &err));
    slim_program_stats st;
    slim_program_get_stats(p, &st);
    harness_ok(slim_program_grad(p, "net/conv1/weights", &gs, &err) == SLIM_ESTATE &&
                   slim_program_grad(p, "net/logits/weights", &gs, &err) == SLIM_OK,
               "trainable_scopes limits gradients to the named scope");
    harness_ok(st.n_backward <= 4, "a frozen trunk gets no backward steps (%d backward steps)",
               st.n_backward);
    slim_program_free(p);
    slim_graph_free(g);
}

/* Batch norm outside the trainable scopes is frozen: moving statistics fixed. */
static void frozen_batch_norm(void)
{
    for (int frozen = 0; frozen < 2; frozen++) {
        slim_graph *g;
        CHECK(slim_graph_new(reg, &g, &err));
        slim_tid x;
        slim_shape xs = {4, {4, 3, 3, 2}};
        CHECK(slim_graph_input(g, "x", SLIM_F32, &xs, &x, &err));
        slim_tid w = param(g, "a/weights", 4, (int64_t[]){1, 1, 2, 2}, SLIM_INIT_TRUNCATED_NORMAL,
                           0.5, SLIM_PARAM_TRAINABLE);
        slim_tid gm =
            param(g, "b/gamma", 1, (int64_t[]){2}, SLIM_INIT_CONSTANT, 0, SLIM_PARAM_TRAINABLE);
        slim_tid bt =
            param(g, "b/beta", 1, (int64_t[]){2}, SLIM_INIT_ZEROS, 0, SLIM_PARAM_TRAINABLE);
        slim_tid mm = param(g, "b/moving_mean", 1, (int64_t[]){2}, SLIM_INIT_ZEROS, 0, 0);
        slim_tid mv = param(g, "b/moving_variance", 1, (int64_t[]){2}, SLIM_INIT_CONSTANT, 0, 0);
        slim_tid h = add1(g, "conv2d", "a/conv", (slim_tid[]){x, w}, 2, NULL);
        h = add1(g, "batch_norm", "b/bn", (slim_tid[]){h, gm, bt, mm, mv}, 5, "decay=0.5");
        slim_tid loss = add1(g, "l2_loss", "loss", &h, 1, NULL);
        CHECK(slim_graph_set_loss(g, loss, &err));
        CHECK(slim_graph_init_params(g, 1, &err));
        slim_program *p;
        slim_compile_opts co = {
            .training = true, .optimizer = "sgd_update", .trainable_scopes = frozen ? "a/" : NULL};
        CHECK(slim_graph_compile(g, &co, &p, &err));
        slim_tensor xi, m;
        CHECK(slim_program_input(p, "x", &xi, &err));
        for (int i = 0; i < 72; i++)
            ((float *)xi.data)[i] = 1.0f + (float)(i % 7);
        CHECK(slim_program_run(p, &(slim_run_opts){.learning_rate = 0.01f}, &err));
        CHECK(slim_graph_param_get(g, "b/moving_mean", &m, &err));
        float m0 = ((float *)m.data)[0];
        if (frozen)
            harness_ok(m0 == 0.0f, "batch norm outside trainable_scopes keeps its moving mean (%g)",
                       m0);
        else
            harness_ok(m0 != 0.0f,
                       "batch norm inside the trained scopes updates its moving mean (%g)", m0);
        slim_program_free(p);
        slim_graph_free(g);
    }
}

static void errors(void)
{
    slim_graph *g;
    CHECK(slim_graph_new(reg, &g, &err));
    slim_tid x, w, y;
    slim_shape xs = {4, {2, 8, 8, 3}};
    CHECK(slim_graph_input(g, "x", SLIM_F32, &xs, &x, &err));
    w = param(g, "w", 4, (int64_t[]){3, 3, 4, 16}, SLIM_INIT_ZEROS, 0, SLIM_PARAM_TRAINABLE);
    slim_status st =
        slim_graph_add(g, "conv2d", "conv1", (slim_tid[]){x, w}, 2, NULL, &y, 1, NULL, &err);
    harness_ok(st == SLIM_ESHAPE && strstr(err.msg, "conv1") && strstr(err.msg, "conv2d") &&
                   strstr(err.msg, "(2,8,8,3)") && strstr(err.msg, "(3,3,4,16)"),
               "a shape mismatch names the node, the op and the shapes");
    harness_diag("message: %s", err.msg);
    st = slim_graph_add(g, "conv3d", "c", &x, 1, NULL, &y, 1, NULL, &err);
    harness_ok(st == SLIM_ENOTFOUND && strstr(err.msg, "unknown op 'conv3d'"), "unknown op: %s",
               err.msg);
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_text(a, "padding", "SMAE");
    slim_attrs_set_text(a, "ksize", "[2, 2]");
    st = slim_graph_add(g, "max_pool", "p", &x, 1, a, &y, 1, NULL, &err);
    harness_ok(st != SLIM_OK && strstr(err.msg, "SMAE") && strstr(err.msg, "SAME"),
               "a bad enum value lists the choices: %s", err.msg);
    slim_attrs_free(a);
    st = slim_graph_add(g, "relu", "x", &x, 1, NULL, &y, 1, NULL, &err);
    harness_ok(st == SLIM_EEXIST, "a duplicate name is refused: %s", err.msg);
    /* Shapes whose size overflows int64 (the element count, or its bytes). */
    slim_tid big;
    slim_shape huge = {2, {(int64_t)1 << 62, 4}};
    st = slim_graph_input(g, "huge_in", SLIM_F32, &huge, &big, &err);
    harness_ok(st == SLIM_ESHAPE && strstr(err.msg, "input 'huge_in'") &&
                   strstr(err.msg, "(4611686018427387904,4)") && strstr(err.msg, "too large"),
               "an input whose element count overflows int64 is refused: %s", err.msg);
    slim_shape bytes = {3, {(int64_t)1 << 30, (int64_t)1 << 30, 4}};
    st = slim_graph_input(g, "wide_in", SLIM_F32, &bytes, &big, &err);
    harness_ok(st == SLIM_ESHAPE && strstr(err.msg, "input 'wide_in'") &&
                   strstr(err.msg, "too large"),
               "an input of 2^62 floats (2^64 bytes) is refused: %s", err.msg);
    slim_shape hp = {4, {3, 3, (int64_t)1 << 31, (int64_t)1 << 31}};
    st =
        slim_graph_param(g, "huge_w", &hp, &(slim_init){.kind = SLIM_INIT_ZEROS}, NULL, &big, &err);
    harness_ok(st == SLIM_ESHAPE && strstr(err.msg, "parameter 'huge_w'") &&
                   strstr(err.msg, "(3,3,2147483648,2147483648)") && strstr(err.msg, "too large"),
               "a parameter whose element count overflows int64 is refused: %s", err.msg);
    slim_tid found;
    harness_ok(slim_graph_find(g, "huge_in", &found) != SLIM_OK &&
                   slim_graph_find(g, "huge_w", &found) != SLIM_OK,
               "a refused input or parameter is not added to the graph");
    slim_tid r = add1(g, "relu", "r", &x, 1, NULL);
    st = slim_graph_set_loss(g, r, &err);
    harness_ok(st == SLIM_ESHAPE && strstr(err.msg, "scalar"), "a non-scalar loss is refused: %s",
               err.msg);
    slim_program *p;
    st = slim_graph_compile(g, &(slim_compile_opts){.training = true, .optimizer = "sgd_update"},
                            &p, &err);
    harness_ok(st == SLIM_ESTATE && strstr(err.msg, "loss"),
               "training without a loss is refused: %s", err.msg);
    slim_graph_free(g);
}

/* A long chain: every name resolves to its own tensor and a clash far back is
 * still caught, so name lookup is right at scale (it is a hash, not a scan). */
static void many_names(void)
{
    enum { N = 20000 };
    slim_graph *g;
    CHECK(slim_graph_new(reg, &g, &err));
    slim_tid x, t[N];
    CHECK(slim_graph_input(g, "x", SLIM_F32, &(slim_shape){2, {2, 3}}, &x, &err));
    char nm[64];
    slim_tid prev = x;
    for (int i = 0; i < N; i++) {
        snprintf(nm, sizeof nm, "block%d/relu", i);
        prev = t[i] = add1(g, "relu", nm, &prev, 1, NULL);
    }
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        slim_tid f = -1;
        snprintf(nm, sizeof nm, "block%d/relu", i);
        wrong += slim_graph_find(g, nm, &f) != SLIM_OK || f != t[i];
    }
    slim_tid f;
    harness_ok(wrong == 0 && slim_graph_find(g, "x", &f) == SLIM_OK && f == x &&
                   slim_graph_find(g, "block20000/relu", &f) == SLIM_ENOTFOUND &&
                   slim_graph_find(g, "block1/rel", &f) == SLIM_ENOTFOUND,
               "%d names in one graph each resolve to their own tensor (%d wrong)", N + 1, wrong);
    slim_tid y;
    slim_status st = slim_graph_add(g, "relu", "block7/relu", &prev, 1, NULL, &y, 1, NULL, &err);
    harness_ok(st == SLIM_EEXIST && strstr(err.msg, "'block7/relu'"),
               "a name reused 20000 nodes later is refused: %s", err.msg);
    param(g, "w", 1, (int64_t[]){4}, SLIM_INIT_ZEROS, 0, SLIM_PARAM_TRAINABLE);
    slim_tensor v;
    harness_ok(slim_graph_param_get(g, "w", &v, &err) == SLIM_OK && v.shape.dim[0] == 4 &&
                   slim_graph_param_get(g, "block3/relu", &v, &err) == SLIM_ENOTFOUND,
               "parameters are found by name, and a node is not a parameter");
    slim_graph_free(g);
}

/* A chain of adds, each output feeding the next add only: add's backward
 * reads neither its inputs nor its output (set_backward_reads), so each sum
 * can go as soon as the next one is made, and the arena holds a few tensors,
 * not one per add. */
static void backward_reads(void)
{
    enum { K = 16, ROWS = 64, COLS = 1024 };
    slim_graph *g;
    CHECK(slim_graph_new(reg, &g, &err));
    slim_tid x;
    CHECK(slim_graph_input(g, "x", SLIM_F32, &(slim_shape){2, {ROWS, COLS}}, &x, &err));
    slim_tid prev = x;
    char nm[32];
    for (int i = 0; i < K; i++) {
        snprintf(nm, sizeof nm, "p%d", i);
        slim_tid p = param(g, nm, 1, (int64_t[]){COLS}, SLIM_INIT_ZEROS, 0,
                           SLIM_PARAM_TRAINABLE); /* broadcast over the rows */
        snprintf(nm, sizeof nm, "add%d", i);
        prev = add1(g, "add", nm, (slim_tid[]){prev, p}, 2, NULL);
    }
    slim_tid loss = add1(g, "l2_loss", "loss", &prev, 1, NULL);
    CHECK(slim_graph_set_loss(g, loss, &err));
    slim_program_stats st;
    CHECK(slim_graph_plan(g, &(slim_compile_opts){.training = true, .optimizer = "sgd_update"}, &st,
                          &err));
    size_t tensor = (size_t)ROWS * COLS * sizeof(float);
    harness_ok(st.arena_bytes <= 6 * tensor,
               "a chain of %d adds trains in an arena of %.1f tensors (at most 6; one buffer "
               "per tensor: %.1f)",
               K, (double)st.arena_bytes / (double)tensor, (double)st.naive_bytes / (double)tensor);
    slim_graph_free(g);
}

/* Inference of x -> a = conv 1x1 -> relu -> conv 1x1 + a, the conv and the
 * add fused: the conv may write y over its residual a (set_in_place), and the
 * planner lets it once nothing reads a later. Marked as an output, a keeps a
 * buffer of its own. Both layouts give the same y, bit for bit. */
static void in_place(void)
{
    enum { N = 2, H = 6, W = 7, C = 32 };
    const size_t tensor = (size_t)N * H * W * C * sizeof(float);
    float *ys[2];
    size_t arena[2];
    for (int keep = 0; keep < 2; keep++) {
        slim_graph *g;
        CHECK(slim_graph_new(reg, &g, &err));
        slim_tid x;
        CHECK(slim_graph_input(g, "x", SLIM_F32, &(slim_shape){4, {N, H, W, C}}, &x, &err));
        slim_tid w1 = param(g, "w1", 4, (int64_t[]){1, 1, C, C}, SLIM_INIT_TRUNCATED_NORMAL, 0.2,
                            SLIM_PARAM_TRAINABLE);
        slim_tid w2 = param(g, "w2", 4, (int64_t[]){1, 1, C, C}, SLIM_INIT_TRUNCATED_NORMAL, 0.2,
                            SLIM_PARAM_TRAINABLE);
        slim_tid a = add1(g, "conv2d", "a", (slim_tid[]){x, w1}, 2, NULL);
        slim_tid r = add1(g, "relu", "r", &a, 1, NULL);
        slim_tid h = add1(g, "conv2d", "b", (slim_tid[]){r, w2}, 2, NULL);
        slim_tid y = add1(g, "add", "y", (slim_tid[]){h, a}, 2, NULL);
        CHECK(slim_graph_mark_output(g, y, &err));
        if (keep)
            CHECK(slim_graph_mark_output(g, a, &err));
        CHECK(slim_graph_init_params(g, 5, &err));
        slim_program *p;
        CHECK(slim_graph_compile(g, &(slim_compile_opts){.num_threads = 2}, &p, &err));
        slim_tensor v;
        CHECK(slim_program_input(p, "x", &v, &err));
        for (int64_t i = 0; i < slim_shape_numel(&v.shape); i++)
            ((float *)v.data)[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
        CHECK(slim_program_run(p, &(slim_run_opts){.seed = 1}, &err));
        CHECK(slim_program_output(p, "y", &v, &err));
        ys[keep] = malloc(tensor);
        memcpy(ys[keep], v.data, tensor);
        slim_program_stats st;
        slim_program_get_stats(p, &st);
        arena[keep] = st.arena_bytes;
        slim_program_free(p);
        slim_graph_free(g);
    }
    harness_ok(memcmp(ys[0], ys[1], tensor) == 0 && arena[1] >= arena[0] + tensor,
               "a fused conv2d + add writes y over the residual: arena %zu bytes, %zu with the "
               "residual kept (a tensor is %zu), the same y",
               arena[0], arena[1], tensor);
    free(ys[0]);
    free(ys[1]);
}

int main(void)
{
    CHECK(slim_registry_new(&reg, &err));
    errors();
    many_names();
    backward_reads();
    in_place();
    gradcheck();
    frozen_batch_norm();

    float *w1, *w2, *w3;
    size_t n1, n2, n3;
    double l1, l2, l3, a1, a2, a3;
    slim_program_stats s1, s2, s3;
    train(1, &w1, &n1, &l1, &a1, &s1);
    harness_ok(l1 < 0.15 && a1 > 0.95,
               "a small convnet learns the synthetic task "
               "(loss %.4f < 0.15, accuracy %.3f > 0.95)",
               l1, a1);
    harness_ok(s1.arena_bytes < s1.naive_bytes,
               "the memory plan reuses buffers (arena %zu bytes, one buffer each: %zu)",
               s1.arena_bytes, s1.naive_bytes);
    train(1, &w2, &n2, &l2, &a2, &s2);
    harness_ok(n1 == n2 && memcmp(w1, w2, n1 * sizeof *w1) == 0,
               "two runs with the same seed and threads give bit-identical weights (1 thread)");
    train(2, &w3, &n3, &l3, &a3, &s3);
    harness_ok(l3 < 0.15, "the same training on 2 threads learns too (loss %.4f)", l3);
    float *w4;
    size_t n4;
    double l4, a4;
    slim_program_stats s4;
    train(2, &w4, &n4, &l4, &a4, &s4);
    harness_ok(n3 == n4 && memcmp(w3, w4, n3 * sizeof *w3) == 0,
               "two runs with the same seed and threads give bit-identical weights (2 threads)");
    free(w1);
    free(w2);
    free(w3);
    free(w4);
    slim_registry_free(reg);
    printf("1..%d\n", harness_count());
    return harness_failures() ? 1 : 0;
}
