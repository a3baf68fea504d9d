package topology

import (
	"context"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podshape"
)

// A plan is only worth making if the scheduler will accept it: a node is a candidate for a
// member only if the profile's own Filter plugins accept the member there (resources,
// extended resources, taints, affinity, host ports, volumes, DRA claims...), given the
// members planned before it in the same tree. The fitter asks them, as preemption's dry runs
// do: each shape of pod (members alike in everything Filter looks at) gets the cycle state of
// the profile's PreFilter plugins once, Filter runs once per shape and node, and only trees
// whose members interact (inter-pod affinity, spread constraints, host ports) are checked
// again against the members planned so far, with those members added to the cycle state and
// to the node.

// fitter decides where members may go.
type fitter interface {
	// shapeOf returns the shape of a pending member.
	shapeOf(pod *v1.Pod) *shape
	// eligible reports whether a member of shape s may use node n by what needs no other pod:
	// node selector and affinity, taints, cordoning. It is cheap: domains are counted and
	// ranked with it. ineligible says why not.
	eligible(s *shape, n *node) bool
	ineligible(s *shape, n *node) string
	// allows reports whether a member of shape s may run on node n as the cluster is (no
	// member of this plan counted): every Filter plugin accepts it; why says what refused it.
	// Packing asks it.
	allows(s *shape, n *node) bool
	why(s *shape, n *node) string
	// admits reports whether a member of shape s may run on n given the members planned so
	// far; asked only after allows said yes and the node has room.
	admits(s *shape, n *node) bool
	// planned and unplanned record a member the planner put on a node, or took back.
	planned(pod *v1.Pod, n *node)
	unplanned(pod *v1.Pod, n *node)
	// release gives back what the fitter holds for planned members (their devices); called
	// once the plan is made or refused.
	release()
}

// shape is a set of alike members.
type shape struct {
	key string
	pod *v1.Pod // a representative member
	// for the framework fitter: the PreFilter state, and the same with this plan's members
	state, work fwk.CycleState
	only        sets.Set[string] // nodes PreFilter allowed; nil for all
	refused     string           // PreFilter refused the shape everywhere
	verdicts    []int8           // by node index: 0 unknown, 1 allowed, 2 refused
	reasons     map[int]string
	blocked     map[int]bool // nodes admits refused in this plan (monotone trees only)
	// elig answers eligible, for both fitters
	elig *eligible
	// held is the fitter's count of device reservations when the state was made: the DRA
	// plugin takes the devices in use at PreFilter, so a member with claims is prepared again
	// after an earlier member's devices were held or given back.
	held int
}

// preFilterRunner is the part of the profile's framework that runs PreFilter plugins; the
// handle a plugin gets is the framework.
type preFilterRunner interface {
	RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string])
}

// frameworkFitter asks the profile's framework.
type frameworkFitter struct {
	elig        *eligibility
	ctx         context.Context
	fh          fwk.Handle
	pre         preFilterRunner
	infos       []fwk.NodeInfo
	shapes      map[string]*shape
	cache       *verdictCache
	interacting bool
	monotone    bool
	// labelsMatter: some running pod has required anti-affinity, which a member's labels may
	// match.
	labelsMatter bool
	plannedOn    map[int][]*v1.Pod
	// removed are the pods a preemption dry run took out of the nodes (victims, pods already
	// leaving): every shape's PreFilter state forgets them, as upstream's dry runs do
	// (RunPreFilterExtensionRemovePod), or InterPodAffinity and PodTopologySpread would still
	// count them.
	removed []fwk.PodInfo
	// byName finds the removed pods' nodes: the topology's index, not one built per plan.
	byName map[string]*node
	// reserved are the members with resource claims planned so far: their devices are held in
	// the scheduler's DRA state (by the profile's Reserve plugins, as upstream's pod-group
	// cycle does) so that later members see them taken, until release.
	reserved []heldClaims
	// held counts changes to reserved.
	held int
}

// heldClaims is a member whose devices are held, with the cycle state its Reserve ran with
// (which Unreserve needs).
type heldClaims struct {
	pod  *v1.Pod
	work fwk.CycleState
	node string
}

func newFrameworkFitter(ctx context.Context, fh fwk.Handle, pre preFilterRunner, topo *topology, infos []fwk.NodeInfo, cache *verdictCache, tree []*v1.Pod, removed []fwk.PodInfo) *frameworkFitter {
	interacting, monotone := podshape.Interacts(tree)
	labelsMatter := true
	if lister := fh.SnapshotSharedLister(); lister != nil {
		if withAnti, err := lister.NodeInfos().HavePodsWithRequiredAntiAffinityList(); err == nil {
			labelsMatter = len(withAnti) > 0
		}
	}
	return &frameworkFitter{elig: topo.eligibility(), ctx: ctx, fh: fh, pre: pre, infos: infos, shapes: map[string]*shape{}, cache: cache,
		interacting: interacting, monotone: monotone, labelsMatter: labelsMatter, plannedOn: map[int][]*v1.Pod{}, removed: removed,
		byName: topo.byName}
}

func (f *frameworkFitter) eligible(s *shape, n *node) bool     { return s.elig.allows(n.idx) }
func (f *frameworkFitter) ineligible(s *shape, n *node) string { return s.elig.why(n.idx) }

func (f *frameworkFitter) shapeOf(pod *v1.Pod) *shape {
	key := podshape.Key(pod, f.labelsMatter)
	if s, ok := f.shapes[key]; ok {
		return s
	}
	s := &shape{key: key, pod: pod, elig: f.elig.of(pod)}
	f.prepare(s)
	f.shapes[key] = s
	return s
}

// prepare runs the profile's PreFilter plugins for the shape and forgets its verdicts.
func (f *frameworkFitter) prepare(s *shape) {
	if len(s.verdicts) == len(f.infos) {
		clear(s.verdicts) // prepared again (current)
	} else {
		s.verdicts = f.cache.list(len(f.infos))
	}
	s.reasons, s.blocked = map[int]string{}, map[int]bool{}
	s.refused, s.only, s.held = "", nil, f.held
	pod := s.pod
	state := framework.NewCycleState()
	podgroup.MarkPlanning(state)
	res, status, _ := f.pre.RunPreFilterPlugins(f.ctx, state, pod)
	switch {
	case status.IsSuccess():
	case status.Code() == fwk.Unschedulable:
		// As the scheduler does, Filter still runs: PreFilter only hinted at preemption.
	default:
		s.refused = status.Message()
	}
	if res != nil && !res.AllNodes() {
		s.only = res.NodeNames
	}
	for _, pi := range f.removed {
		if n, ok := f.byName[pi.GetPod().Spec.NodeName]; ok {
			if status := f.fh.RunPreFilterExtensionRemovePod(f.ctx, state, pod, pi, f.infos[n.idx]); !status.IsSuccess() {
				klog.FromContext(f.ctx).V(5).Info("Planner: RemovePod failed", "pod", klog.KObj(pi.GetPod()), "err", status.AsError())
			}
		}
	}
	s.state = state
	if f.interacting {
		s.work = state.Clone()
		// Members planned before this shape was first seen count for it too.
		for idx, pods := range f.plannedOn {
			for _, p := range pods {
				f.addTo(s, p, idx)
			}
		}
	}
}

// current prepares a shape with claims again if devices were held or given back since its
// PreFilter ran.
func (f *frameworkFitter) current(s *shape) {
	if s.held != f.held && len(s.pod.Spec.ResourceClaims) > 0 {
		f.prepare(s)
	}
}

func (f *frameworkFitter) allows(s *shape, n *node) bool {
	f.current(s)
	if v := s.verdicts[n.idx]; v != 0 {
		return v == 1
	}
	ok, why := false, s.elig.why(n.idx)
	if why == "" {
		ok, why = f.filter(s, n)
	}
	s.verdicts[n.idx] = 2
	if ok {
		s.verdicts[n.idx] = 1
	} else {
		s.reasons[n.idx] = why
	}
	return ok
}

func (f *frameworkFitter) filter(s *shape, n *node) (bool, string) {
	ni := f.infos[n.idx]
	if ni.Node() == nil {
		return false, "node not found"
	}
	if s.refused != "" {
		return false, s.refused
	}
	if s.only != nil && !s.only.Has(n.name) {
		return false, "node not allowed by the pod's PreFilter result"
	}
	cacheable := !f.interacting && len(s.pod.Spec.ResourceClaims) == 0
	if cacheable {
		if ok, why, hit := f.cache.get(s.key, n.name, ni.GetGeneration()); hit {
			return ok, why
		}
	}
	status := f.fh.RunFilterPlugins(f.ctx, s.state, s.pod, ni)
	ok, why := status.IsSuccess(), ""
	if !ok {
		why = strings.Join(status.Reasons(), ", ")
	}
	if cacheable {
		f.cache.put(s.key, n.name, ni.GetGeneration(), ok, why)
	}
	return ok, why
}

func (f *frameworkFitter) why(s *shape, n *node) string {
	if f.allows(s, n) {
		return ""
	}
	return s.reasons[n.idx]
}

func (f *frameworkFitter) admits(s *shape, n *node) bool {
	claims := len(s.pod.Spec.ResourceClaims) > 0
	if !f.interacting || (len(f.plannedOn) == 0 && !claims) {
		return true
	}
	f.current(s)
	if f.monotone && s.blocked[n.idx] {
		return false
	}
	ni := f.infos[n.idx]
	if pods := f.plannedOn[n.idx]; len(pods) > 0 {
		ni = ni.Snapshot()
		for _, p := range pods {
			if pi, err := framework.NewPodInfo(p); err == nil {
				ni.AddPodInfo(pi)
			}
		}
	}
	ok := f.fh.RunFilterPlugins(f.ctx, s.work, s.pod, ni).IsSuccess()
	if !ok && f.monotone {
		s.blocked[n.idx] = true
	}
	return ok
}

func (f *frameworkFitter) planned(pod *v1.Pod, n *node) {
	p := pod.DeepCopy()
	p.Spec.NodeName = n.name
	f.plannedOn[n.idx] = append(f.plannedOn[n.idx], p)
	if !f.interacting {
		return
	}
	for _, s := range f.shapes {
		f.addTo(s, p, n.idx)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		s := f.shapes[podshape.Key(pod, f.labelsMatter)]
		if status := f.fh.RunReservePluginsReserve(f.ctx, s.work, pod, n.name); !status.IsSuccess() {
			klog.FromContext(f.ctx).V(4).Info("Planner: holding a member's devices failed", "pod", klog.KObj(pod), "node", n.name, "err", status.AsError())
			return
		}
		f.reserved = append(f.reserved, heldClaims{pod: pod, work: s.work, node: n.name})
		f.held++
	}
}

// release gives back the devices held for planned members, and the shapes' lists of
// verdicts to the cache; the planner calls it when the plan is made (or refused).
func (f *frameworkFitter) release() {
	for i := len(f.reserved) - 1; i >= 0; i-- {
		r := f.reserved[i]
		f.fh.RunReservePluginsUnreserve(f.ctx, r.work, r.pod, r.node)
	}
	f.reserved = nil
	for _, s := range f.shapes {
		f.cache.giveBack(s.verdicts)
		s.verdicts = nil
	}
}

func (f *frameworkFitter) addTo(s *shape, p *v1.Pod, idx int) {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return
	}
	if status := f.fh.RunPreFilterExtensionAddPod(f.ctx, s.work, s.pod, pi, f.infos[idx]); !status.IsSuccess() {
		klog.FromContext(f.ctx).V(5).Info("Planner: AddPod failed", "pod", klog.KObj(p), "err", status.AsError())
	}
}

func (f *frameworkFitter) unplanned(pod *v1.Pod, n *node) {
	pods := f.plannedOn[n.idx]
	for i := len(pods) - 1; i >= 0; i-- {
		if pods[i].UID != pod.UID {
			continue
		}
		p := pods[i]
		f.plannedOn[n.idx] = append(pods[:i:i], pods[i+1:]...)
		if len(f.plannedOn[n.idx]) == 0 {
			delete(f.plannedOn, n.idx)
		}
		if f.interacting {
			for j := len(f.reserved) - 1; j >= 0; j-- {
				if r := f.reserved[j]; r.pod.UID == pod.UID {
					f.fh.RunReservePluginsUnreserve(f.ctx, r.work, r.pod, r.node)
					f.reserved = append(f.reserved[:j:j], f.reserved[j+1:]...)
					f.held++
					break
				}
			}
			pi, err := framework.NewPodInfo(p)
			if err == nil {
				for _, s := range f.shapes {
					f.fh.RunPreFilterExtensionRemovePod(f.ctx, s.work, s.pod, pi, f.infos[n.idx])
					clear(s.blocked) // a node refused may take a member again
				}
			}
		}
		return
	}
}

// verdictCache keeps Filter verdicts of shapes whose verdict depends on the node alone,
// across plans, until the node changes (its NodeInfo generation). Shapes alike across gangs
// (gangs of one template) are filtered once per node.
//
// It also keeps the lists of a plan's own verdicts (shape.verdicts, one entry per node) for
// the next plan: made afresh for each shape of each plan, they were most of what a plan of a
// small gang allocated at 65,000 nodes, and a plan's cost grew with the cluster through the
// collector.
type verdictCache struct {
	mu     sync.Mutex
	shapes map[string]map[string]verdict
	order  []string
	lists  [][]int8
}

type verdict struct {
	generation int64
	ok         bool
	why        string
}

// maxCachedShapes bounds the cache; the shape seen least recently goes first.
const maxCachedShapes = 64

func newVerdictCache() *verdictCache { return &verdictCache{shapes: map[string]map[string]verdict{}} }

// keptVerdictLists bounds the lists a verdict cache keeps: enough for the shapes of the
// plans that run at once (the scheduling cycle's, a dry run inside it).
const keptVerdictLists = 8

// list returns a list of n unknown verdicts: one kept from an earlier plan if it has one as
// long (the node list's length changes only when nodes come or go).
func (c *verdictCache) list(n int) []int8 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.lists) > 0 {
		l := c.lists[len(c.lists)-1]
		c.lists = c.lists[:len(c.lists)-1]
		if len(l) == n {
			return l
		}
	}
	return make([]int8, n)
}

// giveBack keeps a plan's list of verdicts, cleared, for a later plan.
func (c *verdictCache) giveBack(l []int8) {
	if l == nil {
		return
	}
	clear(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lists) < keptVerdictLists {
		c.lists = append(c.lists, l)
	}
}

func (c *verdictCache) get(shape, node string, generation int64) (bool, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.shapes[shape][node]
	if !ok || v.generation != generation {
		return false, "", false
	}
	return v.ok, v.why, true
}

func (c *verdictCache) put(shape, node string, generation int64, ok bool, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.shapes[shape]
	if m == nil {
		if len(c.order) >= maxCachedShapes {
			delete(c.shapes, c.order[0])
			c.order = c.order[1:]
		}
		m = map[string]verdict{}
		c.shapes[shape] = m
		c.order = append(c.order, shape)
	}
	m[node] = verdict{generation: generation, ok: ok, why: why}
}

// specFitter decides by the parts of a pod's spec that need no other pod: node selector,
// required node affinity, tolerations. It is what the planner uses where no framework runs
// the profile's plugins (its own unit tests).
type specFitter struct {
	elig   *eligibility
	shapes map[string]*shape
}

func newSpecFitter(elig *eligibility) *specFitter {
	return &specFitter{elig: elig, shapes: map[string]*shape{}}
}

func (f *specFitter) shapeOf(pod *v1.Pod) *shape {
	key := eligibilityKey(pod)
	if s, ok := f.shapes[key]; ok {
		return s
	}
	s := &shape{key: key, pod: pod, elig: f.elig.of(pod)}
	f.shapes[key] = s
	return s
}

func (f *specFitter) eligible(s *shape, n *node) bool     { return s.elig.allows(n.idx) }
func (f *specFitter) ineligible(s *shape, n *node) string { return s.elig.why(n.idx) }
func (f *specFitter) allows(s *shape, n *node) bool       { return s.elig.allows(n.idx) }
func (f *specFitter) why(s *shape, n *node) string        { return s.elig.why(n.idx) }

func (f *specFitter) admits(*shape, *node) bool { return true }
func (f *specFitter) planned(*v1.Pod, *node)    {}
func (f *specFitter) unplanned(*v1.Pod, *node)  {}
func (f *specFitter) release()                  {}

// excluding is a fitter that leaves out the nodes out names a reason for: nodes Filter
// refused a planned member of the tree before (Plans.Refusals), or nodes outside the domain a
// preemption dry run frees. Explanations give the reason.
type excluding struct {
	fitter
	out func(*node) string
}

func (f excluding) eligible(s *shape, n *node) bool { return f.out(n) == "" && f.fitter.eligible(s, n) }

func (f excluding) ineligible(s *shape, n *node) string {
	if why := f.out(n); why != "" {
		return why
	}
	return f.fitter.ineligible(s, n)
}

func (f excluding) allows(s *shape, n *node) bool { return f.out(n) == "" && f.fitter.allows(s, n) }

func (f excluding) why(s *shape, n *node) string {
	if why := f.out(n); why != "" {
		return why
	}
	return f.fitter.why(s, n)
}
