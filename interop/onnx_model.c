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
    slim__onnx_model_name(model_name ? model_name : path, name, sizeof name);
    slim__onnx_opts o = {.reg = reg, .root = name, .model = true};
    if (st == SLIM_OK)
        st = slim__onnx_model_build(&o, m, path, mo, out, yaml_out, err);
    slim__ox_model_free(m);
    return st;
}
