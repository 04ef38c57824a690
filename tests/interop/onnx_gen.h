/* tests/interop/onnx_gen.h - building small ONNX models in C for the tests:
 * graph inputs and outputs, initializers, nodes with attributes, packed to
 * ModelProto bytes. Everything is owned by the gen and freed with it. */
#ifndef SLIM_TESTS_ONNX_GEN_H
#define SLIM_TESTS_ONNX_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "interop/onnx.pb-c.h"

typedef struct gen gen;

gen *gen_new(int64_t opset);
void gen_free(gen *g);
/* A float graph input of these dims (dim -1: a symbolic "batch"). */
void gen_input(gen *g, const char *name, int rank, const int64_t *dims);
void gen_output(gen *g, const char *name);
/* Initializers: float data (raw_data), or int64 data. */
void gen_init(gen *g, const char *name, int rank, const int64_t *dims, const float *data);
void gen_init_i64(gen *g, const char *name, int rank, const int64_t *dims, const int64_t *data);
/* A node: inputs and outputs as comma-separated names ("x,w,b"; "" = none). */
Onnx__NodeProto *gen_node(gen *g, const char *op, const char *name, const char *inputs,
                          const char *outputs);
void gen_attr_int(gen *g, Onnx__NodeProto *n, const char *name, int64_t v);
void gen_attr_float(gen *g, Onnx__NodeProto *n, const char *name, float v);
void gen_attr_ints(gen *g, Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v);
void gen_attr_str(gen *g, Onnx__NodeProto *n, const char *name, const char *v);
/* The model's bytes (malloc'd) and the same written to a file (0 on success). */
uint8_t *gen_pack(gen *g, size_t *len);
int gen_write(gen *g, const char *path);
/* The model itself (owned by g). */
Onnx__ModelProto *gen_model(gen *g);

#endif
