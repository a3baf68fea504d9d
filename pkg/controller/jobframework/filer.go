package jobframework

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Filer tells the scheduler's group model which PodGroup a pod belongs to through its
// workload (filing.Workloads), by asking the adapters in turn: the first that claims the
// pod files it. Their order is the precedence: a JobSet's staged tree before a flat
// scheduler-plugins PodGroup (Kubeflow Trainer makes one PodGroup for a whole JobSet, its
// initializers included, which could never be all there at once), that PodGroup before a
// lone Job's gang (an MPI launcher is a Job, and a member of its MPIJob's PodGroup).
type Filer struct {
	Adapters []Adapter
	// Created says whether the workload controller runs, so that pods wait for the groups
	// it creates; when it is off they wait for nothing (and join groups created otherwise).
	Created bool
}

var (
	_ filing.Workloads      = Filer{}
	_ filing.FollowerShapes = Filer{}
)

// GroupOfJob implements filing.Workloads.
func (f Filer) GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (string, bool) {
	for _, a := range f.Adapters {
		if name, ok := a.GroupOfJob(job, schedulerNames); ok {
			return name, f.Created
		}
	}
	return "", false
}

// GroupOfPod implements filing.Workloads.
func (f Filer) GroupOfPod(pod *v1.Pod, job *batchv1.Job, schedulerNames sets.Set[string]) filing.Filing {
	for _, a := range f.Adapters {
		if pa, ok := a.(PodAdapter); ok {
			if fl, ok := pa.GroupOfPod(pod, schedulerNames); ok {
				fl.Created = fl.Created && f.Created
				return fl
			}
			continue
		}
		if job == nil {
			continue
		}
		if name, ok := a.GroupOfJob(job, schedulerNames); ok {
			return filing.Filing{Name: name, Created: f.Created}
		}
	}
	return filing.Filing{}
}

// Labelled implements filing.Workloads.
func (f Filer) Labelled(pod *v1.Pod) (string, bool) {
	for _, a := range f.Adapters {
		if pa, ok := a.(PodAdapter); ok {
			if object, ok := pa.Labelled(pod); ok {
				return object, true
			}
		}
	}
	return "", false
}

// HasSynced reports whether the adapters that the model waits for have synced.
func (f Filer) HasSynced() bool {
	for _, a := range f.Adapters {
		if s, ok := a.(Synced); ok && !s.HasSynced() {
			return false
		}
	}
	return true
}

// FollowerOf implements filing.FollowerShapes: the shape the first adapter that knows gives.
func (f Filer) FollowerOf(leader *v1.Pod) *v1.Pod {
	for _, a := range f.Adapters {
		if s, ok := a.(filing.FollowerShapes); ok {
			if p := s.FollowerOf(leader); p != nil {
				return p
			}
		}
	}
	return nil
}
