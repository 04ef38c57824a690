/*
 * tests/fuzz/onnx.c - any bytes as an ONNX model (interop/): imported as an
 * image classifier (model mode), its model file written and built by the DSL
 * with the file's weights as initial values; and imported directly with
 * zero-filled values for its graph inputs (the conformance runner's way,
 * which reaches every op mapping, the losses included).
 *
 * Every failure must be a status with a message; nothing may crash, leak or
 * allocate without bound (the importer's folding has its own limits; the
 * DSL's are set small here). Seeds: the node cases of Debian's
 * libonnx-testdata (ONNX's own small models of one op each).
 */
#include "dsl/dsl.h"
#include "interop/onnx.h"
#include "interop/onnx_build.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_model.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static slim_registry *reg;

/* The graph inputs (not initializers) as zero tensors of their declared dims
 * (unknown or large dims: 1 and 4; at most rank 4), at most n. */
static int zero_inputs(const Onnx__ModelProto *m, slim__ox_tensor *t, int n)
{
    const Onnx__GraphProto *g = m->graph;
    int k = 0;
    for (size_t i = 0; i < g->n_input && k < n; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        bool init = false;
        for (size_t j = 0; j < g->n_initializer && !init; j++)
            init =
                vi->name && g->initializer[j]->name && !strcmp(vi->name, g->initializer[j]->name);
        if (init)
            continue;
        int64_t d[SLIM__OX_MAX_DIMS];
        int r = 0;
        const Onnx__TypeProto *tp = vi->type;
        const Onnx__TypeProto__Tensor *tt =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
        if (tt && tt->shape)
            for (size_t j = 0; j < tt->shape->n_dim && r < 4; j++) {
                const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[j];
                int64_t v = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                                ? dm->dim_value
                                : 1;
                d[r++] = v >= 1 && v <= 8 ? v : 4;
            }
        bool fl = !(tt && tt->has_elem_type && !slim__ox_elem_is_float(tt->elem_type));
        if (!slim__ox_tensor_alloc(&t[k], fl, r, d))
            break;
        k++;
    }
    return k;
}

static int one(const uint8_t *data, size_t size)
{
    fuzz_model_registry(&reg, 1 << 22, 1 << 24, 5000);
    Onnx__ModelProto *m = NULL;
    slim_error err = {0};
    if (slim__ox_model_unpack("fuzz.onnx", data, size, &m, &err) != SLIM_OK) {
        FUZZ_CHECK(err.msg[0], "an unpack error without a message");
        return 0;
    }
    /* model mode, then the model file through the DSL */
    slim__onnx_opts o = {.reg = reg, .root = "fuzz", .model = true};
    slim_model_opts mo = {.batch_size = 2, .weight_decay = -1};
    slim_model *sm = NULL;
    slim_status st = slim__onnx_model_build(&o, m, "fuzz.onnx", &mo, &sm, NULL, &err);
    slim_model_free(sm);
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "an import error without a message");
    /* every graph input given values: the graph built directly */
    slim__ox_tensor in[8];
    int n_in = zero_inputs(m, in, 8);
    slim__onnx_opts c = {.reg = reg, .inputs = in, .n_inputs = n_in};
    memset(&err, 0, sizeof err);
    slim__onnx_importer *imp = NULL;
    st = slim__onnx_import(&c, m, "fuzz.onnx", &imp, &err);
    FUZZ_CHECK(st == SLIM_OK || err.msg[0], "an import error without a message");
    slim__onnx_import_free(imp);
    for (int i = 0; i < n_in; i++)
        slim__ox_tensor_fini(&in[i]);
    slim__ox_model_free(m);
    return 0;
}

/* ONNX's node cases, where Debian's libonnx-testdata is installed. */
static void seeds(fuzz_seeds *s)
{
    static const char dir[] = "/usr/share/libonnx-testdata/data/node";
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, de->d_name);
        size_t n;
        uint8_t *b = fuzz_read_file(path, &n);
        if (b && n <= 65536)
            fuzz_seed(s, b, n);
        free(b);
    }
    closedir(d);
}

FUZZ_TARGET(onnx, .one = one, .seeds = seeds, .max_len = 65536)
