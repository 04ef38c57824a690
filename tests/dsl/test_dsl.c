/*
 * tests/dsl/test_dsl.c - the model language.
 *
 *   bad/     every malformed file fails with exactly the message on its first
 *            line ("# error: LINE:COL: message", or "# error: FILE:LINE:COL:
 *            message" when the error is in an included file), positions in
 *            slim_error too
 *   good/    features.yaml: includes (a diamond), defaults (nested, merged),
 *            blocks with parameters, repeat and stack naming, scopes,
 *            conditions, functions, relative inputs; parameters by TF-Slim name
 *   inline   weight decay and the auxiliary loss checked by value, plugins
 *            from the file and the options, defines, zoo lookup
 */
#include "tests/dsl/tap.h"

#include "engine/graph.h" /* a node's op and attributes */

#include <slim/model.h>

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static slim_registry *reg;
static char srcdir[1024], builddir[1024];

/* ---- bad/ ------------------------------------------------------------------------ */

static char *slurp_first_line(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char line[2048];
    char *r = fgets(line, sizeof line, f);
    fclose(f);
    if (!r)
        return NULL;
    line[strcspn(line, "\n")] = 0;
    return line;
}

/* s with every occurrence of prefix removed (the directory of the bad files) */
static void strip_all(char *s, const char *prefix)
{
    size_t pl = strlen(prefix);
    char *p;
    while (pl && (p = strstr(s, prefix)))
        memmove(p, p + pl, strlen(p + pl) + 1);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void bad_files(void)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/tests/dsl/bad", srcdir);
    DIR *d = opendir(dir);
    if (!tap_ok(d != NULL, "bad/ exists (%s)", dir))
        return;
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".yaml") && !strstr(de->d_name, ".inc.yaml"))
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    tap_ok(n >= 40, "bad/ holds %d malformed files", n);
    for (int i = 0; i < n; i++) {
        char path[1400], want[2100], prefix[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        const char *line = slurp_first_line(path);
        if (!tap_ok(line && !strncmp(line, "# error: ", 9), "%s: states its error", names[i])) {
            free(names[i]);
            continue;
        }
        const char *exp = line + 9;
        if (isdigit((unsigned char)exp[0]))
            snprintf(want, sizeof want, "%s:%s", names[i], exp);
        else
            snprintf(want, sizeof want, "%s", exp);
        slim_model_opts o = {.batch_size = 2, .training = true, .weight_decay = -1};
        slim_model *m = NULL;
        slim_error err = {0};
        slim_status st = slim_model_load(reg, path, &o, &m, &err);
        snprintf(prefix, sizeof prefix, "%s/", dir);
        char got[sizeof err.msg];
        snprintf(got, sizeof got, "%s", err.msg);
        strip_all(got, prefix);
        bool ok = st != SLIM_OK && !strcmp(got, want);
        /* the position is in the error's fields too */
        int wl = 0, wc = 0;
        const char *pos = isdigit((unsigned char)exp[0]) ? exp : strstr(exp, ".yaml:") + 6;
        if (sscanf(pos, "%d:%d", &wl, &wc) == 2)
            ok = ok && err.line == wl && err.col == wc && err.file[0];
        tap_ok(ok, "%s: %s", names[i], want);
        if (!ok)
            tap_diag("got status %d, %s:%d:%d, '%s'", st, err.file, err.line, err.col, got);
        slim_model_free(m);
        free(names[i]);
    }
}

/* ---- good/ and inline models ---------------------------------------------------------- */

static slim_model *load_text(const char *text, const slim_model_opts *o, slim_error *err)
{
    slim_model *m = NULL;
    if (slim_model_load_string(reg, "inline.yaml", text, strlen(text), o, &m, err) != SLIM_OK)
        return NULL;
    return m;
}

static bool param_shape(slim_graph *g, const char *name, int rank, const int64_t *dim,
                        unsigned *flags)
{
    for (int i = 0; i < slim_graph_param_count(g); i++) {
        const char *pn;
        slim_tensor v;
        unsigned f;
        slim_graph_param_at(g, i, &pn, &v, &f);
        if (strcmp(pn, name))
            continue;
        if (flags)
            *flags = f;
        if (v.shape.rank != rank)
            return false;
        for (int k = 0; k < rank; k++)
            if (v.shape.dim[k] != dim[k])
                return false;
        return true;
    }
    return false;
}

static bool has_param(slim_graph *g, const char *name)
{
    slim_tensor v;
    return slim_graph_param_get(g, name, &v, NULL) == SLIM_OK;
}

static bool tensor_shape(slim_graph *g, const char *name, int rank, const int64_t *dim)
{
    slim_tid t;
    slim_tensor_desc td;
    if (slim_graph_find(g, name, &t) != SLIM_OK || slim_graph_tensor_info(g, t, &td) != SLIM_OK)
        return false;
    if (td.shape.rank != rank)
        return false;
    for (int k = 0; k < rank; k++)
        if (td.shape.dim[k] != dim[k])
            return false;
    return true;
}

/* The op of node `name` and its string attribute `attr`, or NULL. */
static const char *node_attr(slim_graph *g, const char *name, const char *attr, const char **op)
{
    int n = slim__names_get(&g->node_names, name);
    if (n < 0)
        return NULL;
    *op = g->nodes[n].d->name;
    const slim__attr_value *v = slim__attrs_get(&g->nodes[n].attrs, attr);
    return v && v->type == SLIM_ATTR_STRING ? v->str : NULL;
}

static void features(void)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/dsl/good/features.yaml", srcdir);
    slim_model_opts o = {.batch_size = 2, .training = true, .weight_decay = -1};
    slim_model *m;
    slim_error err = {0};
    if (!tap_ok(slim_model_load(reg, path, &o, &m, &err) == SLIM_OK, "good/features.yaml loads")) {
        tap_diag("%s", err.msg);
        return;
    }
    slim_graph *g = slim_model_graph(m);
    unsigned flags = 0;
    tap_ok(param_shape(g, "feat/stem/weights", 4, (int64_t[]){3, 3, 3, 16}, NULL),
           "a function from an include: stem has wide(2) = 16 outputs");
    tap_ok(has_param(g, "feat/stem/BatchNorm/gamma") && has_param(g, "feat/stem/BatchNorm/beta") &&
               has_param(g, "feat/stem/BatchNorm/moving_mean") &&
               has_param(g, "feat/stem/BatchNorm/moving_variance") &&
               !has_param(g, "feat/stem/biases"),
           "batch norm from defaults: BatchNorm/{beta,gamma,moving_*}, no biases");
    param_shape(g, "feat/stem/BatchNorm/moving_mean", 1, (int64_t[]){16}, &flags);
    tap_ok(!(flags & SLIM_PARAM_TRAINABLE), "moving statistics are not trainable");
    tap_ok(has_param(g, "feat/unit_1/a/weights") && has_param(g, "feat/unit_2/b/weights") &&
               !has_param(g, "feat/unit_3/a/weights"),
           "a block repeated with a name template: unit_1, unit_2");
    const char *op = "", *act = node_attr(g, "feat/unit_2/b/BatchNorm", "activation", &op);
    tap_ok(tensor_shape(g, "feat/unit_2/b/BatchNorm", 4, (int64_t[]){2, 16, 16, 16}) &&
               !strcmp(op, "batch_norm") && act && !strcmp(act, "relu6"),
           "the included defaults (relu6) apply under the file's own (fused into the batch "
           "norm: %s)",
           act ? act : "none");
    const char *wino = node_attr(g, "feat/stem", "winograd", &op);
    const char *wino2 = node_attr(g, "feat/core/core_1", "winograd", &op);
    tap_ok(wino && !strcmp(wino, "off") && wino2 && !strcmp(wino2, "auto"),
           "conv2d's winograd key reaches the op (stem: %s, core_1: %s)", wino ? wino : "none",
           wino2 ? wino2 : "none");
    tap_ok(slim_graph_find(g, "feat/unit_2/b/relu6", &(slim_tid){0}) == SLIM_ENOTFOUND,
           "a batch norm's relu6 is not a node of its own");
    param_shape(g, "feat/branch/left/weights", 4, (int64_t[]){1, 1, 16, 4}, &flags);
    tap_ok(!(flags & SLIM_PARAM_TRAINABLE),
           "a scope's defaults merge into weights: (trainable: false)");
    tap_ok(has_param(g, "feat/branch/right/biases") &&
               !has_param(g, "feat/branch/right/BatchNorm/beta"),
           "normalizer: none gives biases");
    tap_ok(tensor_shape(g, "feat/branch/join", 4, (int64_t[]){2, 16, 16, 8}),
           "inputs by name and by relative position (-1)");
    tap_ok(param_shape(g, "feat/core/core_1/weights", 4, (int64_t[]){3, 3, 8, 6}, NULL) &&
               param_shape(g, "feat/core/core_2/weights", 4, (int64_t[]){3, 3, 6, 10}, NULL),
           "stack: core/core_1, core/core_2 with their own keys");
    tap_ok(tensor_shape(g, "feat/pool", 4, (int64_t[]){2, 4, 4, 10}),
           "if: $in_height > 4 builds the pool");
    tap_ok(param_shape(g, "feat/fc/fc_1/weights", 2, (int64_t[]){160, 12}, NULL) &&
               param_shape(g, "feat/fc/fc_2/weights", 2, (int64_t[]){12, 7}, NULL),
           "fully_connected stack flattens its input");
    tap_ok(tensor_shape(g, "feat/dropout", 2, (int64_t[]){2, 7}), "an unnamed layer: dropout");
    tap_ok(tensor_shape(g, "logits", 2, (int64_t[]){2, 5}) &&
               tensor_shape(g, "predictions", 2, (int64_t[]){2, 5}) &&
               tensor_shape(g, "labels", 1, (int64_t[]){2}) &&
               tensor_shape(g, "accuracy", 0, NULL) && tensor_shape(g, "accuracy_top5", 0, NULL) &&
               tensor_shape(g, "total_loss", 0, NULL),
           "the head: logits, predictions, labels, accuracy, accuracy_top5, total_loss");
    const slim_model_info *info = slim_model_get_info(m);
    tap_ok(!strcmp(info->name, "feat") && info->num_classes == 5 && info->image_size == 16 &&
               info->channels == 3 && info->n_layers > 10 && info->madds > 0,
           "info: name, sizes, layers, multiply-adds");
    slim_model_free(m);

    /* defines override vars; an unknown one is an error */
    const char *defs[] = {"blocks_n=1"};
    o.defines = defs;
    o.n_defines = 1;
    m = NULL;
    bool ok = slim_model_load(reg, path, &o, &m, &err) == SLIM_OK;
    tap_ok(ok && has_param(slim_model_graph(m), "feat/unit_1/a/weights") &&
               !has_param(slim_model_graph(m), "feat/unit_2/a/weights"),
           "define blocks_n=1 overrides the var");
    slim_model_free(m);
    const char *bad[] = {"block_n=1"};
    o.defines = bad;
    m = NULL;
    ok = slim_model_load(reg, path, &o, &m, &err) != SLIM_OK &&
         strstr(err.msg, "found the define 'block_n', but the model declares no such var");
    tap_ok(ok, "an unknown define is an error");
    if (!ok)
        tap_diag("%s", err.msg);
    slim_model_free(m);
}

static double xent(const float *logits, int k, int label)
{
    double mx = logits[0], s = 0;
    for (int i = 1; i < k; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    for (int i = 0; i < k; i++)
        s += exp(logits[i] - mx);
    return -(logits[label] - mx - log(s));
}

static const float *param(slim_graph *g, const char *name)
{
    slim_tensor v;
    return slim_graph_param_get(g, name, &v, NULL) == SLIM_OK ? v.data : NULL;
}

/* total_loss = cross entropy + aux_weight * aux cross entropy + sum of
 * weight_decay * decay_mult * sum(w^2) / 2, checked by value */
static void losses(void)
{
    static const char *text =
        "name: l\n"
        "num_classes: 3\n"
        "image_size: 2\n"
        "channels: 1\n"
        "weight_decay: 0.5\n"
        "layers:\n"
        "  - flatten: {name: flat}\n"
        "  - fully_connected: {name: aux, num_outputs: 3, activation: none,\n"
        "                      biases: {init: {type: constant, value: 0.3}, decay_mult: 2}}\n"
        "  - fully_connected: {name: main, num_outputs: 3, activation: none, inputs: flat,\n"
        "                      weights: {decay_mult: 0}}\n"
        "head: {logits: main, aux_logits: aux, aux_weight: 0.25}\n";
    slim_model_opts o = {.batch_size = 2, .training = true, .weight_decay = -1};
    slim_error err = {0};
    slim_model *m = load_text(text, &o, &err);
    if (!tap_ok(m != NULL, "the loss model loads")) {
        tap_diag("%s", err.msg);
        return;
    }
    slim_graph *g = slim_model_graph(m);
    slim_graph_init_params(g, 7, &err);
    slim_program *p;
    slim_compile_opts co = {.training = true, .num_threads = 1};
    if (!tap_ok(slim_graph_compile(g, &co, &p, &err) == SLIM_OK, "it compiles")) {
        tap_diag("%s", err.msg);
        slim_model_free(m);
        return;
    }
    slim_tensor x, y, loss;
    slim_program_input(p, "images", &x, &err);
    slim_program_input(p, "labels", &y, &err);
    float *xd = x.data;
    for (int i = 0; i < 8; i++)
        xd[i] = 0.1f * (float)i - 0.3f;
    int32_t *yd = y.data;
    yd[0] = 2;
    yd[1] = 0;
    slim_run_opts ro = {.seed = 1};
    bool ran = slim_program_run(p, &ro, &err) == SLIM_OK &&
               slim_program_output(p, "total_loss", &loss, &err) == SLIM_OK;
    if (!tap_ok(ran, "one step runs")) {
        tap_diag("%s", err.msg);
    } else {
        const float *wa = param(g, "l/aux/weights"), *ba = param(g, "l/aux/biases");
        const float *wm = param(g, "l/main/weights"), *bm = param(g, "l/main/biases");
        double ce = 0, ace = 0;
        for (int n = 0; n < 2; n++) {
            float lm[3], la[3];
            for (int k = 0; k < 3; k++) {
                double sm = bm[k], sa = ba[k];
                for (int i = 0; i < 4; i++) {
                    sm += xd[n * 4 + i] * wm[i * 3 + k];
                    sa += xd[n * 4 + i] * wa[i * 3 + k];
                }
                lm[k] = (float)sm;
                la[k] = (float)sa;
            }
            ce += xent(lm, 3, yd[n]) / 2;
            ace += xent(la, 3, yd[n]) / 2;
        }
        double rl = 0; /* aux weights (decay 0.5), aux biases (0.5 * 2); main: none */
        for (int i = 0; i < 12; i++)
            rl += 0.5 * wa[i] * wa[i] / 2;
        for (int i = 0; i < 3; i++)
            rl += 1.0 * ba[i] * ba[i] / 2;
        double want = ce + 0.25 * ace + rl, got = *(float *)loss.data;
        tap_ok(fabs(got - want) < 1e-4 * (1 + fabs(want)),
               "total_loss = xent + 0.25 aux xent + weight decay (%.6f, expected %.6f)", got, want);
    }
    slim_program_free(p);
    slim_model_free(m);

    /* weight_decay 0 from the options, no aux: total_loss is the cross entropy alone */
    o.weight_decay = 0;
    m = load_text("name: z\nnum_classes: 2\nimage_size: 1\nlayers:\n"
                  "  - fully_connected: {name: fc, num_outputs: 2, activation: none}\n",
                  &o, &err);
    slim_tid t;
    tap_ok(m && slim_graph_find(slim_model_graph(m), "total_loss", &t) == SLIM_OK &&
               slim_graph_find(slim_model_graph(m), "regularization_loss", &t) != SLIM_OK &&
               slim_graph_find(slim_model_graph(m), "accuracy_top5", &t) != SLIM_OK,
           "without weight decay the loss is the cross entropy; no top-5 for 2 classes");
    slim_model_free(m);
    /* not training: no loss, labels and accuracy still there */
    o.training = false;
    m = load_text("name: z\nnum_classes: 2\nimage_size: 1\nlayers:\n"
                  "  - fully_connected: {name: fc, num_outputs: 2, activation: none}\n",
                  &o, &err);
    tap_ok(m && slim_graph_find(slim_model_graph(m), "total_loss", &t) != SLIM_OK &&
               slim_graph_find(slim_model_graph(m), "accuracy", &t) == SLIM_OK,
           "training=false: no loss, accuracy kept");
    slim_model_free(m);
}

static void plugins(void)
{
    char so[1200];
    snprintf(so, sizeof so, "%s/plugins/.libs/swish.so", builddir);
    if (access(so, R_OK) != 0) {
        tap_ok(true, "# SKIP the example plugin is not built (%s)", so);
        return;
    }
    char text[4096];
    snprintf(
        text, sizeof text,
        "name: p\nnum_classes: 4\nimage_size: 6\nplugins: [%s]\n"
        "layers:\n"
        "  - conv2d: {name: c, num_outputs: 4, kernel_size: 3, activation: {swish: {beta: 1.5}}}\n"
        "  - swish: {name: s, beta: 0.5}\n"
        "  - global_avg_pool: {name: pool}\n"
        "  - conv2d: {name: logits, num_outputs: 4, kernel_size: 1, activation: none}\n",
        so);
    slim_model_opts o = {.batch_size = 2, .training = true, .weight_decay = -1};
    slim_error err = {0};
    slim_model *m = load_text(text, &o, &err);
    slim_tid t;
    bool ok = m && slim_graph_find(slim_model_graph(m), "p/c/swish", &t) == SLIM_OK &&
              slim_graph_find(slim_model_graph(m), "p/s", &t) == SLIM_OK;
    if (!tap_ok(ok, "plugins: in the file; a plugin op as a layer and as an activation"))
        tap_diag("%s", err.msg);
    if (ok) {
        slim_graph *g = slim_model_graph(m);
        slim_graph_init_params(g, 3, &err);
        slim_program *p;
        slim_compile_opts co = {.training = true, .num_threads = 1, .optimizer = "sgd_update"};
        bool ran = slim_graph_compile(g, &co, &p, &err) == SLIM_OK;
        if (ran) {
            slim_tensor y;
            slim_program_input(p, "labels", &y, &err);
            ((int32_t *)y.data)[0] = ((int32_t *)y.data)[1] = 1;
            ran = slim_program_run(p, &(slim_run_opts){.learning_rate = 0.1f}, &err) == SLIM_OK;
            slim_program_free(p);
        }
        if (!tap_ok(ran, "a model with plugin ops trains a step"))
            tap_diag("%s", err.msg);
    }
    slim_model_free(m);
    /* the same plugin again, from the file, into the same registry: fine */
    m = load_text(text, &o, &err);
    if (!tap_ok(m != NULL, "loading the same plugin again into one registry is harmless"))
        tap_diag("%s", err.msg);
    slim_model_free(m);
    /* from the options (slimrun --plugin) into a fresh registry */
    slim_registry *r2;
    slim_registry_new(&r2, &err);
    const char *pl[] = {so};
    o.plugins = pl;
    o.n_plugins = 1;
    const char *text2 = "name: q\nnum_classes: 2\nimage_size: 1\nlayers:\n"
                        "  - swish: {name: s}\n"
                        "  - fully_connected: {name: fc, num_outputs: 2, activation: none}\n";
    m = NULL;
    ok = slim_model_load_string(r2, "q.yaml", text2, strlen(text2), &o, &m, &err) == SLIM_OK;
    if (!tap_ok(ok, "plugins from the options"))
        tap_diag("%s", err.msg);
    slim_model_free(m);
    slim_registry_free(r2);
    /* a plugin op unknown without its plugin */
    slim_registry_new(&r2, &err);
    o.n_plugins = 0;
    m = NULL;
    ok = slim_model_load_string(r2, "q.yaml", text2, strlen(text2), &o, &m, &err) != SLIM_OK &&
         !strcmp(err.msg, "q.yaml:5:5: unknown layer kind 'swish', expected a layer (conv2d, "
                          "separable_conv2d, fully_connected, batch_norm), scope, identity, a "
                          "block of this model or an op (slimrun ops lists them; plugin ops need "
                          "plugins:)");
    if (!tap_ok(ok, "without the plugin its op is an unknown kind"))
        tap_diag("%s", err.msg);
    slim_model_free(m);
    slim_registry_free(r2);
}

static void precedence(void)
{
    static const char *text =
        "name: t\nnum_classes: 3\nimage_size: 4\n"
        "defaults:\n"
        "  conv2d, separable_conv2d: {padding: VALID}\n"
        "  conv2d, fully_connected: {activation: relu}\n"
        "  conv2d: {activation: none}\n"
        "layers:\n"
        "  - conv2d: {name: a, num_outputs: 2, kernel_size: 3}\n"
        "  - conv2d: {name: b, num_outputs: 2, kernel_size: 1, activation: tanh}\n"
        "  - scope:\n"
        "      defaults: {conv2d: {activation: sigmoid}}\n"
        "      layers: [conv2d: {name: c, num_outputs: 2, kernel_size: 1}]\n"
        "  - fully_connected: {name: logits, num_outputs: 3}\n";
    slim_model_opts o = {.batch_size = 1, .weight_decay = -1};
    slim_error err = {0};
    slim_model *m = load_text(text, &o, &err);
    if (!tap_ok(m != NULL, "the precedence model loads")) {
        tap_diag("%s", err.msg);
        return;
    }
    slim_graph *g = slim_model_graph(m);
    slim_tid t;
    tap_ok(slim_graph_find(g, "t/a/relu", &t) != SLIM_OK &&
               tensor_shape(g, "t/a", 4, (int64_t[]){1, 2, 2, 2}),
           "defaults: a later entry wins (activation: none), earlier keys still apply (VALID)");
    tap_ok(slim_graph_find(g, "t/b/tanh", &t) == SLIM_OK, "a layer's own key wins over defaults");
    tap_ok(slim_graph_find(g, "t/c/sigmoid", &t) == SLIM_OK,
           "an unnamed scope's defaults apply inside it, names stay in the outer scope");
    tap_ok(slim_graph_find(g, "t/logits/relu", &t) == SLIM_OK,
           "a multi-kind defaults entry applies to each kind");
    slim_model_free(m);
}

static void find(void)
{
    char path[1024];
    slim_error err;
    tap_ok(slim_model_find("resnet_v1_50", path, sizeof path, &err) == SLIM_OK &&
               strstr(path, "resnet_v1_50.yaml"),
           "slim_model_find: a zoo name");
    tap_ok(slim_model_find("resnet_v1_5", path, sizeof path, &err) == SLIM_ENOTFOUND &&
               strstr(err.msg, "did you mean 'resnet_v1_50'?"),
           "slim_model_find: a near miss is suggested");
    char tmpl[] = "/tmp/slim_model_path_XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (dir) {
        char f[1200];
        snprintf(f, sizeof f, "%s/mine.yaml", dir);
        FILE *fp = fopen(f, "w");
        if (fp) {
            fputs("name: mine\n", fp);
            fclose(fp);
        }
        setenv("SLIM_MODEL_PATH", dir, 1);
        tap_ok(slim_model_find("mine", path, sizeof path, &err) == SLIM_OK && !strcmp(path, f),
               "slim_model_find: $SLIM_MODEL_PATH first");
        unsetenv("SLIM_MODEL_PATH");
        unlink(f);
        rmdir(dir);
    }
}

int main(void)
{
    const char *s = getenv("top_srcdir"), *b = getenv("top_builddir");
    snprintf(srcdir, sizeof srcdir, "%s", s ? s : ".");
    snprintf(builddir, sizeof builddir, "%s", b ? b : ".");
    slim_error err;
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    bad_files();
    features();
    losses();
    precedence();
    plugins();
    find();
    slim_registry_free(reg);
    return tap_done();
}
