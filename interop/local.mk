# interop/: other frameworks' files in and out. TensorFlow checkpoints (V1 tensor-slice
# tables, V2 bundles: tf_table.c, tf_checkpoint*.c) read behind
# runtime/ckpt_reader.h and written by `slimrun ckpt convert` and
# `train --save_format=tf`; frozen GraphDefs (tf_graph*.c) translated for the
# ONNX importer. tf_tensor.pb-c.[ch] and tf_checkpoint.pb-c.[ch]
# are generated from the .proto files here by protoc-c.

INTEROP_TF_PB = interop/tf_tensor.pb-c.c interop/tf_tensor.pb-c.h \
	interop/tf_checkpoint.pb-c.c interop/tf_checkpoint.pb-c.h \
	interop/tf_graph.pb-c.c interop/tf_graph.pb-c.h
EXTRA_DIST += interop/tf_tensor.proto interop/tf_checkpoint.proto interop/tf_graph.proto
BUILT_SOURCES += $(INTEROP_TF_PB)
CLEANFILES += $(INTEROP_TF_PB)

interop/tf_tensor.pb-c.c: $(top_srcdir)/interop/tf_tensor.proto
	$(AM_V_GEN)$(MKDIR_P) interop && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/interop --c_out=interop \
	  $(top_srcdir)/interop/tf_tensor.proto
interop/tf_checkpoint.pb-c.c: $(top_srcdir)/interop/tf_checkpoint.proto \
		$(top_srcdir)/interop/tf_tensor.proto
	$(AM_V_GEN)$(MKDIR_P) interop && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/interop --c_out=interop \
	  $(top_srcdir)/interop/tf_checkpoint.proto
interop/tf_graph.pb-c.c: $(top_srcdir)/interop/tf_graph.proto \
		$(top_srcdir)/interop/tf_tensor.proto
	$(AM_V_GEN)$(MKDIR_P) interop && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/interop --c_out=interop \
	  $(top_srcdir)/interop/tf_graph.proto
# One protoc-c run writes both files (Automake manual, "Multiple Outputs").
interop/tf_graph.pb-c.h: interop/tf_graph.pb-c.c
	@test -f $@ || { rm -f interop/tf_graph.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) interop/tf_graph.pb-c.c; }
interop/tf_tensor.pb-c.h: interop/tf_tensor.pb-c.c
	@test -f $@ || { rm -f interop/tf_tensor.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) interop/tf_tensor.pb-c.c; }
interop/tf_checkpoint.pb-c.h: interop/tf_checkpoint.pb-c.c
	@test -f $@ || { rm -f interop/tf_checkpoint.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) interop/tf_checkpoint.pb-c.c; }

nodist_libslim_core_la_SOURCES += $(INTEROP_TF_PB)
libslim_core_la_SOURCES += \
	interop/tf_table.c interop/tf_table.h \
	interop/tf_checkpoint.c interop/tf_checkpoint_v1.c interop/tf_checkpoint_write.c \
	interop/tf_checkpoint.h interop/tf_slices.c interop/tf_slices.h \
	interop/tf_graph.c interop/tf_graph_node.c interop/tf_graph_onnx.c interop/tf_graph_ops.c \
	interop/tf_graph.h interop/tf_graph_build.h

# ONNX models become slim graphs and model files (onnx_*.c); NumPy arrays are
# read and written (npy.c). This part uses the public API, the op registry and
# the DSL, never kernels. onnx.pb-c.[ch] are generated from the ONNX subset in
# onnx.proto by protoc-c.

INTEROP_PB = interop/onnx.pb-c.c interop/onnx.pb-c.h
EXTRA_DIST += interop/onnx.proto
BUILT_SOURCES += $(INTEROP_PB)
CLEANFILES += $(INTEROP_PB)

interop/onnx.pb-c.c: $(top_srcdir)/interop/onnx.proto
	$(AM_V_GEN)$(MKDIR_P) interop && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/interop --c_out=interop \
	  $(top_srcdir)/interop/onnx.proto
# One protoc-c run writes both files (Automake manual, "Multiple Outputs").
interop/onnx.pb-c.h: interop/onnx.pb-c.c
	@test -f $@ || { rm -f interop/onnx.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) interop/onnx.pb-c.c; }

nodist_libslim_core_la_SOURCES += $(INTEROP_PB)
libslim_core_la_SOURCES += \
	interop/onnx.h \
	interop/onnx_proto.c interop/onnx_proto.h interop/pb_explain.c interop/pb_explain.h \
	interop/onnx_build.c interop/onnx_build.h \
	interop/onnx_import.c \
	interop/onnx_fold.c \
	interop/onnx_ops_nn.c \
	interop/onnx_ops.c \
	interop/onnx_ops_tensor.c \
	interop/onnx_ops_shape.c \
	interop/onnx_ops_loss.c \
	interop/onnx_yaml.c \
	interop/onnx_model.c \
	interop/model_load.c \
	interop/onnx_export.c interop/onnx_export.h interop/onnx_export_int.h \
	interop/onnx_export_ops.c interop/onnx_export_build.c \
	interop/npy.c interop/npy.h
