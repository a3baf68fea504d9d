package coscheduling

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusOf is the status scheduler-plugins' PodGroup controller would give pg, whose pods
// (every pod labelled with its name, in every phase) are pods, at now:
//
//	Pending     fewer than minMember pods exist
//	Scheduling  minMember pods exist (scheduleStartTime is set then), fewer run
//	Running     at least minMember run or succeeded
//	Failed      a pod failed, and minMember failed, run or succeeded
//	Finished    minMember succeeded
//
// Finished and Failed are final. These are the phases of scheduler-plugins' current API
// (v0.35, the version Kubeflow Trainer v2.3.0 uses), which has neither a Scheduled phase nor
// a scheduled count: writing either would fight its controller where both run. occupiedBy
// is filled when the group leaves Pending, as scheduler-plugins fills it.
func statusOf(pg *podGroup, pods []*v1.Pod, now metav1.Time) podGroupStatus {
	st := pg.Status
	if st.Phase == PhaseFinished || st.Phase == PhaseFailed {
		return st
	}
	st.Running, st.Succeeded, st.Failed = 0, 0, 0
	for _, pod := range pods {
		switch pod.Status.Phase {
		case v1.PodRunning:
			st.Running++
		case v1.PodSucceeded:
			st.Succeeded++
		case v1.PodFailed:
			st.Failed++
		}
	}
	min := max(pg.Spec.MinMember, 1)
	switch {
	case st.Succeeded >= min && len(pods) > 0:
		st.Phase = PhaseFinished
	case st.Failed > 0 && st.Failed+st.Running+st.Succeeded >= min:
		st.Phase = PhaseFailed
	case st.Running+st.Succeeded >= min && len(pods) > 0:
		st.Phase = PhaseRunning
	case int32(len(pods)) >= min && len(pods) > 0:
		st.Phase = PhaseScheduling
	default:
		st.Phase = PhasePending
	}
	if st.Phase != PhasePending && st.ScheduleStartTime.IsZero() {
		st.ScheduleStartTime = now
	}
	if st.OccupiedBy == "" && st.Phase != PhasePending && len(pods) > 0 {
		st.OccupiedBy = occupiedBy(pods[0])
	}
	return st
}

// occupiedBy names the owners of a member, as scheduler-plugins records who uses the group.
func occupiedBy(pod *v1.Pod) string {
	var refs []string
	for _, o := range pod.OwnerReferences {
		refs = append(refs, fmt.Sprintf("%s/%s", pod.Namespace, o.Name))
	}
	sort.Strings(refs)
	return strings.Join(refs, ",")
}
