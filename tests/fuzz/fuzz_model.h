/*
 * tests/fuzz/fuzz_model.h - the registry of a harness that builds models
 * (dsl, onnx, onnx_export, tfgraph): made on the first input, when the
 * DSL's limits are set to the harness's (small parameters, no files).
 */
#ifndef SLIM_TESTS_FUZZ_FUZZ_MODEL_H
#define SLIM_TESTS_FUZZ_FUZZ_MODEL_H

#include "dsl/dsl.h"

#include <stdlib.h>

static inline void fuzz_model_registry(slim_registry **reg, int64_t max_param_elems,
                                       int64_t max_total_elems, int64_t max_layers)
{
    if (!*reg) {
        slim_error err;
        if (slim_registry_new(reg, &err) != SLIM_OK)
            abort();
        slim__dsl_limits = (dsl_limits){.max_param_elems = max_param_elems,
                                        .max_total_elems = max_total_elems,
                                        .max_layers = max_layers,
                                        .max_depth = 16,
                                        .no_files = true};
    }
}

#endif /* SLIM_TESTS_FUZZ_FUZZ_MODEL_H */
