// Package config holds the internal types of lockstep's plugin args. They are registered in
// the kube-scheduler's own config scheme (group kubescheduler.config.k8s.io), so that the
// scheduler decodes, defaults and converts them like the in-tree plugins' args.
//
// +k8s:deepcopy-gen=package
package config
