package jobframework

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Filer tells the scheduler's group model which PodGroup the pods of a Job belong to
// (podgroup.Workloads), by asking the adapters in turn.
type Filer struct {
	Adapters []Adapter
	// Created says whether the workload controller runs, so that pods wait for the groups
	// it creates; when it is off they wait for nothing (and join groups created otherwise).
	Created bool
}

// GroupOfJob implements podgroup.Workloads.
func (f Filer) GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (string, bool) {
	for _, a := range f.Adapters {
		if name, ok := a.GroupOfJob(job, schedulerNames); ok {
			return name, f.Created
		}
	}
	return "", false
}
