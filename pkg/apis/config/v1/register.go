package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1.
var SchemeGroupVersion = schedconfigv1.SchemeGroupVersion

var (
	// localSchemeBuilder is the kube-scheduler's v1 scheme builder: registering our args there
	// makes the scheduler's own plugin-args conversion scheme know them too.
	localSchemeBuilder = &schedconfigv1.SchemeBuilder
	// AddToScheme registers the v1 types, their defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
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
	// Generated functions register themselves in the zz_generated files.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs)
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
