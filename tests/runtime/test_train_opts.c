/* tests/runtime/test_train_opts.c - what a training program does around the
 * update ops, through the C API: global-norm gradient clipping
 * (tf.clip_by_global_norm) on known values and, for every optimizer, against
 * the update op applied to the clipped gradient by hand; the optimizer slots'
 * initial values declared by the ops' descriptors; the auxiliary-loss weight
 * override of slim_model_opts. TAP output. */
#include "runtime/oprun.h"
#include "runtime/schedule.h"

#include <math.h>
#include <slim/model.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks, n_failed;

static void ok(bool cond, const char *fmt, ...) SLIM_PRINTF(2, 3);
static void ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++n_checks);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_failed += !cond;
}

static float *param(slim_graph *g, const char *name)
{
    slim_tensor v;
    if (slim_graph_param_get(g, name, &v, NULL) != SLIM_OK)
        return NULL;
    return v.data;
}

/* ---- known values: loss = |a|^2 / 2 + |b|^2 / 2, so the gradients are a and b ---- */

static slim_graph *l2_graph(slim_registry *reg)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_init z = {.kind = SLIM_INIT_ZEROS};
    slim_tid a, b, la, lb, loss;
    slim_graph_param(g, "a", &(slim_shape){1, {3}}, &z, NULL, &a, &err);
    slim_graph_param(g, "b", &(slim_shape){1, {1}}, &z, NULL, &b, &err);
    slim_attrs *one = slim_attrs_new();
    slim_attrs_set_float(one, "scale", 1.0);
    slim_graph_add(g, "l2_loss", "la", &a, 1, one, &la, 1, NULL, &err);
    slim_graph_add(g, "l2_loss", "lb", &b, 1, one, &lb, 1, NULL, &err);
    slim_graph_add(g, "add", "loss", (slim_tid[]){la, lb}, 2, NULL, &loss, 1, NULL, &err);
    slim_attrs_free(one);
    if (slim_graph_set_loss(g, loss, &err) != SLIM_OK)
        printf("# l2_graph: %s\n", err.msg);
    slim_graph_init_params(g, 0, &err);
    return g;
}

static void set_ab(slim_graph *g)
{
    float *a = param(g, "a"), *b = param(g, "b");
    a[0] = 1, a[1] = 2, a[2] = 2; /* |a| = 3 */
    b[0] = 4;                     /* global norm sqrt(9 + 16) = 5 */
}

static void test_known(slim_registry *reg)
{
    slim_error err = {0};
    for (int nth = 1; nth <= 3; nth += 2) {
        /* sgd, clip 2.5 < 5: every gradient halved; lr 0.1: w -= 0.05 w */
        slim_graph *g = l2_graph(reg);
        set_ab(g);
        slim_program *p;
        slim_compile_opts co = {.training = true,
                                .num_threads = nth,
                                .optimizer = "sgd_update",
                                .clip_gradient_norm = 2.5f};
        slim_status st = slim_graph_compile(g, &co, &p, &err);
        ok(st == SLIM_OK, "sgd with clip_gradient_norm 2.5 compiles (%d threads)%s%s", nth,
           st ? ": " : "", st ? err.msg : "");
        if (st) {
            slim_graph_free(g);
            continue;
        }
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f}, &err);
        float norm = 0;
        const float *a = param(g, "a"), *b = param(g, "b");
        st = slim_program_global_norm(p, &norm, &err);
        ok(st == SLIM_OK && norm == 5.0f,
           "global norm of the gradients (1,2,2) and (4) is 5 (got %.9g)", norm);
        ok(fabsf(a[0] - 0.95f) < 1e-7f && fabsf(a[1] - 1.9f) < 1e-7f &&
               fabsf(a[2] - 1.9f) < 1e-7f && fabsf(b[0] - 3.8f) < 1e-6f,
           "sgd lr 0.1 with the gradients scaled by 2.5/5: a = (0.95,1.9,1.9), b = 3.8 "
           "(got %.7g %.7g %.7g, %.7g)",
           a[0], a[1], a[2], b[0]);
        slim_tensor ga;
        slim_program_grad(p, "a", &ga, &err);
        ok(((float *)ga.data)[1] == 2.0f, "the gradient itself is left unclipped (%g)",
           ((float *)ga.data)[1]);
        /* second step: gradients 0.95 (1,2,2) and 3.8, norm 4.75 */
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f, .step = 1}, &err);
        slim_program_global_norm(p, &norm, &err);
        double s2 = 2.5 / 4.75;
        ok(fabs(norm - 4.75) < 1e-6 && fabs(b[0] - (3.8 - 0.1 * s2 * 3.8)) < 1e-6,
           "second step: norm 4.75, b = 3.8 (1 - 0.1 * 2.5/4.75) = %.7g (got %.7g, %.7g)",
           3.8 - 0.1 * s2 * 3.8, norm, b[0]);
        slim_program_free(p);

        /* clip 10 > 5: untouched */
        set_ab(g);
        co.clip_gradient_norm = 10;
        slim_graph_compile(g, &co, &p, &err);
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f}, &err);
        slim_program_global_norm(p, &norm, &err);
        ok(norm == 5.0f && a[1] == 1.8f && b[0] == 3.6f,
           "clip 10 above the norm 5: the plain sgd step (a[1] %.9g, b %.9g)", a[1], b[0]);
        slim_program_free(p);

        /* momentum 0.9, clip 2.5: a1 = 0.5 g1; w1 = w0 - 0.1 a1 */
        set_ab(g);
        slim_attrs *ma = slim_attrs_new();
        slim_attrs_set_float(ma, "momentum", 0.9);
        co = (slim_compile_opts){.training = true,
                                 .num_threads = nth,
                                 .optimizer = "momentum_update",
                                 .optimizer_attrs = ma,
                                 .clip_gradient_norm = 2.5f};
        slim_graph_compile(g, &co, &p, &err);
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f}, &err);
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f, .step = 1}, &err);
        /* by hand: b0 = 4, a1 = 0.5 * 4 = 2, b1 = 3.8; g2 = 3.8 with norm 4.75:
         * acc2 = 0.9 * 2 + (2.5/4.75) 3.8 = 3.8, b2 = 3.8 - 0.38 = 3.42 */
        slim_tensor slot;
        slim_program_slot(p, "b", 0, &slot, &err);
        ok(fabsf(b[0] - 3.42f) < 1e-6f && fabsf(((float *)slot.data)[0] - 3.8f) < 1e-6f,
           "momentum: two clipped steps by hand, b = 3.42 and its slot 3.8 (got %.7g, %.7g)", b[0],
           ((float *)slot.data)[0]);
        slim_program_free(p);
        slim_attrs_free(ma);
        slim_graph_free(g);
    }
}

/* ---- every optimizer on a small net: the program vs the op on the clipped gradient ---- */

/* x (4,6) -> fc (6,5) relu -> fc (5,3) -> cross entropy; fc1's output also
 * feeds an l2 term, so its gradient sums two contributions */
static slim_graph *net(slim_registry *reg)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_tid x, y, w1, b1, w2, b2, h, r, lg, xent, l2, loss;
    slim_graph_input(g, "images", SLIM_F32, &(slim_shape){2, {4, 6}}, &x, &err);
    slim_graph_input(g, "labels", SLIM_I32, &(slim_shape){1, {4}}, &y, &err);
    slim_init tn = {.kind = SLIM_INIT_TRUNCATED_NORMAL, .stddev = 0.8};
    slim_graph_param(g, "fc1/weights", &(slim_shape){2, {6, 5}}, &tn, NULL, &w1, &err);
    slim_graph_param(g, "fc1/biases", &(slim_shape){1, {5}}, &tn, NULL, &b1, &err);
    slim_graph_param(g, "fc2/weights", &(slim_shape){2, {5, 3}}, &tn, NULL, &w2, &err);
    slim_graph_param(g, "fc2/biases", &(slim_shape){1, {3}}, &tn, NULL, &b2, &err);
    slim_graph_add(g, "fully_connected", "fc1", (slim_tid[]){x, w1, b1}, 3, NULL, &h, 1, NULL,
                   &err);
    slim_graph_add(g, "relu", "relu1", &h, 1, NULL, &r, 1, NULL, &err);
    slim_graph_add(g, "fully_connected", "fc2", (slim_tid[]){r, w2, b2}, 3, NULL, &lg, 1, NULL,
                   &err);
    slim_graph_add(g, "softmax_cross_entropy", "xent", (slim_tid[]){lg, y}, 2, NULL, &xent, 1, NULL,
                   &err);
    slim_attrs *sc = slim_attrs_new();
    slim_attrs_set_float(sc, "scale", 0.3);
    slim_graph_add(g, "l2_loss", "l2", &w1, 1, sc, &l2, 1, NULL, &err);
    slim_attrs_free(sc);
    slim_graph_add(g, "add", "loss", (slim_tid[]){xent, l2}, 2, NULL, &loss, 1, NULL, &err);
    if (slim_graph_set_loss(g, loss, &err) != SLIM_OK)
        printf("# net: %s\n", err.msg);
    slim_graph_init_params(g, 11, &err);
    return g;
}

static void feed(slim_program *p, int step)
{
    slim_tensor x, y;
    slim_program_input(p, "images", &x, NULL);
    slim_program_input(p, "labels", &y, NULL);
    for (int i = 0; i < 24; i++)
        ((float *)x.data)[i] = sinf(1.7f * (float)i + (float)step);
    for (int i = 0; i < 4; i++)
        ((int32_t *)y.data)[i] = (i + step) % 3;
}

static const char *const net_params[] = {"fc1/weights", "fc1/biases", "fc2/weights", "fc2/biases"};

/* The program with clipping (nth threads) against: the same graph's
 * gradients from a program without an optimizer, their global norm in
 * double, and the update op run by hand on the gradient times
 * clip / max(norm, clip), clip 0.05, three steps. */
static void test_optimizer(slim_registry *reg, const char *name, int nth)
{
    slim_train_config c;
    slim_train_config_init(&c);
    c.optimizer = name;
    c.opt_epsilon = 0.1;
    c.clip_gradient_norm = 0.05;
    slim__rt_optimizer o;
    slim_error err = {0};
    if (slim__rt_optimizer_init(&o, &c, reg, &err) != SLIM_OK) {
        ok(false, "%s: %s", name, err.msg);
        return;
    }
    slim_graph *ga = net(reg), *gb = net(reg);
    slim_program *pa = NULL, *pb = NULL;
    slim_compile_opts co = {.training = true,
                            .num_threads = nth,
                            .optimizer = o.op,
                            .optimizer_attrs = o.attrs,
                            .clip_gradient_norm = 0.05f};
    slim_compile_opts cb = {.training = true, .num_threads = 1};
    if (slim_graph_compile(ga, &co, &pa, &err) || slim_graph_compile(gb, &cb, &pb, &err)) {
        ok(false, "%s: compile: %s", name, err.msg);
        goto out;
    }
    /* the reference state: params and slots as the program starts them */
    float ref[4][64], slots[4][2][64], gsc[4][64];
    slim_tensor_desc desc[5];
    slim__oprun *run[4] = {0};
    for (int i = 0; i < 4; i++) {
        slim_tensor v;
        slim_graph_param_get(ga, net_params[i], &v, NULL);
        int64_t n = slim_shape_numel(&v.shape);
        memcpy(ref[i], v.data, (size_t)n * sizeof(float));
        for (int k = 0; k < o.n_slots; k++) {
            slim_tensor s;
            slim_program_slot(pa, net_params[i], k, &s, NULL);
            memcpy(slots[i][k], s.data, (size_t)n * sizeof(float));
        }
        for (int k = 0; k < 2 + o.n_slots; k++)
            desc[k] = (slim_tensor_desc){SLIM_F32, v.shape};
        if (slim__oprun_new(reg, o.op, o.attrs, desc, 2 + o.n_slots, true, 1, &run[i], &err)) {
            ok(false, "%s: oprun: %s", name, err.msg);
            goto out;
        }
    }
    double worst = 0, worst_norm = 0;
    int clipped = 0;
    for (int step = 0; step < 3; step++) {
        float lr = 0.05f;
        /* gradients at the reference parameters */
        for (int i = 0; i < 4; i++) {
            slim_tensor v;
            slim_graph_param_get(gb, net_params[i], &v, NULL);
            memcpy(v.data, ref[i], (size_t)slim_shape_numel(&v.shape) * sizeof(float));
        }
        feed(pb, step);
        slim_program_run(pb, &(slim_run_opts){.step = step, .seed = 3}, &err);
        double ss = 0;
        for (int i = 0; i < 4; i++) {
            slim_tensor g;
            slim_program_grad(pb, net_params[i], &g, NULL);
            for (int64_t e = 0; e < slim_shape_numel(&g.shape); e++)
                ss += (double)((float *)g.data)[e] * ((float *)g.data)[e];
        }
        float norm = (float)sqrt(ss), scale = norm > 0.05f ? 0.05f / norm : 1.0f;
        clipped += norm > 0.05f;
        for (int i = 0; i < 4; i++) {
            slim_tensor g;
            slim_program_grad(pb, net_params[i], &g, NULL);
            int64_t n = slim_shape_numel(&g.shape);
            for (int64_t e = 0; e < n; e++)
                gsc[i][e] = ((float *)g.data)[e] * scale;
            void *in[4] = {ref[i], gsc[i], slots[i][0], slots[i][1]};
            slim__oprun_forward(run[i], in, false, 3, step, lr);
        }
        /* the program */
        feed(pa, step);
        slim_program_run(pa, &(slim_run_opts){.learning_rate = lr, .step = step, .seed = 3}, &err);
        float pnorm = 0;
        slim_program_global_norm(pa, &pnorm, NULL);
        worst_norm = fmax(worst_norm, fabs(pnorm - norm) / norm);
        for (int i = 0; i < 4; i++) {
            slim_tensor v;
            slim_graph_param_get(ga, net_params[i], &v, NULL);
            int64_t n = slim_shape_numel(&v.shape);
            for (int64_t e = 0; e < n; e++) {
                worst = fmax(worst, fabs(((float *)v.data)[e] - ref[i][e]) / (1 + fabs(ref[i][e])));
                for (int k = 0; k < o.n_slots; k++) {
                    slim_tensor s;
                    slim_program_slot(pa, net_params[i], k, &s, NULL);
                    worst = fmax(worst, fabs(((float *)s.data)[e] - slots[i][k][e]) /
                                            (1 + fabs(slots[i][k][e])));
                }
            }
        }
    }
    ok(worst <= 2e-6 && worst_norm <= 1e-6 && clipped >= 2,
       "%s, %d thread%s: three steps with clip 0.05 (%d clipped) = the op on the clipped "
       "gradient; params and slots max rel err %.2g, norm %.2g",
       name, nth, nth > 1 ? "s" : "", clipped, worst, worst_norm);
out:
    for (int i = 0; i < 4; i++)
        slim__oprun_free(run[i]);
    slim_program_free(pa);
    slim_program_free(pb);
    slim_graph_free(ga);
    slim_graph_free(gb);
    slim__rt_optimizer_fini(&o);
}

/* The same steps at 1, 2 and 3 threads give the same global norm, bit for bit
 * (fixed chunks summed in order), from the same gradients. */
static void test_norm_threads(slim_registry *reg)
{
    float norms[3] = {0};
    slim_error err = {0};
    for (int nth = 1; nth <= 3; nth++) {
        slim_graph *g = l2_graph(reg);
        float *a = param(g, "a"), *b = param(g, "b");
        a[0] = 1e-3f, a[1] = 3.3f, a[2] = -7.1f, b[0] = 0.1f;
        slim_program *p;
        slim_compile_opts co = {.training = true,
                                .num_threads = nth,
                                .optimizer = "sgd_update",
                                .clip_gradient_norm = 1};
        slim_graph_compile(g, &co, &p, &err);
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.01f}, &err);
        slim_program_global_norm(p, &norms[nth - 1], &err);
        slim_program_free(p);
        slim_graph_free(g);
    }
    double want = sqrt(1e-6 + 3.3 * 3.3 + 7.1 * 7.1 + 0.01);
    ok(norms[0] == norms[1] && norms[1] == norms[2] && fabs(norms[0] - want) < 1e-5,
       "global norm at 1, 2, 3 threads: %.9g %.9g %.9g (want %.9g)", norms[0], norms[1], norms[2],
       want);
}

/* Errors: an update op without a gradient-scale input; no clipping is
 * reported as no norm. */
static const slim_op_desc *noscale_op(slim_registry *reg)
{
    static slim_op_desc d;
    d = *slim_registry_find(reg, "sgd_update");
    d.name = "sgd_noscale_update";
    d.max_inputs = 2;
    return &d;
}

/* More trained parameters (40) than a graph node takes inputs (32): the
 * global norm step takes every gradient; loss = sum of |p_t|^2 / 2. */
static void test_many_params(slim_registry *reg)
{
    enum { N = 40 };
    slim_error err = {0};
    slim_graph *g;
    slim_graph_new(reg, &g, &err);
    slim_init z = {.kind = SLIM_INIT_ZEROS};
    slim_attrs *one = slim_attrs_new();
    slim_attrs_set_float(one, "scale", 1.0);
    slim_tid loss = -1;
    char name[32];
    for (int t = 0; t < N; t++) {
        slim_tid pt, lt;
        snprintf(name, sizeof name, "p%d", t);
        slim_graph_param(g, name, &(slim_shape){1, {1 + 97 * t}}, &z, NULL, &pt, &err);
        snprintf(name, sizeof name, "l%d", t);
        slim_graph_add(g, "l2_loss", name, &pt, 1, one, &lt, 1, NULL, &err);
        snprintf(name, sizeof name, "s%d", t);
        if (loss < 0)
            loss = lt;
        else
            slim_graph_add(g, "add", name, (slim_tid[]){loss, lt}, 2, NULL, &loss, 1, NULL, &err);
    }
    slim_attrs_free(one);
    slim_graph_set_loss(g, loss, &err);
    slim_graph_init_params(g, 0, &err);
    double ss = 0;
    for (int t = 0; t < N; t++) {
        snprintf(name, sizeof name, "p%d", t);
        float *v = param(g, name);
        for (int i = 0; i <= 97 * t; i++) {
            v[i] = (float)((i % 13) - 6) * 0.01f * (float)(t + 1);
            ss += (double)v[i] * v[i];
        }
    }
    slim_program *p;
    slim_compile_opts co = {.training = true, .optimizer = "sgd_update", .clip_gradient_norm = 1};
    slim_status st = slim_graph_compile(g, &co, &p, &err);
    ok(st == SLIM_OK, "%d parameters with clip_gradient_norm compile%s%s", N, st ? ": " : "",
       st ? err.msg : "");
    if (st == SLIM_OK) {
        float *p39 = param(g, "p39"), before = p39[1];
        slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f}, &err);
        float norm = 0;
        slim_program_global_norm(p, &norm, &err);
        double want = before - 0.1 * before / sqrt(ss);
        ok(fabs(norm - sqrt(ss)) <= 1e-6 * sqrt(ss) && fabs(p39[1] - want) < 1e-6,
           "the global norm over %d gradients is %.7g (want %.7g); p39[1] %.7g -> %.7g (want "
           "%.7g)",
           N, norm, sqrt(ss), before, p39[1], want);
        slim_program_free(p);
    }
    slim_graph_free(g);
}

static void test_errors(slim_registry *reg)
{
    slim_error err = {0};
    slim_registry_add(reg, noscale_op(reg), &err);
    slim_graph *g = l2_graph(reg);
    slim_program *p = NULL;
    slim_compile_opts co = {.training = true,
                            .num_threads = 1,
                            .optimizer = "sgd_noscale_update",
                            .clip_gradient_norm = 1};
    slim_status st = slim_graph_compile(g, &co, &p, &err);
    ok(st == SLIM_EUNSUPPORTED && strstr(err.msg, "no gradient scale"),
       "clipping with an update op that takes no gradient scale: %s", err.msg);
    co.clip_gradient_norm = 0;
    st = slim_graph_compile(g, &co, &p, &err);
    float norm;
    ok(st == SLIM_OK && slim_program_global_norm(p, &norm, &err) == SLIM_ENOTFOUND,
       "without clipping there is no global norm: %s", err.msg);
    slim_program_free(p);
    slim_graph_free(g);

    slim_train_config c;
    slim_train_config_init(&c);
    c.clip_gradient_norm = -1;
    slim__rt_optimizer o;
    ok(slim__rt_optimizer_init(&o, &c, reg, &err) == SLIM_EINVAL &&
           strstr(err.msg, "--clip_gradient_norm"),
       "a negative --clip_gradient_norm: %s", err.msg);
}

/* ---- slots start where the descriptors say --------------------------------------------- */

static void test_slot_init(slim_registry *reg)
{
    static const struct {
        const char *optimizer;
        double acc;
        int n_slots;
        float want[2];
        const char *names[2];
    } want[] = {
        {"sgd", 0, 0, {0, 0}, {NULL, NULL}},
        {"momentum", 0, 1, {0, 0}, {"momentum", NULL}},
        {"rmsprop", 0, 2, {1, 0}, {"rms", "momentum"}},
        {"adam", 0, 2, {0, 0}, {"m", "v"}},
        {"adagrad", 0.25, 1, {0.25f, 0}, {"accumulator", NULL}},
        {"adadelta", 0, 2, {0, 0}, {"accum", "accum_update"}},
        {"ftrl", 0.5, 2, {0.5f, 0}, {"accum", "linear"}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        slim_train_config c;
        slim_train_config_init(&c);
        c.optimizer = want[i].optimizer;
        c.adagrad_initial_accumulator_value = want[i].acc > 0 ? want[i].acc : 0.1;
        c.ftrl_initial_accumulator_value = want[i].acc > 0 ? want[i].acc : 0.1;
        slim__rt_optimizer o;
        slim_error err = {0};
        bool good =
            slim__rt_optimizer_init(&o, &c, reg, &err) == SLIM_OK && o.n_slots == want[i].n_slots;
        for (int k = 0; good && k < o.n_slots; k++)
            good = !strcmp(o.slot_names[k], want[i].names[k]);
        slim_graph *g = net(reg);
        slim_program *p = NULL;
        slim_compile_opts co = {
            .training = true, .num_threads = 2, .optimizer = o.op, .optimizer_attrs = o.attrs};
        good = good && slim_graph_compile(g, &co, &p, &err) == SLIM_OK;
        for (int k = 0; good && k < o.n_slots; k++)
            for (int j = 0; good && j < 4; j++) {
                slim_tensor s;
                good = slim_program_slot(p, net_params[j], k, &s, NULL) == SLIM_OK;
                for (int64_t e = 0; good && e < slim_shape_numel(&s.shape); e++)
                    good = ((float *)s.data)[e] == want[i].want[k];
            }
        ok(good,
           "--optimizer=%s: the compiled program's %d slot%s named and starting as the "
           "op declares (%g, %g)%s%s",
           want[i].optimizer, want[i].n_slots, want[i].n_slots == 1 ? "" : "s", want[i].want[0],
           want[i].want[1], err.msg[0] ? ": " : "", err.msg);
        slim_program_free(p);
        slim_graph_free(g);
        if (o.attrs)
            slim__rt_optimizer_fini(&o);
    }
}

/* ---- the auxiliary loss weight ------------------------------------------------------------ */

static const char aux_yaml[] =
    "name: m\n"
    "num_classes: 3\n"
    "image_size: 4\n"
    "channels: 1\n"
    "weight_decay: 0\n"
    "layers:\n"
    "  - flatten: {name: flat}\n"
    "  - fully_connected: {name: aux, num_outputs: 3, activation: none}\n"
    "  - fully_connected: {name: logits, inputs: flat, num_outputs: 3,\n"
    "                     activation: none}\n"
    "head: {logits: logits, aux_logits: aux, aux_weight: 0.4}\n";

/* total_loss of the model with (set, w), on fixed data */
static double aux_loss(slim_registry *reg, bool set, float w, float *info_w)
{
    slim_model_opts mo = {.batch_size = 2, .training = true, .weight_decay = -1};
    mo.set_aux_weight = set;
    mo.aux_weight = w;
    slim_model *m;
    slim_error err = {0};
    if (slim_model_load_string(reg, "aux.yaml", aux_yaml, strlen(aux_yaml), &mo, &m, &err)) {
        printf("# %s\n", err.msg);
        return NAN;
    }
    *info_w = slim_model_get_info(m)->aux_weight;
    slim_graph *g = slim_model_graph(m);
    slim_graph_init_params(g, 4, &err);
    slim_program *p;
    slim_compile_opts co = {.training = true, .num_threads = 1};
    if (slim_graph_compile(g, &co, &p, &err)) {
        printf("# %s\n", err.msg);
        slim_model_free(m);
        return NAN;
    }
    slim_tensor x, y, l;
    slim_program_input(p, "images", &x, NULL);
    slim_program_input(p, "labels", &y, NULL);
    for (int i = 0; i < 32; i++)
        ((float *)x.data)[i] = cosf((float)i);
    ((int32_t *)y.data)[0] = 1;
    ((int32_t *)y.data)[1] = 2;
    slim_program_run(p, &(slim_run_opts){0}, &err);
    slim_program_output(p, "total_loss", &l, &err);
    double v = ((float *)l.data)[0];
    slim_program_free(p);
    slim_model_free(m);
    return v;
}

static void test_aux_weight(slim_registry *reg)
{
    float w_file, w0, w1, w4;
    double file = aux_loss(reg, false, 0, &w_file), zero = aux_loss(reg, true, 0, &w0);
    double one = aux_loss(reg, true, 1, &w1), point4 = aux_loss(reg, true, 0.4f, &w4);
    double aux = one - zero; /* the auxiliary cross entropy alone */
    ok(w_file == 0.4f && w0 == 0 && w1 == 1 && aux > 0.01,
       "aux_weight: the file's 0.4 unless set (info: %g, %g, %g); aux cross entropy %.6f", w_file,
       w0, w1, aux);
    ok(fabs(file - (zero + 0.4 * aux)) < 1e-5 && fabs(point4 - file) < 1e-6,
       "total_loss = cross entropy + weight x aux: %.6f = %.6f + 0.4 x %.6f", file, zero, aux);
    slim_model_opts mo = {.batch_size = 2,
                          .training = true,
                          .weight_decay = -1,
                          .set_aux_weight = true,
                          .aux_weight = -1};
    slim_model *m = NULL;
    slim_error err = {0};
    ok(slim_model_load_string(reg, "aux.yaml", aux_yaml, strlen(aux_yaml), &mo, &m, &err) ==
               SLIM_EINVAL &&
           strstr(err.msg, "aux_weight"),
       "a negative aux_weight is refused: %s", err.msg);
    slim_model_free(m);
}

int main(void)
{
    slim_registry *reg;
    slim_error err = {0};
    if (slim_registry_new(&reg, &err)) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    test_known(reg);
    test_norm_threads(reg);
    test_many_params(reg);
    static const char *const opts[] = {"sgd",     "momentum", "rmsprop", "adam",
                                       "adagrad", "adadelta", "ftrl"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        test_optimizer(reg, opts[i], 1);
        test_optimizer(reg, opts[i], 3);
    }
    test_slot_init(reg);
    test_errors(reg);
    test_aux_weight(reg);
    slim_registry_free(reg);
    printf("1..%d\n", n_checks);
    return n_failed ? 1 : 0;
}
