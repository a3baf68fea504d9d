package podgroup

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods of other schedulers whose spec.schedulingGroup names a native group the model reads
// (kube-scheduler with the workload gates on places them) are no members of it — lockstep
// never schedules them, and never judges or writes their group — but they run as its gang:
// lockstep's preemptors take them whole or not at all, as upstream's own preemption does. The
// model keeps them apart, by group, from the pod informer.
type foreign struct {
	byGroup map[Key]map[types.UID]*v1.Pod
	groupOf map[types.UID]Key
}

func newForeign() *foreign {
	return &foreign{byGroup: map[Key]map[types.UID]*v1.Pod{}, groupOf: map[types.UID]Key{}}
}

// put records pod as a pod of native group k.
func (f *foreign) put(pod *v1.Pod, k Key) {
	if was, ok := f.groupOf[pod.UID]; ok && was != k {
		f.remove(pod.UID)
	}
	pods := f.byGroup[k]
	if pods == nil {
		pods = map[types.UID]*v1.Pod{}
		f.byGroup[k] = pods
	}
	pods[pod.UID] = pod
	f.groupOf[pod.UID] = k
}

// remove forgets a pod.
func (f *foreign) remove(uid types.UID) {
	k, ok := f.groupOf[uid]
	if !ok {
		return
	}
	delete(f.groupOf, uid)
	if pods := f.byGroup[k]; pods != nil {
		delete(pods, uid)
		if len(pods) == 0 {
			delete(f.byGroup, k)
		}
	}
}

// fileForeignLocked keeps pod among the foreign pods of the native group it names, if it is
// one (of another scheduler, live, naming a native group the model reads), else forgets it.
func (m *Model) fileForeignLocked(pod *v1.Pod) {
	if k, ok := NativeGroupOf(pod); ok && m.nativeKinds.Has(KindPodGroup) && !m.servesLocked(pod) && !terminated(pod) {
		m.foreign.put(pod, k)
		return
	}
	m.foreign.remove(pod.UID)
}

// runningGroupLocked returns the group of a running pod: its member's, or the native group
// of a foreign pod.
func (m *Model) runningGroupLocked(pod *v1.Pod) (Key, bool) {
	if mem := m.members.Of(pod.UID); mem != nil {
		return mem.Group, true
	}
	k, ok := m.foreign.groupOf[pod.UID]
	return k, ok
}
