/*
 * tests/fuzz/dsl.c - any bytes as a model file (the DSL loader: YAML,
 * expressions, blocks, shape inference, the graph).
 *
 * Loading must return a status with a message, never crash, hang or leak. The
 * limits keep each input small: tiny parameters, no includes or plugins (no
 * file access). The zoo and tests/dsl/good, bad are replayed with the kept
 * inputs by `make check`.
 */
#include "dsl/dsl.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_model.h"

#include <stdlib.h>
#include <string.h>

static slim_registry *reg;

static int one(const uint8_t *data, size_t size)
{
    fuzz_model_registry(&reg, 1 << 16, 1 << 20, 2000);
    static const char *const defines[] = {"dropout_keep_prob=0.5"};
    for (int training = 0; training < 2; training++) {
        slim_model_opts o = {
            .batch_size = 2, .training = training, .weight_decay = -1, .label_smoothing = 0.1f};
        if (training) {
            o.defines = defines;
            o.n_defines = (size & 1) ? 1 : 0; /* sometimes a define, usually unused */
            o.num_classes = 7;
        }
        slim_model *m = NULL;
        slim_error err;
        slim_status st =
            slim_model_load_string(reg, "fuzz.yaml", (const char *)data, size, &o, &m, &err);
        if (st == SLIM_OK) {
            const slim_model_info *info = slim_model_get_info(m);
            for (int i = 0; i < slim_model_layer_count(m); i++)
                (void)slim_model_layer_at(m, i)->name[0];
            (void)info->name[0];
        } else if (!err.msg[0]) {
            abort(); /* every failure says why */
        }
        slim_model_free(m);
    }
    return 0;
}

FUZZ_TARGET(dsl, .one = one,
            .replay_dirs = {"tests/dsl/good", "tests/dsl/bad", "models", "models/common",
                            "models/examples"},
            .max_len = 4096)
