/*
 * interop/onnx_ops.c - the table of ONNX op mappings: which function maps
 * each ONNX op type to slim layers (onnx_ops_nn.c, onnx_ops_loss.c,
 * onnx_ops_tensor.c, onnx_ops_shape.c). A new ONNX op = its function in the
 * file of its family + one line here.
 */
#include "interop/onnx_build.h"

#include <string.h>

static const struct {
    const char *op;
    ox_map_fn fn;
} ops[] = {
    {"Conv", ox_map_conv},
    {"MaxPool", ox_map_maxpool},
    {"AveragePool", ox_map_averagepool},
    {"GlobalAveragePool", ox_map_globalaveragepool},
    {"BatchNormalization", ox_map_batchnorm},
    {"LayerNormalization", ox_map_layernorm},
    {"LRN", ox_map_lrn},
    {"Gemm", ox_map_gemm},
    {"MatMul", ox_map_matmul},
    {"SoftmaxCrossEntropyLoss", ox_map_loss},
    {"NegativeLogLikelihoodLoss", ox_map_loss},
    {"Relu", ox_map_relu},
    {"LeakyRelu", ox_map_leakyrelu},
    {"Elu", ox_map_elu},
    {"Sigmoid", ox_map_sigmoid},
    {"Tanh", ox_map_tanh},
    {"HardSigmoid", ox_map_hardsigmoid},
    {"HardSwish", ox_map_hardswish},
    {"Gelu", ox_map_gelu},
    {"Clip", ox_map_clip},
    {"Softmax", ox_map_softmax},
    {"LogSoftmax", ox_map_logsoftmax},
    {"Concat", ox_map_concat},
    {"Add", ox_map_add},
    {"Mul", ox_map_mul},
    {"Sub", ox_map_sub},
    {"Div", ox_map_div},
    {"Neg", ox_map_neg},
    {"Pad", ox_map_pad},
    {"Flatten", ox_map_flatten},
    {"Reshape", ox_map_reshape},
    {"Squeeze", ox_map_squeeze},
    {"Unsqueeze", ox_map_unsqueeze},
    {"Transpose", ox_map_transpose},
    {"Slice", ox_map_slice},
    {"ReduceMean", ox_map_reducemean},
    {"Dropout", ox_map_dropout},
    {"Identity", ox_map_identity},
    {"Constant", ox_map_constant},
};

ox_map_fn ox_mapper(const char *op_type)
{
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(ops[i].op, op_type) == 0)
            return ops[i].fn;
    return NULL;
}

slim_status ox_map_node(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_map_fn fn = ox_mapper(n->op_type);
    if (!fn)
        return ox_unsup(b, "ONNX op %s has no slim equivalent", n->op_type);
    return fn(b, n);
}
