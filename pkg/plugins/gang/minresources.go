package gang

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// minResourcesShort says which resources of a PodGroup's minResources (scheduler-plugins'
// early whole-cluster feasibility check) the cluster cannot offer now: the free allocatable
// of every node (allocatable less what the pods on it request, assumed pods included), plus
// what the gang's own pods already hold, is compared with minResources. It returns "" when
// nothing is short or the group sets none. The sum over nodes is cheap next to a plan; the
// gang's own pods are looked for only when something is short.
func (pl *Gang) minResourcesShort(pod *v1.Pod, k podgroup.Key, min v1.ResourceList) (string, error) {
	if len(min) == 0 {
		return "", nil
	}
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return "", err
	}
	free := map[v1.ResourceName]int64{}
	for _, n := range nodes {
		for name := range min {
			if name == v1.ResourcePods {
				free[name] += int64(n.GetAllocatable().GetAllowedPodNumber() - len(n.GetPods()))
				continue
			}
			free[name] += amount(n.GetAllocatable(), name) - amount(n.GetRequested(), name)
		}
	}
	short := shortOf(min, free)
	if len(short) == 0 {
		return "", nil
	}
	// The gang's own pods (placed earlier, or bound members of a scheduled gang) hold part
	// of what it needs.
	for _, n := range nodes {
		for _, pi := range n.GetPods() {
			p := pi.GetPod()
			if p.UID == pod.UID {
				continue
			}
			if g, ok := pl.groups.GroupOf(p); !ok || g != k {
				continue
			}
			reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			for name := range min {
				q := reqs[name]
				switch name {
				case v1.ResourcePods:
					free[name]++
				case v1.ResourceCPU:
					free[name] += q.MilliValue()
				default:
					free[name] += q.Value()
				}
			}
		}
	}
	short = shortOf(min, free)
	if len(short) == 0 {
		return "", nil
	}
	return fmt.Sprintf("PodGroup %s needs minResources %s, more than the cluster has free (%s)", k.Name, strings.Join(short, ", "), freeOf(short, free)), nil
}

// shortOf returns the resources of min that free does not cover, sorted.
func shortOf(min v1.ResourceList, free map[v1.ResourceName]int64) []string {
	var out []string
	for name, q := range min {
		want := q.Value()
		if name == v1.ResourceCPU {
			want = q.MilliValue()
		}
		if free[name] < want {
			out = append(out, fmt.Sprintf("%s=%s", name, q.String()))
		}
	}
	sort.Strings(out)
	return out
}

// freeOf says how much of each short resource is free.
func freeOf(short []string, free map[v1.ResourceName]int64) string {
	var out []string
	for _, s := range short {
		name := v1.ResourceName(strings.SplitN(s, "=", 2)[0])
		v := free[name]
		if name == v1.ResourceCPU {
			out = append(out, fmt.Sprintf("%s %dm", name, v))
		} else {
			out = append(out, fmt.Sprintf("%s %d", name, v))
		}
	}
	return strings.Join(out, ", ")
}

// amount is a node resource's quantity in the unit minResources is compared in: millicores
// for cpu, the value otherwise.
func amount(r fwk.Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.GetMilliCPU()
	case v1.ResourceMemory:
		return r.GetMemory()
	case v1.ResourceEphemeralStorage:
		return r.GetEphemeralStorage()
	}
	return r.GetScalarResources()[name]
}
