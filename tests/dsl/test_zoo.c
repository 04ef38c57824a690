/*
 * tests/dsl/test_zoo.c - every model of the zoo: its parameter counts at the
 * default size against the published figures, then one training step
 * (forward, backward, update) at batch 2 on a small input, with the output
 * shapes and a finite loss checked.
 *
 * Where the counts come from (docs/testing.md, "The model zoo's parameter
 * counts"): Keras Applications' summaries for VGG-16/19, Inception v3
 * (without the auxiliary head, 1000 classes), MobileNet v1 and v2;
 * torchvision for VGG-11 and ResNet-50/101/152 v1 (the same layers as
 * TF-Slim's); the issue for ResNet-50; the MobileNet paper for MobileNet-0.5;
 * the others from TF-Slim's layer definitions by an independent count
 * (tests/dsl/count_params.py).
 */
#include "tests/dsl/tap.h"

#include <slim/data.h>
#include <slim/model.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct zoo_case {
    const char *name;
    const char *defines[2];    /* model vars for this check */
    int num_classes;           /* 0 = the model's */
    int64_t params, trainable; /* at the default size; -1 = not checked */
    /* the training step */
    int image_size, step_classes;
    const char *step_defines[2];
} zoo_case;

static const zoo_case cases[] = {
    {"lenet", {0}, 0, 3274634, 3274634, 28, 10, {0}},
    {"cifarnet", {0}, 0, 1756426, 1756426, 32, 10, {0}},
    {"alexnet_v2", {0}, 0, 50303912, 50303912, 195, 10, {0}},
    {"vgg_a", {0}, 0, 132863336, 132863336, 32, 10, {"fc_conv_padding=SAME"}},
    {"vgg_16", {0}, 0, 138357544, 138357544, 32, 10, {"fc_conv_padding=SAME"}},
    {"vgg_19", {0}, 0, 143667240, 143667240, 32, 10, {"fc_conv_padding=SAME"}},
    {"inception_v1", {0}, 0, 6633209, 6618649, 64, 10, {"global_pool=true"}},
    {"inception_v2", {0}, 0, 11199137, 11179361, 64, 10, {0}},
    {"inception_v3", {"create_aux_logits=false"}, 1000, 23851784, 23817352, 0, 0, {0}},
    {"inception_v3", {0}, 0, 27182194, 27145970, 107, 10, {0}},
    {"resnet_v1_50", {0}, 0, 25610152, 25557032, 64, 10, {0}},
    {"resnet_v1_101", {0}, 0, 44654504, 44549160, 32, 10, {0}},
    {"resnet_v1_152", {0}, 0, 60344232, 60192808, 32, 10, {0}},
    {"resnet_v2_50", {0}, 0, 25615849, 25570409, 64, 10, {0}},
    {"resnet_v2_101", {0}, 0, 44677609, 44579945, 32, 10, {0}},
    {"resnet_v2_152", {0}, 0, 60382697, 60238953, 32, 10, {0}},
    {"mobilenet_v1", {0}, 1000, 4253864, 4231976, 0, 0, {0}},
    {"mobilenet_v1", {"depth_multiplier=0.5"}, 1000, 1342536, 1331592, 0, 0, {0}},
    {"mobilenet_v1", {0}, 0, 4254889, 4233001, 64, 10, {"depth_multiplier=0.25"}},
    {"mobilenet_v2", {0}, 1000, 3538984, 3504872, 0, 0, {0}},
    {"mobilenet_v2", {"depth_multiplier=1.4"}, 1000, 6156712, 6108776, 0, 0, {0}},
    {"mobilenet_v2", {0}, 0, 3540265, 3506153, 64, 10, {0}},
    /* written from README.md's model language reference alone; ResNet-20 has 0.27 M parameters (He
       et al. 2015) */
    {"examples/resnet_cifar", {0}, 0, 274042, 272474, 32, 10, {0}},
};

/* A zoo name, or a file under the source tree's models/ */
static slim_status find(const char *name, char *path, size_t n, slim_error *err)
{
    if (!strchr(name, '/'))
        return slim_model_find(name, path, n, err);
    const char *src = getenv("top_srcdir");
    snprintf(path, n, "%s/models/%s.yaml", src ? src : ".", name);
    return SLIM_OK;
}

static int n_defs(const char *const *d)
{
    return d[0] ? (d[1] ? 2 : 1) : 0;
}

static void counts(slim_registry *reg, const zoo_case *c)
{
    char path[1024];
    slim_error err = {0};
    if (!tap_ok(find(c->name, path, sizeof path, &err) == SLIM_OK, "%s: found", c->name)) {
        tap_diag("%s", err.msg);
        return;
    }
    slim_model_opts o = {.batch_size = 1,
                         .num_classes = c->num_classes,
                         .weight_decay = -1,
                         .defines = c->defines,
                         .n_defines = n_defs(c->defines)};
    slim_model *m;
    if (!tap_ok(slim_model_load(reg, path, &o, &m, &err) == SLIM_OK,
                "%s%s%s: builds at its "
                "default size",
                c->name, c->defines[0] ? " " : "", c->defines[0] ? c->defines[0] : "")) {
        tap_diag("%s", err.msg);
        return;
    }
    const slim_model_info *info = slim_model_get_info(m);
    tap_ok(info->n_params == c->params && info->n_trainable == c->trainable,
           "%s%s%s (%d classes): %lld parameters, %lld trainable", c->name,
           c->defines[0] ? " " : "", c->defines[0] ? c->defines[0] : "", info->num_classes,
           (long long)c->params, (long long)c->trainable);
    if (info->n_params != c->params || info->n_trainable != c->trainable)
        tap_diag("got %lld parameters, %lld trainable", (long long)info->n_params,
                 (long long)info->n_trainable);
    /* The default recipe is the model's (TF-Slim's preprocessing_factory), found
     * from the scope name the file gives ("LeNet" for lenet). */
    if (!strchr(c->name, '/')) {
        const char *want = slim_recipe_for_model(c->name), *got = slim_recipe_for_model(info->name);
        tap_ok(want && got && !strcmp(want, got), "%s (scope %s): default recipe %s", c->name,
               info->name, got ? got : "(none)");
    }
    slim_model_free(m);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void step(slim_registry *reg, const zoo_case *c)
{
    char path[1024];
    slim_error err = {0};
    double t0 = now();
    if (find(c->name, path, sizeof path, &err) != SLIM_OK)
        return;
    slim_model_opts o = {.batch_size = 2,
                         .num_classes = c->step_classes,
                         .image_size = c->image_size,
                         .training = true,
                         .weight_decay = -1,
                         .defines = c->step_defines,
                         .n_defines = n_defs(c->step_defines)};
    slim_model *m;
    if (!tap_ok(slim_model_load(reg, path, &o, &m, &err) == SLIM_OK,
                "%s: builds at %dx%d, %d "
                "classes",
                c->name, c->image_size, c->image_size, c->step_classes)) {
        tap_diag("%s", err.msg);
        return;
    }
    slim_graph *g = slim_model_graph(m);
    slim_graph_init_params(g, 1, &err);
    slim_program *p;
    slim_compile_opts co = {.training = true, .num_threads = 2, .optimizer = "sgd_update"};
    if (!tap_ok(slim_graph_compile(g, &co, &p, &err) == SLIM_OK, "%s: compiles for training",
                c->name)) {
        tap_diag("%s", err.msg);
        slim_model_free(m);
        return;
    }
    slim_tensor x, y;
    slim_program_input(p, "images", &x, &err);
    slim_program_input(p, "labels", &y, &err);
    float *xd = x.data;
    for (int64_t i = 0; i < slim_shape_numel(&x.shape); i++)
        xd[i] = (float)((i * 7919) % 255) / 255.0f - 0.5f;
    ((int32_t *)y.data)[0] = 1;
    ((int32_t *)y.data)[1] = c->step_classes - 1;
    slim_run_opts ro = {.learning_rate = 0.01f, .step = 0, .seed = 1};
    bool ran = slim_program_run(p, &ro, &err) == SLIM_OK;
    if (!tap_ok(ran, "%s: one training step runs", c->name))
        tap_diag("%s", err.msg);
    slim_tensor lg, loss, pred;
    bool shapes = ran && slim_program_output(p, "logits", &lg, &err) == SLIM_OK &&
                  slim_program_output(p, "predictions", &pred, &err) == SLIM_OK &&
                  slim_program_output(p, "total_loss", &loss, &err) == SLIM_OK &&
                  lg.shape.rank == 2 && lg.shape.dim[0] == 2 &&
                  lg.shape.dim[1] == c->step_classes && pred.shape.rank == 2 &&
                  pred.shape.dim[1] == c->step_classes && loss.shape.rank == 0;
    tap_ok(shapes, "%s: logits and predictions are (2,%d), the loss a scalar", c->name,
           c->step_classes);
    if (shapes) {
        float l = *(float *)loss.data;
        tap_ok(isfinite(l) && l > 0, "%s: the loss is finite and positive (%g)", c->name, l);
    }
    slim_program_free(p);
    slim_model_free(m);
    tap_diag("%s: %.2f s", c->name, now() - t0);
}

int main(int argc, char **argv)
{
    slim_registry *reg;
    slim_error err;
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    /* optional: only the models named on the command line */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (!tap_selected(argc, argv, cases[i].name))
            continue;
        counts(reg, &cases[i]);
        if (cases[i].image_size)
            step(reg, &cases[i]);
    }
    slim_registry_free(reg);
    return tap_done();
}
