/*
 * tests/fuzz/tfgraph.c - any bytes as a frozen TensorFlow GraphDef
 * (interop/tf_graph*.c): read, checked and translated into an ONNX model,
 * which the ONNX importer then imports as an image classifier (NHWC input),
 * writes as a model file and builds through the DSL with the graph's weights
 * as initial values. data[0] & 1: the output named "output" (--output_node)
 * instead of found.
 *
 * Every failure must be a status with a message naming the file; nothing may
 * crash, leak or allocate without bound. Seeds: the GraphDefs of
 * ../shared/data/tfckpt (dl4j's conv_0, TensorFlow's multi_add and the
 * reference graphs without weights) and regress/tfgraph/ (graphs of every
 * mapped op, written by tests/interop/test_tfgraph.c).
 */
#include "dsl/dsl.h"
#include "interop/onnx.h"
#include "interop/tf_graph.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_model.h"

#include <stdlib.h>
#include <string.h>

static slim_registry *reg;

static int one(const uint8_t *data, size_t size)
{
    fuzz_model_registry(&reg, 1 << 22, 1 << 24, 5000);
    if (size < 1)
        return 0;
    char note[200];
    slim__tfg_opts o = {
        .output = data[0] & 1 ? "output" : NULL, .note = note, .note_size = sizeof note};
    slim__tfg *t = NULL;
    slim_error err = {0};
    slim_status st = slim__tfg_translate("fuzz.pb", data + 1, size - 1, &o, &t, &err);
    FUZZ_CHECK(st == SLIM_OK || strncmp(err.msg, "fuzz.pb", 7) == 0,
               "a translation error not naming the file: %s", err.msg);
    if (st != SLIM_OK)
        return 0;
    const char *root = slim__tfg_root(t);
    slim__onnx_opts oo = {
        .reg = reg, .root = root ? root : "fuzz", .model = true, .input_nhwc = true};
    slim_model_opts mo = {.batch_size = 2, .weight_decay = -1};
    slim_model *sm = NULL;
    st = slim__onnx_model_build(&oo, slim__tfg_model(t), "fuzz.pb", &mo, &sm, NULL, &err);
    slim_model_free(sm);
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "an import error without a message");
    slim__tfg_free(t);
    return 0;
}

static void seeds(fuzz_seeds *s)
{
    static const char *const files[] = {
        "tfckpt/dl4j-tf-graphs/conv_0/frozen_model.pb",
        "tfckpt/tf-core-v2/lite/multi_add.pb",
        "tfckpt/tf-models-reference/reference_data_test/dense/expected_graph",
        "tfckpt/tf-models-reference/resnet/batch_norm/expected_graph",
        "tfckpt/tf-models-reference/resnet/"
        "batch-size-32_building_version-1_width-8_channels-4/expected_graph",
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        size_t n;
        uint8_t *b = fuzz_read_file(fuzz_shared(files[i], path, sizeof path), &n);
        if (b && n <= 65536) {
            fuzz_seed_opt(s, 0, b, n);
            fuzz_seed_opt(s, 1, b, n);
        }
        free(b);
    }
}

FUZZ_TARGET(tfgraph, .one = one, .seeds = seeds, .max_len = 65536)
