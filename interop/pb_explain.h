/*
 * interop/pb_explain.h - why protobuf-c refused a buffer, with the offset.
 *
 * protobuf-c's unpack says only "no". When it does, slim__pb_explain walks
 * the same bytes through the message's descriptor and finds the first
 * defect protobuf-c rejects: a cut-off or over-long varint, a length past
 * the end of its message, a wire type that is no wire type (or a group), a
 * known field of the wrong wire type, a packed array of a size no element
 * count fits, a missing required field, a string that is not UTF-8. It
 * names the offset in the file and the field path, for example
 * "offset 1234 (graph.node[12].attribute[0].t): a length of 4000 bytes runs
 * past the end of its message (offset 1300)".
 */
#ifndef SLIM_INTEROP_PB_EXPLAIN_H
#define SLIM_INTEROP_PB_EXPLAIN_H

#include <protobuf-c/protobuf-c.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting slim__pb_explain follows; deeper messages are not examined. */
#define SLIM__PB_MAX_DEPTH 100

/* The first defect of buf (len bytes) as a message d, written into out (n
 * bytes, NUL-terminated); false when the walk finds none (out then holds
 * ""). */
bool slim__pb_explain(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                      char *out, size_t n);

#endif
