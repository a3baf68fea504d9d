package podgroup

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Index holds the PodGroups and CompositePodGroups the model has observed and the trees they
// form. Children are found from their parent pointers, as upstream does: an entry exists
// while its object exists or while children name it as their parent, so that children
// created before their parent are linked the moment it appears. The Index knows nothing of
// pods. It is not safe for concurrent use; the Model serializes access.
type Index struct {
	entries map[Key]*Group
	// exclusive are the groups with an exclusive topology constraint (few, if any): asked
	// for in every scheduling cycle, so kept apart.
	exclusive sets.Set[Key]
}

// Group is the Index's entry for one PodGroup or CompositePodGroup.
type Group struct {
	key Key
	pg  *v1alpha1.PodGroup          // set while a PodGroup of this key exists
	cpg *v1alpha1.CompositePodGroup // set while a CompositePodGroup of this key exists
	// children are the groups whose parentCompositePodGroupName names this group.
	children sets.Set[Key]
	// problem is why the group's hierarchy or spec cannot be scheduled ("" when valid).
	problem string
	// specProblem is why the object could not be read as a group (a native group's extension
	// annotation that does not parse); it makes problem.
	specProblem string
	// life is where the group is in its life (life.go): changed only by Model.fireLocked.
	life Life
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{entries: map[Key]*Group{}, exclusive: sets.New[Key]()} }

// exclusiveAbove reports whether group k or a group above it takes a domain to itself: a pod
// of it leaving may open a whole domain to other trees, not only the room it frees.
func (ix *Index) exclusiveAbove(k Key) bool {
	if ix.exclusive.Len() == 0 {
		return false
	}
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if ix.exclusive.Has(k) {
			return true
		}
		g := ix.entries[k]
		if !g.Exists() {
			return false
		}
		pk, ok := g.ParentKey()
		if !ok {
			return false
		}
		k = pk
	}
	return false
}

// exclusiveWithin reports whether a group of root's tree takes a domain to itself: the tree
// waits for a domain without other pods, which a pod leaving may give whatever its room.
func (ix *Index) exclusiveWithin(root Key) bool {
	if ix.exclusive.Len() == 0 {
		return false
	}
	for _, k := range ix.Subtree(root) {
		if ix.exclusive.Has(k) {
			return true
		}
	}
	return false
}

// Exclusive returns the groups with an exclusive topology constraint.
func (ix *Index) Exclusive() []Key { return ix.exclusive.UnsortedList() }

// Key returns the group's key.
func (g *Group) Key() Key { return g.key }

// Exists reports whether the group's object has been observed.
func (g *Group) Exists() bool { return g != nil && (g.pg != nil || g.cpg != nil) }

// Problem is why the group cannot be scheduled as written, or "".
func (g *Group) Problem() string { return g.problem }

// Scheduled reports whether the group's members are placed one by one: it was allowed as a
// gang, not disrupted since, and its minimum was not raised since (a raised minimum asks for
// the gang again).
func (g *Group) Scheduled() bool { return g != nil && g.life.Scheduled(g.Minimum()) }

// Life is the group's life (life.go).
func (g *Group) Life() *Life { return &g.life }

// ParentKey returns the key of the CompositePodGroup the group names as its parent.
func (g *Group) ParentKey() (Key, bool) {
	var p *string
	switch {
	case g.pg != nil:
		p = g.pg.Spec.ParentCompositePodGroupName
	case g.cpg != nil:
		p = g.cpg.Spec.ParentCompositePodGroupName
	}
	if p == nil || *p == "" {
		return Key{}, false
	}
	return g.key.As(KindCompositePodGroup, *p), true
}

// Minimum is minCount for a PodGroup, minGroupCount for a CompositePodGroup; 1 for basic. A
// PodGroup whose leaders bind first asks for its leaders alone until it is first scheduled
// (Followers), then for minCount: its followers then bind together, the bound leaders
// counting.
func (g *Group) Minimum() int {
	switch {
	case g.pg != nil && g.pg.Spec.SchedulingPolicy.Gang != nil:
		return int(g.pg.Spec.SchedulingPolicy.Gang.MinCount) - g.Followers()
	case g.cpg != nil && g.cpg.Spec.SchedulingPolicy.Gang != nil:
		return int(g.cpg.Spec.SchedulingPolicy.Gang.MinGroupCount)
	}
	return 1
}

// Followers is how many members of a PodGroup whose leaders bind first (gang.leaders) are
// planned with the leaders before they exist, and bind after them: minCount − leaders until
// the group is first scheduled, then 0.
func (g *Group) Followers() int {
	l := g.Leaders()
	if l == 0 || g.life.Placed() {
		return 0
	}
	return int(g.pg.Spec.SchedulingPolicy.Gang.MinCount) - l
}

// Leaders is a PodGroup's gang.leaders when its leaders bind first (below minCount), else 0.
func (g *Group) Leaders() int {
	if g.pg == nil || g.pg.Spec.SchedulingPolicy.Gang == nil {
		return 0
	}
	gang := g.pg.Spec.SchedulingPolicy.Gang
	if gang.Leaders <= 0 || gang.Leaders >= gang.MinCount {
		return 0
	}
	return int(gang.Leaders)
}

// FollowersTimeout is how long the room planned for a PodGroup's followers is held after its
// leaders bound.
func (g *Group) FollowersTimeout() time.Duration {
	if g.pg != nil && g.pg.Spec.SchedulingPolicy.Gang != nil && g.pg.Spec.SchedulingPolicy.Gang.FollowersTimeoutSeconds != nil {
		return time.Duration(*g.pg.Spec.SchedulingPolicy.Gang.FollowersTimeoutSeconds) * time.Second
	}
	return DefaultFollowersTimeout
}

// DefaultFollowersTimeout is how long followers' room is held when the PodGroup does not say.
const DefaultFollowersTimeout = 10 * time.Minute

// IsGang reports whether the group has the gang policy.
func (g *Group) IsGang() bool {
	return (g.pg != nil && g.pg.Spec.SchedulingPolicy.Gang != nil) ||
		(g.cpg != nil && g.cpg.Spec.SchedulingPolicy.Gang != nil)
}

// DisruptedWhole reports whether the group's running pods may only be disrupted together:
// its disruptionMode, else all for a gang and single for a basic group (a distributed job
// cannot run short of a rank).
func (g *Group) DisruptedWhole() bool {
	var mode *v1alpha1.DisruptionMode
	switch {
	case g.pg != nil:
		mode = g.pg.Spec.DisruptionMode
	case g.cpg != nil:
		mode = g.cpg.Spec.DisruptionMode
	default:
		return false
	}
	if mode != nil {
		return mode.All != nil
	}
	return g.IsGang()
}

// CreationTime of the group object; zero if not observed.
func (g *Group) CreationTime() time.Time {
	switch {
	case g == nil:
	case g.pg != nil:
		return g.pg.CreationTimestamp.Time
	case g.cpg != nil:
		return g.cpg.CreationTimestamp.Time
	}
	return time.Time{}
}

// Topology returns the group's topology constraints.
func (g *Group) Topology() []v1alpha1.TopologyConstraint {
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

// ScheduleTimeout is a PodGroup's spec.scheduleTimeoutSeconds, if set.
func (g *Group) ScheduleTimeout() (time.Duration, bool) {
	if g.pg == nil || g.pg.Spec.ScheduleTimeoutSeconds == nil {
		return 0, false
	}
	return time.Duration(*g.pg.Spec.ScheduleTimeoutSeconds) * time.Second, true
}

// ReserveAfter is the group's spec.reserveAfterSeconds, if set.
func (g *Group) ReserveAfter() (time.Duration, bool) {
	var s *int32
	switch {
	case g.pg != nil:
		s = g.pg.Spec.ReserveAfterSeconds
	case g.cpg != nil:
		s = g.cpg.Spec.ReserveAfterSeconds
	}
	if s == nil {
		return 0, false
	}
	return time.Duration(*s) * time.Second, true
}

// MinResources is a PodGroup's spec.minResources.
func (g *Group) MinResources() v1.ResourceList {
	if g == nil || g.pg == nil {
		return nil
	}
	return g.pg.Spec.MinResources
}

// PriorityClassName is the group's spec.priorityClassName.
func (g *Group) PriorityClassName() string {
	switch {
	case g.pg != nil:
		return g.pg.Spec.PriorityClassName
	case g.cpg != nil:
		return g.cpg.Spec.PriorityClassName
	}
	return ""
}

// UID is the UID of the group's object, "" while it does not exist.
func (g *Group) UID() types.UID {
	switch {
	case g.pg != nil:
		return g.pg.UID
	case g.cpg != nil:
		return g.cpg.UID
	}
	return ""
}

// Generation is the generation of the group's object.
func (g *Group) Generation() int64 {
	switch {
	case g.pg != nil:
		return g.pg.Generation
	case g.cpg != nil:
		return g.cpg.Generation
	}
	return 0
}

// conditions are the conditions its object carries.
func (g *Group) conditions() []metav1.Condition {
	switch {
	case g.pg != nil:
		return g.pg.Status.Conditions
	case g.cpg != nil:
		return g.cpg.Status.Conditions
	}
	return nil
}

// Object returns the group's object, nil while it does not exist.
func (g *Group) Object() runtime.Object {
	switch {
	case g.pg != nil:
		return g.pg
	case g.cpg != nil:
		return g.cpg
	}
	return nil
}

// KeyOfObject returns the key of a PodGroup or CompositePodGroup object: lockstep's, or a
// native one converted to lockstep's types (its apiVersion says so, see APIOf).
func KeyOfObject(obj any) (Key, bool) {
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		return Key{Kind: KindPodGroup, Namespace: o.Namespace, Name: o.Name, API: APIOf(o.APIVersion)}, true
	case *v1alpha1.CompositePodGroup:
		return Key{Kind: KindCompositePodGroup, Namespace: o.Namespace, Name: o.Name, API: APIOf(o.APIVersion)}, true
	}
	return Key{}, false
}

// APIOf returns the API of a group object by its apiVersion: native objects converted to
// lockstep's types keep their own (scheduling.k8s.io/v1beta1); lockstep's own objects, from
// typed informers, have none.
func APIOf(apiVersion string) API {
	if strings.HasPrefix(apiVersion, string(APINative)+"/") {
		return APINative
	}
	return APILockstep
}

// Get returns the entry of k, nil if there is none.
func (ix *Index) Get(k Key) *Group { return ix.entries[k] }

// Keys returns every key of the index.
func (ix *Index) Keys() []Key {
	out := make([]Key, 0, len(ix.entries))
	for k := range ix.entries {
		out = append(out, k)
	}
	return out
}

func (ix *Index) getOrCreate(k Key) *Group {
	g := ix.entries[k]
	if g == nil {
		g = &Group{key: k, children: sets.New[Key]()}
		ix.entries[k] = g
	}
	return g
}

// Upsert records a group object; it returns the tops whose subtrees the change can affect
// (see TopOf), for the caller to refresh. What the object says of the group's life is read
// back by the model (the Restored event), not here.
func (ix *Index) Upsert(obj any) []Key { return ix.UpsertRead(obj, "") }

// UpsertRead is Upsert of an object converted from another API, with why it could not be
// read whole ("" if it could): the group is Invalid for that reason.
func (ix *Index) UpsertRead(obj any, specProblem string) []Key {
	k, ok := KeyOfObject(obj)
	if !ok {
		return nil
	}
	g := ix.getOrCreate(k)
	if !g.Exists() {
		g.life = Life{} // a new object, a new life (Held)
	}
	g.specProblem = specProblem
	affected := []Key{ix.TopOf(k)}
	ix.unlinkParent(g)
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		g.pg = o
	case *v1alpha1.CompositePodGroup:
		g.cpg = o
	}
	ix.entries[k] = g // unlinkParent may have dropped a self-parented entry
	ix.linkParent(g)
	if ExclusiveKey(g.Topology()) != "" {
		ix.exclusive.Insert(k)
	} else {
		ix.exclusive.Delete(k)
	}
	return append(affected, ix.TopOf(k))
}

// Delete forgets a group object; it returns the tops to refresh. The group's children keep
// their entry (they now name a missing parent); a group created again under the same name
// starts a new life.
func (ix *Index) Delete(obj any) []Key {
	k, ok := KeyOfObject(obj)
	if !ok {
		return nil
	}
	g := ix.entries[k]
	if g == nil {
		return nil
	}
	affected := []Key{ix.TopOf(k)}
	ix.unlinkParent(g)
	g.pg, g.cpg = nil, nil
	g.problem, g.specProblem = "", ""
	ix.exclusive.Delete(k)
	affected = append(affected, k)
	ix.dropIfUnused(k)
	return affected
}

func (ix *Index) linkParent(g *Group) {
	if pk, ok := g.ParentKey(); ok {
		ix.getOrCreate(pk).children.Insert(g.key)
	}
}

func (ix *Index) unlinkParent(g *Group) {
	if pk, ok := g.ParentKey(); ok {
		if p := ix.entries[pk]; p != nil {
			p.children.Delete(g.key)
			ix.dropIfUnused(pk)
		}
	}
}

// dropIfUnused forgets an entry nothing refers to any more.
func (ix *Index) dropIfUnused(k Key) {
	if g := ix.entries[k]; g != nil && !g.Exists() && len(g.children) == 0 {
		delete(ix.entries, k)
	}
}

// Validator returns why a group's topology constraints cannot be honored, or "".
type Validator func(k Key, topology []v1alpha1.TopologyConstraint) string

// Revalidate recomputes the problems of the subtree of top (hierarchy first, then every
// validator) and returns the groups whose problem changed.
func (ix *Index) Revalidate(top Key, validators []Validator) []Key {
	var changed []Key
	for _, k := range ix.Subtree(top) {
		g := ix.entries[k]
		problem := ""
		if g.Exists() {
			problem = g.specProblem
			if problem == "" {
				_, problem = ix.hierarchyProblem(k)
			}
			for _, v := range validators {
				if problem != "" {
					break
				}
				problem = v(k, g.Topology())
			}
		}
		if problem != g.problem {
			g.problem = problem
			changed = append(changed, k)
		}
	}
	return changed
}

// recreateAdvice is what mends a cycle of parents: the field that makes it cannot be changed.
const recreateAdvice = "parentCompositePodGroupName cannot be changed: delete a group of the cycle and create it again with another parent, or none"

// hierarchyProblem returns why the group's chain of parents is invalid, as a reason label
// (InvalidCycle, ...) and in words, or "" if it is valid. It walks up from k: a parent that
// does not exist, a parent that is a PodGroup, a cycle or a chain deeper than
// v1alpha1.MaxTreeDepth make every group below them invalid.
func (ix *Index) hierarchyProblem(k Key) (reason, msg string) {
	path := []Key{k}
	cur := ix.entries[k]
	for cur != nil {
		pk, ok := cur.ParentKey()
		if !ok {
			break
		}
		for i, seen := range path {
			if seen == pk {
				return InvalidCycle, "cycle: " + joinNames(append(path[i:], pk)) + "; " + recreateAdvice
			}
		}
		// who names pk as its parent: k, or one of its ancestors.
		who := path[len(path)-1]
		path = append(path, pk)
		parent := ix.entries[pk]
		if !parent.Exists() {
			if ix.entries[pk.As(KindPodGroup, pk.Name)].Exists() {
				return InvalidParentIsPodGroup, fmt.Sprintf("parent %q is a PodGroup; parentCompositePodGroupName must name a CompositePodGroup, and cannot be changed: delete %s %q and create it again with another parent, or none",
					pk.Name, who.Kind, who.Name)
			}
			return InvalidMissingParent, fmt.Sprintf("parent CompositePodGroup %q not found: create it; or, as parentCompositePodGroupName cannot be changed, delete %s %q and create it again with another parent, or none",
				pk.Name, who.Kind, who.Name)
		}
		if len(path) > v1alpha1.MaxTreeDepth {
			return InvalidTooDeep, fmt.Sprintf("tree too deep: %s has more than %d levels", joinNames(reverse(path)), v1alpha1.MaxTreeDepth)
		}
		cur = parent
	}
	return "", ""
}

// RootOf returns the root of k's tree; false while k or an ancestor is missing or invalid.
func (ix *Index) RootOf(k Key) (Key, bool) {
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		g := ix.entries[k]
		if !g.Exists() || g.problem != "" {
			return Key{}, false
		}
		pk, ok := g.ParentKey()
		if !ok {
			return k, true
		}
		k = pk
	}
	return Key{}, false
}

// needsMany reports whether a member of PodGroup k binds only with others: some group on
// its path to the root is a gang whose minimum is more than one.
func (ix *Index) needsMany(k Key) bool {
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		g := ix.entries[k]
		if !g.Exists() {
			return false
		}
		if g.IsGang() && g.Minimum() > 1 {
			return true
		}
		pk, ok := g.ParentKey()
		if !ok {
			return false
		}
		k = pk
	}
	return false
}

// Path returns k and its ancestors up to the root (k first); false while k's hierarchy is
// invalid.
func (ix *Index) Path(k Key) ([]Key, bool) {
	var out []Key
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		g := ix.entries[k]
		if !g.Exists() || g.problem != "" {
			return nil, false
		}
		out = append(out, k)
		pk, ok := g.ParentKey()
		if !ok {
			return out, true
		}
		k = pk
	}
	return nil, false
}

// UnitOf returns the top of the disruption unit of PodGroup k: the highest group on its
// path to the root whose pods may only be disrupted together (DisruptedWhole), whose
// subtree a preemptor evicts whole or not at all. False when no group of the path is (the
// pods are victims one by one) or the hierarchy is invalid.
func (ix *Index) UnitOf(k Key) (Key, bool) {
	var top Key
	found := false
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		g := ix.entries[k]
		if !g.Exists() || g.problem != "" {
			return Key{}, false
		}
		if g.DisruptedWhole() {
			top, found = k, true
		}
		pk, ok := g.ParentKey()
		if !ok {
			return top, found
		}
		k = pk
	}
	return Key{}, false
}

// TopOf returns the highest group reachable from k by following parents, stopping at a root,
// a missing parent or a repetition. Refreshing the subtree of TopOf(k) covers every group
// whose validity or readiness a change at k can affect.
func (ix *Index) TopOf(k Key) Key {
	seen := map[Key]bool{k: true}
	for {
		g := ix.entries[k]
		if g == nil {
			return k
		}
		pk, ok := g.ParentKey()
		if !ok || seen[pk] || ix.entries[pk] == nil {
			return k
		}
		seen[pk] = true
		k = pk
	}
}

// Subtree returns k and every group below it, parents before children, children in key
// order.
func (ix *Index) Subtree(k Key) []Key {
	var out []Key
	seen := map[Key]bool{}
	var walk func(Key)
	walk = func(k Key) {
		if seen[k] || ix.entries[k] == nil {
			return
		}
		seen[k] = true
		out = append(out, k)
		for _, c := range sortedKeys(ix.entries[k].children) {
			walk(c)
		}
	}
	walk(k)
	return out
}

// visit calls f on k and the groups below it, depth first, until f returns false; it
// allocates nothing, for the per-pod questions of every scheduling cycle. The depth is
// bounded, as a valid tree's is, so a cycle cannot loop.
func (ix *Index) visit(k Key, f func(*Group) bool) bool {
	var walk func(k Key, depth int) bool
	walk = func(k Key, depth int) bool {
		g := ix.entries[k]
		if g == nil || depth > v1alpha1.MaxTreeDepth {
			return true
		}
		if !f(g) {
			return false
		}
		for c := range g.children {
			if !walk(c, depth+1) {
				return false
			}
		}
		return true
	}
	return walk(k, 0)
}

// PodGroupsOf returns the PodGroups of the subtree of k.
func (ix *Index) PodGroupsOf(k Key) []Key {
	var out []Key
	for _, key := range ix.Subtree(k) {
		if key.Kind == KindPodGroup {
			out = append(out, key)
		}
	}
	return out
}

// Children returns the valid, existing children of k in key order.
func (ix *Index) Children(k Key) []Key {
	g := ix.entries[k]
	if g == nil {
		return nil
	}
	var out []Key
	for _, c := range sortedKeys(g.children) {
		if cg := ix.entries[c]; cg.Exists() && cg.problem == "" {
			out = append(out, c)
		}
	}
	return out
}

func sortedKeys(s sets.Set[Key]) []Key {
	out := s.UnsortedList()
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

func joinNames(keys []Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return strings.Join(names, " → ")
}

func reverse(keys []Key) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[len(keys)-1-i] = k
	}
	return out
}
