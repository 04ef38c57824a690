/*
 * interop/tf_graph.h - frozen TensorFlow GraphDefs (.pb) into slim, through
 * the ONNX importer.
 *
 * A frozen inference graph (TF-Slim's export_inference_graph.py +
 * freeze_graph) is checked (every node named, inputs that exist, no cycle,
 * tensors whose bytes match their shapes), the part that computes the
 * classifier's output is kept, and each TensorFlow op is written as the ONNX
 * nodes that compute the same (an ONNX ModelProto in memory: Conv2D NHWC ->
 * Transpose, Conv, Transpose; the importer turns such transposes into
 * layouts, so no data moves). The ONNX importer then builds the slim graph
 * and writes the model file, as for an .onnx file; the model's input stays
 * NHWC, as TensorFlow's.
 *
 * The output: --output_node, else the one node nothing reads. An ArgMax or
 * Softmax at the end (TF-Slim's Predictions) is dropped: slim's model ends
 * in the logits. Weights keep their TensorFlow names: a scope every weight
 * shares (TF-Slim's "InceptionV3/") becomes the model's root scope, a
 * Conv2D's "SCOPE/weights" and its BiasAdd's "SCOPE/biases" the conv2d
 * layer SCOPE, a FusedBatchNorm's "SCOPE/moving_mean" ... the batch_norm
 * layer SCOPE, so the parameters read "InceptionV3/Conv2d_1a_3x3/weights" as
 * in TF-Slim's checkpoints.
 */
#ifndef SLIM_INTEROP_TF_GRAPH_H
#define SLIM_INTEROP_TF_GRAPH_H

#include <slim/model.h>
#include <slim/slim.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interop/onnx.pb-c.h"

typedef struct slim__tfg slim__tfg;

typedef struct slim__tfg_opts {
    const char *output; /* the output node's name; NULL: the node nothing reads */
    /* out (may be NULL): what was dropped after the logits, "" when nothing */
    char *note;
    size_t note_size;
} slim__tfg_opts;

/* A GraphDef's bytes (file names it in messages) as an ONNX model. Errors
 * name the file and the node; ops slim cannot express are listed together
 * (SLIM_EUNSUPPORTED). */
slim_status slim__tfg_translate(const char *file, const uint8_t *buf, size_t len,
                                const slim__tfg_opts *o, slim__tfg **out, slim_error *err);
void slim__tfg_free(slim__tfg *t);
const Onnx__ModelProto *slim__tfg_model(const slim__tfg *t);
/* The scope every weight shares ("Lenet"), or NULL. */
const char *slim__tfg_root(const slim__tfg *t);
/* What was dropped after the logits ("ArgMax 'output'"), or "". */
const char *slim__tfg_note(const slim__tfg *t);

/* FILE.pb as a slim model (as slim__onnx_model_load for .onnx files): name
 * NULL takes the weights' shared scope, else the file's name. */
slim_status slim__tfg_model_load(slim_registry *reg, const char *path, const char *name,
                                 const slim__tfg_opts *o, const slim_model_opts *mo,
                                 slim_model **out, char **yaml_out, slim_error *err);

/* Whether path names a GraphDef (.pb). */
bool slim__tfg_is_graph_path(const char *path);

#endif
