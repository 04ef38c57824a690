/* engine/registry.h - op kinds by name and fusion rules; built-ins come from
 * ops/ops.def. */
#ifndef SLIM_ENGINE_REGISTRY_H
#define SLIM_ENGINE_REGISTRY_H

#include <slim/slim.h>

/* SLIM_KERNELS=ref in the environment forces the reference kernels. */
bool slim__force_ref(void);
/* The ONNX op type a plugin declared for op (slim_host.declare_onnx_op), or NULL:
 * slim_registry_onnx_op the other way round (the ONNX exporter's). */
const char *slim__registry_onnx_type(const slim_registry *reg, const char *op);

/* The ops the compiler adds on its own, by role; ops/ops.def says which. */
typedef enum {
    SLIM__ROLE_LOSS_SEED,    /* y = 1 in the loss's shape: d loss / d loss */
    SLIM__ROLE_GRADIENT_SUM, /* y = a + b, written over a: a gradient's contributions */
    SLIM__ROLE_GLOBAL_NORM,  /* (clip) -> scale, norm over a list of gradients */
    SLIM__N_ROLES
} slim__role;
const slim_op_desc *slim__role_op(slim__role role);

#endif
