/*
 * tests/fuzz/onnx_export.c - any bytes as a model file, built and exported to
 * ONNX (interop/onnx_export.c), the result read back and imported.
 *
 * What the DSL builds, the exporter must either write as a well-formed ONNX
 * model (it unpacks, every node has an op type) or refuse with a message;
 * never crash or leak. The import of the result must do the same. Each input
 * is exported at opset 13 with a dynamic batch and folded batch norms, or
 * (odd sizes) at opset 17 with a fixed batch, batch norms kept and an NHWC
 * input. Seeds: small models using every op the exporter maps, the zoo and
 * tests/dsl/good (most of the zoo exceeds the size limits and stops early).
 */
#include "dsl/dsl.h"
#include "interop/onnx.h"
#include "interop/onnx_export.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_model.h"

#include <stdlib.h>
#include <string.h>

static slim_registry *reg;

static int one(const uint8_t *data, size_t size)
{
    fuzz_model_registry(&reg, 1 << 16, 1 << 20, 2000);
    slim_model_opts mo = {.batch_size = 2, .weight_decay = -1};
    slim_model *m = NULL;
    slim_error err = {0};
    if (slim_model_load_string(reg, "fuzz.yaml", (const char *)data, size, &mo, &m, &err) !=
        SLIM_OK) {
        FUZZ_CHECK(err.msg[0], "a load error without a message");
        return 0;
    }
    slim_graph *g = slim_model_graph(m);
    bool odd = size & 1;
    slim__onnx_export_opts o = {.opset = odd ? 17 : 13,
                                .dynamic_batch = !odd,
                                .fold_batch_norm = !odd,
                                .input_nchw = !odd,
                                .input = "images",
                                .outputs = {"logits", "predictions"},
                                .output_names = {"logits", "probabilities"}};
    uint8_t *buf = NULL;
    size_t len = 0;
    slim_status st = slim_graph_init_params(g, 1, &err);
    if (st == SLIM_OK)
        st = slim__onnx_export(g, &o, &buf, &len, &err);
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "an export error without a message");
    FUZZ_CHECK(st != SLIM_OK || (buf && len), "an export without bytes");
    slim_model_free(m);
    if (st != SLIM_OK)
        return 0;
    Onnx__ModelProto *mp = NULL;
    st = slim__ox_model_unpack("export.onnx", buf, len, &mp, &err);
    FUZZ_CHECK(st == SLIM_OK, "the exported model does not unpack");
    slim__onnx_opts io = {.reg = reg, .root = "back", .model = true};
    slim__onnx_importer *imp = NULL;
    memset(&err, 0, sizeof err);
    st = slim__onnx_import(&io, mp, "export.onnx", &imp, &err);
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "an import error without a message");
    slim__onnx_import_free(imp);
    slim__ox_model_free(mp);
    free(buf);
    return 0;
}

/* Small models that use the ops the exporter maps, in the shapes it treats apart. */
static void seeds(fuzz_seeds *s)
{
    static const char *const models[] = {
        "name: a\nnum_classes: 3\nimage_size: 8\nchannels: 2\nlayers:\n"
        "  - conv2d: {name: c, num_outputs: 4, kernel_size: 3, stride: 2, normalizer: batch_norm}\n"
        "  - separable_conv2d: {name: s, num_outputs: 4, kernel_size: 3, depth_multiplier: 1}\n"
        "  - max_pool: {kernel_size: 2, stride: 1, padding: SAME}\n"
        "  - avg_pool: {kernel_size: 2, padding: VALID}\n"
        "  - flatten:\n"
        "  - dropout: {keep_prob: 0.5}\n"
        "  - fully_connected: {name: fc, num_outputs: 3, activation: none}\n",
        "name: b\nnum_classes: 3\nimage_size: 6\nchannels: 3\nlayers:\n"
        "  - conv2d: {name: c, num_outputs: 4, kernel_size: 1, activation: relu6}\n"
        "  - pad: {paddings: [0, 0, 1, 1, 1, 1, 0, 0], mode: REFLECT}\n"
        "  - lrn: {depth_radius: 1}\n"
        "  - hard_swish\n"
        "  - gelu\n"
        "  - batch_norm: {name: bn}\n"
        "  - reduce_mean: {axes: [1, 2]}\n"
        "  - fully_connected: {name: fc, num_outputs: 3, activation: none}\n",
        "name: c\nnum_classes: 2\nimage_size: 4\nchannels: 2\nlayers:\n"
        "  - conv2d: {name: c, num_outputs: 4, kernel_size: 3}\n"
        "  - transpose: {perm: [0, 3, 1, 2]}\n"
        "  - slice: {begin: [0, 1, 0, 0], size: [-1, 2, -1, -1]}\n"
        "  - reshape: {shape: [-1, 8, 4]}\n"
        "  - layer_norm: {name: ln}\n"
        "  - reduce_mean: {axes: [1], keep_dims: true}\n"
        "  - flatten:\n"
        "  - fully_connected: {name: fc, num_outputs: 2, activation: none}\n",
    };
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        fuzz_seed(s, (const uint8_t *)models[i], strlen(models[i]));
}

FUZZ_TARGET(onnx_export, .one = one, .seeds = seeds,
            .replay_dirs = {"tests/dsl/good", "models", "models/examples"}, .max_len = 4096)
