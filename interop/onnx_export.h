/*
 * interop/onnx_export.h - slim graphs out as ONNX inference models.
 *
 * The exporter walks a built graph (a model file's or an imported model's,
 * its parameters restored) back from the tensors asked for (the logits and
 * the softmax "predictions") and writes one ONNX node or a few for every
 * slim node on the way, in the graph's order:
 *
 *   - layouts: slim computes in NHWC, ONNX's Conv, pooling, LRN and
 *     BatchNormalization in NCHW. Every 4-D value is kept in whichever
 *     layout its producer gives (convolutions: NCHW); an op that needs the
 *     other gets one Transpose, shared by every such consumer. Ops that work
 *     on any layout (activations, add, concat, pad, softmax, squeeze,
 *     reduce_mean, slice, transpose) have their axes renumbered instead.
 *     Flattening an NCHW value is done in slim's (NHWC) order, so the
 *     fully connected weights after it stay as they are.
 *   - parameters become initializers under their own names, filters in
 *     ONNX's (O, I, KH, KW) order;
 *   - inference: dropout is dropped, batch norm uses the moving statistics,
 *     folded into the convolution or fully connected layer before it when
 *     that layer feeds nothing else (fold_batch_norm), BatchNormalization
 *     otherwise;
 *   - padding: SAME and VALID become the explicit pads they mean (TensorFlow's
 *     SAME puts the odd pixel bottom/right), so any runtime agrees;
 *   - dynamic batch: the batch dimension is the symbol "N"; a reshape keeps
 *     it with the dimension 0 ("copy"), and an op that would move or cut
 *     the batch axis is an error asking for a fixed batch.
 *
 * An op with no ONNX counterpart (a loss, an optimizer update, a plugin op
 * that declared no ONNX op type) is an error (SLIM_EUNSUPPORTED) that lists
 * every such node with its op. A plugin op that declared an ONNX op type
 * (slim_host.declare_onnx_op) is written as that op type, its attributes as
 * ONNX attributes of the same names.
 */
#ifndef SLIM_INTEROP_ONNX_EXPORT_H
#define SLIM_INTEROP_ONNX_EXPORT_H

#include <slim/slim.h>

#include <stddef.h>
#include <stdint.h>

#define SLIM__ONNX_EXPORT_MIN_OPSET 13
#define SLIM__ONNX_EXPORT_MAX_OPSET 21

typedef struct slim__onnx_export_opts {
    int opset;            /* 13..21; 0 = 13 */
    bool dynamic_batch;   /* the batch dimension as the symbol "N" */
    bool fold_batch_norm; /* into the conv / fully_connected before it where possible */
    bool input_nchw;      /* the ONNX input is (N,C,H,W); otherwise slim's (N,H,W,C) */
    const char *input;    /* the graph input to export ("images") */
    /* the graph tensors that become the ONNX outputs, and their ONNX names
     * (logits -> "logits", predictions -> "probabilities"); NULL ends early */
    const char *outputs[4];
    const char *output_names[4];
    const char *graph_name; /* the ONNX graph's name (the model's); NULL: "slim" */
    const char *doc;        /* the model's doc_string (where it came from); may be NULL */
} slim__onnx_export_opts;

/* g's inference graph as a serialized ONNX ModelProto (malloc'd, *len bytes). */
slim_status slim__onnx_export(const slim_graph *g, const slim__onnx_export_opts *o, uint8_t **buf,
                              size_t *len, slim_error *err);
/* The same, written to path (streamed: no second copy of the weights in memory). */
slim_status slim__onnx_export_file(const slim_graph *g, const slim__onnx_export_opts *o,
                                   const char *path, slim_error *err);

#endif
