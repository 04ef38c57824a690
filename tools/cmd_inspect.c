/*
 * tools/cmd_inspect.c - `slimrun inspect MODEL`: every layer of a model with
 * its output shape, parameters and multiply-adds, the totals, and the memory
 * the compiler plans for training and for inference (slim_graph_plan: planned,
 * not allocated); --dot draws the layer graph for Graphviz.
 */
#include "tools/cli.h"

#include <slim/model.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: slimrun inspect MODEL [options]\n"
            "\n"
            "MODEL is a model file (path/to/model.yaml) or a zoo name (resnet_v1_50).\n"
            "\n"
            "  --batch_size=N     batch for the shapes and the memory plan (default 32)\n"
            "  --num_classes=N    override the model's class count\n"
            "  --image_size=N     override the model's input size (height = width)\n"
            "  --set NAME=VALUE   override a var: of the model (depth_multiplier=0.5); repeatable\n"
            "  --plugin=PATH      load an op plugin first; repeatable\n"
            "  --num_threads=N    threads the memory plan assumes (default 1)\n"
            "  --no_memory        skip the memory plan\n"
            "  --dot=FILE         write the layer graph as Graphviz ('-' = stdout) and exit\n"
            "  --list             list the zoo models found by name\n");
}

static const char *group(char *buf, size_t n, int64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%lld", (long long)(v < 0 ? -v : v));
    size_t l = strlen(tmp), o = 0;
    if (v < 0 && o < n - 1)
        buf[o++] = '-';
    for (size_t i = 0; i < l && o < n - 1; i++) {
        if (i && (l - i) % 3 == 0 && o < n - 1)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

static const char *shape_str(const slim_graph *g, slim_tid t, char *buf, size_t n)
{
    slim_tensor_desc td;
    if (slim_graph_tensor_info(g, t, &td) != SLIM_OK) {
        snprintf(buf, n, "?");
        return buf;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "(");
    for (int i = 0; i < td.shape.rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)td.shape.dim[i]);
    if (o < n)
        snprintf(buf + o, n - o, ")");
    return buf;
}

static void dot_id(FILE *f, const char *name)
{
    fputc('"', f);
    for (const char *p = name; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static int write_dot(const slim_model *m, slim_graph *g, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        perror(path);
        return 1;
    }
    const slim_model_info *info = slim_model_get_info(m);
    int n = slim_model_layer_count(m);
    fprintf(f, "digraph ");
    dot_id(f, info->name);
    fprintf(f, " {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    fprintf(f, "  \"images\" [shape=oval, label=\"images\\n");
    char sb[96];
    slim_tid images;
    if (slim_graph_find(g, "images", &images) == SLIM_OK)
        fprintf(f, "%s", shape_str(g, images, sb, sizeof sb));
    fprintf(f, "\"];\n");
    size_t root = strlen(info->name) + 1;
    for (int i = 0; i < n; i++) {
        const slim_model_layer *l = slim_model_layer_at(m, i);
        const char *short_name = strlen(l->name) > root ? l->name + root : l->name;
        fprintf(f, "  ");
        dot_id(f, l->name);
        fprintf(f, " [label=\"%s\\n%s %s\"%s];\n", short_name, l->op,
                shape_str(g, l->output, sb, sizeof sb),
                l->n_params ? ", style=filled, fillcolor=\"#e8f0fe\"" : "");
    }
    for (int i = 0; i < n; i++) {
        const slim_model_layer *l = slim_model_layer_at(m, i);
        for (int k = 0; k < l->n_inputs; k++) {
            const char *from = NULL;
            /* the layer that produced this input (an identity may alias it) */
            for (int j = i - 1; j >= 0 && !from; j--)
                if (slim_model_layer_at(m, j)->output == l->inputs[k])
                    from = slim_model_layer_at(m, j)->name;
            if (!from)
                from = slim_graph_tensor_name(g, l->inputs[k]);
            fprintf(f, "  ");
            dot_id(f, from);
            fprintf(f, " -> ");
            dot_id(f, l->name);
            fprintf(f, ";\n");
        }
    }
    fprintf(f, "}\n");
    if (f != stdout)
        fclose(f);
    return 0;
}

static void list_models(void)
{
    static const char *const zoo[] = {
        "lenet",         "cifarnet",      "alexnet_v2",   "vgg_a",         "vgg_16",
        "vgg_19",        "inception_v1",  "inception_v2", "inception_v3",  "resnet_v1_50",
        "resnet_v1_101", "resnet_v1_152", "resnet_v2_50", "resnet_v2_101", "resnet_v2_152",
        "mobilenet_v1",  "mobilenet_v2"};
    for (size_t i = 0; i < sizeof zoo / sizeof *zoo; i++) {
        char path[1024];
        slim_error err;
        if (slim_model_find(zoo[i], path, sizeof path, &err) == SLIM_OK)
            printf("%-16s %s\n", zoo[i], path);
        else
            printf("%-16s (not found)\n", zoo[i]);
    }
}

static const char *no_value; /* a flag given without its value */

static bool flag(const char *a, const char *name, const char **val, int *i, int argc, char **argv)
{
    size_t l = strlen(name);
    if (strncmp(a, name, l) != 0)
        return false;
    if (a[l] == '=') {
        *val = a + l + 1;
        return true;
    }
    if (a[l] != 0)
        return false;
    if (*i + 1 < argc && !flags_is_flag(argv[*i + 1])) { /* never eat the next flag */
        *val = argv[++*i];
        return true;
    }
    no_value = name;
    *val = "";
    return true;
}

static int run_inspect(int argc, char **argv)
{
    const char *model = NULL, *dot = NULL, *v;
    int batch = 32, classes = 0, image = 0, threads = 1;
    bool memory = true;
    const char *plugins[32], *defines[32];
    int n_plugins = 0, n_defines = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            list_models();
            return 0;
        } else if (!strcmp(a, "--no_memory")) {
            memory = false;
        } else if (flag(a, "--batch_size", &v, &i, argc, argv)) {
            batch = atoi(v);
        } else if (flag(a, "--num_classes", &v, &i, argc, argv)) {
            classes = atoi(v);
        } else if (flag(a, "--image_size", &v, &i, argc, argv)) {
            image = atoi(v);
        } else if (flag(a, "--num_threads", &v, &i, argc, argv)) {
            threads = atoi(v);
        } else if (flag(a, "--dot", &v, &i, argc, argv)) {
            dot = v;
        } else if (flag(a, "--set", &v, &i, argc, argv)) {
            if (n_defines == 32) {
                fprintf(stderr, "slimrun inspect: too many --set\n");
                return 2;
            }
            defines[n_defines++] = v;
        } else if (flag(a, "--plugin", &v, &i, argc, argv)) {
            if (n_plugins == 32) {
                fprintf(stderr, "slimrun inspect: too many --plugin\n");
                return 2;
            }
            plugins[n_plugins++] = v;
        } else if (a[0] == '-' || model) {
            fprintf(stderr, "slimrun inspect: unexpected argument '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else {
            model = a;
        }
        if (no_value) {
            fprintf(stderr, "slimrun inspect: %s needs a value%s%s%s\n", no_value,
                    i + 1 < argc ? " (the next argument, " : "", i + 1 < argc ? argv[i + 1] : "",
                    i + 1 < argc ? ", is a flag)" : "");
            return 2;
        }
    }
    if (!model || batch < 1 || classes < 0 || image < 0 || threads < 1) {
        usage(stderr);
        return 2;
    }
    slim_error err = {0};
    char path[1024];
    if (slim_model_find(model, path, sizeof path, &err) != SLIM_OK) {
        fprintf(stderr, "slimrun inspect: %s\n", err.msg);
        return 1;
    }
    slim_registry *reg;
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        fprintf(stderr, "slimrun inspect: %s\n", err.msg);
        return 1;
    }
    slim_model_opts o = {.batch_size = batch,
                         .num_classes = classes,
                         .image_size = image,
                         .training = true,
                         .weight_decay = -1,
                         .plugins = plugins,
                         .n_plugins = n_plugins,
                         .defines = defines,
                         .n_defines = n_defines};
    slim_model *m;
    if (slim_model_load(reg, path, &o, &m, &err) != SLIM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        slim_registry_free(reg);
        return 1;
    }
    slim_graph *g = slim_model_graph(m);
    int rc = 0;
    if (dot) {
        rc = write_dot(m, g, dot);
        slim_model_free(m);
        slim_registry_free(reg);
        return rc;
    }
    const slim_model_info *info = slim_model_get_info(m);
    char b1[32], b2[32], b3[32], sb[96];
    printf("model %s (%s): input %dx%dx%d, %d classes, batch %d\n\n", info->name, info->path,
           info->image_size, info->image_size, info->channels, info->num_classes, batch);
    size_t root = strlen(info->name) + 1, w = 5;
    int n = slim_model_layer_count(m);
    for (int i = 0; i < n; i++) {
        const char *nm = slim_model_layer_at(m, i)->name;
        size_t l = strlen(nm) > root ? strlen(nm) - root : strlen(nm);
        if (l > w)
            w = l;
    }
    if (w > 64)
        w = 64;
    printf("%-*s  %-16s  %-20s  %12s  %15s\n", (int)w, "layer", "op", "output shape", "params",
           "mult-adds");
    for (int i = 0; i < n; i++) {
        const slim_model_layer *l = slim_model_layer_at(m, i);
        const char *nm = strlen(l->name) > root ? l->name + root : l->name;
        printf("%-*s  %-16s  %-20s  %12s  %15s\n", (int)w, nm, l->op,
               shape_str(g, l->output, sb, sizeof sb),
               l->n_params ? group(b1, sizeof b1, l->n_params) : "",
               l->madds ? group(b2, sizeof b2, l->madds) : "");
    }
    printf("\ntotal: %s parameters (%s trainable, %s other state), %s multiply-adds per image "
           "(%.2f G)\n",
           group(b1, sizeof b1, info->n_params), group(b2, sizeof b2, info->n_trainable),
           group(b3, sizeof b3, info->n_params - info->n_trainable),
           group(sb, sizeof sb, info->madds), (double)info->madds / 1e9);
    if (info->has_aux)
        printf("auxiliary logits: loss weight %g\n", (double)info->aux_weight);
    if (memory) {
        /* the plan alone: nothing is allocated (VGG-16's training arena is GiBs) */
        slim_compile_opts co = {
            .training = true, .num_threads = threads, .optimizer = "momentum_update"};
        slim_program_stats ts = {0}, es = {0};
        if (slim_graph_plan(g, &co, &ts, &err) != SLIM_OK) {
            fprintf(stderr, "slimrun inspect: planning for training: %s\n", err.msg);
            rc = 1;
        } else {
            co.training = false;
            co.optimizer = NULL;
            if (slim_graph_plan(g, &co, &es, &err) != SLIM_OK) {
                fprintf(stderr, "slimrun inspect: planning for inference: %s\n", err.msg);
                rc = 1;
            } else {
                printf("planned memory, batch %d:\n", batch);
                printf("  training:  %s activations, gradients and workspace (%s without "
                       "reuse) + %s parameters + %s momentum slots\n",
                       slim_cli_bytes(b1, sizeof b1, (double)ts.arena_bytes),
                       slim_cli_bytes(b2, sizeof b2, (double)ts.naive_bytes),
                       slim_cli_bytes(b3, sizeof b3, (double)ts.param_bytes),
                       slim_cli_bytes(sb, sizeof sb, (double)ts.slot_bytes));
                printf("  inference: %s activations and workspace (%s without reuse) + %s "
                       "parameters\n",
                       slim_cli_bytes(b1, sizeof b1, (double)es.arena_bytes),
                       slim_cli_bytes(b2, sizeof b2, (double)es.naive_bytes),
                       slim_cli_bytes(b3, sizeof b3, (double)es.param_bytes));
            }
        }
    }
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}

const slim_command slim_cmd_inspect = {
    .name = "inspect",
    .summary = "show a model's layers, shapes, parameters, multiply-adds and memory plan",
    .run = run_inspect,
};
