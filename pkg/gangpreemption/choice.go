package gangpreemption

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Cost orders the domains a tree could be freed in.
type Cost struct {
	Priority         int32 // highest victim priority
	Gangs, Pods, PDB int
	// Lasting counts the victims that may never end by themselves (Unit.Lasting).
	Lasting int
}

// Less orders domains as upstream orders preemption candidates, gangs counted: fewest
// PodDisruptionBudget violations, then the lowest highest victim priority, then fewest gangs
// broken, then fewest pods.
func (a Cost) Less(b Cost) bool {
	switch {
	case a.PDB != b.PDB:
		return a.PDB < b.PDB
	case a.Priority != b.Priority:
		return a.Priority < b.Priority
	case a.Gangs != b.Gangs:
		return a.Gangs < b.Gangs
	}
	return a.Pods < b.Pods
}

// Sooner orders the domains a reservation could hold by how soon they are likely to be
// free: fewer pods that may never end, then fewer pods to wait for, fewer gangs, lower
// priority.
func (a Cost) Sooner(b Cost) bool {
	switch {
	case a.Lasting != b.Lasting:
		return a.Lasting < b.Lasting
	case a.Pods != b.Pods:
		return a.Pods < b.Pods
	case a.Gangs != b.Gangs:
		return a.Gangs < b.Gangs
	}
	return a.Priority < b.Priority
}

// Choice is one domain freed: the plan made as if the victims were gone. No victims: the
// tree fits once the pods already terminating there are gone.
type Choice struct {
	Domain  Domain
	Plan    Placement
	Victims []*Unit
	Cost    Cost
}

// Pods returns the victims' pods.
func (c *Choice) Pods() []*v1.Pod {
	var out []*v1.Pod
	for _, u := range c.Victims {
		for _, pi := range u.Pods() {
			out = append(out, pi.GetPod())
		}
	}
	return out
}

// Describe says what the choice takes, for conditions and events.
func (c *Choice) Describe() string {
	gangs := fmt.Sprintf("%d gangs whole", c.Cost.Gangs)
	if c.Cost.Gangs == 1 {
		gangs = "1 gang whole"
	}
	return fmt.Sprintf("taking %s: evicting %d pods of priority up to %d (%s)", c.Domain.Name, c.Cost.Pods, c.Cost.Priority, gangs)
}

// HighestPodPriority is the highest priority of the choice's pods (a gang's members may
// have a priority of their own below their tree's).
func (c *Choice) HighestPodPriority() int32 {
	prio := int32(0)
	for _, p := range c.Pods() {
		prio = max(prio, corev1helpers.PodPriority(p))
	}
	return prio
}

// maxNamed is how many victims logs and events name.
const maxNamed = 10

// PodNames lists pods for logs and events, the first maxNamed of them.
func PodNames(pods []*v1.Pod) string {
	names := make([]string, 0, maxNamed+1)
	for i, p := range pods {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(pods)-maxNamed))
			break
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}
