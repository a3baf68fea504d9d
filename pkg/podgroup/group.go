package podgroup

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// group is the model's entry for one PodGroup or CompositePodGroup. An entry exists while the
// object exists, or pods name it, or children name it as their parent, so that pods and
// children created before their group are counted the moment it appears.
type group struct {
	key Key
	pg  *v1alpha1.PodGroup          // set when key.Kind is KindPodGroup and the object exists
	cpg *v1alpha1.CompositePodGroup // set when key.Kind is KindCompositePodGroup and it exists

	// children are the groups whose parentCompositePodGroupName names this group.
	children sets.Set[Key]

	// members are the non-terminated pods of a PodGroup, by UID.
	members  map[types.UID]*member
	assumed  int // members assumed (reserved) and not yet bound
	bound    int // members with a node
	failed   int // members that failed this round and are neither assumed nor bound
	problem  string
	wasReady bool // path ready by known pods at the last refresh: flips activate gated pods

	// scheduled is set once the group's requirement was met (condition True, terminal).
	scheduled bool
	// failure is the message of the last failed attempt; cleared when scheduled.
	failure string
}

// member is one pod of a PodGroup.
type member struct {
	pod       *v1.Pod
	bound     bool
	assumed   bool
	node      string // the node an assumed member reserved
	failed    bool
	waitStart time.Time // when the pod started waiting at Permit; zero when not waiting
}

func newGroup(key Key) *group {
	g := &group{key: key, children: sets.New[Key]()}
	if key.Kind == KindPodGroup {
		g.members = map[types.UID]*member{}
	}
	return g
}

// exists reports whether the group's object has been observed.
func (g *group) exists() bool {
	return g.pg != nil || g.cpg != nil
}

// empty reports whether nothing refers to the group any more.
func (g *group) empty() bool {
	return !g.exists() && len(g.children) == 0 && len(g.members) == 0
}

// parentName returns the name of the parent CompositePodGroup, if any.
func (g *group) parentName() (string, bool) {
	var p *string
	switch {
	case g.pg != nil:
		p = g.pg.Spec.ParentCompositePodGroupName
	case g.cpg != nil:
		p = g.cpg.Spec.ParentCompositePodGroupName
	}
	if p == nil || *p == "" {
		return "", false
	}
	return *p, true
}

// parentKey returns the key of the parent, if the group names one.
func (g *group) parentKey() (Key, bool) {
	name, ok := g.parentName()
	if !ok {
		return Key{}, false
	}
	return CompositePodGroupKey(g.key.Namespace, name), true
}

// minimum is minCount for a PodGroup, minGroupCount for a CompositePodGroup; 1 for basic.
func (g *group) minimum() int {
	switch {
	case g.pg != nil && g.pg.Spec.SchedulingPolicy.Gang != nil:
		return int(g.pg.Spec.SchedulingPolicy.Gang.MinCount)
	case g.cpg != nil && g.cpg.Spec.SchedulingPolicy.Gang != nil:
		return int(g.cpg.Spec.SchedulingPolicy.Gang.MinGroupCount)
	}
	return 1
}

// isGang reports whether the group has the gang policy.
func (g *group) isGang() bool {
	return (g.pg != nil && g.pg.Spec.SchedulingPolicy.Gang != nil) ||
		(g.cpg != nil && g.cpg.Spec.SchedulingPolicy.Gang != nil)
}

// creationTime of the group object; zero if not observed.
func (g *group) creationTime() time.Time {
	switch {
	case g.pg != nil:
		return g.pg.CreationTimestamp.Time
	case g.cpg != nil:
		return g.cpg.CreationTimestamp.Time
	}
	return time.Time{}
}

// topology returns the group's topology constraints.
func (g *group) topology() []v1alpha1.TopologyConstraint {
	var c *v1alpha1.SchedulingConstraints
	switch {
	case g.pg != nil:
		c = g.pg.Spec.SchedulingConstraints
	case g.cpg != nil:
		c = g.cpg.Spec.SchedulingConstraints
	}
	if c == nil {
		return nil
	}
	return c.Topology
}

// scheduleTimeout is the PodGroup's spec.scheduleTimeoutSeconds, if set.
func (g *group) scheduleTimeout() (time.Duration, bool) {
	if g.pg == nil || g.pg.Spec.ScheduleTimeoutSeconds == nil {
		return 0, false
	}
	return time.Duration(*g.pg.Spec.ScheduleTimeoutSeconds) * time.Second, true
}

// Counters of a PodGroup, by question asked.

func (g *group) known() int      { return len(g.members) }
func (g *group) scheduledN() int { return g.assumed + g.bound }
func (g *group) possible() int   { return len(g.members) - g.failed }
func (g *group) boundN() int     { return g.bound }

// setMember records the state change of one member and keeps the counters in step.
func (g *group) setMember(uid types.UID, update func(m *member)) {
	m, ok := g.members[uid]
	if !ok {
		return
	}
	g.count(m, -1)
	update(m)
	g.count(m, +1)
}

func (g *group) addMember(m *member) {
	g.members[m.pod.UID] = m
	g.count(m, +1)
}

func (g *group) removeMember(uid types.UID) (*member, bool) {
	m, ok := g.members[uid]
	if !ok {
		return nil, false
	}
	g.count(m, -1)
	delete(g.members, uid)
	return m, true
}

func (g *group) count(m *member, d int) {
	switch {
	case m.bound:
		g.bound += d
	case m.assumed:
		g.assumed += d
	case m.failed:
		g.failed += d
	}
}
