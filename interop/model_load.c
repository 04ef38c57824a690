/* interop/model_load.c - slim_model_load: a model file of any format slim
 * reads, by its name: an ONNX model (.onnx: onnx_model.c), a TensorFlow
 * GraphDef (tf_graph.c), else the model language (dsl/model.c). Above both
 * the importers and the DSL, which the importers load their YAML through. */
#include "dsl/dsl.h"
#include "interop/onnx.h"
#include "interop/tf_graph.h"

#include <string.h>

slim_status slim_model_load(slim_registry *reg, const char *path, const slim_model_opts *o,
                            slim_model **out, slim_error *err)
{
    if (slim__dsl_is_onnx_path(path) && reg && o && out) {
        if (err)
            memset(err, 0, sizeof *err);
        return slim__onnx_model_load(reg, path, NULL, o, out, NULL, err);
    }
    if (path && slim__tfg_is_graph_path(path) && reg && o && out) {
        if (err)
            memset(err, 0, sizeof *err);
        return slim__tfg_model_load(reg, path, NULL, NULL, o, out, NULL, err);
    }
    return slim__dsl_model_load(reg, path, o, out, err);
}
