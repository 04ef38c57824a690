/* tests/ops/cases_optim_adaptive.c - rmsprop, adam, adagrad, adadelta and ftrl
 * update ops. The harness runs each for shapes and thread counts (its output is
 * a dummy scalar); extra() checks the parameter and every slot after two steps
 * against TensorFlow's published update rules worked out in double precision
 * (the values below), at 1 and 3 threads and with the reference kernels, and
 * that the fast kernels agree with the reference ones on a larger tensor; the
 * slots' initial values that each descriptor declares are TF's; a gradient
 * scale input (global-norm clipping) multiplies the gradient.
 *
 * The problem: lr 0.1, param w0 = [1, -2, 0.5], grads g1 = [0.5, 1, -1] then
 * g2 = [-1, 0.25, 0.5], slots at TF's initial values (rms 1, adagrad/ftrl
 * accum 0.1, the rest 0). For instance Adam's first step with TF-Slim's
 * epsilon 1: m = 0.05, v = 0.00025, alpha = 0.1 sqrt(0.001) / 0.1 = 0.0316228,
 * w = 1 - 0.05 alpha / (sqrt(v) + 1) = 0.99844344 - where the paper's
 * epsilon placement (m^ / (sqrt(v^) + eps)) would give 0.9667.
 */
#include "runtime/oprun.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CASE(nm, o, a, n) .name = nm, .op = o, .attrs = a, .n_in = n

/* the param and the slots are state; positive slot values keep the roots real */
#define P(r, ...)                                                                                  \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .state = true                                             \
    }
#define S(r, ...)                                                                                  \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .state = true, .lo = 0.1, .hi = 1                         \
    }
#define G(r, ...)                                                                                  \
    {                                                                                              \
        .rank = r, .dim = { __VA_ARGS__ }                                                          \
    }

static const harness_case cases[] = {
    {CASE("basic", "rmsprop_update", NULL, 4),
     .in = {P(2, 3, 4), G(2, 3, 4), S(2, 3, 4), S(2, 3, 4)}, .no_grad = true},
    {CASE("basic", "adam_update", NULL, 4), .in = {P(2, 3, 4), G(2, 3, 4), S(2, 3, 4), S(2, 3, 4)},
     .no_grad = true},
    {CASE("nesterov_scaled", "adam_update", "use_nesterov=true; epsilon=1e-8", 5),
     .in = {P(1, 37), G(1, 37), S(1, 37), S(1, 37), {.rank = 0, .lo = 0.2, .hi = 0.8}},
     .no_grad = true},
    {CASE("scaled", "rmsprop_update", NULL, 5),
     .in = {P(2, 3, 4), G(2, 3, 4), S(2, 3, 4), S(2, 3, 4), {.rank = 0, .lo = 0.2, .hi = 0.8}},
     .no_grad = true},
    {CASE("conv_filter", "adagrad_update", NULL, 3),
     .in = {P(4, 3, 3, 2, 5), G(4, 3, 3, 2, 5), S(4, 3, 3, 2, 5)}, .no_grad = true},
    {CASE("basic", "adadelta_update", "rho=0.9", 4),
     .in = {P(2, 5, 7), G(2, 5, 7), S(2, 5, 7), S(2, 5, 7)}, .no_grad = true},
    {CASE("basic", "ftrl_update", "l1=0.01; l2=0.1", 4),
     .in = {P(2, 5, 7), G(2, 5, 7), S(2, 5, 7), G(2, 5, 7)}, .no_grad = true},
    {CASE("power", "ftrl_update", "learning_rate_power=-0.7", 4),
     .in = {P(1, 11), G(1, 11), S(1, 11), G(1, 11)}, .no_grad = true},
};

static const float w0[] = {1, -2, 0.5f}, g1[] = {0.5f, 1, -1}, g2[] = {-1, 0.25f, 0.5f};

typedef struct known {
    const char *name, *op, *attrs;
    int n_slots;
    float slot_init[2];
    double w2[3], s2[2][3]; /* param and slots after two steps */
    float scale[2];         /* gradient scale input of each step; 0 = no scale input */
} known;

/* Worked out in double precision from TF's update rules (see the file comment). */
static const known knowns[] = {
    {"rmsprop",
     "rmsprop_update",
     NULL,
     2,
     {1, 0},
     {1.003463752961698, -2.152457437633948, 0.5983127899176216},
     {{0.9325, 0.90625, 0.925}, {-0.03950125146952052, 0.08174675951529298, -0.027602111798966912}},
     {0, 0}},
    {"adam",
     "adam_update",
     NULL,
     2,
     {0, 0},
     {0.9996935224894868, -2.0056860993490986, 0.5039744799202371},
     {{-0.055, 0.115, -0.04}, {0.00124975, 0.0010615, 0.001249}},
     {0, 0}},
    {"adam_eps1e-8",
     "adam_update",
     "epsilon=1e-8",
     2,
     {0, 0},
     {0.9366104055930933, -2.1830596962512216, 0.6266336648071114},
     {{-0.055, 0.115, -0.04}, {0.00124975, 0.0010615, 0.001249}},
     {0, 0}},
    {"adam_nesterov",
     "adam_update",
     "epsilon=1e-8; use_nesterov=true",
     2,
     {0, 0},
     {0.9095136870930792, -2.2828101575846347, 0.6806781461662862},
     {{-0.055, 0.115, -0.04}, {0.00124975, 0.0010615, 0.001249}},
     {0, 0}},
    {"adagrad",
     "adagrad_update",
     NULL,
     1,
     {0.1f, 0},
     {1.0015508711095353, -2.1185332037125675, 0.5523131106333657},
     {{1.35, 1.1625, 1.35}},
     {0, 0}},
    /* each gradient scaled to norm 0.5 by the scale input (what global-norm
     * clipping to 0.5 does when these are the only gradients): g1 (norm 1.5)
     * by 1/3 gives [1/6, 1/3, -1/3]; g2 (norm sqrt(1.3125)) by 0.436436 gives
     * [-0.43644, 0.10911, 0.21822] */
    {"adagrad_scaled",
     "adagrad_update",
     NULL,
     1,
     {0.1f, 0},
     {1.0307377830971762, -2.0956519066311143, 0.5296466833249961},
     {{0.31825396825396823, 0.22301587301587303, 0.25873015873015875}},
     {1.0f / 3, 0.43643578047198476f}},
    {"adadelta",
     "adadelta_update",
     NULL,
     2,
     {0, 0},
     {1.0479495887868384, -2.1225542178177395, 0.547882868565985},
     {{0.061875, 0.050625, 0.06},
      {0.059396231624993676, 0.04835415427325008, 0.057592093441150086}},
     {0, 0}},
    {"ftrl",
     "ftrl_update",
     NULL,
     2,
     {0.1f, 0},
     {0.46702838728468665, -1.5155105145570402, 0.4015574383444839},
     {{1.35, 1.1625, 1.35}, {-5.426379498479097, 16.340127261406348, -4.665675813761693}},
     {0, 0}},
    {"ftrl_l1_l2_power",
     "ftrl_update",
     "l1=0.3; l2=0.2; learning_rate_power=-0.7",
     2,
     {0.1f, 0},
     {0.4635194230516287, -1.652866956833405, 0.4158740533661197},
     {{1.35, 1.1625, 1.35}, {-6.204163876819578, 19.32707872679784, -5.597272220062481}},
     {0, 0}},
};

/* n_in inputs of n elements, the last a scalar when scaled */
static slim_status make_runner(const slim_registry *reg, const char *op, const char *attrs,
                               int n_in, bool scaled, int64_t n, int nth, slim__oprun **r,
                               slim_error *err)
{
    slim_tensor_desc d = {SLIM_F32, {1, {n}}}, descs[5] = {d, d, d, d, d};
    if (scaled)
        descs[n_in - 1] = (slim_tensor_desc){SLIM_F32, {0}};
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_list(a, attrs);
    slim_status st = slim__oprun_new(reg, op, a, descs, n_in, true, nth, r, err);
    slim_attrs_free(a);
    return st;
}

static int two_steps(const slim_registry *reg, const known *k, int nth, bool ref)
{
    float w[3 + 16], g[3 + 16], s[2][3 + 16], scale[16];
    memcpy(w, w0, sizeof w0);
    for (int j = 0; j < k->n_slots; j++)
        for (int i = 0; i < 3; i++)
            s[j][i] = k->slot_init[j];
    bool scaled = k->scale[0] != 0;
    int n_in = 2 + k->n_slots + scaled;
    void *in[5] = {w, g, s[0], s[1], NULL};
    if (scaled)
        in[n_in - 1] = scale;
    slim__oprun *r = NULL;
    slim_error err = {0};
    if (make_runner(reg, k->op, k->attrs, n_in, scaled, 3, nth, &r, &err) != SLIM_OK) {
        harness_ok(false, "%s/two_steps_%s: infer: %s", k->op, k->name, err.msg);
        return 1;
    }
    memcpy(g, g1, sizeof g1);
    scale[0] = k->scale[0];
    slim__oprun_forward(r, in, ref, 1, 0, 0.1f);
    memcpy(g, g2, sizeof g2);
    scale[0] = k->scale[1];
    slim__oprun_forward(r, in, ref, 1, 1, 0.1f);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        worst = fmax(worst, fabs(w[i] - k->w2[i]) / (1 + fabs(k->w2[i])));
        for (int j = 0; j < k->n_slots; j++)
            worst = fmax(worst, fabs(s[j][i] - k->s2[j][i]) / (1 + fabs(k->s2[j][i])));
    }
    bool ok = worst <= 3e-6;
    harness_ok(ok,
               "%s/two_steps_%s: param and slots after two steps vs TF's rule, %d thread%s%s "
               "(max rel err %.2g)",
               k->op, k->name, nth, nth > 1 ? "s" : "", ref ? " (reference)" : "", worst);
    if (!ok)
        harness_diag("param [%.8g, %.8g, %.8g] slot0 [%.8g, %.8g, %.8g] slot1 [%.8g, %.8g, %.8g]",
                     w[0], w[1], w[2], s[0][0], s[0][1], s[0][2], s[1][0], s[1][1], s[1][2]);
    slim__oprun_free(r);
    return ok ? 0 : 1;
}

/* Fast kernels at 3 threads against the reference over 1000 elements and
 * five steps: the same arithmetic per element, so they agree to rounding of
 * the clip norm's sum. */
static int fast_vs_ref(const slim_registry *reg, const known *k)
{
    enum { N = 1000, STEPS = 5 };
    float *buf[2][4], scale[2][16] = {{0.75f}, {0.75f}};
    bool scaled = k->scale[0] != 0;
    int n_in = 2 + k->n_slots + scaled;
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (int v = 0; v < 2; v++)
        for (int j = 0; j < 4; j++)
            buf[v][j] = calloc(N + 64, sizeof(float));
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        buf[0][0][i] = buf[1][0][i] = (float)((st >> 40) * (1.0 / 16777216.0)) * 2 - 1;
        for (int j = 0; j < k->n_slots; j++)
            buf[0][2 + j][i] = buf[1][2 + j][i] = k->slot_init[j];
    }
    slim__oprun *r1 = NULL, *r3 = NULL;
    slim_error err = {0};
    if (make_runner(reg, k->op, k->attrs, n_in, scaled, N, 1, &r1, &err) ||
        make_runner(reg, k->op, k->attrs, n_in, scaled, N, 3, &r3, &err)) {
        harness_ok(false, "%s/fast_vs_ref_%s: infer: %s", k->op, k->name, err.msg);
        return 1;
    }
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            buf[0][1][i] = buf[1][1][i] = (float)((st >> 40) * (1.0 / 16777216.0)) * 2 - 1;
        }
        void *in1[5] = {buf[0][0], buf[0][1], buf[0][2], buf[0][3]};
        void *in3[5] = {buf[1][0], buf[1][1], buf[1][2], buf[1][3]};
        if (scaled)
            in1[n_in - 1] = scale[0], in3[n_in - 1] = scale[1];
        slim__oprun_forward(r1, in1, true, 1, s, 0.05f);
        slim__oprun_forward(r3, in3, false, 1, s, 0.05f);
    }
    double worst = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; j != 1 && i < N; i++)
            worst = fmax(worst, fabs(buf[0][j][i] - buf[1][j][i]) / (1 + fabs(buf[0][j][i])));
    bool ok = worst <= 1e-6;
    harness_ok(ok,
               "%s/fast_vs_ref_%s: 3 threads vs reference, %d elements, %d steps (max rel "
               "err %.2g)",
               k->op, k->name, N, STEPS, worst);
    slim__oprun_free(r1);
    slim__oprun_free(r3);
    for (int v = 0; v < 2; v++)
        for (int j = 0; j < 4; j++)
            free(buf[v][j]);
    return ok ? 0 : 1;
}

/* The initial values the descriptor declares (a constant, or the default of
 * the attribute it names) are TF's, as the knowns start from. */
static int declared_slots(const slim_registry *reg, const known *k)
{
    const slim_op_desc *d = slim_registry_find(reg, k->op);
    bool ok = d && d->n_slots == k->n_slots && d->min_inputs == 2 + d->n_slots &&
              d->max_inputs == 3 + d->n_slots;
    for (int j = 0; ok && j < k->n_slots; j++) {
        double v = d->slots[j].init;
        if (d->slots[j].init_attr) {
            ok = false;
            for (int a = 0; a < d->n_attrs; a++)
                if (!strcmp(d->attrs[a].name, d->slots[j].init_attr)) {
                    v = atof(d->attrs[a].def);
                    ok = d->attrs[a].type == SLIM_ATTR_FLOAT;
                }
        }
        ok = ok && (float)v == k->slot_init[j] && d->slots[j].name;
    }
    harness_ok(ok, "%s: declares %d slot%s starting at TF's values (%g, %g), and a gradient scale",
               k->op, k->n_slots, k->n_slots == 1 ? "" : "s", k->slot_init[0], k->slot_init[1]);
    return ok ? 0 : 1;
}

static int extra(const slim_registry *reg)
{
    int failed = 0;
    for (size_t i = 0; i < sizeof knowns / sizeof knowns[0]; i++)
        if (i == 0 || strcmp(knowns[i].op, knowns[i - 1].op))
            failed += declared_slots(reg, &knowns[i]);
    for (size_t i = 0; i < sizeof knowns / sizeof knowns[0]; i++) {
        failed += two_steps(reg, &knowns[i], 1, false);
        failed += two_steps(reg, &knowns[i], 3, false);
        failed += two_steps(reg, &knowns[i], 1, true);
        failed += fast_vs_ref(reg, &knowns[i]);
    }
    return failed;
}

static const harness_family harness_family_optim_adaptive = {
    "optim_adaptive", cases, (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_optim_adaptive)
