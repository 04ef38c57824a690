# ops/: one file per op family, each defining const slim_op_desc slim__op_<name> (see ops.def).
libslim_core_la_SOURCES += \
	ops/ops.def \
	ops/conv.c ops/conv.h ops/conv_common.c ops/conv_ref.c ops/conv_ukr.h ops/act.h \
	ops/conv_gemm.c ops/conv_gemm_bwd.c ops/conv_gemm.h ops/conv_wino.c ops/conv_wino.h \
	ops/conv_pw.c ops/conv_pw.h ops/conv_dw.c ops/conv_dw.h \
	ops/conv_chain.c ops/conv_fuse.c \
	ops/pool.c \
	ops/fc.c ops/fc.h \
	ops/batch_norm.c \
	ops/activation.c \
	ops/softmax.c \
	ops/elementwise.c \
	ops/shape.c \
	ops/transpose.c \
	ops/reduce.c \
	ops/layer_norm.c \
	ops/dropout.c \
	ops/lrn.c \
	ops/loss.c \
	ops/optim.c ops/optim_common.h \
	ops/optim_adaptive.c \
	ops/grad.c
