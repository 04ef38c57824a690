/*
 * interop/onnx.h - ONNX models into slim.
 *
 *   slim__onnx_import   an ONNX ModelProto -> a slim graph, recorded as layers
 *                       (onnx_build.c and the op files)
 *   slim__onnx_yaml     those layers as a model file in slim's DSL (onnx_yaml.c)
 *   slim__onnx_model_load
 *                       MODEL.onnx as a slim_model: imported, written as a
 *                       model file in memory and built by the DSL, its
 *                       parameters starting at the file's values
 *                       (slim_model_load calls it for .onnx paths)
 *
 * In model mode (a classifier: what `slimrun import` and --model=X.onnx
 * take) the graph's one input (N,C,H,W) becomes slim's "images" (N,H,W,C)
 * and its output the logits; the model file says input_layout: NCHW, so
 * tensors fed from the command line keep the source's layout. Otherwise (the
 * conformance runner) graph inputs come with their values and every graph
 * output is marked.
 *
 * Names. A layer that owns parameters is named after them: the ONNX
 * initializer layer1.0.conv1.weight makes the conv2d layer layer1/0/conv1,
 * whose parameters are ROOT/layer1/0/conv1/weights (and /biases); a batch
 * norm's ROOT/bn1/{gamma, beta, moving_mean, moving_variance}. Exporters'
 * made-up names (onnx::Conv_193) fall back to the node's name.
 */
#ifndef SLIM_INTEROP_ONNX_H
#define SLIM_INTEROP_ONNX_H

#include <slim/model.h>
#include <slim/slim.h>

#include "interop/onnx_proto.h"

typedef struct slim__onnx_opts {
    slim_registry *reg;
    const char *root; /* the root scope; NULL = "onnx" */
    /* model mode: one input (N,C,H,W) -> images (N,H,W,C), output 0 -> logits */
    bool model;
    int batch_size; /* model mode: N to build with (0: the file's, else 2) */
    /* model mode: names under "root/" lose that prefix (slim's export: its
     * graph is named after the model's scope, which starts every name) */
    bool strip_root;
    /* otherwise: every graph input not an initializer, with its values (in
     * the graph's order): fed at run time, and readable where an op needs a
     * value at build time (a Reshape's shape) */
    const slim__ox_tensor *inputs;
    int n_inputs;
    /* model mode, a graph translated from TensorFlow (interop/tf_graph.c): its
     * input is (N,H,W,C) as slim's images, and the model file says so */
    bool input_nhwc;
    bool prefer_cl;        /* feed rank-3/4 host inputs of layout-agnostic ops channels-last */
    bool trainable_inputs; /* f32 inputs as trainable parameters (a training compile) */
} slim__onnx_opts;

typedef struct ox_builder slim__onnx_importer;

/* Import m (read from file, named in messages). On error *out is NULL and err
 * names the file and node; an op slim lacks is SLIM_EUNSUPPORTED. */
slim_status slim__onnx_import(const slim__onnx_opts *o, const Onnx__ModelProto *m, const char *file,
                              slim__onnx_importer **out, slim_error *err);
void slim__onnx_import_free(slim__onnx_importer *imp);
slim_graph *slim__onnx_import_graph(const slim__onnx_importer *imp);

/* Model mode: the layers as a model file (malloc'd text). name: the model's
 * name (the root scope); source: what it came from, for the description. */
slim_status slim__onnx_yaml(const slim__onnx_importer *imp, const char *source, char **text,
                            slim_error *err);

/* The initial value of parameter name (full name) from the file, when its
 * shape matches; NULL otherwise. */
const float *slim__onnx_param_data(const slim__onnx_importer *imp, const char *name,
                                   const slim_shape *shape);

/* The model name an ONNX file gets: its file name without .onnx, made a
 * valid scope name (resnet18.onnx -> resnet18). */
void slim__onnx_model_name(const char *path, char *name, size_t n);

/* An ONNX model (read from path) as a model, with the import options o
 * (model mode; o->reg the registry): slim__onnx_model_load's work once the
 * file is read. */
slim_status slim__onnx_model_build(const slim__onnx_opts *o, const Onnx__ModelProto *m,
                                   const char *path, const slim_model_opts *mo, slim_model **out,
                                   char **yaml_out, slim_error *err);

/* MODEL.onnx as a model (see above), named name (NULL: from the file name).
 * yaml_out, when not NULL, receives the model file's text (malloc'd). */
slim_status slim__onnx_model_load(slim_registry *reg, const char *path, const char *name,
                                  const slim_model_opts *mo, slim_model **out, char **yaml_out,
                                  slim_error *err);

#endif
