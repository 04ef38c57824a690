# models/: the model zoo (TF-Slim architectures as YAML), installed where
# slim_model_find looks for them: $(pkgdatadir)/models.
modelsdir = $(pkgdatadir)/models
dist_models_DATA = \
	models/lenet.yaml models/cifarnet.yaml models/alexnet_v2.yaml \
	models/vgg_a.yaml models/vgg_16.yaml models/vgg_19.yaml \
	models/inception_v1.yaml models/inception_v2.yaml models/inception_v3.yaml \
	models/resnet_v1_50.yaml models/resnet_v1_101.yaml models/resnet_v1_152.yaml \
	models/resnet_v2_50.yaml models/resnet_v2_101.yaml models/resnet_v2_152.yaml \
	models/mobilenet_v1.yaml models/mobilenet_v2.yaml
modelscommondir = $(pkgdatadir)/models/common
dist_modelscommon_DATA = \
	models/common/inception.yaml models/common/resnet_arg_scope.yaml \
	models/common/resnet_v1.yaml models/common/resnet_v2.yaml
modelsexamplesdir = $(pkgdatadir)/models/examples
dist_modelsexamples_DATA = models/examples/resnet_cifar.yaml models/examples/resnet_fmnist.yaml
