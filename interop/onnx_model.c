/*
 * interop/onnx_model.c - an ONNX file as a slim model: imported in model
 * mode, written as a model file in memory, and built by the DSL with the
 * file's weights as the parameters' initial values (so the DSL checks the
 * model file the import wrote, and the graph is the one `slimrun import`'s
 * output gives).
 */
#include "interop/onnx_build.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"

void slim__onnx_model_name(const char *path, char *name, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && !strcasecmp(base + len - 5, ".onnx"))
        len -= 5;
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < n; i++) {
        char c = base[i];
        name[k++] = isalnum((unsigned char)c) || c == '_' || c == '-' ? c : '_';
    }
    name[k] = '\0';
    if (!k || isdigit((unsigned char)name[0])) {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "model_%s", name);
        snprintf(name, n, "%s", tmp);
    }
}

static const float *param_value(void *user, const char *name, const slim_shape *shape)
{
    return slim__onnx_param_data(user, name, shape);
}

slim_status slim__onnx_model_build(const slim__onnx_opts *o, const Onnx__ModelProto *m,
                                   const char *path, const slim_model_opts *mo, slim_model **out,
                                   char **yaml_out, slim_error *err)
{
    *out = NULL;
    if (yaml_out)
        *yaml_out = NULL;
    slim__onnx_importer *imp = NULL;
    slim_status st = slim__onnx_import(o, m, path, &imp, err);
    char *yaml = NULL;
    if (st == SLIM_OK)
        st = slim__onnx_yaml(imp, path, &yaml, err);
    if (st == SLIM_OK) {
        slim_model_opts lo = *mo;
        lo.param_value = param_value;
        lo.param_value_user = imp;
        char label[1100];
        snprintf(label, sizeof label, "%s (imported)", path);
        st = slim_model_load_string(o->reg, label, yaml, strlen(yaml), &lo, out, err);
        if (st != SLIM_OK)
            slim__error_prefix(err,
                               "%s: the imported model does not build (a bug in slim's "
                               "importer; please report it): ",
                               path);
    }
    slim__onnx_import_free(imp);
    if (yaml_out && st == SLIM_OK)
        *yaml_out = yaml;
    else
        free(yaml);
    return st;
}

/* A model slim exported: its graph is named after the model's scope and every
 * parameter is under it (MobilenetV2/Conv/weights). Importing it under that
 * scope gives back the original parameter names. */
static bool slim_root(const Onnx__ModelProto *m, char *name, size_t n)
{
    const Onnx__GraphProto *g = m->graph;
    const char *gn = g ? g->name : NULL;
    size_t len = gn ? strlen(gn) : 0;
    if (!len || len >= n || isdigit((unsigned char)gn[0]) || g->n_initializer == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)gn[i]) && gn[i] != '_' && gn[i] != '-')
            return false;
    /* slim's own constants (const_0) are outside the scope */
    bool slim = m->producer_name && !strcmp(m->producer_name, "slim");
    size_t under = 0;
    for (size_t k = 0; k < g->n_initializer; k++) {
        const char *in = g->initializer[k]->name;
        under += in && strncmp(in, gn, len) == 0 && in[len] == '/';
    }
    if (under == 0 || (!slim && under < g->n_initializer))
        return false;
    memcpy(name, gn, len + 1);
    return true;
}

slim_status slim__onnx_model_load(slim_registry *reg, const char *path, const char *model_name,
                                  const slim_model_opts *mo, slim_model **out, char **yaml_out,
                                  slim_error *err)
{
    *out = NULL;
    if (yaml_out)
        *yaml_out = NULL;
    Onnx__ModelProto *m;
    slim_status st = slim__ox_model_load(path, &m, err);
    if (st != SLIM_OK)
        return st;
    /* plugins first: the import maps ONNX ops they declare */
    for (int i = 0; i < mo->n_plugins && st == SLIM_OK; i++)
        st = slim_registry_load_plugin(reg, mo->plugins[i], err);
    char name[128];
    bool strip = !model_name && slim_root(m, name, sizeof name);
    if (!strip)
        slim__onnx_model_name(model_name ? model_name : path, name, sizeof name);
    slim__onnx_opts o = {.reg = reg, .root = name, .model = true, .strip_root = strip};
    if (st == SLIM_OK)
        st = slim__onnx_model_build(&o, m, path, mo, out, yaml_out, err);
    slim__ox_model_free(m);
    return st;
}
