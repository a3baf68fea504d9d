package leaderworkerset

import (
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// The groups of one replica (one live leader):
//
//	without subgroups:  PodGroup <lws>-<index>-<hash of the leader's UID>, minCount = size,
//	                    lockstep's topology annotations on the LeaderWorkerSet (else LWS's
//	                    exclusive-topology, as a Required exclusive domain); with
//	                    startupPolicy LeaderReady or exclusive-topology, leaders 1: the
//	                    leader binds once the whole replica is planned, the workers' room is
//	                    held for them
//
//	with subGroupSize and the subgroup-exclusive-topology annotation:
//	  CompositePodGroup <lws>-<index>-<hash>  (minGroupCount = its subgroups; lockstep's topology)
//	  ├── PodGroup <...>-sg0  (minCount = the pods LWS puts in subgroup 0)  exclusive subgroup topology
//	  ├── PodGroup <...>-sg1  ...
//	  └── PodGroup <...>-leader (minCount 1; subGroupPolicyType LeaderExcluded only)
//
// Subgroups follow LWS's own assignment (its pod webhook, v0.7.0): with subGroupSize n and
// size s, worker w is in subgroup (w−1)/n when s−1 is a multiple of n, else w/n; the leader
// is in subgroup 0 unless the policy type is LeaderExcluded. Each subgroup takes a domain of
// the subgroup-exclusive-topology key to itself, as LWS's pod affinities ask.

const (
	templateGroup    = "replica"
	templateLeader   = "leader"
	templateSubgroup = "subgroup"
)

// leaderTemplate is the pod template of the leaders (the workers' when none is given).
func leaderTemplate(lws *leaderWorkerSet) *v1.PodTemplateSpec {
	if t := lws.Spec.LeaderWorkerTemplate.LeaderTemplate; t != nil {
		return t
	}
	return &lws.Spec.LeaderWorkerTemplate.WorkerTemplate
}

func size(lws *leaderWorkerSet) int32 {
	return max(ptr.Deref(lws.Spec.LeaderWorkerTemplate.Size, 1), 1)
}

// leaderFirst reports whether LWS makes a replica's workers only once its leader is ready
// (startupPolicy LeaderReady) or scheduled (the exclusive-topology annotation): the replica's
// PodGroup then lets its leader bind first (gang.leaders 1), its workers planned with it and
// their room held until they come.
func leaderFirst(lws *leaderWorkerSet) bool {
	return size(lws) > 1 && (lws.Spec.StartupPolicy == LeaderReady || lws.Annotations[AnnotationExclusiveTopology] != "")
}

// gangs reports whether the pods of lws are filed under its groups: its leaders use a
// profile of lockstep, and Groups makes groups for it.
func gangs(lws *leaderWorkerSet, schedulerNames sets.Set[string]) bool {
	return schedulerNames.Has(leaderTemplate(lws).Spec.SchedulerName) &&
		!filing.NamesGroup(leaderTemplate(lws)) && !filing.NamesGroup(&lws.Spec.LeaderWorkerTemplate.WorkerTemplate)
}

// subgroups returns the sizes of the subgroups LWS makes of a replica and whether the leader
// is in none, nil when the replica is one flat group (no subGroupSize, no
// subgroup-exclusive-topology to place them by, or a replica whose leader starts first: its
// subgroups are placed by LWS's own pod affinities as its workers come).
func subgroups(lws *leaderWorkerSet) (sizes []int32, leaderExcluded bool) {
	p := lws.Spec.LeaderWorkerTemplate.SubGroupPolicy
	if p == nil || ptr.Deref(p.SubGroupSize, 0) <= 0 || lws.Annotations[AnnotationSubGroupExclusiveTopology] == "" || leaderFirst(lws) {
		return nil, false
	}
	n, s := *p.SubGroupSize, size(lws)
	leaderExcluded = p.Type == LeaderExcluded
	add := func(i int32) {
		for int32(len(sizes)) <= i {
			sizes = append(sizes, 0)
		}
		sizes[i]++
	}
	if !leaderExcluded {
		add(0)
	}
	for w := int32(1); w < s; w++ {
		if (s-1)%n == 0 {
			add((w - 1) / n)
		} else {
			add(w / n)
		}
	}
	return sizes, leaderExcluded
}

func subgroupName(base string, i int) string { return base + "-sg" + strconv.Itoa(i) }
func leaderName(base string) string          { return base + "-leader" }

// memberGroup is the PodGroup a pod of the replica whose group is base belongs to: base
// itself, or its subgroup's.
func memberGroup(base string, lws *leaderWorkerSet, pod *v1.Pod) string {
	sizes, _ := subgroups(lws)
	if sizes == nil {
		return base
	}
	i, err := strconv.Atoi(pod.Labels[LabelSubGroupIndex])
	if err != nil {
		return leaderName(base) // a leader the policy leaves out
	}
	return subgroupName(base, i)
}

// treeOf returns the groups of every live leader's replica.
func treeOf(lws *leaderWorkerSet, leaders []*v1.Pod) (*jobframework.Groups, []string) {
	topology, problems := filing.TopologyFromAnnotations(lws.Annotations)
	if key := lws.Annotations[AnnotationExclusiveTopology]; key != "" && len(topology) == 0 {
		// LWS's one replica per domain: a Required, exclusive domain of that level.
		c, bad := filing.TopologyFromAnnotations(map[string]string{v1alpha1.JobTopologyRequiredAnnotation: key})
		if len(bad) > 0 {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not a label key; ignored", AnnotationExclusiveTopology, key))
		} else {
			c[0].Exclusive = true
			topology = c
		}
	}
	var first int32
	var followersTimeout *int32
	if leaderFirst(lws) {
		first = 1
		if v, ok := lws.Annotations[v1alpha1.FollowersTimeoutAnnotation]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
				problems = append(problems, fmt.Sprintf("annotation %s=%q is not a positive number of seconds; the default applies", v1alpha1.FollowersTimeoutAnnotation, v))
			} else {
				followersTimeout = ptr.To(int32(n))
			}
		}
	}
	priority := leaderTemplate(lws).Spec.PriorityClassName
	s := size(lws)
	out := &jobframework.Groups{Workload: filing.JobGroupName(lws.Name, lws.UID)}
	sizes, leaderExcluded := subgroups(lws)
	var exclusive []v1alpha1.TopologyConstraint
	if sizes != nil {
		c, bad := filing.TopologyFromAnnotations(map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lws.Annotations[AnnotationSubGroupExclusiveTopology]})
		if len(bad) > 0 {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not a label key; subgroups are not placed apart",
				AnnotationSubGroupExclusiveTopology, lws.Annotations[AnnotationSubGroupExclusiveTopology]))
			sizes = nil
		} else {
			c[0].Exclusive = true
			exclusive = c
		}
	}
	constraints := (jobframework.Group{Topology: topology}).Constraints()
	if sizes == nil {
		out.Spec.PodGroupTemplates = []v1alpha1.PodGroupTemplate{{Name: templateGroup,
			SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: s, Leaders: first, FollowersTimeoutSeconds: followersTimeout}},
			SchedulingConstraints: constraints, PriorityClassName: priority}}
	} else {
		children := int32(len(sizes))
		if leaderExcluded {
			children++
		}
		tmpl := v1alpha1.CompositePodGroupTemplate{Name: templateGroup,
			SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: children}},
			SchedulingConstraints: constraints, PriorityClassName: priority,
			PodGroupTemplates: []v1alpha1.PodGroupTemplate{{Name: templateSubgroup,
				SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: sizes[0]}},
				SchedulingConstraints: (jobframework.Group{Topology: exclusive}).Constraints(), PriorityClassName: priority}}}
		if leaderExcluded {
			tmpl.PodGroupTemplates = append(tmpl.PodGroupTemplates, v1alpha1.PodGroupTemplate{Name: templateLeader,
				SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 1}}, PriorityClassName: priority})
		}
		out.Spec.CompositePodGroupTemplates = []v1alpha1.CompositePodGroupTemplate{tmpl}
	}
	leaders = append([]*v1.Pod(nil), leaders...)
	sort.Slice(leaders, func(i, j int) bool { return leaders[i].Name < leaders[j].Name })
	for _, leader := range leaders {
		base := GroupName(lws.Name, leader.Labels[LabelGroupIndex], leader.UID)
		if sizes == nil {
			out.PodGroups = append(out.PodGroups, jobframework.Group{Name: base, Template: templateGroup, Min: s, Leaders: first,
				FollowersTimeoutSeconds: followersTimeout, Topology: topology, PriorityClassName: priority})
			continue
		}
		root := jobframework.Group{Name: base, Template: templateGroup, Min: int32(len(sizes)), Topology: topology, PriorityClassName: priority}
		if leaderExcluded {
			root.Min++
			out.PodGroups = append(out.PodGroups, jobframework.Group{Name: leaderName(base), Parent: base, Template: templateLeader, Min: 1, PriorityClassName: priority})
		}
		out.Composites = append(out.Composites, root)
		for i, n := range sizes {
			out.PodGroups = append(out.PodGroups, jobframework.Group{Name: subgroupName(base, i), Parent: base, Template: templateSubgroup,
				Min: n, Topology: exclusive, PriorityClassName: priority})
		}
	}
	return out, problems
}
