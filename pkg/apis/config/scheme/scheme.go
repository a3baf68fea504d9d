// Package scheme adds lockstep's plugin args to the kube-scheduler's config scheme. Import it
// (the scheduler binary and tests do) before the scheduler decodes its configuration.
package scheme

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
)

// Scheme is the kube-scheduler's config scheme, with lockstep's args registered.
var Scheme = kubeschedulerscheme.Scheme

func init() {
	utilruntime.Must(config.AddToScheme(Scheme))
	utilruntime.Must(configv1.AddToScheme(Scheme))
}
