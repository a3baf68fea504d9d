package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of the kube-scheduler config group.
var SchemeGroupVersion = schedconfig.SchemeGroupVersion

var (
	// SchemeBuilder is the kube-scheduler's internal scheme builder, extended with our types.
	SchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme registers the internal types.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&LockstepGangArgs{},
		&LockstepTopologyArgs{},
		&LockstepBindArgs{},
	)
	return nil
}

func init() {
	SchemeBuilder.Register(addKnownTypes)
}
