// Package v1 holds the versioned (kubescheduler.config.k8s.io/v1) lockstep plugin args.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/lockstep-sched/lockstep/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
